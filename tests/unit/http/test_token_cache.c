/* Unit tests of src/http/token_cache.c, and of at_auth_identify's use of it: a
 * remembered token is the same token verified by the same verifier, and stops working
 * when it expires. */
#include <pthread.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "http/auth.h"
#include "http/token_cache.h"
#include "actionstools/err.h"
#include "actionstools/jwt.h"
#include "actionstools/timeutil.h"
#include "actionstools/banned.h"

#define NOW ((int64_t)1700000000)
#define SECRET_A "token-cache-secret-a-0123456789-abcdefghij"
#define SECRET_B "token-cache-secret-b-0123456789-abcdefghij"
#define TOKEN "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJ1In0.c2lnbmF0dXJl"

static at_jwt_verifier *verifier(const char *secret)
{
    at_jwt_config cfg = {.secret = secret};
    at_jwt_verifier *v = NULL;
    char why[256];
    assert_int_equal(at_jwt_verifier_new(&cfg, &v, why, sizeof why), 0);
    return v;
}

static const at_identity ANN = {"00000000-0000-4000-8000-00000000a001", "Ann", "tenant-1", 1};

static void remember(at_jwt_verifier *v, const char *token, double exp)
{
    at_token_times t = {.exp = exp};
    at_token_cache_put(v, token, &t, &ANN);
}

static void test_hit_gives_the_identity(void **state)
{
    at_jwt_verifier *v = verifier(SECRET_A);
    at_arena a;
    at_identity id;
    (void)state;
    at_arena_init(&a);
    assert_int_equal(at_token_cache_get(v, TOKEN, NOW, &a, &id), 0); /* never seen */
    remember(v, TOKEN, (double)NOW + 3600);
    memset(&id, 0, sizeof id);
    assert_int_equal(at_token_cache_get(v, TOKEN, NOW, &a, &id), 1);
    assert_string_equal(id.user_uuid, ANN.user_uuid);
    assert_string_equal(id.user_name, "Ann");
    assert_string_equal(id.instance_id, "tenant-1");
    assert_int_equal(id.is_admin, 1);
    at_arena_release(&a);
    at_jwt_verifier_free(v);
}

/* Another token (one byte off, a prefix, longer) is not the remembered one. */
static void test_only_the_same_bytes(void **state)
{
    at_jwt_verifier *v = verifier(SECRET_A);
    at_arena a;
    at_identity id;
    char t[sizeof TOKEN + 1];
    (void)state;
    at_arena_init(&a);
    remember(v, TOKEN, (double)NOW + 3600);
    for (size_t i = 0; i < strlen(TOKEN); i++) {
        memcpy(t, TOKEN, sizeof TOKEN);
        t[i] = t[i] == 'x' ? 'y' : 'x';
        assert_int_equal(at_token_cache_get(v, t, NOW, &a, &id), 0);
    }
    memcpy(t, TOKEN, sizeof TOKEN);
    t[sizeof TOKEN - 2] = '\0';
    assert_int_equal(at_token_cache_get(v, t, NOW, &a, &id), 0);
    memcpy(t, TOKEN, sizeof TOKEN - 1);
    t[sizeof TOKEN - 1] = 'A';
    t[sizeof TOKEN] = '\0';
    assert_int_equal(at_token_cache_get(v, t, NOW, &a, &id), 0);
    assert_int_equal(at_token_cache_get(v, TOKEN, NOW, &a, &id), 1);
    at_arena_release(&a);
    at_jwt_verifier_free(v);
}

/* What one verifier accepted is nothing to another, even one made later at the same
 * address with the same secret. */
static void test_keyed_by_verifier(void **state)
{
    at_jwt_verifier *v = verifier(SECRET_A), *w = verifier(SECRET_B);
    at_arena a;
    at_identity id;
    (void)state;
    at_arena_init(&a);
    remember(v, TOKEN, (double)NOW + 3600);
    assert_int_equal(at_token_cache_get(w, TOKEN, NOW, &a, &id), 0);
    at_jwt_verifier_free(v);
    v = verifier(SECRET_A);
    assert_int_equal(at_token_cache_get(v, TOKEN, NOW, &a, &id), 0);
    at_arena_release(&a);
    at_jwt_verifier_free(v);
    at_jwt_verifier_free(w);
}

/* exp and nbf hold as they do for at_jwt_verify: AT_JWT_LEEWAY seconds either way. */
static void test_expiry_and_nbf(void **state)
{
    at_jwt_verifier *v = verifier(SECRET_A);
    at_token_times t = {.exp = (double)NOW, .has_nbf = 1, .nbf = (double)NOW + 100};
    at_arena a;
    at_identity id;
    (void)state;
    at_arena_init(&a);
    remember(v, TOKEN, (double)NOW);
    assert_int_equal(at_token_cache_get(v, TOKEN, NOW + AT_JWT_LEEWAY, &a, &id), 1);
    assert_int_equal(at_token_cache_get(v, TOKEN, NOW + AT_JWT_LEEWAY + 1, &a, &id), 0);
    /* Dropped: not even an earlier time finds it now. */
    assert_int_equal(at_token_cache_get(v, TOKEN, NOW, &a, &id), 0);

    t.exp = (double)NOW + 3600;
    at_token_cache_put(v, TOKEN, &t, &ANN);
    assert_int_equal(at_token_cache_get(v, TOKEN, NOW + 100 - AT_JWT_LEEWAY - 1, &a, &id), 0);
    at_token_cache_put(v, TOKEN, &t, &ANN);
    assert_int_equal(at_token_cache_get(v, TOKEN, NOW + 100 - AT_JWT_LEEWAY, &a, &id), 1);
    at_arena_release(&a);
    at_jwt_verifier_free(v);
}

