/* Unit tests of the tasks resource over the real route table and a sqlite store seen
 * through a recording wrapper: which index each list filter, the counters and the
 * reports read (never the table itself, and on sqlite every statement an index SEARCH:
 * no SCAN, no temporary B-tree); a report's bounded work per request (202 until done);
 * remove_counters. The behaviour seen from outside is in tests/api/tasks*.test.mjs. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "api/api.h"
#include "actionstools/cursor.h"
#include "actionstools/err.h"
#include "actionstools/tasks.h"
#include "store/sqlite/sqlite_int.h"
#include "actionstools/banned.h"

/* ---- a store that records every query, checks its sqlite plan, and may stop each
 * page after one stored item (as a store at its work bound does) ---- */

#define MAX_SEEN 64

typedef struct seen {
    char index[64];
    char sk[32];
    at_op sk_op;
    char filters[160]; /* "attr op,attr op," */
    unsigned flags;
} seen;

typedef struct recorder {
    at_store base;
    at_store *real;
    int one_per_page;
    int ghost; /* 1: the reports cache holds an expired item DynamoDB has not swept yet */
    size_t n;
    seen q[MAX_SEEN];
} recorder;

static int r_setup(at_store *s, json_t *c, json_t *e)
{
    return at_store_setup(((recorder *)s)->real, c, e);
}
static int r_get(at_store *s, at_table_id t, const json_t *k, json_t **i)
{
    return at_store_get(((recorder *)s)->real, t, k, i);
}
/* With ghost, a put in the reports cache sees the expired item DynamoDB still holds (its
 * TTL sweeper deletes it within days): "not exists" is false, "expired" is true. */
static int r_put(at_store *s, at_table_id t, const json_t *i, const at_cond *c)
{
    recorder *r = (recorder *)s;
    if (r->ghost && t == AT_TABLE_REPORTS_CACHE && c && c->n == 1) {
        if (c->v[0].op == AT_OP_NOT_EXISTS) return AT_ECOND;
        if (c->v[0].op == AT_OP_LT && strcmp(c->v[0].attr, "ExpirationTime") == 0) {
            r->ghost = 0;
            return at_store_put(r->real, t, i, NULL);
        }
    }
    return at_store_put(r->real, t, i, c);
}
static int r_update(at_store *s, at_table_id t, const json_t *k, const at_update *u,
                    const at_cond *c, json_t **n)
{
    return at_store_update(((recorder *)s)->real, t, k, u, c, n);
}
static int r_del(at_store *s, at_table_id t, const json_t *k, const at_cond *c)
{
    return at_store_delete(((recorder *)s)->real, t, k, c);
}
static int r_scan(at_store *s, at_table_id t, const json_t *k, size_t l, at_page *p)
{
    return at_store_scan(((recorder *)s)->real, t, k, l, p);
}

static int r_query(at_store *s, const at_query *q, at_page *out)
{
    recorder *r = (recorder *)s;
    char *plan = NULL;
    at_query one = *q;
    if (q->table == AT_TABLE_TASKS) {
        /* On sqlite every query of the tasks' routes is an index search. */
        assert_int_equal(at_sqlite_explain(r->real, q, &plan), 0);
        if (strstr(plan, "SCAN") || strstr(plan, "TEMP B-TREE") || !strstr(plan, "SEARCH"))
            fail_msg("a task query that is not an index search:\n%s", plan);
        free(plan);
        if (r->n < MAX_SEEN) {
            seen *v = &r->q[r->n++];
            memset(v, 0, sizeof *v);
            snprintf(v->index, sizeof v->index, "%s", q->index ? q->index : "(table)");
            snprintf(v->sk, sizeof v->sk, "%s", q->sk.attr ? q->sk.attr : "");
            v->sk_op = q->sk.op;
            for (size_t i = 0; i < q->filter.n; i++) {
                size_t len = strlen(v->filters);
                snprintf(v->filters + len, sizeof v->filters - len, "%s %d,", q->filter.v[i].attr,
                         (int)q->filter.v[i].op);
            }
            v->flags = q->flags;
        }
    }
    if (!r->one_per_page || (q->flags & AT_Q_COUNT)) return at_store_query(r->real, q, out);
    one.limit = 1;
    return at_store_query(r->real, &one, out);
}

