/* The worker's way to notify a user (notification.h): a notification item written once
 * per (tenant, recipient, the caller's id), in the form the inbox reads
 * (notifications.c). */
#include <stdio.h>
#include <string.h>

#include "api.h"
#include "actionstools/err.h"
#include "actionstools/notification.h"
#include "actionstools/uuid.h"
#include "actionstools/banned.h"

/* The namespace of notification uuids (a random UUID, fixed forever). */
#define NOTIFY_NS "8e0a3c52-6f0e-4b7d-9a51-2f3c7d1e5b90"

/* Returns the stored form of a flag (N 0/1), a new AV or NULL. */
static json_t *flag(int on)
{
    return at_av_n_int(on);
}

/* Returns 1 when s can be a key value (1 to 256 bytes, no control characters). */
static int key_ok(const char *s)
{
    size_t n = s ? strlen(s) : 0;
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)s[i] < 32 || s[i] == 127) return 0;
    return n > 0 && n <= 256;
}

/* Sets attr to the string v unless v is NULL. Returns 0 or AT_ENOMEM. */
static int set_s(json_t *item, const char *attr, const char *v)
{
    return v && json_object_set_new(item, attr, at_av_s(v)) ? AT_ENOMEM : 0;
}

/* Builds the item of n with uuid into *out. Returns 0, AT_EINVAL (data is not storable:
 * why says how) or AT_ENOMEM. */
static int notification_item(const at_notification *n, const char *uuid, json_t **out, char *why,
                             size_t whylen)
{
    char now[AT_TIMESTAMP_LEN + 1];
    json_t *item, *data = NULL;
    int rc;
    *out = NULL;
    if (n->data && !(data = at_av_from_json_why(n->data, why, whylen)))
        return why[0] ? AT_EINVAL : AT_ENOMEM;
    at_timestamp_format(at_now_us(), now);
    item = json_object();
    rc = !item || set_s(item, "target_uuid", n->recipient) || set_s(item, "uuid", uuid) ||
         set_s(item, "instance_id", n->instance_id) || set_s(item, "kind", n->kind) ||
         set_s(item, "title", n->title) || set_s(item, "body", n->body) ||
         set_s(item, "subject_type", n->subject_type) ||
         set_s(item, "subject_uuid", n->subject_uuid) || set_s(item, "actor_uuid", n->actor_uuid) ||
         set_s(item, "actor_name", n->actor_name) ||
         (data && json_object_set(item, "data", data)) ||
         json_object_set_new(item, "is_read", flag(0)) ||
         json_object_set_new(item, "is_hidden", flag(0)) ||
         json_object_set_new(item, "version", at_av_n_int(1)) || set_s(item, "created_at", now) ||
         set_s(item, "updated_at", now);
    json_decref(data);
    if (rc) {
        json_decref(item);
        return AT_ENOMEM;
    }
    *out = item;
    return 0;
}

int at_notification_create(at_store *s, const at_notification *n, json_t **item, int *created,
                           char *why, size_t whylen)
{
    at_clause nx = {"uuid", AT_OP_NOT_EXISTS, NULL, NULL};
    at_cond cond = {&nx, 1};
    const char *const *k = at_model_field(&at_notifications, "kind")->choices;
    char uuid[AT_UUID_LEN + 1];
    json_t *it = NULL, *key;
    at_buf name;
    int rc;

    if (item) *item = NULL;
    *created = 0;
    why[0] = '\0';
    for (; *k && (!n->kind || strcmp(*k, n->kind) != 0); k++) {
    }
    if (!key_ok(n->instance_id) || !key_ok(n->recipient) || !n->id || !*n->id ||
        strlen(n->id) > 1024 || !*k) {
        snprintf(why, whylen, "%s",
                 !key_ok(n->instance_id) ? "instance_id: 1 to 256 bytes, no control characters"
                 : !key_ok(n->recipient) ? "recipient: 1 to 256 bytes, no control characters"
                 : !*k                   ? "kind: not one of the notification kinds"
                                         : "id: 1 to 1024 bytes");
        return AT_EINVAL;
    }
    /* The uuid names (tenant, recipient, id): NUL-separated, as none of them holds one. */
    at_buf_init(&name, 4096);
    rc = at_buf_adds(&name, n->instance_id) || at_buf_addc(&name, '\0') ||
                 at_buf_adds(&name, n->recipient) || at_buf_addc(&name, '\0') ||
                 at_buf_adds(&name, n->id)
             ? AT_ENOMEM
             : at_uuid_from_name(NOTIFY_NS, name.ptr, name.len, uuid);
    at_buf_release(&name);
    if (rc) return rc;
    if ((rc = notification_item(n, uuid, &it, why, whylen))) return rc;
    rc = at_store_put(s, AT_TABLE_NOTIFICATIONS, it, &cond);
    if (rc == 0) {
        *created = 1;
    } else if (rc == AT_ECOND) { /* made before: answer that one */
        json_decref(it);
        it = NULL;
        key = json_pack("{s:{s:s}, s:{s:s}}", "target_uuid", "S", n->recipient, "uuid", "S", uuid);
        rc = key ? at_store_get(s, AT_TABLE_NOTIFICATIONS, key, &it) : AT_ENOMEM;
        json_decref(key);
    }
    if (rc == AT_EINVAL && !why[0])
        snprintf(why, whylen, "the store refused the item (over 400 KB?)");
    if (!rc && item) *item = json_incref(it);
    json_decref(it);
    return rc;
}
