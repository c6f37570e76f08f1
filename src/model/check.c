/* The start-up check of resource descriptors against the table schema: a typo in an
 * index or attribute name stops start-up with a message, never a 500 at run time. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "actionstools/model.h"
#include "actionstools/err.h"
#include "actionstools/banned.h"

static int fail(char *err, size_t n, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

static int fail(char *err, size_t n, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, n, fmt, ap);
    va_end(ap);
    return AT_EINVAL;
}

static int in_list(const char *const *list, const char *s)
{
    for (; list && *list; list++)
        if (strcmp(*list, s) == 0) return 1;
    return 0;
}

/* The key type a field of this type is stored with (JSON: none, -1). */
static int stored_key_type(at_field_type t)
{
    switch (t) {
    case AT_F_STRING:
    case AT_F_UUID: return AT_KEY_S;
    case AT_F_INT:
    case AT_F_FLAG: return AT_KEY_N;
    case AT_F_JSON: break;
    }
    return -1;
}

static int check_field(const at_resource *r, const at_table_def *t, const at_field *f, char *err,
                       size_t n)
{
    at_key_type kt;
    char why[160];
    if (at_model_field(r, f->name) != f)
        return fail(err, n, "resource %s: field \"%s\" is declared twice", r->name, f->name);
    if (strcmp(f->name, "uuid") == 0 || strcmp(f->name, "version") == 0)
        return fail(err, n, "resource %s: field \"%s\" is the service's own; remove it", r->name, f->name);
    if (at_schema_key_type(t, f->name, &kt) && (int)kt != stored_key_type(f->type))
        return fail(err, n, "resource %s: field \"%s\" is a key attribute of table %s (type %s), "
                            "but its field type stores another type",
                    r->name, f->name, t->logical, kt == AT_KEY_S ? "S" : "N");
    if ((f->flags & AT_FF_REQUIRED) && !(f->flags & AT_FF_CREATE))
        return fail(err, n, "resource %s: field \"%s\" is required but not sent on create", r->name, f->name);
    if ((f->flags & AT_FF_SERVICE) && (f->flags & (AT_FF_CREATE | AT_FF_PATCH)))
        return fail(err, n, "resource %s: field \"%s\" is both service-set and sent by clients", r->name, f->name);
    if (f->choices && f->type != AT_F_STRING)
        return fail(err, n, "resource %s: field \"%s\" has choices but is not a string", r->name, f->name);
    if (!f->doc) return fail(err, n, "resource %s: field \"%s\" has no doc line", r->name, f->name);
    if (f->def) {
        json_t *v = json_loads(f->def, JSON_DECODE_ANY, NULL), *av = NULL;
        int rc = v ? at_model_field_value(f, v, &av, why, sizeof why) : AT_EINVAL;
        json_decref(v);
        json_decref(av);
        if (rc) return fail(err, n, "resource %s: the default of field \"%s\" (%s) is not a valid value",
                            r->name, f->name, f->def);
    }
    if (f->type == AT_F_FLAG && !in_list(r->view.flags, f->name))
        return fail(err, n, "resource %s: flag field \"%s\" is missing from view.flags", r->name, f->name);
    return 0;
}

static int check_timestamp(const at_resource *r, const at_table_def *t, const char *attr, char *err,
                           size_t n)
{
    at_key_type kt;
    at_key_type want = r->epoch_timestamps ? AT_KEY_N : AT_KEY_S;
    if (at_schema_key_type(t, attr, &kt) && kt != want)
        return fail(err, n, "resource %s: %s is a key of type %s in table %s; set epoch_timestamps to match",
                    r->name, attr, kt == AT_KEY_N ? "N" : "S", t->logical);
    return 0;
}