static void r_destroy(at_store *s)
{
    at_store_release_names(s);
    free(s);
}

static const at_store_ops recorder_ops = {"recorder", r_setup, r_get, r_put, r_update, r_del,
                                          r_query,    r_scan,  NULL,  NULL,  NULL,     r_destroy};

/* ---- fixtures and calls ---- */

static char dir[64];
static at_store *real_store;
static recorder *rec;
static at_cursor_key key;
static const at_api_settings settings = {"", 345600, NULL};

static const at_identity ann = {"11111111-1111-4111-8111-111111111111", "Ann", "tenant-a", 0};
#define BOB "22222222-2222-4222-8222-222222222222"

static const at_route *route(const char *method, const char *pattern)
{
    for (const at_route *rt = at_routes; rt->method; rt++)
        if (strcmp(rt->method, method) == 0 && strcmp(rt->pattern, pattern) == 0) return rt;
    fail_msg("no route %s %s", method, pattern);
    return NULL;
}

typedef struct answer {
    int status;
    json_t *body;
} answer;

/* Calls a route as ann with path parameters ("name=value", NULL-ended), a query string
 * ("a=b&c=d") and a JSON body (all may be NULL). */
static answer call(const at_route *rt, const char *const *params, const char *query,
                   const char *body)
{
    at_arena arena;
    at_request req;
    at_response resp;
    at_ctx c;
    at_header q[8];
    char qbuf[1024];
    answer a = {0};
    memset(&req, 0, sizeof req);
    memset(&resp, 0, sizeof resp);
    memset(&c, 0, sizeof c);
    at_arena_init(&arena);
    req.arena = &arena;
    req.method = rt->method;
    req.path = rt->pattern;
    if (query) {
        char *save = NULL, *tok;
        snprintf(qbuf, sizeof qbuf, "%s", query);
        for (tok = strtok_r(qbuf, "&", &save); tok && req.nquery < 8;
             tok = strtok_r(NULL, "&", &save)) {
            char *eq = strchr(tok, '=');
            if (eq) *eq = '\0';
            q[req.nquery++] = (at_header){tok, eq ? eq + 1 : ""};
        }
        req.query = q;
    }
    c.settings = &settings;
    c.store = &rec->base;
    c.cursor_key = &key;
    c.req = &req;
    c.resp = &resp;
    c.arena = &arena;
    c.id = &ann;
    c.route = rt;
    for (; params && *params && c.nparams < AT_MAX_PARAMS; params++) {
        const char *eq = strchr(*params, '=');
        c.param_names[c.nparams] = at_arena_strndup(&arena, *params, (size_t)(eq - *params));
        c.params[c.nparams++] = eq + 1;
    }
    if (body) c.body = json_loads(body, JSON_DECODE_ANY, NULL);
    rt->handler(&c);
    a.status = resp.status;
    if (resp.body) a.body = json_loadb(resp.body, resp.body_len, 0, NULL);
    json_decref(c.body);
    at_response_release(&resp);
    at_arena_release(&arena);
    return a;
}

static void expect_status(answer *a, int status)
{
    if (a->status != status) {
        char *t = json_dumps(a->body, JSON_COMPACT);
        fail_msg("expected %d, got %d %s", status, a->status, t ? t : "");
    }
}

static void create(const char *body)
{
    answer a = call(route("POST", "/tasks"), NULL, NULL, body);
    expect_status(&a, 201);
    json_decref(a.body);
}

