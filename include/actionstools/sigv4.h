/* AWS Signature Version 4 for requests sent with an Authorization header: the
 * canonical request, the string to sign, the signature and the header value, for any
 * AWS service (DynamoDB, Lambda Invoke, Secrets Manager...). Checked byte for byte
 * against the aws-c-auth signing test suite (tests/fixtures/sigv4). See docs/dynamodb.md.
 *
 * Only OpenSSL's HMAC and SHA-256 are used; the canonicalisation is ours. Secrets are
 * never written anywhere but into the HMAC, and the derived keys are wiped. */
#ifndef AT_SIGV4_H
#define AT_SIGV4_H

#include <stddef.h>
#include <stdint.h>

/* One request header. Names are compared case-insensitively; values are signed with
 * their surrounding white space trimmed and inner runs of white space (including
 * folded line breaks) collapsed to one space. A name given more than once is signed
 * as the values joined by ',' in the order given. */
typedef struct at_sigv4_header {
    const char *name;
    const char *value;
} at_sigv4_header;

/* AWS credentials. session_token is NULL (or "") for long-term keys. */
typedef struct at_sigv4_creds {
    const char *access_key;
    const char *secret_key;
    const char *session_token;
} at_sigv4_creds;

enum {
    /* Sign the path exactly as given: no removal of "." / ".." segments and repeated
     * slashes. (S3 wants this; every other service normalises.) */
    AT_SIGV4_NO_NORMALIZE = 1u << 0,
    /* Add and sign an x-amz-content-sha256 header holding the payload hash (S3 style). */
    AT_SIGV4_SIGN_BODY = 1u << 1,
    /* Add X-Amz-Security-Token to the headers to send but leave it out of the signature
     * (a few services, e.g. IoT, want the token unsigned). */
    AT_SIGV4_OMIT_TOKEN = 1u << 2
};

/* What to sign. Every string is borrowed. */
typedef struct at_sigv4_request {
    const char *method; /* "GET", "POST"... */
    /* The path as it is sent on the wire (already percent-encoded where needed), or
     * NULL/"" for "/". Each byte that is not unreserved or '/' is percent-encoded once
     * more for the canonical request (AWS's double encoding for non-S3 services). */
    const char *path;
    /* The query as sent, without '?' ("a=1&b=x%20y"), or NULL. Parameters are decoded,
     * re-encoded with AWS's rules and sorted. */
    const char *query;
    /* The headers to sign, which must include Host. X-Amz-Date (and
     * X-Amz-Security-Token, x-amz-content-sha256 as flags say) are added by the signer
     * and must not be given. */
    const at_sigv4_header *headers;
    size_t nheaders;
    const void *payload; /* request body, or NULL when payload_len is 0 */
    size_t payload_len;
} at_sigv4_request;

/* Where and when. */
typedef struct at_sigv4_scope {
    const char *region;  /* "us-east-1" */
    const char *service; /* "dynamodb", "lambda", "secretsmanager" */
    int64_t time;        /* signing time, seconds since the epoch (UTC) */
    unsigned flags;      /* AT_SIGV4_* */
} at_sigv4_scope;

#define AT_SIGV4_MAX_ADD 3

/* The result of signing. Strings are owned by the result; release with
 * at_sigv4_result_release. */
typedef struct at_sigv4_result {
    char amz_date[17];     /* "20150830T123600Z" */
    char payload_hash[65]; /* lower-case hex SHA-256 of the payload */
    char signature[65];    /* lower-case hex */
    char *canonical_request;
    char *string_to_sign;
    char *authorization; /* the value of the Authorization header */
    /* Headers the caller must send besides its own and Authorization: X-Amz-Date, and
     * X-Amz-Security-Token / x-amz-content-sha256 when they apply. Values point into
     * this result or into the credentials given. */
    at_sigv4_header add[AT_SIGV4_MAX_ADD];
    size_t nadd;
} at_sigv4_result;

/* Signs request r with credentials c for scope s and fills *out (which the caller
 * releases with at_sigv4_result_release, also after a failure). Returns 0, AT_EINVAL
 * (a missing method, credentials, region, service or Host header, a header name with
 * a character not allowed in a header, a time out of range) or AT_ENOMEM. */
int at_sigv4_sign(const at_sigv4_request *r, const at_sigv4_creds *c, const at_sigv4_scope *s,
                  at_sigv4_result *out /* OUT */);

/* Frees the strings of a result and zeroes it. Accepts a zeroed result. */
void at_sigv4_result_release(at_sigv4_result *res);

/* Writes the lower-case hex SHA-256 of n bytes at p into out (65 bytes, NUL-terminated). */
void at_sigv4_sha256_hex(const void *p, size_t n, char out[65]);

#endif
