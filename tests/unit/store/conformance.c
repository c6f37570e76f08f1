/* The storage conformance suite (see conformance.h). Written against store.h only. */
#include <inttypes.h>
#include <pthread.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>

#include "conformance.h"
#include "actionstools/av.h"
#include "actionstools/err.h"
#include "actionstools/packed.h"
#include "actionstools/banned.h"

/* The suite's state: one store on tables set up once, used by most tests; tests keep
 * apart by partition keys that start with their own name. */
static struct {
    at_conf_open open;
    void *ctx;
    char run[32];
    char names[AT_TABLE_COUNT][128];
    const char *np[AT_TABLE_COUNT];
    at_store *s;
} G;

/* ---- helpers ---- */

static json_t *S(const char *s)
{
    return at_av_s(s);
}

static json_t *N(int64_t n)
{
    return at_av_n_int(n);
}

static json_t *NT(const char *text)
{
    return at_av_n_text(text);
}

json_t *at_conf_item(const char *k, ...)
{
    json_t *it = json_object();
    va_list ap;
    va_start(ap, k);
    for (; k; k = va_arg(ap, const char *))
        json_object_set_new(it, k, va_arg(ap, json_t *));
    va_end(ap);
    return it;
}

/* Writes "<run>-<what>" into out: a partition key of this run. */

static const char *uniq(char *out, size_t n, const char *what)
{
    snprintf(out, n, "%s-%s", G.run, what);
    return out;
}

static void make_names(char names[AT_TABLE_COUNT][128], const char *np[AT_TABLE_COUNT],
                       const char *tag)
{
    for (int i = 0; i < AT_TABLE_COUNT; i++) {
        snprintf(names[i], 128, "conf_%s%s_%s", G.run, tag, at_schema_table(i)->logical);
        np[i] = names[i];
    }
}

/* Opens a store on fresh table names with the given tag; sets them up when asked. */
static at_store *open_fresh(const char *tag, int setup, char names[AT_TABLE_COUNT][128])
{
    const char *np[AT_TABLE_COUNT];
    at_store *s = NULL;
    make_names(names, np, tag);
    assert_int_equal(G.open(G.ctx, np, &s), 0);
    assert_non_null(s);
    if (setup) assert_int_equal(at_store_setup(s, NULL, NULL), 0);
    return s;
}

static json_t *get_ok(at_table_id t, json_t *key)
{
    json_t *it = NULL;
    assert_int_equal(at_store_get(G.s, t, key, &it), 0);
    assert_non_null(it);
    return it;
}

static void assert_absent(at_table_id t, json_t *key)
{
    json_t *it = NULL;
    assert_int_equal(at_store_get(G.s, t, key, &it), AT_ENOTFOUND);
    assert_null(it);
}

static void put_ok(at_table_id t, json_t *it)
{
    assert_int_equal(at_store_put(G.s, t, it, NULL), 0);
    json_decref(it);
}

static const char *sattr(const json_t *it, const char *a)
{
    const char *s = at_item_s(it, a);
    assert_non_null(s);
    return s;
}

/* Runs q page by page (limit per page) and returns every item, checking that each
 * page but the last is full and that last_key is set exactly when a page is full.
 * Then runs it again with AT_Q_RAW and checks that the raw pages hold the same items
 * (packed) and the same last keys. */
static json_t *query_all(at_store *s, at_query q, size_t limit)
{
    json_t *all = json_array(), *keys = json_array(), *start = NULL;
    size_t n = 0, pages = 0;
    for (int guard = 0; guard < 10000; guard++) {
        at_page p = {0};
        q.limit = limit;
        q.start_key = start;
        assert_int_equal(at_store_query(s, &q, &p), 0);
        assert_non_null(p.items);
        assert_true(json_array_size(p.items) <= limit);
        if (json_array_size(p.items) < limit)
            assert_null(p.last_key);
        else
            assert_non_null(p.last_key);
        json_array_extend(all, p.items);
        json_decref(start);
        start = p.last_key ? json_incref(p.last_key) : NULL;
        json_array_append_new(keys, start ? json_incref(start) : json_null());
        at_page_release(&p);
        if (!start) break;
    }
    assert_null(start);
    q.flags |= AT_Q_RAW;
    for (;; pages++) {
        at_page p = {0};
        q.limit = limit;
        q.start_key = start;
        assert_int_equal(at_store_query(s, &q, &p), 0);
        assert_null(p.items);
        for (size_t i = 0; i < p.nraw; i++, n++) {
            size_t len;
            const unsigned char *raw = at_page_raw(&p, i, &len);
            json_t *it = at_packed_decode(raw, len);
            assert_non_null(it);
            assert_true(json_equal(it, json_array_get(all, n)));
            json_decref(it);
        }
        assert_true(json_equal(p.last_key ? p.last_key : json_null(), json_array_get(keys, pages)));
        json_decref(start);
        start = p.last_key ? json_incref(p.last_key) : NULL;
        at_page_release(&p);
        if (!start) break;
    }
    assert_int_equal(n, json_array_size(all));
    assert_int_equal(pages + 1, json_array_size(keys));
    json_decref(keys);
    return all;
}

/* Runs q page by page like query_all, where the work bound may stop pages early:
 * checks that no page holds more than limit items and that a page without last_key
 * ends the query; counts the pages and the short pages that have a last_key. Returns
 * every item (decoded from raw pages with AT_Q_RAW). */
static json_t *query_bounded(at_store *s, at_query q, size_t limit, int *pages, int *short_pages)
{
    json_t *all = json_array(), *start = NULL;
    *pages = *short_pages = 0;
    for (int guard = 0; guard < 10000; guard++) {
        at_page p = {0};
        q.limit = limit;
        q.start_key = start;
        assert_int_equal(at_store_query(s, &q, &p), 0);
        assert_true(at_page_count(&p) <= limit);
        (*pages)++;
        if (at_page_count(&p) < limit && p.last_key) (*short_pages)++;
        if (q.flags & AT_Q_RAW) {
            for (size_t i = 0; i < p.nraw; i++) {
                size_t len;
                const unsigned char *raw = at_page_raw(&p, i, &len);
                json_t *it = at_packed_decode(raw, len);
                assert_non_null(it);
                json_array_append_new(all, it);
            }
        } else {
            json_array_extend(all, p.items);
        }
        json_decref(start);
        start = p.last_key ? json_incref(p.last_key) : NULL;
        at_page_release(&p);
        if (!start) break;
    }
    assert_null(start);
    return all;
}

/* Returns the attribute attr of every item of arr as one "a,b,c" string. */
static char *column(const json_t *arr, const char *attr)
{
    size_t i, len = 0;
    json_t *it;
    char *out = calloc(1, 1);
    json_array_foreach(arr, i, it)
    {
        const json_t *v = json_object_get(it, attr);
        const char *s = json_string_value(json_object_get(v, "S"));
        if (!s) s = json_string_value(json_object_get(v, "N"));
        if (!s) s = "-";
        out = realloc(out, len + strlen(s) + 2);
        len += (size_t)snprintf(out + len, strlen(s) + 2, "%s%s", i ? "," : "", s);
    }
    return out;
}

static void assert_column(const json_t *arr, const char *attr, const char *want)
{
    char *got = column(arr, attr);
    if (strcmp(got, want) != 0) print_error("%s: got %s, want %s\n", attr, got, want);
    assert_string_equal(got, want);
    free(got);
}

/* ---- setup and tables ---- */

static int names_match(const json_t *arr, char names[AT_TABLE_COUNT][128])
{
    if (json_array_size(arr) != AT_TABLE_COUNT) return 0;
    for (int i = 0; i < AT_TABLE_COUNT; i++) {
        int found = 0;
        for (size_t j = 0; j < json_array_size(arr); j++)
            found |= strcmp(json_string_value(json_array_get(arr, j)), names[i]) == 0;
        if (!found) return 0;
    }
    return 1;
}

