/* The sqlite backend: the conformance suite on a temporary database file, then what
 * only this backend promises (WAL, one transaction per change and its stream record,
 * index range scans, durability across reopen, sweeping, migration of old layouts).
 * Set AT_BENCH_ROWS=1000000 to time query pages on a table that large, and
 * AT_BENCH_WRITES=2000 to time concurrent writers (puts/s). */
#include <dirent.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/stat.h>
#include <cmocka.h>
#include <sqlite3.h>

#include "conformance.h"
#include "store/sqlite/sqlite_int.h"
#include "actionstools/av.h"
#include "actionstools/err.h"
#include "actionstools/log.h"
#include "actionstools/packed.h"
#include "actionstools/timeutil.h"
#include "actionstools/banned.h"

static char tmpdir[256];

static int open_sqlite(void *ctx, const char *const names[AT_TABLE_COUNT], at_store **out)
{
    char err[256];
    int rc = at_store_open_sqlite((const char *)ctx, names, out, err, sizeof err);
    if (rc) print_error("open %s: %s\n", (const char *)ctx, err);
    return rc;
}

/* Writes the path of a database file named name in the temporary directory. */
static const char *db_path(char *out, size_t n, const char *name)
{
    snprintf(out, n, "%s/%s.db", tmpdir, name);
    return out;
}

/* Opens (and sets up) a store on its own file, default table names. */
static at_store *open_db(const char *name, char *path, size_t n)
{
    at_store *s = NULL;
    char err[256];
    db_path(path, n, name);
    assert_int_equal(at_store_open_sqlite(path, NULL, &s, err, sizeof err), 0);
    assert_int_equal(at_store_setup(s, NULL, NULL), 0);
    return s;
}


static void put_ok(at_store *s, at_table_id t, json_t *it)
{
    assert_int_equal(at_store_put(s, t, it, NULL), 0);
    json_decref(it);
}

/* Runs one SQL statement on its own connection to path; returns the first column of
 * the first row (a new string) or NULL. */
static char *raw_sql(const char *path, const char *sql)
{
    sqlite3 *db = NULL;
    sqlite3_stmt *st = NULL;
    char *out = NULL;
    assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
    sqlite3_busy_timeout(db, 5000);
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK)
        fail_msg("%s: %s", sql, sqlite3_errmsg(db));
    if (sqlite3_step(st) == SQLITE_ROW && sqlite3_column_text(st, 0))
        out = strdup((const char *)sqlite3_column_text(st, 0));
    sqlite3_finalize(st);
    sqlite3_close(db);
    return out;
}

static void test_wal_mode(void **state)
{
    char path[512];
    at_store *s = open_db("wal", path, sizeof path);
    char *mode = raw_sql(path, "PRAGMA journal_mode");
    assert_string_equal(mode, "wal");
    free(mode);
    at_store_free(s);
}

/* Checks that q runs as one index search: no table scan, no sort. */
static void assert_index_search(at_store *s, const at_query *q, const char *must)
{
    char *plan = NULL;
    assert_int_equal(at_sqlite_explain(s, q, &plan), 0);
    if (getenv("AT_SHOW_PLANS")) fprintf(stderr, "%s", plan);
    if (strstr(plan, "SCAN") || strstr(plan, "TEMP B-TREE") || !strstr(plan, "SEARCH") ||
        (must && !strstr(plan, must)))
        fail_msg("bad plan:\n%s", plan);
    free(plan);
}

static void test_explain_plans(void **state)
{
    char path[512];
    at_store *s = open_db("plans", path, sizeof path);
    json_t *pk = at_av_s("p"), *v1 = at_av_s("2024"), *v2 = at_av_s("2025"), *n1 = at_av_n_int(1);
    json_t *start = at_conf_item("target_uuid", at_av_s("t"), "uuid", at_av_s("u"), "owner_uuid",
                         at_av_s("p"), "created_at", at_av_s("2024-06"), NULL);
    json_t *tstart =
        at_conf_item("instance_id", at_av_s("p"), "uuid", at_av_s("u"), "created_at", at_av_n_int(5), NULL);
    at_query q = {.table = AT_TABLE_NOTES, .pk = pk, .forward = 1, .limit = 10};

    assert_index_search(s, &q, "sqlite_autoindex");
    q.sk = (at_clause){"uuid", AT_OP_BEGINS_WITH, v1, NULL};
    assert_index_search(s, &q, "uuid>?");
    q.index = "owner_uuid-created_at-index";
    q.sk = (at_clause){0};
    assert_index_search(s, &q, "owner_uuid-created_at-index");
    q.start_key = start;
    assert_index_search(s, &q, "(created_at,target_uuid,uuid)>(?,?,?)");
    q.forward = 0;
    q.sk = (at_clause){"created_at", AT_OP_BETWEEN, v1, v2};
    assert_index_search(s, &q, "(created_at,target_uuid,uuid)<(?,?,?)");
    q.sk = (at_clause){"created_at", AT_OP_BEGINS_WITH, v1, NULL};
    q.forward = 1;
    assert_index_search(s, &q, "(created_at,target_uuid,uuid)>(?,?,?)");
    q.start_key = NULL;
    q.index = "target_uuid-is_pinned-index";
    q.sk = (at_clause){"is_pinned", AT_OP_GT, n1, NULL};
    assert_index_search(s, &q, "is_pinned>?");
    q = (at_query){.table = AT_TABLE_TASKS,
                   .index = "instance_id-created_at-index-copy",
                   .pk = pk,
                   .forward = 1,
                   .limit = 10,
                   .start_key = tstart};
    assert_index_search(s, &q, "(created_at,uuid)>(?,?)");
    q.index = "instance_id-uuid-index";
    json_object_del(tstart, "created_at");
    assert_index_search(s, &q, "sqlite_autoindex");
    /* A live list filtered on the tenant seeks in the tenant-scoped index, with the
     * start key, the sort key condition and the other filters on key columns. */
    {
        json_t *inst = at_av_s("i");
        json_t *nstart = at_conf_item("target_uuid", at_av_s("p"), "uuid", at_av_s("u"), "updated_at",
                                      at_av_s("2024-06"), NULL);
        at_clause f[2] = {{"is_pinned", AT_OP_NE, n1, NULL}, {"instance_id", AT_OP_EQ, inst, NULL}};
        q = (at_query){.table = AT_TABLE_NOTES,
                       .index = "target_uuid-updated_at-index",
                       .pk = pk,
                       .forward = 0,
                       .limit = 26,
                       .filter = {f, 2},
                       .flags = AT_Q_LIVE};
        assert_index_search(s, &q,
                            "target_uuid-updated_at-index/live-by-instance_id (target_uuid=? AND "
                            "instance_id=?");
        q.start_key = nstart;
        assert_index_search(s, &q,
                            "live-by-instance_id (target_uuid=? AND instance_id=? AND updated_at>? "
                            "AND (updated_at,uuid)<(?,?))");
        q.start_key = NULL;
        q.index = "target_uuid-is_pinned-index";
        q.sk = (at_clause){"is_pinned", AT_OP_EQ, n1, NULL};
        q.filter = (at_cond){&f[1], 1};
        assert_index_search(s, &q,
                            "target_uuid-is_pinned-index/live-by-instance_id (target_uuid=? AND "
                            "instance_id=? AND is_pinned>");
        q.index = "owner_uuid-created_at-index";
        q.sk = (at_clause){0};
        assert_index_search(s, &q, "owner_uuid-created_at-index/live-by-instance_id (owner_uuid=? AND instance_id=?");
        q.index = NULL; /* the table itself has no twin: its primary key, filtered */
        assert_index_search(s, &q, "sqlite_autoindex_em_actions_notes_staging_1 (target_uuid=?");
        /* Without AT_Q_LIVE the filter is evaluated on the index's rows. */
        q.flags = 0;
        q.index = "target_uuid-updated_at-index";
        assert_index_search(s, &q, "USING INDEX em_actions_notes_staging/target_uuid-updated_at-index (target_uuid=?");
        json_decref(inst);
        json_decref(nstart);
    }
    json_decref(pk);
    json_decref(v1);
    json_decref(v2);
    json_decref(n1);
    json_decref(start);
    json_decref(tstart);
    at_store_free(s);
}

