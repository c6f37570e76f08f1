/* The resource engine: create, get, get by uuid, patch, delete, restore and lists for
 * any resource, from its descriptor (model.h) and the route that names it. */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "api.h"
#include "actionstools/err.h"
#include "actionstools/uuid.h"
#include "actionstools/banned.h"

static int in_list(const char *const *list, const char *s)
{
    for (; list && *list; list++)
        if (strcmp(*list, s) == 0) return 1;
    return 0;
}

/* Returns the partition key's value for r, or NULL after answering 404 "<what> not
 * found" (a path parameter that names no item). */
static const char *partition(at_ctx *c, const at_resource *r, const char *what)
{
    switch (r->pk.src) {
    case AT_SRC_TENANT: return c->id->instance_id;
    case AT_SRC_USER: return c->id->user_uuid;
    default: return at_api_key_param(c, r->pk.name, what);
    }
}

static json_t *make_key(const at_resource *r, const char *pk, const char *sk)
{
    const at_table_def *t = at_schema_table(r->table);
    return json_pack("{s:{s:s}, s:{s:s}}", t->pk.name, "S", pk, t->sk.name, "S", sk);
}

/* The key of the item a route names. Returns a new key, or NULL after answering 404. */
static json_t *item_key(at_ctx *c, const at_resource *r)
{
    char ubuf[AT_UUID_LEN + 1];
    const char *pk = partition(c, r, r->name), *sk;
    if (!pk) return NULL;
    if (r->sk.src == AT_SRC_NEW_UUID) {
        /* A value that is not a UUID names no item. */
        sk = at_param(c, r->sk.name);
        if (!sk || at_uuid_normalize(sk, ubuf)) {
            at_reply_error(c, 404, "%s not found", r->name);
            return NULL;
        }
        sk = ubuf;
    } else if (!(sk = at_api_key_param(c, r->sk.name, r->name))) {
        return NULL;
    }
    return make_key(r, pk, sk);
}

/* Reads the members of body that mode (AT_FF_CREATE or AT_FF_PATCH) allows into item,
 * converted by their field types; "uuid" is left to the caller. Adds to errors.
 * Returns how many fields were read. */
static size_t read_body(const at_resource *r, const json_t *body, unsigned mode, json_t *item,
                        json_t *errors)
{
    const char *k, *why;
    json_t *v;
    size_t n = 0;
    json_object_foreach((json_t *)body, k, v)
    {
        const at_field *f = at_model_field(r, k);
        char msg[160];
        json_t *av;
        if (strcmp(k, "uuid") == 0) continue;
        if (f && (f->flags & mode)) {
            if (at_model_field_value(f, v, &av, msg, sizeof msg)) {
                json_object_set_new(errors, k, json_string(msg[0] ? msg : "out of memory"));
                continue;
            }
            if (av)
                json_object_set_new(item, k, av);
            else
                json_object_del(item, k);
            n++;
            continue;
        }
        if ((f && (f->flags & AT_FF_SERVICE)) || (!f && in_list(at_model_service_names, k)))
            why = "set by the service; remove it";
        else if (f && (f->flags & AT_FF_CREATE))
            why = "cannot be changed once created";
        else
            why = "unknown field";
        json_object_set_new(errors, k, json_string(why));
    }
    return n;
}

/* Sets the defaults of the fields a create did not send. Returns 0 or AT_ENOMEM. */
static int set_defaults(const at_resource *r, const json_t *body, json_t *item)
{
    for (const at_field *f = r->fields; f->name; f++) {
        json_t *v, *av = NULL;
        char why[160];
        if (!f->def || json_object_get(body, f->name)) continue;
        v = json_loads(f->def, JSON_DECODE_ANY, NULL); /* checked at start-up */
        if (!v) return AT_ENOMEM;
        at_model_field_value(f, v, &av, why, sizeof why);
        json_decref(v);
        if (av && json_object_set_new(item, f->name, av)) return AT_ENOMEM;
    }
    return 0;
}

