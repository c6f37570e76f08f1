/* JWT verification and signing (HS256, RS256, ES256) with OpenSSL only. */
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <openssl/bio.h>
#include <openssl/bn.h>
#include <openssl/crypto.h>
#include <openssl/ec.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/pem.h>
#include <openssl/x509.h>

#include "actionstools/b64.h"
#include "actionstools/buf.h"
#include "actionstools/err.h"
#include "actionstools/jwt.h"
#include "actionstools/hmac.h"
#include "actionstools/banned.h"

#define HS256_LEN 32
#define ES256_PART 32 /* bytes of R and of S */
#define RSA_MIN_BITS 2048
#define SIGN_MAX ((size_t)1 << 20) /* signing builds tokens up to 1 MiB */

typedef enum { ALG_HS256, ALG_RS256, ALG_ES256 } alg_kind;

static const char *const alg_names[] = {"HS256", "RS256", "ES256"};

struct at_jwt_verifier {
    alg_kind alg;
    unsigned char *secret; /* HS256 */
    size_t secret_len;
    at_hmac mac;           /* HS256: HMAC-SHA256 with the secret, prepared once */
    EVP_PKEY *pkey; /* RS256 / ES256 */
    char *issuer;   /* NULL: not checked */
    char *audience; /* NULL: not checked */
    uint64_t serial; /* unique in the process (at_jwt_verifier_serial) */
};

static uint64_t verifier_serials; /* the last serial given out */

