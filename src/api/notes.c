/* Notes (SPEC §5): free-form data attached to a CRM record, pinned notes first. */
#include <stdlib.h>
#include <string.h>

#include "api.h"
#include "actionstools/err.h"
#include "actionstools/packed.h"
#include "actionstools/uuid.h"
#include "actionstools/banned.h"

#define WHAT "note"
#define PINNED_INDEX "target_uuid-is_pinned-index"
#define UPDATED_INDEX "target_uuid-updated_at-index"
#define MAX_PINNED 1000 /* pinned notes of one record read for the first phase */

static json_t *note_key(const char *target, const char *uuid)
{
    return json_pack("{s:{s:s}, s:{s:s}}", "target_uuid", "S", target, "uuid", "S", uuid);
}

/* Reads {data, is_pinned} members of body into item; adds to errors. */
static void read_fields(const json_t *body, json_t *item, json_t *errors)
{
    json_t *data = json_object_get(body, "data"), *pinned = json_object_get(body, "is_pinned");
    if (data) {
        json_t *av = at_api_payload(data, "data", errors);
        if (av) json_object_set_new(item, "data", av);
    }
    if (pinned) {
        if (json_is_boolean(pinned))
            json_object_set_new(item, "is_pinned", at_av_n_int(json_is_true(pinned)));
        else
            json_object_set_new(errors, "is_pinned", json_string("must be true or false"));
    }
}

static const char *location(at_ctx *c, const char *target, const char *uuid)
{
    return at_arena_printf(c->arena, "%s/targets/%s/notes/%s", c->settings->base_prefix, target, uuid);
}

/* A create retried with the same client uuid: the existing note is the answer when it
 * is live, of the same tenant, target and owner; anything else is a conflict. */
static void answer_existing(at_ctx *c, const char *target, const char *uuid)
{
    json_t *key = note_key(target, uuid), *item = NULL;
    int rc = at_store_get(c->store, AT_TABLE_NOTES, key, &item);
    const char *inst = at_item_s(item, "instance_id"), *owner = at_item_s(item, "owner_uuid");
    json_decref(key);
    if (rc && rc != AT_ENOTFOUND) {
        at_reply_store_error(c, rc, "read a note");
        return;
    }
    if (rc == 0 && !at_item_has(item, "deleted_at") && inst && owner &&
        strcmp(inst, c->id->instance_id) == 0 && strcmp(owner, c->id->user_uuid) == 0)
        at_api_reply_item(c, AT_TABLE_NOTES, 200, item);
    else
        at_reply_error(c, 409, "a note with uuid %s already exists; send a new uuid or none", uuid);
    json_decref(item);
}

/* Returns 1 when the tenant already has a note with this uuid on another target
 * (answered 409), 0 when not, -1 after answering a storage error. */
static int uuid_taken_elsewhere(at_ctx *c, const char *target, const char *uuid)
{
    json_t *inst = at_av_s(c->id->instance_id), *u = at_av_s(uuid);
    at_query q = {AT_TABLE_NOTES, "instance_id-uuid-index", inst, {"uuid", AT_OP_EQ, u, NULL}, 1, 1};
    at_page page = {0};
    int rc = at_store_query(c->store, &q, &page), out = 0;
    json_t *found = json_array_get(page.items, 0);
    if (rc) {
        at_reply_store_error(c, rc, "look up a note");
        out = -1;
    } else if (found && strcmp(at_item_s(found, "target_uuid") ? at_item_s(found, "target_uuid") : "", target) != 0) {
        at_reply_error(c, 409, "a note with uuid %s already exists on another record", uuid);
        out = 1;
    }
    at_page_release(&page);
    json_decref(inst);
    json_decref(u);
    return out;
}

