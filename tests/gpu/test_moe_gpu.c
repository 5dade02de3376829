/* The mixture-of-experts block on the Vulkan device (arch/moe_gpu.h) against the CPU's
 * (arch/moe.c): topk_moe's experts equal oxl_moe_route's for every gating variant, ties included,
 * and their weights agree within 1e-5 (Vulkan allows exp 3 + 2|x| ulp, so they cannot be bit-exact;
 * lavapipe's differ from the CPU's by about 1e-7); the whole block (router, mul_mat_id, expert
 * biases, activations, shared experts, the weighted sum) on the MoE layers of the golden models
 * equals oxl_moe_forward within 1e-5 of the output's range; whole models on the device equal the
 * CPU's run. Skipped without a Vulkan device (gpu_test_device). */
#include "context.h"
#include "decoder.h"
#include "gpu_test_util.h"
#include "model.h"
#include "moe_gpu.h"
#include "quantize.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#define ARCH_DIR OXL_SOURCE_DIR "/golden/arch/"

/* Deterministic values in [-1, 1). */
static float rnd(uint32_t *s) {
    *s = *s * 1664525u + 1013904223u;
    return (float)(*s >> 8) / 8388608.0f - 1.0f;
}

/* ---- routing ------------------------------------------------------------------------------ */

typedef struct route_case {
    const char *what;
    oxl_moe_opts o;
    bool router_bias, probs_bias;
} route_case;

static const route_case route_cases[] = {
    {.what = "mixtral: softmax, top-2, renormalised",
     .o = {.n_expert = 8, .n_expert_used = 2, .gating = OXL_MOE_SOFTMAX, .norm_w = true}},
    {.what = "olmoe: softmax, top-8 of 64", .o = {.n_expert = 64, .n_expert_used = 8, .gating = OXL_MOE_SOFTMAX}},
    {.what = "gpt-oss: router bias, softmax of the chosen",
     .o = {.n_expert = 32, .n_expert_used = 4, .gating = OXL_MOE_SOFTMAX_WEIGHT},
     .router_bias = true},
    {.what = "deepseek-v3: sigmoid, selection bias, groups, scale",
     .o = {.n_expert = 64,
           .n_expert_used = 6,
           .gating = OXL_MOE_SIGMOID,
           .norm_w = true,
           .w_scale = 2.5f,
           .n_group = 8,
           .n_group_used = 3},
     .probs_bias = true},
    {.what = "llama4: chosen on the logits, sigmoid weights",
     .o = {.n_expert = 16, .n_expert_used = 1, .gating = OXL_MOE_SIGMOID, .select_logits = true}},
    {.what = "300 experts, top-64",
     .o = {.n_expert = 300, .n_expert_used = 64, .gating = OXL_MOE_SOFTMAX, .norm_w = true}},
};

