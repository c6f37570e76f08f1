/* Unit tests of src/common/av.c: JSON <-> DynamoDB attribute values. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "actionstools/av.h"
#include "actionstools/err.h"
#include "actionstools/banned.h"

static json_t *parse(const char *text)
{
    json_error_t e;
    json_t *v = json_loads(text, JSON_DECODE_ANY | JSON_ALLOW_NUL, &e);
    if (!v) fail_msg("bad test JSON %s: %s", text, e.text);
    return v;
}

/* JSON text -> AV: the AV must equal want_av (JSON text); then AV -> JSON must give back
 * back_json (or the input when NULL). */
static void round_trip(const char *json_text, const char *want_av, const char *back_json)
{
    json_t *v = parse(json_text), *want = parse(want_av), *back;
    json_t *expect_back = parse(back_json ? back_json : json_text);
    json_t *av = at_av_from_json(v);
    char why[128] = "";
    if (!av) fail_msg("from_json(%s) failed", json_text);
    if (!json_equal(av, want)) {
        char *got = json_dumps(av, JSON_COMPACT | JSON_ENCODE_ANY);
        fail_msg("from_json(%s) = %s, want %s", json_text, got, want_av);
    }
    assert_int_equal(at_av_check(av, why, sizeof why), 0);
    back = at_av_to_json(av);
    if (!back || !json_equal(back, expect_back)) {
        char *got = back ? json_dumps(back, JSON_COMPACT | JSON_ENCODE_ANY) : NULL;
        fail_msg("to_json(%s) = %s, want %s", want_av, got ? got : "NULL",
                 back_json ? back_json : json_text);
    }
    /* integers stay integers, reals stay reals */
    assert_int_equal(json_typeof(back), json_typeof(expect_back));
    json_decref(v);
    json_decref(want);
    json_decref(expect_back);
    json_decref(av);
    json_decref(back);
}

/* The N text made for the JSON number text, and what it reads back as. */
static void number(const char *json_text, const char *want_n)
{
    char av[128];
    snprintf(av, sizeof av, "{\"N\":\"%s\"}", want_n);
    round_trip(json_text, av, NULL);
}

/* AV text -> JSON must equal want (JSON text). */
static void av_to(const char *av_text, const char *want)
{
    json_t *av = parse(av_text), *w = parse(want), *got = at_av_to_json(av);
    if (!got || !json_equal(got, w) || json_typeof(got) != json_typeof(w)) {
        char *g = got ? json_dumps(got, JSON_COMPACT | JSON_ENCODE_ANY) : NULL;
        fail_msg("to_json(%s) = %s, want %s", av_text, g ? g : "NULL", want);
    }
    json_decref(av);
    json_decref(w);
    json_decref(got);
}

static void test_scalars(void **state)
{
    (void)state;
    round_trip("\"hello\"", "{\"S\":\"hello\"}", NULL);
    round_trip("\"\"", "{\"S\":\"\"}", NULL);
    round_trip("true", "{\"BOOL\":true}", NULL);
    round_trip("false", "{\"BOOL\":false}", NULL);
    round_trip("null", "{\"NULL\":true}", NULL);
    /* unicode: emoji (4-byte UTF-8), CJK, combining marks; bytes kept exactly */
    round_trip("\"\xf0\x9f\x98\x80 \xe6\xbc\xa2\xe5\xad\x97 e\xcc\x81\"",
               "{\"S\":\"\xf0\x9f\x98\x80 \xe6\xbc\xa2\xe5\xad\x97 e\xcc\x81\"}", NULL);
    round_trip("\"\\ud83d\\ude00\"", "{\"S\":\"\xf0\x9f\x98\x80\"}", NULL);
    /* an embedded NUL survives */
    round_trip("\"a\\u0000b\"", "{\"S\":\"a\\u0000b\"}", NULL);
}

