/* Unit tests of src/http/framing.c: RFC 9112 framing that makes a body's length
 * ambiguous is refused; ordinary requests pass. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <string.h>

#include "http/framing.h"
#include "actionstools/banned.h"

#define N(a) (sizeof a / sizeof a[0])

static int check(const at_header *h, size_t n)
{
    const char *why = NULL;
    int status = at_framing_check(h, n, &why);
    if (status) assert_non_null(why);
    else assert_null(why);
    return status;
}

static void test_ordinary(void **state)
{
    const at_header get[] = {{"Host", "x"}, {"Authorization", "Bearer t"}};
    const at_header post[] = {{"Host", "x"}, {"Content-Length", "12"}, {"content-type", "application/json"}};
    const at_header chunked[] = {{"Host", "x"}, {"Transfer-Encoding", "chunked"}};
    const at_header chunked_case[] = {{"transfer-encoding", " Chunked "}};
    const at_header same_twice[] = {{"Content-Length", "5"}, {"content-length", "5"}};
    (void)state;
    assert_int_equal(check(get, N(get)), 0);
    assert_int_equal(check(post, N(post)), 0);
    assert_int_equal(check(chunked, N(chunked)), 0);
    assert_int_equal(check(chunked_case, N(chunked_case)), 0);
    assert_int_equal(check(same_twice, N(same_twice)), 0);
    assert_int_equal(check(NULL, 0), 0);
}

static void test_ambiguous(void **state)
{
    const at_header both[] = {{"Content-Length", "5"}, {"Transfer-Encoding", "chunked"}};
    const at_header both_rev[] = {{"Transfer-Encoding", "chunked"}, {"Content-Length", "0"}};
    const at_header two_lengths[] = {{"Content-Length", "5"}, {"Content-Length", "6"}};
    const at_header space_colon[] = {{"Transfer-Encoding ", "chunked"}};
    const at_header tab_colon[] = {{"Content-Length\t", "5"}};
    const at_header inner_space[] = {{"X Y", "1"}};
    const at_header no_name[] = {{"", "chunked"}};
    const at_header two_te[] = {{"Transfer-Encoding", "chunked"}, {"Transfer-Encoding", "chunked"}};
    const at_header not_final[] = {{"Transfer-Encoding", "chunked, gzip"}};
    const at_header unknown[] = {{"Transfer-Encoding", "gzip"}};
    const at_header chunkedx[] = {{"Transfer-Encoding", "chunkedx"}};
    const at_header other_first[] = {{"Transfer-Encoding", "gzip, chunked"}};
    (void)state;
    assert_int_equal(check(both, N(both)), 400);
    assert_int_equal(check(both_rev, N(both_rev)), 400);
    assert_int_equal(check(two_lengths, N(two_lengths)), 400);
    assert_int_equal(check(space_colon, N(space_colon)), 400);
    assert_int_equal(check(tab_colon, N(tab_colon)), 400);
    assert_int_equal(check(inner_space, N(inner_space)), 400);
    assert_int_equal(check(no_name, N(no_name)), 400);
    assert_int_equal(check(two_te, N(two_te)), 400);
    assert_int_equal(check(not_final, N(not_final)), 400);
    assert_int_equal(check(unknown, N(unknown)), 400);
    assert_int_equal(check(chunkedx, N(chunkedx)), 400);
    assert_int_equal(check(other_first, N(other_first)), 501);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ordinary),
        cmocka_unit_test(test_ambiguous),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
