/* Bearer tokens already verified, remembered per thread (token_cache.c).
 *
 * Verifying a token costs far more than the rest of a small request: two base64url
 * decodes, two JSON parses and a MAC or a signature check (about 56,000 instructions of
 * the 415,000 of a POST; callgrind). A client sends the same token on every request, so
 * each thread that verifies tokens (a polling thread, a worker) remembers the identities
 * of the last AT_TOKEN_CACHE_SLOTS tokens it verified, keyed by the token's exact bytes
 * and the verifier that accepted it. A hit still checks `exp` and `nbf` against the time
 * of the request, so a remembered token stops working exactly when it expires; anything
 * else about it cannot change, since the same bytes verify the same way with the same
 * verifier. Nothing is shared between threads, so there is no lock. */
#ifndef AT_TOKEN_CACHE_H
#define AT_TOKEN_CACHE_H

#include <stdint.h>

#include "actionstools/arena.h"
#include "actionstools/http.h"
#include "actionstools/jwt.h"

#define AT_TOKEN_CACHE_SLOTS 64     /* tokens remembered per thread */
#define AT_TOKEN_CACHE_MAX_LEN 4096 /* longer tokens are verified every time */

/* The time limits of a verified token: its "exp", and its "nbf" when it has one. */
typedef struct at_token_times {
    double exp;
    int has_nbf;
    double nbf;
} at_token_times;

/* Looks token up in this thread's cache. Returns 1 and fills *id (its strings copied
 * into a) when v verified exactly this token on this thread and, at time now (epoch
 * seconds), it has not expired and is valid already (AT_JWT_LEEWAY either way); else 0
 * (an expired entry is dropped): the caller verifies the token itself. */
int at_token_cache_get(const at_jwt_verifier *v, const char *token, int64_t now, at_arena *a,
                       at_identity *id /* OUT */);

/* Remembers that v verified token, the identity it carries and its time limits, on this
 * thread (replacing what its slot held). Tokens longer than AT_TOKEN_CACHE_MAX_LEN, and
 * any token when memory is short, are not remembered. id's strings are copied. */
void at_token_cache_put(const at_jwt_verifier *v, const char *token, const at_token_times *t,
                        const at_identity *id);

#endif
