/* The dynamodb backend of store.h: each store operation is one DynamoDB operation
 * (a query page may loop when filtered items leave it short), sent by ddb_client.c.
 *
 *   setup          DescribeTable, CreateTable, DescribeTable until ACTIVE,
 *                  DescribeTimeToLive + UpdateTimeToLive
 *   get            GetItem (ConsistentRead)
 *   put            PutItem
 *   update         UpdateItem (ReturnValues ALL_NEW when the new item is wanted)
 *   del            DeleteItem
 *   query          Query (ConsistentRead except on a GSI, where DynamoDB refuses it)
 *   scan           Scan (export only)
 *   batch_put      BatchWriteItem, 25 puts a request, UnprocessedItems retried
 *   sweep_expired  nothing: DynamoDB's TTL deletes expired items itself
 *   stream_read    AT_EINVAL: the table's stream feeds the Worker Lambda
 *
 * Every attribute name goes through ExpressionAttributeNames (`uuid` is a reserved
 * word). See docs/dynamodb.md. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "store/dynamodb/dynamodb.h"
#include "actionstools/av.h"
#include "actionstools/buf.h"
#include "actionstools/err.h"
#include "actionstools/log.h"
#include "actionstools/schema.h"
#include "actionstools/store.h"
#include "actionstools/timeutil.h"
#include "actionstools/banned.h"

#define MAX_EXPR (64u << 10)            /* bytes of one expression */
#define MAX_QUERY_LIMIT 1000            /* items asked of DynamoDB in one Query/Scan */
#define BATCH_MAX 25                    /* DynamoDB's cap of requests in one BatchWriteItem */
#define BATCH_ROUNDS 12                 /* rounds of UnprocessedItems before giving up */
#define SETUP_WAIT_US (600 * 1000000LL) /* how long setup waits for a table to be ACTIVE */
#define SETUP_POLL_FIRST_MS 5L          /* polls of DescribeTable: 5 ms, doubling up to 1 s */
#define SETUP_POLL_MAX_MS 1000L
#define DELETED_ATTR "deleted_at"

typedef struct ddb_store {
    at_store base; /* first: the store.h head */
    at_ddb_client *client;
} ddb_store;

static const at_store_ops ddb_ops;

static at_ddb_client *client_of(at_store *s)
{
    return ((ddb_store *)s)->client;
}

at_ddb_client *at_dynamodb_client(at_store *s)
{
    return s && s->ops == &ddb_ops ? client_of(s) : NULL;
}

static int64_t now_seconds(void)
{
    return at_now_us() / 1000000;
}

/* ---- expressions ------------------------------------------------------------------ */

/* Placeholders for the names and values of one request's expressions. Names are
 * de-duplicated (DynamoDB refuses unused ones, and one attribute may appear in the key
 * condition and in the filter). */
typedef struct expr {
    json_t *names;   /* "#n0" -> attribute name */
    json_t *values;  /* ":v0" -> AV */
    json_t *name_of; /* attribute name -> "#n0" */
    int nnames, nvalues;
} expr;

static int expr_init(expr *x)
{
    x->names = json_object();
    x->values = json_object();
    x->name_of = json_object();
    x->nnames = x->nvalues = 0;
    return x->names && x->values && x->name_of ? 0 : AT_ENOMEM;
}

static void expr_release(expr *x)
{
    json_decref(x->names);
    json_decref(x->values);
    json_decref(x->name_of);
}

/* Appends the placeholder of attribute attr to b. */
static int add_name(expr *x, at_buf *b, const char *attr)
{
    const char *ph = json_string_value(json_object_get(x->name_of, attr));
    char buf[24];
    if (!attr || !*attr) return AT_EINVAL;
    if (!ph) {
        snprintf(buf, sizeof buf, "#n%d", x->nnames++);
        if (json_object_set_new(x->names, buf, json_string(attr)) ||
            json_object_set_new(x->name_of, attr, json_string(buf)))
            return AT_ENOMEM;
        ph = buf;
    }
    return at_buf_adds(b, ph);
}

/* Appends a new placeholder for the AV v (borrowed; checked) to b. */
static int add_value(expr *x, at_buf *b, const json_t *v)
{
    char buf[24];
    if (!v || at_av_check(v, NULL, 0)) return AT_EINVAL;
    snprintf(buf, sizeof buf, ":v%d", x->nvalues++);
    if (json_object_set(x->values, buf, (json_t *)v)) return AT_ENOMEM;
    return at_buf_adds(b, buf);
}

/* Appends one clause in DynamoDB's condition syntax. */
static int add_clause(expr *x, at_buf *b, const at_clause *c)
{
    const char *op = NULL;
    int rc;

    if (!c->attr) return AT_EINVAL;
    switch (c->op) {
    case AT_OP_EXISTS:
    case AT_OP_NOT_EXISTS:
        rc = at_buf_adds(b, c->op == AT_OP_EXISTS ? "attribute_exists(" : "attribute_not_exists(");
        if (!rc) rc = add_name(x, b, c->attr);
        return rc ? rc : at_buf_addc(b, ')');
    case AT_OP_BEGINS_WITH:
        rc = at_buf_adds(b, "begins_with(");
        if (!rc) rc = add_name(x, b, c->attr);
        if (!rc) rc = at_buf_adds(b, ", ");
        if (!rc) rc = add_value(x, b, c->value);
        return rc ? rc : at_buf_addc(b, ')');
    case AT_OP_BETWEEN:
        rc = add_name(x, b, c->attr);
        if (!rc) rc = at_buf_adds(b, " BETWEEN ");
        if (!rc) rc = add_value(x, b, c->value);
        if (!rc) rc = at_buf_adds(b, " AND ");
        return rc ? rc : add_value(x, b, c->value2);
    case AT_OP_EQ:
        op = " = ";
        break;
    case AT_OP_NE:
        op = " <> ";
        break;
    case AT_OP_LT:
        op = " < ";
        break;
    case AT_OP_LE:
        op = " <= ";
        break;
    case AT_OP_GT:
        op = " > ";
        break;
    case AT_OP_GE:
        op = " >= ";
        break;
    default:
        return AT_EINVAL;
    }
    rc = add_name(x, b, c->attr);
    if (!rc) rc = at_buf_adds(b, op);
    return rc ? rc : add_value(x, b, c->value);
}

