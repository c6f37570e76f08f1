/* Configuration from the environment (SPEC §2). */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "actionstools/config.h"
#include "actionstools/err.h"
#include "actionstools/banned.h"

extern char **environ;

static int fail(char *err, size_t n, const char *fmt, const char *a, const char *b)
{
    snprintf(err, n, fmt, a, b ? b : "");
    return AT_EINVAL;
}

/* Returns a copy of the variable's value, or of def when it is unset or empty. */
static char *env_dup(const char *name, const char *def)
{
    const char *v = getenv(name);
    if (!v || !*v) v = def;
    return v ? strdup(v) : NULL;
}

static int parse_listen(at_config *cfg, const char *v, char *err, size_t n)
{
    const char *colon = strrchr(v, ':');
    char *end;
    long port;
    if (!colon || colon == v)
        return fail(err, n, "LISTEN=%s: expected HOST:PORT, for example 127.0.0.1:8080%s", v, NULL);
    errno = 0;
    port = strtol(colon + 1, &end, 10);
    if (errno || *end || colon[1] == '\0' || port < 0 || port > 65535)
        return fail(err, n, "LISTEN=%s: the port must be a number from 0 to 65535%s", v, NULL);
    if (v[0] == '[') {
        if (colon[-1] != ']')
            return fail(err, n, "LISTEN=%s: write an IPv6 host in brackets, [::1]:8080%s", v, NULL);
        cfg->listen_host = strndup(v + 1, (size_t)(colon - v - 2));
    } else {
        cfg->listen_host = strndup(v, (size_t)(colon - v));
    }
    cfg->listen_port = (int)port;
    return 0;
}

static int parse_long(const char *name, const char *def, long min, long max, long *out, char *err,
                      size_t n)
{
    const char *v = getenv(name);
    char *end;
    long x;
    if (!v || !*v) v = def;
    errno = 0;
    x = strtol(v, &end, 10);
    if (errno || *end || end == v || x < min || x > max) {
        char range[64];
        snprintf(range, sizeof range, "%ld to %ld", min, max);
        return fail(err, n, "%s: expected a whole number from %s", name, range);
    }
    *out = x;
    return 0;
}

