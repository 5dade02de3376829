/* The architecture table: add a family by adding its file and one line here. */
#include "arch.h"

#include <string.h>

static const oxl_arch *const registry[] = {
    &oxl_arch_llama,    &oxl_arch_qwen2,     &oxl_arch_qwen3,     &oxl_arch_gemma,    &oxl_arch_gemma2,
    &oxl_arch_gemma3,   &oxl_arch_phi2,      &oxl_arch_phi3,      &oxl_arch_command_r, &oxl_arch_cohere2,
    &oxl_arch_starcoder, &oxl_arch_starcoder2, &oxl_arch_falcon,   &oxl_arch_olmo2,    &oxl_arch_granite,
    &oxl_arch_minicpm,  &oxl_arch_stablelm,  &oxl_arch_gptneox,   &oxl_arch_bloom,    &oxl_arch_internlm2,
    &oxl_arch_gpt2,     &oxl_arch_qwen2moe,  &oxl_arch_qwen3moe,  &oxl_arch_phimoe,   &oxl_arch_dbrx,
    &oxl_arch_grok,     &oxl_arch_mamba,     &oxl_arch_mamba2,    &oxl_arch_jamba,    &oxl_arch_qwen2vl,
    &oxl_arch_deepseek2, &oxl_arch_gptoss,
};

#define N_ARCH (sizeof registry / sizeof registry[0])

const oxl_arch *oxl_arch_find(const char *name) {
    for (size_t i = 0; i < N_ARCH; i++) {
        if (strcmp(registry[i]->name, name) == 0) {
            return registry[i];
        }
    }
    return NULL;
}

bool oxl_model_describe(const oxl_model *m, FILE *out) {
    if (!m->arch->describe) {
        return false;
    }
    m->arch->describe(m, out);
    return true;
}

const char *oxl_arch_names(void) {
    static char names[512];
    if (!names[0]) {
        for (size_t i = 0; i < N_ARCH; i++) {
            strncat(names, i ? ", " : "", sizeof names - strlen(names) - 1);
            strncat(names, registry[i]->name, sizeof names - strlen(names) - 1);
        }
    }
    return names;
}
