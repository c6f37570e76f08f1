/* JSON <-> DynamoDB attribute values. */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "actionstools/av.h"
#include "actionstools/buf.h"
#include "actionstools/err.h"
#include "actionstools/banned.h"

/* Writes the shortest decimal text that reads back as d. */
static void format_double(double d, char *out, size_t n)
{
    for (int prec = 15; prec <= 17; prec++) {
        snprintf(out, n, "%.*g", prec, d);
        if (strtod(out, NULL) == d) return;
    }
}

/* Where from_json writes why it refused a value. */
typedef struct refusal {
    char *why;
    size_t n;
} refusal;

static json_t *refuse(refusal *r, const char *msg)
{
    if (r->why && r->n) snprintf(r->why, r->n, "%s", msg);
    return NULL;
}

static json_t *from_json(const json_t *v, int depth, refusal *r)
{
    json_t *out = NULL, *inner;
    char num[64];

    if (depth >= AT_AV_MAX_DEPTH) /* depth 0 is DynamoDB's level 1 */
        return refuse(r, "nests deeper than 32 levels (DynamoDB's limit)");
    switch (json_typeof(v)) {
    case JSON_OBJECT: {
        const char *k;
        json_t *m;
        inner = json_object();
        if (!inner) return NULL;
        json_object_foreach((json_t *)v, k, m)
        {
            json_t *av = from_json(m, depth + 1, r);
            if (!av || json_object_set_new(inner, k, av)) {
                json_decref(inner);
                return NULL;
            }
        }
        return json_pack("{s:o}", "M", inner);
    }
    case JSON_ARRAY: {
        size_t i;
        json_t *m;
        inner = json_array();
        if (!inner) return NULL;
        json_array_foreach(v, i, m)
        {
            json_t *av = from_json(m, depth + 1, r);
            if (!av || json_array_append_new(inner, av)) {
                json_decref(inner);
                return NULL;
            }
        }
        return json_pack("{s:o}", "L", inner);
    }
    case JSON_STRING:
        return json_pack("{s:s%}", "S", json_string_value(v), json_string_length(v));
    case JSON_INTEGER:
        snprintf(num, sizeof num, "%" JSON_INTEGER_FORMAT, json_integer_value(v));
        return json_pack("{s:s}", "N", num);
    case JSON_REAL: {
        double mag = fabs(json_real_value(v));
        if (!isfinite(mag) || (mag != 0 && (mag < 1e-130 || mag >= 1e126)))
            return refuse(r, "holds a number outside DynamoDB's range (1e-130 to 1e126)");
    }
        format_double(json_real_value(v), num, sizeof num);
        return json_pack("{s:s}", "N", num);
    case JSON_TRUE: return json_pack("{s:b}", "BOOL", 1);
    case JSON_FALSE: return json_pack("{s:b}", "BOOL", 0);
    case JSON_NULL: return json_pack("{s:b}", "NULL", 1);
    }
    return out;
}

json_t *at_av_from_json(const json_t *v)
{
    refusal r = {NULL, 0};
    return v ? from_json(v, 0, &r) : NULL;
}

json_t *at_av_from_json_why(const json_t *v, char *why, size_t whylen)
{
    refusal r = {why, whylen};
    if (why && whylen) why[0] = '\0';
    return v ? from_json(v, 0, &r) : NULL;
}

/* Returns 1 when s is a number in DynamoDB's syntax: [-+]digits[.digits][e[-+]digits]. */
static int number_syntax(const char *s)
{
    const char *p = s;
    int digits = 0;
    if (*p == '-' || *p == '+') p++;
    while (*p >= '0' && *p <= '9') p++, digits++;
    if (*p == '.') {
        p++;
        while (*p >= '0' && *p <= '9') p++, digits++;
    }
    if (!digits) return 0;
    if (*p == 'e' || *p == 'E') {
        int ed = 0;
        p++;
        if (*p == '-' || *p == '+') p++;
        while (*p >= '0' && *p <= '9') p++, ed++;
        if (!ed) return 0;
    }
    return *p == '\0';
}

/* Parses an integer-only number text that fits in int64. Returns 1 on success. */
static int parse_int64(const char *s, int64_t *out)
{
    char *end;
    long long v;
    const char *p = s;
    if (*p == '-' || *p == '+') p++;
    if (!*p) return 0;
    for (; *p; p++)
        if (*p < '0' || *p > '9') return 0;
    errno = 0;
    v = strtoll(s, &end, 10);
    if (errno || *end) return 0;
    *out = v;
    return 1;
}

