/* The API document (SPEC §5, GET /openapi.json): OpenAPI 3.0 made from the route table
 * and the resources' descriptors, so that it cannot drift from what the service does.
 * Each row of the route table is one operation. An engine route's parameters, body
 * and answers follow from its kind, its resource's fields and its list plans; a route
 * of its own says what it answers in its at_route_doc. Nothing here names a resource:
 * adding one needs no change in this file (docs/api-document.md). */
#include <ctype.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api.h"
#include "actionstools/err.h"
#include "actionstools/banned.h"

#define OPENAPI_VERSION "3.0.3"
#define MAX_RESOURCES 64

/* The refusals the document names, each a shared answer in components/responses. */
static const struct {
    int status;
    const char *name;
    const char *doc;
} refusals[] = {
    {400, "BadRequest",
     "Refused: malformed JSON, a field that is wrong (errors says which and "
     "why: \"Input payload validation failed\"), or a bad query parameter or cursor."},
    {401, "Unauthorized",
     "No bearer token, or the token was refused (expired, bad signature, another "
     "algorithm); the message says why."},
    {403, "Forbidden", "A permission rule refused; the message names it."},
    {404, "NotFound",
     "No such item (an item of another tenant answers the same), or a path "
     "parameter that names none."},
    {409, "Conflict", "The change conflicts with the item's state; the message says how."},
    {412, "PreconditionFailed",
     "If-Match does not name the item's current version: read it "
     "again and retry."},
    {413, "PayloadTooLarge",
     "The body is over 409,600 bytes, or the item would be over "
     "DynamoDB's 400 KB limit."},
    {415, "UnsupportedMediaType", "The body is not sent as application/json."},
    {429, "TooManyRequests", "The store is throttling; retry after Retry-After seconds."},
    {500, "InternalError", "An internal error; the message gives the request id to report."},
    {503, "ServiceUnavailable",
     "The store is unreachable or a table is missing; the message "
     "says what to do."},
};
#define NREFUSALS (sizeof refusals / sizeof refusals[0])

typedef struct gen {
    json_t *paths, *tags, *schemas, *op_ids;
    const at_resource *res[MAX_RESOURCES]; /* resources whose schemas are made */
    size_t nres;
    int rc;
    char *err;
    size_t errlen;
} gen;

