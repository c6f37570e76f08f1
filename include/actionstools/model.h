/* Resources as data: each resource (notes, comments, tasks...) is one descriptor that
 * states its table, where its key values come from, its fields, its lists, who may
 * change it and how it is shown. The generic engine (src/api/engine.c) serves create,
 * get, patch, delete, restore and lists from it; the start-up check (src/model/check.c)
 * holds it against the table schema; the API document is generated from it. A resource
 * adds code only for what is truly its own, through the hooks. See docs/architecture.md,
 * "How to add a resource". */
#ifndef AT_MODEL_H
#define AT_MODEL_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "actionstools/schema.h"
#include "actionstools/store.h"
#include "actionstools/view.h"

typedef struct at_ctx at_ctx;
typedef struct at_resource at_resource;
typedef struct at_list_def at_list_def;

/* ---- fields ---------------------------------------------------------------------- */

/* How a field's JSON value is checked and stored. */
typedef enum {
    AT_F_STRING = 0, /* a JSON string, stored as S (bounds: length in characters) */
    AT_F_UUID,       /* a UUID string, stored lower-case as S */
    AT_F_INT,        /* a JSON integer, stored as N (bounds: the value) */
    AT_F_FLAG,       /* true/false, stored as N 1/0: a key cannot be a boolean (SPEC §3) */
    AT_F_JSON        /* any JSON value, stored as its native attribute value */
} at_field_type;

enum {
    AT_FF_CREATE = 1u << 0,   /* a client may send it on create */
    AT_FF_PATCH = 1u << 1,    /* a client may send it on PATCH */
    AT_FF_REQUIRED = 1u << 2, /* a create must send it */
    AT_FF_SERVICE = 1u << 3,  /* only the service sets it: a body that sends it gets 400 */
    AT_FF_NULLABLE = 1u << 4  /* null is accepted and removes the attribute */
};

typedef struct at_field {
    const char *name;
    at_field_type type;
    unsigned flags;            /* AT_FF_* */
    int64_t min, max;          /* bounds (both 0: none); see at_field_type */
    const char *const *choices; /* AT_F_STRING: the allowed values, NULL-terminated */
    const char *def;           /* JSON text a create without the field stores, or NULL */
    const char *doc;           /* one line for the API document */
} at_field;

/* ---- where values come from ----------------------------------------------------------- */

typedef enum {
    AT_SRC_PATH = 0, /* the path parameter named .name */
    AT_SRC_QUERY,    /* the query parameter named .name (lists only) */
    AT_SRC_TENANT,   /* the caller's instance_id */
    AT_SRC_USER,     /* the caller's user uuid */
    AT_SRC_NEW_UUID  /* a new random uuid on create (or the client's "uuid"); on the item
                        routes, the path parameter named .name */
} at_source;

typedef struct at_value_src {
    at_source src;
    const char *name;
} at_value_src;

/* ---- lists ------------------------------------------------------------------------- */

/* A query parameter that filters a list: ?param=value keeps items whose attribute
 * field (the resource's field of that name, whose type converts the text) compares
 * with op to the value. */
typedef struct at_list_filter {
    const char *param;
    const char *field;
    at_op op;
} at_list_filter;

/* One way to read a list: the index and its partition, the order, the filters. A list
 * route points to an array of them ended by an entry with doc NULL; the first whose
 * `when` query parameter is present (or whose `when` is NULL) serves the request. The
 * plans without `when` (the defaults) come last; the engine serves the first of them,
 * and a run hook may choose among all the plans (tasks: the most selective index). */
struct at_list_def {
    const char *when;      /* query parameter that selects this plan; NULL: the default */
    const char *index;     /* the index read (its sort key orders the list); NULL: the table */
    at_value_src pk;       /* the partition key's value */
    const char *sk_param;  /* query parameter compared with the sort key by sk_op, or NULL */
    at_op sk_op;           /* AT_OP_EQ or AT_OP_BEGINS_WITH */
    int forward;           /* 1: ascending sort key first (oldest first) */
    const char *order_param; /* query parameter taking asc|desc, or NULL: fixed order */
    const at_list_filter *filters; /* ended by {NULL}, or NULL */
    const char *index2;    /* a second index the hook reads (checked at start-up), or NULL */
    /* Serves the list instead of the plain query (notes: pinned first). */
    void (*run)(at_ctx *c, const at_resource *r, const at_list_def *l);
    const char *doc;       /* one line for the API document */
};

