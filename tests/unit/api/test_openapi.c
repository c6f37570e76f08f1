/* Unit tests of the API document (src/api/openapi.c) and the documentation routes
 * (src/api/docs.c). The drift test: the document made from the real route table has
 * exactly one operation per row, with the row's summary, and a row the document cannot
 * describe (no summary, a route of its own without its at_route_doc) stops start-up.
 * A toy resource shows that fields, bounds, choices, defaults, list plans, If-Match and
 * the refusals of each kind come out of the descriptor. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "api/api.h"
#include "actionstools/err.h"
#include "actionstools/banned.h"

static void dummy(at_ctx *c)
{
    (void)c;
}

/* ---- the real route table ---- */

static void lower(const char *s, char *out, size_t n)
{
    size_t i;
    for (i = 0; s[i] && i + 1 < n; i++)
        out[i] = (char)tolower((unsigned char)s[i]);
    out[i] = '\0';
}

static json_t *make(const at_route *routes, const char *prefix)
{
    json_t *doc = NULL;
    char err[512] = "";
    int rc = at_api_openapi(routes, prefix, &doc, err, sizeof err);
    if (rc) fail_msg("the document was refused: %s", err);
    return doc;
}

/* Every row is one operation of the document, and the document has no other. */
static void test_real_table_is_the_document(void **state)
{
    json_t *doc = make(at_routes, ""), *paths = json_object_get(doc, "paths"), *path, *op;
    const char *pattern, *method;
    size_t rows = 0, ops = 0;
    (void)state;
    for (const at_route *rt = at_routes; rt->method; rt++) {
        char m[16];
        rows++;
        if (!rt->summary || !*rt->summary)
            fail_msg("route %s %s has no summary", rt->method, rt->pattern);
        if (rt->kind != AT_RK_OTHER && !rt->resource)
            fail_msg("route %s %s: an engine route without a resource", rt->method, rt->pattern);
        if (rt->kind == AT_RK_OTHER && (!rt->doc || !rt->doc->answer))
            fail_msg("route %s %s: a route of its own without an at_route_doc", rt->method,
                     rt->pattern);
        lower(rt->method, m, sizeof m);
        op = json_object_get(json_object_get(paths, rt->pattern), m);
        if (!op) fail_msg("route %s %s is not in the document", rt->method, rt->pattern);
        assert_string_equal(json_string_value(json_object_get(op, "summary")), rt->summary);
        assert_non_null(json_object_get(op, "operationId"));
        assert_true(json_object_size(json_object_get(op, "responses")) >= 2);
        if (rt->flags & AT_R_PUBLIC) {
            assert_true(json_is_array(json_object_get(op, "security")));
            assert_int_equal(json_array_size(json_object_get(op, "security")), 0);
        } else {
            assert_null(json_object_get(op, "security")); /* the document's default: bearerAuth */
            assert_non_null(json_object_get(json_object_get(op, "responses"), "401"));
        }
    }
    json_object_foreach(paths, pattern, path)
    {
        json_object_foreach(path, method, op)
        {
            const at_route *rt;
            char m[16];
            for (rt = at_routes; rt->method; rt++) {
                lower(rt->method, m, sizeof m);
                if (strcmp(rt->pattern, pattern) == 0 && strcmp(m, method) == 0) break;
            }
            if (!rt->method)
                fail_msg("the document has %s %s, which no route serves", method, pattern);
            ops++;
        }
    }
    assert_int_equal(ops, rows);
    /* The routes SPEC §4 names as public are in the document as public. */
    assert_non_null(json_object_get(json_object_get(paths, "/openapi.json"), "get"));
    assert_non_null(json_object_get(json_object_get(paths, "/swagger.json"), "get"));
    assert_non_null(json_object_get(json_object_get(paths, "/docs"), "get"));
    assert_string_equal(json_string_value(json_object_get(doc, "openapi")), "3.0.3");
    assert_string_equal(json_string_value(json_object_get(
                            json_array_get(json_object_get(doc, "servers"), 0), "url")),
                        "/");
    json_decref(doc);
    doc = make(at_routes, "/actionstools");
    assert_string_equal(json_string_value(json_object_get(
                            json_array_get(json_object_get(doc, "servers"), 0), "url")),
                        "/actionstools");
    json_decref(doc);
}

