/* Creates, and the client uuids that make them idempotent (SPEC §3: a uuid names at
 * most one item of a resource within a tenant, under any concurrency, on both
 * backends; docs/decisions.md "Client uuids").
 *
 * A resource keyed by (instance_id, uuid) gets that from its table key alone. The
 * others are keyed by their record (target_uuid, uuid), so before such an item is
 * written its uuid is claimed in the counters table by one conditional put of
 *
 *   counter_seq_key = "uuid#<resource>#<instance_id>#<uuid>", partition, owner_uuid
 *
 * Of concurrent creates exactly one claim put succeeds. A create that finds a claim
 * of the same owner on the same record is a retry: it answers the item, or finishes
 * writing it when the first attempt stopped in between. Anything else is 409. Items
 * written without a claim (by the original service) are found through the tenant's
 * uuid index. */
#include <string.h>

#include "api.h"
#include "actionstools/err.h"
#include "actionstools/banned.h"

/* Every unusable client uuid gets this one answer: it tells nothing of the item that
 * holds the uuid, which may be another tenant's. */
static void refuse(at_ctx *c, const at_resource *r, const char *uuid)
{
    at_reply_error(c, 409, "the uuid %s cannot be used for a new %s; send a new uuid or none", uuid, r->name);
}

/* Returns 1 when the existing item and the create name the same record: the key holds
 * it when the resource is keyed by its record; a resource keyed by the tenant (tasks)
 * has it in target_uuid (both without one is the same). */
static int same_record(const at_resource *r, const json_t *item, const json_t *want)
{
    const json_t *a = json_object_get(item, "target_uuid"), *b = json_object_get(want, "target_uuid");
    if (r->pk.src != AT_SRC_TENANT || !want) return 1;
    return (!a && !b) || (a && b && at_av_equal(a, b));
}

/* Answers a create (want; NULL: not known) whose item already exists: 200 with it when
 * it is live, the caller's own (same tenant and owner) and of the same record, else 409. */
static void answer_existing(at_ctx *c, const at_resource *r, const json_t *item, const char *uuid,
                            const json_t *want)
{
    const char *inst = at_item_s(item, "instance_id"), *owner = at_item_s(item, "owner_uuid");
    if (!at_item_has(item, "deleted_at") && inst && owner && strcmp(inst, c->id->instance_id) == 0 &&
        strcmp(owner, c->id->user_uuid) == 0 && same_record(r, item, want))
        at_api_reply_item(c, r, 200, item);
    else
        refuse(c, r, uuid);
}

/* Reads the item at key and answers as answer_existing. Returns 1 when there is none
 * (the caller may write it), 0 after answering. */
static int existing(at_ctx *c, const at_resource *r, const json_t *key, const char *uuid, const json_t *want)
{
    json_t *item = NULL;
    int rc = at_store_get(c->store, r->table, key, &item);
    if (rc == AT_ENOTFOUND) return 1;
    if (rc)
        at_reply_store_error(c, rc, "read an item");
    else
        answer_existing(c, r, item, uuid, want);
    json_decref(item);
    return 0;
}

/* Builds the claim of uuid for (partition pk, owner). Returns a new item or NULL. */
static json_t *claim_item(at_ctx *c, const at_resource *r, const char *name, const char *uuid,
                          const char *pk, const char *owner)
{
    json_t *item = json_pack("{s:{s:s}, s:{s:s}, s:{s:s}, s:{s:s}, s:{s:s}, s:{s:s}}", "counter_seq_key",
                             "S", name, "resource", "S", r->plural, "instance_id", "S",
                             c->id->instance_id, "uuid", "S", uuid, "partition", "S", pk, "owner_uuid",
                             "S", owner);
    if (item && at_api_set_now(r, item, "created_at")) {
        json_decref(item);
        item = NULL;
    }
    return item;
}

/* Looks for an item of this uuid in the tenant written without a claim (by the
 * original service). When there is one on another record or of another owner, the
 * claim just made for (pk, caller) is pointed at it, so that its owner's retries find
 * it; an item elsewhere answers 409. Returns 1 to go on, 0 after answering. */
