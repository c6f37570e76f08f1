/* The route table: every route of the service in one place (SPEC §5). The pipeline
 * (src/http/app.c) checks method, identity, body size and type, and the admin role
 * before a handler runs. When two patterns fit one path, the one with more literal
 * segments wins (/tasks/counters before /tasks/{uuid}). */
#include "api.h"
#include "actionstools/banned.h"

const at_route at_routes[] = {
    {"GET", "/health", at_api_health, AT_R_PUBLIC, "service status"},
    {"GET", "/setup-install", at_api_setup_install, AT_R_ADMIN, "create missing tables"},

    {"POST", "/targets/{target_uuid}/notes", at_api_notes_create, AT_R_BODY, "create a note"},
    {"GET", "/targets/{target_uuid}/notes", at_api_notes_list, 0, "list a record's notes"},
    {"GET", "/targets/{target_uuid}/notes/{uuid}", at_api_notes_get, 0, "read a note"},
    {"PATCH", "/targets/{target_uuid}/notes/{uuid}", at_api_notes_patch, AT_R_BODY, "change a note"},
    {"DELETE", "/targets/{target_uuid}/notes/{uuid}", at_api_notes_delete, 0, "delete a note"},
    {"POST", "/targets/{target_uuid}/notes/{uuid}/restore", at_api_notes_restore, 0,
     "restore a deleted note"},
    {"GET", "/notes/{uuid}", at_api_notes_get_by_uuid, 0, "read a note by uuid"},
    {"GET", "/users/{user_uuid}/notes", at_api_notes_by_user, 0, "a user's notes"},

    {NULL, NULL, NULL, 0, NULL},
};
