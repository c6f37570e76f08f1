/* Tests of the signed AWS client (src/aws/client.c) against a scripted fake server
 * (fake_http.h): what goes on the wire for a non-DynamoDB request (a Lambda Invoke),
 * retries of 5xx and throttling with backoff, timeouts on a silent server, refused and
 * dropped connections, keep-alive, error types, and that no credential reaches a log. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "actionstools/err.h"
#include "actionstools/log.h"
#include "actionstools/timeutil.h"
#include "aws/client.h"
#include "fake_http.h"
#include "actionstools/banned.h"

static const char THROTTLED[] = "{\"__type\":\"com.amazonaws.lambda#TooManyRequestsException\","
                                "\"message\":\"Rate exceeded\"}";
static const char PAYLOAD[] = "{\"ok\":true}";

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return x < y ? -1 : x > y;
}

static at_aws_client *fake_client(const fake_http_server *f, long request_ms, int max_retries,
                                  const char *token)
{
    char url[64];
    at_aws_options o = {url,   "eu-west-1", "AKIDFAKE", "fake-secret-key-123",
                        token, 500,         request_ms, max_retries};
    at_aws_client *c = NULL;
    snprintf(url, sizeof url, "http://127.0.0.1:%d", f->port);
    assert_int_equal(at_aws_client_new(&o, "lambda", "LAMBDA_ENDPOINT", &c, NULL, 0), 0);
    return c;
}

/* An asynchronous Lambda Invoke, as the API will send to the Worker. */
static int invoke(at_aws_client *c, at_buf *body, at_aws_error *e, uint64_t *counter)
{
    static const char payload[] = "{\"task\":\"log_activity\",\"args\":{}}";
    at_sigv4_header h[2] = {{"Content-Type", "application/json"},
                            {"X-Amz-Invocation-Type", "Event"}};
    at_aws_request r = {"POST", "/2015-03-31/functions/worker-fn/invocations", NULL, h, 2,
                        payload, sizeof payload - 1, "Invoke", counter};
    return at_aws_call(c, &r, body, e);
}

/* What goes on the wire: the path, the caller's headers signed with the service's
 * scope, the session token; the secret never. */
static void test_request_on_the_wire(void **state)
{
    static const fake_http_reply script[] = {{FAKE_ANSWER, 202, ""}};
    fake_http_server f;
    at_aws_client *c;
    at_buf body;
    at_aws_error e;
    uint64_t counter = 0;
    (void)state;

    fake_http_start(&f, script, 1);
    c = fake_client(&f, 5000, 0, "session-token-xyz");
    at_buf_init(&body, 1 << 20);
    assert_int_equal(invoke(c, &body, &e, &counter), 0);
    assert_int_equal(e.http_status, 202);
    assert_int_equal(body.len, 0);
    assert_int_equal(counter, 1);
    assert_non_null(strstr(f.last_request, "POST /2015-03-31/functions/worker-fn/invocations "
                                           "HTTP/1.1\r\n"));
    assert_non_null(strstr(f.last_request, "X-Amz-Invocation-Type: Event\r\n"));
    assert_non_null(strstr(f.last_request, "X-Amz-Security-Token: session-token-xyz\r\n"));
    assert_non_null(strstr(f.last_request, "Authorization: AWS4-HMAC-SHA256 Credential=AKIDFAKE/"));
    assert_non_null(strstr(f.last_request, "/eu-west-1/lambda/aws4_request, SignedHeaders="
                                           "content-type;host;x-amz-date;"
                                           "x-amz-invocation-type;x-amz-security-token, "
                                           "Signature="));
    assert_non_null(strstr(f.last_request, "\r\n\r\n{\"task\":\"log_activity\",\"args\":{}}"));
    assert_null(strstr(f.last_request, "fake-secret-key-123"));
    assert_null(strstr(f.last_request, "Expect:"));
    at_buf_release(&body);
    at_aws_client_free(c);
    fake_http_stop(&f);
}

/* A GET with a query string (Secrets Manager-style services use POST, but the client
 * must not send a stale body on a reused handle). */