static int parse_cors(at_config *cfg, char *err, size_t n)
{
    char *list = env_dup("CORS_ALLOW_ORIGINS", "*"), *save = NULL, *tok;
    int rc = 0;
    size_t cap = 0;
    if (!list) return AT_ENOMEM;
    for (tok = strtok_r(list, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        char *s = tok, *e;
        while (isspace((unsigned char)*s)) s++;
        e = s + strlen(s);
        while (e > s && isspace((unsigned char)e[-1])) *--e = '\0';
        if (!*s) continue;
        if (strcmp(s, "*") == 0) {
            cfg->cors_any = 1;
            continue;
        }
        if (strncmp(s, "http://", 7) != 0 && strncmp(s, "https://", 8) != 0) {
            rc = fail(err, n, "CORS_ALLOW_ORIGINS: '%s' is not an origin; write it as "
                              "https://host[:port], comma-separated, or *%s", s, NULL);
            break;
        }
        if (cfg->ncors_origins == cap) {
            char **p;
            cap = cap ? cap * 2 : 4;
            p = realloc(cfg->cors_origins, cap * sizeof *p);
            if (!p) {
                rc = AT_ENOMEM;
                break;
            }
            cfg->cors_origins = p;
        }
        cfg->cors_origins[cfg->ncors_origins++] = strdup(s);
    }
    free(list);
    return rc;
}

/* TABLE_<NAME> overrides: every such variable must name a known table. */
static int parse_tables(at_config *cfg, char *err, size_t n)
{
    for (int i = 0; i < AT_TABLE_COUNT; i++) {
        const at_table_def *t = at_schema_table((at_table_id)i);
        cfg->table_names[i] = strdup(cfg->production ? t->prod_name : t->env_name);
    }
    for (char **e = environ; e && *e; e++) {
        char logical[64];
        const char *eq = strchr(*e, '='), *name = *e + 6;
        const at_table_def *t;
        size_t len;
        if (strncmp(*e, "TABLE_", 6) != 0 || !eq) continue;
        len = (size_t)(eq - name);
        if (len == 0 || len >= sizeof logical) {
            snprintf(err, n, "%.*s: unknown table", (int)(eq - *e), *e);
            return AT_EINVAL;
        }
        for (size_t i = 0; i < len; i++) logical[i] = (char)tolower((unsigned char)name[i]);
        logical[len] = '\0';
        t = at_schema_table_by_logical(logical);
        if (!t)
            return fail(err, n,
                        "TABLE_%s: unknown table; the tables are NOTES, COMMENTS, FILES, "
                        "SETTINGS, COUNTERS, TASKS, TASKS_COUNTERS, NOTIFICATIONS, ACTIVITY, "
                        "REPORTS_CACHE%s",
                        logical, NULL);
        if (!eq[1]) return fail(err, n, "TABLE_%s is empty: give a table name or unset it%s", logical, NULL);
        for (const char *p = eq + 1; *p; p++)
            if (!isalnum((unsigned char)*p) && *p != '_' && *p != '-' && *p != '.')
                return fail(err, n, "TABLE_%s: a table name may hold only A-Z a-z 0-9 _ - .%s",
                            logical, NULL);
        if (strlen(eq + 1) < 3 || strlen(eq + 1) > 255)
            return fail(err, n, "TABLE_%s: a table name is 3 to 255 characters long%s", logical, NULL);
        free(cfg->table_names[t->id]);
        cfg->table_names[t->id] = strdup(eq + 1);
    }
    return 0;
}

static int check_url(const char *name, const char *v, const char *s1, const char *s2, char *err,
                     size_t n)
{
    if (!v) return 0;
    if (strncmp(v, s1, strlen(s1)) == 0 || strncmp(v, s2, strlen(s2)) == 0) return 0;
    snprintf(err, n, "%s: expected a URL starting with %s or %s", name, s1, s2);
    return AT_EINVAL;
}

int at_config_load(at_config *cfg, char *err, size_t n)
{
    int rc;
    const char *v;
    long ttl, conns, req_timeout, idle_timeout;

    memset(cfg, 0, sizeof *cfg);
    cfg->env_name = env_dup("ENV_NAME", "local");
    cfg->production = strcmp(cfg->env_name, "production") == 0;
    cfg->base_prefix = env_dup("BASE_PREFIX", cfg->production ? "/actionstools" : "");
    {
        size_t len = strlen(cfg->base_prefix);
        while (len > 0 && cfg->base_prefix[len - 1] == '/') cfg->base_prefix[--len] = '\0';
        if (len > 0 && cfg->base_prefix[0] != '/') {
            rc = fail(err, n, "BASE_PREFIX=%s: a prefix starts with '/', for example /actionstools%s",
                      cfg->base_prefix, NULL);
            goto out;
        }
    }
    v = getenv("LISTEN");
    rc = parse_listen(cfg, v && *v ? v : "127.0.0.1:8080", err, n);
    if (rc) goto out;

    cfg->storage = env_dup("STORAGE", "sqlite");
    if (strcmp(cfg->storage, "sqlite") != 0 && strcmp(cfg->storage, "dynamodb") != 0) {
        rc = fail(err, n, "STORAGE=%s: expected sqlite or dynamodb%s", cfg->storage, NULL);
        goto out;
    }
    cfg->sqlite_path = env_dup("SQLITE_PATH", "./var/actionstools.db");
    cfg->aws_region = env_dup("AWS_REGION", getenv("AWS_DEFAULT_REGION"));
    cfg->aws_access_key_id = env_dup("AWS_ACCESS_KEY_ID", NULL);
    cfg->aws_secret_access_key = env_dup("AWS_SECRET_ACCESS_KEY", NULL);
    cfg->aws_session_token = env_dup("AWS_SESSION_TOKEN", NULL);
    cfg->dynamodb_endpoint = env_dup("DYNAMODB_ENDPOINT", NULL);
    rc = check_url("DYNAMODB_ENDPOINT", cfg->dynamodb_endpoint, "http://", "https://", err, n);
    if (rc) goto out;
    if (strcmp(cfg->storage, "dynamodb") == 0) {
        if (!cfg->aws_region && !cfg->dynamodb_endpoint) {
            rc = fail(err, n, "STORAGE=dynamodb needs AWS_REGION (or DYNAMODB_ENDPOINT for a "
                              "DynamoDB-compatible server)%s%s", "", NULL);
            goto out;
        }
        if (!cfg->aws_access_key_id || !cfg->aws_secret_access_key) {
            rc = fail(err, n, "STORAGE=dynamodb needs AWS_ACCESS_KEY_ID and "
                              "AWS_SECRET_ACCESS_KEY%s%s", "", NULL);
            goto out;
        }
    }
    rc = parse_tables(cfg, err, n);
    if (rc) goto out;

    cfg->jwt_secret = env_dup("AUTH_JWT_SECRET", NULL);
    cfg->jwt_public_key_file = env_dup("AUTH_JWT_PUBLIC_KEY_FILE", NULL);
    if (cfg->jwt_public_key_file && access(cfg->jwt_public_key_file, R_OK) != 0) {
        rc = fail(err, n, "AUTH_JWT_PUBLIC_KEY_FILE=%s: cannot read the file (%s)",
                  cfg->jwt_public_key_file, strerror(errno));
        goto out;
    }
    cfg->jwt_issuer = env_dup("AUTH_JWT_ISSUER", NULL);
    cfg->jwt_audience = env_dup("AUTH_JWT_AUDIENCE", NULL);
    cfg->cursor_secret = env_dup("CURSOR_SECRET", NULL);
    if (cfg->cursor_secret && strlen(cfg->cursor_secret) < 32) {
        rc = fail(err, n, "CURSOR_SECRET is too short: use at least 32 random bytes, for example "
                          "the output of `openssl rand -hex 32`%s%s", "", NULL);
        goto out;
    }
    rc = parse_cors(cfg, err, n);
    if (rc) goto out;

    cfg->slack_webhook_url = env_dup("SLACK_WEBHOOK_URL", NULL);
    rc = check_url("SLACK_WEBHOOK_URL", cfg->slack_webhook_url, "https://", "http://", err, n);
    if (rc) goto out;
    cfg->smtp_url = env_dup("SMTP_URL", NULL);
    rc = check_url("SMTP_URL", cfg->smtp_url, "smtp://", "smtps://", err, n);
    if (rc) goto out;
    cfg->smtp_from = env_dup("SMTP_FROM", NULL);
    cfg->smtp_user = env_dup("SMTP_USER", NULL);
    cfg->smtp_password = env_dup("SMTP_PASSWORD", NULL);
    if (cfg->smtp_url && !cfg->smtp_from) {
        rc = fail(err, n, "SMTP_URL is set but SMTP_FROM is not: give the sender address%s%s", "", NULL);
        goto out;
    }
    cfg->worker_function_name = env_dup("WORKER_FUNCTION_NAME", NULL);
    cfg->secrets_id = env_dup("SECRETS_ID", NULL);

    rc = parse_long("COUNTERS_TTL_SECONDS", "345600", 1, 315360000, &ttl, err, n);
    if (rc) goto out;
    cfg->counters_ttl_seconds = ttl;
    rc = parse_long("HTTP_MAX_CONNECTIONS", "10000", 1, 1000000, &conns, err, n);
    if (rc) goto out;
    cfg->http_max_connections = (int)conns;
    rc = parse_long("HTTP_REQUEST_TIMEOUT", "30", 1, 3600, &req_timeout, err, n);
    if (rc) goto out;
    cfg->http_request_timeout = (int)req_timeout;
    rc = parse_long("HTTP_IDLE_TIMEOUT", "60", 1, 86400, &idle_timeout, err, n);
    if (rc) goto out;
    cfg->http_idle_timeout = (int)idle_timeout;
    v = getenv("LOG_LEVEL");
    if (v && *v) {
        if (at_log_parse_level(v, &cfg->log_level)) {
            rc = fail(err, n, "LOG_LEVEL=%s: expected debug, info, warn or error%s", v, NULL);
            goto out;
        }
    } else {
        cfg->log_level = AT_LOG_INFO;
    }
out:
    if (rc) at_config_release(cfg);
    return rc;
}

int at_config_require_auth(const at_config *cfg, char *err, size_t n)
{
    if (cfg->jwt_secret || cfg->jwt_public_key_file) return 0;
    snprintf(err, n, "AUTH_JWT_SECRET is not set: set it (HS256 secret) or "
                     "AUTH_JWT_PUBLIC_KEY_FILE (RS256/ES256 public key) to verify bearer tokens");
    return AT_EINVAL;
}

static char *trim(char *s)
{
    char *e;
    while (isspace((unsigned char)*s)) s++;
    e = s + strlen(s);
    while (e > s && isspace((unsigned char)e[-1])) *--e = '\0';
    return s;
}

int at_config_load_file(const char *path, char *err, size_t n)
{
    FILE *f = fopen(path, "r");
    char line[4096];
    int lineno = 0, rc = 0;
    if (!f) {
        snprintf(err, n, "--config %s: cannot open the file (%s)", path, strerror(errno));
        return AT_EIO;
    }
    while (fgets(line, sizeof line, f)) {
        char *s = trim(line), *eq, *key, *val;
        size_t vlen;
        lineno++;
        if (!*s || *s == '#') continue;
        if (strncmp(s, "export ", 7) == 0) s = trim(s + 7);
        eq = strchr(s, '=');
        if (!eq) {
            snprintf(err, n, "%s:%d: expected KEY=VALUE", path, lineno);
            rc = AT_EINVAL;
            break;
        }
        *eq = '\0';
        key = trim(s);
        val = trim(eq + 1);
        vlen = strlen(val);
        if (vlen >= 2 && (val[0] == '"' || val[0] == '\'') && val[vlen - 1] == val[0]) {
            val[vlen - 1] = '\0';
            val++;
        }
        if (!*key) {
            snprintf(err, n, "%s:%d: empty variable name", path, lineno);
            rc = AT_EINVAL;
            break;
        }
        for (const char *p = key; *p; p++)
            if (!isalnum((unsigned char)*p) && *p != '_') {
                snprintf(err, n, "%s:%d: a variable name holds only A-Z a-z 0-9 _", path, lineno);
                rc = AT_EINVAL;
                goto done;
            }
        setenv(key, val, 0);
    }
done:
    fclose(f);
    return rc;
}

void at_config_release(at_config *cfg)
{
    char **strs[] = {&cfg->env_name, &cfg->base_prefix, &cfg->listen_host, &cfg->storage,
                     &cfg->sqlite_path, &cfg->aws_region, &cfg->aws_access_key_id,
                     &cfg->aws_secret_access_key, &cfg->aws_session_token, &cfg->dynamodb_endpoint,
                     &cfg->jwt_secret, &cfg->jwt_public_key_file, &cfg->jwt_issuer,
                     &cfg->jwt_audience, &cfg->cursor_secret, &cfg->slack_webhook_url, &cfg->smtp_url, &cfg->smtp_from,
                     &cfg->smtp_user, &cfg->smtp_password, &cfg->worker_function_name,
                     &cfg->secrets_id};
    for (size_t i = 0; i < sizeof strs / sizeof strs[0]; i++) {
        free(*strs[i]);
        *strs[i] = NULL;
    }
    for (int i = 0; i < AT_TABLE_COUNT; i++) {
        free(cfg->table_names[i]);
        cfg->table_names[i] = NULL;
    }
    for (size_t i = 0; i < cfg->ncors_origins; i++) free(cfg->cors_origins[i]);
    free(cfg->cors_origins);
    cfg->cors_origins = NULL;
    cfg->ncors_origins = 0;
}
