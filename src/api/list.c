/* Cursor-paged lists (SPEC §4 "Lists"): a list's query from its plan, and the pager
 * that builds one page from one or more queries. A cursor's payload is
 * {"p": phase, "k": exclusive start key of that phase's query} ("k" absent: the phase
 * from its beginning), signed and bound to the list's scope (cursor.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "api.h"
#include "actionstools/cursor.h"
#include "actionstools/err.h"
#include "actionstools/packed.h"
#include "actionstools/view.h"
#include "actionstools/banned.h"

#define DEFAULT_LIMIT 25
#define MAX_LIMIT 100

/* ---- a list's query ---- */

static int own(at_list_query *lq, json_t *av)
{
    if (!av) return AT_ENOMEM;
    if (lq->nowned == sizeof lq->owned / sizeof lq->owned[0]) {
        json_decref(av);
        return AT_ETOOBIG;
    }
    lq->owned[lq->nowned++] = av;
    return 0;
}

int at_api_list_query_filter(at_list_query *lq, const char *attr, at_op op, json_t *av)
{
    int rc;
    if (lq->q.filter.n == AT_API_MAX_FILTERS) {
        json_decref(av);
        return AT_ETOOBIG;
    }
    if ((rc = own(lq, av))) return rc;
    lq->filters[lq->q.filter.n++] = (at_clause){attr, op, av, NULL};
    return 0;
}

void at_api_list_query_release(at_list_query *lq)
{
    for (size_t i = 0; i < lq->nowned; i++) json_decref(lq->owned[i]);
    lq->nowned = 0;
}

/* Adds "|name=<len>:value" to the scope: a cursor is good only for the same list with
 * the same parameters. */
static int scope_add(at_buf *b, const char *name, const char *value)
{
    return at_buf_printf(b, "|%s=%zu:%s", name, strlen(value), value);
}

/* Converts the text of query parameter param compared with attribute attr: by r's field
 * of that name, else as a string. Returns a new AV or NULL after answering 400. */
static json_t *param_value(at_ctx *c, const at_resource *r, const char *param, const char *attr,
                           const char *text)
{
    const at_field *f = at_model_field(r, attr);
    char why[160] = "";
    json_t *av = f ? at_model_text_value(f, text, why, sizeof why) : at_av_s(text);
    if (!av) at_reply_validation(c, json_pack("{s:s}", param, why[0] ? why : "out of memory"));
    return av;
}

int at_api_list_query_start(at_ctx *c, const at_resource *r, const char *index, json_t *pv,
                            const char *pv_text, int forward, at_list_query *lq)
{
    const at_table_def *t = at_schema_table(r->table);
    const at_index_def *ix = index ? at_schema_index(t, index) : NULL;
    const at_attr_def *pk = ix ? &ix->pk : &t->pk;
    at_buf scope;
    int rc;

    memset(lq, 0, sizeof *lq);
    lq->q.table = r->table;
    lq->q.index = index;
    lq->q.forward = forward;
    lq->q.flags = AT_Q_LIVE;
    lq->q.filter.v = lq->filters;
    if ((rc = own(lq, pv))) return rc;
    lq->q.pk = pv;
    at_buf_init(&scope, 8192);
    rc = at_buf_printf(&scope, "%s|%s|%zu:%s|%zu:%s", c->route->pattern, index ? index : "",
                       strlen(c->id->instance_id), c->id->instance_id, strlen(pv_text), pv_text);
    /* A partition that is not the tenant holds other tenants' items too. */
    if (!rc && strcmp(pk->name, "instance_id") != 0)
        rc = at_api_list_query_filter(lq, "instance_id", AT_OP_EQ, at_av_s(c->id->instance_id));
    if (!rc && !(lq->scope = at_arena_strdup(c->arena, at_buf_str(&scope)))) rc = AT_ENOMEM;
    at_buf_release(&scope);
    if (rc) at_api_list_query_release(lq);
    return rc;
}

