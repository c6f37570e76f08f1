/* Unit tests of src/common/packed.c (packed items) and at_view_write_raw (view.c):
 * round trips keep every value and the order of members; answers written from packed
 * items are byte for byte those written from AV maps, over crafted and random items;
 * malformed bytes are refused without reading past the end (run under ASan). */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "actionstools/av.h"
#include "actionstools/err.h"
#include "actionstools/packed.h"
#include "actionstools/schema.h"
#include "actionstools/view.h"
#include "actionstools/banned.h"

#define RANDOM_ITEMS 3000

static json_t *parse(const char *text)
{
    json_error_t e;
    json_t *v = json_loads(text, JSON_ALLOW_NUL, &e);
    if (!v) fail_msg("bad test JSON %s: %s", text, e.text);
    return v;
}

/* Packs item into a new buffer (checked) and returns it; *n its length. */
static unsigned char *pack(const json_t *item, size_t *n)
{
    at_buf b;
    at_buf_init(&b, 16u << 20);
    assert_int_equal(at_packed_encode(&b, item), 0);
    assert_int_equal(at_packed_check(b.ptr, b.len), 0);
    return (unsigned char *)at_buf_take(&b, n);
}

/* json_dumps keeps members in their order: equal texts mean equal values and order. */
static void assert_same_order(const json_t *a, const json_t *b)
{
    char *x = json_dumps(a, JSON_COMPACT | JSON_ENCODE_ANY);
    char *y = json_dumps(b, JSON_COMPACT | JSON_ENCODE_ANY);
    if (strcmp(x, y) != 0) fail_msg("got  %s\nwant %s", y, x);
    free(x);
    free(y);
}

static void round_trip(const json_t *item)
{
    size_t n;
    unsigned char *p = pack(item, &n);
    json_t *back = at_packed_decode(p, n);
    assert_non_null(back);
    /* Not json_equal: it looks members up as C strings, and names may hold a NUL. */
    assert_same_order(item, back);
    assert_same_order(item, back);
    json_decref(back);
    free(p);
}

/* ---- the views that answers use ---- */

static const char *const leading[] = {"uuid", "target_uuid", "instance_id", "config_key", "event_id",
                                      "item_number", "owner_uuid", "owner_name", "created_by", NULL};
static const char *const hidden[] = {"deleted_at", NULL};
static const char *const flags_notes[] = {"is_pinned", NULL};
static const char *const flags_notif[] = {"is_read", "is_hidden", NULL};

static const at_view_spec specs[] = {
    {leading, flags_notes, hidden, 1},
    {leading, flags_notif, hidden, 1},
    {leading, NULL, hidden, 0},
    {NULL, NULL, NULL, 0},
    {hidden, flags_notes, leading, 1}, /* odd lists: hidden names leading, and the reverse */
};

/* Writes item with at_view_write and its packed form with at_view_write_raw, under
 * every spec, and checks the bytes are the same. */
static void assert_same_view(const json_t *item)
{
    size_t n;
    unsigned char *p = pack(item, &n);
    for (size_t s = 0; s < sizeof specs / sizeof specs[0]; s++) {
        at_buf a, b;
        at_buf_init(&a, 16u << 20);
        at_buf_init(&b, 16u << 20);
        assert_int_equal(at_view_write(&a, item, &specs[s]), 0);
        assert_int_equal(at_view_write_raw(&b, p, n, &specs[s]), 0);
        if (a.len != b.len || memcmp(a.ptr, b.ptr, a.len) != 0) {
            char *it = json_dumps(item, JSON_COMPACT);
            fail_msg("spec %zu, item %s\nat_view_write     %s\nat_view_write_raw %s", s, it,
                     at_buf_str(&a), at_buf_str(&b));
        }
        at_buf_release(&a);
        at_buf_release(&b);
    }
    free(p);
}

/* ---- crafted items ---- */

