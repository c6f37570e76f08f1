/* Unit tests of src/http/jwt.c. Keys are generated in-process; the key-file cases write
 * them into a temporary directory that the tests remove. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <openssl/bio.h>
#include <openssl/bn.h>
#include <openssl/ec.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/pem.h>
#include <openssl/x509.h>

#include "actionstools/b64.h"
#include "actionstools/err.h"
#include "actionstools/jwt.h"
#include "actionstools/banned.h"

#define NOW ((int64_t)1700000000)
#define SECRET "test-secret-0123456789-abcdefghijklmnop"

typedef struct keys {
    char *rsa_priv, *rsa_pub;
    char *ec_priv, *ec_pub;
    char dir[64]; /* temporary directory for key files */
} keys;

static keys K;

/* ---- helpers --------------------------------------------------------------------- */

static char *pem_of(EVP_PKEY *pkey, int private_key)
{
    BIO *bio = BIO_new(BIO_s_mem());
    char *p = NULL, *out;
    long n;
    assert_non_null(bio);
    if (private_key)
        assert_int_equal(PEM_write_bio_PrivateKey(bio, pkey, NULL, NULL, 0, NULL, NULL), 1);
    else
        assert_int_equal(PEM_write_bio_PUBKEY(bio, pkey), 1);
    n = BIO_get_mem_data(bio, &p);
    out = strndup(p, (size_t)n);
    assert_non_null(out);
    BIO_free(bio);
    return out;
}

static char *write_file(const char *name, const char *text)
{
    char *path = NULL;
    FILE *f;
    assert_true(asprintf(&path, "%s/%s", K.dir, name) > 0);
    f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
    return path;
}

static int group_setup(void **state)
{
    EVP_PKEY *rsa = EVP_PKEY_Q_keygen(NULL, NULL, "RSA", (size_t)2048);
    EVP_PKEY *ec = EVP_PKEY_Q_keygen(NULL, NULL, "EC", "P-256");
    (void)state;
    if (!rsa || !ec) return -1;
    K.rsa_priv = pem_of(rsa, 1);
    K.rsa_pub = pem_of(rsa, 0);
    K.ec_priv = pem_of(ec, 1);
    K.ec_pub = pem_of(ec, 0);
    EVP_PKEY_free(rsa);
    EVP_PKEY_free(ec);
    snprintf(K.dir, sizeof K.dir, "/tmp/at_test_jwt.XXXXXX");
    return mkdtemp(K.dir) ? 0 : -1;
}

static int group_teardown(void **state)
{
    char *cmd = NULL;
    (void)state;
    free(K.rsa_priv);
    free(K.rsa_pub);
    free(K.ec_priv);
    free(K.ec_pub);
    if (asprintf(&cmd, "rm -rf '%s'", K.dir) > 0 && system(cmd) != 0)
        fprintf(stderr, "rm failed\n");
    free(cmd);
    return 0;
}

static at_jwt_verifier *verifier(const at_jwt_config *cfg)
{
    at_jwt_verifier *v = NULL;
    char why[256];
    int rc = at_jwt_verifier_new(cfg, &v, why, sizeof why);
    if (rc) fail_msg("verifier: %s", why);
    return v;
}

static at_jwt_verifier *hs_verifier(void)
{
    at_jwt_config cfg = {.secret = SECRET};
    return verifier(&cfg);
}

static at_jwt_verifier *pem_verifier(const char *pem)
{
    at_jwt_config cfg = {.public_key_pem = pem};
    return verifier(&cfg);
}

/* The usual claims with the given exp. */
static json_t *claims_exp(int64_t exp)
{
    json_t *c = json_pack("{s:s, s:s, s:s, s:[s], s:I}", "sub", "u-1", "name", "Ada", "instance_id",
                          "tenant-1", "roles", "CRM_ADMIN", "exp", (json_int_t)exp);
    assert_non_null(c);
    return c;
}

/* Verifies and checks the outcome; on success checks sub and frees the claims. The
 * reason must never quote the secret. Returns the reason (static buffer). */
static const char *check(const at_jwt_verifier *v, const char *token, int64_t now, int want_ok)
{
    static char why[256];
    json_t *claims = (json_t *)1;
    int rc = at_jwt_verify(v, token, now, &claims, why, sizeof why);
    if (want_ok && rc) fail_msg("refused: %s", why);
    if (!want_ok && !rc) fail_msg("accepted a token that should be refused");
    if (rc) {
        assert_int_equal(rc, AT_EINVAL);
        assert_null(claims);
        assert_true(why[0] != '\0');
        assert_null(strstr(why, SECRET));
    } else {
        assert_string_equal(json_string_value(json_object_get(claims, "sub")), "u-1");
        json_decref(claims);
    }
    return why;
}

