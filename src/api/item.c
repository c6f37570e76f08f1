/* Items as answers, loading with tenancy, permissions, and read-modify-write. */
#include <inttypes.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "api.h"
#include "actionstools/view.h"
#include "actionstools/err.h"
#include "actionstools/banned.h"

const char *const at_api_view_leading[] = {
    "uuid", "target_uuid", "instance_id", "config_key", "event_id", "item_number", "owner_uuid",
    "owner_name", "created_by", NULL,
};
const char *const at_api_view_hidden[] = {"deleted_at", NULL};

int at_api_write_view(at_buf *b, const at_resource *r, const json_t *item)
{
    return at_view_write(b, item, &r->view);
}

int at_api_version(const json_t *item, int64_t *v)
{
    *v = 0;
    if (!json_object_get(item, "version")) return 0;
    if (!at_item_n_int(item, "version", v) || *v < 0) {
        *v = 0;
        return AT_EINVAL;
    }
    return 0;
}

void at_api_reply_item(at_ctx *c, const at_resource *r, int status, const json_t *item)
{
    char etag[32];
    int64_t v;
    at_buf b;
    at_buf_init(&b, AT_API_MAX_ANSWER);
    if (at_api_write_view(&b, r, item)) {
        at_buf_release(&b);
        at_reply_error(c, 500, "out of memory");
        return;
    }
    at_api_version(item, &v);
    snprintf(etag, sizeof etag, "\"%" PRId64 "\"", v);
    at_set_header(c, "ETag", etag);
    at_reply_json_buf(c, status, &b);
}

int at_api_set_now(const at_resource *r, json_t *item, const char *attr)
{
    char now[AT_TIMESTAMP_LEN + 1];
    if (r->epoch_timestamps) return json_object_set_new(item, attr, at_av_n_int(at_now_us() / 1000000)) ? AT_ENOMEM : 0;
    at_timestamp_format(at_now_us(), now);
    return json_object_set_new(item, attr, at_av_s(now)) ? AT_ENOMEM : 0;
}

const char *at_api_key_param(at_ctx *c, const char *name, const char *what)
{
    const char *v = at_param(c, name);
    size_t n = v ? strlen(v) : 0;
    int ok = n > 0 && n <= 256;
    for (size_t i = 0; ok && i < n; i++)
        if ((unsigned char)v[i] < 32 || v[i] == 127) ok = 0;
    if (!ok) {
        at_reply_error(c, 404, "%s not found", what);
        return NULL;
    }
    return v;
}

const char *at_api_param_what(const at_ctx *c, const char *param)
{
    for (const at_route_param *p = at_route_params; p->name; p++)
        if (strcmp(p->name, param) == 0)
            return p->what ? p->what : c->route && c->route->resource ? c->route->resource->name : param;
    return param;
}

const char *at_api_string(const json_t *v)
{
    const char *s = json_string_value(v);
    if (!s || strlen(s) != json_string_length(v)) return NULL;
    return s;
}

/* DynamoDB's item size: attribute names plus values (strings and numbers by length,
 * containers by their members plus a little overhead). An estimate on the safe side. */
static size_t av_size(const json_t *av)
{
    const char *tag = NULL, *k;
    json_t *val = NULL, *m;
    size_t n = 0, i;
    json_object_foreach((json_t *)av, tag, val) break;
    if (!tag) return 0;
    if (json_is_string(val)) return json_string_length(val) + 1;
    if (json_is_object(val)) {
        n = 3;
        json_object_foreach(val, k, m) n += strlen(k) + 1 + av_size(m);
        return n;
    }
    if (json_is_array(val)) {
        n = 3;
        json_array_foreach(val, i, m) n += 1 + (json_is_string(m) ? json_string_length(m) : av_size(m));
        return n;
    }
    return 1;
}

int at_api_fits(at_ctx *c, const json_t *item, const char *what)
{
    const char *k;
    json_t *v;
    size_t n = 0;
    json_object_foreach((json_t *)item, k, v) n += strlen(k) + av_size(v);
    if (n <= 400 * 1024) return 1;
    at_reply_error(c, 413, "the %s would be %zu bytes, over DynamoDB's 400 KB item limit", what, n);
    return 0;
}

json_t *at_api_load(at_ctx *c, const at_resource *r, const json_t *key, unsigned flags)
{
    json_t *item = NULL;
    const char *inst;
    int rc = at_store_get(c->store, r->table, key, &item);
    if (rc == AT_ENOTFOUND) {
        at_reply_error(c, 404, "%s not found", r->name);
        return NULL;
    }
    if (rc) {
        at_reply_store_error(c, rc, "read an item");
        return NULL;
    }
    inst = at_item_s(item, "instance_id");
    /* Another tenant's item answers exactly as a missing one: its existence is not told. */
    if (!inst || strcmp(inst, c->id->instance_id) != 0 ||
        (!(flags & AT_LOAD_DELETED) && at_item_has(item, "deleted_at"))) {
        json_decref(item);
        at_reply_error(c, 404, "%s not found", r->name);
        return NULL;
    }
    return item;
}

static int is(const json_t *item, const char *attr, const char *user)
{
    const char *v = at_item_s(item, attr);
    return v && strcmp(v, user) == 0;
}

