/* Internals of the sqlite backend, shared by src/store/sqlite*.c and its tests.
 * Nothing outside src/store/ and tests/unit/store/ includes this file.
 *
 * Layout (docs/storage.md): one SQLite table per logical table, with one column per
 * key attribute of the table and of its indexes (no type affinity, so values stay as
 * stored: TEXT for S, INTEGER/REAL for N), an optional "_ttl" column, and "_item", the
 * packed item (a BLOB; older versions stored its DynamoDB JSON as TEXT). Secondary indexes are
 * partial SQLite indexes on (index pk, index sk, table keys...) WHERE the index keys are NOT NULL.
 */
#ifndef AT_STORE_SQLITE_INT_H
#define AT_STORE_SQLITE_INT_H

#include <pthread.h>
#include <sqlite3.h>
#include <stdint.h>

#include "actionstools/store.h"
#include "actionstools/buf.h"

#define SQ_MAX_COLS 16     /* key columns of one table (tasks has 10) */
#define SQ_MAX_IX 16       /* secondary indexes of one table */
#define SQ_POOL_MAX 64     /* connections per store; more callers wait */
#define SQ_STMT_BUCKETS 64 /* prepared-statement cache buckets per connection */
#define SQ_STMT_MAX 512    /* statements cached per connection */
#define SQ_BUSY_MS 5000    /* busy_timeout: how long a writer waits for the lock */
#define SQ_SQL_MAX (64 * 1024)
#define SQ_MMAP_BYTES (256 * 1024 * 1024) /* PRAGMA mmap_size per connection (shared pages) */
#define SQ_STREAM_TABLE "_at_stream"
#define SQ_DELETED_ATTR "deleted_at" /* soft deletion (AT_Q_LIVE): its presence is "_deleted" */
#define SQ_SCOPE_ATTR "instance_id"  /* the tenant: lists filter on it (see sq_ix.qscoped) */
#define SQ_STREAM_RETENTION 86400    /* seconds, as DynamoDB Streams keeps records */
#define SQ_GROUP_MAX 256             /* writes committed together at most */
#define SQ_PACKED_MAX (4u << 20)     /* bytes of one packed item (a 400 KB item packs smaller) */
#define SQ_WRITER_CACHE_KB "32768"   /* page cache of the writer's connection (SQLite: 2 MB) */
#define SQ_WAL_CHECKPOINT_PAGES 4000 /* WAL pages that wake the checkpointer (SQLite: 1000) */
#define SQ_WAL_TAIL_PAGES 256        /* what is left for a commit to copy inline */
#define SQ_WAL_INLINE_PAGES 16384    /* past these (64 MB), a commit checkpoints itself */
#define SQ_WAL_KEEP_BYTES "67108864" /* a checkpointed WAL file is cut back to 64 MB */

/* A value bound to (or read from) a key column. */
typedef struct sq_val {
    int type;      /* SQLITE_NULL, SQLITE_TEXT, SQLITE_INTEGER or SQLITE_FLOAT */
    const char *s; /* SQLITE_TEXT: borrowed bytes (not NUL-terminated in general) */
    size_t n;
    int64_t i;
    double d;
} sq_val;

/* The column values of one item's row. */
typedef struct sq_row {
    sq_val col[SQ_MAX_COLS]; /* key columns (NULL when the item lacks the attribute) */
    sq_val ttl;              /* "_ttl": the TTL attribute's number, or NULL */
    sq_val deleted;          /* "_deleted": 1 when the item has deleted_at, else NULL */
} sq_row;

typedef struct sq_col {
    const char *attr; /* attribute name (the column's name) */
    at_key_type type;
} sq_col;