static void test_setup_idempotent(void **state)
{
    char names[AT_TABLE_COUNT][128];
    at_store *s = open_fresh("_setup", 0, names);
    json_t *created = json_array(), *existing = json_array();

    assert_int_equal(at_store_setup(s, created, existing), 0);
    assert_true(names_match(created, names));
    assert_int_equal(json_array_size(existing), 0);
    json_array_clear(created);
    assert_int_equal(at_store_setup(s, created, existing), 0);
    assert_int_equal(json_array_size(created), 0);
    assert_true(names_match(existing, names));
    json_decref(created);
    json_decref(existing);
    at_store_free(s);
}

static void test_missing_table(void **state)
{
    char names[AT_TABLE_COUNT][128], pk[96];
    at_store *s = open_fresh("_missing", 0, names);
    json_t *key = at_conf_item("target_uuid", S(uniq(pk, sizeof pk, "missing")), "uuid", S("u1"), NULL);
    json_t *it = NULL;
    at_update u = {.add_attr = "version", .add_value = 1};
    at_query q = {.table = AT_TABLE_NOTES,
                  .pk = json_object_get(key, "target_uuid"),
                  .forward = 1,
                  .limit = 10};
    at_page p = {0};

    assert_int_equal(at_store_get(s, AT_TABLE_NOTES, key, &it), AT_ENOTABLE);
    assert_int_equal(at_store_put(s, AT_TABLE_NOTES, key, NULL), AT_ENOTABLE);
    assert_int_equal(at_store_update(s, AT_TABLE_NOTES, key, &u, NULL, NULL), AT_ENOTABLE);
    assert_int_equal(at_store_delete(s, AT_TABLE_NOTES, key, NULL), AT_ENOTABLE);
    assert_int_equal(at_store_query(s, &q, &p), AT_ENOTABLE);
    q.index = "owner_uuid-created_at-index";
    assert_int_equal(at_store_query(s, &q, &p), AT_ENOTABLE);
    assert_int_equal(at_store_scan(s, AT_TABLE_NOTES, NULL, 10, &p), AT_ENOTABLE);
    assert_null(p.items);
    json_decref(key);
    at_store_free(s);
}

/* ---- items ---- */

static void test_roundtrip_types(void **state)
{
    char pk[96];
    json_t *it = json_pack(
        "{s:{s:s}, s:{s:s}, s:{s:s}, s:{s:s}, s:{s:s}, s:{s:s}, s:{s:s}, s:{s:s}, s:{s:s},"
        " s:{s:s}, s:{s:b}, s:{s:b}, s:{s:b}, s:{s:[]}, s:{s:{}}, s:{s:s}, s:{s:[s]}, s:{s:[s]}}",
        "target_uuid", "S", uniq(pk, sizeof pk, "types"), "uuid", "S", "\xc3\xbc-\xe2\x9c\x93-1",
        "s", "S", "h\xc3\xa9llo w\xc3\xb6rld \xe2\x9c\x93 \xf0\x9f\x98\x80 \"quoted\" \\ \n",
        "empty", "S", "", "n_int", "N", "42", "n_neg", "N", "-17", "n_big", "N",
        "123456789012345678901234567890", "n_2_53", "N", "9007199254740993", "n_float", "N",
        "3.14159", "n_negf", "N", "-0.5", "b_true", "BOOL", 1, "b_false", "BOOL", 0, "nul", "NULL",
        1, "l_empty", "L", "m_empty", "M", "bin", "B", "AAEqQQ==", "ss", "SS", "one", "ns", "NS",
        "7");
    json_t *nested =
        json_pack("{s:{s:{s:{s:[{s:s}, {s:s}, {s:{}}, {s:[]}, {s:b}]}, s:{s:{s:{s:{s:{s:s}}}}}}}}",
                  "m", "M", "list", "L", "S", "x", "N", "1", "M", "L", "NULL", 1, "deep", "M", "k",
                  "M", "z", "S", "\xf0\x9f\x98\x80");
    json_t *key, *got;

    assert_non_null(it);
    assert_non_null(nested);
    json_object_update(it, nested);
    json_decref(nested);
    /* A NUL inside a string, and a number of 38 significant digits (DynamoDB's most). */
    json_object_set_new(it, "nul_inside", json_pack("{s:s#}", "S", "a\0b", (int)3));
    json_object_set_new(it, "n_38", NT("12345678901234567890123456789012345678"));
    assert_int_equal(at_store_put(G.s, AT_TABLE_NOTES, it, NULL), 0);
    key = at_conf_item("target_uuid", S(pk), "uuid", S("\xc3\xbc-\xe2\x9c\x93-1"), NULL);
    got = get_ok(AT_TABLE_NOTES, key);
    if (!json_equal(got, it)) {
        char *a = json_dumps(got, JSON_SORT_KEYS), *b = json_dumps(it, JSON_SORT_KEYS);
        print_error("got  %s\nwant %s\n", a, b);
        free(a);
        free(b);
    }
    assert_true(json_equal(got, it));
    json_decref(got);
    json_decref(key);
    json_decref(it);
}

static void test_wrong_key_types(void **state)
{
    char pk[96], inst[96];
    json_t *it, *key, *got = NULL;
    at_query q = {.table = AT_TABLE_NOTES, .forward = 1, .limit = 5};
    at_page p = {0};

    uniq(pk, sizeof pk, "types-bad");
    uniq(inst, sizeof inst, "types-bad-inst");
    /* created_at is a number key in tasks. */
    it = at_conf_item("instance_id", S(inst), "uuid", S("t1"), "created_at", S("2024-01-01"), NULL);
    assert_int_equal(at_store_put(G.s, AT_TABLE_TASKS, it, NULL), AT_EINVAL);
    json_decref(it);
    /* The sort key is missing. */
    it = at_conf_item("target_uuid", S(pk), "title", S("x"), NULL);
    assert_int_equal(at_store_put(G.s, AT_TABLE_NOTES, it, NULL), AT_EINVAL);
    json_decref(it);
    /* The partition key has the wrong type. */
    it = at_conf_item("target_uuid", N(5), "uuid", S("n1"), NULL);
    assert_int_equal(at_store_put(G.s, AT_TABLE_NOTES, it, NULL), AT_EINVAL);
    json_decref(it);
    /* An LSI key (is_pinned: N) given as S. */
    it = at_conf_item("target_uuid", S(pk), "uuid", S("n2"), "is_pinned", S("1"), NULL);
    assert_int_equal(at_store_put(G.s, AT_TABLE_NOTES, it, NULL), AT_EINVAL);
    json_decref(it);
    /* Key attributes cannot be empty strings, on the table or an index. */
    it = at_conf_item("target_uuid", S(pk), "uuid", S(""), NULL);
    assert_int_equal(at_store_put(G.s, AT_TABLE_NOTES, it, NULL), AT_EINVAL);
    json_decref(it);
    it = at_conf_item("target_uuid", S(pk), "uuid", S("n3"), "owner_uuid", S(""), NULL);
    assert_int_equal(at_store_put(G.s, AT_TABLE_NOTES, it, NULL), AT_EINVAL);
    json_decref(it);
    /* Keys of get: missing part, extra attribute, wrong type. */
    key = at_conf_item("target_uuid", S(pk), NULL);
    assert_int_equal(at_store_get(G.s, AT_TABLE_NOTES, key, &got), AT_EINVAL);
    json_decref(key);
    key = at_conf_item("target_uuid", S(pk), "uuid", S("n1"), "title", S("x"), NULL);
    assert_int_equal(at_store_get(G.s, AT_TABLE_NOTES, key, &got), AT_EINVAL);
    json_decref(key);
    key = at_conf_item("target_uuid", S(pk), "uuid", N(1), NULL);
    assert_int_equal(at_store_get(G.s, AT_TABLE_NOTES, key, &got), AT_EINVAL);
    json_decref(key);
    /* Nothing was written. */
    q.pk = it = S(pk);
    assert_int_equal(at_store_query(G.s, &q, &p), 0);
    assert_int_equal(json_array_size(p.items), 0);
    at_page_release(&p);
    /* A query whose partition key value has the wrong type. */
    q.pk = key = N(3);
    assert_int_equal(at_store_query(G.s, &q, &p), AT_EINVAL);
    json_decref(key);
    json_decref(it);
}

