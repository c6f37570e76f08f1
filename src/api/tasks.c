/* Tasks (SPEC §5, §6): the tenant's to-dos, keyed by (instance_id, uuid), with epoch
 * timestamps and a number per tenant (item_number: 1, 2, 3... from the counters table).
 * The engine serves the item routes from this descriptor; the resource's own code is
 * the rules across fields (completed_at, the assignee's e-mail, a target id that can be
 * a path), the numbering, and what follows a change (the cached counters,
 * tasks_counters.c). The lists are tasks_list.c, the reports reports.c. */
#include <stdint.h>
#include <string.h>

#include "api.h"
#include "tasks.h"
#include "actionstools/err.h"
#include "actionstools/packed.h"
#include "actionstools/banned.h"

const char *const at_tasks_statuses[] = {"open", "in_progress", "blocked",
                                         "done", "cancelled",   NULL};
static const char *const priorities[] = {"low", "normal", "high", "urgent", NULL};

/* The latest epoch second a due_at or remind_at may name: 9999-12-31T23:59:59Z. */
#define EPOCH_MAX INT64_C(253402300799)

static const at_field fields[] = {
    {"title", AT_F_STRING, AT_FF_CREATE | AT_FF_PATCH | AT_FF_REQUIRED, 1, 500,
     .doc = "what is to be done, 1 to 500 characters"},
    {"description", AT_F_STRING, AT_FF_CREATE | AT_FF_PATCH | AT_FF_NULLABLE, 0, 65536,
     .doc = "more about it, up to 65,536 characters"},
    {"status", AT_F_STRING, AT_FF_CREATE | AT_FF_PATCH, .choices = at_tasks_statuses,
     .def = "\"open\"",
     .doc = "open, in_progress, blocked, done or cancelled; moving to done sets completed_at, "
            "moving away clears it"},
    {"priority", AT_F_STRING, AT_FF_CREATE | AT_FF_PATCH, .choices = priorities,
     .def = "\"normal\"", .doc = "low, normal, high or urgent"},
    {"assignee_uuid", AT_F_UUID, AT_FF_CREATE | AT_FF_PATCH | AT_FF_NULLABLE,
     .doc = "the user it is assigned to (they may change it too); null: nobody"},
    {"assignee_name", AT_F_STRING, AT_FF_CREATE | AT_FF_PATCH | AT_FF_NULLABLE, 1, 256,
     .doc = "their name, 1 to 256 characters (?assignee_name= lists by its beginning)"},
    {"assignee_email", AT_F_STRING, AT_FF_CREATE | AT_FF_PATCH | AT_FF_NULLABLE, 3, 320,
     .doc = "their e-mail address (name@host)"},
    {"target_uuid", AT_F_STRING, AT_FF_CREATE | AT_FF_PATCH | AT_FF_NULLABLE, 1, 256,
     .doc = "the CRM record it is about: an id of 1 to 256 bytes without control characters"},
    {"due_at", AT_F_INT, AT_FF_CREATE | AT_FF_PATCH | AT_FF_NULLABLE, 0, EPOCH_MAX,
     .doc = "when it is due, epoch seconds; past due and not done or cancelled is overdue"},
    {"remind_at", AT_F_INT, AT_FF_CREATE | AT_FF_PATCH | AT_FF_NULLABLE, 0, EPOCH_MAX,
     .doc = "when the assignee is reminded, epoch seconds"},
    {"data", AT_F_JSON, AT_FF_CREATE | AT_FF_PATCH, .doc = "anything else: any JSON value"},
    {"item_number", AT_F_INT, AT_FF_SERVICE, .doc = "the task's number in the tenant: 1, 2, 3..."},
    {"owner_uuid", AT_F_STRING, AT_FF_SERVICE, .doc = "who created it (the token's sub)"},
    {"created_by", AT_F_STRING, AT_FF_SERVICE, .doc = "who created it (the token's sub)"},
    {"completed_at", AT_F_INT, AT_FF_SERVICE, .doc = "when it moved to done, epoch seconds"},
    {NULL},
};

/* Returns 1 when attr is in item and is new (absent from old, or different). */
static int changed(const json_t *old, const json_t *item, const char *attr)
{
    const json_t *v = json_object_get(item, attr);
    return v && !(old && json_equal(v, json_object_get(old, attr)));
}

/* Returns 1 when s is name@host: one '@' with text before and after, no spaces or
 * control characters. */
static int email_ok(const char *s)
{
    const char *at = s ? strchr(s, '@') : NULL;
    if (!at || at == s || !at[1] || strchr(at + 1, '@')) return 0;
    for (; *s; s++)
        if ((unsigned char)*s <= ' ' || *s == 127) return 0;
    return 1;
}

/* Returns 1 when a target id can be a path segment of /targets/{t}/tasks: 1 to 256
 * bytes without control characters. */
static int target_ok(const char *s)
{
    size_t n = s ? strlen(s) : 0;
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)s[i] < 32 || s[i] == 127) return 0;
    return n >= 1 && n <= 256;
}

