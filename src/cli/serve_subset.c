/* oxillama serve in the cross-build subset (OXL_SUBSET, src/text/subset.c): the HTTP server needs
 * libmicrohttpd and cJSON, which that build leaves out. */
#ifdef OXL_SUBSET
#include "cli.h"

#include <stdio.h>

int oxl_cmd_serve(int argc, char **argv) {
    fprintf(stderr, "oxillama serve: this build (OXL_SUBSET) has no HTTP server (it needs libmicrohttpd and cJSON)\n");
    return 1;
}
#else
typedef int oxl_serve_subset_unused; /* the full build has src/cli/serve.c */
#endif