static int say(char *why, size_t n, int rc, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static int say(char *why, size_t n, int rc, const char *fmt, ...)
{
    va_list ap;
    if (why && n) {
        va_start(ap, fmt);
        vsnprintf(why, n, fmt, ap);
        va_end(ap);
    }
    return rc;
}

static const char *nonempty(const char *s)
{
    return s && *s ? s : NULL;
}

/* ---- configuration --------------------------------------------------------------- */

/* Reads a public key (SubjectPublicKeyInfo PEM, or a certificate's key) from bio. */
static EVP_PKEY *read_public_key(BIO *bio)
{
    EVP_PKEY *pkey = PEM_read_bio_PUBKEY(bio, NULL, NULL, NULL);
    if (!pkey && BIO_reset(bio) >= 0) {
        X509 *cert = PEM_read_bio_X509(bio, NULL, NULL, NULL);
        if (cert) {
            pkey = X509_get_pubkey(cert);
            X509_free(cert);
        }
    }
    return pkey;
}

/* Picks the algorithm for pkey, or explains in why why the key cannot be used. */
static int key_alg(EVP_PKEY *pkey, const char *where, alg_kind *alg, char *why, size_t n)
{
    if (EVP_PKEY_is_a(pkey, "RSA")) {
        int bits = EVP_PKEY_get_bits(pkey);
        if (bits < RSA_MIN_BITS)
            return say(why, n, AT_EINVAL, "%s: the RSA key has %d bits; RS256 needs at least %d",
                       where, bits, RSA_MIN_BITS);
        *alg = ALG_RS256;
        return 0;
    }
    if (EVP_PKEY_is_a(pkey, "EC")) {
        char group[64] = "";
        size_t glen = 0;
        if (EVP_PKEY_get_group_name(pkey, group, sizeof group, &glen) != 1 ||
            (strcmp(group, "prime256v1") != 0 && strcmp(group, "P-256") != 0))
            return say(why, n, AT_EINVAL,
                       "%s: the EC key is on curve %s; only P-256 (ES256) is supported", where,
                       group[0] ? group : "(unknown)");
        *alg = ALG_ES256;
        return 0;
    }
    {
        const char *type = EVP_PKEY_get0_type_name(pkey);
        return say(why, n, AT_EINVAL,
                   "%s: unsupported key type %s; use an RSA key (RS256) or an EC P-256 key "
                   "(ES256)",
                   where, type ? type : "(unknown)");
    }
}

static int load_key(const at_jwt_config *cfg, at_jwt_verifier *v, char *why, size_t n)
{
    int rc = 0;
    const char *file = nonempty(cfg->public_key_file);
    const char *where = file ? "AUTH_JWT_PUBLIC_KEY_FILE" : "the public key";
    BIO *bio;

    if (file) {
        bio = BIO_new_file(file, "r");
        if (!bio) {
            int e = errno;
            ERR_clear_error();
            return say(why, n, AT_EINVAL, "AUTH_JWT_PUBLIC_KEY_FILE=%s: cannot open it (%s)", file,
                       e ? strerror(e) : "unknown error");
        }
    } else {
        if (strlen(cfg->public_key_pem) > INT_MAX) return say(why, n, AT_EINVAL, "key too long");
        bio = BIO_new_mem_buf(cfg->public_key_pem, -1);
        if (!bio) return AT_ENOMEM;
    }
    v->pkey = read_public_key(bio);
    if (!v->pkey) {
        rc = file ? say(why, n, AT_EINVAL,
                        "AUTH_JWT_PUBLIC_KEY_FILE=%s: no PEM public key "
                        "(-----BEGIN PUBLIC KEY-----) or certificate in it",
                        file)
                  : say(why, n, AT_EINVAL,
                        "no PEM public key (-----BEGIN PUBLIC KEY-----) or certificate found");
        goto out;
    }
    rc = key_alg(v->pkey, where, &v->alg, why, n);
out:
    BIO_free(bio);
    ERR_clear_error();
    return rc;
}

int at_jwt_verifier_new(const at_jwt_config *cfg, at_jwt_verifier **out, char *why, size_t whylen)
{
    int rc = 0;
    at_jwt_verifier *v = NULL;
    const char *secret = nonempty(cfg->secret);
    int have_key = nonempty(cfg->public_key_file) || nonempty(cfg->public_key_pem);

    *out = NULL;
    if (why && whylen) why[0] = '\0';
    if (!secret && !have_key)
        return say(why, whylen, AT_EINVAL,
                   "AUTH_JWT_SECRET is empty or not set: set it (HS256 secret) or "
                   "AUTH_JWT_PUBLIC_KEY_FILE (RS256/ES256 public key) to verify bearer tokens");
    v = calloc(1, sizeof *v);
    if (!v) return AT_ENOMEM;
    v->serial = __atomic_add_fetch(&verifier_serials, 1, __ATOMIC_RELAXED);
    if (have_key) {
        rc = load_key(cfg, v, why, whylen);
        if (rc) goto out;
    } else {
        v->alg = ALG_HS256;
        v->secret_len = strlen(secret);
        if (v->secret_len > INT_MAX) {
            rc = say(why, whylen, AT_EINVAL, "AUTH_JWT_SECRET is too long");
            goto out;
        }
        v->secret = malloc(v->secret_len);
        if (!v->secret) {
            rc = AT_ENOMEM;
            goto out;
        }
        memcpy(v->secret, secret, v->secret_len);
        rc = at_hmac_init(&v->mac, v->secret, v->secret_len);
        if (rc) goto out;
    }
    if (nonempty(cfg->issuer) && !(v->issuer = strdup(cfg->issuer))) rc = AT_ENOMEM;
    if (nonempty(cfg->audience) && !(v->audience = strdup(cfg->audience))) rc = AT_ENOMEM;
    if (rc) goto out;
    if (have_key && secret)
        say(why, whylen, 0,
            "AUTH_JWT_SECRET is ignored for verification: AUTH_JWT_PUBLIC_KEY_FILE is set, so "
            "only %s tokens are accepted",
            alg_names[v->alg]);
    *out = v;
    v = NULL;
out:
    at_jwt_verifier_free(v);
    return rc;
}

void at_jwt_verifier_free(at_jwt_verifier *v)
{
    if (!v) return;
    if (v->secret) OPENSSL_cleanse(v->secret, v->secret_len);
    free(v->secret);
    at_hmac_release(&v->mac);
    EVP_PKEY_free(v->pkey);
    free(v->issuer);
    free(v->audience);
    free(v);
}

uint64_t at_jwt_verifier_serial(const at_jwt_verifier *v)
{
    return v->serial;
}

const char *at_jwt_verifier_alg(const at_jwt_verifier *v)
{
    return alg_names[v->alg];
}

/* ---- verification ---------------------------------------------------------------- */

/* Turns a JWS ES256 signature (R || S, 32 bytes each) into the DER ECDSA-Sig-Value
 * OpenSSL verifies. Returns the DER length (the caller frees *der with OPENSSL_free)
 * or -1. */
static int es256_raw_to_der(const unsigned char *raw, unsigned char **der)
{
    int n = -1;
    ECDSA_SIG *sig = ECDSA_SIG_new();
    BIGNUM *r = BN_bin2bn(raw, ES256_PART, NULL);
    BIGNUM *s = BN_bin2bn(raw + ES256_PART, ES256_PART, NULL);

    *der = NULL;
    if (!sig || !r || !s) goto out;
    if (ECDSA_SIG_set0(sig, r, s) != 1) goto out;
    r = s = NULL; /* owned by sig now */
    n = i2d_ECDSA_SIG(sig, der);
out:
    BN_free(r);
    BN_free(s);
    ECDSA_SIG_free(sig);
    return n;
}

/* Returns 1 when sig is a valid signature of the len bytes at data under v. */
static int signature_ok(const at_jwt_verifier *v, const char *data, size_t len,
                        const unsigned char *sig, size_t siglen)
{
    int ok = 0;
    EVP_MD_CTX *ctx = NULL;
    unsigned char *der = NULL;

    if (v->alg == ALG_HS256) {
        unsigned char mac[AT_HMAC_SHA256_LEN];
        if (siglen != HS256_LEN) goto out;
        if (at_hmac_sha256(&v->mac, data, len, mac)) goto out;
        ok = CRYPTO_memcmp(mac, sig, HS256_LEN) == 0;
        goto out;
    }
    if (v->alg == ALG_ES256) {
        int n;
        if (siglen != 2 * ES256_PART) goto out; /* DER or any other form is refused */
        n = es256_raw_to_der(sig, &der);
        if (n <= 0) goto out;
        sig = der;
        siglen = (size_t)n;
    } else if (siglen != (size_t)EVP_PKEY_get_size(v->pkey)) {
        goto out;
    }
    ctx = EVP_MD_CTX_new();
    if (!ctx || EVP_DigestVerifyInit(ctx, NULL, EVP_sha256(), NULL, v->pkey) != 1) goto out;
    ok = EVP_DigestVerify(ctx, sig, siglen, (const unsigned char *)data, len) == 1;
out:
    EVP_MD_CTX_free(ctx);
    OPENSSL_free(der);
    ERR_clear_error(); /* leave nothing on this thread's error queue */
    return ok;
}

/* Decodes one base64url part into a JSON object. Returns 0, AT_EINVAL or AT_ENOMEM. */
static int part_object(const char *p, size_t n, json_t **obj)
{
    unsigned char *raw = NULL;
    size_t rawlen = 0;
    json_error_t jerr;
    int rc = at_b64_decode(p, n, AT_B64_JWT, &raw, &rawlen);

    *obj = NULL;
    if (rc) return rc == AT_ENOMEM ? rc : AT_EINVAL;
    *obj = json_loadb((const char *)raw, rawlen, JSON_REJECT_DUPLICATES, &jerr);
    free(raw);
    if (*obj && !json_is_object(*obj)) {
        json_decref(*obj);
        *obj = NULL;
    }
    return *obj ? 0 : AT_EINVAL;
}

static int audience_ok(const json_t *aud, const char *want)
{
    size_t i;
    json_t *m;
    if (json_is_string(aud)) return strcmp(json_string_value(aud), want) == 0;
    if (!json_is_array(aud)) return 0;
    json_array_foreach(aud, i, m)
    {
        if (json_is_string(m) && strcmp(json_string_value(m), want) == 0) return 1;
    }
    return 0;
}

int at_jwt_verify(const at_jwt_verifier *v, const char *token, int64_t now, json_t **claims,
                  char *why, size_t whylen)
{
    int rc = 0;
    size_t tlen, hlen, plen, slen;
    const char *d1, *d2, *alg;
    json_t *header = NULL, *payload = NULL, *exp, *nbf;
    unsigned char *sig = NULL;
    size_t siglen = 0;

    *claims = NULL;
    if (why && whylen) why[0] = '\0';
    if (!v || !token) return say(why, whylen, AT_EINVAL, "no token");
    tlen = strnlen(token, AT_JWT_MAX_LEN + 1);
    if (tlen > AT_JWT_MAX_LEN) return say(why, whylen, AT_EINVAL, "token too long");
    d1 = memchr(token, '.', tlen);
    d2 = d1 ? memchr(d1 + 1, '.', tlen - (size_t)(d1 + 1 - token)) : NULL;
    if (!d2 || memchr(d2 + 1, '.', tlen - (size_t)(d2 + 1 - token)))
        return say(why, whylen, AT_EINVAL, "token is not three dot-separated parts");
    hlen = (size_t)(d1 - token);
    plen = (size_t)(d2 - d1 - 1);
    slen = tlen - (size_t)(d2 + 1 - token);
    if (!hlen || !plen || !slen) return say(why, whylen, AT_EINVAL, "token has an empty part");

    rc = part_object(token, hlen, &header);
    if (rc) {
        if (rc == AT_EINVAL) say(why, whylen, rc, "token header is not base64url JSON");
        goto out;
    }
    alg = json_string_value(json_object_get(header, "alg"));
    if (!alg) {
        rc = say(why, whylen, AT_EINVAL, "token header has no alg");
        goto out;
    }
    if (strcasecmp(alg, "none") == 0) {
        rc = say(why, whylen, AT_EINVAL, "unsigned token (alg none) refused");
        goto out;
    }
    if (strcmp(alg, alg_names[v->alg]) != 0) {
        rc = say(why, whylen, AT_EINVAL, "token algorithm is not the configured %s",
                 alg_names[v->alg]);
        goto out;
    }
    if (json_object_get(header, "crit")) { /* RFC 7515 §4.1.11: we understand none */
        rc = say(why, whylen, AT_EINVAL, "token header has unsupported crit extensions");
        goto out;
    }
    rc = at_b64_decode(d2 + 1, slen, AT_B64_JWT, &sig, &siglen);
    if (rc) {
        if (rc != AT_ENOMEM) rc = say(why, whylen, AT_EINVAL, "token signature is not base64url");
        goto out;
    }
    if (!signature_ok(v, token, (size_t)(d2 - token), sig, siglen)) {
        rc = say(why, whylen, AT_EINVAL, "bad token signature");
        goto out;
    }

    rc = part_object(d1 + 1, plen, &payload);
    if (rc) {
        if (rc == AT_EINVAL) say(why, whylen, rc, "token payload is not base64url JSON");
        goto out;
    }
    exp = json_object_get(payload, "exp");
    if (!exp) {
        rc = say(why, whylen, AT_EINVAL, "token has no exp");
        goto out;
    }
    if (!json_is_number(exp)) {
        rc = say(why, whylen, AT_EINVAL, "token exp is not a number");
        goto out;
    }
    /* Compared as doubles: exact for any real epoch second, and no integer overflow. */
    if ((double)now > json_number_value(exp) + AT_JWT_LEEWAY) {
        rc = say(why, whylen, AT_EINVAL, "token expired");
        goto out;
    }
    nbf = json_object_get(payload, "nbf");
    if (nbf && !json_is_number(nbf)) {
        rc = say(why, whylen, AT_EINVAL, "token nbf is not a number");
        goto out;
    }
    if (nbf && json_number_value(nbf) > (double)now + AT_JWT_LEEWAY) {
        rc = say(why, whylen, AT_EINVAL, "token not valid yet (nbf)");
        goto out;
    }
    if (v->issuer) {
        const char *iss = json_string_value(json_object_get(payload, "iss"));
        if (!iss || strcmp(iss, v->issuer) != 0) {
            rc = say(why, whylen, AT_EINVAL, "token issuer is not the configured one");
            goto out;
        }
    }
    if (v->audience && !audience_ok(json_object_get(payload, "aud"), v->audience)) {
        rc = say(why, whylen, AT_EINVAL, "token audience does not include the configured one");
        goto out;
    }
    *claims = payload;
    payload = NULL;
out:
    json_decref(header);
    json_decref(payload);
    free(sig);
    return rc;
}

/* ---- signing --------------------------------------------------------------------- */

/* Appends base64url(data) to b. */
static int add_b64(at_buf *b, const void *data, size_t len)
{
    size_t n = 0;
    char *e = at_b64_encode(data, len, AT_B64_JWT, &n);
    int rc = e ? at_buf_add(b, e, n) : AT_ENOMEM;
    free(e);
    return rc;
}

/* Writes "base64url(header).base64url(claims)" into b. */
static int signing_input(at_buf *b, const char *alg, const json_t *claims)
{
    int rc;
    char header[64];
    char *payload;

    if (!json_is_object(claims)) return AT_EINVAL;
    snprintf(header, sizeof header, "{\"alg\":\"%s\",\"typ\":\"JWT\"}", alg);
    payload = json_dumps(claims, JSON_COMPACT);
    if (!payload) return AT_ENOMEM;
    rc = add_b64(b, header, strlen(header));
    if (!rc) rc = at_buf_addc(b, '.');
    if (!rc) rc = add_b64(b, payload, strlen(payload));
    free(payload);
    return rc;
}

/* Appends "." and the signature, and hands the token over. */
static char *finish(at_buf *b, const unsigned char *sig, size_t siglen)
{
    if (at_buf_addc(b, '.') || add_b64(b, sig, siglen)) return NULL;
    return at_buf_take(b, NULL);
}

char *at_jwt_sign_hs256(const char *secret, const json_t *claims)
{
    at_buf b;
    unsigned char mac[EVP_MAX_MD_SIZE];
    unsigned int maclen = 0;
    char *token = NULL;

    at_buf_init(&b, SIGN_MAX);
    if (!secret || !*secret || strlen(secret) > INT_MAX) goto out;
    if (signing_input(&b, "HS256", claims)) goto out;
    if (!HMAC(EVP_sha256(), secret, (int)strlen(secret), (const unsigned char *)b.ptr, b.len, mac,
              &maclen))
        goto out;
    token = finish(&b, mac, maclen);
out:
    OPENSSL_cleanse(mac, sizeof mac);
    at_buf_release(&b);
    ERR_clear_error();
    return token;
}

char *at_jwt_sign_pem(const char *private_key_pem, const char *alg, const json_t *claims)
{
    at_buf b;
    BIO *bio = NULL;
    EVP_PKEY *pkey = NULL;
    EVP_MD_CTX *ctx = NULL;
    unsigned char *sig = NULL;
    size_t siglen = 0;
    ECDSA_SIG *es = NULL;
    unsigned char raw[2 * ES256_PART];
    alg_kind want, have;
    char *token = NULL;

    at_buf_init(&b, SIGN_MAX);
    if (!private_key_pem || !alg) goto out;
    if (strcmp(alg, "RS256") == 0)
        want = ALG_RS256;
    else if (strcmp(alg, "ES256") == 0)
        want = ALG_ES256;
    else
        goto out;
    bio = BIO_new_mem_buf(private_key_pem, -1);
    if (!bio) goto out;
    pkey = PEM_read_bio_PrivateKey(bio, NULL, NULL, NULL);
    if (!pkey || key_alg(pkey, "key", &have, NULL, 0) || have != want) goto out;
    if (signing_input(&b, alg, claims)) goto out;
    ctx = EVP_MD_CTX_new();
    if (!ctx || EVP_DigestSignInit(ctx, NULL, EVP_sha256(), NULL, pkey) != 1) goto out;
    if (EVP_DigestSign(ctx, NULL, &siglen, (const unsigned char *)b.ptr, b.len) != 1) goto out;
    sig = OPENSSL_malloc(siglen);
    if (!sig || EVP_DigestSign(ctx, sig, &siglen, (const unsigned char *)b.ptr, b.len) != 1)
        goto out;
    if (want == ALG_ES256) {
        const unsigned char *p = sig;
        const BIGNUM *r, *s;
        es = d2i_ECDSA_SIG(NULL, &p, (long)siglen);
        if (!es) goto out;
        ECDSA_SIG_get0(es, &r, &s);
        if (BN_bn2binpad(r, raw, ES256_PART) != ES256_PART ||
            BN_bn2binpad(s, raw + ES256_PART, ES256_PART) != ES256_PART)
            goto out;
        token = finish(&b, raw, sizeof raw);
    } else {
        token = finish(&b, sig, siglen);
    }
out:
    ECDSA_SIG_free(es);
    OPENSSL_free(sig);
    EVP_MD_CTX_free(ctx);
    EVP_PKEY_free(pkey);
    BIO_free(bio);
    at_buf_release(&b);
    ERR_clear_error();
    return token;
}