/* ---- a toy resource ---- */

static const char *const colours[] = {"red", "green", NULL};
static const char *const flags[] = {"done", NULL};
static const char *const leading[] = {"uuid", NULL};
static const char *const hidden[] = {"deleted_at", NULL};

static const at_field fields[] = {
    {"target_uuid", AT_F_STRING, AT_FF_SERVICE, .doc = "the record"},
    {"data", AT_F_JSON, AT_FF_CREATE | AT_FF_PATCH | AT_FF_REQUIRED, .doc = "payload"},
    {"done", AT_F_FLAG, AT_FF_CREATE | AT_FF_PATCH, .def = "false", .doc = "a flag"},
    {"title", AT_F_STRING, AT_FF_CREATE | AT_FF_REQUIRED, 1, 5, .doc = "1 to 5 characters"},
    {"colour", AT_F_STRING, AT_FF_CREATE | AT_FF_PATCH | AT_FF_NULLABLE, .choices = colours,
     .def = "\"green\"", .doc = "a choice"},
    {"size", AT_F_INT, AT_FF_CREATE, 0, INT64_MAX, .doc = "0 or more"},
    {"parent", AT_F_UUID, AT_FF_CREATE, .doc = "a uuid"},
    {NULL},
};

static const at_resource widgets = {
    .name = "shiny_widget",
    .plural = "widgets",
    .table = AT_TABLE_COMMENTS,
    .pk = {AT_SRC_PATH, "target_uuid"},
    .sk = {AT_SRC_NEW_UUID, "uuid"},
    .uuid_index = NULL,
    .fields = fields,
    .change = AT_PERM_OWNER_ASSIGNEE,
    .remove = AT_PERM_ADMIN,
    .view = {leading, flags, hidden, 1},
    .doc = "toy widgets",
};

static const at_list_filter filters[] = {
    {"done", "done", AT_OP_EQ}, {"colour", "colour", AT_OP_NE}, {NULL}};

static const at_list_def lists[] = {
    {.when = "owner",
     .index = "owner_uuid-created_at-index",
     .pk = {AT_SRC_QUERY, "owner"},
     .forward = 0,
     .doc = "by owner, newest first"},
    {.index = "target_uuid-created_at-index",
     .pk = {AT_SRC_PATH, "target_uuid"},
     .forward = 1,
     .sk_param = "since",
     .sk_op = AT_OP_GE,
     .order_param = "order",
     .filters = filters,
     .doc = "oldest first"},
    {NULL},
};

static const at_doc_param stats_query[] = {
    {"from", "{\"type\": \"integer\"}", "epoch seconds"},
    {"group_by", NULL, "a grouping"},
    {NULL},
};

static const at_route_doc stats_doc = {
    .tag = "reports",
    .media_types = "application/json, text/csv",
    .schema = "{\"type\": \"object\", \"properties\": {\"n\": {\"type\": \"integer\"}}}",
    .answer = "counts",
    .query = stats_query,
    .errors = "409 412",
    .store = 1,
    .also_status = 202,
    .also_schema = "{\"type\": \"object\", \"properties\": {\"status\": {\"type\": \"string\"}}}",
    .also_answer = "not finished yet",
};

