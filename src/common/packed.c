/* Packed items (packed.h): encoding from AV maps, decoding, checking, and the readers
 * that answers and cursors use without building JSON objects. */
#include <stdlib.h>
#include <string.h>

#include "actionstools/packed.h"
#include "actionstools/av.h"
#include "actionstools/err.h"
#include "actionstools/banned.h"

#define MAX_DEPTH (AT_AV_MAX_DEPTH + 4) /* nesting a packed value may have (checked) */

/* ---- writing ---- */

static int put_varint(at_buf *b, uint64_t v)
{
    unsigned char tmp[10];
    size_t n = 0;
    do {
        tmp[n++] = (unsigned char)((v & 0x7f) | (v > 0x7f ? 0x80 : 0));
        v >>= 7;
    } while (v);
    return at_buf_add(b, tmp, n);
}

/* Appends len:varint bytes[len] 0x00. */
static int put_text(at_buf *b, const char *s, size_t n)
{
    int rc = put_varint(b, n);
    if (!rc) rc = at_buf_add(b, s, n);
    if (!rc) rc = at_buf_addc(b, '\0');
    return rc;
}

/* Reserves the u32 size of a container; returns its offset in *at. */
static int put_size_slot(at_buf *b, size_t *at)
{
    static const unsigned char zero[4] = {0, 0, 0, 0};
    *at = b->len;
    return at_buf_add(b, zero, 4);
}

static int fill_size_slot(at_buf *b, size_t at)
{
    size_t size = b->len - at - 4;
    unsigned char *p = (unsigned char *)b->ptr + at;
    if (size > UINT32_MAX) return AT_ETOOBIG;
    p[0] = (unsigned char)size;
    p[1] = (unsigned char)(size >> 8);
    p[2] = (unsigned char)(size >> 16);
    p[3] = (unsigned char)(size >> 24);
    return 0;
}

static int encode_value(at_buf *b, const json_t *av, int depth);

/* Appends count, size and the members of an object of AVs (an item's or an M's). */
static int encode_members(at_buf *b, const json_t *obj, int depth, int sized)
{
    const char *k;
    size_t klen, at = 0;
    json_t *v;
    int rc = put_varint(b, json_object_size(obj));
    if (!rc && sized) rc = put_size_slot(b, &at);
    json_object_keylen_foreach((json_t *)obj, k, klen, v)
    {
        if (rc) break;
        rc = put_text(b, k, klen);
        if (!rc) rc = encode_value(b, v, depth + 1);
    }
    if (!rc && sized) rc = fill_size_slot(b, at);
    return rc;
}

static int encode_value(at_buf *b, const json_t *av, int depth)
{
    const char *tag;
    json_t *val;
    size_t at = 0, i;
    int rc;

    if (depth > MAX_DEPTH || !json_is_object(av) || json_object_size(av) != 1) return AT_EINVAL;
    json_object_foreach((json_t *)av, tag, val) break;
    if (strcmp(tag, "S") == 0 || strcmp(tag, "N") == 0 || strcmp(tag, "B") == 0) {
        if (!json_is_string(val)) return AT_EINVAL;
        rc = at_buf_addc(b, tag[0]);
        return rc ? rc : put_text(b, json_string_value(val), json_string_length(val));
    }
    if (strcmp(tag, "BOOL") == 0)
        return json_is_boolean(val) ? at_buf_addc(b, json_is_true(val) ? 'T' : 'F') : AT_EINVAL;
    if (strcmp(tag, "NULL") == 0) return json_is_true(val) ? at_buf_addc(b, '0') : AT_EINVAL;
    if (strcmp(tag, "M") == 0) {
        if (!json_is_object(val)) return AT_EINVAL;
        rc = at_buf_addc(b, 'M');
        return rc ? rc : encode_members(b, val, depth, 1);
    }
    if (strcmp(tag, "L") == 0 || strcmp(tag, "SS") == 0 || strcmp(tag, "NS") == 0 ||
        strcmp(tag, "BS") == 0) {
        json_t *m;
        if (!json_is_array(val)) return AT_EINVAL;
        rc = at_buf_addc(b, tag[0] == 'L' ? 'L' : tag[0] == 'S' ? 's' : tag[0] == 'N' ? 'n' : 'b');
        if (!rc) rc = put_varint(b, json_array_size(val));
        if (!rc) rc = put_size_slot(b, &at);
        json_array_foreach(val, i, m)
        {
            if (rc) break;
            if (tag[0] == 'L')
                rc = encode_value(b, m, depth + 1);
            else
                rc = json_is_string(m) ? put_text(b, json_string_value(m), json_string_length(m))
                                       : AT_EINVAL;
        }
        return rc ? rc : fill_size_slot(b, at);
    }
    return AT_EINVAL;
}

