/* Comments (SPEC §5): free-form data on a CRM record, oldest first, answering one
 * another through parent_uuid. The engine serves them from this descriptor; their own
 * code is the rule that a parent is a live comment of the same record. */
#include <string.h>

#include "api.h"
#include "actionstools/err.h"
#include "actionstools/banned.h"

/* A reply's parent must be a live comment of the same record and tenant (SPEC §5). A
 * parent deleted later leaves its replies as they are. */
static void check_parent(at_ctx *c, const at_resource *r, const json_t *old, json_t *item,
                         json_t *errors)
{
    const char *parent = at_item_s(item, "parent_uuid"), *inst;
    json_t *key, *found = NULL;
    int rc;
    if (old || !parent) return; /* set on create only */
    key = json_pack("{s:{s:s}, s:{s:s}}", "target_uuid", "S", at_param(c, "target_uuid"), "uuid",
                    "S", parent);
    rc = key ? at_store_get(c->store, r->table, key, &found) : AT_ENOMEM;
    inst = at_item_s(found, "instance_id");
    if (rc && rc != AT_ENOTFOUND)
        at_reply_store_error(c, rc, "read a parent comment");
    else if (rc || !inst || strcmp(inst, c->id->instance_id) != 0 ||
             at_item_has(found, "deleted_at"))
        json_object_set_new(errors, "parent_uuid",
                            json_string("must be the uuid of a comment of this record "
                                        "that is not deleted"));
    json_decref(found);
    json_decref(key);
}

static const at_field fields[] = {
    {"target_uuid", AT_F_STRING, AT_FF_SERVICE,
     .doc = "the CRM record the comment is on (from the path)"},
    {"data", AT_F_JSON, AT_FF_CREATE | AT_FF_PATCH | AT_FF_REQUIRED,
     .doc = "the comment: any JSON value"},
    {"parent_uuid", AT_F_UUID, AT_FF_CREATE,
     .doc = "the comment this one answers: a comment of the same record that is not deleted"},
    {NULL},
};

const at_resource at_comments = {
    .name = "comment",
    .plural = "comments",
    .table = AT_TABLE_COMMENTS,
    .pk = {AT_SRC_PATH, "target_uuid"},
    .sk = {AT_SRC_NEW_UUID, "uuid"},
    .fields = fields,
    .change = AT_PERM_OWNER,
    .remove = AT_PERM_OWNER,
    .view = {at_api_view_leading, NULL, at_api_view_hidden, 1},
    .check = check_parent,
    .doc = "comments on a CRM record, and replies to them",
};

const at_list_def at_comments_by_target[] = {
    {.index = "target_uuid-created_at-index",
     .pk = {AT_SRC_PATH, "target_uuid"},
     .forward = 1,
     .order_param = "order",
     .doc = "the record's comments, oldest first (?order=desc: newest first)"},
    {NULL},
};

const at_list_def at_comments_by_owner[] = {
    {.index = "owner_uuid-created_at-index",
     .pk = {AT_SRC_PATH, "user_uuid"},
     .forward = 0,
     .doc = "the comments the user wrote, newest first"},
    {NULL},
};
