/* Error codes shared by every module. Functions that can fail return 0 (AT_OK)
 * or one of these negative values. */
#ifndef AT_ERR_H
#define AT_ERR_H

enum {
    AT_OK = 0,
    AT_ENOMEM = -1,    /* allocation failed */
    AT_EINVAL = -2,    /* bad argument or malformed input */
    AT_ENOTFOUND = -3, /* no such item / table entry */
    AT_ECOND = -4,     /* a conditional write's condition was false */
    AT_ETOOBIG = -5,   /* over a size cap */
    AT_EUNAVAIL = -6,  /* store or peer unreachable, or gave up after retries */
    AT_ENOTABLE = -7,  /* a table is missing: run `actionstools setup` */
    AT_EIO = -8,       /* I/O or backend error that is not the caller's fault */
    AT_ETHROTTLED = -9 /* the backend throttled us and retries ran out */
};

/* Returns a short static English description of an AT_* code. */
const char *at_strerror(int rc);

#endif
