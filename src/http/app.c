/* The request pipeline (SPEC §4): every request, from the server or from Lambda,
 * passes here in this order: request id, prefix, CORS preflight, route (404/405),
 * identity (401), body size and type (413/415), admin role (403), handler; then the
 * common response headers and one JSON log line. */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "actionstools/app.h"
#include "actionstools/handler.h"
#include "actionstools/err.h"
#include "actionstools/log.h"
#include "actionstools/timeutil.h"
#include "actionstools/uuid.h"
#include "auth.h"
#include "cors.h"
#include "router.h"
#include "actionstools/banned.h"

struct at_app {
    const at_config *cfg;
    at_api_settings settings; /* what handlers may read of cfg */
    at_store *store;
    at_router *router;
    at_jwt_verifier *jwt;
    at_cursor_key cursor_key;
    at_api_docs *docs; /* the API document and Swagger UI */
};

/* The key that signs list cursors (docs/auth.md): from CURSOR_SECRET, else derived from
 * the token secret, else (only a public key is configured) a secret generated once and
 * kept in the store. Never from public material. Every server of a deployment so
 * accepts the cursors of the others. */
static int cursor_key_init(const at_config *cfg, at_store *store, at_cursor_key *key, char *err,
                           size_t errlen)
{
    if (cfg->cursor_secret) return at_cursor_key_derive(key, cfg->cursor_secret, strlen(cfg->cursor_secret));
    if (cfg->jwt_secret) return at_cursor_key_derive(key, cfg->jwt_secret, strlen(cfg->jwt_secret));
    return at_cursor_key_stored(store, key, err, errlen);
}

int at_app_new(const at_config *cfg, at_store *store, at_app **out, char *err, size_t errlen)
{
    at_app *app;
    int rc;

    *out = NULL;
    app = calloc(1, sizeof *app);
    if (!app) return AT_ENOMEM;
    app->cfg = cfg;
    app->settings.base_prefix = cfg->base_prefix;
    app->settings.counters_ttl_seconds = cfg->counters_ttl_seconds;
    app->store = store;
    rc = at_router_new(at_routes, &app->router);
    if (rc) {
        snprintf(err, errlen, "the route table is malformed");
        goto out;
    }
    rc = at_api_check_routes(at_routes, err, errlen);
    if (rc) goto out;
    rc = at_api_docs_new(at_routes, cfg->base_prefix, NULL, &app->docs, err, errlen);
    if (rc) goto out;
    app->settings.docs = app->docs;
    if (cfg->jwt_secret || cfg->jwt_public_key_file) {
        at_jwt_config jc = {cfg->jwt_secret, cfg->jwt_public_key_file, NULL, cfg->jwt_issuer,
                            cfg->jwt_audience};
        rc = at_jwt_verifier_new(&jc, &app->jwt, err, errlen);
        if (rc) goto out;
        if (err[0]) at_log(AT_LOG_WARN, "%s", err);
        err[0] = '\0';
        if (cfg->jwt_secret && !cfg->jwt_public_key_file && strlen(cfg->jwt_secret) < 32)
            at_log(AT_LOG_WARN, "AUTH_JWT_SECRET is shorter than 32 bytes; RFC 7518 asks for at "
                                "least 32 random bytes for HS256");
    }
    rc = cursor_key_init(cfg, store, &app->cursor_key, err, errlen);
    if (rc) goto out;
    *out = app;
out:
    if (rc) at_app_free(app);
    return rc;
}

void at_app_free(at_app *app)
{
    if (!app) return;
    at_router_free(app->router);
    at_jwt_verifier_free(app->jwt);
    at_api_docs_free(app->docs);
    at_cursor_key_release(&app->cursor_key);
    free(app);
}

/* A caller's X-Request-Id is kept when it is short printable ASCII without spaces. */
static const char *request_id(const at_request *req, at_arena *a)
{
    const char *rid = at_request_header(req, "X-Request-Id");
    char fresh[AT_UUID_LEN + 1];
    if (rid && *rid && strlen(rid) <= 128) {
        const char *p = rid;
        while (*p > 32 && *p < 127) p++;
        if (!*p) return rid;
    }
    at_uuid_new(fresh);
    return at_arena_strdup(a, fresh);
}

/* Returns the path below BASE_PREFIX, or NULL when the path is outside it. */
static const char *strip_prefix(const char *prefix, const char *path)
{
    size_t n = strlen(prefix);
    if (n == 0) return path;
    if (strncmp(path, prefix, n) != 0) return NULL;
    if (path[n] == '\0') return "/";
    return path[n] == '/' ? path + n : NULL;
}

