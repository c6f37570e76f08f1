/* A signed HTTP client for AWS services over libcurl: SigV4 signing, kept-alive
 * connections shared by all threads, and retries of throttling, 5xx answers and
 * connection failures with capped exponential backoff and full jitter, all within one
 * request timeout. It knows no service's protocol: the DynamoDB client
 * (src/store/dynamodb/ddb_client.c) and the coming Lambda Invoke and Secrets Manager
 * clients build their requests and read their answers on top of it. See docs/aws.md. */
#ifndef AT_AWS_CLIENT_H
#define AT_AWS_CLIENT_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "actionstools/aws.h"
#include "actionstools/buf.h"
#include "actionstools/sigv4.h"

/* Defaults of at_aws_options' zero / negative fields. */
#define AT_AWS_DEFAULT_CONNECT_TIMEOUT_MS 2000L
#define AT_AWS_DEFAULT_REQUEST_TIMEOUT_MS 10000L
#define AT_AWS_DEFAULT_MAX_RETRIES 3
#define AT_AWS_BACKOFF_BASE_MS 50L
#define AT_AWS_BACKOFF_CAP_MS 5000L

/* Bounds of one call's bodies. */
#define AT_AWS_MAX_REQUEST (16u << 20)
#define AT_AWS_MAX_RESPONSE (32u << 20)

/* The most headers a request may add to the ones the client sends itself. */
#define AT_AWS_MAX_HEADERS 8

/* What went wrong with a call, for messages and tests. Never holds a secret. */
typedef struct at_aws_error {
    long http_status; /* the last HTTP status, 0 when no answer came */
    char type[96];    /* the error type without its namespace ("ValidationException"), or "" */
    char message[256];
    int attempts; /* HTTP requests sent for the call */
} at_aws_error;

/* Counts of one client (atomic; any thread may read them). */
typedef struct at_aws_stats {
    uint64_t requests;      /* HTTP requests sent, retries included */
    uint64_t retries;       /* requests that were a retry after backoff */
    uint64_t fresh_retries; /* requests repeated at once on a new connection after a
                               kept-alive one turned out closed */
    uint64_t connects;      /* new connections opened */
} at_aws_stats;

/* One request. Every pointer is borrowed for the duration of the call. */
typedef struct at_aws_request {
    const char *method; /* "POST", "GET"... */
    const char *path;   /* as sent, percent-encoded where needed ("/", "/2015-03-31/...") */
    const char *query;  /* without '?', or NULL */
    /* Headers to send and sign besides Host and what signing adds (Content-Type,
     * X-Amz-Target, X-Amz-Invocation-Type...): at most AT_AWS_MAX_HEADERS. */
    const at_sigv4_header *headers;
    size_t nheaders;
    const char *body; /* NULL when len is 0 */
    size_t len;
    const char *label;  /* names the request in logs ("GetItem"); never a secret */
    uint64_t *counter;  /* when not NULL, atomically incremented per HTTP request sent */
} at_aws_request;

typedef struct at_aws_client at_aws_client;

/* Creates a client of service (its SigV4 name, which is also the first label of its
 * regional host: https://<service>.<region>.amazonaws.com) from o (strings copied).
 * setting names the endpoint variable in messages ("DYNAMODB_ENDPOINT"). Makes no
 * request. Returns 0, AT_EINVAL (with a message in err: a bad endpoint, missing
 * credentials for AWS) or AT_ENOMEM. */
int at_aws_client_new(const at_aws_options *o, const char *service, const char *setting,
                      at_aws_client **out /* OUT */, char *err, size_t errlen);

/* Frees the client and its connections. No call may be running. Accepts NULL. */
void at_aws_client_free(at_aws_client *c);

/* Sends r and waits for the answer, retrying throttling, 5xx answers and connection
 * failures within the client's request timeout. On a 2xx answer returns 0 and appends
 * the answer's bytes to body (the caller's buffer: init it, release it). Otherwise
 * returns AT_ETHROTTLED (still throttled after the retries), AT_EUNAVAIL (no answer,
 * 5xx, timeout), AT_ETOOBIG (an answer over AT_AWS_MAX_RESPONSE, or 413), AT_ENOMEM, or
 * AT_EIO for any other refusal, whose type and message (from X-Amzn-ErrorType or a JSON
 * body's __type/code and message) are in e for the caller to map. e (may be NULL)
 * receives the details. Safe to call from many threads at once. */
int at_aws_call(at_aws_client *c, const at_aws_request *r, at_buf *body /* OUT */,
                at_aws_error *e /* OUT, may be NULL */);

/* Copies the client's counters into *out. */
void at_aws_client_stats(const at_aws_client *c, at_aws_stats *out /* OUT */);

/* Sets the client's counters to zero (tests). */
void at_aws_client_reset_stats(at_aws_client *c);

/* Returns the sleep in milliseconds before retry number attempt (0 for the first
 * retry): a uniformly random value in [0, min(cap, base * 2^attempt)] ("full jitter"). */
long at_aws_backoff_ms(int attempt, long base_ms, long cap_ms);

/* Extracts an AWS JSON error type into out (n bytes): from the X-Amzn-ErrorType
 * header value when it is not NULL, else from the body's "__type" or "code". The
 * namespace before '#' and anything after ':' are dropped. Returns 1 when a type was
 * found, else 0 (out is then ""). */
int at_aws_error_type(const char *header, const json_t *body, char *out, size_t n);

#endif