static const char *const crafted[] = {
    "{}",
    "{\"uuid\":{\"S\":\"u\"}}",
    /* every AV type */
    "{\"target_uuid\":{\"S\":\"t\"},\"uuid\":{\"S\":\"u\"},\"s\":{\"S\":\"x\"},\"n\":{\"N\":\"42\"},"
    "\"b\":{\"B\":\"AAEqQQ==\"},\"t\":{\"BOOL\":true},\"f\":{\"BOOL\":false},\"z\":{\"NULL\":true},"
    "\"m\":{\"M\":{\"k\":{\"S\":\"v\"},\"a\":{\"N\":\"1\"}}},\"l\":{\"L\":[{\"S\":\"a\"},{\"N\":\"2\"}]},"
    "\"ss\":{\"SS\":[\"a\",\"b\"]},\"ns\":{\"NS\":[\"1\",\"2.50\",\"-0\"]},\"bs\":{\"BS\":[\"AA==\"]},"
    "\"me\":{\"M\":{}},\"le\":{\"L\":[]}}",
    /* unicode, escapes, NUL inside strings, control characters */
    "{\"s\":{\"S\":\"h\\u00e9llo \\u2713 \\ud83d\\ude00 \\\"q\\\" \\\\ \\n\\t\\r\\b\\f \\u0001\\u001f\\u007f\"},"
    "\"nul\":{\"S\":\"a\\u0000b\"},\"\\u00fcml\":{\"S\":\"\\u00fc\"},\"m\":{\"M\":{\"\\u2713\":{\"S\":\"\\u0000\"}}}}",
    /* numbers: small, big, integral written oddly, beyond 64 bits, beyond a double */
    "{\"a\":{\"N\":\"0\"},\"b\":{\"N\":\"-0\"},\"c\":{\"N\":\"007\"},\"d\":{\"N\":\"1.0\"},"
    "\"e\":{\"N\":\"2.50\"},\"f\":{\"N\":\"1e3\"},\"g\":{\"N\":\"-1e-3\"},\"h\":{\"N\":\"9223372036854775807\"},"
    "\"i\":{\"N\":\"9223372036854775808\"},\"j\":{\"N\":\"-9223372036854775808\"},"
    "\"k\":{\"N\":\"123456789012345678901234567890\"},\"l\":{\"N\":\"12345678901234567890123456789012345678\"},"
    "\"m\":{\"N\":\"1e125\"},\"n\":{\"N\":\"1e-130\"},\"o\":{\"N\":\"0.1\"},\"p\":{\"N\":\"+5\"},"
    "\"q\":{\"N\":\"1E+2\"},\"r\":{\"N\":\"999999999999999999\"},\"s\":{\"N\":\"1000000000000000000\"},"
    "\"t\":{\"N\":\"123456789012345678\"},\"u\":{\"N\":\"1e400\"},\"v\":{\"NS\":[\"1\",\"1e400\"]},"
    "\"w\":{\"M\":{\"x\":{\"N\":\"1e999\"}}},\"x\":{\"N\":\"3.14159\"},\"y\":{\"N\":\"-17\"}}",
    /* flags: 0/1, written oddly, of another type, missing; version missing */
    "{\"uuid\":{\"S\":\"u\"},\"is_pinned\":{\"N\":\"1\"},\"is_read\":{\"N\":\"0\"}}",
    "{\"is_pinned\":{\"N\":\"1.0\"},\"is_hidden\":{\"N\":\"2\"},\"version\":{\"N\":\"3\"}}",
    "{\"is_pinned\":{\"S\":\"1\"},\"is_read\":{\"N\":\"0.5\"},\"is_hidden\":{\"BOOL\":true}}",
    "{\"is_pinned\":{\"N\":\"1e400\"},\"version\":{\"S\":\"x\"}}",
    /* hidden and leading attributes, in any order */
    "{\"deleted_at\":{\"S\":\"2024\"},\"zz\":{\"S\":\"1\"},\"created_by\":{\"S\":\"c\"},\"owner_name\":{\"S\":\"o\"},"
    "\"item_number\":{\"N\":\"7\"},\"event_id\":{\"S\":\"e\"},\"config_key\":{\"S\":\"k\"},\"instance_id\":{\"S\":\"i\"},"
    "\"target_uuid\":{\"S\":\"t\"},\"uuid\":{\"S\":\"u\"},\"aa\":{\"S\":\"2\"}}",
    /* names that sort by bytes: upper case first, UTF-8 last, prefixes */
    "{\"b\":{\"S\":\"1\"},\"B\":{\"S\":\"2\"},\"\\u00e9\":{\"S\":\"3\"},\"ba\":{\"S\":\"4\"},\"_\":{\"S\":\"5\"},\"\":{\"S\":\"6\"}}",
};