/* Appends the AND of the clauses of c, skipping those on attributes skip1/skip2 (key
 * attributes, which a FilterExpression may not name). Parenthesised when b already
 * holds something. */
static int add_cond(expr *x, at_buf *b, const at_cond *c, const char *skip1, const char *skip2)
{
    int rc = 0;
    for (size_t i = 0; c && i < c->n && !rc; i++) {
        const at_clause *cl = &c->v[i];
        if (cl->attr &&
            ((skip1 && strcmp(cl->attr, skip1) == 0) || (skip2 && strcmp(cl->attr, skip2) == 0)))
            continue;
        if (b->len) rc = at_buf_adds(b, " AND ");
        if (!rc) rc = at_buf_addc(b, '(');
        if (!rc) rc = add_clause(x, b, cl);
        if (!rc) rc = at_buf_addc(b, ')');
    }
    return rc;
}

/* Sets the expression members of a request: the condition (or filter) under key
 * cond_member when cond is not empty, and the placeholder maps when used. */
static int expr_finish(expr *x, json_t *req, const char *cond_member, const at_buf *cond)
{
    if (cond && cond->len && json_object_set_new(req, cond_member, json_string(cond->ptr)))
        return AT_ENOMEM;
    if (json_object_size(x->names) && json_object_set(req, "ExpressionAttributeNames", x->names))
        return AT_ENOMEM;
    if (json_object_size(x->values) && json_object_set(req, "ExpressionAttributeValues", x->values))
        return AT_ENOMEM;
    return 0;
}

/* ---- shared bits ------------------------------------------------------------------ */

static json_t *request_for(at_store *s, at_table_id t)
{
    return json_pack("{s:s}", "TableName", s->names[t]);
}

/* Returns 1 when item has expired by table td's TTL attribute: a number of epoch
 * seconds before now, as DynamoDB's TTL reads it (an attribute of another type is
 * ignored). The C twin of the `NOT (ttl < :now)` filter. */
static int expired(const at_table_def *td, const json_t *item, int64_t now)
{
    const json_t *v;
    json_t *nowav;
    int ok = 0, cmp;
    if (!td->ttl_attr) return 0;
    v = json_object_get(item, td->ttl_attr);
    if (!v || !json_object_get(v, "N")) return 0;
    nowav = at_av_n_int(now);
    if (!nowav) return 0;
    cmp = at_av_compare(v, nowav, &ok);
    json_decref(nowav);
    return ok && cmp < 0;
}

/* Returns 0 when v is a usable value of a key attribute of type type: S or N as
 * declared, and not an empty string. */
static int key_value_ok(const json_t *v, at_key_type type)
{
    const char *tag = type == AT_KEY_N ? "N" : "S";
    const json_t *inner = json_object_get(v, tag);
    if (!json_is_object(v) || json_object_size(v) != 1 || !json_is_string(inner)) return AT_EINVAL;
    return json_string_length(inner) ? 0 : AT_EINVAL;
}

/* Checks an item's key attributes before it is sent: the table's keys present with
 * their types, index keys (when present) with theirs, no empty strings. DynamoDB
 * checks the same, but a local server may not (dynalite takes an empty string as an
 * index key), and a refusal here costs no request. */
static int check_item_keys(const at_table_def *td, const json_t *item)
{
    const json_t *v;
    if (key_value_ok(json_object_get(item, td->pk.name), td->pk.type)) return AT_EINVAL;
    if (td->sk.name && key_value_ok(json_object_get(item, td->sk.name), td->sk.type))
        return AT_EINVAL;
    for (size_t i = 0; i < td->nindexes; i++) {
        const at_index_def *ix = &td->indexes[i];
        if ((v = json_object_get(item, ix->pk.name)) && key_value_ok(v, ix->pk.type))
            return AT_EINVAL;
        if (ix->sk.name && (v = json_object_get(item, ix->sk.name)) && key_value_ok(v, ix->sk.type))
            return AT_EINVAL;
    }
    return 0;
}

/* Checks a primary key: exactly the table's key attributes, with their types. */
static int check_key(const at_table_def *td, const json_t *key)
{
    if (json_object_size(key) != (td->sk.name ? 2u : 1u)) return AT_EINVAL;
    if (key_value_ok(json_object_get(key, td->pk.name), td->pk.type)) return AT_EINVAL;
    if (td->sk.name && key_value_ok(json_object_get(key, td->sk.name), td->sk.type))
        return AT_EINVAL;
    return 0;
}

/* Checks an update: no change to the primary key, index keys of their types. */
static int check_update(const at_table_def *td, const at_update *u)
{
    const char *k;
    json_t *v;
    at_key_type type;
    if (u->set) {
        json_object_foreach((json_t *)u->set, k, v)
        {
            if (strcmp(k, td->pk.name) == 0 || (td->sk.name && strcmp(k, td->sk.name) == 0))
                return AT_EINVAL;
            if (at_av_check(v, NULL, 0)) return AT_EINVAL;
            if (at_schema_key_type(td, k, &type) && key_value_ok(v, type)) return AT_EINVAL;
        }
    }
    for (size_t i = 0; u->remove && u->remove[i]; i++)
        if (strcmp(u->remove[i], td->pk.name) == 0 ||
            (td->sk.name && strcmp(u->remove[i], td->sk.name) == 0))
            return AT_EINVAL;
    if (u->add_attr && (strcmp(u->add_attr, td->pk.name) == 0 ||
                        (td->sk.name && strcmp(u->add_attr, td->sk.name) == 0) ||
                        (at_schema_key_type(td, u->add_attr, &type) && type != AT_KEY_N)))
        return AT_EINVAL;
    return 0;
}

/* Sends one operation. Failures are logged: at warn when the operator must act
 * (AT_EIO: credentials, permissions, an unreadable answer), else at debug. */
