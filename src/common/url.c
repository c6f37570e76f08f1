/* URL checks, by libcurl's URL API (curl_url): we parse no URLs of our own. */
#include <curl/curl.h>
#include <string.h>
#include <strings.h>

#include "actionstools/url.h"
#include "actionstools/banned.h"

int at_url_is_http(const char *s)
{
    size_t n = strncasecmp(s, "http://", 7) == 0 ? 7 : strncasecmp(s, "https://", 8) == 0 ? 8 : 0;
    char *scheme = NULL, *host = NULL;
    CURLU *u;
    int ok;
    /* libcurl forgives "http:///x" (reading the host "x"); a client's URL must name it. */
    if (!n || s[n] == '/' || s[n] == '\0') return 0;
    if (!(u = curl_url())) return 0;
    ok = curl_url_set(u, CURLUPART_URL, s, 0) == CURLUE_OK &&
         curl_url_get(u, CURLUPART_SCHEME, &scheme, 0) == CURLUE_OK &&
         curl_url_get(u, CURLUPART_HOST, &host, 0) == CURLUE_OK && host[0] &&
         (strcmp(scheme, "http") == 0 || strcmp(scheme, "https") == 0);
    curl_free(scheme);
    curl_free(host);
    curl_url_cleanup(u);
    return ok;
}