/* A number text (in number_syntax) read exactly as sign * 0.DIGITS * 10^exp, DIGITS
 * running from the first to the last non-zero digit of the mantissa (a '.' skipped). */
typedef struct decimal {
    int sign;          /* -1, 1, or 0 when the number is zero */
    const char *first; /* first significant digit */
    const char *last;  /* last non-zero digit */
    long exp;
} decimal;

#define EXP_CAP 100000000L /* exponents are clamped here: far past DynamoDB's +-130 */

static void decimal_read(const char *s, decimal *d)
{
    const char *p = s;
    long intdigits = 0, pos = 0, firstpos = 0, e = 0;
    int neg = 0, seen_dot = 0;

    d->first = d->last = NULL;
    if (*p == '-' || *p == '+') neg = *p++ == '-';
    for (; (*p >= '0' && *p <= '9') || *p == '.'; p++) {
        if (*p == '.') {
            seen_dot = 1;
            continue;
        }
        if (!seen_dot) intdigits++;
        if (*p != '0') {
            if (!d->first) {
                d->first = p;
                firstpos = pos;
            }
            d->last = p;
        }
        pos++;
    }
    if (*p == 'e' || *p == 'E') {
        int eneg = 0;
        p++;
        if (*p == '-' || *p == '+') eneg = *p++ == '-';
        for (; *p >= '0' && *p <= '9'; p++)
            if (e < EXP_CAP) e = e * 10 + (*p - '0');
        if (eneg) e = -e;
    }
    d->sign = d->first ? (neg ? -1 : 1) : 0;
    d->exp = intdigits - firstpos + e;
}

static const char *next_digit(const char *p)
{
    p++;
    return *p == '.' ? p + 1 : p;
}

/* Compares two decimals exactly (DynamoDB keeps 38 digits; a double keeps 17). */
static int decimal_cmp(const decimal *a, const decimal *b)
{
    int mag = 0;
    if (a->sign != b->sign) return a->sign < b->sign ? -1 : 1;
    if (a->sign == 0) return 0;
    if (a->exp != b->exp) {
        mag = a->exp < b->exp ? -1 : 1;
    } else {
        for (const char *p = a->first, *q = b->first;; p = next_digit(p), q = next_digit(q)) {
            if (*p != *q) {
                mag = *p < *q ? -1 : 1;
                break;
            }
            if (p == a->last || q == b->last) { /* the one with digits left is larger */
                mag = (q == b->last) - (p == a->last);
                break;
            }
        }
    }
    return a->sign * mag;
}

/* Sets *out and returns 1 when d is an integer that fits in 64 bits. */
static int decimal_int64(const decimal *d, int64_t *out)
{
    uint64_t v = 0, limit;
    long n = 0;
    if (d->sign == 0) {
        *out = 0;
        return 1;
    }
    if (d->exp > 19) return 0;
    for (const char *p = d->first;; p = next_digit(p)) {
        if (n >= d->exp) return 0; /* a non-zero digit after the point */
        v = v * 10 + (uint64_t)(*p - '0');
        n++;
        if (p == d->last) break;
    }
    for (; n < d->exp; n++) v *= 10; /* at most 19 digits: below 2^64 */
    limit = d->sign > 0 ? (uint64_t)INT64_MAX : (uint64_t)INT64_MAX + 1;
    if (v > limit) return 0;
    *out = d->sign > 0 ? (int64_t)v : v == limit ? INT64_MIN : -(int64_t)v;
    return 1;
}

static json_t *number_to_json(const char *s)
{
    decimal dec;
    int64_t i;
    double d;
    if (!number_syntax(s)) return NULL;
    decimal_read(s, &dec);
    if (decimal_int64(&dec, &i)) return json_integer(i); /* exact, "2.0" and "1e3" too */
    d = strtod(s, NULL);
    if (!isfinite(d)) return NULL;
    return json_real(d);
}

/* Writes the JSON text of the number s into out (64 bytes): integral values that fit 64
 * bits as integers, others in the shortest form that reads back as the same double.
 * Returns 0, or -1 when s is not a number or is beyond a double's range. */
