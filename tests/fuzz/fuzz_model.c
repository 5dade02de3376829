/* libFuzzer harness for the model loader (src/model/model.c and the architectures in arch/).
 *
 * The input is a GGUF file: oxl_gguf_open_memory, then oxl_model_from_gguf (hyper-parameters, tensor
 * binding and shape checks, vocabulary); when a model loads, a context of 4 tokens on one thread
 * decodes 2 tokens (the first and the last id of the vocabulary) and the logits are read. Every
 * rejection must come with a message. Allocations are bounded by libFuzzer's -malloc_limit_mb
 * (tests/fuzz/run.sh), so a loader that trusts a claimed size fails the run. */
#include "model.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>

/* A broken invariant: report it and stop (libFuzzer saves the input). */
#define CHECK(cond)                                                                                                    \
    do {                                                                                                               \
        if (!(cond)) {                                                                                                 \
            fprintf(stderr, "%s:%d: invariant failed: %s\n", __FILE__, __LINE__, #cond);                               \
            __builtin_trap();                                                                                          \
        }                                                                                                              \
    } while (0)

static volatile float g_sink;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    oxl_error err;
    err.msg[0] = '\0';
    oxl_gguf *g = oxl_gguf_open_memory(data, size, "fuzz.gguf", &err);
    if (!g) {
        CHECK(err.msg[0] != '\0');
        return 0;
    }
    oxl_model *m = oxl_model_from_gguf(g, &err); /* owns g from here on */
    if (!m) {
        CHECK(err.msg[0] != '\0');
        return 0;
    }
    int32_t n_vocab = oxl_model_n_vocab(m);
    CHECK(n_vocab > 0);
    oxl_ctx_params cp = oxl_ctx_default_params();
    cp.n_ctx = 4;
    cp.n_batch = 4;
    cp.n_threads = 1;
    oxl_ctx *ctx = oxl_ctx_new(m, &cp, &err);
    if (ctx) {
        oxl_token toks[2] = {0, n_vocab - 1};
        if (oxl_decode(ctx, toks, 2, true, &err) == 0) {
            for (int32_t j = 0; j < 2; j++) {
                const float *l = oxl_get_logits(ctx, j);
                CHECK(l != NULL);
                for (int32_t i = 0; i < n_vocab; i++)
                    g_sink += l[i];
            }
            CHECK(oxl_ctx_n_past(ctx) == 2);
        } else {
            CHECK(err.msg[0] != '\0');
        }
        oxl_ctx_free(ctx);
    } else {
        CHECK(err.msg[0] != '\0');
    }
    oxl_model_free(m);
    return 0;
}
