/* The connection guard (src/http/guard.c): what libmicrohttpd 0.9.75 does not do for
 * us. It knows every open connection and where it is in its request cycle, and
 *  - cuts a request that has not arrived whole HTTP_REQUEST_TIMEOUT after it began
 *    (408, then the socket is shut down so the library closes it), including one whose
 *    headers trickle in and so never reaches the access handler;
 *  - holds open connections at HTTP_MAX_CONNECTIONS: a new client over the limit
 *    sheds the oldest idle connection, else the slowest unfinished request, and is
 *    refused (503) only when every connection is busy with a request.
 * The server calls it from libmicrohttpd's callbacks; a sweeper thread does the rest.
 * docs/http-server.md explains the design. */
#ifndef AT_GUARD_H
#define AT_GUARD_H

#include <stddef.h>

typedef struct at_guard at_guard;
typedef struct at_guard_conn at_guard_conn;

/* Writes into buf (cap bytes) a complete HTTP/1.1 answer with the given status and
 * message that closes the connection, and logs it like any request (path is the raw
 * path when the request line had arrived, else NULL). Returns its length, 0 when it
 * does not fit. Called without the guard's lock held, from any thread. */
typedef size_t (*at_guard_answer_fn)(void *cls, int status, const char *message, const char *path,
                                     char *buf, size_t cap);

typedef struct at_guard_options {
    int max_connections;    /* HTTP_MAX_CONNECTIONS */
    int request_timeout_ms; /* HTTP_REQUEST_TIMEOUT */
    int slots;              /* connections the library may hold at once (>= max_connections) */
    at_guard_answer_fn answer;
    void *answer_cls;
    void (*tick)(void *cls); /* called with answer_cls after each sweep, or NULL */
} at_guard_options;

/* Creates the guard and starts its sweeper thread. Returns 0, AT_ENOMEM or AT_EIO. */
int at_guard_new(const at_guard_options *o, at_guard **out /* OUT */);

/* Stops the sweeper and frees the guard. Call it after the library closed every
 * connection. Accepts NULL. */
void at_guard_free(at_guard *g);

/* A connection was accepted on fd. Returns its record (to keep in the library's
 * socket context), or NULL when there is no slot (the connection is then refused).
 * Over the limit it sheds another connection, or refuses this one with a 503. */
at_guard_conn *at_guard_open(at_guard *g, int fd);

/* The library is about to close the connection's fd. Frees the record. */
void at_guard_close(at_guard *g, at_guard_conn *c);

/* A request line arrived (raw_path: the path as sent, may be NULL); the request
 * began (if the sweeper did not see its first bytes earlier). */
void at_guard_request_begins(at_guard *g, at_guard_conn *c, const char *raw_path);

/* The request arrived whole and is about to be handled. Returns 0, or -1 when the
 * guard already cut or shed the connection: then the request must not run. */
int at_guard_request_arrived(at_guard *g, at_guard_conn *c);

/* Answers the connection's request at once with status and message (written on the
 * socket, past the library) and shuts the connection down. For a request the library
 * would fail to answer. Nothing may have been sent on the connection for this
 * request yet. */
void at_guard_refuse(at_guard *g, at_guard_conn *c, int status, const char *message);

/* The answer was sent (or the request ended otherwise); the connection is idle. */
void at_guard_request_done(at_guard *g, at_guard_conn *c);

/* Counters for the log and for tests. */
typedef struct at_guard_stats {
    size_t open;          /* connections held now (not counting those being closed) */
    size_t cut;           /* requests cut at the request timeout, ever */
    size_t shed_idle;     /* idle connections shed at the limit, ever */
    size_t shed_unfinished; /* unfinished requests shed at the limit, ever */
    size_t refused;       /* new connections refused at the limit, ever */
} at_guard_stats;

/* Fills st with the guard's counters. */
void at_guard_get_stats(at_guard *g, at_guard_stats *st /* OUT */);

#endif
