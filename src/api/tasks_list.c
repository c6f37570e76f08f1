/* Task lists (SPEC §5): GET /tasks, GET /targets/{t}/tasks, GET /users/{u}/tasks. Every
 * filter is read from the index the seeds built for it, never a scan.
 *
 * The index table is at_tasks_lists (GET /tasks's plans, checked at start-up and shown
 * in the API document): one row per {query parameter, index, partition source, sort
 * condition}, the most selective first, the defaults last. A row whose index sorts by
 * created_at or updated_at (and has no sort condition) gives the list's order; the
 * others (status, created_by, assignee_name: equality or a prefix on the sort key)
 * give a set in another order. The planner, for the filters given and ?sort=:
 *
 *   1. takes the most selective row given (the first in the table; of two rows of one
 *      parameter, the one ordered by ?sort=), and applies every other filter given as a
 *      filter of that query (on sqlite in SQL, on DynamoDB a FilterExpression), so pages
 *      stay full: the store reads on until the page holds its items or its work bound;
 *   2. when that row's index is in the list's order, pages it; otherwise its set is read
 *      whole when small (at most AT_API_SMALL_SET tasks, one query) and sorted, and a
 *      larger set is paged through the first row given that is in the list's order (at
 *      worst the tenant's created_at / updated_at index), filtered by all the filters.
 *
 * Cursors are keyed on the ordered query's index, so both ways of step 2 give the same
 * order and a list may change ways between two pages. docs/tasks.md has the table. */
#include <string.h>

#include "api.h"
#include "tasks.h"
#include "actionstools/err.h"
#include "actionstools/banned.h"

static void list_all(at_ctx *c, const at_resource *r, const at_list_def *l);
static void list_by_target(at_ctx *c, const at_resource *r, const at_list_def *l);
static void list_by_user(at_ctx *c, const at_resource *r, const at_list_def *l);

#define ORDERED .order_param = "order", .forward = 0

const at_list_def at_tasks_lists[] = {
    {.when = "target_uuid",
     .index = "target_uuid-created_at-index",
     .pk = {AT_SRC_QUERY, "target_uuid"},
     ORDERED,
     .run = list_all,
     .doc = "read from target_uuid-created_at-index (the record's tasks; with sort=updated_at from "
            "target_uuid-updated_at-index), the other filters applied to it"},
    {.when = "target_uuid",
     .index = "target_uuid-updated_at-index",
     .pk = {AT_SRC_QUERY, "target_uuid"},
     ORDERED,
     .run = list_all,
     .doc = "read from target_uuid-updated_at-index when sort=updated_at"},
    {.when = "assignee_uuid",
     .index = "assignee_uuid-created_at-index",
     .pk = {AT_SRC_QUERY, "assignee_uuid"},
     ORDERED,
     .run = list_all,
     .doc = "read from assignee_uuid-created_at-index (the tasks assigned to that user), the other "
            "filters applied to it"},
    {.when = "owner_uuid",
     .index = "owner_uuid-created_at-index",
     .pk = {AT_SRC_QUERY, "owner_uuid"},
     ORDERED,
     .run = list_all,
     .doc = "read from owner_uuid-created_at-index (the tasks that user owns), the other filters "
            "applied to it"},
    {.when = "created_by",
     .index = "instance_id-created_by-index",
     .pk = {AT_SRC_TENANT, NULL},
     .sk_param = "created_by",
     .sk_op = AT_OP_EQ,
     ORDERED,
     .run = list_all,
     .doc = "read from instance_id-created_by-index (created_by = this), the other filters applied "
            "to it, and sorted"},
    {.when = "assignee_name",
     .index = "instance_id-assignee_name-index",
     .pk = {AT_SRC_TENANT, NULL},
     .sk_param = "assignee_name",
     .sk_op = AT_OP_BEGINS_WITH,
     ORDERED,
     .run = list_all,
     .doc = "read from instance_id-assignee_name-index (assignee_name begins with this), the other "
            "filters applied to it, and sorted"},
    {.when = "status",
     .index = "instance_id-status-index",
     .pk = {AT_SRC_TENANT, NULL},
     .sk_param = "status",
     .sk_op = AT_OP_EQ,
     ORDERED,
     .run = list_all,
     .doc = "read from instance_id-status-index (status = this), the other filters applied to it, "
            "and sorted"},
    {.index = "instance_id-created_at-index",
     .pk = {AT_SRC_TENANT, NULL},
     ORDERED,
     .run = list_all,
     .doc =
         "the tenant's tasks from instance_id-created_at-index, newest first (order=asc: oldest "
         "first); a filter's set of over 100 tasks that its index cannot sort is paged from here, "
         "filtered"},
    {.index = "instance_id-updated_at-index",
     .pk = {AT_SRC_TENANT, NULL},
     ORDERED,
     .run = list_all,
     .doc = "with sort=updated_at, from instance_id-updated_at-index, latest change first"},
    {NULL},
};

