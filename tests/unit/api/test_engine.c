/* Unit tests of the resource engine (src/api/engine.c, item.c, claim.c, list.c) over a
 * toy descriptor on the comments table, with handlers called directly on a sqlite
 * store; and of lists over a store that stops every page after one stored item, as a
 * store at its work bound does (SPEC §4: short pages with a cursor, complete lists). */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "api/api.h"
#include "actionstools/cursor.h"
#include "actionstools/err.h"
#include "actionstools/banned.h"

/* ---- the toy resource ---- */

static int serial;

static void widget_check(at_ctx *c, const at_resource *r, const json_t *old, json_t *item, json_t *errors)
{
    const char *colour = at_item_s(item, "colour"), *title = at_item_s(item, "title");
    if (title && strcmp(title, "unreadable") == 0) { /* as a check whose storage read failed */
        at_reply_error(c, 503, "the store is unreachable; try again shortly");
        return;
    }
    if (colour && strcmp(colour, "red") == 0 && !json_object_get(item, "size"))
        json_object_set_new(errors, "size", json_string("required when colour is red"));
}

static int widget_on_create(at_ctx *c, const at_resource *r, json_t *item)
{
    return json_object_set_new(item, "serial", at_av_n_int(++serial)) == 0;
}

static const char *const colours[] = {"red", "green", "blue", NULL};
static const char *const flags[] = {"done", NULL};

static const at_field fields[] = {
    {"target_uuid", AT_F_STRING, AT_FF_SERVICE, .doc = "the record"},
    {"title", AT_F_STRING, AT_FF_CREATE | AT_FF_PATCH | AT_FF_REQUIRED, 1, 20, .doc = "a title"},
    {"colour", AT_F_STRING, AT_FF_CREATE | AT_FF_PATCH | AT_FF_NULLABLE, .choices = colours,
     .def = "\"green\"", .doc = "a colour"},
    {"size", AT_F_INT, AT_FF_CREATE, 0, 1000, .doc = "a size, set on create only"},
    {"done", AT_F_FLAG, AT_FF_CREATE | AT_FF_PATCH, .def = "false", .doc = "a flag"},
    {"data", AT_F_JSON, AT_FF_CREATE | AT_FF_PATCH, .doc = "anything"},
    {NULL},
};

static const at_resource widgets = {
    .name = "widget",
    .plural = "widgets",
    .table = AT_TABLE_COMMENTS,
    .pk = {AT_SRC_PATH, "target_uuid"},
    .sk = {AT_SRC_NEW_UUID, "uuid"},
    .fields = fields,
    .change = AT_PERM_OWNER,
    .remove = AT_PERM_ADMIN,
    .view = {at_api_view_leading, flags, at_api_view_hidden, 1},
    .check = widget_check,
    .on_create = widget_on_create,
};

static const at_list_filter filters[] = {{"colour", "colour", AT_OP_EQ}, {"done", "done", AT_OP_EQ}, {NULL}};

static const at_list_def lists[] = {
    {.when = "owner", .index = "owner_uuid-created_at-index", .pk = {AT_SRC_QUERY, "owner"}, .forward = 0,
     .doc = "by owner, newest first"},
    {.index = "target_uuid-created_at-index", .pk = {AT_SRC_PATH, "target_uuid"}, .forward = 1,
     .order_param = "order", .filters = filters, .doc = "oldest first"},
    {NULL},
};

/* A resource served by PUT: keyed by the tenant and a key the client chooses. */
static void knob_check(at_ctx *c, const at_resource *r, const json_t *old, json_t *item, json_t *errors)
{
    const char *k = at_param(c, "config_key");
    if (!old && k && strchr(k, ' ')) json_object_set_new(errors, "config_key", json_string("no spaces"));
}

static const at_field knob_fields[] = {
    {"config_key", AT_F_STRING, AT_FF_SERVICE, .doc = "the key (from the path)"},
    {"value", AT_F_JSON, AT_FF_CREATE | AT_FF_REQUIRED, .doc = "anything"},
    {"category", AT_F_STRING, AT_FF_CREATE, 1, 20, .doc = "a category"},
    {"note", AT_F_STRING, AT_FF_CREATE, .def = "\"none\"", .doc = "a note, with a default"},
    {NULL},
};

static const at_resource knobs = {
    .name = "knob",
    .plural = "knobs",
    .table = AT_TABLE_SETTINGS,
    .pk = {AT_SRC_TENANT, NULL},
    .sk = {AT_SRC_PATH, "config_key"},
    .fields = knob_fields,
    .change = AT_PERM_OWNER,
    .remove = AT_PERM_OWNER,
    .view = {at_api_view_leading, NULL, at_api_view_hidden, 1},
    .check = knob_check,
};

/* A resource with a small set in its list: pinned pins, read whole from the pinned
 * index when few, sorted newest updated_at first. */
static void pinned_only(at_ctx *c, const at_resource *r, const at_list_def *l);

static const at_field pin_fields[] = {
    {"target_uuid", AT_F_STRING, AT_FF_SERVICE, .doc = "the record"},
    {"title", AT_F_STRING, AT_FF_CREATE, .doc = "a title"},
    {"is_pinned", AT_F_FLAG, AT_FF_CREATE, .def = "false", .doc = "pinned"},
    {NULL},
};
static const char *const pin_flags[] = {"is_pinned", NULL};

static const at_resource pins = {
    .name = "pin",
    .plural = "pins",
    .table = AT_TABLE_NOTES,
    .pk = {AT_SRC_PATH, "target_uuid"},
    .sk = {AT_SRC_NEW_UUID, "uuid"},
    .fields = pin_fields,
    .change = AT_PERM_OWNER,
    .remove = AT_PERM_OWNER,
    .view = {at_api_view_leading, pin_flags, at_api_view_hidden, 1},
};

