/* The worker pool: a fixed set of threads taking jobs from one ring buffer. The queue
 * has a hard cap, so a flood of slow requests is refused (503) instead of growing
 * memory without bound. */
#include <pthread.h>
#include <stdlib.h>

#include "workers.h"
#include "actionstools/log.h"
#include "actionstools/err.h"
#include "actionstools/banned.h"

typedef struct job {
    at_work_fn fn;
    void *arg;
} job;

struct at_workers {
    pthread_mutex_t lock;
    pthread_cond_t more; /* a job was queued, or the pool is stopping */
    job *ring;
    size_t cap, head, len; /* jobs wait in ring[head .. head+len) modulo cap */
    size_t running;
    int stopping;
    pthread_t *threads;
    size_t nthreads;
};

static void *worker_main(void *arg)
{
    at_workers *w = arg;
    at_log_batch(1);
    pthread_mutex_lock(&w->lock);
    for (;;) {
        job j;
        while (w->len == 0 && !w->stopping) {
            if (at_log_pending()) {
                /* Nothing to run: write the request lines gathered, then wait. */
                pthread_mutex_unlock(&w->lock);
                at_log_flush();
                pthread_mutex_lock(&w->lock);
                continue;
            }
            pthread_cond_wait(&w->more, &w->lock);
        }
        if (w->len == 0) break; /* stopping, and nothing left to run */
        j = w->ring[w->head];
        w->head = (w->head + 1) % w->cap;
        w->len--;
        w->running++;
        pthread_mutex_unlock(&w->lock);
        j.fn(j.arg);
        pthread_mutex_lock(&w->lock);
        w->running--;
    }
    pthread_mutex_unlock(&w->lock);
    at_log_batch(0);
    return NULL;
}

int at_workers_new(size_t nthreads, size_t queue_cap, at_workers **out)
{
    at_workers *w;
    pthread_attr_t attr;
    int rc = 0;

    *out = NULL;
    w = calloc(1, sizeof *w);
    if (!w) return AT_ENOMEM;
    pthread_mutex_init(&w->lock, NULL);
    pthread_cond_init(&w->more, NULL);
    w->cap = queue_cap ? queue_cap : 1;
    w->ring = calloc(w->cap, sizeof *w->ring);
    w->threads = calloc(nthreads ? nthreads : 1, sizeof *w->threads);
    if (!w->ring || !w->threads) {
        at_workers_free(w);
        return AT_ENOMEM;
    }
    /* A handler's deepest stack (jansson, libcurl, OpenSSL, SQLite) stays well under
     * 512 KB; the default 8 MB would only reserve address space. */
    pthread_attr_init(&attr);
    pthread_attr_setstacksize(&attr, 512 * 1024);
    for (size_t i = 0; i < nthreads; i++) {
        if (pthread_create(&w->threads[i], &attr, worker_main, w) != 0) {
            rc = AT_EIO;
            break;
        }
        w->nthreads++;
    }
    pthread_attr_destroy(&attr);
    if (rc) {
        at_workers_free(w);
        return rc;
    }
    *out = w;
    return 0;
}

int at_workers_submit(at_workers *w, at_work_fn fn, void *arg)
{
    int rc = 0;
    pthread_mutex_lock(&w->lock);
    if (w->stopping) {
        rc = AT_EUNAVAIL;
    } else if (w->len == w->cap) {
        rc = AT_ETOOBIG;
    } else {
        w->ring[(w->head + w->len) % w->cap] = (job){fn, arg};
        w->len++;
        pthread_cond_signal(&w->more);
    }
    pthread_mutex_unlock(&w->lock);
    return rc;
}

size_t at_workers_load(at_workers *w)
{
    size_t n;
    pthread_mutex_lock(&w->lock);
    n = w->len + w->running;
    pthread_mutex_unlock(&w->lock);
    return n;
}

void at_workers_stop(at_workers *w)
{
    if (!w) return;
    pthread_mutex_lock(&w->lock);
    w->stopping = 1;
    pthread_cond_broadcast(&w->more);
    pthread_mutex_unlock(&w->lock);
    for (size_t i = 0; i < w->nthreads; i++)
        pthread_join(w->threads[i], NULL);
    w->nthreads = 0; /* joined */
}

void at_workers_free(at_workers *w)
{
    if (!w) return;
    at_workers_stop(w);
    pthread_cond_destroy(&w->more);
    pthread_mutex_destroy(&w->lock);
    free(w->threads);
    free(w->ring);
    free(w);
}