static int call(at_store *s, at_ddb_op op, json_t *req, json_t **resp)
{
    at_ddb_error e;
    int rc = at_ddb_call(client_of(s), op, req, resp, &e);
    at_log_level level = rc == AT_EIO ? AT_LOG_WARN : AT_LOG_DEBUG;
    if (rc && rc != AT_ECOND && at_log_enabled(level)) {
        json_t *f = json_pack("{s:s, s:s, s:s, s:I}", "op", at_ddb_op_name(op), "type", e.type,
                              "message", e.message, "status", (json_int_t)e.http_status);
        at_log_json(level, "dynamodb call failed", f);
        json_decref(f);
    }
    return rc;
}

/* ---- item operations ------------------------------------------------------------- */

static int ddb_get(at_store *s, at_table_id t, const json_t *key, json_t **item)
{
    json_t *req = NULL, *resp = NULL, *it;
    int rc;

    if (at_av_check_item(key, NULL, 0) || check_key(at_schema_table(t), key)) return AT_EINVAL;
    req = request_for(s, t);
    if (!req || json_object_set(req, "Key", (json_t *)key) ||
        json_object_set_new(req, "ConsistentRead", json_true())) {
        rc = AT_ENOMEM;
        goto out;
    }
    rc = call(s, AT_DDB_GET_ITEM, req, &resp);
    if (rc) goto out;
    it = json_object_get(resp, "Item");
    if (!json_is_object(it) || expired(at_schema_table(t), it, now_seconds())) {
        rc = AT_ENOTFOUND;
        goto out;
    }
    *item = json_incref(it);
out:
    json_decref(req);
    json_decref(resp);
    return rc;
}

/* PutItem or DeleteItem of one item ("Item") or key ("Key") under an optional
 * condition. */
static int conditional_write(at_store *s, at_table_id t, const char *member, const json_t *value,
                             const at_cond *cond, int op)
{
    json_t *req = NULL, *resp = NULL;
    at_buf cb;
    expr x;
    int rc;

    at_buf_init(&cb, MAX_EXPR);
    rc = expr_init(&x);
    if (rc) goto out;
    req = request_for(s, t);
    if (!req || json_object_set(req, member, (json_t *)value)) {
        rc = AT_ENOMEM;
        goto out;
    }
    rc = add_cond(&x, &cb, cond, NULL, NULL);
    if (!rc) rc = expr_finish(&x, req, "ConditionExpression", &cb);
    if (!rc) rc = call(s, op, req, &resp);
out:
    expr_release(&x);
    at_buf_release(&cb);
    json_decref(req);
    json_decref(resp);
    return rc;
}

static int ddb_put(at_store *s, at_table_id t, const json_t *item, const at_cond *cond)
{
    if (at_av_check_item(item, NULL, 0) || check_item_keys(at_schema_table(t), item))
        return AT_EINVAL;
    return conditional_write(s, t, "Item", item, cond, AT_DDB_PUT_ITEM);
}

/* Builds "SET #a = :v, ... REMOVE #b, ... ADD #c :v". */
static int build_update(expr *x, at_buf *b, const at_update *u)
{
    const char *k;
    json_t *v;
    int rc = 0, first = 1;

    if (u->set && json_object_size(u->set)) {
        rc = at_buf_adds(b, "SET ");
        json_object_foreach((json_t *)u->set, k, v)
        {
            if (!rc && !first) rc = at_buf_adds(b, ", ");
            if (!rc) rc = add_name(x, b, k);
            if (!rc) rc = at_buf_adds(b, " = ");
            if (!rc) rc = add_value(x, b, v);
            first = 0;
        }
    }
    if (!rc && u->remove && u->remove[0]) {
        rc = at_buf_adds(b, b->len ? " REMOVE " : "REMOVE ");
        for (size_t i = 0; u->remove[i] && !rc; i++) {
            if (i) rc = at_buf_adds(b, ", ");
            if (!rc) rc = add_name(x, b, u->remove[i]);
        }
    }
    if (!rc && u->add_attr) {
        json_t *inc = at_av_n_int(u->add_value);
        if (!inc) return AT_ENOMEM;
        rc = at_buf_adds(b, b->len ? " ADD " : "ADD ");
        if (!rc) rc = add_name(x, b, u->add_attr);
        if (!rc) rc = at_buf_addc(b, ' ');
        if (!rc) rc = add_value(x, b, inc);
        json_decref(inc);
    }
    return rc;
}

static int ddb_update(at_store *s, at_table_id t, const json_t *key, const at_update *u,
                      const at_cond *cond, json_t **new_item)
{
    json_t *req = NULL, *resp = NULL;
    at_buf ub, cb;
    expr x;
    int rc;

    at_buf_init(&ub, MAX_EXPR);
    at_buf_init(&cb, MAX_EXPR);
    if (at_av_check_item(key, NULL, 0) || check_key(at_schema_table(t), key) ||
        check_update(at_schema_table(t), u))
        return AT_EINVAL;
    rc = expr_init(&x);
    if (rc) goto out;
    req = request_for(s, t);
    if (!req || json_object_set(req, "Key", (json_t *)key) ||
        json_object_set_new(req, "ReturnValues", json_string(new_item ? "ALL_NEW" : "NONE"))) {
        rc = AT_ENOMEM;
        goto out;
    }
    rc = build_update(&x, &ub, u);
    if (!rc) rc = add_cond(&x, &cb, cond, NULL, NULL);
    if (!rc && ub.len && json_object_set_new(req, "UpdateExpression", json_string(ub.ptr)))
        rc = AT_ENOMEM;
    if (!rc) rc = expr_finish(&x, req, "ConditionExpression", &cb);
    if (!rc) rc = call(s, AT_DDB_UPDATE_ITEM, req, &resp);
    if (!rc && new_item) {
        json_t *attrs = json_object_get(resp, "Attributes");
        /* An update with nothing to change on a missing item creates it with its key
         * alone, and DynamoDB then answers no Attributes. */
        *new_item = json_is_object(attrs) ? json_incref(attrs) : json_deep_copy(key);
        if (!*new_item) rc = AT_ENOMEM;
    }
out:
    expr_release(&x);
    at_buf_release(&ub);
    at_buf_release(&cb);
    json_decref(req);
    json_decref(resp);
    return rc;
}