static const at_list_filter target_filters[] = {
    {"status", "status", AT_OP_EQ},
    {"assignee_uuid", "assignee_uuid", AT_OP_EQ},
    {"owner_uuid", "owner_uuid", AT_OP_EQ},
    {"created_by", "created_by", AT_OP_EQ},
    {"assignee_name", "assignee_name", AT_OP_BEGINS_WITH},
    {NULL},
};

const at_list_def at_tasks_by_target[] = {
    {.index = "target_uuid-created_at-index",
     .pk = {AT_SRC_PATH, "target_uuid"},
     ORDERED,
     .filters = target_filters,
     .run = list_by_target,
     .doc = "the record's tasks from target_uuid-created_at-index, newest first (order=asc: oldest "
            "first)"},
    {.index = "target_uuid-updated_at-index",
     .pk = {AT_SRC_PATH, "target_uuid"},
     ORDERED,
     .filters = target_filters,
     .run = list_by_target,
     .doc = "with sort=updated_at, from target_uuid-updated_at-index, latest change first"},
    {NULL},
};

static const at_list_filter owner_filters[] = {
    {"status", "status", AT_OP_EQ},
    {"assignee_uuid", "assignee_uuid", AT_OP_EQ},
    {"target_uuid", "target_uuid", AT_OP_EQ},
    {"created_by", "created_by", AT_OP_EQ},
    {"assignee_name", "assignee_name", AT_OP_BEGINS_WITH},
    {NULL},
};

static const at_list_filter assignee_filters[] = {
    {"status", "status", AT_OP_EQ},
    {"owner_uuid", "owner_uuid", AT_OP_EQ},
    {"target_uuid", "target_uuid", AT_OP_EQ},
    {"created_by", "created_by", AT_OP_EQ},
    {"assignee_name", "assignee_name", AT_OP_BEGINS_WITH},
    {NULL},
};

const at_list_def at_tasks_by_user[] = {
    {.index = "owner_uuid-created_at-index",
     .pk = {AT_SRC_PATH, "user_uuid"},
     ORDERED,
     .filters = owner_filters,
     .run = list_by_user,
     .doc = "role=owner (the default): the tasks the user owns, from owner_uuid-created_at-index, "
            "newest first"},
    {.index = "assignee_uuid-created_at-index",
     .pk = {AT_SRC_PATH, "user_uuid"},
     ORDERED,
     .filters = assignee_filters,
     .run = list_by_user,
     .doc = "role=assignee: the tasks assigned to the user, from assignee_uuid-created_at-index, "
            "newest first"},
    {NULL},
};

static const at_doc_param list_params[] = {
    {"sort",
     "{\"type\": \"string\", \"enum\": [\"created_at\", \"updated_at\"], \"default\": "
     "\"created_at\"}",
     "the order: by created_at (the default) or by updated_at, newest first unless order=asc"},
    {NULL},
};

static const at_doc_param user_params[] = {
    {"role", "{\"type\": \"string\", \"enum\": [\"owner\", \"assignee\"], \"default\": \"owner\"}",
     "owner: the tasks the user owns; assignee: the tasks assigned to them"},
    {"sort",
     "{\"type\": \"string\", \"enum\": [\"created_at\", \"updated_at\"], \"default\": "
     "\"created_at\"}",
     "the order: by created_at (the default) or by updated_at, newest first unless order=asc"},
    {NULL},
};

const at_route_doc at_tasks_list_doc = {.answer = "a page of tasks", .query = list_params};
const at_route_doc at_tasks_by_user_doc = {.answer = "a page of the user's tasks",
                                           .query = user_params};