static void test_conditional_put(void **state)
{
    char pk[96];
    at_clause not_exists = {"uuid", AT_OP_NOT_EXISTS, NULL, NULL};
    at_cond c_new = {&not_exists, 1};
    json_t *one = N(1), *five = N(5);
    at_clause v1 = {"version", AT_OP_EQ, one, NULL}, ne5 = {"version", AT_OP_NE, five, NULL};
    at_cond c_v1 = {&v1, 1}, c_ne5 = {&ne5, 1};
    json_t *key, *it, *got;

    uniq(pk, sizeof pk, "cond-put");
    key = at_conf_item("target_uuid", S(pk), "uuid", S("c1"), NULL);
    it = at_conf_item("target_uuid", S(pk), "uuid", S("c1"), "title", S("first"), "version", N(1), NULL);
    assert_int_equal(at_store_put(G.s, AT_TABLE_NOTES, it, &c_new), 0);
    json_decref(it);
    it = at_conf_item("target_uuid", S(pk), "uuid", S("c1"), "title", S("second"), "version", N(1), NULL);
    assert_int_equal(at_store_put(G.s, AT_TABLE_NOTES, it, &c_new), AT_ECOND);
    json_decref(it);
    got = get_ok(AT_TABLE_NOTES, key);
    assert_string_equal(sattr(got, "title"), "first");
    json_decref(got);

    it = at_conf_item("target_uuid", S(pk), "uuid", S("c1"), "title", S("v2"), "version", N(2), NULL);
    assert_int_equal(at_store_put(G.s, AT_TABLE_NOTES, it, &c_v1), 0);
    json_decref(it);
    it = at_conf_item("target_uuid", S(pk), "uuid", S("c1"), "title", S("v3"), "version", N(3), NULL);
    assert_int_equal(at_store_put(G.s, AT_TABLE_NOTES, it, &c_v1), AT_ECOND);
    json_decref(it);
    got = get_ok(AT_TABLE_NOTES, key);
    assert_string_equal(sattr(got, "title"), "v2");
    json_decref(got);

    /* <> is true on an absent attribute (and on an absent item). */
    json_decref(key);
    key = at_conf_item("target_uuid", S(pk), "uuid", S("c2"), NULL);
    it = at_conf_item("target_uuid", S(pk), "uuid", S("c2"), NULL);
    assert_int_equal(at_store_put(G.s, AT_TABLE_NOTES, it, &c_ne5), 0);
    json_decref(it);
    got = get_ok(AT_TABLE_NOTES, key);
    json_decref(got);
    json_decref(key);
    json_decref(one);
    json_decref(five);
}

static void test_update(void **state)
{
    char pk[96];
    json_t *key, *got = NULL, *set, *ninety = N(99);
    const char *rm[] = {"extra", NULL};
    at_clause exists = {"uuid", AT_OP_EXISTS, NULL, NULL},
              v99 = {"version", AT_OP_EQ, ninety, NULL};
    at_cond c_exists = {&exists, 1}, c_v99 = {&v99, 1};
    at_update u = {0};

    uniq(pk, sizeof pk, "update");
    key = at_conf_item("target_uuid", S(pk), "uuid", S("u1"), NULL);
    /* Upsert: an absent item is created from the key and the update. */
    set = at_conf_item("title", S("a"), "extra", S("x"), NULL);
    u = (at_update){.set = set, .add_attr = "version", .add_value = 1};
    assert_int_equal(at_store_update(G.s, AT_TABLE_NOTES, key, &u, NULL, &got), 0);
    assert_non_null(got);
    assert_string_equal(sattr(got, "title"), "a");
    assert_string_equal(json_string_value(json_object_get(json_object_get(got, "version"), "N")),
                        "1");
    assert_int_equal(json_object_size(got), 5);
    json_decref(got);
    json_decref(set);

    /* SET, REMOVE and ADD together; the whole new item comes back. */
    set = at_conf_item("title", S("b"), NULL);
    u = (at_update){.set = set, .remove = rm, .add_attr = "version", .add_value = 1};
    assert_int_equal(at_store_update(G.s, AT_TABLE_NOTES, key, &u, NULL, &got), 0);
    assert_string_equal(sattr(got, "title"), "b");
    assert_null(json_object_get(got, "extra"));
    assert_string_equal(json_string_value(json_object_get(json_object_get(got, "version"), "N")),
                        "2");
    assert_string_equal(sattr(got, "uuid"), "u1");
    json_decref(got);
    json_decref(set);

    /* ADD to an absent attribute starts from 0; negative values subtract. */
    u = (at_update){.add_attr = "views", .add_value = 5};
    assert_int_equal(at_store_update(G.s, AT_TABLE_NOTES, key, &u, NULL, NULL), 0);
    u.add_value = -7;
    assert_int_equal(at_store_update(G.s, AT_TABLE_NOTES, key, &u, NULL, &got), 0);
    assert_string_equal(json_string_value(json_object_get(json_object_get(got, "views"), "N")),
                        "-2");
    json_decref(got);

    /* ADD to a string, SET of a key attribute, a wrong index key type: refused. */
    u = (at_update){.add_attr = "title", .add_value = 1};
    assert_int_equal(at_store_update(G.s, AT_TABLE_NOTES, key, &u, NULL, NULL), AT_EINVAL);
    set = at_conf_item("uuid", S("other"), NULL);
    u = (at_update){.set = set};
    assert_int_equal(at_store_update(G.s, AT_TABLE_NOTES, key, &u, NULL, NULL), AT_EINVAL);
    json_decref(set);
    set = at_conf_item("is_pinned", S("yes"), NULL);
    u = (at_update){.set = set};
    assert_int_equal(at_store_update(G.s, AT_TABLE_NOTES, key, &u, NULL, NULL), AT_EINVAL);
    json_decref(set);

    /* A false condition changes nothing. */
    set = at_conf_item("title", S("c"), NULL);
    u = (at_update){.set = set};
    assert_int_equal(at_store_update(G.s, AT_TABLE_NOTES, key, &u, &c_v99, &got), AT_ECOND);
    assert_null(got);
    json_decref(set);
    got = get_ok(AT_TABLE_NOTES, key);
    assert_string_equal(sattr(got, "title"), "b");
    assert_string_equal(json_string_value(json_object_get(json_object_get(got, "version"), "N")),
                        "2");
    json_decref(got);

    /* attribute_exists on an absent item: no upsert. */
    json_decref(key);
    key = at_conf_item("target_uuid", S(pk), "uuid", S("u-absent"), NULL);
    u = (at_update){.add_attr = "version", .add_value = 1};
    assert_int_equal(at_store_update(G.s, AT_TABLE_NOTES, key, &u, &c_exists, NULL), AT_ECOND);
    assert_absent(AT_TABLE_NOTES, key);
    json_decref(key);
    json_decref(ninety);
}

