/* Task reports (SPEC §5): GET /reports/tasks?from=&to=&group_by=status|assignee|day.
 *
 * A report is over the tasks created in [from, to) (a cohort): per group, how many were
 * created, how many of them are done (completed) and still to do (open: not done or
 * cancelled), how many of those are overdue now, and their mean seconds from created_at
 * to completed_at. The tasks are read from instance_id-created_at-index-copy (the
 * projection subset the seeds made for counts: small items, so a 1 MB page holds
 * thousands) over the created_at range, as raw pages whose fields are read where they
 * lie (no JSON is built per task).
 *
 * The work of one request is bounded: it reads at most PAGES_PER_REQUEST store pages
 * (each at most 1 MB read). A report that needs more keeps its sums so far and where it
 * stopped in the reports cache and answers 202 {"status": "computing", ...} with
 * Retry-After; the next request goes on from there (so no request is long, on either
 * backend or in Lambda). A finished report is kept REPORT_TTL seconds and served from
 * the cache meanwhile. JSON, or CSV with Accept: text/csv or ?format=csv.
 * docs/tasks.md has the figures. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api.h"
#include "tasks.h"
#include "actionstools/err.h"
#include "actionstools/packed.h"
#include "actionstools/banned.h"

#define COPY_INDEX "instance_id-created_at-index-copy"
#define REPORT_TTL 60        /* seconds a finished report is served from the cache */
#define PARTIAL_TTL 600      /* seconds the sums of an unfinished report are kept */
#define PAGES_PER_REQUEST 32 /* store pages one request reads (each at most 1 MB) */
#define PAGE_ITEMS 10000     /* items one page asks for (the work bound comes first) */
#define DAY 86400
#define DEFAULT_DAYS 30
#define MAX_DAYS 3660
#define MAX_KEPT (350u * 1024) /* bytes of sums or a report kept in one cache item */

/* The sums of one group, in the order they are kept. */
enum { CREATED, COMPLETED, OPEN, OVERDUE, SECONDS, TIMED, NSUMS };

static const char *const group_bys[] = {"status", "assignee", "day", NULL};
enum { BY_STATUS, BY_ASSIGNEE, BY_DAY };

typedef struct report {
    int64_t from, to, now;
    int by;
    int csv;
    const char *key;  /* the cache key */
    json_t *groups;   /* group key -> [NSUMS integers] */
    int64_t read;     /* tasks read so far */
    int64_t step;     /* requests that worked on it so far */
    json_t *last_key; /* where the next page starts; NULL: at the beginning, or done */
    int done;
} report;

/* ---- the request ---- */

/* Parses epoch seconds ("1767225600") or a UTC date ("2026-01-01"). Returns 1 and *t. */
static int parse_time(const char *s, int64_t *t)
{
    char text[32];
    int64_t us;
    char *end;
    long long v;
    size_t n = strlen(s);
    if (n == 10 && s[4] == '-' && s[7] == '-') {
        snprintf(text, sizeof text, "%s 00:00:00", s);
        if (at_timestamp_parse(text, &us)) return 0;
        *t = us / 1000000;
        return 1;
    }
    if (!n || n > 12 || !(s[0] >= '0' && s[0] <= '9')) return 0;
    v = strtoll(s, &end, 10);
    if (*end) return 0;
    *t = v;
    return 1;
}

