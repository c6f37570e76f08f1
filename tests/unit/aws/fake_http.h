/* A scripted HTTP/1.1 server for client tests, run in a thread of the test: it answers
 * requests in order from a script (the last reply repeats), keeps connections alive,
 * and can hang, close after answering, or drop a connection. It records the last
 * request and counts requests and connections. Test support, linked into every unit
 * test binary. */
#ifndef AT_TEST_FAKE_HTTP_H
#define AT_TEST_FAKE_HTTP_H

#include <pthread.h>
#include <stddef.h>

/* FAKE_ANSWER: reply and keep the connection; FAKE_HANG: never reply; FAKE_CLOSE_AFTER:
 * reply, then close; FAKE_DROP: close without replying (a kept-alive connection that
 * died). */
typedef enum { FAKE_ANSWER = 0, FAKE_HANG, FAKE_CLOSE_AFTER, FAKE_DROP } fake_http_mode;

typedef struct fake_http_reply {
    fake_http_mode mode;
    int status;
    const char *body; /* NULL: "{}" */
} fake_http_reply;

typedef struct fake_http_server {
    int lfd, port, stop_pipe[2];
    pthread_t th;
    const fake_http_reply *script; /* replies in order; the last repeats */
    size_t nscript;
    int requests, connections; /* read under lock while the server runs */
    char last_request[8192];   /* head and body of the last request */
    pthread_mutex_t lock;
} fake_http_server;

/* Starts f on a free loopback port (f->port) answering with the n replies of script
 * (borrowed; must outlive the server). Fails the test when it cannot. */
void fake_http_start(fake_http_server *f, const fake_http_reply *script, size_t n);

/* Stops the server and frees what it holds. */
void fake_http_stop(fake_http_server *f);

#endif