static void test_nested(void **state)
{
    (void)state;
    round_trip("{\"a\":{\"b\":[1,\"x\",{\"c\":null}],\"d\":true},\"e\":[],\"f\":{},\"g\":[[[]]]}",
               "{\"M\":{\"a\":{\"M\":{\"b\":{\"L\":[{\"N\":\"1\"},{\"S\":\"x\"},"
               "{\"M\":{\"c\":{\"NULL\":true}}}]},\"d\":{\"BOOL\":true}}},"
               "\"e\":{\"L\":[]},\"f\":{\"M\":{}},\"g\":{\"L\":[{\"L\":[{\"L\":[]}]}]}}}",
               NULL);
    round_trip("[{\"mentions\":[\"u-1\",\"u-2\"]},2.5,-3]",
               "{\"L\":[{\"M\":{\"mentions\":{\"L\":[{\"S\":\"u-1\"},{\"S\":\"u-2\"}]}}},"
               "{\"N\":\"2.5\"},{\"N\":\"-3\"}]}",
               NULL);
    /* keys with unicode and the empty key */
    round_trip("{\"\xe5\x90\x8d\":1,\"\":2}",
               "{\"M\":{\"\xe5\x90\x8d\":{\"N\":\"1\"},\"\":{\"N\":\"2\"}}}", NULL);
}

static void test_integers(void **state)
{
    (void)state;
    number("0", "0");
    number("-1", "-1");
    number("9007199254740993", "9007199254740993"); /* 2^53 + 1: not a double */
    number("-9007199254740993", "-9007199254740993");
    number("9223372036854775807", "9223372036854775807");
    number("-9223372036854775808", "-9223372036854775808");
    av_to("{\"N\":\"9007199254740993\"}", "9007199254740993");
    av_to("{\"N\":\"-9223372036854775808\"}", "-9223372036854775808");
    av_to("{\"N\":\"+7\"}", "7");
    av_to("{\"N\":\"007\"}", "7");
    /* Integral N text in other forms still reads as the exact integer. */
    av_to("{\"N\":\"2.0\"}", "2");
    av_to("{\"N\":\"-5.000\"}", "-5");
    av_to("{\"N\":\"1e3\"}", "1000");
    av_to("{\"N\":\"1E+3\"}", "1000");
    av_to("{\"N\":\"-0\"}", "0");
    av_to("{\"N\":\"0.0\"}", "0");
    av_to("{\"N\":\"9007199254740993.0\"}", "9007199254740993");
    av_to("{\"N\":\"90071992547409930e-1\"}", "9007199254740993");
    av_to("{\"N\":\"9.223372036854775807e18\"}", "9223372036854775807");
    /* beyond 64 bits: a real, not a wrapped integer */
    av_to("{\"N\":\"9223372036854775808\"}", "9223372036854775808.0");
    av_to("{\"N\":\"-9223372036854775809\"}", "-9223372036854775809.0");
    av_to("{\"N\":\"1e20\"}", "1e20");
    {
        json_t *a = at_av_n_int(INT64_MIN), *b = at_av_n_int(INT64_MAX);
        assert_string_equal(json_string_value(json_object_get(a, "N")), "-9223372036854775808");
        assert_string_equal(json_string_value(json_object_get(b, "N")), "9223372036854775807");
        json_decref(a);
        json_decref(b);
    }
}

static void test_reals(void **state)
{
    (void)state;
    number("0.1", "0.1");
    number("-0.1", "-0.1");
    number("1e-7", "1e-07");
    number("1.5e125", "1.5e+125");
    number("-9.99e125", "-9.99e+125");
    number("1e-130", "1e-130");
    number("0.30000000000000004", "0.30000000000000004"); /* needs all 17 digits */
    number("123.456", "123.456");
    /* integral reals come back as integers */
    round_trip("2.0", "{\"N\":\"2\"}", "2");
    round_trip("-0.0", "{\"N\":\"-0\"}", "0");
    round_trip("1e15", "{\"N\":\"1e+15\"}", "1000000000000000");
    av_to("{\"N\":\"12.5\"}", "12.5");
    av_to("{\"N\":\".5\"}", "0.5");
    {
        /* exact: the double read back is the one written */
        static const double v[] = {0.1, 1e-7, 1.5e125, 3.141592653589793, 1.5e-130, 1.0 / 3};
        for (size_t i = 0; i < sizeof v / sizeof v[0]; i++) {
            json_t *j = json_real(v[i]), *av = at_av_from_json(j), *back = at_av_to_json(av);
            assert_true(json_is_real(back));
            assert_true(json_real_value(back) == v[i]);
            json_decref(j);
            json_decref(av);
            json_decref(back);
        }
    }
}

