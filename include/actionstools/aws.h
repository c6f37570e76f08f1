/* How to reach an AWS service: endpoint, region, credentials and the bounds of one
 * call. Shared by every AWS client (src/aws/): DynamoDB today; Lambda Invoke and
 * Secrets Manager use the same settings. */
#ifndef AT_AWS_H
#define AT_AWS_H

/* Connection settings of an AWS client. Strings are copied by the client's opener. */
typedef struct at_aws_options {
    const char *endpoint;      /* "http://127.0.0.1:8000" or NULL for the regional one */
    const char *region;        /* e.g. "us-east-1" */
    const char *access_key;    /* AWS_ACCESS_KEY_ID */
    const char *secret_key;    /* AWS_SECRET_ACCESS_KEY */
    const char *session_token; /* AWS_SESSION_TOKEN or NULL */
    long connect_timeout_ms;   /* 0: default */
    long request_timeout_ms;   /* 0: default */
    int max_retries;           /* < 0: default */
} at_aws_options;

#endif