int at_packed_encode(at_buf *b, const json_t *item)
{
    int rc;
    if (!json_is_object(item)) return AT_EINVAL;
    rc = at_buf_addc(b, (char)AT_PACKED_MAGIC);
    return rc ? rc : encode_members(b, item, 0, 0);
}

int at_packed_is(const void *p, size_t n)
{
    return n > 0 && *(const unsigned char *)p == AT_PACKED_MAGIC;
}

/* ---- reading ---- */

typedef struct rd {
    const unsigned char *p, *end;
} rd;

static int get_varint(rd *r, uint64_t *v)
{
    uint64_t x = 0;
    for (int shift = 0; shift < 64; shift += 7) {
        unsigned char c;
        if (r->p >= r->end) return AT_EINVAL;
        c = *r->p++;
        x |= (uint64_t)(c & 0x7f) << shift;
        if (!(c & 0x80)) {
            *v = x;
            return 0;
        }
    }
    return AT_EINVAL;
}

/* Reads len:varint bytes[len] 0x00; *s points at the bytes. */
static int get_text(rd *r, const char **s, size_t *n)
{
    uint64_t len;
    if (get_varint(r, &len) || len >= (uint64_t)(r->end - r->p) || r->p[len] != 0)
        return AT_EINVAL;
    *s = (const char *)r->p;
    *n = (size_t)len;
    r->p += len + 1;
    return 0;
}

/* Reads a container head (count, size) and returns the reader of its body. */
static int get_container(rd *r, uint64_t *count, rd *body)
{
    uint32_t size;
    if (get_varint(r, count) || r->end - r->p < 4) return AT_EINVAL;
    size = (uint32_t)r->p[0] | (uint32_t)r->p[1] << 8 | (uint32_t)r->p[2] << 16 |
           (uint32_t)r->p[3] << 24;
    r->p += 4;
    if (size > (uint64_t)(r->end - r->p)) return AT_EINVAL;
    body->p = r->p;
    body->end = r->p + size;
    r->p += size;
    return 0;
}

/* Moves r past one value (shallowly: containers are skipped by their size). */
static int skip_value(rd *r)
{
    const char *s;
    size_t n;
    uint64_t count;
    rd body;
    if (r->p >= r->end) return AT_EINVAL;
    switch (*r->p++) {
    case 'S':
    case 'N':
    case 'B': return get_text(r, &s, &n);
    case 'T':
    case 'F':
    case '0': return 0;
    case 'M':
    case 'L':
    case 's':
    case 'n':
    case 'b': return get_container(r, &count, &body);
    default: return AT_EINVAL;
    }
}

int at_packed_iter_item(at_packed_iter *it, const void *p, size_t n)
{
    rd r = {p, (const unsigned char *)p + n};
    if (!at_packed_is(p, n)) return AT_EINVAL;
    r.p++;
    if (get_varint(&r, &it->left)) return AT_EINVAL;
    it->p = r.p;
    it->end = r.end;
    return 0;
}

int at_packed_iter_map(at_packed_iter *it, const at_packed_val *v)
{
    rd r = {v->p, v->end}, body;
    if (r.p >= r.end || *r.p++ != 'M' || get_container(&r, &it->left, &body)) return AT_EINVAL;
    it->p = body.p;
    it->end = body.end;
    return 0;
}

