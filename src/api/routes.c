/* The route table: every route of the service in one place (SPEC §5). The pipeline
 * (src/http/app.c) checks method, identity, body size and type, and the admin role
 * before a handler runs. When two patterns fit one path, the one with more literal
 * segments wins (/tasks/counters before /tasks/{uuid}). Routes of a resource name its
 * descriptor and what they do to it; the engine (engine.c) serves them. A route of its
 * own (OWN) names what it answers in an at_route_doc. The API document is made from
 * these rows (openapi.c), and a test holds it to them. */
#include "api.h"
#include "actionstools/banned.h"

/* A route of its own: its handler, and what the API document says of it (handler.h). */
#define OWN(method, path, handler, flags, summary, doc) {method, path, handler, flags, summary, NULL, AT_RK_OTHER, NULL, doc}
/* A route of its own that serves a resource (listed with it in the API document). */
#define OWN_OF(method, path, handler, flags, summary, res, doc) {method, path, handler, flags, summary, res, AT_RK_OTHER, NULL, doc}
#define CREATE(path, res, summary) {"POST", path, at_engine_create, AT_R_BODY, summary, res, AT_RK_CREATE, NULL}
#define LIST(path, res, plans, summary) {"GET", path, at_engine_list, 0, summary, res, AT_RK_LIST, plans}
#define GET(path, res, summary) {"GET", path, at_engine_get, 0, summary, res, AT_RK_GET, NULL}
#define PATCH(path, res, summary) {"PATCH", path, at_engine_patch, AT_R_BODY, summary, res, AT_RK_PATCH, NULL}
#define DELETE(path, res, summary) {"DELETE", path, at_engine_delete, 0, summary, res, AT_RK_DELETE, NULL}
#define RESTORE(path, res, summary) {"POST", path, at_engine_restore, 0, summary, res, AT_RK_RESTORE, NULL}
#define PUT(path, res, flags, summary) {"PUT", path, at_engine_put, AT_R_BODY | (flags), summary, res, AT_RK_PUT, NULL}
#define BY_UUID(path, res, summary) {"GET", path, at_engine_get_by_uuid, 0, summary, res, AT_RK_GET_BY_UUID, NULL}

