/* at_arena: memory for one request, freed all at once (h2o's mem pool).
 * Allocations are 16-byte aligned. An arena is not thread-safe. */
#ifndef AT_ARENA_H
#define AT_ARENA_H

#include <stddef.h>

typedef struct at_arena_chunk at_arena_chunk;

typedef struct at_arena {
    at_arena_chunk *head; /* newest chunk first */
    size_t used;          /* bytes handed out from head */
    size_t total;         /* bytes handed out over the arena's life, for caps */
} at_arena;

/* Prepares an empty arena in the caller's memory. */
void at_arena_init(at_arena *a);

/* Returns n bytes of uninitialised memory owned by the arena, or NULL when out of memory. */
void *at_arena_alloc(at_arena *a, size_t n);

/* Returns a zero-filled allocation of n bytes, or NULL. */
void *at_arena_calloc(at_arena *a, size_t n);

/* Returns an arena copy of the n bytes at s with a NUL appended, or NULL. */
char *at_arena_strndup(at_arena *a, const char *s, size_t n);

/* Returns an arena copy of the string s, or NULL (also when s is NULL). */
char *at_arena_strdup(at_arena *a, const char *s);

/* Returns an arena string built from a printf format, or NULL. */
char *at_arena_printf(at_arena *a, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Frees everything the arena handed out; the arena is empty and reusable. */
void at_arena_release(at_arena *a);

#endif