/* A table keyed by the tenant (tasks, settings): its indexes' tenant-scoped twins hold
 * instance_id once, so a page is one index search in order, ties included, and no
 * temporary B-tree sorts a run of equal sort keys (it did when the twin repeated
 * instance_id, reading the whole run outside the page's work bound); paging through
 * ties on such a twin gives every item once in (sort key, uuid) order; setup replaces
 * the twins of older versions. */
static void test_twins_of_tenant_keyed_tables(void **state)
{
    char path[512], *old;
    at_store *s = open_db("twins", path, sizeof path);
    json_t *t1 = at_av_s("T1"), *inst = at_av_s("i1"), *other = at_av_s("i2"), *cat = at_av_s("c");
    at_clause f = {"instance_id", AT_OP_EQ, inst, NULL};
    at_query q = {.table = AT_TABLE_TASKS, .index = "target_uuid-created_at-index", .pk = t1, .forward = 0,
                  .limit = 3, .filter = {&f, 1}, .flags = AT_Q_LIVE};
    json_t *start = at_conf_item("instance_id", at_av_s("i1"), "uuid", at_av_s("u5"), "target_uuid", at_av_s("T1"),
                                 "created_at", at_av_n_int(100), NULL);
    json_t *seen = json_array();
    (void)state;
    assert_index_search(s, &q, "target_uuid-created_at-index/live-by-instance_id/once (target_uuid=? AND instance_id=?");
    q.start_key = start;
    assert_index_search(s, &q, "(target_uuid=? AND instance_id=? AND created_at>? AND (created_at,uuid)<(?,?))");
    q.start_key = NULL;
    q.table = AT_TABLE_SETTINGS;
    q.index = "category-created_at-index";
    q.pk = cat;
    assert_index_search(s, &q, "category-created_at-index/live-by-instance_id/once (category=? AND instance_id=?");

    /* 12 tasks on T1 created in the same second (and one a second later), half of them
     * another tenant's: paged 3 at a time, newest first, ties by uuid descending. */
    for (int i = 0; i < 24; i++) {
        char u[8];
        snprintf(u, sizeof u, "u%02d", i);
        put_ok(s, AT_TABLE_TASKS,
               at_conf_item("instance_id", at_av_s(i % 2 ? "i2" : "i1"), "uuid", at_av_s(u), "target_uuid", at_av_s("T1"),
                            "created_at", at_av_n_int(i == 22 ? 101 : 100), NULL));
    }
    q = (at_query){.table = AT_TABLE_TASKS, .index = "target_uuid-created_at-index", .pk = t1, .forward = 0,
                   .limit = 3, .filter = {&f, 1}, .flags = AT_Q_LIVE};
    for (int guard = 0; guard < 20; guard++) {
        at_page p = {0};
        json_t *it;
        size_t i;
        assert_int_equal(at_store_query(s, &q, &p), 0);
        json_array_foreach(p.items, i, it) json_array_append_new(seen, json_string(at_item_s(it, "uuid")));
        json_decref((json_t *)q.start_key);
        q.start_key = json_incref(p.last_key);
        at_page_release(&p);
        if (!q.start_key) break;
    }
    {
        const char *want[] = {"u22", "u20", "u18", "u16", "u14", "u12", "u10", "u08", "u06", "u04", "u02", "u00"};
        assert_int_equal(json_array_size(seen), 12);
        for (size_t i = 0; i < 12; i++) assert_string_equal(json_string_value(json_array_get(seen, i)), want[i]);
    }
    /* a start key of another tenant is refused on the twin (the order leaves the tenant out) */
    {
        at_page p = {0};
        json_t *theirs = at_conf_item("instance_id", at_av_s("i2"), "uuid", at_av_s("u05"), "target_uuid", at_av_s("T1"),
                                      "created_at", at_av_n_int(100), NULL);
        q.start_key = theirs;
        assert_int_equal(at_store_query(s, &q, &p), AT_EINVAL);
        at_page_release(&p);
        q.start_key = NULL;
        json_decref(theirs);
    }
    at_store_free(s);

    /* The twin an older version made (instance_id twice) is dropped by setup. */
    free(raw_sql(path, "CREATE INDEX \"em_actions_tasks_staging/owner_uuid-created_at-index/live-by-instance_id\" ON "
                       "em_actions_tasks_staging (owner_uuid, instance_id, created_at, instance_id, uuid)"));
    old = raw_sql(path, "SELECT count(*) FROM sqlite_schema WHERE name LIKE '%/live-by-instance_id'");
    assert_string_equal(old, "4"); /* it, and the notes' three, which never repeated it */
    free(old);
    s = open_db("twins", path, sizeof path);
    old = raw_sql(path, "SELECT count(*) FROM sqlite_schema WHERE name LIKE '%/live-by-instance_id'");
    assert_string_equal(old, "3"); /* the notes' three */
    free(old);
    at_store_free(s);
    json_decref(seen);
    json_decref(start);
    json_decref(t1);
    json_decref(inst);
    json_decref(other);
    json_decref(cat);
}

static int64_t stream_count(at_store *s)
{
    json_t *recs = NULL;
    int64_t n;
    assert_int_equal(at_store_stream_read(s, 0, 10000, &recs), 0);
    n = (int64_t)json_array_size(recs);
    json_decref(recs);
    return n;
}

/* The item and its stream record are one transaction: when the record cannot be
 * written, the item is not either. */