#define COLL "/targets/{target_uuid}/widgets"
#define ITEM "/targets/{target_uuid}/widgets/{uuid}"
static const at_route toy_routes[] = {
    {"POST", COLL, dummy, AT_R_BODY, "create", &widgets, AT_RK_CREATE, NULL},
    {"GET", COLL, dummy, 0, "list", &widgets, AT_RK_LIST, lists},
    {"GET", ITEM, dummy, 0, "read", &widgets, AT_RK_GET, NULL},
    {"PATCH", ITEM, dummy, AT_R_BODY, "change", &widgets, AT_RK_PATCH, NULL},
    {"DELETE", ITEM, dummy, 0, "delete", &widgets, AT_RK_DELETE, NULL},
    {"POST", ITEM "/restore", dummy, 0, "restore", &widgets, AT_RK_RESTORE, NULL},
    {"GET", "/stats", dummy, AT_R_ADMIN, "stats", NULL, AT_RK_OTHER, NULL, &stats_doc},
    {"GET", "/ping", dummy, AT_R_PUBLIC, "ping", NULL, AT_RK_OTHER, NULL, &at_api_health_doc},
    {NULL, NULL, NULL, 0, NULL, NULL, AT_RK_OTHER, NULL},
};

/* Returns doc at the JSON pointer-like path "a/b/c" (keys split at "|"). */
static json_t *at(json_t *doc, const char *path)
{
    char buf[512], *save = NULL, *tok;
    json_t *v = doc;
    snprintf(buf, sizeof buf, "%s", path);
    for (tok = strtok_r(buf, "|", &save); tok && v; tok = strtok_r(NULL, "|", &save))
        v = json_is_array(v) ? json_array_get(v, (size_t)atoi(tok)) : json_object_get(v, tok);
    if (!v) fail_msg("the document has no %s", path);
    return v;
}

static const char *text(json_t *doc, const char *path)
{
    const char *s = json_string_value(at(doc, path));
    if (!s) fail_msg("%s is not a string", path);
    return s;
}

/* The statuses of an operation's responses, "201 200 400 ..." in document order. */
static void statuses(json_t *op, char *out, size_t n)
{
    const char *k;
    json_t *v;
    size_t used = 0;
    out[0] = '\0';
    json_object_foreach(json_object_get(op, "responses"), k, v) used +=
        (size_t)snprintf(out + used, n - used, "%s%s", used ? " " : "", k);
}

static json_t *param(json_t *op, const char *name)
{
    size_t i;
    json_t *p;
    json_array_foreach(json_object_get(op, "parameters"), i, p)
    {
        const char *r = json_string_value(json_object_get(p, "$ref"));
        if (r && strcmp(strrchr(r, '/') + 1, name) == 0) return p;
        if (json_string_value(json_object_get(p, "name")) &&
            strcmp(json_string_value(json_object_get(p, "name")), name) == 0)
            return p;
    }
    return NULL;
}