/* How a query on the table or on one index reads: the key columns, and the order. */
typedef struct sq_ix {
    const at_index_def *def; /* NULL: the table itself */
    int pk, sk;              /* column numbers of the partition and sort keys (sk -1: none) */
    int ties[2];             /* table key columns that order items with equal sort keys */
    int nties;
    int own;      /* 1: has its own SQLite index; 0: served by the primary key */
    char *qindex; /* quoted SQLite index name (own only) */
    /* Quoted name of this index's tenant-scoped twin, or NULL: a partial index on
     * (pk, instance_id, sk, ties...) of live items only, which serves a query that
     * asks for live items and filters on instance_id = value as one seek, whatever
     * other tenants keep under the same partition key. When instance_id is one of the
     * ties (a table keyed by the tenant: tasks, settings), the twin holds it once, and
     * a query of the twin orders by the sort key and the other tie (SQLite cannot
     * order by a column repeated in an index: it sorted every run of equal sort keys). */
    char *qscoped;
    char *qscoped_old; /* the name such a twin had when it repeated instance_id (setup
                          drops that index), or NULL */
} sq_ix;

typedef struct sq_table {
    const at_table_def *def;
    char *qname;              /* quoted physical table name */
    sq_col cols[SQ_MAX_COLS]; /* 0: table pk; 1: table sk when there is one; then index keys */
    int ncols;
    int pk, sk;  /* column numbers of the table's keys (sk -1: none) */
    int has_ttl; /* 1: a "_ttl" column holds the TTL attribute's value */
    int scope;   /* column number of instance_id, or -1 when it is not a key column */
    sq_ix base;  /* the table itself */
    sq_ix ix[SQ_MAX_IX];
    size_t nix;
    char *sql_get, *sql_upsert, *sql_delete, *sql_scan, *sql_scan_after, *sql_expired;
} sq_table;

typedef struct sq_stmt {
    char *sql;
    sqlite3_stmt *st;
    struct sq_stmt *next;
} sq_stmt;

/* One connection of the pool; used by one thread at a time. */
typedef struct sq_conn {
    sqlite3 *db;
    sq_stmt *stmts[SQ_STMT_BUCKETS];
    size_t nstmts;
    struct sq_conn *next; /* idle list */
} sq_conn;

typedef struct sq_store sq_store;

/* A write queued for the writer: run(s, c, arg) on the writer's connection, inside the
 * group's transaction. run returns 0 or an AT_* code; on failure its changes are rolled
 * back (and only its own). run may be called more than once for one write (when
 * another write of its group must be undone alone, the group runs again): it must start
 * from arg's inputs each time, and set its outputs anew. */
typedef int (*sq_job_fn)(sq_store *s, sq_conn *c, void *arg);

typedef struct sq_job {
    sq_job_fn run;
    void *arg;
    int rc;            /* run's result, or the error that stopped its group */
    int done;          /* set (under the writer's mutex) once its group is over */
    int lead;          /* set when this caller is to commit the next group */
    int careful;       /* run it in a savepoint of its own, never twice (DDL: setup) */
    pthread_cond_t cv; /* the caller waits here, alone */
    struct sq_job *next;
} sq_job;

/* The writer of a store (sqlite_writer.c): a queue of writes and the connection that
 * runs them, used by one leader at a time. */
typedef struct sq_writer {
    pthread_mutex_t mu; /* guards everything below but conn */
    sq_job *head, *tail;
    int busy;         /* 1 while some caller leads */
    sq_conn *conn;    /* the writer's own connection (not pooled), used by the leader */
    uint64_t commits; /* groups committed */
    uint64_t writes;  /* writes in the groups committed (those that failed alone too) */
} sq_writer;

/* The checkpointer of a store (sqlite_checkpoint.c): a thread and its own connection
 * that copy the WAL into the database file, leaving the writer a short tail to copy. */
typedef struct sq_checkpointer {
    pthread_mutex_t mu; /* guards everything below but conn and inline_runs */
    pthread_cond_t cv;
    pthread_t thread;
    int inited, started;
    int wanted;    /* the writer's WAL hook asked for a checkpoint */
    int running;   /* the thread is copying */
    int caught_up; /* the thread left only a short tail: the writer's next commit copies it */
    int stop;
    uint64_t runs;        /* the thread's checkpoint passes so far */
    uint64_t inline_runs; /* tails copied by the writer (atomic) */
    sq_conn *conn;        /* the thread's connection (closed by the store after stop) */
} sq_checkpointer;

