/* oxillama perplexity: llama.cpp's llama-perplexity (perplexity, and KL divergence against a base
 * file written by either program). */
#include "args.h"
#include "cli.h"
#include "perplexity.h"

#include <stdio.h>
#include <stdlib.h>

struct adapter_setup {
    oxl_opts *o;
    const oxl_model *model;
};

/* --lora, --control-vector on the perplexity context */
static int setup_adapters(void *user, oxl_ctx *ctx) {
    struct adapter_setup *a = user;
    return oxl_opts_apply_adapters(a->o, a->model, ctx);
}

int oxl_cmd_perplexity(int argc, char **argv) {
    oxl_opts o;
    if (oxl_opts_parse(&o, OXL_VERB_PERPLEXITY, argc, argv) != 0) {
        return 1;
    }
    if (o.help) {
        oxl_opts_usage("perplexity", OXL_VERB_PERPLEXITY,
                       "-m FILE -f TEXT [-c N] [--kl-divergence-base F [--kl-divergence]]");
        return 0;
    }
    if (o.kld && !o.kld_base) {
        fprintf(stderr, "error: --kl-divergence needs --kl-divergence-base FILE\n");
        return 1;
    }
    if (!o.kld && !o.file) {
        fprintf(stderr, "error: perplexity needs a text file (-f)\n");
        return 1;
    }
    size_t len = 0;
    char *text = NULL;
    if (!o.kld && !(text = oxl_read_text_file(o.file, &len))) {
        return 1;
    }
    oxl_error err = {0};
    oxl_model_params mp = oxl_model_default_params();
    mp.repack = !o.no_repack;
    mp.use_mmap = !o.no_mmap;
    oxl_opts_gpu_params(&o, &mp);
    mp.use_mlock = o.mlock;
    oxl_log(&o, OXL_LOG_VERBOSE, "oxillama: model %s\n", oxl_opts_model(&o));
    oxl_log_settings(&o);
    oxl_model *model = oxl_model_load(oxl_opts_model(&o), &mp, &err);
    if (!model) {
        fprintf(stderr, "error: %s\n", err.msg);
        free(text);
        return 1;
    }
    if (!oxl_model_has_decoder(model)) {
        fprintf(stderr, "error: %s: an embedding model (no output head) has no perplexity\n", oxl_opts_model(&o));
        oxl_model_free(model);
        free(text);
        return 1;
    }
    struct adapter_setup ctx_setup = {&o, model};
    oxl_ctx_params cp = oxl_ctx_default_params();
    cp.n_threads = o.n_threads;
    cp.type_k = o.type_k;
    cp.type_v = o.type_v;
    cp.flash_attn = o.flash_attn;
    cp.n_batch = o.n_batch;
    oxl_ppl_params pp = {
        .n_ctx = o.n_ctx > 0 ? o.n_ctx : 512,
        .base_path = o.kld_base,
        .compare = o.kld,
        .progress = stdout,
        .setup = o.n_lora + o.n_cvec > 0 ? setup_adapters : NULL,
        .setup_user = &ctx_setup,
    };
    oxl_ppl_stats st;
    int rc = oxl_perplexity(model, &cp, text, len, &pp, &st, &err);
    if (rc != 0) {
        fprintf(stderr, "error: %s\n", err.msg);
    } else if (o.kld) {
        printf("\n====== Perplexity statistics ======\n");
        printf("Mean PPL(Q)                   : %10.6f ± %10.6f\n", st.ppl, st.ppl_unc);
        printf("Mean PPL(base)                : %10.6f ± %10.6f\n", st.ppl_base, st.ppl_base_unc);
        printf("\n====== KL divergence statistics ======\n");
        printf("Mean    KLD: %10.6f ± %10.6f\n", st.kld, st.kld_unc);
        printf("Maximum KLD: %10.6f\n", st.kld_max);
        printf("\n====== Token probability statistics ======\n");
        printf("RMS Δp    : %6.3f ± %5.3f %%\n", 100.0 * st.rms_dp, 100.0 * st.rms_dp_unc);
        printf("Same top p: %6.3f ± %5.3f %%\n", 100.0 * st.same_top, 100.0 * st.same_top_unc);
    } else {
        printf("Final estimate: PPL = %.4f +/- %.5f\n", st.ppl, st.ppl_unc);
    }
    oxl_model_free(model);
    oxl_opts_free_adapters(&o);
    free(text);
    return rc == 0 ? 0 : 1;
}
