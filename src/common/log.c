/* JSON lines on stderr. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "actionstools/log.h"
#include "actionstools/av.h"
#include "actionstools/buf.h"
#include "actionstools/err.h"
#include "actionstools/timeutil.h"
#include "actionstools/banned.h"

static int min_level = AT_LOG_INFO;

static const char *const level_names[] = {"debug", "info", "warn", "error"};

void at_log_set_level(at_log_level level)
{
    min_level = level;
}

int at_log_parse_level(const char *s, at_log_level *out)
{
    for (int i = 0; i < 4; i++)
        if (strcasecmp(s, level_names[i]) == 0) {
            *out = (at_log_level)i;
            return 0;
        }
    if (strcasecmp(s, "warning") == 0) {
        *out = AT_LOG_WARN;
        return 0;
    }
    return AT_EINVAL;
}

int at_log_enabled(at_log_level level)
{
    return (int)level >= min_level;
}

static void write_all(int fd, const char *p, size_t n)
{
    while (n > 0) {
        ssize_t w = write(fd, p, n);
        if (w <= 0) return;
        p += w;
        n -= (size_t)w;
    }
}

void at_log_json(at_log_level level, const char *msg, json_t *fields)
{
    char ts[32];
    json_t *line;
    char *text;

    if (!at_log_enabled(level)) return;
    at_time_rfc3339(at_now_us(), ts);
    line = json_pack("{s:s, s:s, s:s}", "time", ts, "level", level_names[level], "msg", msg);
    if (!line) return;
    if (fields) json_object_update(line, fields);
    text = json_dumps(line, JSON_COMPACT | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(6));
    json_decref(line);
    if (!text) return;
    {
        size_t n = strlen(text);
        char *withnl = realloc(text, n + 2);
        if (withnl) {
            withnl[n] = '\n';
            write_all(STDERR_FILENO, withnl, n + 1);
            text = withnl;
        }
    }
    free(text);
}

void at_log_request(const char *request_id, const char *method, const char *path, int status,
                    double duration_ms, const char *user)
{
    char ts[32];
    at_buf b;
    int rc;

    if (!at_log_enabled(AT_LOG_INFO)) return;
    at_time_rfc3339(at_now_us(), ts);
    at_buf_init(&b, 1u << 20);
    rc = at_buf_printf(&b, "{\"time\":\"%s\",\"level\":\"info\",\"msg\":\"request\",\"request_id\":", ts);
    if (!rc) rc = at_json_write_string(&b, request_id, strlen(request_id));
    if (!rc) rc = at_buf_adds(&b, ",\"method\":");
    if (!rc) rc = at_json_write_string(&b, method, strlen(method));
    if (!rc) rc = at_buf_adds(&b, ",\"path\":");
    if (!rc) rc = at_json_write_string(&b, path, strlen(path));
    if (!rc) rc = at_buf_printf(&b, ",\"status\":%d,\"duration_ms\":%.6g,\"user\":", status, duration_ms);
    if (!rc) rc = user ? at_json_write_string(&b, user, strlen(user)) : at_buf_adds(&b, "null");
    if (!rc) rc = at_buf_adds(&b, "}\n");
    if (!rc) write_all(STDERR_FILENO, b.ptr, b.len);
    at_buf_release(&b);
}

void at_log(at_log_level level, const char *fmt, ...)
{
    char msg[1024];
    va_list ap;
    if (!at_log_enabled(level)) return;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    at_log_json(level, msg, NULL);
}