static void test_toy_resource(void **state)
{
    json_t *doc = make(toy_routes, ""), *op, *s, *p;
    char st[256];
    (void)state;

    /* the create body: what a client may send, the required ones, nothing else */
    s = at(doc, "components|schemas|ShinyWidgetCreate");
    assert_true(json_is_false(at(s, "additionalProperties")));
    assert_int_equal(json_array_size(at(s, "required")), 2);
    assert_string_equal(text(s, "required|0"), "data");
    assert_string_equal(text(s, "required|1"), "title");
    assert_null(json_object_get(at(s, "properties"), "target_uuid")); /* service-set */
    assert_string_equal(text(s, "properties|uuid|format"), "uuid");
    assert_true(json_is_false(at(s, "properties|done|default")));
    assert_string_equal(text(s, "properties|done|type"), "boolean");
    assert_int_equal(json_integer_value(at(s, "properties|title|minLength")), 1);
    assert_int_equal(json_integer_value(at(s, "properties|title|maxLength")), 5);
    assert_string_equal(text(s, "properties|colour|enum|1"), "green");
    assert_string_equal(text(s, "properties|colour|default"), "green");
    assert_true(json_is_true(at(s, "properties|colour|nullable")));
    assert_string_equal(text(s, "properties|size|type"), "integer");
    assert_int_equal(json_integer_value(at(s, "properties|size|minimum")), 0);
    assert_null(json_object_get(at(s, "properties|size"), "maximum")); /* INT64_MAX: no bound */
    assert_string_equal(text(s, "properties|parent|format"), "uuid");
    assert_string_equal(text(s, "properties|parent|description"), "a uuid");

    /* the patch body: the patchable fields, at least one, no defaults */
    s = at(doc, "components|schemas|ShinyWidgetPatch");
    assert_int_equal(json_integer_value(at(s, "minProperties")), 1);
    assert_true(json_is_false(at(s, "additionalProperties")));
    assert_int_equal(json_object_size(at(s, "properties")), 3); /* data, done, colour */
    assert_null(json_object_get(at(s, "properties|colour"), "default"));
    assert_null(json_object_get(s, "required"));

    /* the item: its fields and the service's */
    s = at(doc, "components|schemas|ShinyWidget");
    for (const char *const *n =
             (const char *const[]){"uuid", "target_uuid", "instance_id", "owner_uuid", "owner_name",
                                   "version", "created_at", "updated_at", "data", "done", "title",
                                   "colour", "size", "parent", NULL};
         *n; n++)
        if (!json_object_get(at(s, "properties"), *n)) fail_msg("the item schema has no %s", *n);
    assert_true(json_is_true(at(s, "properties|target_uuid|readOnly")));
    assert_string_equal(text(doc, "components|schemas|ShinyWidgetList|properties|items|items|$ref"),
                        "#/components/schemas/ShinyWidget");

    /* create: 201 with Location and ETag, 200 for a retry, the refusals of a create */
    op = at(doc, "paths|" COLL "|post");
    statuses(op, st, sizeof st);
    assert_string_equal(st, "201 200 400 401 404 409 413 415 429 500 503");
    assert_non_null(at(op, "responses|201|headers|Location"));
    assert_non_null(at(op, "responses|201|headers|ETag"));
    assert_string_equal(text(op, "requestBody|content|application/json|schema|$ref"),
                        "#/components/schemas/ShinyWidgetCreate");
    assert_string_equal(text(op, "tags|0"), "widgets");

    /* list: limit, cursor, each plan's parameters */
    op = at(doc, "paths|" COLL "|get");
    statuses(op, st, sizeof st);
    assert_string_equal(st, "200 400 401 404 429 500 503");
    assert_non_null(param(op, "limit"));
    assert_non_null(param(op, "cursor"));
    assert_non_null(p = param(op, "owner"));
    assert_string_equal(text(p, "in"), "query");
    assert_non_null(p = param(op, "since"));
    assert_non_null(strstr(text(p, "description"), "created_at is at least"));
    assert_non_null(p = param(op, "order"));
    assert_string_equal(text(p, "schema|default"), "asc");
    assert_non_null(p = param(op, "done"));
    assert_string_equal(text(p, "schema|type"), "boolean");
    assert_non_null(p = param(op, "colour"));
    assert_non_null(strstr(text(p, "description"), "colour is not"));
    assert_string_equal(text(op, "responses|200|content|application/json|schema|$ref"),
                        "#/components/schemas/ShinyWidgetList");

    /* reads and changes */
    op = at(doc, "paths|" ITEM "|get");
    statuses(op, st, sizeof st);
    assert_string_equal(st, "200 401 404 429 500 503");
    assert_string_equal(text(param(op, "uuid"), "schema|format"), "uuid");
    assert_null(param(op, "If-Match"));
    op = at(doc, "paths|" ITEM "|patch");
    statuses(op, st, sizeof st);
    assert_string_equal(st, "200 400 401 403 404 409 412 413 415 429 500 503");
    assert_non_null(param(op, "If-Match"));
    assert_non_null(strstr(text(op, "description"), "its owner, its assignee or a CRM_ADMIN"));
    op = at(doc, "paths|" ITEM "|delete");
    statuses(op, st, sizeof st);
    assert_string_equal(st, "204 401 403 404 409 412 413 429 500 503");
    assert_non_null(param(op, "If-Match"));
    assert_null(json_object_get(op, "requestBody"));
    op = at(doc, "paths|" ITEM "/restore|post");
    assert_non_null(param(op, "If-Match"));

    /* routes of their own: their doc's answer, query, refusals, media types */
    op = at(doc, "paths|/stats|get");
    statuses(op, st, sizeof st);
    assert_string_equal(st, "200 202 401 403 409 412 429 500 503");
    assert_string_equal(text(op, "tags|0"), "reports");
    assert_string_equal(text(param(op, "from"), "schema|type"), "integer");
    assert_string_equal(text(param(op, "group_by"), "schema|type"), "string");
    /* the schema is the JSON answer's; a CSV answer is text */
    assert_string_equal(text(op, "responses|200|content|application/json|schema|type"), "object");
    assert_string_equal(text(op, "responses|200|content|text/csv|schema|type"), "string");
    assert_string_equal(text(op, "responses|202|description"), "not finished yet");
    assert_string_equal(text(op, "responses|202|content|application/json|schema|properties|status|type"), "string");
    assert_string_equal(text(op, "responses|200|description"), "counts");
    op = at(doc, "paths|/ping|get");
    statuses(op, st, sizeof st);
    assert_string_equal(st, "200 500");
    assert_int_equal(json_array_size(at(op, "security")), 0);
    json_decref(doc);
}

