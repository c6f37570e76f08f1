/* Tests of the dynamodb backend (src/store/dynamodb/):
 *  - the shared conformance suite (conformance.h) against dynalite;
 *  - request counts (one GetItem per get, one Query per unfiltered page, no Scan but
 *    in scan), error mapping, TTL, batches, concurrency, against dynalite;
 *  - DynamoDB's wire format and error mapping against a fake server (fake_http.h).
 * Retries, backoff, timeouts and keep-alive are the AWS client's: tests/unit/aws/.
 *
 * dynalite: AT_DYNAMODB_ENDPOINT names a running server; when it is unset the test
 * starts one with scripts/dynalite.sh (installed by `make deps`), and when that is not
 * possible the tests that need it are skipped with a loud message. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "actionstools/av.h"
#include "actionstools/err.h"
#include "actionstools/log.h"
#include "actionstools/schema.h"
#include "actionstools/store.h"
#include "actionstools/timeutil.h"
#include "store/dynamodb/dynamodb.h"
#include "conformance.h"
#include "../aws/fake_http.h"
#include "actionstools/banned.h"

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return x < y ? -1 : x > y;
}

/* ---- dynalite ------------------------------------------------------------------ */

static char endpoint[128];     /* "" when no server could be had */
static char dynalite_dir[256]; /* set when this test started dynalite */
static char run_tag[48];       /* makes table names unique per run */

/* scripts/dynalite.sh from the repository root (the working directory of
 * scripts/run-unit.sh), or found from AT_FIXTURES (<root>/tests/fixtures). */
static const char *script_path(void)
{
    static char path[512];
    const char *fx = getenv("AT_FIXTURES");
    struct stat st;
    if (stat("scripts/dynalite.sh", &st) == 0 || !fx || !*fx) return "./scripts/dynalite.sh";
    snprintf(path, sizeof path, "%.400s/../../scripts/dynalite.sh", fx);
    return path;
}

