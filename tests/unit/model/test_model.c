/* Unit tests of src/model (field values, the descriptor check) and of the start-up
 * check of the route table (src/api/check.c): a typo in a descriptor stops start-up
 * with a message naming it. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include "actionstools/handler.h"
#include "actionstools/model.h"
#include "actionstools/av.h"
#include "actionstools/err.h"
#include "actionstools/banned.h"

static void dummy(at_ctx *c)
{
    (void)c;
}

static const char *const leading[] = {"uuid", NULL};
static const char *const hidden[] = {"deleted_at", NULL};
static const char *const flags[] = {"is_pinned", NULL};
static const char *const colours[] = {"red", "green", NULL};

static const at_field fields[] = {
    {"target_uuid", AT_F_STRING, AT_FF_SERVICE, .doc = "the record"},
    {"data", AT_F_JSON, AT_FF_CREATE | AT_FF_PATCH | AT_FF_REQUIRED, .doc = "payload"},
    {"is_pinned", AT_F_FLAG, AT_FF_CREATE | AT_FF_PATCH, .def = "false", .doc = "a flag"},
    {"title", AT_F_STRING, AT_FF_CREATE, 1, 5, .doc = "1 to 5 characters"},
    {"colour", AT_F_STRING, AT_FF_CREATE | AT_FF_NULLABLE, .choices = colours, .doc = "a choice"},
    {"size", AT_F_INT, AT_FF_CREATE, 0, INT64_MAX, .doc = "0 or more"},
    {"parent", AT_F_UUID, AT_FF_CREATE, .doc = "a uuid"},
    {NULL},
};

/* A toy resource on the notes table, correct as given; each test breaks one thing. */
static at_resource toy(void)
{
    at_resource r = {
        .name = "widget",
        .plural = "widgets",
        .table = AT_TABLE_NOTES,
        .pk = {AT_SRC_PATH, "target_uuid"},
        .sk = {AT_SRC_NEW_UUID, "uuid"},
        .uuid_index = "instance_id-uuid-index",
        .fields = fields,
        .view = {leading, flags, hidden, 1},
    };
    return r;
}

static at_list_def plans[] = {
    {.index = "target_uuid-updated_at-index", .pk = {AT_SRC_PATH, "target_uuid"}, .doc = "by record"},
    {NULL},
};

static void expect_refused(int rc, const char *err, const char *needle)
{
    assert_int_equal(rc, AT_EINVAL);
    if (!strstr(err, needle)) fail_msg("message \"%s\" does not name \"%s\"", err, needle);
}

static void test_real_routes_pass(void **state)
{
    char err[512] = "";
    (void)state;
    if (at_api_check_routes(at_routes, err, sizeof err)) fail_msg("the route table is refused: %s", err);
}

static void test_toy_passes(void **state)
{
    at_resource r = toy();
    char err[512] = "";
    (void)state;
    assert_int_equal(at_model_check_resource(&r, err, sizeof err), 0);
    assert_int_equal(at_model_check_list(&r, plans, "/targets/{target_uuid}/widgets", err, sizeof err), 0);
}

/* The check the brief asks for: a typo in an index name stops start-up, naming it. */
static void test_index_typo(void **state)
{
    at_resource r = toy();
    at_list_def bad[] = {
        {.index = "target_uuid-updated-index", .pk = {AT_SRC_PATH, "target_uuid"}, .doc = "typo"},
        {NULL},
    };
    at_list_def bad2[] = {
        {.index = "target_uuid-updated_at-index", .pk = {AT_SRC_PATH, "target_uuid"},
         .index2 = "target_uuid-is_pined-index", .doc = "typo in the hook's index"},
        {NULL},
    };
    at_route routes[] = {
        {"GET", "/targets/{target_uuid}/widgets", dummy, 0, "list", &r, AT_RK_LIST, bad},
        {NULL, NULL, NULL, 0, NULL, NULL, AT_RK_OTHER, NULL},
    };
    char err[512] = "";
    (void)state;
    expect_refused(at_model_check_list(&r, bad, "/targets/{target_uuid}/widgets", err, sizeof err), err,
                   "\"target_uuid-updated-index\" is not an index of table notes");
    expect_refused(at_model_check_list(&r, bad2, "/x/{target_uuid}", err, sizeof err), err,
                   "target_uuid-is_pined-index");
    expect_refused(at_api_check_routes(routes, err, sizeof err), err, "target_uuid-updated-index");
    r.uuid_index = "instance-uuid-index";
    expect_refused(at_model_check_resource(&r, err, sizeof err), err, "instance-uuid-index");
    r.uuid_index = "owner_uuid-created_at-index"; /* an index, but not (instance_id, uuid) */
    expect_refused(at_model_check_resource(&r, err, sizeof err), err, "not keyed by (instance_id, uuid)");
}

