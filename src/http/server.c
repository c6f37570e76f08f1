/* The HTTP server: libmicrohttpd 0.9.75 in epoll mode, one daemon per polling thread
 * (about one per core) sharing one listening socket, each daemon run by our own loop
 * (loop.c), and a bounded pool of worker threads for requests that may block
 * (docs/http-server.md).
 *
 * A request's life, in libmicrohttpd's callbacks (all on the connection's polling
 * thread unless said otherwise):
 *   uri_log         the request line arrived: per-request state (arena, raw path);
 *                   the guard notes that a request began
 *   access_handler  1st call: headers complete: framing checks (400 and close)
 *                   next calls: body bytes (capped; past the cap read and dropped)
 *                   last call: the request arrived whole. Inline: handle and queue the
 *                   answer. May block: suspend the connection and hand the request to
 *                   a worker, which handles it and resumes the connection; the access
 *                   handler is then called once more and queues the answer.
 *   completed       the answer was sent (or the request failed): log a library
 *                   refusal, tell the guard, free the state
 * The connection guard (guard.c) sees connections open and close, cuts requests that
 * take longer than HTTP_REQUEST_TIMEOUT to arrive, and sheds connections at
 * HTTP_MAX_CONNECTIONS. */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <malloc.h>
#include <microhttpd.h>
#include <netdb.h>
#include <netinet/in.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include "actionstools/server.h"
#include "actionstools/buf.h"
#include "actionstools/err.h"
#include "actionstools/log.h"
#include "actionstools/timeutil.h"
#include "actionstools/uuid.h"
#include "framing.h"
#include "guard.h"
#include "loop.h"
#include "workers.h"
#include "actionstools/banned.h"

/* Per-connection memory of libmicrohttpd: the read buffer (so also the largest request
 * head: request line and headers), the parsed header and query records, and the
 * answer's header block. 12 KB holds a request head of about 11 KB (a bearer token of
 * a few KB fits with room to spare) and keeps 10,000 connections under 140 MB of RSS;
 * the figures per pool size are in docs/performance.md. */
#define CONN_POOL_BYTES (12 * 1024)
/* Query parameters a request may have. Each takes a record of the pool above, and
 * libmicrohttpd 0.9.75 fails to answer (it hangs the connection) when they exhaust it
 * while it parses the request line, so more are refused before it tries. No route
 * takes more than a handful. */
#define MAX_QUERY_PARAMS 64
/* Jobs that may wait in the worker queue before requests get 503. */
#define WORK_QUEUE 4096
/* Answers at least this big are allocated with mmap(2) by glibc and so returned to
 * the system as soon as they are sent (docs/http-server.md, "Memory"). */
#define BIG_ANSWER (1024 * 1024)
/* Memory given back by closed connections and big answers after which the heap is
 * trimmed (malloc_trim) on the next tick of the guard's sweeper. */
#define TRIM_AFTER (16 * 1024 * 1024)
/* File descriptors kept for everything but client connections (store, DynamoDB
 * connections, logs, the listening socket, epoll and signalling fds). */
#define FD_RESERVE 256
/* Clients that may wait in the kernel's listen queue. */
#define LISTEN_BACKLOG 4096
/* Polling threads at most. */
#define MAX_POLLERS 16

typedef struct server {
    at_app *app;
    at_guard *guard;
    at_workers *workers;
    atomic_size_t released; /* bytes freed since the last trim (closed pools, big answers) */
} server;

/* A polling thread: one daemon and the loop that runs it. The library's callbacks get
 * it as their closure. */
typedef struct poller {
    server *srv;
    struct MHD_Daemon *d;
    at_loop *loop;
} poller;

enum { P_HEADERS, P_BODY, P_QUEUED, P_READY, P_CLOSE, P_DONE };