static int ddb_del(at_store *s, at_table_id t, const json_t *key, const at_cond *cond)
{
    if (at_av_check_item(key, NULL, 0) || check_key(at_schema_table(t), key)) return AT_EINVAL;
    return conditional_write(s, t, "Key", key, cond, AT_DDB_DELETE_ITEM);
}

/* ---- query and scan ------------------------------------------------------------- */

/* How many items to ask for next: what is still wanted, scaled by the share of items
 * the filter let through so far (plus a quarter), within [remaining, MAX_QUERY_LIMIT]. */
static size_t next_ask(size_t remaining, size_t scanned, size_t matched)
{
    double ratio = matched ? (double)scanned / (double)matched : 4.0;
    double ask = (double)remaining * ratio * 1.25 + 1;
    if (ask > MAX_QUERY_LIMIT) ask = MAX_QUERY_LIMIT;
    if (ask < (double)remaining) ask = (double)remaining;
    if (ask > MAX_QUERY_LIMIT) ask = MAX_QUERY_LIMIT;
    return (size_t)ask;
}

/* Checks that the sort key condition is one DynamoDB accepts on attribute sk. */
static int check_sk(const at_clause *c, const at_attr_def *sk)
{
    const char *tag;
    if (!c->attr) return 0;
    if (!sk->name || strcmp(c->attr, sk->name) != 0) return AT_EINVAL;
    tag = sk->type == AT_KEY_N ? "N" : "S";
    switch (c->op) {
    case AT_OP_EQ:
    case AT_OP_LT:
    case AT_OP_LE:
    case AT_OP_GT:
    case AT_OP_GE:
        return json_object_get(c->value, tag) ? 0 : AT_EINVAL;
    case AT_OP_BEGINS_WITH: /* strings only */
        return sk->type == AT_KEY_S && json_object_get(c->value, "S") ? 0 : AT_EINVAL;
    case AT_OP_BETWEEN:
        return json_object_get(c->value, tag) && json_object_get(c->value2, tag) ? 0 : AT_EINVAL;
    default:
        return AT_EINVAL;
    }
}

/* The part of a Query/Scan shared by both: sends req page after page (setting Limit
 * and ExclusiveStartKey), keeps the items that pass keep() until limit are collected,
 * and fills out. */
typedef struct pager {
    at_store *s;
    at_ddb_op op;
    const at_table_def *td;
    const at_index_def *ix; /* for the last key's form */
    const at_cond *filter;  /* re-checked in C (key-attribute clauses are only here) */
    int live;               /* skip soft-deleted items */
    int64_t now;
    size_t max_read;        /* work bound: bytes of items read (0: none, for Scan) */
    int consistent;         /* the request reads consistently (a capacity unit is 4 KB) */
} pager;

/* Returns about how many bytes of items a Query/Scan answer read, matching or not:
 * its ConsumedCapacity (a read unit is 4 KB read consistently, 8 KB otherwise, summed
 * over the items read and rounded up), or 4 KB per item scanned when the server does
 * not say. */
static size_t bytes_read(const pager *p, const json_t *resp)
{
    const json_t *cu = json_object_get(json_object_get(resp, "ConsumedCapacity"), "CapacityUnits");
    double units = json_number_value(cu);
    if (json_is_number(cu) && units >= 0 && units < 1e12)
        return (size_t)(units * (p->consistent ? 4096.0 : 8192.0));
    return (size_t)json_integer_value(json_object_get(resp, "ScannedCount")) * 4096u;
}

static int keep(const pager *p, const json_t *item)
{
    if (p->live && json_object_get(item, DELETED_ATTR)) return 0;
    if (expired(p->td, item, p->now)) return 0;
    return at_cond_eval(item, p->filter);
}

static int run_pages(const pager *p, json_t *req, const json_t *start_key, size_t limit,
                     at_page *out)
{
    json_t *items = json_array(), *resp = NULL, *last = NULL;
    size_t ask = limit < MAX_QUERY_LIMIT ? limit : MAX_QUERY_LIMIT;
    size_t scanned = 0, matched = 0, read = 0;
    int rc = 0;

    if (!items) return AT_ENOMEM;
    if (start_key && json_object_set(req, "ExclusiveStartKey", (json_t *)start_key)) {
        rc = AT_ENOMEM;
        goto out;
    }
    for (;;) {
        json_t *page, *it, *lek;
        size_t i;

        if (json_object_set_new(req, "Limit", json_integer((json_int_t)ask))) {
            rc = AT_ENOMEM;
            goto out;
        }
        rc = call(p->s, p->op, req, &resp);
        if (rc) goto out;
        page = json_object_get(resp, "Items");
        if (!json_is_array(page)) {
            rc = AT_EIO;
            goto out;
        }
        json_array_foreach(page, i, it)
        {
            scanned++;
            if (!keep(p, it)) continue;
            matched++;
            if (json_array_append(items, it)) {
                rc = AT_ENOMEM;
                goto out;
            }
            last = it;
            if (json_array_size(items) == limit) break;
        }
        if (json_array_size(items) == limit) {
            /* The key of the last item returned, not DynamoDB's LastEvaluatedKey, which
             * may lie past items we did not return. */
            out->last_key = at_schema_item_key(p->td, p->ix, last);
            if (!out->last_key) rc = AT_EIO;
            break;
        }
        lek = json_object_get(resp, "LastEvaluatedKey");
        if (!json_is_object(lek) || json_object_size(lek) == 0) break; /* the end */
        read += bytes_read(p, resp);
        if (p->max_read && read >= p->max_read) {
            /* The work bound: a short page, going on after the last item read (every
             * item matched before it is in this page). */
            if (!(out->last_key = json_deep_copy(lek))) rc = AT_ENOMEM;
            break;
        }
        if (json_object_set(req, "ExclusiveStartKey", lek)) {
            rc = AT_ENOMEM;
            goto out;
        }
        ask = next_ask(limit - json_array_size(items), scanned, matched);
        json_decref(resp);
        resp = NULL;
    }
out:
    json_decref(resp);
    if (rc) {
        json_decref(items);
        json_decref(out->last_key);
        out->last_key = NULL;
        return rc;
    }
    out->items = items;
    return 0;
}

