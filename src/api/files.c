/* Files (SPEC §5): the metadata of a file attached to a CRM record (the bytes live
 * elsewhere: at url, or in the documents service as document_uuid), newest first. The
 * engine serves them from this descriptor; their own code is the rules across fields. */
#include <stdint.h>
#include <string.h>

#include "api.h"
#include "actionstools/url.h"
#include "actionstools/banned.h"

/* Returns 1 when c may be in an RFC 6838 restricted name (a media type's type or
 * subtype) after its first character. */
static int name_char(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
           (c && strchr("!#$&-^_.+", c));
}

/* Returns the length of the restricted name at s (0: none). */
static size_t name_len(const char *s)
{
    size_t n = 0;
    if (!((s[0] >= 'a' && s[0] <= 'z') || (s[0] >= 'A' && s[0] <= 'Z') ||
          (s[0] >= '0' && s[0] <= '9')))
        return 0;
    while (n < 127 && name_char(s[n]))
        n++;
    return n;
}

/* Returns 1 when s is a media type: type "/" subtype, then any parameters (";
 * charset=utf-8") in printable ASCII. */
static int media_type(const char *s)
{
    size_t n = name_len(s);
    if (!n || s[n] != '/') return 0;
    s += n + 1;
    if (!(n = name_len(s))) return 0;
    for (s += n; *s == ' '; s++) {
    }
    if (*s && *s != ';') return 0;
    for (; *s; s++)
        if (*s < 32 || *s > 126) return 0;
    return 1;
}

/* Returns 1 when attr is in item and is new (absent from old, or different). */
static int changed(const json_t *old, const json_t *item, const char *attr)
{
    const json_t *v = json_object_get(item, attr);
    return v && !(old && json_equal(v, json_object_get(old, attr)));
}

/* The rules across fields (SPEC §5): a url is http or https, a content type is a media
 * type, and a file has a url or a document_uuid (or both). Stored values that came
 * from elsewhere are checked only when a request changes them. */
static void check_file(at_ctx *c, const at_resource *r, const json_t *old, json_t *item,
                       json_t *errors)
{
    static const char *const either = "send url or document_uuid (at least one)";
    if (changed(old, item, "url") && !at_url_is_http(at_item_s(item, "url")))
        json_object_set_new(
            errors, "url",
            json_string("must be an http or https URL, like https://example.com/a.pdf"));
    if (changed(old, item, "content_type") && !media_type(at_item_s(item, "content_type")))
        json_object_set_new(errors, "content_type",
                            json_string("must be a media type, like application/pdf"));
    if (!at_item_has(item, "url") && !at_item_has(item, "document_uuid")) {
        json_object_set_new(errors, "url", json_string(either));
        json_object_set_new(errors, "document_uuid", json_string(either));
    }
}

static const at_field fields[] = {
    {"target_uuid", AT_F_STRING, AT_FF_SERVICE,
     .doc = "the CRM record the file is attached to (from the path)"},
    {"file_name", AT_F_STRING, AT_FF_CREATE | AT_FF_PATCH | AT_FF_REQUIRED, 1, 1024,
     .doc = "the file's name, 1 to 1024 characters"},
    {"content_type", AT_F_STRING, AT_FF_CREATE | AT_FF_PATCH, 1, 255,
     .def = "\"application/octet-stream\"", .doc = "its media type (application/pdf...)"},
    {"size", AT_F_INT, AT_FF_CREATE | AT_FF_PATCH | AT_FF_NULLABLE, 0, INT64_MAX,
     .doc = "its size in bytes"},
    {"url", AT_F_STRING, AT_FF_CREATE | AT_FF_PATCH | AT_FF_NULLABLE, 1, 8192,
     .doc = "where it is: an http or https URL (this or document_uuid, or both)"},
    {"document_uuid", AT_F_UUID, AT_FF_CREATE | AT_FF_PATCH | AT_FF_NULLABLE,
     .doc = "the document that holds it (this or url, or both)"},
    {"data", AT_F_JSON, AT_FF_CREATE | AT_FF_PATCH,
     .doc = "anything else about it: any JSON value"},
    {NULL},
};

const at_resource at_files = {
    .name = "file",
    .plural = "files",
    .table = AT_TABLE_FILES,
    .pk = {AT_SRC_PATH, "target_uuid"},
    .sk = {AT_SRC_NEW_UUID, "uuid"},
    .fields = fields,
    .change = AT_PERM_OWNER,
    .remove = AT_PERM_OWNER,
    .view = {at_api_view_leading, NULL, at_api_view_hidden, 1},
    .check = check_file,
    .doc = "files attached to a CRM record (their metadata)",
};

const at_list_def at_files_by_target[] = {
    {.index = "target_uuid-created_at-index",
     .pk = {AT_SRC_PATH, "target_uuid"},
     .forward = 0,
     .doc = "the record's files, newest first"},
    {NULL},
};

const at_list_def at_files_by_owner[] = {
    {.index = "owner_uuid-created_at-index",
     .pk = {AT_SRC_PATH, "user_uuid"},
     .forward = 0,
     .doc = "the files the user attached, newest first"},
    {NULL},
};
