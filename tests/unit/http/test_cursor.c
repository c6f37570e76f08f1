/* Unit tests of src/http/cursor.c. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/evp.h>
#include <openssl/hmac.h>

#include "actionstools/b64.h"
#include "actionstools/cursor.h"
#include "actionstools/err.h"
#include "actionstools/banned.h"

#define SCOPE "notes|tenant-1|7b0c2a4e-8f7e-4a39-9a53-1f6f3f3c2d10"

static at_cursor_key KEY, OTHER;

static int setup(void **state)
{
    (void)state;
    if (at_cursor_key_derive(&KEY, "jwt-secret", 10)) return -1;
    return at_cursor_key_derive(&OTHER, "jwt-secreT", 10) ? -1 : 0;
}

/* A LastEvaluatedKey-style payload of a GSI query, with a phase number. */
static json_t *sample(void)
{
    json_t *p = json_pack("{s:i, s:{s:{s:s}, s:{s:s}, s:{s:s}, s:{s:s}}}", "p", 1, "k",
                          "target_uuid", "S", "7b0c2a4e-8f7e-4a39-9a53-1f6f3f3c2d10", "uuid", "S",
                          "0d3e1c55-55a1-4c43-a1e5-7c9f4ad3c001", "updated_at", "S",
                          "2024-01-31 23:59:59.123456", "is_pinned", "N", "0");
    assert_non_null(p);
    return p;
}

static void expect_refused(const at_cursor_key *k, const char *scope, const char *cursor)
{
    json_t *out = (json_t *)1;
    int rc = at_cursor_decode(k, scope, cursor, &out);
    if (rc == 0) fail_msg("cursor \"%s\" accepted", cursor ? cursor : "(null)");
    assert_int_equal(rc, AT_EINVAL);
    assert_null(out);
}

