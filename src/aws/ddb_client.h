/* A client of DynamoDB's JSON 1.0 protocol over libcurl. Requests are `POST /` with
 * `X-Amz-Target: DynamoDB_20120810.<Op>`, signed with SigV4; connections are kept alive and reused; throttling, 5xx answers and
 * connection failures are retried with capped exponential backoff and full jitter.
 * See docs/dynamodb.md. */
#ifndef AT_DDB_CLIENT_H
#define AT_DDB_CLIENT_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "actionstools/aws.h"

/* The operations the backend uses. Requests are counted per operation. */
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

/* Defaults of at_aws_options' zero / negative fields. */
#define AT_DDB_DEFAULT_CONNECT_TIMEOUT_MS 2000L
#define AT_DDB_DEFAULT_REQUEST_TIMEOUT_MS 10000L
#define AT_DDB_DEFAULT_MAX_RETRIES 3
#define AT_DDB_BACKOFF_BASE_MS 50L
#define AT_DDB_BACKOFF_CAP_MS 5000L

/* What went wrong with a call, for messages and tests. Never holds a secret. */
typedef struct at_ddb_error {
    long http_status; /* the last HTTP status, 0 when no answer came */
    char type[96];    /* the error type without its namespace ("ValidationException"), or "" */
    char message[256];
    int attempts; /* HTTP requests sent for the call */
} at_ddb_error;

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
 * (with a message in err: bad endpoint, missing credentials for AWS) or AT_ENOMEM. */
int at_ddb_client_new(const at_aws_options *o, at_ddb_client **out /* OUT */, char *err,
                      size_t errlen);

/* Frees the client and its connections. No call may be running. Accepts NULL. */
void at_ddb_client_free(at_ddb_client *c);

/* Sends the operation op with the JSON body req (borrowed) and waits for the answer,
 * retrying as described above within the client's request timeout. On success returns
 * 0 and *resp is the parsed answer (a new reference). Otherwise *resp is NULL and the
 * return is AT_ECOND (ConditionalCheckFailedException), AT_ENOTABLE
 * (ResourceNotFoundException), AT_EINVAL (ValidationException, SerializationException),
 * AT_ETOOBIG (item collection too large), AT_ETHROTTLED (still throttled after the
 * retries), AT_EUNAVAIL (no answer, 5xx, timeout), AT_EIO (any other refusal, e.g.
 * bad credentials or an unreadable answer) or AT_ENOMEM. e (may be NULL) receives
 * the details. Safe to call from many threads at once. */
int at_ddb_call(at_ddb_client *c, at_ddb_op op, const json_t *req, json_t **resp /* OUT */,
                at_ddb_error *e /* OUT, may be NULL */);

/* Copies the client's counters into *out. */
void at_ddb_client_stats(const at_ddb_client *c, at_ddb_stats *out /* OUT */);

/* Sets the client's counters to zero (tests). */
void at_ddb_client_reset_stats(at_ddb_client *c);

/* Returns the sleep in milliseconds before retry number attempt (0 for the first
 * retry): a uniformly random value in [0, min(cap, base * 2^attempt)] ("full jitter"). */
long at_ddb_backoff_ms(int attempt, long base_ms, long cap_ms);

/* Extracts an AWS JSON error type into out (n bytes): from the X-Amzn-ErrorType
 * header value when it is not NULL, else from the body's "__type" or "code". The
 * namespace before '#' and anything after ':' are dropped. Returns 1 when a type was
 * found, else 0 (out is then ""). */
int at_ddb_error_type(const char *header, const json_t *body, char *out, size_t n);

#endif
