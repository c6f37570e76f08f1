/* Subcommands that live outside main.c, and the helpers they share with it. */
#ifndef AT_CLI_H
#define AT_CLI_H

#include "actionstools/config.h"
#include "actionstools/store.h"

/* Loads and checks the configuration into cfg and applies LOG_LEVEL. Returns 0, or
 * prints what to fix on stderr and returns an exit status (2). */
int at_cli_load_config(at_config *cfg);

/* Opens the store cfg names. Returns 0, or prints why on stderr and returns an AT_* code. */
int at_cli_open_store(const at_config *cfg, at_store **store /* OUT */);

/* `actionstools export`: tables out as DynamoDB JSON lines. Returns an exit status. */
int at_cli_export(int argc, char **argv);

/* `actionstools import`: DynamoDB JSON lines into tables. Returns an exit status. */
int at_cli_import(int argc, char **argv);

#endif