void at_api_notes_create(at_ctx *c)
{
    static const char *const allowed[] = {"data", "is_pinned", "uuid", NULL};
    const char *target = at_api_key_param(c, "target_uuid", "target");
    json_t *body, *errors = NULL, *item = NULL, *juuid;
    char uuid[AT_UUID_LEN + 1], now[AT_TIMESTAMP_LEN + 1];
    int client_uuid = 0, rc;
    at_clause clause = {"uuid", AT_OP_NOT_EXISTS, NULL, NULL};
    at_cond cond = {&clause, 1};

    if (!target || !(body = at_body_object(c))) return;
    errors = json_object();
    item = json_object();
    at_api_check_fields(body, allowed, at_api_service_fields, errors);
    if (!json_object_get(body, "data")) json_object_set_new(errors, "data", json_string("required"));
    read_fields(body, item, errors);
    juuid = json_object_get(body, "uuid");
    if (juuid) {
        if (!at_api_string(juuid) || at_uuid_normalize(json_string_value(juuid), uuid))
            json_object_set_new(errors, "uuid", json_string("must be a UUID like 123e4567-e89b-12d3-a456-426614174000"));
        client_uuid = 1;
    } else {
        at_uuid_new(uuid);
    }
    if (json_object_size(errors)) {
        at_reply_validation(c, errors);
        errors = NULL;
        goto out;
    }
    at_api_now_text(now);
    json_object_set_new(item, "target_uuid", at_av_s(target));
    json_object_set_new(item, "uuid", at_av_s(uuid));
    json_object_set_new(item, "instance_id", at_av_s(c->id->instance_id));
    json_object_set_new(item, "owner_uuid", at_av_s(c->id->user_uuid));
    json_object_set_new(item, "owner_name", at_av_s(c->id->user_name));
    if (!json_object_get(item, "is_pinned")) json_object_set_new(item, "is_pinned", at_av_n_int(0));
    json_object_set_new(item, "version", at_av_n_int(1));
    json_object_set_new(item, "created_at", at_av_s(now));
    json_object_set_new(item, "updated_at", at_av_s(now));
    if (!at_api_fits(c, item, WHAT)) goto out;

    if (client_uuid) {
        rc = uuid_taken_elsewhere(c, target, uuid);
        if (rc) goto out;
    }
    rc = at_store_put(c->store, AT_TABLE_NOTES, item, &cond);
    if (rc == AT_ECOND) {
        answer_existing(c, target, uuid);
        goto out;
    }
    if (rc) {
        at_reply_store_error(c, rc, "create a note");
        goto out;
    }
    at_set_header(c, "Location", location(c, target, uuid));
    at_api_reply_item(c, AT_TABLE_NOTES, 201, item);
out:
    json_decref(errors);
    json_decref(item);
}

/* The uuid path parameter; a value that is not a UUID names no note (404). */
static const char *uuid_param(at_ctx *c, char out[AT_UUID_LEN + 1])
{
    const char *u = at_param(c, "uuid");
    if (!u || at_uuid_normalize(u, out)) {
        at_reply_error(c, 404, "note not found");
        return NULL;
    }
    return out;
}

void at_api_notes_get(at_ctx *c)
{
    char ubuf[AT_UUID_LEN + 1];
    const char *target = at_api_key_param(c, "target_uuid", WHAT), *uuid;
    json_t *key, *item;
    if (!target || !(uuid = uuid_param(c, ubuf))) return;
    key = note_key(target, uuid);
    item = at_api_load(c, AT_TABLE_NOTES, key, 0, WHAT);
    if (item) at_api_reply_item(c, AT_TABLE_NOTES, 200, item);
    json_decref(item);
    json_decref(key);
}