static const at_list_def pin_lists[] = {
    {.index = "target_uuid-updated_at-index", .pk = {AT_SRC_PATH, "target_uuid"}, .forward = 0,
     .index2 = "target_uuid-is_pinned-index", .run = pinned_only, .doc = "pinned only, newest first"},
    {NULL},
};

#define COLL "/things/{target_uuid}/widgets"
#define ITEM "/things/{target_uuid}/widgets/{uuid}"
static const at_route routes[] = {
    {"POST", COLL, at_engine_create, AT_R_BODY, "create", &widgets, AT_RK_CREATE, NULL},
    {"GET", COLL, at_engine_list, 0, "list", &widgets, AT_RK_LIST, lists},
    {"GET", ITEM, at_engine_get, 0, "read", &widgets, AT_RK_GET, NULL},
    {"PATCH", ITEM, at_engine_patch, AT_R_BODY, "change", &widgets, AT_RK_PATCH, NULL},
    {"DELETE", ITEM, at_engine_delete, 0, "delete", &widgets, AT_RK_DELETE, NULL},
    {"POST", ITEM "/restore", at_engine_restore, 0, "restore", &widgets, AT_RK_RESTORE, NULL},
    {"PUT", "/knobs/{config_key}", at_engine_put, AT_R_BODY, "put", &knobs, AT_RK_PUT, NULL},
    {"GET", "/knobs/{config_key}", at_engine_get, 0, "read", &knobs, AT_RK_GET, NULL},
    {"DELETE", "/knobs/{config_key}", at_engine_delete, 0, "delete", &knobs, AT_RK_DELETE, NULL},
    {"POST", "/things/{target_uuid}/pins", at_engine_create, AT_R_BODY, "create", &pins, AT_RK_CREATE, NULL},
    {"GET", "/things/{target_uuid}/pins", at_engine_list, 0, "list", &pins, AT_RK_LIST, pin_lists},
    {NULL, NULL, NULL, 0, NULL, NULL, AT_RK_OTHER, NULL},
};
enum { R_CREATE, R_LIST, R_GET, R_PATCH, R_DELETE, R_RESTORE, R_PUT, R_KNOB_GET, R_KNOB_DELETE, R_PIN_CREATE, R_PINS };

static const at_identity owner = {"11111111-1111-4111-8111-111111111111", "Owner", "tenant-a", 0};
static const at_identity mate = {"22222222-2222-4222-8222-222222222222", "Mate", "tenant-a", 0};
static const at_identity admin = {"33333333-3333-4333-8333-333333333333", "Admin", "tenant-a", 1};
static const at_identity stranger = {"44444444-4444-4444-8444-444444444444", "Stranger", "tenant-b", 0};

/* ---- a store that reads one stored item per query page ---- */

typedef struct bounded {
    at_store base;
    at_store *real;
    int queries;
    int pass; /* 1: queries go through whole (only counted) */
} bounded;

static int b_setup(at_store *s, json_t *c, json_t *e) { return at_store_setup(((bounded *)s)->real, c, e); }
static int b_get(at_store *s, at_table_id t, const json_t *k, json_t **i) { return at_store_get(((bounded *)s)->real, t, k, i); }
static int b_put(at_store *s, at_table_id t, const json_t *i, const at_cond *c) { return at_store_put(((bounded *)s)->real, t, i, c); }
static int b_update(at_store *s, at_table_id t, const json_t *k, const at_update *u, const at_cond *c, json_t **n)
{
    return at_store_update(((bounded *)s)->real, t, k, u, c, n);
}
static int b_del(at_store *s, at_table_id t, const json_t *k, const at_cond *c) { return at_store_delete(((bounded *)s)->real, t, k, c); }

/* Reads one stored item, matching or not, and stops: the page holds it when it matches
 * (live, filter), packed when the query asks for AT_Q_RAW, and last_key is its key
 * either way, as a store's work bound does. */
static int b_query(at_store *s, const at_query *q, at_page *out)
{
    bounded *b = (bounded *)s;
    at_query one = *q;
    at_page page = {0};
    json_t *it;
    int rc;
    b->queries++;
    if (b->pass) return at_store_query(b->real, q, out);
    one.limit = 1;
    one.flags = 0;
    one.filter = (at_cond){NULL, 0};
    rc = at_store_query(b->real, &one, &page);
    if (rc) return rc;
    it = json_array_get(page.items, 0);
    if (!(q->flags & AT_Q_RAW)) out->items = json_array();
    if (it && !((q->flags & AT_Q_LIVE) && at_item_has(it, "deleted_at")) && at_cond_eval(it, &q->filter))
        rc = q->flags & AT_Q_RAW ? at_page_add_item_raw(out, it) : json_array_append(out->items, it);
    out->last_key = json_incref(page.last_key);
    at_page_release(&page);
    return rc;
}
static void b_destroy(at_store *s)
{
    at_store_release_names(s);
    free(s);
}

static const at_store_ops bounded_ops = {"bounded", b_setup, b_get, b_put, b_update, b_del, b_query,
                                         NULL, NULL, NULL, NULL, b_destroy};

/* ---- fixtures and calls ---- */

static char dir[64];
static at_store *real_store;
static at_store *store; /* real_store, or the bounded wrapper */
static bounded *wrapper;
static at_cursor_key key;
static const at_api_settings settings = {"", 0};

typedef struct answer {
    int status;
    json_t *body;
    char location[512];
    char etag[64];
} answer;

static void answer_release(answer *a)
{
    json_decref(a->body);
    memset(a, 0, sizeof *a);
}

/* Calls route i as who, with path parameters "name=value" (a NULL-ended list), a query
 * string "a=b&c=d", a JSON body and an If-Match header (all may be NULL). */
