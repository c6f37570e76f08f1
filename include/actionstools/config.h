/* Settings of SPEC §2, read from the environment and validated at start-up. */
#ifndef AT_CONFIG_H
#define AT_CONFIG_H

#include <stddef.h>

#include "actionstools/log.h"
#include "actionstools/schema.h"

typedef struct at_config {
    char *env_name;    /* ENV_NAME, "local" by default */
    int production;    /* ENV_NAME == "production" */
    char *base_prefix; /* BASE_PREFIX without a trailing '/'; "" for none */
    char *listen_host; /* from LISTEN */
    int listen_port;   /* 0 asks the system for a free port */
    char *storage;     /* "sqlite" or "dynamodb" */
    char *sqlite_path;
    char *aws_region, *aws_access_key_id, *aws_secret_access_key, *aws_session_token;
    char *dynamodb_endpoint;
    char *table_names[AT_TABLE_COUNT]; /* physical names (defaults or TABLE_<NAME>) */
    char *jwt_secret;                  /* AUTH_JWT_SECRET */
    char *jwt_public_key_file;         /* AUTH_JWT_PUBLIC_KEY_FILE */
    char *jwt_issuer, *jwt_audience;
    char *cursor_secret;               /* CURSOR_SECRET, or NULL: see docs/auth.md */
    char **cors_origins; /* CORS_ALLOW_ORIGINS split on ',' */
    size_t ncors_origins;
    int cors_any; /* the list is "*" */
    char *slack_webhook_url;
    char *smtp_url, *smtp_from, *smtp_user, *smtp_password;
    char *worker_function_name;
    char *secrets_id;
    long counters_ttl_seconds;
    at_log_level log_level;
    int http_max_connections; /* HTTP_MAX_CONNECTIONS: open connections `serve` holds */
    int http_request_timeout; /* HTTP_REQUEST_TIMEOUT: seconds for a request to arrive whole */
    int http_idle_timeout;    /* HTTP_IDLE_TIMEOUT: seconds a keep-alive connection may idle */
} at_config;

/* Reads every setting from the environment into cfg (caller's memory), applying the
 * defaults of SPEC §2. Returns 0, or AT_EINVAL with a message naming the variable and
 * what to fix in err. Secrets are never copied into err. On failure cfg holds nothing
 * that needs releasing. */
int at_config_load(at_config *cfg, char *err, size_t errlen);

/* Reads a .env-style file (KEY=VALUE lines, '#' comments, optional "export ", values
 * optionally in single or double quotes) into the environment; variables already set
 * in the environment win. Returns 0, or AT_EINVAL / AT_EIO with a message in err. */
int at_config_load_file(const char *path, char *err, size_t errlen);

/* Returns 0 when cfg has what verifying bearer tokens needs (a secret or a key file),
 * else AT_EINVAL with a message in err. */
int at_config_require_auth(const at_config *cfg, char *err, size_t errlen);

/* Frees everything cfg holds. */
void at_config_release(at_config *cfg);

#endif