static void start_dynalite(void)
{
    const char *env = getenv("AT_DYNAMODB_ENDPOINT");
    char cmd[512], port[32] = "";
    FILE *p;

    if (env && *env) {
        snprintf(endpoint, sizeof endpoint, "%s", env);
        return;
    }
    snprintf(dynalite_dir, sizeof dynalite_dir, "%s/at-dynalite-XXXXXX",
             getenv("TMPDIR") && *getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
    if (!mkdtemp(dynalite_dir)) {
        dynalite_dir[0] = '\0';
        return;
    }
    snprintf(cmd, sizeof cmd, "%s start '%s' %ld", script_path(), dynalite_dir, (long)getpid());
    p = popen(cmd, "r");
    if (p) {
        if (!fgets(port, sizeof port, p)) port[0] = '\0';
        if (pclose(p) != 0) port[0] = '\0';
    }
    port[strcspn(port, "\r\n")] = '\0';
    if (port[0]) snprintf(endpoint, sizeof endpoint, "http://127.0.0.1:%s", port);
}

static void stop_dynalite(void)
{
    char cmd[1024];
    if (!dynalite_dir[0]) return;
    snprintf(cmd, sizeof cmd, "%s stop '%s'; rm -rf '%s'", script_path(), dynalite_dir,
             dynalite_dir);
    if (system(cmd) != 0) fprintf(stderr, "could not stop dynalite in %s\n", dynalite_dir);
}

static void need_dynalite(void)
{
    if (!endpoint[0]) {
        print_message("SKIPPED: no DynamoDB-compatible server (set AT_DYNAMODB_ENDPOINT or "
                      "run `make deps` so scripts/dynalite.sh can start dynalite)\n");
        skip();
    }
}

/* Fills names with this run's physical names, suffixed with tag. */
static void make_names(char buf[AT_TABLE_COUNT][128], const char *names[AT_TABLE_COUNT],
                       const char *tag)
{
    for (int i = 0; i < AT_TABLE_COUNT; i++) {
        snprintf(buf[i], sizeof buf[i], "%s_%s_%s", at_schema_table(i)->env_name, run_tag, tag);
        names[i] = buf[i];
    }
}

static at_store *open_store(const char *tag, int do_setup)
{
    static char buf[AT_TABLE_COUNT][128];
    const char *names[AT_TABLE_COUNT];
    at_aws_options o = {endpoint, "us-east-1", "AKIDTEST", "test-secret-key", NULL, 0, 0, -1};
    at_store *s = NULL;
    char err[256] = "";

    make_names(buf, names, tag);
    if (at_store_open_dynamodb(&o, names, &s, err, sizeof err))
        fail_msg("at_store_open_dynamodb: %s", err);
    if (do_setup) assert_int_equal(at_store_setup(s, NULL, NULL), 0);
    return s;
}

static uint64_t reqs(at_store *s, at_ddb_op op)
{
    at_ddb_stats st;
    at_ddb_client_stats(at_dynamodb_client(s), &st);
    return st.requests[op];
}

static uint64_t all_reqs(at_store *s)
{
    uint64_t n = 0;
    for (int i = 0; i < AT_DDB_OP_COUNT; i++)
        n += reqs(s, (at_ddb_op)i);
    return n;
}

/* A notes item (AV map). deleted adds deleted_at. */
static json_t *note(const char *target, const char *uuid, const char *updated, int deleted)
{
    json_t *it = json_pack("{s:{s:s}, s:{s:s}, s:{s:s}, s:{s:s}, s:{s:s}, s:{s:s}, "
                           "s:{s:{s:{s:s}}}}",
                           "target_uuid", "S", target, "uuid", "S", uuid, "instance_id", "S", "i1",
                           "owner_uuid", "S", "o1", "created_at", "S", updated, "updated_at", "S",
                           updated, "data", "M", "text", "S", "hello");
    if (deleted) json_object_set_new(it, "deleted_at", at_av_s("2024-01-01 00:00:00.000000"));
    return it;
}

static json_t *note_key(const char *target, const char *uuid)
{
    return json_pack("{s:{s:s}, s:{s:s}}", "target_uuid", "S", target, "uuid", "S", uuid);
}

/* ---- conformance ---------------------------------------------------------------- */

static int conf_open(void *ctx, const char *const names[AT_TABLE_COUNT], at_store **out)
{
    at_aws_options o = {endpoint, "us-east-1", "AKIDTEST", "test-secret-key", NULL, 0, 0, -1};
    char err[256];
    (void)ctx;
    return at_store_open_dynamodb(&o, names, out, err, sizeof err);
}

/* ---- tests against dynalite ----------------------------------------------------- */

static void test_setup_creates_schema(void **state)
{
    at_store *s;
    json_t *created = json_array(), *existing = json_array(), *req, *resp = NULL, *t, *ix;
    const at_table_def *tasks = at_schema_table(AT_TABLE_TASKS);
    size_t i;
    (void)state;
    need_dynalite();

    s = open_store("setup", 0);
    assert_int_equal(at_store_setup(s, created, existing), 0);
    assert_int_equal(json_array_size(created), AT_TABLE_COUNT);
    assert_int_equal(json_array_size(existing), 0);
    json_array_clear(created);
    assert_int_equal(at_store_setup(s, created, existing), 0);
    assert_int_equal(json_array_size(created), 0);
    assert_int_equal(json_array_size(existing), AT_TABLE_COUNT);

    /* The tasks table has exactly the schema's keys, indexes and projections. */
    req = json_pack("{s:s}", "TableName", at_store_table_name(s, AT_TABLE_TASKS));
    assert_int_equal(at_ddb_call(at_dynamodb_client(s), AT_DDB_DESCRIBE_TABLE, req, &resp, NULL),
                     0);
    t = json_object_get(resp, "Table");
    assert_string_equal(
        json_string_value(json_object_get(json_object_get(t, "BillingModeSummary"), "BillingMode")),
        "PAY_PER_REQUEST");
    assert_string_equal(json_string_value(json_object_get(
                            json_array_get(json_object_get(t, "KeySchema"), 1), "AttributeName")),
                        "uuid");
    {
        size_t ngsi = 0, nlsi = 0;
        for (i = 0; i < tasks->nindexes; i++)
            tasks->indexes[i].kind == AT_INDEX_GSI ? ngsi++ : nlsi++;
        assert_int_equal(json_array_size(json_object_get(t, "GlobalSecondaryIndexes")), ngsi);
        assert_int_equal(json_array_size(json_object_get(t, "LocalSecondaryIndexes")), nlsi);
    }
    json_array_foreach(json_object_get(t, "GlobalSecondaryIndexes"), i, ix)
    {
        const char *name = json_string_value(json_object_get(ix, "IndexName"));
        const at_index_def *d = at_schema_index(tasks, name);
        json_t *proj = json_object_get(ix, "Projection");
        assert_non_null(d);
        assert_string_equal(json_string_value(json_object_get(proj, "ProjectionType")),
                            d->include ? "INCLUDE" : "ALL");
        if (d->include)
            assert_string_equal(
                json_string_value(json_array_get(json_object_get(proj, "NonKeyAttributes"), 0)),
                d->include[0]);
    }
    json_decref(req);
    json_decref(resp);
    json_decref(created);
    json_decref(existing);
    at_store_free(s);
}

static at_store *shared_store; /* set up once for the tests below */

static int group_setup(void **state)
{
    (void)state;
    if (getenv("AT_TEST_LOG_DEBUG")) at_log_set_level(AT_LOG_DEBUG);
    snprintf(run_tag, sizeof run_tag, "t%ld_%lld", (long)getpid(),
             (long long)(at_now_us() / 1000 % 100000000));
    start_dynalite();
    if (!endpoint[0])
        fprintf(stderr, "\n*** test_store_dynamodb: NO DynamoDB-compatible server: the dynalite "
                        "tests and the conformance suite are SKIPPED. Run `make deps` (npm ci) "
                        "or set AT_DYNAMODB_ENDPOINT. ***\n\n");
    else
        fprintf(stderr, "test_store_dynamodb: using %s\n", endpoint);
    return 0;
}

static int group_teardown(void **state)
{
    (void)state;
    at_store_free(shared_store);
    shared_store = NULL;
    return 0;
}

static at_store *store(void)
{
    if (!shared_store) shared_store = open_store("main", 1);
    at_ddb_client_reset_stats(at_dynamodb_client(shared_store));
    return shared_store;
}

static void test_item_ops_cost_one_request(void **state)
{
    at_store *s;
    json_t *it, *key, *got = NULL, *newit = NULL, *set;
    at_update u = {0};
    (void)state;
    need_dynalite();
    s = store();

    it = note("t-one", "u1", "2024-01-01 00:00:00.000000", 0);
    key = note_key("t-one", "u1");
    assert_int_equal(at_store_put(s, AT_TABLE_NOTES, it, NULL), 0);
    assert_int_equal(reqs(s, AT_DDB_PUT_ITEM), 1);
    assert_int_equal(at_store_get(s, AT_TABLE_NOTES, key, &got), 0);
    assert_int_equal(reqs(s, AT_DDB_GET_ITEM), 1);
    assert_true(json_equal(got, it));
    json_decref(got);

    set = json_pack("{s:{s:s}}", "title", "S", "x");
    u.set = set;
    u.add_attr = "version";
    u.add_value = 1;
    assert_int_equal(at_store_update(s, AT_TABLE_NOTES, key, &u, NULL, &newit), 0);
    assert_int_equal(reqs(s, AT_DDB_UPDATE_ITEM), 1);
    assert_string_equal(at_item_s(newit, "title"), "x");
    assert_string_equal(at_item_s(newit, "owner_uuid"), "o1"); /* ALL_NEW: the whole item */
    json_decref(newit);

    assert_int_equal(at_store_delete(s, AT_TABLE_NOTES, key, NULL), 0);
    assert_int_equal(reqs(s, AT_DDB_DELETE_ITEM), 1);
    assert_int_equal(at_store_get(s, AT_TABLE_NOTES, key, &got), AT_ENOTFOUND);
    assert_int_equal(all_reqs(s), 5);
    json_decref(set);
    json_decref(it);
    json_decref(key);
}

static void test_conditions_and_reserved_words(void **state)
{
    at_store *s;
    json_t *it, *key, *one = at_av_n_int(1), *two = at_av_n_int(2), *pfx = at_av_s("2024");
    json_t *uuidv = at_av_s("u2"), *newit = NULL;
    at_clause not_exists = {"uuid", AT_OP_NOT_EXISTS, NULL, NULL};
    at_clause ver_eq1 = {"version", AT_OP_EQ, one, NULL};
    at_clause uuid_eq = {"uuid", AT_OP_EQ, uuidv, NULL};
    at_clause between = {"version", AT_OP_BETWEEN, one, two};
    at_clause begins = {"created_at", AT_OP_BEGINS_WITH, pfx, NULL};
    at_clause many[3] = {uuid_eq, between, begins};
    at_cond c_new = {&not_exists, 1}, c_v1 = {&ver_eq1, 1}, c_many = {many, 3};
    at_update u = {0};
    (void)state;
    need_dynalite();
    s = store();

    it = note("t-cond", "u2", "2024-02-01 00:00:00.000000", 0);
    json_object_set_new(it, "version", at_av_n_int(1));
    key = note_key("t-cond", "u2");
    assert_int_equal(at_store_put(s, AT_TABLE_NOTES, it, &c_new), 0);
    assert_int_equal(at_store_put(s, AT_TABLE_NOTES, it, &c_new), AT_ECOND);
    u.add_attr = "version";
    u.add_value = 1;
    assert_int_equal(at_store_update(s, AT_TABLE_NOTES, key, &u, &c_v1, &newit), 0);
    assert_int_equal(at_store_update(s, AT_TABLE_NOTES, key, &u, &c_v1, NULL), AT_ECOND);
    assert_int_equal(at_store_update(s, AT_TABLE_NOTES, key, &u, &c_many, NULL), 0);
    assert_int_equal(at_store_delete(s, AT_TABLE_NOTES, key, &c_v1), AT_ECOND);
    assert_int_equal(reqs(s, AT_DDB_PUT_ITEM) + reqs(s, AT_DDB_UPDATE_ITEM) +
                         reqs(s, AT_DDB_DELETE_ITEM),
                     6); /* a refused condition is not retried */
    json_decref(newit);
    json_decref(it);
    json_decref(key);
    json_decref(one);
    json_decref(two);
    json_decref(pfx);
    json_decref(uuidv);
}

static void test_error_mapping(void **state)
{
    at_store *s, *missing;
    json_t *key = note_key("t", "u"),
           *bad = json_pack("{s:{s:s}, s:{s:s}}", "target_uuid", "N", "1", "uuid", "S", "u");
    json_t *got = NULL, *pk = at_av_s("t");
    at_query q = {AT_TABLE_NOTES, NULL, pk, {0}, 1, 10, NULL, {0}, 0};
    at_page pg = {0};
    (void)state;
    need_dynalite();
    s = store();

    /* Tables that were never set up. */
    missing = open_store("missing", 0);
    assert_int_equal(at_store_get(missing, AT_TABLE_NOTES, key, &got), AT_ENOTABLE);
    assert_int_equal(at_store_put(missing, AT_TABLE_NOTES, key, NULL), AT_ENOTABLE);
    assert_int_equal(at_store_query(missing, &q, &pg), AT_ENOTABLE);
    assert_int_equal(reqs(missing, AT_DDB_GET_ITEM), 1); /* not retried */
    at_store_free(missing);

    /* A key of the wrong type is DynamoDB's ValidationException. */
    assert_int_equal(at_store_get(s, AT_TABLE_NOTES, bad, &got), AT_EINVAL);
    /* Malformed AVs are refused before any request. */
    {
        json_t *junk = json_pack("{s:{s:i}}", "target_uuid", "S", 1);
        uint64_t before = all_reqs(s);
        assert_int_equal(at_store_put(s, AT_TABLE_NOTES, junk, NULL), AT_EINVAL);
        assert_int_equal(all_reqs(s), before);
        json_decref(junk);
    }
    assert_int_equal(at_store_stream_read(s, 0, 10, &got), AT_EINVAL);
    {
        size_t removed = 99;
        assert_int_equal(at_store_sweep_expired(s, at_now_us() / 1000000, &removed), 0);
        assert_int_equal(removed, 0);
    }
    json_decref(key);
    json_decref(bad);
    json_decref(pk);
}

/* Puts n notes under target with uuids u00.. and updated_at increasing; the first
 * ndeleted are soft-deleted. */
static void put_notes(at_store *s, const char *target, int n, int ndeleted)
{
    for (int i = 0; i < n; i++) {
        char uuid[16], ts[40];
        json_t *it;
        snprintf(uuid, sizeof uuid, "u%02d", i);
        snprintf(ts, sizeof ts, "2024-03-01 00:00:%02d.000000", i);
        it = note(target, uuid, ts, i < ndeleted);
        assert_int_equal(at_store_put(s, AT_TABLE_NOTES, it, NULL), 0);
        json_decref(it);
    }
}

static void test_query_page_is_one_request(void **state)
{
    at_store *s;
    json_t *pk = at_av_s("t-page");
    at_query q = {AT_TABLE_NOTES, NULL, pk, {0}, 1, 5, NULL, {0}, AT_Q_LIVE};
    at_page pg = {0}, pg2 = {0};
    json_t *want;
    (void)state;
    need_dynalite();
    s = store();
    put_notes(s, "t-page", 12, 0);
    at_ddb_client_reset_stats(at_dynamodb_client(s));

    assert_int_equal(at_store_query(s, &q, &pg), 0);
    assert_int_equal(reqs(s, AT_DDB_QUERY), 1);
    assert_int_equal(json_array_size(pg.items), 5);
    want = note_key("t-page", "u04");
    assert_true(json_equal(pg.last_key, want));
    json_decref(want);

    /* The next page starts after it, on a GSI this time too. */
    q.start_key = pg.last_key;
    assert_int_equal(at_store_query(s, &q, &pg2), 0);
    assert_int_equal(reqs(s, AT_DDB_QUERY), 2);
    assert_string_equal(at_item_s(json_array_get(pg2.items, 0), "uuid"), "u05");
    at_page_release(&pg2);

    q.index = "target_uuid-updated_at-index";
    q.start_key = NULL;
    q.forward = 0;
    q.limit = 3;
    at_page_release(&pg);
    assert_int_equal(at_store_query(s, &q, &pg), 0);
    assert_int_equal(reqs(s, AT_DDB_QUERY), 3);
    assert_string_equal(at_item_s(json_array_get(pg.items, 0), "uuid"), "u11");
    /* A GSI's last key holds the table's key and the index's. */
    assert_int_equal(json_object_size(pg.last_key), 3);
    assert_string_equal(at_item_s(pg.last_key, "uuid"), "u09");

    /* The last page: fewer than limit items and no last key. */
    q.limit = 100;
    q.start_key = pg.last_key;
    assert_int_equal(at_store_query(s, &q, &pg2), 0);
    assert_int_equal(json_array_size(pg2.items), 9);
    assert_null(pg2.last_key);
    at_page_release(&pg2);
    at_page_release(&pg);
    assert_int_equal(reqs(s, AT_DDB_SCAN), 0);
    json_decref(pk);
}

static void test_query_loops_past_filtered_items(void **state)
{
    at_store *s;
    json_t *pk = at_av_s("t-filtered"), *want;
    at_query q = {AT_TABLE_NOTES, NULL, pk, {0}, 1, 5, NULL, {0}, AT_Q_LIVE};
    at_page pg = {0}, pg2 = {0};
    (void)state;
    need_dynalite();
    s = store();
    put_notes(s, "t-filtered", 30, 20); /* u00..u19 soft-deleted */
    at_ddb_client_reset_stats(at_dynamodb_client(s));

    assert_int_equal(at_store_query(s, &q, &pg), 0);
    assert_int_equal(json_array_size(pg.items), 5); /* a full page */
    assert_string_equal(at_item_s(json_array_get(pg.items, 0), "uuid"), "u20");
    want = note_key("t-filtered", "u24");
    assert_true(json_equal(pg.last_key, want)); /* the last item returned */
    json_decref(want);
    print_message("a page of 5 behind 20 filtered items took %llu Query requests\n",
                  (unsigned long long)reqs(s, AT_DDB_QUERY));
    assert_true(reqs(s, AT_DDB_QUERY) > 1);
    assert_true(reqs(s, AT_DDB_QUERY) <= 3);

    /* Continuing from that key misses nothing. */
    q.start_key = pg.last_key;
    q.limit = 10;
    assert_int_equal(at_store_query(s, &q, &pg2), 0);
    assert_int_equal(json_array_size(pg2.items), 5);
    assert_string_equal(at_item_s(json_array_get(pg2.items, 0), "uuid"), "u25");
    assert_null(pg2.last_key);
    at_page_release(&pg2);

    /* Without AT_Q_LIVE the deleted items come back. */
    q.start_key = NULL;
    q.flags = 0;
    q.limit = 5;
    at_page_release(&pg);
    assert_int_equal(at_store_query(s, &q, &pg), 0);
    assert_string_equal(at_item_s(json_array_get(pg.items, 0), "uuid"), "u00");
    at_page_release(&pg);
    json_decref(pk);
}

/* A count is Select COUNT: one request for a small partition, whatever the limit. */
static void test_count_is_select_count(void **state)
{
    at_store *s;
    json_t *pk = at_av_s("t-count");
    at_query q = {AT_TABLE_NOTES, NULL, pk, {0}, 1, 3, NULL, {0}, AT_Q_LIVE | AT_Q_COUNT};
    at_page pg = {0};
    (void)state;
    need_dynalite();
    s = store();
    put_notes(s, "t-count", 12, 4); /* u00..u03 soft-deleted */
    at_ddb_client_reset_stats(at_dynamodb_client(s));
    assert_int_equal(at_store_query(s, &q, &pg), 0);
    assert_int_equal(reqs(s, AT_DDB_QUERY), 1);
    assert_int_equal(pg.count, 8); /* the whole answer counted, past limit */
    assert_int_equal(json_array_size(pg.items), 0);
    assert_null(pg.last_key);
    at_page_release(&pg);
    json_decref(pk);
}

static void test_filters_on_key_attributes(void **state)
{
    at_store *s;
    json_t *pk = at_av_s("t-keyfilter"), *lo = at_av_s("u03"), *hi = at_av_s("u06"),
           *ts = at_av_s("2024-03-01 00:00:05.000000"), *u = at_av_s("u0");
    at_clause f[2] = {{"uuid", AT_OP_GE, lo, NULL}, {"updated_at", AT_OP_LE, ts, NULL}};
    at_query q = {AT_TABLE_NOTES, NULL,   pk,       {"uuid", AT_OP_BEGINS_WITH, u, NULL}, 1, 10,
                  NULL,           {f, 2}, AT_Q_LIVE};
    at_page pg = {0};
    (void)state;
    need_dynalite();
    s = store();
    put_notes(s, "t-keyfilter", 10, 0);

    /* uuid is the table's sort key: DynamoDB refuses it in a FilterExpression, so the
     * backend checks it itself. */
    assert_int_equal(at_store_query(s, &q, &pg), 0);
    assert_int_equal(json_array_size(pg.items), 3); /* u03 u04 u05 */
    assert_string_equal(at_item_s(json_array_get(pg.items, 2), "uuid"), "u05");
    at_page_release(&pg);

    /* BETWEEN on the sort key, descending. */
    q.sk = (at_clause){"uuid", AT_OP_BETWEEN, lo, hi};
    q.filter.n = 0;
    q.forward = 0;
    assert_int_equal(at_store_query(s, &q, &pg), 0);
    assert_int_equal(json_array_size(pg.items), 4);
    assert_string_equal(at_item_s(json_array_get(pg.items, 0), "uuid"), "u06");
    at_page_release(&pg);

    /* A sort key condition on another attribute is the caller's error. */
    q.sk.attr = "updated_at";
    assert_int_equal(at_store_query(s, &q, &pg), AT_EINVAL);
    json_decref(pk);
    json_decref(lo);
    json_decref(hi);
    json_decref(ts);
    json_decref(u);
}

static void test_ttl_items_are_never_served(void **state)
{
    at_store *s;
    int64_t now = at_now_us() / 1000000;
    json_t *old = json_pack("{s:{s:s}, s:o}", "counter_seq_key", "S", "old", "ExpirationTime",
                            at_av_n_int(now - 10));
    json_t *fresh = json_pack("{s:{s:s}, s:o}", "counter_seq_key", "S", "fresh", "ExpirationTime",
                              at_av_n_int(now + 3600));
    json_t *none = json_pack("{s:{s:s}}", "counter_seq_key", "S", "none");
    json_t *k_old = json_pack("{s:{s:s}}", "counter_seq_key", "S", "old");
    json_t *k_fresh = json_pack("{s:{s:s}}", "counter_seq_key", "S", "fresh");
    json_t *got = NULL;
    at_page pg = {0};
    (void)state;
    need_dynalite();
    s = store();

    assert_int_equal(at_store_put(s, AT_TABLE_TASKS_COUNTERS, old, NULL), 0);
    assert_int_equal(at_store_put(s, AT_TABLE_TASKS_COUNTERS, fresh, NULL), 0);
    assert_int_equal(at_store_put(s, AT_TABLE_TASKS_COUNTERS, none, NULL), 0);
    assert_int_equal(at_store_get(s, AT_TABLE_TASKS_COUNTERS, k_old, &got), AT_ENOTFOUND);
    assert_int_equal(at_store_get(s, AT_TABLE_TASKS_COUNTERS, k_fresh, &got), 0);
    json_decref(got);
    assert_int_equal(at_store_scan(s, AT_TABLE_TASKS_COUNTERS, NULL, 10, &pg), 0);
    assert_int_equal(json_array_size(pg.items), 2);
    assert_int_equal(reqs(s, AT_DDB_SCAN), 1);
    at_page_release(&pg);
    json_decref(old);
    json_decref(fresh);
    json_decref(none);
    json_decref(k_old);
    json_decref(k_fresh);
}

static void test_batch_put_and_scan(void **state)
{
    at_store *s;
    json_t *items = json_array(), *all = json_array(), *start = NULL;
    at_page pg = {0};
    size_t pages = 0;
    (void)state;
    need_dynalite();
    s = store();

    for (int i = 0; i < 60; i++) {
        char uuid[16];
        snprintf(uuid, sizeof uuid, "b%02d", i);
        json_array_append_new(items, note("t-batch", uuid, "2024-04-01 00:00:00.000000", 0));
    }
    /* A repeated key in one batch: DynamoDB would refuse the batch; the later wins. */
    json_array_append_new(items, note("t-batch", "b00", "2024-05-01 00:00:00.000000", 0));
    {
        json_t *empty = json_array();
        assert_int_equal(at_store_batch_put(s, AT_TABLE_ACTIVITY, empty), 0);
        json_decref(empty);
    }
    assert_int_equal(at_store_batch_put(s, AT_TABLE_NOTES, items), 0);
    assert_int_equal(reqs(s, AT_DDB_BATCH_WRITE_ITEM), 3); /* 25 + 25 + 10 + 1 → 3 */
    {
        json_t *k = note_key("t-batch", "b00"), *got = NULL;
        assert_int_equal(at_store_get(s, AT_TABLE_NOTES, k, &got), 0);
        assert_string_equal(at_item_s(got, "updated_at"), "2024-05-01 00:00:00.000000");
        json_decref(got);
        json_decref(k);
    }

    /* Scan the whole table in pages of 7; every key comes back once. */
    for (;;) {
        assert_int_equal(at_store_scan(s, AT_TABLE_NOTES, start, 7, &pg), 0);
        json_array_extend(all, pg.items);
        json_decref(start);
        start = json_incref(pg.last_key);
        pages++;
        at_page_release(&pg);
        if (!start) break;
    }
    assert_true(json_array_size(all) >= 60);
    assert_int_equal(reqs(s, AT_DDB_SCAN), pages);
    json_decref(items);
    json_decref(all);
}

typedef struct counter_arg {
    at_store *s;
    int64_t seen[50];
    int n;
} counter_arg;

static void *counter_thread(void *p)
{
    counter_arg *a = p;
    json_t *key = json_pack("{s:{s:s}}", "counter_seq_key", "S", "tasks#i-conc");
    at_update u = {NULL, NULL, "seq", 1};
    for (a->n = 0; a->n < 50; a->n++) {
        json_t *it = NULL;
        if (at_store_update(a->s, AT_TABLE_COUNTERS, key, &u, NULL, &it)) break;
        at_item_n_int(it, "seq", &a->seen[a->n]);
        json_decref(it);
    }
    json_decref(key);
    return NULL;
}

/* Many threads adding to one counter never see the same value twice (item_number). */
static void test_concurrent_counter(void **state)
{
    enum { T = 8 };
    static counter_arg args[T];
    pthread_t th[T];
    static char seen[T * 50 + 1];
    at_ddb_stats st;
    at_store *s;
    (void)state;
    memset(seen, 0, sizeof seen);
    need_dynalite();
    s = store();
    for (int i = 0; i < T; i++) {
        args[i].s = s;
        pthread_create(&th[i], NULL, counter_thread, &args[i]);
    }
    for (int i = 0; i < T; i++)
        pthread_join(th[i], NULL);
    for (int i = 0; i < T; i++) {
        assert_int_equal(args[i].n, 50);
        for (int j = 0; j < 50; j++) {
            int64_t v = args[i].seen[j];
            assert_true(v >= 1 && v <= T * 50);
            assert_false(seen[v]);
            seen[v] = 1;
        }
    }
    at_ddb_client_stats(at_dynamodb_client(shared_store), &st);
    print_message("%d threads x 50 updates: %llu connections opened\n", T,
                  (unsigned long long)st.connects);
    assert_true(st.connects <= T + 2); /* connections are kept alive and reused */
}

/* Not a pass/fail test: prints what a get and a query page cost against dynalite. */
static void test_measure_latency(void **state)
{
    enum { N = 200 };
    static int64_t lat[N];
    at_store *s;
    json_t *key = note_key("t-page", "u03"), *pk = at_av_s("t-page"), *got = NULL;
    at_query q = {AT_TABLE_NOTES, NULL, pk, {0}, 1, 5, NULL, {0}, AT_Q_LIVE};
    at_ddb_stats st;
    (void)state;
    need_dynalite();
    s = store();

    for (int i = 0; i < N; i++) {
        int64_t t0 = at_monotonic_us();
        assert_int_equal(at_store_get(s, AT_TABLE_NOTES, key, &got), 0);
        lat[i] = at_monotonic_us() - t0;
        json_decref(got);
    }
    qsort(lat, N, sizeof lat[0], cmp_i64);
    print_message("dynalite get: p50 %lld us, p99 %lld us\n", (long long)lat[N / 2],
                  (long long)lat[N * 99 / 100]);
    for (int i = 0; i < N; i++) {
        at_page pg = {0};
        int64_t t0 = at_monotonic_us();
        assert_int_equal(at_store_query(s, &q, &pg), 0);
        lat[i] = at_monotonic_us() - t0;
        at_page_release(&pg);
    }
    qsort(lat, N, sizeof lat[0], cmp_i64);
    print_message("dynalite query page of 5: p50 %lld us, p99 %lld us\n", (long long)lat[N / 2],
                  (long long)lat[N * 99 / 100]);
    at_ddb_client_stats(at_dynamodb_client(s), &st);
    assert_int_equal(st.requests[AT_DDB_GET_ITEM], N);
    assert_int_equal(st.requests[AT_DDB_QUERY], N);
    assert_true(st.connects <= 2);
    json_decref(key);
    json_decref(pk);
}

/* ---- against a fake DynamoDB (tests/unit/aws/fake_http.h) ----------------------- */

static at_ddb_client *fake_client(const fake_http_server *f, long request_ms, int max_retries,
                                  const char *token)
{
    char url[64];
    at_aws_options o = {url,   "eu-west-1", "AKIDFAKE", "fake-secret-key-123",
                        token, 500,         request_ms, max_retries};
    at_ddb_client *c = NULL;
    snprintf(url, sizeof url, "http://127.0.0.1:%d", f->port);
    assert_int_equal(at_ddb_client_new(&o, &c, NULL, 0), 0);
    return c;
}

static const char COND_FAILED[] =
    "{\"__type\":\"com.amazonaws.dynamodb.v20120810#ConditionalCheckFailedException\","
    "\"message\":\"The conditional request failed\"}";
static const char NO_TABLE[] =
    "{\"__type\":\"com.amazonaws.dynamodb.v20120810#ResourceNotFoundException\","
    "\"message\":\"Requested resource not found\"}";
static const char INVALID[] = "{\"__type\":\"com.amazon.coral.validate#ValidationException\","
                              "\"Message\":\"One or more parameter values were invalid\"}";

static void test_errors_are_not_retried(void **state)
{
    static const fake_http_reply cond[] = {{FAKE_ANSWER, 400, COND_FAILED}};
    static const fake_http_reply notable[] = {{FAKE_ANSWER, 400, NO_TABLE}};
    static const fake_http_reply invalid[] = {{FAKE_ANSWER, 400, INVALID}};
    static const fake_http_reply garbage[] = {{FAKE_ANSWER, 200, "not json"}};
    static const fake_http_reply denied[] = {
        {FAKE_ANSWER, 400, "{\"__type\":\"com.amazon.coral.service#UnrecognizedClientException\"}"}};
    const struct {
        const fake_http_reply *r;
        int rc;
        const char *type;
    } cases[] = {
        {cond, AT_ECOND, "ConditionalCheckFailedException"},
        {notable, AT_ENOTABLE, "ResourceNotFoundException"},
        {invalid, AT_EINVAL, "ValidationException"},
        {garbage, AT_EIO, ""},
        {denied, AT_EIO, "UnrecognizedClientException"},
    };
    (void)state;

    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        fake_http_server f;
        at_ddb_client *c;
        json_t *req = json_pack("{s:s}", "TableName", "t"), *resp = NULL;
        at_ddb_error e;
        fake_http_start(&f, cases[i].r, 1);
        c = fake_client(&f, 5000, 3, NULL);
        assert_int_equal(at_ddb_call(c, AT_DDB_UPDATE_ITEM, req, &resp, &e), cases[i].rc);
        assert_int_equal(e.attempts, 1);
        assert_string_equal(e.type, cases[i].type);
        if (cases[i].r == invalid)
            assert_string_equal(e.message, "One or more parameter values were invalid");
        json_decref(req);
        at_ddb_client_free(c);
        fake_http_stop(&f);
    }
}