/* Numbers DynamoDB refuses (magnitude outside 1e-130 .. 1e126) are refused with a reason. */
static void test_reals_out_of_range(void **state)
{
    static const double v[] = {1e126, -1.5e300, 1.7976931348623157e308, 5e-324, 2.2250738585072014e-308, -1e-131};
    (void)state;
    for (size_t i = 0; i < sizeof v / sizeof v[0]; i++) {
        char why[128] = "";
        json_t *j = json_real(v[i]);
        assert_null(at_av_from_json(j));
        assert_null(at_av_from_json_why(j, why, sizeof why));
        assert_non_null(strstr(why, "range"));
        json_decref(j);
    }
}

/* DynamoDB allows 32 levels, the attribute value itself being level 1 (31 maps or
 * lists around a scalar). */
static json_t *nest(int containers, int objects, json_t *leaf)
{
    json_t *v = leaf;
    for (int i = 0; i < containers; i++) {
        json_t *w = objects ? json_object() : json_array();
        if (objects)
            json_object_set_new(w, "a", v);
        else
            json_array_append_new(w, v);
        v = w;
    }
    return v;
}

static void test_depth_limit(void **state)
{
    (void)state;
    for (int objects = 0; objects <= 1; objects++) {
        json_t *ok = nest(AT_AV_MAX_DEPTH - 1, objects, json_integer(1));
        json_t *deep = nest(AT_AV_MAX_DEPTH, objects, json_integer(1));
        json_t *ok_empty = nest(AT_AV_MAX_DEPTH - 1, objects, json_array());
        json_t *deep_empty = nest(AT_AV_MAX_DEPTH, objects, json_array());
        json_t *av = at_av_from_json(ok), *back, *item;
        char why[128] = "";
        assert_non_null(av);
        assert_int_equal(at_av_check(av, why, sizeof why), 0);
        item = json_pack("{s:O}", "data", av);
        assert_int_equal(at_av_check_item(item, why, sizeof why), 0);
        json_decref(item);
        back = at_av_to_json(av);
        assert_true(json_equal(back, ok));
        json_decref(back);
        json_decref(av);
        av = at_av_from_json(ok_empty);
        assert_non_null(av);
        assert_int_equal(at_av_check(av, NULL, 0), 0);
        json_decref(av);
        assert_null(at_av_from_json(deep));
        assert_null(at_av_from_json(deep_empty));
        json_decref(ok);
        json_decref(deep);
        json_decref(ok_empty);
        json_decref(deep_empty);
    }
    {
        /* AVs too deep are refused by the check (the DynamoDB limit) */
        json_t *av = json_pack("{s:s}", "S", "x"), *item;
        char why[128] = "";
        for (int i = 0; i < AT_AV_MAX_DEPTH; i++)
            av = json_pack("{s:[o]}", "L", av);
        assert_int_equal(at_av_check(av, why, sizeof why), AT_EINVAL);
        assert_non_null(strstr(why, "deep"));
        item = json_pack("{s:O}", "data", av);
        assert_int_equal(at_av_check_item(item, why, sizeof why), AT_EINVAL);
        json_decref(item);
        json_decref(av);
    }
    {
        /* very deep input (a hostile import line) fails without exhausting the stack */
        json_t *v = nest(3000, 0, json_null()), *av;
        assert_null(at_av_from_json(v));
        json_decref(v);
        av = json_pack("{s:b}", "NULL", 1);
        for (int i = 0; i < 3000; i++)
            av = json_pack("{s:[o]}", "L", av);
        assert_int_equal(at_av_check(av, NULL, 0), AT_EINVAL);
        assert_null(at_av_to_json(av));
        json_decref(av);
    }
}