static int number_text(const char *s, char out[64])
{
    decimal dec;
    int64_t i;
    double d;
    if (!number_syntax(s)) return -1;
    decimal_read(s, &dec);
    if (decimal_int64(&dec, &i)) {
        snprintf(out, 64, "%" PRId64, i);
        return 0;
    }
    d = strtod(s, NULL);
    if (!isfinite(d)) return -1;
    format_double(d, out, 64);
    return 0;
}

int at_av_number_json(const char *s, char out[64])
{
    return number_text(s, out) ? AT_EINVAL : 0;
}

/* Bytes a JSON string literal cannot hold as they are: control characters, '"', '\\'. */
static const unsigned char must_escape[256] = {
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, ['"'] = 1, ['\\'] = 1,
};

int at_json_write_string(at_buf *b, const char *s, size_t n)
{
    static const char hex[] = "0123456789abcdef";
    size_t run = 0, i = 0;
    int rc = at_buf_addc(b, '"');
    while (!rc) {
        char esc[6];
        size_t elen = 2;
        unsigned char c;
        while (i < n && !must_escape[(unsigned char)s[i]]) i++;
        if (i == n) break;
        c = (unsigned char)s[i];
        rc = at_buf_add(b, s + run, i - run);
        run = ++i;
        esc[0] = '\\';
        switch (c) {
        case '"': esc[1] = '"'; break;
        case '\\': esc[1] = '\\'; break;
        case '\n': esc[1] = 'n'; break;
        case '\r': esc[1] = 'r'; break;
        case '\t': esc[1] = 't'; break;
        case '\b': esc[1] = 'b'; break;
        case '\f': esc[1] = 'f'; break;
        default:
            esc[1] = 'u';
            esc[2] = esc[3] = '0';
            esc[4] = hex[c >> 4];
            esc[5] = hex[c & 15];
            elen = 6;
        }
        if (!rc) rc = at_buf_add(b, esc, elen);
    }
    if (!rc) rc = at_buf_add(b, s + run, n - run);
    if (!rc) rc = at_buf_addc(b, '"');
    return rc;
}

static int write_json(at_buf *b, const json_t *av, int depth)
{
    const char *tag;
    json_t *val;
    char num[64];
    int rc = 0, first = 1;

    if (depth > AT_AV_MAX_DEPTH + 1 || !json_is_object(av) || json_object_size(av) != 1)
        return AT_EINVAL;
    json_object_foreach((json_t *)av, tag, val) break;

    if (strcmp(tag, "S") == 0 || strcmp(tag, "B") == 0)
        return json_is_string(val) ? at_json_write_string(b, json_string_value(val), json_string_length(val))
                                   : AT_EINVAL;
    if (strcmp(tag, "N") == 0)
        return json_is_string(val) && number_text(json_string_value(val), num) == 0 ? at_buf_adds(b, num)
                                                                                    : AT_EINVAL;
    if (strcmp(tag, "BOOL") == 0)
        return json_is_boolean(val) ? at_buf_adds(b, json_is_true(val) ? "true" : "false") : AT_EINVAL;
    if (strcmp(tag, "NULL") == 0) return json_is_true(val) ? at_buf_adds(b, "null") : AT_EINVAL;
    if (strcmp(tag, "M") == 0) {
        const char *k;
        json_t *m;
        if (!json_is_object(val)) return AT_EINVAL;
        rc = at_buf_addc(b, '{');
        json_object_foreach(val, k, m)
        {
            if (rc) break;
            if (!first) rc = at_buf_addc(b, ',');
            first = 0;
            if (!rc) rc = at_json_write_string(b, k, strlen(k));
            if (!rc) rc = at_buf_addc(b, ':');
            if (!rc) rc = write_json(b, m, depth + 1);
        }
        return rc ? rc : at_buf_addc(b, '}');
    }
    if (strcmp(tag, "L") == 0 || strcmp(tag, "SS") == 0 || strcmp(tag, "NS") == 0 ||
        strcmp(tag, "BS") == 0) {
        size_t i;
        json_t *m;
        if (!json_is_array(val)) return AT_EINVAL;
        rc = at_buf_addc(b, '[');
        json_array_foreach(val, i, m)
        {
            if (rc) break;
            if (i) rc = at_buf_addc(b, ',');
            if (rc) break;
            if (tag[0] == 'L')
                rc = write_json(b, m, depth + 1);
            else if (!json_is_string(m))
                rc = AT_EINVAL;
            else if (tag[0] == 'N')
                rc = number_text(json_string_value(m), num) == 0 ? at_buf_adds(b, num) : AT_EINVAL;
            else
                rc = at_json_write_string(b, json_string_value(m), json_string_length(m));
        }
        return rc ? rc : at_buf_addc(b, ']');
    }
    return AT_EINVAL;
}

