/* Unit tests of src/common/url.c. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include "actionstools/url.h"
#include "actionstools/banned.h"

static void test_http_urls(void **state)
{
    static const char *const good[] = {
        "http://example.com",
        "https://example.com/a/b?x=1&y=%20#frag",
        "HTTPS://Example.COM:8443/x",
        "https://[::1]:8080/x",
        "https://user:pass@host/x",
        "http://127.0.0.1/",
        "https://s3.amazonaws.com/b/k?X-Amz-Signature=abc",
        NULL,
    };
    static const char *const bad[] = {
        "",
        "example.com/x",
        "//example.com/x",
        "ftp://example.com/x",
        "file:///etc/passwd",
        "javascript:alert(1)",
        "mailto:a@b.c",
        "http://",
        "https://",
        "http:///path",
        "https://exa mple.com",
        "https://example.com/a b",
        "https://ex\tample.com",
        "https://example.com/\n",
        "data:text/plain,hi",
        " https://example.com",
        "httpx://e.com",
        NULL,
    };
    (void)state;
    for (const char *const *s = good; *s; s++)
        if (!at_url_is_http(*s)) fail_msg("\"%s\" refused", *s);
    for (const char *const *s = bad; *s; s++)
        if (at_url_is_http(*s)) fail_msg("\"%s\" accepted", *s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_http_urls),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
