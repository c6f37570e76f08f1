/* Strict base64 / base64url on top of OpenSSL's EVP_EncodeBlock / EVP_DecodeBlock.
 * OpenSSL knows only the standard alphabet with padding and tolerates whitespace, so
 * we check the text ourselves and hand OpenSSL a canonical, padded, standard copy. */
#include <stdlib.h>
#include <string.h>

#include <openssl/evp.h>

#include "actionstools/b64.h"
#include "actionstools/err.h"
#include "actionstools/banned.h"

char *at_b64_encode(const void *data, size_t len, int flags, size_t *outlen)
{
    static const unsigned char none[1];
    unsigned char *out;
    size_t n;

    if (outlen) *outlen = 0;
    if (len > AT_B64_MAX || (!data && len)) return NULL;
    out = malloc((len + 2) / 3 * 4 + 1);
    if (!out) return NULL;
    n = (size_t)EVP_EncodeBlock(out, data ? data : none, (int)len);
    out[n] = '\0';
    if (flags & AT_B64_URL) {
        for (size_t i = 0; i < n; i++) {
            if (out[i] == '+')
                out[i] = '-';
            else if (out[i] == '/')
                out[i] = '_';
        }
    }
    if (flags & AT_B64_NOPAD) {
        while (n > 0 && out[n - 1] == '=')
            out[--n] = '\0';
    }
    if (outlen) *outlen = n;
    return (char *)out;
}

/* Returns the 6-bit value of c in the selected alphabet, or -1. */
static int sextet(unsigned char c, int url)
{
    if (c >= 'A' && c <= 'Z') return c - 'A';
    if (c >= 'a' && c <= 'z') return c - 'a' + 26;
    if (c >= '0' && c <= '9') return c - '0' + 52;
    if (c == (url ? '-' : '+')) return 62;
    if (c == (url ? '_' : '/')) return 63;
    return -1;
}

int at_b64_decode(const char *text, size_t len, int flags, unsigned char **out, size_t *outlen)
{
    int rc = 0, url = flags & AT_B64_URL, last = 0, r;
    size_t pad = 0, datalen, rem, fill, plen;
    unsigned char *std = NULL, *dec = NULL;

    *out = NULL;
    if (outlen) *outlen = 0;
    if (!text && len) return AT_EINVAL;
    if (len > AT_B64_MAX) return AT_ETOOBIG;

    if (!(flags & AT_B64_NOPAD)) {
        if (len % 4) return AT_EINVAL;
        if (len >= 1 && text[len - 1] == '=') pad = 1;
        if (pad && len >= 2 && text[len - 2] == '=') pad = 2;
    }
    datalen = len - pad;
    rem = datalen % 4;
    if (rem == 1) return AT_EINVAL; /* 6 bits cannot make a byte */
    for (size_t i = 0; i < datalen; i++) {
        last = sextet((unsigned char)text[i], url);
        if (last < 0) return AT_EINVAL; /* also '=' anywhere but the end */
    }
    /* The bits after the last whole byte must be zero, else "QQ==" and "QR==" would
     * both read as "A". */
    if ((rem == 2 && (last & 0x0f)) || (rem == 3 && (last & 0x03))) return AT_EINVAL;

    fill = rem ? 4 - rem : 0;
    plen = datalen + fill;
    std = malloc(plen + 1);
    dec = malloc(plen / 4 * 3 + 1);
    if (!std || !dec) {
        rc = AT_ENOMEM;
        goto out;
    }
    for (size_t i = 0; i < datalen; i++) {
        unsigned char c = (unsigned char)text[i];
        std[i] = c == '-' ? '+' : c == '_' ? '/' : c;
    }
    memset(std + datalen, '=', fill);
    std[plen] = '\0';
    r = plen ? EVP_DecodeBlock(dec, std, (int)plen) : 0;
    /* EVP_DecodeBlock counts the padding as zero bytes. */
    if (r < 0 || (size_t)r != plen / 4 * 3) {
        rc = AT_EINVAL;
        goto out;
    }
    dec[(size_t)r - fill] = '\0';
    if (outlen) *outlen = (size_t)r - fill;
    *out = dec;
    dec = NULL;
out:
    free(std);
    free(dec);
    return rc;
}
