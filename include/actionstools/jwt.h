/* Bearer tokens (JWS compact form, RFC 7515/7519) verified with OpenSSL.
 *
 * A verifier accepts exactly one algorithm, the configured one:
 *   - AUTH_JWT_PUBLIC_KEY_FILE set: RS256 for an RSA key (2048 bits or more), ES256 for
 *     an EC P-256 key. Any other key is a configuration error. The key file wins: when
 *     AUTH_JWT_SECRET is set too, it is NOT used to verify (HS256 tokens are refused),
 *     so a public key can never be turned into an HMAC secret. at_jwt_verifier_new
 *     says so in its note so start-up can log it.
 *   - else AUTH_JWT_SECRET: HS256 with that secret.
 * A token must be three base64url parts, at most AT_JWT_MAX_LEN characters, with a
 * header naming that algorithm (never "none"), a valid signature, a numeric "exp" not
 * more than AT_JWT_LEEWAY seconds past, an "nbf" (when present) not more than
 * AT_JWT_LEEWAY seconds ahead, and the configured issuer and audience when those are set.
 * A verifier is read-only once made: any number of threads may use it at once. */
#ifndef AT_JWT_H
#define AT_JWT_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#define AT_JWT_MAX_LEN 8192 /* longest token accepted, in characters */
#define AT_JWT_LEEWAY 60    /* clock skew allowed on exp and nbf, in seconds */

typedef struct at_jwt_verifier at_jwt_verifier;

/* What a verifier is made from (SPEC §2); every member may be NULL. Borrowed. */
typedef struct at_jwt_config {
    const char *secret;          /* AUTH_JWT_SECRET: HS256 */
    const char *public_key_file; /* AUTH_JWT_PUBLIC_KEY_FILE: PEM, RS256 or ES256 */
    const char *public_key_pem;  /* the same key as PEM text, used when no file is named */
    const char *issuer;          /* AUTH_JWT_ISSUER: "iss" must equal it */
    const char *audience;        /* AUTH_JWT_AUDIENCE: "aud" (string or array) must hold it */
} at_jwt_config;

/* Makes a verifier from cfg into *out; the caller frees it with at_jwt_verifier_free.
 * Returns 0, or AT_EINVAL with a message for the operator in why (naming the variable
 * and what to fix, never the secret) when nothing usable is configured, the secret is
 * empty, or the key file cannot be read or holds an unsupported key; AT_ENOMEM.
 * On success why receives a note ("" when there is nothing to say) worth logging, e.g.
 * that the secret is ignored for verification because a key file is set. */
int at_jwt_verifier_new(const at_jwt_config *cfg, at_jwt_verifier **out /* OUT */, char *why,
                        size_t whylen);

/* Frees a verifier; NULL is allowed. */
void at_jwt_verifier_free(at_jwt_verifier *v);

/* Returns a number no other verifier of this process has had or will have (caches of
 * verified tokens key on it: a verifier made later at the same address is another). */
uint64_t at_jwt_verifier_serial(const at_jwt_verifier *v);

/* Returns the one algorithm v accepts: "HS256", "RS256" or "ES256" (static). */
const char *at_jwt_verifier_alg(const at_jwt_verifier *v);

/* Verifies the compact token (the text after "Bearer ") at time now (epoch seconds).
 * Returns 0 and sets *claims to the payload object (a new reference the caller
 * releases with json_decref); or AT_EINVAL when the token is refused, with a short
 * reason for the log in why (may be NULL; it never holds the token or the secret);
 * or AT_ENOMEM. On failure *claims is NULL. */
int at_jwt_verify(const at_jwt_verifier *v, const char *token, int64_t now,
                  json_t **claims /* OUT */, char *why, size_t whylen);

/* Returns a new HS256 token for the claims object, signed with the NUL-terminated
 * secret (used by `actionstools token`). The caller frees it with free(). Returns NULL
 * when claims is not an object, the secret is empty, or out of memory. */
char *at_jwt_sign_hs256(const char *secret, const json_t *claims);

/* Returns a new token for the claims object signed with the private key given as PEM
 * text: alg "RS256" needs an RSA key, "ES256" an EC P-256 key (its signature is raw
 * R || S, 64 bytes, as RFC 7518 §3.4 wants). For tests and tools. The caller frees the
 * result with free(). Returns NULL on a bad key, an alg that does not fit the key,
 * claims not an object, or out of memory. */
char *at_jwt_sign_pem(const char *private_key_pem, const char *alg, const json_t *claims);

#endif
