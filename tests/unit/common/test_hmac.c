/* Unit tests of src/common/hmac.c: the RFC 4231 HMAC-SHA256 vectors (short, long and
 * block-sized keys), OpenSSL's one-shot HMAC() on random inputs, and many threads on one
 * prepared key. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>

#include "actionstools/hmac.h"
#include "actionstools/banned.h"

static void hex(const unsigned char *p, size_t n, char *out)
{
    for (size_t i = 0; i < n; i++) snprintf(out + 2 * i, 3, "%02x", p[i]);
}

static void test_rfc4231(void **state)
{
    unsigned char k1[20], k6[131], d3[50], out[AT_HMAC_SHA256_LEN];
    char h[2 * AT_HMAC_SHA256_LEN + 1];
    at_hmac m;
    (void)state;
    memset(k1, 0x0b, sizeof k1);
    memset(k6, 0xaa, sizeof k6);
    memset(d3, 0xdd, sizeof d3);
    /* Test case 1 */
    assert_int_equal(at_hmac_init(&m, k1, sizeof k1), 0);
    assert_int_equal(at_hmac_sha256(&m, "Hi There", 8, out), 0);
    hex(out, sizeof out, h);
    assert_string_equal(h, "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7");
    at_hmac_release(&m);
    /* Test case 2: a key shorter than a block */
    assert_int_equal(at_hmac_init(&m, "Jefe", 4), 0);
    assert_int_equal(at_hmac_sha256(&m, "what do ya want for nothing?", 28, out), 0);
    hex(out, sizeof out, h);
    assert_string_equal(h, "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843");
    at_hmac_release(&m);
    /* Test case 3 */
    memset(k1, 0xaa, sizeof k1);
    assert_int_equal(at_hmac_init(&m, k1, sizeof k1), 0);
    assert_int_equal(at_hmac_sha256(&m, d3, sizeof d3, out), 0);
    hex(out, sizeof out, h);
    assert_string_equal(h, "773ea91e36800e46854db8ebd09181a72959098b3ef8c122d9635514ced565fe");
    at_hmac_release(&m);
    /* Test case 6: a key longer than a block is hashed first */
    assert_int_equal(at_hmac_init(&m, k6, sizeof k6), 0);
    assert_int_equal(at_hmac_sha256(&m, "Test Using Larger Than Block-Size Key - Hash Key First", 54, out), 0);
    hex(out, sizeof out, h);
    assert_string_equal(h, "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54");
    at_hmac_release(&m);
    at_hmac_release(&m); /* twice is harmless */
}

/* Any key length (0..200) and message agree with OpenSSL's one-shot HMAC(). */
static void test_matches_openssl(void **state)
{
    unsigned char key[200], msg[1000], a[AT_HMAC_SHA256_LEN], b[EVP_MAX_MD_SIZE];
    unsigned int n;
    (void)state;
    for (size_t klen = 0; klen <= sizeof key; klen += 7) {
        at_hmac m;
        size_t mlen = (klen * 13) % sizeof msg;
        assert_int_equal(RAND_bytes(key, sizeof key), 1);
        assert_int_equal(RAND_bytes(msg, sizeof msg), 1);
        assert_int_equal(at_hmac_init(&m, key, klen), 0);
        assert_int_equal(at_hmac_sha256(&m, msg, mlen, a), 0);
        assert_non_null(HMAC(EVP_sha256(), key, (int)klen, msg, mlen, b, &n));
        assert_memory_equal(a, b, sizeof a);
        at_hmac_release(&m);
    }
}

static at_hmac shared;
static unsigned char want[AT_HMAC_SHA256_LEN];

static void *worker(void *arg)
{
    unsigned char out[AT_HMAC_SHA256_LEN];
    long bad = 0;
    (void)arg;
    for (int i = 0; i < 5000; i++)
        if (at_hmac_sha256(&shared, "a cursor payload", 16, out) || memcmp(out, want, sizeof out)) bad++;
    return (void *)bad;
}

/* One prepared key used by many threads at once gives the same MAC in each. */
static void test_threads(void **state)
{
    pthread_t th[8];
    (void)state;
    assert_int_equal(at_hmac_init(&shared, "a secret of the deployment", 26), 0);
    assert_int_equal(at_hmac_sha256(&shared, "a cursor payload", 16, want), 0);
    for (int i = 0; i < 8; i++) assert_int_equal(pthread_create(&th[i], NULL, worker, NULL), 0);
    for (int i = 0; i < 8; i++) {
        void *bad;
        pthread_join(th[i], &bad);
        assert_int_equal((long)bad, 0);
    }
    at_hmac_release(&shared);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_rfc4231),
        cmocka_unit_test(test_matches_openssl),
        cmocka_unit_test(test_threads),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
