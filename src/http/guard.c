/* The connection guard: request timeout and shedding at the connection limit, which
 * libmicrohttpd 0.9.75 does not provide (its timeout counts silence only, and its
 * access handler is first called once the headers are complete).
 *
 * Every connection has a record in a fixed array of slots, so a record's memory stays
 * valid for the sweeper between its passes. One mutex guards the records and two lists:
 * idle connections (oldest first) and unfinished requests (earliest begun first).
 *
 * When does a request begin? The library tells us when a request line is complete
 * (at_guard_request_begins). Bytes that come before it (a request line trickled in)
 * are seen by the sweeper: Linux's TCP_INFO says when the socket last received data
 * (tcpi_last_data_recv); data after the connection went idle means a request began.
 * The begin time taken is that of the latest data, so a request is never cut early.
 *
 * Cutting or shedding a connection writes our answer (if one can still be sent) and
 * shuts the socket down; the library then sees the end of the stream and closes the
 * connection itself. The fd is valid while we hold the mutex, because the library
 * closes it only after its CLOSED notification (at_guard_close), which takes the
 * mutex (libmicrohttpd 0.9.75 daemon.c, MHD_cleanup_connections). The socket I/O
 * happens after the mutex is released, on a dup(2) of the fd taken under it, so the
 * socket cannot be closed (nor its number reused) under our feet. */
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "guard.h"
#include "actionstools/err.h"
#include "actionstools/log.h"
#include "actionstools/timeutil.h"
#include "actionstools/banned.h"

#define PATH_KEPT 160    /* bytes of a request's raw path kept for the 408 log line */
#define CHUNK 128        /* slots the sweeper looks at per turn of the mutex (and dups at most) */
#define DATA_MARGIN_MS 10 /* TCP_INFO times are in jiffies: ignore data this close to idle */
#define ANSWER_MAX 1024

enum { S_FREE, S_IDLE, S_RECEIVING, S_HANDLING, S_GONE };

struct at_guard_conn {
    int fd;
    int state;
    int64_t since_ms; /* S_IDLE: idle since; S_RECEIVING: the request began */
    at_guard_conn *prev, *next;
    char path[PATH_KEPT]; /* raw path of the current request, "" when unknown */
};

typedef struct conn_list {
    at_guard_conn *head, *tail;
} conn_list;

/* A connection to cut or shed, handled after the mutex is released. */
typedef struct victim {
    int fd;     /* a dup of the connection's fd */
    int status; /* answer to write first; 0 for none */
    const char *message;
    char path[PATH_KEPT];
    int has_path;
} victim;

struct at_guard {
    at_guard_options o;
    pthread_mutex_t lock;
    pthread_cond_t wake;
    int stopping;
    pthread_t sweeper;
    int sweeping;
    int period_ms;
    at_guard_conn *slots;
    at_guard_conn **free_slots;
    size_t nslots, nfree;
    conn_list idle, receiving;
    at_guard_stats stats;
    char refuse_msg[160], shed_msg[160], cut_msg[160];
};

static int64_t now_ms(void)
{
    return at_monotonic_us() / 1000;
}

static void list_append(conn_list *l, at_guard_conn *c)
{
    c->next = NULL;
    c->prev = l->tail;
    if (l->tail) l->tail->next = c;
    else l->head = c;
    l->tail = c;
}

static void list_remove(conn_list *l, at_guard_conn *c)
{
    if (c->prev) c->prev->next = c->next;
    else l->head = c->next;
    if (c->next) c->next->prev = c->prev;
    else l->tail = c->prev;
    c->prev = c->next = NULL;
}

/* Takes c out of whichever list its state puts it in. */
static void unlink_conn(at_guard *g, at_guard_conn *c)
{
    if (c->state == S_IDLE) list_remove(&g->idle, c);
    else if (c->state == S_RECEIVING) list_remove(&g->receiving, c);
}

