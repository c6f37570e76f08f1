/* The sqlite backend's writer: group commit, one writer per database in this process.
 *
 * A write is a function run on the writer's connection. Callers queue their writes and
 * wait, each on its own condition variable. The caller at the head of the queue is the
 * leader: it takes every write queued so far (its own first), runs them in one
 * transaction (a write that fails is rolled back alone: see run_plain), commits once,
 * and only then answers each caller of the group. If more writes queued meanwhile, it
 * hands the lead to the first of them and returns. So a burst of N
 * concurrent writes costs one WAL append and one commit instead of N, nobody spins or
 * queues on a lock, and a lone write runs on its caller's thread without a hand-off to
 * another thread (a dedicated writer thread cost two context switches per write: 1
 * writer went from 10-13k to 7k puts/s). See docs/storage.md "Writes". */
#include <stdlib.h>
#include <string.h>

#include "store/sqlite/sqlite_int.h"
#include "actionstools/err.h"
#include "actionstools/log.h"
#include "actionstools/banned.h"

/* The writes of one group, in queue order. */
typedef struct group {
    sq_job *v[SQ_GROUP_MAX];
    size_t n;
} group;

/* Undoes a failed write's changes (its savepoint). Returns 0, or the error that ended
 * the whole transaction (SQLite rolls everything back after some errors: I/O, full). */
static int undo_one(sq_conn *c, int run_rc)
{
    if (sqlite3_get_autocommit(c->db)) return run_rc; /* the transaction is gone */
    if (at_sqlite_exec(c, "ROLLBACK TO w") || at_sqlite_exec(c, "RELEASE w")) return AT_EIO;
    return 0;
}

#define RUN_AGAIN 1 /* run_plain: a write must be undone alone: run the group carefully */

/* A failure that a write reports before it changes anything: a condition that does not
 * hold, an item or update the store refuses. */
static int clean_failure(int rc)
{
    return rc == AT_ECOND || rc == AT_EINVAL || rc == AT_ETOOBIG;
}

/* Runs the jobs of g, in the transaction begun, with no savepoint each (a savepoint and
 * its release cost a write ~15,000 instructions, about 4 % of a POST). That is right
 * when every write either succeeds or fails cleanly, having changed nothing: the common
 * case. Returns 0 then; RUN_AGAIN when a write failed after changing something, or for
 * a reason other than a clean refusal (its changes, if any, can only be taken back with
 * the whole transaction: the caller rolls back and runs the group again carefully); or
 * the error that ended the transaction. */
static int run_plain(sq_store *s, sq_conn *c, group *g)
{
    for (size_t i = 0; i < g->n; i++) {
        sq_job *j = g->v[i];
        sqlite3_int64 before = sqlite3_total_changes64(c->db);
        j->rc = j->run(s, c, j->arg);
        if (!j->rc) continue;
        if (sqlite3_get_autocommit(c->db)) return j->rc; /* the transaction is gone */
        if (!clean_failure(j->rc) || sqlite3_total_changes64(c->db) != before) return RUN_AGAIN;
    }
    return 0;
}

/* Runs the jobs of g, in the transaction begun, each in a savepoint of its own, so a
 * write that fails is rolled back alone. Returns 0, or the error that ended the
 * transaction (with the rc of the jobs that had succeeded, or had not run, set to it). */
static int run_careful(sq_store *s, sq_conn *c, group *g)
{
    int lost = 0;
    size_t i;

    for (i = 0; i < g->n && !lost; i++) {
        sq_job *j = g->v[i];
        j->rc = at_sqlite_exec(c, "SAVEPOINT w");
        if (j->rc) {
            lost = j->rc;
            break;
        }
        j->rc = j->run(s, c, j->arg);
        if (j->rc)
            lost = undo_one(c, j->rc);
        else if (at_sqlite_exec(c, "RELEASE w"))
            lost = AT_EIO;
    }
    if (lost)
        for (size_t k = 0; k < g->n; k++)
            if (k >= i || g->v[k]->rc == 0) g->v[k]->rc = lost;
    return lost;
}

/* Runs the jobs of g in one transaction and sets each job's rc. Returns 1 when the
 * group committed. */
