/* The sqlite backend's change stream (DynamoDB Streams records kept in one internal
 * table, written in the same transaction as the change) and its TTL sweeper. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store/sqlite/sqlite_int.h"
#include "actionstools/err.h"
#include "actionstools/uuid.h"
#include "actionstools/banned.h"

#define STREAM_READ_MAX 10000 /* records per stream_read call */
#define SWEEP_BATCH 500       /* items deleted per write transaction */

/* Writes a random 32-hex-digit event id into out. */
static void event_id(char out[33])
{
    char u[AT_UUID_LEN + 1];
    size_t j = 0;
    at_uuid_new(u);
    for (size_t i = 0; u[i] && j < 32; i++)
        if (u[i] != '-') out[j++] = u[i];
    out[j] = '\0';
}

/* Builds the record of the change old -> new_item, without its SequenceNumber (the
 * stream table's seq, added when the record is read). */
static json_t *make_record(const char *table, const sq_table *t, const json_t *old,
                           const json_t *new_item, int64_t now)
{
    const json_t *any = new_item ? new_item : old;
    json_t *keys = at_schema_item_key(t->def, NULL, any), *rec = NULL, *ddb;
    char id[33], arn[512];
    size_t size;

    if (!keys) return NULL;
    size = at_sqlite_item_size(keys) + (old ? at_sqlite_item_size(old) : 0) +
           (new_item ? at_sqlite_item_size(new_item) : 0);
    ddb = json_pack("{s:I, s:o, s:I, s:s}", "ApproximateCreationDateTime", (json_int_t)now, "Keys",
                    keys, "SizeBytes", (json_int_t)size, "StreamViewType", "NEW_AND_OLD_IMAGES");
    if (!ddb) return NULL;
    if ((new_item && json_object_set_new(ddb, "NewImage", json_deep_copy(new_item))) ||
        (old && json_object_set_new(ddb, "OldImage", json_deep_copy(old)))) {
        json_decref(ddb);
        return NULL;
    }
    event_id(id);
    snprintf(arn, sizeof arn, "arn:aws:dynamodb:local:000000000000:table/%s/stream/local", table);
    rec = json_pack("{s:s, s:s, s:s, s:s, s:s, s:o, s:s}", "eventID", id, "eventName",
                    !old        ? "INSERT"
                    : !new_item ? "REMOVE"
                                : "MODIFY",
                    "eventVersion", "1.1", "eventSource", "aws:dynamodb", "awsRegion", "local",
                    "dynamodb", ddb, "eventSourceARN", arn);
    return rec;
}

int at_sqlite_stream_add(sq_store *s, sq_conn *c, const sq_table *t, const json_t *old,
                         const json_t *new_item, int64_t now)
{
    sqlite3_stmt *st;
    json_t *rec;
    char *text = NULL;
    int rc;

    if (!t->def->stream) return 0;
    rec = make_record(s->base.names[t->def->id], t, old, new_item, now);
    if (rec) text = json_dumps(rec, JSON_COMPACT);
    json_decref(rec);
    if (!text) return AT_ENOMEM;
    rc = at_sqlite_prepare(c, "INSERT INTO \"" SQ_STREAM_TABLE "\" (created, record) VALUES (?, ?)",
                           &st);
    if (!rc) {
        sqlite3_bind_int64(st, 1, now);
        sqlite3_bind_text(st, 2, text, -1, SQLITE_STATIC);
        rc = sqlite3_step(st);
        rc = rc == SQLITE_DONE ? 0 : at_sqlite_err(c, rc, "stream write");
        sqlite3_reset(st);
        sqlite3_clear_bindings(st);
    }
    free(text);
    return rc;
}

/* Appends the record of row (seq, text) to out with its SequenceNumber. */
static int add_record(json_t *out, int64_t seq, const char *text, size_t len)
{
    json_t *rec = at_sqlite_load_item(text, len);
    char num[32];

    snprintf(num, sizeof num, "%021" PRId64, seq);
    if (!rec ||
        json_object_set_new(json_object_get(rec, "dynamodb"), "SequenceNumber", json_string(num)) ||
        json_array_append_new(out, rec))
        return AT_EIO;
    return 0;
}

