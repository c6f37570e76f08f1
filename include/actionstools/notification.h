/* Notifications' write side: how the worker notifies a user (SPEC §5 "Item shapes",
 * §7). No route creates notifications; the inbox routes only read and mark them
 * (src/api/notifications.c). */
#ifndef AT_NOTIFICATION_H
#define AT_NOTIFICATION_H

#include <jansson.h>
#include <stddef.h>

#include "actionstools/store.h"

/* A notification to make. Strings are UTF-8; those marked optional may be NULL. */
typedef struct at_notification {
    const char *instance_id;  /* the tenant */
    const char *recipient;    /* the recipient's user uuid (stored as target_uuid) */
    const char *id;           /* the caller's id for this notification: one notification is
                                 made per (tenant, recipient, id), however often it is sent
                                 ("<stream SequenceNumber>:task_assigned") */
    const char *kind;         /* task_assigned, task_status_changed, comment_added,
                                 mentioned or task_reminder */
    const char *title, *body; /* optional: what the inbox shows */
    const char *subject_type; /* optional: what it is about ("task", "note"...) */
    const char *subject_uuid; /* optional: its uuid */
    const char *actor_uuid;   /* optional: who did it */
    const char *actor_name;   /* optional */
    const json_t *data;       /* optional: any JSON value (borrowed) */
} at_notification;

/* Makes the notification n once: its uuid is the name-based UUID of (tenant, recipient,
 * id), and it is written only where no item is, so a retry (the worker's delivery is
 * at least once) finds the one made first, even when both run at once. Returns 0 with
 * *created 1 when it was made now, 0 when it was there already; *item (may be NULL)
 * then receives the stored notification, a new reference the caller releases. Returns
 * AT_EINVAL with what is wrong in why (a missing or malformed field), or the store's
 * error code. */
int at_notification_create(at_store *s, const at_notification *n,
                           json_t **item /* OUT, may be NULL */, int *created /* OUT */, char *why,
                           size_t whylen);

#endif