/* BatchWriteItem's UnprocessedItems are sent again (only them) until none are left. */
static void test_batch_unprocessed_items_resent(void **state)
{
    static const fake_http_reply script[] = {
        {FAKE_ANSWER, 200,
         "{\"UnprocessedItems\":{\"fake_notes\":[{\"PutRequest\":{\"Item\":{"
         "\"target_uuid\":{\"S\":\"t\"},\"uuid\":{\"S\":\"b\"}}}}]}}"},
        {FAKE_ANSWER, 200, "{\"UnprocessedItems\":{}}"}};
    fake_http_server f;
    char url[64];
    const char *names[AT_TABLE_COUNT] = {"fake_notes"};
    at_aws_options o = {url, "us-east-1", "AK", "SK", NULL, 500, 5000, 0};
    at_store *s = NULL;
    json_t *items = json_array();
    (void)state;

    fake_http_start(&f, script, 2);
    snprintf(url, sizeof url, "http://127.0.0.1:%d", f.port);
    assert_int_equal(at_store_open_dynamodb(&o, names, &s, NULL, 0), 0);
    json_array_append_new(items, note("t", "a", "2024-01-01 00:00:00.000000", 0));
    json_array_append_new(items, note("t", "b", "2024-01-01 00:00:00.000000", 0));
    assert_int_equal(at_store_batch_put(s, AT_TABLE_NOTES, items), 0);
    assert_int_equal(reqs(s, AT_DDB_BATCH_WRITE_ITEM), 2);
    assert_non_null(strstr(f.last_request, "X-Amz-Target: DynamoDB_20120810.BatchWriteItem"));
    assert_non_null(strstr(f.last_request, "{\"S\":\"b\"}"));
    assert_null(strstr(f.last_request, "{\"S\":\"a\"}"));
    json_decref(items);
    at_store_free(s);
    fake_http_stop(&f);
}

