/* The tables of SPEC §3: logical names, physical names, key schemas, secondary
 * indexes, TTL attributes and streams. Both storage backends and `setup` read their
 * table layouts from here and nowhere else. */
#ifndef AT_SCHEMA_H
#define AT_SCHEMA_H

#include <jansson.h>
#include <stddef.h>

typedef enum {
    AT_TABLE_NOTES = 0,
    AT_TABLE_COMMENTS,
    AT_TABLE_FILES,
    AT_TABLE_SETTINGS,
    AT_TABLE_COUNTERS,
    AT_TABLE_TASKS,
    AT_TABLE_TASKS_COUNTERS,
    AT_TABLE_NOTIFICATIONS,
    AT_TABLE_ACTIVITY,
    AT_TABLE_REPORTS_CACHE,
    AT_TABLE_COUNT
} at_table_id;

typedef enum { AT_KEY_S = 0, AT_KEY_N } at_key_type;

typedef struct at_attr_def {
    const char *name; /* NULL when the key has no such part (no sort key) */
    at_key_type type;
} at_attr_def;

typedef enum { AT_INDEX_GSI = 0, AT_INDEX_LSI } at_index_kind;

typedef struct at_index_def {
    const char *name; /* exact DynamoDB index name, e.g. "owner_uuid-created_at-index" */
    at_index_kind kind;
    at_attr_def pk; /* for an LSI, the table's partition key */
    at_attr_def sk; /* sk.name NULL when the index has no sort key */
    /* NULL: projection ALL. Otherwise a NULL-terminated list of the non-key attributes
     * projected (INCLUDE); table and index keys are always projected. */
    const char *const *include;
} at_index_def;

typedef struct at_table_def {
    at_table_id id;
    const char *logical;   /* "notes": the name used in TABLE_<NAME> and in messages */
    const char *prod_name; /* physical name when ENV_NAME=production */
    const char *env_name;  /* physical name in every other environment */
    at_attr_def pk;
    at_attr_def sk; /* sk.name NULL: partition key only */
    const at_index_def *indexes;
    size_t nindexes;
    const char *ttl_attr; /* NULL, or the epoch-seconds TTL attribute ("ExpirationTime") */
    int stream;           /* 1: changes produce NEW_AND_OLD_IMAGES stream records */
} at_table_def;

/* Returns the definition of table id (never NULL for a valid id). */
const at_table_def *at_schema_table(at_table_id id);

/* Returns the table whose logical name is name ("notes", "tasks_counters"...), or NULL. */
const at_table_def *at_schema_table_by_logical(const char *name);

/* Returns the index of t called name, or NULL. */
const at_index_def *at_schema_index(const at_table_def *t, const char *name);

/* Returns the type declared for attr when it is a key attribute of the table or of any
 * of its indexes (so a write must give it that type): 1 and sets *type, else 0. */
int at_schema_key_type(const at_table_def *t, const char *attr, at_key_type *type /* OUT */);

/* Returns a new AV map holding the primary key of item in table t (and, when ix is
 * not NULL, the index's key attributes too: the form of DynamoDB's LastEvaluatedKey
 * for a Query on that index). Returns NULL when item lacks one of those attributes. */
json_t *at_schema_item_key(const at_table_def *t, const at_index_def *ix, const json_t *item);

#endif
