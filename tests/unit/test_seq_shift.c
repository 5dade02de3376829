/* Position shift (oxl_seq_add, llama.cpp's llama_memory_seq_rm + llama_memory_seq_add with the K
 * shift of src/llama-kv-cache.cpp): after a shift the cached keys of the moved positions equal the
 * keys a fresh context computes for the same tokens at the new positions, the kept positions and the
 * V rows are unchanged, and every refused shift is a named error that leaves the sequence as it was.
 *
 * The keys are read through the public state format (docs/state-format.md): layer 0's K rows. Only
 * layer 0 is compared: its keys depend on the token and its position alone, while a deeper layer's
 * keys also depend on the tokens before (which the shift removed), in llama.cpp as here. */
#include "oxillama.h"

#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MODELS OXL_SOURCE_DIR "/models/"
#define ARCH OXL_SOURCE_DIR "/golden/arch/"

enum { N_TOK = 20, N_KEEP = 4, N_DISCARD = 6 };

static oxl_model *load(const char *path) {
    oxl_error err = {0};
    oxl_model_params mp = oxl_model_default_params();
    oxl_model *m = oxl_model_load(path, &mp, &err);
    cr_assert_not_null(m, "%s", err.msg);
    return m;
}

static oxl_ctx *new_ctx(const oxl_model *m, oxl_kv_type tk) {
    oxl_error err = {0};
    oxl_ctx_params cp = oxl_ctx_default_params();
    cp.n_ctx = 32;
    cp.n_threads = 2;
    cp.type_k = tk;
    cp.type_v = tk;
    oxl_ctx *ctx = oxl_ctx_new(m, &cp, &err);
    cr_assert_not_null(ctx, "%s", err.msg);
    return ctx;
}

static void tokens_for(const oxl_model *m, oxl_token *t, int32_t n) {
    const int32_t n_vocab = oxl_model_n_vocab(m);
    for (int32_t i = 0; i < n; i++) {
        t[i] = (oxl_token)((i * 37 + 11) % (n_vocab - 3) + 3);
    }
}

static void decode(oxl_ctx *ctx, const oxl_token *t, int32_t n) {
    oxl_error err = {0};
    cr_assert_eq(oxl_decode(ctx, t, n, false, &err), 0, "%s", err.msg);
}

