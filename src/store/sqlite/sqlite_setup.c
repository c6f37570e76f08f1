/* The sqlite backend's table layouts (columns, indexes, SQL texts) and `setup`. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store/sqlite/sqlite_int.h"
#include "actionstools/err.h"
#include "actionstools/log.h"
#include "actionstools/banned.h"

/* Returns the column number of attr in t, adding the column when it is new. */
static int col_of(sq_table *t, const char *attr, at_key_type type)
{
    for (int i = 0; i < t->ncols; i++)
        if (strcmp(t->cols[i].attr, attr) == 0) return i;
    if (t->ncols >= SQ_MAX_COLS) return -1;
    t->cols[t->ncols].attr = attr;
    t->cols[t->ncols].type = type;
    return t->ncols++;
}

/* Names x's tenant-scoped twin when it has one: every secondary index of a table with
 * an instance_id key column, unless instance_id is already its partition key or it
 * projects only some attributes. Not the table itself: each twin costs every write one
 * more index entry (about 13k instructions of a 160k-instruction put), and lists read
 * secondary indexes. */
static int layout_scoped(sq_table *t, sq_ix *x, const char *name)
{
    int tied = 0, rc;
    at_buf b;
    if (!x->def || t->scope < 0 || x->pk == t->scope || x->def->include) return 0;
    for (int i = 0; i < x->nties; i++) tied |= x->ties[i] == t->scope;
    at_buf_init(&b, 4096);
    /* A twin that holds the tenant once (it is a tie) has a name of its own: the same
     * name would keep the twin of older versions, which repeated it. */
    rc = at_buf_printf(&b, "%s/%s/live-by-" SQ_SCOPE_ATTR, name, x->def->name);
    if (!rc && tied && !(x->qscoped_old = at_sqlite_quote(at_buf_str(&b)))) rc = AT_ENOMEM;
    if (!rc && tied) rc = at_buf_adds(&b, "/once");
    if (!rc && !(x->qscoped = at_sqlite_quote(at_buf_str(&b)))) rc = AT_ENOMEM;
    at_buf_release(&b);
    return rc;
}

static int layout_index(sq_table *t, sq_ix *x, const at_index_def *d, const char *name)
{
    at_buf b;
    char *q;

    x->def = d;
    x->pk = col_of(t, d->pk.name, d->pk.type);
    x->sk = d->sk.name ? col_of(t, d->sk.name, d->sk.type) : -1;
    if (x->pk < 0 || (d->sk.name && x->sk < 0)) return AT_EINVAL;
    x->nties = 0;
    if (t->pk != x->pk && t->pk != x->sk) x->ties[x->nties++] = t->pk;
    if (t->sk >= 0 && t->sk != x->pk && t->sk != x->sk) x->ties[x->nties++] = t->sk;
    /* An index whose keys are the table's own keys reads the primary key instead. */
    x->own = !(x->pk == t->pk && x->sk == t->sk);
    if (!x->own) return 0;
    at_buf_init(&b, 4096);
    if (at_buf_printf(&b, "%s/%s", name, d->name)) {
        at_buf_release(&b);
        return AT_ENOMEM;
    }
    q = at_sqlite_quote(at_buf_str(&b));
    at_buf_release(&b);
    x->qindex = q;
    return q ? 0 : AT_ENOMEM;
}

/* Appends the quoted name of column i of t. */
static int add_col(at_buf *b, const sq_table *t, int i)
{
    return at_buf_printf(b, "\"%s\"", t->cols[i].attr);
}

/* Appends the table's primary key columns, "pk", "sk". */
static int add_key_cols(at_buf *b, const sq_table *t)
{
    int rc = add_col(b, t, t->pk);
    if (!rc && t->sk >= 0) rc = at_buf_adds(b, ", ") || add_col(b, t, t->sk);
    return rc;
}

/* Appends "pk" = ? AND "sk" = ? for the primary key. */
static int add_key_match(at_buf *b, const sq_table *t)
{
    int rc = add_col(b, t, t->pk) || at_buf_adds(b, " = ?");
    if (!rc && t->sk >= 0)
        rc = at_buf_adds(b, " AND ") || add_col(b, t, t->sk) || at_buf_adds(b, " = ?");
    return rc;
}

static char *take(at_buf *b, int rc)
{
    if (rc) {
        at_buf_release(b);
        return NULL;
    }
    return at_buf_take(b, NULL);
}

