/* Internal to the dynamodb backend and its tests. */
#ifndef AT_STORE_DYNAMODB_H
#define AT_STORE_DYNAMODB_H

#include "actionstools/store.h"
#include "store/dynamodb/ddb_client.h"

/* Returns the client of a store opened with at_store_open_dynamodb, or NULL for a
 * store of another backend (tests read its request counts). */
at_ddb_client *at_dynamodb_client(at_store *s);

#endif