static int check_unclaimed(at_ctx *c, const at_resource *r, const char *name, const char *pk,
                           const char *uuid)
{
    const at_table_def *t = at_schema_table(r->table);
    json_t *inst = at_av_s(c->id->instance_id), *u = at_av_s(uuid), *fix = NULL, *me = NULL, *pkav = NULL;
    const json_t *found;
    const char *fpk, *fowner;
    at_page page = {0};
    at_query q;
    int rc, out = 1;
    if (!r->uuid_index) goto done;
    memset(&q, 0, sizeof q);
    q.table = r->table;
    q.index = r->uuid_index;
    q.pk = inst;
    q.sk = (at_clause){"uuid", AT_OP_EQ, u, NULL};
    q.forward = 1;
    q.limit = 1;
    rc = at_store_query(c->store, &q, &page);
    found = json_array_get(page.items, 0);
    fpk = at_item_s(found, t->pk.name);
    fowner = at_item_s(found, "owner_uuid");
    if (rc) {
        at_reply_store_error(c, rc, "look up a uuid");
        out = 0;
    } else if (found && fpk && fowner && (strcmp(fpk, pk) != 0 || strcmp(fowner, c->id->user_uuid) != 0)) {
        at_clause mine[2] = {{"partition", AT_OP_EQ, pkav = at_av_s(pk), NULL},
                             {"owner_uuid", AT_OP_EQ, me = at_av_s(c->id->user_uuid), NULL}};
        at_cond cond = {mine, 2};
        /* Best effort: were it lost, only that owner's retries would get 409. */
        if ((fix = claim_item(c, r, name, uuid, fpk, fowner)) && pkav && me)
            at_store_put(c->store, AT_TABLE_COUNTERS, fix, &cond);
        if (strcmp(fpk, pk) != 0) {
            refuse(c, r, uuid);
            out = 0;
        }
    }
    at_page_release(&page);
done:
    json_decref(inst);
    json_decref(u);
    json_decref(fix);
    json_decref(me);
    json_decref(pkav);
    return out;
}

/* Claims uuid for the caller on record pk. Returns 1 when the caller holds the claim
 * and no item is in the way (go on and write), 0 after answering. */
static int claim(at_ctx *c, const at_resource *r, const char *pk, const char *uuid, const json_t *key)
{
    const char *name = at_arena_printf(c->arena, "uuid#%s#%s#%s", r->plural, c->id->instance_id, uuid);
    at_clause nx = {"counter_seq_key", AT_OP_NOT_EXISTS, NULL, NULL};
    at_cond cond = {&nx, 1};
    json_t *item = name ? claim_item(c, r, name, uuid, pk, c->id->user_uuid) : NULL, *ckey = NULL,
           *held = NULL;
    const char *held_pk, *held_owner;
    int rc, out = 0;

    if (!item) {
        at_reply_error(c, 500, "out of memory");
        goto out;
    }
    rc = at_store_put(c->store, AT_TABLE_COUNTERS, item, &cond);
    if (rc && rc != AT_ECOND) {
        at_reply_store_error(c, rc, "claim a uuid");
        goto out;
    }
    if (rc == AT_ECOND) {
        /* Claimed before: by this caller on this record (a retry, or a twin running
         * alongside), or by someone or somewhere else. */
        ckey = json_pack("{s:{s:s}}", "counter_seq_key", "S", name);
        rc = ckey ? at_store_get(c->store, AT_TABLE_COUNTERS, ckey, &held) : AT_ENOMEM;
        if (rc && rc != AT_ENOTFOUND) {
            at_reply_store_error(c, rc, "read a uuid claim");
            goto out;
        }
        held_pk = at_item_s(held, "partition");
        held_owner = at_item_s(held, "owner_uuid");
        if (rc || !held_pk || !held_owner || strcmp(held_pk, pk) != 0 ||
            strcmp(held_owner, c->id->user_uuid) != 0) {
            refuse(c, r, uuid);
            goto out;
        }
        if (!existing(c, r, key, uuid, NULL)) goto out;
    }
    /* The item is written only after this check, by whoever writes it: so a claim that
     * points nowhere yet never lets a second item in. */
    out = check_unclaimed(c, r, name, pk, uuid);
out:
    json_decref(item);
    json_decref(ckey);
    json_decref(held);
    return out;
}

int at_api_put_new(at_ctx *c, const at_resource *r, const json_t *item, int client_uuid)
{
    const at_table_def *t = at_schema_table(r->table);
    const char *pk = at_item_s(item, t->pk.name), *uuid = at_item_s(item, t->sk.name);
    at_clause nx = {t->sk.name, AT_OP_NOT_EXISTS, NULL, NULL};
    at_cond cond = {&nx, 1};
    json_t *key = at_schema_item_key(t, NULL, item);
    int rc, out = 0;

    if (!key || !pk || !uuid) {
        at_reply_error(c, 500, "the new item has no key");
        goto out;
    }
    if (client_uuid && r->pk.src != AT_SRC_TENANT && !claim(c, r, pk, uuid, key)) goto out;
    rc = at_store_put(c->store, r->table, item, &cond);
    if (rc == AT_ECOND) {
        if (existing(c, r, key, uuid, item)) refuse(c, r, uuid); /* gone again at once: never mind */
    } else if (rc)
        at_reply_store_error(c, rc, "create an item");
    else
        out = 1;
out:
    json_decref(key);
    return out;
}
