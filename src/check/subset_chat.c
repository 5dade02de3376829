/* The cross-build subset (OXL_SUBSET, src/text/subset.c): chat goldens need the Jinja engine and
 * cJSON, which this build leaves out; this stands in for their runner. */
#ifdef OXL_SUBSET

#include "errors.h"
#include "golden_chat.h"

int oxl_golden_chat_dir(const char *dir, oxl_golden_report *r, oxl_error *err) {
    return oxl_err_set(err,
                       "%s: chat goldens need cJSON and the Jinja engine, which this build (OXL_SUBSET) "
                       "leaves out",
                       dir);
}

#else
typedef int oxl_subset_chat_unused; /* the full build has the real function */
#endif
