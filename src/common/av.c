/* JSON <-> DynamoDB attribute values. */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "actionstools/av.h"
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

static json_t *from_json(const json_t *v, int depth)
{
    json_t *out = NULL, *inner;
    char num[64];

    if (depth > AT_AV_MAX_DEPTH) return NULL;
    switch (json_typeof(v)) {
    case JSON_OBJECT: {
        const char *k;
        json_t *m;
        inner = json_object();
        if (!inner) return NULL;
        json_object_foreach((json_t *)v, k, m)
        {
            json_t *av = from_json(m, depth + 1);
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
            json_t *av = from_json(m, depth + 1);
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
    case JSON_REAL:
        if (!isfinite(json_real_value(v))) return NULL;
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
    return v ? from_json(v, 0) : NULL;
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

static json_t *number_to_json(const char *s)
{
    int64_t i;
    double d;
    if (!number_syntax(s)) return NULL;
    if (parse_int64(s, &i)) return json_integer(i);
    d = strtod(s, NULL);
    if (!isfinite(d)) return NULL;
    if (d == floor(d) && d >= -9.2e18 && d <= 9.2e18) return json_integer((json_int_t)d);
    return json_real(d);
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

    if (depth > AT_AV_MAX_DEPTH + 1) return fail(why, n, "attribute value nests too deeply");
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
    return check(av, 0, why, whylen);
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
    if (!s) return 0;
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
    int64_t ia, ib;
    long double da, db;
    if (parse_int64(a, &ia) && parse_int64(b, &ib)) return ia < ib ? -1 : ia > ib;
    da = strtold(a, NULL);
    db = strtold(b, NULL);
    return da < db ? -1 : da > db;
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
