/* Notifications (SPEC §5): a user's inbox. target_uuid is the recipient's user uuid, so
 * an inbox is one partition of every index of the table; the caller reads and marks only
 * their own (the key comes from their identity, and items of another tenant under the
 * same user uuid are filtered out). The engine serves the item routes from this
 * descriptor; the resource's own code is the inbox list (unread ones read whole from
 * the is_read index), the unread count and mark-all-read. The worker's way in is
 * notify.c. */
#include <stdint.h>
#include <string.h>

#include "api.h"
#include "actionstools/err.h"
#include "actionstools/banned.h"

#define UNREAD_INDEX "target_uuid-is_read-index"

/* The unread count stops counting past this many (a badge shows "999+"); reading at
 * most COUNT_ROUNDS store answers (DynamoDB: 1 MB each). */
#define UNREAD_CAP 999
#define COUNT_ROUNDS 8

/* mark-all-read changes at most this many notifications per request (one write each);
 * the answer says "more": true when others are left. */
#define MARK_BATCH 100

static void inbox(at_ctx *c, const at_resource *r, const at_list_def *l);

static const char *const kinds[] = {"task_assigned", "task_status_changed", "comment_added",
                                    "mentioned",     "task_reminder",       NULL};

static const at_field fields[] = {
    {"target_uuid", AT_F_STRING, AT_FF_SERVICE, .doc = "the recipient's user uuid"},
    {"kind", AT_F_STRING, AT_FF_SERVICE, .choices = kinds, .doc = "what happened"},
    {"title", AT_F_STRING, AT_FF_SERVICE, .doc = "a line to show"},
    {"body", AT_F_STRING, AT_FF_SERVICE, .doc = "more to show"},
    {"subject_type", AT_F_STRING, AT_FF_SERVICE, .doc = "what it is about: task, note, comment..."},
    {"subject_uuid", AT_F_STRING, AT_FF_SERVICE, .doc = "the uuid of what it is about"},
    {"actor_uuid", AT_F_STRING, AT_FF_SERVICE, .doc = "who did it"},
    {"actor_name", AT_F_STRING, AT_FF_SERVICE, .doc = "their name"},
    {"data", AT_F_JSON, AT_FF_SERVICE, .doc = "anything else: any JSON value"},
    {"is_read", AT_F_FLAG, AT_FF_PATCH, .def = "false", .doc = "read by the recipient"},
    {"is_hidden", AT_F_FLAG, AT_FF_PATCH, .def = "false",
     .doc = "hidden from the inbox (?include_hidden=true shows it)"},
    {NULL},
};

static const char *const flags[] = {"is_read", "is_hidden", NULL};

const at_resource at_notifications = {
    .name = "notification",
    .plural = "notifications",
    .table = AT_TABLE_NOTIFICATIONS,
    .pk = {AT_SRC_USER, NULL},
    .sk = {AT_SRC_NEW_UUID, "uuid"},
    .fields = fields,
    .change = AT_PERM_ANY, /* the key is the caller's own inbox */
    .remove = AT_PERM_ANY,
    .view = {at_api_view_leading, flags, at_api_view_hidden, 1},
    .doc = "the caller's notifications",
};

static const at_list_filter by_read[] = {{"is_read", "is_read", AT_OP_EQ}, {NULL}};

const at_list_def at_notifications_inbox[] = {
    {.index = "target_uuid-created_at-index",
     .pk = {AT_SRC_USER, NULL},
     .forward = 0,
     .filters = by_read,
     .index2 = UNREAD_INDEX,
     .run = inbox,
     .doc = "your notifications, newest first; ?is_read=true|false; hidden ones only with "
            "?include_hidden=true"},
    {NULL},
};

/* Returns the stored form of a flag (N 0/1), a new AV or NULL. */
static json_t *flag(int on)
{
    return at_av_n_int(on);
}

/* ?is_read=false is the unread set, read whole from the is_read index when small (the
 * usual inbox); other lists page through the created_at index, filtered. */
