/* Unit tests of src/common/b64.c. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "actionstools/b64.h"
#include "actionstools/err.h"
#include "actionstools/banned.h"

/* Decodes the string s and returns the result (or NULL on failure, rc in *rcp). */
static unsigned char *dec(const char *s, int flags, size_t *n, int *rcp)
{
    unsigned char *out = (unsigned char *)"sentinel";
    int rc = at_b64_decode(s, strlen(s), flags, &out, n);
    if (rcp) *rcp = rc;
    if (rc) assert_null(out);
    return out;
}

static void expect_bad(const char *s, int flags)
{
    int rc = 0;
    size_t n = 99;
    unsigned char *out = dec(s, flags, &n, &rc);
    if (out) fail_msg("\"%s\" (flags %d) decoded, expected a refusal", s, flags);
    assert_int_equal(rc, AT_EINVAL);
    assert_int_equal(n, 0);
}

static void expect_good(const char *s, int flags, const char *want)
{
    int rc = 0;
    size_t n = 0;
    unsigned char *out = dec(s, flags, &n, &rc);
    if (!out) fail_msg("\"%s\" (flags %d) refused with %d", s, flags, rc);
    assert_int_equal(n, strlen(want));
    assert_memory_equal(out, want, n);
    assert_int_equal(out[n], '\0');
    free(out);
}

static void test_rfc4648_vectors(void **state)
{
    static const char *const v[][3] = {
        {"", "", ""},
        {"f", "Zg==", "Zg"},
        {"fo", "Zm8=", "Zm8"},
        {"foo", "Zm9v", "Zm9v"},
        {"foob", "Zm9vYg==", "Zm9vYg"},
        {"fooba", "Zm9vYmE=", "Zm9vYmE"},
        {"foobar", "Zm9vYmFy", "Zm9vYmFy"},
    };
    (void)state;
    for (size_t i = 0; i < sizeof v / sizeof v[0]; i++) {
        size_t n = 99;
        char *e = at_b64_encode(v[i][0], strlen(v[i][0]), AT_B64_STD, &n);
        assert_non_null(e);
        assert_string_equal(e, v[i][1]);
        assert_int_equal(n, strlen(v[i][1]));
        free(e);
        e = at_b64_encode(v[i][0], strlen(v[i][0]), AT_B64_JWT, &n);
        assert_string_equal(e, v[i][2]);
        assert_int_equal(n, strlen(v[i][2]));
        free(e);
        expect_good(v[i][1], AT_B64_STD, v[i][0]);
        expect_good(v[i][1], AT_B64_URL, v[i][0]);
        expect_good(v[i][2], AT_B64_JWT, v[i][0]);
        expect_good(v[i][2], AT_B64_NOPAD, v[i][0]);
    }
}

static void test_url_alphabet(void **state)
{
    static const unsigned char bytes[] = {0xfb, 0xff, 0xbf};
    char *e;
    (void)state;
    e = at_b64_encode(bytes, 2, AT_B64_STD, NULL);
    assert_string_equal(e, "+/8=");
    free(e);
    e = at_b64_encode(bytes, 2, AT_B64_URL, NULL);
    assert_string_equal(e, "-_8=");
    free(e);
    e = at_b64_encode(bytes, 3, AT_B64_JWT, NULL);
    assert_string_equal(e, "-_-_");
    free(e);
    expect_good("-_8", AT_B64_JWT, "\xfb\xff");
    expect_good("+/8=", AT_B64_STD, "\xfb\xff");
    /* Each alphabet refuses the other's two characters. */
    expect_bad("+/8", AT_B64_JWT);
    expect_bad("-_8=", AT_B64_STD);
    expect_bad("ab+c", AT_B64_URL);
    expect_bad("ab_c", AT_B64_STD);
}

static void test_refuses_malformed(void **state)
{
    (void)state;
    /* bad characters, including whitespace OpenSSL itself would skip */
    expect_bad("Zm9v!", AT_B64_JWT);
    expect_bad(" Zm9v", AT_B64_JWT);
    expect_bad("Zm9v ", AT_B64_STD);
    expect_bad("Zm9v\n", AT_B64_STD);
    expect_bad("Zm\n9v", AT_B64_STD);
    expect_bad("Zm9v\xc3\xa9", AT_B64_JWT);
    expect_bad("Zm.9", AT_B64_JWT);
    /* impossible lengths */
    expect_bad("Z", AT_B64_JWT);
    expect_bad("Zm9vY", AT_B64_JWT);
    expect_bad("Zm9", AT_B64_STD); /* padding required */
    expect_bad("Zg", AT_B64_URL);  /* padding required */
    expect_bad("Zg=", AT_B64_STD);
    expect_bad("Zg===", AT_B64_STD);
    expect_bad("Z===", AT_B64_STD);
    expect_bad("====", AT_B64_STD);
    expect_bad("=Zg=", AT_B64_STD);
    expect_bad("Zg==Zg==", AT_B64_STD); /* padding in the middle */
    expect_bad("Zm=v", AT_B64_STD);
    /* padding where none is allowed */
    expect_bad("Zg==", AT_B64_JWT);
    expect_bad("Zm8=", AT_B64_JWT);
    /* non-canonical: the unused bits of the last character are not zero */
    expect_bad("Zh==", AT_B64_STD);
    expect_bad("Zh", AT_B64_JWT);
    expect_bad("Zm9=", AT_B64_STD);
    expect_bad("Zm9", AT_B64_JWT);
    expect_good("Zm8", AT_B64_JWT, "fo");
}

