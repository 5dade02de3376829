/* The offload through the public API (oxl_model_params.n_gpu_layers): stories260K's logits with its
 * layers on the device equal the CPU's within 1e-3 of their range, for a prompt and for single
 * steps (the f16 cache: the CPU accumulates V in f16, the device in f32; 1e-3, the golden runner's
 * device bound), with every layer and with two; oxl_seq_truncate rewinds the device cache; a position shift
 * and a state save are named errors. A prompt of 12 tokens (at least OXL_GPU_TILED_MIN_COLS)
 * goes through the tiled mul_mat shaders, within the same bound. */
#include "gpu.h"
#include "gpu_test_util.h"
#include "oxillama.h"
#include "oxl_types.h"

#include <stdio.h>

#include <string.h>

static oxl_model *load(int32_t n_gpu_layers) {
    oxl_error err = {0};
    oxl_model_params mp = oxl_model_default_params();
    mp.n_gpu_layers = n_gpu_layers;
    oxl_model *m = oxl_model_load(OXL_SOURCE_DIR "/models/stories260K.gguf", &mp, &err);
    cr_assert_not_null(m, "%s", err.msg);
    return m;
}

static oxl_ctx *new_ctx(oxl_model *m) {
    oxl_error err = {0};
    oxl_ctx_params cp = oxl_ctx_default_params();
    cp.n_ctx = 64;
    cp.n_threads = 2;
    oxl_ctx *ctx = oxl_ctx_new(m, &cp, &err);
    cr_assert_not_null(ctx, "%s", err.msg);
    return ctx;
}

static const oxl_token prompt[] = {1, 403, 407, 261, 378};

/* max|a - b| / range(b) over one row of logits */
static double rel_diff(const float *a, const float *b, int32_t n) {
    float lo = b[0], hi = b[0];
    double d = 0;
    for (int32_t i = 0; i < n; i++) {
        lo = fminf(lo, b[i]);
        hi = fmaxf(hi, b[i]);
        d = fmax(d, fabs((double)a[i] - b[i]));
    }
    return d / fmax(hi - lo, 1e-30);
}

static void check_against_cpu(int32_t ngl, int32_t want_layers) {
    gpu_test_device();
    oxl_model *cpu = load(0), *dev = load(ngl);
    cr_assert_eq(oxl_model_n_gpu_layers(cpu), 0);
    cr_assert_eq(oxl_model_n_gpu_layers(dev), want_layers, "%d layers offloaded", oxl_model_n_gpu_layers(dev));
    oxl_ctx *a = new_ctx(cpu), *b = new_ctx(dev);
    const int32_t n_vocab = oxl_model_n_vocab(cpu);
    oxl_error err = {0};
    cr_assert_eq(oxl_decode(a, prompt, 5, true, &err), 0, "%s", err.msg);
    cr_assert_eq(oxl_decode(b, prompt, 5, true, &err), 0, "%s", err.msg);
    for (int32_t j = 0; j < 5; j++) {
        const double d = rel_diff(oxl_get_logits(b, j), oxl_get_logits(a, j), n_vocab);
        cr_assert_leq(d, 1e-3, "prompt position %d: max|d|/range %g", j, d);
    }
    /* single steps, each token the CPU's greedy choice */
    for (int step = 0; step < 4; step++) {
        const float *la = oxl_get_logits(a, -1);
        oxl_token t = 0;
        for (int32_t i = 1; i < n_vocab; i++) {
            t = la[i] > la[t] ? i : t;
        }
        cr_assert_eq(oxl_decode(a, &t, 1, false, &err), 0, "%s", err.msg);
        cr_assert_eq(oxl_decode(b, &t, 1, false, &err), 0, "%s", err.msg);
        const double d = rel_diff(oxl_get_logits(b, -1), oxl_get_logits(a, -1), n_vocab);
        cr_assert_leq(d, 1e-3, "step %d: max|d|/range %g", step, d);
    }
    oxl_ctx_free(a), oxl_ctx_free(b);
    oxl_model_free(cpu), oxl_model_free(dev);
}

Test(gpu_offload, all_layers_and_head, .timeout = 120) { check_against_cpu(99, 5); }

Test(gpu_offload, last_two_layers, .timeout = 120) { check_against_cpu(2, 2); }

