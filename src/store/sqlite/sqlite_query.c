/* The sqlite backend's Query and Scan. A query page is one index range scan:
 *   SELECT "_item" FROM t INDEXED BY ix WHERE pk = ? AND <index predicate>
 *     [AND sk >= ?] [AND sk <= ?] [AND (sk, ties...) > (?, ?...)] ORDER BY sk, ties...
 * stepped lazily until the page holds limit matching items or the range ends. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store/sqlite/sqlite_int.h"
#include "actionstools/err.h"
#include "actionstools/timeutil.h"
#include "actionstools/banned.h"

#define QMAX_BINDS 8

typedef struct bound {
    int on;   /* 1 when this bound applies */
    int incl; /* 1: >= / <=; 0: > / < */
    sq_val v;
} bound;

/* A query turned into SQL text and the values to bind, in order. */
typedef struct qplan {
    const sq_table *t;
    const sq_ix *x;
    bound lo, hi;    /* from the sort key condition */
    int use_start;   /* 1: the row-value comparison with the start key applies */
    sq_val start[3]; /* start key values of the order columns */
    int empty;       /* 1: nothing can match (e.g. start after a key-only item) */
    char *succ;      /* owned: BEGINS_WITH's upper bound */
    sq_val binds[QMAX_BINDS];
    int nb;
    at_buf sql;
} qplan;

static void plan_release(qplan *p)
{
    free(p->succ);
    at_buf_release(&p->sql);
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

/* Sets hi to the smallest string above every string that begins with prefix (none
 * when the prefix is all 0xff bytes). */
static int prefix_successor(qplan *p, const sq_val *prefix)
{
    size_t n = prefix->n;
    while (n > 0 && (unsigned char)prefix->s[n - 1] == 0xff)
        n--;
    if (n == 0) return 0;
    p->succ = malloc(n);
    if (!p->succ) return AT_ENOMEM;
    memcpy(p->succ, prefix->s, n);
    p->succ[n - 1] = (char)((unsigned char)p->succ[n - 1] + 1);
    p->hi.on = 1;
    p->hi.incl = 0;
    p->hi.v.type = SQLITE_TEXT;
    p->hi.v.s = p->succ;
    p->hi.v.n = n;
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
        return prefix_successor(p, &v1);
    default:
        return AT_EINVAL;
    }
}

/* Returns the order columns of x (index sort key, then the table keys breaking ties). */
static int order_cols(const sq_ix *x, int cols[3])
{
    int n = 0;
    if (x->sk >= 0) cols[n++] = x->sk;
    for (int i = 0; i < x->nties; i++)
        cols[n++] = x->ties[i];
    return n;
}

/* Reads the exclusive start key: the table keys and the index keys, as
 * at_schema_item_key makes them. */
static int read_start(qplan *p, const json_t *start, const sq_val *pk, int forward)
{
    const at_table_def *d = p->t->def;
    json_t *want;
    sq_val spk;
    int cols[3], n = order_cols(p->x, cols), rc;
    bound *near = forward ? &p->lo : &p->hi;

    if (!start) return 0;
    want = at_schema_item_key(d, p->x->def, start);
    rc = want && json_object_size(want) == json_object_size(start) ? 0 : AT_EINVAL;
    json_decref(want);
    if (!rc)
        rc = at_sqlite_av_val(json_object_get(start, p->t->cols[p->x->pk].attr),
                              p->t->cols[p->x->pk].type, &spk);
    if (!rc && val_cmp(&spk, pk) != 0) rc = AT_EINVAL; /* outside the query's partition */
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
    int cols[3], n = order_cols(p->x, cols), rc;
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
    int cols[3], n = order_cols(p->x, cols), rc = 0;
    for (int i = 0; !rc && i < n; i++)
        rc = at_buf_adds(&p->sql, i ? ", " : " ORDER BY ") || add_colname(p, cols[i]) ||
             at_buf_adds(&p->sql, forward ? "" : " DESC");
    return rc;
}

