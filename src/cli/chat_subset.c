/* run -cnv in the cross-build subset (OXL_SUBSET), which has no Jinja engine (cJSON): a clear
 * error instead of the chat loop of chat.c. */
#ifdef OXL_SUBSET

#include "args.h"
#include "cli.h"

#include <stdio.h>

int oxl_chat_loop(const oxl_model *m, oxl_ctx *ctx, oxl_sampler *smpl, const oxl_opts *o, const oxl_mmproj *mm,
                  oxl_image *const *images) {
    (void)m, (void)ctx, (void)smpl, (void)o, (void)mm, (void)images;
    fprintf(stderr, "error: -cnv needs chat templates, which this build leaves out (OXL_SUBSET: no cJSON)\n");
    return 1;
}

#endif