static answer call(int i, const at_identity *who, const char *const *params, const char *query,
                   const char *body, const char *ifm)
{
    at_arena arena;
    at_request req;
    at_response resp;
    at_ctx c;
    at_header hdr[1], q[8];
    char qbuf[4400];
    answer a;
    memset(&a, 0, sizeof a);
    memset(&req, 0, sizeof req);
    memset(&resp, 0, sizeof resp);
    memset(&c, 0, sizeof c);
    at_arena_init(&arena);
    req.arena = &arena;
    req.method = routes[i].method;
    req.path = routes[i].pattern;
    if (ifm) {
        hdr[0] = (at_header){"If-Match", ifm};
        req.headers = hdr;
        req.nheaders = 1;
    }
    if (query) {
        char *save = NULL, *tok;
        snprintf(qbuf, sizeof qbuf, "%s", query);
        for (tok = strtok_r(qbuf, "&", &save); tok && req.nquery < 8; tok = strtok_r(NULL, "&", &save)) {
            char *eq = strchr(tok, '=');
            if (eq) *eq = '\0';
            q[req.nquery++] = (at_header){tok, eq ? eq + 1 : ""};
        }
        req.query = q;
    }
    c.settings = &settings;
    c.store = store;
    c.cursor_key = &key;
    c.req = &req;
    c.resp = &resp;
    c.arena = &arena;
    c.id = who;
    c.route = &routes[i];
    for (; params && *params && c.nparams < AT_MAX_PARAMS; params++) {
        const char *eq = strchr(*params, '=');
        c.param_names[c.nparams] = at_arena_strndup(&arena, *params, (size_t)(eq - *params));
        c.params[c.nparams++] = eq + 1;
    }
    if (body) c.body = json_loads(body, JSON_DECODE_ANY, NULL);
    routes[i].handler(&c);
    a.status = resp.status;
    if (resp.body) a.body = json_loadb(resp.body, resp.body_len, 0, NULL);
    for (size_t h = 0; h < resp.nheaders; h++) {
        if (strcmp(resp.headers[h].name, "Location") == 0)
            snprintf(a.location, sizeof a.location, "%s", resp.headers[h].value);
        if (strcmp(resp.headers[h].name, "ETag") == 0) snprintf(a.etag, sizeof a.etag, "%s", resp.headers[h].value);
    }
    json_decref(c.body);
    at_response_release(&resp);
    at_arena_release(&arena);
    return a;
}

static const char *s(const answer *a, const char *member)
{
    return json_string_value(json_object_get(a->body, member));
}

static void expect_status(const answer *a, int status)
{
    if (a->status != status) {
        char *t = json_dumps(a->body, JSON_COMPACT);
        fail_msg("expected %d, got %d %s", status, a->status, t ? t : "");
    }
}

/* Expects 400 with exactly one error, on field, containing text. */
static void expect_error(answer a, const char *field, const char *text)
{
    json_t *errs = json_object_get(a.body, "errors");
    const char *got = json_string_value(json_object_get(errs, field));
    expect_status(&a, 400);
    if (!got || !strstr(got, text) || json_object_size(errs) != 1) {
        char *t = json_dumps(a.body, JSON_COMPACT);
        fail_msg("errors.%s should say \"%s\": %s", field, text, t);
    }
    answer_release(&a);
}

static int setup(void **state)
{
    const char *names[AT_TABLE_COUNT];
    char path[128], err[256];
    (void)state;
    snprintf(dir, sizeof dir, "/tmp/at-engine-XXXXXX");
    if (!mkdtemp(dir)) return -1;
    snprintf(path, sizeof path, "%s/t.db", dir);
    for (int i = 0; i < AT_TABLE_COUNT; i++) names[i] = at_schema_table((at_table_id)i)->env_name;
    if (at_store_open_sqlite(path, names, &real_store, err, sizeof err)) return -1;
    if (at_store_setup(real_store, NULL, NULL)) return -1;
    wrapper = calloc(1, sizeof *wrapper);
    wrapper->base.ops = &bounded_ops;
    wrapper->real = real_store;
    if (at_store_init_names(&wrapper->base, names)) return -1;
    store = real_store;
    return at_cursor_key_derive(&key, "a test secret", 13);
}

static int teardown(void **state)
{
    char path[128];
    (void)state;
    at_store_free(&wrapper->base);
    at_store_free(real_store);
    for (const char *const *f = (const char *const[]){"t.db", "t.db-wal", "t.db-shm", NULL}; *f; f++) {
        snprintf(path, sizeof path, "%s/%s", dir, *f);
        unlink(path);
    }
    rmdir(dir);
    return 0;
}

static int use_real(void **state)
{
    (void)state;
    store = real_store;
    return 0;
}

/* Creates a widget on target t as who; its uuid goes into uuid. */
static void create(const at_identity *who, const char *t, const char *body, char uuid[37])
{
    char tp[128];
    const char *p[] = {tp, NULL};
    answer a;
    snprintf(tp, sizeof tp, "target_uuid=%s", t);
    a = call(R_CREATE, who, p, NULL, body, NULL);
    expect_status(&a, 201);
    snprintf(uuid, 37, "%s", s(&a, "uuid"));
    answer_release(&a);
}

/* ---- tests ---- */

static void test_toy_routes_pass_the_check(void **state)
{
    char err[512] = "";
    (void)state;
    if (at_api_check_routes(routes, err, sizeof err)) fail_msg("%s", err);
}