/* Names holding a NUL (jansson's parser refuses them, but its objects can hold them),
 * beside the names they begin with. */
static void test_nul_names(void **state)
{
    json_t *item = json_object(), *m = json_object();
    json_object_setn_new(item, "a\0b", 3, at_av_s("1"));
    json_object_set_new(item, "a", at_av_s("2"));
    json_object_setn_new(item, "c\0", 2, at_av_s("3"));
    json_object_setn_new(item, "is_pinned\0", 10, at_av_n_int(1));
    json_object_setn_new(m, "k\0x", 3, at_av_s("4"));
    json_object_set_new(item, "m", json_pack("{s:o}", "M", m));
    round_trip(item);
    assert_same_view(item);
    json_decref(item);
    item = json_object();
    json_object_setn_new(item, "only\0nul", 8, at_av_s("1"));
    round_trip(item);
    assert_same_view(item);
    json_decref(item);
}

static void test_crafted(void **state)
{
    for (size_t i = 0; i < sizeof crafted / sizeof crafted[0]; i++) {
        json_t *item = parse(crafted[i]);
        round_trip(item);
        assert_same_view(item);
        json_decref(item);
    }
}

/* Maps and lists nested to DynamoDB's limit, and one level past what answers write. */
static void test_deep(void **state)
{
    for (int depth = 1; depth <= AT_AV_MAX_DEPTH + 3; depth++) { /* writers refuse past 33 */
        json_t *v = json_pack("{s:s}", "S", "leaf"), *item;
        for (int i = 0; i < depth; i++)
            v = i % 2 ? json_pack("{s:{s:o}}", "M", "k", v) : json_pack("{s:[o]}", "L", v);
        item = json_pack("{s:o, s:{s:s}}", "deep", v, "uuid", "S", "u");
        round_trip(item);
        assert_same_view(item);
        json_decref(item);
    }
}

/* ---- random items ---- */

static uint64_t rng = 0x9e3779b97f4a7c15u;

static uint32_t rnd(uint32_t n)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (uint32_t)(rng % n);
}

static const char *const numbers[] = {
    "0", "-0", "1", "-1", "42", "007", "1.0", "2.50", "1e3", "-1e-3", "9223372036854775807",
    "9223372036854775808", "-9223372036854775808", "123456789012345678901234567890",
    "12345678901234567890123456789012345678", "1e125", "1e-130", "0.1", "3.14159", "1E+2",
    "999999999999999999", "1000000000000000000", "-123456789012345678", "5e-324", "1e400", "+5",
};

static const char *const names[] = {
    "uuid", "target_uuid", "instance_id", "owner_uuid", "owner_name", "created_by", "item_number",
    "is_pinned", "is_read", "is_hidden", "deleted_at", "version", "data", "created_at",
    "updated_at", "title", "Z", "a", "\xc3\xa9t\xc3\xa9", "\xf0\x9f\x98\x80", "",
};

/* Returns a random string of up to 12 characters: ASCII, escapes, NUL, UTF-8. */
static json_t *random_string(void)
{
    static const char *const parts[] = {"a", "Z", " ", "\"", "\\", "\n", "\x01", "\x7f", "\xc3\xa9",
                                        "\xe2\x9c\x93", "\xf0\x9f\x98\x80", "/", "<"};
    char buf[128];
    size_t len = 0, n = rnd(13);
    for (size_t i = 0; i < n; i++) {
        if (rnd(10) == 0) {
            buf[len++] = '\0';
            continue;
        }
        const char *p = parts[rnd(sizeof parts / sizeof parts[0])];
        memcpy(buf + len, p, strlen(p));
        len += strlen(p);
    }
    return json_stringn(buf, len);
}

