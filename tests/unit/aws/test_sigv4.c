/* Unit tests of src/aws/sigv4.c: every case of the aws-c-auth SigV4 test suite
 * (tests/fixtures/sigv4/aws-c-auth-v4, copied from shared/fixtures), header signing,
 * byte for byte. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <dirent.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "actionstools/sigv4.h"
#include "actionstools/buf.h"
#include "actionstools/err.h"
#include "actionstools/banned.h"

#define SUITE "sigv4/aws-c-auth-v4"
#define MAX_HEADERS 32

/* Returns the contents of dir/name as a new string (NULL when absent). */
static char *read_file(const char *dir, const char *name, size_t *len)
{
    char path[4096];
    FILE *f;
    at_buf b;
    char chunk[4096];
    size_t n;

    snprintf(path, sizeof path, "%s/%s", dir, name);
    f = fopen(path, "rb");
    if (!f) return NULL;
    at_buf_init(&b, 1 << 20);
    while ((n = fread(chunk, 1, sizeof chunk, f)) > 0)
        if (at_buf_add(&b, chunk, n)) break;
    fclose(f);
    return at_buf_take(&b, len);
}

/* A request.txt taken apart. Strings point into text, which the struct owns. */
typedef struct parsed {
    char *text;
    char *method, *path, *query;
    at_sigv4_header headers[MAX_HEADERS];
    size_t nheaders;
    char *body;
    size_t body_len;
    at_buf values[MAX_HEADERS]; /* header values with folded lines joined */
} parsed;

static void parsed_release(parsed *p)
{
    for (size_t i = 0; i < MAX_HEADERS; i++)
        at_buf_release(&p->values[i]);
    free(p->text);
}

/* Parses "METHOD PATH HTTP/1.1", header lines (a line starting with white space
 * continues the previous header), a blank line and the body. The path may hold
 * spaces, so it ends at the last " HTTP/". */
static void parse_request(char *text, size_t len, parsed *p)
{
    char *line = text, *nl, *sp, *http;

    memset(p, 0, sizeof *p);
    for (size_t i = 0; i < MAX_HEADERS; i++)
        at_buf_init(&p->values[i], 1 << 16);
    p->text = text;
    nl = strchr(line, '\n');
    assert_non_null(nl);
    *nl = '\0';
    sp = strchr(line, ' ');
    assert_non_null(sp);
    *sp = '\0';
    p->method = line;
    http = strstr(sp + 1, " HTTP/");
    assert_non_null(http);
    while (strstr(http + 1, " HTTP/"))
        http = strstr(http + 1, " HTTP/");
    *http = '\0';
    p->path = sp + 1;
    p->query = strchr(p->path, '?');
    if (p->query) *p->query++ = '\0';

    line = nl + 1;
    while (line < text + len) {
        char *colon;
        nl = strchr(line, '\n');
        if (nl) *nl = '\0';
        if (*line == '\0') { /* end of headers */
            if (nl) {
                p->body = nl + 1;
                p->body_len = (size_t)(text + len - p->body);
            }
            break;
        }
        if (*line == ' ' || *line == '\t') {
            assert_true(p->nheaders > 0);
            assert_int_equal(at_buf_addc(&p->values[p->nheaders - 1], '\n'), 0);
            assert_int_equal(at_buf_adds(&p->values[p->nheaders - 1], line), 0);
        } else {
            colon = strchr(line, ':');
            assert_non_null(colon);
            assert_true(p->nheaders < MAX_HEADERS);
            *colon = '\0';
            p->headers[p->nheaders].name = line;
            assert_int_equal(at_buf_adds(&p->values[p->nheaders], colon + 1), 0);
            p->nheaders++;
        }
        if (!nl) break;
        line = nl + 1;
    }
    for (size_t i = 0; i < p->nheaders; i++)
        p->headers[i].value = at_buf_str(&p->values[i]);
}

static int64_t parse_time(const char *iso)
{
    struct tm tm;
    memset(&tm, 0, sizeof tm);
    assert_non_null(strptime(iso, "%Y-%m-%dT%H:%M:%SZ", &tm));
    return (int64_t)timegm(&tm);
}

/* Returns the value after "Authorization:" in a signed request. */
static char *authorization_line(char *signed_req)
{
    char *a = strstr(signed_req, "\nAuthorization:");
    char *end;
    assert_non_null(a);
    a += strlen("\nAuthorization:");
    end = strchr(a, '\n');
    if (end) *end = '\0';
    return a;
}

