/* Items as answers (view.h). */
#include <stdlib.h>
#include <string.h>

#include "actionstools/view.h"
#include "actionstools/av.h"
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