struct sq_store {
    at_store base; /* first: the common head */
    char *path;
    sq_table tables[AT_TABLE_COUNT];
    pthread_mutex_t pool_mu;
    pthread_cond_t pool_cv;
    sq_conn *idle;
    int nconn;
    sq_writer w; /* every write of this process goes through it */
    sq_checkpointer ckpt;
    int busy_ms; /* busy_timeout, applied when a connection is taken (tests lower it) */
};

/* ---- sqlite.c: pool, statements, errors ---- */

/* Takes a connection from the pool (opening one when none is idle). 0 or AT_*. */
int at_sqlite_conn_get(sq_store *s, sq_conn **out /* OUT */);

/* Returns a connection to the pool. Accepts NULL. */
void at_sqlite_conn_put(sq_store *s, sq_conn *c);

/* Returns the cached prepared statement for sql on c (preparing it on first use),
 * reset and with no bindings. The statement stays owned by the connection.
 * AT_ENOTABLE when sql names a table or index that does not exist. */
int at_sqlite_prepare(sq_conn *c, const char *sql, sqlite3_stmt **out /* OUT */);

/* Maps a SQLite result code on c to an AT_* code, logging the unexpected ones
 * (what names the operation; no item contents are logged). c may be NULL for a code
 * that did not come from a connection. */
int at_sqlite_err(sq_conn *c, int rc, const char *what);

/* Runs a statement without results (BEGIN, COMMIT, DDL...). 0 or AT_*. */
int at_sqlite_exec(sq_conn *c, const char *sql);

/* Binds v to parameter i of st. Returns a SQLite result code. */
int at_sqlite_bind(sqlite3_stmt *st, int i, const sq_val *v);

/* Returns a new quoted SQL identifier for name (or NULL when out of memory). */
char *at_sqlite_quote(const char *name);

/* ---- sqlite_writer.c: the writer and its groups ---- */

/* Queues run(s, c, arg) and returns once the group holding it committed (the caller
 * may lead that group itself). Returns run's result, or the error that stopped the
 * group's transaction (the write then did not happen). Whatever run stored in arg
 * belongs to the caller either way. */
int at_sqlite_write(sq_store *s, sq_job_fn run, void *arg);

/* As at_sqlite_write, for a write whose changes the writer cannot see as row counts
 * (DDL: CREATE TABLE...), or that must not run twice: its group runs each write in a
 * savepoint of its own. */
int at_sqlite_write_careful(sq_store *s, sq_job_fn run, void *arg);

/* For tests and benchmarks: groups committed, and writes in them, so far. */
void at_sqlite_writer_stats(at_store *st, uint64_t *commits /* OUT */, uint64_t *writes /* OUT */);

/* ---- sqlite_checkpoint.c: checkpoints mostly off the writer's path ---- */

/* Starts k's thread on the connection own (kept in k->conn, which the caller closes
 * after at_sqlite_checkpointer_stop) and sets writer's WAL hook to wake it. Returns 0, or
 * AT_ENOMEM when no thread could start (the writer's commits then checkpoint inline, as
 * SQLite's automatic checkpoint does). */
int at_sqlite_checkpointer_start(sq_checkpointer *k, sq_conn *writer, sq_conn *own);

/* Unhooks writer (may be NULL) and stops and joins k's thread. Safe on a k never
 * started (zeroed) or already stopped. */
void at_sqlite_checkpointer_stop(sq_checkpointer *k, sq_conn *writer);

/* For tests and benchmarks: the checkpoint passes run by the thread, and the tails
 * copied inline by the writer, so far. */
void at_sqlite_checkpoint_stats(at_store *st, uint64_t *background /* OUT */,
                                uint64_t *inline_tails /* OUT */);

/* ---- sqlite_item.c: items, keys, writes ---- */

/* Converts the AV av of a key column of type type into a column value.
 * AT_EINVAL when av has another type, is an empty string, or is malformed. */
