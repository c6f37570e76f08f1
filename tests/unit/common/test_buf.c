/* Unit tests of src/common/buf.c. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "actionstools/buf.h"
#include "actionstools/err.h"
#include "actionstools/banned.h"

static void test_add(void **state)
{
    at_buf b;
    (void)state;
    at_buf_init(&b, 1024);
    assert_null(b.ptr);
    assert_string_equal(at_buf_str(&b), "");
    assert_int_equal(at_buf_adds(&b, "hello"), 0);
    assert_int_equal(at_buf_addc(&b, ' '), 0);
    assert_int_equal(at_buf_add(&b, "world!!", 5), 0);
    assert_int_equal(at_buf_printf(&b, " %d-%s", 42, "x"), 0);
    assert_string_equal(at_buf_str(&b), "hello world 42-x");
    assert_int_equal(b.len, 16);
    assert_int_equal(b.ptr[b.len], '\0');
    /* zero bytes and bytes with NULs */
    assert_int_equal(at_buf_add(&b, NULL, 0), 0);
    assert_int_equal(at_buf_add(&b, "a\0b", 3), 0);
    assert_int_equal(b.len, 19);
    assert_memory_equal(b.ptr + 16, "a\0b", 4);
    at_buf_release(&b);
    assert_null(b.ptr);
    assert_int_equal(b.len, 0);
    at_buf_release(&b); /* twice is fine */
}

static void test_cap(void **state)
{
    at_buf b;
    char big[600];
    (void)state;
    at_buf_init(&b, 10);
    assert_int_equal(at_buf_adds(&b, "0123456"), 0);
    /* over the cap: refused, nothing added */
    assert_int_equal(at_buf_adds(&b, "7890"), AT_ETOOBIG);
    assert_string_equal(at_buf_str(&b), "0123456");
    assert_int_equal(at_buf_printf(&b, "%s", "abcd"), AT_ETOOBIG);
    assert_string_equal(at_buf_str(&b), "0123456");
    /* up to the cap exactly */
    assert_int_equal(at_buf_adds(&b, "789"), 0);
    assert_int_equal(b.len, 10);
    assert_string_equal(at_buf_str(&b), "0123456789");
    assert_int_equal(at_buf_addc(&b, 'x'), AT_ETOOBIG);
    assert_int_equal(at_buf_add(&b, "", 0), 0);
    assert_true(b.cap <= 11);
    at_buf_release(&b);

    /* the long printf path (over 256 bytes) respects the cap too */
    memset(big, 'y', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    at_buf_init(&b, 500);
    assert_int_equal(at_buf_printf(&b, "%s", big), AT_ETOOBIG);
    assert_int_equal(b.len, 0);
    assert_int_equal(at_buf_printf(&b, "%.400s|", big), 0);
    assert_int_equal(b.len, 401);
    assert_int_equal(b.ptr[400], '|');
    assert_int_equal(b.ptr[401], '\0');
    assert_int_equal(at_buf_printf(&b, "%.99s", big), 0);
    assert_int_equal(b.len, 500);
    assert_int_equal(at_buf_printf(&b, "%s", ""), 0);
    assert_int_equal(at_buf_printf(&b, "z"), AT_ETOOBIG);
    at_buf_release(&b);

    /* a cap of 0 holds nothing */
    at_buf_init(&b, 0);
    assert_int_equal(at_buf_addc(&b, 'a'), AT_ETOOBIG);
    assert_string_equal(at_buf_str(&b), "");
    at_buf_release(&b);
}

/* SIZE_MAX as the cap means "no cap" in practice; it must not wrap around. */
static void test_no_cap(void **state)
{
    at_buf b;
    char chunk[1000];
    (void)state;
    memset(chunk, 'q', sizeof chunk);
    at_buf_init(&b, SIZE_MAX);
    assert_int_equal(at_buf_adds(&b, "abc"), 0);
    assert_string_equal(at_buf_str(&b), "abc");
    for (int i = 0; i < 100; i++)
        assert_int_equal(at_buf_add(&b, chunk, sizeof chunk), 0);
    assert_int_equal(b.len, 100003);
    assert_true(b.cap > b.len);
    assert_int_equal(b.ptr[b.len], '\0');
    at_buf_release(&b);
}

static void test_take_reset_release(void **state)
{
    at_buf b;
    char *s, *old;
    size_t n = 99;
    (void)state;
    at_buf_init(&b, 100);
    /* take of an empty buffer: "" that the caller frees */
    s = at_buf_take(&b, &n);
    assert_non_null(s);
    assert_string_equal(s, "");
    assert_int_equal(n, 0);
    free(s);
    at_buf_adds(&b, "payload");
    s = at_buf_take(&b, &n);
    assert_string_equal(s, "payload");
    assert_int_equal(n, 7);
    /* the buffer is empty and reusable, with its cap */
    assert_null(b.ptr);
    assert_int_equal(b.len, 0);
    assert_int_equal(b.max, 100);
    assert_int_equal(at_buf_adds(&b, "again"), 0);
    assert_string_equal(at_buf_str(&b), "again");
    free(s);
    /* reset keeps the memory */
    old = b.ptr;
    at_buf_reset(&b);
    assert_int_equal(b.len, 0);
    assert_ptr_equal(b.ptr, old);
    assert_string_equal(at_buf_str(&b), "");
    assert_int_equal(at_buf_adds(&b, "x"), 0);
    assert_string_equal(at_buf_str(&b), "x");
    s = at_buf_take(&b, NULL);
    assert_string_equal(s, "x");
    free(s);
    at_buf_reset(&b); /* on an empty buffer */
    at_buf_release(&b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_add),
        cmocka_unit_test(test_cap),
        cmocka_unit_test(test_no_cap),
        cmocka_unit_test(test_take_reset_release),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
