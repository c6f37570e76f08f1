/* The storage interface: DynamoDB's data model and semantics, implemented by the
 * sqlite backend (src/store/sqlite.c) and the dynamodb backend (src/store/dynamodb.c).
 *
 * Items and keys are jansson objects of attribute values (see av.h). Every function is
 * safe to call from many threads at once. Functions return 0 or an AT_* code:
 *   AT_ENOTFOUND  no such item (get), or an expired TTL item (never served)
 *   AT_ECOND      a write's condition was false; nothing was written
 *   AT_ENOTABLE   the table does not exist: run `actionstools setup`
 *   AT_EUNAVAIL   the backend cannot be reached (after bounded retries)
 *   AT_EINVAL     bad arguments (wrong key type, missing key attribute...)
 *
 * The API layer (src/api) reaches storage only through these wrappers; it never sees
 * SQL or HTTP. The wrappers check arguments before a backend sees them. */
#ifndef AT_STORE_H
#define AT_STORE_H

#include <jansson.h>
#include <stdint.h>
#include <stddef.h>

#include "actionstools/aws.h"
#include "actionstools/buf.h"
#include "actionstools/schema.h"

/* ---- conditions and filters ---------------------------------------------------- */

typedef enum {
    AT_OP_EXISTS = 0,  /* attribute_exists(attr) */
    AT_OP_NOT_EXISTS,  /* attribute_not_exists(attr) */
    AT_OP_EQ,          /* attr = value */
    AT_OP_NE,          /* attr <> value (true when attr is absent, as in DynamoDB) */
    AT_OP_LT,          /* attr < value */
    AT_OP_LE,          /* attr <= value */
    AT_OP_GT,          /* attr > value */
    AT_OP_GE,          /* attr >= value */
    AT_OP_BETWEEN,     /* value <= attr <= value2 */
    AT_OP_BEGINS_WITH  /* begins_with(attr, value), strings only */
} at_op;

/* One comparison on a top-level attribute. value/value2 are AVs, borrowed. */
typedef struct at_clause {
    const char *attr;
    at_op op;
    const json_t *value;
    const json_t *value2;
} at_clause;

/* The AND of n clauses. n == 0 (or a NULL at_cond pointer) is always true. */
typedef struct at_cond {
    const at_clause *v;
    size_t n;
} at_cond;

/* Returns 1 when item (an AV map; NULL means "no item") satisfies every clause of c,
 * with DynamoDB's rules (a comparison on an absent attribute or across types is
 * false, except AT_OP_NE and AT_OP_NOT_EXISTS). Both backends' semantics are this. */
int at_cond_eval(const json_t *item, const at_cond *c);

/* ---- writes ------------------------------------------------------------------ */

/* An UpdateItem: SET, REMOVE and ADD on top-level attributes. All parts optional. */
typedef struct at_update {
    const json_t *set;          /* object attr -> AV to set, or NULL */
    const char *const *remove;  /* NULL-terminated attribute names, or NULL */
    const char *add_attr;       /* number attribute to add add_value to (absent = 0), or NULL */
    int64_t add_value;
} at_update;

/* ---- queries ----------------------------------------------------------------- */

enum {
    AT_Q_LIVE = 1u << 0, /* skip items that have a deleted_at attribute (soft-deleted) */
    AT_Q_RAW = 1u << 1,  /* the page holds its items packed (packed.h), not as AV maps:
                            read them with at_page_raw; page.items is NULL */
    /* Count the matching items instead of returning them, as DynamoDB's Select COUNT:
     * the page holds no item and page.count says how many matched.
     * Counting stops once at least limit were counted (a backend that counts whole
     * answers, as DynamoDB, may count past limit), at the end of the range, or at the
     * page's work bound; last_key is NULL only when the count reached the end. The
     * filter may not name the key attributes of the table or index queried (DynamoDB
     * evaluates a count's filter itself, and refuses those there): AT_EINVAL. */
    AT_Q_COUNT = 1u << 2
};

/* A Query on a table or one of its indexes. Items whose TTL attribute is in the past
 * are always skipped. */
