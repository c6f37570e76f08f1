/* Unit tests of at_notification_create (src/api/notifications.c), the worker's way to
 * notify a user, on a sqlite store: the item it writes, once per (tenant, recipient,
 * id) whatever the retries and however many run at once, and its refusals. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "actionstools/av.h"
#include "actionstools/err.h"
#include "actionstools/notification.h"
#include "actionstools/timeutil.h"
#include "actionstools/uuid.h"
#include "actionstools/banned.h"

static char dir[64];
static at_store *store;

static int setup(void **state)
{
    const char *names[AT_TABLE_COUNT];
    char path[128], err[256];
    (void)state;
    snprintf(dir, sizeof dir, "/tmp/at-notify-XXXXXX");
    if (!mkdtemp(dir)) return -1;
    snprintf(path, sizeof path, "%s/t.db", dir);
    for (int i = 0; i < AT_TABLE_COUNT; i++)
        names[i] = at_schema_table((at_table_id)i)->env_name;
    if (at_store_open_sqlite(path, names, &store, err, sizeof err)) return -1;
    return at_store_setup(store, NULL, NULL);
}

static int teardown(void **state)
{
    char path[128];
    (void)state;
    at_store_free(store);
    for (const char *const *f = (const char *const[]){"t.db", "t.db-wal", "t.db-shm", NULL}; *f;
         f++) {
        snprintf(path, sizeof path, "%s/%s", dir, *f);
        unlink(path);
    }
    rmdir(dir);
    return 0;
}

static at_notification sample(const char *id)
{
    at_notification n = {
        .instance_id = "tenant-a",
        .recipient = "11111111-1111-4111-8111-111111111111",
        .id = id,
        .kind = "task_assigned",
        .title = "You have a task",
        .body = "Call the client",
        .subject_type = "task",
        .subject_uuid = "22222222-2222-4222-8222-222222222222",
        .actor_uuid = "33333333-3333-4333-8333-333333333333",
        .actor_name = "Ann",
    };
    return n;
}

static const char *s(const json_t *item, const char *attr)
{
    const char *v = at_item_s(item, attr);
    if (!v) fail_msg("no string %s", attr);
    return v;
}

static int64_t n_of(const json_t *item, const char *attr)
{
    int64_t v = -1;
    if (!at_item_n_int(item, attr, &v)) fail_msg("no number %s", attr);
    return v;
}

static void test_the_item(void **state)
{
    at_notification n = sample("seq-1:task_assigned");
    json_t *data = json_pack("{s:[i,s,n], s:b}", "l", 1, "x", "f", 1), *item = NULL, *stored = NULL,
           *key, *want;
    int created = -1;
    char why[128];
    int64_t us;
    (void)state;
    n.data = data;
    assert_int_equal(at_notification_create(store, &n, &item, &created, why, sizeof why), 0);
    assert_int_equal(created, 1);
    assert_true(at_uuid_valid(s(item, "uuid")));
    assert_int_equal(s(item, "uuid")[14], '5'); /* a name-based (version 5) uuid */
    assert_string_equal(s(item, "target_uuid"), n.recipient);
    assert_string_equal(s(item, "instance_id"), "tenant-a");
    assert_string_equal(s(item, "kind"), "task_assigned");
    assert_string_equal(s(item, "title"), "You have a task");
    assert_string_equal(s(item, "body"), "Call the client");
    assert_string_equal(s(item, "subject_type"), "task");
    assert_string_equal(s(item, "subject_uuid"), n.subject_uuid);
    assert_string_equal(s(item, "actor_uuid"), n.actor_uuid);
    assert_string_equal(s(item, "actor_name"), "Ann");
    assert_int_equal(n_of(item, "is_read"), 0); /* N 0/1: keys of the inbox's indexes */
    assert_int_equal(n_of(item, "is_hidden"), 0);
    assert_int_equal(n_of(item, "version"), 1);
    assert_string_equal(s(item, "created_at"), s(item, "updated_at"));
    assert_int_equal(at_timestamp_parse(s(item, "created_at"), &us), 0);
    want = at_av_from_json(data);
    assert_true(json_equal(json_object_get(item, "data"), want)); /* a native AV, not text */
    json_decref(want);
    assert_int_equal(json_object_size(item), 16);
    /* what the store holds */
    key = json_pack("{s:{s:s}, s:{s:s}}", "target_uuid", "S", n.recipient, "uuid", "S",
                    s(item, "uuid"));
    assert_int_equal(at_store_get(store, AT_TABLE_NOTIFICATIONS, key, &stored), 0);
    assert_true(json_equal(stored, item));
    json_decref(stored);
    json_decref(key);
    json_decref(item);
    json_decref(data);
}

