/* A signed HTTP client for AWS services over libcurl: signing, keep-alive, retries
 * (client.h).
 *
 * Connections: easy handles are kept in a LIFO pool shared by all threads. A call
 * takes the most recently returned handle (whose connection is the warmest), so a
 * thread that makes calls one after the other keeps reusing one handle and its
 * kept-alive connection, and no handle is lost when a thread ends (the HTTP server
 * may run a thread per client connection). The pool grows to the peak number of
 * concurrent calls. DNS and TLS sessions are shared between handles. */
#include <curl/curl.h>
#include <openssl/crypto.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "aws/client.h"
#include "actionstools/buf.h"
#include "actionstools/err.h"
#include "actionstools/log.h"
#include "actionstools/sigv4.h"
#include "actionstools/timeutil.h"
#include "actionstools/banned.h"

struct at_aws_client {
    char *service; /* SigV4 service name */
    char *url;     /* endpoint, no trailing '/' */
    char *host; /* authority sent and signed as Host */
    char *region;
    char *access_key;
    char *secret_key;
    char *session_token; /* NULL when none */
    long connect_ms, request_ms;
    int max_retries;

    pthread_mutex_t lock; /* guards the pool */
    CURL **pool;
    size_t npool, cappool;

    CURLSH *share;
    pthread_mutex_t share_lock[CURL_LOCK_DATA_LAST];

    at_aws_stats stats; /* atomic */
};

static void errmsg(char *err, size_t n, const char *msg)
{
    if (err && n) snprintf(err, n, "%s", msg);
}

/* ---- curl setup ------------------------------------------------------------------ */

static pthread_once_t curl_once = PTHREAD_ONCE_INIT;
static CURLcode curl_init_rc;

static void curl_init(void)
{
    curl_init_rc = curl_global_init(CURL_GLOBAL_DEFAULT);
}

static void share_lock(CURL *h, curl_lock_data d, curl_lock_access a, void *u)
{
    at_aws_client *c = u;
    (void)h;
    (void)a;
    if ((unsigned)d < CURL_LOCK_DATA_LAST) pthread_mutex_lock(&c->share_lock[d]);
}

static void share_unlock(CURL *h, curl_lock_data d, void *u)
{
    at_aws_client *c = u;
    (void)h;
    if ((unsigned)d < CURL_LOCK_DATA_LAST) pthread_mutex_unlock(&c->share_lock[d]);
}

static char *dup_or_null(const char *s)
{
    return s && *s ? strdup(s) : NULL;
}

/* Splits an endpoint URL into the URL we post to and the Host authority. */
static int parse_endpoint(at_aws_client *c, const char *endpoint, const char *setting, char *err,
                          size_t errlen)
{
    const char *auth, *end;
    size_t n = strlen(endpoint);

    while (n && endpoint[n - 1] == '/')
        n--;
    if (strncmp(endpoint, "http://", 7) == 0)
        auth = endpoint + 7;
    else if (strncmp(endpoint, "https://", 8) == 0)
        auth = endpoint + 8;
    else {
        if (err && errlen) snprintf(err, errlen, "%s must start with http:// or https://", setting);
        return AT_EINVAL;
    }
    end = auth;
    while (end < endpoint + n && *end != '/' && *end != '?' && *end != '#')
        end++;
    if (end == auth || end != endpoint + n || memchr(auth, '@', (size_t)(end - auth))) {
        if (err && errlen)
            snprintf(err, errlen,
                     "%s must be scheme://host[:port] with no path or user, "
                     "e.g. http://127.0.0.1:8000",
                     setting);
        return AT_EINVAL;
    }
    c->url = strndup(endpoint, n);
    c->host = strndup(auth, (size_t)(end - auth));
    return c->url && c->host ? 0 : AT_ENOMEM;
}

