/* AWS Signature Version 4 (header signing). The canonicalisation follows the AWS
 * documentation and the aws-c-auth test suite: path normalisation and double
 * encoding, sorted re-encoded query parameters, lower-cased sorted headers with
 * trimmed, space-collapsed values, duplicate headers joined with ','. */
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/sha.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "actionstools/sigv4.h"
#include "actionstools/buf.h"
#include "actionstools/err.h"
#include "actionstools/banned.h"

#define SIGV4_MAX_TEXT (1u << 20) /* cap on any canonical text we build */
#define ALGORITHM "AWS4-HMAC-SHA256"

static const char hexdig[] = "0123456789abcdef";
static const char hexup[] = "0123456789ABCDEF";

static void to_hex(const unsigned char *p, size_t n, char *out)
{
    for (size_t i = 0; i < n; i++) {
        out[2 * i] = hexdig[p[i] >> 4];
        out[2 * i + 1] = hexdig[p[i] & 15];
    }
    out[2 * n] = '\0';
}

void at_sigv4_sha256_hex(const void *p, size_t n, char out[65])
{
    unsigned char md[SHA256_DIGEST_LENGTH];
    SHA256(n ? p : (const void *)"", n, md);
    to_hex(md, sizeof md, out);
}

static int is_unreserved(unsigned char c)
{
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' ||
           c == '.' || c == '_' || c == '~';
}

/* Appends n bytes of s percent-encoded with AWS's rules; '/' is kept when keep_slash. */
static int uri_encode(at_buf *b, const char *s, size_t n, int keep_slash)
{
    int rc = 0;
    for (size_t i = 0; i < n && !rc; i++) {
        unsigned char c = (unsigned char)s[i];
        if (is_unreserved(c) || (keep_slash && c == '/')) {
            rc = at_buf_addc(b, (char)c);
        } else {
            char e[3] = {'%', hexup[c >> 4], hexup[c & 15]};
            rc = at_buf_add(b, e, 3);
        }
    }
    return rc;
}