static void test_conditional_delete(void **state)
{
    char pk[96];
    json_t *one = N(1), *two = N(2), *key, *got;
    at_clause v1 = {"version", AT_OP_EQ, one, NULL}, v2 = {"version", AT_OP_EQ, two, NULL};
    at_clause exists = {"uuid", AT_OP_EXISTS, NULL, NULL};
    at_cond c_v1 = {&v1, 1}, c_v2 = {&v2, 1}, c_exists = {&exists, 1};

    uniq(pk, sizeof pk, "delete");
    put_ok(AT_TABLE_NOTES, at_conf_item("target_uuid", S(pk), "uuid", S("d1"), "version", N(1), NULL));
    key = at_conf_item("target_uuid", S(pk), "uuid", S("d1"), NULL);
    assert_int_equal(at_store_delete(G.s, AT_TABLE_NOTES, key, &c_v2), AT_ECOND);
    got = get_ok(AT_TABLE_NOTES, key);
    json_decref(got);
    assert_int_equal(at_store_delete(G.s, AT_TABLE_NOTES, key, &c_v1), 0);
    assert_absent(AT_TABLE_NOTES, key);
    /* A missing item: fine without a condition, ECOND with attribute_exists. */
    assert_int_equal(at_store_delete(G.s, AT_TABLE_NOTES, key, NULL), 0);
    assert_int_equal(at_store_delete(G.s, AT_TABLE_NOTES, key, &c_exists), AT_ECOND);
    json_decref(key);
    json_decref(one);
    json_decref(two);
}

/* ---- queries ---- */

/* Puts notes with target pk and the given uuids (comma-separated). */
static void put_notes(const char *pk, const char *uuids)
{
    char *list = strdup(uuids), *save = NULL;
    for (char *u = strtok_r(list, ",", &save); u; u = strtok_r(NULL, ",", &save))
        put_ok(AT_TABLE_NOTES, at_conf_item("target_uuid", S(pk), "uuid", S(u), NULL));
    free(list);
}

/* Queries table/index at pk with one sort key clause (attr NULL: none), all pages. */
static json_t *q_run(at_table_id t, const char *index, json_t *pk, const char *attr, at_op op,
                     json_t *v, json_t *v2, int forward, size_t limit)
{
    at_query q = {.table = t, .index = index, .pk = pk, .forward = forward};
    json_t *out;
    q.sk = (at_clause){attr, op, v, v2};
    out = query_all(G.s, q, limit);
    json_decref(v);
    json_decref(v2);
    return out;
}

static void expect(json_t *got, const char *attr, const char *want)
{
    assert_column(got, attr, want);
    json_decref(got);
}

static void test_query_table(void **state)
{
    char pk[96];
    json_t *p;
    const at_table_id T = AT_TABLE_NOTES;

    uniq(pk, sizeof pk, "qtable");
    put_notes(pk, "m03,k05,k00,m00,k09,k01,k07,m04,k02,k03,k04,k06,k08,m01,m02");
    p = S(pk);
    expect(q_run(T, NULL, p, NULL, 0, NULL, NULL, 1, 100), "uuid",
           "k00,k01,k02,k03,k04,k05,k06,k07,k08,k09,m00,m01,m02,m03,m04");
    expect(q_run(T, NULL, p, NULL, 0, NULL, NULL, 0, 100), "uuid",
           "m04,m03,m02,m01,m00,k09,k08,k07,k06,k05,k04,k03,k02,k01,k00");
    expect(q_run(T, NULL, p, "uuid", AT_OP_BEGINS_WITH, S("k0"), NULL, 1, 100), "uuid",
           "k00,k01,k02,k03,k04,k05,k06,k07,k08,k09");
    expect(q_run(T, NULL, p, "uuid", AT_OP_BEGINS_WITH, S("m"), NULL, 0, 2), "uuid",
           "m04,m03,m02,m01,m00");
    expect(q_run(T, NULL, p, "uuid", AT_OP_BETWEEN, S("k03"), S("k05"), 1, 100), "uuid",
           "k03,k04,k05");
    expect(q_run(T, NULL, p, "uuid", AT_OP_BETWEEN, S("k03"), S("k05"), 0, 1), "uuid",
           "k05,k04,k03");
    expect(q_run(T, NULL, p, "uuid", AT_OP_LT, S("k02"), NULL, 1, 100), "uuid", "k00,k01");
    expect(q_run(T, NULL, p, "uuid", AT_OP_LE, S("k02"), NULL, 0, 100), "uuid", "k02,k01,k00");
    expect(q_run(T, NULL, p, "uuid", AT_OP_GE, S("m03"), NULL, 1, 100), "uuid", "m03,m04");
    expect(q_run(T, NULL, p, "uuid", AT_OP_GT, S("k08"), NULL, 1, 3), "uuid",
           "k09,m00,m01,m02,m03,m04");
    expect(q_run(T, NULL, p, "uuid", AT_OP_EQ, S("k07"), NULL, 1, 100), "uuid", "k07");
    expect(q_run(T, NULL, p, "uuid", AT_OP_EQ, S("k07x"), NULL, 1, 100), "uuid", "");
    /* A sort key condition on another attribute is refused. */
    {
        at_query q = {.table = T, .pk = p, .forward = 1, .limit = 5};
        at_page pg = {0};
        json_t *v = S("x");
        q.sk = (at_clause){"title", AT_OP_EQ, v, NULL};
        assert_int_equal(at_store_query(G.s, &q, &pg), AT_EINVAL);
        json_decref(v);
    }
    json_decref(p);
}

/* Number sort keys order numerically, on a GSI and on an LSI of tasks. */
static void test_query_number_keys(void **state)
{
    char inst[96], target[96];
    static const char *const created[] = {"10", "9", "100", "-3", "2.5", "1000", "5"};
    json_t *p, *t;

    uniq(inst, sizeof inst, "qnum-inst");
    uniq(target, sizeof target, "qnum-target");
    for (size_t i = 0; i < sizeof created / sizeof created[0]; i++) {
        char u[16];
        snprintf(u, sizeof u, "t%zu", i);
        put_ok(AT_TABLE_TASKS, at_conf_item("instance_id", S(inst), "uuid", S(u), "target_uuid", S(target),
                                    "created_at", NT(created[i]), "updated_at", N(7), NULL));
    }
    p = S(inst);
    t = S(target);
    expect(q_run(AT_TABLE_TASKS, "target_uuid-created_at-index", t, NULL, 0, NULL, NULL, 1, 3),
           "created_at", "-3,2.5,5,9,10,100,1000");
    expect(q_run(AT_TABLE_TASKS, "target_uuid-created_at-index", t, NULL, 0, NULL, NULL, 0, 100),
           "created_at", "1000,100,10,9,5,2.5,-3");
    expect(q_run(AT_TABLE_TASKS, "instance_id-created_at-index", p, "created_at", AT_OP_GT, N(9),
                 NULL, 1, 2),
           "created_at", "10,100,1000");
    expect(q_run(AT_TABLE_TASKS, "instance_id-created_at-index", p, "created_at", AT_OP_BETWEEN,
                 N(5), N(100), 0, 2),
           "created_at", "100,10,9,5");
    expect(q_run(AT_TABLE_TASKS, "instance_id-created_at-index", p, "created_at", AT_OP_LT,
                 NT("2.5"), NULL, 1, 100),
           "created_at", "-3");
    /* begins_with is for strings only. */
    {
        at_query q = {.table = AT_TABLE_TASKS,
                      .index = "instance_id-created_at-index",
                      .pk = p,
                      .forward = 1,
                      .limit = 5};
        at_page pg = {0};
        json_t *v = N(1);
        q.sk = (at_clause){"created_at", AT_OP_BEGINS_WITH, v, NULL};
        assert_int_equal(at_store_query(G.s, &q, &pg), AT_EINVAL);
        json_decref(v);
    }
    json_decref(p);
    json_decref(t);
}

