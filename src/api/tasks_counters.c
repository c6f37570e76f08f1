/* Task counters (SPEC §3, §5): GET /tasks/counters[?assignee_uuid=] answers
 * {"by_status": {...}, "overdue": n, "total": n} from the tasks_counters table, computed
 * when missing and kept there for COUNTERS_TTL_SECONDS (ExpirationTime: expired ones
 * are never served, on both backends).
 *
 * Counts are recalculated, never incremented, so a retried or repeated change cannot
 * skew them. Every task change adds one to the tenant's change count (counters
 * "tasks#<instance_id>", attribute "changes") after it is written, and each cached
 * counter holds the change count it was computed at: one computed before a change is
 * never served after it (and a computation that started later is never overwritten by
 * an older one). After a change, the cached counters it touches (the tenant's, the old
 * and the new assignee's) are recalculated in the request, for now, when they count at
 * most RECALC_INLINE_MAX tasks (larger ones cost too much for a request: 0.36 s for
 * 100,000 tasks here; the next read recalculates them); the worker issue moves that
 * behind the change stream. A counter also holds the earliest due_at still
 * to come of an unfinished task: past it, a task became overdue without a change, so
 * the counter is computed again. docs/tasks.md. */
#include <stdint.h>
#include <string.h>

#include "api.h"
#include "tasks.h"
#include "actionstools/err.h"
#include "actionstools/log.h"
#include "actionstools/packed.h"
#include "actionstools/tasks.h"
#include "actionstools/banned.h"

/* A change recalculates cached counters in its request only when they count at most
 * this many tasks (about 20 ms on sqlite here); larger ones are recalculated by the
 * next read, the change count keeping them from being served meanwhile. */
#define RECALC_INLINE_MAX 5000

#define STATUS_INDEX "instance_id-status-index"
#define ASSIGNEE_INDEX "assignee_uuid-created_at-index"

/* Items a raw page of a tally asks for (the store's work bound, 1 MB read, comes
 * first for tasks of ordinary size). */
#define TALLY_PAGE 2000

typedef struct tally {
    int64_t by_status[AT_TASKS_NSTATUS];
    int64_t overdue;
    int64_t next_due; /* the earliest due_at >= now of an unfinished task; 0: none */
} tally;

static int64_t now_s(void)
{
    return at_now_us() / 1000000;
}

/* ---- the tenant's change count ---- */

static json_t *changes_key(const char *inst)
{
    return json_pack("{s:{s:s+}}", "counter_seq_key", "S", "tasks#", inst);
}

/* Reads how many task changes the tenant has had (0 when none). Returns 0 or AT_*. */
static int read_changes(at_store *s, const char *inst, int64_t *g)
{
    json_t *key = changes_key(inst), *it = NULL;
    int rc = key ? at_store_get(s, AT_TABLE_COUNTERS, key, &it) : AT_ENOMEM;
    *g = 0;
    if (rc == AT_ENOTFOUND) rc = 0;
    if (!rc) at_item_n_int(it, AT_TASKS_CHANGES_ATTR, g);
    json_decref(it);
    json_decref(key);
    return rc;
}

/* Counts one more change of the tenant's tasks. Returns 0 and the new count, or AT_*. */
static int count_change(at_store *s, const char *inst, int64_t *g)
{
    json_t *key = changes_key(inst), *it = NULL;
    at_update up = {.add_attr = AT_TASKS_CHANGES_ATTR, .add_value = 1};
    int rc = key ? at_store_update(s, AT_TABLE_COUNTERS, key, &up, NULL, &it) : AT_ENOMEM;
    if (!rc && !at_item_n_int(it, AT_TASKS_CHANGES_ATTR, g)) rc = AT_EINVAL;
    json_decref(it);
    json_decref(key);
    return rc;
}

/* ---- computing ---- */

/* Adds one task (packed, n bytes at p) to t: its status is status, or read from it. */
static void tally_one(tally *t, const unsigned char *p, size_t n, const char *status, int64_t now)
{
    int64_t due;
    int i;
    if (!status) status = at_packed_s(p, n, "status", NULL);
    if ((i = at_tasks_status_index(status)) < 0) return; /* no status of ours: not counted */
    t->by_status[i]++;
    if (!at_tasks_unfinished(status) || !at_tasks_packed_int(p, n, "due_at", &due)) return;
    if (due < now)
        t->overdue++;
    else if (!t->next_due || due < t->next_due)
        t->next_due = due;
}

/* Reads every item q gives, page by page (each page bounded by the store's work
 * bound), into t. Returns 0 or AT_*. */