Test(moe_gpu, topk_equals_cpu_routing) {
    oxl_gpu *g = gpu_test_device();
    oxl_error err = {0};
    enum { N = 9 };
    for (size_t c = 0; c < sizeof route_cases / sizeof route_cases[0]; c++) {
        const route_case *rc = &route_cases[c];
        const int X = rc->o.n_expert, K = rc->o.n_expert_used;
        uint32_t seed = 17u + (uint32_t)c;
        float *logits = malloc(sizeof(float) * X * N), *probs = malloc(sizeof(float) * X * N);
        float *rb = calloc(X, sizeof(float)), *pb = calloc(X, sizeof(float)), *sel = malloc(sizeof(float) * X);
        for (int i = 0; i < X * N; i++) {
            logits[i] = 4.0f * rnd(&seed);
        }
        for (int j = 0; j < N; j++) { /* ties: token j repeats some logits, token 0 is all equal */
            float *l = logits + (size_t)j * X;
            for (int i = 1; i < X; i += 3) {
                l[i] = l[i - 1];
            }
            if (j == 0) {
                for (int i = 0; i < X; i++) {
                    l[i] = 0.5f;
                }
            }
        }
        for (int i = 0; i < X; i++) {
            rb[i] = rc->router_bias ? 0.5f * rnd(&seed) : 0.0f;
            pb[i] = rc->probs_bias ? 0.1f * rnd(&seed) : 0.0f;
        }
        oxl_moe_layer h = {0};
        if (rc->router_bias) {
            h.gate_inp_b = (oxl_tensor){.name = "router bias", .type = OXL_TYPE_F32, .ne = {X, 1}, .data = rb};
        }
        if (rc->probs_bias) {
            h.exp_probs_b = (oxl_tensor){.name = "selection bias", .type = OXL_TYPE_F32, .ne = {X, 1}, .data = pb};
        }
        int32_t *ids_cpu = malloc(sizeof(int32_t) * K * N), *ids_gpu = malloc(sizeof(int32_t) * K * N);
        float *w_cpu = malloc(sizeof(float) * K * N), *w_gpu = malloc(sizeof(float) * K * N);
        memcpy(probs, logits, sizeof(float) * X * N);
        oxl_moe_route(&rc->o, &h, probs, N, ids_cpu, w_cpu, sel);

        oxl_gpu_buf *lb = gpu_test_buf(g, logits, sizeof(float) * X * N);
        oxl_gpu_buf *rbb = gpu_test_buf(g, rb, sizeof(float) * X), *pbb = gpu_test_buf(g, pb, sizeof(float) * X);
        oxl_gpu_buf *out = oxl_gpu_alloc(g, sizeof(float) * 2 * K * N + 256, &err);
        cr_assert_not_null(out, "%s", err.msg);
        const oxl_moe_gpu_layer l = {.host = &h, .gate_inp_b = {.buf = rbb}, .exp_probs_b = {.buf = pbb}};
        const size_t w_at = (sizeof(int32_t) * K * N + 255) & ~(size_t)255;
        cr_assert_eq(oxl_gpu_begin(g, &err), 0, "%s", err.msg);
        cr_assert_eq(oxl_moe_gpu_route(g, &rc->o, &l, (oxl_gpu_bind){.buf = lb}, N, (oxl_gpu_bind){.buf = out},
                                       (oxl_gpu_bind){.buf = out, .off = w_at}, &err),
                     0, "%s", err.msg);
        cr_assert_eq(oxl_gpu_rec_read(g, out, 0, ids_gpu, sizeof(int32_t) * K * N, &err), 0, "%s", err.msg);
        cr_assert_eq(oxl_gpu_rec_read(g, out, w_at, w_gpu, sizeof(float) * K * N, &err), 0, "%s", err.msg);
        cr_assert_eq(oxl_gpu_submit(g, &err), 0, "%s", err.msg);
        for (int i = 0; i < K * N; i++) {
            cr_expect_eq(ids_gpu[i], ids_cpu[i], "%s: token %d slot %d: expert %d, the CPU chose %d", rc->what, i / K,
                         i % K, ids_gpu[i], ids_cpu[i]);
            cr_expect(fabsf(w_gpu[i] - w_cpu[i]) <= 1e-5f * fabsf(w_cpu[i]),
                      "%s: token %d slot %d: weight %.9g, the CPU's %.9g", rc->what, i / K, i % K, (double)w_gpu[i],
                      (double)w_cpu[i]);
        }
        oxl_gpu_free(g, lb);
        oxl_gpu_free(g, rbb);
        oxl_gpu_free(g, pbb);
        oxl_gpu_free(g, out);
        free(logits);
        free(probs);
        free(rb);
        free(pb);
        free(sel);
        free(ids_cpu);
        free(ids_gpu);
        free(w_cpu);
        free(w_gpu);
    }
}

/* ---- the whole block on the golden models' MoE layers --------------------------------------- */

/* t's values in format `type` (oxl_quantize_rows: the CPU's rounding / reference quantizer): a new
 * tensor over a new array (in *own). */
static oxl_tensor to_type(const oxl_tensor *t, oxl_type type, int32_t n_mat, void **own) {
    const int64_t rows = t->ne[1] * n_mat;
    const size_t row = oxl_row_size(type, t->ne[0]);
    oxl_error err = {0};
    *own = malloc(row * (size_t)rows);
    cr_assert_eq(oxl_quantize_rows(type, t->data, *own, rows, t->ne[0], NULL, &err), 0, "%s", err.msg);
    oxl_tensor h = *t;
    h.type = type;
    h.row_size = row;
    h.data = *own;
    h.rp = NULL;
    return h;
}

/* The block of layer il of model id on n tokens of random values in [-scale, scale), its router and
 * experts in `type` (f32: as in the file; f16 / bf16: rounded to it): the device's output against the
 * CPU's, the largest difference within 1e-5 of the CPU output's range for f32. With half experts the
 * activation is rounded to the partner format before down: where the device's float activation
 * differs from the CPU's in its last bit, the rounding can move by a half's unit (2^-11 relative), so
 * those get 1e-4. */