typedef struct at_query {
    at_table_id table;
    const char *index;     /* index name, or NULL for the table itself */
    const json_t *pk;      /* AV of the partition key value (equality), borrowed */
    at_clause sk;          /* sort key condition; sk.attr NULL for none. attr must be
                              the sort key of the table or index; op EQ/LT/LE/GT/GE/
                              BETWEEN/BEGINS_WITH */
    int forward;           /* 1: ascending sort key (ScanIndexForward), 0: descending */
    size_t limit;          /* number of matching items wanted (>= 1) */
    const json_t *start_key; /* exclusive start key (the form at_schema_item_key makes
                                for this table/index), or NULL to start at the beginning */
    at_cond filter;        /* applied after the key condition, before counting to limit */
    unsigned flags;        /* AT_Q_* */
    size_t max_read_bytes; /* work bound of one page: stop once about this many bytes of
                              stored items were read, matching or not (0: AT_QUERY_MAX_READ) */
} at_query;

/* The default work bound of one query page: 1 MB of stored items read, as one DynamoDB
 * Query page. A page that stops there holds fewer than limit items (maybe none) and a
 * last_key to go on from, so no query is unbounded work (SPEC §4 "Lists"). */
#define AT_QUERY_MAX_READ (1024u * 1024u)

/* The result of a query or scan. */
typedef struct at_page {
    json_t *items;    /* array of items (AV maps), owned; never NULL after success
                         (NULL with AT_Q_RAW). For an INCLUDE-projection index, items
                         hold only the keys and the included attributes. */
    json_t *last_key; /* when limit items were returned, the key of the last one (table
                         keys plus index keys); when the work bound stopped the page
                         early, the key of the last item read (which may be filtered out
                         of items). Pass it as start_key for what follows. NULL when the
                         query reached its end. Owned. */
    /* AT_Q_RAW: the items packed back to back; item i ends at raw_end[i]. Owned. */
    size_t nraw;
    at_buf raw;
    size_t *raw_end;
    size_t raw_cap;
    size_t count; /* AT_Q_COUNT: how many items matched */
} at_page;

/* The most bytes of packed items one raw page may hold. */
#define AT_PAGE_RAW_MAX (64u << 20)

/* Frees the contents of a page; the page may then be reused. Accepts a zeroed page. */
void at_page_release(at_page *p);

/* Returns the number of items of a page, raw or not. */
size_t at_page_count(const at_page *p);

/* Returns packed item i of a raw page (borrowed from the page) and its length in *len,
 * or NULL when i is out of range. */
const unsigned char *at_page_raw(const at_page *p, size_t i, size_t *len /* OUT */);

/* For backends: appends the packed item data (n bytes, copied) to a raw page. Returns
 * 0, AT_ENOMEM or AT_ETOOBIG (past AT_PAGE_RAW_MAX). */
int at_page_add_raw(at_page *p, const void *data, size_t n);

/* For backends: appends item (an AV map) to a raw page, packed. Returns 0, AT_EINVAL
 * (not a well-formed item) or at_page_add_raw's errors. */
int at_page_add_item_raw(at_page *p, const json_t *item);

/* ---- the backend method table --------------------------------------------------- */

typedef struct at_store at_store;

typedef struct at_store_ops {
    const char *name; /* "sqlite", "dynamodb" */
    int (*setup)(at_store *s, json_t *created, json_t *existing);
    int (*get)(at_store *s, at_table_id t, const json_t *key, json_t **item);
    int (*put)(at_store *s, at_table_id t, const json_t *item, const at_cond *cond);
    int (*update)(at_store *s, at_table_id t, const json_t *key, const at_update *u,
                  const at_cond *cond, json_t **new_item);
    int (*del)(at_store *s, at_table_id t, const json_t *key, const at_cond *cond);
    int (*query)(at_store *s, const at_query *q, at_page *out);
    int (*scan)(at_store *s, at_table_id t, const json_t *start_key, size_t limit,
                at_page *out);
    int (*batch_put)(at_store *s, at_table_id t, const json_t *items);
    int (*sweep_expired)(at_store *s, int64_t now, size_t *removed);
    int (*stream_read)(at_store *s, int64_t after_seq, size_t limit, json_t **records);
    void (*destroy)(at_store *s);
} at_store_ops;

/* The common head of every backend's store object. Backends embed it first. */
struct at_store {
    const at_store_ops *ops;
    const char *names[AT_TABLE_COUNT]; /* physical table names, owned by the store */
};