static void test_stream_same_transaction(void **state)
{
    char path[512];
    at_store *s = open_db("stream_tx", path, sizeof path);
    json_t *it =
        at_conf_item("instance_id", at_av_s("i"), "uuid", at_av_s("u"), "created_at", at_av_n_int(1), NULL);
    json_t *key = at_conf_item("instance_id", at_av_s("i"), "uuid", at_av_s("u"), NULL), *got = NULL;

    free(raw_sql(path, "DROP TABLE \"" SQ_STREAM_TABLE "\""));
    assert_int_equal(at_store_put(s, AT_TABLE_TASKS, it, NULL), AT_ENOTABLE);
    assert_int_equal(at_store_get(s, AT_TABLE_TASKS, key, &got), AT_ENOTFOUND);
    assert_int_equal(at_store_setup(s, NULL, NULL), 0);
    assert_int_equal(at_store_put(s, AT_TABLE_TASKS, it, NULL), 0);
    assert_int_equal(stream_count(s), 1);
    /* A put that changes nothing records nothing (as DynamoDB Streams). */
    assert_int_equal(at_store_put(s, AT_TABLE_TASKS, it, NULL), 0);
    assert_int_equal(stream_count(s), 1);
    /* Tables without a stream record nothing. */
    put_ok(s, AT_TABLE_NOTES, at_conf_item("target_uuid", at_av_s("t"), "uuid", at_av_s("u"), NULL));
    assert_int_equal(stream_count(s), 1);
    json_decref(it);
    json_decref(key);
    at_store_free(s);
}

static void test_reopen(void **state)
{
    char path[512], err[256];
    at_store *s = open_db("reopen", path, sizeof path);
    json_t *key = at_conf_item("target_uuid", at_av_s("t"), "uuid", at_av_s("u"), NULL), *got = NULL;

    put_ok(s, AT_TABLE_NOTES,
           at_conf_item("target_uuid", at_av_s("t"), "uuid", at_av_s("u"), "title", at_av_s("kept"), NULL));
    at_store_free(s);
    s = NULL;
    assert_int_equal(at_store_open_sqlite(path, NULL, &s, err, sizeof err), 0);
    assert_int_equal(at_store_get(s, AT_TABLE_NOTES, key, &got), 0);
    assert_string_equal(at_item_s(got, "title"), "kept");
    json_decref(got);
    json_decref(key);
    at_store_free(s);
}

static void test_open_errors(void **state)
{
    at_store *s = NULL;
    char err[256] = "";
    assert_int_not_equal(at_store_open_sqlite("/proc/no/such/dir/x.db", NULL, &s, err, sizeof err),
                         0);
    assert_null(s);
    assert_true(strlen(err) > 0);
    assert_int_equal(at_store_open_sqlite("", NULL, &s, err, sizeof err), AT_EINVAL);
    assert_int_equal(at_store_open_sqlite(":memory:", NULL, &s, err, sizeof err), AT_EINVAL);
    assert_null(s);
}

/* The parent directory of the file is created. */
static void test_creates_directory(void **state)
{
    char path[512], err[256];
    at_store *s = NULL;
    snprintf(path, sizeof path, "%s/var/sub/x.db", tmpdir);
    assert_int_equal(at_store_open_sqlite(path, NULL, &s, err, sizeof err), 0);
    assert_int_equal(access(path, F_OK), 0);
    at_store_free(s);
}

/* Equal index sort keys are ordered by the table's primary key. */
static void test_tie_order(void **state)
{
    char path[512];
    at_store *s = open_db("ties", path, sizeof path);
    static const char *const targets[] = {"t2", "t1", "t3", "t1"};
    static const char *const uuids[] = {"b", "z", "a", "a"};
    json_t *pk = at_av_s("o");
    at_query q = {.table = AT_TABLE_NOTES,
                  .index = "owner_uuid-created_at-index",
                  .pk = pk,
                  .forward = 1,
                  .limit = 10};
    at_page p = {0};

    for (int i = 0; i < 4; i++)
        put_ok(s, AT_TABLE_NOTES,
               at_conf_item("target_uuid", at_av_s(targets[i]), "uuid", at_av_s(uuids[i]), "owner_uuid",
                    at_av_s("o"), "created_at", at_av_s("same"), NULL));
    assert_int_equal(at_store_query(s, &q, &p), 0);
    assert_int_equal(json_array_size(p.items), 4);
    assert_string_equal(at_item_s(json_array_get(p.items, 0), "target_uuid"), "t1");
    assert_string_equal(at_item_s(json_array_get(p.items, 0), "uuid"), "a");
    assert_string_equal(at_item_s(json_array_get(p.items, 1), "uuid"), "z");
    assert_string_equal(at_item_s(json_array_get(p.items, 2), "target_uuid"), "t2");
    assert_string_equal(at_item_s(json_array_get(p.items, 3), "target_uuid"), "t3");
    at_page_release(&p);
    json_decref(pk);
    at_store_free(s);
}

static void test_scan_order(void **state)
{
    char path[512];
    at_store *s = open_db("scan", path, sizeof path);
    at_page p = {0};
    static const char *const keys[] = {"b", "a", "\xc3\xa9", "B", "aa"};
    for (int i = 0; i < 5; i++)
        put_ok(s, AT_TABLE_COUNTERS, at_conf_item("counter_seq_key", at_av_s(keys[i]), NULL));
    assert_int_equal(at_store_scan(s, AT_TABLE_COUNTERS, NULL, 10, &p), 0);
    assert_int_equal(json_array_size(p.items), 5);
    /* UTF-8 byte order: "B" < "a" < "aa" < "b" < "é". */
    assert_string_equal(at_item_s(json_array_get(p.items, 0), "counter_seq_key"), "B");
    assert_string_equal(at_item_s(json_array_get(p.items, 2), "counter_seq_key"), "aa");
    assert_string_equal(at_item_s(json_array_get(p.items, 4), "counter_seq_key"), "\xc3\xa9");
    at_page_release(&p);
    at_store_free(s);
}

/* sweep_expired reports what it removed, writes REMOVE records for streamed tables
 * (none have a TTL today) and trims stream records past the retention. */
static void test_sweep(void **state)
{
    char path[512];
    at_store *s = open_db("sweep", path, sizeof path);
    int64_t now = at_now_us() / 1000000;
    size_t removed = 0;
    json_t *items = json_array(), *key, *got = NULL;
    at_update u = {.add_attr = "count", .add_value = 1};

    for (int i = 0; i < 1203; i++) {
        char k[32];
        snprintf(k, sizeof k, "k%d", i);
        json_array_append_new(items, at_conf_item("cache_key", at_av_s(k), "ExpirationTime",
                                          at_av_n_int(i % 3 ? now - 10 : now + 1000), NULL));
    }
    assert_int_equal(at_store_batch_put(s, AT_TABLE_REPORTS_CACHE, items), 0);
    json_decref(items);
    assert_int_equal(at_store_sweep_expired(s, now, &removed), 0);
    assert_int_equal(removed, 802);
    assert_int_equal(at_store_sweep_expired(s, now, &removed), 0);
    assert_int_equal(removed, 0);
    /* Writing over an expired item starts from nothing (it is never served). */
    put_ok(s, AT_TABLE_TASKS_COUNTERS,
           at_conf_item("counter_seq_key", at_av_s("c"), "count", at_av_n_int(40), "ExpirationTime",
                at_av_n_int(now - 5), NULL));
    key = at_conf_item("counter_seq_key", at_av_s("c"), NULL);
    assert_int_equal(at_store_update(s, AT_TABLE_TASKS_COUNTERS, key, &u, NULL, &got), 0);
    assert_string_equal(json_string_value(json_object_get(json_object_get(got, "count"), "N")),
                        "1");
    json_decref(got);
    json_decref(key);
    /* Stream records older than a day go. */
    put_ok(s, AT_TABLE_TASKS, at_conf_item("instance_id", at_av_s("i"), "uuid", at_av_s("u"), NULL));
    assert_int_equal(stream_count(s), 1);
    assert_int_equal(at_store_sweep_expired(s, now + 2 * SQ_STREAM_RETENTION, &removed), 0);
    assert_int_equal(stream_count(s), 0);
    at_store_free(s);
}