static void test_create(void **state)
{
    const char *p[] = {"target_uuid=rec one/ü", NULL};
    answer a = call(R_CREATE, &owner, p, NULL, "{\"title\":\"first\",\"data\":{\"n\":[1,2]}}", NULL);
    json_t *b;
    char want[256];
    (void)state;
    expect_status(&a, 201);
    b = a.body;
    assert_string_equal(s(&a, "target_uuid"), "rec one/ü");
    assert_string_equal(s(&a, "instance_id"), "tenant-a");
    assert_string_equal(s(&a, "owner_uuid"), owner.user_uuid);
    assert_string_equal(s(&a, "owner_name"), "Owner");
    assert_string_equal(s(&a, "title"), "first");
    assert_string_equal(s(&a, "colour"), "green"); /* the default */
    assert_true(json_is_false(json_object_get(b, "done"))); /* a flag default, shown as a boolean */
    assert_int_equal(json_integer_value(json_object_get(b, "version")), 1);
    assert_int_equal(json_integer_value(json_array_get(json_object_get(json_object_get(b, "data"), "n"), 1)), 2);
    assert_true(json_integer_value(json_object_get(b, "serial")) > 0); /* the on_create hook */
    assert_string_equal(s(&a, "created_at"), s(&a, "updated_at"));
    assert_null(json_object_get(b, "deleted_at"));
    snprintf(want, sizeof want, "/things/rec%%20one%%2F%%C3%%BC/widgets/%s", s(&a, "uuid"));
    assert_string_equal(a.location, want);
    assert_string_equal(a.etag, "\"1\"");
    answer_release(&a);
}

static void test_create_validation(void **state)
{
    const char *p[] = {"target_uuid=rec-v", NULL};
    answer a;
    (void)state;
    expect_error(call(R_CREATE, &owner, p, NULL, "{}", NULL), "title", "required");
    expect_error(call(R_CREATE, &owner, p, NULL, "{\"title\":\"\"}", NULL), "title", "1 to 20 characters");
    expect_error(call(R_CREATE, &owner, p, NULL, "{\"title\":7}", NULL), "title", "string");
    expect_error(call(R_CREATE, &owner, p, NULL, "{\"title\":\"t\",\"colour\":\"pink\"}", NULL), "colour",
                 "one of: red, green, blue");
    expect_error(call(R_CREATE, &owner, p, NULL, "{\"title\":\"t\",\"size\":-1}", NULL), "size", "0 to 1000");
    expect_error(call(R_CREATE, &owner, p, NULL, "{\"title\":\"t\",\"shape\":1}", NULL), "shape", "unknown field");
    expect_error(call(R_CREATE, &owner, p, NULL, "{\"title\":\"t\",\"target_uuid\":\"x\"}", NULL), "target_uuid",
                 "set by the service");
    expect_error(call(R_CREATE, &owner, p, NULL, "{\"title\":\"t\",\"item_number\":1}", NULL), "item_number",
                 "set by the service"); /* SPEC's service names, on every resource */
    expect_error(call(R_CREATE, &owner, p, NULL, "{\"title\":\"t\",\"uuid\":\"nope\"}", NULL), "uuid", "UUID");
    /* the check hook: a cross-field rule */
    expect_error(call(R_CREATE, &owner, p, NULL, "{\"title\":\"t\",\"colour\":\"red\"}", NULL), "size",
                 "required when colour is red");
    a = call(R_CREATE, &owner, p, NULL, "{\"title\":\"t\",\"colour\":\"red\",\"size\":3}", NULL);
    expect_status(&a, 201);
    answer_release(&a);
    a = call(R_CREATE, &owner, p, NULL, "{\"title\":\"t\",\"colour\":null}", NULL); /* nullable: no colour */
    expect_status(&a, 201);
    assert_null(json_object_get(a.body, "colour"));
    answer_release(&a);
    a = call(R_CREATE, &owner, p, NULL, "[1]", NULL);
    expect_status(&a, 400);
    answer_release(&a);
    a = call(R_CREATE, &owner, (const char *const[]){"target_uuid=", NULL}, NULL, "{\"title\":\"t\"}", NULL);
    expect_status(&a, 404);
    assert_string_equal(s(&a, "message"), "target not found");
    answer_release(&a);
}

static void test_client_uuid(void **state)
{
    const char *p[] = {"target_uuid=rec-c", NULL}, *p2[] = {"target_uuid=rec-c2", NULL};
    const char *body = "{\"title\":\"mine\",\"uuid\":\"ABCDEF01-2345-4678-89AB-CDEF01234567\"}";
    answer a = call(R_CREATE, &owner, p, NULL, body, NULL), b;
    (void)state;
    expect_status(&a, 201);
    assert_string_equal(s(&a, "uuid"), "abcdef01-2345-4678-89ab-cdef01234567");
    b = call(R_CREATE, &owner, p, NULL, body, NULL); /* a retry: the same item */
    expect_status(&b, 200);
    assert_true(json_equal(a.body, b.body));
    answer_release(&b);
    for (int i = 0; i < 3; i++) {
        const at_identity *who[] = {&owner, &mate, &stranger};
        b = call(R_CREATE, who[i], i == 0 ? p2 : p, NULL, body, NULL);
        expect_status(&b, 409);
        assert_non_null(strstr(s(&b, "message"), "cannot be used for a new widget"));
        answer_release(&b);
    }
    answer_release(&a);
}

