/* The table definitions of SPEC §3 (keys and index names from seeds/000). */
#include <string.h>

#include "actionstools/schema.h"
#include "actionstools/banned.h"

#define S(n) {n, AT_KEY_S}
#define N(n) {n, AT_KEY_N}
#define NONE {NULL, AT_KEY_S}
#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

static const at_index_def notes_ix[] = {
    {"owner_uuid-created_at-index", AT_INDEX_GSI, S("owner_uuid"), S("created_at"), NULL},
    {"instance_id-uuid-index", AT_INDEX_GSI, S("instance_id"), S("uuid"), NULL},
    {"target_uuid-updated_at-index", AT_INDEX_GSI, S("target_uuid"), S("updated_at"), NULL},
    {"target_uuid-is_pinned-index", AT_INDEX_LSI, S("target_uuid"), N("is_pinned"), NULL},
};

static const at_index_def comments_ix[] = {
    {"owner_uuid-created_at-index", AT_INDEX_GSI, S("owner_uuid"), S("created_at"), NULL},
    {"target_uuid-created_at-index", AT_INDEX_LSI, S("target_uuid"), S("created_at"), NULL},
};

static const at_index_def files_ix[] = {
    {"target_uuid-created_at-index", AT_INDEX_GSI, S("target_uuid"), S("created_at"), NULL},
    {"owner_uuid-created_at-index", AT_INDEX_GSI, S("owner_uuid"), S("created_at"), NULL},
};

static const at_index_def settings_ix[] = {
    {"instance_id-config_type-index", AT_INDEX_GSI, S("instance_id"), S("config_type"), NULL},
    {"category-created_at-index", AT_INDEX_GSI, S("category"), S("created_at"), NULL},
};

/* The attributes the projection-subset index carries besides its keys: what task
 * counters and compact task lists need. */
static const char *const tasks_copy_include[] = {
    "item_number", "title",   "status",       "priority",   "assignee_uuid", "assignee_name",
    "owner_uuid",  "due_at",  "completed_at", "updated_at", "deleted_at",    NULL,
};

/* DynamoDB allows at most 5 local secondary indexes per table. The seeds list seven
 * for tasks; the five that sort the tenant's tasks are LSIs, and the projection-subset
 * copy and instance_id-uuid (which repeats the table's own key) are GSIs with the same
 * names and keys. See docs/storage.md. */
static const at_index_def tasks_ix[] = {
    {"target_uuid-created_at-index", AT_INDEX_GSI, S("target_uuid"), N("created_at"), NULL},
    {"target_uuid-updated_at-index", AT_INDEX_GSI, S("target_uuid"), N("updated_at"), NULL},
    {"owner_uuid-created_at-index", AT_INDEX_GSI, S("owner_uuid"), N("created_at"), NULL},
    {"assignee_uuid-created_at-index", AT_INDEX_GSI, S("assignee_uuid"), N("created_at"), NULL},
    {"status-created_at-index", AT_INDEX_GSI, S("status"), N("created_at"), NULL},
    {"instance_id-created_at-index", AT_INDEX_LSI, S("instance_id"), N("created_at"), NULL},
    {"instance_id-created_by-index", AT_INDEX_LSI, S("instance_id"), S("created_by"), NULL},
    {"instance_id-updated_at-index", AT_INDEX_LSI, S("instance_id"), N("updated_at"), NULL},
    {"instance_id-assignee_name-index", AT_INDEX_LSI, S("instance_id"), S("assignee_name"), NULL},
    {"instance_id-status-index", AT_INDEX_LSI, S("instance_id"), S("status"), NULL},
    {"instance_id-created_at-index-copy", AT_INDEX_GSI, S("instance_id"), N("created_at"),
     tasks_copy_include},
    {"instance_id-uuid-index", AT_INDEX_GSI, S("instance_id"), S("uuid"), NULL},
};

static const at_index_def notifications_ix[] = {
    {"target_uuid-created_at-index", AT_INDEX_GSI, S("target_uuid"), S("created_at"), NULL},
    {"target_uuid-is_read-index", AT_INDEX_GSI, S("target_uuid"), N("is_read"), NULL},
    {"target_uuid-is_hidden-index", AT_INDEX_GSI, S("target_uuid"), N("is_hidden"), NULL},
};