/* One request, from its request line to its completion. */
typedef struct req_state {
    server *srv;
    poller *poller; /* the connection's polling thread */
    struct MHD_Connection *conn;
    at_guard_conn *gc;
    at_arena arena;
    at_buf body;
    int too_big;
    int phase; /* P_*: P_QUEUED while a worker owns the request; P_CLOSE: close unanswered */
    int64_t t0;
    const char *raw_path; /* as sent, without the query; in the arena */
    at_request req;
    at_response resp;
} req_state;

typedef struct kv_list {
    at_header *v;
    size_t n, cap;
    at_arena *arena;
} kv_list;

static enum MHD_Result collect(void *cls, enum MHD_ValueKind kind, const char *key,
                               const char *value)
{
    kv_list *l = cls;
    if (l->n == l->cap) {
        size_t cap = l->cap ? l->cap * 2 : 16;
        at_header *v = at_arena_alloc(l->arena, cap * sizeof *v);
        if (!v) return MHD_NO;
        if (l->n) memcpy(v, l->v, l->n * sizeof *v);
        l->v = v;
        l->cap = cap;
    }
    l->v[l->n].name = key ? key : "";
    l->v[l->n].value = value ? value : "";
    l->n++;
    return MHD_YES;
}

static at_guard_conn *guard_conn(struct MHD_Connection *conn)
{
    const union MHD_ConnectionInfo *ci =
        MHD_get_connection_info(conn, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
    return ci ? ci->socket_context : NULL;
}

/* ---- connections ---------------------------------------------------------------- */

static void notify_connection(void *cls, struct MHD_Connection *conn, void **socket_context,
                              enum MHD_ConnectionNotificationCode code)
{
    server *srv = ((poller *)cls)->srv;
    if (code == MHD_CONNECTION_NOTIFY_STARTED) {
        const union MHD_ConnectionInfo *ci =
            MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CONNECTION_FD);
        *socket_context = ci ? at_guard_open(srv->guard, ci->connect_fd) : NULL;
        /* No slot: the library holds more connections than it was told it may. */
        if (!*socket_context && ci) shutdown(ci->connect_fd, SHUT_RDWR);
    } else if (code == MHD_CONNECTION_NOTIFY_CLOSED) {
        at_guard_close(srv->guard, *socket_context);
        *socket_context = NULL;
        atomic_fetch_add(&srv->released, (size_t)CONN_POOL_BYTES);
    }
}

/* ---- requests ------------------------------------------------------------------- */

/* Returns the number of query parameters in a raw request target. */
static size_t count_params(const char *uri)
{
    const char *q = strchr(uri, '?');
    size_t n = 0;
    if (!q || !q[1]) return 0;
    for (n = 1; *q; q++) n += *q == '&';
    return n;
}

static void *uri_log(void *cls, const char *uri, struct MHD_Connection *conn)
{
    poller *p = cls;
    server *srv = p->srv;
    req_state *st = calloc(1, sizeof *st);
    at_guard_conn *gc = guard_conn(conn);
    size_t n = uri ? strcspn(uri, "?") : 0;
    char msg[128];

    if (st) {
        st->srv = srv;
        st->poller = p;
        st->conn = conn;
        st->gc = gc;
        st->t0 = at_monotonic_us();
        at_arena_init(&st->arena);
        at_buf_init(&st->body, AT_MAX_BODY);
        st->raw_path = at_arena_strndup(&st->arena, uri ? uri : "", n);
    }
    at_guard_request_begins(srv->guard, gc, st ? st->raw_path : NULL);
    if (uri && count_params(uri) > MAX_QUERY_PARAMS) {
        /* Answered here, on the socket, before the library parses the parameters. */
        snprintf(msg, sizeof msg, "the query has %zu parameters; at most %d are accepted",
                 count_params(uri), MAX_QUERY_PARAMS);
        at_guard_refuse(srv->guard, gc, 414, msg);
        if (st) st->phase = P_CLOSE;
    }
    return st;
}

/* Queues st->resp as the answer (its body passes to the library). */
static enum MHD_Result send_answer(req_state *st, int close_after)
{
    at_response *resp = &st->resp;
    struct MHD_Response *r;
    enum MHD_Result ok;