/* ---- the planner ---- */

#define MAX_GIVEN 8

/* A filter the request gives: its row's parameter, the value as given and converted,
 * and the comparison it stands for. */
typedef struct given {
    const char *param;
    const char *text;
    json_t *av;
    const char *attr;
    at_op op;
} given;

typedef struct plan {
    given g[MAX_GIVEN];
    size_t n;
    const char *sort;  /* "created_at" or "updated_at" */
    const char *order; /* "asc", "desc" or NULL */
} plan;

static const at_index_def *index_of(const at_list_def *l)
{
    return at_schema_index(at_schema_table(AT_TABLE_TASKS), l->index);
}

/* The attribute a row's parameter compares: its partition's or its sort key's. */
static const char *row_attr(const at_list_def *l)
{
    const at_index_def *ix = index_of(l);
    return l->pk.src == AT_SRC_QUERY ? ix->pk.name : ix->sk.name;
}

/* The order a row gives: its index's sort key, or NULL when the row compares it. */
static const char *row_order(const at_list_def *l)
{
    return l->sk_param ? NULL : index_of(l)->sk.name;
}

static int same_param(const char *a, const char *b)
{
    return (!a && !b) || (a && b && strcmp(a, b) == 0);
}

static const given *find(const plan *P, const char *param)
{
    for (size_t i = 0; param && i < P->n; i++)
        if (strcmp(P->g[i].param, param) == 0) return &P->g[i];
    return NULL;
}

static void plan_release(plan *P)
{
    for (size_t i = 0; i < P->n; i++)
        json_decref(P->g[i].av);
    P->n = 0;
}

/* The row that serves the list: with ordered, the first row given (or default) whose
 * index is in the list's order; else the most selective row given, of its parameter's
 * rows the one in the list's order. */
static const at_list_def *pick(const plan *P, int ordered)
{
    for (const at_list_def *l = at_tasks_lists; l->doc; l++) {
        const char *o;
        if (l->when && !find(P, l->when)) continue;
        if (ordered) {
            if ((o = row_order(l)) && strcmp(o, P->sort) == 0) return l;
            continue;
        }
        for (const at_list_def *m = l; m->doc && same_param(m->when, l->when); m++)
            if ((o = row_order(m)) && strcmp(o, P->sort) == 0) return m;
        return l;
    }
    return NULL; /* not reached: the defaults give both orders */
}

/* Reads ?sort=, ?order= and every filter of the table given (the parameter fixed, when
 * not NULL, takes the path's value). Returns 1; or 0 after answering 400 with every
 * bad parameter named, or *empty set when the path's value can name no task. */
static int read_plan(at_ctx *c, const at_resource *r, plan *P, const char *fixed,
                     const char *fixed_value, int *empty)
{
    json_t *errors = json_object();
    P->sort = at_query_param(c, "sort");
    P->order = at_query_param(c, "order");
    if (!P->sort) P->sort = "created_at";
    if (strcmp(P->sort, "created_at") != 0 && strcmp(P->sort, "updated_at") != 0)
        json_object_set_new(errors, "sort", json_string("must be created_at or updated_at"));
    if (P->order && strcmp(P->order, "asc") != 0 && strcmp(P->order, "desc") != 0)
        json_object_set_new(errors, "order", json_string("must be asc or desc"));
    for (const at_list_def *l = at_tasks_lists; l->doc && P->n < MAX_GIVEN; l++) {
        const int is_fixed = fixed && l->when && strcmp(l->when, fixed) == 0;
        const char *text = is_fixed ? fixed_value : l->when ? at_query_param(c, l->when) : NULL;
        const at_field *f;
        char why[160] = "";
        json_t *av;
        if (!text || find(P, l->when)) continue;
        f = at_model_field(r, row_attr(l));
        av = !*text ? NULL : f ? at_model_text_value(f, text, why, sizeof why) : at_av_s(text);
        if (!av && is_fixed) {
            *empty = 1;
        } else if (!av) {
            json_object_set_new(errors, l->when,
                                json_string(!*text   ? "must not be empty"
                                            : why[0] ? why
                                                     : "out of memory"));
        } else {
            P->g[P->n++] =
                (given){l->when, text, av, row_attr(l), l->sk_param ? l->sk_op : AT_OP_EQ};
        }
    }
    if (json_object_size(errors)) {
        at_reply_validation(c, errors);
        return 0;
    }
    json_decref(errors);
    return 1;
}