static void test_once_per_id(void **state)
{
    at_notification n = sample("seq-2:mentioned");
    json_t *first = NULL, *again = NULL, *other = NULL;
    int created = -1;
    char why[128];
    (void)state;
    n.kind = "mentioned";
    n.title = NULL; /* optional fields are left out */
    n.body = NULL;
    assert_int_equal(at_notification_create(store, &n, &first, &created, why, sizeof why), 0);
    assert_int_equal(created, 1);
    assert_null(json_object_get(first, "title"));
    assert_null(json_object_get(first, "data"));
    usleep(2000);
    n.title = "a retry that differs is still the same notification";
    assert_int_equal(at_notification_create(store, &n, &again, &created, why, sizeof why), 0);
    assert_int_equal(created, 0);
    assert_true(json_equal(first, again)); /* the one made first, created_at and all */
    /* another recipient, tenant or id: another notification */
    n.recipient = "44444444-4444-4444-8444-444444444444";
    assert_int_equal(at_notification_create(store, &n, &other, &created, why, sizeof why), 0);
    assert_int_equal(created, 1);
    assert_string_not_equal(s(other, "uuid"), s(first, "uuid"));
    json_decref(other);
    n = sample("seq-2:mentioned");
    n.kind = "mentioned";
    n.instance_id = "tenant-b";
    assert_int_equal(at_notification_create(store, &n, &other, &created, why, sizeof why), 0);
    assert_int_equal(created, 1);
    assert_string_not_equal(s(other, "uuid"), s(first, "uuid"));
    json_decref(other);
    n.instance_id = "tenant-a";
    n.id = "seq-3:mentioned";
    assert_int_equal(at_notification_create(store, &n, NULL, &created, why, sizeof why),
                     0); /* item NULL: fine */
    assert_int_equal(created, 1);
    json_decref(first);
    json_decref(again);
}

typedef struct racer {
    pthread_t t;
    int rc, created;
    char uuid[AT_UUID_LEN + 1];
} racer;

static void *race(void *arg)
{
    racer *r = arg;
    at_notification n = sample("seq-race");
    json_t *item = NULL;
    char why[128];
    r->rc = at_notification_create(store, &n, &item, &r->created, why, sizeof why);
    if (item) snprintf(r->uuid, sizeof r->uuid, "%s", at_item_s(item, "uuid"));
    json_decref(item);
    return NULL;
}

/* Deliveries at once (at least once, in parallel): exactly one makes it. */
static void test_concurrent(void **state)
{
    racer r[8];
    int made = 0;
    (void)state;
    for (int i = 0; i < 8; i++)
        pthread_create(&r[i].t, NULL, race, &r[i]);
    for (int i = 0; i < 8; i++)
        pthread_join(r[i].t, NULL);
    for (int i = 0; i < 8; i++) {
        assert_int_equal(r[i].rc, 0);
        made += r[i].created;
        assert_string_equal(r[i].uuid, r[0].uuid);
    }
    assert_int_equal(made, 1);
}

static void expect_refused(at_notification n, const char *part)
{
    int created = -1;
    char why[128];
    json_t *item = (json_t *)1;
    assert_int_equal(at_notification_create(store, &n, &item, &created, why, sizeof why),
                     AT_EINVAL);
    assert_null(item);
    assert_int_equal(created, 0);
    if (!strstr(why, part)) fail_msg("\"%s\" does not say \"%s\"", why, part);
}

static void test_refusals(void **state)
{
    at_notification n;
    json_t *big = json_real(1e200);
    (void)state;
    n = sample("x");
    n.kind = "task_done";
    expect_refused(n, "kind");
    n.kind = NULL;
    expect_refused(n, "kind");
    n = sample("x");
    n.recipient = "";
    expect_refused(n, "recipient");
    n.recipient = NULL;
    expect_refused(n, "recipient");
    n = sample("x");
    n.instance_id = "a\nb";
    expect_refused(n, "instance_id");
    n = sample("");
    expect_refused(n, "id");
    n = sample(NULL);
    expect_refused(n, "id");
    n = sample("x");
    n.data = big;
    expect_refused(n, "DynamoDB's range");
    json_decref(big);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_the_item),
        cmocka_unit_test(test_once_per_id),
        cmocka_unit_test(test_concurrent),
        cmocka_unit_test(test_refusals),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