static void test_get_after_post_on_one_handle(void **state)
{
    static const fake_http_reply script[] = {{FAKE_ANSWER, 200, PAYLOAD}};
    fake_http_server f;
    at_aws_client *c;
    at_buf body;
    at_aws_request r = {"GET", "/2015-03-31/functions/worker-fn", "Qualifier=live", NULL, 0,
                        NULL, 0, "GetFunction", NULL};
    (void)state;

    fake_http_start(&f, script, 1);
    c = fake_client(&f, 5000, 0, NULL);
    at_buf_init(&body, 1 << 20);
    assert_int_equal(invoke(c, &body, NULL, NULL), 0);
    assert_string_equal(at_buf_str(&body), PAYLOAD);
    assert_int_equal(at_aws_call(c, &r, &body, NULL), 0);
    assert_non_null(strstr(f.last_request, "GET /2015-03-31/functions/worker-fn?Qualifier=live "
                                           "HTTP/1.1\r\n"));
    assert_null(strstr(f.last_request, "log_activity"));
    assert_int_equal(f.connections, 1);
    at_buf_release(&body);
    at_aws_client_free(c);
    fake_http_stop(&f);
}

static void test_retries_5xx_then_succeeds(void **state)
{
    static const fake_http_reply script[] = {
        {FAKE_ANSWER, 500, "{\"__type\":\"ServiceException\"}"},
        {FAKE_ANSWER, 503, ""},
        {FAKE_ANSWER, 200, PAYLOAD}};
    fake_http_server f;
    at_aws_client *c;
    at_buf body;
    at_aws_error e;
    at_aws_stats st;
    uint64_t counter = 0;
    int64_t t0;
    (void)state;

    fake_http_start(&f, script, 3);
    c = fake_client(&f, 5000, 3, NULL);
    at_buf_init(&body, 1 << 20);
    t0 = at_monotonic_us();
    assert_int_equal(invoke(c, &body, &e, &counter), 0);
    assert_string_equal(at_buf_str(&body), PAYLOAD);
    assert_int_equal(e.attempts, 3);
    assert_int_equal(counter, 3);
    at_aws_client_stats(c, &st);
    assert_int_equal(st.requests, 3);
    assert_int_equal(st.retries, 2);
    assert_true(at_monotonic_us() - t0 < 1000000); /* 50 ms + 100 ms of backoff at most */
    assert_int_equal(f.connections, 1);            /* one kept-alive connection */
    at_buf_release(&body);
    at_aws_client_free(c);
    fake_http_stop(&f);
}

static void test_throttling_gives_up(void **state)
{
    static const fake_http_reply script[] = {{FAKE_ANSWER, 429, THROTTLED}};
    fake_http_server f;
    at_aws_client *c;
    at_buf body;
    at_aws_error e;
    (void)state;

    fake_http_start(&f, script, 1);
    c = fake_client(&f, 10000, 2, NULL);
    at_buf_init(&body, 1 << 20);
    assert_int_equal(invoke(c, &body, &e, NULL), AT_ETHROTTLED);
    assert_int_equal(body.len, 0);
    assert_int_equal(e.attempts, 3); /* the first and max_retries more */
    assert_string_equal(e.type, "TooManyRequestsException");
    assert_string_equal(e.message, "Rate exceeded");
    assert_int_equal(f.requests, 3);
    at_buf_release(&body);
    at_aws_client_free(c);
    fake_http_stop(&f);
}

/* A refusal no retry mends is AT_EIO with the service's type and message, sent once;
 * an answer over the caller's cap is AT_ETOOBIG. */
static void test_refusals_and_caps(void **state)
{
    static const fake_http_reply denied[] = {
        {FAKE_ANSWER, 404,
         "{\"Type\":\"User\",\"message\":\"Function not found\","
         "\"__type\":\"ResourceNotFoundException\"}"}};
    static const fake_http_reply big[] = {{FAKE_ANSWER, 200, PAYLOAD}};
    static const fake_http_reply too_large[] = {{FAKE_ANSWER, 413, "{}"}};
    fake_http_server f;
    at_aws_client *c;
    at_buf body;
    at_aws_error e;
    (void)state;

    fake_http_start(&f, denied, 1);
    c = fake_client(&f, 5000, 3, NULL);
    at_buf_init(&body, 1 << 20);
    assert_int_equal(invoke(c, &body, &e, NULL), AT_EIO);
    assert_int_equal(e.attempts, 1);
    assert_int_equal(e.http_status, 404);
    assert_string_equal(e.type, "ResourceNotFoundException");
    assert_string_equal(e.message, "Function not found");
    at_aws_client_free(c);
    fake_http_stop(&f);

    fake_http_start(&f, big, 1);
    c = fake_client(&f, 5000, 3, NULL);
    at_buf_release(&body);
    at_buf_init(&body, 4);
    assert_int_equal(invoke(c, &body, &e, NULL), AT_ETOOBIG); /* 11 bytes into a 4-byte cap */
    assert_int_equal(e.attempts, 1);
    assert_int_equal(body.len, 0);
    at_aws_client_free(c);
    fake_http_stop(&f);

    fake_http_start(&f, too_large, 1);
    c = fake_client(&f, 5000, 3, NULL);
    assert_int_equal(invoke(c, &body, &e, NULL), AT_ETOOBIG);
    assert_int_equal(e.attempts, 1);
    at_buf_release(&body);
    at_aws_client_free(c);
    fake_http_stop(&f);
}