static void check_block_as(oxl_gpu *g, const char *id, int il, int32_t n, float scale, oxl_type type) {
    char path[512];
    oxl_error err = {0};
    snprintf(path, sizeof path, ARCH_DIR "%s.gguf", id);
    oxl_model_params mp = oxl_model_default_params();
    oxl_model *m = oxl_model_load(path, &mp, &err);
    cr_assert_not_null(m, "%s", err.msg);
    oxl_ctx_params cp = oxl_ctx_default_params();
    cp.n_ctx = 64;
    cp.n_batch = 64;
    cp.n_threads = 2;
    oxl_ctx *ctx = oxl_ctx_new(m, &cp, &err);
    cr_assert_not_null(ctx, "%s", err.msg);
    const oxl_decoder *d = m->weights;
    while (il < m->hp.n_layer && !d->layers[il].moe.gate_inp.data) { /* the first MoE layer from il on */
        il++;
    }
    cr_assert(il < m->hp.n_layer, "%s: no MoE layer", id);
    oxl_moe_layer hl = d->layers[il].moe;
    const oxl_moe_layer *h = &hl;
    void *halves[4] = {0};
    if (type != OXL_TYPE_F32) {
        hl.gate_inp = to_type(&hl.gate_inp, type, 1, &halves[0]);
        hl.gate_exps = to_type(&hl.gate_exps, type, d->o.moe.n_expert, &halves[1]);
        hl.up_exps = to_type(&hl.up_exps, type, d->o.moe.n_expert, &halves[2]);
        hl.down_exps = to_type(&hl.down_exps, type, d->o.moe.n_expert, &halves[3]);
    }
    const oxl_moe_opts *o = &d->o.moe;
    const int64_t E = m->hp.n_embd;

    uint32_t seed = 7u;
    float *x = malloc(sizeof(float) * E * n), *ref = malloc(sizeof(float) * E * n),
          *got = malloc(sizeof(float) * E * n);
    for (int64_t i = 0; i < E * n; i++) {
        x[i] = scale * rnd(&seed);
    }
    void *work = aligned_alloc(64, (oxl_moe_work_size(o, E, n) + 63) & ~(size_t)63);
    oxl_moe_forward(ctx, o, h, x, n, ref, work);
    free(work);

    const char *why = oxl_moe_gpu_unsupported(g, o, h);
    cr_assert_null(why, "%s: %s", id, why);
    oxl_moe_gpu_layer l;
    cr_assert_eq(oxl_moe_gpu_upload(g, h, &l, &err), 0, "%s", err.msg);
    oxl_gpu_buf *xb = gpu_test_buf(g, x, sizeof(float) * E * n);
    oxl_gpu_buf *ob = oxl_gpu_alloc(g, sizeof(float) * E * n, &err);
    oxl_gpu_buf *wb = oxl_gpu_alloc(g, oxl_moe_gpu_work_size(o, E, n), &err);
    cr_assert(ob && wb, "%s", err.msg);
    cr_assert_eq(oxl_gpu_begin(g, &err), 0, "%s", err.msg);
    cr_assert_eq(oxl_moe_gpu_forward(g, o, &l, E, (oxl_gpu_bind){.buf = xb}, n, (oxl_gpu_bind){.buf = ob},
                                     (oxl_gpu_bind){.buf = wb}, &err),
                 0, "%s", err.msg);
    cr_assert_eq(oxl_gpu_rec_read(g, ob, 0, got, sizeof(float) * E * n, &err), 0, "%s", err.msg);
    cr_assert_eq(oxl_gpu_submit(g, &err), 0, "%s", err.msg);

    float lo = ref[0], hi = ref[0];
    double dmax = 0.0;
    for (int64_t i = 0; i < E * n; i++) {
        lo = fminf(lo, ref[i]);
        hi = fmaxf(hi, ref[i]);
        dmax = fmax(dmax, fabs((double)got[i] - ref[i]));
    }
    const double tol = type == OXL_TYPE_F32 ? 1e-5 : 1e-4;
    cr_expect(dmax <= tol * (hi - lo), "%s layer %d: the device's block differs by %.3g over a range of %.3g", id, il,
              dmax, (double)(hi - lo));
    oxl_moe_gpu_layer_free(g, &l);
    oxl_gpu_free(g, xb);
    oxl_gpu_free(g, ob);
    oxl_gpu_free(g, wb);
    free(x);
    free(ref);
    free(got);
    for (size_t i = 0; i < sizeof halves / sizeof halves[0]; i++) {
        free(halves[i]);
    }
    oxl_ctx_free(ctx);
    oxl_model_free(m);
}

static void check_block(oxl_gpu *g, const char *id, int il, int32_t n, float scale) {
    check_block_as(g, id, il, n, scale, OXL_TYPE_F32);
}

