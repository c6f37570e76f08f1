/* The API layer: the route handlers of the generic resource engine (engine.c), the
 * resources' descriptors (one file each: notes.c...), and the helpers they share:
 * answers (item.c), read-modify-write with versions and If-Match (item.c), client
 * uuids (claim.c) and cursor-paged lists (list.c). */
#ifndef AT_API_H
#define AT_API_H

#include <jansson.h>

#include "actionstools/av.h"
#include "actionstools/handler.h"
#include "actionstools/model.h"
#include "actionstools/store.h"
#include "actionstools/timeutil.h"

/* ---- handlers ---- */
void at_api_health(at_ctx *c);
void at_api_setup_install(at_ctx *c);
extern const at_route_doc at_api_health_doc, at_api_setup_install_doc;

/* The documentation routes (docs.c): GET /openapi.json (and /swagger.json), the
 * Swagger UI page GET /docs and its files GET /docs/{asset}. */
void at_api_openapi_json(at_ctx *c);
void at_api_docs_page(at_ctx *c);
void at_api_docs_asset(at_ctx *c);
extern const at_route_doc at_api_openapi_doc, at_api_docs_page_doc, at_api_docs_asset_doc;

/* Makes the OpenAPI 3.0 document of routes (ended by a row with method NULL) for a
 * service at base_prefix ("" for none). Returns 0 and *doc (a new reference), or
 * AT_EINVAL when a route cannot be described (no summary; a route of its own without
 * its at_route_doc; a path parameter not in at_route_params; the same method and
 * pattern twice) or AT_ENOMEM, with what is wrong in err (openapi.c). */
int at_api_openapi(const at_route *routes, const char *base_prefix, json_t **doc /* OUT */, char *err,
                   size_t errlen);

/* The engine's handlers: each serves c->route->resource as c->route says (model.h). */
void at_engine_create(at_ctx *c);
void at_engine_get(at_ctx *c);
void at_engine_get_by_uuid(at_ctx *c);
void at_engine_patch(at_ctx *c);
void at_engine_delete(at_ctx *c);
void at_engine_restore(at_ctx *c);
void at_engine_list(at_ctx *c);
void at_engine_put(at_ctx *c);

/* ---- resources ---- */
extern const at_resource at_notes;
extern const at_list_def at_notes_by_target[];
extern const at_list_def at_notes_by_owner[];
extern const at_resource at_comments;
extern const at_list_def at_comments_by_target[];
extern const at_list_def at_comments_by_owner[];
extern const at_resource at_files;
extern const at_list_def at_files_by_target[];
extern const at_list_def at_files_by_owner[];
extern const at_resource at_settings;
extern const at_list_def at_settings_lists[];
extern const at_resource at_notifications;
extern const at_list_def at_notifications_inbox[];
void at_notifications_unread_count(at_ctx *c);
void at_notifications_mark_all_read(at_ctx *c);
extern const at_route_doc at_notifications_inbox_doc, at_notifications_unread_count_doc,
    at_notifications_mark_all_read_doc;
extern const at_resource at_tasks;
extern const at_list_def at_tasks_lists[];     /* GET /tasks: the index table (tasks_list.c) */
extern const at_list_def at_tasks_by_target[]; /* GET /targets/{target_uuid}/tasks */
extern const at_list_def at_tasks_by_user[];   /* GET /users/{user_uuid}/tasks?role= */
extern const at_route_doc at_tasks_list_doc, at_tasks_by_user_doc;
void at_tasks_counters(at_ctx *c);    /* GET /tasks/counters (tasks_counters.c) */
void at_reports_tasks(at_ctx *c);     /* GET /reports/tasks (reports.c) */
extern const at_route_doc at_tasks_counters_doc, at_reports_tasks_doc;

/* ---- items as answers (item.c) ---- */

/* The largest single-item answer (an item is at most 400 KB stored; its JSON text can
 * be larger where strings need escapes). */
#define AT_API_MAX_ANSWER (64u * 1024 * 1024)

/* What every resource's view writes first, in this order (when an item has them), and
 * never; for at_view_spec (view.h). NULL-terminated. */
extern const char *const at_api_view_leading[];
extern const char *const at_api_view_hidden[];

/* Appends to b the JSON text of a stored item of resource r as answers show it
 * (r->view). Returns 0 or at_buf's errors. */
int at_api_write_view(at_buf *b, const at_resource *r, const json_t *item);

/* Answers status with the item's view and its version as ETag. */
void at_api_reply_item(at_ctx *c, const at_resource *r, int status, const json_t *item);

/* Reads the item's version into *v: 0 for items written before versions existed.
 * Returns 0, or AT_EINVAL (and *v 0) when the stored version is not a whole number
 * from 0 to 2^63-1 (an imported item): such an item can no longer change. */
int at_api_version(const json_t *item, int64_t *v /* OUT */);

/* Writes the current time into item's attr, in r's form (text or epoch seconds).
 * Returns 0 or AT_ENOMEM. */
int at_api_set_now(const at_resource *r, json_t *item, const char *attr);

