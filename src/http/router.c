/* The router: route patterns split into segments, matched segment by segment. There
 * are few routes, so a linear pass is faster than anything cleverer.
 *
 * Paths arrive raw (as sent, percent-encoded). They are split on '/' first and each
 * segment is then percent-decoded once (SPEC §4 "Paths and framing"), so an encoded
 * "%2F" stays inside its segment and "%00" cannot cut an id short. */
#include <stdlib.h>
#include <string.h>

#include "router.h"
#include "actionstools/err.h"
#include "actionstools/banned.h"

#define MAX_SEGS 8

typedef struct {
    const at_route *route;
    char *segs[MAX_SEGS]; /* "{name}" segments are parameters */
    size_t nsegs;
} compiled_route;

struct at_router {
    compiled_route *v;
    size_t n;
    char *storage; /* the copied patterns the segments point into */
};

static size_t split(char *path, char *segs[MAX_SEGS + 1])
{
    size_t n = 0;
    char *p = path;
    if (*p == '/') p++;
    if (!*p) return 0;
    while (n <= MAX_SEGS) {
        char *slash = strchr(p, '/');
        segs[n++] = p;
        if (!slash) break;
        *slash = '\0';
        p = slash + 1;
    }
    return n;
}

int at_router_new(const at_route *routes, at_router **out)
{
    at_router *r;
    size_t n = 0, bytes = 0, off = 0;

    *out = NULL;
    while (routes[n].method) bytes += strlen(routes[n++].pattern) + 1;
    r = calloc(1, sizeof *r);
    if (!r) return AT_ENOMEM;
    r->v = calloc(n ? n : 1, sizeof *r->v);
    r->storage = malloc(bytes ? bytes : 1);
    if (!r->v || !r->storage) {
        at_router_free(r);
        return AT_ENOMEM;
    }
    for (size_t i = 0; i < n; i++) {
        char *copy = r->storage + off, *segs[MAX_SEGS + 1];
        size_t len = strlen(routes[i].pattern), nsegs;
        memcpy(copy, routes[i].pattern, len + 1);
        off += len + 1;
        nsegs = split(copy, segs);
        if (routes[i].pattern[0] != '/' || nsegs > MAX_SEGS) {
            at_router_free(r);
            return AT_EINVAL;
        }
        r->v[i].route = &routes[i];
        r->v[i].nsegs = nsegs;
        memcpy(r->v[i].segs, segs, nsegs * sizeof segs[0]);
    }
    r->n = n;
    *out = r;
    return 0;
}

void at_router_free(at_router *r)
{
    if (!r) return;
    free(r->v);
    free(r->storage);
    free(r);
}

static int is_param(const char *seg)
{
    return seg[0] == '{';
}