static int build_upsert(sq_table *t)
{
    at_buf b;
    int rc;

    at_buf_init(&b, SQ_SQL_MAX);
    rc = at_buf_printf(&b, "INSERT INTO %s (", t->qname);
    for (int i = 0; !rc && i < t->ncols; i++)
        rc = add_col(&b, t, i) || at_buf_adds(&b, ", ");
    if (!rc && t->has_ttl) rc = at_buf_adds(&b, "\"_ttl\", ");
    if (!rc) rc = at_buf_adds(&b, "\"_deleted\", \"_item\") VALUES (");
    for (int i = 0; !rc && i < t->ncols + t->has_ttl + 1; i++)
        rc = at_buf_adds(&b, "?, ");
    if (!rc)
        rc = at_buf_adds(&b, "?) ON CONFLICT (") || add_key_cols(&b, t) ||
             at_buf_adds(&b, ") DO UPDATE SET ");
    for (int i = 0; !rc && i < t->ncols; i++) {
        if (i == t->pk || i == t->sk) continue;
        rc = add_col(&b, t, i) || at_buf_adds(&b, " = excluded.") || add_col(&b, t, i) ||
             at_buf_adds(&b, ", ");
    }
    if (!rc && t->has_ttl) rc = at_buf_adds(&b, "\"_ttl\" = excluded.\"_ttl\", ");
    if (!rc) rc = at_buf_adds(&b, "\"_deleted\" = excluded.\"_deleted\", ");
    if (!rc) rc = at_buf_adds(&b, "\"_item\" = excluded.\"_item\"");
    t->sql_upsert = take(&b, rc);
    return t->sql_upsert ? 0 : AT_ENOMEM;
}

static int build_sql(sq_table *t)
{
    at_buf b;
    int rc;

    at_buf_init(&b, SQ_SQL_MAX);
    rc = at_buf_printf(&b, "SELECT \"_item\" FROM %s WHERE ", t->qname) || add_key_match(&b, t);
    if (!(t->sql_get = take(&b, rc))) return AT_ENOMEM;
    rc = at_buf_printf(&b, "DELETE FROM %s WHERE ", t->qname) || add_key_match(&b, t);
    if (!(t->sql_delete = take(&b, rc))) return AT_ENOMEM;
    rc = at_buf_printf(&b, "SELECT \"_item\" FROM %s ORDER BY ", t->qname) || add_key_cols(&b, t);
    if (!(t->sql_scan = take(&b, rc))) return AT_ENOMEM;
    rc = at_buf_printf(&b, "SELECT \"_item\" FROM %s WHERE (", t->qname) || add_key_cols(&b, t) ||
         at_buf_adds(&b, t->sk >= 0 ? ") > (?, ?) ORDER BY " : ") > (?) ORDER BY ") ||
         add_key_cols(&b, t);
    if (!(t->sql_scan_after = take(&b, rc))) return AT_ENOMEM;
    rc = at_buf_printf(
        &b, "SELECT \"_item\" FROM %s WHERE \"_ttl\" IS NOT NULL AND \"_ttl\" < ? LIMIT 500",
        t->qname);
    if (!(t->sql_expired = take(&b, rc))) return AT_ENOMEM;
    return build_upsert(t);
}

int at_sqlite_layout(sq_table *t, const at_table_def *def, const char *name)
{
    int rc;

    memset(t, 0, sizeof *t);
    t->def = def;
    t->qname = at_sqlite_quote(name);
    if (!t->qname) return AT_ENOMEM;
    t->pk = col_of(t, def->pk.name, def->pk.type);
    t->sk = def->sk.name ? col_of(t, def->sk.name, def->sk.type) : -1;
    t->has_ttl = def->ttl_attr != NULL;
    t->base.pk = t->pk;
    t->base.sk = t->sk;
    if (def->nindexes > SQ_MAX_IX) return AT_EINVAL;
    for (size_t i = 0; i < def->nindexes; i++) {
        rc = layout_index(t, &t->ix[i], &def->indexes[i], name);
        if (rc) return rc;
        t->nix++;
    }
    t->scope = -1;
    for (int i = 0; i < t->ncols; i++)
        if (strcmp(t->cols[i].attr, SQ_SCOPE_ATTR) == 0 && t->cols[i].type == AT_KEY_S) t->scope = i;
    rc = 0;
    for (size_t i = 0; !rc && i < t->nix; i++)
        rc = layout_scoped(t, &t->ix[i], name);
    return rc ? rc : build_sql(t);
}

void at_sqlite_layout_release(sq_table *t)
{
    for (size_t i = 0; i < t->nix; i++) {
        free(t->ix[i].qindex);
        free(t->ix[i].qscoped);
        free(t->ix[i].qscoped_old);
    }
    free(t->base.qscoped);
    free(t->qname);
    free(t->sql_get);
    free(t->sql_upsert);
    free(t->sql_delete);
    free(t->sql_scan);
    free(t->sql_scan_after);
    free(t->sql_expired);
    memset(t, 0, sizeof *t);
}

/* ---- setup ---- */

static int ddl(sq_conn *c, const char *sql)
{
    int rc = sqlite3_exec(c->db, sql, NULL, NULL, NULL);
    return rc == SQLITE_OK ? 0 : at_sqlite_err(c, rc, "setup");
}