    st->phase = P_DONE;
    if (resp->body_len >= BIG_ANSWER) atomic_fetch_add(&st->srv->released, resp->body_len);
    r = MHD_create_response_from_buffer(resp->body_len, resp->body, MHD_RESPMEM_MUST_FREE);
    if (!r) {
        at_response_release(resp);
        return MHD_NO;
    }
    resp->body = NULL; /* now the library's */
    for (size_t i = 0; i < resp->nheaders; i++)
        MHD_add_response_header(r, resp->headers[i].name, resp->headers[i].value);
    if (close_after) MHD_add_response_header(r, MHD_HTTP_HEADER_CONNECTION, "close");
    ok = MHD_queue_response(st->conn, (unsigned)resp->status, r);
    MHD_destroy_response(r);
    return ok;
}

/* Resumes st's suspended connection; its polling thread then calls the access handler
 * again. From any thread: st may be freed by the time this returns. */
static void resume(req_state *st)
{
    at_loop *loop = st->poller->loop;
    /* The library's mutex orders the caller's writes to st before the polling thread's
     * reads. In external mode the library does not wake the thread itself. */
    MHD_resume_connection(st->conn);
    at_loop_wake(loop);
}

/* Runs on a worker thread while the connection is suspended. */
static void work(void *arg)
{
    req_state *st = arg;
    at_app_handle(st->srv->app, &st->req, &st->resp);
    st->phase = P_READY;
    resume(st);
}

static enum MHD_Result headers_arrived(req_state *st, const char *method)
{
    kv_list headers = {NULL, 0, 0, &st->arena};
    const char *why;
    int status;

    memset(&st->req, 0, sizeof st->req);
    st->req.arena = &st->arena;
    st->req.method = at_arena_strdup(&st->arena, method);
    st->req.path = st->raw_path;
    MHD_get_connection_values(st->conn, MHD_HEADER_KIND, collect, &headers);
    st->req.headers = headers.v;
    st->req.nheaders = headers.n;
    if (!st->req.method || !st->req.path) return MHD_NO;
    status = at_framing_check(headers.v, headers.n, &why);
    if (status) {
        /* Answered before the body is read, and the connection closes after it: no
         * byte after these headers is taken as another request. */
        at_app_refuse(st->srv->app, &st->req, status, why, &st->resp);
        return send_answer(st, 1);
    }
    st->phase = P_BODY;
    return MHD_YES;
}

static enum MHD_Result request_arrived(req_state *st)
{
    server *srv = st->srv;
    kv_list query = {NULL, 0, 0, &st->arena};
    int rc;

    if (at_guard_request_arrived(srv->guard, st->gc)) return MHD_NO; /* cut or shed */
    MHD_get_connection_values(st->conn, MHD_GET_ARGUMENT_KIND, collect, &query);
    st->req.query = query.v;
    st->req.nquery = query.n;
    st->req.body = st->body.ptr;
    st->req.body_len = st->body.len;
    st->req.body_too_large = st->too_big;
    if (!at_app_may_block(srv->app, st->req.method)) {
        at_app_handle(srv->app, &st->req, &st->resp);
        return send_answer(st, 0);
    }
    st->phase = P_QUEUED;
    MHD_suspend_connection(st->conn);
    rc = at_workers_submit(srv->workers, work, st);
    if (rc == AT_ETOOBIG) {
        at_app_refuse(srv->app, &st->req, 503,
                      "the server has more requests waiting than it takes; retry shortly",
                      &st->resp);
        st->phase = P_READY;
    } else if (rc) {
        /* Shutting down: the request is not run and the connection closes unanswered,
         * as when the process stops before reading it (no answer, no write). */
        st->phase = P_CLOSE;
    }
    if (rc) resume(st);
    return MHD_YES;
}