Test(moe_gpu, mixtral_block_equals_cpu) {
    oxl_gpu *g = gpu_test_device();
    check_block(g, "mixtral", 0, 7, 1.0f);
    check_block(g, "mixtral", 1, 1, 1.0f);
}

Test(moe_gpu, gpt_oss_block_equals_cpu) {
    oxl_gpu *g = gpu_test_device();
    check_block(g, "gpt-oss", 0, 7, 1.0f);
    check_block(g, "gpt-oss", 1, 1, 1.0f);
    check_block(g, "gpt-oss", 1, 6, 60.0f); /* gate and up beyond the clamp of 7 */
}

/* Router and experts in f16 and bf16: the activations rounded to the partner format as the CPU's
 * oxl_matmul rounds them (quantize_f16 / quantize_bf16), then mul_mat_id_f16 / _bf16. */
Test(moe_gpu, half_experts_equal_cpu) {
    oxl_gpu *g = gpu_test_device();
    check_block_as(g, "gpt-oss", 0, 5, 1.0f, OXL_TYPE_F16);
    check_block_as(g, "gpt-oss", 1, 3, 1.0f, OXL_TYPE_BF16);
    check_block_as(g, "mixtral", 0, 5, 1.0f, OXL_TYPE_F16);
    check_block_as(g, "mixtral", 1, 3, 1.0f, OXL_TYPE_BF16);
}

/* Router and experts quantized (the CPU's reference quantizers), the activations in the partner
 * format (quantize_q8_0 / _q8_1): mul_mat_id_<fmt> with each block's dot as mul_mat_<fmt>'s. */
Test(moe_gpu, quantized_experts_equal_cpu) {
    oxl_gpu *g = gpu_test_device();
    const oxl_type types[] = {OXL_TYPE_Q8_0, OXL_TYPE_Q4_0,   OXL_TYPE_Q4_1,
                              OXL_TYPE_Q5_0, OXL_TYPE_IQ4_NL, OXL_TYPE_MXFP4};
    for (size_t i = 0; i < sizeof types / sizeof types[0]; i++) {
        check_block_as(g, "gpt-oss", 0, 5, 1.0f, types[i]);
        check_block_as(g, "mixtral", 1, 5, 1.0f, types[i]);
    }
}

Test(moe_gpu, shared_expert_blocks_equal_cpu) {
    oxl_gpu *g = gpu_test_device();
    check_block(g, "qwen2moe", 0, 5, 1.0f); /* shared experts gated by sigmoid(x . w) */
    check_block(g, "olmoe", 0, 5, 1.0f);    /* softmax without renormalisation */
    check_block(g, "qwen3moe", 0, 5, 1.0f); /* renormalised */
}

/* The other families the decoder runs with experts: sigmoid gating, selection biases, groups and
 * weight scales (DeepSeek-V3, GLM-4.5), shared experts with and without their gate, expert biases,
 * GELU experts (Grok), MoE layers among recurrent ones (Jamba). Llama 4's experts (the weights
 * scale their input) are not on the device. */
Test(moe_gpu, every_decoder_moe_family_equals_cpu) {
    static const char *const ids[] = {"dbrx",         "deepseek2", "deepseek2-lite", "deepseek2-v3",
                                      "ernie4_5-moe", "glm4moe",   "grok",           "hunyuan-moe",
                                      "minimax-m2",   "phimoe",    "jamba"};
    oxl_gpu *g = gpu_test_device();
    for (size_t i = 0; i < sizeof ids / sizeof ids[0]; i++) {
        check_block(g, ids[i], 0, 5, 1.0f);
    }
}

/* ---- whole models: the decoder's device path with the MoE layers ------------------------------- */

/* The logits of golden/arch/<id>'s prompt (n_vocab, n_tok) with every layer and the head on the device
 * (n_gpu_layers -1), else on the CPU; both with an f32 KV cache and unfused attention, as the goldens
 * are made. Returns n_tok; *n_vocab set. */