int at_api_list_query_sk(at_list_query *lq, at_op op, json_t *av)
{
    const at_table_def *t = at_schema_table(lq->q.table);
    const at_index_def *ix = lq->q.index ? at_schema_index(t, lq->q.index) : NULL;
    const char *sk = ix ? ix->sk.name : t->sk.name;
    int rc = own(lq, av);
    if (!rc) lq->q.sk = (at_clause){sk, op, av, NULL};
    return rc;
}

int at_api_list_query_init(at_ctx *c, const at_resource *r, const at_list_def *l, at_list_query *lq)
{
    const at_table_def *t = at_schema_table(r->table);
    const at_index_def *ix = l->index ? at_schema_index(t, l->index) : NULL;
    const at_attr_def *sk = ix ? &ix->sk : &t->sk;
    const char *pv = NULL, *v;
    json_t *av;
    at_buf scope;
    int rc = 0;

    memset(lq, 0, sizeof *lq);
    switch (l->pk.src) {
    case AT_SRC_TENANT: pv = c->id->instance_id; break;
    case AT_SRC_USER: pv = c->id->user_uuid; break;
    case AT_SRC_QUERY:
        pv = at_query_param(c, l->pk.name);
        if (!pv || !*pv) {
            at_reply_validation(c, json_pack("{s:s}", l->pk.name, "required"));
            return 0;
        }
        break;
    default: pv = at_api_key_param(c, l->pk.name, at_api_param_what(c, l->pk.name)); break;
    }
    if (!pv) return 0;
    if ((rc = at_api_list_query_start(c, r, l->index, at_av_s(pv), pv, l->forward, lq))) {
        at_reply_error(c, 500, "cannot prepare the list (%s)", at_strerror(rc));
        return 0;
    }
    at_buf_init(&scope, 8192);
    rc = at_buf_adds(&scope, lq->scope);
    if (!rc && l->sk_param && (v = at_query_param(c, l->sk_param))) {
        if (!(av = param_value(c, r, l->sk_param, sk->name, v))) goto replied;
        rc = at_api_list_query_sk(lq, l->sk_op, av);
        if (!rc) rc = scope_add(&scope, l->sk_param, v);
    }
    if (!rc && l->order_param && (v = at_query_param(c, l->order_param))) {
        if (strcmp(v, "asc") != 0 && strcmp(v, "desc") != 0) {
            at_reply_validation(c, json_pack("{s:s}", l->order_param, "must be asc or desc"));
            goto replied;
        }
        lq->q.forward = v[0] == 'a';
        rc = scope_add(&scope, l->order_param, v);
    }
    for (const at_list_filter *f = l->filters; !rc && f && f->param; f++) {
        if (!(v = at_query_param(c, f->param))) continue;
        if (!(av = param_value(c, r, f->param, f->field, v))) goto replied;
        rc = at_api_list_query_filter(lq, f->field, f->op, av);
        if (!rc) rc = scope_add(&scope, f->param, v);
    }
    if (!rc && !(lq->scope = at_arena_strdup(c->arena, at_buf_str(&scope)))) rc = AT_ENOMEM;
    at_buf_release(&scope);
    if (!rc) return 1;
    at_reply_error(c, 500, "cannot prepare the list (%s)", at_strerror(rc));
    at_api_list_query_release(lq);
    return 0;
replied:
    at_buf_release(&scope);
    at_api_list_query_release(lq);
    return 0;
}

int at_api_list_query_scope(at_ctx *c, at_list_query *lq, const char *name, const char *value)
{
    const char *s = at_arena_printf(c->arena, "%s|%s=%zu:%s", lq->scope, name, strlen(value), value);
    if (!s) return AT_ENOMEM;
    lq->scope = s;
    return 0;
}

/* ---- the pager ---- */

void at_pager_bad_cursor(at_pager *p)
{
    if (!p->failed)
        at_reply_validation(p->c, json_pack("{s:s}", "cursor", "malformed; start again without a cursor"));
    p->failed = p->done = 1;
}

