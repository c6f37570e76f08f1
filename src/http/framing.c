/* Request framing checks (RFC 9112 §5.1, §6.1, §6.3). */
#include <string.h>
#include <strings.h>

#include "framing.h"
#include "actionstools/banned.h"

/* Returns 1 when the comma-separated list v ends with the coding "chunked", 2 when it
 * is exactly "chunked" (spaces and case aside). */
static int chunked_kind(const char *v)
{
    const char *last = strrchr(v, ','), *s = last ? last + 1 : v, *e;
    while (*s == ' ' || *s == '\t') s++;
    e = s + strlen(s);
    while (e > s && (e[-1] == ' ' || e[-1] == '\t')) e--;
    if ((size_t)(e - s) != 7 || strncasecmp(s, "chunked", 7) != 0) return 0;
    return last ? 1 : 2;
}

int at_framing_check(const at_header *h, size_t n, const char **why)
{
    const char *cl = NULL, *te = NULL;
    size_t nte = 0;

    *why = NULL;
    for (size_t i = 0; i < n; i++) {
        const char *name = h[i].name;
        if (!name[0]) {
            *why = "a header line has no name before its colon";
            return 400;
        }
        if (strpbrk(name, " \t")) {
            *why = "whitespace between a header's name and its colon is not allowed (RFC 9112 "
                   "section 5.1)";
            return 400;
        }
        if (strcasecmp(name, "Content-Length") == 0) {
            if (cl && strcmp(cl, h[i].value) != 0) {
                *why = "two different Content-Length values (RFC 9112 section 6.3)";
                return 400;
            }
            cl = h[i].value;
        } else if (strcasecmp(name, "Transfer-Encoding") == 0) {
            te = h[i].value;
            nte++;
        }
    }
    if (te && cl) {
        *why = "both Content-Length and Transfer-Encoding: send one of them (RFC 9112 section 6.3)";
        return 400;
    }
    if (nte > 1) {
        *why = "more than one Transfer-Encoding header: send one, Transfer-Encoding: chunked";
        return 400;
    }
    if (te) {
        int k = chunked_kind(te);
        if (k == 0) {
            *why = "Transfer-Encoding must end with chunked, or the body's length is unknown "
                   "(RFC 9112 section 6.3)";
            return 400;
        }
        if (k == 1) {
            *why = "only Transfer-Encoding: chunked is implemented; send the body without "
                   "other codings";
            return 501;
        }
    }
    return 0;
}
