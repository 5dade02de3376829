/* The architecture table: add a family by adding its file and one line here. */
#include "arch.h"

#include <pthread.h>
#include <string.h>

static const oxl_arch *const registry[] = {
    &oxl_arch_llama,    &oxl_arch_qwen2,     &oxl_arch_qwen3,     &oxl_arch_gemma,    &oxl_arch_gemma2,
    &oxl_arch_gemma3,   &oxl_arch_phi2,      &oxl_arch_phi3,      &oxl_arch_command_r, &oxl_arch_cohere2,
    &oxl_arch_starcoder, &oxl_arch_starcoder2, &oxl_arch_falcon,   &oxl_arch_olmo2,    &oxl_arch_granite,
    &oxl_arch_minicpm,  &oxl_arch_stablelm,  &oxl_arch_gptneox,   &oxl_arch_bloom,    &oxl_arch_internlm2,
    &oxl_arch_gpt2,     &oxl_arch_qwen2moe,  &oxl_arch_qwen3moe,  &oxl_arch_phimoe,   &oxl_arch_dbrx,
    &oxl_arch_grok,     &oxl_arch_mamba,     &oxl_arch_mamba2,    &oxl_arch_jamba,    &oxl_arch_qwen2vl,
    &oxl_arch_deepseek2, &oxl_arch_gptoss,
    &oxl_arch_bert,     &oxl_arch_nomic_bert,
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

static char arch_names[512];

static void build_arch_names(void) {
    for (size_t i = 0; i < N_ARCH; i++) {
        strncat(arch_names, i ? ", " : "", sizeof arch_names - strlen(arch_names) - 1);
        strncat(arch_names, registry[i]->name, sizeof arch_names - strlen(arch_names) - 1);
    }
}

const char *oxl_arch_names(void) {
    /* built once, so loads on several threads never write it together */
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, build_arch_names);
    return arch_names;
}