static enum MHD_Result access_handler(void *cls, struct MHD_Connection *conn, const char *url,
                                      const char *method, const char *version,
                                      const char *upload_data, size_t *upload_data_size,
                                      void **con_cls)
{
    req_state *st = *con_cls;
    (void)cls;
    (void)url; /* decoded by the library; we route on the raw path (uri_log) */
    if (!st) return MHD_NO; /* uri_log could not allocate it */
    switch (st->phase) {
    case P_CLOSE:
        return MHD_NO;
    case P_HEADERS:
        return headers_arrived(st, method);
    case P_BODY:
        if (*upload_data_size) {
            /* Past the cap the rest is read and dropped, so the connection stays usable
             * and the client gets its 413. */
            if (!st->too_big && at_buf_add(&st->body, upload_data, *upload_data_size) != 0) {
                st->too_big = 1;
                at_buf_release(&st->body);
            }
            *upload_data_size = 0;
            return MHD_YES;
        }
        return request_arrived(st);
    case P_READY:
        return send_answer(st, 0);
    default:
        return MHD_YES;
    }
}

/* A request the library answered itself (431, 414, malformed headers or chunks...)
 * still gets its log line, with the status the library sent. */
static void log_library_answer(const req_state *st, unsigned status)
{
    char rid[AT_UUID_LEN + 1];
    json_t *f;
    if (!at_log_enabled(AT_LOG_INFO)) return;
    at_uuid_new(rid);
    f = json_pack("{s:s, s:s?, s:s?, s:i, s:f, s:n, s:s}", "request_id", rid, "method",
                  st->req.method, "path", st->raw_path, "status", (int)status, "duration_ms",
                  (double)(at_monotonic_us() - st->t0) / 1000.0, "user", "answered_by",
                  "libmicrohttpd");
    if (!f) /* a path the log cannot hold as it is */
        f = json_pack("{s:s, s:i, s:s}", "request_id", rid, "status", (int)status, "answered_by",
                      "libmicrohttpd");
    at_log_json(AT_LOG_INFO, "request", f);
    json_decref(f);
}

static void request_completed(void *cls, struct MHD_Connection *conn, void **con_cls,
                              enum MHD_RequestTerminationCode toe)
{
    server *srv = ((poller *)cls)->srv;
    req_state *st = *con_cls;
    (void)toe;
    if (st) {
        if (st->phase != P_DONE) {
            const union MHD_ConnectionInfo *ci =
                MHD_get_connection_info(conn, MHD_CONNECTION_INFO_HTTP_STATUS);
            if (ci && ci->http_status) log_library_answer(st, ci->http_status);
        }
        at_response_release(&st->resp);
        at_arena_release(&st->arena);
        at_buf_release(&st->body);
        free(st);
        *con_cls = NULL;
    }
    at_guard_request_done(srv->guard, guard_conn(conn));
}

/* ---- answers written by the guard -------------------------------------------------- */

static size_t guard_answer(void *cls, int status, const char *message, const char *path,
                           char *out, size_t cap)
{
    server *srv = cls;
    at_arena a;
    at_request req;
    at_response resp;
    at_buf b;
    const char *reason = MHD_get_reason_phrase_for((unsigned)status);
    size_t n = 0;

    at_arena_init(&a);
    memset(&req, 0, sizeof req);
    req.arena = &a;
    req.path = path;
    at_app_refuse(srv->app, &req, status, message, &resp);
    at_buf_init(&b, cap);
    at_buf_printf(&b, "HTTP/1.1 %d %s\r\n", status, reason && *reason ? reason : "Error");
    for (size_t i = 0; i < resp.nheaders; i++)
        at_buf_printf(&b, "%s: %s\r\n", resp.headers[i].name, resp.headers[i].value);
    at_buf_printf(&b, "Content-Length: %zu\r\nConnection: close\r\n\r\n", resp.body_len);
    if (at_buf_add(&b, resp.body ? resp.body : "", resp.body_len) == 0) {
        n = b.len;
        memcpy(out, b.ptr, n);
    }
    at_buf_release(&b);
    at_response_release(&resp);
    at_arena_release(&a);
    return n;
}

/* ---- memory ------------------------------------------------------------------------ */