/* A table made before an index existed gets the index's column, filled from the
 * stored items, when setup runs again. */
static void test_migration(void **state)
{
    char path[512], err[256];
    at_store *s = open_db("migrate", path, sizeof path);
    json_t *pk = at_av_s("t");
    at_query q = {.table = AT_TABLE_NOTES,
                  .index = "target_uuid-is_pinned-index",
                  .pk = pk,
                  .forward = 1,
                  .limit = 10};
    at_page p = {0};
    json_t *created = json_array(), *existing = json_array();

    put_ok(
        s, AT_TABLE_NOTES,
        at_conf_item("target_uuid", at_av_s("t"), "uuid", at_av_s("u"), "is_pinned", at_av_n_int(1), NULL));
    at_store_free(s);
    free(raw_sql(path, "DROP INDEX \"em_actions_notes_staging/target_uuid-is_pinned-index\""));
    free(raw_sql(path, "ALTER TABLE em_actions_notes_staging DROP COLUMN is_pinned"));
    assert_int_equal(at_store_open_sqlite(path, NULL, &s, err, sizeof err), 0);
    assert_int_equal(at_store_query(s, &q, &p), AT_ENOTABLE);
    assert_int_equal(at_store_setup(s, created, existing), 0);
    assert_int_equal(json_array_size(created), 0);
    assert_int_equal(json_array_size(existing), AT_TABLE_COUNT);
    assert_int_equal(at_store_query(s, &q, &p), 0);
    assert_int_equal(json_array_size(p.items), 1);
    at_page_release(&p);
    json_decref(created);
    json_decref(existing);
    json_decref(pk);
    at_store_free(s);
}

/* Many readers and a writer at once, each thread on its own pooled connection. */
typedef struct rw_arg {
    at_store *s;
    int writer;
    int rc;
} rw_arg;

static void *rw_thread(void *p)
{
    rw_arg *a = p;
    json_t *pk = at_av_s("t");
    for (int i = 0; i < 200 && !a->rc; i++) {
        if (a->writer) {
            char u[32];
            json_t *it;
            snprintf(u, sizeof u, "u%04d", i);
            it = at_conf_item("target_uuid", at_av_s("t"), "uuid", at_av_s(u), "owner_uuid", at_av_s("o"),
                      "created_at", at_av_s(u), NULL);
            a->rc = at_store_put(a->s, AT_TABLE_NOTES, it, NULL);
            json_decref(it);
        } else {
            at_query q = {.table = AT_TABLE_NOTES, .pk = pk, .forward = i % 2, .limit = 20};
            at_page pg = {0};
            a->rc = at_store_query(a->s, &q, &pg);
            at_page_release(&pg);
        }
    }
    json_decref(pk);
    return NULL;
}

static void test_concurrent_readers(void **state)
{
    enum { THREADS = 9 };
    char path[512];
    at_store *s = open_db("readers", path, sizeof path);
    pthread_t th[THREADS];
    rw_arg args[THREADS];
    for (int i = 0; i < THREADS; i++) {
        args[i] = (rw_arg){s, i == 0, 0};
        assert_int_equal(pthread_create(&th[i], NULL, rw_thread, &args[i]), 0);
    }
    for (int i = 0; i < THREADS; i++) {
        pthread_join(th[i], NULL);
        assert_int_equal(args[i].rc, 0);
    }
    at_store_free(s);
}

/* A writer that cannot get the lock within busy_timeout fails with AT_EUNAVAIL;
 * readers are not blocked by another process's write transaction (WAL). */
static void test_busy(void **state)
{
    char path[512];
    at_store *s = open_db("busy", path, sizeof path);
    sqlite3 *other = NULL;
    json_t *it = at_conf_item("target_uuid", at_av_s("t"), "uuid", at_av_s("u"), NULL), *got = NULL;
    int64_t t0;

    put_ok(s, AT_TABLE_NOTES, json_incref(it));
    ((sq_store *)s)->busy_ms = 200;
    assert_int_equal(sqlite3_open(path, &other), SQLITE_OK);
    assert_int_equal(sqlite3_exec(other, "BEGIN IMMEDIATE", NULL, NULL, NULL), SQLITE_OK);
    t0 = at_monotonic_us();
    assert_int_equal(at_store_put(s, AT_TABLE_NOTES, it, NULL), AT_EUNAVAIL);
    assert_true(at_monotonic_us() - t0 >= 150000);
    assert_int_equal(at_store_get(s, AT_TABLE_NOTES, it, &got), 0);
    json_decref(got);
    assert_int_equal(sqlite3_exec(other, "COMMIT", NULL, NULL, NULL), SQLITE_OK);
    sqlite3_close(other);
    assert_int_equal(at_store_put(s, AT_TABLE_NOTES, it, NULL), 0);
    json_decref(it);
    at_store_free(s);
}

/* The per-connection statement cache stays bounded, evicting idle statements. */
static void test_statement_cache(void **state)
{
    char path[512], sql[64];
    at_store *s = open_db("stmts", path, sizeof path);
    sq_conn *c = NULL;
    sqlite3_stmt *held = NULL, *st = NULL;

    assert_int_equal(at_sqlite_conn_get((sq_store *)s, &c), 0);
    assert_int_equal(at_sqlite_prepare(c, "SELECT 1 UNION ALL SELECT 2", &held), 0);
    assert_int_equal(sqlite3_step(held), SQLITE_ROW); /* busy: must survive eviction */
    for (int i = 0; i < SQ_STMT_MAX + 100; i++) {
        snprintf(sql, sizeof sql, "SELECT %d", i);
        assert_int_equal(at_sqlite_prepare(c, sql, &st), 0);
        assert_int_equal(sqlite3_step(st), SQLITE_ROW);
        assert_int_equal(sqlite3_column_int(st, 0), i);
        sqlite3_reset(st);
    }
    assert_true(c->nstmts <= SQ_STMT_MAX);
    assert_int_equal(sqlite3_step(held), SQLITE_ROW);
    assert_int_equal(sqlite3_column_int(held, 0), 2);
    sqlite3_reset(held);
    at_sqlite_conn_put((sq_store *)s, c);
    at_store_free(s);
}

/* ---- group commit ---- */

/* Returns 1 while some caller leads a group. */
static int leading(sq_store *s)
{
    int busy;
    pthread_mutex_lock(&s->w.mu);
    busy = s->w.busy;
    pthread_mutex_unlock(&s->w.mu);
    return busy;
}