static char *b64url(const void *p, size_t n)
{
    char *e = at_b64_encode(p, n, AT_B64_JWT, NULL);
    assert_non_null(e);
    return e;
}

/* Builds header.payload.signature from JSON texts; with secret, the signature is a
 * real HMAC-SHA256 under it (whatever the header says), else sig/siglen as given. */
static char *craft(const char *header, const char *payload, const char *secret,
                   const unsigned char *sig, size_t siglen)
{
    char *h = b64url(header, strlen(header)), *p = b64url(payload, strlen(payload));
    char *input = NULL, *s, *token = NULL;
    unsigned char mac[32];
    unsigned int maclen = 0;
    assert_true(asprintf(&input, "%s.%s", h, p) > 0);
    if (secret) {
        assert_non_null(HMAC(EVP_sha256(), secret, (int)strlen(secret),
                             (const unsigned char *)input, strlen(input), mac, &maclen));
        sig = mac;
        siglen = maclen;
    }
    s = b64url(sig, siglen);
    assert_true(asprintf(&token, "%s.%s", input, s) > 0);
    free(h);
    free(p);
    free(s);
    free(input);
    return token;
}

/* Returns the decoded signature part of token (caller frees), length in *n. */
static unsigned char *sig_of(const char *token, size_t *n)
{
    const char *dot = strrchr(token, '.');
    unsigned char *sig = NULL;
    assert_non_null(dot);
    assert_int_equal(at_b64_decode(dot + 1, strlen(dot + 1), AT_B64_JWT, &sig, n), 0);
    return sig;
}

/* Returns token with its signature part replaced by sig. */
static char *with_sig(const char *token, const unsigned char *sig, size_t n)
{
    const char *dot = strrchr(token, '.');
    char *s = b64url(sig, n), *out = NULL;
    assert_true(asprintf(&out, "%.*s.%s", (int)(dot - token), token, s) > 0);
    free(s);
    return out;
}

/* ---- good tokens ----------------------------------------------------------------- */

static void test_hs256_good(void **state)
{
    at_jwt_verifier *v = hs_verifier();
    json_t *c = claims_exp(NOW + 3600), *got = NULL;
    char *t = at_jwt_sign_hs256(SECRET, c);
    char why[128];
    (void)state;
    assert_non_null(t);
    assert_string_equal(at_jwt_verifier_alg(v), "HS256");
    assert_int_equal(at_jwt_verify(v, t, NOW, &got, why, sizeof why), 0);
    assert_string_equal(why, "");
    assert_true(json_equal(got, c));
    json_decref(got);
    /* why may be NULL */
    assert_int_equal(at_jwt_verify(v, t, NOW, &got, NULL, 0), 0);
    json_decref(got);
    free(t);
    json_decref(c);
    at_jwt_verifier_free(v);
    at_jwt_verifier_free(NULL);
}

/* The well-known example token of jwt.io, made by another implementation: its
 * signature checks (so the refusal is about exp), and fails under another secret. */
static void test_hs256_interop_vector(void **state)
{
    static const char tok[] =
        "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9."
        "eyJzdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6IkpvaG4gRG9lIiwiaWF0IjoxNTE2MjM5MDIyfQ."
        "SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c";
    at_jwt_config cfg = {.secret = "your-256-bit-secret"};
    at_jwt_verifier *v = verifier(&cfg);
    (void)state;
    assert_string_equal(check(v, tok, NOW, 0), "token has no exp");
    at_jwt_verifier_free(v);
    v = hs_verifier();
    assert_string_equal(check(v, tok, NOW, 0), "bad token signature");
    at_jwt_verifier_free(v);
}

static void test_rs256_good(void **state)
{
    char *path = write_file("rsa.pem", K.rsa_pub);
    at_jwt_config cfg = {.public_key_file = path};
    at_jwt_verifier *vf = verifier(&cfg), *vp = pem_verifier(K.rsa_pub);
    json_t *c = claims_exp(NOW + 60);
    char *t = at_jwt_sign_pem(K.rsa_priv, "RS256", c);
    size_t n = 0;
    unsigned char *sig;
    (void)state;
    assert_non_null(t);
    assert_string_equal(at_jwt_verifier_alg(vf), "RS256");
    sig = sig_of(t, &n);
    assert_int_equal(n, 256);
    free(sig);
    check(vf, t, NOW, 1);
    check(vp, t, NOW, 1);
    free(t);
    json_decref(c);
    at_jwt_verifier_free(vf);
    at_jwt_verifier_free(vp);
    unlink(path);
    free(path);
}

