/* The ceiling of our HTTP library on this machine, measured by `make bench` beside
 * actionstools: libmicrohttpd in epoll mode with a pool of two polling threads, answering
 * every request with one persistent ~200-byte JSON answer (no routing, no logging, no
 * allocation per request). It is what /MEASUREMENTS.md calls the hello server.
 *
 *   hello [PORT]    listens on 127.0.0.1:PORT (0, the default, picks a free port),
 *                   prints "port N" on stdout once it listens, and stops on SIGINT or
 *                   SIGTERM, or when the process that started it exits. */
#include <errno.h>
#include <limits.h>
#include <microhttpd.h>
#include <pthread.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>

#include "actionstools/banned.h"

/* About the size of a note of the service: 200 bytes. */
static const char ANSWER[] =
    "{\"uuid\":\"6f1c2d1e-8a7b-4c3d-9e0f-1a2b3c4d5e6f\",\"target_uuid\":\"bench-target\","
    "\"instance_id\":\"bench\",\"created_at\":\"2026-12-01 07:49:55.304065\","
    "\"data\":{\"text\":\"hello\",\"n\":1},\"is_pinned\":false,\"version\":1}";

static int marker; /* *con_cls of a request whose first call has been seen */

/* Answers on the second call: libmicrohttpd 0.9.75 closes the connection when a
 * response is queued on the first one (as src/http/server.c does too). */
static enum MHD_Result answer(void *cls, struct MHD_Connection *conn, const char *url,
                              const char *method, const char *version, const char *upload_data,
                              size_t *upload_data_size, void **con_cls)
{
    if (*con_cls != &marker) {
        *con_cls = &marker;
        return MHD_YES;
    }
    if (*upload_data_size) {
        *upload_data_size = 0; /* a body is read and dropped */
        return MHD_YES;
    }
    return MHD_queue_response(conn, MHD_HTTP_OK, cls);
}

int main(int argc, char **argv)
{
    struct MHD_Daemon *d = NULL;
    struct MHD_Response *r = NULL;
    const union MHD_DaemonInfo *info;
    struct sockaddr_in sa;
    sigset_t set;
    long port = 0;
    char *end = NULL;
    int sig = 0, rc = 1;

    if (argc > 2 || (argc == 2 && (port = strtol(argv[1], &end, 10), *end || port < 0 || port > 65535))) {
        fprintf(stderr, "usage: hello [PORT]   (a port number, 0 for a free one)\n");
        return 2;
    }
    /* Stop with the script that started it, even when that one is killed. */
    prctl(PR_SET_PDEATHSIG, SIGTERM);
    sigemptyset(&set);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &set, NULL);
    signal(SIGPIPE, SIG_IGN);

    memset(&sa, 0, sizeof sa);
    sa.sin_family = AF_INET;
    sa.sin_port = htons((uint16_t)port);
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);

    r = MHD_create_response_from_buffer(sizeof ANSWER - 1, (void *)ANSWER, MHD_RESPMEM_PERSISTENT);
    if (!r || MHD_add_response_header(r, "Content-Type", "application/json") != MHD_YES) {
        fprintf(stderr, "hello: cannot make the answer\n");
        goto out;
    }
    d = MHD_start_daemon(MHD_USE_EPOLL_INTERNAL_THREAD | MHD_USE_ERROR_LOG, (uint16_t)port, NULL,
                         NULL, answer, r, MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&sa,
                         MHD_OPTION_THREAD_POOL_SIZE, (unsigned)2,
                         MHD_OPTION_CONNECTION_LIMIT, (unsigned)20000,
                         MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)60, MHD_OPTION_END);
    if (!d) {
        fprintf(stderr, "hello: cannot listen on 127.0.0.1:%ld: %s\n", port, strerror(errno));
        goto out;
    }
    info = MHD_get_daemon_info(d, MHD_DAEMON_INFO_BIND_PORT);
    printf("port %u\n", info ? (unsigned)info->port : (unsigned)port);
    fflush(stdout);
    sigwait(&set, &sig);
    rc = 0;
out:
    if (d) MHD_stop_daemon(d);
    if (r) MHD_destroy_response(r);
    return rc;
}
