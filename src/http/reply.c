/* Helpers handlers use to read the request and build the answer. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "actionstools/handler.h"
#include "actionstools/err.h"
#include "actionstools/log.h"
#include "actionstools/banned.h"

const char *at_param(const at_ctx *c, const char *name)
{
    for (size_t i = 0; i < c->nparams; i++)
        if (strcmp(c->param_names[i], name) == 0) return c->params[i];
    return NULL;
}

const char *at_query_param(const at_ctx *c, const char *name)
{
    for (size_t i = 0; i < c->req->nquery; i++)
        if (strcmp(c->req->query[i].name, name) == 0) return c->req->query[i].value;
    return NULL;
}

void at_set_header(at_ctx *c, const char *name, const char *value)
{
    at_response *r = c->resp;
    /* Replace a header set before (a handler may override Content-Type). */
    for (size_t i = 0; i < r->nheaders; i++)
        if (strcasecmp(r->headers[i].name, name) == 0) {
            r->headers[i].value = at_arena_strdup(c->arena, value);
            return;
        }
    if (r->nheaders >= AT_MAX_RESPONSE_HEADERS) {
        at_log(AT_LOG_ERROR, "too many response headers; dropped %s", name);
        return;
    }
    r->headers[r->nheaders].name = at_arena_strdup(c->arena, name);
    r->headers[r->nheaders].value = at_arena_strdup(c->arena, value);
    if (r->headers[r->nheaders].name && r->headers[r->nheaders].value) r->nheaders++;
}

static void set_body(at_ctx *c, int status, char *body, size_t len)
{
    free(c->resp->body);
    c->resp->status = status;
    c->resp->body = body;
    c->resp->body_len = len;
}

void at_reply_json(at_ctx *c, int status, json_t *body)
{
    char *text = NULL;
    if (body) {
        text = json_dumps(body, JSON_COMPACT | JSON_PRESERVE_ORDER | JSON_ENCODE_ANY);
        json_decref(body);
        if (!text) {
            set_body(c, 500, strdup("{\"message\":\"out of memory\"}"), 27);
            at_set_header(c, "Content-Type", "application/json");
            return;
        }
    }
    set_body(c, status, text, text ? strlen(text) : 0);
    if (text) at_set_header(c, "Content-Type", "application/json");
}

void at_reply_json_buf(at_ctx *c, int status, at_buf *b)
{
    size_t len;
    char *text = at_buf_take(b, &len);
    if (!text) {
        at_reply_error(c, 500, "out of memory");
        return;
    }
    set_body(c, status, text, len);
    at_set_header(c, "Content-Type", "application/json");
}

void at_reply_body_take(at_ctx *c, int status, const char *content_type, char *body, size_t len)
{
    set_body(c, status, body, len);
    at_set_header(c, "Content-Type", content_type);
}

void at_reply_error(at_ctx *c, int status, const char *fmt, ...)
{
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    at_reply_json(c, status, json_pack("{s:s}", "message", msg));
}

void at_reply_validation(at_ctx *c, json_t *errors)
{
    at_reply_json(c, 400, json_pack("{s:s, s:o}", "message", "Input payload validation failed",
                                    "errors", errors ? errors : json_object()));
}

void at_reply_empty(at_ctx *c, int status)
{
    set_body(c, status, NULL, 0);
}

void at_reply_store_error(at_ctx *c, int rc, const char *what)
{
    json_t *f = json_pack("{s:s, s:s, s:s?}", "operation", what, "error", at_strerror(rc),
                          "request_id", c->resp->request_id);
    at_log_json(rc == AT_ENOTABLE || rc == AT_EUNAVAIL || rc == AT_ETHROTTLED ? AT_LOG_WARN
                                                                             : AT_LOG_ERROR,
                "storage failed", f);
    json_decref(f);
    switch (rc) {
    case AT_ENOTABLE:
        at_reply_error(c, 503, "a table is missing: run `actionstools setup` "
                               "(or GET /setup-install as an admin)");
        break;
    case AT_EUNAVAIL:
        at_reply_error(c, 503, "the store is unreachable; try again shortly");
        break;
    case AT_ETHROTTLED:
        at_set_header(c, "Retry-After", "1");
        at_reply_error(c, 429, "the store is throttling requests; try again shortly");
        break;
    default:
        at_reply_error(c, 500, "internal error while trying to %s (request id %s)", what,
                       c->resp->request_id ? c->resp->request_id : "-");
        break;
    }
}

json_t *at_body_object(at_ctx *c)
{
    if (c->body_error) {
        at_reply_error(c, 400, "%s", c->body_error);
        return NULL;
    }
    if (!c->body) {
        at_reply_error(c, 400, "send a JSON object as the request body");
        return NULL;
    }
    if (!json_is_object(c->body)) {
        at_reply_error(c, 400, "the request body must be a JSON object");
        return NULL;
    }
    return c->body;
}