static void test_es256_good_and_raw_signature_only(void **state)
{
    char *path = write_file("ec.pem", K.ec_pub);
    at_jwt_config cfg = {.public_key_file = path};
    at_jwt_verifier *v = verifier(&cfg);
    json_t *c = claims_exp(NOW + 60);
    char *t = at_jwt_sign_pem(K.ec_priv, "ES256", c), *bad;
    size_t n = 0;
    unsigned char *raw, *der = NULL, longer[65];
    ECDSA_SIG *es;
    BIGNUM *r, *s;
    int dlen;
    (void)state;
    assert_non_null(t);
    assert_string_equal(at_jwt_verifier_alg(v), "ES256");
    check(v, t, NOW, 1);
    raw = sig_of(t, &n);
    assert_int_equal(n, 64); /* raw R || S */

    /* The same signature in DER (what OpenSSL makes) is refused: JWS wants R || S. */
    es = ECDSA_SIG_new();
    r = BN_bin2bn(raw, 32, NULL);
    s = BN_bin2bn(raw + 32, 32, NULL);
    assert_int_equal(ECDSA_SIG_set0(es, r, s), 1);
    dlen = i2d_ECDSA_SIG(es, &der);
    assert_true(dlen > 0);
    bad = with_sig(t, der, (size_t)dlen);
    assert_string_equal(check(v, bad, NOW, 0), "bad token signature");
    free(bad);
    OPENSSL_free(der);
    ECDSA_SIG_free(es);

    /* 63 or 65 bytes, S and R swapped, S zero: refused. */
    bad = with_sig(t, raw, 63);
    check(v, bad, NOW, 0);
    free(bad);
    memcpy(longer, raw, 64);
    longer[64] = 0;
    bad = with_sig(t, longer, 65);
    check(v, bad, NOW, 0);
    free(bad);
    memcpy(longer, raw + 32, 32);
    memcpy(longer + 32, raw, 32);
    bad = with_sig(t, longer, 64);
    check(v, bad, NOW, 0);
    free(bad);
    memcpy(longer, raw, 32);
    memset(longer + 32, 0, 32);
    bad = with_sig(t, longer, 64);
    check(v, bad, NOW, 0);
    free(bad);

    free(raw);
    free(t);
    json_decref(c);
    at_jwt_verifier_free(v);
    unlink(path);
    free(path);
}

/* A certificate's public key is accepted too (identity providers often hand those out). */
static void test_key_from_certificate(void **state)
{
    BIO *bio = BIO_new_mem_buf(K.ec_priv, -1);
    EVP_PKEY *pkey = PEM_read_bio_PrivateKey(bio, NULL, NULL, NULL);
    X509 *x = X509_new();
    BIO *out = BIO_new(BIO_s_mem());
    char *pem, *p = NULL, *t;
    long n;
    json_t *c = claims_exp(NOW + 60);
    at_jwt_verifier *v;
    (void)state;
    assert_non_null(pkey);
    ASN1_INTEGER_set(X509_get_serialNumber(x), 1);
    X509_gmtime_adj(X509_getm_notBefore(x), 0);
    X509_gmtime_adj(X509_getm_notAfter(x), 3600);
    X509_set_pubkey(x, pkey);
    X509_NAME_add_entry_by_txt(X509_get_subject_name(x), "CN", MBSTRING_ASC,
                               (const unsigned char *)"test", -1, -1, 0);
    X509_set_issuer_name(x, X509_get_subject_name(x));
    assert_true(X509_sign(x, pkey, EVP_sha256()) > 0);
    assert_int_equal(PEM_write_bio_X509(out, x), 1);
    n = BIO_get_mem_data(out, &p);
    pem = strndup(p, (size_t)n);
    v = pem_verifier(pem);
    assert_string_equal(at_jwt_verifier_alg(v), "ES256");
    t = at_jwt_sign_pem(K.ec_priv, "ES256", c);
    check(v, t, NOW, 1);
    free(t);
    free(pem);
    at_jwt_verifier_free(v);
    json_decref(c);
    BIO_free(out);
    X509_free(x);
    EVP_PKEY_free(pkey);
    BIO_free(bio);
}

/* ---- refused tokens -------------------------------------------------------------- */