int at_aws_client_new(const at_aws_options *o, const char *service, const char *setting,
                      at_aws_client **out, char *err, size_t errlen)
{
    at_aws_client *c;
    int rc = 0;
    char url[256];

    *out = NULL;
    pthread_once(&curl_once, curl_init);
    if (curl_init_rc != CURLE_OK) {
        errmsg(err, errlen, "libcurl could not be initialised");
        return AT_ENOMEM;
    }
    c = calloc(1, sizeof *c);
    if (!c) return AT_ENOMEM;
    pthread_mutex_init(&c->lock, NULL);
    for (int i = 0; i < CURL_LOCK_DATA_LAST; i++)
        pthread_mutex_init(&c->share_lock[i], NULL);

    c->region = strdup(o->region && *o->region ? o->region : "us-east-1");
    c->service = strdup(service);
    if (!c->region || !c->service) {
        rc = AT_ENOMEM;
        goto out;
    }
    if (o->endpoint && *o->endpoint) {
        rc = parse_endpoint(c, o->endpoint, setting, err, errlen);
    } else {
        snprintf(url, sizeof url, "https://%s.%s.amazonaws.com", c->service, c->region);
        rc = parse_endpoint(c, url, setting, err, errlen);
    }
    if (rc) goto out;

    if (o->access_key && *o->access_key && o->secret_key && *o->secret_key) {
        c->access_key = strdup(o->access_key);
        c->secret_key = strdup(o->secret_key);
        c->session_token = dup_or_null(o->session_token);
    } else if (o->endpoint && *o->endpoint) {
        /* A local server (dynalite, DynamoDB Local) wants a signature of some key. */
        c->access_key = strdup("local");
        c->secret_key = strdup("local");
    } else {
        if (err && errlen)
            snprintf(err, errlen, "AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY must be set to use %s",
                     c->service);
        rc = AT_EINVAL;
        goto out;
    }
    if (!c->access_key || !c->secret_key ||
        (o->session_token && *o->session_token && !c->session_token)) {
        rc = AT_ENOMEM;
        goto out;
    }
    c->connect_ms =
        o->connect_timeout_ms > 0 ? o->connect_timeout_ms : AT_AWS_DEFAULT_CONNECT_TIMEOUT_MS;
    c->request_ms =
        o->request_timeout_ms > 0 ? o->request_timeout_ms : AT_AWS_DEFAULT_REQUEST_TIMEOUT_MS;
    c->max_retries = o->max_retries >= 0 ? o->max_retries : AT_AWS_DEFAULT_MAX_RETRIES;

    c->share = curl_share_init();
    if (!c->share) {
        rc = AT_ENOMEM;
        goto out;
    }
    curl_share_setopt(c->share, CURLSHOPT_LOCKFUNC, share_lock);
    curl_share_setopt(c->share, CURLSHOPT_UNLOCKFUNC, share_unlock);
    curl_share_setopt(c->share, CURLSHOPT_USERDATA, c);
    curl_share_setopt(c->share, CURLSHOPT_SHARE, CURL_LOCK_DATA_DNS);
    curl_share_setopt(c->share, CURLSHOPT_SHARE, CURL_LOCK_DATA_SSL_SESSION);

out:
    if (rc) {
        at_aws_client_free(c);
        return rc;
    }
    *out = c;
    return 0;
}

static void wipe_free(char *s)
{
    if (s) {
        volatile char *p = s;
        while (*p)
            *p++ = 0;
        free(s);
    }
}

void at_aws_client_free(at_aws_client *c)
{
    if (!c) return;
    for (size_t i = 0; i < c->npool; i++)
        curl_easy_cleanup(c->pool[i]);
    free(c->pool);
    if (c->share) curl_share_cleanup(c->share);
    for (int i = 0; i < CURL_LOCK_DATA_LAST; i++)
        pthread_mutex_destroy(&c->share_lock[i]);
    pthread_mutex_destroy(&c->lock);
    free(c->service);
    free(c->url);
    free(c->host);
    free(c->region);
    free(c->access_key);
    wipe_free(c->secret_key);
    wipe_free(c->session_token);
    free(c);
}

