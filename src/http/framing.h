/* Request framing checks (src/http/framing.c), RFC 9112: what makes a request's body
 * length ambiguous, so that two parsers (a proxy's and ours) could split the byte
 * stream differently. libmicrohttpd 0.9.75 lets these through (it prefers
 * Transfer-Encoding, takes the first Content-Length and keeps a space before a colon
 * in the header's name), so the server checks the headers before reading a body. */
#ifndef AT_FRAMING_H
#define AT_FRAMING_H

#include <stddef.h>

#include "actionstools/http.h"

/* Checks the request headers h[0..n) as received. Returns 0 when the framing is
 * unambiguous; otherwise the status to answer (400, or 501 for a transfer coding we
 * do not implement) with *why set to a static message saying what is wrong. The
 * connection must then be closed after the answer. */
int at_framing_check(const at_header *h, size_t n, const char **why /* OUT */);

#endif
