/* The sqlite backend's single-item operations: get, put, update, delete, batch_put,
 * with key validation, conditions and stream records. Writes run on the writer
 * (sqlite_writer.c): what can be checked without the stored item is checked first, in
 * the caller's thread; the rest runs in the writer's transaction. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store/sqlite/sqlite_int.h"
#include "actionstools/av.h"
#include "actionstools/err.h"
#include "actionstools/packed.h"
#include "actionstools/timeutil.h"
#include "actionstools/banned.h"

#define ITEM_MAX_BYTES (400 * 1024) /* DynamoDB's item size limit */

/* ---- values ---- */

/* Returns 1 when s is only an optional sign and digits. */
static int integer_text(const char *s)
{
    if (*s == '-' || *s == '+') s++;
    if (!*s) return 0;
    for (; *s; s++)
        if (*s < '0' || *s > '9') return 0;
    return 1;
}

/* Converts number text (already checked) into INTEGER when it is integral and fits
 * 64 bits, else REAL: SQLite compares the two numerically. */
static int number_val(const char *txt, sq_val *v)
{
    char *end;
    double d;

    if (integer_text(txt)) {
        long long i;
        errno = 0;
        i = strtoll(txt, &end, 10);
        if (!errno && !*end) {
            v->type = SQLITE_INTEGER;
            v->i = i;
            return 0;
        }
    }
    d = strtod(txt, &end);
    if (!isfinite(d) || *end) return AT_EINVAL;
    if (d == floor(d) && d >= -9.2e18 && d <= 9.2e18) {
        v->type = SQLITE_INTEGER;
        v->i = (int64_t)d;
    } else {
        v->type = SQLITE_FLOAT;
        v->d = d;
    }
    return 0;
}

int at_sqlite_av_val(const json_t *av, at_key_type type, sq_val *out)
{
    const json_t *v;

    memset(out, 0, sizeof *out);
    if (!json_is_object(av) || json_object_size(av) != 1 || at_av_check(av, NULL, 0))
        return AT_EINVAL;
    v = json_object_get(av, type == AT_KEY_S ? "S" : "N");
    if (!json_is_string(v)) return AT_EINVAL;
    if (type == AT_KEY_N) return number_val(json_string_value(v), out);
    if (json_string_length(v) == 0) return AT_EINVAL; /* DynamoDB: keys cannot be empty */
    out->type = SQLITE_TEXT;
    out->s = json_string_value(v);
    out->n = json_string_length(v);
    return 0;
}

int at_sqlite_key_vals(const sq_table *t, const json_t *key, sq_val vals[2])
{
    int rc;
    size_t want = t->sk >= 0 ? 2 : 1;

    if (!json_is_object(key) || json_object_size(key) != want) return AT_EINVAL;
    rc = at_sqlite_av_val(json_object_get(key, t->cols[t->pk].attr), t->cols[t->pk].type, &vals[0]);
    if (!rc && t->sk >= 0)
        rc = at_sqlite_av_val(json_object_get(key, t->cols[t->sk].attr), t->cols[t->sk].type,
                              &vals[1]);
    return rc;
}

/* Extracts every column value of item's row (key columns, TTL, soft deletion) after
 * checking the item. */
static int item_vals(const sq_table *t, const json_t *item, sq_row *row)
{
    const json_t *tv;
    sq_val *vals = row->col, *ttl = &row->ttl;

    if (at_av_check_item(item, NULL, 0)) return AT_EINVAL;
    if (at_sqlite_item_size(item) > ITEM_MAX_BYTES) return AT_EINVAL;
    for (int i = 0; i < t->ncols; i++) {
        const json_t *av = json_object_get(item, t->cols[i].attr);
        if (!av) {
            if (i == t->pk || i == t->sk) return AT_EINVAL;
            memset(&vals[i], 0, sizeof vals[i]); /* not in the indexes on it: sparse */
            continue;
        }
        if (at_sqlite_av_val(av, t->cols[i].type, &vals[i])) return AT_EINVAL;
    }
    memset(ttl, 0, sizeof *ttl);
    tv = t->def->ttl_attr ? json_object_get(json_object_get(item, t->def->ttl_attr), "N") : NULL;
    if (json_is_string(tv) && number_val(json_string_value(tv), ttl)) memset(ttl, 0, sizeof *ttl);
    memset(&row->deleted, 0, sizeof row->deleted);
    if (json_object_get(item, SQ_DELETED_ATTR)) {
        row->deleted.type = SQLITE_INTEGER;
        row->deleted.i = 1;
    }
    return 0;
}

