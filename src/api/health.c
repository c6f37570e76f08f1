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
    /* Every load balancer's probe: written without building a JSON tree (the version and
     * the backend's name are plain words: nothing to escape). */
    at_buf b;
    at_buf_init(&b, 256);
    if (at_buf_adds(&b, "{\"status\":\"ok\",\"version\":\"" AT_VERSION "\",\"storage\":\"") ||
        at_buf_adds(&b, at_store_backend(c->store)) || at_buf_adds(&b, "\"}")) {
        at_buf_release(&b);
        at_reply_error(c, 500, "out of memory");
        return;
    }
    at_reply_json_buf(c, 200, &b);
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
