/* The documentation routes: GET /openapi.json and /swagger.json serve the API document,
 * made once at start-up (openapi.c); GET /docs serves a Swagger UI page that loads it,
 * and GET /docs/{asset} the Swagger UI files that `make` copies beside the binary
 * (docs/api-document.md). Without those files /docs says so and links the document:
 * serving never needs Node. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "api.h"
#include "actionstools/buf.h"
#include "actionstools/err.h"
#include "actionstools/log.h"
#include "actionstools/banned.h"

/* The file that tells a folder holds Swagger UI. */
#define UI_MARKER "swagger-ui-bundle.js"
/* No file we serve is bigger (swagger-ui-bundle.js is about 1.7 MB). */
#define MAX_ASSET (16u * 1024 * 1024)
#define MAX_ASSET_NAME 64

struct at_api_docs {
    char *openapi; /* the API document's JSON text */
    size_t openapi_len;
    char *page; /* the /docs page */
    size_t page_len;
    int assets; /* the Swagger UI folder (O_DIRECTORY), or -1 when not found */
};

const at_route_doc at_api_openapi_doc = {
    .tag = "documentation",
    .answer = "this document: OpenAPI 3.0, made from the service's route table",
};

const at_route_doc at_api_docs_page_doc = {
    .tag = "documentation",
    .media_types = "text/html",
    .answer = "a page to browse and try this API (Swagger UI); without the Swagger UI files, a "
              "note that says so and links the document",
};

const at_route_doc at_api_docs_asset_doc = {
    .tag = "documentation",
    .media_types = "text/javascript, text/css, image/png, text/plain",
    .answer = "a file of the Swagger UI page",
    .errors = "404",
};

/* ---- finding the Swagger UI files ---- */

/* Opens dir when it holds Swagger UI. Returns the folder's descriptor, or -1. */
static int open_ui(const char *dir)
{
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) return -1;
    if (faccessat(fd, UI_MARKER, R_OK, 0) == 0) return fd;
    close(fd);
    return -1;
}

/* Looks beside the running binary: share/swagger-ui (the build tree), then
 * ../share/actionstools/swagger-ui (installed as PREFIX/bin/actionstools). Returns the
 * folder's descriptor, or -1; where is set to the folder found, or to what was tried. */
static int find_ui(char *where, size_t n)
{
    static const char *const candidates[] = {"share/swagger-ui",
                                             "../share/actionstools/swagger-ui"};
    char exe[PATH_MAX];
    ssize_t len = readlink("/proc/self/exe", exe, sizeof exe - 1);
    char *slash;
    if (len <= 0) {
        snprintf(where, n, "(the binary's path is unknown: /proc/self/exe)");
        return -1;
    }
    exe[len] = '\0';
    slash = strrchr(exe, '/');
    if (slash) *slash = '\0';
    for (size_t i = 0; i < sizeof candidates / sizeof candidates[0]; i++) {
        int fd;
        snprintf(where, n, "%s/%s", exe, candidates[i]);
        if ((fd = open_ui(where)) >= 0) return fd;
    }
    snprintf(where, n, "%s/%s or %s/%s", exe, candidates[0], exe, candidates[1]);
    return -1;
}

/* ---- the page ---- */

/* Appends s percent-encoded but for the characters of a plain path, so that it is safe
 * in an HTML attribute and a JavaScript string alike. */
