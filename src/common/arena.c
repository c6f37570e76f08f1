/* Per-request bump allocator. */
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "actionstools/arena.h"
#include "actionstools/banned.h"

#define CHUNK_SIZE 4096
#define ALIGN 16

struct at_arena_chunk {
    at_arena_chunk *next;
    size_t size; /* usable bytes in data */
    _Alignas(ALIGN) unsigned char data[];
};

void at_arena_init(at_arena *a)
{
    a->head = NULL;
    a->used = 0;
    a->total = 0;
}

void *at_arena_alloc(at_arena *a, size_t n)
{
    void *p;
    size_t rounded = (n + ALIGN - 1) & ~(size_t)(ALIGN - 1);
    if (rounded < n) return NULL;
    if (!a->head || a->head->size - a->used < rounded) {
        size_t size = rounded > CHUNK_SIZE ? rounded : CHUNK_SIZE;
        at_arena_chunk *c;
        if (size > SIZE_MAX - sizeof *c) return NULL; /* the header would wrap the size */
        c = malloc(sizeof *c + size);
        if (!c) return NULL;
        c->size = size;
        if (a->head && rounded > CHUNK_SIZE) {
            /* A big block gets a chunk of its own behind the current one, so the
             * space left in the current chunk stays usable. */
            c->next = a->head->next;
            a->head->next = c;
            a->total += rounded;
            return c->data;
        }
        c->next = a->head;
        a->head = c;
        a->used = 0;
    }
    p = a->head->data + a->used;
    a->used += rounded;
    a->total += rounded;
    return p;
}

void *at_arena_calloc(at_arena *a, size_t n)
{
    void *p = at_arena_alloc(a, n);
    if (p) memset(p, 0, n);
    return p;
}

char *at_arena_strndup(at_arena *a, const char *s, size_t n)
{
    char *p = at_arena_alloc(a, n + 1);
    if (!p) return NULL;
    memcpy(p, s, n);
    p[n] = '\0';
    return p;
}

char *at_arena_strdup(at_arena *a, const char *s)
{
    return s ? at_arena_strndup(a, s, strlen(s)) : NULL;
}

char *at_arena_printf(at_arena *a, const char *fmt, ...)
{
    va_list ap;
    int n;
    char *p;
    va_start(ap, fmt);
    n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0) return NULL;
    p = at_arena_alloc(a, (size_t)n + 1);
    if (!p) return NULL;
    va_start(ap, fmt);
    vsnprintf(p, (size_t)n + 1, fmt, ap);
    va_end(ap);
    return p;
}

void at_arena_release(at_arena *a)
{
    at_arena_chunk *c = a->head;
    while (c) {
        at_arena_chunk *next = c->next;
        free(c);
        c = next;
    }
    at_arena_init(a);
}
