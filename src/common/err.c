/* Texts of the AT_* error codes. */
#include "actionstools/err.h"
#include "actionstools/banned.h"

const char *at_strerror(int rc)
{
    switch (rc) {
    case AT_OK: return "success";
    case AT_ENOMEM: return "out of memory";
    case AT_EINVAL: return "invalid argument";
    case AT_ENOTFOUND: return "not found";
    case AT_ECOND: return "condition failed";
    case AT_ETOOBIG: return "too big";
    case AT_EUNAVAIL: return "storage unavailable";
    case AT_ENOTABLE: return "table missing: run `actionstools setup`";
    case AT_EIO: return "storage error";
    case AT_ETHROTTLED: return "storage throttled";
    default: return "unknown error";
    }
}