static void test_alg_none(void **state)
{
    static const char *const algs[] = {"none", "None", "NONE", "nOnE"};
    static const char payload[] = "{\"sub\":\"u-1\",\"exp\":1700003600}";
    at_jwt_verifier *hs = hs_verifier(), *rs = pem_verifier(K.rsa_pub);
    (void)state;
    for (size_t i = 0; i < sizeof algs / sizeof algs[0]; i++) {
        char header[64], *t, *h, *p, *unsigned_tok = NULL;
        snprintf(header, sizeof header, "{\"alg\":\"%s\",\"typ\":\"JWT\"}", algs[i]);
        /* the unsecured form: empty signature */
        h = b64url(header, strlen(header));
        p = b64url(payload, strlen(payload));
        assert_true(asprintf(&unsigned_tok, "%s.%s.", h, p) > 0);
        check(hs, unsigned_tok, NOW, 0);
        check(rs, unsigned_tok, NOW, 0);
        free(unsigned_tok);
        free(h);
        free(p);
        /* with a signature that would be a good HMAC under the secret */
        t = craft(header, payload, SECRET, NULL, 0);
        assert_string_equal(check(hs, t, NOW, 0), "unsigned token (alg none) refused");
        assert_string_equal(check(rs, t, NOW, 0), "unsigned token (alg none) refused");
        free(t);
    }
    at_jwt_verifier_free(hs);
    at_jwt_verifier_free(rs);
}

/* The classic key confusion: an HS256 token whose HMAC key is the server's public key
 * (which is public) must not pass an RS256/ES256 verifier; and the reverse. */
static void test_wrong_alg_key_confusion(void **state)
{
    at_jwt_verifier *hs = hs_verifier(), *rs = pem_verifier(K.rsa_pub),
                    *es = pem_verifier(K.ec_pub);
    json_t *c = claims_exp(NOW + 60);
    char *hs_with_rsa_pub = at_jwt_sign_hs256(K.rsa_pub, c);
    char *hs_with_ec_pub = at_jwt_sign_hs256(K.ec_pub, c);
    char *hs_tok = at_jwt_sign_hs256(SECRET, c);
    char *rs_tok = at_jwt_sign_pem(K.rsa_priv, "RS256", c);
    char *es_tok = at_jwt_sign_pem(K.ec_priv, "ES256", c);
    char *t;
    (void)state;
    assert_string_equal(check(rs, hs_with_rsa_pub, NOW, 0),
                        "token algorithm is not the configured RS256");
    assert_string_equal(check(es, hs_with_ec_pub, NOW, 0),
                        "token algorithm is not the configured ES256");
    check(rs, hs_tok, NOW, 0);
    check(es, hs_tok, NOW, 0);
    assert_string_equal(check(hs, rs_tok, NOW, 0), "token algorithm is not the configured HS256");
    check(hs, es_tok, NOW, 0);
    check(rs, es_tok, NOW, 0);
    check(es, rs_tok, NOW, 0);

    /* Header says RS256 but the signature is an HMAC keyed with the public key. */
    t = craft("{\"alg\":\"RS256\",\"typ\":\"JWT\"}", "{\"sub\":\"u-1\",\"exp\":1700003600}",
              K.rsa_pub, NULL, 0);
    assert_string_equal(check(rs, t, NOW, 0), "bad token signature");
    free(t);
    /* Algorithm names are case-sensitive (RFC 7515). */
    t = craft("{\"alg\":\"hs256\"}", "{\"sub\":\"u-1\",\"exp\":1700003600}", SECRET, NULL, 0);
    check(hs, t, NOW, 0);
    free(t);
    t = craft("{\"alg\":\"HS512\"}", "{\"sub\":\"u-1\",\"exp\":1700003600}", SECRET, NULL, 0);
    check(hs, t, NOW, 0);
    free(t);
    /* the control: the same crafting with HS256 passes */
    t = craft("{\"alg\":\"HS256\"}", "{\"sub\":\"u-1\",\"exp\":1700003600}", SECRET, NULL, 0);
    check(hs, t, NOW, 1);
    free(t);

    free(hs_with_rsa_pub);
    free(hs_with_ec_pub);
    free(hs_tok);
    free(rs_tok);
    free(es_tok);
    json_decref(c);
    at_jwt_verifier_free(hs);
    at_jwt_verifier_free(rs);
    at_jwt_verifier_free(es);
}

static void flip_and_check(const at_jwt_verifier *v, const char *token)
{
    size_t n = 0;
    unsigned char *sig = sig_of(token, &n);
    char *t;
    sig[n / 2] ^= 0x01;
    t = with_sig(token, sig, n);
    assert_string_equal(check(v, t, NOW, 0), "bad token signature");
    free(t);
    t = with_sig(token, sig, n - 1); /* truncated */
    check(v, t, NOW, 0);
    free(t);
    free(sig);
}

