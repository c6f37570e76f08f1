/* The start-up check of the route table: every resource and list against the schema
 * (src/model/check.c), each engine route against what its kind needs, and every row
 * against what the API document needs (a summary; a route of its own says what it
 * answers). */
#include <stdio.h>
#include <string.h>

#include "api.h"
#include "actionstools/err.h"
#include "actionstools/banned.h"

/* Returns 1 when pattern has the path parameter {name}. */
static int has_param(const char *pattern, const char *name)
{
    size_t len = name ? strlen(name) : 0;
    for (const char *p = strchr(pattern, '{'); p && len; p = strchr(p + 1, '{'))
        if (strncmp(p + 1, name, len) == 0 && p[1 + len] == '}') return 1;
    return 0;
}

/* Returns the first {param} of pattern that at_route_params does not describe (in buf),
 * or NULL. */
static const char *undescribed_param(const char *pattern, char *buf, size_t n)
{
    for (const char *p = strchr(pattern, '{'); p; p = strchr(p + 1, '{')) {
        const char *close = strchr(p, '}');
        const at_route_param *d;
        if (!close) return "{";
        snprintf(buf, n, "%.*s", (int)(close - p - 1), p + 1);
        for (d = at_route_params; d->name && strcmp(d->name, buf) != 0; d++) {
        }
        if (!d->name) return buf;
    }
    return NULL;
}

static int check_route(const at_route *rt, char *err, size_t n)
{
    const at_resource *r = rt->resource;
    char name[64];
    const char *missing = undescribed_param(rt->pattern, name, sizeof name);
    int item = rt->kind == AT_RK_GET || rt->kind == AT_RK_PATCH || rt->kind == AT_RK_DELETE ||
               rt->kind == AT_RK_RESTORE;
    if (missing) {
        snprintf(err, n, "route %s %s: path parameter {%s} is not in at_route_params", rt->method,
                 rt->pattern, missing);
        return AT_EINVAL;
    }
    /* What the API document needs of every row. */
    if (!rt->summary || !*rt->summary) {
        snprintf(err, n, "route %s %s has no summary (the API document's line for it)", rt->method, rt->pattern);
        return AT_EINVAL;
    }
    if (rt->kind == AT_RK_OTHER && (!rt->doc || !rt->doc->answer)) {
        snprintf(err, n, "route %s %s: a route of its own needs an at_route_doc saying what it answers",
                 rt->method, rt->pattern);
        return AT_EINVAL;
    }
    if (!r && rt->kind == AT_RK_OTHER) return 0;
    if (!r)
        snprintf(err, n, "route %s %s: an engine route without a resource", rt->method, rt->pattern);
    else if ((item || rt->kind == AT_RK_CREATE) && r->pk.src == AT_SRC_PATH && !has_param(rt->pattern, r->pk.name))
        snprintf(err, n, "route %s %s: the path has no {%s} for the %s's key", rt->method, rt->pattern,
                 r->pk.name, r->name);
    else if (item && !has_param(rt->pattern, r->sk.name))
        snprintf(err, n, "route %s %s: the path has no {%s} for the %s's key", rt->method, rt->pattern,
                 r->sk.name, r->name);
    else if (rt->kind == AT_RK_CREATE && (!(rt->flags & AT_R_BODY) || r->sk.src != AT_SRC_NEW_UUID))
        snprintf(err, n, "route %s %s: a create takes a body and makes a new uuid", rt->method, rt->pattern);
    else if (rt->kind == AT_RK_PUT && (!(rt->flags & AT_R_BODY) || r->pk.src != AT_SRC_TENANT ||
                                       r->sk.src != AT_SRC_PATH || !has_param(rt->pattern, r->sk.name)))
        snprintf(err, n, "route %s %s: a PUT takes a body and names an item of the tenant by a path "
                         "parameter {%s}", rt->method, rt->pattern, r->sk.name ? r->sk.name : "(none)");
    else if (rt->kind == AT_RK_GET_BY_UUID && (!r->uuid_index || !has_param(rt->pattern, "uuid")))
        snprintf(err, n, "route %s %s: the %s has no uuid_index, or the path no {uuid}", rt->method,
                 rt->pattern, r->name);
    else if (rt->kind == AT_RK_LIST)
        return at_model_check_list(r, rt->list, rt->pattern, err, n);
    else
        return 0;
    return AT_EINVAL;
}

int at_api_check_routes(const at_route *routes, char *err, size_t n)
{
    int rc;
    for (const at_route *rt = routes; rt->method; rt++) {
        int seen = 0;
        for (const at_route *before = routes; before < rt; before++) {
            seen |= before->resource == rt->resource;
            if (strcmp(before->method, rt->method) == 0 && strcmp(before->pattern, rt->pattern) == 0) {
                snprintf(err, n, "route %s %s is in the table twice", rt->method, rt->pattern);
                return AT_EINVAL;
            }
        }
        if (rt->resource && !seen && (rc = at_model_check_resource(rt->resource, err, n))) return rc;
        if ((rc = check_route(rt, err, n))) return rc;
    }
    return 0;
}
