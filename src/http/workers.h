/* A bounded pool of worker threads (src/http/workers.c): the server hands them the
 * requests that may block (docs/http-server.md), so the polling threads never wait. */
#ifndef AT_WORKERS_H
#define AT_WORKERS_H

#include <stddef.h>

typedef struct at_workers at_workers;
typedef void (*at_work_fn)(void *arg);

/* Starts nthreads threads sharing a queue of at most queue_cap jobs. Returns 0, or
 * AT_ENOMEM / AT_EIO (a thread could not start). */
int at_workers_new(size_t nthreads, size_t queue_cap, at_workers **out /* OUT */);

/* Queues fn(arg) to run on a worker. Returns 0, AT_ETOOBIG when the queue is full, or
 * AT_EUNAVAIL when the pool is stopping; then fn is not called and arg stays the
 * caller's. */
int at_workers_submit(at_workers *w, at_work_fn fn, void *arg);

/* Returns the number of jobs queued or running now (for the log). */
size_t at_workers_load(at_workers *w);

/* Stops taking jobs (at_workers_submit says AT_EUNAVAIL from now on), runs every job
 * already queued and joins the threads; the pool stays valid for at_workers_submit
 * until at_workers_free. Call it from one thread. Accepts NULL. */
void at_workers_stop(at_workers *w);

/* Stops the pool as at_workers_stop does (if it is not stopped yet) and frees it. No
 * thread may use it any more. Accepts NULL. */
void at_workers_free(at_workers *w);

#endif