/* Marks c gone (cut, shed or refused) and prepares its victim record. Under the lock. */
static void make_victim(at_guard *g, at_guard_conn *c, int status, const char *message, victim *v)
{
    unlink_conn(g, c);
    c->state = S_GONE;
    g->stats.open--;
    v->status = status;
    v->message = message;
    v->has_path = c->path[0] != '\0';
    memcpy(v->path, c->path, sizeof v->path);
    v->fd = dup(c->fd);
    if (v->fd < 0) {
        /* Out of descriptors: no answer, but the connection still goes. */
        shutdown(c->fd, SHUT_RDWR);
        v->status = 0;
    }
}

/* Writes the victim's answer (best effort, never blocking) and shuts the socket
 * down. Without the lock. */
static void finish_victim(at_guard *g, victim *v)
{
    char buf[ANSWER_MAX];
    if (v->fd < 0) return;
    if (v->status) {
        size_t n = g->o.answer(g->o.answer_cls, v->status, v->message, v->has_path ? v->path : NULL,
                               buf, sizeof buf);
        if (n) (void)send(v->fd, buf, n, MSG_DONTWAIT | MSG_NOSIGNAL);
    }
    shutdown(v->fd, SHUT_RDWR);
    close(v->fd);
    v->fd = -1;
}

static void copy_path(at_guard_conn *c, const char *p)
{
    size_t n;
    if (!p) {
        c->path[0] = '\0';
        return;
    }
    n = strlen(p);
    if (n >= sizeof c->path) n = sizeof c->path - 1;
    memcpy(c->path, p, n);
    c->path[n] = '\0';
}

at_guard_conn *at_guard_open(at_guard *g, int fd)
{
    at_guard_conn *c, *shed = NULL;
    victim v;
    int have_victim = 0;

    pthread_mutex_lock(&g->lock);
    if (g->nfree == 0) {
        pthread_mutex_unlock(&g->lock);
        return NULL;
    }
    c = g->free_slots[--g->nfree];
    memset(c, 0, sizeof *c);
    c->fd = fd;
    c->state = S_IDLE;
    c->since_ms = now_ms();
    list_append(&g->idle, c);
    g->stats.open++;
    if (g->stats.open > (size_t)g->o.max_connections) {
        /* Oldest idle first, then the request that has taken longest to arrive; the
         * new connection itself (the idle list's tail) is not a candidate. */
        if (g->idle.head && g->idle.head != c) {
            shed = g->idle.head;
            make_victim(g, shed, 0, NULL, &v);
            g->stats.shed_idle++;
        } else if (g->receiving.head) {
            shed = g->receiving.head;
            make_victim(g, shed, 503, g->shed_msg, &v);
            g->stats.shed_unfinished++;
        } else {
            make_victim(g, c, 503, g->refuse_msg, &v);
            g->stats.refused++;
        }
        have_victim = 1;
    }
    pthread_mutex_unlock(&g->lock);
    if (have_victim) finish_victim(g, &v);
    return c;
}

void at_guard_close(at_guard *g, at_guard_conn *c)
{
    if (!c) return;
    pthread_mutex_lock(&g->lock);
    if (c->state != S_GONE) {
        unlink_conn(g, c);
        g->stats.open--;
    }
    c->state = S_FREE;
    c->fd = -1;
    g->free_slots[g->nfree++] = c;
    pthread_mutex_unlock(&g->lock);
}

void at_guard_request_begins(at_guard *g, at_guard_conn *c, const char *raw_path)
{
    if (!c) return;
    pthread_mutex_lock(&g->lock);
    if (c->state == S_IDLE || c->state == S_HANDLING) {
        unlink_conn(g, c);
        c->state = S_RECEIVING;
        c->since_ms = now_ms();
        list_append(&g->receiving, c);
    }
    /* S_RECEIVING: the sweeper saw its first bytes earlier and keeps that time. */
    copy_path(c, raw_path);
    pthread_mutex_unlock(&g->lock);
}