static int tally_pages(at_store *s, at_query *q, const char *status, int64_t now, tally *t)
{
    json_t *start = NULL;
    int rc;
    q->flags |= AT_Q_RAW;
    q->limit = TALLY_PAGE;
    do {
        at_page page = {0};
        size_t n;
        q->start_key = start;
        rc = at_store_query(s, q, &page);
        for (size_t i = 0; !rc && i < at_page_count(&page); i++) {
            const unsigned char *p = at_page_raw(&page, i, &n);
            tally_one(t, p, n, status, now);
        }
        json_decref(start);
        start = rc ? NULL : json_incref(page.last_key);
        at_page_release(&page);
    } while (start);
    return rc;
}

/* Counts the items q gives (a count: no item is read back). Returns 0 or AT_*. */
static int count_pages(at_store *s, at_query *q, int64_t *n)
{
    json_t *start = NULL;
    int rc;
    q->flags |= AT_Q_COUNT;
    q->limit = (size_t)1 << 30;
    do {
        at_page page = {0};
        q->start_key = start;
        rc = at_store_query(s, q, &page);
        *n += (int64_t)page.count;
        json_decref(start);
        start = rc ? NULL : json_incref(page.last_key);
        at_page_release(&page);
    } while (start);
    return rc;
}

/* The tenant's tasks: one query of instance_id-status-index per status (a local index:
 * read consistently on DynamoDB); done and cancelled are only counted. */
static int tally_tenant(at_store *s, const char *inst, int64_t now, tally *t)
{
    json_t *pk = at_av_s(inst);
    int rc = pk ? 0 : AT_ENOMEM;
    for (int i = 0; !rc && at_tasks_statuses[i]; i++) {
        const char *st = at_tasks_statuses[i];
        json_t *sv = at_av_s(st);
        at_query q = {.table = AT_TABLE_TASKS,
                      .index = STATUS_INDEX,
                      .pk = pk,
                      .forward = 1,
                      .flags = AT_Q_LIVE};
        q.sk = (at_clause){"status", AT_OP_EQ, sv, NULL};
        if (!sv)
            rc = AT_ENOMEM;
        else if (at_tasks_unfinished(st))
            rc = tally_pages(s, &q, st, now, t);
        else
            rc = count_pages(s, &q, &t->by_status[i]);
        json_decref(sv);
    }
    json_decref(pk);
    return rc;
}

/* One assignee's tasks of the tenant: assignee_uuid-created_at-index, filtered to the
 * tenant. */
static int tally_assignee(at_store *s, const char *inst, const char *assignee, int64_t now,
                          tally *t)
{
    json_t *pk = at_av_s(assignee), *iv = at_av_s(inst);
    at_clause f = {"instance_id", AT_OP_EQ, iv, NULL};
    at_query q = {.table = AT_TABLE_TASKS,
                  .index = ASSIGNEE_INDEX,
                  .pk = pk,
                  .forward = 1,
                  .flags = AT_Q_LIVE};
    int rc = pk && iv ? 0 : AT_ENOMEM;
    q.filter = (at_cond){&f, 1};
    if (!rc) rc = tally_pages(s, &q, NULL, now, t);
    json_decref(pk);
    json_decref(iv);
    return rc;
}

/* ---- the cached item ---- */

/* The tasks_counters key of the tenant's counters, or of one assignee's. */
static const char *counters_name(at_ctx *c, const char *assignee)
{
    return assignee
               ? at_arena_printf(c->arena, "tasks#%s#assignee#%s", c->id->instance_id, assignee)
               : at_arena_printf(c->arena, "tasks#%s", c->id->instance_id);
}

/* Returns {"by_status": {...}, "overdue": n, "total": n} of t (a new object) or NULL. */
static json_t *answer_of(const tally *t)
{
    json_t *by = json_object(), *out;
    int64_t total = 0;
    for (int i = 0; by && at_tasks_statuses[i]; i++) {
        json_object_set_new(by, at_tasks_statuses[i], json_integer(t->by_status[i]));
        total += t->by_status[i];
    }
    out = by ? json_pack("{s:o, s:I, s:I}", "by_status", by, "overdue", (json_int_t)t->overdue,
                         "total", (json_int_t)total)
             : NULL;
    return out;
}

/* Reads a cached item back into t. Returns 1 when it holds counters of ours. */
static int tally_of(const json_t *item, tally *t)
{
    const json_t *by = json_object_get(json_object_get(item, "by_status"), "M");
    memset(t, 0, sizeof *t);
    if (!by || !at_item_n_int(item, "overdue", &t->overdue)) return 0;
    for (int i = 0; at_tasks_statuses[i]; i++)
        if (!at_item_n_int(by, at_tasks_statuses[i], &t->by_status[i])) return 0;
    at_item_n_int(item, "valid_until", &t->next_due);
    return 1;
}