static int hexval(char c)
{
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

/* Returns 1 when the n bytes at s are well-formed UTF-8 (no overlong forms, no
 * surrogates, nothing past U+10FFFF) without a NUL. */
static int valid_utf8(const unsigned char *s, size_t n)
{
    size_t i = 0;
    while (i < n) {
        unsigned c = s[i], need, min, cp;
        if (c == 0) return 0;
        if (c < 0x80) {
            i++;
            continue;
        }
        if (c >= 0xC2 && c <= 0xDF) need = 1, min = 0x80, cp = c & 0x1F;
        else if (c >= 0xE0 && c <= 0xEF) need = 2, min = 0x800, cp = c & 0x0F;
        else if (c >= 0xF0 && c <= 0xF4) need = 3, min = 0x10000, cp = c & 0x07;
        else return 0;
        if (n - i <= need) return 0;
        for (unsigned k = 1; k <= need; k++) {
            if ((s[i + k] & 0xC0) != 0x80) return 0;
            cp = (cp << 6) | (s[i + k] & 0x3F);
        }
        if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return 0;
        i += need + 1;
    }
    return 1;
}

/* A raw segment and what it decodes to. */
typedef struct seg {
    const char *raw;
    char *dec; /* percent-decoded, NUL-terminated; NULL when it names nothing */
} seg;

/* Percent-decodes the raw segment once into arena memory. Sets s->dec to NULL when the
 * segment names nothing: a malformed escape, a NUL, or invalid UTF-8 once decoded.
 * Returns 0 or AT_ENOMEM. */
static int decode_segment(seg *s, at_arena *a)
{
    size_t n = strlen(s->raw), o = 0;
    char *out = at_arena_alloc(a, n + 1);
    if (!out) return AT_ENOMEM;
    s->dec = NULL;
    for (size_t i = 0; i < n; i++) {
        if (s->raw[i] != '%') {
            out[o++] = s->raw[i];
            continue;
        }
        if (i + 2 >= n || hexval(s->raw[i + 1]) < 0 || hexval(s->raw[i + 2]) < 0) return 0;
        out[o++] = (char)(hexval(s->raw[i + 1]) * 16 + hexval(s->raw[i + 2]));
        i += 2;
    }
    out[o] = '\0';
    if (valid_utf8((const unsigned char *)out, o)) s->dec = out;
    return 0;
}

/* Returns 1 when the route's segments match; fills the parameters. A parameter that
 * names nothing still matches (the pipeline answers 404 for it after the checks that
 * come first); a literal must decode to itself. */
static int match_segments(const compiled_route *cr, const seg *segs, size_t nsegs, at_match *m,
                          at_arena *a)
{
    size_t np = 0;
    if (cr->nsegs != nsegs) return 0;
    for (size_t i = 0; i < nsegs; i++) {
        if (is_param(cr->segs[i])) {
            if (!segs[i].raw[0] || np >= AT_MAX_PARAMS) return 0;
            continue;
        }
        if (!segs[i].dec || strcmp(cr->segs[i], segs[i].dec) != 0) return 0;
    }
    if (!m) return 1;
    for (size_t i = 0; i < nsegs; i++) {
        if (!is_param(cr->segs[i])) continue;
        m->names[np] = at_arena_strndup(a, cr->segs[i] + 1, strlen(cr->segs[i]) - 2);
        if (!m->names[np]) return 0;
        m->values[np] = segs[i].dec ? segs[i].dec : "";
        if (!segs[i].dec && !m->invalid_param) m->invalid_param = m->names[np];
        np++;
    }
    m->nparams = np;
    return 1;
}

static size_t literal_count(const compiled_route *cr)
{
    size_t n = 0;
    for (size_t i = 0; i < cr->nsegs; i++) n += !is_param(cr->segs[i]);
    return n;
}

int at_router_match(const at_router *r, const char *method, const char *path, at_arena *a,
                    at_match *m, at_buf *allow)
{
    char *copy, *raw[MAX_SEGS + 1];
    seg segs[MAX_SEGS + 1];
    size_t nsegs, len = strlen(path), best = 0;
    const char *want = strcmp(method, "HEAD") == 0 ? "GET" : method;

    memset(m, 0, sizeof *m);
    if (allow) at_buf_reset(allow);
    /* One trailing slash is forgiven: /targets/x/notes/ is /targets/x/notes. */
    if (len > 1 && path[len - 1] == '/') len--;
    copy = at_arena_strndup(a, path, len);
    if (!copy) return AT_ENOMEM;
    nsegs = split(copy, raw);
    if (nsegs > MAX_SEGS) return 0;
    for (size_t i = 0; i < nsegs; i++) {
        segs[i].raw = raw[i];
        if (decode_segment(&segs[i], a)) return AT_ENOMEM;
    }
    /* When several patterns fit the path, the one with the most literal segments owns
     * it: /tasks/counters is not /tasks/{uuid}. */
    for (size_t i = 0; i < r->n; i++)
        if (match_segments(&r->v[i], segs, nsegs, NULL, a) && literal_count(&r->v[i]) >= best) {
            best = literal_count(&r->v[i]);
            m->path_known = 1;
        }
    if (!m->path_known) return 0;
    for (size_t i = 0; i < r->n; i++) {
        const compiled_route *cr = &r->v[i];
        if (literal_count(cr) != best || !match_segments(cr, segs, nsegs, NULL, a)) continue;
        if (allow) {
            if (allow->len) at_buf_adds(allow, ", ");
            at_buf_adds(allow, cr->route->method);
        }
        if (!m->route && strcmp(cr->route->method, want) == 0) {
            if (!match_segments(cr, segs, nsegs, m, a)) return AT_ENOMEM;
            m->route = cr->route;
        }
    }
    return 0;
}
