/* Notes (SPEC §5): free-form data attached to a CRM record. The engine serves them from
 * this descriptor; their own code is the record's list, pinned notes first. */
#include <string.h>

#include "api.h"
#include "actionstools/err.h"
#include "actionstools/banned.h"

static void list_pinned_first(at_ctx *c, const at_resource *r, const at_list_def *l);

static const at_field fields[] = {
    {"target_uuid", AT_F_STRING, AT_FF_SERVICE, .doc = "the CRM record the note is attached to (from the path)"},
    {"data", AT_F_JSON, AT_FF_CREATE | AT_FF_PATCH | AT_FF_REQUIRED, .doc = "the note: any JSON value"},
    {"is_pinned", AT_F_FLAG, AT_FF_CREATE | AT_FF_PATCH, .def = "false",
     .doc = "pinned notes come first in the record's list"},
    {NULL},
};

static const char *const flags[] = {"is_pinned", NULL};

const at_resource at_notes = {
    .name = "note",
    .plural = "notes",
    .table = AT_TABLE_NOTES,
    .pk = {AT_SRC_PATH, "target_uuid"},
    .sk = {AT_SRC_NEW_UUID, "uuid"},
    .uuid_index = "instance_id-uuid-index",
    .fields = fields,
    .change = AT_PERM_OWNER,
    .remove = AT_PERM_OWNER,
    .view = {at_api_view_leading, flags, at_api_view_hidden, 1},
    .doc = "notes attached to a CRM record",
};

const at_list_def at_notes_by_target[] = {
    {.index = "target_uuid-updated_at-index", .pk = {AT_SRC_PATH, "target_uuid"}, .forward = 0,
     .index2 = "target_uuid-is_pinned-index", .run = list_pinned_first,
     .doc = "pinned notes first, then the others; each newest updated_at first"},
    {NULL},
};

const at_list_def at_notes_by_owner[] = {
    {.index = "owner_uuid-created_at-index", .pk = {AT_SRC_PATH, "user_uuid"}, .forward = 0,
     .doc = "the notes the user wrote, newest first"},
    {NULL},
};

/* ---- the record's list: pinned notes first (docs/decisions.md, "Pinned notes") ----
 *
 * Phase 0 gives the pinned notes, phase 1 the others, both newest updated_at first,
 * both keyed for cursors on target_uuid-updated_at-index. The pinned ones are a small
 * set read whole from the pinned index when they are few (nearly always), else paged
 * through the updated_at index filtered on is_pinned, as phase 1 pages the others. */

/* Returns the stored form of is_pinned true (a new AV), or NULL when out of memory. */
static json_t *pinned(void)
{
    json_t *av = NULL;
    char why[64];
    at_model_field_value(at_model_field(&at_notes, "is_pinned"), json_true(), &av, why, sizeof why);
    return av;
}

/* Sets the list's is_pinned filter: EQ true (pinned only) or NE true (the others, and
 * notes written before is_pinned existed). Returns 0 or an AT_* code. */
static int pinned_filter(at_list_query *lq, at_op op)
{
    size_t n = lq->q.filter.n;
    if (n && strcmp(lq->filters[n - 1].attr, "is_pinned") == 0) {
        lq->filters[n - 1].op = op;
        return 0;
    }
    return at_api_list_query_filter(lq, "is_pinned", op, pinned());
}

static void list_pinned_first(at_ctx *c, const at_resource *r, const at_list_def *l)
{
    at_list_query lq;
    at_pager p;
    int rc;
    if (!at_api_list_query_init(c, r, l, &lq)) return;
    if (at_pager_begin(&p, c, r, lq.scope, 2)) {
        if (at_pager_phase(&p) == 0) {
            if ((rc = pinned_filter(&lq, AT_OP_EQ))) {
                at_reply_error(c, 500, "cannot list notes (%s)", at_strerror(rc));
                p.failed = p.done = 1;
            } else {
                at_pager_small_set(&p, 0, &lq, l->index2, "is_pinned", lq.filters[lq.q.filter.n - 1].value);
            }
        }
        if (!p.done && (rc = pinned_filter(&lq, AT_OP_NE))) {
            at_reply_error(c, 500, "cannot list notes (%s)", at_strerror(rc));
            p.failed = p.done = 1;
        }
        at_pager_query(&p, 1, &lq.q);
    }
    at_pager_finish(&p);
    at_api_list_query_release(&lq);
}
