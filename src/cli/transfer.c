/* `export` and `import`: tables as DynamoDB JSON lines, one {"Item": {...}} per line,
 * the format of DynamoDB's export to S3. This is how data moves between the sqlite and
 * dynamodb backends. An import checks the whole input before writing anything. */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli.h"
#include "actionstools/av.h"
#include "actionstools/buf.h"
#include "actionstools/err.h"
#include "actionstools/banned.h"

#define SCAN_PAGE 500
#define IMPORT_CHUNK 500
#define MAX_LINE (1024 * 1024)

typedef struct transfer_opts {
    const char *table; /* logical name, or NULL for all tables */
    const char *file;  /* --out / --in; NULL: stdout / stdin */
    const char *dir;   /* --dir: one <logical>.json per table */
} transfer_opts;

static int parse_opts(int argc, char **argv, const char *file_opt, transfer_opts *o)
{
    const struct option opts[] = {
        {"table", required_argument, NULL, 't'},
        {file_opt, required_argument, NULL, 'f'},
        {"dir", required_argument, NULL, 'd'},
        {NULL, 0, NULL, 0},
    };
    int opt;
    memset(o, 0, sizeof *o);
    optind = 1;
    while ((opt = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        switch (opt) {
        case 't': o->table = optarg; break;
        case 'f': o->file = optarg; break;
        case 'd': o->dir = optarg; break;
        default: return 2;
        }
    }
    if (o->file && strcmp(o->file, "-") == 0) o->file = NULL; /* "-" is stdout / stdin */
    if (optind < argc) {
        fprintf(stderr, "actionstools: unexpected argument '%s'\n", argv[optind]);
        return 2;
    }
    if (o->table && !at_schema_table_by_logical(o->table)) {
        fprintf(stderr, "actionstools: --table %s: unknown table; the tables are notes, comments, "
                        "files, settings, counters, tasks, tasks_counters, notifications, "
                        "activity, reports_cache\n", o->table);
        return 2;
    }
    if (o->dir && (o->table || o->file)) {
        fprintf(stderr, "actionstools: --dir copies every table; do not combine it with --table or --%s\n",
                file_opt);
        return 2;
    }
    if (!o->dir && !o->table) {
        fprintf(stderr, "actionstools: name a table (--table NAME [--%s FILE]) or a directory "
                        "for all tables (--dir DIR)\n", file_opt);
        return 2;
    }
    return 0;
}

static int export_table(at_store *store, at_table_id t, FILE *out, size_t *count)
{
    json_t *start = NULL;
    int rc = 0;
    *count = 0;
    do {
        at_page page = {0};
        size_t i;
        json_t *item;
        rc = at_store_scan(store, t, start, SCAN_PAGE, &page);
        json_decref(start);
        start = NULL;
        if (rc) break;
        json_array_foreach(page.items, i, item)
        {
            json_t *line = json_pack("{s:O}", "Item", item);
            if (!line || json_dumpf(line, out, JSON_COMPACT | JSON_SORT_KEYS) || fputc('\n', out) == EOF)
                rc = AT_EIO;
            json_decref(line);
            if (rc) break;
            (*count)++;
        }
        start = json_incref(page.last_key);
        at_page_release(&page);
    } while (!rc && start);
    json_decref(start);
    return rc;
}

static char *table_file(const char *dir, const at_table_def *t)
{
    size_t n = strlen(dir) + strlen(t->logical) + 8;
    char *p = malloc(n);
    if (p) snprintf(p, n, "%s/%s.json", dir, t->logical);
    return p;
}

int at_cli_export(int argc, char **argv)
{
    transfer_opts o;
    at_config cfg;
    at_store *store = NULL;
    int rc = parse_opts(argc, argv, "out", &o), status = 0;
    if (rc) return rc;
    if (o.dir && mkdir(o.dir, 0755) && errno != EEXIST) {
        fprintf(stderr, "actionstools export: cannot create %s: %s\n", o.dir, strerror(errno));
        return 1;
    }
    rc = at_cli_load_config(&cfg);
    if (rc) return rc;
    if (at_cli_open_store(&cfg, &store)) {
        at_config_release(&cfg);
        return 1;
    }
    for (int i = 0; i < AT_TABLE_COUNT && !status; i++) {
        const at_table_def *t = at_schema_table((at_table_id)i);
        char *path = NULL;
        FILE *out = stdout;
        size_t count = 0;
        if (o.table && strcmp(o.table, t->logical) != 0) continue;
        path = o.dir ? table_file(o.dir, t) : (o.file ? strdup(o.file) : NULL);
        if (path && !(out = fopen(path, "w"))) {
            fprintf(stderr, "actionstools export: cannot write %s: %s\n", path, strerror(errno));
            status = 1;
        } else {
            rc = export_table(store, t->id, out, &count);
            if (rc == AT_ENOTABLE && o.dir) rc = 0; /* a table never set up has nothing to export */
            if (rc) {
                fprintf(stderr, "actionstools export: %s: %s\n", t->logical, at_strerror(rc));
                status = 1;
            } else {
                fprintf(stderr, "exported %zu items from %s (%s)\n", count, t->logical,
                        at_store_table_name(store, t->id));
            }
            if (out != stdout && fclose(out)) status = 1;
            else if (out == stdout) fflush(stdout);
        }
        free(path);
    }
    at_store_free(store);
    at_config_release(&cfg);
    return status;
}

/* Reads every line of in into an array of items, checking each. Returns 0, or prints
 * the first bad line and returns AT_EINVAL. */
static int read_items(FILE *in, const char *name, const at_table_def *t, json_t *items)
{
    char *line = NULL;
    size_t cap = 0;
    ssize_t len;
    long lineno = 0;
    int rc = 0;
    while ((len = getline(&line, &cap, in)) != -1) {
        json_error_t jerr;
        json_t *doc, *item;
        char why[256] = "";
        at_key_type type;
        lineno++;
        while (len > 0 && (line[len - 1] == '\n' || line[len - 1] == '\r')) line[--len] = '\0';
        if (len == 0) continue;
        if (len > MAX_LINE) {
            snprintf(why, sizeof why, "line is over %d bytes", MAX_LINE);
            rc = AT_EINVAL;
        }
        doc = rc ? NULL : json_loadb(line, (size_t)len, JSON_REJECT_DUPLICATES, &jerr);
        item = json_object_get(doc, "Item");
        if (rc) {
        } else if (!doc) {
            snprintf(why, sizeof why, "not JSON: %s", jerr.text);
        } else if (!json_is_object(item)) {
            snprintf(why, sizeof why, "expected {\"Item\": {...}}");
        } else if (at_av_check_item(item, why, sizeof why)) {
        } else {
            const char *keys[2] = {t->pk.name, t->sk.name};
            for (int k = 0; k < 2 && !why[0]; k++) {
                json_t *v = keys[k] ? json_object_get(item, keys[k]) : NULL;
                if (!keys[k]) continue;
                at_schema_key_type(t, keys[k], &type);
                if (!json_object_get(v, type == AT_KEY_S ? "S" : "N"))
                    snprintf(why, sizeof why, "key attribute %s is missing or not of type %s",
                             keys[k], type == AT_KEY_S ? "S" : "N");
            }
        }
        if (why[0]) {
            fprintf(stderr, "actionstools import: %s:%ld: %s; nothing was imported\n", name, lineno, why);
            json_decref(doc);
            rc = AT_EINVAL;
            break;
        }
        json_array_append(items, item);
        json_decref(doc);
    }
    free(line);
    return rc;
}

static int write_items(at_store *store, at_table_id t, const json_t *items)
{
    size_t n = json_array_size(items);
    for (size_t i = 0; i < n; i += IMPORT_CHUNK) {
        json_t *chunk = json_array();
        int rc;
        for (size_t j = i; j < n && j < i + IMPORT_CHUNK; j++)
            json_array_append(chunk, json_array_get(items, j));
        rc = at_store_batch_put(store, t, chunk);
        json_decref(chunk);
        if (rc) return rc;
    }
    return 0;
}

int at_cli_import(int argc, char **argv)
{
    transfer_opts o;
    at_config cfg;
    at_store *store = NULL;
    json_t *all[AT_TABLE_COUNT] = {0};
    int rc = parse_opts(argc, argv, "in", &o), status = 0;
    if (rc) return rc;
    rc = at_cli_load_config(&cfg);
    if (rc) return rc;

    /* Read and check everything first: a bad line anywhere imports nothing. */
    for (int i = 0; i < AT_TABLE_COUNT && !status; i++) {
        const at_table_def *t = at_schema_table((at_table_id)i);
        char *path;
        FILE *in = stdin;
        if (o.table && strcmp(o.table, t->logical) != 0) continue;
        path = o.dir ? table_file(o.dir, t) : (o.file ? strdup(o.file) : NULL);
        if (path && !(in = fopen(path, "r"))) {
            if (o.dir && errno == ENOENT) {
                free(path);
                continue;
            }
            fprintf(stderr, "actionstools import: cannot read %s: %s\n", path, strerror(errno));
            status = 1;
        } else {
            all[i] = json_array();
            if (read_items(in, path ? path : "stdin", t, all[i])) status = 1;
            if (in != stdin) fclose(in);
        }
        free(path);
    }
    if (!status && at_cli_open_store(&cfg, &store)) status = 1;
    for (int i = 0; i < AT_TABLE_COUNT && !status; i++) {
        const at_table_def *t = at_schema_table((at_table_id)i);
        if (!all[i]) continue;
        rc = write_items(store, t->id, all[i]);
        if (rc) {
            fprintf(stderr, "actionstools import: %s: %s\n", t->logical, at_strerror(rc));
            status = 1;
        } else {
            fprintf(stderr, "imported %zu items into %s (%s)\n", json_array_size(all[i]), t->logical,
                    at_store_table_name(store, t->id));
        }
    }
    for (int i = 0; i < AT_TABLE_COUNT; i++) json_decref(all[i]);
    at_store_free(store);
    at_config_release(&cfg);
    return status;
}