static void test_bad_signature(void **state)
{
    at_jwt_verifier *hs = hs_verifier(), *rs = pem_verifier(K.rsa_pub),
                    *es = pem_verifier(K.ec_pub);
    json_t *c = claims_exp(NOW + 60);
    char *hs_tok = at_jwt_sign_hs256(SECRET, c), *other = at_jwt_sign_hs256("another", c);
    char *rs_tok = at_jwt_sign_pem(K.rsa_priv, "RS256", c);
    char *es_tok = at_jwt_sign_pem(K.ec_priv, "ES256", c);
    EVP_PKEY *k2 = EVP_PKEY_Q_keygen(NULL, NULL, "EC", "P-256");
    char *k2pem = pem_of(k2, 1), *es_other = at_jwt_sign_pem(k2pem, "ES256", c);
    (void)state;
    flip_and_check(hs, hs_tok);
    flip_and_check(rs, rs_tok);
    flip_and_check(es, es_tok);
    assert_string_equal(check(hs, other, NOW, 0), "bad token signature");
    assert_string_equal(check(es, es_other, NOW, 0), "bad token signature");
    free(hs_tok);
    free(other);
    free(rs_tok);
    free(es_tok);
    free(es_other);
    free(k2pem);
    EVP_PKEY_free(k2);
    json_decref(c);
    at_jwt_verifier_free(hs);
    at_jwt_verifier_free(rs);
    at_jwt_verifier_free(es);
}

/* Any change of any one character of a good token is refused. */
static void test_tampered_payload(void **state)
{
    at_jwt_verifier *hs = hs_verifier();
    json_t *c = claims_exp(NOW + 60), *other = claims_exp(NOW + 60);
    char *t = at_jwt_sign_hs256(SECRET, c), *t2, *spliced = NULL;
    const char *d1 = strchr(t, '.'), *d2 = strrchr(t, '.'), *e1, *e2;
    size_t len = strlen(t);
    (void)state;
    for (size_t i = 0; i < len; i++) {
        static const char repl[] = "Aa0-_.=+/ ";
        for (const char *r = repl; *r; r++) {
            char saved = t[i];
            if (*r == saved) continue;
            t[i] = *r;
            check(hs, t, NOW, 0);
            t[i] = saved;
        }
    }
    check(hs, t, NOW, 1);
    /* The payload of another validly signed token under this token's signature. */
    json_object_set_new(other, "sub", json_string("u-2"));
    t2 = at_jwt_sign_hs256(SECRET, other);
    e1 = strchr(t2, '.');
    e2 = strrchr(t2, '.');
    assert_true(asprintf(&spliced, "%.*s%.*s%s", (int)(d1 - t), t, (int)(e2 - e1), e1, d2) > 0);
    assert_string_equal(check(hs, spliced, NOW, 0), "bad token signature");
    free(spliced);
    free(t);
    free(t2);
    json_decref(c);
    json_decref(other);
    at_jwt_verifier_free(hs);
}

static void test_exp(void **state)
{
    at_jwt_verifier *hs = hs_verifier();
    json_t *c;
    char *t;
    (void)state;
    /* exp 61 s past: refused; 60 and 59 s past: accepted (60 s leeway). */
    c = claims_exp(NOW - 61);
    t = at_jwt_sign_hs256(SECRET, c);
    assert_string_equal(check(hs, t, NOW, 0), "token expired");
    free(t);
    json_decref(c);
    c = claims_exp(NOW - 60);
    t = at_jwt_sign_hs256(SECRET, c);
    check(hs, t, NOW, 1);
    free(t);
    json_decref(c);
    c = claims_exp(NOW - 59);
    t = at_jwt_sign_hs256(SECRET, c);
    check(hs, t, NOW, 1);
    check(hs, t, NOW + 1, 1); /* exactly exp + 60 */
    check(hs, t, NOW + 2, 0);
    free(t);
    json_decref(c);

    /* missing or not a number */
    t = craft("{\"alg\":\"HS256\"}", "{\"sub\":\"u-1\"}", SECRET, NULL, 0);
    assert_string_equal(check(hs, t, NOW, 0), "token has no exp");
    free(t);
    {
        static const char *const bad[] = {"\"1800000000\"", "true", "null", "[1800000000]", "{}"};
        for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
            char payload[128];
            snprintf(payload, sizeof payload, "{\"sub\":\"u-1\",\"exp\":%s}", bad[i]);
            t = craft("{\"alg\":\"HS256\"}", payload, SECRET, NULL, 0);
            assert_string_equal(check(hs, t, NOW, 0), "token exp is not a number");
            free(t);
        }
    }
    /* A fractional NumericDate is a number; extremes do not overflow. */
    t = craft("{\"alg\":\"HS256\"}", "{\"sub\":\"u-1\",\"exp\":1700000000.5}", SECRET, NULL, 0);
    check(hs, t, NOW, 1);
    free(t);
    t = craft("{\"alg\":\"HS256\"}", "{\"sub\":\"u-1\",\"exp\":9223372036854775807}", SECRET, NULL,
              0);
    check(hs, t, NOW, 1);
    free(t);
    t = craft("{\"alg\":\"HS256\"}", "{\"sub\":\"u-1\",\"exp\":-9223372036854775808}", SECRET, NULL,
              0);
    check(hs, t, NOW, 0);
    free(t);
    t = craft("{\"alg\":\"HS256\"}", "{\"sub\":\"u-1\",\"exp\":1e308}", SECRET, NULL, 0);
    check(hs, t, NOW, 1);
    free(t);
    at_jwt_verifier_free(hs);
}

