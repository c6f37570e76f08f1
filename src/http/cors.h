/* Cross-origin rules (CORS_ALLOW_ORIGINS). */
#ifndef AT_CORS_H
#define AT_CORS_H

#include "actionstools/config.h"

/* Returns what to send as Access-Control-Allow-Origin for a request from origin
 * (the Origin header, may be NULL): "*" when every origin is allowed, origin itself
 * when it is listed, NULL when the header must not be sent. Borrowed. */
const char *at_cors_allow_origin(const at_config *cfg, const char *origin);

/* The request headers a preflight allows. */
#define AT_CORS_ALLOW_HEADERS "Authorization, Content-Type, If-Match, X-Request-Id"
/* The response headers a browser script may read. */
#define AT_CORS_EXPOSE_HEADERS "ETag, X-Request-Id, Location"
#define AT_CORS_MAX_AGE "10800"

#endif
