/* What the worker (and tests) call on tasks outside a request: clearing the cached task
 * counters (the remove_counters schedule, SPEC §7). The request routes are in
 * src/api/tasks*.c and src/api/reports.c. */
#ifndef AT_TASKS_H
#define AT_TASKS_H

#include <stddef.h>

#include "actionstools/store.h"

/* Removes every item of the tasks_counters table (the cached counts of tasks; they are
 * computed again when next asked for). It reads the table page by page (a scan: this
 * is a scheduled task, never a request path) and deletes each item. *removed (may be
 * NULL) receives how many were deleted. Returns 0 or the store's AT_* error (the items
 * deleted before it stay deleted; running it again goes on). */
int at_tasks_remove_counters(at_store *s, size_t *removed /* OUT */);

#endif