static void test_nbf(void **state)
{
    at_jwt_verifier *hs = hs_verifier();
    json_t *c = claims_exp(NOW + 3600);
    char *t;
    (void)state;
    json_object_set_new(c, "nbf", json_integer(NOW + 61));
    t = at_jwt_sign_hs256(SECRET, c);
    assert_string_equal(check(hs, t, NOW, 0), "token not valid yet (nbf)");
    check(hs, t, NOW + 1, 1);
    free(t);
    json_object_set_new(c, "nbf", json_integer(NOW + 59));
    t = at_jwt_sign_hs256(SECRET, c);
    check(hs, t, NOW, 1);
    free(t);
    json_object_set_new(c, "nbf", json_integer(NOW - 1000));
    t = at_jwt_sign_hs256(SECRET, c);
    check(hs, t, NOW, 1);
    free(t);
    json_object_set_new(c, "nbf", json_string("soon"));
    t = at_jwt_sign_hs256(SECRET, c);
    assert_string_equal(check(hs, t, NOW, 0), "token nbf is not a number");
    free(t);
    json_object_set_new(c, "nbf", json_integer(INT64_MAX));
    t = at_jwt_sign_hs256(SECRET, c);
    check(hs, t, NOW, 0);
    free(t);
    json_decref(c);
    at_jwt_verifier_free(hs);
}

static char *with_iss_aud(const char *iss, json_t *aud /* stolen, may be NULL */)
{
    json_t *c = claims_exp(NOW + 60);
    char *t;
    if (iss) json_object_set_new(c, "iss", json_string(iss));
    if (aud) json_object_set_new(c, "aud", aud);
    t = at_jwt_sign_hs256(SECRET, c);
    json_decref(c);
    return t;
}

static void test_iss_aud(void **state)
{
    static const char ISS[] = "https://id.example.com/", AUD[] = "actionstools";
    at_jwt_config cfg = {.secret = SECRET, .issuer = ISS, .audience = AUD};
    at_jwt_verifier *v = verifier(&cfg), *plain = hs_verifier();
    struct {
        const char *iss;
        json_t *aud;
        int ok;
        const char *why;
    } cases[] = {
        {ISS, json_string(AUD), 1, NULL},
        {ISS, json_pack("[s,s]", "other", AUD), 1, NULL},
        {ISS, json_pack("[s]", "other"), 0, "token audience does not include the configured one"},
        {ISS, json_pack("[]"), 0, NULL},
        {ISS, json_string("actionstools2"), 0, NULL},
        {ISS, json_integer(1), 0, NULL},
        {ISS, json_pack("[i]", 1), 0, NULL},
        {ISS, NULL, 0, "token audience does not include the configured one"},
        {"https://evil.example.com/", json_string(AUD), 0,
         "token issuer is not the configured one"},
        {"https://id.example.com", json_string(AUD), 0, NULL},
        {NULL, json_string(AUD), 0, "token issuer is not the configured one"},
    };
    (void)state;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char *t = with_iss_aud(cases[i].iss, cases[i].aud);
        const char *why = check(v, t, NOW, cases[i].ok);
        if (cases[i].why) assert_string_equal(why, cases[i].why);
        /* Without issuer and audience configured, neither is looked at. */
        check(plain, t, NOW, 1);
        free(t);
    }
    {
        /* iss of another type */
        char *t = craft("{\"alg\":\"HS256\"}",
                        "{\"sub\":\"u-1\",\"exp\":1700003600,\"iss\":1,\"aud\":\"actionstools\"}",
                        SECRET, NULL, 0);
        check(v, t, NOW, 0);
        free(t);
    }
    at_jwt_verifier_free(v);
    at_jwt_verifier_free(plain);
}