/* Fills s->names from the physical names given (copied). Used by backends' openers.
 * Returns 0 or AT_ENOMEM. */
int at_store_init_names(at_store *s, const char *const names[AT_TABLE_COUNT]);

/* Frees s->names. Used by backends' destroy. */
void at_store_release_names(at_store *s);

/* Returns the physical name of table t. */
const char *at_store_table_name(const at_store *s, at_table_id t);

/* Returns the backend's name ("sqlite", "dynamodb"). */
const char *at_store_backend(const at_store *s);

/* ---- openers ----------------------------------------------------------------- */

/* Opens (creating the file and its directory if needed) the sqlite store at path.
 * Tables are not created: call at_store_setup. Returns 0 or an AT_* code, with a
 * message for the operator in err (may be NULL). */
int at_store_open_sqlite(const char *path, const char *const names[AT_TABLE_COUNT],
                         at_store **out /* OUT */, char *err, size_t errlen);

/* Opens the dynamodb backend (no request is made until the first operation).
 * Returns 0 or an AT_* code with a message in err. */
int at_store_open_dynamodb(const at_aws_options *o, const char *const names[AT_TABLE_COUNT],
                           at_store **out /* OUT */, char *err, size_t errlen);

/* Closes the store and frees everything it holds. Accepts NULL. */
void at_store_free(at_store *s);

/* ---- operations (thin wrappers over the method table) ---------------------------- */

/* Creates every missing table with its indexes (and TTL, stream), waiting until they
 * can be used. Appends the physical names created to the JSON array created and the
 * ones already there to existing (both borrowed, may be NULL). */
int at_store_setup(at_store *s, json_t *created, json_t *existing);

/* Reads one item by its full primary key (AV map). On success *item is a new
 * reference the caller releases with json_decref. AT_ENOTFOUND when absent or expired. */
int at_store_get(at_store *s, at_table_id t, const json_t *key, json_t **item /* OUT */);

/* Writes item whole (PutItem), replacing any item with the same key, when cond holds
 * on the existing item (NULL: unconditional). AT_ECOND when it does not. On a table
 * with a stream, the change record is written with the change. */
int at_store_put(at_store *s, at_table_id t, const json_t *item, const at_cond *cond);

/* Applies u to the item at key (creating it when absent, as UpdateItem does) when
 * cond holds. On success and when new_item is not NULL, *new_item is the whole item
 * after the change (a new reference). AT_ECOND when the condition is false. */
int at_store_update(at_store *s, at_table_id t, const json_t *key, const at_update *u,
                    const at_cond *cond, json_t **new_item /* OUT, may be NULL */);

/* Removes the item at key when cond holds (a missing item with no condition is not an
 * error). AT_ECOND when the condition is false. */
int at_store_delete(at_store *s, at_table_id t, const json_t *key, const at_cond *cond);

/* Runs a query. On success fills *out (release with at_page_release). */
int at_store_query(at_store *s, const at_query *q, at_page *out /* OUT */);

/* Reads up to limit items of a table in the backend's order, after start_key (NULL at
 * first). For export only: no request path may scan. Expired TTL items are skipped. */
int at_store_scan(at_store *s, at_table_id t, const json_t *start_key, size_t limit,
                  at_page *out /* OUT */);

/* Writes the items of the array items (unconditional puts, at most 25 per backend
 * request, retried until all are written). For import. */
int at_store_batch_put(at_store *s, at_table_id t, const json_t *items);

/* Removes items whose TTL attribute is before now (epoch seconds), as DynamoDB's TTL
 * does. *removed (may be NULL) receives how many. A backend whose server expires items
 * itself (dynamodb) does nothing. */
int at_store_sweep_expired(at_store *s, int64_t now, size_t *removed /* OUT */);

/* Reads up to limit change-stream records with a sequence number after after_seq, in
 * order, as a new JSON array of DynamoDB Streams records (eventName, dynamodb.Keys,
 * NewImage, OldImage, SequenceNumber, StreamViewType, eventSource "aws:dynamodb").
 * AT_EINVAL on a backend whose stream is read elsewhere (dynamodb: Lambda's mapping). */
int at_store_stream_read(at_store *s, int64_t after_seq, size_t limit,
                         json_t **records /* OUT */);

#endif
