/* actionstools: the only main(). A table of subcommands (git.c's commands[]); each
 * reads the configuration, opens the store and wires what it needs. */
#include <errno.h>
#include <getopt.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "actionstools/config.h"
#include "actionstools/err.h"
#include "actionstools/server.h"
#include "actionstools/jwt.h"
#include "actionstools/log.h"
#include "actionstools/store.h"
#include "actionstools/timeutil.h"
#include "actionstools/uuid.h"
#include "cli/cli.h"
#include "actionstools/banned.h"

static int cmd_serve(int argc, char **argv);
static int cmd_setup(int argc, char **argv);
static int cmd_token(int argc, char **argv);
static int cmd_help(int argc, char **argv);
static int cmd_version(int argc, char **argv);

static const struct command {
    const char *name;
    int (*fn)(int argc, char **argv);
    const char *help;
} commands[] = {
    {"serve", cmd_serve, "run the HTTP API (the default command)"},
    {"setup", cmd_setup, "create missing tables and indexes in the configured store"},
    {"token", cmd_token, "mint a development bearer token (--user, --name, --instance, --admin, --ttl)"},
    {"export", at_cli_export, "write tables as DynamoDB JSON lines (--table NAME, --out FILE)"},
    {"import", at_cli_import, "read DynamoDB JSON lines into tables (--table NAME, --in FILE)"},
    {"help", cmd_help, "show this help"},
    {NULL, NULL, NULL},
};

static int cmd_help(int argc, char **argv)
{
    printf("actionstools %s: the notes, tasks and activity backend of the CRM\n\n"
           "usage: actionstools [--config FILE] [COMMAND] [OPTIONS]\n\ncommands:\n",
           AT_VERSION);
    for (const struct command *c = commands; c->name; c++) printf("  %-8s %s\n", c->name, c->help);
    printf("\noptions:\n"
           "  --config FILE  read settings from a .env-style file (the environment wins)\n"
           "  --no-worker    (serve) accepted for compatibility; this version runs no worker\n"
           "  --help, --version\n\n"
           "Settings come from the environment: STORAGE (sqlite|dynamodb), SQLITE_PATH, LISTEN,\n"
           "AUTH_JWT_SECRET or AUTH_JWT_PUBLIC_KEY_FILE, BASE_PREFIX, ENV_NAME, TABLE_<NAME>,\n"
           "AWS_REGION, DYNAMODB_ENDPOINT, CORS_ALLOW_ORIGINS, LOG_LEVEL... See README.md.\n");
    return 0;
}

static int cmd_version(int argc, char **argv)
{
    printf("actionstools %s\n", AT_VERSION);
    return 0;
}

static int setup_tables(at_store *store, int quiet)
{
    json_t *created = json_array(), *existing = json_array();
    int rc = at_store_setup(store, created, existing);
    if (rc) {
        fprintf(stderr, "actionstools: setup failed: %s\n", at_strerror(rc));
    } else if (!quiet) {
        char *c = json_dumps(created, JSON_COMPACT), *e = json_dumps(existing, JSON_COMPACT);
        printf("{\"created\":%s,\"existing\":%s}\n", c ? c : "[]", e ? e : "[]");
        free(c);
        free(e);
    } else if (json_array_size(created)) {
        json_t *f = json_pack("{s:O}", "created", created);
        at_log_json(AT_LOG_INFO, "created missing tables", f);
        json_decref(f);
    }
    json_decref(created);
    json_decref(existing);
    return rc;
}

static int cmd_setup(int argc, char **argv)
{
    at_config cfg;
    at_store *store = NULL;
    int rc = at_cli_load_config(&cfg);
    if (rc) return rc;
    rc = at_cli_open_store(&cfg, &store);
    if (!rc) rc = setup_tables(store, 0);
    at_store_free(store);
    at_config_release(&cfg);
    return rc ? 1 : 0;
}

