/* Conversion between plain JSON values and DynamoDB attribute values ("AV": the
 * {"S": "x"}, {"N": "1"}, {"M": {...}} form DynamoDB's JSON API and its S3 export use).
 * Items are kept in AV form everywhere below the API layer, so nothing is lost when
 * they move between the sqlite and dynamodb backends. */
#ifndef AT_AV_H
#define AT_AV_H

#include <jansson.h>
#include <stdint.h>

#include "actionstools/buf.h"

/* Maximum nesting DynamoDB accepts: 32 levels, an attribute value being level 1 (so at
 * most 31 maps or lists around a scalar); deeper input is refused. */
#define AT_AV_MAX_DEPTH 32

/* Returns a new AV for the JSON value v: object -> M, array -> L, string -> S,
 * integer/real -> N (shortest text that reads back to the same double), true/false ->
 * BOOL, null -> NULL. Returns NULL when v nests deeper than AT_AV_MAX_DEPTH or on
 * allocation failure. The caller owns the result. */
json_t *at_av_from_json(const json_t *v);

/* Same as at_av_from_json, and also refuses numbers outside DynamoDB's range (magnitude
 * 1e-130 to below 1e126, or 0). On refusal returns NULL with the reason in why ("" when
 * out of memory). */
json_t *at_av_from_json_why(const json_t *v, char *why, size_t whylen);

/* Returns a new plain JSON value for the AV av (the inverse of at_av_from_json; also
 * reads SS/NS -> array, B/BS -> base64 text). An N whose value is integral and fits
 * in 64 bits becomes a JSON integer, any other N a real. Returns NULL when av is not
 * a well-formed AV. The caller owns the result. */
json_t *at_av_to_json(const json_t *av);

/* Appends to b the JSON text of the plain value of av (what at_av_to_json makes,
 * written out without building it): numbers integral and within 64 bits as integers,
 * other numbers in the shortest text that reads back as the same double, strings
 * escaped as JSON requires (UTF-8 kept as is). Returns 0, AT_EINVAL for a malformed
 * AV (b then holds part of the text), or at_buf's AT_ENOMEM / AT_ETOOBIG. */
int at_av_write_json(at_buf *b, const json_t *av);

/* Writes into out the JSON text of the DynamoDB number text s, as at_av_write_json
 * writes it: integral values that fit 64 bits as integers, others in the shortest text
 * that reads back as the same double. Returns 0, or AT_EINVAL when s is not a number
 * or lies beyond a double's range. */
int at_av_number_json(const char *s, char out[64]);

/* Returns 1 and sets *out when the DynamoDB number text s is an integer that fits 64
 * bits ("2.0" and "1e3" too), else 0 (at_item_n_int's rule). */
int at_av_number_int64(const char *s, int64_t *out /* OUT */);

/* Appends the n bytes at s (UTF-8, may hold NUL) as a JSON string literal. Returns 0
 * or at_buf's errors. */
int at_json_write_string(at_buf *b, const char *s, size_t n);

/* Returns 0 when av is a well-formed AV (exactly one known type tag with a value of
 * the right JSON type, numbers in DynamoDB's number syntax, nesting within the limit),
 * else AT_EINVAL with a reason written into why (may be NULL). */
int at_av_check(const json_t *av, char *why, size_t whylen);

/* Returns 0 when item is an object whose every member is a well-formed AV, else
 * AT_EINVAL with a reason in why (may be NULL). */
int at_av_check_item(const json_t *item, char *why, size_t whylen);

/* Constructors: each returns a new AV, or NULL when out of memory. */
json_t *at_av_s(const char *s);
json_t *at_av_n_int(int64_t n);
json_t *at_av_n_text(const char *number); /* number text as given, not checked */
json_t *at_av_bool(int b);

/* Accessors on an item (an object of AVs). Each returns NULL / 0 when the attribute
 * is absent or of another type. Strings are borrowed from the item. */
const char *at_item_s(const json_t *item, const char *attr);
int at_item_n_int(const json_t *item, const char *attr, int64_t *out /* OUT */);
int at_item_has(const json_t *item, const char *attr);

/* Compares two AVs of the same scalar type (S by UTF-8 bytes, N numerically, as
 * DynamoDB orders sort keys). Returns <0, 0, >0; *ok is set to 0 when the two are not
 * comparable (different or non-scalar types), else 1. */
int at_av_compare(const json_t *a, const json_t *b, int *ok /* OUT */);

/* Returns 1 when the two AVs are equal (same type and value; N compared numerically). */
int at_av_equal(const json_t *a, const json_t *b);

#endif
