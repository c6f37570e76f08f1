/* Reading a request and releasing a response: used by the pipeline, the token check
 * and the server alike. */
#include <stdlib.h>
#include <strings.h>

#include "actionstools/http.h"
#include "actionstools/banned.h"

const char *at_request_header(const at_request *req, const char *name)
{
    for (size_t i = 0; i < req->nheaders; i++)
        if (strcasecmp(req->headers[i].name, name) == 0) return req->headers[i].value;
    return NULL;
}

void at_response_release(at_response *resp)
{
    free(resp->body);
    resp->body = NULL;
    resp->body_len = 0;
}