static void test_check_rejects_malformed(void **state)
{
    static const char *const bad[] = {
        "{}",
        "[]",
        "\"S\"",
        "{\"S\":\"a\",\"N\":\"1\"}",
        "{\"S\":1}",
        "{\"S\":null}",
        "{\"N\":1}",
        "{\"N\":\"\"}",
        "{\"N\":\"abc\"}",
        "{\"N\":\"1.2.3\"}",
        "{\"N\":\"1e\"}",
        "{\"N\":\"0x10\"}",
        "{\"N\":\" 1\"}",
        "{\"N\":\"1 \"}",
        "{\"N\":\"NaN\"}",
        "{\"N\":\"Infinity\"}",
        "{\"N\":\"-\"}",
        "{\"N\":\".\"}",
        "{\"BOOL\":\"true\"}",
        "{\"BOOL\":1}",
        "{\"NULL\":false}",
        "{\"NULL\":null}",
        "{\"M\":[]}",
        "{\"M\":{\"a\":1}}",
        "{\"M\":{\"a\":{\"S\":\"x\"},\"b\":{\"X\":\"y\"}}}",
        "{\"L\":{}}",
        "{\"L\":[1]}",
        "{\"L\":[{\"S\":\"x\"},{}]}",
        "{\"SS\":[]}",
        "{\"SS\":[1]}",
        "{\"NS\":[\"1\",\"x\"]}",
        "{\"BS\":\"x\"}",
        "{\"s\":\"lower-case tag\"}",
        "{\"X\":\"x\"}",
    };
    static const char *const good[] = {
        "{\"S\":\"\"}",        "{\"N\":\"-1.5e-3\"}",    "{\"B\":\"aGk=\"}",
        "{\"BOOL\":false}",    "{\"NULL\":true}",        "{\"M\":{}}",
        "{\"L\":[]}",          "{\"SS\":[\"a\",\"b\"]}", "{\"NS\":[\"1\",\"2.5\"]}",
        "{\"BS\":[\"aGk=\"]}",
    };
    (void)state;
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        json_t *av = parse(bad[i]);
        char why[128] = "";
        if (at_av_check(av, why, sizeof why) != AT_EINVAL) fail_msg("accepted %s", bad[i]);
        assert_true(why[0] != '\0');
        assert_int_equal(at_av_check(av, NULL, 0), AT_EINVAL);
        /* reading is as strict, but for an empty set (DynamoDB never sends one) */
        if (strcmp(bad[i], "{\"SS\":[]}") != 0 && at_av_to_json(av))
            fail_msg("to_json accepted %s", bad[i]);
        json_decref(av);
    }
    for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
        json_t *av = parse(good[i]), *j;
        if (at_av_check(av, NULL, 0) != 0) fail_msg("refused %s", good[i]);
        j = at_av_to_json(av);
        assert_non_null(j);
        json_decref(j);
        json_decref(av);
    }
    av_to("{\"SS\":[\"a\",\"b\"]}", "[\"a\",\"b\"]");
    av_to("{\"NS\":[\"1\",\"2.5\"]}", "[1,2.5]");
    av_to("{\"B\":\"aGk=\"}", "\"aGk=\"");
    {
        json_t *item = parse("{\"a\":{\"S\":\"x\"},\"b\":{\"N\":\"oops\"}}");
        char why[128] = "";
        assert_int_equal(at_av_check_item(item, why, sizeof why), AT_EINVAL);
        json_decref(item);
        item = parse("[]");
        assert_int_equal(at_av_check_item(item, NULL, 0), AT_EINVAL);
        json_decref(item);
        item = parse("{}");
        assert_int_equal(at_av_check_item(item, NULL, 0), 0);
        json_decref(item);
    }
    assert_null(at_av_from_json(NULL));
    assert_null(at_av_to_json(NULL));
}

static int cmp(const char *a, const char *b)
{
    json_t *x = parse(a), *y = parse(b);
    int ok = -1, c = at_av_compare(x, y, &ok);
    assert_int_equal(ok, 1);
    json_decref(x);
    json_decref(y);
    return c;
}

#define N(s) "{\"N\":\"" s "\"}"
#define S(s) "{\"S\":\"" s "\"}"