/* Secondary indexes are sparse: items without the index's key are not in it. */
static void test_sparse_index(void **state)
{
    char pk[96];
    json_t *p;

    uniq(pk, sizeof pk, "sparse");
    put_ok(AT_TABLE_NOTES, at_conf_item("target_uuid", S(pk), "uuid", S("a"), "is_pinned", N(1), NULL));
    put_ok(AT_TABLE_NOTES, at_conf_item("target_uuid", S(pk), "uuid", S("b"), NULL));
    put_ok(AT_TABLE_NOTES, at_conf_item("target_uuid", S(pk), "uuid", S("c"), "is_pinned", N(0),
                                "updated_at", S("2024-01-01 00:00:00.000000"), NULL));
    put_ok(AT_TABLE_NOTES, at_conf_item("target_uuid", S(pk), "uuid", S("d"), "title", S("x"), NULL));
    p = S(pk);
    expect(q_run(AT_TABLE_NOTES, "target_uuid-is_pinned-index", p, NULL, 0, NULL, NULL, 1, 10),
           "uuid", "c,a");
    expect(q_run(AT_TABLE_NOTES, "target_uuid-updated_at-index", p, NULL, 0, NULL, NULL, 1, 10),
           "uuid", "c");
    expect(q_run(AT_TABLE_NOTES, NULL, p, NULL, 0, NULL, NULL, 1, 10), "uuid", "a,b,c,d");
    /* Removing the index key takes the item out of the index. */
    {
        json_t *key = at_conf_item("target_uuid", S(pk), "uuid", S("a"), NULL);
        const char *rm[] = {"is_pinned", NULL};
        at_update u = {.remove = rm};
        assert_int_equal(at_store_update(G.s, AT_TABLE_NOTES, key, &u, NULL, NULL), 0);
        json_decref(key);
    }
    expect(q_run(AT_TABLE_NOTES, "target_uuid-is_pinned-index", p, NULL, 0, NULL, NULL, 1, 10),
           "uuid", "c");
    json_decref(p);
}

/* Puts n notes of owner with created_at taking nvals distinct values (many ties). */
static void put_owned(const char *owner, const char *target, int n, int nvals)
{
    json_t *items = json_array();
    for (int i = 0; i < n; i++) {
        char u[32], ts[40];
        snprintf(u, sizeof u, "n%03d", (i * 7) % n);
        snprintf(ts, sizeof ts, "2024-01-0%d 10:00:00.000000", 1 + (i % nvals));
        json_array_append_new(items, at_conf_item("target_uuid", S(target), "uuid", S(u), "owner_uuid",
                                          S(owner), "created_at", S(ts), NULL));
    }
    assert_int_equal(at_store_batch_put(G.s, AT_TABLE_NOTES, items), 0);
    json_decref(items);
}

/* Returns 1 when the two arrays hold the same items in the same order. */
static int same_list(const json_t *a, const json_t *b)
{
    if (json_array_size(a) != json_array_size(b)) return 0;
    for (size_t i = 0; i < json_array_size(a); i++)
        if (!json_equal(json_array_get(a, i), json_array_get(b, i))) return 0;
    return 1;
}

/* Checks the order of attr in arr (non-decreasing when forward) and that no item
 * appears twice (by uuid). */
static void assert_ordered(const json_t *arr, const char *attr, int forward)
{
    for (size_t i = 1; i < json_array_size(arr); i++) {
        int ok = 0;
        const json_t *a = json_array_get(arr, i - 1), *b = json_array_get(arr, i);
        int c = at_av_compare(json_object_get(a, attr), json_object_get(b, attr), &ok);
        assert_true(ok);
        assert_true(forward ? c <= 0 : c >= 0);
        for (size_t j = 0; j < i; j++)
            assert_false(json_equal(json_array_get(arr, j), b));
    }
}

/* Paging over a GSI with ties in its sort key gives exactly the unpaged list, under
 * every kind of sort key condition, both ways. */
static void test_paging_ties(void **state)
{
    char owner[96], target[96];
    const char *ix = "owner_uuid-created_at-index";
    static const at_op ops[] = {AT_OP_EQ, AT_OP_LT,      AT_OP_LE,         AT_OP_GT,
                                AT_OP_GE, AT_OP_BETWEEN, AT_OP_BEGINS_WITH};
    json_t *p, *full;

    uniq(owner, sizeof owner, "paging-owner");
    uniq(target, sizeof target, "paging-target");
    put_owned(owner, target, 23, 5);
    p = S(owner);
    full = q_run(AT_TABLE_NOTES, ix, p, NULL, 0, NULL, NULL, 1, 1000);
    assert_int_equal(json_array_size(full), 23);
    assert_ordered(full, "created_at", 1);
    for (int dir = 0; dir < 2; dir++) {
        json_t *all = q_run(AT_TABLE_NOTES, ix, p, NULL, 0, NULL, NULL, dir, 1000);
        for (size_t lim = 1; lim <= 6; lim++) {
            json_t *paged = q_run(AT_TABLE_NOTES, ix, p, NULL, 0, NULL, NULL, dir, lim);
            assert_true(same_list(paged, all));
            json_decref(paged);
        }
        assert_ordered(all, "created_at", dir);
        json_decref(all);
    }
    /* With a sort key condition whose bound value has ties (2024-01-03). */
    for (size_t o = 0; o < sizeof ops / sizeof ops[0]; o++) {
        for (int dir = 0; dir < 2; dir++) {
            const char *v =
                ops[o] == AT_OP_BEGINS_WITH ? "2024-01-03" : "2024-01-03 10:00:00.000000";
            json_t *av = S(v), *av2 = S("2024-01-04 10:00:00.000000");
            at_clause cl = {"created_at", ops[o], av, av2};
            at_cond cond = {&cl, 1};
            json_t *want = json_array(), *all;
            size_t i;
            json_t *it;
            json_array_foreach(full, i, it) if (at_cond_eval(it, &cond))
                json_array_append(want, it);
            all = q_run(AT_TABLE_NOTES, ix, p, "created_at", ops[o], json_incref(av),
                        json_incref(av2), dir, 1000);
            assert_int_equal(json_array_size(all), json_array_size(want));
            assert_ordered(all, "created_at", dir);
            for (size_t lim = 1; lim <= 4; lim++) {
                json_t *paged = q_run(AT_TABLE_NOTES, ix, p, "created_at", ops[o], json_incref(av),
                                      json_incref(av2), dir, lim);
                if (!same_list(paged, all))
                    print_error("op %d dir %d limit %zu\n", (int)ops[o], dir, lim);
                assert_true(same_list(paged, all));
                json_decref(paged);
            }
            json_decref(all);
            json_decref(want);
            json_decref(av);
            json_decref(av2);
        }
    }
    json_decref(full);
    json_decref(p);
}

/* A page of exactly limit items has a last key; the page after it is empty. */
static void test_paging_exact(void **state)
{
    char pk[96];
    at_query q = {.table = AT_TABLE_NOTES, .forward = 1, .limit = 4};
    at_page pg = {0};
    json_t *p;

    uniq(pk, sizeof pk, "paging-exact");
    put_notes(pk, "a,b,c,d");
    q.pk = p = S(pk);
    assert_int_equal(at_store_query(G.s, &q, &pg), 0);
    assert_int_equal(json_array_size(pg.items), 4);
    assert_non_null(pg.last_key);
    assert_string_equal(sattr(pg.last_key, "uuid"), "d");
    assert_int_equal(json_object_size(pg.last_key), 2);
    q.start_key = pg.last_key;
    {
        at_page next = {0};
        assert_int_equal(at_store_query(G.s, &q, &next), 0);
        assert_int_equal(json_array_size(next.items), 0);
        assert_null(next.last_key);
        at_page_release(&next);
    }
    at_page_release(&pg);
    json_decref(p);
}

