/* A polling thread: runs one libmicrohttpd daemon in external epoll mode.
 *
 * Why not the library's own polling threads (MHD_USE_EPOLL_INTERNAL_THREAD)? In 0.9.75
 * its loop (MHD_epoll in daemon.c) computes a timeout once (up to the idle timeout),
 * then calls epoll_wait for at most 128 events again and again while a call returns
 * 128, every time with that timeout. When exactly 128 events were waiting, the second
 * call blocks, and the 128 connections it just took stay unread until another event
 * arrives on that thread or the timeout passes: a burst of requests on idle keep-alive
 * connections waited up to HTTP_REQUEST_TIMEOUT, then was cut with 408.
 *
 * Here the thread does the waiting: poll(2) on the daemon's epoll fd (readable when
 * events are pending) and on an eventfd (at_loop_wake), for as long as MHD_get_timeout
 * says (0 while the library still has connections with data to process); then MHD_run,
 * in which every epoll_wait has a timeout of 0. */
#include <errno.h>
#include <limits.h>
#include <microhttpd.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "loop.h"
#include "actionstools/err.h"
#include "actionstools/log.h"
#include "actionstools/banned.h"

struct at_loop {
    struct MHD_Daemon *d;
    int epoll_fd; /* the daemon's */
    int wake_fd;  /* eventfd: at_loop_wake, at_loop_free */
    atomic_int stopping;
    pthread_t thread;
};

/* Returns the number of connections the daemon holds (on the loop's thread only). */
static unsigned connections(struct MHD_Daemon *d)
{
    const union MHD_DaemonInfo *i = MHD_get_daemon_info(d, MHD_DAEMON_INFO_CURRENT_CONNECTIONS);
    return i ? i->num_connections : 0;
}

/* Returns how long to wait for events, in ms: 0 when the library has work already,
 * -1 for no limit. */
static int wait_ms(struct MHD_Daemon *d)
{
    MHD_UNSIGNED_LONG_LONG left;
    if (MHD_get_timeout(d, &left) != MHD_YES) return -1;
    return left > (MHD_UNSIGNED_LONG_LONG)INT_MAX ? INT_MAX : (int)left;
}

static void *loop_main(void *arg)
{
    at_loop *l = arg;
    struct pollfd fds[2];
    int again = 0;

    memset(fds, 0, sizeof fds);
    fds[0].fd = l->epoll_fd;
    fds[0].events = POLLIN;
    fds[1].fd = l->wake_fd;
    fds[1].events = POLLIN;
    at_log_batch(1);
    while (!atomic_load(&l->stopping)) {
        int ms = again ? 0 : wait_ms(l->d);
        unsigned before;
        if (ms != 0) {
            at_log_flush(); /* the request lines of this run, before the thread waits */
            if (poll(fds, 2, ms) < 0 && errno != EINTR)
                at_log(AT_LOG_WARN, "polling thread: poll failed: %s", strerror(errno));
            if (fds[1].revents & POLLIN) {
                uint64_t n;
                (void)!read(l->wake_fd, &n, sizeof n);
            }
            if (atomic_load(&l->stopping)) break;
        }
        before = connections(l->d);
        MHD_run(l->d);
        /* The library takes the listening socket out of its epoll set while the daemon
         * is at its connection limit, and puts it back only at the start of a run: after
         * a run that closed connections, run once more before waiting, or a client in
         * the listen queue would wait for some other event. */
        again = connections(l->d) < before;
    }
    at_log_batch(0);
    return NULL;
}

int at_loop_new(struct MHD_Daemon *d, at_loop **out)
{
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(d, MHD_DAEMON_INFO_EPOLL_FD);
    at_loop *l;
    int rc = 0;

    *out = NULL;
    if (!info || info->epoll_fd < 0) return AT_EINVAL; /* not a daemon in epoll mode */
    l = calloc(1, sizeof *l);
    if (!l) return AT_ENOMEM;
    l->d = d;
    l->epoll_fd = info->epoll_fd;
    l->wake_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (l->wake_fd < 0) {
        rc = AT_EIO;
        goto out;
    }
    if (pthread_create(&l->thread, NULL, loop_main, l) != 0) {
        rc = AT_EIO;
        goto out;
    }
    *out = l;
out:
    if (rc) {
        if (l->wake_fd >= 0) close(l->wake_fd);
        free(l);
    }
    return rc;
}

void at_loop_wake(at_loop *l)
{
    uint64_t one = 1;
    /* EAGAIN: the counter is full, so the thread has a wake-up pending already. */
    (void)!write(l->wake_fd, &one, sizeof one);
}

void at_loop_free(at_loop *l)
{
    if (!l) return;
    atomic_store(&l->stopping, 1);
    at_loop_wake(l);
    pthread_join(l->thread, NULL);
    close(l->wake_fd);
    free(l);
}