/* Percent-encodes s (all but RFC 3986's unreserved characters) onto b. */
static int add_encoded(at_buf *b, const char *s)
{
    static const char hex[] = "0123456789ABCDEF";
    int rc = 0;
    for (const unsigned char *p = (const unsigned char *)s; *p && !rc; p++) {
        if ((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
            *p == '-' || *p == '.' || *p == '_' || *p == '~')
            rc = at_buf_addc(b, (char)*p);
        else
            rc = at_buf_printf(b, "%%%c%c", hex[*p >> 4], hex[*p & 15]);
    }
    return rc;
}

/* Location of a new item: the route's path, its parameters percent-encoded, then "/"
 * and the new key unless sk is NULL (SPEC §4: URLs the service writes are
 * percent-encoded). */
static const char *location(at_ctx *c, const char *sk)
{
    const char *p = c->route->pattern;
    const char *out = NULL;
    at_buf b;
    int rc;
    at_buf_init(&b, 8192);
    rc = at_buf_adds(&b, c->settings->base_prefix);
    while (!rc && *p) {
        const char *close;
        if (*p == '{' && (close = strchr(p, '}'))) {
            char name[64];
            const char *v;
            snprintf(name, sizeof name, "%.*s", (int)(close - p - 1), p + 1);
            v = at_param(c, name);
            rc = add_encoded(&b, v ? v : "");
            p = close + 1;
        } else {
            rc = at_buf_addc(&b, *p++);
        }
    }
    if (!rc && sk) rc = at_buf_addc(&b, '/');
    if (!rc && sk) rc = add_encoded(&b, sk);
    if (!rc) out = at_arena_strdup(c->arena, at_buf_str(&b));
    at_buf_release(&b);
    return out;
}

void at_engine_create(at_ctx *c)
{
    const at_resource *r = c->route->resource;
    const at_table_def *t = at_schema_table(r->table);
    const char *pk = partition(c, r, r->pk.name ? at_api_param_what(c, r->pk.name) : r->name);
    json_t *body, *errors = NULL, *item = NULL, *juuid;
    char uuid[AT_UUID_LEN + 1];
    int client_uuid = 0;

    if (!pk || !(body = at_body_object(c))) return;
    errors = json_object();
    item = json_object();
    read_body(r, body, AT_FF_CREATE, item, errors);
    for (const at_field *f = r->fields; f->name; f++)
        if ((f->flags & AT_FF_REQUIRED) && !json_object_get(body, f->name))
            json_object_set_new(errors, f->name, json_string("required"));
    juuid = json_object_get(body, "uuid");
    if (juuid) {
        if (!at_api_string(juuid) || at_uuid_normalize(json_string_value(juuid), uuid))
            json_object_set_new(errors, "uuid", json_string("must be a UUID like 123e4567-e89b-12d3-a456-426614174000"));
        client_uuid = 1;
    } else {
        at_uuid_new(uuid);
    }
    if (set_defaults(r, body, item)) goto oom;
    if (!json_object_size(errors) && r->check) r->check(c, r, NULL, item, errors);
    if (c->resp->status) goto out; /* the check could not decide (a storage failure) */
    if (json_object_size(errors)) {
        at_reply_validation(c, errors);
        errors = NULL;
        goto out;
    }
    if (json_object_set_new(item, t->pk.name, at_av_s(pk)) ||
        json_object_set_new(item, t->sk.name, at_av_s(uuid)) ||
        json_object_set_new(item, "instance_id", at_av_s(c->id->instance_id)) ||
        json_object_set_new(item, "owner_uuid", at_av_s(c->id->user_uuid)) ||
        json_object_set_new(item, "owner_name", at_av_s(c->id->user_name)) ||
        json_object_set_new(item, "version", at_av_n_int(1)) || at_api_set_now(r, item, "created_at") ||
        json_object_set(item, "updated_at", json_object_get(item, "created_at")))
        goto oom;
    if (r->on_create && !r->on_create(c, r, item)) goto out;
    if (!at_api_fits(c, item, r->name)) goto out;
    if (at_api_put_new(c, r, item, client_uuid)) {
        if (r->on_change) r->on_change(c, r, NULL, item);
        at_set_header(c, "Location", location(c, uuid));
        at_api_reply_item(c, r, 201, item);
    }
    goto out;
oom:
    at_reply_error(c, 500, "out of memory");
out:
    json_decref(errors);
    json_decref(item);
}

void at_engine_get(at_ctx *c)
{
    const at_resource *r = c->route->resource;
    json_t *key = item_key(c, r), *item;
    if (!key) return;
    item = at_api_load(c, r, key, 0);
    if (item) at_api_reply_item(c, r, 200, item);
    json_decref(item);
    json_decref(key);
}

void at_engine_get_by_uuid(at_ctx *c)
{
    const at_resource *r = c->route->resource;
    char ubuf[AT_UUID_LEN + 1];
    const char *u = at_param(c, "uuid");
    json_t *inst, *uav, *found;
    at_page page = {0};
    at_query q;
    int rc;
    if (!u || at_uuid_normalize(u, ubuf)) {
        at_reply_error(c, 404, "%s not found", r->name);
        return;
    }
    inst = at_av_s(c->id->instance_id);
    uav = at_av_s(ubuf);
    memset(&q, 0, sizeof q);
    q.table = r->table;
    q.index = r->uuid_index;
    q.pk = inst;
    q.sk = (at_clause){"uuid", AT_OP_EQ, uav, NULL};
    q.forward = 1;
    q.limit = 1;
    q.flags = AT_Q_LIVE;
    rc = at_store_query(c->store, &q, &page);
    found = json_array_get(page.items, 0);
    if (rc)
        at_reply_store_error(c, rc, "look up an item by uuid");
    else if (!found)
        at_reply_error(c, 404, "%s not found", r->name);
    else
        at_api_reply_item(c, r, 200, found);
    at_page_release(&page);
    json_decref(inst);
    json_decref(uav);
}

/* Joins the names of the fields a PATCH may send ("data and/or is_pinned"); *first
 * receives the first of them. */
static const char *patchable(at_ctx *c, const at_resource *r, const char **first)
{
    const char *s = "";
    size_t n = 0, i = 0;
    *first = NULL;
    for (const at_field *f = r->fields; f->name; f++) n += (f->flags & AT_FF_PATCH) != 0;
    for (const at_field *f = r->fields; f->name; f++) {
        if (!(f->flags & AT_FF_PATCH)) continue;
        if (!*first) *first = f->name;
        s = at_arena_printf(c->arena, "%s%s%s", s, i == 0 ? "" : i + 1 < n ? ", " : " and/or ", f->name);
        i++;
    }
    return s ? s : "";
}

static int apply_patch(at_ctx *c, const at_resource *r, json_t *item, const char **conflict)
{
    json_t *body = at_body_object(c), *errors, *old = NULL;
    size_t n;
    if (!body) return AT_APPLY_REPLIED;
    errors = json_object();
    if (r->check) old = json_copy(item);
    n = read_body(r, body, AT_FF_PATCH, item, errors);
    if (json_object_get(body, "uuid"))
        json_object_set_new(errors, "uuid", json_string(at_arena_printf(c->arena, "a %s's uuid cannot change", r->name)));
    if (!json_object_size(errors) && n == 0) {
        const char *first, *names = patchable(c, r, &first);
        json_object_set_new(errors, first ? first : "body", json_string(at_arena_printf(c->arena, "send %s to change", names)));
    }
    if (!json_object_size(errors) && r->check) r->check(c, r, old, item, errors);
    json_decref(old);
    if (c->resp->status) { /* the check could not decide (a storage failure) */
        json_decref(errors);
        return AT_APPLY_REPLIED;
    }
    if (json_object_size(errors)) {
        at_reply_validation(c, errors);
        return AT_APPLY_REPLIED;
    }
    json_decref(errors);
    return AT_APPLY_OK;
}

static int apply_delete(at_ctx *c, const at_resource *r, json_t *item, const char **conflict)
{
    if (at_api_set_now(r, item, "deleted_at")) {
        *conflict = "out of memory";
        return AT_APPLY_CONFLICT;
    }
    return AT_APPLY_OK;
}

static int apply_restore(at_ctx *c, const at_resource *r, json_t *item, const char **conflict)
{
    if (!at_item_has(item, "deleted_at")) {
        *conflict = at_arena_printf(c->arena, "the %s is not deleted; there is nothing to restore", r->name);
        return AT_APPLY_CONFLICT;
    }
    json_object_del(item, "deleted_at");
    return AT_APPLY_OK;
}

static void change(at_ctx *c, const at_change *ch, int status)
{
    const at_resource *r = c->route->resource;
    json_t *key = item_key(c, r), *saved;
    if (!key) return;
    saved = at_api_change(c, r, key, ch);
    if (saved && status == 204)
        at_reply_empty(c, 204);
    else if (saved)
        at_api_reply_item(c, r, status, saved);
    json_decref(saved);
    json_decref(key);
}

void at_engine_patch(at_ctx *c)
{
    at_change ch = {0, c->route->resource->change, apply_patch};
    change(c, &ch, 200);
}

void at_engine_delete(at_ctx *c)
{
    at_change ch = {0, c->route->resource->remove, apply_delete};
    change(c, &ch, 204);
}

void at_engine_restore(at_ctx *c)
{
    at_change ch = {AT_LOAD_DELETED, c->route->resource->remove, apply_restore};
    change(c, &ch, 200);
}

void at_engine_list(at_ctx *c)
{
    const at_resource *r = c->route->resource;
    const at_list_def *l = c->route->list;
    at_list_query lq;
    at_pager p;
    while (l[1].doc && l->when && !at_query_param(c, l->when)) l++;
    if (l->run) {
        l->run(c, r, l);
        return;
    }
    if (!at_api_list_query_init(c, r, l, &lq)) return;
    if (at_pager_begin(&p, c, r, lq.scope, 1)) at_pager_query(&p, 0, &lq.q);
    at_pager_finish(&p);
    at_api_list_query_release(&lq);
}

/* ---- PUT: create or replace the item at a key the client chooses (settings) ---- */

/* Copies attr from old into item (when old has it). Returns 0 or AT_ENOMEM. */
static int keep_attr(json_t *item, const json_t *old, const char *attr)
{
    json_t *v = json_object_get(old, attr);
    return v && json_object_set(item, attr, v) ? AT_ENOMEM : 0;
}

/* Builds the new item of a PUT from the body, as a create does: the fields clients send
 * on create (those not sent are gone, or take their default), then the check hook with
 * the live item it replaces (or NULL). Returns the item, or NULL after answering. */
static json_t *put_body(at_ctx *c, const at_resource *r, const json_t *live)
{
    json_t *body = at_body_object(c), *errors, *item;
    if (!body) return NULL;
    errors = json_object();
    item = json_object();
    read_body(r, body, AT_FF_CREATE, item, errors);
    if (json_object_get(body, "uuid")) json_object_set_new(errors, "uuid", json_string("unknown field"));
    for (const at_field *f = r->fields; f->name; f++)
        if ((f->flags & AT_FF_REQUIRED) && !json_object_get(body, f->name))
            json_object_set_new(errors, f->name, json_string("required"));
    if (set_defaults(r, body, item)) {
        at_reply_error(c, 500, "out of memory");
    } else {
        if (!json_object_size(errors) && r->check) r->check(c, r, live, item, errors);
        if (!c->resp->status && json_object_size(errors)) {
            at_reply_validation(c, errors);
            errors = NULL;
        }
    }
    json_decref(errors);
    if (c->resp->status) {
        json_decref(item);
        return NULL;
    }
    return item;
}

/* One attempt of a PUT of the item at key: answers and returns 0, or returns AT_ECOND
 * when someone else wrote the item in between (the caller tries again). An item there
 * is replaced when it is live (its owner, created_at and version go on), and written
 * anew over a soft-deleted one (its version goes on, so no ETag of the old item matches
 * the new one). */
static int put_once(at_ctx *c, const at_resource *r, const json_t *key)
{
    const at_table_def *t = at_schema_table(r->table);
    const char *ifm = at_request_header(c->req, "If-Match");
    json_t *old = NULL, *item = NULL;
    const json_t *live;
    int64_t version = 0;
    int rc, stuck = 0;
    at_clause cl;
    at_cond cond = {&cl, 1};

    rc = at_store_get(c->store, r->table, key, &old);
    if (rc && rc != AT_ENOTFOUND) {
        at_reply_store_error(c, rc, "read an item");
        return 0;
    }
    live = old && !at_item_has(old, "deleted_at") ? old : NULL;
    if (live && !at_api_permitted(c, r, r->change, live)) goto out;
    if (!(item = put_body(c, r, live))) goto out;
    if (old) stuck = at_api_version(old, &version) != 0 || version == INT64_MAX;
    if (!live && ifm) {
        at_reply_error(c, 412, "there is no %s here to match If-Match; send the PUT without it to "
                               "create one", r->name);
        goto out;
    }
    if (live && !at_api_if_match(ifm, version)) {
        at_reply_error(c, 412, "the %s is at version %" PRId64 ", not the one in If-Match; read it "
                               "again and retry", r->name, version);
        goto out;
    }
    if (stuck) {
        at_reply_error(c, 409, "the %s has reached the highest version there can be and can no "
                               "longer change", r->name);
        goto out;
    }
    rc = json_object_update(item, (json_t *)key) || json_object_set_new(item, "instance_id", at_av_s(c->id->instance_id)) ||
         json_object_set_new(item, "version", at_av_n_int(old ? version + 1 : 1)) ||
         at_api_set_now(r, item, "updated_at");
    if (!rc && live)
        rc = keep_attr(item, live, "owner_uuid") || keep_attr(item, live, "owner_name") ||
             keep_attr(item, live, "created_at");
    else if (!rc)
        rc = json_object_set_new(item, "owner_uuid", at_av_s(c->id->user_uuid)) ||
             json_object_set_new(item, "owner_name", at_av_s(c->id->user_name)) ||
             json_object_set(item, "created_at", json_object_get(item, "updated_at"));
    if (rc) {
        at_reply_error(c, 500, "out of memory");
        goto out;
    }
    if (!at_api_fits(c, item, r->name)) goto out;
    /* Written only over what was read: nothing, or the same version. */
    if (!old)
        cl = (at_clause){t->sk.name, AT_OP_NOT_EXISTS, NULL, NULL};
    else if (json_object_get(old, "version"))
        cl = (at_clause){"version", AT_OP_EQ, json_object_get(old, "version"), NULL};
    else
        cl = (at_clause){"version", AT_OP_NOT_EXISTS, NULL, NULL};
    rc = at_store_put(c->store, r->table, item, &cond);
    if (rc == AT_ECOND) goto out;
    if (rc) {
        at_reply_store_error(c, rc, "save an item");
    } else {
        if (r->on_change) r->on_change(c, r, live, item);
        if (!live) at_set_header(c, "Location", location(c, NULL));
        at_api_reply_item(c, r, live ? 200 : 201, item);
    }
    rc = 0;
out:
    json_decref(old);
    json_decref(item);
    return rc == AT_ECOND ? AT_ECOND : 0;
}

/* Returns 1 when k can be a key value (1 to 256 bytes, no control characters). */
static int key_usable(const char *k)
{
    size_t n = k ? strlen(k) : 0;
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)k[i] < 32 || k[i] == 127) return 0;
    return n > 0 && n <= 256;
}

void at_engine_put(at_ctx *c)
{
    const at_resource *r = c->route->resource;
    const char *k = at_param(c, r->sk.name);
    json_t *key;
    if (!key_usable(k)) {
        at_reply_validation(c, json_pack("{s:s}", r->sk.name, "must be 1 to 256 bytes, without control characters"));
        return;
    }
    if (!(key = make_key(r, c->id->instance_id, k))) {
        at_reply_error(c, 500, "out of memory");
        return;
    }
    for (int attempt = 0; attempt < AT_API_CHANGE_ATTEMPTS && put_once(c, r, key) == AT_ECOND; attempt++)
        at_api_retry_pause(attempt);
    if (!c->resp->status)
        at_reply_error(c, 409, "the %s kept changing while we tried to save it; try again", r->name);
    json_decref(key);
}