static int setup(void **state)
{
    const char *names[AT_TABLE_COUNT];
    char path[128], err[256];
    (void)state;
    snprintf(dir, sizeof dir, "/tmp/at-tasks-XXXXXX");
    if (!mkdtemp(dir)) return -1;
    snprintf(path, sizeof path, "%s/t.db", dir);
    for (int i = 0; i < AT_TABLE_COUNT; i++)
        names[i] = at_schema_table((at_table_id)i)->env_name;
    if (at_store_open_sqlite(path, names, &real_store, err, sizeof err)) return -1;
    if (at_store_setup(real_store, NULL, NULL)) return -1;
    rec = calloc(1, sizeof *rec);
    rec->base.ops = &recorder_ops;
    rec->real = real_store;
    if (at_store_init_names(&rec->base, names)) return -1;
    return at_cursor_key_derive(&key, "a test secret", 13);
}

static int teardown(void **state)
{
    char path[128];
    (void)state;
    at_store_free(&rec->base);
    at_store_free(real_store);
    for (const char *const *f = (const char *const[]){"t.db", "t.db-wal", "t.db-shm", NULL}; *f;
         f++) {
        snprintf(path, sizeof path, "%s/%s", dir, *f);
        unlink(path);
    }
    rmdir(dir);
    return 0;
}

/* ---- tests ---- */

/* Lists query and what their queries must read: the first query's index, sort key
 * condition (op, or -1: none) and the filters it carries; the second query's index
 * when the list reads a small set first and must page an ordered index, or NULL. */
typedef struct expect_list {
    const char *pattern;
    const char *const *params;
    const char *query;
    const char *index;
    int sk_op;
    const char *filters;
    const char *then;
} expect_list;