/* Filters and AT_Q_LIVE apply before limit: pages stay full. */
static void test_filter_live(void **state)
{
    char pk[96];
    json_t *p, *red = S("red"), *all;
    at_clause cl = {"color", AT_OP_EQ, red, NULL};
    at_query q = {.table = AT_TABLE_NOTES, .forward = 1, .filter = {&cl, 1}, .flags = AT_Q_LIVE};

    uniq(pk, sizeof pk, "filter");
    for (int i = 0; i < 30; i++) {
        char u[16];
        json_t *it;
        snprintf(u, sizeof u, "f%02d", i);
        it =
            at_conf_item("target_uuid", S(pk), "uuid", S(u), "color", S(i % 3 == 0 ? "red" : "blue"), NULL);
        if (i % 2) json_object_set_new(it, "deleted_at", S("2024-01-01 00:00:00"));
        put_ok(AT_TABLE_NOTES, it);
    }
    q.pk = p = S(pk);
    all = query_all(G.s, q, 2); /* query_all checks that every page but the last is full */
    assert_column(all, "uuid", "f00,f06,f12,f18,f24");
    json_decref(all);
    q.filter.n = 0;
    all = query_all(G.s, q, 4);
    assert_int_equal(json_array_size(all), 15);
    json_decref(all);
    q.flags = 0;
    all = query_all(G.s, q, 7);
    assert_int_equal(json_array_size(all), 30);
    json_decref(all);
    json_decref(p);
    json_decref(red);
}

/* Counts every matching item of q, going on from each count's last_key; checks that
 * each count that stops early counted at least limit. */
static size_t count_all(at_query q)
{
    size_t total = 0;
    json_t *start = NULL;
    q.flags |= AT_Q_COUNT;
    for (int guard = 0; guard < 1000; guard++) {
        at_page pg = {0};
        q.start_key = start;
        assert_int_equal(at_store_query(G.s, &q, &pg), 0);
        assert_int_equal(json_array_size(pg.items), 0); /* no items, only a number */
        total += pg.count;
        json_decref(start);
        start = json_incref(pg.last_key);
        if (start) assert_true(pg.count >= q.limit);
        at_page_release(&pg);
        if (!start) return total;
    }
    fail_msg("the count does not end");
    return 0;
}

/* AT_Q_COUNT counts what a query would return (filters, live items, an index's sort key
 * condition) without returning items, from any start; a filter on a key attribute of
 * what is queried is refused. */
static void test_count(void **state)
{
    char pk[96];
    json_t *p, *red = S("red"), *one = N(1);
    at_clause cl = {"color", AT_OP_EQ, red, NULL};
    at_query q = {.table = AT_TABLE_NOTES, .forward = 1, .filter = {&cl, 1}, .flags = AT_Q_LIVE};

    uniq(pk, sizeof pk, "count");
    for (int i = 0; i < 40; i++) {
        char u[16];
        json_t *it;
        snprintf(u, sizeof u, "c%02d", i);
        it = at_conf_item("target_uuid", S(pk), "uuid", S(u), "color", S(i % 4 == 0 ? "red" : "blue"),
                          "is_pinned", N(i % 5 == 0), NULL);
        if (i % 8 == 4) json_object_set_new(it, "deleted_at", S("2024-01-01 00:00:00"));
        put_ok(AT_TABLE_NOTES, it);
    }
    q.pk = p = S(pk);
    for (size_t lim = 1; lim <= 1000; lim *= 7) {
        q.limit = lim;
        q.filter.n = 1;
        q.flags = AT_Q_LIVE;
        /* red: c00, c04 ... c36 (10), of them deleted c04, c12, c20, c28, c36 */
        assert_int_equal(count_all(q), 5);
        q.filter.n = 0;
        assert_int_equal(count_all(q), 35);
        q.flags = 0;
        assert_int_equal(count_all(q), 40);
        /* On an index, with its sort key condition: pinned are c00,c05,...,c35 (8), of
         * them c20 is deleted. */
        q.index = "target_uuid-is_pinned-index";
        q.sk = (at_clause){"is_pinned", AT_OP_EQ, one, NULL};
        q.flags = AT_Q_LIVE;
        assert_int_equal(count_all(q), 7);
        q.index = NULL;
        q.sk = (at_clause){NULL, AT_OP_EQ, NULL, NULL};
    }
    {
        at_clause bad = {"uuid", AT_OP_EQ, red, NULL};
        at_page pg = {0};
        q.filter = (at_cond){&bad, 1};
        q.flags = AT_Q_COUNT;
        assert_int_equal(at_store_query(G.s, &q, &pg), AT_EINVAL);
        at_page_release(&pg);
    }
    json_decref(p);
    json_decref(red);
    json_decref(one);
}

/* An INCLUDE-projection index returns the keys and the included attributes only. */
static void test_include_projection(void **state)
{
    char inst[96];
    json_t *p, *all, *it;
    at_query q = {
        .table = AT_TABLE_TASKS, .index = "instance_id-created_at-index-copy", .forward = 1};

    uniq(inst, sizeof inst, "include");
    put_ok(AT_TABLE_TASKS,
           at_conf_item("instance_id", S(inst), "uuid", S("p1"), "created_at", N(100), "title", S("Call"),
                "status", S("open"), "description", S("long text"), "data", S("payload"), NULL));
    q.pk = p = S(inst);
    all = query_all(G.s, q, 10);
    assert_int_equal(json_array_size(all), 1);
    it = json_array_get(all, 0);
    assert_int_equal(json_object_size(it), 5);
    assert_string_equal(sattr(it, "title"), "Call");
    assert_string_equal(sattr(it, "status"), "open");
    assert_string_equal(sattr(it, "uuid"), "p1");
    assert_non_null(json_object_get(it, "created_at"));
    assert_null(json_object_get(it, "description"));
    json_decref(all);
    /* The same item through an ALL-projection index has everything. */
    q.index = "instance_id-created_at-index";
    all = query_all(G.s, q, 10);
    assert_int_equal(json_object_size(json_array_get(all, 0)), 7);
    json_decref(all);
    json_decref(p);
}

/* ---- the work bound of a page ---- */

/* Returns a string of n 'x' as an S AV (padding that makes items big). */
static json_t *pad(size_t n)
{
    char *x = malloc(n + 1);
    json_t *av;
    memset(x, 'x', n);
    x[n] = '\0';
    av = S(x);
    free(x);
    return av;
}

/* A page stops once it has read about max_read_bytes of stored items, matching or
 * not: it is short and has a last_key, and paging to the end yields every matching
 * item once, in order. */
static void test_read_bound(void **state)
{
    char pk[96];
    json_t *p, *red = S("red"), *all;
    at_clause cl = {"color", AT_OP_EQ, red, NULL};
    at_query q = {.table = AT_TABLE_NOTES, .forward = 1, .filter = {&cl, 1}, .max_read_bytes = 8192};
    int pages, shorts;

    uniq(pk, sizeof pk, "bound");
    for (int i = 0; i < 40; i++) {
        char u[16];
        snprintf(u, sizeof u, "b%02d", i);
        put_ok(AT_TABLE_NOTES, at_conf_item("target_uuid", S(pk), "uuid", S(u), "color",
                                            S(i % 10 == 3 ? "red" : "blue"), "pad", pad(2000), NULL));
    }
    q.pk = p = S(pk);
    for (int raw = 0; raw < 2; raw++) {
        q.flags = raw ? AT_Q_RAW : 0;
        all = query_bounded(G.s, q, 3, &pages, &shorts);
        assert_column(all, "uuid", "b03,b13,b23,b33");
        json_decref(all);
        assert_true(shorts >= 1);    /* stopped by the bound with items still to come */
        assert_true(pages >= 4);     /* 80 KB read 8 KB at a time, about */
        assert_true(pages <= 41);    /* every page reads at least one item */
    }
    /* The default bound (1 MB) does not stop these pages. */
    q.max_read_bytes = 0;
    all = query_bounded(G.s, q, 3, &pages, &shorts);
    assert_column(all, "uuid", "b03,b13,b23,b33");
    assert_int_equal(pages, 2);
    assert_int_equal(shorts, 0);
    json_decref(all);
    json_decref(p);
    json_decref(red);
}