int at_sqlite_av_val(const json_t *av, at_key_type type, sq_val *out /* OUT */);

/* Extracts the values of the primary key key (exactly the table's key attributes). */
int at_sqlite_key_vals(const sq_table *t, const json_t *key, sq_val vals[2] /* OUT */);

/* Returns 1 when item's TTL attribute (if the table has one) is before now. */
int at_sqlite_expired(const sq_table *t, const json_t *item, int64_t now);

/* Returns a new AV map from a stored item: packed (packed.h), or the JSON text older
 * versions stored, told apart by the first byte. NULL when malformed. */
json_t *at_sqlite_load_item(const void *data, size_t len);

/* Packs item (already checked) into b, which it initialises; on success the caller
 * releases b. Returns 0 or AT_EINVAL / AT_ENOMEM (b then holds nothing). */
int at_sqlite_pack(const json_t *item, at_buf *b);

/* Returns DynamoDB's size of an item (names and values), as stream records report. */
size_t at_sqlite_item_size(const json_t *item);

/* Returns 1 when two items are equal (numbers compared numerically). */
int at_sqlite_item_equal(const json_t *a, const json_t *b);

/* Deletes the stored item (by its key) with its REMOVE stream record, inside the
 * writer's transaction. */
int at_sqlite_remove(sq_store *s, sq_conn *c, const sq_table *t, const json_t *item, int64_t now);

/* ---- sqlite_stream.c ---- */

/* Appends the change old -> new (either may be NULL) of table t to the change stream,
 * inside the writer's transaction. Does nothing for a table without a stream. */
int at_sqlite_stream_add(sq_store *s, sq_conn *c, const sq_table *t, const json_t *old,
                         const json_t *new_item, int64_t now);

/* The backend operations, by file. */
int at_sqlite_setup(at_store *st, json_t *created, json_t *existing);
int at_sqlite_get(at_store *st, at_table_id t, const json_t *key, json_t **item);
int at_sqlite_put(at_store *st, at_table_id t, const json_t *item, const at_cond *cond);
int at_sqlite_update(at_store *st, at_table_id t, const json_t *key, const at_update *u,
                     const at_cond *cond, json_t **new_item);
int at_sqlite_del(at_store *st, at_table_id t, const json_t *key, const at_cond *cond);
int at_sqlite_query(at_store *st, const at_query *q, at_page *out);
int at_sqlite_scan(at_store *st, at_table_id t, const json_t *start_key, size_t limit,
                   at_page *out);
int at_sqlite_batch_put(at_store *st, at_table_id t, const json_t *items);
int at_sqlite_sweep_expired(at_store *st, int64_t now, size_t *removed);
int at_sqlite_stream_read(at_store *st, int64_t after_seq, size_t limit, json_t **records);

/* ---- sqlite_setup.c ---- */

/* Fills the layout of table t (columns, indexes, SQL texts) for physical name name. */
int at_sqlite_layout(sq_table *t, const at_table_def *def, const char *name);

/* Frees what at_sqlite_layout allocated. */
void at_sqlite_layout_release(sq_table *t);

/* Appends the WHERE predicate of index x's partial SQLite index ("pk" IS NOT NULL AND
 * "sk" IS NOT NULL). Queries repeat it word for word so the planner may use the index. */
int at_sqlite_ix_predicate(const sq_table *t, const sq_ix *x, at_buf *b);

/* Appends the WHERE predicate of x's tenant-scoped twin (x->qscoped), likewise. */
int at_sqlite_scoped_predicate(const sq_table *t, const sq_ix *x, at_buf *b);

/* Writes every stored item of t again (filling key columns added by a migration),
 * inside the caller's transaction. */
int at_sqlite_refill(sq_conn *c, const sq_table *t);

/* ---- sqlite_query.c ---- */

/* For tests: writes into *plan (a new string the caller frees) the EXPLAIN QUERY PLAN
 * output of the SQL statement that q runs, one line per plan row. */
int at_sqlite_explain(at_store *st, const at_query *q, char **plan /* OUT */);

#endif
