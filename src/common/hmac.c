/* HMAC-SHA256 from precomputed key states (hmac.h; RFC 2104). */
#include <pthread.h>
#include <string.h>

#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/evp.h>

#include "actionstools/hmac.h"
#include "actionstools/err.h"
#include "actionstools/banned.h"

#define BLOCK 64 /* SHA-256's block size */

static pthread_once_t once = PTHREAD_ONCE_INIT;
static EVP_MD *sha256;          /* fetched once: fetching per call is most of HMAC()'s cost */
static pthread_key_t scratch_key; /* a thread's working EVP_MD_CTX, freed when it ends */

static void free_scratch(void *p)
{
    EVP_MD_CTX_free(p);
}

static void init_once(void)
{
    sha256 = EVP_MD_fetch(NULL, "SHA256", NULL);
    if (pthread_key_create(&scratch_key, free_scratch) != 0) {
        EVP_MD_free(sha256);
        sha256 = NULL;
    }
}

static EVP_MD_CTX *scratch(void)
{
    EVP_MD_CTX *c = pthread_getspecific(scratch_key);
    if (!c && (c = EVP_MD_CTX_new()) && pthread_setspecific(scratch_key, c) != 0) {
        EVP_MD_CTX_free(c);
        c = NULL;
    }
    return c;
}

/* Starts a hash over the key block xor'ed with pad. */
static EVP_MD_CTX *padded(const unsigned char *k, unsigned char pad)
{
    unsigned char block[BLOCK];
    EVP_MD_CTX *c = EVP_MD_CTX_new();
    for (int i = 0; i < BLOCK; i++) block[i] = (unsigned char)(k[i] ^ pad);
    if (c && (EVP_DigestInit_ex(c, sha256, NULL) != 1 || EVP_DigestUpdate(c, block, BLOCK) != 1)) {
        EVP_MD_CTX_free(c);
        c = NULL;
    }
    OPENSSL_cleanse(block, sizeof block);
    return c;
}

int at_hmac_init(at_hmac *h, const void *key, size_t len)
{
    unsigned char k[BLOCK];
    unsigned int n = 0;
    int rc = 0;

    memset(h, 0, sizeof *h);
    pthread_once(&once, init_once);
    if (!sha256) return AT_EIO;
    memset(k, 0, sizeof k);
    if (len > BLOCK) {
        if (EVP_Digest(key, len, k, &n, sha256, NULL) != 1) rc = AT_EIO;
    } else if (len) {
        memcpy(k, key, len);
    }
    if (!rc) {
        h->inner = padded(k, 0x36);
        h->outer = padded(k, 0x5c);
        if (!h->inner || !h->outer) rc = AT_ENOMEM;
    }
    OPENSSL_cleanse(k, sizeof k);
    if (rc) {
        at_hmac_release(h);
        ERR_clear_error();
    }
    return rc;
}

int at_hmac_sha256(const at_hmac *h, const void *data, size_t n, unsigned char out[AT_HMAC_SHA256_LEN])
{
    unsigned char ih[AT_HMAC_SHA256_LEN];
    unsigned int len = 0;
    EVP_MD_CTX *c;
    int ok;

    if (!h->inner || !h->outer) return AT_EINVAL;
    if (!(c = scratch())) return AT_EIO;
    ok = EVP_MD_CTX_copy_ex(c, h->inner) == 1 && EVP_DigestUpdate(c, data, n) == 1 &&
         EVP_DigestFinal_ex(c, ih, &len) == 1 && EVP_MD_CTX_copy_ex(c, h->outer) == 1 &&
         EVP_DigestUpdate(c, ih, sizeof ih) == 1 && EVP_DigestFinal_ex(c, out, &len) == 1;
    OPENSSL_cleanse(ih, sizeof ih);
    if (ok) return 0;
    ERR_clear_error();
    return AT_EIO;
}

void at_hmac_release(at_hmac *h)
{
    EVP_MD_CTX_free(h->inner);
    EVP_MD_CTX_free(h->outer);
    h->inner = h->outer = NULL;
}
