/* The sqlite backend: opener, connection pool, prepared-statement cache, error
 * mapping. The operations live in sqlite_item.c, sqlite_query.c, sqlite_setup.c and
 * sqlite_stream.c; docs/storage.md describes the layout. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>

#include "store/sqlite/sqlite_int.h"
#include "actionstools/err.h"
#include "actionstools/log.h"
#include "actionstools/banned.h"

static void sqlite_destroy(at_store *st);

static const at_store_ops sqlite_ops = {
    .name = "sqlite",
    .setup = at_sqlite_setup,
    .get = at_sqlite_get,
    .put = at_sqlite_put,
    .update = at_sqlite_update,
    .del = at_sqlite_del,
    .query = at_sqlite_query,
    .scan = at_sqlite_scan,
    .batch_put = at_sqlite_batch_put,
    .sweep_expired = at_sqlite_sweep_expired,
    .stream_read = at_sqlite_stream_read,
    .destroy = sqlite_destroy,
};

char *at_sqlite_quote(const char *name)
{
    size_t n = strlen(name), j = 0;
    char *q = malloc(2 * n + 3);
    if (!q) return NULL;
    q[j++] = '"';
    for (size_t i = 0; i < n; i++) {
        if (name[i] == '"') q[j++] = '"';
        q[j++] = name[i];
    }
    q[j++] = '"';
    q[j] = '\0';
    return q;
}

/* ---- errors ---- */

static int is_missing_object(const char *msg)
{
    return msg && (strstr(msg, "no such table") || strstr(msg, "no such index"));
}

int at_sqlite_err(sq_conn *c, int rc, const char *what)
{
    const char *msg = c && c->db ? sqlite3_errmsg(c->db) : sqlite3_errstr(rc);

    switch (rc & 0xff) {
    case SQLITE_OK:
    case SQLITE_ROW:
    case SQLITE_DONE:
        return 0;
    case SQLITE_NOMEM:
        return AT_ENOMEM;
    case SQLITE_BUSY:
    case SQLITE_LOCKED:
        at_log(AT_LOG_WARN, "sqlite: %s: database still locked after the busy timeout: %s", what,
               msg);
        return AT_EUNAVAIL;
    case SQLITE_ERROR:
        if (is_missing_object(msg)) return AT_ENOTABLE;
        break;
    case SQLITE_TOOBIG:
    case SQLITE_MISMATCH:
    case SQLITE_RANGE:
        return AT_EINVAL;
    default:
        break;
    }
    at_log(AT_LOG_ERROR, "sqlite: %s: %s (code %d)", what, msg, rc);
    return AT_EIO;
}

/* ---- statements ---- */

static unsigned hash_sql(const char *s)
{
    unsigned h = 2166136261u;
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 16777619u;
    return h;
}

/* Drops one cached statement that is not running, to make room. Callers step a
 * statement right after preparing it, so a statement that is not busy is not held. */
static void evict_one(sq_conn *c)
{
    for (int b = 0; b < SQ_STMT_BUCKETS; b++)
        for (sq_stmt **pe = &c->stmts[b]; *pe; pe = &(*pe)->next) {
            sq_stmt *e = *pe;
            if (sqlite3_stmt_busy(e->st)) continue;
            *pe = e->next;
            sqlite3_finalize(e->st);
            free(e->sql);
            free(e);
            c->nstmts--;
            return;
        }
}

int at_sqlite_prepare(sq_conn *c, const char *sql, sqlite3_stmt **out)
{
    unsigned b = hash_sql(sql) % SQ_STMT_BUCKETS;
    sq_stmt *e;
    sqlite3_stmt *st = NULL;
    int rc;

    *out = NULL;
    for (e = c->stmts[b]; e; e = e->next)
        if (strcmp(e->sql, sql) == 0) {
            *out = e->st;
            return 0;
        }
    rc = sqlite3_prepare_v3(c->db, sql, -1, SQLITE_PREPARE_PERSISTENT, &st, NULL);
    if (rc != SQLITE_OK) {
        sqlite3_finalize(st);
        return at_sqlite_err(c, rc, "prepare");
    }
    if (c->nstmts >= SQ_STMT_MAX) evict_one(c);
    e = calloc(1, sizeof *e);
    if (e) e->sql = strdup(sql);
    if (!e || !e->sql) {
        free(e);
        sqlite3_finalize(st);
        return AT_ENOMEM;
    }
    e->st = st;
    e->next = c->stmts[b];
    c->stmts[b] = e;
    c->nstmts++;
    *out = st;
    return 0;
}