static void test_round_trip(void **state)
{
    json_t *p = sample(), *out = NULL;
    char *c = at_cursor_encode(&KEY, SCOPE, p), *again;
    (void)state;
    assert_non_null(c);
    assert_true(strlen(c) <= AT_CURSOR_MAX_LEN);
    /* URL-safe without escaping: base64url and one dot */
    assert_int_equal(strspn(c, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_."),
                     strlen(c));
    assert_int_equal(at_cursor_decode(&KEY, SCOPE, c, &out), 0);
    assert_true(json_equal(out, p));
    json_decref(out);
    /* Deterministic: the same payload and scope give the same cursor. */
    again = at_cursor_encode(&KEY, SCOPE, p);
    assert_string_equal(again, c);
    free(again);
    free(c);

    /* Unicode, numbers beyond 2^53, an empty object. */
    json_decref(p);
    p = json_pack("{s:s, s:I, s:{}}", "name", "\xe5\xbc\xa0\xe4\xb8\x89 \xf0\x9f\x98\x80", "n",
                  (json_int_t)9007199254740993LL, "e");
    c = at_cursor_encode(&KEY, "s", p);
    assert_int_equal(at_cursor_decode(&KEY, "s", c, &out), 0);
    assert_true(json_equal(out, p));
    json_decref(out);
    free(c);
    json_decref(p);
    p = json_object();
    c = at_cursor_encode(&KEY, "", p);
    assert_int_equal(at_cursor_decode(&KEY, "", c, &out), 0);
    assert_int_equal(json_object_size(out), 0);
    json_decref(out);
    free(c);
    json_decref(p);
}

/* Changing any byte of a cursor to any other printable byte is refused. */
static void test_tamper_any_byte(void **state)
{
    json_t *p = sample();
    char *c = at_cursor_encode(&KEY, SCOPE, p);
    size_t len = strlen(c);
    (void)state;
    for (size_t i = 0; i < len; i++) {
        char saved = c[i];
        for (int b = 0x20; b < 0x7f; b++) {
            if (b == saved) continue;
            c[i] = (char)b;
            expect_refused(&KEY, SCOPE, c);
        }
        c[i] = saved;
    }
    json_decref(p);
    free(c);
}

/* A cursor whose JSON was changed and re-encoded (but the MAC kept) is refused. */
static void test_forged_payload(void **state)
{
    json_t *p = sample(), *q = sample();
    char *c = at_cursor_encode(&KEY, SCOPE, p), *json, *body, *forged = NULL;
    const char *dot = strchr(c, '.');
    (void)state;
    json_object_set_new(q, "p", json_integer(0));
    json = json_dumps(q, JSON_COMPACT);
    body = at_b64_encode(json, strlen(json), AT_B64_JWT, NULL);
    assert_true(asprintf(&forged, "%s%s", body, dot) > 0);
    expect_refused(&KEY, SCOPE, forged);
    free(forged);
    /* the JSON of one cursor with the MAC of another */
    {
        char *c2 = at_cursor_encode(&KEY, SCOPE, q);
        forged = NULL;
        assert_true(asprintf(&forged, "%.*s%s", (int)(dot - c), c, strchr(c2, '.')) > 0);
        expect_refused(&KEY, SCOPE, forged);
        free(c2);
    }
    free(forged);
    free(body);
    free(json);
    free(c);
    json_decref(p);
    json_decref(q);
}

static void test_wrong_scope_and_key(void **state)
{
    json_t *p = sample();
    char *c = at_cursor_encode(&KEY, SCOPE, p), *other;
    at_cursor_key same;
    json_t *out = NULL;
    (void)state;
    memset(&same, 0, sizeof same);
    expect_refused(&KEY, "notes|tenant-2|7b0c2a4e-8f7e-4a39-9a53-1f6f3f3c2d10", c);
    expect_refused(&KEY, "comments|tenant-1|7b0c2a4e-8f7e-4a39-9a53-1f6f3f3c2d10", c);
    expect_refused(&KEY, SCOPE "x", c);
    expect_refused(&KEY, "", c);
    expect_refused(&OTHER, SCOPE, c);
    /* A scope and payload cannot be shifted into each other across the newline. */
    other = at_cursor_encode(&KEY, "notes|tenant-1", p);
    expect_refused(&KEY, "notes|tenant-1\n", other);
    free(other);
    /* The same secret gives the same key, so other processes accept the cursor. */
    assert_int_equal(at_cursor_key_derive(&same, "jwt-secret", 10), 0);
    assert_memory_equal(same.k, KEY.k, sizeof same.k);
    assert_int_equal(at_cursor_decode(&same, SCOPE, c, &out), 0);
    json_decref(out);
    /* The key is not the secret, nor a plain hash of it. */
    assert_memory_not_equal(KEY.k, "jwt-secret", 10);
    /* An empty secret still derives a (well-defined) key. */
    assert_int_equal(at_cursor_key_derive(&same, NULL, 0), 0);
    assert_memory_not_equal(same.k, KEY.k, sizeof same.k);
    at_cursor_key_release(&same);
    json_decref(p);
    free(c);
}

static void test_truncation(void **state)
{
    json_t *p = sample();
    char *c = at_cursor_encode(&KEY, SCOPE, p);
    size_t len = strlen(c);
    (void)state;
    for (size_t n = 0; n < len; n++) {
        char *t = strndup(c, n);
        expect_refused(&KEY, SCOPE, t);
        free(t);
    }
    /* and suffixes (the start cut off) */
    for (size_t n = 1; n < len; n++)
        expect_refused(&KEY, SCOPE, c + n);
    /* trailing additions */
    {
        static const char *const tails[] = {"A", "=", "==", ".", " ", "\n", "%3D"};
        for (size_t i = 0; i < sizeof tails / sizeof tails[0]; i++) {
            char *t = NULL;
            assert_true(asprintf(&t, "%s%s", c, tails[i]) > 0);
            expect_refused(&KEY, SCOPE, t);
            free(t);
        }
    }
    json_decref(p);
    free(c);
}

static void test_garbage_and_empty(void **state)
{
    static const char *const junk[] = {
        "",
        ".",
        "..",
        "a.",
        ".a",
        "a.b",
        "a.b.c",
        "null",
        "{}",
        "e30",
        "e30.",
        "e30.AAAAAAAAAAAAAAAAAAAAAA",
        "e30.AAAAAAAAAAAAAAAAAAAAAA.",
        "e30=.AAAAAAAAAAAAAAAAAAAAAA",
        "!!!!.AAAAAAAAAAAAAAAAAAAAAA",
        "e30.AAAAAAAAAAAAAAAAAAAAA",
        "e30.AAAAAAAAAAAAAAAAAAAAAAAA",
        "\xff\xfe.\x01",
        "%7B%7D.AAAA",
        "e30 .AAAAAAAAAAAAAAAAAAAAAA",
    };
    json_t *out = (json_t *)1;
    char *big;
    (void)state;
    for (size_t i = 0; i < sizeof junk / sizeof junk[0]; i++)
        expect_refused(&KEY, SCOPE, junk[i]);
    expect_refused(&KEY, SCOPE, NULL);
    assert_int_equal(at_cursor_decode(NULL, SCOPE, "e30.AAAA", &out), AT_EINVAL);
    assert_null(out);
    assert_int_equal(at_cursor_decode(&KEY, NULL, "e30.AAAA", &out), AT_EINVAL);
    /* Too long: refused before any work, whatever it holds. */
    big = malloc(1 << 20);
    memset(big, 'A', (1 << 20) - 1);
    big[(1 << 20) - 1] = '\0';
    expect_refused(&KEY, SCOPE, big);
    big[AT_CURSOR_MAX_LEN + 1] = '\0';
    expect_refused(&KEY, SCOPE, big);
    free(big);
    /* Pseudo-random bytes: never a crash, never accepted. */
    {
        uint32_t x = 7;
        char buf[64];
        for (int round = 0; round < 20000; round++) {
            size_t n = 0;
            x = x * 1664525u + 1013904223u;
            n = (x >> 8) % (sizeof buf - 1);
            for (size_t i = 0; i < n; i++) {
                x = x * 1664525u + 1013904223u;
                buf[i] = (char)(1 + (x >> 24) % 255);
            }
            buf[n] = '\0';
            expect_refused(&KEY, SCOPE, buf);
        }
    }
}

/* Builds a cursor by hand, as the format says, so that any JSON text can be signed. */
static char *craft(const at_cursor_key *k, const char *scope, const char *json)
{
    char *msg = NULL, *body, *tag, *out = NULL;
    unsigned char mac[32];
    unsigned int n = 0;
    assert_true(asprintf(&msg, "%s\n%s", scope, json) > 0);
    assert_non_null(
        HMAC(EVP_sha256(), k->k, sizeof k->k, (const unsigned char *)msg, strlen(msg), mac, &n));
    body = at_b64_encode(json, strlen(json), AT_B64_JWT, NULL);
    tag = at_b64_encode(mac, AT_CURSOR_MAC_LEN, AT_B64_JWT, NULL);
    assert_true(asprintf(&out, "%s.%s", body, tag) > 0);
    free(msg);
    free(body);
    free(tag);
    return out;
}

/* A validly signed cursor whose JSON is not an object (it could only come from a
 * leaked key) is refused all the same; the encoder makes only objects. */
static void test_signed_but_not_an_object(void **state)
{
    static const char *const bad[] = {"[1,2]", "{\"a\":1,\"a\":2}",   "{",    "", "1",
                                      "\"x\"", "{\"a\":\"\\u0000\"}", "{} {}"};
    json_t *arr = json_array(), *out = NULL;
    char *c;
    (void)state;
    c = craft(&KEY, SCOPE, "{\"a\":1}"); /* the control: hand-made the same way */
    assert_int_equal(at_cursor_decode(&KEY, SCOPE, c, &out), 0);
    assert_int_equal(json_integer_value(json_object_get(out, "a")), 1);
    json_decref(out);
    free(c);
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        c = craft(&KEY, SCOPE, bad[i]);
        expect_refused(&KEY, SCOPE, c);
        free(c);
    }
    assert_null(at_cursor_encode(&KEY, SCOPE, arr));
    assert_null(at_cursor_encode(&KEY, SCOPE, NULL));
    assert_null(at_cursor_encode(NULL, SCOPE, arr));
    assert_null(at_cursor_encode(&KEY, NULL, arr));
    json_decref(arr);
}