/* A server that takes the request and never answers: the call gives up within the
 * request timeout (retries included), so the API never hangs on a dead endpoint. */
static void test_timeout_on_silent_server(void **state)
{
    static const fake_http_reply script[] = {{FAKE_HANG, 0, NULL}};
    fake_http_server f;
    at_aws_client *c;
    at_buf body;
    at_aws_error e;
    int64_t t0, took;
    (void)state;

    fake_http_start(&f, script, 1);
    c = fake_client(&f, 400, 3, NULL);
    at_buf_init(&body, 1 << 20);
    t0 = at_monotonic_us();
    assert_int_equal(invoke(c, &body, &e, NULL), AT_EUNAVAIL);
    took = at_monotonic_us() - t0;
    print_message("silent server: gave up after %lld ms (%d attempts)\n", (long long)(took / 1000),
                  e.attempts);
    assert_true(took >= 350000);
    assert_true(took < 1500000); /* 400 ms, with room for a loaded machine */
    at_buf_release(&body);
    at_aws_client_free(c);
    fake_http_stop(&f);
}

/* Nothing listens: connection refused is retried with backoff, then AT_EUNAVAIL. */
static void test_refused_connection(void **state)
{
    at_aws_options o = {NULL, "us-east-1", "AK", "SK", NULL, 200, 3000, 2};
    at_aws_client *c = NULL;
    at_buf body;
    at_aws_error e;
    char url[64];
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a;
    socklen_t alen = sizeof a;
    (void)state;

    /* A port that was free a moment ago. */
    memset(&a, 0, sizeof a);
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    assert_int_equal(bind(fd, (struct sockaddr *)&a, sizeof a), 0);
    assert_int_equal(getsockname(fd, (struct sockaddr *)&a, &alen), 0);
    close(fd);
    snprintf(url, sizeof url, "http://127.0.0.1:%d", ntohs(a.sin_port));
    o.endpoint = url;
    assert_int_equal(at_aws_client_new(&o, "lambda", "LAMBDA_ENDPOINT", &c, NULL, 0), 0);
    at_buf_init(&body, 1 << 20);
    assert_int_equal(invoke(c, &body, &e, NULL), AT_EUNAVAIL);
    assert_int_equal(e.attempts, 3);
    assert_int_equal(e.http_status, 0);
    at_buf_release(&body);
    at_aws_client_free(c);
}

/* The server closes a kept-alive connection after answering: the next call still
 * succeeds, on a new connection, without a backoff retry. */
static void test_closed_keepalive_connection(void **state)
{
    static const fake_http_reply script[] = {{FAKE_CLOSE_AFTER, 200, PAYLOAD}};
    fake_http_server f;
    at_aws_client *c;
    at_buf body;
    at_aws_stats st;
    (void)state;

    fake_http_start(&f, script, 1);
    c = fake_client(&f, 5000, 0, NULL); /* no backoff retries at all */
    at_buf_init(&body, 1 << 20);
    for (int i = 0; i < 3; i++) {
        usleep(20000); /* let the close arrive before the next request */
        assert_int_equal(invoke(c, &body, NULL, NULL), 0);
    }
    at_aws_client_stats(c, &st);
    assert_int_equal(st.retries, 0);
    assert_int_equal(f.connections, 3);
    at_buf_release(&body);
    at_aws_client_free(c);
    fake_http_stop(&f);
}

/* The server drops a kept-alive connection when the next request arrives: the call is
 * repeated at once on a new connection (by libcurl or by the client), not backed off. */
