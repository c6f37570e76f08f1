/* The request pipeline as a whole (src/http/app.c): what the HTTP server and the
 * Lambda adapter call with each request. Only main.c creates one. */
#ifndef AT_APP_H
#define AT_APP_H

#include <stddef.h>

#include "actionstools/config.h"
#include "actionstools/http.h"
#include "actionstools/store.h"

typedef struct at_app at_app;

/* Creates the request pipeline over an open store: routes, token verifier, cursor key,
 * CORS rules. cfg and store are borrowed and must outlive the app. Returns 0, or an
 * AT_* code with a message for the operator in err. */
int at_app_new(const at_config *cfg, at_store *store, at_app **out /* OUT */, char *err,
               size_t errlen);

/* Frees the app (not the store or config). Accepts NULL. */
void at_app_free(at_app *app);

/* Handles one request from start to end: request id, CORS, routing (404/405), identity
 * (401), body checks (413/415), the route's handler, response headers, and the JSON log
 * line. resp is filled in (caller's memory, zeroed); release it with at_response_release.
 * Never fails: every problem becomes an HTTP status. */
void at_app_handle(at_app *app, const at_request *req, at_response *resp /* OUT */);

/* Answers a request the server refuses before it is routed (ambiguous framing, a
 * request that did not arrive in time, a full work queue, the connection limit):
 * status with {"message": message}, X-Request-Id (the caller's when it sent one), the
 * CORS headers, Retry-After: 1 on a 503, and the request's log line. req may have no
 * headers, and NULL for method or path when they never arrived. resp as in
 * at_app_handle. Never fails. */
void at_app_refuse(at_app *app, const at_request *req, int status, const char *message,
                   at_response *resp /* OUT */);

/* Returns 1 when handling a request with this method may wait (on the network, or on
 * the store's writer) and must run off the server's polling threads: every request on
 * the dynamodb backend but a CORS preflight, and writes on sqlite (a writer waits for
 * its commit). Returns 0 for reads on sqlite and for OPTIONS, which run inline
 * (docs/http-server.md). */
int at_app_may_block(const at_app *app, const char *method);

#endif