/* What goes on the wire: target, content type, a SigV4 Authorization for dynamodb,
 * the session token; the secret never. */
static void test_request_headers(void **state)
{
    static const fake_http_reply script[] = {{FAKE_ANSWER, 200, "{}"}};
    fake_http_server f;
    at_ddb_client *c;
    json_t *req = json_pack("{s:s}", "TableName", "t"), *resp = NULL;
    (void)state;

    fake_http_start(&f, script, 1);
    c = fake_client(&f, 5000, 0, "session-token-xyz");
    assert_int_equal(at_ddb_call(c, AT_DDB_DESCRIBE_TABLE, req, &resp, NULL), 0);
    assert_non_null(strstr(f.last_request, "POST / HTTP/1.1\r\n"));
    assert_non_null(strstr(f.last_request, "X-Amz-Target: DynamoDB_20120810.DescribeTable\r\n"));
    assert_non_null(strstr(f.last_request, "Content-Type: application/x-amz-json-1.0\r\n"));
    assert_non_null(strstr(f.last_request, "X-Amz-Security-Token: session-token-xyz\r\n"));
    assert_non_null(strstr(f.last_request, "Authorization: AWS4-HMAC-SHA256 Credential=AKIDFAKE/"));
    assert_non_null(strstr(f.last_request, "/eu-west-1/dynamodb/aws4_request, SignedHeaders="
                                           "content-type;host;x-amz-date;x-amz-security-token;"
                                           "x-amz-target, Signature="));
    assert_non_null(strstr(f.last_request, "\r\n\r\n{\"TableName\":\"t\"}"));
    assert_null(strstr(f.last_request, "fake-secret-key-123"));
    assert_null(strstr(f.last_request, "Expect:"));
    json_decref(resp);
    json_decref(req);
    at_ddb_client_free(c);
    fake_http_stop(&f);
}