void at_api_notes_get_by_uuid(at_ctx *c)
{
    char ubuf[AT_UUID_LEN + 1];
    const char *uuid = uuid_param(c, ubuf);
    json_t *inst, *u, *found;
    at_page page = {0};
    at_query q;
    int rc;
    if (!uuid) return;
    inst = at_av_s(c->id->instance_id);
    u = at_av_s(uuid);
    memset(&q, 0, sizeof q);
    q.table = AT_TABLE_NOTES;
    q.index = "instance_id-uuid-index";
    q.pk = inst;
    q.sk = (at_clause){"uuid", AT_OP_EQ, u, NULL};
    q.forward = 1;
    q.limit = 1;
    q.flags = AT_Q_LIVE;
    rc = at_store_query(c->store, &q, &page);
    found = json_array_get(page.items, 0);
    if (rc)
        at_reply_store_error(c, rc, "look up a note");
    else if (!found)
        at_reply_error(c, 404, "note not found");
    else
        at_api_reply_item(c, AT_TABLE_NOTES, 200, found);
    at_page_release(&page);
    json_decref(inst);
    json_decref(u);
}

static int apply_patch(at_ctx *c, json_t *item, void *arg, const char **conflict)
{
    static const char *const allowed[] = {"data", "is_pinned", NULL};
    json_t *body = at_body_object(c), *errors;
    if (!body) return AT_APPLY_REPLIED;
    errors = json_object();
    at_api_check_fields(body, allowed, at_api_service_fields, errors);
    if (json_object_get(body, "uuid"))
        json_object_set_new(errors, "uuid", json_string("a note's uuid cannot change"));
    if (!json_object_size(errors) && !json_object_get(body, "data") && !json_object_get(body, "is_pinned"))
        json_object_set_new(errors, "data", json_string("send data and/or is_pinned to change"));
    read_fields(body, item, errors);
    if (json_object_size(errors)) {
        at_reply_validation(c, errors);
        return AT_APPLY_REPLIED;
    }
    json_decref(errors);
    return AT_APPLY_OK;
}

static int apply_delete(at_ctx *c, json_t *item, void *arg, const char **conflict)
{
    char now[AT_TIMESTAMP_LEN + 1];
    at_api_now_text(now);
    json_object_set_new(item, "deleted_at", at_av_s(now));
    return AT_APPLY_OK;
}

static int apply_restore(at_ctx *c, json_t *item, void *arg, const char **conflict)
{
    if (!at_item_has(item, "deleted_at")) {
        *conflict = "the note is not deleted; there is nothing to restore";
        return AT_APPLY_CONFLICT;
    }
    json_object_del(item, "deleted_at");
    return AT_APPLY_OK;
}

static void change(at_ctx *c, int (*apply)(at_ctx *, json_t *, void *, const char **),
                   unsigned load_flags, int status)
{
    char ubuf[AT_UUID_LEN + 1];
    const char *target = at_api_key_param(c, "target_uuid", WHAT), *uuid;
    at_change ch = {AT_TABLE_NOTES, WHAT, load_flags, at_api_owner_or_admin, apply, NULL, 0};
    json_t *key, *saved;
    if (!target || !(uuid = uuid_param(c, ubuf))) return;
    key = note_key(target, uuid);
    saved = at_api_change(c, key, &ch);
    if (saved) {
        if (status == 204)
            at_reply_empty(c, 204);
        else
            at_api_reply_item(c, AT_TABLE_NOTES, status, saved);
    }
    json_decref(saved);
    json_decref(key);
}

void at_api_notes_patch(at_ctx *c)
{
    change(c, apply_patch, 0, 200);
}

void at_api_notes_delete(at_ctx *c)
{
    change(c, apply_delete, 0, 204);
}

void at_api_notes_restore(at_ctx *c)
{
    change(c, apply_restore, AT_LOAD_DELETED, 200);
}

/* The pages a list answer is written from, kept until it is written. */
typedef struct raw_pages {
    at_page v[MAX_PINNED / 100 + 2];
    size_t n;
} raw_pages;

static void raw_pages_release(raw_pages *rp)
{
    for (size_t i = 0; i < rp->n; i++) at_page_release(&rp->v[i]);
    rp->n = 0;
}