static void test_get_patch_delete_restore(void **state)
{
    char id[37], ip[64];
    const char *p[] = {"target_uuid=rec-p", ip, NULL};
    answer a;
    (void)state;
    create(&owner, "rec-p", "{\"title\":\"before\",\"size\":5}", id);
    snprintf(ip, sizeof ip, "uuid=%s", id);
    a = call(R_GET, &mate, p, NULL, NULL, NULL);
    expect_status(&a, 200);
    answer_release(&a);
    a = call(R_GET, &stranger, p, NULL, NULL, NULL);
    expect_status(&a, 404);
    assert_string_equal(s(&a, "message"), "widget not found");
    answer_release(&a);
    /* PATCH: order of refusals 404, 403, 400, 412 */
    a = call(R_PATCH, &stranger, p, NULL, "{\"title\":\"x\"}", NULL);
    expect_status(&a, 404);
    answer_release(&a);
    a = call(R_PATCH, &mate, p, NULL, "{\"bogus\":1}", NULL);
    expect_status(&a, 403);
    assert_string_equal(s(&a, "message"), "only the widget's owner or a CRM_ADMIN may change it");
    answer_release(&a);
    expect_error(call(R_PATCH, &owner, p, NULL, "{}", NULL), "title", "send title, colour, done and/or data to change");
    expect_error(call(R_PATCH, &owner, p, NULL, "{\"size\":6}", NULL), "size", "cannot be changed");
    expect_error(call(R_PATCH, &owner, p, NULL, "{\"uuid\":\"x\",\"title\":\"t\"}", NULL), "uuid", "a widget's uuid cannot change");
    {
        char id2[37], ip2[64];
        const char *p2[] = {"target_uuid=rec-p", ip2, NULL};
        create(&owner, "rec-p", "{\"title\":\"no size\"}", id2);
        snprintf(ip2, sizeof ip2, "uuid=%s", id2);
        expect_error(call(R_PATCH, &owner, p2, NULL, "{\"colour\":\"red\"}", NULL), "size",
                     "required when colour is red");
    }
    a = call(R_PATCH, &owner, p, NULL, "{\"title\":\"after\",\"done\":true}", "\"2\"");
    expect_status(&a, 412);
    answer_release(&a);
    a = call(R_PATCH, &owner, p, NULL, "{\"title\":\"after\",\"done\":true,\"colour\":null}", "\"1\"");
    expect_status(&a, 200);
    assert_string_equal(s(&a, "title"), "after");
    assert_true(json_is_true(json_object_get(a.body, "done")));
    assert_null(json_object_get(a.body, "colour"));
    assert_int_equal(json_integer_value(json_object_get(a.body, "size")), 5);
    assert_string_equal(a.etag, "\"2\"");
    answer_release(&a);
    /* DELETE and restore: admin only for this resource */
    a = call(R_DELETE, &owner, p, NULL, NULL, NULL);
    expect_status(&a, 403);
    answer_release(&a);
    a = call(R_DELETE, &admin, p, NULL, NULL, NULL);
    expect_status(&a, 204);
    assert_null(a.body);
    answer_release(&a);
    a = call(R_GET, &owner, p, NULL, NULL, NULL);
    expect_status(&a, 404);
    answer_release(&a);
    a = call(R_RESTORE, &admin, p, NULL, NULL, NULL);
    expect_status(&a, 200);
    assert_int_equal(json_integer_value(json_object_get(a.body, "version")), 4);
    answer_release(&a);
    a = call(R_RESTORE, &admin, p, NULL, NULL, NULL);
    expect_status(&a, 409);
    assert_string_equal(s(&a, "message"), "the widget is not deleted; there is nothing to restore");
    answer_release(&a);
    /* a path uuid that is not a UUID names no item */
    a = call(R_GET, &owner, (const char *const[]){"target_uuid=rec-p", "uuid=nope", NULL}, NULL, NULL, NULL);
    expect_status(&a, 404);
    answer_release(&a);
}

/* Follows a list from the first page; collects the titles in order; returns the pages. */
static int walk(const char *t, const char *query, char *titles, size_t n)
{
    char tp[64], q[4400], cursor[4200] = "";
    const char *p[] = {tp, NULL};
    int pages = 0;
    titles[0] = '\0';
    snprintf(tp, sizeof tp, "target_uuid=%s", t);
    for (;;) {
        answer a;
        size_t i;
        json_t *it;
        snprintf(q, sizeof q, "%s%s%s", query, cursor[0] ? "&cursor=" : "", cursor);
        a = call(R_LIST, &owner, p, q, NULL, NULL);
        expect_status(&a, 200);
        pages++;
        json_array_foreach(json_object_get(a.body, "items"), i, it)
        {
            size_t len = strlen(titles);
            snprintf(titles + len, n - len, "%s%s", len ? "," : "", json_string_value(json_object_get(it, "title")));
        }
        if (json_is_null(json_object_get(a.body, "next_cursor"))) {
            answer_release(&a);
            return pages;
        }
        snprintf(cursor, sizeof cursor, "%s", s(&a, "next_cursor"));
        answer_release(&a);
        if (pages > 200) fail_msg("the list does not end");
    }
}

static void make_list(void)
{
    static int made;
    char id[37], ip[64], body[128];
    const char *p[] = {"target_uuid=rec-l", ip, NULL};
    answer a;
    if (made++) return;
    /* w0..w9, oldest first; w2, w5 deleted; odd ones blue; w3 done */
    for (int i = 0; i < 10; i++) {
        snprintf(body, sizeof body, "{\"title\":\"w%d\",\"colour\":\"%s\",\"done\":%s}", i, i % 2 ? "blue" : "green",
                 i == 3 ? "true" : "false");
        create(i == 7 ? &mate : &owner, "rec-l", body, id);
        snprintf(ip, sizeof ip, "uuid=%s", id);
        if (i == 2 || i == 5) {
            a = call(R_DELETE, &admin, p, NULL, NULL, NULL);
            expect_status(&a, 204);
            answer_release(&a);
        }
        usleep(1500);
    }
    create(&stranger, "rec-l", "{\"title\":\"theirs\"}", id); /* another tenant, same record */
}

