/* Identity of the caller (SPEC §4 "Identity"). */
#include <string.h>
#include <strings.h>

#include "auth.h"
#include "token_cache.h"
#include "actionstools/err.h"
#include "actionstools/timeutil.h"
#include "actionstools/banned.h"

#define ADMIN_ROLE "CRM_ADMIN"

static const char *claim_string(json_t *claims, const char *name, at_arena *a)
{
    json_t *v = json_object_get(claims, name);
    if (!json_is_string(v) || json_string_length(v) == 0 || json_string_length(v) > 256)
        return NULL;
    return at_arena_strdup(a, json_string_value(v));
}

static int has_admin_role(json_t *roles)
{
    size_t i;
    json_t *r;
    if (json_is_string(roles)) { /* tolerate "A,B" as the authorizer context sends it */
        const char *s = json_string_value(roles), *p = s;
        size_t n = strlen(ADMIN_ROLE);
        while ((p = strstr(p, ADMIN_ROLE)) != NULL) {
            if ((p == s || p[-1] == ',' || p[-1] == ' ') && (p[n] == '\0' || p[n] == ',')) return 1;
            p += n;
        }
        return 0;
    }
    json_array_foreach(roles, i, r)
    {
        if (json_is_string(r) && strcmp(json_string_value(r), ADMIN_ROLE) == 0) return 1;
    }
    return 0;
}

int at_auth_identify(const at_jwt_verifier *v, const at_request *req, at_arena *a, at_identity *id,
                     const char **why)
{
    const char *h, *token;
    json_t *claims = NULL;
    at_token_times times;
    char reason[160];
    int64_t now;
    int rc;

    memset(id, 0, sizeof *id);
    if (req->preset_identity) {
        *id = *req->preset_identity;
        if (!id->user_uuid || !id->instance_id) {
            *why = "the authorizer context lacks user_uuid or instance_id";
            return AT_EINVAL;
        }
        if (!id->user_name) id->user_name = "";
        return 0;
    }
    h = at_request_header(req, "Authorization");
    if (!h || !*h) {
        *why = "missing bearer token: send Authorization: Bearer <JWT>";
        return AT_EINVAL;
    }
    if (strncasecmp(h, "Bearer ", 7) != 0) {
        *why = "the Authorization header must be: Bearer <JWT>";
        return AT_EINVAL;
    }
    token = h + 7;
    while (*token == ' ')
        token++;
    if (!v) {
        *why = "bearer tokens cannot be verified: the server has no AUTH_JWT_SECRET or "
               "AUTH_JWT_PUBLIC_KEY_FILE";
        return AT_EINVAL;
    }
    now = at_now_us() / 1000000;
    if (at_token_cache_get(v, token, now, a, id)) return 0;
    rc = at_jwt_verify(v, token, now, &claims, reason, sizeof reason);
    if (rc) {
        *why = at_arena_printf(a, "invalid bearer token: %s", reason);
        if (!*why) *why = "invalid bearer token";
        return AT_EINVAL;
    }
    id->user_uuid = claim_string(claims, "sub", a);
    id->instance_id = claim_string(claims, "instance_id", a);
    id->user_name = claim_string(claims, "name", a);
    if (!id->user_name) id->user_name = "";
    id->is_admin = has_admin_role(json_object_get(claims, "roles"));
    /* at_jwt_verify checked that exp is a number, and nbf when present. */
    times.exp = json_number_value(json_object_get(claims, "exp"));
    times.has_nbf = json_object_get(claims, "nbf") != NULL;
    times.nbf = json_number_value(json_object_get(claims, "nbf"));
    json_decref(claims);
    if (!id->user_uuid) {
        *why = "invalid bearer token: the \"sub\" claim (user uuid) is missing";
        return AT_EINVAL;
    }
    if (!id->instance_id) {
        *why = "invalid bearer token: the \"instance_id\" claim (tenant) is missing";
        return AT_EINVAL;
    }
    at_token_cache_put(v, token, &times, id);
    return 0;
}
