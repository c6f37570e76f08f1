/* The sqlite backend's Query and Scan. A query page is one index range scan:
 *   SELECT "_item" FROM t INDEXED BY ix WHERE pk = ? AND <index predicate>
 *     [AND sk >= ?] [AND sk <= ?] [AND (sk, ties...) > (?, ?...)] ORDER BY sk, ties...
 * stepped lazily until the page holds limit matching items, the range ends, or the page
 * read max_read_bytes. Filters on key columns, soft deletion and TTL are evaluated in
 * SQL; live lists filtered on the tenant read a tenant-scoped partial index. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store/sqlite/sqlite_int.h"
#include "actionstools/av.h"
#include "actionstools/err.h"
#include "actionstools/packed.h"
#include "actionstools/timeutil.h"
#include "actionstools/banned.h"

#define QMAX_BINDS 48
#define QMAX_OWNED 16 /* BEGINS_WITH upper bounds one query may need */

typedef struct bound {
    int on;   /* 1 when this bound applies */
    int incl; /* 1: >= / <=; 0: > / < */
    sq_val v;
} bound;

/* A query turned into SQL text and the values to bind, in order. The statement's
 * columns are: the item (NULL when the row fails the filters evaluated in SQL), the
 * item's length in bytes, then the key columns (kcols) that make its last_key. */
typedef struct qplan {
    const sq_table *t;
    const sq_ix *x;
    const at_query *q;
    bound lo, hi;    /* from the sort key condition */
    int use_start;   /* 1: the row-value comparison with the start key applies */
    sq_val start[3]; /* start key values of the order columns */
    int empty;       /* 1: nothing can match (e.g. start after a key-only item) */
    int scoped;      /* 1: reads x's tenant-scoped twin (x->qscoped) */
    int live_sql;    /* 1: AT_Q_LIVE is evaluated in SQL */
    int kcols[4];    /* key columns of last_key: table keys, then index keys */
    int nk;
    char *owned[QMAX_OWNED]; /* BEGINS_WITH upper bounds (bound values point here) */
    int nowned;
    at_clause *residual; /* filter clauses left to C (owned copies) */
    size_t nresidual;
    sq_val binds[QMAX_BINDS];
    int nb;
    at_buf sql;
    at_buf filter; /* the SQL filter on rows read: "(a = ?) AND (b IS NOT ?)" */
    sq_val fbinds[QMAX_BINDS];
    int nfb;
} qplan;

static void plan_release(qplan *p)
{
    for (int i = 0; i < p->nowned; i++) free(p->owned[i]);
    free(p->residual);
    at_buf_release(&p->sql);
    at_buf_release(&p->filter);
}

static const sq_ix *find_ix(const sq_table *t, const char *name)
{
    if (!name) return &t->base;
    for (size_t i = 0; i < t->nix; i++)
        if (strcmp(t->ix[i].def->name, name) == 0) return &t->ix[i];
    return NULL;
}

/* Compares two values of one key column (text by bytes, numbers numerically). */
static int val_cmp(const sq_val *a, const sq_val *b)
{
    if (a->type == SQLITE_TEXT && b->type == SQLITE_TEXT) {
        size_t n = a->n < b->n ? a->n : b->n;
        int c = memcmp(a->s, b->s, n);
        if (c) return c < 0 ? -1 : 1;
        return a->n < b->n ? -1 : a->n > b->n;
    }
    if (a->type == SQLITE_INTEGER && b->type == SQLITE_INTEGER)
        return a->i < b->i ? -1 : a->i > b->i;
    {
        double x = a->type == SQLITE_INTEGER ? (double)a->i : a->d;
        double y = b->type == SQLITE_INTEGER ? (double)b->i : b->d;
        return x < y ? -1 : x > y;
    }
}

/* Sets *hi to the smallest string above every string that begins with prefix (hi->on
 * stays 0 when the prefix is all 0xff bytes). */
static int prefix_successor(qplan *p, const sq_val *prefix, bound *hi)
{
    size_t n = prefix->n;
    char *succ;
    while (n > 0 && (unsigned char)prefix->s[n - 1] == 0xff)
        n--;
    if (n == 0) return 0;
    if (p->nowned == QMAX_OWNED) return AT_EINVAL;
    succ = malloc(n);
    if (!succ) return AT_ENOMEM;
    p->owned[p->nowned++] = succ;
    memcpy(succ, prefix->s, n);
    succ[n - 1] = (char)((unsigned char)succ[n - 1] + 1);
    hi->on = 1;
    hi->incl = 0;
    hi->v.type = SQLITE_TEXT;
    hi->v.s = succ;
    hi->v.n = n;
    return 0;
}