/* glibc raises its mmap threshold up to 32 MB after big blocks are freed, after which
 * big answers come from the heap and stay there once freed; a fixed threshold keeps
 * them in mmap'd memory, returned on free. The rest (many small blocks freed when
 * connections close) is returned by malloc_trim once enough was freed. Measured
 * against jemalloc and mimalloc in docs/http-server.md. */
static void memory_policy(void)
{
    mallopt(M_MMAP_THRESHOLD, BIG_ANSWER);
}

static void tick(void *cls)
{
    server *srv = cls;
    if (atomic_load(&srv->released) < TRIM_AFTER) return;
    atomic_store(&srv->released, 0);
    malloc_trim(0);
}

/* ---- the library's own messages ------------------------------------------------------ */

static void mhd_log(void *cls, const char *fmt, va_list ap)
{
    static const char refusal[] = "Error processing request (HTTP response code is";
    char msg[512];
    if (strncmp(fmt, refusal, sizeof refusal - 1) == 0) {
        /* The library answers a request itself: its own HTML, no X-Request-Id. Said
         * here, because a refusal before the request line is complete (414) reaches no
         * other callback. */
        unsigned status = va_arg(ap, unsigned);
        json_t *f = json_pack("{s:i}", "status", (int)status);
        at_log_json(AT_LOG_INFO, "libmicrohttpd refused a request", f);
        json_decref(f);
        return;
    }
    vsnprintf(msg, sizeof msg, fmt, ap);
    msg[strcspn(msg, "\n")] = '\0';
    at_log(AT_LOG_DEBUG, "libmicrohttpd: %s", msg);
}

/* ---- start-up -------------------------------------------------------------------------- */

static int resolve(const at_server_options *o, struct sockaddr_storage *ss, socklen_t *len, int *ipv6,
                   char *err, size_t errlen)
{
    struct addrinfo hints, *res = NULL;
    char port[8];
    int rc;
    memset(&hints, 0, sizeof hints);
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_PASSIVE;
    snprintf(port, sizeof port, "%d", o->port);
    rc = getaddrinfo(o->host, port, &hints, &res);
    if (rc || !res) {
        snprintf(err, errlen, "LISTEN: cannot resolve host '%s': %s", o->host,
                 gai_strerror(rc));
        return AT_EINVAL;
    }
    memcpy(ss, res->ai_addr, res->ai_addrlen);
    *len = res->ai_addrlen;
    *ipv6 = res->ai_family == AF_INET6;
    freeaddrinfo(res);
    return 0;
}

/* Raises the soft RLIMIT_NOFILE towards the hard one so that want descriptors fit.
 * Returns the soft limit in force afterwards. */
static rlim_t raise_fd_limit(rlim_t want)
{
    struct rlimit rl;
    rlim_t before;
    json_t *f;
    if (getrlimit(RLIMIT_NOFILE, &rl) != 0) return 1024;
    before = rl.rlim_cur;
    if (rl.rlim_cur < want) {
        rl.rlim_cur = rl.rlim_max == RLIM_INFINITY || rl.rlim_max > want ? want : rl.rlim_max;
        if (setrlimit(RLIMIT_NOFILE, &rl) != 0) getrlimit(RLIMIT_NOFILE, &rl);
    }
    f = json_pack("{s:I, s:I, s:I, s:I}", "soft_before", (json_int_t)before, "soft",
                  (json_int_t)rl.rlim_cur, "hard", (json_int_t)rl.rlim_max, "wanted",
                  (json_int_t)want);
    at_log_json(rl.rlim_cur < want ? AT_LOG_WARN : AT_LOG_INFO, "file descriptor limit", f);
    json_decref(f);
    return rl.rlim_cur;
}

/* Returns the number of polling threads: one per CPU this process may run on (its
 * affinity mask, so `taskset` or a cpuset limits it too), between 1 and 16. */
