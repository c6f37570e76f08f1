/* CORS origin matching. */
#include <string.h>
#include <strings.h>

#include "cors.h"
#include "actionstools/banned.h"

const char *at_cors_allow_origin(const at_config *cfg, const char *origin)
{
    if (cfg->cors_any) return "*";
    if (!origin) return NULL;
    for (size_t i = 0; i < cfg->ncors_origins; i++)
        if (strcasecmp(cfg->cors_origins[i], origin) == 0) return origin;
    return NULL;
}
