/* Unit tests of src/common/log.c: the request line, and gathering request lines per
 * thread (at_log_batch): nothing lost, nothing torn, written in order, and written at
 * once when a thread does not gather. The lines go to a temporary file. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <jansson.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "actionstools/log.h"
#include "actionstools/banned.h"

static char path[] = "/tmp/at-log-XXXXXX";
static int log_fd = -1;

/* Sends the log lines to a new empty temporary file. */
static int capture(void **state)
{
    (void)state;
    log_fd = mkstemp(path);
    if (log_fd < 0) return -1;
    at_log_set_fd(log_fd);
    return 0;
}

static int restore(void **state)
{
    (void)state;
    at_log_set_fd(STDERR_FILENO);
    close(log_fd);
    unlink(path);
    return 0;
}

/* Returns what the log received so far (malloc'd). */
static char *captured(void)
{
    FILE *f = fopen(path, "r");
    char *text;
    long n;
    assert_non_null(f);
    fseek(f, 0, SEEK_END);
    n = ftell(f);
    rewind(f);
    text = calloc(1, (size_t)n + 1);
    assert_non_null(text);
    assert_int_equal(fread(text, 1, (size_t)n, f), (size_t)n);
    fclose(f);
    return text;
}

static size_t count_lines(const char *text)
{
    size_t n = 0;
    for (const char *p = text; *p; p++)
        n += *p == '\n';
    return n;
}

static void test_request_line(void **state)
{
    char *text;
    json_t *line;
    (void)state;
    at_log_request("rid-1", "GET", "/a \"b\"", 200, 1.5, NULL);
    text = captured();
    line = json_loads(text, JSON_DISABLE_EOF_CHECK, NULL);
    assert_non_null(line);
    assert_string_equal(json_string_value(json_object_get(line, "msg")), "request");
    assert_string_equal(json_string_value(json_object_get(line, "path")), "/a \"b\"");
    assert_int_equal(json_integer_value(json_object_get(line, "status")), 200);
    assert_true(json_is_null(json_object_get(line, "user")));
    json_decref(line);
    free(text);
}

/* Gathered lines wait for at_log_flush; another kind of line is written after them. */
static void test_batch_waits_for_flush(void **state)
{
    char *before, *text;
    (void)state;
    before = captured();
    at_log_batch(1);
    at_log_request("rid-2", "GET", "/x", 200, 0.1, "u");
    at_log_request("rid-3", "GET", "/y", 404, 0.1, "u");
    assert_true(at_log_pending());
    text = captured();
    assert_string_equal(text, before); /* nothing written yet */
    free(text);
    at_log(AT_LOG_WARN, "something else");
    assert_false(at_log_pending());
    text = captured();
    assert_non_null(strstr(text, "rid-2"));
    assert_true(strstr(text, "rid-2") < strstr(text, "rid-3"));
    assert_true(strstr(text, "rid-3") < strstr(text, "something else"));
    free(text);
    at_log_request("rid-4", "GET", "/z", 200, 0.1, "u");
    at_log_batch(0); /* flushes */
    text = captured();
    assert_non_null(strstr(text, "rid-4"));
    free(text);
    free(before);
}

/* Past PIPE_BUF (4 KB) the batch is written by itself; a line longer than a batch is written whole. */
static void test_batch_bounded(void **state)
{
    char *before = captured(), *text, *long_path = malloc(20000);
    size_t n0 = count_lines(before);
    (void)state;
    assert_non_null(long_path);
    at_log_batch(1);
    for (int i = 0; i < 400; i++)
        at_log_request("rid", "GET", "/a-path-of-some-length", 200, 0.1, "u");
    text = captured();
    assert_true(count_lines(text) > n0); /* some written without a flush */
    assert_true(at_log_pending());
    free(text);
    memset(long_path, 'p', 19999);
    long_path[19999] = '\0';
    at_log_request("rid-long", "GET", long_path, 200, 0.1, "u");
    at_log_batch(0);
    text = captured();
    assert_int_equal(count_lines(text), n0 + 401);
    assert_non_null(strstr(text, "rid-long"));
    free(text);
    free(before);
    free(long_path);
}

static void *lines_main(void *arg)
{
    char rid[32];
    at_log_batch(1);
    for (int i = 0; i < 2000; i++) {
        snprintf(rid, sizeof rid, "t%d-%d", (int)(intptr_t)arg, i);
        at_log_request(rid, "GET", "/t", 200, 0.1, "u");
    }
    at_log_batch(0);
    return NULL;
}

typedef struct drain {
    int fd;
    char *data;
    size_t len;
} drain;

/* Reads the pipe's end d->fd until EOF into d->data, slowly (small reads, a pause now
 * and then), so that the pipe fills and writers block half-way: where a write larger
 * than PIPE_BUF would be split and another thread's bytes put in between. */
static void *drain_main(void *arg)
{
    drain *d = arg;
    char chunk[1000];
    ssize_t n;
    int reads = 0;
    while ((n = read(d->fd, chunk, sizeof chunk)) > 0) {
        if (++reads % 64 == 0) usleep(200);
        d->data = realloc(d->data, d->len + (size_t)n + 1);
        assert_non_null(d->data);
        memcpy(d->data + d->len, chunk, (size_t)n);
        d->len += (size_t)n;
        d->data[d->len] = '\0';
    }
    return NULL;
}

/* Four threads gathering at once into a pipe, as into journald's stream: every line
 * arrives, whole (each parses as JSON), none torn by another thread's batch. */
static void test_threads_lines_whole(void **state)
{
    pthread_t th[4], reader;
    int p[2];
    drain d = {-1, NULL, 0};
    size_t n = 0;
    char *line_start, *nl;
    (void)state;
    assert_int_equal(pipe(p), 0);
    d.fd = p[0];
    assert_int_equal(pthread_create(&reader, NULL, drain_main, &d), 0);
    at_log_set_fd(p[1]);
    for (int i = 0; i < 4; i++) assert_int_equal(pthread_create(&th[i], NULL, lines_main, (void *)(intptr_t)i), 0);
    for (int i = 0; i < 4; i++) pthread_join(th[i], NULL);
    at_log_set_fd(log_fd);
    close(p[1]);
    pthread_join(reader, NULL);
    close(p[0]);
    assert_non_null(d.data);
    for (line_start = d.data; (nl = strchr(line_start, '\n')) != NULL; line_start = nl + 1) {
        json_t *line = json_loadb(line_start, (size_t)(nl - line_start), 0, NULL);
        assert_non_null(line);
        assert_int_equal(json_string_value(json_object_get(line, "request_id"))[0], 't');
        json_decref(line);
        n++;
    }
    assert_int_equal(n, 4 * 2000);
    free(d.data);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_request_line),
        cmocka_unit_test(test_batch_waits_for_flush),
        cmocka_unit_test(test_batch_bounded),
        cmocka_unit_test(test_threads_lines_whole),
    };
    return cmocka_run_group_tests(tests, capture, restore);
}