/* Reads ?from=, ?to=, ?group_by=, ?format= (and Accept). Returns 1, or 0 after 400. */
static int read_request(at_ctx *c, report *R)
{
    const char *from = at_query_param(c, "from"), *to = at_query_param(c, "to"),
               *by = at_query_param(c, "group_by"), *format = at_query_param(c, "format"),
               *accept = at_request_header(c->req, "Accept");
    static const char when[] = "must be epoch seconds or a date like 2026-01-31 (UTC)";
    json_t *errors = json_object();
    int ok_from = 1, ok_to = 1;
    memset(R, 0, sizeof *R);
    R->now = at_now_us() / 1000000;
    R->to = (R->now / DAY + 1) * DAY; /* the end of today (UTC) */
    if (to && !(ok_to = parse_time(to, &R->to)))
        json_object_set_new(errors, "to", json_string(when));
    R->from = R->to - DEFAULT_DAYS * DAY;
    if (from && !(ok_from = parse_time(from, &R->from)))
        json_object_set_new(errors, "from", json_string(when));
    if (ok_from && ok_to && R->to <= R->from)
        json_object_set_new(errors, "to", json_string("must be after from"));
    else if (ok_from && ok_to && R->to - R->from > (int64_t)MAX_DAYS * DAY)
        json_object_set_new(errors, "to", json_string("must be at most 3660 days after from"));
    for (R->by = 0; by && group_bys[R->by] && strcmp(group_bys[R->by], by) != 0; R->by++) {
    }
    if (by && !group_bys[R->by])
        json_object_set_new(errors, "group_by", json_string("must be status, assignee or day"));
    if (format && strcmp(format, "json") != 0 && strcmp(format, "csv") != 0)
        json_object_set_new(errors, "format", json_string("must be json or csv"));
    if (json_object_size(errors)) {
        at_reply_validation(c, errors);
        return 0;
    }
    json_decref(errors);
    if (!by) R->by = BY_STATUS;
    R->csv = format ? strcmp(format, "csv") == 0 : accept && strstr(accept, "text/csv") != NULL;
    R->key = at_arena_printf(c->arena, "tasks#%s#%s#%" PRId64 "#%" PRId64, c->id->instance_id,
                             group_bys[R->by], R->from, R->to);
    R->groups = json_object();
    if (!R->key || !R->groups) {
        at_reply_error(c, 500, "out of memory");
        return 0;
    }
    return 1;
}

/* ---- summing ---- */

/* The group of a task (packed, n bytes at p), written into buf. */
static const char *group_of(const report *R, const unsigned char *p, size_t n, int64_t created,
                            char *buf, size_t len)
{
    const char *s;
    if (R->by == BY_DAY) {
        char ts[AT_TIMESTAMP_LEN + 1];
        at_timestamp_format(created * 1000000, ts);
        snprintf(buf, len, "%.10s", ts);
        return buf;
    }
    if (R->by == BY_STATUS) return (s = at_packed_s(p, n, "status", NULL)) ? s : "open";
    return (s = at_packed_s(p, n, "assignee_uuid", NULL)) ? s : ""; /* "": nobody */
}

/* Adds one task to its group. Returns 0 or AT_ENOMEM. */
static int add_task(report *R, const unsigned char *p, size_t n)
{
    const char *status = at_packed_s(p, n, "status", NULL), *g;
    int64_t created = 0, completed, due, add[NSUMS] = {1, 0, 0, 0, 0, 0};
    char buf[16];
    json_t *sums;
    at_tasks_packed_int(p, n, "created_at", &created);
    g = group_of(R, p, n, created, buf, sizeof buf);
    if (status && strcmp(status, "done") == 0) {
        add[COMPLETED] = 1;
        if (at_tasks_packed_int(p, n, "completed_at", &completed) && completed >= created) {
            add[SECONDS] = completed - created;
            add[TIMED] = 1;
        }
    } else if (at_tasks_unfinished(status)) {
        add[OPEN] = 1;
        add[OVERDUE] = at_tasks_packed_int(p, n, "due_at", &due) && due < R->now;
    }
    if (!(sums = json_object_get(R->groups, g))) {
        sums = json_pack("[IIIIII]", (json_int_t)0, (json_int_t)0, (json_int_t)0, (json_int_t)0,
                         (json_int_t)0, (json_int_t)0);
        if (!sums || json_object_set_new(R->groups, g, sums)) return AT_ENOMEM;
    }
    for (int i = 0; i < NSUMS; i++) {
        json_t *v = json_array_get(sums, (size_t)i);
        json_integer_set(v, json_integer_value(v) + add[i]);
    }
    R->read++;
    return 0;
}