/* Returns the number of writes waiting in the writer's queue. */
static size_t queued(sq_store *s)
{
    size_t n = 0;
    pthread_mutex_lock(&s->w.mu);
    for (sq_job *j = s->w.head; j; j = j->next) n++;
    pthread_mutex_unlock(&s->w.mu);
    return n;
}

typedef struct gc_arg {
    at_store *s;
    int kind, i;
    int rc;
} gc_arg;

enum { GC_BLOCK, GC_PUT, GC_CONFLICT, GC_ADD, GC_HALF, GC_RUNS, GC_WRITERS = 40 };

static int gc_runs; /* how many times gc_count ran */

/* A write that changes nothing and counts how many times it is run. */
static int gc_count(sq_store *s, sq_conn *c, void *arg)
{
    __atomic_add_fetch(&gc_runs, 1, __ATOMIC_SEQ_CST);
    return 0;
}

static size_t GC_BLOCK_AT = GC_WRITERS;

/* A write that waits (holding the lead) until GC_BLOCK_AT writes queued behind it. */
static int gc_block(sq_store *s, sq_conn *c, void *arg)
{
    for (int i = 0; i < 5000 && queued(s) < GC_BLOCK_AT; i++) usleep(1000);
    return 0;
}

/* A write that changes the database and then fails: its change must not stay. */
static int gc_half(sq_store *s, sq_conn *c, void *arg)
{
    int rc = at_sqlite_exec(c, "INSERT INTO em_actions_counters_staging (counter_seq_key, \"_item\") "
                               "VALUES ('half', '{}')");
    return rc ? rc : AT_EIO;
}

static void *gc_thread(void *p)
{
    gc_arg *a = p;
    char u[32];
    json_t *it = NULL;
    at_clause fresh = {"uuid", AT_OP_NOT_EXISTS, NULL, NULL};
    at_cond cond = {&fresh, 1};
    at_update add = {.add_attr = "seq", .add_value = 1};

    snprintf(u, sizeof u, "gc-%02d", a->i);
    switch (a->kind) {
    case GC_BLOCK: a->rc = at_sqlite_write((sq_store *)a->s, gc_block, NULL); break;
    case GC_HALF: a->rc = at_sqlite_write((sq_store *)a->s, gc_half, NULL); break;
    case GC_RUNS: a->rc = at_sqlite_write((sq_store *)a->s, gc_count, NULL); break;
    case GC_PUT:
        it = at_conf_item("instance_id", at_av_s("gc"), "uuid", at_av_s(u), "created_at",
                          at_av_n_int(a->i), NULL);
        a->rc = at_store_put(a->s, AT_TABLE_TASKS, it, &cond);
        break;
    case GC_CONFLICT:
        it = at_conf_item("instance_id", at_av_s("gc"), "uuid", at_av_s("gc-taken"), "created_at",
                          at_av_n_int(a->i), NULL);
        a->rc = at_store_put(a->s, AT_TABLE_TASKS, it, &cond);
        break;
    default:
        it = at_conf_item("counter_seq_key", at_av_s("gc-counter"), NULL);
        a->rc = at_store_update(a->s, AT_TABLE_COUNTERS, it, &add, NULL, NULL);
        break;
    }
    json_decref(it);
    return NULL;
}

/* Writes queued while another group commits go in one group, one commit; a write whose
 * condition fails, or that fails half-way, is rolled back alone. */
static void test_group_commit(void **state)
{
    char path[512];
    at_store *s = open_db("group", path, sizeof path);
    sq_store *sq = (sq_store *)s;
    pthread_t th[GC_WRITERS + 1];
    gc_arg args[GC_WRITERS + 1];
    uint64_t c0, w0, c1, w1;
    json_t *key, *got = NULL, *recs = NULL;
    char *n;

    put_ok(s, AT_TABLE_TASKS,
           at_conf_item("instance_id", at_av_s("gc"), "uuid", at_av_s("gc-taken"), "created_at",
                        at_av_n_int(0), NULL));
    at_sqlite_writer_stats(s, &c0, &w0);
    args[0] = (gc_arg){s, GC_BLOCK, 0, 0};
    assert_int_equal(pthread_create(&th[0], NULL, gc_thread, &args[0]), 0);
    while (!leading(sq)) usleep(100); /* the blocker leads, alone */
    for (int i = 1; i <= GC_WRITERS; i++) {
        int kind = i % 4 == 0 ? GC_CONFLICT : i % 4 == 1 ? GC_PUT : i % 4 == 2 ? GC_ADD : GC_PUT;
        if (i == 17) kind = GC_HALF;
        args[i] = (gc_arg){s, kind, i, 0};
        assert_int_equal(pthread_create(&th[i], NULL, gc_thread, &args[i]), 0);
    }
    for (int i = 0; i <= GC_WRITERS; i++) {
        pthread_join(th[i], NULL);
        assert_int_equal(args[i].rc, args[i].kind == GC_CONFLICT ? AT_ECOND
                                     : args[i].kind == GC_HALF   ? AT_EIO
                                                                 : 0);
    }
    at_sqlite_writer_stats(s, &c1, &w1);
    assert_int_equal(c1 - c0, 2); /* the blocker's group, then all 40 in one */
    assert_int_equal(w1 - w0, 1 + GC_WRITERS); /* failed ones included */
    /* 19 puts and the first one: 20 tasks, 20 INSERT records; 10 ADDs. */
    n = raw_sql(path, "SELECT count(*) FROM em_actions_tasks_staging");
    assert_string_equal(n, "20");
    free(n);
    assert_int_equal(at_store_stream_read(s, 0, 100, &recs), 0);
    assert_int_equal(json_array_size(recs), 20);
    json_decref(recs);
    key = at_conf_item("counter_seq_key", at_av_s("gc-counter"), NULL);
    assert_int_equal(at_store_get(s, AT_TABLE_COUNTERS, key, &got), 0);
    assert_string_equal(json_string_value(json_object_get(json_object_get(got, "seq"), "N")), "10");
    json_decref(got);
    json_decref(key);
    n = raw_sql(path, "SELECT count(*) FROM em_actions_counters_staging WHERE counter_seq_key = 'half'");
    assert_string_equal(n, "0");
    free(n);
    at_store_free(s);
}

/* Runs one group: the blocker, then a write that counts its runs, conflicting puts, and
 * a write that fails half-way when half. Returns how many times the counting write ran. */
