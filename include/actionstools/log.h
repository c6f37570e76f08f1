/* One JSON object per line on stderr. Each line is written whole (a single write(2) of
 * one or more whole lines), so lines from different threads never interleave. Never
 * pass secrets. */
#ifndef AT_LOG_H
#define AT_LOG_H

#include <jansson.h>

typedef enum { AT_LOG_DEBUG = 0, AT_LOG_INFO, AT_LOG_WARN, AT_LOG_ERROR } at_log_level;

/* Sends the lines to fd instead of stderr (tests). Set it before any thread logs. */
void at_log_set_fd(int fd);

/* Sets the lowest level that is written (default AT_LOG_INFO). */
void at_log_set_level(at_log_level level);

/* Parses "debug", "info", "warn"/"warning", "error". Returns 0 or AT_EINVAL. */
int at_log_parse_level(const char *s, at_log_level *out /* OUT */);

/* Returns 1 when lines of this level are written. */
int at_log_enabled(at_log_level level);

/* Writes {"time", "level", "msg", ...fields}. fields (may be NULL) is an object whose
 * members are copied into the line; it is borrowed. */
void at_log_json(at_log_level level, const char *msg, json_t *fields);

/* Writes {"time", "level", "msg"} with a printf-formatted message. */
/* Writes the one info line of an HTTP request (msg "request"), with the fields of the
 * JSON line at_log_json would write for them, formatted without building JSON objects
 * (it runs for every request). user may be NULL (written as null). */
void at_log_request(const char *request_id, const char *method, const char *path, int status,
                    double duration_ms, const char *user);

void at_log(at_log_level level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* With on, this thread's request lines (at_log_request) are gathered and written
 * together, by at_log_flush or once 4 KB (PIPE_BUF: one atomic write to a pipe) or
 * 100 ms of them have gathered; each line stays whole. Threads that call it flush before they wait (the polling threads, the
 * workers): one write(2) per request cost about a quarter of a GET /health. Other lines
 * are written at once, after the thread's gathered ones. Off (the default) writes each
 * line at once; turning it off flushes. */
void at_log_batch(int on);

/* Writes this thread's gathered request lines, if any. */
void at_log_flush(void);

/* Returns 1 when this thread holds gathered lines not written yet. */
int at_log_pending(void);

#endif
