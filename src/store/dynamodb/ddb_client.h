/* A client of DynamoDB's JSON 1.0 protocol, on the signed AWS client (src/aws/client.h):
 * requests are `POST /` with `X-Amz-Target: DynamoDB_20120810.<Op>` and a JSON body;
 * answers are parsed, and DynamoDB's error types are mapped to AT_* codes. Requests are
 * counted per operation. See docs/dynamodb.md. */
#ifndef AT_DDB_CLIENT_H
#define AT_DDB_CLIENT_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "actionstools/aws.h"
#include "aws/client.h"

/* The operations the backend uses. */
typedef enum {
    AT_DDB_GET_ITEM = 0,
    AT_DDB_PUT_ITEM,
    AT_DDB_UPDATE_ITEM,
    AT_DDB_DELETE_ITEM,
    AT_DDB_QUERY,
    AT_DDB_SCAN,
    AT_DDB_BATCH_WRITE_ITEM,
    AT_DDB_CREATE_TABLE,
    AT_DDB_DESCRIBE_TABLE,
    AT_DDB_DELETE_TABLE,
    AT_DDB_UPDATE_TIME_TO_LIVE,
    AT_DDB_DESCRIBE_TIME_TO_LIVE,
    AT_DDB_OP_COUNT
} at_ddb_op;

/* What went wrong with a call: the AWS client's details. */
typedef at_aws_error at_ddb_error;

/* Request counts of one client (atomic; any thread may read them). */
typedef struct at_ddb_stats {
    uint64_t requests[AT_DDB_OP_COUNT]; /* HTTP requests sent, retries included */
    uint64_t retries;                   /* requests that were a retry after backoff */
    uint64_t fresh_retries;             /* requests repeated at once on a new connection
                                           after a kept-alive one turned out closed */
    uint64_t connects;                  /* new connections opened */
} at_ddb_stats;

typedef struct at_ddb_client at_ddb_client;

/* Returns the wire name of op ("GetItem"), or NULL for a bad value. */
const char *at_ddb_op_name(at_ddb_op op);

/* Creates a client from o (strings copied). The endpoint is o->endpoint or
 * https://dynamodb.<region>.amazonaws.com. Makes no request. Returns 0, AT_EINVAL
 * (with a message in err naming DYNAMODB_ENDPOINT or the credentials) or AT_ENOMEM. */
int at_ddb_client_new(const at_aws_options *o, at_ddb_client **out /* OUT */, char *err,
                      size_t errlen);

/* Frees the client and its connections. No call may be running. Accepts NULL. */
void at_ddb_client_free(at_ddb_client *c);

/* Sends the operation op with the JSON body req (borrowed) and waits for the answer,
 * retried as at_aws_call does. On success returns 0 and *resp is the parsed answer (a
 * new reference). Otherwise *resp is NULL and the return is AT_ECOND
 * (ConditionalCheckFailedException), AT_ENOTABLE (ResourceNotFoundException), AT_EINVAL
 * (ValidationException, SerializationException), AT_ETOOBIG (item collection too large,
 * an answer too big), AT_ETHROTTLED (still throttled after the retries), AT_EUNAVAIL (no
 * answer, 5xx, timeout), AT_EIO (any other refusal, e.g. bad credentials, or an
 * unreadable answer) or AT_ENOMEM. e (may be NULL) receives the details. Safe to call
 * from many threads at once. */
int at_ddb_call(at_ddb_client *c, at_ddb_op op, const json_t *req, json_t **resp /* OUT */,
                at_ddb_error *e /* OUT, may be NULL */);

/* Copies the client's counters into *out. */
void at_ddb_client_stats(const at_ddb_client *c, at_ddb_stats *out /* OUT */);

/* Sets the client's counters to zero (tests). */
void at_ddb_client_reset_stats(at_ddb_client *c);

#endif