static void test_lists(void **state)
{
    char titles[1024];
    const char *p[] = {"target_uuid=rec-l", NULL};
    answer a;
    (void)state;
    make_list();
    walk("rec-l", "limit=25", titles, sizeof titles);
    assert_string_equal(titles, "w0,w1,w3,w4,w6,w7,w8,w9");
    for (int limit = 1; limit <= 9; limit++) {
        char q[32];
        int pages;
        snprintf(q, sizeof q, "limit=%d", limit);
        pages = walk("rec-l", q, titles, sizeof titles);
        assert_string_equal(titles, "w0,w1,w3,w4,w6,w7,w8,w9");
        assert_int_equal(pages, (8 + limit - 1) / limit); /* full pages; null cursor on the last */
    }
    walk("rec-l", "limit=3&order=desc", titles, sizeof titles);
    assert_string_equal(titles, "w9,w8,w7,w6,w4,w3,w1,w0");
    walk("rec-l", "limit=2&colour=blue", titles, sizeof titles);
    assert_string_equal(titles, "w1,w3,w7,w9");
    walk("rec-l", "done=true", titles, sizeof titles);
    assert_string_equal(titles, "w3");
    walk("rec-l", "limit=1&owner=22222222-2222-4222-8222-222222222222", titles, sizeof titles);
    assert_string_equal(titles, "w7"); /* the plan chosen by ?owner= */
    expect_error(call(R_LIST, &owner, p, "done=yes", NULL, NULL), "done", "true or false");
    expect_error(call(R_LIST, &owner, p, "colour=pink", NULL, NULL), "colour", "one of");
    expect_error(call(R_LIST, &owner, p, "order=up", NULL, NULL), "order", "asc or desc");
    expect_error(call(R_LIST, &owner, p, "limit=0", NULL, NULL), "limit", "1 to 100");
    expect_error(call(R_LIST, &owner, p, "cursor=abc", NULL, NULL), "cursor", "malformed");
    /* a cursor of one filter is not good for another */
    a = call(R_LIST, &owner, p, "limit=1&colour=blue", NULL, NULL);
    expect_status(&a, 200);
    {
        char q[4200];
        snprintf(q, sizeof q, "colour=green&cursor=%s", s(&a, "next_cursor"));
        expect_error(call(R_LIST, &owner, p, q, NULL, NULL), "cursor", "malformed");
    }
    answer_release(&a);
}

/* A store that stops each page after one stored item: pages come short, some empty
 * (a deleted item read), each with a cursor; following them gives the whole list once. */
static void test_lists_at_the_work_bound(void **state)
{
    char titles[1024];
    const char *p[] = {"target_uuid=rec-l", NULL};
    answer a;
    int pages, empty = 0;
    (void)state;
    make_list();
    store = &wrapper->base;
    wrapper->queries = 0;
    pages = walk("rec-l", "limit=5", titles, sizeof titles);
    assert_string_equal(titles, "w0,w1,w3,w4,w6,w7,w8,w9");
    /* one stored item read per page: 10 of tenant-a, one of tenant-b, one empty end */
    assert_int_equal(pages, 12);
    assert_int_equal(wrapper->queries, 12);
    walk("rec-l", "limit=5&order=desc&colour=blue", titles, sizeof titles);
    assert_string_equal(titles, "w9,w7,w3,w1");
    /* a short page answers what it has and a cursor */
    a = call(R_LIST, &owner, p, "limit=5", NULL, NULL);
    expect_status(&a, 200);
    assert_int_equal(json_array_size(json_object_get(a.body, "items")), 1);
    assert_true(json_is_string(json_object_get(a.body, "next_cursor")));
    answer_release(&a);
    /* the pages that read a deleted item hold none */
    for (const char *q = "limit=5"; q; q = NULL) {
        char cursor[4200] = "", qq[4300];
        for (int i = 0; i < 20; i++) {
            snprintf(qq, sizeof qq, "%s%s%s", q, cursor[0] ? "&cursor=" : "", cursor);
            a = call(R_LIST, &owner, p, qq, NULL, NULL);
            expect_status(&a, 200);
            empty += json_array_size(json_object_get(a.body, "items")) == 0 && json_is_string(json_object_get(a.body, "next_cursor"));
            if (!json_is_string(json_object_get(a.body, "next_cursor"))) {
                answer_release(&a);
                break;
            }
            snprintf(cursor, sizeof cursor, "%s", s(&a, "next_cursor"));
            answer_release(&a);
        }
    }
    assert_true(empty >= 3); /* w2, w5 and the other tenant's widget */
}

/* A check hook that cannot decide answers itself; the engine stops there. */
static void test_check_that_answers(void **state)
{
    char id[37], ip[64];
    const char *p[] = {"target_uuid=rec-x", ip, NULL};
    answer a;
    (void)state;
    a = call(R_CREATE, &owner, p, NULL, "{\"title\":\"unreadable\"}", NULL);
    expect_status(&a, 503);
    answer_release(&a);
    create(&owner, "rec-x", "{\"title\":\"fine\"}", id);
    snprintf(ip, sizeof ip, "uuid=%s", id);
    a = call(R_PATCH, &owner, p, NULL, "{\"title\":\"unreadable\"}", NULL);
    expect_status(&a, 503);
    answer_release(&a);
    a = call(R_GET, &owner, p, NULL, NULL, NULL);
    assert_string_equal(s(&a, "title"), "fine"); /* unchanged */
    assert_string_equal(a.etag, "\"1\"");
    answer_release(&a);
}

static int64_t version_of(const answer *a)
{
    return json_integer_value(json_object_get(a->body, "version"));
}

/* PUT: 201 when it creates, 200 when it replaces whole (owner, created_at and version
 * go on), If-Match, permissions, validation, a key of the tenant. */