static int add_path(at_buf *b, const char *s)
{
    static const char hex[] = "0123456789ABCDEF";
    int rc = 0;
    for (const unsigned char *p = (const unsigned char *)s; *p && !rc; p++) {
        if ((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
            *p == '/' || *p == '-' || *p == '.' || *p == '_' || *p == '~')
            rc = at_buf_addc(b, (char)*p);
        else
            rc = at_buf_printf(b, "%%%c%c", hex[*p >> 4], hex[*p & 15]);
    }
    return rc;
}

/* Makes the /docs page: Swagger UI loading the document, its files under
 * <prefix>/docs/; or, without them, a note linking the document. */
static int make_page(at_api_docs *d, const char *prefix)
{
    at_buf b;
    int rc;
    at_buf_init(&b, 64 * 1024);
    if (d->assets >= 0) {
        rc = at_buf_adds(&b,
                         "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
                         "<title>actionstools API</title>\n<link rel=\"stylesheet\" href=\"");
        if (!rc) rc = add_path(&b, prefix);
        if (!rc)
            rc = at_buf_adds(
                &b, "/docs/swagger-ui.css\">\n<link rel=\"icon\" type=\"image/png\" href=\"");
        if (!rc) rc = add_path(&b, prefix);
        if (!rc)
            rc = at_buf_adds(&b, "/docs/favicon-32x32.png\" sizes=\"32x32\">\n</head>\n<body>\n"
                                 "<div id=\"swagger-ui\"></div>\n<script src=\"");
        if (!rc) rc = add_path(&b, prefix);
        if (!rc)
            rc = at_buf_adds(&b, "/docs/swagger-ui-bundle.js\"></script>\n<script>\n"
                                 "window.ui = SwaggerUIBundle({\n  url: \"");
        if (!rc) rc = add_path(&b, prefix);
        /* validatorUrl null: the page never sends the document's URL to swagger.io. */
        if (!rc)
            rc = at_buf_adds(&b,
                             "/openapi.json\",\n  dom_id: \"#swagger-ui\",\n  deepLinking: true,\n"
                             "  validatorUrl: null,\n  presets: [SwaggerUIBundle.presets.apis],\n"
                             "  layout: \"BaseLayout\"\n});\n</script>\n</body>\n</html>\n");
    } else {
        rc = at_buf_adds(
            &b, "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
                "<title>actionstools API</title>\n</head>\n<body>\n<h1>actionstools API</h1>\n"
                "<p>This page would show the API with Swagger UI, but its files are not "
                "installed beside this binary (<code>share/swagger-ui</code>). "
                "<code>make</code> copies them there from "
                "<code>node_modules/swagger-ui-dist</code> once <code>npm ci</code> has "
                "run.</p>\n<p>The API document is here: <a href=\"");
        if (!rc) rc = add_path(&b, prefix);
        if (!rc) rc = at_buf_adds(&b, "/openapi.json\">");
        if (!rc) rc = add_path(&b, prefix);
        if (!rc) rc = at_buf_adds(&b, "/openapi.json</a> (OpenAPI 3.0).</p>\n</body>\n</html>\n");
    }
    if (!rc && !(d->page = at_buf_take(&b, &d->page_len))) rc = AT_ENOMEM;
    at_buf_release(&b);
    return rc;
}

int at_api_docs_new(const at_route *routes, const char *base_prefix, const char *asset_dir,
                    at_api_docs **out, char *err, size_t errlen)
{
    at_api_docs *d;
    json_t *doc = NULL;
    char where[2 * PATH_MAX + 64];
    int rc = 0;

    *out = NULL;
    d = calloc(1, sizeof *d);
    if (!d) return AT_ENOMEM;
    d->assets = -1;
    if ((rc = at_api_openapi(routes, base_prefix, &doc, err, errlen))) goto out;
    d->openapi = json_dumps(doc, JSON_COMPACT | JSON_PRESERVE_ORDER);
    if (!d->openapi) {
        rc = AT_ENOMEM;
        snprintf(err, errlen, "out of memory while writing the API document");
        goto out;
    }
    d->openapi_len = strlen(d->openapi);
    if (asset_dir) {
        snprintf(where, sizeof where, "%s", asset_dir);
        d->assets = open_ui(asset_dir);
    } else {
        d->assets = find_ui(where, sizeof where);
    }
    if (d->assets >= 0)
        at_log(AT_LOG_INFO, "GET /docs serves Swagger UI from %s", where);
    else
        at_log(AT_LOG_WARN,
               "Swagger UI files not found in %s; GET /docs shows a note linking /openapi.json "
               "(run make after npm ci to copy them)",
               where);
    if ((rc = make_page(d, base_prefix ? base_prefix : "")))
        snprintf(err, errlen, "out of memory while making the /docs page");
out:
    json_decref(doc);
    if (rc)
        at_api_docs_free(d);
    else
        *out = d;
    return rc;
}

void at_api_docs_free(at_api_docs *d)
{
    if (!d) return;
    if (d->assets >= 0) close(d->assets);
    free(d->openapi);
    free(d->page);
    free(d);
}

/* ---- the handlers ---- */

/* Answers a copy of len bytes of text as type. */
static void reply_copy(at_ctx *c, const char *type, const char *text, size_t len)
{
    char *body = malloc(len ? len : 1);
    if (!body) {
        at_reply_error(c, 500, "out of memory");
        return;
    }
    memcpy(body, text, len);
    at_reply_body_take(c, 200, type, body, len);
}

void at_api_openapi_json(at_ctx *c)
{
    const at_api_docs *d = c->settings->docs;
    if (!d) {
        at_reply_error(c, 503, "the API document is not available in this process");
        return;
    }
    reply_copy(c, "application/json", d->openapi, d->openapi_len);
}

void at_api_docs_page(at_ctx *c)
{
    const at_api_docs *d = c->settings->docs;
    if (!d) {
        at_reply_error(c, 503, "the API page is not available in this process");
        return;
    }
    reply_copy(c, "text/html; charset=utf-8", d->page, d->page_len);
    at_set_header(c, "Cache-Control", "no-cache");
}

/* Returns the Content-Type of a file we serve by its name's end, or NULL: any other
 * file is not served. */
static const char *asset_type(const char *name)
{
    static const struct {
        const char *ext, *type;
    } types[] = {
        {".js", "text/javascript; charset=utf-8"},
        {".css", "text/css; charset=utf-8"},
        {".png", "image/png"},
        {".txt", "text/plain; charset=utf-8"},
    };
    size_t n = strlen(name);
    for (size_t i = 0; i < sizeof types / sizeof types[0]; i++) {
        size_t e = strlen(types[i].ext);
        if (n > e && strcmp(name + n - e, types[i].ext) == 0) return types[i].type;
    }
    return NULL;
}

/* Returns 1 when name can only name a file directly in the folder: letters, digits,
 * '.', '_' and '-', starting with a letter or digit (so never "." or ".."), no '/'. */
static int plain_name(const char *name)
{
    size_t n = strlen(name);
    if (n == 0 || n > MAX_ASSET_NAME) return 0;
    for (size_t i = 0; i < n; i++) {
        char ch = name[i];
        int alnum =
            (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9');
        if (!alnum && (i == 0 || (ch != '.' && ch != '_' && ch != '-'))) return 0;
    }
    return 1;
}

/* Reads the regular file name of the folder dir. Returns 0 with *out (malloc'd) and
 * *len, AT_ENOTFOUND when there is no such regular file (a link is not followed), or
 * AT_EIO / AT_ETOOBIG / AT_ENOMEM. */
static int read_asset(int dir, const char *name, char **out, size_t *len)
{
    struct stat st;
    char *buf = NULL;
    size_t got = 0;
    int rc = 0, fd = openat(dir, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY);

    *out = NULL;
    *len = 0;
    if (fd < 0)
        return errno == ENOENT || errno == ELOOP || errno == ENOTDIR ? AT_ENOTFOUND : AT_EIO;
    if (fstat(fd, &st) != 0) {
        rc = AT_EIO;
        goto out;
    }
    if (!S_ISREG(st.st_mode)) {
        rc = AT_ENOTFOUND;
        goto out;
    }
    if ((uint64_t)st.st_size > MAX_ASSET) {
        rc = AT_ETOOBIG;
        goto out;
    }
    buf = malloc((size_t)st.st_size + 1);
    if (!buf) {
        rc = AT_ENOMEM;
        goto out;
    }
    while (got < (size_t)st.st_size) {
        ssize_t r = read(fd, buf + got, (size_t)st.st_size - got);
        if (r < 0 && errno == EINTR) continue;
        if (r < 0) {
            rc = AT_EIO;
            goto out;
        }
        if (r == 0) break; /* it shrank since fstat: serve what is there */
        got += (size_t)r;
    }
out:
    close(fd);
    if (rc) {
        free(buf);
        return rc;
    }
    *out = buf;
    *len = got;
    return 0;
}

void at_api_docs_asset(at_ctx *c)
{
    const at_api_docs *d = c->settings->docs;
    const char *name = at_param(c, "asset"), *type;
    char *body;
    size_t len;
    int rc;
    if (!d || d->assets < 0) {
        at_reply_error(c, 404,
                       "the Swagger UI files are not installed beside this binary; the API "
                       "document is at /openapi.json");
        return;
    }
    if (!name || !plain_name(name) || !(type = asset_type(name))) {
        at_reply_error(c, 404, "no such file of the API page");
        return;
    }
    rc = read_asset(d->assets, name, &body, &len);
    if (rc == AT_ENOTFOUND) {
        at_reply_error(c, 404, "no such file of the API page: %s", name);
        return;
    }
    if (rc) {
        at_log(AT_LOG_ERROR, "cannot read the Swagger UI file %s: %s", name, at_strerror(rc));
        at_reply_error(c, 500, "cannot read that file of the API page (request id %s)",
                       c->resp->request_id ? c->resp->request_id : "-");
        return;
    }
    at_reply_body_take(c, 200, type, body, len);
    /* The files change only with the pinned swagger-ui-dist version. */
    at_set_header(c, "Cache-Control", "public, max-age=86400");
    at_set_header(c, "X-Content-Type-Options", "nosniff");
}
