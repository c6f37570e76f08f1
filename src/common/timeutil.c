/* Timestamps in the original items' formats. */
#include <ctype.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "actionstools/timeutil.h"
#include "actionstools/err.h"
#include "actionstools/banned.h"

int64_t at_now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

int64_t at_monotonic_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

static void split(int64_t us, time_t *sec, int *frac)
{
    int64_t s = us / 1000000, f = us % 1000000;
    if (f < 0) {
        f += 1000000;
        s -= 1;
    }
    *sec = (time_t)s;
    *frac = (int)f;
}

void at_timestamp_format(int64_t us, char out[AT_TIMESTAMP_LEN + 1])
{
    struct tm tm;
    time_t sec;
    int frac;
    split(us, &sec, &frac);
    gmtime_r(&sec, &tm);
    strftime(out, AT_TIMESTAMP_LEN + 1, "%Y-%m-%d %H:%M:%S", &tm);
    snprintf(out + 19, AT_TIMESTAMP_LEN + 1 - 19, ".%06u", (unsigned)frac % 1000000u);
}

void at_time_rfc3339(int64_t us, char out[32])
{
    /* Log lines ask for the time many times a second: the date and time of the last
     * second a thread formatted are kept. */
    static __thread time_t last_sec = -1;
    static __thread char last[20];
    struct tm tm;
    time_t sec;
    int frac;
    unsigned ms;
    split(us, &sec, &frac);
    if (sec != last_sec) {
        gmtime_r(&sec, &tm);
        strftime(last, sizeof last, "%Y-%m-%dT%H:%M:%S", &tm);
        last_sec = sec;
    }
    memcpy(out, last, 19);
    ms = ((unsigned)frac / 1000u) % 1000u;
    out[19] = '.';
    out[20] = (char)('0' + ms / 100);
    out[21] = (char)('0' + ms / 10 % 10);
    out[22] = (char)('0' + ms % 10);
    out[23] = 'Z';
    out[24] = '\0';
}

/* Reads exactly n digits. Returns the value or -1. */
static int digits(const char **p, int n)
{
    int v = 0;
    for (int i = 0; i < n; i++) {
        if (!isdigit((unsigned char)(*p)[i])) return -1;
        v = v * 10 + ((*p)[i] - '0');
    }
    *p += n;
    return v;
}

static int expect(const char **p, char c)
{
    if (**p != c) return 0;
    (*p)++;
    return 1;
}

int at_timestamp_parse(const char *s, int64_t *us)
{
    const char *p = s;
    struct tm tm;
    int frac = 0, scale = 100000;
    int y, mo, d, h, mi, se;
    time_t sec;
    static const int mdays[] = {31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};

    if (!s) return AT_EINVAL;
    y = digits(&p, 4);
    if (y < 0 || !expect(&p, '-')) return AT_EINVAL;
    mo = digits(&p, 2);
    if (mo < 1 || mo > 12 || !expect(&p, '-')) return AT_EINVAL;
    d = digits(&p, 2);
    if (d < 1 || d > mdays[mo - 1]) return AT_EINVAL;
    if (!expect(&p, ' ') && !expect(&p, 'T')) return AT_EINVAL;
    h = digits(&p, 2);
    if (h < 0 || h > 23 || !expect(&p, ':')) return AT_EINVAL;
    mi = digits(&p, 2);
    if (mi < 0 || mi > 59 || !expect(&p, ':')) return AT_EINVAL;
    se = digits(&p, 2);
    if (se < 0 || se > 59) return AT_EINVAL;
    if (*p == '.') {
        int n = 0;
        p++;
        while (isdigit((unsigned char)*p) && n < 6) {
            frac += (*p - '0') * scale;
            scale /= 10;
            p++;
            n++;
        }
        if (n == 0) return AT_EINVAL;
    }
    if (*p != '\0') return AT_EINVAL;
    memset(&tm, 0, sizeof tm);
    tm.tm_year = y - 1900;
    tm.tm_mon = mo - 1;
    tm.tm_mday = d;
    tm.tm_hour = h;
    tm.tm_min = mi;
    tm.tm_sec = se;
    sec = timegm(&tm);
    if (tm.tm_mday != d) return AT_EINVAL; /* 29 February of a common year */
    *us = (int64_t)sec * 1000000 + frac;
    return 0;
}
