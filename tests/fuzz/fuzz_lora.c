/* libFuzzer harness for the LoRA adapter and control-vector readers (src/model/adapter.c).
 *
 * Set-up (once): golden/arch/llama.gguf loaded (n_embd 64, 2 layers) and a context of 8 tokens on one
 * thread. The input's first byte picks the reader, the rest is a GGUF file opened from memory: even,
 * a LoRA adapter for that model (oxl_lora_from_gguf); odd, a control vector (oxl_cvec_add_gguf with
 * strength 0.5). When accepted, the adapter or vector is set on the context, 2 tokens are decoded
 * and the logits read, then it is cleared. Every rejection must come with a message. Seeds:
 * tests/fuzz/corpus/lora/ (the golden/lora/ files behind a 0 or 1 byte). */
#include "adapter.h"
#include "gguf.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CHECK(cond)                                                                                                    \
    do {                                                                                                               \
        if (!(cond)) {                                                                                                 \
            fprintf(stderr, "%s:%d: invariant failed: %s\n", __FILE__, __LINE__, #cond);                               \
            __builtin_trap();                                                                                          \
        }                                                                                                              \
    } while (0)

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static oxl_model *g_model;
static oxl_ctx *g_ctx;
static volatile float g_sink;

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void)argc;
    (void)argv;
    oxl_error err = {0};
    oxl_model_params mp = oxl_model_default_params();
    g_model = oxl_model_load(OXL_SOURCE_DIR "/golden/arch/llama.gguf", &mp, &err);
    oxl_ctx_params cp = oxl_ctx_default_params();
    cp.n_ctx = 8;
    cp.n_batch = 8;
    cp.n_threads = 1;
    g_ctx = g_model ? oxl_ctx_new(g_model, &cp, &err) : NULL;
    if (!g_ctx) {
        fprintf(stderr, "fuzz_lora: %s\n", err.msg);
        abort();
    }
    return 0;
}

static void decode_two(void) {
    oxl_error err = {0};
    const oxl_token toks[2] = {1, 100};
    oxl_ctx_truncate(g_ctx, 0);
    CHECK(oxl_decode(g_ctx, toks, 2, false, &err) == 0);
    g_sink = oxl_get_logits(g_ctx, -1)[0];
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 1) {
        return 0;
    }
    oxl_error err = {0};
    /* the file after the selector byte, in an aligned buffer as a mapped file's data is */
    uint8_t *file = malloc(size - 1 ? size - 1 : 1);
    if (!file) {
        return 0;
    }
    memcpy(file, data + 1, size - 1);
    oxl_gguf *g = oxl_gguf_open_memory(file, size - 1, "fuzz.gguf", &err);
    if (!g) {
        CHECK(err.msg[0] != '\0');
        free(file);
        return 0;
    }
    if (data[0] % 2 == 0) {
        oxl_lora *l = oxl_lora_from_gguf(g_model, g, &err);
        if (!l) {
            CHECK(err.msg[0] != '\0');
            free(file);
            return 0;
        }
        const float scale = 0.5f;
        CHECK(oxl_ctx_set_loras(g_ctx, &l, &scale, 1, &err) == 0);
        decode_two();
        CHECK(oxl_ctx_set_loras(g_ctx, NULL, NULL, 0, &err) == 0);
        oxl_lora_free(l);
        free(file);
        return 0;
    }
    float *vec = NULL;
    size_t len = 0;
    int32_t n_embd = -1;
    const int rc = oxl_cvec_add_gguf(g, 0.5f, &vec, &len, &n_embd, &err);
    oxl_gguf_close(g);
    free(file);
    if (rc != 0) {
        CHECK(err.msg[0] != '\0');
        free(vec);
        return 0;
    }
    CHECK(n_embd > 0 && len % (size_t)n_embd == 0);
    if (oxl_ctx_set_control_vector(g_ctx, vec, len, n_embd, 1, 2, &err) == 0) {
        decode_two();
        CHECK(oxl_ctx_set_control_vector(g_ctx, NULL, 0, 0, 0, 0, &err) == 0);
    } else {
        CHECK(err.msg[0] != '\0');
    }
    free(vec);
    return 0;
}