static void test_each_filter_reads_its_index(void **state)
{
    static const char *const target[] = {"target_uuid=T1", NULL};
    static const char *const bob[] = {"user_uuid=" BOB, NULL};
    const char *inst = "instance_id 2,";
    char fl[200];
    (void)state;
    /* 120 open tasks (more than a small set), 3 blocked; on T1, assigned to Bob, named Anna. */
    for (int i = 0; i < 120; i++)
        create("{\"title\": \"t\", \"target_uuid\": \"T1\", \"assignee_uuid\": \"" BOB
               "\", \"assignee_name\": \"Anna\"}");
    for (int i = 0; i < 3; i++)
        create("{\"title\": \"b\", \"status\": \"blocked\"}");
    snprintf(fl, sizeof fl, "status %d,", (int)AT_OP_EQ);
    {
        const expect_list cases[] = {
            {"/tasks", NULL, NULL, "instance_id-created_at-index", -1, "", NULL},
            {"/tasks", NULL, "sort=updated_at&order=asc", "instance_id-updated_at-index", -1, "",
             NULL},
            {"/tasks", NULL, "target_uuid=T1", "target_uuid-created_at-index", -1, inst, NULL},
            {"/tasks", NULL, "target_uuid=T1&sort=updated_at", "target_uuid-updated_at-index", -1,
             inst, NULL},
            {"/tasks", NULL, "assignee_uuid=" BOB, "assignee_uuid-created_at-index", -1, inst,
             NULL},
            {"/tasks", NULL, "owner_uuid=" BOB, "owner_uuid-created_at-index", -1, inst, NULL},
            /* sets their index does not sort: read whole when small, else paged in order */
            {"/tasks", NULL, "status=blocked", "instance_id-status-index", AT_OP_EQ, "", NULL},
            {"/tasks", NULL, "status=open", "instance_id-status-index", AT_OP_EQ, "",
             "instance_id-created_at-index"},
            {"/tasks", NULL, "created_by=nobody", "instance_id-created_by-index", AT_OP_EQ, "",
             NULL},
            {"/tasks", NULL, "assignee_name=Ann", "instance_id-assignee_name-index",
             AT_OP_BEGINS_WITH, "", "instance_id-created_at-index"},
            {"/tasks", NULL, "assignee_uuid=" BOB "&sort=updated_at",
             "assignee_uuid-created_at-index", -1, inst, "instance_id-updated_at-index"},
            /* combinations: the most selective index, the rest as filters */
            {"/tasks", NULL, "status=open&assignee_uuid=" BOB, "assignee_uuid-created_at-index", -1,
             NULL, NULL},
            {"/tasks", NULL, "assignee_name=An&target_uuid=T1", "target_uuid-created_at-index", -1,
             NULL, NULL},
            {"/targets/{target_uuid}/tasks", target, NULL, "target_uuid-created_at-index", -1, inst,
             NULL},
            {"/targets/{target_uuid}/tasks", target, "sort=updated_at&status=open",
             "target_uuid-updated_at-index", -1, NULL, NULL},
            {"/users/{user_uuid}/tasks", bob, "role=assignee", "assignee_uuid-created_at-index", -1,
             inst, NULL},
            {"/users/{user_uuid}/tasks", bob, NULL, "owner_uuid-created_at-index", -1, inst, NULL},
        };
        for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
            const expect_list *e = &cases[i];
            answer a;
            rec->n = 0;
            a = call(route("GET", e->pattern), e->params, e->query, NULL);
            expect_status(&a, 200);
            json_decref(a.body);
            if (rec->n < 1 || strcmp(rec->q[0].index, e->index) != 0)
                fail_msg("%s?%s read %s, not %s", e->pattern, e->query ? e->query : "",
                         rec->n ? rec->q[0].index : "nothing", e->index);
            if (e->sk_op >= 0 && (!rec->q[0].sk[0] || (int)rec->q[0].sk_op != e->sk_op))
                fail_msg("%s?%s: no sort key condition", e->pattern, e->query);
            if (e->sk_op < 0 && rec->q[0].sk[0])
                fail_msg("%s?%s: a sort key condition", e->pattern, e->query);
            if (e->filters && strcmp(rec->q[0].filters, e->filters) != 0)
                fail_msg("%s?%s: filters \"%s\", not \"%s\"", e->pattern, e->query ? e->query : "",
                         rec->q[0].filters, e->filters);
            if (e->then && (rec->n < 2 || strcmp(rec->q[1].index, e->then) != 0))
                fail_msg("%s?%s: then read %s, not %s", e->pattern, e->query,
                         rec->n > 1 ? rec->q[1].index : "nothing", e->then);
            if (!e->then && rec->n != 1)
                fail_msg("%s?%s: %zu queries", e->pattern, e->query, rec->n);
            for (size_t k = 0; k < rec->n; k++)
                assert_true(rec->q[k].flags & AT_Q_LIVE);
        }
    }
    /* the combinations carry the other filters */
    rec->n = 0;
    json_decref(call(route("GET", "/tasks"), NULL, "status=open&assignee_uuid=" BOB, NULL).body);
    assert_non_null(strstr(rec->q[0].filters, fl));
    rec->n = 0;
    json_decref(call(route("GET", "/tasks"), NULL, "status=open", NULL).body);
    assert_non_null(strstr(rec->q[1].filters, fl)); /* the ordered index, filtered */
}

static void test_counters_and_reports_read_indexes(void **state)
{
    answer a;
    (void)state;
    rec->n = 0;
    a = call(route("GET", "/tasks/counters"), NULL, NULL, NULL);
    expect_status(&a, 200);
    assert_int_equal(json_integer_value(json_object_get(a.body, "total")), 123);
    json_decref(a.body);
    assert_int_equal(rec->n, 5); /* one per status, on the tenant's status index */
    for (size_t i = 0; i < rec->n; i++) {
        assert_string_equal(rec->q[i].index, "instance_id-status-index");
        assert_int_equal(rec->q[i].sk_op, AT_OP_EQ);
    }
    /* a second read is served from tasks_counters: no task is read */
    rec->n = 0;
    a = call(route("GET", "/tasks/counters"), NULL, NULL, NULL);
    expect_status(&a, 200);
    json_decref(a.body);
    assert_int_equal(rec->n, 0);
    rec->n = 0;
    a = call(route("GET", "/tasks/counters"), NULL, "assignee_uuid=" BOB, NULL);
    expect_status(&a, 200);
    assert_int_equal(json_integer_value(json_object_get(a.body, "total")), 120);
    json_decref(a.body);
    assert_string_equal(rec->q[0].index, "assignee_uuid-created_at-index");
    rec->n = 0;
    a = call(route("GET", "/reports/tasks"), NULL, NULL, NULL);
    expect_status(&a, 200);
    json_decref(a.body);
    assert_int_equal(rec->n, 1);
    assert_string_equal(rec->q[0].index, "instance_id-created_at-index-copy");
    assert_int_equal(rec->q[0].sk_op, AT_OP_BETWEEN);
}

