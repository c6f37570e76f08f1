/* Unit tests of src/common/uuid.c. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "actionstools/err.h"
#include "actionstools/uuid.h"
#include "actionstools/banned.h"

#define COUNT 2000

static int by_text(const void *a, const void *b)
{
    return strcmp(a, b);
}

static void test_new(void **state)
{
    static char ids[COUNT][AT_UUID_LEN + 1];
    (void)state;
    for (int i = 0; i < COUNT; i++) {
        char *u = ids[i];
        at_uuid_new(u);
        assert_int_equal(strlen(u), AT_UUID_LEN);
        assert_true(at_uuid_valid(u));
        assert_int_equal(strspn(u, "0123456789abcdef-"), AT_UUID_LEN); /* lower-case */
        assert_int_equal(u[14], '4');                                  /* version 4 */
        assert_non_null(strchr("89ab", u[19]));                        /* RFC 4122 variant */
    }
    qsort(ids, COUNT, sizeof ids[0], by_text);
    for (int i = 1; i < COUNT; i++)
        assert_string_not_equal(ids[i - 1], ids[i]);
}

static void test_valid(void **state)
{
    static const char *const good[] = {
        "123e4567-e89b-12d3-a456-426614174000",
        "00000000-0000-0000-0000-000000000000",
        "FFFFFFFF-FFFF-FFFF-FFFF-FFFFFFFFFFFF",
        "7B0c2a4E-8f7e-4a39-9a53-1f6f3f3c2d10",
    };
    static const char *const bad[] = {
        "",
        "123e4567-e89b-12d3-a456-42661417400",   /* short */
        "123e4567-e89b-12d3-a456-4266141740000", /* long */
        "123e4567e89b-12d3-a456-426614174000-",  /* dash moved */
        "123e4567-e89b-12d3-a456_426614174000",
        "123e4567-e89b-12d3-a456-42661417400g",
        "{23e4567-e89b-12d3-a456-426614174000}",
        "123e4567 e89b 12d3 a456 426614174000",
        "123e4567e89b12d3a456426614174000",
        " 123e4567-e89b-12d3-a456-42661417400",
        "123e4567-e89b-12d3-a456-42661417400\n",
        "123e4567-e89b-12d3-a456-4266141740\xc3\xa9",
    };
    (void)state;
    for (size_t i = 0; i < sizeof good / sizeof good[0]; i++)
        assert_true(at_uuid_valid(good[i]));
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        if (at_uuid_valid(bad[i])) fail_msg("accepted \"%s\"", bad[i]);
    assert_false(at_uuid_valid(NULL));
}

static void test_normalize(void **state)
{
    char out[AT_UUID_LEN + 1];
    (void)state;
    assert_int_equal(at_uuid_normalize("7B0C2A4E-8F7E-4A39-9A53-1F6F3F3C2D10", out), 0);
    assert_string_equal(out, "7b0c2a4e-8f7e-4a39-9a53-1f6f3f3c2d10");
    assert_int_equal(at_uuid_normalize("7b0c2a4e-8f7e-4a39-9a53-1f6f3f3c2d10", out), 0);
    assert_string_equal(out, "7b0c2a4e-8f7e-4a39-9a53-1f6f3f3c2d10");
    memset(out, 'x', sizeof out);
    assert_int_equal(at_uuid_normalize("not-a-uuid", out), AT_EINVAL);
    assert_int_equal(at_uuid_normalize(NULL, out), AT_EINVAL);
}

/* Name-based UUIDs: RFC 9562's example, stable, and different for other names. */
static void test_from_name(void **state)
{
    static const char dns[] = "6ba7b810-9dad-11d1-80b4-00c04fd430c8";
    char a[AT_UUID_LEN + 1], b[AT_UUID_LEN + 1];
    (void)state;
    assert_int_equal(at_uuid_from_name(dns, "www.example.com", 15, a), 0);
    assert_string_equal(a, "2ed6657d-e927-568b-95e1-2665a8aea6a2");
    assert_int_equal(at_uuid_from_name("6BA7B810-9DAD-11D1-80B4-00C04FD430C8", "www.example.com", 15, b), 0);
    assert_string_equal(a, b);
    assert_int_equal(at_uuid_from_name(dns, "www.example.org", 15, b), 0);
    assert_string_not_equal(a, b);
    assert_int_equal(at_uuid_from_name(dns, "a\0b", 3, a), 0); /* all len bytes count */
    assert_int_equal(at_uuid_from_name(dns, "a\0c", 3, b), 0);
    assert_string_not_equal(a, b);
    assert_int_equal(at_uuid_from_name("not-a-uuid", "x", 1, a), AT_EINVAL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_new),
        cmocka_unit_test(test_valid),
        cmocka_unit_test(test_normalize),
        cmocka_unit_test(test_from_name),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
