/* Unit tests of src/common/timeutil.c. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <string.h>

#include "actionstools/err.h"
#include "actionstools/timeutil.h"
#include "actionstools/banned.h"

#define US(sec) ((int64_t)(sec)*1000000)

static int64_t parse_ok(const char *s)
{
    int64_t us = -12345;
    if (at_timestamp_parse(s, &us) != 0) fail_msg("refused \"%s\"", s);
    return us;
}

static void parse_bad(const char *s)
{
    int64_t us = -12345;
    if (at_timestamp_parse(s, &us) != AT_EINVAL) fail_msg("accepted \"%s\"", s);
    assert_int_equal(us, -12345); /* untouched */
}

static void test_format(void **state)
{
    char out[AT_TIMESTAMP_LEN + 1];
    (void)state;
    at_timestamp_format(0, out);
    assert_string_equal(out, "1970-01-01 00:00:00.000000");
    at_timestamp_format(US(1706745599) + 123456, out);
    assert_string_equal(out, "2024-01-31 23:59:59.123456");
    assert_int_equal(strlen(out), AT_TIMESTAMP_LEN);
    at_timestamp_format(US(1709164800) + 1, out); /* leap day */
    assert_string_equal(out, "2024-02-29 00:00:00.000001");
    at_timestamp_format(-1, out); /* before the epoch: the fraction stays positive */
    assert_string_equal(out, "1969-12-31 23:59:59.999999");
    at_timestamp_format(US(253402300799) + 999999, out);
    assert_string_equal(out, "9999-12-31 23:59:59.999999");
}

static void test_parse(void **state)
{
    (void)state;
    assert_int_equal(parse_ok("2024-01-31 23:59:59.123456"), US(1706745599) + 123456);
    assert_int_equal(parse_ok("2024-01-31 23:59:59"), US(1706745599));
    assert_int_equal(parse_ok("2024-01-31T23:59:59"), US(1706745599));
    assert_int_equal(parse_ok("2024-01-31T23:59:59.123456"), US(1706745599) + 123456);
    /* shorter fractions are fractions of a second, not microseconds */
    assert_int_equal(parse_ok("2024-01-31 23:59:59.5"), US(1706745599) + 500000);
    assert_int_equal(parse_ok("2024-01-31 23:59:59.05"), US(1706745599) + 50000);
    assert_int_equal(parse_ok("2024-01-31 23:59:59.000001"), US(1706745599) + 1);
    assert_int_equal(parse_ok("1970-01-01 00:00:00"), 0);
    assert_int_equal(parse_ok("1969-12-31 23:59:59.999999"), -1);
    assert_int_equal(parse_ok("2024-02-29 12:00:00"), US(1709208000));
    assert_int_equal(parse_ok("2000-02-29 00:00:00"), US(951782400)); /* divisible by 400 */
    assert_int_equal(parse_ok("2023-12-31 23:59:59"), US(1704067199));
    assert_int_equal(parse_ok("9999-12-31 23:59:59.999999"), US(253402300799) + 999999);
}

static void test_parse_refuses(void **state)
{
    static const char *const bad[] = {
        "",
        "2024",
        "2024-01-31",
        "2024-01-31 23:59",
        "2023-02-29 00:00:00", /* not a leap year */
        "2100-02-29 00:00:00", /* divisible by 100, not by 400 */
        "2024-02-30 00:00:00",
        "2024-04-31 00:00:00",
        "2024-00-10 00:00:00",
        "2024-13-10 00:00:00",
        "2024-01-00 00:00:00",
        "2024-01-32 00:00:00",
        "2024-01-31 24:00:00",
        "2024-01-31 23:60:00",
        "2024-01-31 23:59:60", /* no leap seconds, as Python's datetime */
        "2024-01-31 23:59:59.",
        "2024-01-31 23:59:59.1234567",
        "2024-01-31 23:59:59.12a",
        "2024-01-31 23:59:59Z",
        "2024-01-31T23:59:59+00:00",
        "2024-01-31 23:59:59 ",
        " 2024-01-31 23:59:59",
        "2024-01-31  23:59:59",
        "2024-01-31_23:59:59",
        "2024/01/31 23:59:59",
        "2024-1-31 23:59:59",
        "2024-01-31 3:59:59",
        "24-01-31 23:59:59",
        "2024-01-31 23:59:5",
        "+024-01-31 23:59:59",
        "2024-01-31 23:59:59.-1",
        "2024-0x-31 23:59:59",
        "\xef\xbc\x92"
        "024-01-31 23:59:59",
    };
    int64_t us = 0;
    (void)state;
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        parse_bad(bad[i]);
    assert_int_equal(at_timestamp_parse(NULL, &us), AT_EINVAL);
}

static void test_round_trip(void **state)
{
    uint64_t x = 88172645463325252ULL;
    char out[AT_TIMESTAMP_LEN + 1];
    (void)state;
    for (int i = 0; i < 20000; i++) {
        int64_t us, back = 0;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        /* 1900 .. 2200 */
        us = (int64_t)(x % (uint64_t)US(9467280000LL)) - US(2208988800LL);
        at_timestamp_format(us, out);
        assert_int_equal(at_timestamp_parse(out, &back), 0);
        if (back != us)
            fail_msg("%s read back as %lld, want %lld", out, (long long)back, (long long)us);
    }
}

static void test_rfc3339_and_clocks(void **state)
{
    char out[32];
    int64_t a, b;
    (void)state;
    at_time_rfc3339(US(1706745599) + 123456, out);
    assert_string_equal(out, "2024-01-31T23:59:59.123Z");
    at_time_rfc3339(0, out);
    assert_string_equal(out, "1970-01-01T00:00:00.000Z");
    at_time_rfc3339(-1000, out);
    assert_string_equal(out, "1969-12-31T23:59:59.999Z");
    a = at_now_us();
    assert_true(a > US(1577836800)); /* after 2020 */
    a = at_monotonic_us();
    b = at_monotonic_us();
    assert_true(b >= a);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_format),
        cmocka_unit_test(test_parse),
        cmocka_unit_test(test_parse_refuses),
        cmocka_unit_test(test_round_trip),
        cmocka_unit_test(test_rfc3339_and_clocks),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
