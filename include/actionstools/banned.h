/* Functions that are too easy to misuse. Included last by every .c file of the
 * project (through at_common.h), it turns their use into a compile error.
 * Use snprintf / at_buf / strtok_r / gmtime_r instead. (git's banned.h) */
#ifndef AT_BANNED_H
#define AT_BANNED_H

#define AT_BANNED(func) sorry_##func##_is_banned_in_actionstools

#undef strcpy
#define strcpy(x, y) AT_BANNED(strcpy)
#undef strcat
#define strcat(x, y) AT_BANNED(strcat)
#undef strncpy
#define strncpy(x, y, n) AT_BANNED(strncpy)
#undef strncat
#define strncat(x, y, n) AT_BANNED(strncat)
#undef sprintf
#define sprintf(...) AT_BANNED(sprintf)
#undef vsprintf
#define vsprintf(...) AT_BANNED(vsprintf)
#undef strtok
#define strtok(x, y) AT_BANNED(strtok)
#undef gmtime
#define gmtime(t) AT_BANNED(gmtime)
#undef localtime
#define localtime(t) AT_BANNED(localtime)
#undef asctime
#define asctime(t) AT_BANNED(asctime)
#undef ctime
#define ctime(t) AT_BANNED(ctime)

#endif
