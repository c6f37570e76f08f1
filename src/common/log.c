/* JSON lines on stderr. */
#include <limits.h>
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
static int log_fd = STDERR_FILENO;

void at_log_set_fd(int fd)
{
    log_fd = fd;
}

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

/* This thread's request lines not written yet (at_log_batch). At most PIPE_BUF bytes:
 * a write of that much to a pipe (journald's stream, a log shipper's) is atomic, so two
 * threads' batches never mix; a larger one could be split in the middle of a line. */
#define BATCH_BYTES PIPE_BUF
#define BATCH_MAX_US 100000 /* a line waits at most this long while its thread is busy */
static __thread struct {
    int on;
    size_t len;
    int64_t first_us; /* when the oldest buffered line was added */
    char data[BATCH_BYTES];
} batch;

void at_log_batch(int on)
{
    at_log_flush();
    batch.on = on;
}

int at_log_pending(void)
{
    return batch.len > 0;
}

void at_log_flush(void)
{
    if (!batch.len) return;
    write_all(log_fd, batch.data, batch.len);
    batch.len = 0;
}

/* Writes the line p (n bytes, newline included), or adds it to this thread's batch. */
static void put_line(const char *p, size_t n, int64_t now_us)
{
    if (!batch.on) {
        write_all(log_fd, p, n);
        return;
    }
    if (batch.len + n > BATCH_BYTES) at_log_flush();
    if (n > BATCH_BYTES) {
        write_all(log_fd, p, n);
        return;
    }
    if (!batch.len) batch.first_us = now_us;
    memcpy(batch.data + batch.len, p, n);
    batch.len += n;
    if (now_us - batch.first_us >= BATCH_MAX_US) at_log_flush();
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
            at_log_flush(); /* after this thread's earlier lines */
            write_all(log_fd, withnl, n + 1);
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
    int64_t now;
    int rc;

    if (!at_log_enabled(AT_LOG_INFO)) return;
    now = at_now_us();
    at_time_rfc3339(now, ts);
    at_buf_init(&b, 1u << 20);
    rc = at_buf_printf(
        &b, "{\"time\":\"%s\",\"level\":\"info\",\"msg\":\"request\",\"request_id\":", ts);
    if (!rc) rc = at_json_write_string(&b, request_id, strlen(request_id));
    if (!rc) rc = at_buf_adds(&b, ",\"method\":");
    if (!rc) rc = at_json_write_string(&b, method, strlen(method));
    if (!rc) rc = at_buf_adds(&b, ",\"path\":");
    if (!rc) rc = at_json_write_string(&b, path, strlen(path));
    if (!rc)
        rc =
            at_buf_printf(&b, ",\"status\":%d,\"duration_ms\":%.6g,\"user\":", status, duration_ms);
    if (!rc) rc = user ? at_json_write_string(&b, user, strlen(user)) : at_buf_adds(&b, "null");
    if (!rc) rc = at_buf_adds(&b, "}\n");
    if (!rc) put_line(b.ptr, b.len, now);
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