static void test_resource_mistakes(void **state)
{
    static const at_field pinned_as_text[] = {
        {"is_pinned", AT_F_STRING, AT_FF_CREATE, .doc = "a key attribute of type N"},
        {NULL},
    };
    static const at_field bad_default[] = {
        {"size", AT_F_INT, AT_FF_CREATE, 0, 10, .def = "11", .doc = "default out of bounds"},
        {NULL},
    };
    static const at_field twice[] = {
        {"data", AT_F_JSON, AT_FF_CREATE, .doc = "one"},
        {"data", AT_F_JSON, AT_FF_CREATE, .doc = "two"},
        {NULL},
    };
    static const at_field required_not_sent[] = {
        {"data", AT_F_JSON, AT_FF_PATCH | AT_FF_REQUIRED, .doc = "required on create, not sent on create"},
        {NULL},
    };
    static const char *const no_flags[] = {NULL};
    at_resource r;
    char err[512] = "";
    (void)state;
    r = toy();
    r.fields = pinned_as_text;
    r.view.flags = NULL;
    expect_refused(at_model_check_resource(&r, err, sizeof err), err, "\"is_pinned\" is a key attribute");
    r = toy();
    r.fields = bad_default;
    r.view.flags = NULL;
    expect_refused(at_model_check_resource(&r, err, sizeof err), err, "default of field \"size\"");
    r = toy();
    r.fields = twice;
    r.view.flags = NULL;
    expect_refused(at_model_check_resource(&r, err, sizeof err), err, "declared twice");
    r = toy();
    r.fields = required_not_sent;
    r.view.flags = NULL;
    expect_refused(at_model_check_resource(&r, err, sizeof err), err, "required");
    r = toy();
    r.view.flags = no_flags; /* is_pinned is a flag field: the view must show it as a boolean */
    expect_refused(at_model_check_resource(&r, err, sizeof err), err, "view.flags");
    r = toy();
    r.pk = (at_value_src){AT_SRC_TENANT, NULL}; /* notes are keyed by target_uuid */
    expect_refused(at_model_check_resource(&r, err, sizeof err), err, "partition key target_uuid");
    r = toy();
    r.epoch_timestamps = 1; /* the timestamps are S keys of the notes' indexes */
    expect_refused(at_model_check_resource(&r, err, sizeof err), err, "set epoch_timestamps to match");
}