int at_api_permitted(at_ctx *c, const at_resource *r, at_perm perm, const json_t *item)
{
    const char *me = c->id->user_uuid;
    switch (perm) {
    case AT_PERM_ANY: return 1;
    case AT_PERM_OWNER:
        if (c->id->is_admin || is(item, "owner_uuid", me)) return 1;
        at_reply_error(c, 403, "only the %s's owner or a CRM_ADMIN may change it", r->name);
        return 0;
    case AT_PERM_OWNER_ASSIGNEE:
        if (c->id->is_admin || is(item, "owner_uuid", me) || is(item, "assignee_uuid", me)) return 1;
        at_reply_error(c, 403, "only the %s's owner, its assignee or a CRM_ADMIN may change it", r->name);
        return 0;
    case AT_PERM_ADMIN:
        if (c->id->is_admin) return 1;
        at_reply_error(c, 403, "only a CRM_ADMIN may change a %s", r->name);
        return 0;
    }
    at_reply_error(c, 403, "not permitted");
    return 0;
}

int at_api_if_match(const char *h, int64_t version)
{
    char want[32];
    const char *p;
    if (!h) return 1;
    snprintf(want, sizeof want, "%" PRId64, version);
    p = h;
    while (*p) {
        const char *start, *end;
        while (*p == ' ' || *p == ',') p++;
        if (!*p) break;
        if (*p == '*') return 1;
        if (p[0] == 'W' && p[1] == '/') p += 2;
        start = p;
        if (*p == '"') {
            start = ++p;
            end = strchr(p, '"');
            if (!end) return 0;
            p = end + 1;
        } else {
            end = p + strcspn(p, ", ");
            p = end;
        }
        if ((size_t)(end - start) == strlen(want) && strncmp(start, want, (size_t)(end - start)) == 0)
            return 1;
    }
    return 0;
}

#define CHANGE_MAX_PAUSE_MS 64

void at_api_retry_pause(int attempt)
{
    unsigned cap = 1u << (attempt < 6 ? attempt : 6);
    if (cap > CHANGE_MAX_PAUSE_MS) cap = CHANGE_MAX_PAUSE_MS;
    usleep((useconds_t)arc4random_uniform(cap * 1000u + 1));
}

json_t *at_api_change(at_ctx *c, const at_resource *r, const json_t *key, const at_change *ch)
{
    const char *ifm = at_request_header(c->req, "If-Match");
    for (int attempt = 0; attempt < AT_API_CHANGE_ATTEMPTS; attempt++) {
        json_t *item, *copy, *old_version_av;
        const char *conflict = NULL;
        int64_t version;
        int rc, applied, stuck;
        at_clause clause;
        at_cond cond = {&clause, 1};

        item = at_api_load(c, r, key, ch->load_flags);
        if (!item) return NULL;
        if (!at_api_permitted(c, r, ch->perm, item)) goto fail;
        copy = json_deep_copy(item);
        if (!copy) {
            at_reply_error(c, 500, "out of memory");
            goto fail;
        }
        applied = ch->apply(c, r, copy, &conflict);
        if (applied == AT_APPLY_REPLIED) goto fail_copy;
        /* A version that cannot move (2^63-1, or not a whole number: only an import can
         * store one) would wrap or reset; the item can no longer change. */
        stuck = at_api_version(item, &version) != 0 || version == INT64_MAX;
        if (!at_api_if_match(ifm, version)) {
            at_reply_error(c, 412, "the %s is at version %" PRId64 ", not the one in If-Match; "
                                   "read it again and retry",
                           r->name, version);
            goto fail_copy;
        }
        if (applied == AT_APPLY_CONFLICT) {
            at_reply_error(c, 409, "%s", conflict ? conflict : "conflict");
            goto fail_copy;
        }
        if (stuck) {
            at_reply_error(c, 409, "the %s has reached the highest version there can be and can "
                                   "no longer change; create a new %s instead",
                           r->name, r->name);
            goto fail_copy;
        }
        if (json_object_set_new(copy, "version", at_av_n_int(version + 1)) ||
            at_api_set_now(r, copy, "updated_at") || !at_api_fits(c, copy, r->name)) {
            if (c->resp->status == 0) at_reply_error(c, 500, "out of memory");
            goto fail_copy;
        }
        old_version_av = json_object_get(item, "version");
        clause.attr = "version";
        clause.op = old_version_av ? AT_OP_EQ : AT_OP_NOT_EXISTS;
        clause.value = old_version_av;
        clause.value2 = NULL;
        rc = at_store_put(c->store, r->table, copy, &cond);
        if (rc == 0 && r->on_change) r->on_change(c, r, item, copy);
        json_decref(item);
        if (rc == 0) return copy;
        json_decref(copy);
        if (rc != AT_ECOND) {
            at_reply_store_error(c, rc, "save an item");
            return NULL;
        }
        /* Someone else wrote in between: read again. With If-Match the next round
         * answers 412; without it the change is applied to the newer version. */
        at_api_retry_pause(attempt);
        continue;
    fail_copy:
        json_decref(copy);
    fail:
        json_decref(item);
        return NULL;
    }
    at_reply_error(c, 409, "the %s kept changing while we tried to save it; try again", r->name);
    return NULL;
}