/* ---- permissions ------------------------------------------------------------------- */

typedef enum {
    AT_PERM_OWNER = 0,      /* the owner (owner_uuid) or a CRM_ADMIN */
    AT_PERM_OWNER_ASSIGNEE, /* the owner, the assignee (assignee_uuid) or a CRM_ADMIN */
    AT_PERM_ADMIN,          /* a CRM_ADMIN */
    AT_PERM_ANY             /* anyone who can read it (its key already limits who) */
} at_perm;

/* ---- the resource -------------------------------------------------------------------- */

struct at_resource {
    const char *name;       /* "note": in messages */
    const char *plural;     /* "notes": in claims, list scopes and the API document */
    at_table_id table;
    at_value_src pk, sk;    /* where the table key's values come from */
    const char *uuid_index; /* the (instance_id, uuid) index: GET /<plural>/{uuid}, and
                               finding items of the same client uuid; NULL if none */
    const at_field *fields; /* the resource's own fields, ended by {NULL}; the service's
                               own (uuid, instance_id, owner, version, timestamps) are
                               implied */
    int epoch_timestamps;   /* 1: created_at/updated_at are N epoch seconds (tasks) */
    at_perm change;         /* who may PATCH */
    at_perm remove;         /* who may DELETE and restore */
    at_view_spec view;      /* how items are shown (flags: the AT_F_FLAG fields) */

    /* Hooks, NULL when the resource has nothing of its own. */

    /* Checks across fields and sets derived attributes, after the fields of a create
     * (old NULL) or a PATCH were applied to item, or a PUT built it (old: the live item
     * it replaces, or NULL); adds to errors (field -> message). A check that cannot
     * decide (its storage read failed) answers itself, and the engine stops there. */
    void (*check)(at_ctx *c, const at_resource *r, const json_t *old, json_t *item,
                  json_t *errors);
    /* Runs once a create is valid, before it is written (numbering). Returns 1 to go
     * on, 0 after answering. */
    int (*on_create)(at_ctx *c, const at_resource *r, json_t *item);
    /* Runs after a change was written and before it is answered: a create (old NULL),
     * a PATCH, DELETE or restore (old: the item as it was), a PUT (old: the item it
     * replaced, or NULL). For what follows from a change (task counters). It cannot
     * change the answer; what fails in it is its own to log. */
    void (*on_change)(at_ctx *c, const at_resource *r, const json_t *old, const json_t *item);
    const char *doc; /* one line for the API document */
};

/* The names the service sets on every resource (SPEC §5 "Item shapes"): a body that
 * sends one gets 400 "set by the service; remove it", unless the resource declares it
 * as a field clients send. NULL-terminated. */
extern const char *const at_model_service_names[];

/* Returns the field of r called name, or NULL. */
const at_field *at_model_field(const at_resource *r, const char *name);

/* Converts a field's JSON value v into the attribute value to store. Returns 0 and
 * sets *av (a new reference; NULL when v is null on a nullable field: remove the
 * attribute), or AT_EINVAL with what is wrong in why (a sentence for errors.<field>). */
int at_model_field_value(const at_field *f, const json_t *v, json_t **av /* OUT */, char *why,
                         size_t whylen);

/* Converts the text of a query parameter compared with field f ("true" for a flag,
 * "42" for an integer, the text itself for strings). Returns a new AV, or NULL with
 * what is wrong in why. */
json_t *at_model_text_value(const at_field *f, const char *text, char *why, size_t whylen);

/* Checks a resource against the table schema: its table and key sources, field names
 * and types (a key attribute of the table or an index must be stored with its key
 * type), defaults, the view's flags (exactly the AT_F_FLAG fields), uuid_index.
 * Returns 0, or AT_EINVAL with a message naming the resource and what is wrong. */
int at_model_check_resource(const at_resource *r, char *err, size_t errlen);

/* Checks the plans of a list of r served at the route pattern: every index exists on
 * r's table; a plan's partition source fills the index's partition key (a path
 * parameter must be in pattern); sk_param needs a sort key; filters name fields of r.
 * Returns 0, or AT_EINVAL with a message naming the list and what is wrong. */
int at_model_check_list(const at_resource *r, const at_list_def *plans, const char *pattern,
                        char *err, size_t errlen);

#endif
