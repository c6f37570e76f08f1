/* Random and name-based UUIDs (libuuid). */
#include <ctype.h>
#include <errno.h>
#include <openssl/crypto.h>
#include <stdlib.h>
#include <sys/random.h>
#include <string.h>
#include <uuid/uuid.h>

#include "actionstools/uuid.h"
#include "actionstools/err.h"
#include "actionstools/banned.h"

/* Random bytes from the kernel's CSPRNG (getrandom), fetched a few kilobytes at a time
 * per thread: a request id or an item uuid costs no system call and no lock (libuuid's
 * uuid_generate_random also reseeded random() on every call: 5 % of GET /health). */
static void random_bytes(unsigned char *out, size_t n)
{
    static __thread unsigned char pool[4096];
    static __thread size_t left;
    while (n > 0) {
        size_t take;
        if (left == 0) {
            size_t got = 0;
            while (got < sizeof pool) {
                ssize_t r = getrandom(pool + got, sizeof pool - got, 0);
                if (r > 0) got += (size_t)r;
                else if (r < 0 && errno != EINTR) abort(); /* the kernel has no getrandom */
            }
            left = sizeof pool;
        }
        take = n < left ? n : left;
        memcpy(out, pool + sizeof pool - left, take);
        OPENSSL_cleanse(pool + sizeof pool - left, take); /* a byte is handed out once */
        left -= take;
        out += take;
        n -= take;
    }
}

void at_uuid_new(char out[AT_UUID_LEN + 1])
{
    uuid_t u;
    random_bytes(u, sizeof u);
    u[6] = (unsigned char)((u[6] & 0x0f) | 0x40); /* version 4 */
    u[8] = (unsigned char)((u[8] & 0x3f) | 0x80); /* RFC 4122 variant */
    uuid_unparse_lower(u, out);
}

int at_uuid_valid(const char *s)
{
    if (!s || strlen(s) != AT_UUID_LEN) return 0;
    for (int i = 0; i < AT_UUID_LEN; i++) {
        if (i == 8 || i == 13 || i == 18 || i == 23) {
            if (s[i] != '-') return 0;
        } else if (!isxdigit((unsigned char)s[i])) {
            return 0;
        }
    }
    return 1;
}

int at_uuid_normalize(const char *s, char out[AT_UUID_LEN + 1])
{
    if (!at_uuid_valid(s)) return AT_EINVAL;
    for (int i = 0; i <= AT_UUID_LEN; i++) out[i] = (char)tolower((unsigned char)s[i]);
    return 0;
}

int at_uuid_from_name(const char *ns, const char *name, size_t len, char out[AT_UUID_LEN + 1])
{
    uuid_t n, u;
    if (!at_uuid_valid(ns) || uuid_parse(ns, n)) return AT_EINVAL;
    uuid_generate_sha1(u, n, name, len);
    uuid_unparse_lower(u, out);
    return 0;
}
