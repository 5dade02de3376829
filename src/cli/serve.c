/* oxillama serve: the OpenAI-compatible HTTP server (server/). The options serve shares with run
 * (loading, cache, chat template, adapters, speculative decoding, logging, the ignored GPU options)
 * are parsed here by the same table as run's (args.c); the rest go to the server's own table
 * (server/config.c). */
#include "args.h"
#include "cli.h"
#include "server.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* --control-vector on the server's context */
static int setup_adapters(void *user, const oxl_model *model, oxl_ctx *ctx) {
    return oxl_opts_apply_adapters(user, model, ctx);
}

int oxl_cmd_serve(int argc, char **argv) {
    oxl_opts o;
    if (oxl_opts_parse(&o, OXL_VERB_SERVE | OXL_OPTS_PASS_UNKNOWN, argc, argv) != 0) {
        return 1;
    }
    char *rest[OXL_MAX_POSITIONAL + 1];
    rest[0] = argv[0];
    for (int i = 0; i < o.n_positional; i++) {
        rest[i + 1] = o.positional[i];
    }
    if (o.help) {
        oxl_server_config_usage();
        printf("\nloading, cache and log options (as for oxillama run):\n");
        oxl_opts_usage_table(OXL_VERB_SERVE);
        return 0;
    }
    oxl_server_config cfg;
    int rc = oxl_server_config_resolve(&cfg, o.n_positional + 1, rest);
    if (rc != 0) {
        oxl_server_config_free(&cfg);
        return rc < 0 ? 1 : 0;
    }
    cfg.type_k = o.type_k;
    cfg.type_v = o.type_v;
    cfg.flash_attn = o.flash_attn;
    cfg.no_mmap = o.no_mmap;
    cfg.mlock = o.mlock;
    cfg.no_repack = o.no_repack;
    cfg.n_gpu_layers = o.device_none ? 0 : o.n_gpu_layers;
    cfg.main_gpu = o.main_gpu;
    cfg.log_level = o.log_level;
    cfg.log_json = o.log_format && !strcmp(o.log_format, "json");
    cfg.ctx_shift = o.ctx_shift;
    cfg.n_keep = o.n_keep;
    cfg.reasoning_none = oxl_chat_reasoning_format(o.reasoning_format) == 0;
    cfg.reasoning_budget = o.reasoning_budget;
    cfg.reasoning_budget_message = o.reasoning_budget_message;
    /* the server loads the LoRA adapters itself (GET / POST /lora-adapters, the "lora" field);
     * control vectors go on its context here */
    if (o.n_lora > OXL_SRV_MAX_LORA) {
        fprintf(stderr, "error: serve takes at most %d LoRA adapters\n", OXL_SRV_MAX_LORA);
        oxl_server_config_free(&cfg);
        return 1;
    }
    for (int i = 0; i < o.n_lora; i++) {
        cfg.lora_path[i] = o.lora[i];
        cfg.lora_scale[i] = o.lora_scale[i];
    }
    cfg.n_lora = o.n_lora;
    cfg.lora_init_without_apply = o.lora_init_without_apply;
    if (o.lora_init_without_apply && o.n_lora == 0) {
        fprintf(stderr, "error: --lora-init-without-apply needs --lora or --lora-scaled adapters\n");
        oxl_server_config_free(&cfg);
        return 1;
    }
    o.n_lora = 0;
    if (o.n_cvec > 0) {
        cfg.setup_ctx = setup_adapters;
        cfg.setup_user = &o;
    }
    /* speculative decoding: run's options and checks */
    bool spec_ngram = false, spec_draft = false;
    if ((o.model_draft || o.spec_type) && oxl_spec_check(&o, &spec_ngram, &spec_draft) != 0) {
        oxl_server_config_free(&cfg);
        return 1;
    }
    cfg.model_draft = spec_draft ? o.model_draft : NULL;
    cfg.spec_ngram = spec_ngram;
    cfg.ngram_size_n = o.ngram_size_n;
    cfg.ngram_size_m = o.ngram_size_m;
    cfg.draft_max = o.draft_max;
    cfg.draft_min = o.draft_min;
    cfg.draft_p_min = o.draft_p_min;
    if (o.chat_template_file) {
        size_t len = 0;
        cfg.chat_template = oxl_read_text_file(o.chat_template_file, &len);
        if (!cfg.chat_template) {
            oxl_server_config_free(&cfg);
            return 1;
        }
    } else if (o.chat_template && !(cfg.chat_template = strdup(o.chat_template))) {
        oxl_server_config_free(&cfg);
        return 1;
    }
    o.n_threads = cfg.n_threads; /* the server's own options, for the -v line */
    o.n_batch = cfg.n_batch;
    oxl_log(&o, OXL_LOG_VERBOSE, "oxillama serve: model %s\n", cfg.model ? cfg.model : cfg.models_dir);
    oxl_log_settings(&o);
    rc = oxl_server_run(&cfg);
    oxl_server_config_free(&cfg);
    oxl_opts_free_adapters(&o);
    return rc;
}
