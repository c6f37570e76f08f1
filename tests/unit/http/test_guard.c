/* Unit tests of src/http/guard.c over real loopback TCP connections: shedding at the
 * limit (oldest idle, then slowest unfinished, else refuse the newcomer), the request
 * timeout (a begun request is cut with an answer; bytes that trickle in before a
 * request line are seen through TCP_INFO), and a cut request never runs. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "http/guard.h"
#include "actionstools/banned.h"

#define TIMEOUT_MS 300

typedef struct pair {
    int client, server;
    at_guard_conn *c;
} pair;

static int listener;
static struct sockaddr_in addr;

static size_t answer(void *cls, int status, const char *message, const char *path, char *buf,
                     size_t cap)
{
    (void)cls;
    return (size_t)snprintf(buf, cap, "HTTP/1.1 %d X\r\n\r\n%s|%s", status, message,
                            path ? path : "-");
}

static int setup(void **state)
{
    socklen_t len = sizeof addr;
    (void)state;
    listener = socket(AF_INET, SOCK_STREAM, 0);
    memset(&addr, 0, sizeof addr);
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    assert_int_equal(bind(listener, (struct sockaddr *)&addr, sizeof addr), 0);
    assert_int_equal(listen(listener, 16), 0);
    assert_int_equal(getsockname(listener, (struct sockaddr *)&addr, &len), 0);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    close(listener);
    return 0;
}

static at_guard *new_guard(int max)
{
    at_guard *g;
    at_guard_options o;
    memset(&o, 0, sizeof o);
    o.max_connections = max;
    o.request_timeout_ms = TIMEOUT_MS;
    o.slots = max + 4;
    o.answer = answer;
    assert_int_equal(at_guard_new(&o, &g), 0);
    return g;
}

static pair connect_one(at_guard *g)
{
    pair p;
    p.client = socket(AF_INET, SOCK_STREAM, 0);
    assert_int_equal(connect(p.client, (struct sockaddr *)&addr, sizeof addr), 0);
    p.server = accept(listener, NULL, NULL);
    assert_true(p.server >= 0);
    p.c = at_guard_open(g, p.server);
    assert_non_null(p.c);
    return p;
}

static void close_one(at_guard *g, pair *p)
{
    at_guard_close(g, p->c);
    close(p->server);
    close(p->client);
}

/* Reads what the server side sent until EOF (or 3 s). Returns the bytes read, or -1
 * when the connection is still open. */
static int read_until_eof(int fd, char *buf, size_t cap)
{
    size_t n = 0;
    for (;;) {
        struct pollfd pfd = {fd, POLLIN, 0};
        ssize_t r;
        if (poll(&pfd, 1, 3000) <= 0) return -1;
        r = recv(fd, buf + n, cap - 1 - n, 0);
        if (r < 0 && errno == ECONNRESET) break;
        if (r <= 0) break;
        n += (size_t)r;
    }
    buf[n] = '\0';
    return (int)n;
}

/* Returns 1 when nothing arrived and the connection is still open after ms. */
static int still_open(int fd, int ms)
{
    struct pollfd pfd = {fd, POLLIN, 0};
    return poll(&pfd, 1, ms) == 0;
}

static void test_sheds_oldest_idle_first(void **state)
{
    at_guard *g = new_guard(2);
    char buf[512];
    at_guard_stats st;
    pair a, b, c, d;
    (void)state;
    a = connect_one(g);
    b = connect_one(g);
    at_guard_request_begins(g, b.c, "/slow");
    c = connect_one(g); /* over the limit: a (idle) goes, without an answer */
    assert_int_equal(read_until_eof(a.client, buf, sizeof buf), 0);
    assert_true(still_open(b.client, 50));
    assert_true(still_open(c.client, 0));
    assert_int_equal(at_guard_request_arrived(g, a.c), -1); /* it must not run */
    /* Next: c is idle (newest) but b is unfinished: c is still the idle one to go. */
    at_guard_request_begins(g, c.c, "/c");
    at_guard_request_done(g, c.c);
    d = connect_one(g);
    assert_int_equal(read_until_eof(c.client, buf, sizeof buf), 0);
    assert_true(still_open(b.client, 0));
    at_guard_get_stats(g, &st);
    assert_int_equal(st.shed_idle, 2);
    assert_int_equal(st.open, 2);
    close_one(g, &a);
    close_one(g, &b);
    close_one(g, &c);
    close_one(g, &d);
    at_guard_free(g);
}