/* Reads up to PAGES_PER_REQUEST pages from where the report stopped. Returns 0 or AT_*. */
static int run_pages(at_ctx *c, report *R)
{
    json_t *pk = at_av_s(c->id->instance_id), *lo = at_av_n_int(R->from),
           *hi = at_av_n_int(R->to - 1);
    at_query q = {.table = AT_TABLE_TASKS,
                  .index = COPY_INDEX,
                  .pk = pk,
                  .forward = 1,
                  .limit = PAGE_ITEMS,
                  .flags = AT_Q_LIVE | AT_Q_RAW};
    int rc = pk && lo && hi ? 0 : AT_ENOMEM;
    q.sk = (at_clause){"created_at", AT_OP_BETWEEN, lo, hi};
    for (int i = 0; !rc && i < PAGES_PER_REQUEST; i++) {
        at_page page = {0};
        size_t n;
        q.start_key = R->last_key;
        rc = at_store_query(c->store, &q, &page);
        for (size_t k = 0; !rc && k < at_page_count(&page); k++) {
            const unsigned char *p = at_page_raw(&page, k, &n);
            rc = add_task(R, p, n);
        }
        json_decref(R->last_key);
        R->last_key = rc ? NULL : json_incref(page.last_key);
        at_page_release(&page);
        if (!rc && !R->last_key) R->done = 1;
        if (R->done) break;
    }
    json_decref(pk);
    json_decref(lo);
    json_decref(hi);
    return rc;
}

/* ---- answers ---- */

static int key_cmp(const void *a, const void *b)
{
    const char *x = *(const char *const *)a, *y = *(const char *const *)b;
    if (!*x || !*y) return !*x - !*y; /* nobody's group last */
    return strcmp(x, y);
}

/* The groups in the report's order: status, the five in their order (all of them) and
 * any other after; assignee and day, by key (nobody's last). Returns a new array of
 * {key, created, completed, open, overdue, mean_seconds_to_complete} or NULL. */
static json_t *group_list(const report *R)
{
    size_t n = json_object_size(R->groups), k = 0;
    const char **keys = calloc(n + AT_TASKS_NSTATUS + 1, sizeof *keys), *key;
    json_t *out = json_array(), *sums;
    if (!keys || !out) goto fail;
    if (R->by == BY_STATUS)
        for (int i = 0; at_tasks_statuses[i]; i++)
            keys[k++] = at_tasks_statuses[i];
    json_object_foreach(R->groups, key, sums)
    {
        if (!(R->by == BY_STATUS && at_tasks_status_index(key) >= 0)) keys[k++] = key;
    }
    qsort(keys + (R->by == BY_STATUS ? AT_TASKS_NSTATUS : 0),
          k - (R->by == BY_STATUS ? AT_TASKS_NSTATUS : 0), sizeof *keys, key_cmp);
    for (size_t i = 0; i < k; i++) {
        int64_t v[NSUMS] = {0};
        json_t *g;
        sums = json_object_get(R->groups, keys[i]);
        for (int j = 0; sums && j < NSUMS; j++)
            v[j] = json_integer_value(json_array_get(sums, (size_t)j));
        g = json_pack(
            "{s:s?, s:I, s:I, s:I, s:I, s:o}", "key", *keys[i] ? keys[i] : NULL, "created",
            (json_int_t)v[CREATED], "completed", (json_int_t)v[COMPLETED], "open",
            (json_int_t)v[OPEN], "overdue", (json_int_t)v[OVERDUE], "mean_seconds_to_complete",
            v[TIMED] ? json_integer((v[SECONDS] + v[TIMED] / 2) / v[TIMED]) : json_null());
        if (!g || json_array_append_new(out, g)) goto fail;
    }
    free(keys);
    return out;
fail:
    free(keys);
    json_decref(out);
    return NULL;
}

static json_t *report_json(const report *R)
{
    json_t *groups = group_list(R);
    return groups ? json_pack("{s:I, s:I, s:s, s:o}", "from", (json_int_t)R->from, "to",
                              (json_int_t)R->to, "group_by", group_bys[R->by], "groups", groups)
                  : NULL;
}