static int group_runs(at_store *s, int half)
{
    sq_store *sq = (sq_store *)s;
    pthread_t th[4];
    gc_arg args[4];
    int kinds[4] = {GC_BLOCK, GC_RUNS, GC_CONFLICT, half ? GC_HALF : GC_CONFLICT};

    gc_runs = 0;
    for (int i = 0; i < 4; i++) {
        args[i] = (gc_arg){s, kinds[i], i, 0};
        if (i == 1)
            while (!leading(sq)) usleep(100);
        assert_int_equal(pthread_create(&th[i], NULL, gc_thread, &args[i]), 0);
        /* Queued in this order (the counting write first). Not after the last one: the
         * blocker lets go of the lead as soon as it sees 3 queued, and the group then
         * takes them from the queue, so a wait for 3 could wait forever. */
        if (i > 0 && i < 3)
            while (queued(sq) < (size_t)i) usleep(100);
    }
    for (int i = 0; i < 4; i++) {
        pthread_join(th[i], NULL);
        assert_int_equal(args[i].rc, kinds[i] == GC_CONFLICT ? AT_ECOND : kinds[i] == GC_HALF ? AT_EIO : 0);
    }
    return gc_runs;
}

/* A group runs its writes without a savepoint each; only when one fails after changing
 * something is the group taken back and run again, each write in its savepoint. */
static void test_group_runs_again_only_after_a_half_write(void **state)
{
    char path[512];
    at_store *s = open_db("group-again", path, sizeof path);
    GC_BLOCK_AT = 3;
    put_ok(s, AT_TABLE_TASKS,
           at_conf_item("instance_id", at_av_s("gc"), "uuid", at_av_s("gc-taken"), "created_at",
                        at_av_n_int(0), NULL));
    assert_int_equal(group_runs(s, 0), 1); /* conditions that fail change nothing */
    assert_int_equal(group_runs(s, 1), 2);
    GC_BLOCK_AT = GC_WRITERS;
    at_store_free(s);
}

/* Rows written by older versions hold the item's DynamoDB JSON as text: they are read
 * as before, and a change stores the packed form. */
static void test_legacy_json_rows(void **state)
{
    char path[512];
    at_store *s = open_db("legacy", path, sizeof path);
    json_t *key = at_conf_item("target_uuid", at_av_s("t"), "uuid", at_av_s("old"), NULL), *got = NULL;
    json_t *pk = at_av_s("t"), *want;
    at_query q = {.table = AT_TABLE_NOTES, .pk = pk, .forward = 1, .limit = 10};
    at_update u = {.add_attr = "version", .add_value = 1};
    at_page p = {0};
    char *type;

    free(raw_sql(path, "INSERT INTO em_actions_notes_staging (target_uuid, uuid, \"_item\") VALUES "
                       "('t', 'old', '{\"target_uuid\":{\"S\":\"t\"},\"uuid\":{\"S\":\"old\"},"
                       "\"data\":{\"M\":{\"z\":{\"N\":\"1.50\"},\"a\":{\"S\":\"x\\u0000y\"}}},"
                       "\"version\":{\"N\":\"1\"}}')"));
    want = json_loads("{\"target_uuid\":{\"S\":\"t\"},\"uuid\":{\"S\":\"old\"},"
                      "\"data\":{\"M\":{\"z\":{\"N\":\"1.50\"},\"a\":{\"S\":\"x\\u0000y\"}}},"
                      "\"version\":{\"N\":\"1\"}}",
                      JSON_ALLOW_NUL, NULL);
    assert_non_null(want);
    assert_int_equal(at_store_get(s, AT_TABLE_NOTES, key, &got), 0);
    assert_true(json_equal(got, want));
    json_decref(got);
    assert_int_equal(at_store_query(s, &q, &p), 0);
    assert_int_equal(json_array_size(p.items), 1);
    assert_true(json_equal(json_array_get(p.items, 0), want));
    at_page_release(&p);
    q.flags = AT_Q_RAW; /* packed on the way out */
    assert_int_equal(at_store_query(s, &q, &p), 0);
    assert_int_equal(at_page_count(&p), 1);
    {
        size_t n;
        const unsigned char *raw = at_page_raw(&p, 0, &n);
        json_t *back = at_packed_decode(raw, n);
        assert_true(json_equal(back, want));
        json_decref(back);
    }
    at_page_release(&p);
    type = raw_sql(path, "SELECT typeof(\"_item\") FROM em_actions_notes_staging");
    assert_string_equal(type, "text");
    free(type);
    assert_int_equal(at_store_update(s, AT_TABLE_NOTES, key, &u, NULL, &got), 0);
    json_object_set_new(want, "version", at_av_n_int(2));
    assert_true(json_equal(got, want));
    json_decref(got);
    type = raw_sql(path, "SELECT typeof(\"_item\") FROM em_actions_notes_staging");
    assert_string_equal(type, "blob");
    free(type);
    assert_int_equal(at_store_get(s, AT_TABLE_NOTES, key, &got), 0);
    assert_true(json_equal(got, want));
    json_decref(got);
    json_decref(want);
    json_decref(key);
    json_decref(pk);
    at_store_free(s);
}

/* SizeBytes as DynamoDB Streams reports it: the records of the AWS Lambda fixtures
 * (fixtures/aws/dynamodb-streams/aws-lambda-go__dynamodb-time-window-event.json). */
static void test_item_size(void **state)
{
    json_t *keys = json_pack("{s:{s:s}}", "Id", "N", "101");
    json_t *v1 = json_pack("{s:{s:s}, s:{s:s}}", "Message", "S", "New item!", "Id", "N", "101");
    json_t *v2 =
        json_pack("{s:{s:s}, s:{s:s}}", "Message", "S", "This item has changed", "Id", "N", "101");
    size_t k = at_sqlite_item_size(keys), a = at_sqlite_item_size(v1), b = at_sqlite_item_size(v2);
    assert_int_equal(k + a, 26);     /* INSERT */
    assert_int_equal(k + a + b, 59); /* MODIFY */
    assert_int_equal(k + b, 38);     /* REMOVE */
    json_decref(keys);
    json_decref(v1);
    json_decref(v2);
}

/* ---- tenants sharing a partition key ---- */

/* Returns the microseconds of a first page of tenant inst's live notes of target. */
static double tenant_page_us(at_store *s, const char *target, const char *inst, size_t *n, int *more)
{
    json_t *pk = at_av_s(target), *iv = at_av_s(inst), *one = at_av_n_int(1);
    at_clause f[2] = {{"instance_id", AT_OP_EQ, iv, NULL}, {"is_pinned", AT_OP_NE, one, NULL}};
    at_query q = {.table = AT_TABLE_NOTES,
                  .index = "target_uuid-updated_at-index",
                  .pk = pk,
                  .forward = 0,
                  .limit = 26,
                  .filter = {f, 2},
                  .flags = AT_Q_LIVE | AT_Q_RAW,
                  .max_read_bytes = 16 * 1024};
    at_page p = {0};
    int64_t t0 = at_monotonic_us();
    assert_int_equal(at_store_query(s, &q, &p), 0);
    t0 = at_monotonic_us() - t0;
    *n = at_page_count(&p);
    *more = p.last_key != NULL;
    at_page_release(&p);
    json_decref(pk);
    json_decref(iv);
    json_decref(one);
    return (double)t0;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* 5,000 notes of tenant B under target S do not slow down tenant A's list of S: the
 * list reads A's rows only (a 16 KB read bound fits A's 30 notes, not B's 1.5 MB),
 * and a page costs about what it costs on a target without B's notes (checked with a
 * wide margin, 10x, on medians: it was 50-100x when the tenant was filtered in C). */