static void test_dropped_connection_is_retried_fresh(void **state)
{
    static const fake_http_reply script[] = {
        {FAKE_ANSWER, 200, PAYLOAD}, {FAKE_DROP, 0, NULL}, {FAKE_ANSWER, 200, PAYLOAD}};
    fake_http_server f;
    at_aws_client *c;
    at_buf body;
    at_aws_stats st;
    (void)state;

    fake_http_start(&f, script, 3);
    c = fake_client(&f, 5000, 0, NULL); /* no backoff retries at all */
    at_buf_init(&body, 1 << 20);
    assert_int_equal(invoke(c, &body, NULL, NULL), 0);
    assert_int_equal(invoke(c, &body, NULL, NULL), 0);
    at_aws_client_stats(c, &st);
    print_message("dropped connection: %d requests seen, %d connections, %llu repeated by the "
                  "client (the rest by libcurl)\n",
                  f.requests, f.connections, (unsigned long long)st.fresh_retries);
    assert_int_equal(st.retries, 0);
    assert_int_equal(f.requests, 3);
    assert_int_equal(f.connections, 2);
    at_buf_release(&body);
    at_aws_client_free(c);
    fake_http_stop(&f);
}

/* Not a pass/fail test: what one call costs on our side (signing, libcurl, a
 * kept-alive loopback connection) against a server that answers at once. */
static void test_measure_client_overhead(void **state)
{
    enum { N = 500 };
    static int64_t lat[N];
    static const fake_http_reply script[] = {{FAKE_ANSWER, 200, PAYLOAD}};
    fake_http_server f;
    at_aws_client *c;
    at_buf body;
    (void)state;

    fake_http_start(&f, script, 1);
    c = fake_client(&f, 5000, 0, "tok");
    at_buf_init(&body, 1 << 20);
    for (int i = 0; i < N; i++) {
        int64_t t0 = at_monotonic_us();
        assert_int_equal(invoke(c, &body, NULL, NULL), 0);
        lat[i] = at_monotonic_us() - t0;
    }
    qsort(lat, N, sizeof lat[0], cmp_i64);
    print_message("client round trip to an instant server: p50 %lld us, p99 %lld us, "
                  "%d connection(s)\n",
                  (long long)lat[N / 2], (long long)lat[N * 99 / 100], f.connections);
    assert_int_equal(f.connections, 1);
    at_buf_release(&body);
    at_aws_client_free(c);
    fake_http_stop(&f);
}

/* Retries and failures are logged, but never with a credential. */
static void test_no_secrets_in_logs(void **state)
{
    static const fake_http_reply script[] = {
        {FAKE_ANSWER, 403,
         "{\"__type\":\"com.amazon.coral.service#InvalidSignatureException\",\"message\":"
         "\"canonical string x-amz-security-token:session-token-xyz\"}"},
        {FAKE_ANSWER, 500, "{}"}};
    fake_http_server f;
    at_aws_client *c;
    at_buf body;
    at_aws_error e;
    char path[] = "/tmp/at-aws-log-XXXXXX", logbuf[16384];
    int fd = mkstemp(path), saved = dup(2);
    ssize_t n;
    (void)state;

    fake_http_start(&f, script, 2);
    c = fake_client(&f, 5000, 2, "session-token-xyz");
    at_buf_init(&body, 1 << 20);
    at_log_set_level(AT_LOG_DEBUG);
    assert_true(fd >= 0 && saved >= 0);
    dup2(fd, 2);
    assert_int_equal(invoke(c, &body, &e, NULL), AT_EIO);
    assert_null(strstr(e.message, "session-token-xyz"));
    pthread_mutex_lock(&f.lock);
    f.requests = 1; /* now the 500s: retried and logged */
    pthread_mutex_unlock(&f.lock);
    assert_int_equal(invoke(c, &body, &e, NULL), AT_EUNAVAIL);
    dup2(saved, 2);
    close(saved);
    at_log_set_level(getenv("AT_TEST_LOG_DEBUG") ? AT_LOG_DEBUG : AT_LOG_INFO);
    n = pread(fd, logbuf, sizeof logbuf - 1, 0);
    assert_true(n > 0);
    logbuf[n] = '\0';
    assert_non_null(strstr(logbuf, "retrying"));
    assert_non_null(strstr(logbuf, "\"service\":\"lambda\""));
    assert_null(strstr(logbuf, "session-token-xyz"));
    assert_null(strstr(logbuf, "fake-secret-key-123"));
    close(fd);
    unlink(path);
    at_buf_release(&body);
    at_aws_client_free(c);
    fake_http_stop(&f);
}

/* The error-type cases of botocore's awsJson1_0 output tests
 * (shared/fixtures/aws/aws-json-1.0-protocol). */
