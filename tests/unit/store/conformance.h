/* The storage conformance suite: DynamoDB's semantics, checked through store.h only,
 * so the same tests run against every backend (sqlite, dynamodb).
 *
 * A backend's test calls at_conformance_run with an opener. The suite opens stores
 * with table names of its own (unique per run, so runs never see each other's data),
 * runs `setup` on them itself, and frees every store it opened. */
#ifndef AT_TEST_CONFORMANCE_H
#define AT_TEST_CONFORMANCE_H

#include "actionstools/store.h"

/* Opens a store of the backend under test whose physical table names are names (all
 * AT_TABLE_COUNT of them given). Tables are not created by the opener. Returns 0 and
 * sets *out, or an AT_* code. ctx is the pointer given to at_conformance_run. */
typedef int (*at_conf_open)(void *ctx, const char *const names[AT_TABLE_COUNT],
                            at_store **out /* OUT */);

/* Returns a new item from NULL-terminated pairs (attribute name, new AV reference,
 * which the item takes): at_conf_item("pk", at_av_s("a"), "n", at_av_n_int(1), NULL). */
json_t *at_conf_item(const char *k, ...);

/* Runs the whole suite as a cmocka group called suite_name. Returns the number of
 * failed tests (0: the backend conforms). Tests of the change stream are skipped when
 * the backend's stream_read answers AT_EINVAL (a stream read elsewhere, as dynamodb's). */
int at_conformance_run(const char *suite_name, at_conf_open open, void *ctx);

#endif