/* Appends s as a CSV field (RFC 4180: quoted when it holds a comma, quote or line end). */
static int csv_field(at_buf *b, const char *s)
{
    int rc;
    if (!strpbrk(s, ",\"\r\n")) return at_buf_adds(b, s);
    rc = at_buf_addc(b, '"');
    for (; !rc && *s; s++)
        rc = *s == '"' ? at_buf_adds(b, "\"\"") : at_buf_addc(b, *s);
    return rc ? rc : at_buf_addc(b, '"');
}

/* Answers the finished report (its JSON: doc) in the form asked for. */
static void answer(at_ctx *c, const report *R, json_t *doc)
{
    json_t *g;
    size_t i;
    at_buf b;
    int rc;
    if (!R->csv) {
        at_reply_json(c, 200, json_incref(doc));
        return;
    }
    at_buf_init(&b, AT_API_MAX_ANSWER);
    rc = at_buf_adds(&b, "key,created,completed,open,overdue,mean_seconds_to_complete\r\n");
    json_array_foreach(json_object_get(doc, "groups"), i, g)
    {
        const json_t *mean = json_object_get(g, "mean_seconds_to_complete");
        const char *key = json_string_value(json_object_get(g, "key"));
        if (!rc) rc = csv_field(&b, key ? key : "");
        if (!rc)
            rc = at_buf_printf(&b,
                               ",%" JSON_INTEGER_FORMAT ",%" JSON_INTEGER_FORMAT
                               ",%" JSON_INTEGER_FORMAT ",%" JSON_INTEGER_FORMAT ",",
                               json_integer_value(json_object_get(g, "created")),
                               json_integer_value(json_object_get(g, "completed")),
                               json_integer_value(json_object_get(g, "open")),
                               json_integer_value(json_object_get(g, "overdue")));
        if (!rc && json_is_integer(mean))
            rc = at_buf_printf(&b, "%" JSON_INTEGER_FORMAT, json_integer_value(mean));
        if (!rc) rc = at_buf_adds(&b, "\r\n");
    }
    if (rc) {
        at_buf_release(&b);
        at_reply_error(c, 500, "cannot write the report (%s)", at_strerror(rc));
        return;
    }
    {
        size_t len = 0;
        char *body = at_buf_take(&b, &len);
        if (body)
            at_reply_body_take(c, 200, "text/csv; charset=utf-8", body, len);
        else
            at_reply_error(c, 500, "out of memory");
    }
}

/* ---- the reports cache ---- */

static json_t *cache_key(const report *R)
{
    return json_pack("{s:{s:s}}", "cache_key", "S", R->key);
}

/* Reads what the cache holds for the report: *done_doc the finished report (a new
 * reference), or the sums, position and step of an unfinished one into R. Returns 0
 * (nothing there is 0 too) or AT_*. */
static int load(at_ctx *c, report *R, json_t **done_doc)
{
    json_t *key = cache_key(R), *item = NULL, *state = NULL;
    const char *text;
    int rc = key ? at_store_get(c->store, AT_TABLE_REPORTS_CACHE, key, &item) : AT_ENOMEM;
    *done_doc = NULL;
    json_decref(key);
    if (rc == AT_ENOTFOUND) return 0;
    if (rc) return rc;
    if ((text = at_item_s(item, "report"))) {
        *done_doc = json_loads(text, 0, NULL);
    } else if ((text = at_item_s(item, "state")) && (state = json_loads(text, 0, NULL)) &&
               json_is_object(json_object_get(state, "groups"))) {
        /* Only a state this code wrote; anything else starts the report again. */
        const char *lk = at_item_s(item, "last_key");
        json_decref(R->groups);
        R->groups = json_incref(json_object_get(state, "groups"));
        R->read = json_integer_value(json_object_get(state, "read"));
        at_item_n_int(item, "step", &R->step);
        R->last_key = lk ? json_loads(lk, 0, NULL) : NULL;
        if (!json_is_object(R->last_key) || at_av_check_item(R->last_key, NULL, 0)) {
            json_decref(R->last_key);
            R->last_key = NULL;
            json_object_clear(R->groups);
            R->read = 0;
        }
    }
    json_decref(state);
    json_decref(item);
    return 0;
}

