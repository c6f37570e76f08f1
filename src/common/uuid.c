/* Random and name-based UUIDs (libuuid). */
#include <ctype.h>
#include <string.h>
#include <uuid/uuid.h>

#include "actionstools/uuid.h"
#include "actionstools/err.h"
#include "actionstools/banned.h"

void at_uuid_new(char out[AT_UUID_LEN + 1])
{
    uuid_t u;
    uuid_generate_random(u);
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