static int build_sql(qplan *p, const sq_val *pk, int forward)
{
    int rc = at_buf_printf(&p->sql, "SELECT \"_item\" FROM %s", p->t->qname);
    if (!rc && p->x->own) rc = at_buf_printf(&p->sql, " INDEXED BY %s", p->x->qindex);
    if (!rc)
        rc = at_buf_adds(&p->sql, " WHERE ") || add_colname(p, p->x->pk) ||
             at_buf_adds(&p->sql, " = ?") || bind_add(p, pk);
    if (!rc && p->x->own)
        rc = at_buf_adds(&p->sql, " AND ") || at_sqlite_ix_predicate(p->t, p->x, &p->sql);
    if (!rc) rc = add_bound(p, &p->lo, " > ?", " >= ?");
    if (!rc) rc = add_bound(p, &p->hi, " < ?", " <= ?");
    if (!rc) rc = add_start(p, forward);
    if (!rc) rc = add_order(p, forward);
    return rc;
}

/* Plans q: checks its keys and fills p's SQL and bindings. */
static int plan_query(sq_store *s, const at_query *q, qplan *p)
{
    sq_val pk;
    int rc;

    memset(p, 0, sizeof *p);
    at_buf_init(&p->sql, SQ_SQL_MAX);
    p->t = &s->tables[q->table];
    p->x = find_ix(p->t, q->index);
    if (!p->x) return AT_EINVAL;
    rc = at_sqlite_av_val(q->pk, p->t->cols[p->x->pk].type, &pk);
    if (!rc) rc = sk_bounds(p, &q->sk);
    if (!rc) rc = read_start(p, q->start_key, &pk, q->forward);
    if (!rc) rc = build_sql(p, &pk, q->forward);
    return rc;
}

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

/* Returns 1 when the (projected) item belongs in the page: live if asked, filter true. */
static int wanted(const at_query *q, const json_t *item)
{
    if ((q->flags & AT_Q_LIVE) && json_object_get(item, "deleted_at")) return 0;
    return at_cond_eval(item, &q->filter);
}

/* Steps st and appends the wanted items to page->items (AT_Q_COUNT: counts them) until
 * limit. */
static int read_page(sq_conn *c, sqlite3_stmt *st, const at_query *q, const qplan *p, at_page *page)
{
    const at_index_def *d = p->x->def;
    int64_t now = at_now_us() / 1000000;
    int rc;

    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        json_t *it =
            at_sqlite_load_item(sqlite3_column_blob(st, 0), (size_t)sqlite3_column_bytes(st, 0));
        if (!it) return at_sqlite_err(NULL, SQLITE_CORRUPT, "query: stored item is not JSON");
        if (at_sqlite_expired(p->t, it, now)) {
            json_decref(it);
            continue;
        }
        /* DynamoDB filters what the index holds: project first. */
        if (d && d->include && !(it = project(p->t, d, it))) return AT_ENOMEM;
        if (!wanted(q, it)) {
            json_decref(it);
            continue;
        }
        if (q->flags & AT_Q_COUNT) {
            /* Counted, not kept; the key of the last one counted when it stops there. */
            if (++page->count == q->limit) page->last_key = at_schema_item_key(p->t->def, d, it);
            json_decref(it);
            if (page->count == q->limit) return page->last_key ? 0 : AT_ENOMEM;
            continue;
        }
        if (json_array_append_new(page->items, it)) return AT_ENOMEM;
        if (json_array_size(page->items) == q->limit) {
            page->last_key = at_schema_item_key(p->t->def, d, it);
            return page->last_key ? 0 : AT_ENOMEM;
        }
    }
    return rc == SQLITE_DONE ? 0 : at_sqlite_err(c, rc, "query");
}

static int bind_all(sqlite3_stmt *st, const qplan *p)
{
    for (int i = 0; i < p->nb; i++)
        if (at_sqlite_bind(st, i + 1, &p->binds[i]) != SQLITE_OK) return AT_EINVAL;
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
    if (!rc && !(out->items = json_array())) rc = AT_ENOMEM;
    if (rc || p.empty) goto out;
    rc = at_sqlite_conn_get(s, &c);
    if (!rc) rc = at_sqlite_prepare(c, at_buf_str(&p.sql), &stmt);
    if (!rc) rc = bind_all(stmt, &p);
    if (!rc) rc = read_page(c, stmt, q, &p, out);
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