/* Turns the sort key condition into bounds lo/hi. */
static int sk_bounds(qplan *p, const at_clause *c)
{
    const sq_col *col;
    sq_val v1, v2;
    int rc;

    if (!c->attr) return 0;
    if (p->x->sk < 0) return AT_EINVAL;
    col = &p->t->cols[p->x->sk];
    if (strcmp(c->attr, col->attr) != 0) return AT_EINVAL;
    rc = at_sqlite_av_val(c->value, col->type, &v1);
    if (rc) return rc;
    switch (c->op) {
    case AT_OP_EQ:
        p->lo = (bound){1, 1, v1};
        p->hi = (bound){1, 1, v1};
        return 0;
    case AT_OP_LT:
        p->hi = (bound){1, 0, v1};
        return 0;
    case AT_OP_LE:
        p->hi = (bound){1, 1, v1};
        return 0;
    case AT_OP_GT:
        p->lo = (bound){1, 0, v1};
        return 0;
    case AT_OP_GE:
        p->lo = (bound){1, 1, v1};
        return 0;
    case AT_OP_BETWEEN:
        rc = at_sqlite_av_val(c->value2, col->type, &v2);
        if (rc) return rc;
        p->lo = (bound){1, 1, v1};
        p->hi = (bound){1, 1, v2};
        return 0;
    case AT_OP_BEGINS_WITH:
        if (col->type != AT_KEY_S) return AT_EINVAL;
        p->lo = (bound){1, 1, v1};
        return prefix_successor(p, &v1, &p->hi);
    default:
        return AT_EINVAL;
    }
}

/* Returns the order columns of the index p reads (its sort key, then the table keys
 * breaking ties). Reading a tenant-scoped twin, the tenant is fixed: a tie that is the
 * tenant orders nothing, and is left out (the twin holds it once, before the sort key). */
static int order_cols(const qplan *p, int cols[3])
{
    const sq_ix *x = p->x;
    int n = 0;
    if (x->sk >= 0) cols[n++] = x->sk;
    for (int i = 0; i < x->nties; i++)
        if (!(p->scoped && x->ties[i] == p->t->scope)) cols[n++] = x->ties[i];
    return n;
}

/* Reads the exclusive start key: the table keys and the index keys, as
 * at_schema_item_key makes them. */
static int read_start(qplan *p, const json_t *start, const sq_val *pk, const sq_val *scope, int forward)
{
    const at_table_def *d = p->t->def;
    json_t *want;
    sq_val spk;
    int cols[3], n = order_cols(p, cols), rc;
    bound *near = forward ? &p->lo : &p->hi;

    if (!start) return 0;
    want = at_schema_item_key(d, p->x->def, start);
    rc = want && json_object_size(want) == json_object_size(start) ? 0 : AT_EINVAL;
    json_decref(want);
    if (!rc)
        rc = at_sqlite_av_val(json_object_get(start, p->t->cols[p->x->pk].attr),
                              p->t->cols[p->x->pk].type, &spk);
    if (!rc && val_cmp(&spk, pk) != 0) rc = AT_EINVAL; /* outside the query's partition */
    for (int i = 0; !rc && p->scoped && i < p->x->nties; i++) {
        sq_val sv; /* a tenant the order leaves out: the start key's must be the query's */
        if (p->x->ties[i] != p->t->scope) continue;
        rc = at_sqlite_av_val(json_object_get(start, SQ_SCOPE_ATTR), AT_KEY_S, &sv);
        if (!rc && val_cmp(&sv, scope) != 0) rc = AT_EINVAL;
    }
    for (int i = 0; !rc && i < n; i++)
        rc = at_sqlite_av_val(json_object_get(start, p->t->cols[cols[i]].attr),
                              p->t->cols[cols[i]].type, &p->start[i]);
    if (rc) return rc;
    if (n == 0) {
        p->empty = 1; /* a partition-key-only table: its one item was returned */
        return 0;
    }
    p->use_start = 1;
    if (near->on) {
        /* Keep only the tighter of the two near bounds, so SQLite seeks to it. */
        int c = val_cmp(&p->start[0], &near->v);
        if (!forward) c = -c;
        if (c > 0 || (c == 0 && near->incl))
            near->on = 0;
        else
            p->use_start = 0;
    }
    return 0;
}