/* With one stored item per page, a report of 123 tasks takes 4 requests of at most 32
 * pages each: 202 with the tasks read so far, then 200 with every task counted once. */
static void test_report_work_is_bounded(void **state)
{
    int64_t read = 0;
    answer a;
    int requests = 0;
    (void)state;
    rec->one_per_page = 1;
    for (;;) {
        rec->n = 0;
        a = call(route("GET", "/reports/tasks"), NULL, "group_by=day", NULL);
        requests++;
        assert_true(rec->n <= 32);
        if (a.status == 200) break;
        expect_status(&a, 202);
        assert_string_equal(json_string_value(json_object_get(a.body, "status")), "computing");
        assert_true(json_integer_value(json_object_get(a.body, "tasks_read")) > read);
        read = json_integer_value(json_object_get(a.body, "tasks_read"));
        json_decref(a.body);
        assert_true(requests < 10);
    }
    rec->one_per_page = 0;
    assert_int_equal(requests, 4);
    assert_int_equal(json_integer_value(json_object_get(
                         json_array_get(json_object_get(a.body, "groups"), 0), "created")),
                     123);
    json_decref(a.body);
    /* finished: served from the cache */
    rec->n = 0;
    a = call(route("GET", "/reports/tasks"), NULL, "group_by=day", NULL);
    expect_status(&a, 200);
    json_decref(a.body);
    assert_int_equal(rec->n, 0);
}

/* A report started where the reports cache still holds an expired item (DynamoDB,
 * before its TTL sweeper ran) goes on all the same: it did not, answering 202 with no
 * progress until the item was swept. */
static void test_report_over_an_expired_item(void **state)
{
    answer a;
    int requests = 0;
    (void)state;
    rec->one_per_page = 1;
    rec->ghost = 1;
    do {
        a = call(route("GET", "/reports/tasks"), NULL, "group_by=assignee", NULL);
        json_decref(a.body);
        assert_true(++requests <= 4);
    } while (a.status == 202);
    rec->one_per_page = 0;
    expect_status(&a, 200);
    assert_int_equal(rec->ghost, 0);
}

static void test_remove_counters(void **state)
{
    json_t *items = json_array();
    at_page page = {0};
    size_t removed = 0;
    (void)state;
    for (int i = 0; i < 250; i++) {
        char k[32];
        snprintf(k, sizeof k, "tasks#t%03d", i);
        json_array_append_new(
            items, json_pack("{s:{s:s}, s:{s:s}}", "counter_seq_key", "S", k, "total", "N", "1"));
    }
    assert_int_equal(at_store_batch_put(real_store, AT_TABLE_TASKS_COUNTERS, items), 0);
    json_decref(items);
    assert_int_equal(at_tasks_remove_counters(real_store, &removed), 0);
    assert_true(removed >= 250); /* and the counters the tests above cached */
    assert_int_equal(at_store_scan(real_store, AT_TABLE_TASKS_COUNTERS, NULL, 10, &page), 0);
    assert_int_equal(at_page_count(&page), 0);
    at_page_release(&page);
    assert_int_equal(at_tasks_remove_counters(real_store, &removed), 0);
    assert_int_equal(removed, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_each_filter_reads_its_index),
        cmocka_unit_test(test_counters_and_reports_read_indexes),
        cmocka_unit_test(test_report_work_is_bounded),
        cmocka_unit_test(test_report_over_an_expired_item),
        cmocka_unit_test(test_remove_counters),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
