/* Opaque list cursors (SPEC §4): a small JSON object (a DynamoDB-style exclusive start
 * key, a phase number...) made tamper-evident and bound to one list.
 *
 *   cursor = base64url(compact JSON) "." base64url(HMAC-SHA256(key, scope "\n" JSON)[0..16))
 *
 * The scope names the list and whose it is ("notes|<instance>|<target>"), so a cursor
 * of another list or another tenant is refused like a forged one. Compact JSON never
 * holds a raw newline, so scope and JSON cannot be confused with another pair. The
 * payload is readable by whoever holds the cursor (it is signed, not encrypted): put
 * nothing in it the caller may not see. */
#ifndef AT_CURSOR_H
#define AT_CURSOR_H

#include <jansson.h>
#include <stddef.h>

#include "actionstools/hmac.h"

#define AT_CURSOR_KEY_LEN 32
#define AT_CURSOR_MAC_LEN 16   /* bytes of the HMAC kept in a cursor (128 bits) */
#define AT_CURSOR_MAX_LEN 4096 /* longest cursor made or accepted, in characters */

typedef struct at_cursor_key {
    unsigned char k[AT_CURSOR_KEY_LEN];
    at_hmac mac; /* HMAC-SHA256 with k, prepared once (hmac.h) */
} at_cursor_key;

/* Derives the cursor key from a secret (len bytes at secret; NULL only when len is 0)
 * into key, which is zeroed or holds an earlier key (released first); release it with
 * at_cursor_key_release:
 * HMAC-SHA256(secret, fixed label), so the cursor key is never the JWT secret itself
 * and a cursor MAC reveals nothing about it. Returns 0, or AT_EIO when OpenSSL fails
 * (the key is then all zero). */
int at_cursor_key_derive(at_cursor_key *key /* OUT */, const void *secret, size_t len);

/* Frees what a derived key holds and wipes it. Accepts a zeroed key. */
void at_cursor_key_release(at_cursor_key *key);

typedef struct at_store at_store;

/* The counters-table item that keeps a generated cursor secret (docs/auth.md). */
#define AT_CURSOR_SECRET_ITEM "actionstools#cursor_secret"

/* Sets key from the cursor secret kept in the store, generating one first when there
 * is none: 32 random bytes written with a conditional put, so that every server of a
 * deployment ends up with the same secret whoever writes first. For deployments that
 * configure only a public key for tokens (no secret to derive from). Returns 0, or an
 * AT_* code with a message for the operator in err (a missing table: run setup). */
int at_cursor_key_stored(at_store *s, at_cursor_key *key /* OUT */, char *err, size_t errlen);

/* Returns a new cursor for payload (an object, borrowed) bound to scope, in a string
 * the caller frees with free(). Returns NULL when payload is not an object, the cursor
 * would be longer than AT_CURSOR_MAX_LEN, or out of memory. */
char *at_cursor_encode(const at_cursor_key *k, const char *scope, const json_t *payload);

/* Checks a cursor a client sent for the list scope. Returns 0 and sets *payload to a
 * new object (the caller releases it with json_decref); AT_EINVAL for anything
 * malformed, longer than AT_CURSOR_MAX_LEN, tampered with, made under another key or
 * for another scope (answer 400); AT_ENOMEM. On failure *payload is NULL. Any input
 * is safe, including NULL and "". */
int at_cursor_decode(const at_cursor_key *k, const char *scope, const char *cursor,
                     json_t **payload /* OUT */);

#endif