/* Returns 1 when the Content-Type names JSON (application/json or application/x+json,
 * with any parameters). */
static int is_json_type(const char *ct)
{
    size_t n;
    const char *semi;
    if (!ct) return 0;
    while (*ct == ' ') ct++;
    semi = strchr(ct, ';');
    n = semi ? (size_t)(semi - ct) : strlen(ct);
    while (n > 0 && ct[n - 1] == ' ') n--;
    if (n == 16 && strncasecmp(ct, "application/json", 16) == 0) return 1;
    return n > 17 && strncasecmp(ct, "application/", 12) == 0 && strncasecmp(ct + n - 5, "+json", 5) == 0;
}

static void parse_body(at_ctx *c)
{
    json_error_t jerr;
    const at_request *req = c->req;
    if (req->body_len == 0) return;
    /* Strings may hold \u0000 (data is any JSON); identifiers are checked for it where
     * they are read (at_api_string). */
    c->body = json_loadb(req->body, req->body_len, JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL, &jerr);
    if (!c->body && (strstr(jerr.text, "too big integer") || strstr(jerr.text, "too big negative integer")))
        c->body_error = at_arena_printf(c->arena, "line %d, column %d: integers beyond 64 bits "
                                                  "(over 9223372036854775807) are not supported; "
                                                  "send such numbers as strings",
                                        jerr.line, jerr.column);
    else if (!c->body)
        c->body_error = at_arena_printf(c->arena, "malformed JSON at line %d, column %d: %s",
                                        jerr.line, jerr.column, jerr.text);
}

static void preflight(at_ctx *c, const char *allow)
{
    at_reply_empty(c, 204);
    at_set_header(c, "Access-Control-Allow-Methods", allow);
    at_set_header(c, "Access-Control-Allow-Headers", AT_CORS_ALLOW_HEADERS);
    at_set_header(c, "Access-Control-Max-Age", AT_CORS_MAX_AGE);
}

/* Returns s when it can go into JSON as it is (valid UTF-8 without control
 * characters); otherwise an arena copy in which every other byte is percent-encoded
 * (a raw path may hold any byte a client sent). NULL stays NULL. */
static const char *shown(at_arena *a, const char *s)
{
    json_t *probe;
    at_buf b;
    const char *out;
    int clean = 1;
    if (!s) return NULL;
    for (const unsigned char *p = (const unsigned char *)s; *p && clean; p++)
        if (*p < 32 || *p == 127) clean = 0;
    if (clean && (probe = json_string(s)) != NULL) {
        json_decref(probe);
        return s;
    }
    at_buf_init(&b, 3 * strlen(s) + 1);
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if (*p < 32 || *p >= 127) at_buf_printf(&b, "%%%02X", *p);
        else at_buf_addc(&b, (char)*p);
    }
    out = at_arena_strdup(a, at_buf_str(&b));
    at_buf_release(&b);
    return out ? out : "-";
}

