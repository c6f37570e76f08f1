/* Unit tests of src/http/router.c: matching, parameters, 405 lists, specificity. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

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
        cmocka_unit_test(test_literal_beats_parameter), cmocka_unit_test(test_bad_pattern),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