int at_packed_next(at_packed_iter *it, const char **name, size_t *name_len, at_packed_val *v)
{
    rd r = {it->p, it->end};
    if (it->left == 0) return r.p == r.end ? 0 : AT_EINVAL;
    if (get_text(&r, name, name_len)) return AT_EINVAL;
    v->p = r.p;
    if (skip_value(&r)) return AT_EINVAL;
    v->end = r.p;
    it->p = r.p;
    it->left--;
    return 1;
}

int at_packed_get(const void *p, size_t n, const char *name, at_packed_val *v)
{
    at_packed_iter it;
    const char *k;
    size_t klen, want = strlen(name);
    int rc = at_packed_iter_item(&it, p, n);
    if (rc) return rc;
    while ((rc = at_packed_next(&it, &k, &klen, v)) == 1)
        if (klen == want && memcmp(k, name, want) == 0) return 1;
    return rc;
}

const char *at_packed_text(const at_packed_val *v, size_t *len)
{
    rd r = {v->p, v->end};
    const char *s;
    size_t n;
    if (r.p >= r.end || (*r.p != 'S' && *r.p != 'N' && *r.p != 'B')) return NULL;
    r.p++;
    if (get_text(&r, &s, &n)) return NULL;
    if (len) *len = n;
    return s;
}

const char *at_packed_s(const void *p, size_t n, const char *name, size_t *len)
{
    at_packed_val v;
    if (at_packed_get(p, n, name, &v) != 1 || *v.p != 'S') return NULL;
    return at_packed_text(&v, len);
}

/* ---- checking ---- */

/* Returns 1 when the n bytes at s are valid UTF-8 (jansson's rule: NUL allowed). */
static int utf8_ok(const char *s, size_t n)
{
    const unsigned char *p = (const unsigned char *)s, *end = p + n;
    while (p < end) {
        unsigned c = *p, need;
        uint32_t cp;
        if (c < 0x80) {
            p++;
            continue;
        }
        if (c >= 0xc2 && c <= 0xdf) {
            need = 1;
            cp = c & 0x1f;
        } else if (c >= 0xe0 && c <= 0xef) {
            need = 2;
            cp = c & 0x0f;
        } else if (c >= 0xf0 && c <= 0xf4) {
            need = 3;
            cp = c & 0x07;
        } else {
            return 0;
        }
        if ((size_t)(end - p) <= need) return 0;
        for (unsigned i = 1; i <= need; i++) {
            if ((p[i] & 0xc0) != 0x80) return 0;
            cp = cp << 6 | (p[i] & 0x3f);
        }
        if ((need == 2 && cp < 0x800) || (need == 3 && (cp < 0x10000 || cp > 0x10ffff)) ||
            (cp >= 0xd800 && cp <= 0xdfff))
            return 0;
        p += need + 1;
    }
    return 1;
}

static int check_text(rd *r)
{
    const char *s;
    size_t n;
    return get_text(r, &s, &n) || !utf8_ok(s, n) ? AT_EINVAL : 0;
}

static int check_value(rd *r, int depth);

static int check_members(rd *r, uint64_t count, int depth)
{
    for (uint64_t i = 0; i < count; i++)
        if (check_text(r) || check_value(r, depth + 1)) return AT_EINVAL;
    return 0;
}

static int check_value(rd *r, int depth)
{
    uint64_t count;
    rd body;
    unsigned char tag;
    if (depth > MAX_DEPTH || r->p >= r->end) return AT_EINVAL;
    tag = *r->p++;
    switch (tag) {
    case 'S':
    case 'N':
    case 'B': return check_text(r);
    case 'T':
    case 'F':
    case '0': return 0;
    case 'M':
        if (get_container(r, &count, &body) || check_members(&body, count, depth)) return AT_EINVAL;
        return body.p == body.end ? 0 : AT_EINVAL;
    case 'L':
    case 's':
    case 'n':
    case 'b':
        if (get_container(r, &count, &body)) return AT_EINVAL;
        for (uint64_t i = 0; i < count; i++)
            if (tag == 'L' ? check_value(&body, depth + 1) : check_text(&body)) return AT_EINVAL;
        return body.p == body.end ? 0 : AT_EINVAL;
    default: return AT_EINVAL;
    }
}