int at_sqlite_stream_read(at_store *st, int64_t after_seq, size_t limit, json_t **records)
{
    sq_store *s = (sq_store *)st;
    sq_conn *c = NULL;
    sqlite3_stmt *q = NULL;
    json_t *out = json_array();
    int rc;

    if (!out) return AT_ENOMEM;
    rc = at_sqlite_conn_get(s, &c);
    if (!rc)
        rc = at_sqlite_prepare(
            c, "SELECT seq, record FROM \"" SQ_STREAM_TABLE "\" WHERE seq > ? ORDER BY seq LIMIT ?",
            &q);
    if (rc) goto out;
    sqlite3_bind_int64(q, 1, after_seq);
    sqlite3_bind_int64(q, 2, (int64_t)(limit < STREAM_READ_MAX ? limit : STREAM_READ_MAX));
    while (!rc && (rc = sqlite3_step(q)) == SQLITE_ROW)
        rc = add_record(out, sqlite3_column_int64(q, 0), sqlite3_column_blob(q, 1),
                        (size_t)sqlite3_column_bytes(q, 1));
    if (rc == SQLITE_DONE)
        rc = 0;
    else if (rc > 0)
        rc = at_sqlite_err(c, rc, "stream read");
    sqlite3_reset(q);
out:
    at_sqlite_conn_put(s, c);
    if (rc)
        json_decref(out);
    else
        *records = out;
    return rc;
}

/* ---- TTL ---- */

/* Reads up to SWEEP_BATCH expired items of t into the array out. */
static int expired_batch(sq_conn *c, const sq_table *t, int64_t now, json_t *out)
{
    sqlite3_stmt *st;
    int rc = at_sqlite_prepare(c, t->sql_expired, &st);
    if (rc) return rc;
    sqlite3_bind_int64(st, 1, now);
    while (!rc && (rc = sqlite3_step(st)) == SQLITE_ROW) {
        json_t *it =
            at_sqlite_load_item(sqlite3_column_blob(st, 0), (size_t)sqlite3_column_bytes(st, 0));
        rc = it && !json_array_append_new(out, it) ? 0 : AT_EIO;
    }
    if (rc == SQLITE_DONE)
        rc = 0;
    else if (rc > 0)
        rc = at_sqlite_err(c, rc, "sweep");
    sqlite3_reset(st);
    return rc;
}

typedef struct sweep_job {
    const sq_table *t;
    int64_t now;
    size_t n; /* OUT: items removed */
} sweep_job;

/* Deletes one batch of expired items of t (a write of its own); j->n gets how many. */
static int sweep_run(sq_store *s, sq_conn *c, void *arg)
{
    sweep_job *j = arg;
    json_t *items = json_array();
    int rc;

    j->n = 0;
    if (!items) return AT_ENOMEM;
    rc = expired_batch(c, j->t, j->now, items);
    for (size_t i = 0; !rc && i < json_array_size(items); i++)
        rc = at_sqlite_remove(s, c, j->t, json_array_get(items, i), j->now);
    if (!rc) j->n = json_array_size(items);
    json_decref(items);
    return rc;
}

/* Drops stream records older than DynamoDB Streams' retention. */
static int trim_run(sq_store *s, sq_conn *c, void *arg)
{
    const int64_t *now = arg;
    sqlite3_stmt *st;
    int rc = at_sqlite_prepare(c, "DELETE FROM \"" SQ_STREAM_TABLE "\" WHERE created < ?", &st);
    if (rc) return rc;
    sqlite3_bind_int64(st, 1, *now - SQ_STREAM_RETENTION);
    rc = sqlite3_step(st);
    rc = rc == SQLITE_DONE ? 0 : at_sqlite_err(c, rc, "stream trim");
    sqlite3_reset(st);
    return rc;
}

int at_sqlite_sweep_expired(at_store *st, int64_t now, size_t *removed)
{
    sq_store *s = (sq_store *)st;
    size_t total = 0;
    int rc = 0;

    for (int t = 0; !rc && t < AT_TABLE_COUNT; t++) {
        sweep_job j = {&s->tables[t], now, 0};
        if (!s->tables[t].has_ttl) continue;
        do {
            rc = at_sqlite_write(s, sweep_run, &j);
            if (!rc) total += j.n;
        } while (!rc && j.n == SWEEP_BATCH);
    }
    if (!rc) rc = at_sqlite_write(s, trim_run, &now);
    if (removed) *removed = total;
    return rc;
}