static int table_exists(sq_conn *c, const char *name, int *exists)
{
    sqlite3_stmt *st;
    int rc =
        at_sqlite_prepare(c, "SELECT 1 FROM sqlite_schema WHERE type = 'table' AND name = ?", &st);
    if (rc) return rc;
    sqlite3_bind_text(st, 1, name, -1, SQLITE_STATIC);
    rc = sqlite3_step(st);
    *exists = rc == SQLITE_ROW;
    rc = rc == SQLITE_ROW || rc == SQLITE_DONE ? 0 : at_sqlite_err(c, rc, "setup");
    sqlite3_reset(st);
    sqlite3_clear_bindings(st);
    return rc;
}

static int create_table(sq_conn *c, const sq_table *t)
{
    at_buf b;
    int rc;

    at_buf_init(&b, SQ_SQL_MAX);
    rc = at_buf_printf(&b, "CREATE TABLE IF NOT EXISTS %s (", t->qname);
    for (int i = 0; !rc && i < t->ncols; i++)
        rc = add_col(&b, t, i) || at_buf_adds(&b, i == t->pk || i == t->sk ? " NOT NULL, " : ", ");
    if (!rc && t->has_ttl) rc = at_buf_adds(&b, "\"_ttl\", ");
    if (!rc)
        rc = at_buf_adds(&b, "\"_deleted\", \"_item\" TEXT NOT NULL, PRIMARY KEY (") ||
             add_key_cols(&b, t) ||
             at_buf_adds(&b, "))");
    if (!rc) rc = ddl(c, at_buf_str(&b));
    at_buf_release(&b);
    return rc;
}

int at_sqlite_ix_predicate(const sq_table *t, const sq_ix *x, at_buf *b)
{
    int rc = add_col(b, t, x->pk) || at_buf_adds(b, " IS NOT NULL");
    if (!rc && x->sk >= 0)
        rc = at_buf_adds(b, " AND ") || add_col(b, t, x->sk) || at_buf_adds(b, " IS NOT NULL");
    return rc;
}

int at_sqlite_scoped_predicate(const sq_table *t, const sq_ix *x, at_buf *b)
{
    int rc = x->own ? at_sqlite_ix_predicate(t, x, b) || at_buf_adds(b, " AND ") : 0;
    if (!rc)
        rc = add_col(b, t, t->scope) || at_buf_adds(b, " IS NOT NULL AND \"_deleted\" IS NULL");
    return rc;
}

static int create_scoped_index(sq_conn *c, const sq_table *t, const sq_ix *x)
{
    at_buf b;
    int rc;

    at_buf_init(&b, SQ_SQL_MAX);
    rc = x->qscoped_old ? at_buf_printf(&b, "DROP INDEX IF EXISTS %s;", x->qscoped_old) : 0;
    if (!rc)
        rc = at_buf_printf(&b, "CREATE INDEX IF NOT EXISTS %s ON %s (", x->qscoped, t->qname) ||
             add_col(&b, t, x->pk) || at_buf_adds(&b, ", ") || add_col(&b, t, t->scope);
    if (!rc && x->sk >= 0) rc = at_buf_adds(&b, ", ") || add_col(&b, t, x->sk);
    for (int i = 0; !rc && i < x->nties; i++)
        if (x->ties[i] != t->scope) rc = at_buf_adds(&b, ", ") || add_col(&b, t, x->ties[i]);
    if (!rc) rc = at_buf_adds(&b, ") WHERE ") || at_sqlite_scoped_predicate(t, x, &b);
    if (!rc) rc = ddl(c, at_buf_str(&b));
    at_buf_release(&b);
    return rc;
}

static int create_index(sq_conn *c, const sq_table *t, const sq_ix *x)
{
    at_buf b;
    int rc;

    at_buf_init(&b, SQ_SQL_MAX);
    rc = at_buf_printf(&b, "CREATE INDEX IF NOT EXISTS %s ON %s (", x->qindex, t->qname) ||
         add_col(&b, t, x->pk);
    if (!rc && x->sk >= 0) rc = at_buf_adds(&b, ", ") || add_col(&b, t, x->sk);
    for (int i = 0; !rc && i < x->nties; i++)
        rc = at_buf_adds(&b, ", ") || add_col(&b, t, x->ties[i]);
    if (!rc) rc = at_buf_adds(&b, ") WHERE ") || at_sqlite_ix_predicate(t, x, &b);
    if (!rc) rc = ddl(c, at_buf_str(&b));
    at_buf_release(&b);
    return rc;
}