int at_sqlite_expired(const sq_table *t, const json_t *item, int64_t now)
{
    const char *n;
    if (!t->def->ttl_attr) return 0;
    n = json_string_value(json_object_get(json_object_get(item, t->def->ttl_attr), "N"));
    return n && strtod(n, NULL) < (double)now;
}

json_t *at_sqlite_load_item(const void *data, size_t len)
{
    json_t *j;
    if (at_packed_is(data, len)) return at_packed_decode(data, len);
    j = json_loadb(data, len, JSON_ALLOW_NUL, NULL); /* written by an older version */
    if (j && !json_is_object(j)) {
        json_decref(j);
        j = NULL;
    }
    return j;
}

static int64_t now_s(void)
{
    return at_now_us() / 1000000;
}

/* ---- sizes and equality ---- */

static size_t number_size(const char *s)
{
    size_t digits = 0, zeros = 0;
    int leading = 1;
    for (; *s && *s != 'e' && *s != 'E'; s++) {
        if (*s < '0' || *s > '9') continue;
        if (*s == '0' && leading) continue;
        leading = 0;
        if (*s == '0') {
            zeros++;
        } else {
            digits += zeros + 1;
            zeros = 0;
        }
    }
    return (digits + 1) / 2 + 1;
}

static size_t binary_size(const json_t *v)
{
    size_t n = json_string_length(v);
    const char *s = json_string_value(v);
    size_t pad = (n > 0 && s[n - 1] == '=') + (n > 1 && s[n - 2] == '=');
    return n / 4 * 3 - (n % 4 == 0 ? pad : 0);
}

static size_t av_size(const json_t *av)
{
    const char *tag = "", *k;
    json_t *v = NULL, *m;
    size_t n = 0, i;

    if (!json_is_object(av) || json_object_size(av) != 1) return 0;
    json_object_foreach((json_t *)av, tag, v) break;
    if (strcmp(tag, "S") == 0) return json_string_length(v);
    if (strcmp(tag, "N") == 0) return number_size(json_string_value(v));
    if (strcmp(tag, "B") == 0) return binary_size(v);
    if (strcmp(tag, "M") == 0) {
        json_object_foreach(v, k, m) n += strlen(k) + av_size(m) + 1;
        return n + 3;
    }
    if (strcmp(tag, "L") == 0) {
        json_array_foreach(v, i, m) n += av_size(m) + 1;
        return n + 3;
    }
    if (json_is_array(v)) { /* SS, NS, BS */
        json_array_foreach(v, i, m) n += tag[0] == 'N'   ? number_size(json_string_value(m))
                                         : tag[0] == 'B' ? binary_size(m)
                                                         : json_string_length(m);
        return n;
    }
    return 1; /* BOOL, NULL */
}

size_t at_sqlite_item_size(const json_t *item)
{
    const char *k;
    json_t *v;
    size_t n = 0;
    json_object_foreach((json_t *)item, k, v) n += strlen(k) + av_size(v);
    return n;
}

static int av_eq(const json_t *a, const json_t *b);

static int map_eq(const json_t *a, const json_t *b)
{
    const char *k;
    json_t *v;
    if (!json_is_object(a) || !json_is_object(b) || json_object_size(a) != json_object_size(b))
        return 0;
    json_object_foreach((json_t *)a, k, v)
    {
        const json_t *w = json_object_get(b, k);
        if (!w || !av_eq(v, w)) return 0;
    }
    return 1;
}