const at_route at_routes[] = {
    OWN("GET", "/health", at_api_health, AT_R_PUBLIC, "service status", &at_api_health_doc),
    OWN("GET", "/setup-install", at_api_setup_install, AT_R_ADMIN, "create missing tables", &at_api_setup_install_doc),

    CREATE("/targets/{target_uuid}/notes", &at_notes, "create a note"),
    LIST("/targets/{target_uuid}/notes", &at_notes, at_notes_by_target, "list a record's notes"),
    GET("/targets/{target_uuid}/notes/{uuid}", &at_notes, "read a note"),
    PATCH("/targets/{target_uuid}/notes/{uuid}", &at_notes, "change a note"),
    DELETE("/targets/{target_uuid}/notes/{uuid}", &at_notes, "delete a note"),
    RESTORE("/targets/{target_uuid}/notes/{uuid}/restore", &at_notes, "restore a deleted note"),
    BY_UUID("/notes/{uuid}", &at_notes, "read a note by uuid"),
    LIST("/users/{user_uuid}/notes", &at_notes, at_notes_by_owner, "a user's notes"),

    CREATE("/targets/{target_uuid}/comments", &at_comments, "comment on a record, or answer a comment"),
    LIST("/targets/{target_uuid}/comments", &at_comments, at_comments_by_target, "list a record's comments"),
    GET("/targets/{target_uuid}/comments/{uuid}", &at_comments, "read a comment"),
    PATCH("/targets/{target_uuid}/comments/{uuid}", &at_comments, "change a comment"),
    DELETE("/targets/{target_uuid}/comments/{uuid}", &at_comments, "delete a comment"),
    RESTORE("/targets/{target_uuid}/comments/{uuid}/restore", &at_comments, "restore a deleted comment"),
    LIST("/users/{user_uuid}/comments", &at_comments, at_comments_by_owner, "a user's comments"),

    CREATE("/targets/{target_uuid}/files", &at_files, "attach a file to a record (its metadata)"),
    LIST("/targets/{target_uuid}/files", &at_files, at_files_by_target, "list a record's files"),
    GET("/targets/{target_uuid}/files/{uuid}", &at_files, "read a file's metadata"),
    PATCH("/targets/{target_uuid}/files/{uuid}", &at_files, "change a file's metadata"),
    DELETE("/targets/{target_uuid}/files/{uuid}", &at_files, "delete a file"),
    RESTORE("/targets/{target_uuid}/files/{uuid}/restore", &at_files, "restore a deleted file"),
    LIST("/users/{user_uuid}/files", &at_files, at_files_by_owner, "a user's files"),

    LIST("/settings", &at_settings, at_settings_lists, "list the tenant's settings"),
    GET("/settings/{config_key}", &at_settings, "read a setting"),
    /* Creating needs the role as much as replacing: the route says so (403 first). */
    PUT("/settings/{config_key}", &at_settings, AT_R_ADMIN, "create or replace a setting (CRM_ADMIN)"),
    DELETE("/settings/{config_key}", &at_settings, "delete a setting (CRM_ADMIN)"),

    /* The inbox's hook reads ?include_hidden=; its doc names it for the API document. */
    {"GET", "/notifications", at_engine_list, 0, "your notifications", &at_notifications, AT_RK_LIST,
     at_notifications_inbox, &at_notifications_inbox_doc},
    OWN_OF("GET", "/notifications/unread-count", at_notifications_unread_count, 0,
           "how many of your notifications are unread", &at_notifications, &at_notifications_unread_count_doc),
    OWN_OF("POST", "/notifications/mark-all-read", at_notifications_mark_all_read, 0, "mark your notifications read",
           &at_notifications, &at_notifications_mark_all_read_doc),
    GET("/notifications/{uuid}", &at_notifications, "read one of your notifications"),
    PATCH("/notifications/{uuid}", &at_notifications, "mark one of your notifications read or hidden"),

    CREATE("/tasks", &at_tasks, "create a task (it gets the tenant's next item_number)"),
    /* The lists' hooks read ?sort= (and ?role=); their docs name them for the API document. */
    {"GET", "/tasks", at_engine_list, 0, "list the tenant's tasks, filtered", &at_tasks, AT_RK_LIST, at_tasks_lists,
     &at_tasks_list_doc},
    OWN_OF("GET", "/tasks/counters", at_tasks_counters, 0, "how many tasks are in each status, and overdue",
           &at_tasks, &at_tasks_counters_doc),
    GET("/tasks/{uuid}", &at_tasks, "read a task"),
    PATCH("/tasks/{uuid}", &at_tasks, "change a task (its owner, its assignee or a CRM_ADMIN)"),
    DELETE("/tasks/{uuid}", &at_tasks, "delete a task (its owner or a CRM_ADMIN)"),
    RESTORE("/tasks/{uuid}/restore", &at_tasks, "restore a deleted task"),
    {"GET", "/targets/{target_uuid}/tasks", at_engine_list, 0, "list a record's tasks", &at_tasks, AT_RK_LIST,
     at_tasks_by_target, &at_tasks_list_doc},
    {"GET", "/users/{user_uuid}/tasks", at_engine_list, 0, "a user's tasks: those they own or are assigned",
     &at_tasks, AT_RK_LIST, at_tasks_by_user, &at_tasks_by_user_doc},
    OWN_OF("GET", "/reports/tasks", at_reports_tasks, 0, "a report of the tasks created in a period, by group",
           &at_tasks, &at_reports_tasks_doc),

    OWN("GET", "/openapi.json", at_api_openapi_json, AT_R_PUBLIC, "the API document", &at_api_openapi_doc),
    OWN("GET", "/swagger.json", at_api_openapi_json, AT_R_PUBLIC, "the API document (another name)", &at_api_openapi_doc),
    OWN("GET", "/docs", at_api_docs_page, AT_R_PUBLIC, "the API page", &at_api_docs_page_doc),
    OWN("GET", "/docs/{asset}", at_api_docs_asset, AT_R_PUBLIC, "a file of the API page", &at_api_docs_asset_doc),

    {NULL, NULL, NULL, 0, NULL, NULL, AT_RK_OTHER, NULL},
};

const at_route_param at_route_params[] = {
    {"target_uuid", "target", "the CRM record's id: any text of 1 to 256 bytes"},
    {"user_uuid", "user", "a user's uuid (the sub claim of their token)"},
    {"uuid", NULL, "the item's uuid"},
    {"config_key", NULL, "a setting's key: 1 to 128 of A-Z a-z 0-9 _ . : -"},
    {"asset", "file", "a file name of the Swagger UI page (swagger-ui-bundle.js...)"},
    {NULL, NULL, NULL},
};
