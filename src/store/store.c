/* Thin wrappers over a backend's method table (argument checks) and the condition
 * evaluator both backends share. */
#include <stdlib.h>
#include <string.h>

#include "actionstools/store.h"
#include "actionstools/av.h"
#include "actionstools/err.h"
#include "actionstools/packed.h"
#include "actionstools/banned.h"

void at_page_release(at_page *p)
{
    if (!p) return;
    json_decref(p->items);
    json_decref(p->last_key);
    at_buf_release(&p->raw);
    free(p->raw_end);
    memset(p, 0, sizeof *p);
}

size_t at_page_count(const at_page *p)
{
    return p->items ? json_array_size(p->items) : p->nraw;
}

const unsigned char *at_page_raw(const at_page *p, size_t i, size_t *len)
{
    size_t from;
    if (i >= p->nraw) return NULL;
    from = i ? p->raw_end[i - 1] : 0;
    *len = p->raw_end[i] - from;
    return (const unsigned char *)p->raw.ptr + from;
}

/* Makes room for one more item end, and readies the buffer. */
static int raw_room(at_page *p)
{
    if (p->nraw == p->raw_cap) {
        size_t cap = p->raw_cap ? 2 * p->raw_cap : 32;
        size_t *ends = realloc(p->raw_end, cap * sizeof *ends);
        if (!ends) return AT_ENOMEM;
        p->raw_end = ends;
        p->raw_cap = cap;
    }
    if (!p->raw.max) at_buf_init(&p->raw, AT_PAGE_RAW_MAX);
    return 0;
}

int at_page_add_raw(at_page *p, const void *data, size_t n)
{
    int rc = raw_room(p);
    if (!rc) rc = at_buf_add(&p->raw, data, n);
    if (!rc) p->raw_end[p->nraw++] = p->raw.len;
    return rc;
}

int at_page_add_item_raw(at_page *p, const json_t *item)
{
    size_t mark;
    int rc = raw_room(p);
    if (rc) return rc;
    mark = p->raw.len;
    rc = at_packed_encode(&p->raw, item);
    if (rc) {
        p->raw.len = mark;
        if (p->raw.ptr) p->raw.ptr[mark] = '\0';
        return rc;
    }
    p->raw_end[p->nraw++] = p->raw.len;
    return 0;
}

int at_store_init_names(at_store *s, const char *const names[AT_TABLE_COUNT])
{
    for (int i = 0; i < AT_TABLE_COUNT; i++) {
        const char *n = names && names[i] ? names[i] : at_schema_table(i)->env_name;
        s->names[i] = strdup(n);
        if (!s->names[i]) {
            at_store_release_names(s);
            return AT_ENOMEM;
        }
    }
    return 0;
}

void at_store_release_names(at_store *s)
{
    for (int i = 0; i < AT_TABLE_COUNT; i++) {
        free((char *)s->names[i]);
        s->names[i] = NULL;
    }
}

const char *at_store_table_name(const at_store *s, at_table_id t)
{
    return (unsigned)t < AT_TABLE_COUNT ? s->names[t] : NULL;
}

const char *at_store_backend(const at_store *s)
{
    return s->ops->name;
}

void at_store_free(at_store *s)
{
    if (s) s->ops->destroy(s);
}

static int valid_table(at_table_id t)
{
    return (unsigned)t < AT_TABLE_COUNT;
}

int at_store_setup(at_store *s, json_t *created, json_t *existing)
{
    return s->ops->setup(s, created, existing);
}

int at_store_get(at_store *s, at_table_id t, const json_t *key, json_t **item)
{
    *item = NULL;
    if (!valid_table(t) || !json_is_object(key)) return AT_EINVAL;
    return s->ops->get(s, t, key, item);
}

int at_store_put(at_store *s, at_table_id t, const json_t *item, const at_cond *cond)
{
    if (!valid_table(t) || !json_is_object(item)) return AT_EINVAL;
    return s->ops->put(s, t, item, cond);
}

int at_store_update(at_store *s, at_table_id t, const json_t *key, const at_update *u,
                    const at_cond *cond, json_t **new_item)
{
    if (new_item) *new_item = NULL;
    if (!valid_table(t) || !json_is_object(key) || !u) return AT_EINVAL;
    if (u->set && !json_is_object(u->set)) return AT_EINVAL;
    return s->ops->update(s, t, key, u, cond, new_item);
}