static void fail(gen *g, int rc, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

static void fail(gen *g, int rc, const char *fmt, ...)
{
    va_list ap;
    if (g->rc) return; /* the first problem is the one reported */
    g->rc = rc;
    va_start(ap, fmt);
    vsnprintf(g->err, g->errlen, fmt, ap);
    va_end(ap);
}

static void oom(gen *g)
{
    fail(g, AT_ENOMEM, "out of memory while making the API document");
}

/* Sets obj[key] = v (stolen, also on failure); a NULL v or obj is out of memory. */
static void put(gen *g, json_t *obj, const char *key, json_t *v)
{
    if (json_object_set_new(obj, key, v)) oom(g);
}

static void put_s(gen *g, json_t *obj, const char *key, const char *s)
{
    put(g, obj, key, json_string(s));
}

static void push(gen *g, json_t *arr, json_t *v)
{
    if (json_array_append_new(arr, v)) oom(g);
}

static json_t *ref(const char *kind, const char *name)
{
    char buf[160];
    snprintf(buf, sizeof buf, "#/components/%s/%s", kind, name);
    return json_pack("{s:s}", "$ref", buf);
}

/* Writes name as CamelCase ("task_counter" -> "TaskCounter") followed by suffix. */
static void camel(const char *name, const char *suffix, char *out, size_t n)
{
    size_t i = 0;
    int up = 1;
    for (const char *p = name; *p && i + 1 < n; p++) {
        if (!isalnum((unsigned char)*p)) {
            up = 1;
            continue;
        }
        out[i++] = up ? (char)toupper((unsigned char)*p) : *p;
        up = 0;
    }
    out[i] = '\0';
    snprintf(out + i, n - i, "%s", suffix);
}

/* Parses the JSON text of a schema in a route's doc. Returns a new object, or NULL
 * after failing g. */
static json_t *schema_text(gen *g, const at_route *rt, const char *what, const char *text)
{
    json_t *v = json_loads(text, 0, NULL);
    if (!json_is_object(v)) {
        json_decref(v);
        fail(g, AT_EINVAL, "route %s %s: the %s in its at_route_doc is not a JSON object",
             rt->method, rt->pattern, what);
    }
    return v;
}

/* ---- schemas of fields and items ---- */

enum { USE_CREATE, USE_PATCH, USE_ITEM, USE_QUERY };

/* Returns the schema of field f as a body (create or patch), an answer or a query
 * parameter shows it. */
static json_t *field_schema(gen *g, const at_field *f, int use)
{
    json_t *s = json_object(), *choices;
    int input = use != USE_ITEM, bounded = f->min != 0 || f->max != 0;
    switch (f->type) {
    case AT_F_STRING:
        put_s(g, s, "type", "string");
        if (input && bounded) {
            put(g, s, "minLength", json_integer(f->min));
            put(g, s, "maxLength", json_integer(f->max));
        }
        break;
    case AT_F_UUID:
        put_s(g, s, "type", "string");
        put_s(g, s, "format", "uuid");
        break;
    case AT_F_INT:
        put_s(g, s, "type", "integer");
        put_s(g, s, "format", "int64");
        if (input && bounded && f->min != INT64_MIN) put(g, s, "minimum", json_integer(f->min));
        if (input && bounded && f->max != INT64_MAX) put(g, s, "maximum", json_integer(f->max));
        break;
    case AT_F_FLAG:
        put_s(g, s, "type", "boolean");
        break;
    case AT_F_JSON:
        put(g, s, "nullable", json_true());
        break; /* any JSON value, null too */
    }
    if (f->choices) {
        choices = json_array();
        for (const char *const *c = f->choices; *c; c++)
            push(g, choices, json_string(*c));
        put(g, s, "enum", choices);
    }
    if ((use == USE_CREATE || use == USE_PATCH) && (f->flags & AT_FF_NULLABLE))
        put(g, s, "nullable", json_true());
    if (use == USE_CREATE && f->def)
        put(g, s, "default", json_loads(f->def, JSON_DECODE_ANY, NULL));
    if (use == USE_ITEM && (f->flags & AT_FF_SERVICE)) put(g, s, "readOnly", json_true());
    if (f->doc) {
        const char *extra = (use == USE_CREATE || use == USE_PATCH) &&
                                    (f->flags & AT_FF_NULLABLE) && f->type != AT_F_JSON
                                ? " (null removes it)"
                                : "";
        char d[512];
        snprintf(d, sizeof d, "%s%s", f->doc, extra);
        put_s(g, s, "description", d);
    }
    return s;
}

/* The schema of attribute attr of r as a query parameter: its field's, else by its key
 * type. */
static json_t *attr_schema(gen *g, const at_resource *r, const char *attr, at_key_type type)
{
    const at_field *f = attr ? at_model_field(r, attr) : NULL;
    if (f) return field_schema(g, f, USE_QUERY);
    return json_pack("{s:s}", "type", type == AT_KEY_N ? "integer" : "string");
}

static json_t *timestamp_schema(const at_resource *r, const char *doc)
{
    if (r->epoch_timestamps)
        return json_pack("{s:s, s:s, s:s}", "type", "integer", "format", "int64", "description",
                         doc);
    return json_pack("{s:s, s:s, s:s}", "type", "string", "description", doc, "example",
                     "2026-12-01 09:30:00.000000");
}

/* Adds the property name to props unless there; required: it is always in answers. */
static void service_prop(gen *g, json_t *props, json_t *required, const char *name, json_t *schema,
                         int req)
{
    if (json_object_get(props, name)) {
        json_decref(schema);
        return;
    }
    put(g, props, name, schema);
    if (req) push(g, required, json_string(name));
}

/* The schema of an item of r as answers show it: the service's attributes, its key
 * attributes and its fields. */
static json_t *item_schema(gen *g, const at_resource *r)
{
    const at_table_def *t = at_schema_table(r->table);
    json_t *props = json_object(), *required = json_array(), *s;
    const char *keys[2] = {t->pk.name, t->sk.name};
    at_key_type types[2] = {t->pk.type, t->sk.type};

    if (r->sk.src == AT_SRC_NEW_UUID || r->uuid_index)
        service_prop(g, props, required, "uuid",
                     json_pack("{s:s, s:s, s:s}", "type", "string", "format", "uuid", "description",
                               "the item's uuid"),
                     1);
    for (const at_field *f = r->fields; f && f->name; f++) {
        int req = 0;
        for (const char *const *fl = r->view.flags; fl && *fl; fl++)
            req |= strcmp(*fl, f->name) == 0;
        for (int i = 0; i < 2; i++)
            req |= keys[i] && strcmp(keys[i], f->name) == 0;
        service_prop(g, props, required, f->name, field_schema(g, f, USE_ITEM), req);
    }
    for (int i = 0; i < 2; i++)
        if (keys[i])
            service_prop(g, props, required, keys[i],
                         json_pack("{s:s, s:s}", "type",
                                   types[i] == AT_KEY_N ? "integer" : "string", "description",
                                   "part of the item's key"),
                         1);
    service_prop(
        g, props, required, "instance_id",
        json_pack("{s:s, s:s}", "type", "string", "description", "the tenant (from the token)"), 1);
    service_prop(g, props, required, "owner_uuid",
                 json_pack("{s:s, s:s}", "type", "string", "description",
                           "who created it (the token's sub)"),
                 0);
    service_prop(
        g, props, required, "owner_name",
        json_pack("{s:s, s:s}", "type", "string", "description", "their name (the token's name)"),
        0);
    service_prop(g, props, required, "version",
                 json_pack("{s:s, s:s, s:i, s:s}", "type", "integer", "format", "int64", "minimum",
                           0, "description", "1 on create, +1 on each change; sent as ETag"),
                 r->view.version_default);
    service_prop(g, props, required, "created_at",
                 timestamp_schema(r, r->epoch_timestamps
                                         ? "when it was created, epoch seconds (UTC)"
                                         : "when it was created (UTC)"),
                 0);
    service_prop(g, props, required, "updated_at",
                 timestamp_schema(r, r->epoch_timestamps
                                         ? "when it last changed, epoch seconds (UTC)"
                                         : "when it last changed (UTC)"),
                 0);
    s = json_pack("{s:s, s:s*}", "type", "object", "description", r->doc);
    if (json_array_size(required)) put(g, s, "required", json_incref(required));
    put(g, s, "properties", props);
    json_decref(required);
    return s;
}

/* The schema of a body a client sends: the fields mode (AT_FF_CREATE or AT_FF_PATCH)
 * allows; a create may send its own uuid and must send the required fields, a PATCH
 * at least one field. NULL after failing g when no field is allowed. */
static json_t *body_schema(gen *g, const at_resource *r, unsigned mode)
{
    json_t *props = json_object(), *required = json_array(), *s;
    char d[256];
    if (mode == AT_FF_CREATE) {
        snprintf(d, sizeof d,
                 "your own uuid for the new %s, to make retries safe: a retried create "
                 "with it answers 200 with the same %s; omitted, the service makes one",
                 r->name, r->name);
        put(g, props, "uuid",
            json_pack("{s:s, s:s, s:s}", "type", "string", "format", "uuid", "description", d));
    }
    for (const at_field *f = r->fields; f && f->name; f++) {
        if (!(f->flags & mode)) continue;
        put(g, props, f->name, field_schema(g, f, mode == AT_FF_CREATE ? USE_CREATE : USE_PATCH));
        if (mode == AT_FF_CREATE && (f->flags & AT_FF_REQUIRED))
            push(g, required, json_string(f->name));
    }
    if (json_object_size(props) == 0) {
        fail(g, AT_EINVAL, "resource %s: no field a client may send on %s", r->name,
             mode == AT_FF_CREATE ? "create" : "PATCH");
        json_decref(props);
        json_decref(required);
        return NULL;
    }
    s = json_pack("{s:s}", "type", "object");
    if (json_array_size(required)) put(g, s, "required", json_incref(required));
    if (mode == AT_FF_PATCH) put(g, s, "minProperties", json_integer(1));
    put(g, s, "additionalProperties", json_false());
    put(g, s, "properties", props);
    json_decref(required);
    return s;
}

/* Makes the schemas of r once (Note, NoteCreate, NotePatch, NoteList); the create and
 * patch ones only when a route needs them. */
static void resource_schemas(gen *g, const at_resource *r, at_route_kind kind)
{
    char name[96], item[96];
    size_t i;
    for (i = 0; i < g->nres && g->res[i] != r; i++) {
    }
    camel(r->name, "", item, sizeof item);
    if (i == g->nres) {
        if (g->nres == MAX_RESOURCES || json_object_get(g->schemas, item)) {
            fail(g, AT_EINVAL,
                 "resource %s: another resource has the name %s, or there are over %d", r->name,
                 item, MAX_RESOURCES);
            return;
        }
        g->res[g->nres++] = r;
        put(g, g->schemas, item, item_schema(g, r));
        camel(r->name, "List", name, sizeof name);
        put(g, g->schemas, name,
            json_pack("{s:s, s:[s,s], s:{s:{s:s, s:o}, s:{s:s, s:b, s:s}}}", "type", "object",
                      "required", "items", "next_cursor", "properties", "items", "type", "array",
                      "items", ref("schemas", item), "next_cursor", "type", "string", "nullable", 1,
                      "description",
                      "the cursor of the next page, or null when this page is the last"));
    }
    if (kind == AT_RK_CREATE || kind == AT_RK_PATCH) {
        camel(r->name, kind == AT_RK_CREATE ? "Create" : "Patch", name, sizeof name);
        if (!json_object_get(g->schemas, name))
            put(g, g->schemas, name,
                body_schema(g, r, kind == AT_RK_CREATE ? AT_FF_CREATE : AT_FF_PATCH));
    }
}

/* ---- parameters ---- */

static const at_route_param *path_param_doc(const char *name)
{
    for (const at_route_param *p = at_route_params; p->name; p++)
        if (strcmp(p->name, name) == 0) return p;
    return NULL;
}

/* Adds a parameter of the route's path for each {name} of its pattern. */
static void path_params(gen *g, const at_route *rt, json_t *params)
{
    const at_resource *r = rt->resource;
    for (const char *p = strchr(rt->pattern, '{'); p; p = strchr(p + 1, '{')) {
        const char *close = strchr(p, '}');
        const at_route_param *d;
        char name[64];
        json_t *schema;
        if (!close) break;
        snprintf(name, sizeof name, "%.*s", (int)(close - p - 1), p + 1);
        if (!(d = path_param_doc(name))) {
            fail(g, AT_EINVAL, "route %s %s: path parameter {%s} is not in at_route_params",
                 rt->method, rt->pattern, name);
            return;
        }
        schema = json_pack("{s:s}", "type", "string");
        /* An item's own uuid: anything else names no item (404). */
        if (r && r->sk.src == AT_SRC_NEW_UUID && strcmp(name, r->sk.name) == 0 &&
            rt->kind != AT_RK_CREATE && rt->kind != AT_RK_LIST)
            put_s(g, schema, "format", "uuid");
        push(g, params,
             json_pack("{s:s, s:s, s:b, s:s, s:o}", "name", name, "in", "path", "required", 1,
                       "description", d->doc ? d->doc : name, "schema", schema));
    }
}

/* Adds query parameter name (schema stolen) unless the operation has it already. */
static void query_param(gen *g, json_t *params, const char *name, json_t *schema, const char *doc)
{
    size_t i;
    json_t *p;
    json_array_foreach(params, i, p)
    {
        const char *have = json_string_value(json_object_get(p, "name"));
        if (have && strcmp(have, name) == 0) {
            json_decref(schema);
            return;
        }
    }
    push(g, params,
         json_pack("{s:s, s:s, s:s, s:o}", "name", name, "in", "query", "description", doc,
                   "schema", schema));
}

static const char *op_words(at_op op)
{
    switch (op) {
    case AT_OP_EQ:
        return "is";
    case AT_OP_NE:
        return "is not";
    case AT_OP_LT:
        return "is below";
    case AT_OP_LE:
        return "is at most";
    case AT_OP_GT:
        return "is above";
    case AT_OP_GE:
        return "is at least";
    case AT_OP_BEGINS_WITH:
        return "starts with";
    default:
        return "matches";
    }
}

/* Adds the query parameters of a list: limit, cursor, and each plan's. */
static void list_params(gen *g, const at_route *rt, json_t *params)
{
    const at_resource *r = rt->resource;
    const at_table_def *t = at_schema_table(r->table);
    push(g, params, ref("parameters", "limit"));
    push(g, params, ref("parameters", "cursor"));
    for (const at_list_def *l = rt->list; l && l->doc; l++) {
        const at_index_def *ix = l->index ? at_schema_index(t, l->index) : NULL;
        const at_attr_def *pk = ix ? &ix->pk : &t->pk, *sk = ix ? &ix->sk : &t->sk;
        char d[512], with[96] = "";
        if (l->when) {
            json_t *schema;
            if (l->pk.src == AT_SRC_QUERY && strcmp(l->pk.name, l->when) == 0)
                schema = attr_schema(g, r, pk->name, pk->type);
            else if (l->sk_param && strcmp(l->sk_param, l->when) == 0)
                schema = attr_schema(g, r, sk->name, sk->type);
            else
                schema = json_pack("{s:s}", "type", "string");
            snprintf(d, sizeof d, "given, the list is %s", l->doc);
            query_param(g, params, l->when, schema, d);
            snprintf(with, sizeof with, " (with ?%s)", l->when);
        }
        if (l->pk.src == AT_SRC_QUERY) {
            snprintf(d, sizeof d, "the items whose %s is this%s", pk->name, with);
            query_param(g, params, l->pk.name, attr_schema(g, r, pk->name, pk->type), d);
        }
        if (l->sk_param && sk->name) {
            snprintf(d, sizeof d, "only the items whose %s %s this%s", sk->name, op_words(l->sk_op),
                     with);
            query_param(g, params, l->sk_param, attr_schema(g, r, sk->name, sk->type), d);
        }
        if (l->order_param) {
            snprintf(d, sizeof d, "asc: by %s, oldest first; desc: newest first%s",
                     sk->name ? sk->name : "key", with);
            query_param(g, params, l->order_param,
                        json_pack("{s:s, s:[s,s], s:s}", "type", "string", "enum", "asc", "desc",
                                  "default", l->forward ? "asc" : "desc"),
                        d);
        }
        for (const at_list_filter *f = l->filters; f && f->param; f++) {
            snprintf(d, sizeof d, "only the items whose %s %s this%s", f->field, op_words(f->op),
                     with);
            query_param(g, params, f->param, attr_schema(g, r, f->field, AT_KEY_S), d);
        }
    }
}

/* ---- answers ---- */

static int refusal_index(int status)
{
    for (size_t i = 0; i < NREFUSALS; i++)
        if (refusals[i].status == status) return (int)i;
    return -1;
}

static void refuse(unsigned *set, int status)
{
    int i = refusal_index(status);
    if (i >= 0) *set |= 1u << i;
}

/* The refusals a route can answer: from its flags, its kind and its doc. */
static unsigned route_refusals(gen *g, const at_route *rt)
{
    unsigned set = 0;
    refuse(&set, 500);
    if (!(rt->flags & AT_R_PUBLIC)) refuse(&set, 401);
    if (rt->flags & AT_R_ADMIN) refuse(&set, 403);
    if (rt->flags & AT_R_BODY) {
        refuse(&set, 400);
        refuse(&set, 413);
        refuse(&set, 415);
    }
    if (strchr(rt->pattern, '{') && rt->resource) refuse(&set, 404);
    if (rt->resource || (rt->doc && rt->doc->store)) {
        refuse(&set, 429);
        refuse(&set, 503);
    }
    switch (rt->kind) {
    case AT_RK_CREATE:
        refuse(&set, 400);
        refuse(&set, 409);
        refuse(&set, 413);
        break;
    case AT_RK_GET:
    case AT_RK_GET_BY_UUID:
        refuse(&set, 404);
        break;
    case AT_RK_PATCH:
        refuse(&set, 400); /* fall through */
    case AT_RK_DELETE:
    case AT_RK_RESTORE:
        refuse(&set, 403);
        refuse(&set, 404);
        refuse(&set, 409);
        refuse(&set, 412);
        refuse(&set, 413);
        break;
    case AT_RK_LIST:
        refuse(&set, 400);
        break;
    case AT_RK_PUT:
        refuse(&set, 400);
        refuse(&set, 403);
        refuse(&set, 409);
        refuse(&set, 412);
        refuse(&set, 413);
        break;
    case AT_RK_OTHER:
        break;
    }
    for (const char *p = rt->doc ? rt->doc->errors : NULL; p && *p;) {
        char *end;
        long s = strtol(p, &end, 10);
        if (end == p || refusal_index((int)s) < 0) {
            fail(g, AT_EINVAL,
                 "route %s %s: its doc's errors \"%s\" name a status the document does not know",
                 rt->method, rt->pattern, rt->doc->errors);
            break;
        }
        refuse(&set, (int)s);
        p = end + strspn(end, " ");
    }
    return set;
}

static json_t *headers(json_t *extra_a, json_t *extra_b)
{
    json_t *h = json_pack("{s:o}", "X-Request-Id", ref("headers", "X-Request-Id"));
    if (h && extra_a) json_object_update(h, extra_a);
    if (h && extra_b) json_object_update(h, extra_b);
    json_decref(extra_a);
    json_decref(extra_b);
    return h;
}

/* A success answer with r's item, or its list. */
static json_t *item_answer(const at_resource *r, const char *doc, const char *suffix, int etag,
                           int location)
{
    char name[96];
    camel(r->name, suffix, name, sizeof name);
    return json_pack(
        "{s:s, s:o, s:{s:{s:o}}}", "description", doc, "headers",
        headers(etag ? json_pack("{s:o}", "ETag", ref("headers", "ETag")) : NULL,
                location ? json_pack("{s:o}", "Location", ref("headers", "Location")) : NULL),
        "content", "application/json", "schema", ref("schemas", name));
}

/* The success answer of a route of its own, from its doc. */
static json_t *other_answer(gen *g, const at_route *rt)
{
    const at_route_doc *d = rt->doc;
    const char *types = d->media_types ? d->media_types : "application/json";
    json_t *a = json_pack("{s:s, s:o}", "description", d->answer, "headers", headers(NULL, NULL));
    json_t *content = json_object();
    while (*types) {
        char type[96];
        size_t n = strcspn(types, ",");
        json_t *schema;
        snprintf(type, sizeof type, "%.*s", (int)n, types);
        if (d->schema && strstr(type, "json"))
            schema = schema_text(g, rt, "schema", d->schema);
        else if (strstr(type, "json"))
            schema = json_pack("{s:s}", "type", "object");
        else
            schema = json_pack("{s:s}", "type", "string");
        put(g, content, type, json_pack("{s:o}", "schema", schema));
        types += n;
        types += strspn(types, ", ");
    }
    if (json_object_size(content))
        put(g, a, "content", content);
    else
        json_decref(content);
    return a;
}

static void answers(gen *g, const at_route *rt, json_t *op)
{
    const at_resource *r = rt->resource;
    json_t *res = json_object();
    unsigned set = route_refusals(g, rt);
    char d[256];
    switch (rt->kind) {
    case AT_RK_CREATE:
        snprintf(d, sizeof d, "the new %s; Location is its URL, ETag its version", r->name);
        put(g, res, "201", item_answer(r, d, "", 1, 1));
        snprintf(d, sizeof d,
                 "a retried create (the same uuid, record and owner): the %s as stored", r->name);
        put(g, res, "200", item_answer(r, d, "", 1, 0));
        break;
    case AT_RK_GET:
    case AT_RK_GET_BY_UUID:
    case AT_RK_PATCH:
    case AT_RK_RESTORE:
        snprintf(d, sizeof d, "the %s%s; ETag is its version", r->name,
                 rt->kind == AT_RK_PATCH     ? " as changed"
                 : rt->kind == AT_RK_RESTORE ? " restored"
                                             : "");
        put(g, res, "200", item_answer(r, d, "", 1, 0));
        break;
    case AT_RK_DELETE:
        snprintf(d, sizeof d, "the %s is deleted (it can be restored)", r->name);
        put(g, res, "204",
            json_pack("{s:s, s:o}", "description", d, "headers", headers(NULL, NULL)));
        break;
    case AT_RK_LIST:
        snprintf(d, sizeof d, "a page of %s", r->plural);
        put(g, res, "200", item_answer(r, d, "List", 0, 0));
        break;
    case AT_RK_PUT:
        snprintf(d, sizeof d, "the new %s; Location is its URL, ETag its version", r->name);
        put(g, res, "201", item_answer(r, d, "", 1, 1));
        snprintf(d, sizeof d, "the %s as replaced; ETag is its version", r->name);
        put(g, res, "200", item_answer(r, d, "", 1, 0));
        break;
    case AT_RK_OTHER:
        snprintf(d, sizeof d, "%d", rt->doc->status ? rt->doc->status : 200);
        put(g, res, d, other_answer(g, rt));
        if (rt->doc->also_status) {
            snprintf(d, sizeof d, "%d", rt->doc->also_status);
            put(g, res, d,
                json_pack("{s:s, s:o, s:{s:{s:o}}}", "description",
                          rt->doc->also_answer ? rt->doc->also_answer : "", "headers",
                          headers(NULL, NULL), "content", "application/json", "schema",
                          rt->doc->also_schema
                              ? schema_text(g, rt, "schema", rt->doc->also_schema)
                              : json_pack("{s:s}", "type", "object")));
        }
        break;
    }
    for (size_t i = 0; i < NREFUSALS; i++) {
        if (!(set & (1u << i))) continue;
        snprintf(d, sizeof d, "%d", refusals[i].status);
        put(g, res, d, ref("responses", refusals[i].name));
    }
    put(g, op, "responses", res);
}

/* ---- operations ---- */

/* The operationId: the method and the path in camel case, parameters as "By<Name>"
 * ("GET /targets/{target_uuid}/notes" -> getTargetsByTargetUuidNotes). */
static void operation_id(const at_route *rt, char *out, size_t n)
{
    size_t i = 0;
    int up = 0;
    for (const char *m = rt->method; *m && i + 1 < n; m++)
        out[i++] = (char)tolower((unsigned char)*m);
    for (const char *p = rt->pattern; *p && i + 3 < n; p++) {
        if (*p == '{') {
            out[i++] = 'B';
            out[i++] = 'y';
            up = 1;
        } else if (!isalnum((unsigned char)*p)) {
            up = 1;
        } else {
            out[i++] = up ? (char)toupper((unsigned char)*p) : *p;
            up = 0;
        }
    }
    out[i] = '\0';
}

static const char *perm_words(at_perm p)
{
    switch (p) {
    case AT_PERM_OWNER:
        return "its owner or a CRM_ADMIN";
    case AT_PERM_OWNER_ASSIGNEE:
        return "its owner, its assignee or a CRM_ADMIN";
    case AT_PERM_ADMIN:
        return "a CRM_ADMIN";
    default:
        return "anyone who can read it";
    }
}

/* A paragraph saying what the operation does, beyond its summary. */
static char *describe(const at_route *rt, char *d, size_t n)
{
    const at_resource *r = rt->resource;
    size_t used = 0;
    d[0] = '\0';
#define ADD(...) (void)(used < n && (used += (size_t)snprintf(d + used, n - used, __VA_ARGS__)))
    switch (rt->kind) {
    case AT_RK_CREATE:
        ADD("Creates a %s: 201 with the %s, its URL in Location and its version in ETag. Send your "
            "own uuid to make retries safe: a retry answers 200 with the same %s; any other use of "
            "that uuid is 409.",
            r->name, r->name, r->name);
        break;
    case AT_RK_GET:
        ADD("Reads one %s; ETag is its version.", r->name);
        break;
    case AT_RK_GET_BY_UUID:
        ADD("Finds a %s by its uuid among your tenant's.", r->name);
        break;
    case AT_RK_PATCH:
        ADD("Changes the fields sent (at least one); version moves by one. Send If-Match with the "
            "ETag you read to be refused (412) when someone changed it since. Only %s may change "
            "it.",
            perm_words(r->change));
        break;
    case AT_RK_DELETE:
        ADD("Deletes softly: the %s leaves every read and list and can be restored. Only %s may "
            "delete it.",
            r->name, perm_words(r->remove));
        break;
    case AT_RK_RESTORE:
        ADD("Brings a deleted %s back (version +1); restoring one that is not deleted is 409. Only "
            "%s "
            "may restore it.",
            r->name, perm_words(r->remove));
        break;
    case AT_RK_LIST: {
        int selecting = 0;
        ADD("A page of %s: {items, next_cursor}. Pass next_cursor as ?cursor= until it is null to "
            "read every item once; a short page with a cursor is normal (a page reads and answers "
            "at "
            "most about 1 MB).",
            r->plural);
        for (const at_list_def *l = rt->list; l && l->doc; l++) {
            if (l->when) {
                ADD(" With ?%s: %s.", l->when, l->doc);
                selecting = 1;
            } else {
                ADD(" %s%s.", selecting ? "Otherwise: " : "Order: ", l->doc);
            }
        }
        break;
    }
    case AT_RK_PUT:
        ADD("Creates the %s the path names (201) or replaces it whole (200): fields not sent are "
            "removed or take their default, and version moves by one. Send If-Match with the ETag "
            "you read to be refused (412) when someone changed it since (or, with no %s there, "
            "always). Replacing one needs %s.",
            r->name, r->name, perm_words(r->change));
        break;
    case AT_RK_OTHER:
        ADD("%s.", rt->doc->answer);
        break;
    }
    if (rt->flags & AT_R_ADMIN) ADD(" Only a CRM_ADMIN may do this.");
    if (rt->flags & AT_R_PUBLIC) ADD(" No token needed.");
#undef ADD
    return d;
}

static json_t *tag_of(gen *g, const at_route *rt)
{
    const char *name = rt->resource              ? rt->resource->plural
                       : rt->doc && rt->doc->tag ? rt->doc->tag
                                                 : "service";
    const char *doc = rt->resource ? rt->resource->doc : NULL;
    size_t i;
    json_t *t;
    json_array_foreach(g->tags, i, t)
    {
        if (strcmp(json_string_value(json_object_get(t, "name")), name) == 0)
            return json_string(name);
    }
    push(g, g->tags, json_pack("{s:s, s:s*}", "name", name, "description", doc));
    return json_string(name);
}

static void add_operation(gen *g, const at_route *rt)
{
    const at_resource *r = rt->resource;
    json_t *op, *params = json_array(), *path = json_object_get(g->paths, rt->pattern);
    char id[160], method[16], d[2048], name[96];
    size_t i;

    if (!rt->summary || !*rt->summary) {
        fail(g, AT_EINVAL, "route %s %s has no summary", rt->method, rt->pattern);
        json_decref(params);
        return;
    }
    if (rt->kind == AT_RK_OTHER ? !rt->doc || !rt->doc->answer : !r) {
        fail(g, AT_EINVAL, "route %s %s: %s", rt->method, rt->pattern,
             rt->kind == AT_RK_OTHER ? "a route of its own needs an at_route_doc with its answer"
                                     : "an engine route needs its resource");
        json_decref(params);
        return;
    }
    for (i = 0; rt->method[i] && i + 1 < sizeof method; i++)
        method[i] = (char)tolower((unsigned char)rt->method[i]);
    method[i] = '\0';
    if (!path) {
        path = json_object();
        put(g, g->paths, rt->pattern, path);
    }
    if (json_object_get(path, method)) {
        fail(g, AT_EINVAL, "route %s %s is in the table twice", rt->method, rt->pattern);
        json_decref(params);
        return;
    }
    operation_id(rt, id, sizeof id);
    if (json_object_get(g->op_ids, id)) {
        fail(g, AT_EINVAL, "route %s %s: operationId %s is taken", rt->method, rt->pattern, id);
        json_decref(params);
        return;
    }
    put(g, g->op_ids, id, json_true());
    if (r) resource_schemas(g, r, rt->kind);

    op = json_pack("{s:[o], s:s, s:s, s:s}", "tags", tag_of(g, rt), "summary", rt->summary,
                   "description", describe(rt, d, sizeof d), "operationId", id);
    path_params(g, rt, params);
    if (rt->kind == AT_RK_LIST) list_params(g, rt, params);
    for (const at_doc_param *q = rt->doc ? rt->doc->query : NULL; q && q->name; q++)
        query_param(g, params, q->name,
                    q->schema ? schema_text(g, rt, "query schema", q->schema)
                              : json_pack("{s:s}", "type", "string"),
                    q->doc ? q->doc : q->name);
    if (rt->kind == AT_RK_PATCH || rt->kind == AT_RK_DELETE || rt->kind == AT_RK_RESTORE ||
        rt->kind == AT_RK_PUT)
        push(g, params, ref("parameters", "If-Match"));
    if (json_array_size(params))
        put(g, op, "parameters", params);
    else
        json_decref(params);

    if (rt->kind == AT_RK_CREATE || rt->kind == AT_RK_PATCH) {
        camel(r->name, rt->kind == AT_RK_CREATE ? "Create" : "Patch", name, sizeof name);
        put(g, op, "requestBody",
            json_pack("{s:b, s:{s:{s:o}}}", "required", 1, "content", "application/json", "schema",
                      ref("schemas", name)));
    } else if (rt->flags & AT_R_BODY) {
        json_t *schema;
        if (rt->doc && rt->doc->body) {
            schema = schema_text(g, rt, "body", rt->doc->body);
        } else if (r) {
            resource_schemas(g, r, AT_RK_CREATE);
            camel(r->name, "Create", name, sizeof name);
            schema = ref("schemas", name);
        } else {
            schema = json_pack("{s:s}", "type", "object");
        }
        put(g, op, "requestBody",
            json_pack("{s:b, s:{s:{s:o}}}", "required", 1, "content", "application/json", "schema",
                      schema));
    }
    answers(g, rt, op);
    if (rt->flags & AT_R_PUBLIC) put(g, op, "security", json_array());
    put(g, path, method, op);
}

/* ---- the document ---- */

static json_t *header_def(const char *doc, const char *example)
{
    return json_pack("{s:s, s:{s:s, s:s*}}", "description", doc, "schema", "type", "string",
                     "example", example);
}

static json_t *components(gen *g)
{
    json_t *c = json_object(), *h = json_object(), *p = json_object(), *responses = json_object();
    if (json_object_get(g->schemas, "Error"))
        fail(g, AT_EINVAL, "a resource is named error: Error is the error body's schema");
    put(g, c, "securitySchemes",
        json_pack(
            "{s:{s:s, s:s, s:s, s:s}}", "bearerAuth", "type", "http", "scheme", "bearer",
            "bearerFormat", "JWT", "description",
            "A JWT with sub (user uuid), name, instance_id (tenant), roles (CRM_ADMIN is the admin "
            "role) and exp, signed with the service's configured key."));
    put(g, h, "X-Request-Id",
        header_def("the caller's X-Request-Id, or a new one; it is in the log line", NULL));
    put(g, h, "ETag", header_def("the item's version, quoted: send it back in If-Match", "\"1\""));
    put(g, h, "Location", header_def("the new item's URL, percent-encoded", NULL));
    put(g, h, "WWW-Authenticate", header_def("Bearer", NULL));
    put(g, h, "Retry-After", header_def("seconds to wait before retrying", "1"));
    put(g, c, "headers", h);
    put(g, p, "limit",
        json_pack("{s:s, s:s, s:s, s:{s:s, s:i, s:i, s:i}}", "name", "limit", "in", "query",
                  "description", "items per page", "schema", "type", "integer", "minimum", 1,
                  "maximum", 100, "default", 25));
    put(g, p, "cursor",
        json_pack("{s:s, s:s, s:s, s:{s:s}}", "name", "cursor", "in", "query", "description",
                  "the next_cursor of the previous page (opaque; good only for the same list and "
                  "parameters)",
                  "schema", "type", "string"));
    put(g, p, "If-Match",
        json_pack(
            "{s:s, s:s, s:s, s:{s:s, s:s}}", "name", "If-Match", "in", "header", "description",
            "the ETag you read (\"3\"): the change is refused with 412 when the item moved since",
            "schema", "type", "string", "example", "\"1\""));
    put(g, c, "parameters", p);
    put(g, g->schemas, "Error",
        json_pack("{s:s, s:[s], s:{s:{s:s, s:s}, s:{s:s, s:s, s:{s:s}}}}", "type", "object",
                  "required", "message", "properties", "message", "type", "string", "description",
                  "what went wrong, and what to do", "errors", "type", "object", "description",
                  "for a validation failure: each field that is wrong, and why",
                  "additionalProperties", "type", "string"));
    put(g, c, "schemas", json_incref(g->schemas));
    for (size_t i = 0; i < NREFUSALS; i++) {
        json_t *extra = NULL;
        if (refusals[i].status == 401)
            extra = json_pack("{s:o}", "WWW-Authenticate", ref("headers", "WWW-Authenticate"));
        if (refusals[i].status == 429)
            extra = json_pack("{s:o}", "Retry-After", ref("headers", "Retry-After"));
        put(g, responses, refusals[i].name,
            json_pack("{s:s, s:o, s:{s:{s:o}}}", "description", refusals[i].doc, "headers",
                      headers(extra, NULL), "content", "application/json", "schema",
                      ref("schemas", "Error")));
    }
    put(g, c, "responses", responses);
    return c;
}

static const char info_doc[] =
    "The actions of a CRM: notes and more, attached to CRM records (targets). Every route but "
    "the public ones (marked) needs `Authorization: Bearer <JWT>`; you see only your tenant's "
    "items. Errors are `{\"message\": ...}`, with `errors` (field -> what is wrong) for a "
    "validation failure. Single items carry their `version` as `ETag`; send it back in "
    "`If-Match` to refuse a change when the item moved (412). Lists take `?limit=` (1-100, "
    "default 25) and `?cursor=`. Every answer has `X-Request-Id`. This document is made from "
    "the service's route table.";

int at_api_openapi(const at_route *routes, const char *base_prefix, json_t **out, char *err,
                   size_t errlen)
{
    gen g = {0};
    json_t *doc;
    *out = NULL;
    g.err = err;
    g.errlen = errlen;
    if (err && errlen) err[0] = '\0';
    g.paths = json_object();
    g.tags = json_array();
    g.schemas = json_object();
    g.op_ids = json_object();
    doc = json_pack("{s:s, s:{s:s, s:s, s:s}, s:[{s:s, s:s}], s:[{s:[]}]}", "openapi",
                    OPENAPI_VERSION, "info", "title", "actionstools", "version", AT_VERSION,
                    "description", info_doc, "servers", "url",
                    base_prefix && *base_prefix ? base_prefix : "/", "description", "this service",
                    "security", "bearerAuth");
    if (!doc || !g.paths || !g.tags || !g.schemas || !g.op_ids) oom(&g);
    for (const at_route *rt = routes; rt->method && !g.rc; rt++)
        add_operation(&g, rt);
    if (!g.rc) {
        put(&g, doc, "tags", json_incref(g.tags));
        put(&g, doc, "paths", json_incref(g.paths));
        put(&g, doc, "components", components(&g));
    }
    json_decref(g.paths);
    json_decref(g.tags);
    json_decref(g.schemas);
    json_decref(g.op_ids);
    if (g.rc) {
        json_decref(doc);
        return g.rc;
    }
    *out = doc;
    return 0;
}