int at_pager_begin(at_pager *p, at_ctx *c, const at_resource *r, const char *scope, int nphases)
{
    const char *limit = at_query_param(c, "limit"), *cursor = at_query_param(c, "cursor");
    json_t *ph, *k;
    memset(p, 0, sizeof *p);
    p->c = c;
    p->r = r;
    p->scope = scope;
    p->limit = DEFAULT_LIMIT;
    at_buf_init(&p->out, AT_API_MAX_ANSWER);
    at_buf_init(&p->last_raw, AT_PAGE_RAW_MAX);
    if (limit) {
        char *end;
        long v;
        errno = 0;
        v = strtol(limit, &end, 10);
        if (errno || *end || end == limit || v < 1 || v > MAX_LIMIT) {
            at_reply_validation(c, json_pack("{s:s}", "limit", "must be a whole number from 1 to 100"));
            p->failed = p->done = 1;
            return 0;
        }
        p->limit = (size_t)v;
    }
    if (cursor && *cursor) {
        if (at_cursor_decode(c->cursor_key, scope, cursor, &p->cursor) || !json_is_object(p->cursor)) {
            at_reply_validation(c, json_pack("{s:s}", "cursor",
                                             "malformed or not from this list; start again "
                                             "without a cursor"));
            p->failed = p->done = 1;
            return 0;
        }
        ph = json_object_get(p->cursor, "p");
        k = json_object_get(p->cursor, "k");
        if (!json_is_integer(ph) || json_integer_value(ph) < 0 || json_integer_value(ph) >= nphases ||
            (k && !json_is_object(k))) {
            at_pager_bad_cursor(p);
            return 0;
        }
    }
    if (at_buf_adds(&p->out, "{\"items\":[")) {
        at_reply_error(c, 500, "out of memory");
        p->failed = p->done = 1;
        return 0;
    }
    return 1;
}

int at_pager_phase(const at_pager *p)
{
    return (int)json_integer_value(json_object_get(p->cursor, "p"));
}

/* Returns 1 when key holds attribute a (if the key has such a part) with an AV of a's
 * schema type that a store accepts as a key value (a string not empty). */
static int key_part_ok(const json_t *key, const at_attr_def *a)
{
    const json_t *av, *v;
    if (!a->name) return 1;
    av = json_object_get(key, a->name);
    v = json_object_get(av, a->type == AT_KEY_S ? "S" : "N");
    return json_is_object(av) && json_object_size(av) == 1 && json_is_string(v) && json_string_length(v) > 0;
}

/* Counts the distinct key attributes of a table (and index). */
static size_t key_attr_count(const at_table_def *t, const at_index_def *ix)
{
    const char *names[4] = {t->pk.name, t->sk.name, ix ? ix->pk.name : NULL, ix ? ix->sk.name : NULL};
    size_t n = 0;
    for (int i = 0; i < 4; i++) {
        int dup = !names[i];
        for (int j = 0; j < i && !dup; j++) dup = names[j] && strcmp(names[i], names[j]) == 0;
        n += !dup;
    }
    return n;
}

const json_t *at_pager_start_key(at_pager *p, int phase, const at_query *q)
{
    const json_t *k = json_object_get(p->cursor, "k");
    const at_table_def *t = at_schema_table(q->table);
    const at_index_def *ix = q->index ? at_schema_index(t, q->index) : NULL;
    const at_attr_def *pk = ix ? &ix->pk : &t->pk;

    if (p->failed || !p->cursor || phase != at_pager_phase(p) || !k) return NULL;
    /* Signed by us, so well-formed unless the key leaked; checked all the same, so that
     * a start key the store would refuse is a 400, never a 500. */
    if (at_av_check_item(k, NULL, 0) || !key_part_ok(k, &t->pk) || !key_part_ok(k, &t->sk) ||
        (ix && (!key_part_ok(k, &ix->pk) || !key_part_ok(k, &ix->sk))) ||
        json_object_size(k) != key_attr_count(t, ix) || !at_av_equal(json_object_get(k, pk->name), q->pk)) {
        at_pager_bad_cursor(p);
        return NULL;
    }
    return k;
}

/* Ends the page after the last item written; the next page starts after it, or at the
 * beginning of next_phase when that comes later. */