static int create_ttl_index(sq_conn *c, const sq_table *t, const char *name)
{
    at_buf b;
    char *q = NULL;
    int rc;

    at_buf_init(&b, SQ_SQL_MAX);
    rc = at_buf_printf(&b, "%s/_ttl", name);
    if (!rc && !(q = at_sqlite_quote(at_buf_str(&b)))) rc = AT_ENOMEM;
    at_buf_reset(&b);
    if (!rc)
        rc = at_buf_printf(
            &b, "CREATE INDEX IF NOT EXISTS %s ON %s (\"_ttl\") WHERE \"_ttl\" IS NOT NULL", q,
            t->qname);
    if (!rc) rc = ddl(c, at_buf_str(&b));
    free(q);
    at_buf_release(&b);
    return rc;
}

/* Adds the columns a table made by an older layout lacks (a key attribute of an index
 * added since), and fills every key column again from the stored items. */
static int migrate_columns(sq_conn *c, const sq_table *t, const char *name)
{
    at_buf b;
    int rc = 0, added = 0;

    at_buf_init(&b, SQ_SQL_MAX);
    for (int i = 0; !rc && i < t->ncols + t->has_ttl + 1; i++) {
        const char *col = i < t->ncols ? t->cols[i].attr : i == t->ncols + t->has_ttl ? "_deleted" : "_ttl";
        sqlite3_stmt *st = NULL;
        /* pragma_table_info takes the table's name as a string (unquoted). */
        rc = sqlite3_prepare_v2(c->db, "SELECT 1 FROM pragma_table_info(?) WHERE name = ?", -1, &st,
                                NULL);
        if (rc != SQLITE_OK) {
            rc = at_sqlite_err(c, rc, "setup");
            sqlite3_finalize(st);
            break;
        }
        sqlite3_bind_text(st, 1, name, -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 2, col, -1, SQLITE_STATIC);
        rc = sqlite3_step(st);
        sqlite3_finalize(st);
        if (rc == SQLITE_ROW) {
            rc = 0;
            continue;
        }
        at_buf_reset(&b);
        rc = at_buf_printf(&b, "ALTER TABLE %s ADD COLUMN \"%s\"", t->qname, col);
        if (!rc) rc = ddl(c, at_buf_str(&b));
        added = 1;
    }
    at_buf_release(&b);
    if (!rc && added) {
        at_log(AT_LOG_INFO, "sqlite: setup: filling new key columns of %s", t->qname);
        rc = ddl(c, "SAVEPOINT migrate");
        /* Writing each item again through the upsert fills every key column. */
        if (!rc) rc = at_sqlite_refill(c, t);
        ddl(c, rc ? "ROLLBACK TO migrate" : "RELEASE migrate");
    }
    return rc;
}

static int setup_table(sq_conn *c, const sq_table *t, const char *name, json_t *created,
                       json_t *existing)
{
    int exists = 0, rc;

    rc = table_exists(c, name, &exists);
    if (!rc && !exists) rc = create_table(c, t);
    if (!rc && exists) rc = migrate_columns(c, t, name);
    for (size_t i = 0; !rc && i < t->nix; i++)
        if (t->ix[i].own) rc = create_index(c, t, &t->ix[i]);
    for (size_t i = 0; !rc && i < t->nix; i++)
        if (t->ix[i].qscoped) rc = create_scoped_index(c, t, &t->ix[i]);
    if (!rc && t->has_ttl) rc = create_ttl_index(c, t, name);
    if (!rc && (exists ? existing : created))
        rc = json_array_append_new(exists ? existing : created, json_string(name)) ? AT_ENOMEM : 0;
    return rc;
}

typedef struct setup_job {
    json_t *created, *existing;
} setup_job;

static int setup_run(sq_store *s, sq_conn *c, void *arg)
{
    setup_job *j = arg;
    int rc = ddl(c, "CREATE TABLE IF NOT EXISTS \"" SQ_STREAM_TABLE "\" ("
                    "seq INTEGER PRIMARY KEY AUTOINCREMENT, created INTEGER NOT NULL, "
                    "record TEXT NOT NULL);"
                    "CREATE INDEX IF NOT EXISTS \"" SQ_STREAM_TABLE "/created\" ON \"" SQ_STREAM_TABLE
                    "\" (created)");
    for (int t = 0; !rc && t < AT_TABLE_COUNT; t++)
        rc = setup_table(c, &s->tables[t], s->base.names[t], j->created, j->existing);
    return rc;
}

int at_sqlite_setup(at_store *st, json_t *created, json_t *existing)
{
    sq_store *s = (sq_store *)st;
    size_t nc = json_array_size(created), ne = json_array_size(existing);
    setup_job j = {created, existing};
    int rc = at_sqlite_write_careful(s, setup_run, &j);
    if (rc) {
        /* Nothing was made: take back the names appended by the rolled-back run. */
        while (created && json_array_size(created) > nc) json_array_remove(created, nc);
        while (existing && json_array_size(existing) > ne) json_array_remove(existing, ne);
    }
    return rc;
}