static int av_eq(const json_t *a, const json_t *b)
{
    const json_t *la = json_object_get(a, "L"), *lb = json_object_get(b, "L");
    if (json_object_get(a, "N") && json_object_get(b, "N")) return at_av_equal(a, b);
    if (json_object_get(a, "M") && json_object_get(b, "M"))
        return map_eq(json_object_get(a, "M"), json_object_get(b, "M"));
    if (json_is_array(la) && json_is_array(lb)) {
        if (json_array_size(la) != json_array_size(lb)) return 0;
        for (size_t i = 0; i < json_array_size(la); i++)
            if (!av_eq(json_array_get(la, i), json_array_get(lb, i))) return 0;
        return 1;
    }
    return json_equal((json_t *)a, (json_t *)b);
}

int at_sqlite_item_equal(const json_t *a, const json_t *b)
{
    return map_eq(a, b);
}

/* ---- rows ---- */

static int step_done(sq_conn *c, sqlite3_stmt *st, const char *what)
{
    int rc = sqlite3_step(st);
    rc = rc == SQLITE_DONE ? 0 : at_sqlite_err(c, rc, what);
    sqlite3_reset(st);
    sqlite3_clear_bindings(st);
    return rc;
}

/* Reads the stored item at the key kv into *item (NULL when there is none). */
static int read_row(sq_conn *c, const sq_table *t, const sq_val kv[2], json_t **item)
{
    sqlite3_stmt *st;
    int rc;

    *item = NULL;
    rc = at_sqlite_prepare(c, t->sql_get, &st);
    if (rc) return rc;
    at_sqlite_bind(st, 1, &kv[0]);
    if (t->sk >= 0) at_sqlite_bind(st, 2, &kv[1]);
    rc = sqlite3_step(st);
    if (rc == SQLITE_ROW) {
        *item =
            at_sqlite_load_item(sqlite3_column_blob(st, 0), (size_t)sqlite3_column_bytes(st, 0));
        rc = *item ? 0 : AT_EIO;
        if (rc) at_sqlite_err(NULL, SQLITE_CORRUPT, "read: stored item is not JSON");
    } else {
        rc = rc == SQLITE_DONE ? 0 : at_sqlite_err(c, rc, "read");
    }
    sqlite3_reset(st);
    sqlite3_clear_bindings(st);
    return rc;
}

/* Reads the item at kv for a write: an expired item counts as absent. */
static int read_live(sq_conn *c, const sq_table *t, const sq_val kv[2], int64_t now, json_t **item)
{
    int rc = read_row(c, t, kv, item);
    if (!rc && *item && at_sqlite_expired(t, *item, now)) {
        json_decref(*item);
        *item = NULL;
    }
    return rc;
}

int at_sqlite_pack(const json_t *item, at_buf *b)
{
    int rc;
    at_buf_init(b, SQ_PACKED_MAX);
    rc = at_packed_encode(b, item);
    if (rc) at_buf_release(b);
    return rc == AT_ENOMEM ? rc : rc ? AT_EINVAL : 0;
}

/* Writes the row of an item: its column values and its packed form. */
static int write_row(sq_conn *c, const sq_table *t, const sq_row *row, const at_buf *packed)
{
    sqlite3_stmt *st;
    int rc, i;

    rc = at_sqlite_prepare(c, t->sql_upsert, &st);
    if (rc) return rc;
    for (i = 0; i < t->ncols; i++)
        at_sqlite_bind(st, i + 1, &row->col[i]);
    i++;
    if (t->has_ttl) at_sqlite_bind(st, i++, &row->ttl);
    at_sqlite_bind(st, i++, &row->deleted);
    sqlite3_bind_blob(st, i, packed->ptr, (int)packed->len, SQLITE_STATIC);
    return step_done(c, st, "write");
}

static int delete_row(sq_conn *c, const sq_table *t, const sq_val kv[2])
{
    sqlite3_stmt *st;
    int rc = at_sqlite_prepare(c, t->sql_delete, &st);
    if (rc) return rc;
    at_sqlite_bind(st, 1, &kv[0]);
    if (t->sk >= 0) at_sqlite_bind(st, 2, &kv[1]);
    return step_done(c, st, "delete");
}