static void test_list_mistakes(void **state)
{
    at_resource r = toy();
    char err[512] = "";
    /* A tenant's partition read with a value the client chooses would cross tenants. */
    at_list_def by_tenant_from_path[] = {
        {.index = "instance_id-uuid-index", .pk = {AT_SRC_PATH, "target_uuid"}, .doc = "x"},
        {NULL},
    };
    at_list_def param_not_in_path[] = {
        {.index = "owner_uuid-created_at-index", .pk = {AT_SRC_PATH, "user_uuid"}, .doc = "x"},
        {NULL},
    };
    at_list_filter unknown_field[] = {{"colour", "color", AT_OP_EQ}, {NULL}};
    at_list_def bad_filter[] = {
        {.index = "target_uuid-updated_at-index", .pk = {AT_SRC_PATH, "target_uuid"},
         .filters = unknown_field, .doc = "x"},
        {NULL},
    };
    at_list_def after_default[] = {
        {.index = "target_uuid-updated_at-index", .pk = {AT_SRC_PATH, "target_uuid"}, .doc = "default"},
        {.when = "owner", .index = "owner_uuid-created_at-index", .pk = {AT_SRC_QUERY, "owner"}, .doc = "never"},
        {NULL},
    };
    (void)state;
    expect_refused(at_model_check_list(&r, by_tenant_from_path, "/t/{target_uuid}", err, sizeof err), err,
                   "must come from the tenant");
    expect_refused(at_model_check_list(&r, param_not_in_path, "/targets/{target_uuid}/widgets", err, sizeof err),
                   err, "{user_uuid} is not in the path");
    expect_refused(at_model_check_list(&r, bad_filter, "/t/{target_uuid}", err, sizeof err), err, "?colour");
    expect_refused(at_model_check_list(&r, after_default, "/t/{target_uuid}", err, sizeof err), err,
                   "follows the default");
    /* Several defaults at the end are fine: a run hook chooses among them (tasks). */
    {
        at_list_def two_defaults[] = {
            {.when = "owner", .index = "owner_uuid-created_at-index", .pk = {AT_SRC_QUERY, "owner"}, .doc = "by owner"},
            {.index = "target_uuid-updated_at-index", .pk = {AT_SRC_PATH, "target_uuid"}, .doc = "one default"},
            {.index = "target_uuid-created_at-index", .pk = {AT_SRC_PATH, "target_uuid"}, .doc = "another"},
            {NULL},
        };
        r.table = AT_TABLE_TASKS;
        assert_int_equal(at_model_check_list(&r, two_defaults, "/t/{target_uuid}", err, sizeof err), 0);
    }
}

static void test_route_mistakes(void **state)
{
    at_resource r = toy();
    char err[512] = "";
    at_route no_key[] = {
        {"GET", "/targets/{target_uuid}/widgets/{id}", dummy, 0, "read", &r, AT_RK_GET, NULL},
        {NULL, NULL, NULL, 0, NULL, NULL, AT_RK_OTHER, NULL},
    };
    at_route undocumented[] = {
        {"GET", "/targets/{target_uuid}/widgets/{widget_id}", dummy, 0, "read", &r, AT_RK_GET, NULL},
        {NULL, NULL, NULL, 0, NULL, NULL, AT_RK_OTHER, NULL},
    };
    at_route create_without_body[] = {
        {"POST", "/targets/{target_uuid}/widgets", dummy, 0, "create", &r, AT_RK_CREATE, NULL},
        {NULL, NULL, NULL, 0, NULL, NULL, AT_RK_OTHER, NULL},
    };
    (void)state;
    /* {id} is not a documented parameter either; the first problem found is reported */
    assert_int_equal(at_api_check_routes(no_key, err, sizeof err), AT_EINVAL);
    expect_refused(at_api_check_routes(undocumented, err, sizeof err), err, "{widget_id}");
    expect_refused(at_api_check_routes(create_without_body, err, sizeof err), err, "takes a body");
}

static void expect_stored(const at_field *f, const char *json, const char *want_av)
{
    json_t *v = json_loads(json, JSON_DECODE_ANY, NULL), *av = NULL, *want;
    char why[160];
    assert_non_null(v);
    if (at_model_field_value(f, v, &av, why, sizeof why))
        fail_msg("%s = %s refused: %s", f->name, json, why);
    if (!want_av) {
        assert_null(av);
    } else {
        want = json_loads(want_av, 0, NULL);
        if (!json_equal(av, want)) fail_msg("%s = %s stored as %s", f->name, json, json_dumps(av, JSON_COMPACT));
        json_decref(want);
    }
    json_decref(av);
    json_decref(v);
}

