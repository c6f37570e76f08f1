/* at_buf: a growable byte buffer with a hard cap (curl's dynbuf, git's strbuf).
 * The contents are always NUL-terminated once anything was added. */
#ifndef AT_BUF_H
#define AT_BUF_H

#include <stdarg.h>
#include <stddef.h>

typedef struct at_buf {
    char *ptr;  /* NULL until the first add */
    size_t len; /* bytes used, not counting the terminating NUL */
    size_t cap; /* bytes allocated */
    size_t max; /* hard cap on len; adding past it fails with AT_ETOOBIG */
} at_buf;

/* Prepares an empty buffer in the caller's memory that may hold at most max bytes. */
void at_buf_init(at_buf *b, size_t max);

/* Appends n bytes. Returns 0, AT_ETOOBIG (over max; nothing is added) or AT_ENOMEM. */
int at_buf_add(at_buf *b, const void *p, size_t n);

/* Appends a NUL-terminated string. Same returns as at_buf_add. */
int at_buf_adds(at_buf *b, const char *s);

/* Appends one byte. Same returns as at_buf_add. */
int at_buf_addc(at_buf *b, char c);

/* Appends printf-formatted text. Same returns as at_buf_add. */
int at_buf_printf(at_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Appends vprintf-formatted text. Same returns as at_buf_add. */
int at_buf_vprintf(at_buf *b, const char *fmt, va_list ap);

/* Returns the contents (never NULL: "" when empty) and hands their ownership to the
 * caller, who frees them with free(). The buffer is left empty and reusable.
 * *len (if not NULL) receives the length. NULL only when allocating "" fails. */
char *at_buf_take(at_buf *b, size_t *len /* OUT */);

/* Empties the buffer but keeps its memory. */
void at_buf_reset(at_buf *b);

/* Frees the contents; the buffer is empty and reusable afterwards. */
void at_buf_release(at_buf *b);

/* Returns the contents as a string ("" when nothing was added). Borrowed. */
const char *at_buf_str(const at_buf *b);

#endif
