/* What a route handler sees: the request context, the route table entry, and the
 * helpers that build answers. Handlers live in src/api/, one file per resource; they
 * reach storage only through store.h. */
#ifndef AT_HANDLER_H
#define AT_HANDLER_H

#include <jansson.h>

#include "actionstools/buf.h"
#include "actionstools/cursor.h"
#include "actionstools/http.h"
#include "actionstools/store.h"

#define AT_MAX_PARAMS 4

typedef struct at_ctx at_ctx;
typedef void (*at_handler_fn)(at_ctx *c);

enum {
    AT_R_PUBLIC = 1u << 0, /* no bearer token needed */
    AT_R_ADMIN = 1u << 1,  /* CRM_ADMIN only (403 otherwise) */
    AT_R_BODY = 1u << 2    /* takes a JSON body: 415 when not application/json */
};

/* What a route does to its resource: the engine's operations, for the handlers and the
 * API document. */
typedef enum {
    AT_RK_OTHER = 0,   /* a route of its own (health, setup) */
    AT_RK_CREATE,      /* POST a collection: 201 with the item */
    AT_RK_GET,         /* GET one item by its key */
    AT_RK_GET_BY_UUID, /* GET one item by uuid within the caller's tenant */
    AT_RK_PATCH,       /* change fields */
    AT_RK_DELETE,      /* soft delete: 204 */
    AT_RK_RESTORE,     /* undo a soft delete */
    AT_RK_LIST,        /* a cursor-paged list */
    AT_RK_PUT          /* PUT the item the path names (by the tenant and a key the client
                          chooses): 201 when it created it, 200 when it replaced it */
} at_route_kind;

struct at_resource;
struct at_list_def;

/* A query parameter of a route the engine does not serve, for the API document. */
typedef struct at_doc_param {
    const char *name;
    const char *schema; /* JSON text of its OpenAPI schema; NULL: a string */
    const char *doc;
} at_doc_param;

/* What the API document says of a route the engine does not serve (AT_RK_OTHER); an
 * engine route needs none, its kind and resource say it all (src/api/openapi.c). */
typedef struct at_route_doc {
    const char *tag;         /* the group it is listed under ("service") */
    int status;              /* the status of a success (0: 200) */
    const char *media_types; /* of a success, comma-separated (NULL: application/json) */
    const char *schema;      /* JSON text: the OpenAPI schema of a success in its JSON
                                media types; NULL: none */
    const char *answer;      /* one line: what a success answers */
    const char *body;        /* AT_R_BODY: JSON text of the body's schema; NULL: the
                                resource's create fields */
    const at_doc_param *query; /* its query parameters, ended by {NULL}; or NULL */
    const char *errors;      /* the statuses of its own refusals, space-separated ("404
                                409"), beyond those its flags imply; or NULL */
    int store;               /* 1: it uses the store (429, 503 when that fails) */
    int also_status;         /* another success status (202: not done yet), or 0 */
    const char *also_schema; /* JSON text: its schema (application/json) */
    const char *also_answer; /* one line: when it is answered */
} at_route_doc;

/* One row of the route table (src/api/routes.c). */
typedef struct at_route {
    const char *method;  /* "GET", "POST", "PUT", "PATCH", "DELETE" */
    const char *pattern; /* "/targets/{target_uuid}/notes/{uuid}" */
    at_handler_fn handler;
    unsigned flags;      /* AT_R_* */
    const char *summary; /* one line for the route listing and the API document */
    const struct at_resource *resource; /* the resource served (model.h), or NULL */
    at_route_kind kind;
    const struct at_list_def *list; /* AT_RK_LIST: its plans, ended by one with doc NULL */
    const at_route_doc *doc; /* AT_RK_OTHER: what the API document says of it; an
                                engine route may name in .query the query parameters
                                its hooks read (the inbox's include_hidden) */
} at_route;

/* The route table, ended by a row with method NULL. */
extern const at_route at_routes[];

/* A path parameter of the route table: what it names (in "... not found" messages) and
 * a line for the API document. */
typedef struct at_route_param {
    const char *name; /* "target_uuid" */
    const char *what; /* "target"; NULL: the route's resource ("note") */
    const char *doc;
} at_route_param;