static void test_sheds_unfinished_then_refuses(void **state)
{
    at_guard *g = new_guard(2);
    char buf[512];
    at_guard_stats st;
    pair a, b, c, d;
    (void)state;
    a = connect_one(g);
    b = connect_one(g);
    at_guard_request_begins(g, a.c, "/first");
    at_guard_request_begins(g, b.c, "/second");
    c = connect_one(g); /* no idle one: the earliest begun request goes, with a 503 */
    assert_true(read_until_eof(a.client, buf, sizeof buf) > 0);
    assert_non_null(strstr(buf, "HTTP/1.1 503"));
    assert_non_null(strstr(buf, "|/first"));
    assert_true(still_open(b.client, 0));
    at_guard_request_begins(g, c.c, "/third");
    assert_int_equal(at_guard_request_arrived(g, b.c), 0);
    assert_int_equal(at_guard_request_arrived(g, c.c), 0);
    d = connect_one(g); /* every connection busy with a request: d is refused */
    assert_true(read_until_eof(d.client, buf, sizeof buf) > 0);
    assert_non_null(strstr(buf, "HTTP/1.1 503"));
    assert_non_null(strstr(buf, "HTTP_MAX_CONNECTIONS"));
    assert_true(still_open(b.client, 0));
    assert_true(still_open(c.client, 0));
    at_guard_get_stats(g, &st);
    assert_int_equal(st.shed_unfinished, 1);
    assert_int_equal(st.refused, 1);
    assert_int_equal(st.open, 2);
    close_one(g, &a);
    close_one(g, &b);
    close_one(g, &c);
    close_one(g, &d);
    at_guard_free(g);
}

static void test_request_timeout(void **state)
{
    at_guard *g = new_guard(10);
    char buf[512];
    at_guard_stats st;
    pair a, b, c;
    (void)state;
    a = connect_one(g);
    b = connect_one(g);
    c = connect_one(g);
    at_guard_request_begins(g, a.c, "/trickle");
    /* b sends part of a request line only: the library would not report it, the
     * sweeper sees the data arrive. */
    usleep(30 * 1000);
    assert_int_equal(send(b.client, "GET /par", 8, 0), 8);
    /* c: idle, nothing sent, never cut by the request timeout. */
    assert_true(read_until_eof(a.client, buf, sizeof buf) > 0);
    assert_non_null(strstr(buf, "HTTP/1.1 408"));
    assert_non_null(strstr(buf, "HTTP_REQUEST_TIMEOUT"));
    assert_non_null(strstr(buf, "|/trickle"));
    assert_true(read_until_eof(b.client, buf, sizeof buf) > 0);
    assert_non_null(strstr(buf, "HTTP/1.1 408"));
    assert_non_null(strstr(buf, "|-"));
    assert_true(still_open(c.client, 200));
    assert_int_equal(at_guard_request_arrived(g, a.c), -1);
    at_guard_get_stats(g, &st);
    assert_int_equal(st.cut, 2);
    assert_int_equal(st.open, 1);
    close_one(g, &a);
    close_one(g, &b);
    close_one(g, &c);
    at_guard_free(g);
}

static void test_handled_requests_are_not_cut(void **state)
{
    at_guard *g = new_guard(10);
    pair a;
    (void)state;
    a = connect_one(g);
    at_guard_request_begins(g, a.c, "/quick");
    assert_int_equal(at_guard_request_arrived(g, a.c), 0);
    /* Handling takes longer than the request timeout: it is not the client's fault. */
    assert_true(still_open(a.client, 2 * TIMEOUT_MS));
    at_guard_request_done(g, a.c);
    assert_true(still_open(a.client, 2 * TIMEOUT_MS));
    close_one(g, &a);
    at_guard_free(g);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sheds_oldest_idle_first),
        cmocka_unit_test(test_sheds_unfinished_then_refuses),
        cmocka_unit_test(test_request_timeout),
        cmocka_unit_test(test_handled_requests_are_not_cut),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
