/* The adapter API (include/oxillama.h): after oxl_ctx_set_loras / oxl_ctx_set_control_vector, a
 * decode gives logits that differ from the base model's (the values are checked against llama.cpp by
 * golden/lora/ in ctest golden-lora-*); clearing them gives the base model's logits bit for bit; an
 * adapter loaded for another model and a control vector of another width are refused with a
 * message. */
#include "oxillama.h"

#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#define G OXL_SOURCE_DIR "/golden/"
#define N_TOK 6

static void logits(oxl_ctx *ctx, float *out) {
    static const oxl_token toks[N_TOK] = {1, 20, 30, 40, 50, 60};
    oxl_error err = {0};
    oxl_ctx_truncate(ctx, 0);
    cr_assert_eq(oxl_decode(ctx, toks, N_TOK, false, &err), 0, "%s", err.msg);
    memcpy(out, oxl_get_logits(ctx, -1), 512 * sizeof(float));
}

Test(lora_api, set_and_clear) {
    oxl_error err = {0};
    oxl_model_params mp = oxl_model_default_params();
    oxl_model *m = oxl_model_load(G "arch/llama.gguf", &mp, &err);
    oxl_model *q = oxl_model_load(G "arch/qwen3.gguf", &mp, &err);
    cr_assert(m && q, "%s", err.msg);
    cr_assert_eq(oxl_model_n_layer(m), 2);
    oxl_ctx_params cp = oxl_ctx_default_params();
    cp.n_ctx = 16;
    cp.n_threads = 1;
    oxl_ctx *ctx = oxl_ctx_new(m, &cp, &err);
    cr_assert(ctx, "%s", err.msg);
    float base[512], with[512], again[512];
    logits(ctx, base);

    oxl_lora *a = oxl_lora_load(m, G "lora/llama.lora-a.gguf", &err);
    cr_assert(a, "%s", err.msg);
    cr_assert_eq(oxl_lora_n_pairs(a), 15);
    cr_assert_eq(oxl_lora_alpha(a), 16.0f);
    const float one = 1.0f;
    cr_assert_eq(oxl_ctx_set_loras(ctx, &a, &one, 1, &err), 0, "%s", err.msg);
    logits(ctx, with);
    cr_assert_neq(memcmp(base, with, sizeof base), 0, "the adapter changed nothing");
    cr_assert_eq(oxl_ctx_set_loras(ctx, NULL, NULL, 0, &err), 0, "%s", err.msg);
    logits(ctx, again);
    cr_assert_eq(memcmp(base, again, sizeof base), 0, "clearing the adapters did not restore the base logits");

    /* an adapter of another model */
    oxl_lora *qa = oxl_lora_load(q, G "lora/qwen3.lora.gguf", &err);
    cr_assert(qa, "%s", err.msg);
    err.msg[0] = '\0';
    cr_assert_eq(oxl_ctx_set_loras(ctx, &qa, &one, 1, &err), -1);
    cr_assert(strstr(err.msg, "not loaded for this context's model"), "%s", err.msg);
    cr_assert_null(oxl_lora_load(m, G "lora/qwen3.lora.gguf", &err));
    cr_assert(strstr(err.msg, "general.architecture 'qwen3' is not the model's 'llama'"), "%s", err.msg);

    /* control vector: set, then cleared */
    const char *paths[1] = {G "lora/llama.cvec.gguf"};
    const float strength[1] = {0.8f};
    float *data = NULL;
    size_t len = 0;
    int32_t n_embd = 0;
    cr_assert_eq(oxl_control_vector_load(paths, strength, 1, &data, &len, &n_embd, &err), 0, "%s", err.msg);
    cr_assert_eq(n_embd, 64);
    cr_assert_eq(len, 64);
    cr_assert_eq(oxl_ctx_set_control_vector(ctx, data, len, 32, 1, 2, &err), -1);
    cr_assert(strstr(err.msg, "n_embd 32 does not match the model's 64"), "%s", err.msg);
    cr_assert_eq(oxl_ctx_set_control_vector(ctx, data, len, n_embd, 1, 2, &err), 0, "%s", err.msg);
    logits(ctx, with);
    cr_assert_neq(memcmp(base, with, sizeof base), 0, "the control vector changed nothing");
    cr_assert_eq(oxl_ctx_set_control_vector(ctx, NULL, 0, 0, 0, 0, &err), 0, "%s", err.msg);
    logits(ctx, again);
    cr_assert_eq(memcmp(base, again, sizeof base), 0, "clearing the control vector did not restore the base logits");
    oxl_control_vector_free(data);

    oxl_ctx_free(ctx);
    oxl_lora_free(a);
    oxl_lora_free(qa);
    oxl_model_free(q);
    oxl_model_free(m);
}