int at_sqlite_exec(sq_conn *c, const char *sql)
{
    sqlite3_stmt *st;
    int rc = at_sqlite_prepare(c, sql, &st);
    if (rc) return rc;
    rc = sqlite3_step(st);
    sqlite3_reset(st);
    return rc == SQLITE_DONE || rc == SQLITE_ROW ? 0 : at_sqlite_err(c, rc, "exec");
}

int at_sqlite_bind(sqlite3_stmt *st, int i, const sq_val *v)
{
    switch (v->type) {
    case SQLITE_TEXT:
        return sqlite3_bind_text(st, i, v->s, (int)v->n, SQLITE_STATIC);
    case SQLITE_INTEGER:
        return sqlite3_bind_int64(st, i, v->i);
    case SQLITE_FLOAT:
        return sqlite3_bind_double(st, i, v->d);
    default:
        return sqlite3_bind_null(st, i);
    }
}

/* ---- connections ---- */

static void conn_close(sq_conn *c)
{
    if (!c) return;
    for (int b = 0; b < SQ_STMT_BUCKETS; b++) {
        sq_stmt *e = c->stmts[b];
        while (e) {
            sq_stmt *next = e->next;
            sqlite3_finalize(e->st);
            free(e->sql);
            free(e);
            e = next;
        }
    }
    sqlite3_close(c->db);
    free(c);
}

static int conn_open(const char *path, int first, sq_conn **out, char *err, size_t errlen)
{
    int flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX;
    sq_conn *c = calloc(1, sizeof *c);
    char pragmas[192];
    int rc;

    *out = NULL;
    if (!c) return AT_ENOMEM;
    rc = sqlite3_open_v2(path, &c->db, flags, NULL);
    if (rc != SQLITE_OK) {
        if (err) snprintf(err, errlen, "cannot open %s: %s", path, sqlite3_errmsg(c->db));
        rc = rc == SQLITE_NOMEM ? AT_ENOMEM : AT_EIO;
        goto out;
    }
    sqlite3_busy_timeout(c->db, SQ_BUSY_MS);
    /* NORMAL in WAL mode: a commit survives a crash of the process (not always a
     * power loss); mmap: pages are read from the OS cache without copies. */
    snprintf(pragmas, sizeof pragmas,
             "PRAGMA synchronous=NORMAL; PRAGMA foreign_keys=OFF; PRAGMA mmap_size=%d; "
             /* Statement journals (a group's savepoints) in memory, not temp files. */
             "PRAGMA temp_store=MEMORY;",
             SQ_MMAP_BYTES);
    rc = sqlite3_exec(c->db, pragmas, NULL, NULL, NULL);
    if (rc == SQLITE_OK && first)
        rc = sqlite3_exec(c->db, "PRAGMA journal_mode=WAL", NULL, NULL, NULL);
    if (rc != SQLITE_OK) {
        if (err) snprintf(err, errlen, "cannot use %s: %s", path, sqlite3_errmsg(c->db));
        rc = at_sqlite_err(c, rc, "open");
        if (!rc) rc = AT_EIO;
        goto out;
    }
    rc = 0;
out:
    if (rc) {
        conn_close(c);
        c = NULL;
    }
    *out = c;
    return rc;
}

int at_sqlite_conn_get(sq_store *s, sq_conn **out)
{
    sq_conn *c = NULL;
    int rc = 0;

    pthread_mutex_lock(&s->pool_mu);
    while (!s->idle && s->nconn >= SQ_POOL_MAX)
        pthread_cond_wait(&s->pool_cv, &s->pool_mu);
    if (s->idle) {
        c = s->idle;
        s->idle = c->next;
        c->next = NULL;
    } else {
        s->nconn++; /* reserve the slot, open outside the lock */
    }
    pthread_mutex_unlock(&s->pool_mu);
    if (!c) {
        rc = conn_open(s->path, 0, &c, NULL, 0);
        if (rc) {
            at_log(AT_LOG_ERROR, "sqlite: cannot open another connection: %s", at_strerror(rc));
            pthread_mutex_lock(&s->pool_mu);
            s->nconn--;
            pthread_cond_signal(&s->pool_cv);
            pthread_mutex_unlock(&s->pool_mu);
        }
    }
    if (c) sqlite3_busy_timeout(c->db, s->busy_ms);
    *out = c;
    return rc;
}

void at_sqlite_conn_put(sq_store *s, sq_conn *c)
{
    if (!c) return;
    pthread_mutex_lock(&s->pool_mu);
    c->next = s->idle;
    s->idle = c;
    pthread_cond_signal(&s->pool_cv);
    pthread_mutex_unlock(&s->pool_mu);
}