static void test_error_type_parsing(void **state)
{
    const struct {
        const char *header, *body, *want;
    } v[] = {
        {NULL, "{\"__type\":\"aws.protocoltests.json10#InvalidGreeting\",\"Message\":\"Hi\"}",
         "InvalidGreeting"},
        {"FooError", NULL, "FooError"},
        {"FooError:http://internal.amazon.com/coral/com.amazon.coral.validate/", NULL, "FooError"},
        {"aws.protocoltests.json10#FooError:http://internal.amazon.com/coral/"
         "com.amazon.coral.validate/",
         NULL, "FooError"},
        {NULL, "{\"code\":\"FooError\"}", "FooError"},
        {NULL, "{\"code\":\"aws.protocoltests.json10#FooError\"}", "FooError"},
        {NULL,
         "{\"code\":\"aws.protocoltests.json10#FooError:http://internal.amazon.com/coral/"
         "com.amazon.coral.validate/\"}",
         "FooError"},
        {NULL, "{\"__type\":\"FooError\"}", "FooError"},
        {NULL, "{\"__type\":\"aws.protocoltests.json10#FooError\"}", "FooError"},
        {NULL,
         "{\"__type\":\"aws.protocoltests.json10#FooError:http://internal.amazon.com/coral/"
         "com.amazon.coral.validate/\"}",
         "FooError"},
        {NULL, "{\"__type\":\"aws.protocoltests.json10#ComplexError\",\"TopLevel\":\"x\"}",
         "ComplexError"},
        {"FooError\r\n", "{\"__type\":\"Other\"}", "FooError"},
        {NULL, "{}", ""},
    };
    (void)state;
    for (size_t i = 0; i < sizeof v / sizeof v[0]; i++) {
        char out[96];
        json_t *body = v[i].body ? json_loads(v[i].body, 0, NULL) : NULL;
        at_aws_error_type(v[i].header, body, out, sizeof out);
        assert_string_equal(out, v[i].want);
        json_decref(body);
    }
}

static void test_backoff_bounds(void **state)
{
    (void)state;
    for (int attempt = 0; attempt < 12; attempt++) {
        long ceiling = attempt < 7 ? 50L << attempt : 5000, max = 0;
        if (ceiling > 5000) ceiling = 5000;
        for (int i = 0; i < 200; i++) {
            long ms = at_aws_backoff_ms(attempt, 50, 5000);
            assert_true(ms >= 0 && ms <= ceiling);
            if (ms > max) max = ms;
        }
        assert_true(max > ceiling / 2); /* jitter spreads over the range */
    }
}

/* Opening checks the endpoint (named by the caller's setting) and the credentials. */
static void test_open_refusals(void **state)
{
    at_aws_options bad = {"ftp://x", "us-east-1", "a", "b", NULL, 0, 0, -1};
    at_aws_options path = {"http://h:1/x", "us-east-1", "a", "b", NULL, 0, 0, -1};
    at_aws_options nocreds = {NULL, "us-east-1", NULL, NULL, NULL, 0, 0, -1};
    at_aws_client *c = NULL;
    char err[256];
    (void)state;
    assert_int_equal(at_aws_client_new(&bad, "lambda", "LAMBDA_ENDPOINT", &c, err, sizeof err),
                     AT_EINVAL);
    assert_non_null(strstr(err, "LAMBDA_ENDPOINT"));
    assert_int_equal(at_aws_client_new(&path, "lambda", "LAMBDA_ENDPOINT", &c, err, sizeof err),
                     AT_EINVAL);
    assert_int_equal(
        at_aws_client_new(&nocreds, "lambda", "LAMBDA_ENDPOINT", &c, err, sizeof err), AT_EINVAL);
    assert_non_null(strstr(err, "AWS_ACCESS_KEY_ID"));
    assert_null(c);
    at_aws_client_free(NULL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_error_type_parsing),
        cmocka_unit_test(test_backoff_bounds),
        cmocka_unit_test(test_open_refusals),
        cmocka_unit_test(test_request_on_the_wire),
        cmocka_unit_test(test_get_after_post_on_one_handle),
        cmocka_unit_test(test_retries_5xx_then_succeeds),
        cmocka_unit_test(test_throttling_gives_up),
        cmocka_unit_test(test_refusals_and_caps),
        cmocka_unit_test(test_timeout_on_silent_server),
        cmocka_unit_test(test_refused_connection),
        cmocka_unit_test(test_closed_keepalive_connection),
        cmocka_unit_test(test_dropped_connection_is_retried_fresh),
        cmocka_unit_test(test_measure_client_overhead),
        cmocka_unit_test(test_no_secrets_in_logs),
    };
    at_log_set_level(getenv("AT_TEST_LOG_DEBUG") ? AT_LOG_DEBUG : AT_LOG_INFO);
    return cmocka_run_group_tests(tests, NULL, NULL);
}