static void stop_after_last(at_pager *p, int next_phase)
{
    const at_table_def *t = at_schema_table(p->r->table);
    json_t *key;
    p->done = 1;
    if (next_phase > p->last_phase) {
        p->next = json_pack("{s:i}", "p", next_phase);
        return;
    }
    if (p->last)
        key = at_schema_item_key(t, p->last_index ? at_schema_index(t, p->last_index) : NULL, p->last);
    else
        key = at_packed_item_key(t, p->last_index ? at_schema_index(t, p->last_index) : NULL,
                                 p->last_raw.ptr, p->last_raw.len);
    p->next = key ? json_pack("{s:i, s:o}", "p", p->last_phase, "k", key) : NULL;
    if (!p->next) {
        at_reply_error(p->c, 500, "cannot make the next cursor");
        p->failed = 1;
    }
}

/* Writes one item into the page, from its AV map (item) or packed (raw, n bytes), and
 * remembers it as the last one. Returns 1, or 0 when the page is done. */
static int pager_add(at_pager *p, int phase, const at_query *q, const json_t *item,
                     const unsigned char *raw, size_t n)
{
    int rc;
    if (p->done) return 0;
    if (p->n == p->limit) { /* one more than the page holds: something follows */
        stop_after_last(p, phase);
        return 0;
    }
    rc = p->n ? at_buf_addc(&p->out, ',') : 0;
    if (!rc) rc = item ? at_api_write_view(&p->out, p->r, item) : at_view_write_raw(&p->out, raw, n, &p->r->view);
    json_decref(p->last);
    p->last = NULL;
    at_buf_reset(&p->last_raw);
    if (!rc && item) p->last = json_incref((json_t *)item);
    if (!rc && !item) rc = at_buf_add(&p->last_raw, raw, n);
    if (rc) {
        at_reply_error(p->c, 500, "cannot build the page (%s)", at_strerror(rc));
        p->failed = p->done = 1;
        return 0;
    }
    p->n++;
    p->last_phase = phase;
    p->last_index = q->index;
    if (p->out.len >= AT_API_LIST_ANSWER_CAP) stop_after_last(p, phase);
    return 1;
}

int at_pager_add(at_pager *p, int phase, const at_query *q, const json_t *item)
{
    return pager_add(p, phase, q, item, NULL, 0);
}

void at_pager_stop(at_pager *p, int phase, const json_t *last_key)
{
    if (p->done) return;
    p->done = 1;
    p->next = json_pack("{s:i, s:O}", "p", phase, "k", last_key);
    if (!p->next) {
        at_reply_error(p->c, 500, "out of memory");
        p->failed = 1;
    }
}

void at_pager_query(at_pager *p, int phase, at_query *q)
{
    at_page page = {0};
    size_t i, n;
    int rc;
    if (p->done) return;
    q->start_key = at_pager_start_key(p, phase, q);
    if (p->failed) return;
    q->limit = p->limit - p->n + 1; /* one more tells whether another page follows */
    /* Items come packed and are written straight into the answer: no tree of JSON
     * objects per stored item (docs/storage.md, "Packed items"). */
    q->flags |= AT_Q_RAW;
    rc = at_store_query(p->c->store, q, &page);
    q->flags &= ~(unsigned)AT_Q_RAW;
    if (rc) {
        at_reply_store_error(p->c, rc, "list items");
        p->failed = p->done = 1;
        return;
    }
    for (i = 0; i < at_page_count(&page); i++) {
        const unsigned char *raw = at_page_raw(&page, i, &n);
        if (!pager_add(p, phase, q, NULL, raw, n)) break;
    }
    /* Fewer items than asked and a key to go on from: the store stopped at its work
     * bound (SPEC §4: a short page with a next_cursor is normal). */
    if (!p->done && page.last_key && at_page_count(&page) < q->limit)
        at_pager_stop(p, phase, page.last_key);
    at_page_release(&page);
}

void at_pager_finish(at_pager *p)
{
    char *cursor = NULL;
    int rc = 0;
    if (!p->failed) {
        if (p->next) {
            cursor = at_cursor_encode(p->c->cursor_key, p->scope, p->next);
            rc = cursor ? at_buf_printf(&p->out, "],\"next_cursor\":\"%s\"}", cursor) : AT_ENOMEM;
        } else {
            rc = at_buf_adds(&p->out, "],\"next_cursor\":null}");
        }
        if (rc)
            at_reply_error(p->c, 500, "cannot build the page (%s)", at_strerror(rc));
        else
            at_reply_json_buf(p->c, 200, &p->out);
    }
    free(cursor);
    at_buf_release(&p->out);
    json_decref(p->cursor);
    json_decref(p->last);
    at_buf_release(&p->last_raw);
    json_decref(p->next);
    memset(p, 0, sizeof *p);
}