/* Another tenant's items under the same partition key: the caller's live items come
 * whole and in order, page after page, however the backend bounds each page. */
static void test_tenant_filter(void **state)
{
    char pk[96], a[96], b[96];
    json_t *p, *inst, *all;
    at_clause cl;
    at_query q = {.table = AT_TABLE_NOTES,
                  .index = "target_uuid-updated_at-index",
                  .forward = 0,
                  .flags = AT_Q_LIVE,
                  .max_read_bytes = 8192};
    int pages, shorts;

    uniq(pk, sizeof pk, "tenants");
    uniq(a, sizeof a, "tenant-a");
    uniq(b, sizeof b, "tenant-b");
    for (int i = 0; i < 60; i++) {
        char u[16], ts[32];
        json_t *it;
        snprintf(u, sizeof u, "%c%02d", i % 12 == 5 ? 'a' : 'b', i);
        snprintf(ts, sizeof ts, "2024-01-01 00:00:%02d", i);
        it = at_conf_item("target_uuid", S(pk), "uuid", S(u), "instance_id", S(i % 12 == 5 ? a : b),
                          "updated_at", S(ts), "pad", pad(1500), NULL);
        if (i == 29) json_object_set_new(it, "deleted_at", S(ts)); /* one of a's, deleted */
        put_ok(AT_TABLE_NOTES, it);
    }
    q.pk = p = S(pk);
    inst = S(a);
    cl = (at_clause){"instance_id", AT_OP_EQ, inst, NULL};
    q.filter = (at_cond){&cl, 1};
    for (int raw = 0; raw < 2; raw++) {
        q.flags = AT_Q_LIVE | (raw ? AT_Q_RAW : 0);
        all = query_bounded(G.s, q, 2, &pages, &shorts);
        assert_column(all, "uuid", "a53,a41,a17,a05");
        json_decref(all);
        assert_true(pages >= 2 && pages <= 61);
    }
    json_decref(inst);
    json_decref(p);
}

/* ---- TTL ---- */

static void test_ttl(void **state)
{
    char old_k[96], new_k[96], none_k[96];
    int64_t now = (int64_t)time(NULL);
    json_t *ko, *kn, *kx, *got, *p, *all;
    at_query q = {.table = AT_TABLE_TASKS_COUNTERS, .forward = 1};
    size_t removed = 99;

    uniq(old_k, sizeof old_k, "ttl-old");
    uniq(new_k, sizeof new_k, "ttl-new");
    uniq(none_k, sizeof none_k, "ttl-none");
    put_ok(AT_TABLE_TASKS_COUNTERS,
           at_conf_item("counter_seq_key", S(old_k), "count", N(3), "ExpirationTime", N(now - 3600), NULL));
    put_ok(AT_TABLE_TASKS_COUNTERS,
           at_conf_item("counter_seq_key", S(new_k), "count", N(4), "ExpirationTime", N(now + 3600), NULL));
    put_ok(AT_TABLE_TASKS_COUNTERS, at_conf_item("counter_seq_key", S(none_k), "count", N(5), NULL));
    ko = at_conf_item("counter_seq_key", S(old_k), NULL);
    kn = at_conf_item("counter_seq_key", S(new_k), NULL);
    kx = at_conf_item("counter_seq_key", S(none_k), NULL);
    assert_absent(AT_TABLE_TASKS_COUNTERS, ko);
    got = get_ok(AT_TABLE_TASKS_COUNTERS, kn);
    json_decref(got);
    got = get_ok(AT_TABLE_TASKS_COUNTERS, kx);
    json_decref(got);
    q.pk = p = S(old_k);
    all = query_all(G.s, q, 5);
    assert_int_equal(json_array_size(all), 0);
    json_decref(all);
    json_decref(p);
    q.pk = p = S(new_k);
    all = query_all(G.s, q, 5);
    assert_int_equal(json_array_size(all), 1);
    json_decref(all);
    json_decref(p);
    /* Sweeping removes the expired item and nothing else. */
    assert_int_equal(at_store_sweep_expired(G.s, now, &removed), 0);
    assert_absent(AT_TABLE_TASKS_COUNTERS, ko);
    got = get_ok(AT_TABLE_TASKS_COUNTERS, kn);
    json_decref(got);
    got = get_ok(AT_TABLE_TASKS_COUNTERS, kx);
    json_decref(got);
    json_decref(ko);
    json_decref(kn);
    json_decref(kx);
}

/* ---- counters ---- */

typedef struct counter_arg {
    const json_t *key;
    int n;
    int rc;
} counter_arg;

static void *counter_thread(void *p)
{
    counter_arg *a = p;
    at_update u = {.add_attr = "seq", .add_value = 1};
    for (int i = 0; i < a->n && !a->rc; i++)
        a->rc = at_store_update(G.s, AT_TABLE_COUNTERS, a->key, &u, NULL, NULL);
    return NULL;
}

static void test_counter_concurrency(void **state)
{
    enum { THREADS = 4, EACH = 500 };
    char pk[96];
    pthread_t th[THREADS];
    counter_arg args[THREADS];
    json_t *key, *got;
    int64_t v = 0;

    uniq(pk, sizeof pk, "counter");
    key = at_conf_item("counter_seq_key", S(pk), NULL);
    for (int i = 0; i < THREADS; i++) {
        args[i] = (counter_arg){key, EACH, 0};
        assert_int_equal(pthread_create(&th[i], NULL, counter_thread, &args[i]), 0);
    }
    for (int i = 0; i < THREADS; i++) {
        pthread_join(th[i], NULL);
        assert_int_equal(args[i].rc, 0);
    }
    got = get_ok(AT_TABLE_COUNTERS, key);
    assert_true(at_item_n_int(got, "seq", &v));
    assert_int_equal(v, THREADS * EACH);
    json_decref(got);
    json_decref(key);
}

/* ---- stream ---- */

/* Returns the sequence number of the last record in the stream (0 when empty), or -1
 * when the backend's stream is not read through the store. */
static int64_t stream_end(void)
{
    int64_t after = 0;
    for (;;) {
        json_t *recs = NULL;
        int rc = at_store_stream_read(G.s, after, 1000, &recs);
        if (rc == AT_EINVAL) return -1;
        assert_int_equal(rc, 0);
        if (json_array_size(recs) == 0) {
            json_decref(recs);
            return after;
        }
        after = strtoll(
            json_string_value(json_object_get(
                json_object_get(json_array_get(recs, json_array_size(recs) - 1), "dynamodb"),
                "SequenceNumber")),
            NULL, 10);
        json_decref(recs);
    }
}

/* Returns the records after seq whose Keys.instance_id is inst. */
static json_t *stream_for(int64_t after, const char *inst)
{
    json_t *recs = NULL, *out = json_array(), *r;
    size_t i;
    assert_int_equal(at_store_stream_read(G.s, after, 1000, &recs), 0);
    json_array_foreach(recs, i, r)
    {
        const json_t *keys = json_object_get(json_object_get(r, "dynamodb"), "Keys");
        const char *ki = at_item_s(keys, "instance_id");
        if (ki && strcmp(ki, inst) == 0) json_array_append(out, r);
    }
    json_decref(recs);
    return out;
}