static void dispatch(at_app *app, at_ctx *c, at_identity *id, const char *method_shown,
                     const char *shown_path)
{
    const at_request *req = c->req;
    const char *path = strip_prefix(app->cfg->base_prefix, req->path);
    at_match m;
    at_buf allow;
    const char *why = NULL;

    at_buf_init(&allow, 256);
    if (!path) {
        at_reply_error(c, 404, "no such route: %s %s", method_shown, shown_path);
        goto out;
    }
    if (at_router_match(app->router, req->method, path, c->arena, &m, &allow)) {
        at_reply_error(c, 500, "out of memory");
        goto out;
    }
    if (strcmp(req->method, "OPTIONS") == 0) {
        if (!m.path_known) {
            at_reply_error(c, 404, "no such route: %s", shown_path);
            goto out;
        }
        at_buf_adds(&allow, ", OPTIONS");
        preflight(c, at_buf_str(&allow));
        goto out;
    }
    if (!m.route) {
        if (m.path_known) {
            at_buf_adds(&allow, ", OPTIONS");
            at_set_header(c, "Allow", at_buf_str(&allow));
            at_reply_error(c, 405, "method %s is not allowed on %s; allowed: %s", method_shown,
                           shown_path, at_buf_str(&allow));
        } else {
            at_reply_error(c, 404, "no such route: %s %s", method_shown, shown_path);
        }
        goto out;
    }
    c->route = m.route;
    c->nparams = m.nparams;
    memcpy(c->param_names, m.names, sizeof m.names);
    memcpy(c->params, m.values, sizeof m.values);

    if (!(m.route->flags & AT_R_PUBLIC)) {
        if (at_auth_identify(app->jwt, req, c->arena, id, &why)) {
            at_set_header(c, "WWW-Authenticate", "Bearer");
            at_reply_error(c, 401, "%s", why);
            goto out;
        }
        c->id = id;
        c->resp->user = id->user_uuid;
    }
    if (req->body_too_large) {
        at_reply_error(c, 413, "the request body is over %d bytes (DynamoDB's 400 KB item limit)",
                       AT_MAX_BODY);
        goto out;
    }
    if (m.route->flags & AT_R_BODY) {
        const char *ct = at_request_header(req, "Content-Type");
        if ((req->body_len > 0 || ct) && !is_json_type(ct)) {
            at_reply_error(c, 415, "send the body as JSON with Content-Type: application/json");
            goto out;
        }
        parse_body(c);
    }
    if (m.invalid_param) {
        /* SPEC §4: a decoded id with a NUL or invalid UTF-8 names no item. */
        at_reply_error(c, 404, "no such item: {%s} in the path is not a valid id (it decodes "
                               "to a NUL byte, invalid UTF-8 or a malformed %%-escape)",
                       m.invalid_param);
        goto out;
    }
    if ((m.route->flags & AT_R_ADMIN) && !id->is_admin) {
        at_reply_error(c, 403, "only users with the CRM_ADMIN role may do this");
        goto out;
    }
    m.route->handler(c);
    if (c->resp->status == 0) at_reply_error(c, 500, "the handler gave no answer");
out:
    at_buf_release(&allow);
}

/* One JSON log line per request (SPEC §4); method and path as shown(). */
static void log_request(const char *method, const char *path, const at_response *resp, int64_t t0)
{
    at_log_request(resp->request_id, method, path, resp->status,
                   (double)(at_monotonic_us() - t0) / 1000.0, resp->user);
}

/* The steps every answer shares, before and after its body is made. */
static void begin(at_app *app, const at_request *req, at_response *resp, at_ctx *c, at_identity *id)
{
    memset(resp, 0, sizeof *resp);
    memset(c, 0, sizeof *c);
    memset(id, 0, sizeof *id);
    c->settings = &app->settings;
    c->store = app->store;
    c->cursor_key = &app->cursor_key;
    c->req = req;
    c->resp = resp;
    c->arena = req->arena;
    resp->request_id = request_id(req, c->arena);
}

static void finish(at_app *app, at_ctx *c, const char *method, const char *path, int64_t t0)
{
    at_response *resp = c->resp;
    const char *origin;
    if (!resp->request_id) resp->request_id = "-";
    at_set_header(c, "X-Request-Id", resp->request_id);
    origin = at_cors_allow_origin(app->cfg, at_request_header(c->req, "Origin"));
    if (origin) {
        at_set_header(c, "Access-Control-Allow-Origin", origin);
        if (!app->cfg->cors_any) at_set_header(c, "Vary", "Origin");
        at_set_header(c, "Access-Control-Expose-Headers", AT_CORS_EXPOSE_HEADERS);
    }
    json_decref(c->body);
    c->body = NULL;
    log_request(method, path, resp, t0);
}

void at_app_handle(at_app *app, const at_request *req, at_response *resp)
{
    int64_t t0 = at_monotonic_us();
    at_identity id;
    at_ctx c;
    const char *method, *path;

    begin(app, req, resp, &c, &id);
    method = shown(c.arena, req->method);
    path = shown(c.arena, req->path);
    dispatch(app, &c, &id, method, path);
    finish(app, &c, method, path, t0);
}

void at_app_refuse(at_app *app, const at_request *req, int status, const char *message,
                   at_response *resp)
{
    int64_t t0 = at_monotonic_us();
    at_identity id;
    at_ctx c;
    const char *method, *path;

    begin(app, req, resp, &c, &id);
    method = req->method ? shown(c.arena, req->method) : "-";
    path = req->path ? shown(c.arena, req->path) : "-";
    if (status == 503) at_set_header(&c, "Retry-After", "1");
    at_reply_error(&c, status, "%s", message);
    finish(app, &c, method, path, t0);
}

int at_app_may_block(const at_app *app, const char *method)
{
    /* A preflight is answered from the route table alone. */
    if (strcmp(method, "OPTIONS") == 0) return 0;
    if (strcmp(at_store_backend(app->store), "sqlite") != 0) return 1;
    return !(strcmp(method, "GET") == 0 || strcmp(method, "HEAD") == 0);
}