static void inbox(at_ctx *c, const at_resource *r, const at_list_def *l)
{
    const char *hidden = at_query_param(c, "include_hidden"), *read = at_query_param(c, "is_read");
    json_t *zero = NULL;
    at_list_query lq;
    at_pager p;
    int rc = 0;
    if (hidden && strcmp(hidden, "true") != 0 && strcmp(hidden, "false") != 0) {
        at_reply_validation(c, json_pack("{s:s}", "include_hidden", "must be true or false"));
        return;
    }
    if (!at_api_list_query_init(c, r, l, &lq)) return;
    if (!hidden || strcmp(hidden, "true") != 0)
        rc = at_api_list_query_filter(&lq, "is_hidden", AT_OP_NE, flag(1));
    if (!rc && hidden) rc = at_api_list_query_scope(c, &lq, "include_hidden", hidden);
    if (!rc && !(zero = flag(0))) rc = AT_ENOMEM;
    if (rc) {
        at_reply_error(c, 500, "cannot list notifications (%s)", at_strerror(rc));
    } else {
        if (at_pager_begin(&p, c, r, lq.scope, 1)) {
            if (read && strcmp(read, "false") == 0)
                at_pager_small_set(&p, 0, &lq, l->index2, "is_read", zero);
            else
                at_pager_query(&p, 0, &lq.q);
        }
        at_pager_finish(&p);
    }
    json_decref(zero);
    at_api_list_query_release(&lq);
}

/* The caller's unread notifications in the is_read index: the tenant's, live. */
typedef struct unread_query {
    at_query q;
    at_clause f[2];
    json_t *user, *zero, *one, *inst;
} unread_query;

static int unread_init(at_ctx *c, unread_query *u, int skip_hidden)
{
    memset(u, 0, sizeof *u);
    u->user = at_av_s(c->id->user_uuid);
    u->zero = flag(0);
    u->one = flag(1);
    u->inst = at_av_s(c->id->instance_id);
    if (!u->user || !u->zero || !u->one || !u->inst) return AT_ENOMEM;
    u->f[0] = (at_clause){"instance_id", AT_OP_EQ, u->inst, NULL};
    u->f[1] = (at_clause){"is_hidden", AT_OP_NE, u->one, NULL};
    u->q.table = AT_TABLE_NOTIFICATIONS;
    u->q.index = UNREAD_INDEX;
    u->q.pk = u->user;
    u->q.sk = (at_clause){"is_read", AT_OP_EQ, u->zero, NULL};
    u->q.forward = 1;
    u->q.filter = (at_cond){u->f, skip_hidden ? 2 : 1};
    u->q.flags = AT_Q_LIVE;
    return 0;
}

static void unread_release(unread_query *u)
{
    json_decref(u->user);
    json_decref(u->zero);
    json_decref(u->one);
    json_decref(u->inst);
}

/* Answers {"<name>": n}, with "more": true when more were left uncounted or unchanged. */
static void reply_count(at_ctx *c, const char *name, size_t n, int more)
{
    json_t *b = json_pack("{s:I}", name, (json_int_t)n);
    if (b && more) json_object_set_new(b, "more", json_true());
    if (!b)
        at_reply_error(c, 500, "out of memory");
    else
        at_reply_json(c, 200, b);
}

static const at_doc_param inbox_params[] = {
    {"include_hidden", "{\"type\": \"boolean\", \"default\": false}",
     "true: the hidden notifications too (they are left out otherwise)"},
    {NULL},
};

const at_route_doc at_notifications_inbox_doc = {
    .answer = "a page of your notifications",
    .query = inbox_params,
};

const at_route_doc at_notifications_unread_count_doc = {
    .answer =
        "how many of your notifications are unread, hidden ones left out; past 999 it answers 999 "
        "and \"more\": true",
    .schema = "{\"type\": \"object\", \"required\": [\"unread\"], \"properties\": {"
              "\"unread\": {\"type\": \"integer\", \"minimum\": 0, \"maximum\": 999}, "
              "\"more\": {\"type\": \"boolean\", \"description\": \"there are more unread than "
              "unread says "
              "(present only then)\"}}}",
    .store = 1,
};