/* ---- rows the document cannot describe ---- */

static void expect_refused(const at_route *routes, const char *needle)
{
    json_t *doc = NULL;
    char err[512] = "", err2[512] = "";
    assert_int_equal(at_api_openapi(routes, "", &doc, err, sizeof err), AT_EINVAL);
    assert_null(doc);
    if (!strstr(err, needle)) fail_msg("\"%s\" does not say \"%s\"", err, needle);
    (void)err2;
}

static void test_undocumented_rows_refused(void **state)
{
    static const at_route_doc bad_schema = {.answer = "x", .schema = "{not json"};
    static const at_route_doc bad_status = {.answer = "x", .errors = "404 418"};
    static const at_route_doc no_answer = {.tag = "x"};
    static const at_field unpatchable[] = {{"data", AT_F_JSON, AT_FF_CREATE, .doc = "x"}, {NULL}};
    at_resource frozen = widgets;
    at_route no_summary[] = {
        {"GET", "/x", dummy, 0, "", NULL, AT_RK_OTHER, NULL, &at_api_health_doc}, {NULL}};
    at_route no_doc[] = {{"GET", "/x", dummy, 0, "x", NULL, AT_RK_OTHER, NULL}, {NULL}};
    at_route no_answer_r[] = {{"GET", "/x", dummy, 0, "x", NULL, AT_RK_OTHER, NULL, &no_answer},
                              {NULL}};
    at_route twice[] = {{"GET", "/x", dummy, 0, "x", NULL, AT_RK_OTHER, NULL, &at_api_health_doc},
                        {"GET", "/x", dummy, 0, "y", NULL, AT_RK_OTHER, NULL, &at_api_health_doc},
                        {NULL}};
    at_route schema[] = {{"GET", "/x", dummy, 0, "x", NULL, AT_RK_OTHER, NULL, &bad_schema},
                         {NULL}};
    at_route status[] = {{"GET", "/x", dummy, 0, "x", NULL, AT_RK_OTHER, NULL, &bad_status},
                         {NULL}};
    at_route param[] = {
        {"GET", "/x/{nobody}", dummy, 0, "x", NULL, AT_RK_OTHER, NULL, &at_api_health_doc}, {NULL}};
    at_route patch[] = {{"PATCH", ITEM, dummy, AT_R_BODY, "x", &frozen, AT_RK_PATCH, NULL}, {NULL}};
    char err[512];
    (void)state;
    frozen.fields = unpatchable;
    frozen.view.flags = NULL;
    expect_refused(no_summary, "has no summary");
    expect_refused(no_doc, "needs an at_route_doc");
    expect_refused(no_answer_r, "needs an at_route_doc");
    expect_refused(twice, "in the table twice");
    expect_refused(schema, "not a JSON object");
    expect_refused(status, "404 418");
    expect_refused(param, "{nobody}");
    expect_refused(patch, "no field a client may send on PATCH");
    /* and the start-up check stops the service on the first four */
    assert_int_equal(at_api_check_routes(no_summary, err, sizeof err), AT_EINVAL);
    assert_non_null(strstr(err, "no summary"));
    assert_int_equal(at_api_check_routes(no_doc, err, sizeof err), AT_EINVAL);
    assert_non_null(strstr(err, "at_route_doc"));
    assert_int_equal(at_api_check_routes(no_answer_r, err, sizeof err), AT_EINVAL);
    assert_int_equal(at_api_check_routes(twice, err, sizeof err), AT_EINVAL);
    assert_non_null(strstr(err, "twice"));
}

