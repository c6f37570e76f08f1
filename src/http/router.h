/* Matching a method and path against the route table. */
#ifndef AT_ROUTER_H
#define AT_ROUTER_H

#include "actionstools/arena.h"
#include "actionstools/buf.h"
#include "actionstools/handler.h"

typedef struct at_router at_router;

/* Compiles the route table (ended by a row with method NULL). Returns 0, AT_ENOMEM, or
 * AT_EINVAL for a malformed pattern (a programmer error, reported at start-up). */
int at_router_new(const at_route *routes, at_router **out /* OUT */);

/* Frees the router. Accepts NULL. */
void at_router_free(at_router *r);

/* The outcome of a match. */
typedef struct at_match {
    const at_route *route; /* the route for this method and path, or NULL */
    int path_known;        /* some route has this path (with another method: 405) */
    const char *names[AT_MAX_PARAMS];
    const char *values[AT_MAX_PARAMS]; /* percent-decoded once, in the arena */
    size_t nparams;
    /* The first parameter whose segment names nothing (a malformed escape, or a NUL or
     * invalid UTF-8 once decoded; its value is ""), or NULL. Such a request is 404. */
    const char *invalid_param;
} at_match;

/* Matches method and path: the raw path as sent (percent-encoded, without the query),
 * BASE_PREFIX already removed. It is split on '/' before each segment is decoded, so
 * "%2F" stays inside its segment. HEAD matches GET routes.
 * When allow is not NULL, it receives the comma-separated methods the path accepts
 * ("GET, PATCH, DELETE"). Returns 0, or AT_ENOMEM. */
int at_router_match(const at_router *r, const char *method, const char *path, at_arena *a,
                    at_match *m /* OUT */, at_buf *allow);

#endif
