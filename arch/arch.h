/* The architecture registry: one entry per `general.architecture` value, each a file in arch/ that
 * describes its graph with the shared blocks of blocks.h. */
#ifndef OXL_ARCH_H
#define OXL_ARCH_H

#include "context.h"
#include "model.h"

#include <stdio.h>

typedef struct oxl_arch {
    const char *name; /* general.architecture */
    /* Reads hyper-parameters (m->hp) and binds and shape-checks every tensor (m->weights).
     * Returns 0, or -1 with err naming the missing key, tensor or shape. */
    int (*load)(oxl_model *m, oxl_error *err);
    void (*free_weights)(void *weights);
    /* Bytes of activations one forward pass of up to n_batch tokens needs with n_threads threads. */
    size_t (*work_size)(const oxl_model *m, int32_t n_batch, int32_t n_ctx, int n_threads);
    /* Runs one pass of ub->n tokens (each at its sequence and position), appends them to the KV
     * cache, and writes the logits (n_vocab floats each) of the tokens ub->out_ids to logits. */
    void (*forward)(oxl_ctx *ctx, const oxl_ubatch *ub, float *logits);
    /* Optional: prints the hyper-parameters the graph actually uses (oxillama info), one per line. */
    void (*describe)(const oxl_model *m, FILE *out);
    /* Optional: repacks the weights the forward pass multiplies into the CPU's interleaved layout
     * (oxl_tensor_repack), handing each buffer to oxl_model_own; evict as oxl_tensor_repack's. */
    void (*repack)(oxl_model *m, bool evict);
    /* An encoder without an output head (llama_model_has_decoder false): it makes embeddings, not
     * logits, and a decode's tokens must fit one pass (llama_encode's n_ubatch >= n_tokens). */
    bool encoder_only;
} oxl_arch;

/* NULL when the architecture is not in the registry. */
const oxl_arch *oxl_arch_find(const char *name);
/* Comma-separated list of supported architecture names, for error messages. */
const char *oxl_arch_names(void);

/* The dense decoder families (arch/<family>.c). */
extern const oxl_arch oxl_arch_llama, oxl_arch_qwen2, oxl_arch_qwen3, oxl_arch_gemma, oxl_arch_gemma2, oxl_arch_gemma3,
    oxl_arch_phi2, oxl_arch_phi3, oxl_arch_command_r, oxl_arch_cohere2, oxl_arch_starcoder, oxl_arch_starcoder2,
    oxl_arch_falcon, oxl_arch_olmo2, oxl_arch_granite, oxl_arch_minicpm, oxl_arch_stablelm, oxl_arch_gptneox,
    oxl_arch_bloom, oxl_arch_internlm2, oxl_arch_gpt2, oxl_arch_qwen2vl;

/* The mixture-of-experts families (the decoder with moe.h's block as its FFN). */
extern const oxl_arch oxl_arch_qwen2moe, oxl_arch_qwen3moe, oxl_arch_phimoe, oxl_arch_dbrx, oxl_arch_grok,
    oxl_arch_deepseek2, oxl_arch_gptoss;

/* The recurrent and hybrid families (the decoder with ssm.h's mixer on recurrent layers). */
extern const oxl_arch oxl_arch_mamba, oxl_arch_mamba2, oxl_arch_jamba;

/* The encoder-only embedding models (arch/bert.c: no output head, non-causal attention). */
extern const oxl_arch oxl_arch_bert, oxl_arch_nomic_bert;

#endif