static json_t *random_av(int depth)
{
    json_t *inner;
    switch (rnd(depth > 5 ? 6 : 10)) {
    case 0: return json_pack("{s:o}", "S", random_string());
    case 1:
    case 2: return json_pack("{s:s}", "N", numbers[rnd(sizeof numbers / sizeof numbers[0])]);
    case 3: return json_pack("{s:b}", "BOOL", (int)rnd(2));
    case 4: return json_pack("{s:b}", "NULL", 1);
    case 5: return json_pack("{s:s}", "B", rnd(2) ? "AAEqQQ==" : "");
    case 6:
    case 7:
        inner = json_object();
        for (uint32_t i = 0, n = rnd(5); i < n; i++) {
            json_t *k = random_string();
            json_object_setn_new(inner, json_string_value(k), json_string_length(k), random_av(depth + 1));
            json_decref(k);
        }
        return json_pack("{s:o}", "M", inner);
    case 8:
        inner = json_array();
        for (uint32_t i = 0, n = rnd(5); i < n; i++) json_array_append_new(inner, random_av(depth + 1));
        return json_pack("{s:o}", "L", inner);
    default:
        inner = json_array();
        for (uint32_t i = 0, n = 1 + rnd(3); i < n; i++)
            json_array_append_new(inner, rnd(2) ? json_string(numbers[rnd(sizeof numbers / sizeof numbers[0])])
                                                : random_string());
        return json_pack("{s:o}", rnd(3) == 0 ? "SS" : rnd(2) ? "BS" : "SS", inner);
    }
}

static json_t *random_item(void)
{
    json_t *item = json_object();
    for (uint32_t i = 0, n = rnd(14); i < n; i++) {
        if (rnd(8) == 0) {
            json_t *k = random_string();
            json_object_setn_new(item, json_string_value(k), json_string_length(k), random_av(1));
            json_decref(k);
        } else {
            json_object_set_new(item, names[rnd(sizeof names / sizeof names[0])], random_av(1));
        }
    }
    if (rnd(3) == 0) { /* number sets with numbers only */
        json_t *ns = json_array();
        for (uint32_t i = 0, n = 1 + rnd(4); i < n; i++)
            json_array_append_new(ns, json_string(numbers[rnd(sizeof numbers / sizeof numbers[0])]));
        json_object_set_new(item, "ns", json_pack("{s:o}", "NS", ns));
    }
    return item;
}

static void test_random(void **state)
{
    for (int i = 0; i < RANDOM_ITEMS; i++) {
        json_t *item = random_item();
        round_trip(item);
        assert_same_view(item);
        json_decref(item);
    }
}

/* ---- malformed input ---- */

/* Every truncation and many single-byte changes of valid packed items are refused or
 * read as some other well-formed item, never read past the end (ASan checks). */
static void test_malformed(void **state)
{
    for (int i = 0; i < 300; i++) {
        json_t *item = random_item();
        size_t n;
        unsigned char *p = pack(item, &n);
        for (size_t cut = 0; cut < n; cut++) {
            unsigned char *q = malloc(cut ? cut : 1);
            at_buf b;
            memcpy(q, p, cut);
            assert_int_not_equal(at_packed_check(q, cut), 0);
            assert_null(at_packed_decode(q, cut));
            at_buf_init(&b, 1u << 20);
            assert_int_not_equal(at_view_write_raw(&b, q, cut, &specs[0]), 0);
            at_buf_release(&b);
            free(q);
        }
        for (int k = 0; k < 40 && n > 1; k++) {
            unsigned char *q = malloc(n);
            json_t *back;
            at_buf b;
            memcpy(q, p, n);
            q[1 + rnd((uint32_t)n - 1)] ^= (unsigned char)(1 + rnd(255));
            back = at_packed_decode(q, n);
            if (at_packed_check(q, n) == 0) assert_non_null(back);
            json_decref(back);
            at_buf_init(&b, 1u << 20);
            (void)at_view_write_raw(&b, q, n, &specs[rnd(5)]);
            at_buf_release(&b);
            free(q);
        }
        free(p);
        json_decref(item);
    }
    /* JSON text is not a packed item */
    assert_int_equal(at_packed_is("{\"a\":{\"S\":\"b\"}}", 15), 0);
    assert_int_not_equal(at_packed_check("{}", 2), 0);
}