static int run_group(sq_store *s, group *g)
{
    sq_conn *c = s->w.conn;
    int rc, lost, careful = 0;
    size_t i;

    sqlite3_busy_timeout(c->db, s->busy_ms);
    rc = at_sqlite_exec(c, "BEGIN IMMEDIATE");
    for (i = 0; i < g->n; i++)
        g->v[i]->rc = rc;
    if (rc) return 0;
    if (g->n == 1) {
        /* Alone: the transaction itself is the savepoint. */
        sq_job *j = g->v[0];
        j->rc = j->run(s, c, j->arg);
        if (j->rc) {
            if (!sqlite3_get_autocommit(c->db)) at_sqlite_exec(c, "ROLLBACK");
            return 0;
        }
    } else {
        for (i = 0; i < g->n; i++)
            careful |= g->v[i]->careful;
        lost = careful ? RUN_AGAIN : run_plain(s, c, g);
        if (lost == RUN_AGAIN && !careful) {
            /* Take everything back, to run the group again with a savepoint each. */
            lost = at_sqlite_exec(c, "ROLLBACK");
            if (!lost) lost = at_sqlite_exec(c, "BEGIN IMMEDIATE");
            if (!lost) lost = RUN_AGAIN;
        }
        if (lost == RUN_AGAIN) {
            lost = run_careful(s, c, g); /* sets the rc of each write itself */
        } else if (lost) {
            for (i = 0; i < g->n; i++)
                g->v[i]->rc = lost;
        }
        if (lost) {
            /* Nothing of this group was written: every write fails with the error that
             * ended the transaction (but the one that failed alone, with its own). */
            at_log(AT_LOG_ERROR, "sqlite: a group of %zu writes was rolled back: %s", g->n,
                   at_strerror(lost));
            if (!sqlite3_get_autocommit(c->db)) at_sqlite_exec(c, "ROLLBACK");
            return 0;
        }
    }
    rc = at_sqlite_exec(c, "COMMIT");
    if (rc) {
        if (!sqlite3_get_autocommit(c->db)) at_sqlite_exec(c, "ROLLBACK");
        for (i = 0; i < g->n; i++)
            if (g->v[i]->rc == 0) g->v[i]->rc = rc;
        return 0;
    }
    return 1;
}

/* Called by the leader with w->mu held: commits one group (the head of the queue, which
 * is the leader's own job), answers its callers, and passes the lead on. */
static void lead(sq_store *s, sq_job *self)
{
    sq_writer *w = &s->w;
    group g;
    int committed;

    for (g.n = 0; w->head && g.n < SQ_GROUP_MAX; g.n++) {
        g.v[g.n] = w->head;
        w->head = w->head->next;
    }
    if (!w->head) w->tail = NULL;
    pthread_mutex_unlock(&w->mu);
    committed = run_group(s, &g);
    pthread_mutex_lock(&w->mu);
    if (committed) {
        w->commits++;
        w->writes += g.n;
    }
    /* A follower may return (and its job go away) as soon as it sees done. */
    for (size_t i = 0; i < g.n; i++) {
        g.v[i]->done = 1;
        if (g.v[i] != self) pthread_cond_signal(&g.v[i]->cv);
    }
    if (w->head) {
        w->head->lead = 1; /* the next group's leader */
        pthread_cond_signal(&w->head->cv);
    } else {
        w->busy = 0;
    }
}

/* Queues a job and waits for its group: at_sqlite_write and at_sqlite_write_careful. */
static int write_job(sq_store *s, sq_job_fn run, void *arg, int careful)
{
    sq_writer *w = &s->w;
    sq_job j;
    int rc;

    memset(&j, 0, sizeof j);
    j.run = run;
    j.arg = arg;
    j.careful = careful;
    if (pthread_cond_init(&j.cv, NULL)) return AT_ENOMEM;
    pthread_mutex_lock(&w->mu);
    if (w->tail)
        w->tail->next = &j;
    else
        w->head = &j;
    w->tail = &j;
    if (!w->busy) {
        w->busy = 1; /* nobody leads: this caller does, its job is the only one queued */
        j.lead = 1;
    }
    while (!j.done && !j.lead)
        pthread_cond_wait(&j.cv, &w->mu);
    if (!j.done) lead(s, &j); /* j is at the head: it goes in the group it commits */
    rc = j.rc;
    pthread_mutex_unlock(&w->mu);
    pthread_cond_destroy(&j.cv);
    return rc;
}

int at_sqlite_write(sq_store *s, sq_job_fn run, void *arg)
{
    return write_job(s, run, arg, 0);
}

int at_sqlite_write_careful(sq_store *s, sq_job_fn run, void *arg)
{
    return write_job(s, run, arg, 1);
}

void at_sqlite_writer_stats(at_store *st, uint64_t *commits, uint64_t *writes)
{
    sq_store *s = (sq_store *)st;
    pthread_mutex_lock(&s->w.mu);
    if (commits) *commits = s->w.commits;
    if (writes) *writes = s->w.writes;
    pthread_mutex_unlock(&s->w.mu);
}