static void expect_bad(const at_field *f, const char *json, const char *why_part)
{
    json_t *v = json_loads(json, JSON_DECODE_ANY | JSON_ALLOW_NUL, NULL), *av = (json_t *)1;
    char why[160];
    assert_non_null(v);
    assert_int_equal(at_model_field_value(f, v, &av, why, sizeof why), AT_EINVAL);
    assert_null(av);
    if (!strstr(why, why_part)) fail_msg("%s = %s: \"%s\" does not say \"%s\"", f->name, json, why, why_part);
    json_decref(v);
}

static void test_field_values(void **state)
{
    at_resource r = toy();
    const at_field *pinned = at_model_field(&r, "is_pinned"), *title = at_model_field(&r, "title");
    const at_field *colour = at_model_field(&r, "colour"), *size = at_model_field(&r, "size");
    const at_field *parent = at_model_field(&r, "parent"), *data = at_model_field(&r, "data");
    (void)state;
    assert_null(at_model_field(&r, "nothing"));
    expect_stored(pinned, "true", "{\"N\":\"1\"}");
    expect_stored(pinned, "false", "{\"N\":\"0\"}");
    expect_bad(pinned, "1", "true or false");
    expect_bad(pinned, "null", "true or false");
    expect_stored(title, "\"héllo\"", "{\"S\":\"héllo\"}"); /* 5 characters, 6 bytes */
    expect_bad(title, "\"\"", "1 to 5 characters");
    expect_bad(title, "\"toolong\"", "1 to 5 characters");
    expect_bad(title, "\"a\\u0000b\"", "NUL");
    expect_bad(title, "5", "a string");
    expect_stored(colour, "\"red\"", "{\"S\":\"red\"}");
    expect_stored(colour, "null", NULL); /* nullable: removes the attribute */
    expect_bad(colour, "\"blue\"", "one of: red, green");
    expect_stored(size, "0", "{\"N\":\"0\"}");
    expect_stored(size, "9223372036854775807", "{\"N\":\"9223372036854775807\"}");
    expect_bad(size, "-1", "0 or more");
    expect_bad(size, "1.5", "whole number");
    expect_stored(parent, "\"123E4567-E89B-12D3-A456-426614174000\"", "{\"S\":\"123e4567-e89b-12d3-a456-426614174000\"}");
    expect_bad(parent, "\"123e4567\"", "UUID");
    expect_stored(data, "{\"a\":[1,null]}", "{\"M\":{\"a\":{\"L\":[{\"N\":\"1\"},{\"NULL\":true}]}}}");
    expect_bad(data, "1e200", "");
}

static void test_text_values(void **state)
{
    at_resource r = toy();
    char why[160];
    json_t *av;
    (void)state;
    av = at_model_text_value(at_model_field(&r, "is_pinned"), "true", why, sizeof why);
    assert_string_equal(json_string_value(json_object_get(av, "N")), "1");
    json_decref(av);
    assert_null(at_model_text_value(at_model_field(&r, "is_pinned"), "yes", why, sizeof why));
    assert_non_null(strstr(why, "true or false"));
    av = at_model_text_value(at_model_field(&r, "size"), "42", why, sizeof why);
    assert_string_equal(json_string_value(json_object_get(av, "N")), "42");
    json_decref(av);
    assert_null(at_model_text_value(at_model_field(&r, "size"), "4x", why, sizeof why));
    assert_null(at_model_text_value(at_model_field(&r, "data"), "x", why, sizeof why));
    assert_null(at_model_text_value(at_model_field(&r, "colour"), "blue", why, sizeof why));
}

/* The resources of issues 8 and 9, sketched as descriptors against the real schema: the
 * descriptor can express them (keys from the tenant or the caller, epoch timestamps,
 * client-sent target_uuid, nullable fields, choices, a key from the path, plans chosen
 * by a query parameter, an order parameter, filters). */