/* ---- the documentation routes ---- */

static char tmp[64];

typedef struct got {
    int status;
    char type[128], cache[128];
    char *body;
    size_t len;
} got;

/* Calls handler with the docs d and path parameter asset (or none). */
static got serve(void (*handler)(at_ctx *), const at_api_docs *d, const char *asset)
{
    at_api_settings settings = {"", 0, d};
    at_arena arena;
    at_request req;
    at_response resp;
    at_ctx c;
    got g;
    memset(&g, 0, sizeof g);
    memset(&req, 0, sizeof req);
    memset(&resp, 0, sizeof resp);
    memset(&c, 0, sizeof c);
    at_arena_init(&arena);
    req.arena = &arena;
    req.method = "GET";
    req.path = "/docs";
    c.settings = &settings;
    c.req = &req;
    c.resp = &resp;
    c.arena = &arena;
    if (asset) {
        c.param_names[0] = "asset";
        c.params[0] = asset;
        c.nparams = 1;
    }
    handler(&c);
    g.status = resp.status;
    for (size_t h = 0; h < resp.nheaders; h++) {
        if (strcmp(resp.headers[h].name, "Content-Type") == 0)
            snprintf(g.type, sizeof g.type, "%s", resp.headers[h].value);
        if (strcmp(resp.headers[h].name, "Cache-Control") == 0)
            snprintf(g.cache, sizeof g.cache, "%s", resp.headers[h].value);
    }
    g.body = resp.body;
    g.len = resp.body_len;
    resp.body = NULL;
    at_response_release(&resp);
    at_arena_release(&arena);
    return g;
}

/* Returns 1 when the answer's body holds s. */
static int has(const got *g, const char *s)
{
    return memmem(g->body, g->len, s, strlen(s)) != NULL;
}

static void write_file(const char *dir, const char *name, const char *content)
{
    char path[256];
    FILE *f;
    snprintf(path, sizeof path, "%s/%s", dir, name);
    f = fopen(path, "w");
    assert_non_null(f);
    fputs(content, f);
    fclose(f);
}

static int docs_setup(void **state)
{
    char ui[128];
    (void)state;
    snprintf(tmp, sizeof tmp, "/tmp/at-openapi-XXXXXX");
    if (!mkdtemp(tmp)) return -1;
    snprintf(ui, sizeof ui, "%s/ui", tmp);
    if (mkdir(ui, 0755)) return -1;
    write_file(ui, "swagger-ui-bundle.js", "window.SwaggerUIBundle = 1;");
    write_file(ui, "swagger-ui.css", "body {}");
    write_file(ui, "secret.conf", "not served: no known type");
    write_file(tmp, "outside.js", "outside the folder");
    snprintf(ui, sizeof ui, "%s/ui/link.js", tmp);
    if (symlink("/etc/passwd", ui)) return -1;
    snprintf(ui, sizeof ui, "%s/ui/sub.js", tmp);
    if (mkdir(ui, 0755)) return -1;
    return 0;
}

