/* Gemma 3n beyond the golden runner: load errors naming its own tensors, the shared KV cache of
 * layers 20-21 (no rows of their own, the views of layers 18 and 19), several sequences in one batch,
 * and the Gaussian top-k op against values worked out by hand. Reference values are llama.cpp's
 * logits in golden/arch/gemma3n.logits.gguf. */
#include "act.h"
#include "context.h"
#include "model.h"
#include "model_memory.h"

#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define GEMMA3N OXL_SOURCE_DIR "/golden/arch/gemma3n"

static unsigned char *read_file(const char *path, size_t *size) {
    FILE *f = fopen(path, "rb");
    cr_assert_not_null(f, "cannot open %s", path);
    fseek(f, 0, SEEK_END);
    *size = (size_t)ftell(f);
    fseek(f, 0, SEEK_SET);
    unsigned char *buf = malloc(*size);
    cr_assert_eq(fread(buf, 1, *size, f), *size);
    fclose(f);
    return buf;
}

/* The byte offset just past GGUF string s (u64 length then bytes) in the buffer. */
static size_t after_gguf_str(const unsigned char *buf, size_t size, const char *s) {
    const uint64_t n = strlen(s);
    for (size_t i = 0; i + 8 + n <= size; i++) {
        if (memcmp(buf + i, &n, 8) == 0 && memcmp(buf + i + 8, s, n) == 0) {
            return i + 8 + n;
        }
    }
    cr_assert_fail("string '%s' not in the file", s);
    return 0;
}

static void expect_load_error(const unsigned char *buf, size_t size, const char *want) {
    oxl_error err = {0};
    oxl_gguf *g = oxl_gguf_open_memory(buf, size, "patched.gguf", &err);
    cr_assert_not_null(g, "the patched file must stay a valid GGUF: %s", err.msg);
    oxl_model *m = oxl_model_from_gguf(g, &err);
    cr_expect_null(m, "the model loaded; expected: %s", want);
    oxl_model_free(m);
    cr_expect(strstr(err.msg, want) != NULL, "message '%s' does not name '%s'", err.msg, want);
}

/* Renames tensor `name` in place (same length) so the loader no longer finds it. */
static void expect_missing_named(const char *name) {
    size_t size;
    unsigned char *buf = read_file(GEMMA3N ".gguf", &size);
    buf[after_gguf_str(buf, size, name) - 1] ^= 0x20;
    char want[160];
    snprintf(want, sizeof want, "missing tensor '%s'", name);
    expect_load_error(buf, size, want);
    free(buf);
}

Test(gemma3n_load, missing_per_layer_gate_is_named) { expect_missing_named("blk.3.inp_gate.weight"); }
Test(gemma3n_load, missing_per_layer_projection_is_named) { expect_missing_named("per_layer_model_proj.weight"); }
Test(gemma3n_load, missing_laurel_is_named) { expect_missing_named("blk.21.laurel_r.weight"); }
Test(gemma3n_load, missing_altup_router_is_named) { expect_missing_named("blk.0.altup_router.weight"); }

Test(gemma3n_load, altup_projection_shape_is_named) {
    size_t size;
    unsigned char *buf = read_file(GEMMA3N ".gguf", &size);
    /* altup_proj is (32, 32, 3): three projections for the streams besides the active one */
    const size_t at = after_gguf_str(buf, size, "altup_proj.weight");
    const int64_t two = 2;
    memcpy(buf + at + 4 + 8 * 2, &two, 8);
    expect_load_error(buf, size, "tensor 'altup_proj.weight' has shape (32, 32, 2, 1); expected (32, 32, 3)");
    free(buf);
}

static oxl_model *load(void) {
    oxl_error err = {0};
    oxl_model_params mp = oxl_model_default_params();
    oxl_model *m = oxl_model_load(GEMMA3N ".gguf", &mp, &err);
    cr_assert_not_null(m, "%s", err.msg);
    return m;
}

static oxl_ctx *new_ctx(oxl_model *m, int32_t n_ctx, int32_t n_batch, int32_t n_seq) {
    oxl_error err = {0};
    oxl_ctx_params cp = oxl_ctx_default_params();
    cp.n_ctx = n_ctx * n_seq;
    cp.n_batch = n_batch;
    cp.n_seq_max = n_seq;
    cp.n_threads = 2;
    cp.type_k = cp.type_v = OXL_KV_F32;
    cp.flash_attn = OXL_FLASH_ATTN_OFF;
    oxl_ctx *ctx = oxl_ctx_new(m, &cp, &err);
    cr_assert_not_null(ctx, "%s", err.msg);
    return ctx;
}

/* llama.cpp's log: "layer 20: does not have KV cache", "layer 20: reuse layer 18, is_swa = 1",
 * "layer 21: reuse layer 19, is_swa = 0". */