static void test_put(void **state)
{
    const char *k[] = {"config_key=dial.one", NULL};
    answer a, b;
    char created_at[64];
    (void)state;
    a = call(R_PUT, &owner, k, NULL, "{\"value\":{\"n\":1},\"category\":\"c1\"}", NULL);
    expect_status(&a, 201);
    assert_string_equal(a.location, "/knobs/dial.one");
    assert_string_equal(a.etag, "\"1\"");
    assert_string_equal(s(&a, "config_key"), "dial.one");
    assert_string_equal(s(&a, "instance_id"), "tenant-a");
    assert_string_equal(s(&a, "owner_uuid"), owner.user_uuid);
    assert_string_equal(s(&a, "note"), "none");
    assert_string_equal(s(&a, "created_at"), s(&a, "updated_at"));
    snprintf(created_at, sizeof created_at, "%s", s(&a, "created_at"));
    answer_release(&a);
    /* A replace: fields not sent are gone (or take their default). */
    a = call(R_PUT, &owner, k, NULL, "{\"value\":[2],\"note\":\"set\"}", "\"1\"");
    expect_status(&a, 200);
    assert_string_equal(a.location, "");
    assert_string_equal(a.etag, "\"2\"");
    assert_null(json_object_get(a.body, "category"));
    assert_string_equal(s(&a, "note"), "set");
    assert_string_equal(s(&a, "created_at"), created_at);
    assert_string_equal(s(&a, "owner_uuid"), owner.user_uuid);
    answer_release(&a);
    a = call(R_PUT, &owner, k, NULL, "{\"value\":3}", NULL);
    expect_status(&a, 200);
    assert_string_equal(s(&a, "note"), "none"); /* the default is back */
    assert_int_equal(version_of(&a), 3);
    answer_release(&a);
    /* Refusals: 403 (replace), 400, 412. */
    a = call(R_PUT, &mate, k, NULL, "{\"bogus\":1}", NULL);
    expect_status(&a, 403);
    answer_release(&a);
    expect_error(call(R_PUT, &owner, k, NULL, "{}", NULL), "value", "required");
    expect_error(call(R_PUT, &owner, k, NULL, "{\"value\":1,\"uuid\":\"x\"}", NULL), "uuid", "unknown field");
    expect_error(call(R_PUT, &owner, k, NULL, "{\"value\":1,\"config_key\":\"x\"}", NULL), "config_key",
                 "set by the service");
    expect_error(call(R_PUT, &owner, k, NULL, "{\"value\":1,\"category\":\"\"}", NULL), "category", "1 to 20");
    expect_error(call(R_PUT, &owner, k, NULL, "{\"value\":1,\"version\":9}", NULL), "version", "set by the service");
    a = call(R_PUT, &owner, k, NULL, "{\"value\":4}", "\"2\"");
    expect_status(&a, 412);
    answer_release(&a);
    /* The check hook on create: a key it refuses; a key no item can have. */
    expect_error(call(R_PUT, &owner, (const char *const[]){"config_key=has space", NULL}, NULL, "{\"value\":1}", NULL),
                 "config_key", "no spaces");
    expect_error(call(R_PUT, &owner, (const char *const[]){"config_key=", NULL}, NULL, "{\"value\":1}", NULL),
                 "config_key", "1 to 256 bytes");
    expect_error(call(R_PUT, &owner, (const char *const[]){"config_key=a\tb", NULL}, NULL, "{\"value\":1}", NULL),
                 "config_key", "control characters");
    /* If-Match on a key with no item: nothing to match. */
    a = call(R_PUT, &owner, (const char *const[]){"config_key=dial.new", NULL}, NULL, "{\"value\":1}", "*");
    expect_status(&a, 412);
    answer_release(&a);
    /* Another tenant's key of the same name is its own item. */
    a = call(R_PUT, &stranger, k, NULL, "{\"value\":\"theirs\"}", NULL);
    expect_status(&a, 201);
    assert_int_equal(version_of(&a), 1);
    answer_release(&a);
    a = call(R_KNOB_GET, &owner, k, NULL, NULL, NULL);
    expect_status(&a, 200);
    assert_int_equal(json_integer_value(json_object_get(a.body, "value")), 3);
    answer_release(&a);
    /* Deleted, then PUT again: created anew (201), its version going on. */
    a = call(R_KNOB_DELETE, &owner, k, NULL, NULL, NULL);
    expect_status(&a, 204);
    answer_release(&a);
    a = call(R_KNOB_GET, &owner, k, NULL, NULL, NULL);
    expect_status(&a, 404);
    answer_release(&a);
    a = call(R_PUT, &mate, k, NULL, "{\"value\":5}", "\"4\"");
    expect_status(&a, 412); /* the deleted item matches no If-Match */
    answer_release(&a);
    a = call(R_PUT, &mate, k, NULL, "{\"value\":5}", NULL);
    expect_status(&a, 201);
    assert_int_equal(version_of(&a), 5);
    assert_string_equal(s(&a, "owner_uuid"), mate.user_uuid);
    b = call(R_KNOB_GET, &owner, k, NULL, NULL, NULL);
    assert_true(json_equal(a.body, b.body));
    answer_release(&b);
    answer_release(&a);
}

static const char *pins_at = "target_uuid=rec-s"; /* the record of pin() and walk_pins() */

/* Creates a pin on the record pins_at. */
static void pin(const char *title, int pinned)
{
    char body[128];
    const char *p[] = {pins_at, NULL};
    answer a;
    snprintf(body, sizeof body, "{\"title\":\"%s\",\"is_pinned\":%s}", title, pinned ? "true" : "false");
    a = call(R_PIN_CREATE, &owner, p, NULL, body, NULL);
    expect_status(&a, 201);
    answer_release(&a);
    usleep(1200);
}

static void pinned_only(at_ctx *c, const at_resource *r, const at_list_def *l)
{
    at_list_query lq;
    at_pager p;
    json_t *one = at_av_n_int(1);
    if (!at_api_list_query_init(c, r, l, &lq)) return;
    if (!at_api_list_query_filter(&lq, "is_pinned", AT_OP_EQ, json_incref(one)) &&
        at_pager_begin(&p, c, r, lq.scope, 1)) {
        at_pager_small_set(&p, 0, &lq, l->index2, "is_pinned", one);
        at_pager_finish(&p);
    }
    at_api_list_query_release(&lq);
    json_decref(one);
}

