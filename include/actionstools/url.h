/* URLs clients give the service (a file's url): checked with libcurl's URL parser. */
#ifndef AT_URL_H
#define AT_URL_H

/* Returns 1 when s is an absolute http or https URL naming a host ("https://h/x?y"),
 * as libcurl's URL parser reads it: no spaces or control characters, no "http:///x".
 * Returns 0 otherwise, and when out of memory. */
int at_url_is_http(const char *s);

#endif