/* Returns 1 when the item is at most DynamoDB's 400 KB, else answers 413 and returns 0. */
int at_api_fits(at_ctx *c, const json_t *item, const char *what);

/* Returns the path parameter name when it is a usable key value (1..256 bytes, no
 * control characters), else answers 404 "<what> not found" and returns NULL. */
const char *at_api_key_param(at_ctx *c, const char *name, const char *what);

/* Returns what a path parameter names in messages: at_route_params' word, the
 * resource's name for its own key, else the parameter's name. */
const char *at_api_param_what(const at_ctx *c, const char *param);

/* Returns the text of v when it is a string without an embedded NUL (usable as an
 * identifier), else NULL. Borrowed. */
const char *at_api_string(const json_t *v);

/* ---- loading and changing one item (item.c) ---- */

enum {
    AT_LOAD_DELETED = 1u << 0 /* soft-deleted items are found too (restore) */
};

/* Reads the item at key, answering 404 when it is absent, of another tenant, or
 * soft-deleted (unless AT_LOAD_DELETED), and 503/500 on storage errors. Returns the
 * item (new reference) or NULL after answering. */
json_t *at_api_load(at_ctx *c, const at_resource *r, const json_t *key, unsigned flags);

/* Returns 1 when perm lets the caller change the item; otherwise answers 403 with a
 * message naming the rule and returns 0. */
int at_api_permitted(at_ctx *c, const at_resource *r, at_perm perm, const json_t *item);

/* Outcomes of an at_change apply step. */
enum { AT_APPLY_OK = 0, AT_APPLY_REPLIED = 1, AT_APPLY_CONFLICT = 2 };

/* A read-modify-write of one item, in SPEC §4's order of refusals: load (404),
 * permission (403), apply on a copy (400 from validation), If-Match (412), the apply's
 * conflict or a version that cannot move (409), then a write conditioned on the
 * version read (retried when someone else wrote in between). version and updated_at
 * are moved here. */
typedef struct at_change {
    unsigned load_flags;
    at_perm perm;
    /* Changes item in place. Returns AT_APPLY_OK, AT_APPLY_REPLIED (answered, e.g. 400)
     * or AT_APPLY_CONFLICT with a message in *conflict (answered 409 after If-Match). */
    int (*apply)(at_ctx *c, const at_resource *r, json_t *item, const char **conflict);
} at_change;

/* Runs the change. Returns the saved item (new reference) or NULL after answering. */
json_t *at_api_change(at_ctx *c, const at_resource *r, const json_t *key, const at_change *ch);

/* Returns 1 when the If-Match header h ("*", or a list of entity tags: "3", W/"3", 3)
 * is absent or matches version, else 0. */
int at_api_if_match(const char *h, int64_t version);

/* Writers racing on one item try this many times before giving up with 409. */
#define AT_API_CHANGE_ATTEMPTS 12

/* Sleeps a short random time that grows with attempt (full jitter), before a writer that
 * lost a race on an item tries again. */
void at_api_retry_pause(int attempt);

/* ---- client uuids (claim.c) ---- */

/* Writes item, a create, so that its uuid names at most one item of the resource in
 * the caller's tenant, under any concurrency and on both backends (docs/decisions.md,
 * "Client uuids"). client_uuid: the uuid came from the body. Returns 1 when item was
 * written (the caller answers 201); 0 after answering (200 with the existing item for
 * a retry, 409, or a storage error). */
int at_api_put_new(at_ctx *c, const at_resource *r, const json_t *item, int client_uuid);

/* ---- lists (list.c) ---- */

/* Answers stop adding items once their JSON passes this size (SPEC §4: about 1 MB). */
#define AT_API_LIST_ANSWER_CAP (1024u * 1024u)
#define AT_API_MAX_FILTERS 8

/* One page of a list answer being built: items are written as they come, from one or
 * more queries ("phases": notes read pinned notes, then the rest). The page ends when
 * it holds limit items, passes AT_API_LIST_ANSWER_CAP, or a query page stopped at its
 * work bound; the next cursor then says where to go on: {"p": phase, "k": start key}. */
typedef struct at_pager {
    at_ctx *c;
    const at_resource *r;
    const char *scope;   /* the list the cursors belong to */
    size_t limit;        /* ?limit=, 1..100, default 25 */
    json_t *cursor;      /* the decoded ?cursor= payload, or NULL on the first page */
    at_buf out;          /* {"items":[ ... */
    size_t n;            /* items written */
    json_t *last;        /* the last item written (an AV map), or NULL when it was packed */
    at_buf last_raw;     /* the last item written when it came packed (AT_Q_RAW pages) */
    int last_phase;      /* where the last item came from */
    const char *last_index;
    json_t *next;        /* the next cursor's payload, or NULL */
    int done;            /* no more items go into this page */
    int failed;          /* answered already (an error) */
} at_pager;

/* A list's query, filled from a plan (model.h) and the request: partition, sort key
 * condition, order, filters (the tenant's among them when the partition is not the
 * tenant), live items only. Hooks may add filters. */
