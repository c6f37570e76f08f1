/* Handlers of the route table and the helpers every resource shares: turning items
 * into answers, validating bodies, loading with tenancy checks, read-modify-write with
 * versions and If-Match, and cursor-paged lists. */
#ifndef AT_API_H
#define AT_API_H

#include <jansson.h>

#include "actionstools/av.h"
#include "actionstools/handler.h"
#include "actionstools/store.h"
#include "actionstools/timeutil.h"

/* ---- handlers (one file per resource) ---- */
void at_api_health(at_ctx *c);
void at_api_setup_install(at_ctx *c);
void at_api_notes_create(at_ctx *c);
void at_api_notes_list(at_ctx *c);
void at_api_notes_get(at_ctx *c);
void at_api_notes_get_by_uuid(at_ctx *c);
void at_api_notes_patch(at_ctx *c);
void at_api_notes_delete(at_ctx *c);
void at_api_notes_restore(at_ctx *c);
void at_api_notes_by_user(at_ctx *c);

/* ---- items as answers ---- */

/* The most items a list page may ask for (?limit=). */
#define AT_API_MAX_LIMIT 100

/* The largest answer a list may build (100 items of up to 400 KB). */
#define AT_API_MAX_ANSWER (64u * 1024 * 1024)

/* Appends to b the JSON text of a stored item of table t as answers show it: key
 * fields first, then the other attributes by name, each converted from its AV; the
 * 0/1 flags (is_pinned, is_read, is_hidden) as booleans (false when an older item lacks
 * one its table has); version 0 when an older item has none; deleted_at left out; a
 * malformed attribute left out. Returns 0 or at_buf's errors. */
int at_api_write_view(at_buf *b, at_table_id t, const json_t *item);

/* A packed item of a raw page (store.h AT_Q_RAW), borrowed from the page. */
typedef struct at_raw_ref {
    const unsigned char *p;
    size_t n;
} at_raw_ref;

/* Same as at_api_write_view for a packed item, byte for byte. Returns 0, AT_EINVAL
 * (malformed packed bytes) or at_buf's errors. */
int at_api_write_view_raw(at_buf *b, at_table_id t, const at_raw_ref *item);

/* Answers status with the item's view and its version as ETag. */
void at_api_reply_item(at_ctx *c, at_table_id t, int status, const json_t *item);

/* Returns the item's version (0 for items written before versions existed). */
int64_t at_api_version(const json_t *item);

/* ---- request values ---- */

/* Returns the path parameter name when it is a usable key value (1..256 bytes, no
 * control characters), else answers 404 and returns NULL. */
const char *at_api_key_param(at_ctx *c, const char *name, const char *what);

/* Returns the text of v when it is a string without an embedded NUL (usable as an
 * identifier), else NULL. Borrowed. */
const char *at_api_string(const json_t *v);

/* Checks body members: members in service_set get "set by the service; remove it",
 * members in neither list get "unknown field". Adds to errors (an object). */
void at_api_check_fields(const json_t *body, const char *const *allowed,
                         const char *const *service_set, json_t *errors);

/* The fields the service sets on every item; a body may not send them. */
extern const char *const at_api_service_fields[];

/* Converts the JSON payload value v into an AV, adding an error for field to errors
 * when DynamoDB would refuse it (too deep, a number out of range). Returns the new AV
 * or NULL. */
json_t *at_api_payload(const json_t *v, const char *field, json_t *errors);

/* Writes the current time in the item's format into out (the datetime text). */
void at_api_now_text(char out[AT_TIMESTAMP_LEN + 1]);

/* Returns 1 when the item is at most DynamoDB's 400 KB, else answers 413 and returns 0. */
int at_api_fits(at_ctx *c, const json_t *item, const char *what);

/* ---- loading and changing one item ---- */

enum {
    AT_LOAD_DELETED = 1u << 0 /* soft-deleted items are found too (restore) */
};

/* Reads the item at key, answering 404 when it is absent, of another tenant, or
 * soft-deleted (unless AT_LOAD_DELETED), and 503/500 on storage errors. Returns the
 * item (new reference) or NULL after answering. what names it in messages ("note"). */
json_t *at_api_load(at_ctx *c, at_table_id t, const json_t *key, unsigned flags, const char *what);

/* Returns 1 when the caller owns the item (owner_uuid) or is CRM_ADMIN; otherwise
 * answers 403 with a message naming the rule and returns 0. */
int at_api_owner_or_admin(at_ctx *c, const json_t *item, const char *what);

/* Outcomes of an at_change apply step. */
enum { AT_APPLY_OK = 0, AT_APPLY_REPLIED = 1, AT_APPLY_CONFLICT = 2 };

/* A read-modify-write of one item, in SPEC §4's order of refusals: load (404),
 * authorize (403), apply on a copy (400 from validation), If-Match (412), the apply's
 * conflict if any (409), then a write conditioned on the version read (retried when
 * someone else wrote in between). version and updated_at are moved by the helper. */
typedef struct at_change {
    at_table_id table;
    const char *what; /* "note" */
    unsigned load_flags;
    /* Returns 1 to go on, 0 after answering (403). */
    int (*authorize)(at_ctx *c, const json_t *item, const char *what);
    /* Changes item in place. Returns AT_APPLY_OK, AT_APPLY_REPLIED (answered, e.g. 400)
     * or AT_APPLY_CONFLICT with a message in *conflict (answered 409 after If-Match). */
    int (*apply)(at_ctx *c, json_t *item, void *arg, const char **conflict);
    void *arg;
    int numeric_timestamps; /* updated_at as epoch seconds N (tasks) */
} at_change;

/* Runs the change. Returns the saved item (new reference) or NULL after answering. */
json_t *at_api_change(at_ctx *c, const json_t *key, const at_change *ch);

/* ---- lists ---- */

/* The limit and cursor of a list request. */
typedef struct at_list_req {
    size_t limit;     /* 1..100, default 25 */
    json_t *cursor;   /* the decoded cursor payload, or NULL on the first page */
    const char *scope;
} at_list_req;

/* Reads ?limit= and ?cursor= for the list named by scope (a cursor of another scope
 * is refused). Returns 1, or 0 after answering 400. Release with at_api_list_release. */
int at_api_list_begin(at_ctx *c, const char *scope, at_list_req *lr /* OUT */);
void at_api_list_release(at_list_req *lr);

/* Answers {"items": views of items of table t, "next_cursor": cursor of next (NULL:
 * null)}. items and next are borrowed. */
void at_api_reply_list(at_ctx *c, at_table_id t, const at_list_req *lr, const json_t *items,
                       const json_t *next);

/* Answers {"items": views of the packed items, "next_cursor": cursor of next (NULL:
 * null)}, written straight from the packed form. items and next are borrowed. */
void at_api_reply_list_raw(at_ctx *c, at_table_id t, const at_list_req *lr, const at_raw_ref *items,
                           size_t n, const json_t *next);

/* Returns the start key held in a cursor payload's "k" after checking it is a key of
 * the query's table/index whose partition key equals pk; NULL when there is none.
 * Sets *bad when the cursor holds something else. Borrowed from the payload. */
const json_t *at_api_cursor_key(const json_t *payload, const at_query *q, int *bad);

/* A one-query list: runs q (start key from the cursor, limit+1 to learn whether more
 * follows) and answers the page, written from packed items; a page the store's work
 * bound cut short answers what it has and a cursor to go on. q->limit, q->start_key
 * and AT_Q_RAW are set here. */
void at_api_list_query(at_ctx *c, at_list_req *lr, at_query *q);

#endif