/* Writes item (whose key columns are vals, packed form packed) over old, with its
 * stream record. A write that changes nothing records nothing, as DynamoDB Streams. */
static int store_item(sq_store *s, sq_conn *c, const sq_table *t, const sq_row *row,
                      const json_t *old, const json_t *item, const at_buf *packed, int64_t now)
{
    int rc = write_row(c, t, row, packed);
    if (!rc && (!old || !at_sqlite_item_equal(old, item)))
        rc = at_sqlite_stream_add(s, c, t, old, item, now);
    return rc;
}

int at_sqlite_remove(sq_store *s, sq_conn *c, const sq_table *t, const json_t *item, int64_t now)
{
    json_t *key = at_schema_item_key(t->def, NULL, item);
    sq_val kv[2];
    int rc = key ? at_sqlite_key_vals(t, key, kv) : AT_EINVAL;
    if (!rc) rc = delete_row(c, t, kv);
    if (!rc) rc = at_sqlite_stream_add(s, c, t, item, NULL, now);
    json_decref(key);
    return rc;
}

/* ---- operations ---- */

int at_sqlite_get(at_store *st, at_table_id tid, const json_t *key, json_t **item)
{
    sq_store *s = (sq_store *)st;
    const sq_table *t = &s->tables[tid];
    sq_conn *c = NULL;
    sq_val kv[2];
    int rc;

    rc = at_sqlite_key_vals(t, key, kv);
    if (!rc) rc = at_sqlite_conn_get(s, &c);
    if (rc) return rc;
    rc = read_row(c, t, kv, item);
    at_sqlite_conn_put(s, c);
    if (!rc && (!*item || at_sqlite_expired(t, *item, now_s()))) rc = AT_ENOTFOUND;
    if (rc) {
        json_decref(*item);
        *item = NULL;
    }
    return rc;
}

/* A put, as the writer runs it. */
typedef struct put_job {
    const sq_table *t;
    const json_t *item;
    const at_cond *cond;
    sq_row row;
    at_buf packed;
    int64_t now;
} put_job;

static int put_run(sq_store *s, sq_conn *c, void *arg)
{
    put_job *j = arg;
    const sq_table *t = j->t;
    sq_val kv[2];
    json_t *old = NULL;
    int rc;

    kv[0] = j->row.col[t->pk];
    if (t->sk >= 0) kv[1] = j->row.col[t->sk];
    rc = read_live(c, t, kv, j->now, &old);
    if (!rc && !at_cond_eval(old, j->cond)) rc = AT_ECOND;
    if (!rc) rc = store_item(s, c, t, &j->row, old, j->item, &j->packed, j->now);
    json_decref(old);
    return rc;
}

int at_sqlite_put(at_store *st, at_table_id tid, const json_t *item, const at_cond *cond)
{
    sq_store *s = (sq_store *)st;
    put_job j = {.t = &s->tables[tid], .item = item, .cond = cond, .now = now_s()};
    /* Checked and packed here, in the caller's thread: the writer only writes. */
    int rc = item_vals(j.t, item, &j.row);
    if (!rc) rc = at_sqlite_pack(item, &j.packed);
    if (!rc) rc = at_sqlite_write(s, put_run, &j);
    at_buf_release(&j.packed);
    return rc;
}

static int is_table_key(const sq_table *t, const char *attr)
{
    return strcmp(attr, t->cols[t->pk].attr) == 0 ||
           (t->sk >= 0 && strcmp(attr, t->cols[t->sk].attr) == 0);
}

static int in_remove(const at_update *u, const char *attr)
{
    for (size_t i = 0; u->remove && u->remove[i]; i++)
        if (strcmp(u->remove[i], attr) == 0) return 1;
    return 0;
}

/* Refuses what DynamoDB refuses: changing a key attribute, overlapping paths. */
static int check_update(const sq_table *t, const at_update *u)
{
    const char *k;
    json_t *v;

    json_object_foreach((json_t *)u->set, k, v)
    {
        if (is_table_key(t, k) || in_remove(u, k) || at_av_check(v, NULL, 0)) return AT_EINVAL;
    }
    for (size_t i = 0; u->remove && u->remove[i]; i++)
        if (is_table_key(t, u->remove[i])) return AT_EINVAL;
    if (u->add_attr && (is_table_key(t, u->add_attr) || in_remove(u, u->add_attr) ||
                        json_object_get(u->set, u->add_attr)))
        return AT_EINVAL;
    return 0;
}