int at_guard_request_arrived(at_guard *g, at_guard_conn *c)
{
    int rc = 0;
    if (!c) return 0;
    pthread_mutex_lock(&g->lock);
    if (c->state == S_GONE) {
        rc = -1;
    } else {
        unlink_conn(g, c);
        c->state = S_HANDLING;
    }
    pthread_mutex_unlock(&g->lock);
    return rc;
}

void at_guard_refuse(at_guard *g, at_guard_conn *c, int status, const char *message)
{
    victim v;
    int have = 0;
    if (!c) return;
    pthread_mutex_lock(&g->lock);
    if (c->state != S_GONE) {
        make_victim(g, c, status, message, &v);
        have = 1;
    }
    pthread_mutex_unlock(&g->lock);
    if (have) finish_victim(g, &v);
}

void at_guard_request_done(at_guard *g, at_guard_conn *c)
{
    if (!c) return;
    pthread_mutex_lock(&g->lock);
    if (c->state != S_GONE) {
        unlink_conn(g, c);
        c->state = S_IDLE;
        c->since_ms = now_ms();
        c->path[0] = '\0';
        list_append(&g->idle, c);
    }
    pthread_mutex_unlock(&g->lock);
}

void at_guard_get_stats(at_guard *g, at_guard_stats *st)
{
    pthread_mutex_lock(&g->lock);
    *st = g->stats;
    pthread_mutex_unlock(&g->lock);
}

/* Returns the monotonic time (ms) at which the socket last received data, or -1 when
 * the kernel does not say. */
static int64_t last_data_at(int fd, int64_t now)
{
    struct tcp_info ti;
    socklen_t len = sizeof ti;
    /* An older kernel may fill less than glibc's struct; the field is an old one. */
    if (getsockopt(fd, IPPROTO_TCP, TCP_INFO, &ti, &len) != 0 ||
        len < offsetof(struct tcp_info, tcpi_last_data_recv) + sizeof ti.tcpi_last_data_recv)
        return -1;
    return now - (int64_t)ti.tcpi_last_data_recv;
}

/* One pass over every slot: idle connections that received data have begun a
 * request; requests past the timeout are cut. */
static void sweep(at_guard *g, victim *victims)
{
    for (size_t start = 0; start < g->nslots; start += CHUNK) {
        size_t end = start + CHUNK < g->nslots ? start + CHUNK : g->nslots, nv = 0;
        int64_t now = now_ms();
        pthread_mutex_lock(&g->lock);
        for (size_t i = start; i < end; i++) {
            at_guard_conn *c = &g->slots[i];
            if (c->state == S_IDLE) {
                int64_t at = last_data_at(c->fd, now);
                if (at > c->since_ms + DATA_MARGIN_MS) {
                    list_remove(&g->idle, c);
                    c->state = S_RECEIVING;
                    c->since_ms = at;
                    list_append(&g->receiving, c);
                }
            }
            if (c->state == S_RECEIVING && now - c->since_ms >= g->o.request_timeout_ms) {
                make_victim(g, c, 408, g->cut_msg, &victims[nv++]);
                g->stats.cut++;
            }
        }
        pthread_mutex_unlock(&g->lock);
        for (size_t k = 0; k < nv; k++) finish_victim(g, &victims[k]);
    }
}

static void log_stats(const at_guard_stats *now, at_guard_stats *last)
{
    json_t *f;
    if (now->cut == last->cut && now->shed_idle == last->shed_idle &&
        now->shed_unfinished == last->shed_unfinished && now->refused == last->refused)
        return;
    f = json_pack("{s:I, s:I, s:I, s:I, s:I}", "open", (json_int_t)now->open, "cut_408",
                  (json_int_t)(now->cut - last->cut), "shed_idle",
                  (json_int_t)(now->shed_idle - last->shed_idle), "shed_unfinished",
                  (json_int_t)(now->shed_unfinished - last->shed_unfinished), "refused",
                  (json_int_t)(now->refused - last->refused));
    at_log_json(AT_LOG_INFO, "connections cut or shed", f);
    json_decref(f);
    *last = *now;
}