Test(gemma3n_kv, layers_20_and_21_read_the_caches_of_18_and_19) {
    oxl_model *m = load();
    cr_assert_not_null(m->hp.kv_src);
    oxl_ctx *ctx = new_ctx(m, 16, 16, 1);
    const int32_t pos = 0, seq = 0;
    const oxl_ubatch ub = {.n = 1, .token = (const oxl_token[]){1}, .pos = &pos, .seq = &seq};
    oxl_kv_view v[22];
    for (int il = 0; il < 22; il++) {
        v[il] = oxl_memory_kv_view(ctx->mem, il, &ub);
    }
    for (int il = 0; il < 20; il++) {
        cr_expect_not_null(v[il].k, "layer %d has its own cache", il);
        for (int o = 0; o < il; o++) {
            cr_expect_neq(v[il].k, v[o].k, "layers %d and %d", il, o);
        }
    }
    cr_expect_eq(v[20].k, v[18].k);
    cr_expect_eq(v[20].v, v[18].v);
    cr_expect_eq(v[21].k, v[19].k);
    cr_expect_eq(v[21].v, v[19].v);
    /* rows for 20 layers only: 16 positions of 32 f32 keys and 32 f32 values each */
    cr_expect_eq(oxl_memory_kv_bytes(ctx->mem), (size_t)20 * 16 * (32 + 32) * sizeof(float), "%zu bytes",
                 oxl_memory_kv_bytes(ctx->mem));
    oxl_ctx_free(ctx);
    oxl_model_free(m);
}

/* max|a - b| / range(b) over n values. */
static double rel_diff(const float *a, const float *b, int32_t n) {
    float lo = b[0], hi = b[0];
    double d = 0.0;
    for (int32_t i = 0; i < n; i++) {
        lo = fminf(lo, b[i]);
        hi = fmaxf(hi, b[i]);
        d = fmax(d, fabs((double)a[i] - b[i]));
    }
    return d / (double)(hi - lo);
}

/* Sequence 0 is the golden prompt, sequence 1 the same tokens reversed: both in one batch,
 * interleaved, give sequence 0 llama.cpp's logits and sequence 1 those of a run of its own (each
 * sequence's shared layers read that sequence's rows of layers 18 and 19). */
Test(gemma3n_kv, sequences_in_one_batch_equal_separate_runs) {
    oxl_error err = {0};
    oxl_gguf *gd = oxl_gguf_open(GEMMA3N ".logits.gguf", &err);
    cr_assert_not_null(gd, "%s", err.msg);
    const oxl_gguf_tensor *tt = oxl_gguf_find_tensor(gd, "tokens"), *tl = oxl_gguf_find_tensor(gd, "logits");
    cr_assert(tt && tl);
    const oxl_token *tokens = tt->data;
    const float *golden = tl->data;
    const int32_t n = (int32_t)tt->ne[0];
    oxl_model *m = load();
    const int32_t n_vocab = oxl_model_n_vocab(m);
    oxl_token rev[64];
    for (int32_t i = 0; i < n; i++) {
        rev[i] = tokens[n - 1 - i];
    }
    oxl_ctx *solo = new_ctx(m, n, n, 1);
    cr_assert_eq(oxl_decode(solo, rev, n, true, &err), 0, "%s", err.msg);
    float *want1 = malloc(sizeof(float) * (size_t)n_vocab * n);
    for (int32_t j = 0; j < n; j++) {
        memcpy(want1 + (size_t)j * n_vocab, oxl_get_logits(solo, j), sizeof(float) * (size_t)n_vocab);
    }
    oxl_ctx_free(solo);

    oxl_ctx *ctx = new_ctx(m, n, 32, 2);
    oxl_token tok[128];
    int32_t pos[128], seq[128];
    int8_t keep[128];
    for (int32_t i = 0; i < n; i++) {
        tok[2 * i] = tokens[i], pos[2 * i] = i, seq[2 * i] = 0, keep[2 * i] = 1;
        tok[2 * i + 1] = rev[i], pos[2 * i + 1] = i, seq[2 * i + 1] = 1, keep[2 * i + 1] = 1;
    }
    const oxl_batch b = {.n_tokens = 2 * n, .token = tok, .pos = pos, .seq_id = seq, .logits = keep};
    cr_assert_eq(oxl_decode_batch(ctx, &b, &err), 0, "%s", err.msg);
    double worst0 = 0.0, worst1 = 0.0;
    for (int32_t j = 0; j < n; j++) {
        worst0 = fmax(worst0, rel_diff(oxl_get_logits(ctx, 2 * j), golden + (size_t)j * n_vocab, n_vocab));
        worst1 = fmax(worst1, rel_diff(oxl_get_logits(ctx, 2 * j + 1), want1 + (size_t)j * n_vocab, n_vocab));
    }
    cr_expect_leq(worst0, 1e-6, "sequence 0 against llama.cpp: %g", worst0);
    cr_expect_leq(worst1, 1e-6, "sequence 1 against its own run: %g", worst1);
    free(want1);
    oxl_ctx_free(ctx);
    oxl_model_free(m);
    oxl_gguf_close(gd);
}

/* Row (1, 2, 3, 4): mean 2.5, std sqrt(5/3) = 1.2909944 (divisor n - 1); with multiplier 1 the
 * cutoff is 3.7909944 and only 4 passes, as 0.2090056. Row (-1, 0, 0, 1) with 1.6448534: mean 0,
 * std sqrt(2/3) = 0.8164966, cutoff 1.3430190: nothing passes. */
Test(gemma3n_ops, gaussian_topk_keeps_what_exceeds_mean_plus_k_std) {
    float x[8] = {1, 2, 3, 4, -1, 0, 0, 1};
    oxl_gaussian_topk(x, 4, 1, 1.0f);
    oxl_gaussian_topk(x + 4, 4, 1, 1.6448533535003662f);
    const float want[8] = {0, 0, 0, 0.2090056f, 0, 0, 0, 0};
    for (int i = 0; i < 8; i++) {
        cr_expect_float_eq(x[i], want[i], 1e-6f, "x[%d] = %.9g, want %.9g", i, x[i], want[i]);
    }
}
