/* The architecture table that src/model/arch_iface.h declares: add a family by adding its file and
 * one line here. */
#include "arch.h"

const oxl_arch *const oxl_arch_registry[] = {
    &oxl_arch_llama,     &oxl_arch_qwen2,      &oxl_arch_qwen3,    &oxl_arch_gemma,      &oxl_arch_gemma2,
    &oxl_arch_gemma3,    &oxl_arch_phi2,       &oxl_arch_phi3,     &oxl_arch_command_r,  &oxl_arch_cohere2,
    &oxl_arch_starcoder, &oxl_arch_starcoder2, &oxl_arch_falcon,   &oxl_arch_olmo2,      &oxl_arch_granite,
    &oxl_arch_minicpm,   &oxl_arch_stablelm,   &oxl_arch_gptneox,  &oxl_arch_bloom,      &oxl_arch_internlm2,
    &oxl_arch_gpt2,      &oxl_arch_qwen2moe,   &oxl_arch_qwen3moe, &oxl_arch_phimoe,     &oxl_arch_dbrx,
    &oxl_arch_grok,      &oxl_arch_mamba,      &oxl_arch_mamba2,   &oxl_arch_jamba,      &oxl_arch_qwen2vl,
    &oxl_arch_deepseek2, &oxl_arch_gptoss,     &oxl_arch_bert,     &oxl_arch_nomic_bert, &oxl_arch_gemma3n,
};

const size_t oxl_arch_registry_len = sizeof oxl_arch_registry / sizeof oxl_arch_registry[0];
