/* DynamoDB's JSON 1.0 protocol on the signed AWS client (ddb_client.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store/dynamodb/ddb_client.h"
#include "actionstools/err.h"
#include "actionstools/banned.h"

#define TARGET_PREFIX "DynamoDB_20120810."

struct at_ddb_client {
    at_aws_client *aws;
    uint64_t requests[AT_DDB_OP_COUNT]; /* atomic */
};

static const char *const op_names[AT_DDB_OP_COUNT] = {
    "GetItem",       "PutItem",     "UpdateItem",       "DeleteItem",
    "Query",         "Scan",        "BatchWriteItem",   "CreateTable",
    "DescribeTable", "DeleteTable", "UpdateTimeToLive", "DescribeTimeToLive",
};

const char *at_ddb_op_name(at_ddb_op op)
{
    return (unsigned)op < AT_DDB_OP_COUNT ? op_names[op] : NULL;
}

int at_ddb_client_new(const at_aws_options *o, at_ddb_client **out, char *err, size_t errlen)
{
    at_ddb_client *c = calloc(1, sizeof *c);
    int rc;

    *out = NULL;
    if (!c) return AT_ENOMEM;
    rc = at_aws_client_new(o, "dynamodb", "DYNAMODB_ENDPOINT", &c->aws, err, errlen);
    if (rc) {
        free(c);
        return rc;
    }
    *out = c;
    return 0;
}

void at_ddb_client_free(at_ddb_client *c)
{
    if (!c) return;
    at_aws_client_free(c->aws);
    free(c);
}

/* The AT_* code of a refusal DynamoDB does not want retried. */
static int refusal(const char *type, int rc)
{
    if (strcmp(type, "ConditionalCheckFailedException") == 0) return AT_ECOND;
    if (strcmp(type, "ResourceNotFoundException") == 0) return AT_ENOTABLE;
    if (strcmp(type, "ValidationException") == 0 || strcmp(type, "SerializationException") == 0)
        return AT_EINVAL;
    if (strcmp(type, "ItemCollectionSizeLimitExceededException") == 0) return AT_ETOOBIG;
    return rc;
}

int at_ddb_call(at_ddb_client *c, at_ddb_op op, const json_t *req, json_t **resp, at_ddb_error *e)
{
    at_ddb_error local;
    char target[64];
    char *text = NULL;
    at_buf body;
    at_sigv4_header h[2];
    at_aws_request r;
    int rc;

    *resp = NULL;
    if (!e) e = &local;
    memset(e, 0, sizeof *e);
    if ((unsigned)op >= AT_DDB_OP_COUNT || !json_is_object(req)) return AT_EINVAL;
    text = json_dumps(req, JSON_COMPACT);
    if (!text) return AT_ENOMEM;
    snprintf(target, sizeof target, TARGET_PREFIX "%s", op_names[op]);
    h[0] = (at_sigv4_header){"Content-Type", "application/x-amz-json-1.0"};
    h[1] = (at_sigv4_header){"X-Amz-Target", target};
    r = (at_aws_request){"POST", "/", NULL, h, 2, text, strlen(text), op_names[op],
                         &c->requests[op]};
    at_buf_init(&body, AT_AWS_MAX_RESPONSE);
    rc = at_aws_call(c->aws, &r, &body, e);
    if (rc == AT_EIO && e->http_status) rc = refusal(e->type, rc);
    if (rc == 0) {
        *resp = body.len ? json_loadb(body.ptr, body.len, JSON_ALLOW_NUL, NULL) : NULL;
        if (!json_is_object(*resp)) {
            json_decref(*resp);
            *resp = NULL;
            rc = AT_EIO;
            snprintf(e->message, sizeof e->message, "unreadable answer from DynamoDB");
        }
    }
    at_buf_release(&body);
    free(text);
    return rc;
}

void at_ddb_client_stats(const at_ddb_client *c, at_ddb_stats *out)
{
    at_aws_stats s;
    at_aws_client_stats(c->aws, &s);
    for (int i = 0; i < AT_DDB_OP_COUNT; i++)
        out->requests[i] = __atomic_load_n(&c->requests[i], __ATOMIC_RELAXED);
    out->retries = s.retries;
    out->fresh_retries = s.fresh_retries;
    out->connects = s.connects;
}

void at_ddb_client_reset_stats(at_ddb_client *c)
{
    for (int i = 0; i < AT_DDB_OP_COUNT; i++)
        __atomic_store_n(&c->requests[i], 0, __ATOMIC_RELAXED);
    at_aws_client_reset_stats(c->aws);
}