static void test_tenant_isolation(void **state)
{
    char path[512];
    at_store *s = open_db("tenants", path, sizeof path);
    json_t *items = json_array();
    double with_b[31], alone[31];
    size_t n = 0;
    int more = 0;

    for (int i = 0; i < 5030; i++) {
        char u[48], ts[40];
        int a = i % 168 == 0; /* 30 of A's, spread among B's */
        snprintf(u, sizeof u, "%08x-0000-4000-8000-%012x", (unsigned)i, (unsigned)i);
        snprintf(ts, sizeof ts, "2024-01-01 00:%02d:%02d.%06d", i / 3600 % 60, i / 60 % 60, i);
        json_array_append_new(items, at_conf_item("target_uuid", at_av_s("S"), "uuid", at_av_s(u),
                                                  "instance_id", at_av_s(a ? "A" : "B"), "is_pinned",
                                                  at_av_n_int(0), "updated_at", at_av_s(ts), "data",
                                                  at_av_s("a note of some length, as notes are"), NULL));
        if (a)
            json_array_append_new(items, at_conf_item("target_uuid", at_av_s("T"), "uuid", at_av_s(u),
                                                      "instance_id", at_av_s("A"), "is_pinned",
                                                      at_av_n_int(0), "updated_at", at_av_s(ts), "data",
                                                      at_av_s("a note of some length, as notes are"), NULL));
    }
    assert_int_equal(at_store_batch_put(s, AT_TABLE_NOTES, items), 0);
    json_decref(items);
    tenant_page_us(s, "S", "A", &n, &more);
    assert_int_equal(n, 26);
    assert_true(more);
    for (int i = 0; i < 31; i++) {
        with_b[i] = tenant_page_us(s, "S", "A", &n, &more);
        alone[i] = tenant_page_us(s, "T", "A", &n, &more);
    }
    qsort(with_b, 31, sizeof with_b[0], cmp_double);
    qsort(alone, 31, sizeof alone[0], cmp_double);
    fprintf(stderr, "tenant A's page of 26 notes: %.0f us beside 5,000 of B's, %.0f us alone (%.2fx)\n",
            with_b[15], alone[15], with_b[15] / alone[15]);
    assert_true(with_b[15] < 10 * alone[15]);
    at_store_free(s);
}

/* ---- benchmark (AT_BENCH_ROWS) ---- */

static void bench_fill(at_store *s, long from, long to)
{
    json_t *items = json_array();
    for (long i = from; i < to; i++) {
        char t[32], u[48], ts[40];
        snprintf(t, sizeof t, "target-%ld", i % 1000);
        snprintf(u, sizeof u, "%08lx-0000-4000-8000-%012lx", i * 2654435761u % 0xffffffffu, i);
        snprintf(ts, sizeof ts, "2024-01-01 00:00:%02ld.%06ld", (i / 1000000) % 60, i % 1000000);
        json_array_append_new(items,
                              at_conf_item("target_uuid", at_av_s(t), "uuid", at_av_s(u), "owner_uuid",
                                   at_av_s(i % 10 ? "owner-many" : "owner-few"), "created_at",
                                   at_av_s(ts), "title", at_av_s("a note of some length"), NULL));
        if (json_array_size(items) == 10000 || i + 1 == to) {
            assert_int_equal(at_store_batch_put(s, AT_TABLE_NOTES, items), 0);
            json_array_clear(items);
        }
    }
    json_decref(items);
}

/* Returns the mean microseconds of a 50-item page of the big owner's list, taken deep
 * into it (after `skip` pages), both directions. */
static double bench_pages(at_store *s, int skip_pages, int rounds)
{
    json_t *pk = at_av_s("owner-many"), *start = NULL;
    at_query q = {.table = AT_TABLE_NOTES,
                  .index = "owner_uuid-created_at-index",
                  .pk = pk,
                  .forward = 1,
                  .limit = 50,
                  .flags = AT_Q_LIVE};
    int64_t t0;
    for (int i = 0; i < skip_pages; i++) {
        at_page p = {0};
        q.start_key = start;
        assert_int_equal(at_store_query(s, &q, &p), 0);
        json_decref(start);
        start = json_incref(p.last_key);
        at_page_release(&p);
    }
    t0 = at_monotonic_us();
    for (int r = 0; r < rounds; r++) {
        at_page p = {0};
        q.start_key = start;
        q.forward = r % 2;
        assert_int_equal(at_store_query(s, &q, &p), 0);
        assert_int_equal(json_array_size(p.items), 50);
        at_page_release(&p);
    }
    json_decref(start);
    json_decref(pk);
    return (double)(at_monotonic_us() - t0) / rounds;
}

/* Returns the mean microseconds of a 50-item page starting from a key in the middle
 * of the big owner's list (created_at of row rows/2). */
static double bench_middle(at_store *s, long rows)
{
    char ts[40];
    json_t *pk = at_av_s("owner-many"), *start;
    at_query q = {.table = AT_TABLE_NOTES,
                  .index = "owner_uuid-created_at-index",
                  .pk = pk,
                  .forward = 1,
                  .limit = 50};
    int64_t t0;
    snprintf(ts, sizeof ts, "2024-01-01 00:00:%02ld.%06ld", (rows / 2 / 1000000) % 60,
             (rows / 2) % 1000000);
    start = at_conf_item("target_uuid", at_av_s("target-0"), "uuid", at_av_s("0"), "owner_uuid",
                 at_av_s("owner-many"), "created_at", at_av_s(ts), NULL);
    q.start_key = start;
    t0 = at_monotonic_us();
    for (int r = 0; r < 200; r++) {
        at_page p = {0};
        q.forward = r % 2;
        assert_int_equal(at_store_query(s, &q, &p), 0);
        assert_int_equal(json_array_size(p.items), 50);
        at_page_release(&p);
    }
    json_decref(start);
    json_decref(pk);
    return (double)(at_monotonic_us() - t0) / 200;
}

static void test_bench(void **state)
{
    const char *env = getenv("AT_BENCH_ROWS");
    long rows = env ? atol(env) : 0, done = 0;
    char path[512];
    at_store *s;

    if (rows <= 0) skip();
    s = open_db("bench", path, sizeof path);
    for (long size = 10000; size <= rows; size *= 10) {
        int64_t t0 = at_monotonic_us();
        bench_fill(s, done, size);
        fprintf(stderr, "bench: filled %ld rows in %.1f s\n", size, (at_monotonic_us() - t0) / 1e6);
        done = size;
        fprintf(stderr,
                "bench: %ld rows: first page %.0f us, page 20 deep %.0f us, from the middle %.0f "
                "us (limit 50)\n",
                size, bench_pages(s, 0, 200), bench_pages(s, 20, 200), bench_middle(s, size));
        if (size * 10 > rows && size != rows) size = rows / 10;
    }
    at_store_free(s);
}

/* ---- write benchmark (AT_BENCH_WRITES) ---- */

typedef struct wbench_arg {
    at_store *s;
    int id, n, rc;
} wbench_arg;