int at_store_delete(at_store *s, at_table_id t, const json_t *key, const at_cond *cond)
{
    if (!valid_table(t) || !json_is_object(key)) return AT_EINVAL;
    return s->ops->del(s, t, key, cond);
}

/* Returns 1 when a count's filter names a key attribute of the table or index queried
 * (DynamoDB refuses those in a filter, and a count cannot check them afterwards). */
static int count_filters_key(const at_query *q)
{
    const at_table_def *t = at_schema_table(q->table);
    const at_index_def *ix = q->index ? at_schema_index(t, q->index) : NULL;
    const char *pk = ix ? ix->pk.name : t->pk.name, *sk = ix ? ix->sk.name : t->sk.name;
    for (size_t i = 0; i < q->filter.n; i++) {
        const char *a = q->filter.v[i].attr;
        if (strcmp(a, pk) == 0 || (sk && strcmp(a, sk) == 0)) return 1;
    }
    return 0;
}

int at_store_query(at_store *s, const at_query *q, at_page *out)
{
    memset(out, 0, sizeof *out);
    if (!q || !valid_table(q->table) || !q->pk || q->limit < 1) return AT_EINVAL;
    if (q->index && !at_schema_index(at_schema_table(q->table), q->index)) return AT_EINVAL;
    if ((q->flags & AT_Q_COUNT) && count_filters_key(q)) return AT_EINVAL;
    return s->ops->query(s, q, out);
}

int at_store_scan(at_store *s, at_table_id t, const json_t *start_key, size_t limit, at_page *out)
{
    memset(out, 0, sizeof *out);
    if (!valid_table(t) || limit < 1) return AT_EINVAL;
    return s->ops->scan(s, t, start_key, limit, out);
}

int at_store_batch_put(at_store *s, at_table_id t, const json_t *items)
{
    if (!valid_table(t) || !json_is_array(items)) return AT_EINVAL;
    return s->ops->batch_put(s, t, items);
}

int at_store_sweep_expired(at_store *s, int64_t now, size_t *removed)
{
    if (removed) *removed = 0;
    return s->ops->sweep_expired(s, now, removed);
}

int at_store_stream_read(at_store *s, int64_t after_seq, size_t limit, json_t **records)
{
    *records = NULL;
    if (!s->ops->stream_read) return AT_EINVAL;
    return s->ops->stream_read(s, after_seq, limit, records);
}

static int begins_with(const json_t *a, const json_t *prefix)
{
    const char *s = json_string_value(json_object_get(a, "S"));
    const char *p = json_string_value(json_object_get(prefix, "S"));
    if (!s || !p) return 0;
    return strncmp(s, p, strlen(p)) == 0;
}

static int clause_eval(const json_t *item, const at_clause *c)
{
    const json_t *v = item ? json_object_get(item, c->attr) : NULL;
    int ok = 0, cmp;

    switch (c->op) {
    case AT_OP_EXISTS: return v != NULL;
    case AT_OP_NOT_EXISTS: return v == NULL;
    case AT_OP_NE: return !v || !at_av_equal(v, c->value);
    case AT_OP_EQ: return v && at_av_equal(v, c->value);
    case AT_OP_BEGINS_WITH: return v && begins_with(v, c->value);
    default: break;
    }
    if (!v) return 0;
    cmp = at_av_compare(v, c->value, &ok);
    if (!ok) return 0;
    switch (c->op) {
    case AT_OP_LT: return cmp < 0;
    case AT_OP_LE: return cmp <= 0;
    case AT_OP_GT: return cmp > 0;
    case AT_OP_GE: return cmp >= 0;
    case AT_OP_BETWEEN: {
        int ok2 = 0, cmp2 = at_av_compare(v, c->value2, &ok2);
        return cmp >= 0 && ok2 && cmp2 <= 0;
    }
    default: return 0;
    }
}

int at_cond_eval(const json_t *item, const at_cond *c)
{
    if (!c) return 1;
    for (size_t i = 0; i < c->n; i++)
        if (!clause_eval(item, &c->v[i])) return 0;
    return 1;
}