static void check_record(const json_t *r, const char *name, const json_t *keys, const json_t *old,
                         const json_t *new_item)
{
    const json_t *d = json_object_get(r, "dynamodb");
    const char *seq = json_string_value(json_object_get(d, "SequenceNumber"));
    assert_string_equal(json_string_value(json_object_get(r, "eventName")), name);
    assert_string_equal(json_string_value(json_object_get(r, "eventSource")), "aws:dynamodb");
    assert_string_equal(json_string_value(json_object_get(r, "eventVersion")), "1.1");
    assert_non_null(json_string_value(json_object_get(r, "eventID")));
    assert_non_null(
        strstr(json_string_value(json_object_get(r, "eventSourceARN")), G.names[AT_TABLE_TASKS]));
    assert_string_equal(json_string_value(json_object_get(d, "StreamViewType")),
                        "NEW_AND_OLD_IMAGES");
    assert_true(json_is_integer(json_object_get(d, "ApproximateCreationDateTime")));
    assert_true(json_integer_value(json_object_get(d, "SizeBytes")) > 0);
    assert_non_null(seq);
    assert_int_equal(strlen(seq), 21);
    assert_true(json_equal(json_object_get(d, "Keys"), (json_t *)keys));
    if (old)
        assert_true(json_equal(json_object_get(d, "OldImage"), (json_t *)old));
    else
        assert_null(json_object_get(d, "OldImage"));
    if (new_item)
        assert_true(json_equal(json_object_get(d, "NewImage"), (json_t *)new_item));
    else
        assert_null(json_object_get(d, "NewImage"));
}

static void test_stream(void **state)
{
    char inst[96];
    int64_t start = stream_end();
    json_t *v1, *v2 = NULL, *key, *recs, *set;
    at_update u = {0};

    if (start < 0) skip();
    uniq(inst, sizeof inst, "stream");
    key = at_conf_item("instance_id", S(inst), "uuid", S("s1"), NULL);
    v1 = at_conf_item("instance_id", S(inst), "uuid", S("s1"), "created_at", N(1), "title", S("a"), NULL);
    assert_int_equal(at_store_put(G.s, AT_TABLE_TASKS, v1, NULL), 0);
    set = at_conf_item("title", S("b"), NULL);
    u.set = set;
    assert_int_equal(at_store_update(G.s, AT_TABLE_TASKS, key, &u, NULL, &v2), 0);
    assert_int_equal(at_store_delete(G.s, AT_TABLE_TASKS, key, NULL), 0);
    /* Deleting a missing item and a failed condition write no record. */
    assert_int_equal(at_store_delete(G.s, AT_TABLE_TASKS, key, NULL), 0);
    {
        at_clause ex = {"uuid", AT_OP_EXISTS, NULL, NULL};
        at_cond c = {&ex, 1};
        assert_int_equal(at_store_update(G.s, AT_TABLE_TASKS, key, &u, &c, NULL), AT_ECOND);
    }
    recs = stream_for(start, inst);
    assert_int_equal(json_array_size(recs), 3);
    check_record(json_array_get(recs, 0), "INSERT", key, NULL, v1);
    check_record(json_array_get(recs, 1), "MODIFY", key, v1, v2);
    check_record(json_array_get(recs, 2), "REMOVE", key, v2, NULL);
    for (size_t i = 1; i < 3; i++) {
        const char *a = json_string_value(json_object_get(
            json_object_get(json_array_get(recs, i - 1), "dynamodb"), "SequenceNumber"));
        const char *b = json_string_value(json_object_get(
            json_object_get(json_array_get(recs, i), "dynamodb"), "SequenceNumber"));
        assert_true(strcmp(a, b) < 0);
    }
    /* Reading after the first record starts at the second. */
    {
        int64_t first =
            strtoll(json_string_value(json_object_get(
                        json_object_get(json_array_get(recs, 0), "dynamodb"), "SequenceNumber")),
                    NULL, 10);
        json_t *rest = stream_for(first, inst);
        assert_int_equal(json_array_size(rest), 2);
        json_decref(rest);
    }
    json_decref(recs);
    json_decref(set);
    json_decref(v1);
    json_decref(v2);
    json_decref(key);
}

/* ---- scan and batch_put ---- */

static void test_scan_batch(void **state)
{
    char names[AT_TABLE_COUNT][128];
    at_store *s = open_fresh("_scan", 1, names);
    json_t *items = json_array(), *start = NULL, *seen = json_object();
    int64_t now = (int64_t)time(NULL);
    size_t total = 0;

    for (int i = 0; i < 60; i++) {
        char k[32];
        snprintf(k, sizeof k, "k%03d", i);
        json_array_append_new(items, at_conf_item("counter_seq_key", S(k), "seq", N(i), NULL));
    }
    assert_int_equal(at_store_batch_put(s, AT_TABLE_COUNTERS, items), 0);
    json_decref(items);
    for (int guard = 0; guard < 100; guard++) {
        at_page p = {0};
        assert_int_equal(at_store_scan(s, AT_TABLE_COUNTERS, start, 7, &p), 0);
        for (size_t i = 0; i < json_array_size(p.items); i++) {
            const char *k = sattr(json_array_get(p.items, i), "counter_seq_key");
            assert_null(json_object_get(seen, k));
            json_object_set_new(seen, k, json_true());
            total++;
        }
        json_decref(start);
        start = p.last_key ? json_incref(p.last_key) : NULL;
        at_page_release(&p);
        if (!start) break;
    }
    assert_int_equal(total, 60);
    json_decref(seen);
    /* Expired items are not exported. */
    items = json_array();
    for (int i = 0; i < 5; i++) {
        char k[32];
        snprintf(k, sizeof k, "c%d", i);
        json_array_append_new(items, at_conf_item("counter_seq_key", S(k), "ExpirationTime",
                                          N(i < 2 ? now - 100 : now + 3600), NULL));
    }
    assert_int_equal(at_store_batch_put(s, AT_TABLE_TASKS_COUNTERS, items), 0);
    json_decref(items);
    {
        at_page p = {0};
        assert_int_equal(at_store_scan(s, AT_TABLE_TASKS_COUNTERS, NULL, 100, &p), 0);
        assert_int_equal(json_array_size(p.items), 3);
        assert_null(p.last_key);
        at_page_release(&p);
    }
    /* A batch with an invalid item is refused. */
    items = json_array();
    json_array_append_new(items, at_conf_item("counter_seq_key", N(1), NULL));
    assert_int_equal(at_store_batch_put(s, AT_TABLE_COUNTERS, items), AT_EINVAL);
    json_decref(items);
    at_store_free(s);
}

/* ---- the group ---- */

static int group_setup(void **state)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    snprintf(G.run, sizeof G.run, "%lx%x", (unsigned long)ts.tv_sec, (unsigned)(getpid() & 0xffff));
    make_names(G.names, G.np, "");
    if (G.open(G.ctx, G.np, &G.s) != 0 || !G.s) return -1;
    return at_store_setup(G.s, NULL, NULL) == 0 ? 0 : -1;
}

static int group_teardown(void **state)
{
    at_store_free(G.s);
    G.s = NULL;
    return 0;
}

int at_conformance_run(const char *suite_name, at_conf_open open, void *ctx)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_setup_idempotent),
        cmocka_unit_test(test_missing_table),
        cmocka_unit_test(test_roundtrip_types),
        cmocka_unit_test(test_wrong_key_types),
        cmocka_unit_test(test_conditional_put),
        cmocka_unit_test(test_update),
        cmocka_unit_test(test_conditional_delete),
        cmocka_unit_test(test_query_table),
        cmocka_unit_test(test_query_number_keys),
        cmocka_unit_test(test_sparse_index),
        cmocka_unit_test(test_paging_ties),
        cmocka_unit_test(test_paging_exact),
        cmocka_unit_test(test_filter_live),
        cmocka_unit_test(test_count),
        cmocka_unit_test(test_include_projection),
        cmocka_unit_test(test_read_bound),
        cmocka_unit_test(test_tenant_filter),
        cmocka_unit_test(test_ttl),
        cmocka_unit_test(test_counter_concurrency),
        cmocka_unit_test(test_stream),
        cmocka_unit_test(test_scan_batch),
    };
    G.open = open;
    G.ctx = ctx;
    return _cmocka_run_group_tests(suite_name, tests, sizeof tests / sizeof tests[0], group_setup,
                                   group_teardown);
}