static int bind_add(qplan *p, const sq_val *v)
{
    if (p->nb >= QMAX_BINDS) return AT_EINVAL;
    p->binds[p->nb++] = *v;
    return 0;
}

static int add_colname(qplan *p, int col)
{
    return at_buf_printf(&p->sql, "\"%s\"", p->t->cols[col].attr);
}

static int add_bound(qplan *p, const bound *b, const char *strict, const char *incl)
{
    if (!b->on) return 0;
    return at_buf_adds(&p->sql, " AND ") || add_colname(p, p->x->sk) ||
           at_buf_adds(&p->sql, b->incl ? incl : strict) || bind_add(p, &b->v);
}

/* Appends "(c1, c2) > (?, ?)" (or <) for the start key. */
static int add_start(qplan *p, int forward)
{
    int cols[3], n = order_cols(p, cols), rc;
    if (!p->use_start) return 0;
    rc = at_buf_adds(&p->sql, " AND (");
    for (int i = 0; !rc && i < n; i++)
        rc = (i && at_buf_adds(&p->sql, ", ")) || add_colname(p, cols[i]);
    if (!rc) rc = at_buf_adds(&p->sql, forward ? ") > (" : ") < (");
    for (int i = 0; !rc && i < n; i++)
        rc = at_buf_adds(&p->sql, i ? ", ?" : "?") || bind_add(p, &p->start[i]);
    return rc ? rc : at_buf_adds(&p->sql, ")");
}

static int add_order(qplan *p, int forward)
{
    int cols[3], n = order_cols(p, cols), rc = 0;
    for (int i = 0; !rc && i < n; i++)
        rc = at_buf_adds(&p->sql, i ? ", " : " ORDER BY ") || add_colname(p, cols[i]) ||
             at_buf_adds(&p->sql, forward ? "" : " DESC");
    return rc;
}

/* ---- filters evaluated in SQL ---- */

static int col_of_attr(const sq_table *t, const char *attr)
{
    for (int i = 0; i < t->ncols; i++)
        if (strcmp(t->cols[i].attr, attr) == 0) return i;
    return -1;
}

/* Returns 1 when the index read projects attr (the table and ALL indexes: every one). */
static int projected(const qplan *p, const char *attr)
{
    const at_index_def *d = p->x->def;
    const at_table_def *td = p->t->def;
    if (!d || !d->include) return 1;
    if (strcmp(attr, td->pk.name) == 0 || (td->sk.name && strcmp(attr, td->sk.name) == 0) ||
        strcmp(attr, d->pk.name) == 0 || (d->sk.name && strcmp(attr, d->sk.name) == 0))
        return 1;
    for (size_t i = 0; d->include[i]; i++)
        if (strcmp(attr, d->include[i]) == 0) return 1;
    return 0;
}

/* Appends one term of the SQL filter: " AND " between terms, the text, its values. */
static int filter_term(qplan *p, const char *text, const sq_val *v1, const sq_val *v2)
{
    int rc = p->filter.len ? at_buf_adds(&p->filter, " AND ") : 0;
    if (!rc) rc = at_buf_adds(&p->filter, text);
    if (!rc && v1) rc = p->nfb < QMAX_BINDS ? (p->fbinds[p->nfb++] = *v1, 0) : AT_EINVAL;
    if (!rc && v2) rc = p->nfb < QMAX_BINDS ? (p->fbinds[p->nfb++] = *v2, 0) : AT_EINVAL;
    return rc;
}

/* Turns clause c into SQL when it is on a key column (which holds exactly the
 * attribute's value, NULL when absent) with a value of the column's type; sets *done.
 * Anything else is left to at_cond_eval in C. */
