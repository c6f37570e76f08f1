/* The HTTP server (src/http/server.c): libmicrohttpd in front of an at_app. */
#ifndef AT_SERVER_H
#define AT_SERVER_H

#include <stddef.h>

#include "actionstools/app.h"

/* What the server needs of the configuration (SPEC §2: LISTEN, HTTP_*). */
typedef struct at_server_options {
    const char *host; /* address to listen on */
    int port;         /* 0 asks the system for a free port */
    int max_connections; /* HTTP_MAX_CONNECTIONS */
    int request_timeout; /* HTTP_REQUEST_TIMEOUT, seconds */
    int idle_timeout;    /* HTTP_IDLE_TIMEOUT, seconds */
    int workers;         /* threads for requests that may block (at_app_may_block) */
} at_server_options;

/* Runs the HTTP server until SIGINT or SIGTERM: libmicrohttpd in epoll mode with about
 * one polling thread per core, o->workers threads for requests that may block, at
 * most o->max_connections connections (fewer when the file descriptor limit cannot be
 * raised enough: it logs so), requests cut at o->request_timeout (docs/http-server.md).
 * When ready it logs "listening" with the bound port. Returns 0 after a clean
 * shutdown, or an AT_* code with a message in err. */
int at_server_run(at_app *app, const at_server_options *o, char *err, size_t errlen);

#endif