/* A count (AT_Q_COUNT): Select COUNT answers carry how many items passed the filter
 * (evaluated by DynamoDB: no key attribute is in it, store.c checked) and no items.
 * Whole answers are added up until limit is reached, the range ends, or the answers
 * read the page's work bound. */
static int count_pages(const pager *p, json_t *req, const json_t *start_key, size_t limit, at_page *out)
{
    json_t *resp = NULL, *lek = NULL;
    size_t read = 0;
    int rc = 0;

    if (json_object_set_new(req, "Select", json_string("COUNT")) ||
        (start_key && json_object_set(req, "ExclusiveStartKey", (json_t *)start_key)))
        return AT_ENOMEM;
    for (;;) {
        json_t *n;
        rc = call(p->s, AT_DDB_QUERY, req, &resp);
        if (rc) break;
        n = json_object_get(resp, "Count");
        if (!json_is_integer(n) || json_integer_value(n) < 0) {
            rc = AT_EIO;
            break;
        }
        out->count += (size_t)json_integer_value(n);
        lek = json_object_get(resp, "LastEvaluatedKey");
        if (!json_is_object(lek) || json_object_size(lek) == 0) break; /* the end */
        read += bytes_read(p, resp);
        if (out->count >= limit || (p->max_read && read >= p->max_read)) {
            out->last_key = json_incref(lek);
            break;
        }
        if (json_object_set(req, "ExclusiveStartKey", lek)) {
            rc = AT_ENOMEM;
            break;
        }
        json_decref(resp);
        resp = NULL;
    }
    json_decref(resp);
    return rc;
}

/* Turns a page of AV maps into a raw page (AT_Q_RAW): the same items, packed. */
static int to_raw(at_page *out)
{
    json_t *items = out->items, *it;
    size_t i;
    int rc = 0;
    out->items = NULL;
    json_array_foreach(items, i, it)
    {
        rc = at_page_add_item_raw(out, it);
        if (rc) break;
    }
    json_decref(items);
    return rc == AT_EINVAL ? AT_EIO : rc; /* an item DynamoDB sent that is not well-formed */
}

/* Adds the filters every read applies: live items only (AT_Q_LIVE) and TTL. */
static int add_standard_filters(expr *x, at_buf *fb, const at_table_def *td, int live, int64_t now)
{
    int rc = 0;
    if (live) {
        if (fb->len) rc = at_buf_adds(fb, " AND ");
        if (!rc) rc = at_buf_adds(fb, "attribute_not_exists(");
        if (!rc) rc = add_name(x, fb, DELETED_ATTR);
        if (!rc) rc = at_buf_addc(fb, ')');
    }
    if (!rc && td->ttl_attr) {
        /* True when the attribute is absent, not a number, or not before now. */
        json_t *nowav = at_av_n_int(now);
        if (!nowav) return AT_ENOMEM;
        if (fb->len) rc = at_buf_adds(fb, " AND ");
        if (!rc) rc = at_buf_adds(fb, "(NOT (");
        if (!rc) rc = add_name(x, fb, td->ttl_attr);
        if (!rc) rc = at_buf_adds(fb, " < ");
        if (!rc) rc = add_value(x, fb, nowav);
        if (!rc) rc = at_buf_adds(fb, "))");
        json_decref(nowav);
    }
    return rc;
}

static int ddb_query(at_store *s, const at_query *q, at_page *out)
{
    const at_table_def *td = at_schema_table(q->table);
    const at_index_def *ix = q->index ? at_schema_index(td, q->index) : NULL;
    const at_attr_def *kpk = ix ? &ix->pk : &td->pk, *ksk = ix ? &ix->sk : &td->sk;
    json_t *req = NULL;
    at_buf kb, fb;
    expr x;
    pager p;
    int rc;

    at_buf_init(&kb, MAX_EXPR);
    at_buf_init(&fb, MAX_EXPR);
    rc = expr_init(&x);
    if (rc) goto out;
    if (q->index && !ix) {
        rc = AT_EINVAL;
        goto out;
    }
    /* The key values must have the key's type (and the partition key no empty string),
     * as DynamoDB requires; refused here without a request. */
    rc = key_value_ok(q->pk, kpk->type);
    if (!rc) rc = check_sk(&q->sk, ksk);
    if (rc) goto out;
    if (q->start_key && at_av_check_item(q->start_key, NULL, 0)) {
        rc = AT_EINVAL;
        goto out;
    }

    p = (pager){s,
                AT_DDB_QUERY,
                td,
                ix,
                &q->filter,
                !!(q->flags & AT_Q_LIVE),
                now_seconds(),
                q->max_read_bytes ? q->max_read_bytes : AT_QUERY_MAX_READ,
                !ix || ix->kind == AT_INDEX_LSI};

    /* Key condition: partition key equality, then the sort key condition. */
    rc = add_name(&x, &kb, kpk->name);
    if (!rc) rc = at_buf_adds(&kb, " = ");
    if (!rc) rc = add_value(&x, &kb, q->pk);
    if (!rc && q->sk.attr) {
        rc = at_buf_adds(&kb, " AND ");
        if (!rc) rc = add_clause(&x, &kb, &q->sk);
    }
    /* Filter: the caller's clauses on non-key attributes (DynamoDB refuses key
     * attributes there; those are checked in C), soft deletes, TTL. */
    if (!rc) rc = add_cond(&x, &fb, &q->filter, kpk->name, ksk->name);
    if (!rc) rc = add_standard_filters(&x, &fb, td, p.live, p.now);
    if (rc) goto out;

    req = request_for(s, q->table);
    if (!req || json_object_set_new(req, "KeyConditionExpression", json_string(kb.ptr)) ||
        json_object_set_new(req, "ScanIndexForward", json_boolean(q->forward)) ||
        (ix && json_object_set_new(req, "IndexName", json_string(ix->name))) ||
        /* A GSI is eventually consistent; DynamoDB refuses ConsistentRead there. */
        (p.consistent && json_object_set_new(req, "ConsistentRead", json_true())) ||
        /* How much each answer read, for the work bound. */
        json_object_set_new(req, "ReturnConsumedCapacity", json_string("TOTAL"))) {
        rc = AT_ENOMEM;
        goto out;
    }
    rc = expr_finish(&x, req, "FilterExpression", &fb);
    if (!rc && (q->flags & AT_Q_COUNT)) {
        if (!(out->items = json_array())) rc = AT_ENOMEM;
        if (!rc) rc = count_pages(&p, req, q->start_key, q->limit, out);
    } else {
        if (!rc) rc = run_pages(&p, req, q->start_key, q->limit, out);
        if (!rc && (q->flags & AT_Q_RAW)) rc = to_raw(out);
    }
out:
    if (rc) at_page_release(out);
    expr_release(&x);
    at_buf_release(&kb);
    at_buf_release(&fb);
    json_decref(req);
    return rc;
}

