/* Growable byte buffer with a hard cap. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "actionstools/buf.h"
#include "actionstools/err.h"
#include "actionstools/banned.h"

void at_buf_init(at_buf *b, size_t max)
{
    b->ptr = NULL;
    b->len = b->cap = 0;
    b->max = max;
}

static int grow(at_buf *b, size_t need)
{
    size_t cap;
    char *p;
    if (need > b->max || need == SIZE_MAX) return AT_ETOOBIG;
    if (need + 1 <= b->cap) return 0;
    cap = b->cap ? b->cap : 64;
    while (cap < need + 1) cap = cap > SIZE_MAX / 2 ? need + 1 : cap * 2;
    if (b->max < SIZE_MAX && cap > b->max + 1) cap = b->max + 1; /* SIZE_MAX: no cap */
    p = realloc(b->ptr, cap);
    if (!p) return AT_ENOMEM;
    b->ptr = p;
    b->cap = cap;
    return 0;
}

int at_buf_add(at_buf *b, const void *p, size_t n)
{
    int rc;
    if (n > b->max - b->len) return AT_ETOOBIG;
    if (b->len + n < b->cap) { /* room already: the common case, no call */
        if (n) memcpy(b->ptr + b->len, p, n);
        b->len += n;
        b->ptr[b->len] = '\0';
        return 0;
    }
    rc = grow(b, b->len + n);
    if (rc) return rc;
    if (n) memcpy(b->ptr + b->len, p, n);
    b->len += n;
    b->ptr[b->len] = '\0';
    return 0;
}

int at_buf_adds(at_buf *b, const char *s)
{
    return at_buf_add(b, s, strlen(s));
}

int at_buf_addc(at_buf *b, char c)
{
    if (b->len + 1 < b->cap && b->len < b->max) {
        b->ptr[b->len++] = c;
        b->ptr[b->len] = '\0';
        return 0;
    }
    return at_buf_add(b, &c, 1);
}

int at_buf_vprintf(at_buf *b, const char *fmt, va_list ap)
{
    va_list ap2;
    int n, rc;
    char small[256];

    va_copy(ap2, ap);
    n = vsnprintf(small, sizeof small, fmt, ap2);
    va_end(ap2);
    if (n < 0) return AT_EINVAL;
    if ((size_t)n < sizeof small) return at_buf_add(b, small, (size_t)n);
    if ((size_t)n > b->max - b->len) return AT_ETOOBIG;
    rc = grow(b, b->len + (size_t)n);
    if (rc) return rc;
    vsnprintf(b->ptr + b->len, (size_t)n + 1, fmt, ap);
    b->len += (size_t)n;
    return 0;
}

int at_buf_printf(at_buf *b, const char *fmt, ...)
{
    va_list ap;
    int rc;
    va_start(ap, fmt);
    rc = at_buf_vprintf(b, fmt, ap);
    va_end(ap);
    return rc;
}

char *at_buf_take(at_buf *b, size_t *len)
{
    char *p = b->ptr;
    if (len) *len = b->len;
    if (!p) p = strdup("");
    b->ptr = NULL;
    b->len = b->cap = 0;
    return p;
}

void at_buf_reset(at_buf *b)
{
    b->len = 0;
    if (b->ptr) b->ptr[0] = '\0';
}

void at_buf_release(at_buf *b)
{
    free(b->ptr);
    b->ptr = NULL;
    b->len = b->cap = 0;
}

const char *at_buf_str(const at_buf *b)
{
    return b->ptr ? b->ptr : "";
}
