/* UUIDs in their lower-case 8-4-4-4-12 text form: random, or made from a name. */
#ifndef AT_UUID_H
#define AT_UUID_H

#include <stddef.h>

#define AT_UUID_LEN 36

/* Writes a new random (version 4) UUID into out (AT_UUID_LEN + 1 bytes). */
void at_uuid_new(char out[AT_UUID_LEN + 1]);

/* Returns 1 when s is a UUID in 8-4-4-4-12 hex form (either case), else 0. */
int at_uuid_valid(const char *s);

/* Writes the lower-case form of the valid UUID s into out. Returns 0 or AT_EINVAL. */
int at_uuid_normalize(const char *s, char out[AT_UUID_LEN + 1]);

/* Writes into out the name-based (version 5, SHA-1) UUID of the len bytes at name in
 * the namespace ns (a UUID's text): the same namespace and name always give the same
 * UUID (RFC 9562). Returns 0, or AT_EINVAL when ns is not a UUID. */
int at_uuid_from_name(const char *ns, const char *name, size_t len, char out[AT_UUID_LEN + 1]);

#endif