static void test_malformed(void **state)
{
    static const char *const junk[] = {
        "",
        "abc",
        "a.b",
        "a.b.c.d",
        "...",
        ".eyJ9.c2ln",
        "eyJhbGciOiJIUzI1NiJ9..c2ln",
        "eyJhbGciOiJIUzI1NiJ9.eyJ9.",
        "!!!.eyJ9.c2ln",
        "eyJhbGciOiJIUzI1NiJ9.!!!.c2ln",
        "eyJhbGciOiJIUzI1NiJ9.eyJ9.!!!",
        "eyJhbGciOiJIUzI1NiJ9=.eyJ9.c2ln",
        " eyJhbGciOiJIUzI1NiJ9.eyJ9.c2ln",
        "Bearer eyJhbGciOiJIUzI1NiJ9.eyJ9.c2ln",
        "eyJhbGciOiJIUzI1NiJ9.eyJ9.c2ln\n",
    };
    static const char *const headers[] = {
        "not json",
        "[\"alg\",\"HS256\"]",
        "{}",
        "{\"alg\":256}",
        "{\"alg\":null}",
        "{\"alg\":\"HS256\",\"alg\":\"HS256\"}",
        "{\"alg\":\"HS256\"} x",
        "\"HS256\"",
        "{\"alg\":\"HS256\",\"crit\":[\"exp\"]}",
    };
    static const char *const payloads[] = {
        "not json",
        "[1,2]",
        "\"u-1\"",
        "{\"sub\":\"u-1\",\"exp\":1700003600",
        "",
        "{\"sub\":\"u-1\",\"sub\":\"u-2\",\"exp\":1700003600}",
        "{\"sub\":\"u-\\u0000\",\"exp\":1700003600}",
        "{\"sub\":\"u-1\",\"exp\":99999999999999999999999}",
    };
    at_jwt_verifier *hs = hs_verifier();
    json_t *claims = (json_t *)1;
    char why[128];
    (void)state;
    for (size_t i = 0; i < sizeof junk / sizeof junk[0]; i++)
        check(hs, junk[i], NOW, 0);
    for (size_t i = 0; i < sizeof headers / sizeof headers[0]; i++) {
        char *t = craft(headers[i], "{\"sub\":\"u-1\",\"exp\":1700003600}", SECRET, NULL, 0);
        check(hs, t, NOW, 0);
        free(t);
    }
    for (size_t i = 0; i < sizeof payloads / sizeof payloads[0]; i++) {
        char *t = craft("{\"alg\":\"HS256\"}", payloads[i], SECRET, NULL, 0);
        const char *w = check(hs, t, NOW, 0);
        if (payloads[i][0]) assert_string_equal(w, "token payload is not base64url JSON");
        free(t);
    }
    assert_int_equal(at_jwt_verify(hs, NULL, NOW, &claims, why, sizeof why), AT_EINVAL);
    assert_null(claims);
    claims = (json_t *)1;
    assert_int_equal(at_jwt_verify(NULL, "a.b.c", NOW, &claims, why, sizeof why), AT_EINVAL);
    assert_null(claims);
    at_jwt_verifier_free(hs);
}

static void test_oversized(void **state)
{
    at_jwt_verifier *hs = hs_verifier();
    json_t *c = claims_exp(NOW + 60);
    char pad[7000], *t, *huge;
    (void)state;
    memset(pad, 'x', sizeof pad - 1);
    pad[sizeof pad - 1] = '\0';
    /* about 7.5 KB: accepted */
    json_object_set_new(c, "pad", json_stringn(pad, 5600));
    t = at_jwt_sign_hs256(SECRET, c);
    assert_true(strlen(t) > 7000 && strlen(t) <= AT_JWT_MAX_LEN);
    check(hs, t, NOW, 1);
    free(t);
    /* validly signed but over 8 KB: refused before anything else */
    json_object_set_new(c, "pad", json_string(pad));
    t = at_jwt_sign_hs256(SECRET, c);
    assert_true(strlen(t) > AT_JWT_MAX_LEN);
    assert_string_equal(check(hs, t, NOW, 0), "token too long");
    free(t);
    /* a megabyte of junk */
    huge = malloc(1 << 20);
    memset(huge, 'a', (1 << 20) - 1);
    huge[(1 << 20) - 1] = '\0';
    assert_string_equal(check(hs, huge, NOW, 0), "token too long");
    free(huge);
    json_decref(c);
    at_jwt_verifier_free(hs);
}

/* ---- configuration --------------------------------------------------------------- */

static void expect_config_error(const at_jwt_config *cfg, const char *needle)
{
    at_jwt_verifier *v = (at_jwt_verifier *)1;
    char why[512];
    assert_int_equal(at_jwt_verifier_new(cfg, &v, why, sizeof why), AT_EINVAL);
    assert_null(v);
    if (!strstr(why, needle)) fail_msg("\"%s\" does not mention \"%s\"", why, needle);
    if (cfg->secret && cfg->secret[0]) assert_null(strstr(why, cfg->secret));
}

