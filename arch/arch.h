/* The architecture families: one per `general.architecture` value, each a file in arch/ that describes
 * its graph with the shared blocks of blocks.h; registry.c lists them in the table that
 * src/model/arch_iface.h declares. */
#ifndef OXL_ARCH_H
#define OXL_ARCH_H

#include "arch_iface.h"

/* The dense decoder families (arch/<family>.c). */
extern const oxl_arch oxl_arch_llama, oxl_arch_qwen2, oxl_arch_qwen3, oxl_arch_gemma, oxl_arch_gemma2, oxl_arch_gemma3,
    oxl_arch_phi2, oxl_arch_phi3, oxl_arch_command_r, oxl_arch_cohere2, oxl_arch_starcoder, oxl_arch_starcoder2,
    oxl_arch_falcon, oxl_arch_olmo2, oxl_arch_granite, oxl_arch_minicpm, oxl_arch_stablelm, oxl_arch_gptneox,
    oxl_arch_bloom, oxl_arch_internlm2, oxl_arch_gpt2, oxl_arch_qwen2vl;
extern const oxl_arch oxl_arch_glm4, oxl_arch_seed_oss, oxl_arch_ernie4_5, oxl_arch_apertus;

/* The mixture-of-experts families (the decoder with moe.h's block as its FFN). */
extern const oxl_arch oxl_arch_qwen2moe, oxl_arch_qwen3moe, oxl_arch_phimoe, oxl_arch_dbrx, oxl_arch_grok,
    oxl_arch_deepseek2, oxl_arch_gptoss;

/* More mixture-of-experts families (and hunyuan's dense sibling). */
extern const oxl_arch oxl_arch_olmoe, oxl_arch_ernie4_5moe, oxl_arch_glm4moe, oxl_arch_hunyuan_dense,
    oxl_arch_hunyuan_moe, oxl_arch_minimax_m2;

/* The recurrent and hybrid families (the decoder with ssm.h's mixer on recurrent layers). */
extern const oxl_arch oxl_arch_mamba, oxl_arch_mamba2, oxl_arch_jamba;

/* The gated delta-net hybrids (arch/qwen35.c with deltanet.h's linear attention). */
extern const oxl_arch oxl_arch_qwen35, oxl_arch_qwen35moe, oxl_arch_qwen3next;
/* Architectures III: NoPE layers, attention temperature, chunked attention (decoder.h). */
extern const oxl_arch oxl_arch_smollm3, oxl_arch_exaone4, oxl_arch_mistral3, oxl_arch_llama4;
/* The hybrids that pick attention, Mamba-2, a short convolution or an MLP per layer (arch/hybrid.c). */
extern const oxl_arch oxl_arch_lfm2, oxl_arch_granite_h, oxl_arch_nemotron_h, oxl_arch_falcon_h1;

/* The encoder-only embedding models (arch/bert.c: no output head, non-causal attention). */
extern const oxl_arch oxl_arch_bert, oxl_arch_nomic_bert;

/* Gemma 3n (arch/gemma3n.c: AltUp streams, LAuReL, per-layer embeddings, shared KV; altup.h). */
extern const oxl_arch oxl_arch_gemma3n;

#endif
