/* Unit tests of src/config/config.c: defaults, validation messages, .env files. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "actionstools/config.h"
#include "actionstools/err.h"
#include "actionstools/banned.h"

static const char *const vars[] = {
    "ENV_NAME", "BASE_PREFIX", "LISTEN", "STORAGE", "SQLITE_PATH", "AWS_REGION", "AWS_DEFAULT_REGION",
    "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "DYNAMODB_ENDPOINT", "TABLE_NOTES", "TABLE_BOGUS",
    "AUTH_JWT_SECRET", "AUTH_JWT_PUBLIC_KEY_FILE", "CORS_ALLOW_ORIGINS", "SMTP_URL", "SMTP_FROM",
    "COUNTERS_TTL_SECONDS", "LOG_LEVEL", "HTTP_MAX_CONNECTIONS", "HTTP_REQUEST_TIMEOUT", "HTTP_IDLE_TIMEOUT",
    "SLACK_WEBHOOK_URL", "AT_TEST_FROM_FILE", "CURSOR_SECRET",
    NULL,
};

static int clear_env(void **state)
{
    (void)state;
    for (const char *const *v = vars; *v; v++) unsetenv(*v);
    return 0;
}

static void test_defaults(void **state)
{
    at_config c;
    char err[256] = "";
    (void)state;
    assert_int_equal(at_config_load(&c, err, sizeof err), 0);
    assert_string_equal(c.env_name, "local");
    assert_false(c.production);
    assert_string_equal(c.base_prefix, "");
    assert_string_equal(c.listen_host, "127.0.0.1");
    assert_int_equal(c.listen_port, 8080);
    assert_string_equal(c.storage, "sqlite");
    assert_string_equal(c.sqlite_path, "./var/actionstools.db");
    assert_string_equal(c.table_names[AT_TABLE_NOTES], "em_actions_notes_staging");
    assert_string_equal(c.table_names[AT_TABLE_REPORTS_CACHE], "em_actions_reports_cache_staging");
    assert_true(c.cors_any);
    assert_int_equal(c.counters_ttl_seconds, 345600);
    assert_int_equal(c.log_level, AT_LOG_INFO);
    assert_int_equal(c.http_max_connections, 10000);
    assert_int_equal(c.http_request_timeout, 30);
    assert_int_equal(c.http_idle_timeout, 60);
    assert_int_not_equal(at_config_require_auth(&c, err, sizeof err), 0);
    assert_non_null(strstr(err, "AUTH_JWT_SECRET"));
    at_config_release(&c);
}

static void test_production(void **state)
{
    at_config c;
    char err[256] = "";
    (void)state;
    setenv("ENV_NAME", "production", 1);
    setenv("TABLE_NOTES", "my_notes", 1);
    assert_int_equal(at_config_load(&c, err, sizeof err), 0);
    assert_true(c.production);
    assert_string_equal(c.base_prefix, "/actionstools");
    assert_string_equal(c.table_names[AT_TABLE_NOTES], "my_notes");
    assert_string_equal(c.table_names[AT_TABLE_TASKS], "em_actions_tasks");
    at_config_release(&c);
}

/* Each bad value stops start-up with a message naming its variable. */
static void test_errors_name_the_variable(void **state)
{
    static const char *const cases[][3] = {
        {"STORAGE", "postgres", "STORAGE"},
        {"LISTEN", "8080", "LISTEN"},
        {"LISTEN", "127.0.0.1:99999", "LISTEN"},
        {"TABLE_BOGUS", "x_table", "TABLE_bogus"},
        {"LOG_LEVEL", "loud", "LOG_LEVEL"},
        {"COUNTERS_TTL_SECONDS", "-5", "COUNTERS_TTL_SECONDS"},
        {"COUNTERS_TTL_SECONDS", "12abc", "COUNTERS_TTL_SECONDS"},
        {"HTTP_MAX_CONNECTIONS", "0", "HTTP_MAX_CONNECTIONS"},
        {"HTTP_MAX_CONNECTIONS", "many", "HTTP_MAX_CONNECTIONS"},
        {"HTTP_REQUEST_TIMEOUT", "0", "HTTP_REQUEST_TIMEOUT"},
        {"HTTP_REQUEST_TIMEOUT", "30s", "HTTP_REQUEST_TIMEOUT"},
        {"HTTP_IDLE_TIMEOUT", "-1", "HTTP_IDLE_TIMEOUT"},
        {"CORS_ALLOW_ORIGINS", "example.com", "CORS_ALLOW_ORIGINS"},
        {"BASE_PREFIX", "actionstools", "BASE_PREFIX"},
        {"DYNAMODB_ENDPOINT", "localhost:8000", "DYNAMODB_ENDPOINT"},
        {"SMTP_URL", "mail.example.com", "SMTP_URL"},
        {"AUTH_JWT_PUBLIC_KEY_FILE", "/nonexistent/key.pem", "AUTH_JWT_PUBLIC_KEY_FILE"},
        {"CURSOR_SECRET", "short-secret-value", "CURSOR_SECRET"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        at_config c;
        char err[512] = "";
        clear_env(state);
        setenv(cases[i][0], cases[i][1], 1);
        assert_int_equal(at_config_load(&c, err, sizeof err), AT_EINVAL);
        if (!strstr(err, cases[i][2])) fail_msg("%s=%s: message '%s' does not name it", cases[i][0], cases[i][1], err);
    }
}

static void test_dynamodb_needs_credentials(void **state)
{
    at_config c;
    char err[512] = "";
    (void)state;
    setenv("STORAGE", "dynamodb", 1);
    setenv("AWS_REGION", "eu-west-1", 1);
    assert_int_equal(at_config_load(&c, err, sizeof err), AT_EINVAL);
    assert_non_null(strstr(err, "AWS_ACCESS_KEY_ID"));
    setenv("AWS_ACCESS_KEY_ID", "AKID", 1);
    setenv("AWS_SECRET_ACCESS_KEY", "very-secret-value", 1);
    assert_int_equal(at_config_load(&c, err, sizeof err), 0);
    assert_string_equal(c.aws_region, "eu-west-1");
    at_config_release(&c);
}

static void test_cors_list(void **state)
{
    at_config c;
    char err[256] = "";
    (void)state;
    setenv("CORS_ALLOW_ORIGINS", " https://a.example , http://b.example:8080 ", 1);
    assert_int_equal(at_config_load(&c, err, sizeof err), 0);
    assert_false(c.cors_any);
    assert_int_equal(c.ncors_origins, 2);
    assert_string_equal(c.cors_origins[0], "https://a.example");
    assert_string_equal(c.cors_origins[1], "http://b.example:8080");
    at_config_release(&c);
}

static void test_env_file(void **state)
{
    char dir[] = "/tmp/at-config-XXXXXX", path[64], err[256] = "";
    FILE *f;
    (void)state;
    assert_non_null(mkdtemp(dir));
    snprintf(path, sizeof path, "%s/x.env", dir);
    f = fopen(path, "w");
    fputs("# comment\n\nexport AT_TEST_FROM_FILE=\"quoted value\"\nLOG_LEVEL=debug\n", f);
    fclose(f);
    setenv("LOG_LEVEL", "warn", 1); /* the environment wins */
    assert_int_equal(at_config_load_file(path, err, sizeof err), 0);
    assert_string_equal(getenv("AT_TEST_FROM_FILE"), "quoted value");
    assert_string_equal(getenv("LOG_LEVEL"), "warn");
    f = fopen(path, "w");
    fputs("NOT A LINE\n", f);
    fclose(f);
    assert_int_equal(at_config_load_file(path, err, sizeof err), AT_EINVAL);
    assert_non_null(strstr(err, ":1:"));
    unlink(path);
    rmdir(dir);
    assert_int_not_equal(at_config_load_file(path, err, sizeof err), 0);
}

/* CURSOR_SECRET is optional; when set it is kept as given, and a short one is refused
 * without the value appearing in the message. */
static void test_cursor_secret(void **state)
{
    at_config c;
    char err[512] = "";
    (void)state;
    assert_int_equal(at_config_load(&c, err, sizeof err), 0);
    assert_null(c.cursor_secret);
    at_config_release(&c);
    setenv("CURSOR_SECRET", "0123456789abcdef0123456789abcdef", 1);
    assert_int_equal(at_config_load(&c, err, sizeof err), 0);
    assert_string_equal(c.cursor_secret, "0123456789abcdef0123456789abcdef");
    at_config_release(&c);
    setenv("CURSOR_SECRET", "hunter2-is-short", 1);
    assert_int_equal(at_config_load(&c, err, sizeof err), AT_EINVAL);
    assert_non_null(strstr(err, "CURSOR_SECRET"));
    assert_null(strstr(err, "hunter2"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup(test_defaults, clear_env),
        cmocka_unit_test_setup(test_production, clear_env),
        cmocka_unit_test_setup(test_errors_name_the_variable, clear_env),
        cmocka_unit_test_setup(test_dynamodb_needs_credentials, clear_env),
        cmocka_unit_test_setup(test_cors_list, clear_env),
        cmocka_unit_test_setup(test_env_file, clear_env),
        cmocka_unit_test_setup(test_cursor_secret, clear_env),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