static void test_config(void **state)
{
    at_jwt_config none = {0}, empty = {.secret = "", .public_key_file = ""};
    EVP_PKEY *small = EVP_PKEY_Q_keygen(NULL, NULL, "RSA", (size_t)1024);
    EVP_PKEY *p384 = EVP_PKEY_Q_keygen(NULL, NULL, "EC", "P-384");
    EVP_PKEY *ed = EVP_PKEY_Q_keygen(NULL, NULL, "ED25519");
    char *small_pem = pem_of(small, 0), *p384_pem = pem_of(p384, 0), *ed_pem = pem_of(ed, 0);
    char *garbage = write_file("garbage.pem", "this is not a key\n");
    char *priv = write_file("private.pem", K.rsa_priv);
    char *ed_file = write_file("ed.pem", ed_pem);
    char *rsa_file = write_file("rsa-pub.pem", K.rsa_pub);
    at_jwt_config c = {.secret = "s3cr3t-value"};
    at_jwt_verifier *v = NULL;
    char why[512];
    json_t *claims = claims_exp(NOW + 60);
    char *t;
    (void)state;

    expect_config_error(&none, "AUTH_JWT_SECRET");
    expect_config_error(&empty, "AUTH_JWT_PUBLIC_KEY_FILE");
    c.public_key_file = "/nonexistent/key.pem";
    expect_config_error(&c, "/nonexistent/key.pem");
    expect_config_error(&c, "AUTH_JWT_PUBLIC_KEY_FILE");
    c.public_key_file = garbage;
    expect_config_error(&c, "no PEM public key");
    c.public_key_file = priv;
    expect_config_error(&c, "no PEM public key");
    c.public_key_file = ed_file;
    expect_config_error(&c, "unsupported key type ED25519");
    c.public_key_file = NULL;
    c.public_key_pem = small_pem;
    expect_config_error(&c, "1024 bits");
    c.public_key_pem = p384_pem;
    expect_config_error(&c, "only P-256");

    /* Both a secret and a key file: the key file wins, HS256 tokens are refused, and
     * the note says so. */
    c.public_key_pem = NULL;
    c.public_key_file = rsa_file;
    assert_int_equal(at_jwt_verifier_new(&c, &v, why, sizeof why), 0);
    assert_string_equal(at_jwt_verifier_alg(v), "RS256");
    assert_non_null(strstr(why, "AUTH_JWT_SECRET is ignored"));
    assert_null(strstr(why, c.secret));
    t = at_jwt_sign_hs256(c.secret, claims);
    check(v, t, NOW, 0);
    free(t);
    t = at_jwt_sign_pem(K.rsa_priv, "RS256", claims);
    check(v, t, NOW, 1);
    free(t);
    at_jwt_verifier_free(v);

    json_decref(claims);
    free(small_pem);
    free(p384_pem);
    free(ed_pem);
    EVP_PKEY_free(small);
    EVP_PKEY_free(p384);
    EVP_PKEY_free(ed);
    unlink(garbage);
    unlink(priv);
    unlink(ed_file);
    unlink(rsa_file);
    free(garbage);
    free(priv);
    free(ed_file);
    free(rsa_file);
}

static void test_sign_errors(void **state)
{
    json_t *c = claims_exp(NOW + 60), *arr = json_array();
    (void)state;
    assert_null(at_jwt_sign_hs256(NULL, c));
    assert_null(at_jwt_sign_hs256("", c));
    assert_null(at_jwt_sign_hs256(SECRET, arr));
    assert_null(at_jwt_sign_hs256(SECRET, NULL));
    assert_null(at_jwt_sign_pem(K.rsa_priv, "ES256", c));
    assert_null(at_jwt_sign_pem(K.ec_priv, "RS256", c));
    assert_null(at_jwt_sign_pem(K.rsa_priv, "HS256", c));
    assert_null(at_jwt_sign_pem(K.rsa_priv, "none", c));
    assert_null(at_jwt_sign_pem(K.rsa_pub, "RS256", c));
    assert_null(at_jwt_sign_pem("garbage", "RS256", c));
    assert_null(at_jwt_sign_pem(NULL, "RS256", c));
    assert_null(at_jwt_sign_pem(K.ec_priv, "ES256", arr));
    json_decref(arr);
    json_decref(c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_hs256_good),
        cmocka_unit_test(test_hs256_interop_vector),
        cmocka_unit_test(test_rs256_good),
        cmocka_unit_test(test_es256_good_and_raw_signature_only),
        cmocka_unit_test(test_key_from_certificate),
        cmocka_unit_test(test_alg_none),
        cmocka_unit_test(test_wrong_alg_key_confusion),
        cmocka_unit_test(test_bad_signature),
        cmocka_unit_test(test_tampered_payload),
        cmocka_unit_test(test_exp),
        cmocka_unit_test(test_nbf),
        cmocka_unit_test(test_iss_aud),
        cmocka_unit_test(test_malformed),
        cmocka_unit_test(test_oversized),
        cmocka_unit_test(test_config),
        cmocka_unit_test(test_sign_errors),
    };
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
