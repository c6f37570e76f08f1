/* Signed, scope-bound list cursors. */
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>

#include "actionstools/av.h"
#include "actionstools/b64.h"
#include "actionstools/buf.h"
#include "actionstools/cursor.h"
#include "actionstools/err.h"
#include "actionstools/store.h"
#include "actionstools/banned.h"

static const char label[] = "actionstools list cursor key v1";

int at_cursor_key_derive(at_cursor_key *key, const void *secret, size_t len)
{
    static const unsigned char empty[1];
    at_hmac h;
    int rc;
    at_cursor_key_release(key);
    rc = at_hmac_init(&h, secret && len ? secret : empty, len);
    if (!rc) rc = at_hmac_sha256(&h, label, sizeof label - 1, key->k);
    at_hmac_release(&h);
    if (!rc) rc = at_hmac_init(&key->mac, key->k, sizeof key->k);
    if (rc) {
        at_cursor_key_release(key);
        return AT_EIO;
    }
    return 0;
}

void at_cursor_key_release(at_cursor_key *key)
{
    at_hmac_release(&key->mac);
    OPENSSL_cleanse(key->k, sizeof key->k);
}

/* Reads the stored secret into *secret (a new reference to its text). */
static int read_secret(at_store *s, const json_t *key, json_t **secret)
{
    json_t *item = NULL;
    int rc = at_store_get(s, AT_TABLE_COUNTERS, key, &item);
    *secret = NULL;
    if (!rc) {
        const char *v = at_item_s(item, "secret");
        *secret = v && strlen(v) >= 32 ? json_string(v) : NULL;
        rc = *secret ? 0 : AT_EINVAL;
    }
    json_decref(item);
    return rc;
}

int at_cursor_key_stored(at_store *s, at_cursor_key *key, char *err, size_t errlen)
{
    static const char hex[] = "0123456789abcdef";
    unsigned char raw[32];
    char text[2 * sizeof raw + 1];
    at_clause nx = {"counter_seq_key", AT_OP_NOT_EXISTS, NULL, NULL};
    at_cond cond = {&nx, 1};
    json_t *k = json_pack("{s:{s:s}}", "counter_seq_key", "S", AT_CURSOR_SECRET_ITEM), *item = NULL,
           *secret = NULL;
    int rc = k ? read_secret(s, k, &secret) : AT_ENOMEM;

    if (rc == AT_ENOTFOUND) {
        if (RAND_bytes(raw, sizeof raw) != 1) {
            ERR_clear_error();
            rc = AT_EIO;
            goto out;
        }
        for (size_t i = 0; i < sizeof raw; i++) {
            text[2 * i] = hex[raw[i] >> 4];
            text[2 * i + 1] = hex[raw[i] & 15];
        }
        text[sizeof text - 1] = '\0';
        item = json_pack("{s:{s:s}, s:{s:s}}", "counter_seq_key", "S", AT_CURSOR_SECRET_ITEM, "secret",
                         "S", text);
        rc = item ? at_store_put(s, AT_TABLE_COUNTERS, item, &cond) : AT_ENOMEM;
        /* Written here, or by another server first: either way the stored one is it. */
        if (!rc || rc == AT_ECOND) rc = read_secret(s, k, &secret);
    }
    if (!rc) rc = at_cursor_key_derive(key, json_string_value(secret), json_string_length(secret));
out:
    if (rc)
        snprintf(err, errlen, "CURSOR_SECRET is not set, and the cursor secret kept in the store "
                              "cannot be read or made (%s): %s set CURSOR_SECRET",
                 at_strerror(rc), rc == AT_ENOTABLE ? "run `actionstools setup`, or" : "try again, or");
    OPENSSL_cleanse(raw, sizeof raw);
    OPENSSL_cleanse(text, sizeof text);
    json_decref(k);
    json_decref(item);
    json_decref(secret);
    return rc;
}

