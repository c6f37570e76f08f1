/* GET /health and GET /setup-install. */
#include "api.h"
#include "actionstools/err.h"
#include "actionstools/banned.h"

const at_route_doc at_api_health_doc = {
    .answer = "the service is up: its version and storage backend",
    .schema = "{\"type\": \"object\", \"required\": [\"status\", \"version\", \"storage\"], "
              "\"properties\": {\"status\": {\"type\": \"string\", \"enum\": [\"ok\"]}, "
              "\"version\": {\"type\": \"string\"}, "
              "\"storage\": {\"type\": \"string\", \"enum\": [\"sqlite\", \"dynamodb\"]}}}",
};

const at_route_doc at_api_setup_install_doc = {
    .answer = "the tables (physical names) created now and those that were there",
    .schema = "{\"type\": \"object\", \"required\": [\"created\", \"existing\"], \"properties\": {"
              "\"created\": {\"type\": \"array\", \"items\": {\"type\": \"string\"}}, "
              "\"existing\": {\"type\": \"array\", \"items\": {\"type\": \"string\"}}}}",
    .store = 1,
};

void at_api_health(at_ctx *c)
{
    at_reply_json(c, 200, json_pack("{s:s, s:s, s:s}", "status", "ok", "version", AT_VERSION,
                                    "storage", at_store_backend(c->store)));
}

void at_api_setup_install(at_ctx *c)
{
    json_t *created = json_array(), *existing = json_array();
    int rc = at_store_setup(c->store, created, existing);
    if (rc) {
        json_decref(created);
        json_decref(existing);
        at_reply_store_error(c, rc, "create tables");
        return;
    }
    at_reply_json(c, 200, json_pack("{s:o, s:o}", "created", created, "existing", existing));
}