/* Returns the N AV cur + delta: exact for 64-bit integers, else long double. */
static json_t *add_number(const char *cur, int64_t delta)
{
    long double x;
    int64_t i, r;
    char *end, text[64];

    if (integer_text(cur)) {
        errno = 0;
        i = strtoll(cur, &end, 10);
        if (!errno && !__builtin_add_overflow(i, delta, &r)) return at_av_n_int(r);
    }
    x = strtold(cur, &end) + (long double)delta;
    for (int prec = 15; prec <= 21; prec++) {
        snprintf(text, sizeof text, "%.*Lg", prec, x);
        if (strtold(text, NULL) == x) break;
    }
    return at_av_n_text(text);
}

static int apply_update(json_t *item, const at_update *u)
{
    const char *k;
    json_t *v;

    json_object_foreach((json_t *)u->set, k, v)
    {
        if (json_object_set_new(item, k, json_deep_copy(v))) return AT_ENOMEM;
    }
    for (size_t i = 0; u->remove && u->remove[i]; i++)
        json_object_del(item, u->remove[i]);
    if (u->add_attr) {
        const json_t *cur = json_object_get(item, u->add_attr);
        const char *n = json_string_value(json_object_get(cur, "N"));
        json_t *sum;
        if (cur && !n) return AT_EINVAL; /* ADD to a non-number */
        sum = n ? add_number(n, u->add_value) : at_av_n_int(u->add_value);
        if (!sum || json_object_set_new(item, u->add_attr, sum)) return AT_ENOMEM;
    }
    return 0;
}

typedef struct update_job {
    const sq_table *t;
    const json_t *key;
    const at_update *u;
    const at_cond *cond;
    sq_val kv[2];
    int64_t now;
    json_t *item; /* OUT: the item after the change */
} update_job;

static int update_run(sq_store *s, sq_conn *c, void *arg)
{
    update_job *j = arg;
    const sq_table *t = j->t;
    sq_row row;
    json_t *old = NULL;
    at_buf packed;
    int rc;

    json_decref(j->item); /* from an earlier run of this write, if its group ran again */
    j->item = NULL;
    at_buf_init(&packed, SQ_PACKED_MAX);
    rc = read_live(c, t, j->kv, j->now, &old);
    if (!rc && !at_cond_eval(old, j->cond)) rc = AT_ECOND;
    if (!rc && !(j->item = json_deep_copy(old ? old : j->key))) rc = AT_ENOMEM;
    if (!rc) rc = apply_update(j->item, j->u);
    if (!rc) rc = item_vals(t, j->item, &row);
    if (!rc) rc = at_sqlite_pack(j->item, &packed);
    if (!rc) rc = store_item(s, c, t, &row, old, j->item, &packed, j->now);
    at_buf_release(&packed);
    json_decref(old);
    return rc;
}

int at_sqlite_update(at_store *st, at_table_id tid, const json_t *key, const at_update *u,
                     const at_cond *cond, json_t **new_item)
{
    sq_store *s = (sq_store *)st;
    update_job j = {.t = &s->tables[tid], .key = key, .u = u, .cond = cond, .now = now_s()};
    int rc;

    rc = at_sqlite_key_vals(j.t, key, j.kv);
    if (!rc) rc = check_update(j.t, u);
    if (!rc) rc = at_sqlite_write(s, update_run, &j);
    if (!rc && new_item)
        *new_item = j.item;
    else
        json_decref(j.item);
    return rc;
}

typedef struct del_job {
    const sq_table *t;
    const at_cond *cond;
    sq_val kv[2];
    int64_t now;
} del_job;