/* Computes the truncated MAC of scope "\n" json into mac. Returns 0 or an AT_* code. */
static int cursor_mac(const at_cursor_key *k, const char *scope, const char *json, size_t jlen,
                      unsigned char mac[AT_CURSOR_MAC_LEN])
{
    int rc;
    at_buf msg;
    unsigned char full[AT_HMAC_SHA256_LEN];

    at_buf_init(&msg, 2 * AT_CURSOR_MAX_LEN + strlen(scope) + 1);
    rc = at_buf_adds(&msg, scope);
    if (!rc) rc = at_buf_addc(&msg, '\n');
    if (!rc) rc = at_buf_add(&msg, json, jlen);
    if (rc) goto out;
    if (at_hmac_sha256(&k->mac, msg.ptr, msg.len, full)) {
        rc = AT_EIO;
        goto out;
    }
    memcpy(mac, full, AT_CURSOR_MAC_LEN);
out:
    at_buf_release(&msg);
    return rc;
}

char *at_cursor_encode(const at_cursor_key *k, const char *scope, const json_t *payload)
{
    char *json = NULL, *body = NULL, *tag = NULL, *cursor = NULL;
    size_t jlen, blen = 0, tlen = 0;
    unsigned char mac[AT_CURSOR_MAC_LEN];
    at_buf b;

    at_buf_init(&b, AT_CURSOR_MAX_LEN);
    if (!k || !scope || !json_is_object(payload)) goto out;
    json = json_dumps(payload, JSON_COMPACT);
    if (!json) goto out;
    jlen = strlen(json);
    if (jlen > AT_CURSOR_MAX_LEN) goto out; /* its base64 would be longer still */
    if (cursor_mac(k, scope, json, jlen, mac)) goto out;
    body = at_b64_encode(json, jlen, AT_B64_JWT, &blen);
    tag = at_b64_encode(mac, sizeof mac, AT_B64_JWT, &tlen);
    if (!body || !tag) goto out;
    if (at_buf_add(&b, body, blen) || at_buf_addc(&b, '.') || at_buf_add(&b, tag, tlen)) goto out;
    cursor = at_buf_take(&b, NULL);
out:
    at_buf_release(&b);
    free(json);
    free(body);
    free(tag);
    return cursor;
}

int at_cursor_decode(const at_cursor_key *k, const char *scope, const char *cursor,
                     json_t **payload)
{
    int rc = AT_EINVAL;
    size_t len, blen, jlen = 0, maclen = 0;
    const char *dot;
    unsigned char *json = NULL, *mac = NULL, want[AT_CURSOR_MAC_LEN];
    json_t *obj = NULL;

    *payload = NULL;
    if (!k || !scope || !cursor) return AT_EINVAL;
    len = strnlen(cursor, AT_CURSOR_MAX_LEN + 1);
    if (len == 0 || len > AT_CURSOR_MAX_LEN) return AT_EINVAL;
    dot = memchr(cursor, '.', len);
    if (!dot || memchr(dot + 1, '.', len - (size_t)(dot + 1 - cursor))) return AT_EINVAL;
    blen = (size_t)(dot - cursor);
    if (blen == 0) return AT_EINVAL;

    rc = at_b64_decode(dot + 1, len - blen - 1, AT_B64_JWT, &mac, &maclen);
    if (rc) goto out;
    rc = AT_EINVAL;
    if (maclen != AT_CURSOR_MAC_LEN) goto out;
    rc = at_b64_decode(cursor, blen, AT_B64_JWT, &json, &jlen);
    if (rc) goto out;
    rc = cursor_mac(k, scope, (const char *)json, jlen, want);
    if (rc) goto out;
    if (CRYPTO_memcmp(want, mac, AT_CURSOR_MAC_LEN) != 0) {
        rc = AT_EINVAL;
        goto out;
    }
    /* Signed by us, so well-formed unless the key leaked; checked all the same. */
    obj = json_loadb((const char *)json, jlen, JSON_REJECT_DUPLICATES, NULL);
    if (!json_is_object(obj)) {
        rc = AT_EINVAL;
        goto out;
    }
    *payload = obj;
    obj = NULL;
out:
    if (rc && rc != AT_ENOMEM) rc = AT_EINVAL;
    json_decref(obj);
    free(json);
    free(mac);
    return rc;
}