/* Keeps the finished report (its JSON text) for REPORT_TTL seconds, when it is not too
 * big for one item. Best effort: the answer does not depend on it. */
static void keep_report(at_ctx *c, const report *R, const json_t *doc)
{
    char *text = json_dumps(doc, JSON_COMPACT);
    json_t *item = text && strlen(text) <= MAX_KEPT
                       ? json_pack("{s:{s:s}, s:{s:s}, s:{s:s}, s:o}", "cache_key", "S", R->key,
                                   "instance_id", "S", c->id->instance_id, "report", "S", text,
                                   "ExpirationTime", at_av_n_int(R->now + REPORT_TTL))
                       : NULL;
    if (item) at_store_put(c->store, AT_TABLE_REPORTS_CACHE, item, NULL);
    json_decref(item);
    free(text);
}

/* Keeps an unfinished report's sums and position, when no other request moved it on
 * meanwhile (its step is still the one read; a first step, where there is none, or
 * only an expired one: DynamoDB keeps expired items until its TTL sweeper deletes them,
 * hidden from reads but not from conditions). Returns 0, AT_ECOND (moved on: not an
 * error), AT_ETOOBIG (too many groups to keep) or AT_*. */
static int keep_state(at_ctx *c, const report *R)
{
    json_t *state = json_pack("{s:O, s:I}", "groups", R->groups, "read", (json_int_t)R->read),
           *item = NULL, *was = at_av_n_int(R->step), *now = at_av_n_int(R->now);
    char *text = state ? json_dumps(state, JSON_COMPACT) : NULL,
         *lk = json_dumps(R->last_key, JSON_COMPACT);
    at_clause same = {"step", AT_OP_EQ, was, NULL},
              none = {"cache_key", AT_OP_NOT_EXISTS, NULL, NULL},
              expired = {"ExpirationTime", AT_OP_LT, now, NULL};
    at_cond cond = {R->step ? &same : &none, 1};
    int rc = AT_ENOMEM;
    if (text && lk && strlen(text) + strlen(lk) > MAX_KEPT)
        rc = AT_ETOOBIG;
    else if (text && lk && was)
        item = json_pack("{s:{s:s}, s:{s:s}, s:{s:s}, s:{s:s}, s:o, s:o}", "cache_key", "S", R->key,
                         "instance_id", "S", c->id->instance_id, "state", "S", text, "last_key",
                         "S", lk, "step", at_av_n_int(R->step + 1), "ExpirationTime",
                         at_av_n_int(R->now + PARTIAL_TTL));
    if (item && now) rc = at_store_put(c->store, AT_TABLE_REPORTS_CACHE, item, &cond);
    if (rc == AT_ECOND && !R->step) {
        cond.v = &expired;
        rc = at_store_put(c->store, AT_TABLE_REPORTS_CACHE, item, &cond);
    }
    json_decref(item);
    json_decref(state);
    json_decref(was);
    json_decref(now);
    free(text);
    free(lk);
    return rc;
}