int at_av_write_json(at_buf *b, const json_t *av)
{
    return write_json(b, av, 0);
}

static json_t *to_json(const json_t *av, int depth)
{
    const char *tag;
    json_t *val, *out;

    if (depth > AT_AV_MAX_DEPTH + 1 || !json_is_object(av) || json_object_size(av) != 1)
        return NULL;
    json_object_foreach((json_t *)av, tag, val) break;

    if (strcmp(tag, "S") == 0 || strcmp(tag, "B") == 0)
        return json_is_string(val) ? json_stringn(json_string_value(val), json_string_length(val))
                                   : NULL;
    if (strcmp(tag, "N") == 0) return json_is_string(val) ? number_to_json(json_string_value(val)) : NULL;
    if (strcmp(tag, "BOOL") == 0) return json_is_boolean(val) ? json_incref(val) : NULL;
    if (strcmp(tag, "NULL") == 0) return json_is_true(val) ? json_null() : NULL;
    if (strcmp(tag, "M") == 0) {
        const char *k;
        json_t *m;
        if (!json_is_object(val)) return NULL;
        out = json_object();
        json_object_foreach(val, k, m)
        {
            json_t *j = to_json(m, depth + 1);
            if (!j || json_object_set_new(out, k, j)) {
                json_decref(out);
                return NULL;
            }
        }
        return out;
    }
    if (strcmp(tag, "L") == 0 || strcmp(tag, "SS") == 0 || strcmp(tag, "NS") == 0 ||
        strcmp(tag, "BS") == 0) {
        size_t i;
        json_t *m;
        int kind = tag[0] == 'L' ? 'L' : tag[0];
        if (!json_is_array(val)) return NULL;
        out = json_array();
        json_array_foreach(val, i, m)
        {
            json_t *j;
            if (kind == 'L')
                j = to_json(m, depth + 1);
            else if (!json_is_string(m))
                j = NULL;
            else if (kind == 'N')
                j = number_to_json(json_string_value(m));
            else
                j = json_incref(m);
            if (!j || json_array_append_new(out, j)) {
                json_decref(out);
                return NULL;
            }
        }
        return out;
    }
    return NULL;
}

json_t *at_av_to_json(const json_t *av)
{
    return to_json(av, 0);
}

static int fail(char *why, size_t n, const char *msg)
{
    if (why && n) snprintf(why, n, "%s", msg);
    return AT_EINVAL;
}

static int check(const json_t *av, int depth, char *why, size_t n)
{
    const char *tag;
    json_t *val;
    size_t i;

    if (depth > AT_AV_MAX_DEPTH) return fail(why, n, "attribute value nests too deeply");
    if (!json_is_object(av) || json_object_size(av) != 1)
        return fail(why, n, "an attribute value must be an object with exactly one type key");
    json_object_foreach((json_t *)av, tag, val) break;

    if (strcmp(tag, "S") == 0 || strcmp(tag, "B") == 0)
        return json_is_string(val) ? 0 : fail(why, n, "S and B values must be strings");
    if (strcmp(tag, "N") == 0)
        return json_is_string(val) && number_syntax(json_string_value(val))
                   ? 0
                   : fail(why, n, "N values must be number text such as \"12\" or \"1.5\"");
    if (strcmp(tag, "BOOL") == 0)
        return json_is_boolean(val) ? 0 : fail(why, n, "BOOL values must be true or false");
    if (strcmp(tag, "NULL") == 0)
        return json_is_true(val) ? 0 : fail(why, n, "NULL values must be true");
    if (strcmp(tag, "M") == 0) {
        const char *k;
        json_t *m;
        if (!json_is_object(val)) return fail(why, n, "M values must be objects");
        json_object_foreach(val, k, m)
        {
            int rc = check(m, depth + 1, why, n);
            if (rc) return rc;
        }
        return 0;
    }
    if (strcmp(tag, "L") == 0) {
        json_t *m;
        if (!json_is_array(val)) return fail(why, n, "L values must be arrays");
        json_array_foreach(val, i, m)
        {
            int rc = check(m, depth + 1, why, n);
            if (rc) return rc;
        }
        return 0;
    }
    if (strcmp(tag, "SS") == 0 || strcmp(tag, "NS") == 0 || strcmp(tag, "BS") == 0) {
        json_t *m;
        if (!json_is_array(val) || json_array_size(val) == 0)
            return fail(why, n, "set values must be non-empty arrays");
        json_array_foreach(val, i, m)
        {
            if (!json_is_string(m) || (tag[0] == 'N' && !number_syntax(json_string_value(m))))
                return fail(why, n, "set members must be strings (numbers as number text)");
        }
        return 0;
    }
    return fail(why, n, "unknown attribute value type (expected S, N, B, BOOL, NULL, M, L, SS, NS, BS)");
}

