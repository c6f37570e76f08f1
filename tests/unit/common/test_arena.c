/* Unit tests of src/common/arena.c. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "actionstools/arena.h"
#include "actionstools/banned.h"

static void test_alloc_alignment_and_use(void **state)
{
    at_arena a;
    unsigned char *prev = NULL;
    (void)state;
    at_arena_init(&a);
    for (size_t n = 0; n < 300; n++) {
        unsigned char *p = at_arena_alloc(&a, n);
        assert_non_null(p);
        assert_int_equal((uintptr_t)p % 16, 0);
        memset(p, (int)(n & 0xff), n); /* writable to the last byte */
        if (prev && n > 1) assert_int_equal(prev[n - 2], (n - 1) & 0xff); /* untouched */
        prev = p;
    }
    at_arena_release(&a);
    assert_null(a.head);
    assert_int_equal(a.total, 0);
}

static void test_big_blocks_keep_the_current_chunk(void **state)
{
    at_arena a;
    char *small1, *big, *small2, *huge;
    (void)state;
    at_arena_init(&a);
    small1 = at_arena_alloc(&a, 32);
    big = at_arena_alloc(&a, 10000);
    small2 = at_arena_alloc(&a, 32);
    assert_non_null(big);
    memset(big, 'b', 10000);
    /* the small ones come from the same chunk, one after the other */
    assert_ptr_equal(small2, small1 + 32);
    huge = at_arena_alloc(&a, 1 << 20);
    assert_non_null(huge);
    memset(huge, 'h', 1 << 20);
    assert_int_equal(big[9999], 'b');
    assert_int_equal(a.total, 32 + 10000 + 32 + (1 << 20));
    at_arena_release(&a);
    /* reusable after release */
    assert_non_null(at_arena_alloc(&a, 5000));
    at_arena_release(&a);
}

static void test_strings(void **state)
{
    at_arena a;
    char *s;
    unsigned char *z;
    (void)state;
    at_arena_init(&a);
    assert_string_equal(at_arena_strdup(&a, "hello"), "hello");
    assert_null(at_arena_strdup(&a, NULL));
    s = at_arena_strndup(&a, "abcdef", 3);
    assert_string_equal(s, "abc");
    s = at_arena_strndup(&a, "", 0);
    assert_string_equal(s, "");
    s = at_arena_printf(&a, "%s-%d-%05.1f", "x", 7, 2.25);
    assert_string_equal(s, "x-7-002.2");
    {
        char long_text[6000];
        memset(long_text, 'L', sizeof long_text - 1);
        long_text[sizeof long_text - 1] = '\0';
        s = at_arena_printf(&a, "<%s>", long_text);
        assert_int_equal(strlen(s), sizeof long_text + 1);
        assert_int_equal(s[0], '<');
        assert_int_equal(s[sizeof long_text], '>');
    }
    z = at_arena_calloc(&a, 100);
    for (int i = 0; i < 100; i++)
        assert_int_equal(z[i], 0);
    at_arena_release(&a);
}

/* Sizes near SIZE_MAX must fail cleanly, not wrap into a tiny block. (Sizes that
 * reach malloc are not tried: ASan aborts on those instead of returning NULL.) */
static void test_overflowing_sizes(void **state)
{
    at_arena a;
    (void)state;
    at_arena_init(&a);
    for (size_t d = 0; d <= 30; d++)
        assert_null(at_arena_alloc(&a, SIZE_MAX - d));
    assert_null(at_arena_calloc(&a, SIZE_MAX - 20));
    /* still usable */
    assert_non_null(at_arena_alloc(&a, 16));
    at_arena_release(&a);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_alloc_alignment_and_use),
        cmocka_unit_test(test_big_blocks_keep_the_current_chunk),
        cmocka_unit_test(test_strings),
        cmocka_unit_test(test_overflowing_sizes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