/* Takes a handle from the pool (the most recently returned), or makes one. */
static CURL *handle_take(at_aws_client *c)
{
    CURL *h = NULL;
    pthread_mutex_lock(&c->lock);
    if (c->npool) h = c->pool[--c->npool];
    pthread_mutex_unlock(&c->lock);
    if (h) return h;
    h = curl_easy_init();
    if (!h) return NULL;
    curl_easy_setopt(h, CURLOPT_SHARE, c->share);
    curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(h, CURLOPT_TCP_KEEPALIVE, 1L);
    curl_easy_setopt(h, CURLOPT_TCP_NODELAY, 1L);
    curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(h, CURLOPT_FOLLOWLOCATION, 0L);
    curl_easy_setopt(h, CURLOPT_USERAGENT, "actionstools/" AT_VERSION);
    return h;
}

/* Returns a handle to the pool; a handle that cannot be kept is freed. */
static void handle_give(at_aws_client *c, CURL *h)
{
    if (!h) return;
    pthread_mutex_lock(&c->lock);
    if (c->npool == c->cappool) {
        size_t cap = c->cappool ? 2 * c->cappool : 8;
        CURL **p = realloc(c->pool, cap * sizeof *p);
        if (p) {
            c->pool = p;
            c->cappool = cap;
        }
    }
    if (c->npool < c->cappool) {
        c->pool[c->npool++] = h;
        h = NULL;
    }
    pthread_mutex_unlock(&c->lock);
    if (h) curl_easy_cleanup(h);
}

/* ---- stats ---------------------------------------------------------------------- */

#define ADD(field) __atomic_add_fetch(&(field), 1, __ATOMIC_RELAXED)
#define LOAD(field) __atomic_load_n(&(field), __ATOMIC_RELAXED)
#define ZERO(field) __atomic_store_n(&(field), 0, __ATOMIC_RELAXED)

void at_aws_client_stats(const at_aws_client *c, at_aws_stats *out)
{
    out->requests = LOAD(c->stats.requests);
    out->retries = LOAD(c->stats.retries);
    out->fresh_retries = LOAD(c->stats.fresh_retries);
    out->connects = LOAD(c->stats.connects);
}

void at_aws_client_reset_stats(at_aws_client *c)
{
    ZERO(c->stats.requests);
    ZERO(c->stats.retries);
    ZERO(c->stats.fresh_retries);
    ZERO(c->stats.connects);
}

/* ---- backoff -------------------------------------------------------------------- */

/* A per-thread xorshift generator: jitter needs no cryptographic quality, only
 * independence between threads and processes. */
static uint64_t next_random(void)
{
    static __thread uint64_t state;
    uint64_t x = state;
    if (!x) {
        x = (uint64_t)at_now_us() ^ ((uint64_t)(uintptr_t)&state << 16) ^ (uint64_t)pthread_self();
        if (!x) x = 0x9e3779b97f4a7c15ull;
    }
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    state = x;
    return x;
}

long at_aws_backoff_ms(int attempt, long base_ms, long cap_ms)
{
    long ceiling = base_ms;
    for (int i = 0; i < attempt && ceiling < cap_ms; i++)
        ceiling *= 2;
    if (ceiling > cap_ms) ceiling = cap_ms;
    if (ceiling <= 0) return 0;
    return (long)(next_random() % (uint64_t)(ceiling + 1));
}

static void sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0) {
    }
}

/* ---- errors --------------------------------------------------------------------- */

int at_aws_error_type(const char *header, const json_t *body, char *out, size_t n)
{
    const char *t = header;
    const char *hash, *start, *end;
    size_t len;

    if (n) out[0] = '\0';
    if (!t || !*t) t = json_string_value(json_object_get(body, "__type"));
    if (!t || !*t) t = json_string_value(json_object_get(body, "code"));
    if (!t || !*t) return 0;
    while (*t == ' ' || *t == '\t')
        t++;
    end = strchr(t, ':');
    if (!end) end = t + strlen(t);
    while (end > t && (end[-1] == ' ' || end[-1] == '\t' || end[-1] == '\r' || end[-1] == '\n'))
        end--;
    start = t;
    for (hash = t; hash < end; hash++)
        if (*hash == '#') start = hash + 1;
    len = (size_t)(end - start);
    if (!len || !n) return 0;
    if (len >= n) len = n - 1;
    memcpy(out, start, len);
    out[len] = '\0';
    return 1;
}