static int push_clause(qplan *p, const at_clause *c, int *done)
{
    int col = col_of_attr(p->t, c->attr), rc;
    sq_val v1, v2;
    bound hi = {0};
    char text[256];
    const char *name, *op;

    *done = 0;
    if (col < 0 || !projected(p, c->attr)) return 0;
    name = p->t->cols[col].attr;
    if (strlen(name) > 100) return 0;
    if (c->op == AT_OP_EXISTS || c->op == AT_OP_NOT_EXISTS) {
        snprintf(text, sizeof text, "\"%s\" IS %sNULL", name, c->op == AT_OP_EXISTS ? "NOT " : "");
        *done = 1;
        return filter_term(p, text, NULL, NULL);
    }
    if (at_sqlite_av_val(c->value, p->t->cols[col].type, &v1)) return 0;
    switch (c->op) {
    case AT_OP_EQ: op = "="; break;
    case AT_OP_NE: op = "IS NOT"; break; /* true when absent (NULL), as DynamoDB's <> */
    case AT_OP_LT: op = "<"; break;
    case AT_OP_LE: op = "<="; break;
    case AT_OP_GT: op = ">"; break;
    case AT_OP_GE: op = ">="; break;
    case AT_OP_BETWEEN:
        if (at_sqlite_av_val(c->value2, p->t->cols[col].type, &v2)) return 0;
        snprintf(text, sizeof text, "\"%s\" BETWEEN ? AND ?", name);
        *done = 1;
        return filter_term(p, text, &v1, &v2);
    case AT_OP_BEGINS_WITH:
        if (p->t->cols[col].type != AT_KEY_S) return 0;
        rc = prefix_successor(p, &v1, &hi);
        if (rc) return rc;
        if (hi.on)
            snprintf(text, sizeof text, "(\"%s\" >= ? AND \"%s\" < ?)", name, name);
        else
            snprintf(text, sizeof text, "\"%s\" >= ?", name);
        *done = 1;
        return filter_term(p, text, &v1, hi.on ? &hi.v : NULL);
    default: return 0;
    }
    snprintf(text, sizeof text, "\"%s\" %s ?", name, op);
    *done = 1;
    return filter_term(p, text, &v1, NULL);
}

/* Picks the tenant-scoped twin of the index when the query allows it: live items only,
 * and a filter clause instance_id = S value. Returns that clause's number, or -1. */
static int pick_scoped(qplan *p, sq_val *scope)
{
    const at_query *q = p->q;
    if (!p->x->qscoped || !(q->flags & AT_Q_LIVE)) return -1;
    for (size_t i = 0; i < q->filter.n; i++) {
        const at_clause *c = &q->filter.v[i];
        if (c->op == AT_OP_EQ && strcmp(c->attr, SQ_SCOPE_ATTR) == 0 &&
            at_sqlite_av_val(c->value, AT_KEY_S, scope) == 0)
            return (int)i;
    }
    return -1;
}

/* Splits the query's filters between SQL (key columns, soft deletion, TTL) and C. */
static int plan_filters(qplan *p, int scoped_clause, int64_t now)
{
    const at_query *q = p->q;
    int rc = 0, done;

    if (q->filter.n && !(p->residual = calloc(q->filter.n, sizeof *p->residual))) return AT_ENOMEM;
    for (size_t i = 0; !rc && i < q->filter.n; i++) {
        if ((int)i == scoped_clause) continue; /* the scoped index's seek does it */
        rc = push_clause(p, &q->filter.v[i], &done);
        if (!rc && !done) p->residual[p->nresidual++] = q->filter.v[i];
    }
    /* DynamoDB filters what an index holds: without deleted_at projected, AT_Q_LIVE
     * sees no deleted_at and keeps every item. The scoped index holds live items only. */
    if (!rc && (q->flags & AT_Q_LIVE) && !p->scoped && projected(p, SQ_DELETED_ATTR)) {
        p->live_sql = 1;
        rc = filter_term(p, "\"_deleted\" IS NULL", NULL, NULL);
    }
    if (!rc && p->t->has_ttl) {
        sq_val v = {.type = SQLITE_INTEGER, .i = now};
        rc = filter_term(p, "(\"_ttl\" IS NULL OR \"_ttl\" >= ?)", &v, NULL);
    }
    return rc;
}