static void test_compare(void **state)
{
    static const char *const ordered[] = {
        "-1e126",
        "-12345678901234567890123456789012345679",
        "-12345678901234567890123456789012345678",
        "-9223372036854775809",
        "-9223372036854775808",
        "-10",
        "-9.5",
        "-1",
        "-0.5",
        "-1e-130",
        "0",
        "1e-130",
        "0.1",
        "0.30000000000000004",
        "1",
        "1.5",
        "9",
        "10",
        "99",
        "1e2",
        "9007199254740992",
        "9007199254740993",
        "9223372036854775807",
        "9223372036854775808",
        "12345678901234567890123456789012345678",
        "12345678901234567890123456789012345679",
        "1.2345678901234567890123456789012345679e38",
        "9.9999999999999999999999999999999999999e125",
    };
    json_t *a, *b;
    int ok = -1;
    (void)state;
    for (size_t i = 0; i < sizeof ordered / sizeof ordered[0]; i++) {
        for (size_t j = 0; j < sizeof ordered / sizeof ordered[0]; j++) {
            char x[128], y[128];
            int want = i < j ? -1 : i > j, got;
            snprintf(x, sizeof x, N("%s"), ordered[i]);
            snprintf(y, sizeof y, N("%s"), ordered[j]);
            got = cmp(x, y);
            if (got != want)
                fail_msg("compare(%s, %s) = %d, want %d", ordered[i], ordered[j], got, want);
        }
    }
    /* the same number written differently */
    assert_int_equal(cmp(N("1"), N("1.0")), 0);
    assert_int_equal(cmp(N("100"), N("1e2")), 0);
    assert_int_equal(cmp(N("0.10"), N("0.1")), 0);
    assert_int_equal(cmp(N("-0"), N("0")), 0);
    assert_int_equal(cmp(N("0.000"), N("0e5")), 0);
    assert_int_equal(cmp(N("007"), N("7")), 0);
    assert_int_equal(cmp(N("+7"), N("7")), 0);

    /* strings by UTF-8 bytes, as DynamoDB orders them */
    assert_int_equal(cmp(S("a"), S("b")), -1);
    assert_int_equal(cmp(S("B"), S("a")), -1);
    assert_int_equal(cmp(S(""), S("a")), -1);
    assert_int_equal(cmp(S("ab"), S("a")), 1);
    assert_int_equal(cmp(S("z"), S("\xc3\xa9")), -1);                    /* U+00E9 > 'z' */
    assert_int_equal(cmp(S("\xef\xbd\x81"), S("\xf0\x9f\x98\x80")), -1); /* BMP < astral */
    assert_int_equal(cmp(S("2024-01-31 23:59:59.123456"), S("2024-02-01 00:00:00")), -1);
    assert_int_equal(cmp(S("same"), S("same")), 0);

    /* not comparable: different or non-scalar types */
    a = parse(N("1"));
    b = parse(S("1"));
    assert_int_equal(at_av_compare(a, b, &ok), 0);
    assert_int_equal(ok, 0);
    json_decref(b);
    b = parse("{\"L\":[]}");
    ok = -1;
    at_av_compare(b, b, &ok);
    assert_int_equal(ok, 0);
    json_decref(b);
    b = parse("{\"BOOL\":true}");
    ok = -1;
    at_av_compare(a, b, &ok);
    assert_int_equal(ok, 0);
    json_decref(a);
    json_decref(b);
}

static void test_equal(void **state)
{
    static const char *const same[][2] = {
        {N("1"), N("1.0")},
        {N("12345678901234567890123456789012345678"),
         N("1.2345678901234567890123456789012345678e37")},
        {S("x"), S("x")},
        {"{\"BOOL\":true}", "{\"BOOL\":true}"},
        {"{\"NULL\":true}", "{\"NULL\":true}"},
        {"{\"M\":{\"a\":{\"S\":\"x\"}}}", "{\"M\":{\"a\":{\"S\":\"x\"}}}"},
    };
    static const char *const different[][2] = {
        {N("1"), N("2")},
        {N("12345678901234567890123456789012345678"), N("12345678901234567890123456789012345679")},
        {N("1"), S("1")},
        {S("x"), S("X")},
        {"{\"BOOL\":true}", "{\"BOOL\":false}"},
        {"{\"L\":[{\"S\":\"x\"}]}", "{\"L\":[{\"S\":\"y\"}]}"},
    };
    (void)state;
    for (size_t i = 0; i < sizeof same / sizeof same[0]; i++) {
        json_t *a = parse(same[i][0]), *b = parse(same[i][1]);
        if (!at_av_equal(a, b)) fail_msg("%s != %s", same[i][0], same[i][1]);
        json_decref(a);
        json_decref(b);
    }
    for (size_t i = 0; i < sizeof different / sizeof different[0]; i++) {
        json_t *a = parse(different[i][0]), *b = parse(different[i][1]);
        if (at_av_equal(a, b)) fail_msg("%s == %s", different[i][0], different[i][1]);
        json_decref(a);
        json_decref(b);
    }
}