static void test_size_cap(void **state)
{
    json_t *p = json_object(), *out = NULL;
    char *pad = malloc(AT_CURSOR_MAX_LEN), *c;
    (void)state;
    memset(pad, 'x', AT_CURSOR_MAX_LEN - 1);
    pad[AT_CURSOR_MAX_LEN - 1] = '\0';
    /* 2900 bytes of JSON -> about 3900 characters: made and accepted */
    json_object_set_new(p, "k", json_stringn(pad, 2900));
    c = at_cursor_encode(&KEY, SCOPE, p);
    assert_non_null(c);
    assert_true(strlen(c) <= AT_CURSOR_MAX_LEN);
    assert_int_equal(at_cursor_decode(&KEY, SCOPE, c, &out), 0);
    json_decref(out);
    free(c);
    /* too big to fit: not made at all */
    json_object_set_new(p, "k", json_stringn(pad, 3100));
    assert_null(at_cursor_encode(&KEY, SCOPE, p));
    json_object_set_new(p, "k", json_string(pad));
    assert_null(at_cursor_encode(&KEY, SCOPE, p));
    json_decref(p);
    free(pad);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_round_trip),
        cmocka_unit_test(test_tamper_any_byte),
        cmocka_unit_test(test_forged_payload),
        cmocka_unit_test(test_wrong_scope_and_key),
        cmocka_unit_test(test_truncation),
        cmocka_unit_test(test_garbage_and_empty),
        cmocka_unit_test(test_signed_but_not_an_object),
        cmocka_unit_test(test_size_cap),
    };
    return cmocka_run_group_tests(tests, setup, NULL);
}