int at_packed_check(const void *p, size_t n)
{
    rd r = {p, (const unsigned char *)p + n};
    uint64_t count;
    if (!at_packed_is(p, n)) return AT_EINVAL;
    r.p++;
    if (get_varint(&r, &count) || check_members(&r, count, 0)) return AT_EINVAL;
    return r.p == r.end ? 0 : AT_EINVAL;
}

/* ---- decoding into AVs ---- */

static json_t *decode_value(rd *r, int depth);

/* Decodes count members into a new object of AVs. */
static json_t *decode_members(rd *r, uint64_t count, int depth)
{
    json_t *obj = json_object();
    for (uint64_t i = 0; obj && i < count; i++) {
        const char *k;
        size_t klen;
        json_t *v;
        if (get_text(r, &k, &klen) || !(v = decode_value(r, depth + 1)) ||
            json_object_setn_new(obj, k, klen, v)) {
            json_decref(obj);
            return NULL;
        }
    }
    return obj;
}

static json_t *wrap(const char *tag, json_t *inner)
{
    json_t *av;
    if (!inner) return NULL;
    av = json_object();
    if (!av || json_object_set_new(av, tag, inner)) {
        json_decref(av);
        return NULL;
    }
    return av;
}

static json_t *decode_value(rd *r, int depth)
{
    const char *s;
    size_t n;
    uint64_t count;
    rd body;
    unsigned char tag;
    json_t *arr;

    if (depth > MAX_DEPTH || r->p >= r->end) return NULL;
    tag = *r->p++;
    switch (tag) {
    case 'S':
    case 'N':
    case 'B':
        if (get_text(r, &s, &n)) return NULL;
        return wrap(tag == 'S' ? "S" : tag == 'N' ? "N" : "B", json_stringn(s, n));
    case 'T': return wrap("BOOL", json_true());
    case 'F': return wrap("BOOL", json_false());
    case '0': return wrap("NULL", json_true());
    case 'M':
        if (get_container(r, &count, &body)) return NULL;
        return wrap("M", decode_members(&body, count, depth));
    case 'L':
    case 's':
    case 'n':
    case 'b':
        if (get_container(r, &count, &body) || !(arr = json_array())) return NULL;
        for (uint64_t i = 0; i < count; i++) {
            json_t *m = NULL;
            if (tag == 'L')
                m = decode_value(&body, depth + 1);
            else if (!get_text(&body, &s, &n))
                m = json_stringn(s, n);
            if (!m || json_array_append_new(arr, m)) {
                json_decref(arr);
                return NULL;
            }
        }
        return wrap(tag == 'L' ? "L" : tag == 's' ? "SS" : tag == 'n' ? "NS" : "BS", arr);
    default: return NULL;
    }
}

json_t *at_packed_decode(const void *p, size_t n)
{
    rd r = {p, (const unsigned char *)p + n};
    uint64_t count;
    json_t *item;
    if (!at_packed_is(p, n)) return NULL;
    r.p++;
    if (get_varint(&r, &count)) return NULL;
    item = decode_members(&r, count, 0);
    if (item && r.p != r.end) {
        json_decref(item);
        item = NULL;
    }
    return item;
}

json_t *at_packed_av(const at_packed_val *v)
{
    rd r = {v->p, v->end};
    json_t *av = decode_value(&r, 1);
    if (av && r.p != r.end) {
        json_decref(av);
        av = NULL;
    }
    return av;
}

/* ---- plain JSON, as at_av_write_json ---- */