/* Runs one case directory; returns 1 when it was a header-signing case. */
static int run_case(const char *dir, const char *name)
{
    char *ctx_text, *req_text, *want_creq, *want_sts, *want_sig, *want_signed;
    size_t req_len = 0;
    json_t *ctx, *cred;
    json_error_t jerr;
    parsed p;
    at_sigv4_creds c;
    at_sigv4_scope s;
    at_sigv4_request r;
    at_sigv4_result res;
    int rc, have_token = 0;

    want_creq = read_file(dir, "header-canonical-request.txt", NULL);
    if (!want_creq) return 0;
    want_sts = read_file(dir, "header-string-to-sign.txt", NULL);
    want_sig = read_file(dir, "header-signature.txt", NULL);
    want_signed = read_file(dir, "header-signed-request.txt", NULL);
    ctx_text = read_file(dir, "context.json", NULL);
    req_text = read_file(dir, "request.txt", &req_len);
    if (!want_sts || !want_sig || !ctx_text || !req_text || !want_signed)
        fail_msg("%s: incomplete case", name);

    ctx = json_loads(ctx_text, 0, &jerr);
    if (!ctx) fail_msg("%s: context.json: %s", name, jerr.text);
    cred = json_object_get(ctx, "credentials");
    c.access_key = json_string_value(json_object_get(cred, "access_key_id"));
    c.secret_key = json_string_value(json_object_get(cred, "secret_access_key"));
    c.session_token = json_string_value(json_object_get(cred, "token"));
    have_token = c.session_token != NULL;
    s.region = json_string_value(json_object_get(ctx, "region"));
    s.service = json_string_value(json_object_get(ctx, "service"));
    s.time = parse_time(json_string_value(json_object_get(ctx, "timestamp")));
    s.flags = 0;
    if (json_is_false(json_object_get(ctx, "normalize"))) s.flags |= AT_SIGV4_NO_NORMALIZE;
    if (json_is_true(json_object_get(ctx, "sign_body"))) s.flags |= AT_SIGV4_SIGN_BODY;
    if (json_is_true(json_object_get(ctx, "omit_session_token"))) s.flags |= AT_SIGV4_OMIT_TOKEN;

    parse_request(req_text, req_len, &p);
    r.method = p.method;
    r.path = p.path;
    r.query = p.query;
    r.headers = p.headers;
    r.nheaders = p.nheaders;
    r.payload = p.body;
    r.payload_len = p.body_len;

    rc = at_sigv4_sign(&r, &c, &s, &res);
    if (rc) fail_msg("%s: at_sigv4_sign returned %d", name, rc);
    if (strcmp(res.canonical_request, want_creq) != 0)
        fail_msg("%s: canonical request\n--- got\n%s\n--- want\n%s", name, res.canonical_request,
                 want_creq);
    if (strcmp(res.string_to_sign, want_sts) != 0)
        fail_msg("%s: string to sign\n--- got\n%s\n--- want\n%s", name, res.string_to_sign,
                 want_sts);
    if (strcmp(res.signature, want_sig) != 0)
        fail_msg("%s: signature %s, want %s", name, res.signature, want_sig);
    assert_string_equal(res.authorization, authorization_line(want_signed));
    /* The headers to add: X-Amz-Date always, the token whenever there is one (signed or
     * not), the content hash when the body is signed. */
    assert_string_equal(res.add[0].name, "X-Amz-Date");
    assert_string_equal(res.add[0].value, "20150830T123600Z");
    assert_int_equal(res.nadd, 1 + have_token + !!(s.flags & AT_SIGV4_SIGN_BODY));
    if (have_token) assert_string_equal(res.add[1].value, c.session_token);

    at_sigv4_result_release(&res);
    parsed_release(&p);
    json_decref(ctx);
    free(ctx_text);
    free(want_creq);
    free(want_sts);
    free(want_sig);
    free(want_signed);
    return 1;
}