/* Follows the pins list with limit, the first page from first_store and the rest from
 * store; collects the titles. */
static void walk_pins(size_t limit, at_store *first_store, char *titles, size_t n)
{
    char q[4400], cursor[4200] = "";
    const char *p[] = {pins_at, NULL};
    at_store *rest = store;
    titles[0] = '\0';
    store = first_store;
    for (int pages = 0; pages < 500; pages++) {
        answer a;
        size_t i;
        json_t *it;
        snprintf(q, sizeof q, "limit=%zu%s%s", limit, cursor[0] ? "&cursor=" : "", cursor);
        a = call(R_PINS, &owner, p, q, NULL, NULL);
        expect_status(&a, 200);
        json_array_foreach(json_object_get(a.body, "items"), i, it)
        {
            size_t len = strlen(titles);
            snprintf(titles + len, n - len, "%s%s", len ? "," : "", json_string_value(json_object_get(it, "title")));
        }
        store = rest;
        if (json_is_null(json_object_get(a.body, "next_cursor"))) {
            answer_release(&a);
            return;
        }
        snprintf(cursor, sizeof cursor, "%s", s(&a, "next_cursor"));
        answer_release(&a);
    }
    fail_msg("the list does not end");
}

/* A small set: read whole and sorted when few, paged through the list's own index when
 * many or when the store stops the read early; the same order either way, and a cursor
 * of one way is good for the other. */
static void test_small_set(void **state)
{
    char want[8192] = "", got[8192], t[16];
    (void)state;
    for (int i = 0; i < 12; i++) {
        snprintf(t, sizeof t, "p%02d", i);
        pin(t, i % 3 != 1);
    }
    for (int i = 11; i >= 0; i--) /* newest first, pinned only */
        if (i % 3 != 1) snprintf(want + strlen(want), sizeof want - strlen(want), "%sp%02d", want[0] ? "," : "", i);
    for (size_t limit = 1; limit <= 9; limit += 2) {
        walk_pins(limit, real_store, got, sizeof got); /* read whole: 8 pinned */
        assert_string_equal(got, want);
        store = &wrapper->base; /* one stored item per query page: never whole */
        walk_pins(limit, store, got, sizeof got);
        assert_string_equal(got, want);
        walk_pins(limit, real_store, got, sizeof got); /* first page whole, then paged */
        assert_string_equal(got, want);
        store = real_store;
    }
    /* More than AT_API_SMALL_SET pinned: paged for real, same order. */
    want[0] = '\0';
    for (int i = 12; i < 12 + AT_API_SMALL_SET; i++) {
        snprintf(t, sizeof t, "p%03d", i);
        pin(t, 1);
    }
    for (int i = 12 + AT_API_SMALL_SET - 1; i >= 0; i--)
        if (i >= 12 || i % 3 != 1)
            snprintf(want + strlen(want), sizeof want - strlen(want), i >= 12 ? "%sp%03d" : "%sp%02d", want[0] ? "," : "", i);
    walk_pins(7, real_store, got, sizeof got);
    assert_string_equal(got, want);
}

/* The ways counted: many pinned are a query of the pinned index, then the page's own;
 * few are one query of the pinned index per page. */
static void test_small_set_queries(void **state)
{
    char got[8192];
    (void)state;
    store = &wrapper->base;
    wrapper->pass = 1;
    wrapper->queries = 0;
    walk_pins(AT_API_SMALL_SET, store, got, sizeof got); /* 108 pinned: 2 pages */
    assert_int_equal(wrapper->queries, 4);
    pins_at = "target_uuid=rec-few";
    pin("a", 1);
    pin("b", 0);
    pin("c", 1);
    wrapper->queries = 0;
    walk_pins(1, store, got, sizeof got);
    assert_string_equal(got, "c,a");
    assert_int_equal(wrapper->queries, 2); /* 2 pages, one query each */
    pins_at = "target_uuid=rec-s";
    wrapper->pass = 0;
    store = real_store;
}

/* An answer stops once it passes about 1 MB; the list goes on from the last item. */
static void test_answer_cap(void **state)
{
    char titles[4096], id[37];
    char *body = malloc(200 * 1024);
    int pages;
    (void)state;
    for (int i = 0; i < 12; i++) {
        int n = snprintf(body, 64, "{\"title\":\"b%02d\",\"data\":\"", i);
        memset(body + n, 'x', 150 * 1024);
        snprintf(body + n + 150 * 1024, 8, "\"}");
        create(&owner, "rec-big", body, id);
        usleep(1500);
    }
    free(body);
    pages = walk("rec-big", "limit=100", titles, sizeof titles);
    assert_string_equal(titles, "b00,b01,b02,b03,b04,b05,b06,b07,b08,b09,b10,b11");
    assert_int_equal(pages, 2); /* 7 items of 150 KB pass 1 MB */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_toy_routes_pass_the_check),
        cmocka_unit_test_setup(test_create, use_real),
        cmocka_unit_test_setup(test_create_validation, use_real),
        cmocka_unit_test_setup(test_client_uuid, use_real),
        cmocka_unit_test_setup(test_get_patch_delete_restore, use_real),
        cmocka_unit_test_setup(test_lists, use_real),
        cmocka_unit_test_setup(test_lists_at_the_work_bound, use_real),
        cmocka_unit_test_setup(test_answer_cap, use_real),
        cmocka_unit_test_setup(test_check_that_answers, use_real),
        cmocka_unit_test_setup(test_put, use_real),
        cmocka_unit_test_setup(test_small_set, use_real),
        cmocka_unit_test_setup(test_small_set_queries, use_real),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