static int ddb_scan(at_store *s, at_table_id t, const json_t *start_key, size_t limit, at_page *out)
{
    const at_table_def *td = at_schema_table(t);
    json_t *req = NULL;
    at_buf fb;
    expr x;
    pager p = {s, AT_DDB_SCAN, td, NULL, NULL, 0, now_seconds(), 0, 1};
    int rc;

    at_buf_init(&fb, MAX_EXPR);
    rc = expr_init(&x);
    if (rc) goto out;
    if (start_key && at_av_check_item(start_key, NULL, 0)) {
        rc = AT_EINVAL;
        goto out;
    }
    rc = add_standard_filters(&x, &fb, td, 0, p.now);
    if (rc) goto out;
    req = request_for(s, t);
    if (!req || json_object_set_new(req, "ConsistentRead", json_true())) {
        rc = AT_ENOMEM;
        goto out;
    }
    rc = expr_finish(&x, req, "FilterExpression", &fb);
    if (!rc) rc = run_pages(&p, req, start_key, limit, out);
out:
    expr_release(&x);
    at_buf_release(&fb);
    json_decref(req);
    return rc;
}

/* ---- batch writes --------------------------------------------------------------- */

/* Returns 1 when item has the same primary key as one of the requests in reqs. */
static int key_in(const at_table_def *td, const json_t *reqs, const json_t *item)
{
    size_t i;
    json_t *r;
    json_array_foreach(reqs, i, r)
    {
        const json_t *other = json_object_get(json_object_get(r, "PutRequest"), "Item");
        const json_t *a = json_object_get(item, td->pk.name);
        const json_t *b = json_object_get(other, td->pk.name);
        if (!a || !b || !at_av_equal(a, b)) continue;
        if (!td->sk.name) return 1;
        a = json_object_get(item, td->sk.name);
        b = json_object_get(other, td->sk.name);
        if (a && b && at_av_equal(a, b)) return 1;
    }
    return 0;
}

/* Sends one BatchWriteItem of reqs (stolen), resending UnprocessedItems with backoff. */
static int batch_send(at_store *s, at_table_id t, json_t *reqs)
{
    json_t *req = NULL, *resp = NULL;
    int rc = 0;

    for (int round = 0;; round++) {
        json_t *left;
        req = json_pack("{s:{s:o}}", "RequestItems", s->names[t], reqs);
        reqs = NULL;
        if (!req) return AT_ENOMEM;
        rc = call(s, AT_DDB_BATCH_WRITE_ITEM, req, &resp);
        if (rc) break;
        left = json_object_get(json_object_get(resp, "UnprocessedItems"), s->names[t]);
        if (!json_is_array(left) || json_array_size(left) == 0) break;
        if (round + 1 >= BATCH_ROUNDS) {
            at_log(AT_LOG_WARN,
                   "dynamodb BatchWriteItem: %zu items still unprocessed after %d "
                   "rounds",
                   json_array_size(left), BATCH_ROUNDS);
            rc = AT_ETHROTTLED;
            break;
        }
        reqs = json_incref(left);
        json_decref(req);
        json_decref(resp);
        req = resp = NULL;
        {
            long ms = at_aws_backoff_ms(round, AT_AWS_BACKOFF_BASE_MS, AT_AWS_BACKOFF_CAP_MS);
            struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
            nanosleep(&ts, NULL);
        }
    }
    json_decref(reqs);
    json_decref(req);
    json_decref(resp);
    return rc;
}

static int ddb_batch_put(at_store *s, at_table_id t, const json_t *items)
{
    const at_table_def *td = at_schema_table(t);
    json_t *reqs = NULL, *it;
    size_t i;
    int rc = 0;

    json_array_foreach(items, i, it)
    {
        if (at_av_check_item(it, NULL, 0) || check_item_keys(td, it)) return AT_EINVAL;
    }
    json_array_foreach(items, i, it)
    {
        /* A batch may not name one key twice: a repeated key starts a new batch, so
         * the later item wins as with separate puts. */
        if (reqs && (json_array_size(reqs) == BATCH_MAX || key_in(td, reqs, it))) {
            rc = batch_send(s, t, reqs);
            reqs = NULL;
            if (rc) return rc;
        }
        if (!reqs && !(reqs = json_array())) return AT_ENOMEM;
        if (json_array_append_new(reqs, json_pack("{s:{s:O}}", "PutRequest", "Item", it))) {
            json_decref(reqs);
            return AT_ENOMEM;
        }
    }
    if (reqs) rc = batch_send(s, t, reqs);
    return rc;
}

/* ---- setup ---------------------------------------------------------------------- */

static const char *key_type(at_key_type t)
{
    return t == AT_KEY_N ? "N" : "S";
}

/* Adds attr to AttributeDefinitions unless it is there. */
static int add_attr_def(json_t *defs, const at_attr_def *a)
{
    size_t i;
    json_t *d;
    if (!a->name) return 0;
    json_array_foreach(defs, i, d)
    {
        if (strcmp(json_string_value(json_object_get(d, "AttributeName")), a->name) == 0) return 0;
    }
    return json_array_append_new(defs, json_pack("{s:s, s:s}", "AttributeName", a->name,
                                                 "AttributeType", key_type(a->type)))
               ? AT_ENOMEM
               : 0;
}