/* GET /reports/tasks: the cached report, or the next part of its work. */
void at_reports_tasks(at_ctx *c)
{
    report R;
    json_t *doc = NULL;
    int rc;
    char ra[8];
    if (!read_request(c, &R)) goto out;
    rc = load(c, &R, &doc);
    if (!rc && !doc) {
        rc = run_pages(c, &R);
        if (!rc && R.done && (doc = report_json(&R)) != NULL) keep_report(c, &R, doc);
        if (!rc && R.done && !doc) rc = AT_ENOMEM;
    }
    if (rc) {
        at_reply_store_error(c, rc, "make a report");
    } else if (doc) {
        answer(c, &R, doc);
    } else if ((rc = keep_state(c, &R)) == AT_ETOOBIG) {
        at_reply_error(c, 413,
                       "the report has too many groups to keep while it is computed; ask for a "
                       "shorter range (from, to) or group_by=status");
    } else if (rc && rc != AT_ECOND) {
        at_reply_store_error(c, rc, "keep a report's progress");
    } else {
        snprintf(ra, sizeof ra, "%d", 1);
        at_set_header(c, "Retry-After", ra);
        at_reply_json(c, 202,
                      json_pack("{s:s, s:I, s:I, s:I, s:s}", "status", "computing", "tasks_read",
                                (json_int_t)R.read, "from", (json_int_t)R.from, "to",
                                (json_int_t)R.to, "group_by", group_bys[R.by]));
    }
out:
    json_decref(doc);
    json_decref(R.groups);
    json_decref(R.last_key);
}

static const at_doc_param report_params[] = {
    {"from", "{\"type\": \"string\", \"example\": \"2026-01-01\"}",
     "the start (included): epoch seconds or a UTC date; default: 30 days before to"},
    {"to", "{\"type\": \"string\", \"example\": \"2026-02-01\"}",
     "the end (excluded): epoch seconds or a UTC date, at most 3660 days after from; default: the "
     "end "
     "of today (UTC)"},
    {"group_by",
     "{\"type\": \"string\", \"enum\": [\"status\", \"assignee\", \"day\"], \"default\": "
     "\"status\"}",
     "status (all five, in order), assignee (key null: nobody) or day (of created_at, UTC)"},
    {"format", "{\"type\": \"string\", \"enum\": [\"json\", \"csv\"]}",
     "csv: the groups as CSV with a header row (as Accept: text/csv); default: JSON"},
    {NULL},
};

const at_route_doc at_reports_tasks_doc = {
    .tag = "tasks",
    .media_types = "application/json, text/csv",
    .schema =
        "{\"type\": \"object\", \"required\": [\"from\", \"to\", \"group_by\", \"groups\"], "
        "\"properties\": {"
        "\"from\": {\"type\": \"integer\"}, \"to\": {\"type\": \"integer\"}, "
        "\"group_by\": {\"type\": \"string\", \"enum\": [\"status\", \"assignee\", \"day\"]}, "
        "\"groups\": {\"type\": \"array\", \"items\": {\"type\": \"object\", \"required\": "
        "[\"key\", "
        "\"created\", \"completed\", \"open\", \"overdue\", \"mean_seconds_to_complete\"], "
        "\"properties\": {\"key\": {\"type\": \"string\", \"nullable\": true}, "
        "\"created\": {\"type\": \"integer\", \"minimum\": 0}, "
        "\"completed\": {\"type\": \"integer\", \"minimum\": 0}, "
        "\"open\": {\"type\": \"integer\", \"minimum\": 0}, "
        "\"overdue\": {\"type\": \"integer\", \"minimum\": 0}, "
        "\"mean_seconds_to_complete\": {\"type\": \"integer\", \"nullable\": true}}}}}}",
    .answer =
        "per group, of the tasks created in [from, to): how many were created, are done "
        "(completed), "
        "are still to do (open: not done or cancelled), of those are overdue now, and their mean "
        "seconds from created_at to completed_at (null: none done); kept 60 s",
    .query = report_params,
    .errors = "400 413",
    .store = 1,
    .also_status = 202,
    .also_schema =
        "{\"type\": \"object\", \"required\": [\"status\", \"tasks_read\"], \"properties\": {"
        "\"status\": {\"type\": \"string\", \"enum\": [\"computing\"]}, "
        "\"tasks_read\": {\"type\": \"integer\", \"minimum\": 0}, \"from\": {\"type\": "
        "\"integer\"}, "
        "\"to\": {\"type\": \"integer\"}, \"group_by\": {\"type\": \"string\"}}}",
    .also_answer = "a large report is not finished yet (each request reads a bounded part of it): "
                   "ask again after Retry-After seconds",
};
