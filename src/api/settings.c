/* Settings (SPEC §5): the tenant's configuration, one item per key the client names
 * (PUT creates or replaces it), any JSON value, written by CRM_ADMIN users. The engine
 * serves them from this descriptor; their own code is the key's syntax. */
#include <string.h>

#include "api.h"
#include "actionstools/banned.h"

/* Returns 1 when k is 1 to 128 characters of A-Z a-z 0-9 _ . : - (SPEC §5). */
static int key_ok(const char *k)
{
    size_t n = k ? strlen(k) : 0;
    if (n < 1 || n > 128) return 0;
    for (size_t i = 0; i < n; i++)
        if (!((k[i] >= 'A' && k[i] <= 'Z') || (k[i] >= 'a' && k[i] <= 'z') ||
              (k[i] >= '0' && k[i] <= '9') || strchr("_.:-", k[i])))
            return 0;
    return 1;
}

/* A new setting's key has the syntax of SPEC §5. Settings stored before under other
 * keys can still be read, replaced and deleted. */
static void check_key(at_ctx *c, const at_resource *r, const json_t *old, json_t *item,
                      json_t *errors)
{
    if (!old && !key_ok(at_param(c, "config_key")))
        json_object_set_new(errors, "config_key",
                            json_string("must be 1 to 128 characters of A-Z a-z 0-9 _ . : -"));
}

static const at_field fields[] = {
    {"config_key", AT_F_STRING, AT_FF_SERVICE, .doc = "the setting's key (from the path)"},
    {"config_value", AT_F_JSON, AT_FF_CREATE | AT_FF_REQUIRED, .doc = "the value: any JSON value"},
    {"config_type", AT_F_STRING, AT_FF_CREATE | AT_FF_NULLABLE, 1, 128,
     .doc = "a type to list settings by (?config_type=), 1 to 128 characters"},
    {"category", AT_F_STRING, AT_FF_CREATE | AT_FF_NULLABLE, 1, 128,
     .doc = "a category to list settings by (?category=), 1 to 128 characters"},
    {NULL},
};

const at_resource at_settings = {
    .name = "setting",
    .plural = "settings",
    .table = AT_TABLE_SETTINGS,
    .pk = {AT_SRC_TENANT, NULL},
    .sk = {AT_SRC_PATH, "config_key"},
    .fields = fields,
    .change = AT_PERM_ADMIN,
    .remove = AT_PERM_ADMIN,
    .view = {at_api_view_leading, NULL, at_api_view_hidden, 1},
    .check = check_key,
    .doc = "the tenant's settings, one per key",
};

static const at_list_filter of_type[] = {{"config_type", "config_type", AT_OP_EQ}, {NULL}};

const at_list_def at_settings_lists[] = {
    {.when = "category",
     .index = "category-created_at-index",
     .pk = {AT_SRC_QUERY, "category"},
     .forward = 1,
     .filters = of_type,
     .doc = "?category=: the tenant's settings of that category, oldest first (and "
            "?config_type=, of that type too)"},
    {.when = "config_type",
     .index = "instance_id-config_type-index",
     .pk = {AT_SRC_TENANT, NULL},
     .sk_param = "config_type",
     .sk_op = AT_OP_EQ,
     .forward = 1,
     .doc = "?config_type=: the tenant's settings of that type"},
    {.pk = {AT_SRC_TENANT, NULL}, .forward = 1, .doc = "the tenant's settings, by key"},
    {NULL},
};