typedef struct at_list_query {
    at_query q;
    at_clause filters[AT_API_MAX_FILTERS];
    json_t *owned[AT_API_MAX_FILTERS + 2];
    size_t nowned;
    const char *scope;
} at_list_query;

/* Starts lq: a query of resource r's index (NULL: the table) in the partition pv (an AV,
 * stolen; pv_text its text, for the scope), in the order forward, live items only, with
 * the tenant's filter when the partition is not the tenant. The scope is the route, the
 * index, the tenant and the partition; add the rest with at_api_list_query_scope.
 * Returns 0 or AT_ENOMEM (nothing to release then). Release with
 * at_api_list_query_release. */
int at_api_list_query_start(at_ctx *c, const at_resource *r, const char *index, json_t *pv,
                            const char *pv_text, int forward, at_list_query *lq /* OUT */);

/* Sets lq's sort key condition: the sort key of its index op av (stolen). Returns 0 or
 * AT_ENOMEM / AT_ETOOBIG. */
int at_api_list_query_sk(at_list_query *lq, at_op op, json_t *av);

/* Fills lq from plan l of resource r and the request. Returns 1, or 0 after answering
 * (404 for a bad path parameter, 400 for a bad query parameter). Release with
 * at_api_list_query_release. */
int at_api_list_query_init(at_ctx *c, const at_resource *r, const at_list_def *l,
                           at_list_query *lq /* OUT */);
void at_api_list_query_release(at_list_query *lq);

/* Adds the filter "attr op av" (av stolen) to lq. Returns 0, or AT_ENOMEM / AT_ETOOBIG
 * (too many filters: a programmer error). */
int at_api_list_query_filter(at_list_query *lq, const char *attr, at_op op, json_t *av);

/* Adds a query parameter a list's hook reads (name=value) to lq's scope, so that a
 * cursor is good only with the same value. Returns 0 or AT_ENOMEM. */
int at_api_list_query_scope(at_ctx *c, at_list_query *lq, const char *name, const char *value);

/* Starts a page of the list scope: reads ?limit= and ?cursor= (a cursor of another
 * scope, or whose phase is not below nphases, is refused). Returns 1, or 0 after
 * answering 400. Finish with at_pager_finish whatever happens. */
int at_pager_begin(at_pager *p, at_ctx *c, const at_resource *r, const char *scope, int nphases);

/* Returns the phase the cursor resumes (0 without a cursor). */
int at_pager_phase(const at_pager *p);

/* Returns the cursor's start key when it resumes phase with query q (checked: exactly
 * the key attributes of q's table and index, each of its schema type, the partition
 * key equal to q's), NULL when the phase starts from its beginning. A bad key answers
 * 400, sets p->failed and returns NULL. Borrowed from the cursor. */
const json_t *at_pager_start_key(at_pager *p, int phase, const at_query *q);

/* Adds one item of phase (read by q) to the page. Returns 1 when it was added, 0 when
 * the page is already done (the item then only tells that more follows). */
int at_pager_add(at_pager *p, int phase, const at_query *q, const json_t *item);

/* Ends the page early at the store's work bound: the next page starts at last_key
 * (borrowed) in phase. */
void at_pager_stop(at_pager *p, int phase, const json_t *last_key);

/* Runs q as phase: from the cursor's start key, for what the page still needs plus
 * one (to know whether more follows), adding the items. When the query's page stopped
 * at its work bound the page stops there too. Nothing happens once the page is done. */
void at_pager_query(at_pager *p, int phase, at_query *q);

/* The most items at_pager_small_set reads and sorts at once. */
#define AT_API_SMALL_SET 100

/* Serves phase with the items of lq's list that also hold attr = value, where attr is
 * the sort key of index small (partitioned as lq's query): when at most
 * AT_API_SMALL_SET of them are there (nearly always, for the sets this serves: pinned
 * notes, unread notifications), one query of small reads them all and they are sorted
 * here into lq's order; otherwise lq's own query, which the caller has filtered on
 * attr = value, pages through them. Either way the page takes the items after the
 * cursor's position, keyed on lq's index, so a list may change ways between pages.
 * value is borrowed. */
void at_pager_small_set(at_pager *p, int phase, at_list_query *lq, const char *small, const char *attr,
                        const json_t *value);

/* As at_pager_small_set, with the small set read by the query small (another index, its
 * own partition and sort key condition, filtered to hold exactly the items of lq's list
 * that it should give): read whole when it holds at most AT_API_SMALL_SET items and
 * sorted into lq's order, else lq's own query pages. Its limit, start key and flags are
 * the pager's. */
void at_pager_small_query(at_pager *p, int phase, at_list_query *lq, const at_query *small);

/* Answers the page ({"items": [...], "next_cursor": ...}) unless an error was answered,
 * and frees what the pager holds. */
void at_pager_finish(at_pager *p);

/* Answers 400 {"errors": {"cursor": ...}}, marking the page failed. */
void at_pager_bad_cursor(at_pager *p);

#endif
