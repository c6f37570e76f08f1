/* The HTTP server: libmicrohttpd with a thread per connection. Each request gets an arena and a body buffer on the first call of the access
 * handler; the answer is built on the last call (answering on the first call makes
 * libmicrohttpd 0.9.75 close the connection). */
#include <arpa/inet.h>
#include <errno.h>
#include <microhttpd.h>
#include <netdb.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "actionstools/server.h"
#include "actionstools/buf.h"
#include "actionstools/err.h"
#include "actionstools/log.h"
#include "actionstools/banned.h"

typedef struct conn_state {
    at_arena arena;
    at_buf body;
    int too_big;
} conn_state;

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
    l->v[l->n].name = key;
    l->v[l->n].value = value ? value : "";
    l->n++;
    return MHD_YES;
}

static void request_completed(void *cls, struct MHD_Connection *conn, void **con_cls,
                              enum MHD_RequestTerminationCode toe)
{
    conn_state *st = *con_cls;
    if (!st) return;
    at_arena_release(&st->arena);
    at_buf_release(&st->body);
    free(st);
    *con_cls = NULL;
}

static enum MHD_Result respond(at_app *app, struct MHD_Connection *conn, const char *url,
                               const char *method, conn_state *st)
{
    kv_list headers = {NULL, 0, 0, &st->arena}, query = {NULL, 0, 0, &st->arena};
    at_request req;
    at_response resp;
    struct MHD_Response *r;
    enum MHD_Result ok;

    MHD_get_connection_values(conn, MHD_HEADER_KIND, collect, &headers);
    MHD_get_connection_values(conn, MHD_GET_ARGUMENT_KIND, collect, &query);
    memset(&req, 0, sizeof req);
    req.arena = &st->arena;
    req.method = method;
    req.path = url;
    req.headers = headers.v;
    req.nheaders = headers.n;
    req.query = query.v;
    req.nquery = query.n;
    req.body = st->body.ptr;
    req.body_len = st->body.len;
    req.body_too_large = st->too_big;

    at_app_handle(app, &req, &resp);

    r = MHD_create_response_from_buffer(resp.body_len, resp.body, MHD_RESPMEM_MUST_FREE);
    if (!r) {
        at_response_release(&resp);
        return MHD_NO;
    }
    resp.body = NULL; /* now libmicrohttpd's */
    for (size_t i = 0; i < resp.nheaders; i++)
        MHD_add_response_header(r, resp.headers[i].name, resp.headers[i].value);
    ok = MHD_queue_response(conn, (unsigned)resp.status, r);
    MHD_destroy_response(r);
    return ok;
}

static enum MHD_Result access_handler(void *cls, struct MHD_Connection *conn, const char *url,
                                      const char *method, const char *version,
                                      const char *upload_data, size_t *upload_data_size,
                                      void **con_cls)
{
    conn_state *st = *con_cls;
    if (!st) {
        st = calloc(1, sizeof *st);
        if (!st) return MHD_NO;
        at_arena_init(&st->arena);
        at_buf_init(&st->body, AT_MAX_BODY);
        *con_cls = st;
        return MHD_YES;
    }
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
    return respond(cls, conn, url, method, st);
}

static void mhd_log(void *cls, const char *fmt, va_list ap)
{
    char msg[512];
    vsnprintf(msg, sizeof msg, fmt, ap);
    msg[strcspn(msg, "\n")] = '\0';
    at_log(AT_LOG_DEBUG, "libmicrohttpd: %s", msg);
}

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

int at_server_run(at_app *app, const at_server_options *o, char *err, size_t errlen)
{
    struct sockaddr_storage ss;
    socklen_t sslen;
    int ipv6 = 0, sig = 0, rc;
    struct MHD_Daemon *d;
    const union MHD_DaemonInfo *info;
    /* A thread per connection: a handler that waits (a DynamoDB call, a sqlite writer
     * waiting for the lock) never holds up another connection, as it would in a pool
     * of event loops. Throughput on 2 cores is the same (docs/architecture.md). */
    unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_THREAD_PER_CONNECTION |
                     MHD_USE_POLL | MHD_USE_ERROR_LOG;
    sigset_t set;

    rc = resolve(o, &ss, &sslen, &ipv6, err, errlen);
    if (rc) return rc;
    if (ipv6) flags |= MHD_USE_IPv6;

    /* Signals are taken synchronously by this thread; the pool threads inherit the mask. */
    sigemptyset(&set);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &set, NULL);
    signal(SIGPIPE, SIG_IGN);

    d = MHD_start_daemon(flags, (uint16_t)o->port, NULL, NULL, access_handler, app,
                         MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&ss,
                         MHD_OPTION_CONNECTION_LIMIT, (unsigned)o->max_connections,
                         MHD_OPTION_THREAD_STACK_SIZE, (size_t)(1024 * 1024),
                         MHD_OPTION_NOTIFY_COMPLETED, request_completed, NULL,
                         MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)60,
                         MHD_OPTION_LISTEN_BACKLOG_SIZE, (unsigned)1024,
                         MHD_OPTION_EXTERNAL_LOGGER, mhd_log, NULL, MHD_OPTION_END);
    if (!d) {
        snprintf(err, errlen, "cannot listen on %s:%d (%s): is another server using the port?",
                 o->host, o->port, strerror(errno));
        return AT_EIO;
    }
    info = MHD_get_daemon_info(d, MHD_DAEMON_INFO_BIND_PORT);
    {
        int port = info ? info->port : o->port;
        json_t *f = json_pack("{s:s, s:i, s:i}", "host", o->host, "port", port,
                              "max_connections", o->max_connections);
        at_log_json(AT_LOG_INFO, "listening", f);
        json_decref(f);
    }
    while (sigwait(&set, &sig) == 0) {
        if (sig == SIGINT || sig == SIGTERM) break;
    }
    at_log(AT_LOG_INFO, "shutting down (signal %d)", sig);
    MHD_stop_daemon(d);
    return 0;
}