static int type_in(const char *type, const char *const *list)
{
    for (; *list; list++)
        if (strcmp(type, *list) == 0) return 1;
    return 0;
}

static const char *const throttling_types[] = {
    "ProvisionedThroughputExceededException",
    "ThrottlingException",
    "RequestLimitExceeded",
    "Throttling",
    "TooManyRequestsException",
    "LimitExceededException",
    "ThrottledException",
    NULL,
};

/* Maps an HTTP answer to an AT_* code; *retry is set when it is worth retrying. A
 * refusal no retry can mend is AT_EIO here: the service's client maps its type. */
static int classify(long status, const char *type, int *retry)
{
    *retry = 0;
    if (status >= 200 && status < 300) return 0;
    if (type_in(type, throttling_types) || status == 429) {
        *retry = 1;
        return AT_ETHROTTLED;
    }
    if (status >= 500) {
        *retry = 1;
        return AT_EUNAVAIL;
    }
    if (status == 413) return AT_ETOOBIG;
    return AT_EIO;
}

/* Copies an AWS error message, unless it may echo credentials. */
static void copy_message(at_aws_client *c, const json_t *body, const char *type, char *out,
                         size_t n)
{
    const char *m = json_string_value(json_object_get(body, "message"));
    if (!m) m = json_string_value(json_object_get(body, "Message"));
    if (!m) m = "";
    /* InvalidSignatureException repeats the canonical request, which holds the
     * session token; never keep such text. */
    if (strstr(type, "Signature") || (c->session_token && strstr(m, c->session_token)) ||
        strstr(m, c->secret_key))
        m = "(message withheld: it may contain credentials)";
    snprintf(out, n, "%s", m);
}

/* ---- one call ------------------------------------------------------------------- */

typedef struct answer {
    at_buf *body;
    int too_big;      /* the answer passed the body's cap */
    char errtype[96]; /* X-Amzn-ErrorType header */
} answer;

static size_t on_body(char *p, size_t size, size_t n, void *u)
{
    answer *a = u;
    int rc = at_buf_add(a->body, p, size * n);
    if (rc == AT_ETOOBIG) a->too_big = 1;
    return rc ? 0 : size * n;
}

static size_t on_header(char *p, size_t size, size_t n, void *u)
{
    answer *a = u;
    size_t len = size * n;
    static const char name[] = "x-amzn-errortype:";
    if (len > sizeof name - 1 && strncasecmp(p, name, sizeof name - 1) == 0) {
        size_t vlen = len - (sizeof name - 1);
        if (vlen >= sizeof a->errtype) vlen = sizeof a->errtype - 1;
        memcpy(a->errtype, p + sizeof name - 1, vlen);
        a->errtype[vlen] = '\0';
    }
    return len;
}

/* Builds the signed header list of one attempt. */
static int make_headers(at_aws_client *c, const at_aws_request *r, struct curl_slist **out)
{
    char line[8192];
    at_sigv4_header h[AT_AWS_MAX_HEADERS + 1];
    at_sigv4_request sr;
    at_sigv4_creds cr = {c->access_key, c->secret_key, c->session_token};
    at_sigv4_scope s = {c->region, c->service, at_now_us() / 1000000, 0};
    at_sigv4_result res;
    struct curl_slist *l = NULL, *t;
    size_t nh = 0;
    int rc;

    *out = NULL;
    memset(&res, 0, sizeof res);
    h[nh++] = (at_sigv4_header){"Host", c->host};
    for (size_t i = 0; i < r->nheaders; i++)
        h[nh++] = r->headers[i];
    sr = (at_sigv4_request){r->method, r->path, r->query, h, nh, r->body, r->len};
    rc = at_sigv4_sign(&sr, &cr, &s, &res);
    if (rc) goto out;

#define APPEND(...)                                                                                \
    do {                                                                                           \
        snprintf(line, sizeof line, __VA_ARGS__);                                                  \
        t = curl_slist_append(l, line);                                                            \
        if (!t) {                                                                                  \
            rc = AT_ENOMEM;                                                                        \
            goto out;                                                                              \
        }                                                                                          \
        l = t;                                                                                     \
    } while (0)

    for (size_t i = 0; i < nh; i++)
        APPEND("%s: %s", h[i].name, h[i].value);
    for (size_t i = 0; i < res.nadd; i++)
        APPEND("%s: %s", res.add[i].name, res.add[i].value);
    APPEND("Authorization: %s", res.authorization);
    APPEND("Expect:"); /* no 100-continue round trip for large bodies */
    APPEND("Accept: application/json");
#undef APPEND
    *out = l;
    l = NULL;
out:
    curl_slist_free_all(l);
    at_sigv4_result_release(&res);
    OPENSSL_cleanse(line, sizeof line); /* it held the session token */
    return rc;
}

