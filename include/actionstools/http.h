/* One HTTP exchange, independent of where it came from: the libmicrohttpd server
 * (server.c) and the Lambda API Gateway adapter both fill an at_request, call
 * at_app_handle, and send the at_response back their own way. */
#ifndef AT_HTTP_H
#define AT_HTTP_H

#include <stddef.h>
#include <stdint.h>

#include "actionstools/arena.h"

/* Bodies over this many bytes get 413 (DynamoDB's 400 KB item limit). */
#define AT_MAX_BODY 409600

#define AT_MAX_RESPONSE_HEADERS 24

typedef struct at_header {
    const char *name;
    const char *value;
} at_header;

/* Who is calling, from a verified bearer token or API Gateway's authorizer. */
typedef struct at_identity {
    const char *user_uuid;   /* "sub" */
    const char *user_name;   /* "name", "" when absent */
    const char *instance_id; /* the tenant */
    int is_admin;            /* roles holds CRM_ADMIN */
} at_identity;

typedef struct at_request {
    at_arena *arena;        /* memory of this request; everything below may live in it */
    const char *method;     /* "GET", "POST"... */
    const char *path;       /* raw path as sent (percent-encoded, no query), BASE_PREFIX
                             * included; the router decodes each segment once */
    const at_header *headers;
    size_t nheaders;
    const at_header *query; /* decoded query parameters in order */
    size_t nquery;
    const char *body;       /* NULL or the bytes received (not NUL-terminated) */
    size_t body_len;
    int body_too_large;     /* more than AT_MAX_BODY bytes were sent; body was dropped */
    const at_identity *preset_identity; /* from API Gateway's authorizer, or NULL */
} at_request;

typedef struct at_response {
    int status;
    at_header headers[AT_MAX_RESPONSE_HEADERS]; /* names and values live in the arena */
    size_t nheaders;
    char *body;       /* malloc'd, owned by the response; NULL for none */
    size_t body_len;
    const char *user; /* user uuid for the log line, or NULL */
    const char *request_id;
} at_response;

/* Frees what a response owns (its body). */
void at_response_release(at_response *resp);

/* Returns the value of header name (case-insensitive) in req, or NULL. */
const char *at_request_header(const at_request *req, const char *name);

#endif