int at_av_check(const json_t *av, char *why, size_t whylen)
{
    return check(av, 1, why, whylen); /* an attribute value is DynamoDB's level 1 */
}

int at_av_check_item(const json_t *item, char *why, size_t whylen)
{
    const char *k;
    json_t *v;
    if (!json_is_object(item)) return fail(why, whylen, "an item must be an object");
    json_object_foreach((json_t *)item, k, v)
    {
        int rc = check(v, 1, why, whylen);
        if (rc) return rc;
    }
    return 0;
}

json_t *at_av_s(const char *s)
{
    return json_pack("{s:s}", "S", s);
}

json_t *at_av_n_int(int64_t n)
{
    char num[32];
    snprintf(num, sizeof num, "%" PRId64, n);
    return json_pack("{s:s}", "N", num);
}

json_t *at_av_n_text(const char *number)
{
    return json_pack("{s:s}", "N", number);
}

json_t *at_av_bool(int b)
{
    return json_pack("{s:b}", "BOOL", b);
}

const char *at_item_s(const json_t *item, const char *attr)
{
    return json_string_value(json_object_get(json_object_get(item, attr), "S"));
}

int at_item_n_int(const json_t *item, const char *attr, int64_t *out)
{
    const char *s = json_string_value(json_object_get(json_object_get(item, attr), "N"));
    return s ? at_av_number_int64(s, out) : 0;
}

int at_av_number_int64(const char *s, int64_t *out)
{
    if (parse_int64(s, out)) return 1;
    {
        json_t *j = number_to_json(s);
        int ok = json_is_integer(j);
        if (ok) *out = json_integer_value(j);
        json_decref(j);
        return ok;
    }
}

int at_item_has(const json_t *item, const char *attr)
{
    return json_object_get(item, attr) != NULL;
}

static const char *scalar(const json_t *av, char *tag)
{
    const char *k;
    json_t *v;
    if (!json_is_object(av) || json_object_size(av) != 1) return NULL;
    json_object_foreach((json_t *)av, k, v) break;
    if (!json_is_string(v)) return NULL;
    if (strcmp(k, "S") == 0) *tag = 'S';
    else if (strcmp(k, "N") == 0) *tag = 'N';
    else if (strcmp(k, "B") == 0) *tag = 'B';
    else return NULL;
    return json_string_value(v);
}

static int compare_numbers(const char *a, const char *b)
{
    decimal da, db;
    decimal_read(a, &da);
    decimal_read(b, &db);
    return decimal_cmp(&da, &db);
}

int at_av_compare(const json_t *a, const json_t *b, int *ok)
{
    char ta = 0, tb = 0;
    const char *sa = scalar(a, &ta), *sb = scalar(b, &tb);
    int c;
    *ok = sa && sb && ta == tb;
    if (!*ok) return 0;
    if (ta == 'N') return compare_numbers(sa, sb);
    c = strcmp(sa, sb); /* UTF-8 byte order, as DynamoDB compares strings */
    return c < 0 ? -1 : c > 0;
}

int at_av_equal(const json_t *a, const json_t *b)
{
    int ok = 0;
    int c = at_av_compare(a, b, &ok);
    if (ok) return c == 0;
    return json_equal((json_t *)a, (json_t *)b);
}