static int docs_teardown(void **state)
{
    char cmd[128];
    (void)state;
    snprintf(cmd, sizeof cmd, "rm -rf %s", tmp);
    return system(cmd) == 0 ? 0 : -1;
}

static void expect_404(const at_api_docs *d, const char *asset)
{
    got g = serve(at_api_docs_asset, d, asset);
    if (g.status != 404) fail_msg("/docs/%s answered %d, not 404", asset, g.status);
    assert_string_equal(g.type, "application/json");
    free(g.body);
}

static void test_docs_routes(void **state)
{
    at_api_docs *d = NULL;
    char ui[128], err[256];
    got g;
    (void)state;
    snprintf(ui, sizeof ui, "%s/ui", tmp);
    assert_int_equal(at_api_docs_new(at_routes, "/pre fix", ui, &d, err, sizeof err), 0);

    g = serve(at_api_openapi_json, d, NULL);
    assert_int_equal(g.status, 200);
    assert_string_equal(g.type, "application/json");
    {
        json_t *doc = json_loadb(g.body, g.len, 0, NULL);
        assert_non_null(doc);
        assert_string_equal(text(doc, "servers|0|url"), "/pre fix");
        json_decref(doc);
    }
    free(g.body);

    /* the page loads the document and the files under the prefix, percent-encoded */
    g = serve(at_api_docs_page, d, NULL);
    assert_int_equal(g.status, 200);
    assert_string_equal(g.type, "text/html; charset=utf-8");
    assert_true(has(&g, "url: \"/pre%20fix/openapi.json\""));
    assert_true(has(&g, "src=\"/pre%20fix/docs/swagger-ui-bundle.js\""));
    free(g.body);

    g = serve(at_api_docs_asset, d, "swagger-ui.css");
    assert_int_equal(g.status, 200);
    assert_string_equal(g.type, "text/css; charset=utf-8");
    assert_non_null(strstr(g.cache, "max-age="));
    assert_int_equal(g.len, 7);
    assert_memory_equal(g.body, "body {}", 7);
    free(g.body);
    g = serve(at_api_docs_asset, d, "swagger-ui-bundle.js");
    assert_int_equal(g.status, 200);
    assert_string_equal(g.type, "text/javascript; charset=utf-8");
    free(g.body);

    /* nothing outside the folder, nothing but plain files of known types */
    expect_404(d, "../outside.js");
    expect_404(d, "..");
    expect_404(d, ".");
    expect_404(d, ".hidden.js");
    expect_404(d, "a/b.js");
    expect_404(d, "%2e%2e");
    expect_404(d, "secret.conf");
    expect_404(d, "link.js"); /* a symbolic link is not followed */
    expect_404(d, "sub.js");  /* a folder */
    expect_404(d, "missing.js");
    expect_404(d, "");
    at_api_docs_free(d);

    /* without the files: /docs says so and links the document, never a 500 */
    snprintf(ui, sizeof ui, "%s/nothing-here", tmp);
    assert_int_equal(at_api_docs_new(at_routes, "", ui, &d, err, sizeof err), 0);
    g = serve(at_api_docs_page, d, NULL);
    assert_int_equal(g.status, 200);
    assert_true(has(&g, "<a href=\"/openapi.json\">"));
    assert_false(has(&g, "SwaggerUIBundle"));
    free(g.body);
    expect_404(d, "swagger-ui.css");
    at_api_docs_free(d);

    /* a process without docs answers 503, not a crash */
    g = serve(at_api_openapi_json, NULL, NULL);
    assert_int_equal(g.status, 503);
    free(g.body);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_real_table_is_the_document),
        cmocka_unit_test(test_toy_resource),
        cmocka_unit_test(test_undocumented_rows_refused),
        cmocka_unit_test_setup_teardown(test_docs_routes, docs_setup, docs_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