static void test_open_refusals(void **state)
{
    const char *names[AT_TABLE_COUNT] = {0};
    at_aws_options bad = {"ftp://x", "us-east-1", "a", "b", NULL, 0, 0, -1};
    at_aws_options path = {"http://h:1/x", "us-east-1", "a", "b", NULL, 0, 0, -1};
    at_aws_options nocreds = {NULL, "us-east-1", NULL, NULL, NULL, 0, 0, -1};
    at_store *s = NULL;
    char err[256];
    (void)state;
    assert_int_equal(at_store_open_dynamodb(&bad, names, &s, err, sizeof err), AT_EINVAL);
    assert_non_null(strstr(err, "DYNAMODB_ENDPOINT"));
    assert_int_equal(at_store_open_dynamodb(&path, names, &s, err, sizeof err), AT_EINVAL);
    assert_int_equal(at_store_open_dynamodb(&nocreds, names, &s, err, sizeof err), AT_EINVAL);
    assert_non_null(strstr(err, "AWS_ACCESS_KEY_ID"));
    assert_null(s);
    /* The regional endpoint is the default; opening makes no request. */
    nocreds.access_key = "a";
    nocreds.secret_key = "b";
    assert_int_equal(at_store_open_dynamodb(&nocreds, NULL, &s, err, sizeof err), 0);
    assert_string_equal(at_store_backend(s), "dynamodb");
    assert_string_equal(at_store_table_name(s, AT_TABLE_NOTES), "em_actions_notes_staging");
    at_store_free(s);
    at_store_free(NULL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_open_refusals),
        cmocka_unit_test(test_errors_are_not_retried),
        cmocka_unit_test(test_batch_unprocessed_items_resent),
        cmocka_unit_test(test_request_headers),
        cmocka_unit_test(test_setup_creates_schema),
        cmocka_unit_test(test_item_ops_cost_one_request),
        cmocka_unit_test(test_conditions_and_reserved_words),
        cmocka_unit_test(test_error_mapping),
        cmocka_unit_test(test_query_page_is_one_request),
        cmocka_unit_test(test_query_loops_past_filtered_items),
        cmocka_unit_test(test_count_is_select_count),
        cmocka_unit_test(test_filters_on_key_attributes),
        cmocka_unit_test(test_ttl_items_are_never_served),
        cmocka_unit_test(test_batch_put_and_scan),
        cmocka_unit_test(test_concurrent_counter),
        cmocka_unit_test(test_measure_latency),
    };
    int failed =
        cmocka_run_group_tests_name("dynamodb backend", tests, group_setup, group_teardown);
    if (endpoint[0])
        failed += at_conformance_run("dynamodb conformance", conf_open, NULL);
    else
        fprintf(stderr, "*** dynamodb conformance suite SKIPPED: no server ***\n");
    stop_dynalite();
    return failed;
}