/* Every path parameter of the route table, ended by a row with name NULL. */
extern const at_route_param at_route_params[];

/* Checks the route table at start-up: every resource and list it serves against the
 * table schema (index and attribute names, key types), and each route against what
 * its kind needs and what the API document needs (a summary; for a route of its own,
 * an at_route_doc); no method and pattern twice (src/api/check.c). Returns 0, or
 * AT_EINVAL with a message for the operator in err. */
int at_api_check_routes(const at_route *routes, char *err, size_t errlen);

/* What the documentation routes serve (src/api/docs.c): the API document, made once
 * from the route table, and the Swagger UI page and its files. */
typedef struct at_api_docs at_api_docs;

/* Makes the API document of routes (ended by a row with method NULL) for a service at
 * base_prefix ("" for none), and looks for the Swagger UI files in asset_dir or, when
 * it is NULL, beside the binary: share/swagger-ui in the build tree, then
 * ../share/actionstools/swagger-ui when installed under a PREFIX. Files not found are
 * no error: /docs then says so. Returns 0 and *out (free with at_api_docs_free), or
 * AT_EINVAL (a route the document cannot describe) / AT_ENOMEM with a message in err. */
int at_api_docs_new(const at_route *routes, const char *base_prefix, const char *asset_dir,
                    at_api_docs **out /* OUT */, char *err, size_t errlen);

/* Frees what at_api_docs_new made. Accepts NULL. */
void at_api_docs_free(at_api_docs *d);

/* The settings a handler may read: never a secret (the configuration as a whole stays
 * with the pipeline). */
typedef struct at_api_settings {
    const char *base_prefix;   /* BASE_PREFIX, "" for none: the start of Location URLs */
    long counters_ttl_seconds; /* COUNTERS_TTL_SECONDS */
    const at_api_docs *docs;   /* the API document and Swagger UI, or NULL */
} at_api_settings;

struct at_ctx {
    const at_api_settings *settings;
    at_store *store;
    const at_cursor_key *cursor_key;
    const at_request *req;
    at_response *resp;
    at_arena *arena;          /* the request's arena */
    const at_identity *id;    /* NULL on public routes */
    const at_route *route;
    const char *param_names[AT_MAX_PARAMS];
    const char *params[AT_MAX_PARAMS];
    size_t nparams;
    json_t *body;             /* parsed JSON body, or NULL */
    const char *body_error;   /* why the body is not valid JSON, or NULL */
};

/* Returns the path parameter called name ("uuid"), or NULL. Borrowed. */
const char *at_param(const at_ctx *c, const char *name);

/* Returns the first query parameter called name, or NULL. Borrowed. */
const char *at_query_param(const at_ctx *c, const char *name);

/* Answers status with body (stolen; NULL for an empty body). */
void at_reply_json(at_ctx *c, int status, json_t *body);

/* Answers {"message": ...} with status. */
void at_reply_error(at_ctx *c, int status, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* Answers 400 {"message": "Input payload validation failed", "errors": errors}
 * (errors stolen: an object field -> what is wrong). */
void at_reply_validation(at_ctx *c, json_t *errors);

/* Answers status with the JSON text built in b, whose contents the response takes
 * (b is left empty). */
void at_reply_json_buf(at_ctx *c, int status, at_buf *b);

/* Answers status with the len bytes of body (malloc'd; the response takes it) as
 * content_type: for answers that are not JSON (the API page and its files). */
void at_reply_body_take(at_ctx *c, int status, const char *content_type, char *body, size_t len);

/* Answers with no body (204 and the like). */
void at_reply_empty(at_ctx *c, int status);

/* Answers a storage failure: AT_ENOTABLE / AT_EUNAVAIL -> 503 and AT_ETHROTTLED -> 429,
 * each saying what to do; anything else 500. what names the operation for the log ("read note"). */
void at_reply_store_error(at_ctx *c, int rc, const char *what);

/* Adds a response header (both strings copied into the request arena). */
void at_set_header(at_ctx *c, const char *name, const char *value);

/* Returns the JSON object body, or NULL after answering 400 (bad or missing JSON, not
 * an object). Call it at the validation step, after 404/403 checks (SPEC §4's order). */
json_t *at_body_object(at_ctx *c);

#endif