static unsigned polling_threads(void)
{
    cpu_set_t set;
    long n = 0;
    if (sched_getaffinity(0, sizeof set, &set) == 0) n = CPU_COUNT(&set);
    if (n < 1) n = sysconf(_SC_NPROCESSORS_ONLN);
    if (n < 1) n = 1;
    if (n > MAX_POLLERS) n = MAX_POLLERS;
    return (unsigned)n;
}

/* Opens the listening socket, non-blocking: every polling thread's daemon waits on it
 * and all but one find nothing to accept. Returns the fd, or -1 with errno set. */
static int listen_on(const struct sockaddr_storage *ss, socklen_t len, int ipv6)
{
    int one = 1, saved;
    int fd = socket(ss->ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) return -1;
    /* What the library sets on the sockets it opens: a restart binds at once despite
     * connections in TIME_WAIT; an IPv6 address takes IPv6 only. */
    if (setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) != 0 ||
        (ipv6 && setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof one) != 0) ||
        bind(fd, (const struct sockaddr *)ss, len) != 0 || listen(fd, LISTEN_BACKLOG) != 0) {
        saved = errno;
        close(fd);
        errno = saved;
        return -1;
    }
    return fd;
}

/* Starts p's daemon in external epoll mode on a duplicate of the listening socket lfd
 * (the daemon closes its duplicate when stopped), holding at most limit connections,
 * and the polling thread that runs it. Returns 0, or AT_EIO with errno set. */
static int start_poller(poller *p, int lfd, unsigned flags, unsigned limit,
                        const at_server_options *o)
{
    int fd = fcntl(lfd, F_DUPFD_CLOEXEC, 0);
    if (fd < 0) return AT_EIO;
    /* The logger first: the library warns that messages about earlier options would
     * go to its default logger otherwise. */
    p->d = MHD_start_daemon(flags, 0, NULL, NULL, access_handler, p,
                            MHD_OPTION_EXTERNAL_LOGGER, mhd_log, NULL,
                            MHD_OPTION_LISTEN_SOCKET, fd,
                            MHD_OPTION_CONNECTION_LIMIT, limit,
                            MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)CONN_POOL_BYTES,
                            MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)o->idle_timeout,
                            MHD_OPTION_NOTIFY_CONNECTION, notify_connection, p,
                            MHD_OPTION_URI_LOG_CALLBACK, uri_log, p,
                            MHD_OPTION_NOTIFY_COMPLETED, request_completed, p, MHD_OPTION_END);
    /* On failure the library may or may not have closed fd: it is left alone rather
     * than risk closing a number reused since (serve exits). */
    if (!p->d) return AT_EIO;
    return at_loop_new(p->d, &p->loop) ? AT_EIO : 0;
}

