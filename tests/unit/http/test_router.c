/* Unit tests of src/http/router.c: matching, parameters, 405 lists, specificity. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include "http/router.h"
#include "actionstools/err.h"
#include "actionstools/banned.h"

static void h(at_ctx *c)
{
    (void)c;
}

static const at_route routes[] = {
    {"GET", "/health", h, AT_R_PUBLIC, ""},
    {"GET", "/tasks/counters", h, 0, ""},
    {"GET", "/tasks/{uuid}", h, 0, ""},
    {"PATCH", "/tasks/{uuid}", h, 0, ""},
    {"DELETE", "/tasks/{uuid}", h, 0, ""},
    {"POST", "/targets/{target_uuid}/notes", h, AT_R_BODY, ""},
    {"GET", "/targets/{target_uuid}/notes/{uuid}", h, 0, ""},
    {NULL, NULL, NULL, 0, NULL},
};

typedef struct fixture {
    at_router *r;
    at_arena a;
    at_buf allow;
} fixture;

static int setup(void **state)
{
    static fixture f;
    assert_int_equal(at_router_new(routes, &f.r), 0);
    at_arena_init(&f.a);
    at_buf_init(&f.allow, 256);
    *state = &f;
    return 0;
}

static int teardown(void **state)
{
    fixture *f = *state;
    at_router_free(f->r);
    at_arena_release(&f->a);
    at_buf_release(&f->allow);
    return 0;
}

static void test_literal(void **state)
{
    fixture *f = *state;
    at_match m;
    assert_int_equal(at_router_match(f->r, "GET", "/health", &f->a, &m, &f->allow), 0);
    assert_ptr_equal(m.route, &routes[0]);
    assert_int_equal(m.nparams, 0);
    /* HEAD is GET; one trailing slash is forgiven. */
    at_router_match(f->r, "HEAD", "/health/", &f->a, &m, NULL);
    assert_ptr_equal(m.route, &routes[0]);
}

static void test_params(void **state)
{
    fixture *f = *state;
    at_match m;
    at_router_match(f->r, "GET", "/targets/acc-1/notes/abc", &f->a, &m, NULL);
    assert_ptr_equal(m.route, &routes[6]);
    assert_int_equal(m.nparams, 2);
    assert_string_equal(m.names[0], "target_uuid");
    assert_string_equal(m.values[0], "acc-1");
    assert_string_equal(m.names[1], "uuid");
    assert_string_equal(m.values[1], "abc");
}

static void test_not_found(void **state)
{
    fixture *f = *state;
    at_match m;
    const char *paths[] = {"/", "/nope", "/targets/x", "/targets//notes", "/targets/x/notes/y/z",
                           "//health", "/health//", "/a/b/c/d/e/f/g/h/i/j/k"};
    for (size_t i = 0; i < sizeof paths / sizeof paths[0]; i++) {
        assert_int_equal(at_router_match(f->r, "GET", paths[i], &f->a, &m, &f->allow), 0);
        assert_null(m.route);
        assert_false(m.path_known);
    }
}

static void test_method_not_allowed(void **state)
{
    fixture *f = *state;
    at_match m;
    at_router_match(f->r, "PUT", "/tasks/123", &f->a, &m, &f->allow);
    assert_null(m.route);
    assert_true(m.path_known);
    assert_string_equal(at_buf_str(&f->allow), "GET, PATCH, DELETE");
}

static void test_literal_beats_parameter(void **state)
{
    fixture *f = *state;
    at_match m;
    at_router_match(f->r, "GET", "/tasks/counters", &f->a, &m, &f->allow);
    assert_ptr_equal(m.route, &routes[1]);
    assert_string_equal(at_buf_str(&f->allow), "GET");
    /* /tasks/counters is not a task: PATCH there is 405, not a PATCH of task "counters". */
    at_router_match(f->r, "PATCH", "/tasks/counters", &f->a, &m, &f->allow);
    assert_null(m.route);
    assert_true(m.path_known);
}