const at_route_doc at_notifications_mark_all_read_doc = {
    .answer = "marks up to 100 of your unread notifications read (hidden ones too) and answers how "
              "many it "
              "changed; \"more\": true when unread ones are left: call again",
    .schema = "{\"type\": \"object\", \"required\": [\"updated\"], \"properties\": {"
              "\"updated\": {\"type\": \"integer\", \"minimum\": 0, \"maximum\": 100}, "
              "\"more\": {\"type\": \"boolean\", \"description\": \"unread notifications are left "
              "(present "
              "only then)\"}}}",
    .store = 1,
};

/* GET /notifications/unread-count: a count in the is_read index (DynamoDB's Select
 * COUNT: no item comes back), hidden ones left out, up to UNREAD_CAP. */
void at_notifications_unread_count(at_ctx *c)
{
    unread_query u;
    json_t *start = NULL;
    size_t total = 0;
    int rc = unread_init(c, &u, 1);
    u.q.flags |= AT_Q_COUNT;
    u.q.limit = UNREAD_CAP + 1;
    for (int round = 0; !rc && round < COUNT_ROUNDS; round++) {
        at_page page = {0};
        u.q.start_key = start;
        rc = at_store_query(c->store, &u.q, &page);
        total += page.count;
        json_decref(start);
        start = rc ? NULL : json_incref(page.last_key);
        at_page_release(&page);
        if (!start || total > UNREAD_CAP) break;
    }
    if (rc)
        at_reply_store_error(c, rc, "count unread notifications");
    else
        reply_count(c, "unread", total > UNREAD_CAP ? UNREAD_CAP : total,
                    total > UNREAD_CAP || start != NULL);
    json_decref(start);
    unread_release(&u);
}

/* Marks one unread notification read: version + 1, updated_at now; only if it is
 * still unread and of the tenant. Returns 1 when it changed, 0 when it did not (someone
 * else marked it first, or its version cannot move), or an AT_* error. */
static int mark_read(at_ctx *c, const unread_query *u, const json_t *item)
{
    char now[AT_TIMESTAMP_LEN + 1];
    json_t *key = at_schema_item_key(at_schema_table(AT_TABLE_NOTIFICATIONS), NULL, item),
           *max = at_av_n_int(INT64_MAX);
    json_t *set = json_object();
    at_clause cl[3] = {{"is_read", AT_OP_EQ, u->zero, NULL},
                       {"instance_id", AT_OP_EQ, u->inst, NULL},
                       {"version", AT_OP_NE, max, NULL}};
    at_cond cond = {cl, 3};
    at_update up = {.set = set, .add_attr = "version", .add_value = 1};
    int rc;
    at_timestamp_format(at_now_us(), now);
    rc = !key || !max || !set || json_object_set(set, "is_read", u->one) ||
                 json_object_set_new(set, "updated_at", at_av_s(now))
             ? AT_ENOMEM
             : at_store_update(c->store, AT_TABLE_NOTIFICATIONS, key, &up, &cond, NULL);
    json_decref(key);
    json_decref(max);
    json_decref(set);
    if (rc == AT_ECOND || rc == AT_EINVAL) return 0; /* EINVAL: a version that is not a number */
    return rc ? rc : 1;
}

/* POST /notifications/mark-all-read: one page of the caller's unread notifications
 * (hidden ones too), each marked read by a conditional update; bounded by MARK_BATCH
 * writes per request. */
void at_notifications_mark_all_read(at_ctx *c)
{
    unread_query u;
    at_page page = {0};
    size_t n = 0, changed = 0;
    int rc = unread_init(c, &u, 0);
    u.q.limit = MARK_BATCH + 1;
    if (!rc) rc = at_store_query(c->store, &u.q, &page);
    n = json_array_size(page.items);
    for (size_t i = 0; !rc && i < n && i < MARK_BATCH; i++) {
        int r = mark_read(c, &u, json_array_get(page.items, i));
        if (r < 0)
            rc = r;
        else
            changed += (size_t)r;
    }
    if (rc)
        at_reply_store_error(c, rc, "mark notifications read");
    else /* more: past the batch, or the store stopped the page at its work bound */
        reply_count(c, "updated", changed, n > MARK_BATCH || (page.last_key && n < u.q.limit));
    at_page_release(&page);
    unread_release(&u);
}