static void test_descriptors_for_the_next_resources(void **state)
{
    static const char *const statuses[] = {"open", "in_progress", "blocked", "done", "cancelled", NULL};
    static const char *const priorities[] = {"low", "normal", "high", "urgent", NULL};
    static const char *const nflags[] = {"is_read", "is_hidden", NULL};
    static const at_field comment_f[] = {
        {"target_uuid", AT_F_STRING, AT_FF_SERVICE, .doc = "the record"},
        {"data", AT_F_JSON, AT_FF_CREATE | AT_FF_PATCH | AT_FF_REQUIRED, .doc = "the comment"},
        {"parent_uuid", AT_F_UUID, AT_FF_CREATE, .doc = "the comment answered"},
        {NULL},
    };
    static const at_field file_f[] = {
        {"target_uuid", AT_F_STRING, AT_FF_SERVICE, .doc = "the record"},
        {"file_name", AT_F_STRING, AT_FF_CREATE | AT_FF_PATCH | AT_FF_REQUIRED, 1, 1024, .doc = "name"},
        {"content_type", AT_F_STRING, AT_FF_CREATE | AT_FF_PATCH, .def = "\"application/octet-stream\"", .doc = "type"},
        {"size", AT_F_INT, AT_FF_CREATE | AT_FF_PATCH, 0, INT64_MAX, .doc = "bytes"},
        {"url", AT_F_STRING, AT_FF_CREATE | AT_FF_PATCH | AT_FF_NULLABLE, .doc = "http(s) URL"},
        {"document_uuid", AT_F_UUID, AT_FF_CREATE | AT_FF_PATCH | AT_FF_NULLABLE, .doc = "a document"},
        {"data", AT_F_JSON, AT_FF_CREATE | AT_FF_PATCH, .doc = "anything"},
        {NULL},
    };
    static const at_field setting_f[] = {
        {"config_value", AT_F_JSON, AT_FF_CREATE | AT_FF_PATCH | AT_FF_REQUIRED, .doc = "the value"},
        {"config_type", AT_F_STRING, AT_FF_CREATE | AT_FF_PATCH, .doc = "a type"},
        {"category", AT_F_STRING, AT_FF_CREATE | AT_FF_PATCH, .doc = "a category"},
        {NULL},
    };
    static const at_field notification_f[] = {
        {"target_uuid", AT_F_STRING, AT_FF_SERVICE, .doc = "the recipient"},
        {"is_read", AT_F_FLAG, AT_FF_PATCH, .def = "false", .doc = "read"},
        {"is_hidden", AT_F_FLAG, AT_FF_PATCH, .def = "false", .doc = "hidden"},
        {"kind", AT_F_STRING, AT_FF_SERVICE, .doc = "what happened"},
        {NULL},
    };
    static const at_field task_f[] = {
        {"title", AT_F_STRING, AT_FF_CREATE | AT_FF_PATCH | AT_FF_REQUIRED, 1, 500, .doc = "title"},
        {"status", AT_F_STRING, AT_FF_CREATE | AT_FF_PATCH, .choices = statuses, .def = "\"open\"", .doc = "status"},
        {"priority", AT_F_STRING, AT_FF_CREATE | AT_FF_PATCH, .choices = priorities, .def = "\"normal\"", .doc = "p"},
        {"assignee_uuid", AT_F_UUID, AT_FF_CREATE | AT_FF_PATCH | AT_FF_NULLABLE, .doc = "assignee"},
        {"assignee_name", AT_F_STRING, AT_FF_CREATE | AT_FF_PATCH | AT_FF_NULLABLE, .doc = "name"},
        {"target_uuid", AT_F_STRING, AT_FF_CREATE | AT_FF_PATCH | AT_FF_NULLABLE, .doc = "sent by clients"},
        {"due_at", AT_F_INT, AT_FF_CREATE | AT_FF_PATCH | AT_FF_NULLABLE, .doc = "epoch seconds"},
        {"data", AT_F_JSON, AT_FF_CREATE | AT_FF_PATCH, .doc = "anything"},
        {NULL},
    };
    const at_resource comments = {"comment", "comments", AT_TABLE_COMMENTS, {AT_SRC_PATH, "target_uuid"},
                                  {AT_SRC_NEW_UUID, "uuid"}, NULL, comment_f, 0, AT_PERM_OWNER, AT_PERM_OWNER,
                                  {leading, NULL, hidden, 1}};
    const at_resource files = {"file", "files", AT_TABLE_FILES, {AT_SRC_PATH, "target_uuid"},
                               {AT_SRC_NEW_UUID, "uuid"}, NULL, file_f, 0, AT_PERM_OWNER, AT_PERM_OWNER,
                               {leading, NULL, hidden, 1}};
    const at_resource settings = {"setting", "settings", AT_TABLE_SETTINGS, {AT_SRC_TENANT, NULL},
                                  {AT_SRC_PATH, "config_key"}, NULL, setting_f, 0, AT_PERM_ADMIN, AT_PERM_ADMIN,
                                  {leading, NULL, hidden, 1}};
    const at_resource notifications = {"notification", "notifications", AT_TABLE_NOTIFICATIONS,
                                       {AT_SRC_USER, NULL}, {AT_SRC_NEW_UUID, "uuid"}, NULL, notification_f, 0,
                                       AT_PERM_ANY, AT_PERM_ANY, {leading, nflags, hidden, 1}};
    const at_resource tasks = {"task", "tasks", AT_TABLE_TASKS, {AT_SRC_TENANT, NULL}, {AT_SRC_NEW_UUID, "uuid"},
                               "instance_id-uuid-index", task_f, 1, AT_PERM_OWNER_ASSIGNEE, AT_PERM_OWNER,
                               {leading, NULL, hidden, 1}};
    const at_list_def comment_lists[] = {
        {.index = "target_uuid-created_at-index", .pk = {AT_SRC_PATH, "target_uuid"}, .forward = 1,
         .order_param = "order", .doc = "oldest first"},
        {NULL},
    };
    const at_list_def setting_lists[] = {
        {.when = "category", .index = "category-created_at-index", .pk = {AT_SRC_QUERY, "category"}, .doc = "c"},
        {.index = "instance_id-config_type-index", .pk = {AT_SRC_TENANT, NULL}, .sk_param = "config_type",
         .sk_op = AT_OP_EQ, .doc = "all, or of one config_type"},
        {NULL},
    };
    const at_list_filter unread[] = {{"is_read", "is_read", AT_OP_EQ}, {NULL}};
    const at_list_def inbox[] = {
        {.index = "target_uuid-created_at-index", .pk = {AT_SRC_USER, NULL}, .filters = unread, .doc = "inbox"},
        {NULL},
    };
    const at_list_def task_lists[] = {
        {.when = "assignee_name", .index = "instance_id-assignee_name-index", .pk = {AT_SRC_TENANT, NULL},
         .sk_param = "assignee_name", .sk_op = AT_OP_BEGINS_WITH, .doc = "by name prefix"},
        {.index = "instance_id-created_at-index", .pk = {AT_SRC_TENANT, NULL}, .order_param = "order", .doc = "all"},
        {NULL},
    };
    const at_resource *all[] = {&comments, &files, &settings, &notifications, &tasks};
    char err[512] = "";
    (void)state;
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        if (at_model_check_resource(all[i], err, sizeof err)) fail_msg("%s", err);
    if (at_model_check_list(&comments, comment_lists, "/targets/{target_uuid}/comments", err, sizeof err) ||
        at_model_check_list(&settings, setting_lists, "/settings", err, sizeof err) ||
        at_model_check_list(&notifications, inbox, "/notifications", err, sizeof err) ||
        at_model_check_list(&tasks, task_lists, "/tasks", err, sizeof err))
        fail_msg("%s", err);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_real_routes_pass),  cmocka_unit_test(test_toy_passes),
        cmocka_unit_test(test_index_typo),        cmocka_unit_test(test_resource_mistakes),
        cmocka_unit_test(test_list_mistakes),     cmocka_unit_test(test_route_mistakes),
        cmocka_unit_test(test_field_values),      cmocka_unit_test(test_text_values),
        cmocka_unit_test(test_descriptors_for_the_next_resources),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