static int32_t model_logits(const char *id, int32_t n_gpu_layers, float **out, int32_t *n_vocab) {
    char path[512];
    oxl_error err = {0};
    snprintf(path, sizeof path, ARCH_DIR "%s.logits.gguf", id);
    oxl_gguf *gd = oxl_gguf_open(path, &err);
    cr_assert_not_null(gd, "%s", err.msg);
    const oxl_gguf_tensor *tt = oxl_gguf_find_tensor(gd, "tokens");
    cr_assert_not_null(tt, "%s: no tokens", path);
    const int32_t n = (int32_t)tt->ne[0];
    snprintf(path, sizeof path, ARCH_DIR "%s.gguf", id);
    oxl_model_params mp = oxl_model_default_params();
    mp.n_gpu_layers = n_gpu_layers;
    oxl_model *m = oxl_model_load(path, &mp, &err);
    cr_assert_not_null(m, "%s", err.msg);
    cr_assert_eq(m->gpu_layers, n_gpu_layers ? m->hp.n_layer : 0, "%s: %d layers on the device", id, m->gpu_layers);
    oxl_ctx_params cp = oxl_ctx_default_params();
    cp.n_ctx = n + 1;
    cp.n_batch = n;
    cp.n_threads = 2;
    cp.type_k = cp.type_v = OXL_KV_F32;
    cp.flash_attn = OXL_FLASH_ATTN_OFF;
    oxl_ctx *ctx = oxl_ctx_new(m, &cp, &err);
    cr_assert_not_null(ctx, "%s", err.msg);
    cr_assert_eq(oxl_decode(ctx, tt->data, n, true, &err), 0, "%s", err.msg);
    *n_vocab = oxl_model_n_vocab(m);
    *out = malloc(sizeof(float) * (size_t)*n_vocab * n);
    for (int32_t j = 0; j < n; j++) {
        memcpy(*out + (size_t)j * *n_vocab, oxl_get_logits(ctx, j), sizeof(float) * (size_t)*n_vocab);
    }
    oxl_ctx_free(ctx);
    oxl_model_free(m);
    oxl_gguf_close(gd);
    return n;
}

/* The golden prompt through the whole model on the device against the CPU's run: the same argmax at
 * every position (near ties within the tolerance excepted), the logits within tol of their range. A
 * 1% error in one slot's weight moves them by 1e-3 and more. */
static void check_model(const char *id, double tol) {
    float *dev, *cpu;
    int32_t nv, nv2;
    gpu_test_device();
    const int32_t n = model_logits(id, -1, &dev, &nv);
    model_logits(id, 0, &cpu, &nv2);
    double dmax = 0.0;
    float lo = cpu[0], hi = cpu[0];
    int32_t(*argmax)[2] = malloc(sizeof *argmax * (size_t)n);
    for (int32_t j = 0; j < n; j++) {
        const float *a = dev + (size_t)j * nv, *b = cpu + (size_t)j * nv;
        int32_t ia = 0, ib = 0;
        for (int32_t i = 0; i < nv; i++) {
            ia = a[i] > a[ia] ? i : ia;
            ib = b[i] > b[ib] ? i : ib;
            lo = fminf(lo, b[i]);
            hi = fmaxf(hi, b[i]);
            dmax = fmax(dmax, fabs((double)a[i] - b[i]));
        }
        argmax[j][0] = ia;
        argmax[j][1] = ib;
    }
    /* the same argmax, unless the CPU's two best are nearer than the tolerance (a near tie) */
    for (int32_t j = 0; j < n; j++) {
        const float *b = cpu + (size_t)j * nv;
        cr_expect(argmax[j][0] == argmax[j][1] || b[argmax[j][1]] - b[argmax[j][0]] <= tol * (hi - lo),
                  "%s position %d: the device's argmax %d, the CPU's %d (logits %g, %g)", id, j, argmax[j][0],
                  argmax[j][1], (double)b[argmax[j][0]], (double)b[argmax[j][1]]);
    }
    cr_expect(dmax <= tol * (hi - lo), "%s: the device's logits differ by %.3g over a range of %.3g", id, dmax,
              (double)(hi - lo));
    free(argmax);
    free(dev);
    free(cpu);
}

Test(moe_gpu, mixtral_model_equals_cpu) { check_model("mixtral", 1e-5); }

Test(moe_gpu, gpt_oss_model_equals_cpu) { check_model("gpt-oss", 1e-5); }

/* The other MoE families whose every layer the device path runs; grok's GELU rounds to f16, where a
 * last-bit difference moves by a half's unit, so 1e-4 there. */
Test(moe_gpu, moe_family_models_equal_cpu) {
    static const char *const ids[] = {"qwen2moe",     "qwen3moe",    "olmoe",      "phimoe",
                                      "ernie4_5-moe", "hunyuan-moe", "minimax-m2", "grok"};
    for (size_t i = 0; i < sizeof ids / sizeof ids[0]; i++) {
        check_model(ids[i], strcmp(ids[i], "grok") == 0 ? 1e-4 : 1e-5);
    }
}