static void test_encode_refuses(void **state)
{
    static const char *const bad[] = {
        "{\"a\":{\"S\":1}}",       "{\"a\":{\"X\":\"1\"}}",         "{\"a\":{\"NULL\":false}}",
        "{\"a\":{\"M\":[]}}",       "{\"a\":{\"SS\":[1]}}",          "{\"a\":{\"S\":\"x\",\"N\":\"1\"}}",
        "{\"a\":\"plain\"}",        "{\"a\":{\"L\":[{\"BOOL\":1}]}}",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        json_t *item = parse(bad[i]);
        at_buf b;
        at_buf_init(&b, 1u << 20);
        assert_int_equal(at_packed_encode(&b, item), AT_EINVAL);
        at_buf_release(&b);
        json_decref(item);
    }
}

/* ---- readers ---- */

static int keep_listed(const char *name, void *arg)
{
    for (const char *const *l = arg; *l; l++)
        if (strcmp(*l, name) == 0) return 1;
    return 0;
}

static void test_readers(void **state)
{
    json_t *item = parse("{\"target_uuid\":{\"S\":\"t\\u0000x\"},\"uuid\":{\"S\":\"u\"},"
                         "\"updated_at\":{\"S\":\"2024\"},\"owner_uuid\":{\"S\":\"o\"},"
                         "\"created_at\":{\"S\":\"c\"},\"n\":{\"N\":\"5\"},\"keep\":{\"M\":{\"a\":{\"N\":\"1\"}}}}");
    const at_table_def *t = at_schema_table(AT_TABLE_NOTES);
    const at_index_def *ix = at_schema_index(t, "owner_uuid-created_at-index");
    at_packed_val v;
    size_t n, len = 0;
    unsigned char *p = pack(item, &n);
    static const char *const keep_names[] = {"uuid", "keep", "target_uuid", NULL};
    json_t *k1, *k2, *back, *want;
    const char *s;
    at_buf b;

    s = at_packed_s(p, n, "target_uuid", &len);
    assert_int_equal(len, 3);
    assert_memory_equal(s, "t\0x", 4);
    assert_null(at_packed_s(p, n, "n", NULL));    /* an N, not an S */
    assert_null(at_packed_s(p, n, "nope", NULL)); /* absent */
    assert_int_equal(at_packed_get(p, n, "n", &v), 1);
    assert_string_equal(at_packed_text(&v, NULL), "5");
    assert_int_equal(at_packed_get(p, n, "nope", &v), 0);
    k1 = at_schema_item_key(t, ix, item);
    k2 = at_packed_item_key(t, ix, p, n);
    assert_true(json_equal(k1, k2));
    json_decref(k1);
    json_decref(k2);
    assert_null(at_packed_item_key(t, at_schema_index(t, "target_uuid-is_pinned-index"), p, n));
    /* projection keeps the order and the values of what it keeps */
    at_buf_init(&b, 1u << 20);
    assert_int_equal(at_packed_project(&b, p, n, keep_listed, (void *)keep_names), 0);
    back = at_packed_decode(b.ptr, b.len);
    want = parse("{\"target_uuid\":{\"S\":\"t\\u0000x\"},\"uuid\":{\"S\":\"u\"},"
                 "\"keep\":{\"M\":{\"a\":{\"N\":\"1\"}}}}");
    assert_same_order(want, back);
    json_decref(want);
    json_decref(back);
    at_buf_release(&b);
    free(p);
    json_decref(item);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_crafted),        cmocka_unit_test(test_nul_names),
        cmocka_unit_test(test_deep),
        cmocka_unit_test(test_random),         cmocka_unit_test(test_malformed),
        cmocka_unit_test(test_encode_refuses), cmocka_unit_test(test_readers),
    };
    return cmocka_run_group_tests_name("packed", tests, NULL, NULL);
}
