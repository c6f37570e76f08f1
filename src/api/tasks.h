/* What the files of the tasks resource share (tasks.c, tasks_list.c, tasks_counters.c,
 * reports.c). */
#ifndef AT_API_TASKS_H
#define AT_API_TASKS_H

#include <stdint.h>

#include "api.h"

/* The counters item "tasks#<instance_id>" holds the tenant's task number sequence in
 * AT_TASKS_SEQ_ATTR (atomic ADD) and, in AT_TASKS_CHANGES_ATTR, how many task changes
 * the tenant has had: cached counts computed at another count are not served. */
#define AT_TASKS_SEQ_ATTR "seq"
#define AT_TASKS_CHANGES_ATTR "changes"

/* The five statuses, in the order counters and reports show them; NULL-terminated. */
extern const char *const at_tasks_statuses[];
#define AT_TASKS_NSTATUS 5

/* Returns the position of status s in at_tasks_statuses, or -1. */
int at_tasks_status_index(const char *s);

/* Returns 1 when a task of status s (NULL: the default, open) is still to be done: not
 * done and not cancelled. */
int at_tasks_unfinished(const char *s);

/* Takes the tenant's next task number (an atomic ADD on counters "tasks#<instance_id>").
 * Returns 0 and *n (1, 2, 3...), or the store's AT_* error. */
int at_tasks_next_number(at_store *s, const char *instance_id, int64_t *n /* OUT */);

/* Reads the whole-number attribute name of a packed item (n bytes at p): 1 and *out,
 * or 0 when it is absent or not a whole number. */
int at_tasks_packed_int(const void *p, size_t n, const char *name, int64_t *out /* OUT */);

/* After a task changed (old NULL for a create): counts the change for the tenant and
 * recalculates the cached counters it touches (the tenant's, the old and the new
 * assignee's) that are there. Failures are logged; the answer is not changed. */
void at_tasks_counters_changed(at_ctx *c, const json_t *old, const json_t *item);

#endif