static json_t *key_schema(const at_attr_def *pk, const at_attr_def *sk)
{
    json_t *ks = json_pack("[{s:s, s:s}]", "AttributeName", pk->name, "KeyType", "HASH");
    if (ks && sk->name &&
        json_array_append_new(
            ks, json_pack("{s:s, s:s}", "AttributeName", sk->name, "KeyType", "RANGE"))) {
        json_decref(ks);
        return NULL;
    }
    return ks;
}

static json_t *projection(const at_index_def *ix)
{
    json_t *p, *nk;
    if (!ix->include) return json_pack("{s:s}", "ProjectionType", "ALL");
    nk = json_array();
    for (size_t i = 0; nk && ix->include[i]; i++)
        if (json_array_append_new(nk, json_string(ix->include[i]))) {
            json_decref(nk);
            return NULL;
        }
    p = json_pack("{s:s, s:o}", "ProjectionType", "INCLUDE", "NonKeyAttributes", nk);
    return p;
}

/* Returns the CreateTable request of table td named name. */
static json_t *create_request(const at_table_def *td, const char *name)
{
    json_t *req =
        json_pack("{s:s, s:s, s:[], s:o}", "TableName", name, "BillingMode", "PAY_PER_REQUEST",
                  "AttributeDefinitions", "KeySchema", key_schema(&td->pk, &td->sk));
    json_t *defs = json_object_get(req, "AttributeDefinitions");
    json_t *gsis = json_array(), *lsis = json_array();
    int rc = req && gsis && lsis && json_object_get(req, "KeySchema") ? 0 : AT_ENOMEM;

    if (!rc) rc = add_attr_def(defs, &td->pk);
    if (!rc) rc = add_attr_def(defs, &td->sk);
    for (size_t i = 0; i < td->nindexes && !rc; i++) {
        const at_index_def *ix = &td->indexes[i];
        json_t *d = json_pack("{s:s, s:o, s:o}", "IndexName", ix->name, "KeySchema",
                              key_schema(&ix->pk, &ix->sk), "Projection", projection(ix));
        if (!d) {
            rc = AT_ENOMEM;
            break;
        }
        rc = add_attr_def(defs, &ix->pk);
        if (!rc) rc = add_attr_def(defs, &ix->sk);
        if (!rc && json_array_append_new(ix->kind == AT_INDEX_GSI ? gsis : lsis, d)) rc = AT_ENOMEM;
    }
    if (!rc && json_array_size(gsis) && json_object_set(req, "GlobalSecondaryIndexes", gsis))
        rc = AT_ENOMEM;
    if (!rc && json_array_size(lsis) && json_object_set(req, "LocalSecondaryIndexes", lsis))
        rc = AT_ENOMEM;
    if (!rc && td->stream &&
        json_object_set_new(
            req, "StreamSpecification",
            json_pack("{s:b, s:s}", "StreamEnabled", 1, "StreamViewType", "NEW_AND_OLD_IMAGES")))
        rc = AT_ENOMEM;
    json_decref(gsis);
    json_decref(lsis);
    if (rc) {
        json_decref(req);
        return NULL;
    }
    return req;
}

/* DescribeTable: 0 and *table (new reference to the "Table" member), or AT_ENOTABLE. */
static int describe(at_store *s, const char *name, json_t **table)
{
    json_t *req = json_pack("{s:s}", "TableName", name), *resp = NULL;
    int rc;
    *table = NULL;
    if (!req) return AT_ENOMEM;
    rc = call(s, AT_DDB_DESCRIBE_TABLE, req, &resp);
    json_decref(req);
    if (rc) return rc;
    *table = json_incref(json_object_get(resp, "Table"));
    json_decref(resp);
    return *table ? 0 : AT_EIO;
}

static int all_active(const json_t *table)
{
    size_t i;
    json_t *g;
    const char *st = json_string_value(json_object_get(table, "TableStatus"));
    if (!st || strcmp(st, "ACTIVE") != 0) return 0;
    json_array_foreach(json_object_get(table, "GlobalSecondaryIndexes"), i, g)
    {
        st = json_string_value(json_object_get(g, "IndexStatus"));
        if (st && strcmp(st, "ACTIVE") != 0) return 0;
    }
    return 1;
}

/* Waits until the table and its global indexes are ACTIVE; *table is the last answer. */
static int wait_active(at_store *s, const char *name, json_t **table)
{
    int64_t until = at_monotonic_us() + SETUP_WAIT_US, next_log = at_monotonic_us() + 10000000;
    long poll_ms = SETUP_POLL_FIRST_MS;
    int rc = 0;
    while (!all_active(*table)) {
        struct timespec ts = {poll_ms / 1000, (poll_ms % 1000) * 1000000L};
        poll_ms = poll_ms * 2 > SETUP_POLL_MAX_MS ? SETUP_POLL_MAX_MS : poll_ms * 2;
        if (at_monotonic_us() > until) {
            at_log(AT_LOG_ERROR, "dynamodb table %s is not ACTIVE after %lld s", name,
                   (long long)(SETUP_WAIT_US / 1000000));
            return AT_EUNAVAIL;
        }
        if (at_monotonic_us() > next_log) {
            at_log(AT_LOG_INFO, "waiting for dynamodb table %s to become ACTIVE", name);
            next_log = at_monotonic_us() + 10000000;
        }
        nanosleep(&ts, NULL);
        json_decref(*table);
        rc = describe(s, name, table);
        if (rc) return rc;
    }
    return 0;
}