/* Starts the query of row l: its partition, its sort condition, the other filters
 * given, and the scope of every parameter given. Returns 0 or an AT_* code. */
static int start_query(at_ctx *c, const at_resource *r, const plan *P, const at_list_def *l,
                       at_list_query *lq)
{
    const given *mine = l->when ? find(P, l->when) : NULL;
    const char *inst = c->id->instance_id;
    int rc = at_api_list_query_start(
        c, r, l->index, mine && l->pk.src == AT_SRC_QUERY ? json_incref(mine->av) : at_av_s(inst),
        mine && l->pk.src == AT_SRC_QUERY ? mine->text : inst,
        !(P->order && strcmp(P->order, "asc") == 0) ? 0 : 1, lq);
    if (rc) return rc;
    if (l->sk_param) rc = at_api_list_query_sk(lq, l->sk_op, json_incref(mine->av));
    for (size_t i = 0; !rc && i < P->n; i++) {
        if (&P->g[i] != mine)
            rc = at_api_list_query_filter(lq, P->g[i].attr, P->g[i].op, json_incref(P->g[i].av));
        if (!rc) rc = at_api_list_query_scope(c, lq, P->g[i].param, P->g[i].text);
    }
    if (!rc) rc = at_api_list_query_scope(c, lq, "sort", P->sort);
    if (!rc && P->order) rc = at_api_list_query_scope(c, lq, "order", P->order);
    if (rc) at_api_list_query_release(lq);
    return rc;
}

/* Answers a page of the tasks the request's filters give; fixed names the filter whose
 * value comes from the path (NULL: none). */
static void plan_list(at_ctx *c, const at_resource *r, const char *fixed, const char *fixed_value)
{
    plan P = {0};
    const at_list_def *sel, *ord;
    at_list_query lq, small;
    at_pager p;
    int rc, empty = 0;

    if (!read_plan(c, r, &P, fixed, fixed_value, &empty)) goto out;
    if (empty) { /* the path's value cannot be any task's: an empty list */
        if (at_pager_begin(&p, c, r, "", 1)) p.done = 1;
        at_pager_finish(&p);
        goto out;
    }
    sel = pick(&P, 0);
    ord = row_order(sel) && strcmp(row_order(sel), P.sort) == 0 ? sel : pick(&P, 1);
    if ((rc = start_query(c, r, &P, ord, &lq))) {
        at_reply_error(c, 500, "cannot prepare the list (%s)", at_strerror(rc));
        goto out;
    }
    if (ord != sel && (rc = start_query(c, r, &P, sel, &small))) {
        at_reply_error(c, 500, "cannot prepare the list (%s)", at_strerror(rc));
        at_api_list_query_release(&lq);
        goto out;
    }
    if (at_pager_begin(&p, c, r, lq.scope, 1)) {
        if (ord == sel)
            at_pager_query(&p, 0, &lq.q);
        else
            at_pager_small_query(&p, 0, &lq, &small.q);
    }
    at_pager_finish(&p);
    if (ord != sel) at_api_list_query_release(&small);
    at_api_list_query_release(&lq);
out:
    plan_release(&P);
}

static void list_all(at_ctx *c, const at_resource *r, const at_list_def *l)
{
    plan_list(c, r, NULL, NULL);
}

static void list_by_target(at_ctx *c, const at_resource *r, const at_list_def *l)
{
    const char *t = at_api_key_param(c, "target_uuid", "target");
    if (t) plan_list(c, r, "target_uuid", t);
}

static void list_by_user(at_ctx *c, const at_resource *r, const at_list_def *l)
{
    const char *role = at_query_param(c, "role"), *u;
    if (role && strcmp(role, "owner") != 0 && strcmp(role, "assignee") != 0) {
        at_reply_validation(c, json_pack("{s:s}", "role", "must be owner or assignee"));
        return;
    }
    if ((u = at_api_key_param(c, "user_uuid", "user")))
        plan_list(c, r, role && strcmp(role, "assignee") == 0 ? "assignee_uuid" : "owner_uuid", u);
}
