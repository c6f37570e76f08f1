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
} at_server_options;

/* Runs the HTTP server until SIGINT or SIGTERM, with a thread per connection, at most
 * o->max_connections at once. When ready it logs "listening" with the bound port.
 * Returns 0 after a clean shutdown, or an AT_* code with a message in err. */
int at_server_run(at_app *app, const at_server_options *o, char *err, size_t errlen);

#endif