static int build_sql(qplan *p, const sq_val *pk, const sq_val *scope, int forward)
{
    int rc;
    if (p->filter.len)
        rc = at_buf_printf(&p->sql, "SELECT CASE WHEN %s THEN \"_item\" END", at_buf_str(&p->filter));
    else
        rc = at_buf_adds(&p->sql, "SELECT \"_item\"");
    if (!rc) rc = at_buf_adds(&p->sql, ", length(\"_item\")");
    for (int i = 0; !rc && i < p->nk; i++) rc = at_buf_adds(&p->sql, ", ") || add_colname(p, p->kcols[i]);
    if (!rc) rc = at_buf_printf(&p->sql, " FROM %s", p->t->qname);
    if (!rc && (p->scoped || p->x->own))
        rc = at_buf_printf(&p->sql, " INDEXED BY %s", p->scoped ? p->x->qscoped : p->x->qindex);
    if (!rc)
        rc = at_buf_adds(&p->sql, " WHERE ") || add_colname(p, p->x->pk) ||
             at_buf_adds(&p->sql, " = ?") || bind_add(p, pk);
    if (!rc && p->scoped)
        rc = at_buf_adds(&p->sql, " AND ") || add_colname(p, p->t->scope) ||
             at_buf_adds(&p->sql, " = ?") || bind_add(p, scope) || at_buf_adds(&p->sql, " AND ") ||
             at_sqlite_scoped_predicate(p->t, p->x, &p->sql);
    else if (!rc && p->x->own)
        rc = at_buf_adds(&p->sql, " AND ") || at_sqlite_ix_predicate(p->t, p->x, &p->sql);
    if (!rc) rc = add_bound(p, &p->lo, " > ?", " >= ?");
    if (!rc) rc = add_bound(p, &p->hi, " < ?", " <= ?");
    if (!rc) rc = add_start(p, forward);
    if (!rc) rc = add_order(p, forward);
    return rc;
}

/* Sets the key columns of last_key: the table's keys, then the index's. */
static void key_cols(qplan *p)
{
    int cand[4] = {p->t->pk, p->t->sk, p->x->def ? p->x->pk : -1, p->x->def ? p->x->sk : -1};
    for (int i = 0; i < 4; i++) {
        int dup = cand[i] < 0;
        for (int j = 0; j < p->nk && !dup; j++) dup = p->kcols[j] == cand[i];
        if (!dup) p->kcols[p->nk++] = cand[i];
    }
}

/* Plans q: checks its keys and fills p's SQL and bindings. */
static int plan_query(sq_store *s, const at_query *q, qplan *p)
{
    sq_val pk, scope = {0};
    int rc, scoped_clause;

    memset(p, 0, sizeof *p);
    at_buf_init(&p->sql, SQ_SQL_MAX);
    at_buf_init(&p->filter, SQ_SQL_MAX);
    p->q = q;
    p->t = &s->tables[q->table];
    p->x = find_ix(p->t, q->index);
    if (!p->x) return AT_EINVAL;
    key_cols(p);
    rc = at_sqlite_av_val(q->pk, p->t->cols[p->x->pk].type, &pk);
    if (!rc) rc = sk_bounds(p, &q->sk);
    scoped_clause = rc ? -1 : pick_scoped(p, &scope);
    p->scoped = scoped_clause >= 0;
    if (!rc) rc = read_start(p, q->start_key, &pk, &scope, q->forward);
    if (!rc) rc = plan_filters(p, scoped_clause, at_now_us() / 1000000);
    if (!rc) rc = build_sql(p, &pk, &scope, q->forward);
    return rc;
}

/* ---- reading a page ---- */

/* Returns the item cut down to what an INCLUDE-projection index holds. */
static json_t *project(const sq_table *t, const at_index_def *d, json_t *item)
{
    json_t *out = at_schema_item_key(t->def, d, item);
    for (size_t i = 0; out && d->include[i]; i++) {
        json_t *v = json_object_get(item, d->include[i]);
        if (v && json_object_set(out, d->include[i], v)) {
            json_decref(out);
            out = NULL;
        }
    }
    json_decref(item);
    return out;
}

static int keep_projected(const char *name, void *arg)
{
    return projected(arg, name);
}

/* Adds the stored item data (n bytes; it passed the SQL filters) to the page when it
 * passes the filters left to C (AT_Q_COUNT: counts it). tmp is scratch space for
 * projections. */
