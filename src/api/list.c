/* Cursor-paged lists (SPEC §4 "Lists"). A cursor's payload is {"p": phase, "k": key}
 * where key is the exclusive start key of the next query; lists with more than one
 * phase (pinned notes first) add their own members. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "api.h"
#include "actionstools/cursor.h"
#include "actionstools/err.h"
#include "actionstools/packed.h"
#include "actionstools/banned.h"

#define DEFAULT_LIMIT 25
#define MAX_LIMIT AT_API_MAX_LIMIT

int at_api_list_begin(at_ctx *c, const char *scope, at_list_req *lr)
{
    const char *limit = at_query_param(c, "limit"), *cursor = at_query_param(c, "cursor");
    memset(lr, 0, sizeof *lr);
    lr->limit = DEFAULT_LIMIT;
    lr->scope = scope;
    if (limit) {
        char *end;
        long v;
        errno = 0;
        v = strtol(limit, &end, 10);
        if (errno || *end || end == limit || v < 1 || v > MAX_LIMIT) {
            at_reply_validation(c, json_pack("{s:s}", "limit", "must be a whole number from 1 to 100"));
            return 0;
        }
        lr->limit = (size_t)v;
    }
    if (cursor && *cursor) {
        if (at_cursor_decode(c->cursor_key, scope, cursor, &lr->cursor) ||
            !json_is_object(lr->cursor)) {
            json_decref(lr->cursor);
            lr->cursor = NULL;
            at_reply_validation(c, json_pack("{s:s}", "cursor",
                                             "malformed or not from this list; start again "
                                             "without a cursor"));
            return 0;
        }
    }
    return 1;
}

void at_api_list_release(at_list_req *lr)
{
    json_decref(lr->cursor);
    lr->cursor = NULL;
}

void at_api_reply_list(at_ctx *c, at_table_id t, const at_list_req *lr, const json_t *items,
                       const json_t *next)
{
    at_buf b;
    size_t i;
    json_t *it;
    char *cursor = NULL;
    int rc;

    at_buf_init(&b, AT_API_MAX_ANSWER);
    rc = at_buf_adds(&b, "{\"items\":[");
    json_array_foreach(items, i, it)
    {
        if (!rc && i) rc = at_buf_addc(&b, ',');
        if (!rc) rc = at_api_write_view(&b, t, it);
    }
    if (!rc && next) {
        cursor = at_cursor_encode(c->cursor_key, lr->scope, next);
        rc = cursor ? at_buf_printf(&b, "],\"next_cursor\":\"%s\"}", cursor) : AT_ENOMEM;
    } else if (!rc) {
        rc = at_buf_adds(&b, "],\"next_cursor\":null}");
    }
    free(cursor);
    if (rc) {
        at_buf_release(&b);
        at_reply_error(c, 500, "cannot build the page (%s); ask for fewer items with ?limit=",
                       at_strerror(rc));
        return;
    }
    at_reply_json_buf(c, 200, &b);
}

void at_api_reply_list_raw(at_ctx *c, at_table_id t, const at_list_req *lr, const at_raw_ref *items,
                           size_t n, const json_t *next)
{
    at_buf b;
    char *cursor = NULL;
    int rc;

    at_buf_init(&b, AT_API_MAX_ANSWER);
    rc = at_buf_adds(&b, "{\"items\":[");
    for (size_t i = 0; !rc && i < n; i++) {
        if (i) rc = at_buf_addc(&b, ',');
        if (!rc) rc = at_api_write_view_raw(&b, t, &items[i]);
    }
    if (!rc && next) {
        cursor = at_cursor_encode(c->cursor_key, lr->scope, next);
        rc = cursor ? at_buf_printf(&b, "],\"next_cursor\":\"%s\"}", cursor) : AT_ENOMEM;
    } else if (!rc) {
        rc = at_buf_adds(&b, "],\"next_cursor\":null}");
    }
    free(cursor);
    if (rc) {
        at_buf_release(&b);
        at_reply_error(c, 500, "cannot build the page (%s); ask for fewer items with ?limit=",
                       at_strerror(rc));
        return;
    }
    at_reply_json_buf(c, 200, &b);
}

static int has_attr(const json_t *key, const at_attr_def *a)
{
    return !a->name || json_object_get(key, a->name) != NULL;
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

const json_t *at_api_cursor_key(const json_t *payload, const at_query *q, int *bad)
{
    const json_t *k = json_object_get(payload, "k");
    const at_table_def *t = at_schema_table(q->table);
    const at_index_def *ix = q->index ? at_schema_index(t, q->index) : NULL;
    const at_attr_def *pk = ix ? &ix->pk : &t->pk;

    *bad = 0;
    if (!k || json_is_null(k)) return NULL;
    if (!json_is_object(k) || at_av_check_item(k, NULL, 0) || !has_attr(k, &t->pk) ||
        !has_attr(k, &t->sk) || (ix && (!has_attr(k, &ix->pk) || !has_attr(k, &ix->sk))) ||
        json_object_size(k) != key_attr_count(t, ix) ||
        !at_av_equal(json_object_get(k, pk->name), q->pk)) {
        *bad = 1;
        return NULL;
    }
    return k;
}

void at_api_list_query(at_ctx *c, at_list_req *lr, at_query *q)
{
    at_page page = {0};
    at_raw_ref items[AT_API_MAX_LIMIT + 1];
    json_t *next = NULL;
    int bad = 0, rc;
    size_t n;

    q->start_key = lr->cursor ? at_api_cursor_key(lr->cursor, q, &bad) : NULL;
    if (bad) {
        at_reply_validation(c, json_pack("{s:s}", "cursor", "malformed; start again without a cursor"));
        return;
    }
    q->limit = lr->limit + 1; /* one more tells whether another page follows */
    q->flags |= AT_Q_RAW;
    rc = at_store_query(c->store, q, &page);
    if (rc) {
        at_reply_store_error(c, rc, "list items");
        return;
    }
    n = at_page_count(&page);
    for (size_t i = 0; i < n; i++) items[i].p = at_page_raw(&page, i, &items[i].n);
    if (n > lr->limit) {
        const at_table_def *t = at_schema_table(q->table);
        const at_raw_ref *last = &items[lr->limit - 1];
        json_t *key = at_packed_item_key(t, q->index ? at_schema_index(t, q->index) : NULL, last->p,
                                         last->n);
        n = lr->limit;
        next = key ? json_pack("{s:i, s:o}", "p", 0, "k", key) : NULL;
    } else if (page.last_key) {
        /* The store's work bound cut the page short: go on from the last item read. */
        next = json_pack("{s:i, s:O}", "p", 0, "k", page.last_key);
    }
    at_api_reply_list_raw(c, q->table, lr, items, n, next);
    json_decref(next);
    at_page_release(&page);
}
