/* The sqlite backend's checkpointer: copies the WAL back into the database file mostly
 * on a thread of its own, so that a group of writes waits for a short checkpoint only.
 *
 * SQLite's automatic checkpoint runs inside the COMMIT that grows the WAL past its
 * threshold: that commit, and every caller of its group, waits while thousands of pages
 * are copied and the WAL and the database file are synced (tens of milliseconds: with
 * it, POST's p99 under load was about twice what it is without). But a checkpoint on
 * another connection alone is not enough: the WAL starts over from its beginning only
 * when a write transaction begins with every frame copied, and with writes going on,
 * new frames always arrive while the thread copies; the file would grow without end.
 *
 * So the work is split. The writer's connection has no automatic checkpoint; its WAL
 * hook (called after each commit with the WAL's size in pages) wakes this thread once
 * the WAL holds SQ_WAL_CHECKPOINT_PAGES pages. The thread copies in PASSIVE mode (no
 * write lock: writers go on appending meanwhile), again while a pass leaves more than
 * SQ_WAL_TAIL_PAGES new pages behind it, and then says it has caught up. The writer's
 * next commit then copies the short tail itself, inline, so that the transaction after
 * it starts the WAL over (cutting the file back to SQ_WAL_KEEP_BYTES). Should the thread
 * fall behind (the WAL past SQ_WAL_INLINE_PAGES), the commit that sees it checkpoints
 * inline, as SQLite would. Durability is unchanged: every checkpoint syncs the WAL before
 * it copies (docs/storage.md "Durability"). */
#include <string.h>

#include "store/sqlite/sqlite_int.h"
#include "actionstools/err.h"
#include "actionstools/log.h"
#include "actionstools/banned.h"

/* A PASSIVE checkpoint of the database of db. Returns the WAL's size in pages when it
 * began (-1 when it could not run: another checkpoint was running, or an error). */
static int checkpoint(sqlite3 *db)
{
    int log = -1, copied = -1;
    int rc = sqlite3_wal_checkpoint_v2(db, NULL, SQLITE_CHECKPOINT_PASSIVE, &log, &copied);
    if (rc != SQLITE_OK && rc != SQLITE_BUSY)
        at_log(AT_LOG_WARN, "sqlite: checkpoint failed: %s", sqlite3_errmsg(db));
    return rc == SQLITE_OK ? log : -1;
}

/* The writer's WAL hook: runs after each of its commits, with the WAL's size in pages. */
static int wal_hook(void *arg, sqlite3 *db, const char *schema, int pages)
{
    sq_checkpointer *k = arg;
    int tail = 0;

    if (pages < SQ_WAL_CHECKPOINT_PAGES) return SQLITE_OK;
    pthread_mutex_lock(&k->mu);
    if (k->caught_up || pages >= SQ_WAL_INLINE_PAGES) {
        /* The thread copied all but a short tail (or cannot keep up): copy the rest
         * here, so that the next write transaction starts the WAL over. */
        k->caught_up = 0;
        tail = 1;
    } else if (!k->wanted && !k->running) {
        k->wanted = 1;
        pthread_cond_signal(&k->cv);
    }
    pthread_mutex_unlock(&k->mu);
    if (tail && checkpoint(db) >= 0) __atomic_add_fetch(&k->inline_runs, 1, __ATOMIC_RELAXED);
    return SQLITE_OK;
}

static void *checkpointer_main(void *arg)
{
    sq_checkpointer *k = arg;

    pthread_mutex_lock(&k->mu);
    for (;;) {
        while (!k->wanted && !k->stop)
            pthread_cond_wait(&k->cv, &k->mu);
        if (k->stop) break;
        k->wanted = 0;
        k->running = 1;
        pthread_mutex_unlock(&k->mu);
        /* Copy until a pass finds no more than a short tail of new pages. */
        int before = 0, log, passes = 0;
        while ((log = checkpoint(k->conn->db)) >= 0 && ++passes < 16 &&
               log - before > SQ_WAL_TAIL_PAGES)
            before = log;
        pthread_mutex_lock(&k->mu);
        k->running = 0;
        k->runs += (uint64_t)passes;
        if (log >= 0) k->caught_up = 1;
    }
    pthread_mutex_unlock(&k->mu);
    return NULL;
}

int at_sqlite_checkpointer_start(sq_checkpointer *k, sq_conn *writer, sq_conn *own)
{
    memset(k, 0, sizeof *k);
    pthread_mutex_init(&k->mu, NULL);
    pthread_cond_init(&k->cv, NULL);
    k->conn = own;
    k->inited = 1;
    /* Should the thread not start, commits checkpoint inline, as before. */
    sqlite3_wal_autocheckpoint(writer->db, SQ_WAL_CHECKPOINT_PAGES);
    if (pthread_create(&k->thread, NULL, checkpointer_main, k)) return AT_ENOMEM;
    k->started = 1;
    sqlite3_wal_hook(writer->db, wal_hook, k);
    return 0;
}

void at_sqlite_checkpointer_stop(sq_checkpointer *k, sq_conn *writer)
{
    if (!k->inited) return;
    if (writer) sqlite3_wal_hook(writer->db, NULL, NULL);
    if (k->started) {
        pthread_mutex_lock(&k->mu);
        k->stop = 1;
        pthread_cond_signal(&k->cv);
        pthread_mutex_unlock(&k->mu);
        pthread_join(k->thread, NULL);
    }
    pthread_mutex_destroy(&k->mu);
    pthread_cond_destroy(&k->cv);
    k->inited = 0;
}

void at_sqlite_checkpoint_stats(at_store *st, uint64_t *background, uint64_t *inline_tails)
{
    sq_checkpointer *k = &((sq_store *)st)->ckpt;
    pthread_mutex_lock(&k->mu);
    if (background) *background = k->runs;
    pthread_mutex_unlock(&k->mu);
    if (inline_tails) *inline_tails = __atomic_load_n(&k->inline_runs, __ATOMIC_RELAXED);
}