/* ---- a small set, read whole and sorted ---- */

/* The order of a list: its index's sort key, then the table's keys (ties), as the
 * store orders them. */
typedef struct order {
    const char *attr[3];
    int n;
    int forward;
} order;

static void order_init(order *o, const at_query *q)
{
    const at_table_def *t = at_schema_table(q->table);
    const at_index_def *ix = q->index ? at_schema_index(t, q->index) : NULL;
    const char *names[3] = {ix ? ix->sk.name : NULL, t->pk.name, t->sk.name};
    o->n = 0;
    o->forward = q->forward;
    for (int i = 0; i < 3; i++) {
        int dup = !names[i];
        for (int j = 0; j < o->n && !dup; j++) dup = strcmp(o->attr[j], names[i]) == 0;
        if (!dup) o->attr[o->n++] = names[i];
    }
}

/* Compares a and b (items or keys) in the list's order: <0 when a comes first. */
static int order_cmp(const void *pa, const void *pb, void *po)
{
    const order *o = po;
    const json_t *a = *(json_t *const *)pa, *b = *(json_t *const *)pb;
    for (int i = 0; i < o->n; i++) {
        int ok = 0, c = at_av_compare(json_object_get(a, o->attr[i]), json_object_get(b, o->attr[i]), &ok);
        if (ok && c) return o->forward ? c : -c;
    }
    return 0;
}

/* Returns 1 when item holds every attribute of the order (it is in the list's index). */
static int ordered(const order *o, const json_t *item)
{
    for (int i = 0; i < o->n; i++)
        if (!json_object_get(item, o->attr[i])) return 0;
    return 1;
}

/* Adds the items after the cursor's position in phase, sorted into lq's order. */
static void add_sorted(at_pager *p, int phase, const at_query *q, const json_t *items)
{
    const json_t *k = at_pager_start_key(p, phase, q);
    size_t n = 0, i;
    json_t **v, *it;
    order o;
    if (p->failed) return;
    order_init(&o, q);
    v = calloc(json_array_size(items) + 1, sizeof *v);
    if (!v) {
        at_reply_error(p->c, 500, "out of memory");
        p->failed = p->done = 1;
        return;
    }
    json_array_foreach(items, i, it)
    {
        if (ordered(&o, it) && (!k || order_cmp(&it, &k, &o) > 0)) v[n++] = it;
    }
    qsort_r(v, n, sizeof *v, order_cmp, &o);
    for (i = 0; i < n && at_pager_add(p, phase, q, v[i]); i++) {
    }
    free(v);
}

void at_pager_small_query(at_pager *p, int phase, at_list_query *lq, const at_query *small)
{
    at_query sq = *small;
    at_page page = {0};
    int rc;
    if (p->done) return;
    sq.limit = AT_API_SMALL_SET;
    sq.start_key = NULL;
    sq.flags &= ~(unsigned)(AT_Q_RAW | AT_Q_COUNT);
    rc = at_store_query(p->c->store, &sq, &page);
    if (rc) {
        at_reply_store_error(p->c, rc, "list items");
        p->failed = p->done = 1;
    } else if (!page.last_key) {
        add_sorted(p, phase, &lq->q, page.items); /* all of them: few */
    } else {
        at_pager_query(p, phase, &lq->q); /* many: page them for real */
    }
    at_page_release(&page);
}

void at_pager_small_set(at_pager *p, int phase, at_list_query *lq, const char *small, const char *attr,
                        const json_t *value)
{
    at_query sq = lq->q;
    sq.index = small;
    sq.sk = (at_clause){attr, AT_OP_EQ, value, NULL};
    sq.forward = 1;
    at_pager_small_query(p, phase, lq, &sq);
}