/* Stores t as computed at change count g: over a counter of an older (or the same)
 * count, or where none of ours is; a newer one stays. Returns 0 or AT_* (a newer one
 * there is not an error). */
static int store_tally(at_ctx *c, const char *name, const tally *t, int64_t g, int64_t now)
{
    json_t *by = json_object(), *item = NULL, *gv = at_av_n_int(g);
    at_clause older = {AT_TASKS_CHANGES_ATTR, AT_OP_LE, gv, NULL};
    at_clause none = {AT_TASKS_CHANGES_ATTR, AT_OP_NOT_EXISTS, NULL, NULL};
    at_cond cond = {&older, 1};
    int64_t total = 0;
    int rc;
    for (int i = 0; by && at_tasks_statuses[i]; i++) {
        json_object_set_new(by, at_tasks_statuses[i], at_av_n_int(t->by_status[i]));
        total += t->by_status[i];
    }
    if (by && gv)
        item = json_pack("{s:{s:s}, s:{s:s}, s:{s:O}, s:o, s:o, s:O, s:o, s:o}", "counter_seq_key",
                         "S", name, "instance_id", "S", c->id->instance_id, "by_status", "M", by,
                         "overdue", at_av_n_int(t->overdue), "total", at_av_n_int(total),
                         AT_TASKS_CHANGES_ATTR, gv, "computed_at", at_av_n_int(now),
                         "ExpirationTime", at_av_n_int(now + c->settings->counters_ttl_seconds));
    if (item && t->next_due) json_object_set_new(item, "valid_until", at_av_n_int(t->next_due));
    rc = item ? at_store_put(c->store, AT_TABLE_TASKS_COUNTERS, item, &cond) : AT_ENOMEM;
    if (rc == AT_ECOND) {
        cond.v = &none;
        rc = at_store_put(c->store, AT_TABLE_TASKS_COUNTERS, item, &cond);
    }
    json_decref(item);
    json_decref(by);
    json_decref(gv);
    return rc == AT_ECOND ? 0 : rc;
}

/* Computes the counters of the tenant (assignee NULL) or of one assignee, as of change
 * count g, and stores them. Returns 0 or AT_* (a failure to store is only logged: the
 * counts are still right). */
static int compute(at_ctx *c, const char *assignee, int64_t g, tally *t)
{
    const char *name = counters_name(c, assignee);
    int64_t now = now_s();
    int rc;
    memset(t, 0, sizeof *t);
    rc = assignee ? tally_assignee(c->store, c->id->instance_id, assignee, now, t)
                  : tally_tenant(c->store, c->id->instance_id, now, t);
    if (!rc && (!name || store_tally(c, name, t, g, now)))
        at_log(AT_LOG_WARN,
               "task counters: computed but not cached (the next read computes them again)");
    return rc;
}

/* Reads the cached counters at name: 1 and t when they are there, of change count g,
 * and no task of theirs has become overdue since; 0 otherwise (*exists says whether an
 * item was there at all), or a negative AT_* error. */
static int cached(at_ctx *c, const char *name, int64_t g, tally *t, int *exists)
{
    json_t *key = json_pack("{s:{s:s}}", "counter_seq_key", "S", name), *item = NULL;
    int64_t at = -1;
    int rc = key ? at_store_get(c->store, AT_TABLE_TASKS_COUNTERS, key, &item) : AT_ENOMEM, ok = 0;
    *exists = rc == 0;
    if (!rc)
        ok = tally_of(item, t) && at_item_n_int(item, AT_TASKS_CHANGES_ATTR, &at) && at == g &&
             (!t->next_due || now_s() <= t->next_due);
    json_decref(item);
    json_decref(key);
    if (rc && rc != AT_ENOTFOUND) return rc;
    return ok;
}

/* GET /tasks/counters[?assignee_uuid=]: the cached counters when they are current, else
 * computed (and cached). */
void at_tasks_counters(at_ctx *c)
{
    const char *assignee = at_query_param(c, "assignee_uuid"), *name;
    json_t *av = NULL;
    int64_t g = 0;
    tally t;
    int rc, exists, hit = 0;
    if (assignee) {
        char why[160] = "";
        av = at_model_text_value(at_model_field(&at_tasks, "assignee_uuid"), assignee, why,
                                 sizeof why);
        if (!av) {
            at_reply_validation(
                c, json_pack("{s:s}", "assignee_uuid", why[0] ? why : "out of memory"));
            return;
        }
        assignee = at_arena_strdup(c->arena, json_string_value(json_object_get(av, "S")));
        json_decref(av);
    }
    name = counters_name(c, assignee);
    rc = name ? read_changes(c->store, c->id->instance_id, &g) : AT_ENOMEM;
    if (!rc && (hit = cached(c, name, g, &t, &exists)) < 0) rc = hit;
    if (!rc && !hit) rc = compute(c, assignee, g, &t);
    if (rc)
        at_reply_store_error(c, rc, "count tasks");
    else if (!(av = answer_of(&t)))
        at_reply_error(c, 500, "out of memory");
    else
        at_reply_json(c, 200, av);
}