/* Creates n notes as the API does: a put conditioned on the uuid being new. */
static void *wbench_thread(void *p)
{
    wbench_arg *a = p;
    at_clause fresh = {"uuid", AT_OP_NOT_EXISTS, NULL, NULL};
    at_cond cond = {&fresh, 1};
    for (int i = 0; i < a->n && !a->rc; i++) {
        char u[48], ts[32];
        json_t *it;
        /* As the API makes them: a random uuid, the time now. */
        snprintf(u, sizeof u, "%08x-%04x-4000-8000-%012x", (unsigned)(a->id * 2654435761u + i * 40503u),
                 (unsigned)i & 0xffff, (unsigned)a->id);
        at_timestamp_format(at_now_us(), ts);
        it = at_conf_item("target_uuid", at_av_s("bench-target"), "uuid", at_av_s(u), "instance_id",
                          at_av_s("bench"), "owner_uuid", at_av_s("00000000-0000-4000-8000-00000000beef"),
                          "owner_name", at_av_s("Bench"), "is_pinned", at_av_n_int(0), "version",
                          at_av_n_int(1), "created_at", at_av_s(ts), "updated_at", at_av_s(ts), "data",
                          json_pack("{s:{s:{s:s}, s:{s:s}}}", "M", "text", "S", "benchmark note",
                                    "n", "N", "42"),
                          NULL);
        a->rc = at_store_put(a->s, AT_TABLE_NOTES, it, &cond);
        json_decref(it);
    }
    return NULL;
}

/* Returns the puts per second of threads writers, each creating n notes. */
static double wbench_run(at_store *s, int threads, int n, int base)
{
    pthread_t th[256];
    wbench_arg args[256];
    int64_t t0 = at_monotonic_us();
    for (int i = 0; i < threads; i++) {
        args[i] = (wbench_arg){s, base + i, n, 0};
        assert_int_equal(pthread_create(&th[i], NULL, wbench_thread, &args[i]), 0);
    }
    for (int i = 0; i < threads; i++) {
        pthread_join(th[i], NULL);
        assert_int_equal(args[i].rc, 0);
    }
    return (double)threads * n / ((double)(at_monotonic_us() - t0) / 1e6);
}

/* Checkpoints run mostly on the checkpointer's thread, the writer copies short tails,
 * and the WAL file stays bounded while writes go on (it would grow without end if only
 * the thread copied: it never catches up with a busy writer). */
static void test_checkpoints_off_the_writer(void **state)
{
    char path[512], wal[600];
    at_store *s = open_db("checkpoints", path, sizeof path);
    uint64_t background = 0, tails = 0;
    off_t biggest = 0;
    struct stat st;

    snprintf(wal, sizeof wal, "%s-wal", path);
    for (int round = 0; round < 12 && (tails < 2 || background < 2); round++) {
        wbench_run(s, 16, 100, round * 16);
        if (stat(wal, &st) == 0 && st.st_size > biggest) biggest = st.st_size;
        at_sqlite_checkpoint_stats(s, &background, &tails);
    }
    print_message("checkpoints: %llu background, %llu tails, WAL at most %lld bytes\n", (unsigned long long)background, (unsigned long long)tails, (long long)biggest);
    assert_true(background >= 2);
    assert_true(tails >= 2);
    /* Started over each time: never much past the point where a commit checkpoints
     * itself (one group's pages), in pages of 4 KB plus the frame headers. On a quiet
     * machine it stays nearer the threshold; a loaded one lets the thread fall behind. */
    assert_true(biggest < (off_t)(SQ_WAL_INLINE_PAGES + SQ_WAL_CHECKPOINT_PAGES) * (4096 + 24));
    at_store_free(s);
}

/* AT_BENCH_WRITES=N: puts/s of 1 writer and of 64 concurrent writers, N puts each. */
static void test_bench_writes(void **state)
{
    const char *env = getenv("AT_BENCH_WRITES");
    int n = env ? atoi(env) : 0;
    char path[512];
    at_store *s;
    double one, many;
    uint64_t c0, w0, c1, w1;

    if (n <= 0) skip();
    s = open_db("bench_writes", path, sizeof path);
    at_sqlite_writer_stats(s, &c0, &w0);
    one = wbench_run(s, 1, n * 4, 0);
    at_sqlite_writer_stats(s, &c1, &w1);
    fprintf(stderr, "bench: writes: 1 writer %.0f puts/s (%.1f writes per commit)\n", one,
            (double)(w1 - w0) / (double)(c1 - c0));
    many = wbench_run(s, 64, n, 1000);
    at_sqlite_writer_stats(s, &c0, &w0);
    fprintf(stderr, "bench: writes: 64 writers %.0f puts/s, %.0f commits/s (%.1f writes per commit)\n",
            many, many * (double)(c0 - c1) / (double)(w0 - w1), (double)(w0 - w1) / (double)(c0 - c1));
    at_store_free(s);
}

static void remove_tree(const char *dir)
{
    DIR *d = opendir(dir);
    struct dirent *e;
    if (!d) return;
    while ((e = readdir(d))) {
        char p[1024];
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) continue;
        snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
        if (e->d_type == DT_DIR)
            remove_tree(p);
        else
            unlink(p);
    }
    closedir(d);
    rmdir(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_wal_mode),
        cmocka_unit_test(test_explain_plans),
        cmocka_unit_test(test_twins_of_tenant_keyed_tables),
        cmocka_unit_test(test_stream_same_transaction),
        cmocka_unit_test(test_reopen),
        cmocka_unit_test(test_open_errors),
        cmocka_unit_test(test_creates_directory),
        cmocka_unit_test(test_tie_order),
        cmocka_unit_test(test_scan_order),
        cmocka_unit_test(test_sweep),
        cmocka_unit_test(test_migration),
        cmocka_unit_test(test_concurrent_readers),
        cmocka_unit_test(test_busy),
        cmocka_unit_test(test_statement_cache),
        cmocka_unit_test(test_group_commit),
        cmocka_unit_test(test_group_runs_again_only_after_a_half_write),
        cmocka_unit_test(test_checkpoints_off_the_writer),
        cmocka_unit_test(test_legacy_json_rows),
        cmocka_unit_test(test_tenant_isolation),
        cmocka_unit_test(test_item_size),
        cmocka_unit_test(test_bench),
        cmocka_unit_test(test_bench_writes),
    };
    char path[512];
    const char *base = getenv("TMPDIR");
    int failed;

    at_log_set_level(AT_LOG_ERROR);
    snprintf(tmpdir, sizeof tmpdir, "%s/at-store-sqlite-XXXXXX", base && *base ? base : "/tmp");
    if (!mkdtemp(tmpdir)) {
        perror("mkdtemp");
        return 1;
    }
    db_path(path, sizeof path, "conformance");
    failed = at_conformance_run("store_conformance_sqlite", open_sqlite, path);
    failed += cmocka_run_group_tests_name("store_sqlite", tests, NULL, NULL);
    remove_tree(tmpdir);
    return failed ? 1 : 0;
}
