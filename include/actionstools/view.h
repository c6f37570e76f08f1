/* How a stored item is shown in answers: its attributes as plain JSON, in a stable
 * order, with storage details (0/1 flags, a missing version, soft-delete marks) turned
 * into what clients expect. A resource describes its view with an at_view_spec; this
 * module knows nothing of any resource. */
#ifndef AT_VIEW_H
#define AT_VIEW_H

#include <jansson.h>

#include "actionstools/buf.h"

typedef struct at_view_spec {
    /* Written first, in this order, when the item has them. NULL-terminated. */
    const char *const *leading;
    /* Attributes stored as 0/1 numbers (a DynamoDB key cannot be a boolean), written as
     * true/false; an item without one (written by the original service) shows false.
     * NULL-terminated, or NULL for none. */
    const char *const *flags;
    /* Never written (e.g. deleted_at). NULL-terminated, or NULL for none. */
    const char *const *hidden;
    /* 1: an item without "version" (written before versions existed) shows
     * "version":0. */
    int version_default;
} at_view_spec;

/* Appends to b the JSON object text of item (an AV map) as spec shows it: the leading
 * attributes, then every other attribute by name (byte order), each value converted
 * from its AV as at_av_write_json does; then the missing flags (false) and the missing
 * version (0). A malformed attribute is left out rather than failing the answer.
 * Returns 0 or at_buf's errors (AT_ENOMEM, AT_ETOOBIG). */
int at_view_write(at_buf *b, const json_t *item, const at_view_spec *spec);

/* Appends to b what at_view_write writes for the same item, byte for byte, reading the
 * packed item at p (n bytes, packed.h) without building JSON objects. Returns 0,
 * AT_EINVAL when the packed bytes are malformed (b then holds part of the answer), or
 * at_buf's errors. */
int at_view_write_raw(at_buf *b, const void *p, size_t n, const at_view_spec *spec);

#endif