static int take_row(const qplan *p, const void *data, size_t n, at_buf *tmp, at_page *page)
{
    const at_index_def *d = p->x->def;
    at_cond residual = {p->residual, p->nresidual};
    int raw = !!(p->q->flags & AT_Q_RAW), count = !!(p->q->flags & AT_Q_COUNT), rc;
    json_t *it;

    if (count && !p->nresidual) {
        page->count++; /* every filter was in SQL: the item is not even read */
        return 0;
    }
    if (raw && !count && !p->nresidual && at_packed_is(data, n)) {
        /* The fast path: no JSON objects at all. */
        if (!d || !d->include) return at_page_add_raw(page, data, n);
        at_buf_reset(tmp);
        rc = at_packed_project(tmp, data, n, keep_projected, (void *)p);
        return rc ? AT_EIO : at_page_add_raw(page, tmp->ptr, tmp->len);
    }
    it = at_sqlite_load_item(data, n);
    if (!it) return at_sqlite_err(NULL, SQLITE_CORRUPT, "query: stored item is unreadable");
    /* DynamoDB filters what the index holds: project first. */
    if (d && d->include && !(it = project(p->t, d, it))) return AT_ENOMEM;
    if (!at_cond_eval(it, &residual))
        rc = 0;
    else if (count)
        rc = (page->count++, 0);
    else if (raw)
        rc = at_page_add_item_raw(page, it);
    else
        rc = json_array_append(page->items, it) ? AT_ENOMEM : 0;
    json_decref(it);
    return rc;
}

/* Returns the key of the current row (last_key's form) from its key columns. */
static json_t *row_key(sqlite3_stmt *st, const qplan *p)
{
    json_t *key = json_object();
    for (int i = 0; key && i < p->nk; i++) {
        int ci = 2 + i;
        json_t *av = NULL;
        char num[40];
        switch (sqlite3_column_type(st, ci)) {
        case SQLITE_TEXT:
            av = json_object();
            if (av && json_object_set_new(av, "S",
                                          json_stringn((const char *)sqlite3_column_text(st, ci),
                                                       (size_t)sqlite3_column_bytes(st, ci)))) {
                json_decref(av);
                av = NULL;
            }
            break;
        case SQLITE_INTEGER: av = at_av_n_int(sqlite3_column_int64(st, ci)); break;
        case SQLITE_FLOAT:
            snprintf(num, sizeof num, "%.17g", sqlite3_column_double(st, ci));
            av = at_av_n_text(num);
            break;
        default: break;
        }
        if (!av || json_object_set_new(key, p->t->cols[p->kcols[i]].attr, av)) {
            json_decref(key);
            key = NULL;
        }
    }
    return key;
}

/* Steps st and adds the wanted items to the page (AT_Q_COUNT: counts them) until it
 * holds limit items or has read max_read_bytes of stored items; last_key is then the
 * current row's key. */
static int read_page(sq_conn *c, sqlite3_stmt *st, const qplan *p, at_page *page)
{
    const at_query *q = p->q;
    size_t max = q->max_read_bytes ? q->max_read_bytes : AT_QUERY_MAX_READ, read = 0;
    at_buf tmp;
    int rc;

    at_buf_init(&tmp, SQ_PACKED_MAX);
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        const void *data = sqlite3_column_blob(st, 0);
        size_t n = (size_t)sqlite3_column_bytes(st, 0);
        read += (size_t)sqlite3_column_int64(st, 1);
        if (data && (rc = take_row(p, data, n, &tmp, page))) break;
        if ((q->flags & AT_Q_COUNT ? page->count : at_page_count(page)) == q->limit || read >= max) {
            page->last_key = row_key(st, p);
            rc = page->last_key ? SQLITE_DONE : AT_ENOMEM;
            break;
        }
    }
    at_buf_release(&tmp);
    if (rc == SQLITE_DONE) return 0;
    return rc < 0 ? rc : at_sqlite_err(c, rc, "query");
}

static int bind_all(sqlite3_stmt *st, const qplan *p)
{
    int k = 1;
    for (int i = 0; i < p->nfb; i++)
        if (at_sqlite_bind(st, k++, &p->fbinds[i]) != SQLITE_OK) return AT_EINVAL;
    for (int i = 0; i < p->nb; i++)
        if (at_sqlite_bind(st, k++, &p->binds[i]) != SQLITE_OK) return AT_EINVAL;
    return 0;
}