/* Paths arrive raw: split on '/' first, then each segment is decoded once. */
static void test_raw_segments(void **state)
{
    fixture *f = *state;
    at_match m;
    /* An encoded '/' stays inside its segment. */
    at_router_match(f->r, "GET", "/targets/a%2Fb/notes/x%2F", &f->a, &m, NULL);
    assert_ptr_equal(m.route, &routes[6]);
    assert_string_equal(m.values[0], "a/b");
    assert_string_equal(m.values[1], "x/");
    assert_null(m.invalid_param);
    /* Decoded once: %2541 is "%41", not "A". */
    at_router_match(f->r, "GET", "/targets/%2541/notes/%e2%82%ac", &f->a, &m, NULL);
    assert_ptr_equal(m.route, &routes[6]);
    assert_string_equal(m.values[0], "%41");
    assert_string_equal(m.values[1], "\xe2\x82\xac");
    /* Literal segments are compared decoded. */
    at_router_match(f->r, "GET", "/heal%74h", &f->a, &m, NULL);
    assert_ptr_equal(m.route, &routes[0]);
    /* A raw (unencoded) valid UTF-8 byte sequence is fine too. */
    at_router_match(f->r, "GET", "/tasks/\xc3\xa9", &f->a, &m, NULL);
    assert_ptr_equal(m.route, &routes[2]);
    assert_string_equal(m.values[0], "\xc3\xa9");
    assert_null(m.invalid_param);
}

/* A segment that decodes to a NUL, invalid UTF-8, or has a malformed escape names no
 * item: the route still matches (so 401 and 405 come first) and the parameter is
 * flagged; a literal segment like that matches nothing. */
static void test_invalid_segments(void **state)
{
    fixture *f = *state;
    at_match m;
    const char *bad[] = {"%ff%fe", "abc%00junk", "%00", "%zz", "ab%4", "ab%", "%c0%af", "%ed%a0%80",
                         "%f4%90%80%80", "%e2%82", "\xff", "%80"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char path[128];
        snprintf(path, sizeof path, "/targets/%s/notes/u", bad[i]);
        assert_int_equal(at_router_match(f->r, "GET", path, &f->a, &m, NULL), 0);
        if (m.route != &routes[6]) fail_msg("%s: the route should match", bad[i]);
        if (!m.invalid_param || strcmp(m.invalid_param, "target_uuid") != 0)
            fail_msg("%s: not flagged as naming no item", bad[i]);
        assert_string_equal(m.values[0], "");
    }
    at_router_match(f->r, "GET", "/targets/ok/notes/%00", &f->a, &m, NULL);
    assert_ptr_equal(m.route, &routes[6]);
    assert_string_equal(m.invalid_param, "uuid");
    /* The method check still works on such a path. */
    at_router_match(f->r, "PUT", "/tasks/%ff", &f->a, &m, &f->allow);
    assert_null(m.route);
    assert_true(m.path_known);
    /* In a literal segment: no route. */
    at_router_match(f->r, "GET", "/heal%zzth", &f->a, &m, NULL);
    assert_null(m.route);
    assert_false(m.path_known);
}

static void test_bad_pattern(void **state)
{
    static const at_route bad[] = {{"GET", "no-slash", h, 0, ""}, {NULL, NULL, NULL, 0, NULL}};
    at_router *r = NULL;
    (void)state;
    assert_int_equal(at_router_new(bad, &r), AT_EINVAL);
    assert_null(r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_literal),           cmocka_unit_test(test_params),
        cmocka_unit_test(test_not_found),         cmocka_unit_test(test_method_not_allowed),
        cmocka_unit_test(test_literal_beats_parameter), cmocka_unit_test(test_raw_segments),
        cmocka_unit_test(test_invalid_segments),  cmocka_unit_test(test_bad_pattern),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