int at_server_run(at_app *app, const at_server_options *o, char *err, size_t errlen)
{
    struct sockaddr_storage ss;
    socklen_t sslen;
    int ipv6 = 0, sig = 0, rc, lfd = -1;
    const union MHD_DaemonInfo *info;
    /* Not MHD_USE_EPOLL_INTERNAL_THREAD: the library's own polling loop can leave
     * requests unread (loop.c says how); ours runs each daemon. */
    unsigned flags = MHD_USE_EPOLL | MHD_ALLOW_SUSPEND_RESUME | MHD_USE_ERROR_LOG;
    unsigned threads = polling_threads(), slots, npollers = 0;
    int max = o->max_connections;
    rlim_t fds;
    server srv;
    poller pollers[MAX_POLLERS];
    at_guard_options go;
    sigset_t set;

    memset(&srv, 0, sizeof srv);
    memset(pollers, 0, sizeof pollers);
    rc = resolve(o, &ss, &sslen, &ipv6, err, errlen);
    if (rc) return rc;
    if (ipv6) flags |= MHD_USE_IPv6;

    /* The library may hold a few more connections than HTTP_MAX_CONNECTIONS: those
     * the guard has shed and that are not closed yet, and the unevenness of the
     * polling threads' shares of the limit. */
    fds = raise_fd_limit((rlim_t)max + (rlim_t)max / 8 + 64 + FD_RESERVE + (rlim_t)o->workers);
    if (fds < (rlim_t)max + (rlim_t)max / 8 + 64 + FD_RESERVE + (rlim_t)o->workers) {
        rlim_t room = fds > FD_RESERVE + (rlim_t)o->workers + 64 + 16
                          ? fds - FD_RESERVE - (rlim_t)o->workers - 64 : 16;
        int fit = (int)(room * 8 / 9);
        if (fit < max) {
            json_t *f = json_pack("{s:i, s:i}", "configured", max, "effective", fit);
            at_log_json(AT_LOG_WARN, "HTTP_MAX_CONNECTIONS lowered to fit the file descriptor "
                                     "limit (raise ulimit -n)", f);
            json_decref(f);
            max = fit;
        }
    }
    slots = (unsigned)max + (unsigned)max / 8 + 64;

    /* Signals are taken synchronously by this thread; every thread started from here
     * inherits the mask. */
    sigemptyset(&set);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &set, NULL);
    signal(SIGPIPE, SIG_IGN);

    srv.app = app;
    memset(&go, 0, sizeof go);
    go.max_connections = max;
    go.request_timeout_ms = o->request_timeout * 1000;
    go.slots = (int)slots;
    go.answer = guard_answer;
    go.answer_cls = &srv;
    go.tick = tick;
    memory_policy();
    rc = at_guard_new(&go, &srv.guard);
    if (!rc) rc = at_workers_new((size_t)(o->workers > 0 ? o->workers : 32), WORK_QUEUE, &srv.workers);
    if (rc) {
        snprintf(err, errlen, "cannot start the server's threads: %s", at_strerror(rc));
        goto out;
    }

    lfd = listen_on(&ss, sslen, ipv6);
    if (lfd < 0) {
        snprintf(err, errlen, "cannot listen on %s:%d (%s): is another server using the port?",
                 o->host, o->port, strerror(errno));
        rc = AT_EIO;
        goto out;
    }
    /* Each polling thread takes its share of the connection limit, as the library's
     * thread pool did. */
    for (; npollers < threads; npollers++) {
        pollers[npollers].srv = &srv;
        rc = start_poller(&pollers[npollers], lfd, flags,
                          slots / threads + (npollers < slots % threads), o);
        if (rc) {
            snprintf(err, errlen, "cannot start polling thread %u of %u (%s)", npollers + 1,
                     threads, strerror(errno));
            npollers++; /* its daemon, if any, is stopped below */
            goto out;
        }
    }
    info = MHD_get_daemon_info(pollers[0].d, MHD_DAEMON_INFO_BIND_PORT);
    {
        int port = info ? info->port : o->port;
        json_t *f = json_pack("{s:s, s:i, s:i, s:i, s:i, s:i, s:i}", "host", o->host, "port", port,
                              "max_connections", max, "polling_threads", (int)threads,
                              "workers", o->workers > 0 ? o->workers : 32, "request_timeout_s",
                              o->request_timeout, "idle_timeout_s", o->idle_timeout);
        at_log_json(AT_LOG_INFO, "listening", f);
        json_decref(f);
    }
    while (sigwait(&set, &sig) == 0) {
        if (sig == SIGINT || sig == SIGTERM) break;
    }
    at_log(AT_LOG_INFO, "shutting down (signal %d)", sig);
out:
    /* Workers first: each finishes its request and resumes its connection, which its
     * polling thread answers (a request that arrives meanwhile is closed unanswered),
     * so none is left suspended when the library stops, which it does not allow. Then
     * the polling threads, then their daemons. The guard last: the library's CLOSED
     * notifications reach it until the daemons are stopped. */
    at_workers_stop(srv.workers);
    for (unsigned i = 0; i < npollers; i++) at_loop_free(pollers[i].loop);
    for (unsigned i = 0; i < npollers; i++)
        if (pollers[i].d) MHD_stop_daemon(pollers[i].d);
    if (lfd >= 0) close(lfd);
    at_workers_free(srv.workers);
    at_guard_free(srv.guard);
    return rc;
}
