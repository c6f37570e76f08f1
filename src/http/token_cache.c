/* Bearer tokens already verified, per thread: see token_cache.h. */
#include <openssl/crypto.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "token_cache.h"
#include "actionstools/banned.h"

/* One remembered token: the struct, then the token's bytes and the identity's strings,
 * in one allocation. */
typedef struct entry {
    uint64_t verifier; /* at_jwt_verifier_serial of the verifier that accepted it */
    uint64_t hash;
    size_t len; /* of the token */
    at_token_times times;
    int is_admin;
    const char *user_uuid, *user_name, *instance_id; /* inside this allocation */
    char token[];
} entry;

typedef struct cache {
    entry *slot[AT_TOKEN_CACHE_SLOTS];
} cache;

static pthread_key_t cache_key;
static pthread_once_t cache_once = PTHREAD_ONCE_INIT;
static __thread cache *mine;

/* At a thread's exit: its cache goes with it. */
static void cache_free(void *p)
{
    cache *c = p;
    for (size_t i = 0; i < AT_TOKEN_CACHE_SLOTS; i++)
        free(c->slot[i]);
    free(c);
}

static void make_key(void)
{
    if (pthread_key_create(&cache_key, cache_free)) abort(); /* only when out of keys at start */
}

/* Returns this thread's cache, made on first use; NULL when out of memory. */
static cache *thread_cache(void)
{
    if (mine) return mine;
    pthread_once(&cache_once, make_key);
    mine = calloc(1, sizeof *mine);
    if (mine && pthread_setspecific(cache_key, mine)) {
        free(mine);
        mine = NULL;
    }
    return mine;
}

/* FNV-1a over the token: picks a slot. Whether a token is in the cache is decided by
 * comparing all its bytes, never by the hash. */
static uint64_t hash_of(const char *s, size_t n)
{
    uint64_t h = 14695981039346656037u;
    for (size_t i = 0; i < n; i++) {
        h ^= (unsigned char)s[i];
        h *= 1099511628211u;
    }
    return h;
}

static int still_valid(const at_token_times *t, int64_t now)
{
    if ((double)now > t->exp + AT_JWT_LEEWAY) return 0;
    if (t->has_nbf && t->nbf > (double)now + AT_JWT_LEEWAY) return 0;
    return 1;
}

int at_token_cache_get(const at_jwt_verifier *v, const char *token, int64_t now, at_arena *a,
                       at_identity *id)
{
    size_t n = strlen(token);
    uint64_t h;
    cache *c;
    entry *e;

    if (n > AT_TOKEN_CACHE_MAX_LEN || !(c = mine)) return 0;
    h = hash_of(token, n);
    e = c->slot[h % AT_TOKEN_CACHE_SLOTS];
    /* The bytes are compared in constant time: how long a comparison takes must not
     * tell a caller how much of someone else's token it guessed. */
    if (!e || e->hash != h || e->len != n || e->verifier != at_jwt_verifier_serial(v) ||
        CRYPTO_memcmp(e->token, token, n) != 0)
        return 0;
    if (!still_valid(&e->times, now)) {
        c->slot[h % AT_TOKEN_CACHE_SLOTS] = NULL;
        free(e);
        return 0;
    }
    id->user_uuid = at_arena_strdup(a, e->user_uuid);
    id->user_name = at_arena_strdup(a, e->user_name);
    id->instance_id = at_arena_strdup(a, e->instance_id);
    id->is_admin = e->is_admin;
    return id->user_uuid && id->user_name && id->instance_id;
}

void at_token_cache_put(const at_jwt_verifier *v, const char *token, const at_token_times *t,
                        const at_identity *id)
{
    size_t n = strlen(token), nu, nn, ni;
    cache *c;
    entry *e;
    char *p;

    if (n > AT_TOKEN_CACHE_MAX_LEN || !id->user_uuid || !id->instance_id || !(c = thread_cache()))
        return;
    nu = strlen(id->user_uuid) + 1;
    nn = strlen(id->user_name ? id->user_name : "") + 1;
    ni = strlen(id->instance_id) + 1;
    e = malloc(sizeof *e + n + 1 + nu + nn + ni);
    if (!e) return;
    e->verifier = at_jwt_verifier_serial(v);
    e->hash = hash_of(token, n);
    e->len = n;
    e->times = *t;
    e->is_admin = id->is_admin;
    memcpy(e->token, token, n + 1);
    p = e->token + n + 1;
    e->user_uuid = memcpy(p, id->user_uuid, nu);
    p += nu;
    e->user_name = memcpy(p, id->user_name ? id->user_name : "", nn);
    p += nn;
    e->instance_id = memcpy(p, id->instance_id, ni);
    free(c->slot[e->hash % AT_TOKEN_CACHE_SLOTS]);
    c->slot[e->hash % AT_TOKEN_CACHE_SLOTS] = e;
}