/* The sqlite backend expires TTL items itself, as DynamoDB does, once a minute. */
static pthread_mutex_t sweep_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t sweep_cond = PTHREAD_COND_INITIALIZER;
static int sweep_stop;

static void *sweeper(void *arg)
{
    at_store *store = arg;
    pthread_mutex_lock(&sweep_lock);
    while (!sweep_stop) {
        struct timespec until;
        size_t removed = 0;
        pthread_mutex_unlock(&sweep_lock);
        if (at_store_sweep_expired(store, at_now_us() / 1000000, &removed) == 0 && removed)
            at_log(AT_LOG_INFO, "expired %zu items (TTL)", removed);
        pthread_mutex_lock(&sweep_lock);
        clock_gettime(CLOCK_REALTIME, &until);
        until.tv_sec += 60;
        while (!sweep_stop && pthread_cond_timedwait(&sweep_cond, &sweep_lock, &until) == 0) {
        }
    }
    pthread_mutex_unlock(&sweep_lock);
    return NULL;
}

static int cmd_serve(int argc, char **argv)
{
    at_config cfg;
    at_store *store = NULL;
    at_app *app = NULL;
    char err[512] = "";
    pthread_t sweep_thread;
    sigset_t sigs;
    int rc, sweeping = 0;

    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--no-worker") == 0) continue;
        fprintf(stderr, "actionstools serve: unknown option '%s' (see --help)\n", argv[i]);
        return 2;
    }
    /* SIGINT/SIGTERM wait until the server takes them (sigwait in at_server_run), so a
     * signal during start-up still ends in a clean shutdown. */
    sigemptyset(&sigs);
    sigaddset(&sigs, SIGINT);
    sigaddset(&sigs, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &sigs, NULL);
    rc = at_cli_load_config(&cfg);
    if (rc) return rc;
    if (at_config_require_auth(&cfg, err, sizeof err)) {
        fprintf(stderr, "actionstools: configuration: %s\n", err);
        at_config_release(&cfg);
        return 2;
    }
    rc = at_cli_open_store(&cfg, &store);
    if (rc) goto out;
    /* The embedded store needs nothing installed: its tables are made at start. */
    if (strcmp(cfg.storage, "sqlite") == 0) {
        rc = setup_tables(store, 1);
        if (rc) goto out;
        sweeping = pthread_create(&sweep_thread, NULL, sweeper, store) == 0;
    }
    rc = at_app_new(&cfg, store, &app, err, sizeof err);
    if (rc) {
        fprintf(stderr, "actionstools: %s\n", err);
        goto out;
    }
    {
        /* Workers wait on the network (dynamodb) or on the sqlite writer; on sqlite they
         * stay well under the store's 64 connections, so that the reads on the polling
         * threads never wait for one. */
        at_server_options so = {cfg.listen_host, cfg.listen_port, cfg.http_max_connections,
                                cfg.http_request_timeout, cfg.http_idle_timeout,
                                strcmp(cfg.storage, "dynamodb") == 0 ? 64 : 32};
        rc = at_server_run(app, &so, err, sizeof err);
    }
    if (rc) fprintf(stderr, "actionstools: %s\n", err);
out:
    if (sweeping) {
        pthread_mutex_lock(&sweep_lock);
        sweep_stop = 1;
        pthread_cond_signal(&sweep_cond);
        pthread_mutex_unlock(&sweep_lock);
        pthread_join(sweep_thread, NULL);
    }
    at_app_free(app);
    at_store_free(store);
    at_config_release(&cfg);
    return rc ? 1 : 0;
}