/* Logs what an existing table lacks compared with the schema (indexes, stream). */
static void check_existing(const at_table_def *td, const char *name, const json_t *table)
{
    for (size_t i = 0; i < td->nindexes; i++) {
        const at_index_def *ix = &td->indexes[i];
        const json_t *list = json_object_get(
            table, ix->kind == AT_INDEX_GSI ? "GlobalSecondaryIndexes" : "LocalSecondaryIndexes");
        size_t j;
        json_t *d;
        int found = 0;
        json_array_foreach(list, j, d)
        {
            const char *n = json_string_value(json_object_get(d, "IndexName"));
            if (n && strcmp(n, ix->name) == 0) found = 1;
        }
        if (!found)
            at_log(AT_LOG_WARN,
                   "dynamodb table %s exists without the %s index %s: queries on it will "
                   "fail until it is added (a local index can only be made with the table)",
                   name, ix->kind == AT_INDEX_GSI ? "global" : "local", ix->name);
    }
    if (td->stream && !json_is_true(json_object_get(json_object_get(table, "StreamSpecification"),
                                                    "StreamEnabled")))
        at_log(AT_LOG_WARN,
               "dynamodb table %s has no stream (or the server does not report one): the "
               "Worker will not see its changes",
               name);
}

/* Turns TTL on for td's TTL attribute when it is off. A server without the TTL API
 * (dynalite) is a warning: the backend hides expired items by itself. */
static int setup_ttl(at_store *s, const at_table_def *td, const char *name)
{
    json_t *req, *resp = NULL;
    at_ddb_error e;
    const char *status = NULL;
    int rc, on = 0;

    req = json_pack("{s:s}", "TableName", name);
    if (!req) return AT_ENOMEM;
    rc = at_ddb_call(client_of(s), AT_DDB_DESCRIBE_TIME_TO_LIVE, req, &resp, &e);
    json_decref(req);
    if (rc == 0)
        status = json_string_value(
            json_object_get(json_object_get(resp, "TimeToLiveDescription"), "TimeToLiveStatus"));
    on = status && (strcmp(status, "ENABLED") == 0 || strcmp(status, "ENABLING") == 0);
    json_decref(resp);
    resp = NULL;
    if (on) return 0;

    req = json_pack("{s:s, s:{s:b, s:s}}", "TableName", name, "TimeToLiveSpecification", "Enabled",
                    1, "AttributeName", td->ttl_attr);
    if (!req) return AT_ENOMEM;
    rc = at_ddb_call(client_of(s), AT_DDB_UPDATE_TIME_TO_LIVE, req, &resp, &e);
    json_decref(req);
    json_decref(resp);
    if (rc && (strcmp(e.type, "UnknownOperationException") == 0 || e.http_status == 404)) {
        at_log(AT_LOG_WARN,
               "dynamodb server does not implement UpdateTimeToLive (dynalite?): TTL of %s "
               "on %s not enabled; expired items are still never served",
               td->ttl_attr, name);
        return 0;
    }
    if (rc && strcmp(e.type, "ValidationException") == 0 && strstr(e.message, "already enabled"))
        return 0;
    if (rc)
        at_log(AT_LOG_ERROR, "dynamodb UpdateTimeToLive on %s failed: %s %s", name, e.type,
               e.message);
    return rc;
}

static int ddb_setup(at_store *s, json_t *created, json_t *existing)
{
    int rc = 0;

    for (int t = 0; t < AT_TABLE_COUNT && !rc; t++) {
        const at_table_def *td = at_schema_table((at_table_id)t);
        const char *name = s->names[t];
        json_t *table = NULL, *list = existing;

        rc = describe(s, name, &table);
        if (rc == AT_ENOTABLE) {
            json_t *req = create_request(td, name), *resp = NULL;
            at_ddb_error e;
            if (!req) return AT_ENOMEM;
            rc = at_ddb_call(client_of(s), AT_DDB_CREATE_TABLE, req, &resp, &e);
            json_decref(req);
            if (rc == 0) {
                list = created;
                table = json_incref(json_object_get(resp, "TableDescription"));
                at_log(AT_LOG_INFO, "dynamodb table %s created", name);
            } else if (strcmp(e.type, "ResourceInUseException") == 0) {
                rc = describe(s, name, &table); /* made by someone else meanwhile */
            } else {
                at_log(AT_LOG_ERROR, "dynamodb CreateTable %s failed: %s %s", name, e.type,
                       e.message);
            }
            json_decref(resp);
        } else if (rc == 0) {
            check_existing(td, name, table);
        }
        if (!rc) rc = wait_active(s, name, &table);
        if (!rc && td->ttl_attr) rc = setup_ttl(s, td, name);
        if (!rc && list && json_array_append_new(list, json_string(name))) rc = AT_ENOMEM;
        json_decref(table);
    }
    return rc;
}

/* ---- the rest -------------------------------------------------------------------- */

static int ddb_sweep_expired(at_store *s, int64_t now, size_t *removed)
{
    (void)s;
    (void)now;
    if (removed) *removed = 0;
    return 0;
}

static int ddb_stream_read(at_store *s, int64_t after_seq, size_t limit, json_t **records)
{
    (void)s;
    (void)after_seq;
    (void)limit;
    *records = NULL;
    return AT_EINVAL;
}

static void ddb_destroy(at_store *s)
{
    ddb_store *d = (ddb_store *)s;
    at_ddb_client_free(d->client);
    at_store_release_names(s);
    free(d);
}

static const at_store_ops ddb_ops = {
    .name = "dynamodb",
    .setup = ddb_setup,
    .get = ddb_get,
    .put = ddb_put,
    .update = ddb_update,
    .del = ddb_del,
    .query = ddb_query,
    .scan = ddb_scan,
    .batch_put = ddb_batch_put,
    .sweep_expired = ddb_sweep_expired,
    .stream_read = ddb_stream_read,
    .destroy = ddb_destroy,
};

int at_store_open_dynamodb(const at_aws_options *o, const char *const names[AT_TABLE_COUNT],
                           at_store **out, char *err, size_t errlen)
{
    ddb_store *d;
    int rc;

    *out = NULL;
    if (!o) return AT_EINVAL;
    d = calloc(1, sizeof *d);
    if (!d) return AT_ENOMEM;
    d->base.ops = &ddb_ops;
    rc = at_store_init_names(&d->base, names);
    if (rc) {
        free(d);
        return rc;
    }
    rc = at_ddb_client_new(o, &d->client, err, errlen);
    if (rc) {
        ddb_destroy(&d->base);
        return rc;
    }
    *out = &d->base;
    return 0;
}