static void test_long_tokens_not_kept(void **state)
{
    at_jwt_verifier *v = verifier(SECRET_A);
    char *t = malloc(AT_TOKEN_CACHE_MAX_LEN + 2);
    at_arena a;
    at_identity id;
    (void)state;
    assert_non_null(t);
    memset(t, 'a', AT_TOKEN_CACHE_MAX_LEN + 1);
    t[AT_TOKEN_CACHE_MAX_LEN + 1] = '\0';
    at_arena_init(&a);
    remember(v, t, (double)NOW + 3600);
    assert_int_equal(at_token_cache_get(v, t, NOW, &a, &id), 0);
    t[AT_TOKEN_CACHE_MAX_LEN] = '\0';
    remember(v, t, (double)NOW + 3600);
    assert_int_equal(at_token_cache_get(v, t, NOW, &a, &id), 1);
    at_arena_release(&a);
    free(t);
    at_jwt_verifier_free(v);
}

typedef struct lookup {
    at_jwt_verifier *v;
    int hit;
} lookup;

static void *lookup_main(void *p)
{
    lookup *l = p;
    at_arena a;
    at_identity id;
    at_arena_init(&a);
    l->hit = at_token_cache_get(l->v, TOKEN, NOW, &a, &id);
    remember(l->v, TOKEN, (double)NOW + 3600); /* freed when this thread exits */
    at_arena_release(&a);
    return NULL;
}

/* Each thread has its own: nothing is shared, so nothing needs a lock. */
static void test_per_thread(void **state)
{
    lookup l = {verifier(SECRET_A), -1};
    pthread_t th;
    (void)state;
    remember(l.v, TOKEN, (double)NOW + 3600);
    assert_int_equal(pthread_create(&th, NULL, lookup_main, &l), 0);
    assert_int_equal(pthread_join(th, NULL), 0);
    assert_int_equal(l.hit, 0);
    at_jwt_verifier_free(l.v);
}

/* Many tokens: each lookup answers its own token's identity or nothing. */
static void test_many_tokens(void **state)
{
    at_jwt_verifier *v = verifier(SECRET_A);
    at_arena a;
    (void)state;
    at_arena_init(&a);
    for (int i = 0; i < 4 * AT_TOKEN_CACHE_SLOTS; i++) {
        char tok[64], user[64];
        at_identity who = {user, "", "tenant-1", 0};
        at_token_times t = {.exp = (double)NOW + 3600};
        snprintf(tok, sizeof tok, "token-%d", i);
        snprintf(user, sizeof user, "user-%d", i);
        at_token_cache_put(v, tok, &t, &who);
    }
    for (int i = 0; i < 4 * AT_TOKEN_CACHE_SLOTS; i++) {
        char tok[64], user[64];
        at_identity id;
        snprintf(tok, sizeof tok, "token-%d", i);
        snprintf(user, sizeof user, "user-%d", i);
        if (at_token_cache_get(v, tok, NOW, &a, &id)) assert_string_equal(id.user_uuid, user);
    }
    at_arena_release(&a);
    at_jwt_verifier_free(v);
}

static int identify(const at_jwt_verifier *v, const char *token, at_identity *id)
{
    at_arena a;
    char auth[4200];
    const char *why = NULL;
    int rc;
    at_header h = {"Authorization", auth};
    at_request req = {.method = "GET", .path = "/x", .headers = &h, .nheaders = 1};
    at_arena_init(&a);
    req.arena = &a;
    snprintf(auth, sizeof auth, "Bearer %s", token);
    rc = at_auth_identify(v, &req, &a, id, &why);
    if (!rc) id->user_uuid = id->user_uuid && strcmp(id->user_uuid, "u-1") == 0 ? "u-1" : "other";
    at_arena_release(&a);
    return rc;
}

/* Through at_auth_identify: a token verified (and so remembered) by one verifier is
 * refused by a verifier of another secret, every time; a good one is accepted again. */
static void test_identify_uses_the_cache_safely(void **state)
{
    at_jwt_verifier *v = verifier(SECRET_A), *w = verifier(SECRET_B);
    json_t *claims = json_pack("{s:s, s:s, s:s, s:I}", "sub", "u-1", "name", "U", "instance_id",
                               "tenant-1", "exp", (json_int_t)(at_now_us() / 1000000 + 3600));
    char *token = at_jwt_sign_hs256(SECRET_A, claims);
    at_identity id;
    (void)state;
    assert_non_null(token);
    for (int i = 0; i < 3; i++) {
        assert_int_equal(identify(v, token, &id), 0);
        assert_string_equal(id.user_uuid, "u-1");
        assert_int_equal(identify(w, token, &id), AT_EINVAL);
    }
    free(token);
    json_decref(claims);
    at_jwt_verifier_free(v);
    at_jwt_verifier_free(w);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_hit_gives_the_identity),
        cmocka_unit_test(test_only_the_same_bytes),
        cmocka_unit_test(test_keyed_by_verifier),
        cmocka_unit_test(test_expiry_and_nbf),
        cmocka_unit_test(test_long_tokens_not_kept),
        cmocka_unit_test(test_per_thread),
        cmocka_unit_test(test_many_tokens),
        cmocka_unit_test(test_identify_uses_the_cache_safely),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
