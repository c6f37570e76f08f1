/* Field values: from a request's JSON (or a query parameter's text) to the attribute
 * value stored, by the field's type. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "actionstools/model.h"
#include "actionstools/av.h"
#include "actionstools/err.h"
#include "actionstools/uuid.h"
#include "actionstools/banned.h"

const char *const at_model_service_names[] = {
    "owner_uuid", "owner_name", "created_by", "instance_id", "item_number", "created_at",
    "updated_at", "version",    "deleted_at", "completed_at", NULL,
};

const at_field *at_model_field(const at_resource *r, const char *name)
{
    for (const at_field *f = r->fields; f && f->name; f++)
        if (strcmp(f->name, name) == 0) return f;
    return NULL;
}

/* Returns the number of characters (code points) of the UTF-8 text s of n bytes. */
static size_t utf8_chars(const char *s, size_t n)
{
    size_t chars = 0;
    for (size_t i = 0; i < n; i++) chars += ((unsigned char)s[i] & 0xC0) != 0x80;
    return chars;
}

static int has_bounds(const at_field *f)
{
    return f->min != 0 || f->max != 0;
}

static int string_value(const at_field *f, const char *s, size_t n, json_t **av, char *why,
                        size_t whylen)
{
    char norm[AT_UUID_LEN + 1];
    size_t chars;
    if (memchr(s, '\0', n)) {
        snprintf(why, whylen, "must not contain NUL characters");
        return AT_EINVAL;
    }
    if (f->type == AT_F_UUID) {
        if (at_uuid_normalize(s, norm)) {
            snprintf(why, whylen, "must be a UUID like 123e4567-e89b-12d3-a456-426614174000");
            return AT_EINVAL;
        }
        *av = at_av_s(norm);
        return *av ? 0 : AT_ENOMEM;
    }
    if (f->choices) {
        const char *const *c;
        for (c = f->choices; *c && strcmp(*c, s) != 0; c++) {
        }
        if (!*c) {
            size_t used = (size_t)snprintf(why, whylen, "must be one of:");
            for (c = f->choices; *c && used < whylen; c++)
                used += (size_t)snprintf(why + used, whylen - used, "%s %s", c == f->choices ? "" : ",", *c);
            return AT_EINVAL;
        }
    }
    chars = utf8_chars(s, n);
    if (has_bounds(f) && ((int64_t)chars < f->min || (int64_t)chars > f->max)) {
        snprintf(why, whylen, "must be %" PRId64 " to %" PRId64 " characters long", f->min, f->max);
        return AT_EINVAL;
    }
    *av = at_av_s(s);
    return *av ? 0 : AT_ENOMEM;
}

static int int_value(const at_field *f, int64_t v, json_t **av, char *why, size_t whylen)
{
    if (has_bounds(f) && (v < f->min || v > f->max)) {
        if (f->max == INT64_MAX)
            snprintf(why, whylen, "must be a whole number of %" PRId64 " or more", f->min);
        else
            snprintf(why, whylen, "must be a whole number from %" PRId64 " to %" PRId64, f->min, f->max);
        return AT_EINVAL;
    }
    *av = at_av_n_int(v);
    return *av ? 0 : AT_ENOMEM;
}

int at_model_field_value(const at_field *f, const json_t *v, json_t **av, char *why, size_t whylen)
{
    *av = NULL;
    why[0] = '\0';
    if (json_is_null(v) && (f->flags & AT_FF_NULLABLE)) return 0;
    switch (f->type) {
    case AT_F_STRING:
    case AT_F_UUID:
        if (!json_is_string(v)) break;
        return string_value(f, json_string_value(v), json_string_length(v), av, why, whylen);
    case AT_F_INT:
        if (!json_is_integer(v)) {
            snprintf(why, whylen, "must be a whole number");
            return AT_EINVAL;
        }
        return int_value(f, json_integer_value(v), av, why, whylen);
    case AT_F_FLAG:
        if (!json_is_boolean(v)) {
            snprintf(why, whylen, "must be true or false");
            return AT_EINVAL;
        }
        *av = at_av_n_int(json_is_true(v));
        return *av ? 0 : AT_ENOMEM;
    case AT_F_JSON:
        *av = at_av_from_json_why(v, why, whylen);
        if (*av) return 0;
        if (!why[0]) return AT_ENOMEM;
        return AT_EINVAL;
    }
    snprintf(why, whylen, f->type == AT_F_UUID ? "must be a UUID like 123e4567-e89b-12d3-a456-426614174000"
                                               : "must be a string");
    return AT_EINVAL;
}

json_t *at_model_text_value(const at_field *f, const char *text, char *why, size_t whylen)
{
    json_t *av = NULL;
    char *end;
    long long v;
    why[0] = '\0';
    switch (f->type) {
    case AT_F_STRING:
    case AT_F_UUID:
        string_value(f, text, strlen(text), &av, why, whylen);
        return av;
    case AT_F_INT:
        errno = 0;
        v = strtoll(text, &end, 10);
        if (errno || !*text || *end) {
            snprintf(why, whylen, "must be a whole number");
            return NULL;
        }
        int_value(f, (int64_t)v, &av, why, whylen);
        return av;
    case AT_F_FLAG:
        if (strcmp(text, "true") == 0 || strcmp(text, "false") == 0) return at_av_n_int(text[0] == 't');
        snprintf(why, whylen, "must be true or false");
        return NULL;
    case AT_F_JSON:
        break;
    }
    snprintf(why, whylen, "cannot be used as a filter");
    return NULL;
}
