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

#define RAW_LIST_MAX 32 /* names of a spec's list looked at (leading, flags) */

/* One top-level attribute of a packed item, and where the spec puts it. */
typedef struct raw_attr {
    const char *name; /* NUL-terminated; len bytes, which may hold a NUL */
    size_t len;
    at_packed_val v;
    int lead;   /* position of name (a C string) in spec->leading, or -1 */
    int flag;   /* position of name in spec->flags, or -1 */
} raw_attr;

/* Returns the position of s in list (the C string s, as in_list compares), or -1. */
static int list_pos(const char *const *list, const char *s)
{
    for (int i = 0; list && list[i] && i < RAW_LIST_MAX; i++)
        if (list[i][0] == s[0] && strcmp(list[i], s) == 0) return i;
    return -1;
}

/* Returns the attribute whose whole name is name (json_object_get's rule), or NULL. */
static const raw_attr *raw_get(const raw_attr *a, size_t n, const char *name)
{
    size_t len = strlen(name);
    for (size_t i = 0; i < n; i++)
        if (a[i].len == len && memcmp(a[i].name, name, len) == 0) return &a[i];
    return NULL;
}

static int cmp_attr(const void *a, const void *b)
{
    return strcmp(((const raw_attr *)a)->name, ((const raw_attr *)b)->name);
}

/* write_member for a packed item: the member called name (a C string) with the value
 * found (the attribute whose whole name is name; NULL: absent, left out as a malformed
 * one would be). is_flag: name is one of the spec's flags. */
static int write_member_raw(at_buf *b, int *first, const char *name, const raw_attr *found,
                            int is_flag)
{
    size_t mark = b->len;
    int64_t flag;
    const char *num;
    int rc = *first ? 0 : at_buf_addc(b, ',');
    if (!rc) rc = at_json_write_string(b, name, strlen(name));
    if (!rc) rc = at_buf_addc(b, ':');
    if (!rc && found && is_flag && *found->v.p == 'N' && (num = at_packed_text(&found->v, NULL)) &&
        at_av_number_int64(num, &flag))
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

/* Returns 1 when list (NULL-terminated, may be NULL) has more than RAW_LIST_MAX names. */
static int long_list(const char *const *list)
{
    for (int i = 0; list && list[i]; i++)
        if (i >= RAW_LIST_MAX) return 1;
    return 0;
}

/* The slow way, for specs with longer lists than the fast way tracks: decode, write. */
static int write_decoded(at_buf *b, const void *p, size_t n, const at_view_spec *spec)
{
    json_t *item = at_packed_decode(p, n);
    int rc = item ? at_view_write(b, item, spec) : AT_EINVAL;
    json_decref(item);
    return rc;
}

int at_view_write_raw(at_buf *b, const void *p, size_t n, const at_view_spec *spec)
{
    raw_attr small[64], small_rest[64], *all = small, *rest = small_rest;
    const raw_attr *lead[RAW_LIST_MAX] = {0};
    int flag_found[RAW_LIST_MAX] = {0}, has_version = 0, first = 1, rc;
    at_packed_iter iter;
    at_packed_val v;
    const char *name;
    size_t len, cap = sizeof small / sizeof small[0], count = 0, nrest = 0;

    if (long_list(spec->leading) || long_list(spec->flags)) return write_decoded(b, p, n, spec);
    rc = at_packed_iter_item(&iter, p, n);
    if (rc) return rc;
    if (iter.left > cap) {
        if (iter.left > (uint64_t)n) return AT_EINVAL; /* each member takes bytes */
        cap = (size_t)iter.left;
        if (!(all = malloc(2 * cap * sizeof *all))) return AT_ENOMEM;
        rest = all + cap;
    }
    /* One pass: where each attribute goes. A name holding a NUL is seen up to the NUL
     * by at_view_write (C strings), and found by its whole name only. */
    while ((rc = at_packed_next(&iter, &name, &len, &v)) == 1) {
        int whole = strlen(name) == len;
        raw_attr *a = &all[count];
        if (count == cap) {
            rc = AT_EINVAL;
            break;
        }
        *a = (raw_attr){name, len, v, list_pos(spec->leading, name), list_pos(spec->flags, name)};
        if (whole && a->lead >= 0) lead[a->lead] = a;
        if (whole && a->flag >= 0) flag_found[a->flag] = 1;
        if (whole && len == 7 && memcmp(name, "version", 7) == 0) has_version = 1;
        if (a->lead < 0 && list_pos(spec->hidden, name) < 0) rest[nrest++] = *a;
        count++;
    }
    if (rc) goto out;
    rc = at_buf_addc(b, '{');
    for (int k = 0; !rc && spec->leading && spec->leading[k] && k < RAW_LIST_MAX; k++)
        if (lead[k]) rc = write_member_raw(b, &first, spec->leading[k], lead[k], lead[k]->flag >= 0);
    qsort(rest, nrest, sizeof rest[0], cmp_attr);
    for (size_t i = 0; !rc && i < nrest; i++) {
        const raw_attr *a = &rest[i];
        if (strlen(a->name) != a->len) a = raw_get(all, count, a->name);
        rc = write_member_raw(b, &first, rest[i].name, a, rest[i].flag >= 0);
    }
    for (int k = 0; !rc && spec->flags && spec->flags[k] && k < RAW_LIST_MAX; k++)
        if (!flag_found[k]) {
            rc = at_buf_printf(b, "%s\"%s\":false", first ? "" : ",", spec->flags[k]);
            first = 0;
        }
    if (!rc && spec->version_default && !has_version)
        rc = at_buf_printf(b, "%s\"version\":0", first ? "" : ",");
    if (!rc) rc = at_buf_addc(b, '}');
out:
    if (all != small) free(all);
    return rc;
}