/* Sets the method, URL and body of one attempt on a reused handle. */
static int set_request(at_aws_client *c, CURL *h, const at_aws_request *r, at_buf *url)
{
    at_buf_reset(url);
    if (at_buf_adds(url, c->url) || at_buf_adds(url, r->path && *r->path ? r->path : "/") ||
        (r->query && *r->query && (at_buf_addc(url, '?') || at_buf_adds(url, r->query))))
        return AT_ENOMEM;
    curl_easy_setopt(h, CURLOPT_URL, at_buf_str(url));
    if (strcmp(r->method, "GET") == 0) {
        curl_easy_setopt(h, CURLOPT_HTTPGET, 1L);
        curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, NULL);
        return 0;
    }
    curl_easy_setopt(h, CURLOPT_POST, 1L);
    curl_easy_setopt(h, CURLOPT_POSTFIELDS, r->len ? r->body : "");
    curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)r->len);
    curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, strcmp(r->method, "POST") == 0 ? NULL : r->method);
    return 0;
}

static int is_connection_error(CURLcode cc)
{
    return cc == CURLE_SEND_ERROR || cc == CURLE_RECV_ERROR || cc == CURLE_GOT_NOTHING ||
           cc == CURLE_PARTIAL_FILE;
}

static void log_retry(at_aws_client *c, const char *label, int attempt, long status,
                      const char *why, long sleep)
{
    json_t *f;
    if (!at_log_enabled(AT_LOG_WARN)) return;
    f = json_pack("{s:s, s:s, s:i, s:I, s:s, s:I}", "service", c->service, "op", label, "attempt",
                  attempt + 1, "status", (json_int_t)status, "reason", why, "backoff_ms",
                  (json_int_t)sleep);
    at_log_json(AT_LOG_WARN, "aws request failed, retrying", f);
    json_decref(f);
}

static void log_giveup(at_aws_client *c, const char *label, int attempts, long status,
                       const char *why, int rc)
{
    json_t *f;
    if (!at_log_enabled(AT_LOG_WARN)) return;
    f = json_pack("{s:s, s:s, s:i, s:I, s:s, s:s}", "service", c->service, "op", label,
                  "attempts", attempts, "status", (json_int_t)status, "reason", why, "error",
                  at_strerror(rc));
    at_log_json(AT_LOG_WARN, "aws request failed", f);
    json_decref(f);
}

/* Reads the error type and message of a refused request from its answer. */
static void read_refusal(at_aws_client *c, const answer *a, at_aws_error *e)
{
    json_t *doc = NULL;
    if (a->body->len && a->body->ptr[0] == '{')
        doc = json_loadb(a->body->ptr, a->body->len, JSON_ALLOW_NUL, NULL);
    at_aws_error_type(a->errtype[0] ? a->errtype : NULL, doc, e->type, sizeof e->type);
    copy_message(c, doc, e->type, e->message, sizeof e->message);
    json_decref(doc);
}