static void test_embedded_nul_and_length_bound(void **state)
{
    unsigned char *out = NULL;
    size_t n = 0;
    char *exact;
    (void)state;
    /* A NUL inside the counted length is a bad character. */
    assert_int_equal(at_b64_decode("Zm\0v", 4, AT_B64_STD, &out, &n), AT_EINVAL);
    assert_null(out);
    /* Only len characters are read: a buffer without a terminating NUL (ASan would see
     * a read past it), and a prefix of a longer text. */
    exact = malloc(6);
    memcpy(exact, "Zm9vYg", 6);
    assert_int_equal(at_b64_decode(exact, 6, AT_B64_JWT, &out, &n), 0);
    assert_int_equal(n, 4);
    assert_memory_equal(out, "foob", 4);
    free(out);
    assert_int_equal(at_b64_decode(exact, 4, AT_B64_JWT, &out, &n), 0);
    assert_int_equal(n, 3);
    assert_memory_equal(out, "foo", 3);
    free(out);
    free(exact);
    /* Empty input decodes to an empty, NUL-terminated buffer. */
    assert_int_equal(at_b64_decode("", 0, AT_B64_STD, &out, &n), 0);
    assert_non_null(out);
    assert_int_equal(n, 0);
    assert_int_equal(out[0], '\0');
    free(out);
    assert_int_equal(at_b64_decode(NULL, 0, AT_B64_JWT, &out, NULL), 0);
    free(out);
    assert_int_equal(at_b64_decode(NULL, 4, AT_B64_JWT, &out, &n), AT_EINVAL);
    /* Over the cap: refused before anything is read. */
    assert_int_equal(at_b64_decode("Zm9v", AT_B64_MAX + 4, AT_B64_STD, &out, &n), AT_ETOOBIG);
    assert_null(out);
    assert_null(at_b64_encode("x", AT_B64_MAX + 1, AT_B64_STD, &n));
    assert_null(at_b64_encode(NULL, 3, AT_B64_STD, &n));
    {
        char *e = at_b64_encode(NULL, 0, AT_B64_STD, &n);
        assert_string_equal(e, "");
        free(e);
    }
}

/* Every length from 0 to 200 of pseudo-random bytes round-trips in all four modes, and
 * changing any one character of the text either fails or changes the bytes. */
static void test_round_trip_and_single_char_changes(void **state)
{
    static const char alphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
                                   "0123456789+/-_=";
    unsigned char data[200];
    uint32_t x = 12345;
    (void)state;
    for (size_t i = 0; i < sizeof data; i++) {
        x = x * 1103515245u + 12345u;
        data[i] = (unsigned char)(x >> 16);
    }
    for (int flags = 0; flags < 4; flags++) {
        for (size_t len = 0; len <= sizeof data; len++) {
            size_t n = 0, m = 0;
            unsigned char *out = NULL;
            char *e = at_b64_encode(data, len, flags, &n);
            assert_non_null(e);
            assert_int_equal(strlen(e), n);
            assert_int_equal(at_b64_decode(e, n, flags, &out, &m), 0);
            assert_int_equal(m, len);
            if (len) assert_memory_equal(out, data, len);
            free(out);
            if (len > 0 && len < 12) {
                for (size_t pos = 0; pos < n; pos++) {
                    for (const char *c = alphabet; *c; c++) {
                        char saved = e[pos];
                        if (*c == saved) continue;
                        e[pos] = *c;
                        if (at_b64_decode(e, n, flags, &out, &m) == 0) {
                            if (m == len && memcmp(out, data, len) == 0)
                                fail_msg("\"%s\" decodes like the original", e);
                            free(out);
                        }
                        e[pos] = saved;
                    }
                }
            }
            free(e);
        }
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_rfc4648_vectors),
        cmocka_unit_test(test_url_alphabet),
        cmocka_unit_test(test_refuses_malformed),
        cmocka_unit_test(test_embedded_nul_and_length_bound),
        cmocka_unit_test(test_round_trip_and_single_char_changes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