/* Returns an S attribute of a packed item ("" when absent). */
static const char *raw_s(const at_raw_ref *r, const char *attr)
{
    const char *s = at_packed_s(r->p, r->n, attr, NULL);
    return s ? s : "";
}

/* Pinned notes sort newest updated_at first, then by uuid, so a cursor can name a
 * position among them by (updated_at, uuid). */
static int pinned_cmp(const void *a, const void *b)
{
    const at_raw_ref *x = a, *y = b;
    int r = strcmp(raw_s(y, "updated_at"), raw_s(x, "updated_at"));
    if (r) return r;
    return strcmp(raw_s(y, "uuid"), raw_s(x, "uuid"));
}

/* Returns 1 when item sorts after the cursor position (u, id) among pinned notes. */
static int after_position(const at_raw_ref *item, const char *u, const char *id)
{
    int r = strcmp(raw_s(item, "updated_at"), u);
    if (r) return r < 0;
    return strcmp(raw_s(item, "uuid"), id) < 0;
}

/* Reads the live pinned notes of the tenant on target (packed, in pages kept in rp)
 * into pinned, sorted. Returns how many, or -1 after answering. */
static long read_pinned(at_ctx *c, const json_t *target_av, const json_t *inst_av, raw_pages *rp,
                        at_raw_ref *pinned)
{
    json_t *one = at_av_n_int(1);
    const json_t *start = NULL;
    at_clause filter = {"instance_id", AT_OP_EQ, inst_av, NULL};
    at_query q;
    long n = 0;

    memset(&q, 0, sizeof q);
    q.table = AT_TABLE_NOTES;
    q.index = PINNED_INDEX;
    q.pk = target_av;
    q.sk = (at_clause){"is_pinned", AT_OP_EQ, one, NULL};
    q.forward = 1;
    q.limit = 100;
    q.filter = (at_cond){&filter, 1};
    q.flags = AT_Q_LIVE | AT_Q_RAW;
    while (n < MAX_PINNED && rp->n < sizeof rp->v / sizeof rp->v[0]) {
        at_page *page = &rp->v[rp->n];
        int rc;
        q.start_key = start;
        rc = at_store_query(c->store, &q, page);
        if (rc) {
            at_reply_store_error(c, rc, "list pinned notes");
            n = -1;
            break;
        }
        rp->n++;
        for (size_t i = 0; i < page->nraw && n < MAX_PINNED; i++, n++)
            pinned[n].p = at_page_raw(page, i, &pinned[n].n);
        start = page->last_key;
        if (!start) break;
    }
    json_decref(one);
    if (n > 0) qsort(pinned, (size_t)n, sizeof *pinned, pinned_cmp);
    return n;
}

