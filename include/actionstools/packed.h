/* Packed items: our storage form of an item (an AV map, see av.h), a compact binary
 * encoding of the attribute-value tree that is read without parsing JSON and without
 * allocating. The sqlite backend stores items this way, and a query with AT_Q_RAW
 * hands pages of packed items to callers, who write answers straight from them
 * (view.h: at_view_write_raw). docs/storage.md "Stored items" describes the format.
 *
 *   item   := 0xA1 count:varint member*          (members in the item's own order)
 *   member := len:varint name[len] 0x00 value
 *   value  := 'S' len:varint bytes[len] 0x00      string
 *           | 'N' len:varint text[len] 0x00       number, its DynamoDB text as given
 *           | 'B' len:varint base64[len] 0x00     binary, its base64 text as given
 *           | 'T' | 'F' | '0'                     BOOL true, BOOL false, NULL
 *           | 'M' count:varint size:u32le member* map (size: bytes of the members)
 *           | 'L' count:varint size:u32le value*  list
 *           | 's'|'n'|'b' count:varint size:u32le (len:varint bytes[len] 0x00)*  SS, NS, BS
 *
 * Every string is followed by a NUL (not counted in len), so names and numbers can be
 * used as C strings. The first byte tells a packed item from the JSON text stored by
 * older versions ('{'). Every reader checks bounds: malformed bytes are an error, never
 * a read past the end. */
#ifndef AT_PACKED_H
#define AT_PACKED_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "actionstools/buf.h"
#include "actionstools/schema.h"

#define AT_PACKED_MAGIC 0xA1

/* One packed value: the bytes from its tag (p[0]) up to end (exclusive). */
typedef struct at_packed_val {
    const unsigned char *p;
    const unsigned char *end;
} at_packed_val;

/* An iterator over the members of a packed item or map. */
typedef struct at_packed_iter {
    const unsigned char *p, *end;
    uint64_t left; /* members not yet returned */
} at_packed_iter;

/* Returns 1 when the n bytes at p begin like a packed item (its magic byte), else 0. */
int at_packed_is(const void *p, size_t n);

/* Appends the packed form of item (an AV map) to b. Returns 0, AT_EINVAL when item is
 * not an object of well-formed AVs (b then holds part of it), or at_buf's errors. */
int at_packed_encode(at_buf *b, const json_t *item);

/* Returns a new AV map decoded from the packed item at p (n bytes), members in their
 * stored order, or NULL when the bytes are malformed or memory runs out. */
json_t *at_packed_decode(const void *p, size_t n);

/* Returns 0 when the n bytes at p are a well-formed packed item (tags, sizes, counts,
 * terminators and nesting all consistent; strings valid UTF-8), else AT_EINVAL. */
int at_packed_check(const void *p, size_t n);

/* Starts iterating the top-level attributes of the packed item at p. Returns 0, or
 * AT_EINVAL when it is not a packed item. */
int at_packed_iter_item(at_packed_iter *it, const void *p, size_t n);

/* Starts iterating the members of the packed map v ('M'). 0 or AT_EINVAL. */
int at_packed_iter_map(at_packed_iter *it, const at_packed_val *v);

/* Returns the next member: 1 and its name (NUL-terminated; name_len bytes, which may
 * hold a NUL) and value; 0 after the last; AT_EINVAL when the bytes are malformed. */
int at_packed_next(at_packed_iter *it, const char **name, size_t *name_len /* OUT */,
                   at_packed_val *v /* OUT */);

/* Finds the top-level attribute called name (the whole name, as json_object_get).
 * Returns 1 and sets *v, 0 when absent, AT_EINVAL when malformed. */
int at_packed_get(const void *p, size_t n, const char *name, at_packed_val *v /* OUT */);

/* Returns the text of the S attribute name of a packed item (NUL-terminated, borrowed
 * from the item; *len its length, may be NULL), or NULL when absent or not an S. */
const char *at_packed_s(const void *p, size_t n, const char *name, size_t *len /* OUT */);

/* Returns the text of an 'S', 'N' or 'B' value (NUL-terminated, borrowed) and its
 * length, or NULL for any other value. */
const char *at_packed_text(const at_packed_val *v, size_t *len /* OUT */);

/* Returns a new AV for the packed value v, or NULL when malformed or out of memory. */
json_t *at_packed_av(const at_packed_val *v);

/* Appends the plain JSON of the packed value v, exactly as at_av_write_json writes the
 * same value in AV form. Returns 0, AT_EINVAL (malformed, or a number JSON cannot hold;
 * b then holds part of the text) or at_buf's errors. */
int at_packed_write_json(at_buf *b, const at_packed_val *v);

/* Returns a new AV map with the primary key of the packed item (and the index's key
 * attributes when ix is not NULL), as at_schema_item_key makes it from the AV form;
 * NULL when one is missing or the bytes are malformed. */
json_t *at_packed_item_key(const at_table_def *t, const at_index_def *ix, const void *p, size_t n);

/* Appends to b the packed item holding only the attributes of the packed item p for
 * which keep(name, arg) returns 1, in their order. Returns 0, AT_EINVAL or at_buf's
 * errors. */
int at_packed_project(at_buf *b, const void *p, size_t n, int (*keep)(const char *name, void *arg),
                      void *arg);

#endif