/* The rules across fields (SPEC §5): completed_at follows the status (set when a task
 * moves to done, removed when it moves away); an e-mail address is name@host; a target
 * id can be used in a path. Stored values from elsewhere are checked only when a
 * request changes them. */
static void check_task(at_ctx *c, const at_resource *r, const json_t *old, json_t *item,
                       json_t *errors)
{
    const char *status = at_item_s(item, "status"), *was = at_item_s(old, "status");
    int done = status && strcmp(status, "done") == 0;
    if (changed(old, item, "assignee_email") && !email_ok(at_item_s(item, "assignee_email")))
        json_object_set_new(errors, "assignee_email",
                            json_string("must be an e-mail address, like ann@example.com"));
    if (changed(old, item, "target_uuid") && !target_ok(at_item_s(item, "target_uuid")))
        json_object_set_new(errors, "target_uuid",
                            json_string("must be 1 to 256 bytes without control characters"));
    if (done && !(was && strcmp(was, "done") == 0 && at_item_has(item, "completed_at")))
        json_object_set_new(item, "completed_at", at_av_n_int(at_now_us() / 1000000));
    else if (!done)
        json_object_del(item, "completed_at");
}

/* Returns 1 when the create's client uuid names a task there already (the create is a
 * retry, or will be refused): such a create takes no number. */
static int known_uuid(at_ctx *c, const at_resource *r, const json_t *item)
{
    json_t *key, *found = NULL;
    int rc;
    if (!json_object_get(c->body, "uuid")) return 0;
    key = at_schema_item_key(at_schema_table(r->table), NULL, item);
    rc = key ? at_store_get(c->store, r->table, key, &found) : AT_ENOMEM;
    json_decref(key);
    json_decref(found);
    return rc == 0;
}

/* Numbers a new task: created_by from the identity, and item_number the tenant's next
 * (an atomic ADD on counters "tasks#<instance_id>"). Returns 1, or 0 after answering. */
static int number_task(at_ctx *c, const at_resource *r, json_t *item)
{
    int64_t n = 0;
    int rc;
    if (json_object_set_new(item, "created_by", at_av_s(c->id->user_uuid))) {
        at_reply_error(c, 500, "out of memory");
        return 0;
    }
    if (known_uuid(c, r, item)) return 1; /* its put answers: 200 for a retry, else 409 */
    rc = at_tasks_next_number(c->store, c->id->instance_id, &n);
    if (!rc && json_object_set_new(item, "item_number", at_av_n_int(n))) rc = AT_ENOMEM;
    if (rc) {
        at_reply_store_error(c, rc, "number a task");
        return 0;
    }
    return 1;
}

int at_tasks_next_number(at_store *s, const char *instance_id, int64_t *n)
{
    json_t *key = json_pack("{s:{s:s+}}", "counter_seq_key", "S", "tasks#", instance_id),
           *it = NULL;
    at_update up = {.add_attr = AT_TASKS_SEQ_ATTR, .add_value = 1};
    int rc = key ? at_store_update(s, AT_TABLE_COUNTERS, key, &up, NULL, &it) : AT_ENOMEM;
    *n = 0;
    if (!rc && (!at_item_n_int(it, AT_TASKS_SEQ_ATTR, n) || *n < 1)) rc = AT_EINVAL;
    json_decref(it);
    json_decref(key);
    return rc;
}

int at_tasks_status_index(const char *s)
{
    for (int i = 0; s && at_tasks_statuses[i]; i++)
        if (strcmp(at_tasks_statuses[i], s) == 0) return i;
    return -1;
}

int at_tasks_unfinished(const char *s)
{
    return !s || (strcmp(s, "done") != 0 && strcmp(s, "cancelled") != 0);
}

int at_tasks_packed_int(const void *p, size_t n, const char *name, int64_t *out)
{
    at_packed_val v;
    const char *text;
    *out = 0;
    if (at_packed_get(p, n, name, &v) != 1 || v.p[0] != 'N' || !(text = at_packed_text(&v, NULL)))
        return 0;
    return at_av_number_int64(text, out);
}

static void task_changed(at_ctx *c, const at_resource *r, const json_t *old, const json_t *item)
{
    at_tasks_counters_changed(c, old, item);
}

const at_resource at_tasks = {
    .name = "task",
    .plural = "tasks",
    .table = AT_TABLE_TASKS,
    .pk = {AT_SRC_TENANT, NULL},
    .sk = {AT_SRC_NEW_UUID, "uuid"},
    .uuid_index = "instance_id-uuid-index",
    .fields = fields,
    .epoch_timestamps = 1,
    .change = AT_PERM_OWNER_ASSIGNEE,
    .remove = AT_PERM_OWNER,
    .view = {at_api_view_leading, NULL, at_api_view_hidden, 1},
    .check = check_task,
    .on_create = number_task,
    .on_change = task_changed,
    .doc = "the tenant's tasks",
};
