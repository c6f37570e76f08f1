/* Items as answers, body checks, loading with tenancy, and read-modify-write. */
#include <inttypes.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "api.h"
#include "actionstools/view.h"
#include "actionstools/err.h"
#include "actionstools/banned.h"

const char *const at_api_service_fields[] = {
    "owner_uuid", "owner_name", "created_by", "instance_id", "item_number", "created_at",
    "updated_at", "version",    "deleted_at", "target_uuid", "completed_at", NULL,
};

static int in_list(const char *const *list, const char *s)
{
    for (; list && *list; list++)
        if (strcmp(*list, s) == 0) return 1;
    return 0;
}

/* Answers list these first, in this order; other attributes follow by name. */
static const char *const leading_attrs[] = {
    "uuid", "target_uuid", "instance_id", "config_key", "event_id", "item_number", "owner_uuid",
    "owner_name", "created_by", NULL,
};
static const char *const hidden_attrs[] = {"deleted_at", NULL};

/* The flags a table's items always answer. */
static const char *const *table_flags(at_table_id t)
{
    static const char *const notes[] = {"is_pinned", NULL};
    static const char *const notifications[] = {"is_read", "is_hidden", NULL};
    if (t == AT_TABLE_NOTES) return notes;
    if (t == AT_TABLE_NOTIFICATIONS) return notifications;
    return NULL;
}

int at_api_write_view(at_buf *b, at_table_id t, const json_t *item)
{
    at_view_spec spec = {leading_attrs, table_flags(t), hidden_attrs, 1};
    return at_view_write(b, item, &spec);
}

int at_api_write_view_raw(at_buf *b, at_table_id t, const at_raw_ref *item)
{
    at_view_spec spec = {leading_attrs, table_flags(t), hidden_attrs, 1};
    return at_view_write_raw(b, item->p, item->n, &spec);
}

int64_t at_api_version(const json_t *item)
{
    int64_t v = 0;
    if (!at_item_n_int(item, "version", &v)) return 0;
    return v;
}