static void *sweeper_main(void *arg)
{
    at_guard *g = arg;
    victim *victims = calloc(CHUNK, sizeof *victims);
    at_guard_stats last, st;
    memset(&last, 0, sizeof last);
    for (;;) {
        struct timespec ts;
        int stop;
        clock_gettime(CLOCK_REALTIME, &ts);
        ts.tv_nsec += (long)g->period_ms * 1000000L;
        ts.tv_sec += ts.tv_nsec / 1000000000L;
        ts.tv_nsec %= 1000000000L;
        pthread_mutex_lock(&g->lock);
        if (!g->stopping) pthread_cond_timedwait(&g->wake, &g->lock, &ts);
        stop = g->stopping;
        pthread_mutex_unlock(&g->lock);
        if (stop) break;
        if (victims) sweep(g, victims);
        at_guard_get_stats(g, &st);
        log_stats(&st, &last);
        if (g->o.tick) g->o.tick(g->o.answer_cls);
    }
    free(victims);
    return NULL;
}

int at_guard_new(const at_guard_options *o, at_guard **out)
{
    at_guard *g;
    size_t n = (size_t)(o->slots > o->max_connections ? o->slots : o->max_connections);

    *out = NULL;
    g = calloc(1, sizeof *g);
    if (!g) return AT_ENOMEM;
    g->o = *o;
    pthread_mutex_init(&g->lock, NULL);
    pthread_cond_init(&g->wake, NULL);
    g->nslots = n;
    g->slots = calloc(n, sizeof *g->slots);
    g->free_slots = calloc(n, sizeof *g->free_slots);
    if (!g->slots || !g->free_slots) {
        at_guard_free(g);
        return AT_ENOMEM;
    }
    /* Free slots are taken from the end: low slots first, so a sweep of a lightly
     * loaded server touches few cache lines. */
    for (size_t i = 0; i < n; i++) {
        g->slots[i].fd = -1;
        g->free_slots[i] = &g->slots[n - 1 - i];
    }
    g->nfree = n;
    /* An eighth of the timeout, between 0.1 and 1 s: a request is cut at most that
     * late. */
    g->period_ms = o->request_timeout_ms / 8;
    if (g->period_ms < 100) g->period_ms = 100;
    if (g->period_ms > 1000) g->period_ms = 1000;
    snprintf(g->cut_msg, sizeof g->cut_msg,
             "the request did not arrive whole within %d s (HTTP_REQUEST_TIMEOUT)",
             (o->request_timeout_ms + 999) / 1000);
    snprintf(g->refuse_msg, sizeof g->refuse_msg,
             "the server holds its maximum of %d connections (HTTP_MAX_CONNECTIONS), each "
             "busy with a request; retry shortly", o->max_connections);
    snprintf(g->shed_msg, sizeof g->shed_msg,
             "the server is at its connection limit (HTTP_MAX_CONNECTIONS) and this request "
             "was the slowest to arrive; retry shortly");
    if (pthread_create(&g->sweeper, NULL, sweeper_main, g) != 0) {
        at_guard_free(g);
        return AT_EIO;
    }
    g->sweeping = 1;
    *out = g;
    return 0;
}

void at_guard_free(at_guard *g)
{
    if (!g) return;
    if (g->sweeping) {
        pthread_mutex_lock(&g->lock);
        g->stopping = 1;
        pthread_cond_signal(&g->wake);
        pthread_mutex_unlock(&g->lock);
        pthread_join(g->sweeper, NULL);
    }
    pthread_cond_destroy(&g->wake);
    pthread_mutex_destroy(&g->lock);
    free(g->slots);
    free(g->free_slots);
    free(g);
}
