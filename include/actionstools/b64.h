/* Base64 (RFC 4648 §4) and base64url (§5), strict in what they read: one alphabet, no
 * whitespace, padding exactly as the flags say, and the unused low bits of the last
 * character zero. Every decodable text therefore has exactly one encoding, so changing
 * any character of a signed base64 text (a JWT, a list cursor) is always noticed.
 * OpenSSL's EVP_EncodeBlock/EVP_DecodeBlock do the conversion. */
#ifndef AT_B64_H
#define AT_B64_H

#include <stddef.h>

enum {
    AT_B64_STD = 0,   /* alphabet A-Z a-z 0-9 + /, '=' padding */
    AT_B64_URL = 1,   /* alphabet A-Z a-z 0-9 - _ */
    AT_B64_NOPAD = 2, /* no '=' padding: encode omits it, decode refuses it */
};

/* base64url without padding, as JWTs (RFC 7515) and our list cursors use it. */
#define AT_B64_JWT (AT_B64_URL | AT_B64_NOPAD)

/* Largest input either function takes (1 GiB); more is refused. */
#define AT_B64_MAX ((size_t)1 << 30)

/* Returns the base64 text of the len bytes at data (data may be NULL when len is 0)
 * in a NUL-terminated string the caller frees with free(); *outlen (if not NULL)
 * receives its length. Returns NULL when out of memory or len > AT_B64_MAX. */
char *at_b64_encode(const void *data, size_t len, int flags, size_t *outlen /* OUT */);

/* Decodes exactly len characters at text (no NUL needed; nothing past text + len is
 * read). On success returns 0, sets *out to a malloc'd buffer of *outlen bytes that
 * the caller frees with free() (a NUL is appended after the data, not counted in
 * *outlen, so decoded text can be used as a string), and *outlen (if not NULL).
 * Returns AT_EINVAL for a character outside the alphabet the flags select, a length
 * that is not possible, padding other than the flags require, or non-zero unused
 * bits; AT_ETOOBIG when len > AT_B64_MAX; AT_ENOMEM. On failure *out is NULL. */
int at_b64_decode(const char *text, size_t len, int flags, unsigned char **out /* OUT */,
                  size_t *outlen /* OUT */);

#endif