void at_api_reply_item(at_ctx *c, at_table_id t, int status, const json_t *item)
{
    char etag[32];
    at_buf b;
    at_buf_init(&b, AT_API_MAX_ANSWER);
    if (at_api_write_view(&b, t, item)) {
        at_buf_release(&b);
        at_reply_error(c, 500, "out of memory");
        return;
    }
    snprintf(etag, sizeof etag, "\"%" PRId64 "\"", at_api_version(item));
    at_set_header(c, "ETag", etag);
    at_reply_json_buf(c, status, &b);
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

const char *at_api_string(const json_t *v)
{
    const char *s = json_string_value(v);
    if (!s || strlen(s) != json_string_length(v)) return NULL;
    return s;
}

void at_api_check_fields(const json_t *body, const char *const *allowed,
                         const char *const *service_set, json_t *errors)
{
    const char *k;
    json_t *v;
    json_object_foreach((json_t *)body, k, v)
    {
        if (in_list(allowed, k)) continue;
        if (in_list(service_set, k))
            json_object_set_new(errors, k, json_string("set by the service; remove it"));
        else
            json_object_set_new(errors, k, json_string("unknown field"));
    }
}

json_t *at_api_payload(const json_t *v, const char *field, json_t *errors)
{
    char why[128];
    json_t *av = at_av_from_json_why(v, why, sizeof why);
    if (!av) json_object_set_new(errors, field, json_string(why[0] ? why : "out of memory"));
    return av;
}

void at_api_now_text(char out[AT_TIMESTAMP_LEN + 1])
{
    at_timestamp_format(at_now_us(), out);
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

json_t *at_api_load(at_ctx *c, at_table_id t, const json_t *key, unsigned flags, const char *what)
{
    json_t *item = NULL;
    const char *inst;
    int rc = at_store_get(c->store, t, key, &item);
    if (rc == AT_ENOTFOUND) {
        at_reply_error(c, 404, "%s not found", what);
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
        at_reply_error(c, 404, "%s not found", what);
        return NULL;
    }
    return item;
}

int at_api_owner_or_admin(at_ctx *c, const json_t *item, const char *what)
{
    const char *owner = at_item_s(item, "owner_uuid");
    if (c->id->is_admin || (owner && strcmp(owner, c->id->user_uuid) == 0)) return 1;
    at_reply_error(c, 403, "only the %s's owner or a CRM_ADMIN may change it", what);
    return 0;
}

/* Parses If-Match: "*", or a list of entity tags ("3", W/"3", 3). Returns 1 when the
 * header is absent or matches version. */
static int if_match(const char *h, int64_t version)
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

/* Moves version (+1) and updated_at; builds the condition "version is still old". */
static int bump(json_t *item, int64_t old_version, int numeric)
{
    char now[AT_TIMESTAMP_LEN + 1];
    if (json_object_set_new(item, "version", at_av_n_int(old_version + 1))) return AT_ENOMEM;
    if (numeric) return json_object_set_new(item, "updated_at", at_av_n_int(at_now_us() / 1000000));
    at_api_now_text(now);
    return json_object_set_new(item, "updated_at", at_av_s(now));
}

/* Writers racing on one item retry this many times, after a short random pause that
 * grows with each round (full jitter), before giving up with 409. */
#define CHANGE_ATTEMPTS 12
#define CHANGE_MAX_PAUSE_MS 64

static void pause_before_retry(int attempt)
{
    unsigned cap = 1u << (attempt < 6 ? attempt : 6);
    if (cap > CHANGE_MAX_PAUSE_MS) cap = CHANGE_MAX_PAUSE_MS;
    usleep((useconds_t)arc4random_uniform(cap * 1000u + 1));
}

json_t *at_api_change(at_ctx *c, const json_t *key, const at_change *ch)
{
    const char *ifm = at_request_header(c->req, "If-Match");
    for (int attempt = 0; attempt < CHANGE_ATTEMPTS; attempt++) {
        json_t *item, *copy, *old_version_av;
        const char *conflict = NULL;
        int64_t version;
        int rc, applied;
        at_clause clause;
        at_cond cond = {&clause, 1};

        item = at_api_load(c, ch->table, key, ch->load_flags, ch->what);
        if (!item) return NULL;
        if (ch->authorize && !ch->authorize(c, item, ch->what)) goto fail;
        copy = json_deep_copy(item);
        if (!copy) {
            at_reply_error(c, 500, "out of memory");
            goto fail;
        }
        applied = ch->apply(c, copy, ch->arg, &conflict);
        if (applied == AT_APPLY_REPLIED) goto fail_copy;
        version = at_api_version(item);
        if (!if_match(ifm, version)) {
            at_reply_error(c, 412, "the %s is at version %" PRId64 ", not the one in If-Match; "
                                   "read it again and retry",
                           ch->what, version);
            goto fail_copy;
        }
        if (applied == AT_APPLY_CONFLICT) {
            at_reply_error(c, 409, "%s", conflict ? conflict : "conflict");
            goto fail_copy;
        }
        if (bump(copy, version, ch->numeric_timestamps) || !at_api_fits(c, copy, ch->what)) {
            if (c->resp->status == 0) at_reply_error(c, 500, "out of memory");
            goto fail_copy;
        }
        old_version_av = json_object_get(item, "version");
        clause.attr = "version";
        clause.op = old_version_av ? AT_OP_EQ : AT_OP_NOT_EXISTS;
        clause.value = old_version_av;
        clause.value2 = NULL;
        rc = at_store_put(c->store, ch->table, copy, &cond);
        json_decref(item);
        if (rc == 0) return copy;
        json_decref(copy);
        if (rc != AT_ECOND) {
            at_reply_store_error(c, rc, "save an item");
            return NULL;
        }
        /* Someone else wrote in between: read again. With If-Match the next round
         * answers 412; without it the change is applied to the newer version. */
        pause_before_retry(attempt);
        continue;
    fail_copy:
        json_decref(copy);
    fail:
        json_decref(item);
        return NULL;
    }
    at_reply_error(c, 409, "the %s kept changing while we tried to save it; try again", ch->what);
    return NULL;
}