/* ---- opener ---- */

/* Creates the directories above the file path (mkdir -p of its dirname). */
static int make_parent_dirs(const char *path, char *err, size_t errlen)
{
    char *dir = strdup(path);
    int rc = 0;

    if (!dir) return AT_ENOMEM;
    for (char *p = dir + 1; *p; p++) {
        if (*p != '/') continue;
        *p = '\0';
        if (mkdir(dir, 0755) != 0 && errno != EEXIST) {
            if (err) snprintf(err, errlen, "cannot create directory %s: %s", dir, strerror(errno));
            rc = AT_EIO;
            break;
        }
        *p = '/';
    }
    free(dir);
    return rc;
}

int at_store_open_sqlite(const char *path, const char *const names[AT_TABLE_COUNT], at_store **out,
                         char *err, size_t errlen)
{
    sq_store *s = NULL;
    sq_conn *c = NULL, *ckpt = NULL;
    int rc;

    *out = NULL;
    if (err && errlen) err[0] = '\0';
    if (!path || !*path || strcmp(path, ":memory:") == 0) {
        /* Each pooled connection would open a database of its own. */
        if (err)
            snprintf(err, errlen, "SQLITE_PATH must name a file (\"%s\" given)", path ? path : "");
        return AT_EINVAL;
    }
    s = calloc(1, sizeof *s);
    if (!s) return AT_ENOMEM;
    s->base.ops = &sqlite_ops;
    s->busy_ms = SQ_BUSY_MS;
    pthread_mutex_init(&s->pool_mu, NULL);
    pthread_cond_init(&s->pool_cv, NULL);
    pthread_mutex_init(&s->w.mu, NULL);
    s->path = strdup(path);
    rc = s->path ? at_store_init_names(&s->base, names) : AT_ENOMEM;
    for (int t = 0; !rc && t < AT_TABLE_COUNT; t++)
        rc = at_sqlite_layout(&s->tables[t], at_schema_table(t), s->base.names[t]);
    if (!rc) rc = make_parent_dirs(path, err, errlen);
    if (!rc) rc = conn_open(path, 1, &c, err, errlen);
    if (rc) goto out;
    s->nconn = 1;
    at_sqlite_conn_put(s, c);
    /* The writer's own connection, outside the pool, with a bigger page cache (a group
     * dirties pages of every index: 64 writers, 6.5k -> 8.5k puts/s); its checkpoints
     * are mostly the checkpointer's, on a connection of its own (sqlite_checkpoint.c). */
    rc = conn_open(path, 0, &s->w.conn, err, errlen);
    if (rc) goto out;
    if (sqlite3_exec(s->w.conn->db,
                     "PRAGMA cache_size=-" SQ_WRITER_CACHE_KB
                     "; PRAGMA journal_size_limit=" SQ_WAL_KEEP_BYTES,
                     NULL, NULL, NULL) != SQLITE_OK) {
        rc = at_sqlite_err(s->w.conn, SQLITE_ERROR, "open");
        goto out;
    }
    rc = conn_open(path, 0, &ckpt, err, errlen);
    if (rc) goto out;
    /* From here on the checkpointer owns ckpt (s->ckpt.conn), thread or not. */
    if (at_sqlite_checkpointer_start(&s->ckpt, s->w.conn, ckpt))
        at_log(AT_LOG_WARN, "sqlite: no checkpoint thread: commits checkpoint the WAL themselves");
    *out = &s->base;
out:
    if (rc) sqlite_destroy(&s->base);
    if (rc == AT_ENOMEM && err && !err[0]) snprintf(err, errlen, "out of memory");
    return rc;
}

static void sqlite_destroy(at_store *st)
{
    sq_store *s = (sq_store *)st;
    if (!s) return;
    at_sqlite_checkpointer_stop(&s->ckpt, s->w.conn);
    conn_close(s->ckpt.conn);
    conn_close(s->w.conn);
    while (s->idle) {
        sq_conn *c = s->idle;
        s->idle = c->next;
        conn_close(c);
    }
    for (int t = 0; t < AT_TABLE_COUNT; t++)
        at_sqlite_layout_release(&s->tables[t]);
    at_store_release_names(&s->base);
    pthread_mutex_destroy(&s->pool_mu);
    pthread_cond_destroy(&s->pool_cv);
    pthread_mutex_destroy(&s->w.mu);
    free(s->path);
    free(s);
}
