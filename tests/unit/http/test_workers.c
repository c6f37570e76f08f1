/* Unit tests of src/http/workers.c: jobs run, the queue's cap refuses, stopping runs
 * what was queued and refuses the rest, and the stopped pool refuses until it is freed. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <pthread.h>
#include <stdatomic.h>
#include <unistd.h>

#include "http/workers.h"
#include "actionstools/err.h"
#include "actionstools/banned.h"

static atomic_int ran, started;
static pthread_mutex_t gate = PTHREAD_MUTEX_INITIALIZER;

static void count(void *arg)
{
    (void)arg;
    atomic_fetch_add(&ran, 1);
}

/* Waits until the test opens the gate. */
static void blocked(void *arg)
{
    (void)arg;
    atomic_fetch_add(&started, 1);
    pthread_mutex_lock(&gate);
    pthread_mutex_unlock(&gate);
    atomic_fetch_add(&ran, 1);
}

static void test_runs_every_job(void **state)
{
    at_workers *w;
    (void)state;
    atomic_store(&ran, 0);
    assert_int_equal(at_workers_new(4, 1000, &w), 0);
    for (int i = 0; i < 500; i++) assert_int_equal(at_workers_submit(w, count, NULL), 0);
    at_workers_free(w); /* runs what is queued before it returns */
    assert_int_equal(atomic_load(&ran), 500);
}

static void test_full_queue_refuses(void **state)
{
    at_workers *w;
    int refused = 0;
    (void)state;
    atomic_store(&ran, 0);
    atomic_store(&started, 0);
    pthread_mutex_lock(&gate);
    assert_int_equal(at_workers_new(2, 3, &w), 0);
    /* 2 jobs running (blocked) + 3 queued fit; the rest are refused. */
    assert_int_equal(at_workers_submit(w, blocked, NULL), 0);
    assert_int_equal(at_workers_submit(w, blocked, NULL), 0);
    for (int i = 0; i < 5000 && atomic_load(&started) < 2; i++) usleep(1000);
    assert_int_equal(atomic_load(&started), 2);
    for (int i = 0; i < 8; i++) {
        int rc = at_workers_submit(w, blocked, NULL);
        if (rc) {
            assert_int_equal(rc, AT_ETOOBIG);
            refused++;
        }
    }
    assert_int_equal(refused, 5);
    assert_int_equal(at_workers_load(w), 5);
    pthread_mutex_unlock(&gate);
    at_workers_free(w);
    assert_int_equal(atomic_load(&ran), 5);
}

/* Stopping runs what was queued; the pool then refuses jobs until it is freed (the
 * server's polling threads may still submit while they shut down). */
static void test_stopped_pool_refuses_until_freed(void **state)
{
    at_workers *w;
    (void)state;
    atomic_store(&ran, 0);
    assert_int_equal(at_workers_new(2, 100, &w), 0);
    for (int i = 0; i < 50; i++) assert_int_equal(at_workers_submit(w, count, NULL), 0);
    at_workers_stop(w);
    assert_int_equal(atomic_load(&ran), 50);
    assert_int_equal(at_workers_submit(w, count, NULL), AT_EUNAVAIL);
    assert_int_equal(at_workers_load(w), 0);
    at_workers_stop(w); /* again: nothing to do */
    at_workers_free(w);
    assert_int_equal(atomic_load(&ran), 50);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_runs_every_job),
        cmocka_unit_test(test_full_queue_refuses),
        cmocka_unit_test(test_stopped_pool_refuses_until_freed),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