void at_api_notes_list(at_ctx *c)
{
    const char *target = at_api_key_param(c, "target_uuid", "target");
    at_list_req lr;
    raw_pages rp = {.n = 0};
    at_page rest = {0};
    at_raw_ref *items = NULL, *pinned = NULL;
    json_t *target_av = NULL, *inst_av = NULL, *next = NULL, *one = NULL;
    size_t n = 0, from_pinned = 0, want;
    json_int_t phase = 0;

    if (!target) return;
    if (!at_api_list_begin(c, at_arena_printf(c->arena, "notes|%s|%s", c->id->instance_id, target), &lr))
        return;
    phase = json_integer_value(json_object_get(lr.cursor, "p"));
    if (lr.cursor && phase != 0 && phase != 1) goto bad_cursor;
    target_av = at_av_s(target);
    inst_av = at_av_s(c->id->instance_id);
    one = at_av_n_int(1);
    want = lr.limit + 1;
    items = at_arena_alloc(c->arena, want * sizeof *items);
    pinned = at_arena_alloc(c->arena, MAX_PINNED * sizeof *pinned);
    if (!items || !pinned) {
        at_reply_error(c, 500, "out of memory");
        goto out;
    }

    if (phase == 0) {
        const char *u = json_string_value(json_object_get(lr.cursor, "u"));
        const char *id = json_string_value(json_object_get(lr.cursor, "id"));
        long np;
        if (lr.cursor && (!u || !id)) goto bad_cursor;
        np = read_pinned(c, target_av, inst_av, &rp, pinned);
        if (np < 0) goto out;
        for (long i = 0; i < np && n < want; i++)
            if (!lr.cursor || after_position(&pinned[i], u, id)) items[n++] = pinned[i];
        from_pinned = n;
    }
    if (n < want) {
        at_clause filters[2] = {{"instance_id", AT_OP_EQ, inst_av, NULL},
                                {"is_pinned", AT_OP_NE, one, NULL}};
        at_query q;
        int bad = 0, rc;
        memset(&q, 0, sizeof q);
        q.table = AT_TABLE_NOTES;
        q.index = UPDATED_INDEX;
        q.pk = target_av;
        q.forward = 0;
        q.filter = (at_cond){filters, 2};
        q.flags = AT_Q_LIVE | AT_Q_RAW;
        q.limit = want - n;
        q.start_key = phase == 1 ? at_api_cursor_key(lr.cursor, &q, &bad) : NULL;
        if (bad) goto bad_cursor;
        rc = at_store_query(c->store, &q, &rest);
        if (rc) {
            at_reply_store_error(c, rc, "list notes");
            goto out;
        }
        for (size_t i = 0; i < rest.nraw; i++, n++) items[n].p = at_page_raw(&rest, i, &items[n].n);
        if (rest.nraw < q.limit && rest.last_key) /* cut short by the store's work bound */
            next = json_pack("{s:i, s:O}", "p", 1, "k", rest.last_key);
    }
    if (n > lr.limit) {
        const at_raw_ref *last = &items[lr.limit - 1];
        if (lr.limit <= from_pinned) {
            next = json_pack("{s:i, s:s, s:s}", "p", 0, "u", raw_s(last, "updated_at"), "id",
                             raw_s(last, "uuid"));
        } else {
            const at_table_def *t = at_schema_table(AT_TABLE_NOTES);
            json_t *key = at_packed_item_key(t, at_schema_index(t, UPDATED_INDEX), last->p, last->n);
            next = key ? json_pack("{s:i, s:o}", "p", 1, "k", key) : NULL;
        }
        n = lr.limit;
    }
    at_api_reply_list_raw(c, AT_TABLE_NOTES, &lr, items, n, next);
    goto out;
bad_cursor:
    at_reply_validation(c, json_pack("{s:s}", "cursor", "malformed; start again without a cursor"));
out:
    json_decref(next);
    raw_pages_release(&rp);
    at_page_release(&rest);
    json_decref(target_av);
    json_decref(inst_av);
    json_decref(one);
    at_api_list_release(&lr);
}

void at_api_notes_by_user(at_ctx *c)
{
    const char *user = at_api_key_param(c, "user_uuid", "user");
    at_list_req lr;
    json_t *owner, *inst;
    at_clause filter;
    at_query q;
    if (!user) return;
    if (!at_api_list_begin(c, at_arena_printf(c->arena, "user-notes|%s|%s", c->id->instance_id, user), &lr))
        return;
    owner = at_av_s(user);
    inst = at_av_s(c->id->instance_id);
    filter = (at_clause){"instance_id", AT_OP_EQ, inst, NULL};
    memset(&q, 0, sizeof q);
    q.table = AT_TABLE_NOTES;
    q.index = "owner_uuid-created_at-index";
    q.pk = owner;
    q.forward = 0;
    q.filter = (at_cond){&filter, 1};
    q.flags = AT_Q_LIVE;
    at_api_list_query(c, &lr, &q);
    json_decref(owner);
    json_decref(inst);
    at_api_list_release(&lr);
}
