/* HMAC-SHA256 with the key's work done once: the inner and outer hash states after the
 * padded key are kept, and each MAC starts from copies of them. OpenSSL's one-shot
 * HMAC() fetches the digest and schedules the key on every call (about 9 us here; this
 * takes 0.7 us), and a MAC is computed for every bearer token and every list cursor. */
#ifndef AT_HMAC_H
#define AT_HMAC_H

#include <stddef.h>

#define AT_HMAC_SHA256_LEN 32

typedef struct at_hmac {
    void *inner, *outer; /* EVP_MD_CTX after the key's ipad / opad block */
} at_hmac;

/* Prepares h (caller's memory) for the key of len bytes (any length; NULL only when len
 * is 0). Returns 0, or AT_ENOMEM / AT_EIO when OpenSSL fails (h is then empty). Release
 * with at_hmac_release. */
int at_hmac_init(at_hmac *h, const void *key, size_t len);

/* Writes HMAC-SHA256(key, n bytes at data) into out. Safe to call from many threads at
 * once on one h. Returns 0 or AT_EIO (AT_EINVAL for an empty h). */
int at_hmac_sha256(const at_hmac *h, const void *data, size_t n,
                   unsigned char out[AT_HMAC_SHA256_LEN] /* OUT */);

/* Frees what h holds. Accepts an empty or released h. */
void at_hmac_release(at_hmac *h);

#endif
