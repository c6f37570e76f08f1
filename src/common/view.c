/* Items as answers (view.h). */
#include <stdlib.h>
#include <string.h>

#include "actionstools/view.h"
#include "actionstools/av.h"
#include "actionstools/packed.h"
#include "actionstools/err.h"
#include "actionstools/banned.h"

static int in_list(const char *const *list, const char *s)
{
    for (; list && *list; list++)
        if (strcmp(*list, s) == 0) return 1;
    return 0;
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* Writes "name":value of the item's attribute name, with a comma first unless it is
 * the first member. */
static int write_member(at_buf *b, int *first, const json_t *item, const char *name,
                        const at_view_spec *spec)
{
    size_t mark = b->len;
    int64_t flag;
    int rc = *first ? 0 : at_buf_addc(b, ',');
    if (!rc) rc = at_json_write_string(b, name, strlen(name));
    if (!rc) rc = at_buf_addc(b, ':');
    if (!rc && in_list(spec->flags, name) && at_item_n_int(item, name, &flag))
        rc = at_buf_adds(b, flag ? "true" : "false");
    else if (!rc)
        rc = at_av_write_json(b, json_object_get(item, name));
    if (rc == AT_EINVAL) { /* a malformed attribute is left out rather than failing the read */
        b->len = mark;
        if (b->ptr) b->ptr[mark] = '\0';
        return 0;
    }
    if (!rc) *first = 0;
    return rc;
}

int at_view_write(at_buf *b, const json_t *item, const at_view_spec *spec)
{
    const char *k, *small[128], **names = small;
    json_t *v;
    size_t n = 0, cap = json_object_size(item);
    int first = 1, rc;

    if (cap > sizeof small / sizeof small[0] && !(names = malloc(cap * sizeof *names)))
        return AT_ENOMEM;
    rc = at_buf_addc(b, '{');
    for (const char *const *l = spec->leading; !rc && l && *l; l++)
        if (json_object_get(item, *l)) rc = write_member(b, &first, item, *l, spec);
    json_object_foreach((json_t *)item, k, v)
    {
        if (!in_list(spec->hidden, k) && !in_list(spec->leading, k)) names[n++] = k;
    }
    qsort(names, n, sizeof names[0], cmp_str);
    for (size_t i = 0; !rc && i < n; i++) rc = write_member(b, &first, item, names[i], spec);
    /* Items the original service wrote may lack these. */
    for (const char *const *f = spec->flags; !rc && f && *f; f++)
        if (!json_object_get(item, *f)) {
            rc = at_buf_printf(b, "%s\"%s\":false", first ? "" : ",", *f);
            first = 0;
        }
    if (!rc && spec->version_default && !json_object_get(item, "version"))
        rc = at_buf_printf(b, "%s\"version\":0", first ? "" : ",");
    if (!rc) rc = at_buf_addc(b, '}');
    if (names != small) free(names);
    return rc;
}

/* ---- from packed items ---- */

/* One top-level attribute of a packed item. */
typedef struct raw_attr {
    const char *name; /* NUL-terminated; len bytes, which may hold a NUL */
    size_t len;
    at_packed_val v;
} raw_attr;

typedef struct raw_item {
    raw_attr *a;
    size_t n;
} raw_item;

/* Returns the attribute whose whole name is name (json_object_get's rule), or NULL. */
static const raw_attr *raw_get(const raw_item *it, const char *name)
{
    size_t len = strlen(name);
    for (size_t i = 0; i < it->n; i++)
        if (it->a[i].len == len && memcmp(it->a[i].name, name, len) == 0) return &it->a[i];
    return NULL;
}

static int cmp_attr(const void *a, const void *b)
{
    return strcmp(((const raw_attr *)a)->name, ((const raw_attr *)b)->name);
}

/* write_member for a packed item: the member called name (a C string) and the value of
 * the attribute with that whole name (absent: left out, as a malformed one). */
static int write_member_raw(at_buf *b, int *first, const raw_item *it, const char *name,
                            const raw_attr *found, const at_view_spec *spec)
{
    size_t mark = b->len;
    int64_t flag;
    const char *num;
    int rc = *first ? 0 : at_buf_addc(b, ',');
    if (!rc) rc = at_json_write_string(b, name, strlen(name));
    if (!rc) rc = at_buf_addc(b, ':');
    if (!found) found = raw_get(it, name);
    if (!rc && found && in_list(spec->flags, name) && *found->v.p == 'N' &&
        (num = at_packed_text(&found->v, NULL)) && at_av_number_int64(num, &flag))
        rc = at_buf_adds(b, flag ? "true" : "false");
    else if (!rc)
        rc = found ? at_packed_write_json(b, &found->v) : AT_EINVAL;
    if (rc == AT_EINVAL) { /* left out, as at_view_write leaves out a malformed attribute */
        b->len = mark;
        if (b->ptr) b->ptr[mark] = '\0';
        return 0;
    }
    if (!rc) *first = 0;
    return rc;
}

int at_view_write_raw(at_buf *b, const void *p, size_t n, const at_view_spec *spec)
{
    raw_attr small[64], small_rest[64], *all = small, *rest = small_rest;
    raw_item it = {small, 0};
    at_packed_iter iter;
    at_packed_val v;
    const char *name;
    size_t len, cap = sizeof small / sizeof small[0], nrest = 0;
    int first = 1, rc;

    rc = at_packed_iter_item(&iter, p, n);
    if (rc) return rc;
    if (iter.left > cap) {
        if (iter.left > (uint64_t)n) return AT_EINVAL; /* each member takes bytes */
        cap = (size_t)iter.left;
        if (!(all = malloc(2 * cap * sizeof *all))) return AT_ENOMEM;
        it.a = all;
    }
    while ((rc = at_packed_next(&iter, &name, &len, &v)) == 1) {
        if (it.n == cap) {
            rc = AT_EINVAL;
            break;
        }
        it.a[it.n++] = (raw_attr){name, len, v};
    }
    if (rc) goto out;
    if (all != small) rest = all + cap;
    rc = at_buf_addc(b, '{');
    for (const char *const *l = spec->leading; !rc && l && *l; l++) {
        const raw_attr *a = raw_get(&it, *l);
        if (a) rc = write_member_raw(b, &first, &it, *l, a, spec);
    }
    for (size_t i = 0; i < it.n; i++)
        if (!in_list(spec->hidden, it.a[i].name) && !in_list(spec->leading, it.a[i].name))
            rest[nrest++] = it.a[i];
    qsort(rest, nrest, sizeof rest[0], cmp_attr);
    for (size_t i = 0; !rc && i < nrest; i++) {
        /* A name holding a NUL is written (and looked up) up to the NUL, as by
         * at_view_write, which sees names as C strings. */
        const raw_attr *a = strlen(rest[i].name) == rest[i].len ? &rest[i] : NULL;
        rc = write_member_raw(b, &first, &it, rest[i].name, a, spec);
    }
    for (const char *const *f = spec->flags; !rc && f && *f; f++)
        if (!raw_get(&it, *f)) {
            rc = at_buf_printf(b, "%s\"%s\":false", first ? "" : ",", *f);
            first = 0;
        }
    if (!rc && spec->version_default && !raw_get(&it, "version"))
        rc = at_buf_printf(b, "%s\"version\":0", first ? "" : ",");
    if (!rc) rc = at_buf_addc(b, '}');
out:
    if (all != small) free(all);
    return rc;
}
