/* Configuration and store opening shared by the subcommands. */
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "actionstools/err.h"
#include "actionstools/log.h"
#include "actionstools/banned.h"

int at_cli_load_config(at_config *cfg)
{
    char err[512] = "";
    if (at_config_load(cfg, err, sizeof err)) {
        fprintf(stderr, "actionstools: configuration: %s\n", err);
        return 2;
    }
    at_log_set_level(cfg->log_level);
    if (cfg->secrets_id) {
        fprintf(stderr, "actionstools: SECRETS_ID is set, but loading AWS Secrets Manager secrets is "
                        "not in this version; export the values as variables instead\n");
        at_config_release(cfg);
        return 2;
    }
    return 0;
}

int at_cli_open_store(const at_config *cfg, at_store **store)
{
    char err[512] = "";
    int rc;
    if (strcmp(cfg->storage, "dynamodb") == 0) {
        at_aws_options o = {cfg->dynamodb_endpoint, cfg->aws_region, cfg->aws_access_key_id,
                            cfg->aws_secret_access_key, cfg->aws_session_token, 0, 0, -1};
        rc = at_store_open_dynamodb(&o, (const char *const *)cfg->table_names, store, err, sizeof err);
    } else {
        rc = at_store_open_sqlite(cfg->sqlite_path, (const char *const *)cfg->table_names, store, err,
                                  sizeof err);
    }
    if (rc) fprintf(stderr, "actionstools: cannot open the %s store: %s\n", cfg->storage, err[0] ? err : at_strerror(rc));
    return rc;
}