static int write_value(at_buf *b, rd *r, int depth)
{
    const char *s;
    size_t n;
    uint64_t count;
    rd body;
    char num[64];
    unsigned char tag;
    int rc = 0;

    /* at_av_write_json refuses past this depth; so do we, to write the same. */
    if (depth > AT_AV_MAX_DEPTH + 1 || r->p >= r->end) return AT_EINVAL;
    tag = *r->p++;
    switch (tag) {
    case 'S':
    case 'B':
        if (get_text(r, &s, &n)) return AT_EINVAL;
        return at_json_write_string(b, s, n);
    case 'N':
        if (get_text(r, &s, &n)) return AT_EINVAL;
        if (n <= 18 && s[0] >= '1' && s[0] <= '9') {
            /* Fast path: plain digits without a leading zero are their own JSON. */
            size_t i = 1;
            while (i < n && s[i] >= '0' && s[i] <= '9') i++;
            if (i == n) return at_buf_add(b, s, n);
        }
        return at_av_number_json(s, num) ? AT_EINVAL : at_buf_adds(b, num);
    case 'T': return at_buf_adds(b, "true");
    case 'F': return at_buf_adds(b, "false");
    case '0': return at_buf_adds(b, "null");
    case 'M':
        if (get_container(r, &count, &body)) return AT_EINVAL;
        rc = at_buf_addc(b, '{');
        for (uint64_t i = 0; !rc && i < count; i++) {
            if (i) rc = at_buf_addc(b, ',');
            /* at_av_write_json writes a name up to its first NUL (a C string). */
            if (!rc) rc = get_text(&body, &s, &n) ? AT_EINVAL : at_json_write_string(b, s, strlen(s));
            if (!rc) rc = at_buf_addc(b, ':');
            if (!rc) rc = write_value(b, &body, depth + 1);
        }
        return rc ? rc : at_buf_addc(b, '}');
    case 'L':
    case 's':
    case 'n':
    case 'b':
        if (get_container(r, &count, &body)) return AT_EINVAL;
        rc = at_buf_addc(b, '[');
        for (uint64_t i = 0; !rc && i < count; i++) {
            if (i) rc = at_buf_addc(b, ',');
            if (rc) break;
            if (tag == 'L')
                rc = write_value(b, &body, depth + 1);
            else if (get_text(&body, &s, &n))
                rc = AT_EINVAL;
            else if (tag == 'n')
                rc = at_av_number_json(s, num) ? AT_EINVAL : at_buf_adds(b, num);
            else
                rc = at_json_write_string(b, s, n);
        }
        return rc ? rc : at_buf_addc(b, ']');
    default: return AT_EINVAL;
    }
}

int at_packed_write_json(at_buf *b, const at_packed_val *v)
{
    rd r = {v->p, v->end};
    return write_value(b, &r, 0);
}

/* ---- keys and projections ---- */

static int copy_key_attr(json_t *key, const void *p, size_t n, const at_attr_def *a)
{
    at_packed_val v;
    json_t *av;
    if (!a->name || json_object_get(key, a->name)) return 0;
    if (at_packed_get(p, n, a->name, &v) != 1 || !(av = at_packed_av(&v))) return -1;
    return json_object_set_new(key, a->name, av);
}

json_t *at_packed_item_key(const at_table_def *t, const at_index_def *ix, const void *p, size_t n)
{
    json_t *key = json_object();
    if (!key) return NULL;
    if (copy_key_attr(key, p, n, &t->pk) || copy_key_attr(key, p, n, &t->sk) ||
        (ix && (copy_key_attr(key, p, n, &ix->pk) || copy_key_attr(key, p, n, &ix->sk)))) {
        json_decref(key);
        return NULL;
    }
    return key;
}

int at_packed_project(at_buf *b, const void *p, size_t n, int (*keep)(const char *name, void *arg),
                      void *arg)
{
    at_packed_iter it;
    at_packed_val v;
    const char *k;
    size_t klen, count = 0, head;
    at_buf members;
    int rc = at_packed_iter_item(&it, p, n);

    if (rc) return rc;
    at_buf_init(&members, b->max);
    while ((rc = at_packed_next(&it, &k, &klen, &v)) == 1) {
        if (!keep(k, arg)) continue;
        count++;
        rc = put_text(&members, k, klen);
        if (!rc) rc = at_buf_add(&members, v.p, (size_t)(v.end - v.p));
        if (rc) break;
    }
    head = b->len;
    if (!rc) rc = at_buf_addc(b, (char)AT_PACKED_MAGIC);
    if (!rc) rc = put_varint(b, count);
    if (!rc && members.len) rc = at_buf_add(b, members.ptr, members.len);
    if (rc && b->len > head) {
        b->len = head;
        if (b->ptr) b->ptr[head] = '\0';
    }
    at_buf_release(&members);
    return rc;
}