static int cmd_token(int argc, char **argv)
{
    static const struct option opts[] = {
        {"user", required_argument, NULL, 'u'},     {"name", required_argument, NULL, 'n'},
        {"instance", required_argument, NULL, 'i'}, {"admin", no_argument, NULL, 'a'},
        {"ttl", required_argument, NULL, 't'},      {NULL, 0, NULL, 0},
    };
    char fresh[AT_UUID_LEN + 1], *token, *end;
    const char *user = NULL, *name = "Developer", *instance = "dev";
    long ttl = 86400;
    int admin = 0, opt, rc;
    at_config cfg;
    json_t *claims;
    int64_t now = at_now_us() / 1000000;

    optind = 1;
    while ((opt = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        switch (opt) {
        case 'u': user = optarg; break;
        case 'n': name = optarg; break;
        case 'i': instance = optarg; break;
        case 'a': admin = 1; break;
        case 't':
            errno = 0;
            ttl = strtol(optarg, &end, 10);
            if (errno || *end || ttl < 1 || ttl > 31536000) {
                fprintf(stderr, "actionstools token: --ttl takes seconds, 1 to 31536000\n");
                return 2;
            }
            break;
        default: return 2;
        }
    }
    rc = at_cli_load_config(&cfg);
    if (rc) return rc;
    if (!cfg.jwt_secret) {
        fprintf(stderr, "actionstools token: AUTH_JWT_SECRET is not set; tokens are signed with it (HS256)\n");
        at_config_release(&cfg);
        return 2;
    }
    if (!user) {
        at_uuid_new(fresh);
        user = fresh;
    }
    claims = json_pack("{s:s, s:s, s:s, s:[], s:I, s:I}", "sub", user, "name", name, "instance_id",
                       instance, "roles", "iat", (json_int_t)now, "exp", (json_int_t)(now + ttl));
    if (admin) json_array_append_new(json_object_get(claims, "roles"), json_string("CRM_ADMIN"));
    if (cfg.jwt_issuer) json_object_set_new(claims, "iss", json_string(cfg.jwt_issuer));
    if (cfg.jwt_audience) json_object_set_new(claims, "aud", json_string(cfg.jwt_audience));
    token = at_jwt_sign_hs256(cfg.jwt_secret, claims);
    json_decref(claims);
    at_config_release(&cfg);
    if (!token) {
        fprintf(stderr, "actionstools token: cannot sign the token\n");
        return 1;
    }
    printf("%s\n", token);
    free(token);
    return 0;
}

static int load_config_file(int *argc, char **argv)
{
    /* --config FILE may come before or after the command; it is removed from argv. */
    int out = 1;
    for (int i = 1; i < *argc; i++) {
        if (strcmp(argv[i], "--config") == 0 || strncmp(argv[i], "--config=", 9) == 0) {
            const char *path = argv[i][8] == '=' ? argv[i] + 9 : (i + 1 < *argc ? argv[++i] : NULL);
            char err[512];
            if (!path || !*path) {
                fprintf(stderr, "actionstools: --config needs a file name\n");
                return 2;
            }
            if (at_config_load_file(path, err, sizeof err)) {
                fprintf(stderr, "actionstools: %s\n", err);
                return 2;
            }
            continue;
        }
        argv[out++] = argv[i];
    }
    *argc = out;
    argv[out] = NULL;
    return 0;
}

int main(int argc, char **argv)
{
    const char *name;
    int rc = load_config_file(&argc, argv);
    if (rc) return rc;
    name = argc > 1 ? argv[1] : "serve";
    if (strcmp(name, "--help") == 0 || strcmp(name, "-h") == 0) return cmd_help(argc, argv);
    if (strcmp(name, "--version") == 0 || strcmp(name, "-V") == 0) return cmd_version(argc, argv);
    if (name[0] == '-' && strcmp(name, "--no-worker") == 0) return cmd_serve(argc, argv);
    for (const struct command *c = commands; c->name; c++) {
        if (strcmp(c->name, name) == 0) {
            if (argc > 2 && (strcmp(argv[2], "--help") == 0 || strcmp(argv[2], "-h") == 0)) {
                printf("actionstools %s: %s\n", c->name, c->help);
                return 0;
            }
            return c->fn(argc - 1, argv + 1);
        }
    }
    fprintf(stderr, "actionstools: '%s' is not a command; see actionstools --help\n", name);
    return 2;
}