static void test_constructors_and_accessors(void **state)
{
    json_t *item = json_object();
    int64_t n = 0;
    (void)state;
    json_object_set_new(item, "name", at_av_s("Ada"));
    json_object_set_new(item, "count", at_av_n_int(42));
    json_object_set_new(item, "big", at_av_n_text("9007199254740993"));
    json_object_set_new(item, "float", at_av_n_text("1.5"));
    json_object_set_new(item, "whole", at_av_n_text("3.0"));
    json_object_set_new(item, "pinned", at_av_bool(1));
    assert_int_equal(at_av_check_item(item, NULL, 0), 0);
    assert_string_equal(at_item_s(item, "name"), "Ada");
    assert_null(at_item_s(item, "count"));
    assert_null(at_item_s(item, "missing"));
    assert_int_equal(at_item_n_int(item, "count", &n), 1);
    assert_int_equal(n, 42);
    assert_int_equal(at_item_n_int(item, "big", &n), 1);
    assert_true(n == 9007199254740993LL);
    assert_int_equal(at_item_n_int(item, "whole", &n), 1);
    assert_int_equal(n, 3);
    assert_int_equal(at_item_n_int(item, "float", &n), 0);
    assert_int_equal(at_item_n_int(item, "name", &n), 0);
    assert_int_equal(at_item_n_int(item, "missing", &n), 0);
    assert_true(at_item_has(item, "pinned"));
    assert_false(at_item_has(item, "missing"));
    assert_true(json_is_true(json_object_get(json_object_get(item, "pinned"), "BOOL")));
    json_decref(item);
}

/* at_av_write_json writes the same value at_av_to_json builds, reals in shortest form,
 * strings escaped. */
static void test_write_json(void **state)
{
    static const char *const docs[] = {
        "{\"a\":1,\"b\":[true,false,null,\"x\"],\"c\":{\"d\":{\"e\":[]}},\"f\":{}}",
        "[9007199254740993,-9223372036854775808,9223372036854775807,0.1,1e-07,2.5e+125]",
        "\"quote \\\" backslash \\\\ newline \\n tab \\t ctl \\u0001 nul \\u0000 end\"",
        "\"unicode: \\u00e9\\u4e2d\\ud83d\\ude00 and raw UTF-8: é中😀\"",
        "\"\"",
        "3.141592653589793",
        "2.0",
    };
    for (size_t i = 0; i < sizeof docs / sizeof docs[0]; i++) {
        json_error_t err;
        json_t *doc = json_loads(docs[i], JSON_DECODE_ANY | JSON_ALLOW_NUL, &err), *av, *back, *again;
        at_buf b;
        if (!doc) fail_msg("test doc %zu: %s", i, err.text);
        av = at_av_from_json(doc);
        assert_non_null(av);
        at_buf_init(&b, 1 << 20);
        assert_int_equal(at_av_write_json(&b, av), 0);
        again = json_loadb(b.ptr, b.len, JSON_DECODE_ANY | JSON_ALLOW_NUL, &err);
        if (!again) fail_msg("doc %zu wrote unparsable %s: %s", i, at_buf_str(&b), err.text);
        back = at_av_to_json(av);
        assert_true(json_equal(again, back));
        json_decref(doc);
        json_decref(av);
        json_decref(back);
        json_decref(again);
        at_buf_release(&b);
    }
    {
        json_t *av = json_pack("{s:s}", "N", "0.1000");
        at_buf b;
        at_buf_init(&b, 64);
        assert_int_equal(at_av_write_json(&b, av), 0);
        assert_string_equal(at_buf_str(&b), "0.1");
        at_buf_reset(&b);
        json_decref(av);
        av = json_pack("{s:s}", "N", "1E+2");
        assert_int_equal(at_av_write_json(&b, av), 0);
        assert_string_equal(at_buf_str(&b), "100");
        at_buf_reset(&b);
        json_decref(av);
        av = json_pack("{s:s}", "N", "not a number");
        assert_int_equal(at_av_write_json(&b, av), AT_EINVAL);
        json_decref(av);
        av = json_pack("{s:i}", "S", 5);
        assert_int_equal(at_av_write_json(&b, av), AT_EINVAL);
        json_decref(av);
        at_buf_release(&b);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_scalars),
        cmocka_unit_test(test_nested),
        cmocka_unit_test(test_integers),
        cmocka_unit_test(test_reals),
        cmocka_unit_test(test_reals_out_of_range),
        cmocka_unit_test(test_write_json),
        cmocka_unit_test(test_depth_limit),
        cmocka_unit_test(test_check_rejects_malformed),
        cmocka_unit_test(test_compare),
        cmocka_unit_test(test_equal),
        cmocka_unit_test(test_constructors_and_accessors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