int at_aws_call(at_aws_client *c, const at_aws_request *r, at_buf *body, at_aws_error *e)
{
    at_aws_error local;
    const char *label = r->label ? r->label : r->method;
    CURL *h = NULL;
    at_buf url;
    answer a;
    int rc = 0, attempt = 0, fresh_tried = 0;
    int64_t deadline = at_monotonic_us() + (int64_t)c->request_ms * 1000;

    if (!e) e = &local;
    memset(e, 0, sizeof *e);
    memset(&a, 0, sizeof a);
    a.body = body;
    at_buf_init(&url, 4096);
    at_buf_reset(body);
    if (!r->method || r->nheaders > AT_AWS_MAX_HEADERS || (r->len && !r->body)) return AT_EINVAL;
    if (r->len > AT_AWS_MAX_REQUEST) return AT_ETOOBIG;
    h = handle_take(c);
    if (!h) return AT_ENOMEM;

    for (;;) {
        struct curl_slist *headers = NULL;
        CURLcode cc;
        long status = 0, connects = 0, left_ms, sleep = 0;
        int retry = 0;
        const char *why = "";

        left_ms = (long)((deadline - at_monotonic_us()) / 1000);
        if (left_ms <= 0) {
            rc = AT_EUNAVAIL;
            snprintf(e->message, sizeof e->message, "no answer within %ld ms", c->request_ms);
            break;
        }
        rc = make_headers(c, r, &headers);
        if (!rc) rc = set_request(c, h, r, &url);
        if (rc) {
            curl_slist_free_all(headers);
            break;
        }
        at_buf_reset(body);
        a.too_big = 0;
        a.errtype[0] = '\0';
        curl_easy_setopt(h, CURLOPT_HTTPHEADER, headers);
        curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_body);
        curl_easy_setopt(h, CURLOPT_WRITEDATA, &a);
        curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, on_header);
        curl_easy_setopt(h, CURLOPT_HEADERDATA, &a);
        curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, left_ms);
        curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS,
                         c->connect_ms < left_ms ? c->connect_ms : left_ms);
        curl_easy_setopt(h, CURLOPT_FRESH_CONNECT, fresh_tried == 1 ? 1L : 0L);

        ADD(c->stats.requests);
        if (r->counter) ADD(*r->counter);
        e->attempts++;
        cc = curl_easy_perform(h);
        curl_slist_free_all(headers);
        curl_easy_setopt(h, CURLOPT_HTTPHEADER, NULL);
        curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status);
        curl_easy_getinfo(h, CURLINFO_NUM_CONNECTS, &connects);
        if (connects > 0)
            __atomic_add_fetch(&c->stats.connects, (uint64_t)connects, __ATOMIC_RELAXED);
        if (fresh_tried == 1) fresh_tried = 2;
        e->http_status = cc == CURLE_OK ? status : 0;
        e->type[0] = '\0';
        e->message[0] = '\0';

        if (cc != CURLE_OK) {
            why = curl_easy_strerror(cc);
            snprintf(e->message, sizeof e->message, "%s", why);
            if (cc == CURLE_OUT_OF_MEMORY) {
                rc = AT_ENOMEM;
                break;
            }
            if (cc == CURLE_WRITE_ERROR && a.too_big) {
                rc = AT_ETOOBIG;
                break;
            }
            /* A kept-alive connection the server had closed: repeat at once on a new
             * one, once, without counting it as a retry. */
            if (connects == 0 && !fresh_tried && is_connection_error(cc)) {
                fresh_tried = 1;
                ADD(c->stats.fresh_retries);
                continue;
            }
            rc = AT_EUNAVAIL;
            retry = 1;
        } else {
            if (status < 200 || status >= 300) read_refusal(c, &a, e);
            rc = classify(status, e->type, &retry);
            if (rc == 0) break;
            why = e->type[0] ? e->type : "HTTP error";
        }
        if (!retry) break;
        if (attempt >= c->max_retries) {
            log_giveup(c, label, e->attempts, e->http_status, why, rc);
            break;
        }
        sleep = at_aws_backoff_ms(attempt, AT_AWS_BACKOFF_BASE_MS, AT_AWS_BACKOFF_CAP_MS);
        left_ms = (long)((deadline - at_monotonic_us()) / 1000);
        if (sleep >= left_ms) {
            log_giveup(c, label, e->attempts, e->http_status, why, rc);
            break;
        }
        log_retry(c, label, attempt, e->http_status, why, sleep);
        sleep_ms(sleep);
        attempt++;
        ADD(c->stats.retries);
    }
    if (rc) at_buf_reset(body);
    handle_give(c, h);
    at_buf_release(&url);
    return rc;
}