static int del_run(sq_store *s, sq_conn *c, void *arg)
{
    del_job *j = arg;
    json_t *old = NULL;
    int rc, expired;

    rc = read_row(c, j->t, j->kv, &old);
    expired = old && at_sqlite_expired(j->t, old, j->now);
    if (!rc && !at_cond_eval(expired ? NULL : old, j->cond)) rc = AT_ECOND;
    if (!rc && old) rc = delete_row(c, j->t, j->kv);
    if (!rc && old) rc = at_sqlite_stream_add(s, c, j->t, old, NULL, j->now);
    json_decref(old);
    return rc;
}

int at_sqlite_del(at_store *st, at_table_id tid, const json_t *key, const at_cond *cond)
{
    sq_store *s = (sq_store *)st;
    del_job j = {.t = &s->tables[tid], .cond = cond, .now = now_s()};
    int rc = at_sqlite_key_vals(j.t, key, j.kv);
    return rc ? rc : at_sqlite_write(s, del_run, &j);
}

/* Puts one item of a batch inside the writer's transaction. */
static int batch_one(sq_store *s, sq_conn *c, const sq_table *t, const json_t *item, int64_t now)
{
    sq_row row;
    sq_val kv[2];
    json_t *old = NULL;
    at_buf packed;
    int rc = item_vals(t, item, &row);

    if (!rc) rc = at_sqlite_pack(item, &packed);
    if (rc) return rc;
    kv[0] = row.col[t->pk];
    if (t->sk >= 0) kv[1] = row.col[t->sk];
    if (t->def->stream) rc = read_live(c, t, kv, now, &old); /* only the stream needs it */
    if (!rc) rc = store_item(s, c, t, &row, old, item, &packed, now);
    at_buf_release(&packed);
    json_decref(old);
    return rc;
}

typedef struct batch_job {
    const sq_table *t;
    const json_t *items;
    int64_t now;
} batch_job;

static int batch_run(sq_store *s, sq_conn *c, void *arg)
{
    batch_job *j = arg;
    int rc = 0;
    for (size_t i = 0; !rc && i < json_array_size(j->items); i++)
        rc = batch_one(s, c, j->t, json_array_get(j->items, i), j->now);
    return rc;
}

int at_sqlite_batch_put(at_store *st, at_table_id tid, const json_t *items)
{
    sq_store *s = (sq_store *)st;
    batch_job j = {&s->tables[tid], items, now_s()};
    if (json_array_size(items) == 0) return 0;
    return at_sqlite_write(s, batch_run, &j);
}

int at_sqlite_refill(sq_conn *c, const sq_table *t)
{
    at_buf sql;
    sqlite3_stmt *st = NULL;
    sq_row row;
    int64_t last = 0;
    int rc, more = 1;

    at_buf_init(&sql, SQ_SQL_MAX);
    rc = at_buf_printf(&sql,
                       "SELECT rowid, \"_item\" FROM %s WHERE rowid > ? ORDER BY rowid LIMIT 1000",
                       t->qname);
    while (!rc && more) {
        json_t *batch = json_array();
        size_t i;
        rc = batch ? at_sqlite_prepare(c, at_buf_str(&sql), &st) : AT_ENOMEM;
        if (!rc) sqlite3_bind_int64(st, 1, last);
        while (!rc && sqlite3_step(st) == SQLITE_ROW) {
            json_t *it = at_sqlite_load_item(sqlite3_column_blob(st, 1),
                                             (size_t)sqlite3_column_bytes(st, 1));
            last = sqlite3_column_int64(st, 0);
            if (!it || json_array_append_new(batch, it)) rc = AT_EIO;
        }
        if (st) sqlite3_reset(st);
        more = json_array_size(batch) == 1000;
        for (i = 0; !rc && i < json_array_size(batch); i++) {
            const json_t *it = json_array_get(batch, i);
            at_buf packed;
            at_buf_init(&packed, SQ_PACKED_MAX);
            rc = item_vals(t, it, &row);
            if (!rc) rc = at_sqlite_pack(it, &packed);
            if (!rc) rc = write_row(c, t, &row, &packed);
            at_buf_release(&packed);
        }
        json_decref(batch);
    }
    at_buf_release(&sql);
    return rc;
}