static int name_cmp(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Runs every case under root/SUITE and returns how many were header-signing cases. */
static size_t run_suite(const char *root)
{
    char dir[2048], sub[4096];
    char *names[256];
    size_t n = 0, ran = 0;
    DIR *d;
    struct dirent *e;

    snprintf(dir, sizeof dir, "%s/" SUITE, root);
    d = opendir(dir);
    if (!d) fail_msg("cannot open %s (set AT_FIXTURES to the repository's tests/fixtures)", dir);
    while ((e = readdir(d)) != NULL && n < 256) {
        struct stat st;
        if (e->d_name[0] == '.') continue;
        snprintf(sub, sizeof sub, "%s/%.255s", dir, e->d_name);
        if (stat(sub, &st) == 0 && S_ISDIR(st.st_mode)) names[n++] = strdup(e->d_name);
    }
    closedir(d);
    qsort(names, n, sizeof *names, name_cmp);
    for (size_t i = 0; i < n; i++) {
        snprintf(sub, sizeof sub, "%s/%.255s", dir, names[i]);
        ran += (size_t)run_case(sub, names[i]);
        free(names[i]);
    }
    return ran;
}

static const char *fixtures_root(void)
{
    const char *r = getenv("AT_FIXTURES");
    return r && *r ? r : "tests/fixtures";
}

static void test_aws_c_auth_suite(void **state)
{
    (void)state;
    /* All 38 cases of the suite sign with headers. */
    assert_int_equal(run_suite(fixtures_root()), 38);
}

/* When the shared fixtures are there, the copy must give the same results. */
static void test_shared_copy_matches(void **state)
{
    const char *shared = getenv("AT_SHARED_FIXTURES");
    char dir[2048];
    struct stat st;
    (void)state;
    if (!shared || !*shared) skip();
    snprintf(dir, sizeof dir, "%s/aws/" SUITE, shared);
    if (stat(dir, &st) != 0) skip();
    snprintf(dir, sizeof dir, "%s/aws", shared);
    assert_int_equal(run_suite(dir), 38);
}

/* A DynamoDB request in the shape the client sends, with a session token. */
static void test_dynamodb_shape(void **state)
{
    const char *body = "{\"TableName\":\"t\",\"Key\":{\"k\":{\"S\":\"x\"}}}";
    at_sigv4_header h[] = {
        {"Host", "127.0.0.1:8000"},
        {"Content-Type", "application/x-amz-json-1.0"},
        {"X-Amz-Target", "DynamoDB_20120810.GetItem"},
    };
    at_sigv4_request r = {"POST", "/", NULL, h, 3, body, strlen(body)};
    at_sigv4_creds c = {"AKIDEXAMPLE", "secret", "tok"};
    at_sigv4_scope s = {"eu-west-1", "dynamodb", 1700000000, 0};
    at_sigv4_result res;
    char hash[65];
    (void)state;

    assert_int_equal(at_sigv4_sign(&r, &c, &s, &res), 0);
    at_sigv4_sha256_hex(body, strlen(body), hash);
    assert_string_equal(res.payload_hash, hash);
    assert_non_null(strstr(res.canonical_request,
                           "content-type:application/x-amz-json-1.0\nhost:127.0.0.1:8000\n"
                           "x-amz-date:20231114T221320Z\nx-amz-security-token:tok\n"
                           "x-amz-target:DynamoDB_20120810.GetItem\n\n"
                           "content-type;host;x-amz-date;x-amz-security-token;x-amz-target\n"));
    assert_non_null(strstr(res.authorization, "Credential=AKIDEXAMPLE/20231114/eu-west-1/dynamodb/"
                                              "aws4_request, SignedHeaders=content-type;host;"));
    /* The secret appears nowhere in what the signer hands back. */
    assert_null(strstr(res.canonical_request, "secret"));
    assert_null(strstr(res.string_to_sign, "secret"));
    assert_null(strstr(res.authorization, "secret"));
    at_sigv4_result_release(&res);
}

static void test_path_and_query_encoding(void **state)
{
    at_sigv4_header h[] = {{"Host", "lambda.us-east-1.amazonaws.com"}};
    at_sigv4_request r = {"POST",
                          "/2015-03-31/functions/arn%3Aaws%3Alambda%3Aw/invocations",
                          "Qualifier=%24LATEST&a=b+c&a=",
                          h,
                          1,
                          NULL,
                          0};
    at_sigv4_creds c = {"AK", "SK", NULL};
    at_sigv4_scope s = {"us-east-1", "lambda", 0, 0};
    at_sigv4_result res;
    (void)state;

    assert_int_equal(at_sigv4_sign(&r, &c, &s, &res), 0);
    /* The wire path is encoded once more; query parameters are decoded, re-encoded
     * and sorted by key, then value. */
    assert_non_null(strstr(res.canonical_request,
                           "POST\n/2015-03-31/functions/arn%253Aaws%253Alambda%253Aw/invocations\n"
                           "Qualifier=%24LATEST&a=&a=b%2Bc\n"));
    assert_int_equal(res.nadd, 1);
    at_sigv4_result_release(&res);
}

static void test_refusals(void **state)
{
    at_sigv4_header nohost[] = {{"X-Thing", "1"}};
    at_sigv4_header badname[] = {{"Host", "h"}, {"Bad Name", "1"}};
    at_sigv4_request r = {"GET", "/", NULL, nohost, 1, NULL, 0};
    at_sigv4_creds c = {"AK", "SK", NULL};
    at_sigv4_scope s = {"us-east-1", "service", 0, 0};
    at_sigv4_result res;
    char hash[65];
    (void)state;

    assert_int_equal(at_sigv4_sign(&r, &c, &s, &res), AT_EINVAL);
    at_sigv4_result_release(&res);
    r.headers = badname;
    r.nheaders = 2;
    assert_int_equal(at_sigv4_sign(&r, &c, &s, &res), AT_EINVAL);
    at_sigv4_result_release(&res);
    r.nheaders = 1;
    c.access_key = NULL;
    assert_int_equal(at_sigv4_sign(&r, &c, &s, &res), AT_EINVAL);
    at_sigv4_result_release(&res);
    c.access_key = "AK";
    s.time = -1;
    assert_int_equal(at_sigv4_sign(&r, &c, &s, &res), AT_EINVAL);
    at_sigv4_result_release(&res);

    at_sigv4_sha256_hex(NULL, 0, hash);
    assert_string_equal(hash, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_aws_c_auth_suite), cmocka_unit_test(test_shared_copy_matches),
        cmocka_unit_test(test_dynamodb_shape),   cmocka_unit_test(test_path_and_query_encoding),
        cmocka_unit_test(test_refusals),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