int at_model_check_resource(const at_resource *r, char *err, size_t n)
{
    const at_table_def *t = at_schema_table(r->table);
    int rc, tenant_pk;
    if (!r->name || !r->plural || !t) return fail(err, n, "a resource has no name, plural or table");
    tenant_pk = strcmp(t->pk.name, "instance_id") == 0;
    if (tenant_pk != (r->pk.src == AT_SRC_TENANT) ||
        (!tenant_pk && r->pk.src != AT_SRC_PATH && r->pk.src != AT_SRC_USER))
        return fail(err, n, "resource %s: the partition key %s of table %s cannot come from that source",
                    r->name, t->pk.name, t->logical);
    if (!t->sk.name || !r->sk.name || (r->sk.src != AT_SRC_NEW_UUID && r->sk.src != AT_SRC_PATH) ||
        (r->sk.src == AT_SRC_NEW_UUID && strcmp(t->sk.name, "uuid") != 0))
        return fail(err, n, "resource %s: the sort key of table %s must come from a path parameter "
                            "(a new uuid when it is \"uuid\")",
                    r->name, t->logical);
    for (const at_field *f = r->fields; f && f->name; f++)
        if ((rc = check_field(r, t, f, err, n))) return rc;
    for (const char *const *fl = r->view.flags; fl && *fl; fl++) {
        const at_field *f = at_model_field(r, *fl);
        if (!f || f->type != AT_F_FLAG)
            return fail(err, n, "resource %s: view.flags names \"%s\", which is not a flag field", r->name, *fl);
    }
    if ((rc = check_timestamp(r, t, "created_at", err, n)) || (rc = check_timestamp(r, t, "updated_at", err, n)))
        return rc;
    if (r->uuid_index) {
        const at_index_def *ix = at_schema_index(t, r->uuid_index);
        if (!ix)
            return fail(err, n, "resource %s: uuid_index \"%s\" is not an index of table %s", r->name,
                        r->uuid_index, t->logical);
        if (strcmp(ix->pk.name, "instance_id") != 0 || !ix->sk.name || strcmp(ix->sk.name, "uuid") != 0)
            return fail(err, n, "resource %s: uuid_index \"%s\" is not keyed by (instance_id, uuid)",
                        r->name, r->uuid_index);
    }
    return 0;
}

/* Returns 1 when pattern has the path parameter {name}. */
static int has_param(const char *pattern, const char *name)
{
    size_t len = strlen(name);
    for (const char *p = strchr(pattern, '{'); p; p = strchr(p + 1, '{'))
        if (strncmp(p + 1, name, len) == 0 && p[1 + len] == '}') return 1;
    return 0;
}

static int check_index(const at_resource *r, const at_table_def *t, const char *pattern,
                       const char *name, char *err, size_t n)
{
    if (name && !at_schema_index(t, name))
        return fail(err, n, "list %s (resource %s): \"%s\" is not an index of table %s", pattern,
                    r->name, name, t->logical);
    return 0;
}

int at_model_check_list(const at_resource *r, const at_list_def *plans, const char *pattern,
                        char *err, size_t n)
{
    const at_table_def *t = at_schema_table(r->table);
    int rc;
    if (!plans || !plans->doc) return fail(err, n, "list %s (resource %s) has no plan", pattern, r->name);
    for (const at_list_def *l = plans; l->doc; l++) {
        const at_index_def *ix;
        const at_attr_def *pk, *sk;
        if ((rc = check_index(r, t, pattern, l->index, err, n)) ||
            (rc = check_index(r, t, pattern, l->index2, err, n)))
            return rc;
        ix = l->index ? at_schema_index(t, l->index) : NULL;
        pk = ix ? &ix->pk : &t->pk;
        sk = ix ? &ix->sk : &t->sk;
        /* A tenant's partition may be read only with the caller's own tenant. */
        if ((strcmp(pk->name, "instance_id") == 0) != (l->pk.src == AT_SRC_TENANT))
            return fail(err, n, "list %s (resource %s): the partition %s must come from the tenant "
                                "exactly when it is instance_id",
                        pattern, r->name, pk->name);
        if (l->pk.src == AT_SRC_PATH && !has_param(pattern, l->pk.name))
            return fail(err, n, "list %s (resource %s): path parameter {%s} is not in the path", pattern,
                        r->name, l->pk.name ? l->pk.name : "(none)");
        if ((l->pk.src == AT_SRC_PATH || l->pk.src == AT_SRC_QUERY) && !l->pk.name)
            return fail(err, n, "list %s (resource %s): the partition parameter has no name", pattern, r->name);
        if (l->pk.src == AT_SRC_NEW_UUID)
            return fail(err, n, "list %s (resource %s): a partition cannot be a new uuid", pattern, r->name);
        if (l->sk_param && (!sk->name || (l->sk_op != AT_OP_EQ && l->sk_op != AT_OP_BEGINS_WITH)))
            return fail(err, n, "list %s (resource %s): ?%s compares a sort key the index does not "
                                "have, or with an operator other than EQ or BEGINS_WITH",
                        pattern, r->name, l->sk_param);
        for (const at_list_filter *f = l->filters; f && f->param; f++)
            if (!f->field || !at_model_field(r, f->field))
                return fail(err, n, "list %s (resource %s): filter ?%s names no field of the resource",
                            pattern, r->name, f->param);
        if (l != plans && !l[-1].when && l->when)
            return fail(err, n, "list %s (resource %s): a plan with a query parameter follows the default plans",
                        pattern, r->name);
    }
    return 0;
}