/* Recalculates the cached counters at name for assignee (NULL: the tenant's) when
 * there are some and they count at most RECALC_INLINE_MAX tasks. */
static void recalculate(at_ctx *c, const char *assignee, int64_t g)
{
    const char *name = counters_name(c, assignee);
    int64_t total = 0;
    int exists = 0, rc;
    tally t;
    if (!name) return;
    memset(&t, 0, sizeof t);
    rc = cached(c, name, g, &t, &exists);
    for (int i = 0; i < AT_TASKS_NSTATUS; i++)
        total += t.by_status[i];
    if (rc < 0 || (exists && total <= RECALC_INLINE_MAX && compute(c, assignee, g, &t)))
        at_log(AT_LOG_WARN,
               "task counters: could not recalculate after a change (they are not served "
               "stale: the next read computes them)");
}

void at_tasks_counters_changed(at_ctx *c, const json_t *old, const json_t *item)
{
    const char *was = at_item_s(old, "assignee_uuid"), *is = at_item_s(item, "assignee_uuid");
    int64_t g;
    if (count_change(c->store, c->id->instance_id, &g)) {
        at_log(AT_LOG_ERROR,
               "task counters: could not count a change; cached counters may be stale "
               "until they expire or the next change");
        return;
    }
    recalculate(c, NULL, g);
    if (was) recalculate(c, was, g);
    if (is && !(was && strcmp(was, is) == 0)) recalculate(c, is, g);
}

static const char counters_schema[] = "{\"type\": \"object\", \"required\": [\"by_status\", "
                                      "\"overdue\", \"total\"], \"properties\": {"
                                      "\"by_status\": {\"type\": \"object\", \"required\": "
                                      "[\"open\", \"in_progress\", \"blocked\", \"done\", "
                                      "\"cancelled\"], \"properties\": {"
                                      "\"open\": {\"type\": \"integer\", \"minimum\": 0}, "
                                      "\"in_progress\": {\"type\": \"integer\", \"minimum\": 0}, "
                                      "\"blocked\": {\"type\": \"integer\", \"minimum\": 0}, "
                                      "\"done\": {\"type\": \"integer\", \"minimum\": 0}, "
                                      "\"cancelled\": {\"type\": \"integer\", \"minimum\": 0}}}, "
                                      "\"overdue\": {\"type\": \"integer\", \"minimum\": 0, "
                                      "\"description\": \"due_at past, not done or cancelled\"}, "
                                      "\"total\": {\"type\": \"integer\", \"minimum\": 0}}}";

static const at_doc_param counters_params[] = {
    {"assignee_uuid", "{\"type\": \"string\", \"format\": \"uuid\"}",
     "only the tasks assigned to this user (their own counters)"},
    {NULL},
};

const at_route_doc at_tasks_counters_doc = {
    .answer =
        "how many of the tenant's tasks (or one assignee's) are in each status, overdue, and in "
        "all; kept for COUNTERS_TTL_SECONDS and recalculated when a task changes",
    .schema = counters_schema,
    .query = counters_params,
    .errors = "400",
    .store = 1,
};

/* ---- remove_counters ---- */

int at_tasks_remove_counters(at_store *s, size_t *removed)
{
    json_t *start = NULL;
    size_t n = 0;
    int rc;
    do {
        at_page page = {0};
        json_t *it;
        size_t i;
        rc = at_store_scan(s, AT_TABLE_TASKS_COUNTERS, start, 100, &page);
        json_array_foreach(page.items, i, it)
        {
            json_t *key =
                rc ? NULL : at_schema_item_key(at_schema_table(AT_TABLE_TASKS_COUNTERS), NULL, it);
            if (!rc) rc = key ? at_store_delete(s, AT_TABLE_TASKS_COUNTERS, key, NULL) : AT_ENOMEM;
            if (!rc) n++;
            json_decref(key);
        }
        json_decref(start);
        start = rc ? NULL : json_incref(page.last_key);
        at_page_release(&page);
    } while (start);
    if (removed) *removed = n;
    return rc;
}