static uint32_t rd32(const uint8_t *p) {
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* IEEE half to float (the cache's f16 rows as stored). */
static float half_to_float(uint16_t h) {
    const int e = (h >> 10) & 0x1f, mant = h & 0x3ff;
    const float s = (h & 0x8000) ? -1.0f : 1.0f;
    if (e == 0) {
        return s * ldexpf((float)mant, -24);
    }
    if (e == 31) {
        return mant ? NAN : s * INFINITY;
    }
    return s * ldexpf((float)(mant | 0x400), e - 25);
}

/* Layer 0's K rows (n_past x kv_dim floats, caller frees) and V bytes of sequence 0, from its
 * saved state. */
typedef struct rows {
    float *k;
    uint8_t *v;
    int32_t n, kv_dim;
    size_t v_bytes; /* per row */
} rows;

static rows layer0(const oxl_ctx *ctx, const oxl_token *tokens) {
    oxl_error err = {0};
    const int32_t n = oxl_seq_n_past(ctx, 0);
    const size_t size = oxl_state_seq_size(ctx, 0);
    uint8_t *buf = malloc(size);
    cr_assert_not_null(buf);
    cr_assert_gt(oxl_state_seq_save_buf(ctx, 0, tokens, n, buf, size, &err), 0, "%s", err.msg);
    rows r = {.n = n, .kv_dim = (int32_t)rd32(buf + 68)};
    const uint32_t type_k = rd32(buf + 80), type_v = rd32(buf + 84);
    cr_assert(type_k == 0 || type_k == 1 || type_k == 8, "f32, f16 or q8_0 K cache");
    /* q8_0: blocks of 32 values, an fp16 scale then 32 int8 (34 bytes) */
    const size_t k_row = type_k == 8 ? (size_t)r.kv_dim / 32 * 34 : (size_t)r.kv_dim * (type_k ? 2 : 4);
    r.v_bytes = type_v == 8 ? (size_t)r.kv_dim / 32 * 34 : (size_t)r.kv_dim * (type_v ? 2 : 4);
    const uint8_t *k = buf + 128 + 4 * (size_t)n;
    r.k = malloc((size_t)n * (size_t)r.kv_dim * sizeof(float));
    r.v = malloc((size_t)n * r.v_bytes);
    for (size_t i = 0; i < (size_t)n * (size_t)r.kv_dim; i++) {
        if (type_k == 8) {
            const uint8_t *blk = k + i / 32 * 34;
            r.k[i] = half_to_float((uint16_t)(blk[0] | blk[1] << 8)) * (float)(int8_t)blk[2 + i % 32];
        } else if (type_k) {
            r.k[i] = half_to_float((uint16_t)(k[2 * i] | k[2 * i + 1] << 8));
        } else {
            memcpy(&r.k[i], k + 4 * i, 4);
        }
    }
    memcpy(r.v, k + (size_t)n * k_row, (size_t)n * r.v_bytes);
    free(buf);
    return r;
}

static void rows_free(rows *r) {
    free(r->k);
    free(r->v);
}

/* Largest |a - b| over rows [ra, ra + n) of a and [rb, rb + n) of b, and the largest |b|. */
static float max_diff(const rows *a, int32_t ra, const rows *b, int32_t rb, int32_t n, float *max_abs) {
    float d = 0.0f, m = 0.0f;
    for (int32_t i = 0; i < n; i++) {
        for (int32_t j = 0; j < a->kv_dim; j++) {
            const float x = a->k[(size_t)(ra + i) * a->kv_dim + j], y = b->k[(size_t)(rb + i) * b->kv_dim + j];
            d = fmaxf(d, fabsf(x - y));
            m = fmaxf(m, fabsf(y));
        }
    }
    *max_abs = m;
    return d;
}

/* Decodes N_TOK tokens, shifts as llama-completion does with n_keep N_KEEP (n_discard N_DISCARD),
 * and compares layer 0's keys with a fresh context that decoded the kept tokens at their new
 * positions.
 *
 * Tolerance: the shifted key is R(delta) R(p) k and the fresh one R(p + delta) k, equal in exact
 * arithmetic (RoPE's angles are linear in the position). In float each angle theta_i = pos * s^i is
 * built by i repeated multiplications (ggml_rope_cache_init), so its relative error is at most
 * (i + 2) 2^-24; with positions below N_TOK and at most n_pairs pairs, three angles (at p, delta and
 * p + delta) are off by at most 3 N_TOK (n_pairs + 2) 2^-24 rad together, which moves a value by at
 * most that times the pair's norm (<= sqrt2 max|k|); the keys themselves come from matrix products
 * of different batch sizes (20 and 14 columns), which may round differently by a few ulp: 64 2^-24
 * max|k|. An f16 cache rounds each stored value to 11 significant bits, once for the fresh key and
 * twice (stored, then rotated and stored again) for the shifted one: 3 2^-11 max|k| more. */
static void check_shift(const char *path, oxl_kv_type tk, int n_pairs) {
    oxl_model *m = load(path);
    oxl_token t[N_TOK], kept[N_TOK];
    tokens_for(m, t, N_TOK);
    oxl_error err = {0};

    oxl_ctx *a = new_ctx(m, tk);
    cr_assert_eq(oxl_ctx_can_shift(a, &err), 0, "%s", err.msg);
    decode(a, t, N_TOK);
    rows before = layer0(a, t);
    /* llama_memory_seq_rm(n_keep, n_keep + n_discard); llama_memory_seq_add(n_keep + n_discard, n_past, -n_discard) */
    cr_assert_eq(oxl_seq_add(a, 0, N_KEEP + N_DISCARD, -1, -N_DISCARD, &err), 0, "%s", err.msg);
    cr_assert_eq(oxl_seq_n_past(a, 0), N_TOK - N_DISCARD);
    int32_t n_kept = 0;
    for (int32_t i = 0; i < N_TOK; i++) {
        if (i < N_KEEP || i >= N_KEEP + N_DISCARD) {
            kept[n_kept++] = t[i];
        }
    }
    rows shifted = layer0(a, kept);

    oxl_ctx *b = new_ctx(m, tk);
    decode(b, kept, n_kept);
    rows fresh = layer0(b, kept);

    /* q8_0 rounds each value to half a step of its block's scale max|block| / 127: at most
     * max|k| / 254 per storing, three storings (as f16 above) */
    const float tol_rel = (float)((3.0 * N_TOK * (n_pairs + 2) * 1.4142 + 64.0) * ldexp(1.0, -24)) +
                          (tk == OXL_KV_F16    ? 3.0f * ldexpf(1.0f, -11)
                           : tk == OXL_KV_Q8_0 ? 3.0f / 254.0f
                                               : 0.0f);
    float max_abs = 0.0f;
    /* the kept positions: untouched */
    float d = max_diff(&shifted, 0, &fresh, 0, N_KEEP, &max_abs);
    cr_assert_leq(d, tol_rel * max_abs, "%s: kept rows differ by %g (max |k| %g)", path, d, max_abs);
    cr_assert_eq(memcmp(shifted.k, before.k, (size_t)N_KEEP * shifted.kv_dim * sizeof(float)), 0);
    /* the moved positions: rotation by delta == rotation at the new position */
    const int32_t n_moved = N_TOK - N_KEEP - N_DISCARD;
    d = max_diff(&shifted, N_KEEP, &fresh, N_KEEP, n_moved, &max_abs);
    cr_assert_gt(max_abs, 0.0f);
    cr_assert_leq(d, tol_rel * max_abs, "%s: shifted K differs from fresh K by %g (tolerance %g, max |k| %g)", path, d,
                  tol_rel * max_abs, max_abs);
    /* the same rows moved without the re-rotation are far from the fresh ones: the check can fail */
    float d_unrotated = max_diff(&before, N_KEEP + N_DISCARD, &fresh, N_KEEP, n_moved, &max_abs);
    const float margin = tk == OXL_KV_Q8_0 ? 4.0f : 100.0f;
    cr_assert_gt(d_unrotated, margin * tol_rel * max_abs, "%s: moved rows without rotation differ by only %g", path,
                 d_unrotated);
    /* V rows: moved byte for byte */
    cr_assert_eq(memcmp(shifted.v, before.v, (size_t)N_KEEP * before.v_bytes), 0);
    cr_assert_eq(memcmp(shifted.v + (size_t)N_KEEP * before.v_bytes,
                        before.v + (size_t)(N_KEEP + N_DISCARD) * before.v_bytes, (size_t)n_moved * before.v_bytes),
                 0);

    /* decoding goes on after the shift, at the next position */
    decode(a, t, 1);
    cr_assert_eq(oxl_seq_n_past(a, 0), N_TOK - N_DISCARD + 1);
    const float *logits = oxl_get_logits(a, -1);
    cr_assert_not_null(logits);
    for (int32_t i = 0; i < oxl_model_n_vocab(m); i++) {
        cr_assert(isfinite(logits[i]));
    }

    rows_free(&before);
    rows_free(&shifted);
    rows_free(&fresh);
    oxl_ctx_free(a);
    oxl_ctx_free(b);
    oxl_model_free(m);
}

/* llama (normal RoPE, pairs (2i, 2i+1)), head_dim 8: 4 pairs */
Test(seq_shift, llama_norm_rope_f32) { check_shift(MODELS "stories260K.gguf", OXL_KV_F32, 4); }
Test(seq_shift, llama_norm_rope_f16) { check_shift(MODELS "stories260K.gguf", OXL_KV_F16, 4); }
/* gemma3 (head_dim 32) with a q8_0 K cache: rows dequantized, rotated, quantized back (no Hadamard
 * rotation around them: it needs head_dim a multiple of 64) */
Test(seq_shift, gemma3_q8_0_cache) { check_shift(ARCH "gemma3.gguf", OXL_KV_Q8_0, 16); }
/* qwen2 (NeoX RoPE, pairs (i, i + n_rot/2)) */
Test(seq_shift, qwen2_neox_rope) { check_shift(ARCH "qwen2.gguf", OXL_KV_F32, 64); }
/* gemma3: layer 0 is a sliding-window layer with its own RoPE base, q/k norms before RoPE */
Test(seq_shift, gemma3_swa_rope) { check_shift(ARCH "gemma3.gguf", OXL_KV_F32, 64); }
/* llama3: rope_freqs frequency divisors */
Test(seq_shift, llama3_rope_freqs) { check_shift(ARCH "llama3.gguf", OXL_KV_F32, 64); }

Test(seq_shift, bad_arguments_leave_the_sequence) {
    oxl_model *m = load(MODELS "stories260K.gguf");
    oxl_ctx *ctx = new_ctx(m, OXL_KV_F32);
    oxl_token t[N_TOK];
    tokens_for(m, t, N_TOK);
    decode(ctx, t, 10);
    rows before = layer0(ctx, t);
    struct {
        int32_t seq, p0, p1, delta;
        const char *msg;
    } cases[] = {
        {1, 5, 10, -2, "sequence 1 outside 0..0"},
        {-1, 5, 10, -2, "sequence -1 outside 0..0"},
        {0, 5, 9, -2, "p1 9 is not the sequence's n_past 10"},
        {0, 11, 10, -2, "p0 11 outside 0..10"},
        {0, 5, 10, 2, "delta 2 > 0 would leave positions 5..6 empty"},
        {0, 5, 10, -6, "delta -6 moves position 5 below 0"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        oxl_error err = {0};
        cr_assert_eq(oxl_seq_add(ctx, cases[i].seq, cases[i].p0, cases[i].p1, cases[i].delta, &err), -1);
        cr_assert(strstr(err.msg, cases[i].msg), "case %zu: '%s' lacks '%s'", i, err.msg, cases[i].msg);
        cr_assert_eq(oxl_seq_n_past(ctx, 0), 10);
    }
    rows after = layer0(ctx, t);
    cr_assert_eq(memcmp(before.k, after.k, (size_t)10 * before.kv_dim * sizeof(float)), 0);
    /* delta 0 changes nothing; p0 == p1 drops the positions before p0 (a truncation) */
    oxl_error err = {0};
    cr_assert_eq(oxl_seq_add(ctx, 0, 4, 10, 0, &err), 0, "%s", err.msg);
    cr_assert_eq(oxl_seq_n_past(ctx, 0), 10);
    cr_assert_eq(oxl_seq_add(ctx, 0, 10, 10, -3, &err), 0, "%s", err.msg);
    cr_assert_eq(oxl_seq_n_past(ctx, 0), 7);
    rows_free(&before);
    rows_free(&after);
    oxl_ctx_free(ctx);
    oxl_model_free(m);
}

/* The models llama.cpp cannot shift either (llama_memory_can_shift false), and those not done here. */
static void check_refused(const char *path, const char *msg) {
    oxl_model *m = load(path);
    oxl_error err = {0};
    oxl_ctx_params cp = oxl_ctx_default_params();
    cp.n_ctx = 32;
    cp.n_threads = 2;
    oxl_ctx *ctx = oxl_ctx_new(m, &cp, &err);
    cr_assert_not_null(ctx, "%s", err.msg);
    cr_assert_eq(oxl_ctx_can_shift(ctx, &err), -1, "%s: shift allowed", path);
    cr_assert(strstr(err.msg, msg), "%s: '%s' lacks '%s'", path, err.msg, msg);
    oxl_token t[8];
    tokens_for(m, t, 8);
    cr_assert_eq(oxl_decode(ctx, t, 8, false, &err), 0, "%s", err.msg);
    memset(&err, 0, sizeof err);
    cr_assert_eq(oxl_seq_add(ctx, 0, 6, 8, -2, &err), -1);
    cr_assert(strstr(err.msg, msg), "%s: '%s' lacks '%s'", path, err.msg, msg);
    cr_assert_eq(oxl_seq_n_past(ctx, 0), 8);
    oxl_ctx_free(ctx);
    oxl_model_free(m);
}

Test(seq_shift, refused_recurrent) { check_refused(ARCH "mamba.gguf", "recurrent state"); }
Test(seq_shift, refused_hybrid) { check_refused(ARCH "jamba.gguf", "recurrent state"); }
Test(seq_shift, refused_mrope) { check_refused(ARCH "qwen2vl.gguf", "M-RoPE"); }
Test(seq_shift, refused_latent_attention) { check_refused(ARCH "deepseek2.gguf", "latent attention"); }
Test(seq_shift, refused_shared_kv) { check_refused(ARCH "gemma3n.gguf", "not supported for architecture gemma3n"); }