static const at_index_def activity_ix[] = {
    {"instance_id-created_at-index", AT_INDEX_GSI, S("instance_id"), S("created_at"), NULL},
};

static const at_table_def tables[AT_TABLE_COUNT] = {
    {AT_TABLE_NOTES, "notes", "em_actions_notes2", "em_actions_notes_staging", S("target_uuid"),
     S("uuid"), notes_ix, COUNT(notes_ix), NULL, 0},
    {AT_TABLE_COMMENTS, "comments", "em_actions_comments", "em_actions_comments_staging",
     S("target_uuid"), S("uuid"), comments_ix, COUNT(comments_ix), NULL, 0},
    {AT_TABLE_FILES, "files", "em_actions_files", "em_actions_files_staging", S("target_uuid"),
     S("uuid"), files_ix, COUNT(files_ix), NULL, 0},
    {AT_TABLE_SETTINGS, "settings", "em_actions_settings", "em_actions_settings_staging",
     S("instance_id"), S("config_key"), settings_ix, COUNT(settings_ix), NULL, 0},
    {AT_TABLE_COUNTERS, "counters", "em_actions_counters", "em_actions_counters_staging",
     S("counter_seq_key"), NONE, NULL, 0, NULL, 0},
    {AT_TABLE_TASKS, "tasks", "em_actions_tasks", "em_actions_tasks_staging", S("instance_id"),
     S("uuid"), tasks_ix, COUNT(tasks_ix), NULL, 1},
    {AT_TABLE_TASKS_COUNTERS, "tasks_counters", "em_actions_tasks_counters",
     "em_actions_tasks_counters_staging", S("counter_seq_key"), NONE, NULL, 0, "ExpirationTime",
     0},
    {AT_TABLE_NOTIFICATIONS, "notifications", "em_actions_notifications",
     "em_actions_notifications_staging", S("target_uuid"), S("uuid"), notifications_ix,
     COUNT(notifications_ix), NULL, 0},
    {AT_TABLE_ACTIVITY, "activity", "em_actions_activity", "em_actions_activity_staging",
     S("target_uuid"), S("event_id"), activity_ix, COUNT(activity_ix), NULL, 0},
    {AT_TABLE_REPORTS_CACHE, "reports_cache", "em_actions_reports_cache",
     "em_actions_reports_cache_staging", S("cache_key"), NONE, NULL, 0, "ExpirationTime", 0},
};

const at_table_def *at_schema_table(at_table_id id)
{
    if ((unsigned)id >= AT_TABLE_COUNT) return NULL;
    return &tables[id];
}

const at_table_def *at_schema_table_by_logical(const char *name)
{
    for (size_t i = 0; name && i < AT_TABLE_COUNT; i++)
        if (strcmp(tables[i].logical, name) == 0) return &tables[i];
    return NULL;
}

const at_index_def *at_schema_index(const at_table_def *t, const char *name)
{
    for (size_t i = 0; t && name && i < t->nindexes; i++)
        if (strcmp(t->indexes[i].name, name) == 0) return &t->indexes[i];
    return NULL;
}

static int attr_match(const at_attr_def *a, const char *attr, at_key_type *type)
{
    if (!a->name || strcmp(a->name, attr) != 0) return 0;
    *type = a->type;
    return 1;
}

int at_schema_key_type(const at_table_def *t, const char *attr, at_key_type *type)
{
    if (attr_match(&t->pk, attr, type) || attr_match(&t->sk, attr, type)) return 1;
    for (size_t i = 0; i < t->nindexes; i++)
        if (attr_match(&t->indexes[i].pk, attr, type) || attr_match(&t->indexes[i].sk, attr, type))
            return 1;
    return 0;
}

static int copy_attr(json_t *key, const json_t *item, const at_attr_def *a)
{
    json_t *v;
    if (!a->name) return 0;
    v = json_object_get(item, a->name);
    if (!v) return -1;
    return json_object_set(key, a->name, v);
}

json_t *at_schema_item_key(const at_table_def *t, const at_index_def *ix, const json_t *item)
{
    json_t *key = json_object();
    if (!key) return NULL;
    if (copy_attr(key, item, &t->pk) || copy_attr(key, item, &t->sk) ||
        (ix && (copy_attr(key, item, &ix->pk) || copy_attr(key, item, &ix->sk)))) {
        json_decref(key);
        return NULL;
    }
    return key;
}
