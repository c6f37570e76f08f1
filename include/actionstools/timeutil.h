/* Time in the two forms the original items use: the text of a naive UTC datetime
 * ("YYYY-MM-DD HH:MM:SS.ffffff", Python's str(datetime.utcnow())) and integer epoch
 * seconds (tasks). */
#ifndef AT_TIMEUTIL_H
#define AT_TIMEUTIL_H

#include <stdint.h>

#define AT_TIMESTAMP_LEN 26 /* "2024-01-31 23:59:59.123456" */

/* Returns the current UTC time in microseconds since the epoch. */
int64_t at_now_us(void);

/* Returns a monotonic clock reading in microseconds, for durations. */
int64_t at_monotonic_us(void);

/* Writes the datetime text of us (microseconds since the epoch) into out, which must
 * hold AT_TIMESTAMP_LEN + 1 bytes. Always with the 6 fractional digits. */
void at_timestamp_format(int64_t us, char out[AT_TIMESTAMP_LEN + 1]);

/* Parses "YYYY-MM-DD HH:MM:SS" with an optional ".f" to ".ffffff" fraction (also
 * accepts 'T' as the separator). Returns 0 and sets *us, or AT_EINVAL. */
int at_timestamp_parse(const char *s, int64_t *us /* OUT */);

/* Writes an RFC 3339 UTC time with milliseconds ("2024-01-31T23:59:59.123Z") into
 * out (at least 25 bytes), for logs. */
void at_time_rfc3339(int64_t us, char out[32]);

#endif