Test(gpu_offload, truncate_shift_state, .timeout = 120) {
    gpu_test_device();
    oxl_model *dev = load(-1);
    cr_assert_eq(oxl_model_n_gpu_layers(dev), 5);
    oxl_ctx *c = new_ctx(dev);
    const int32_t n_vocab = oxl_model_n_vocab(dev);
    oxl_error err = {0};
    cr_assert_eq(oxl_decode(c, prompt, 5, false, &err), 0, "%s", err.msg);
    float *first = malloc(sizeof(float) * n_vocab);
    memcpy(first, oxl_get_logits(c, -1), sizeof(float) * n_vocab);
    /* other tokens over positions 2.., then back to the prompt's: the rows are written again */
    const oxl_token other[] = {319, 286, 260};
    oxl_seq_truncate(c, 0, 2);
    cr_assert_eq(oxl_decode(c, other, 3, false, &err), 0, "%s", err.msg);
    oxl_seq_truncate(c, 0, 2);
    cr_assert_eq(oxl_decode(c, prompt + 2, 3, false, &err), 0, "%s", err.msg);
    const double d = rel_diff(oxl_get_logits(c, -1), first, n_vocab);
    cr_assert_leq(d, 1e-6, "after truncating and decoding again: max|d|/range %g", d);
    cr_assert_eq(oxl_seq_add(c, 0, 2, -1, -1, &err), -1);
    cr_assert(strstr(err.msg, "position shift: the KV cache of 5 layers is on the Vulkan device"), "%s", err.msg);
    char buf[1 << 16];
    cr_assert_lt(oxl_state_seq_save_buf(c, 0, prompt, 5, buf, sizeof buf, &err), 0);
    cr_assert(strstr(err.msg, "state save: the KV cache of 5 layers is on the Vulkan device"), "%s", err.msg);
    free(first);
    oxl_ctx_free(c);
    oxl_model_free(dev);
}

/* A context that keeps embeddings: the residual stream comes back from the device and the CPU runs
 * the final norm; embeddings and logits stay within the device bound of the CPU's. */
Test(gpu_offload, embeddings_come_back, .timeout = 120) {
    gpu_test_device();
    oxl_model *cpu = load(0), *dev = load(99);
    oxl_error err = {0};
    oxl_ctx_params cp = oxl_ctx_default_params();
    cp.n_ctx = 64;
    cp.n_threads = 2;
    cp.embeddings = true;
    oxl_ctx *a = oxl_ctx_new(cpu, &cp, &err), *b = oxl_ctx_new(dev, &cp, &err);
    cr_assert(a && b, "%s", err.msg);
    cr_assert_eq(oxl_decode(a, prompt, 5, true, &err), 0, "%s", err.msg);
    cr_assert_eq(oxl_decode(b, prompt, 5, true, &err), 0, "%s", err.msg);
    const int32_t n_embd = oxl_model_n_embd(cpu), n_vocab = oxl_model_n_vocab(cpu);
    for (int32_t j = 0; j < 5; j++) {
        const float *ea = oxl_get_embeddings_ith(a, j), *eb = oxl_get_embeddings_ith(b, j);
        cr_assert(ea && eb);
        const double de = rel_diff(eb, ea, n_embd), dl = rel_diff(oxl_get_logits(b, j), oxl_get_logits(a, j), n_vocab);
        cr_assert_leq(de, 1e-3, "position %d: embeddings max|d|/range %g", j, de);
        cr_assert_leq(dl, 1e-3, "position %d: logits max|d|/range %g", j, dl);
    }
    oxl_ctx_free(a), oxl_ctx_free(b);
    oxl_model_free(cpu), oxl_model_free(dev);
}

/* dispatches of mul_mat_tiled_<fmt>, over the formats */
static uint64_t tiled_dispatches(void) {
    uint64_t n = 0;
    for (uint32_t id = 0; id < 64; id++) {
        const oxl_type_traits *tr = oxl_type_traits_get(id);
        char buf[64];
        if (tr != NULL && tr->name != NULL) {
            snprintf(buf, sizeof buf, "mul_mat_tiled_%s", tr->name);
            n += oxl_gpu_dispatch_count(buf);
        }
    }
    return n;
}

Test(gpu_offload, prompt_batch_tiled, .timeout = 120) {
    gpu_test_device();
    static const oxl_token batch[] = {1, 403, 407, 261, 378, 319, 286, 260, 403, 407, 261, 378};
    const int32_t n = (int32_t)(sizeof batch / sizeof batch[0]);
    oxl_model *cpu = load(0), *dev = load(99);
    oxl_ctx *a = new_ctx(cpu), *b = new_ctx(dev);
    const int32_t n_vocab = oxl_model_n_vocab(cpu);
    oxl_error err = {0};
    cr_assert_eq(oxl_decode(a, batch, n, true, &err), 0, "%s", err.msg);
    const uint64_t before = tiled_dispatches();
    cr_assert_eq(oxl_decode(b, batch, n, true, &err), 0, "%s", err.msg);
    cr_assert_gt(tiled_dispatches(), before, "a prompt of %d tokens dispatched no mul_mat_tiled shader", n);
    for (int32_t j = 0; j < n; j++) {
        const double d = rel_diff(oxl_get_logits(b, j), oxl_get_logits(a, j), n_vocab);
        cr_assert_leq(d, 1e-3, "prompt position %d: max|d|/range %g", j, d);
    }
    oxl_ctx_free(a), oxl_ctx_free(b);
    oxl_model_free(cpu), oxl_model_free(dev);
}