int at_sqlite_query(at_store *st, const at_query *q, at_page *out)
{
    sq_store *s = (sq_store *)st;
    sq_conn *c = NULL;
    sqlite3_stmt *stmt = NULL;
    qplan p;
    int rc;

    rc = plan_query(s, q, &p);
    if (!rc && !(q->flags & AT_Q_RAW) && !(out->items = json_array())) rc = AT_ENOMEM;
    if (rc || p.empty) goto out;
    rc = at_sqlite_conn_get(s, &c);
    if (!rc) rc = at_sqlite_prepare(c, at_buf_str(&p.sql), &stmt);
    if (!rc) rc = bind_all(stmt, &p);
    if (!rc) rc = read_page(c, stmt, &p, out);
    if (stmt) {
        sqlite3_reset(stmt);
        sqlite3_clear_bindings(stmt);
    }
out:
    at_sqlite_conn_put(s, c);
    plan_release(&p);
    if (rc) at_page_release(out);
    return rc;
}

int at_sqlite_explain(at_store *st, const at_query *q, char **plan)
{
    sq_store *s = (sq_store *)st;
    sq_conn *c = NULL;
    sqlite3_stmt *stmt = NULL;
    at_buf sql, text;
    qplan p;
    int rc;

    *plan = NULL;
    at_buf_init(&sql, SQ_SQL_MAX);
    at_buf_init(&text, SQ_SQL_MAX);
    rc = plan_query(s, q, &p);
    if (!rc) rc = at_buf_printf(&sql, "EXPLAIN QUERY PLAN %s", at_buf_str(&p.sql));
    if (!rc) rc = at_sqlite_conn_get(s, &c);
    if (rc) goto out;
    rc = sqlite3_prepare_v2(c->db, at_buf_str(&sql), -1, &stmt, NULL);
    if (rc != SQLITE_OK) {
        rc = at_sqlite_err(c, rc, "explain");
        goto out;
    }
    while ((rc = sqlite3_step(stmt)) == SQLITE_ROW)
        if (at_buf_printf(&text, "%s\n", (const char *)sqlite3_column_text(stmt, 3))) break;
    rc = rc == SQLITE_DONE ? 0 : AT_EIO;
    if (!rc) rc = at_buf_printf(&text, "-- %s\n", at_buf_str(&p.sql));
    if (!rc) *plan = at_buf_take(&text, NULL);
out:
    sqlite3_finalize(stmt);
    at_sqlite_conn_put(s, c);
    plan_release(&p);
    at_buf_release(&sql);
    at_buf_release(&text);
    return rc;
}

/* ---- scan ---- */

static int scan_rows(sq_conn *c, sqlite3_stmt *st, const sq_table *t, size_t limit, at_page *out)
{
    int64_t now = at_now_us() / 1000000;
    int rc;

    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        json_t *it =
            at_sqlite_load_item(sqlite3_column_blob(st, 0), (size_t)sqlite3_column_bytes(st, 0));
        if (!it) return at_sqlite_err(NULL, SQLITE_CORRUPT, "scan: stored item is not JSON");
        if (at_sqlite_expired(t, it, now)) {
            json_decref(it);
            continue;
        }
        if (json_array_append_new(out->items, it)) return AT_ENOMEM;
        if (json_array_size(out->items) == limit) {
            out->last_key = at_schema_item_key(t->def, NULL, it);
            return out->last_key ? 0 : AT_ENOMEM;
        }
    }
    return rc == SQLITE_DONE ? 0 : at_sqlite_err(c, rc, "scan");
}

int at_sqlite_scan(at_store *st, at_table_id tid, const json_t *start_key, size_t limit,
                   at_page *out)
{
    sq_store *s = (sq_store *)st;
    const sq_table *t = &s->tables[tid];
    sq_conn *c = NULL;
    sqlite3_stmt *stmt = NULL;
    sq_val kv[2];
    int rc = 0;

    if (start_key) rc = at_sqlite_key_vals(t, start_key, kv);
    if (!rc && !(out->items = json_array())) rc = AT_ENOMEM;
    if (!rc) rc = at_sqlite_conn_get(s, &c);
    if (!rc) rc = at_sqlite_prepare(c, start_key ? t->sql_scan_after : t->sql_scan, &stmt);
    if (rc) goto out;
    if (start_key) {
        at_sqlite_bind(stmt, 1, &kv[0]);
        if (t->sk >= 0) at_sqlite_bind(stmt, 2, &kv[1]);
    }
    rc = scan_rows(c, stmt, t, limit, out);
    sqlite3_reset(stmt);
    sqlite3_clear_bindings(stmt);
out:
    at_sqlite_conn_put(s, c);
    if (rc) at_page_release(out);
    return rc;
}
