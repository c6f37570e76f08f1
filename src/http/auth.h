/* Who is calling: a bearer JWT, or API Gateway's authorizer context. */
#ifndef AT_AUTH_H
#define AT_AUTH_H

#include "actionstools/http.h"
#include "actionstools/jwt.h"

/* Fills *id from req->preset_identity when set, else from the verified bearer token of
 * the Authorization header (strings in arena a). Returns 0, or AT_EINVAL with *why set
 * to a message for the 401 answer (never containing the token). */
int at_auth_identify(const at_jwt_verifier *v, const at_request *req, at_arena *a,
                     at_identity *id /* OUT */, const char **why /* OUT */);

#endif