static int hexval(char c)
{
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

/* Appends the percent-decoding of n bytes of s (a malformed escape is kept as is). */
static int uri_decode(at_buf *b, const char *s, size_t n)
{
    int rc = 0;
    for (size_t i = 0; i < n && !rc; i++) {
        int hi, lo;
        if (s[i] == '%' && i + 2 < n && (hi = hexval(s[i + 1])) >= 0 &&
            (lo = hexval(s[i + 2])) >= 0) {
            rc = at_buf_addc(b, (char)(hi << 4 | lo));
            i += 2;
        } else {
            rc = at_buf_addc(b, s[i]);
        }
    }
    return rc;
}

/* The canonical URI: normalised unless told not to, then encoded once more. */
static int canonical_path(at_buf *out, const char *path, int normalize)
{
    const char *p;
    size_t n;
    at_buf norm;
    int rc = 0;

    if (!path || !*path) path = "/";
    if (!normalize) return uri_encode(out, path, strlen(path), 1);

    /* Remove empty, "." and ".." segments (RFC 3986 remove_dot_segments, with
     * repeated slashes collapsed as AWS does). Segments are kept as (offset, length)
     * pairs in a stack inside norm. */
    at_buf_init(&norm, SIGV4_MAX_TEXT);
    {
        size_t len = strlen(path), nseg = 0, cap = len / 2 + 2, *seg = calloc(cap, 2 * sizeof *seg);
        int trailing = 0;
        if (!seg) return AT_ENOMEM;
        p = path;
        while (*p) {
            const char *e;
            while (*p == '/')
                p++;
            if (!*p) {
                trailing = 1;
                break;
            }
            e = strchr(p, '/');
            n = e ? (size_t)(e - p) : strlen(p);
            if (n == 1 && p[0] == '.') {
                trailing = !e || !e[1] ? 1 : trailing;
            } else if (n == 2 && p[0] == '.' && p[1] == '.') {
                if (nseg) nseg--;
                trailing = !e || !e[1] ? 1 : trailing;
            } else {
                seg[2 * nseg] = (size_t)(p - path);
                seg[2 * nseg + 1] = n;
                nseg++;
                trailing = 0;
            }
            p += n;
        }
        for (size_t i = 0; i < nseg && !rc; i++) {
            rc = at_buf_addc(&norm, '/');
            if (!rc) rc = at_buf_add(&norm, path + seg[2 * i], seg[2 * i + 1]);
        }
        if (!rc && (nseg == 0 || trailing)) rc = at_buf_addc(&norm, '/');
        free(seg);
    }
    if (!rc) rc = uri_encode(out, norm.ptr, norm.len, 1);
    at_buf_release(&norm);
    return rc;
}

typedef struct qparam {
    char *key; /* encoded */
    char *val; /* encoded */
} qparam;

static int qparam_cmp(const void *a, const void *b)
{
    const qparam *x = a, *y = b;
    int c = strcmp(x->key, y->key);
    return c ? c : strcmp(x->val, y->val);
}

/* Decodes then re-encodes n bytes of s into a new string at *out. */
static int reencode(const char *s, size_t n, char **out)
{
    at_buf dec, enc;
    int rc;
    at_buf_init(&dec, SIGV4_MAX_TEXT);
    at_buf_init(&enc, SIGV4_MAX_TEXT);
    rc = uri_decode(&dec, s, n);
    if (!rc) rc = uri_encode(&enc, dec.ptr ? dec.ptr : "", dec.len, 0);
    if (!rc) *out = at_buf_take(&enc, NULL);
    if (!rc && !*out) rc = AT_ENOMEM;
    at_buf_release(&dec);
    at_buf_release(&enc);
    return rc;
}

static int canonical_query(at_buf *out, const char *query)
{
    size_t n = 0, cap = 1;
    qparam *v;
    int rc = 0;

    if (!query || !*query) return 0;
    for (const char *p = query; *p; p++)
        if (*p == '&') cap++;
    v = calloc(cap, sizeof *v);
    if (!v) return AT_ENOMEM;
    for (const char *p = query; *p && !rc;) {
        const char *amp = strchr(p, '&');
        size_t len = amp ? (size_t)(amp - p) : strlen(p);
        const char *eq = memchr(p, '=', len);
        if (len) {
            size_t klen = eq ? (size_t)(eq - p) : len;
            rc = reencode(p, klen, &v[n].key);
            if (!rc) rc = reencode(eq ? eq + 1 : "", eq ? len - klen - 1 : 0, &v[n].val);
            n++;
        }
        p += len;
        if (*p == '&') p++;
    }
    if (!rc) qsort(v, n, sizeof *v, qparam_cmp);
    for (size_t i = 0; i < n && !rc; i++)
        rc = at_buf_printf(out, "%s%s=%s", i ? "&" : "", v[i].key, v[i].val);
    for (size_t i = 0; i < n; i++) {
        free(v[i].key);
        free(v[i].val);
    }
    free(v);
    return rc;
}

typedef struct hdr {
    char *name;        /* lower-case, owned */
    const char *value; /* borrowed */
    size_t order;      /* position given, for a stable sort */
} hdr;

static int hdr_cmp(const void *a, const void *b)
{
    const hdr *x = a, *y = b;
    int c = strcmp(x->name, y->name);
    if (c) return c;
    return x->order < y->order ? -1 : x->order > y->order;
}

static int is_space(char c)
{
    return c == ' ' || c == '\t' || c == '\r' || c == '\n';
}

static int is_token_char(unsigned char c)
{
    return c > 32 && c < 127 && !strchr("\"(),/:;<=>?@[\\]{}", c);
}

/* Appends value trimmed, with runs of white space collapsed to one space. */
static int add_trimmed(at_buf *b, const char *v)
{
    int rc = 0, pending = 0;
    while (is_space(*v))
        v++;
    for (; *v && !rc; v++) {
        if (is_space(*v)) {
            pending = 1;
            continue;
        }
        if (pending) rc = at_buf_addc(b, ' ');
        pending = 0;
        if (!rc) rc = at_buf_addc(b, *v);
    }
    return rc;
}

/* Builds the canonical headers block and the signed-headers list. */
static int canonical_headers(at_buf *block, at_buf *names, const at_sigv4_header *given,
                             size_t ngiven, const at_sigv4_header *extra, size_t nextra)
{
    size_t n = ngiven + nextra, i;
    hdr *v = calloc(n ? n : 1, sizeof *v);
    int rc = 0, have_host = 0;

    if (!v) return AT_ENOMEM;
    for (i = 0; i < n && !rc; i++) {
        const at_sigv4_header *h = i < ngiven ? &given[i] : &extra[i - ngiven];
        const char *nm = h->name;
        size_t len;
        if (!nm || !h->value) {
            rc = AT_EINVAL;
            break;
        }
        while (is_space(*nm))
            nm++;
        len = strlen(nm);
        while (len && is_space(nm[len - 1]))
            len--;
        if (!len) {
            rc = AT_EINVAL;
            break;
        }
        v[i].name = malloc(len + 1);
        if (!v[i].name) {
            rc = AT_ENOMEM;
            break;
        }
        for (size_t k = 0; k < len; k++) {
            unsigned char c = (unsigned char)nm[k];
            if (!is_token_char(c)) rc = AT_EINVAL;
            v[i].name[k] = (char)(c >= 'A' && c <= 'Z' ? c + 32 : c);
        }
        v[i].name[len] = '\0';
        v[i].value = h->value;
        v[i].order = i;
        if (strcmp(v[i].name, "host") == 0) have_host = 1;
    }
    if (!rc && !have_host) rc = AT_EINVAL;
    if (!rc) qsort(v, n, sizeof *v, hdr_cmp);
    for (i = 0; i < n && !rc; i++) {
        int first = i == 0 || strcmp(v[i].name, v[i - 1].name) != 0;
        int last = i + 1 == n || strcmp(v[i].name, v[i + 1].name) != 0;
        if (first) {
            rc = at_buf_printf(block, "%s:", v[i].name);
            if (!rc && names->len) rc = at_buf_addc(names, ';');
            if (!rc) rc = at_buf_adds(names, v[i].name);
        } else {
            rc = at_buf_addc(block, ',');
        }
        if (!rc) rc = add_trimmed(block, v[i].value);
        if (!rc && last) rc = at_buf_addc(block, '\n');
    }
    for (i = 0; i < n; i++)
        free(v[i].name);
    free(v);
    return rc;
}

static int hmac(const void *key, size_t keylen, const char *msg, unsigned char out[32])
{
    unsigned int len = 32;
    return HMAC(EVP_sha256(), key, (int)keylen, (const unsigned char *)msg, strlen(msg), out, &len)
               ? 0
               : AT_ENOMEM;
}

/* Derives the signing key and signs sts into hex. */
static int sign(const char *secret, const char *date, const char *region, const char *service,
                const char *sts, char out[65])
{
    unsigned char k[32], sig[32];
    at_buf seed;
    int rc;

    at_buf_init(&seed, 4096);
    rc = at_buf_printf(&seed, "AWS4%s", secret);
    if (!rc) rc = hmac(seed.ptr, seed.len, date, k);
    if (!rc) rc = hmac(k, sizeof k, region, k);
    if (!rc) rc = hmac(k, sizeof k, service, k);
    if (!rc) rc = hmac(k, sizeof k, "aws4_request", k);
    if (!rc) rc = hmac(k, sizeof k, sts, sig);
    if (!rc) to_hex(sig, sizeof sig, out);
    OPENSSL_cleanse(k, sizeof k);
    if (seed.ptr) OPENSSL_cleanse(seed.ptr, seed.len);
    at_buf_release(&seed);
    return rc;
}

int at_sigv4_sign(const at_sigv4_request *r, const at_sigv4_creds *c, const at_sigv4_scope *s,
                  at_sigv4_result *out)
{
    at_buf creq, block, names, sts;
    at_sigv4_header extra[AT_SIGV4_MAX_ADD];
    size_t nextra = 0;
    char date[9], creq_hash[65];
    struct tm tm;
    time_t t;
    int rc = 0;
    int has_token;

    memset(out, 0, sizeof *out);
    at_buf_init(&creq, SIGV4_MAX_TEXT);
    at_buf_init(&block, SIGV4_MAX_TEXT);
    at_buf_init(&names, SIGV4_MAX_TEXT);
    at_buf_init(&sts, 4096);

    if (!r || !c || !s || !r->method || !*r->method || !c->access_key || !*c->access_key ||
        !c->secret_key || !s->region || !*s->region || !s->service || !*s->service ||
        (r->nheaders && !r->headers) || (r->payload_len && !r->payload)) {
        rc = AT_EINVAL;
        goto out;
    }
    t = (time_t)s->time;
    if (s->time < 0 || (int64_t)t != s->time || !gmtime_r(&t, &tm) ||
        !strftime(out->amz_date, sizeof out->amz_date, "%Y%m%dT%H%M%SZ", &tm)) {
        rc = AT_EINVAL;
        goto out;
    }
    memcpy(date, out->amz_date, 8);
    date[8] = '\0';
    at_sigv4_sha256_hex(r->payload, r->payload_len, out->payload_hash);

    has_token = c->session_token && *c->session_token;
    out->add[out->nadd++] = (at_sigv4_header){"X-Amz-Date", out->amz_date};
    extra[nextra++] = out->add[out->nadd - 1];
    if (has_token) {
        out->add[out->nadd++] = (at_sigv4_header){"X-Amz-Security-Token", c->session_token};
        if (!(s->flags & AT_SIGV4_OMIT_TOKEN)) extra[nextra++] = out->add[out->nadd - 1];
    }
    if (s->flags & AT_SIGV4_SIGN_BODY) {
        out->add[out->nadd++] = (at_sigv4_header){"x-amz-content-sha256", out->payload_hash};
        extra[nextra++] = out->add[out->nadd - 1];
    }

    rc = at_buf_printf(&creq, "%s\n", r->method);
    if (!rc) rc = canonical_path(&creq, r->path, !(s->flags & AT_SIGV4_NO_NORMALIZE));
    if (!rc) rc = at_buf_addc(&creq, '\n');
    if (!rc) rc = canonical_query(&creq, r->query);
    if (!rc) rc = at_buf_addc(&creq, '\n');
    if (!rc) rc = canonical_headers(&block, &names, r->headers, r->nheaders, extra, nextra);
    if (!rc)
        rc = at_buf_printf(&creq, "%s\n%s\n%s", at_buf_str(&block), at_buf_str(&names),
                           out->payload_hash);
    if (rc) goto out;

    at_sigv4_sha256_hex(creq.ptr, creq.len, creq_hash);
    rc = at_buf_printf(&sts, ALGORITHM "\n%s\n%s/%s/%s/aws4_request\n%s", out->amz_date, date,
                       s->region, s->service, creq_hash);
    if (!rc) rc = sign(c->secret_key, date, s->region, s->service, sts.ptr, out->signature);
    if (rc) goto out;

    out->canonical_request = at_buf_take(&creq, NULL);
    out->string_to_sign = at_buf_take(&sts, NULL);
    {
        at_buf auth;
        at_buf_init(&auth, SIGV4_MAX_TEXT);
        rc = at_buf_printf(&auth,
                           ALGORITHM " Credential=%s/%s/%s/%s/aws4_request, SignedHeaders=%s, "
                                     "Signature=%s",
                           c->access_key, date, s->region, s->service, at_buf_str(&names),
                           out->signature);
        out->authorization = rc ? NULL : at_buf_take(&auth, NULL);
        at_buf_release(&auth);
    }
    if (!rc && (!out->canonical_request || !out->string_to_sign || !out->authorization))
        rc = AT_ENOMEM;

out:
    at_buf_release(&creq);
    at_buf_release(&block);
    at_buf_release(&names);
    at_buf_release(&sts);
    return rc;
}

void at_sigv4_result_release(at_sigv4_result *res)
{
    if (!res) return;
    free(res->canonical_request);
    free(res->string_to_sign);
    free(res->authorization);
    memset(res, 0, sizeof *res);
}
