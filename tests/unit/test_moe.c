/* Mixture-of-experts, latent-attention and recurrent architectures beyond the golden runner: load
 * errors naming router, expert, MLA and SSM tensors; per-expert batching of the MoE block (one
 * dispatch per expert and layer in a prefill, counted in the context); recurrent state per sequence
 * (several sequences in one batch equal separate runs, clearing a sequence restarts it). Reference
 * values are llama.cpp's logits in golden/arch/. */
#include "context.h"
#include "model.h"

#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ARCH_DIR OXL_SOURCE_DIR "/golden/arch/"

/* ---- helpers ----------------------------------------------------------------------------- */

typedef struct golden {
    oxl_gguf *g;
    const oxl_token *tokens; /* [n_tok] prompt */
    int32_t n_tok;
    const oxl_token *greedy; /* [n_greedy] llama.cpp's greedy continuation */
    int32_t n_greedy;
    const float *logits; /* (n_vocab, n_tok) */
} golden;

static golden open_golden(const char *id) {
    char path[512];
    oxl_error err = {0};
    snprintf(path, sizeof path, ARCH_DIR "%s.logits.gguf", id);
    golden gd = {.g = oxl_gguf_open(path, &err)};
    cr_assert_not_null(gd.g, "%s", err.msg);
    const oxl_gguf_tensor *tt = oxl_gguf_find_tensor(gd.g, "tokens");
    const oxl_gguf_tensor *tl = oxl_gguf_find_tensor(gd.g, "logits");
    const oxl_gguf_tensor *tg = oxl_gguf_find_tensor(gd.g, "greedy");
    cr_assert(tt && tl && tg, "%s: tokens/logits/greedy missing", path);
    gd.tokens = tt->data;
    gd.n_tok = (int32_t)tt->ne[0];
    gd.greedy = tg->data;
    gd.n_greedy = (int32_t)tg->ne[0];
    gd.logits = tl->data;
    return gd;
}

static oxl_model *load(const char *id) {
    char path[512];
    oxl_error err = {0};
    snprintf(path, sizeof path, ARCH_DIR "%s.gguf", id);
    oxl_model_params mp = oxl_model_default_params();
    oxl_model *m = oxl_model_load(path, &mp, &err);
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

static int32_t argmax(const float *x, int32_t n) {
    int32_t a = 0;
    for (int32_t i = 1; i < n; i++) {
        a = x[i] > x[a] ? i : a;
    }
    return a;
}

/* ---- load errors ------------------------------------------------------------------------- */

static unsigned char *read_model(const char *id, size_t *size) {
    char path[512];
    snprintf(path, sizeof path, ARCH_DIR "%s.gguf", id);
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

/* Renames tensor `name` in place (same length) so the loader no longer finds it. */
static void hide_tensor(unsigned char *buf, size_t size, const char *name) {
    buf[after_gguf_str(buf, size, name) - 1] ^= 0x20;
}

/* Sets dimension d of tensor `name` (its info record) to v. */
static void set_dim(unsigned char *buf, size_t size, const char *name, int d, int64_t v) {
    const size_t at = after_gguf_str(buf, size, name);
    uint32_t n_dims;
    memcpy(&n_dims, buf + at, 4);
    cr_assert(d < (int)n_dims);
    memcpy(buf + at + 4 + 8 * (size_t)d, &v, 8);
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

Test(moe_load, missing_router_is_named) {
    size_t size;
    unsigned char *buf = read_model("mixtral", &size);
    hide_tensor(buf, size, "blk.1.ffn_gate_inp.weight");
    expect_load_error(buf, size, "missing tensor 'blk.1.ffn_gate_inp.weight'");
    free(buf);
}

Test(moe_load, wrong_expert_count_is_named) {
    size_t size;
    unsigned char *buf = read_model("mixtral", &size);
    set_dim(buf, size, "blk.0.ffn_up_exps.weight", 2, 3); /* 4 experts: make it 3 */
    expect_load_error(buf, size, "tensor 'blk.0.ffn_up_exps.weight' has shape (64, 128, 3, 1); expected (64, 128, 4)");
    free(buf);
}

Test(moe_load, router_shape_is_named) {
    size_t size;
    unsigned char *buf = read_model("qwen2moe", &size);
    set_dim(buf, size, "blk.1.ffn_gate_inp.weight", 1, 3);
    expect_load_error(buf, size, "tensor 'blk.1.ffn_gate_inp.weight' has shape (64, 3, 1, 1); expected (64, 4)");
    free(buf);
}

Test(moe_load, missing_shared_expert_gate_is_named) {
    size_t size;
    unsigned char *buf = read_model("qwen2moe", &size);
    hide_tensor(buf, size, "blk.0.ffn_gate_inp_shexp.weight");
    expect_load_error(buf, size, "missing tensor 'blk.0.ffn_gate_inp_shexp.weight'");
    free(buf);
}

Test(moe_load, missing_expert_bias_is_named) {
    size_t size;
    unsigned char *buf = read_model("gpt-oss", &size);
    hide_tensor(buf, size, "blk.1.ffn_down_exps.bias");
    expect_load_error(buf, size, "missing tensor 'blk.1.ffn_down_exps.bias'");
    free(buf);
}

Test(moe_load, missing_mla_tensor_is_named) {
    size_t size;
    unsigned char *buf = read_model("deepseek2", &size);
    hide_tensor(buf, size, "blk.2.attn_k_b.weight");
    expect_load_error(buf, size, "missing tensor 'blk.2.attn_k_b.weight'");
    free(buf);
}

Test(moe_load, missing_ssm_tensor_is_named) {
    size_t size;
    unsigned char *buf = read_model("mamba", &size);
    hide_tensor(buf, size, "blk.1.ssm_conv1d.weight");
    expect_load_error(buf, size, "missing tensor 'blk.1.ssm_conv1d.weight'");
    free(buf);
}

Test(moe_load, ssm_norm_shape_is_named) {
    size_t size;
    unsigned char *buf = read_model("mamba2", &size);
    set_dim(buf, size, "blk.0.ssm_norm.weight", 0, 32); /* groups of 64: make them 32 */
    expect_load_error(buf, size, "tensor 'blk.0.ssm_norm.weight' has shape (32, 2, 1, 1); expected (64, 2)");
    free(buf);
}

Test(moe_load, missing_jamba_dt_norm_is_named) {
    size_t size;
    unsigned char *buf = read_model("jamba", &size);
    hide_tensor(buf, size, "blk.2.ssm_dt_norm.weight");
    expect_load_error(buf, size, "missing tensor 'blk.2.ssm_dt_norm.weight'");
    free(buf);
}

/* ---- per-expert batching ----------------------------------------------------------------- */

/* A 64-token prefill on mixtral (2 layers, 4 experts, top-2): the golden prompt then llama.cpp's
 * greedy continuation. Every expert runs once per layer on a block of several tokens, and the first
 * 48 rows still match llama.cpp's logits. */
Test(moe_batching, mixtral_prefill_dispatches_each_expert_once_per_layer) {
    golden gd = open_golden("mixtral");
    oxl_model *m = load("mixtral");
    const int32_t n = gd.n_tok + gd.n_greedy, n_vocab = oxl_model_n_vocab(m);
    cr_assert_eq(n, 64);
    oxl_token tokens[64];
    memcpy(tokens, gd.tokens, sizeof(oxl_token) * (size_t)gd.n_tok);
    memcpy(tokens + gd.n_tok, gd.greedy, sizeof(oxl_token) * (size_t)gd.n_greedy);
    oxl_ctx *ctx = new_ctx(m, n, n, 1);
    oxl_error err = {0};
    cr_assert_eq(oxl_decode(ctx, tokens, n, true, &err), 0, "%s", err.msg);
    const oxl_moe_stats *st = &ctx->moe_stats;
    const int32_t n_layer = 2, n_expert = 4, k = 2;
    cr_expect_eq(st->n_dispatch, n_layer * n_expert, "dispatches %lld", (long long)st->n_dispatch);
    cr_expect_eq(st->n_matmul, 3 * n_layer * n_expert);
    cr_expect_eq(st->n_tokens, (int64_t)n * k * n_layer);
    cr_expect_gt(st->min_tokens, 1, "an expert ran on a single token");
    for (int32_t j = 0; j < gd.n_tok; j++) {
        const float *ours = oxl_get_logits(ctx, j), *want = gd.logits + (size_t)j * n_vocab;
        cr_expect_leq(rel_diff(ours, want, n_vocab), 1e-3, "row %d", j);
        cr_expect_eq(argmax(ours, n_vocab), argmax(want, n_vocab), "row %d", j);
    }
    oxl_ctx_free(ctx);
    oxl_model_free(m);
    oxl_gguf_close(gd.g);
}

/* Token by token the same model dispatches once per token, layer and selected expert, and its
 * greedy continuation is llama.cpp's. */
Test(moe_batching, mixtral_decode_one_token_per_pass) {
    golden gd = open_golden("mixtral");
    oxl_model *m = load("mixtral");
    const int32_t n_vocab = oxl_model_n_vocab(m);
    oxl_ctx *ctx = new_ctx(m, gd.n_tok + gd.n_greedy, gd.n_tok, 1);
    oxl_error err = {0};
    cr_assert_eq(oxl_decode(ctx, gd.tokens, gd.n_tok, false, &err), 0, "%s", err.msg);
    const int64_t prefill = ctx->moe_stats.n_dispatch;
    cr_expect_eq(prefill, 2 * 4);
    oxl_token next = (oxl_token)argmax(oxl_get_logits(ctx, -1), n_vocab);
    for (int32_t i = 0; i < gd.n_greedy; i++) {
        cr_expect_eq(next, gd.greedy[i], "greedy step %d", i);
        cr_assert_eq(oxl_decode(ctx, &next, 1, false, &err), 0, "%s", err.msg);
        next = (oxl_token)argmax(oxl_get_logits(ctx, -1), n_vocab);
    }
    cr_expect_eq(ctx->moe_stats.n_dispatch - prefill, (int64_t)gd.n_greedy * 2 * 2);
    cr_expect_eq(ctx->moe_stats.min_tokens, 1);
    oxl_ctx_free(ctx);
    oxl_model_free(m);
    oxl_gguf_close(gd.g);
}

/* ---- recurrent state per sequence -------------------------------------------------------- */

/* Sequence 0 is the golden prompt, sequence 1 the same tokens in reverse order. Both in one batch,
 * interleaved token by token, give sequence 0 llama.cpp's logits and sequence 1 the logits of a
 * separate single-sequence run. */
static void two_sequences_in_one_batch(const char *id) {
    golden gd = open_golden(id);
    oxl_model *m = load(id);
    const int32_t n = gd.n_tok, n_vocab = oxl_model_n_vocab(m);
    oxl_token rev[64];
    for (int32_t i = 0; i < n; i++) {
        rev[i] = gd.tokens[n - 1 - i];
    }
    /* sequence 1 alone */
    oxl_ctx *solo = new_ctx(m, n, n, 1);
    oxl_error err = {0};
    cr_assert_eq(oxl_decode(solo, rev, n, true, &err), 0, "%s", err.msg);
    float *want1 = malloc(sizeof(float) * (size_t)n_vocab * n);
    for (int32_t j = 0; j < n; j++) {
        memcpy(want1 + (size_t)j * n_vocab, oxl_get_logits(solo, j), sizeof(float) * (size_t)n_vocab);
    }
    oxl_ctx_free(solo);

    /* both, interleaved, in passes of 32 tokens (so each pass holds 16 tokens of each) */
    oxl_ctx *ctx = new_ctx(m, n, 32, 2);
    oxl_token tok[128];
    int32_t pos[128], seq[128];
    int8_t keep[128];
    for (int32_t i = 0; i < n; i++) {
        tok[2 * i] = gd.tokens[i], pos[2 * i] = i, seq[2 * i] = 0, keep[2 * i] = 1;
        tok[2 * i + 1] = rev[i], pos[2 * i + 1] = i, seq[2 * i + 1] = 1, keep[2 * i + 1] = 1;
    }
    oxl_batch b = {.n_tokens = 2 * n, .token = tok, .pos = pos, .seq_id = seq, .logits = keep};
    cr_assert_eq(oxl_decode_batch(ctx, &b, &err), 0, "%s", err.msg);
    for (int32_t j = 0; j < n; j++) {
        const float *s0 = oxl_get_logits(ctx, 2 * j), *s1 = oxl_get_logits(ctx, 2 * j + 1);
        const float *ref0 = gd.logits + (size_t)j * n_vocab, *ref1 = want1 + (size_t)j * n_vocab;
        cr_expect_leq(rel_diff(s0, ref0, n_vocab), 1e-3, "%s seq 0 row %d", id, j);
        cr_expect_eq(argmax(s0, n_vocab), argmax(ref0, n_vocab), "%s seq 0 row %d", id, j);
        cr_expect_leq(rel_diff(s1, ref1, n_vocab), 1e-5, "%s seq 1 row %d", id, j);
        cr_expect_eq(argmax(s1, n_vocab), argmax(ref1, n_vocab), "%s seq 1 row %d", id, j);
    }

    /* clearing sequence 1 restarts it: the golden prompt then gives llama.cpp's logits there too;
     * a partial truncation of a recurrent sequence is refused (its length stays) */
    oxl_seq_truncate(ctx, 1, 5);
    cr_expect_eq(oxl_seq_n_past(ctx, 1), n);
    oxl_seq_truncate(ctx, 1, 0);
    cr_expect_eq(oxl_seq_n_past(ctx, 1), 0);
    for (int32_t i = 0; i < n; i++) {
        pos[i] = i, seq[i] = 1, keep[i] = 1;
    }
    b = (oxl_batch){.n_tokens = n, .token = gd.tokens, .pos = pos, .seq_id = seq, .logits = keep};
    cr_assert_eq(oxl_decode_batch(ctx, &b, &err), 0, "%s", err.msg);
    for (int32_t j = 0; j < n; j++) {
        const float *ours = oxl_get_logits(ctx, j), *ref = gd.logits + (size_t)j * n_vocab;
        cr_expect_leq(rel_diff(ours, ref, n_vocab), 1e-3, "%s cleared seq 1 row %d", id, j);
    }
    free(want1);
    oxl_ctx_free(ctx);
    oxl_model_free(m);
    oxl_gguf_close(gd.g);
}

Test(ssm_state, mamba_sequences_in_one_batch_equal_separate_runs) { two_sequences_in_one_batch("mamba"); }
Test(ssm_state, mamba2_sequences_in_one_batch_equal_separate_runs) { two_sequences_in_one_batch("mamba2"); }
Test(ssm_state, jamba_sequences_in_one_batch_equal_separate_runs) { two_sequences_in_one_batch("jamba"); }

/* ---- gated delta-net hybrids (qwen35, qwen3next) ----------------------------------------- */

Test(ssm_state, qwen35_sequences_in_one_batch_equal_separate_runs) { two_sequences_in_one_batch("qwen35"); }
Test(ssm_state, qwen3next_sequences_in_one_batch_equal_separate_runs) { two_sequences_in_one_batch("qwen3next"); }

/* Sets the u32 value of key `key` (type then value follow its name). */
static void set_u32_key(unsigned char *buf, size_t size, const char *key, uint32_t v) {
    const size_t at = after_gguf_str(buf, size, key);
    uint32_t type;
    memcpy(&type, buf + at, 4);
    cr_assert_eq(type, 4u, "key '%s' is not u32", key); /* GGUF_TYPE_UINT32 */
    memcpy(buf + at + 4, &v, 4);
}

Test(moe_load, missing_delta_net_tensor_is_named) {
    size_t size;
    unsigned char *buf = read_model("qwen3next", &size);
    hide_tensor(buf, size, "blk.1.ssm_ba.weight");
    expect_load_error(buf, size, "missing tensor 'blk.1.ssm_ba.weight'");
    free(buf);
}

Test(moe_load, delta_net_norm_shape_is_named) {
    size_t size;
    unsigned char *buf = read_model("qwen35", &size);
    set_dim(buf, size, "blk.2.ssm_norm.weight", 0, 8); /* heads of 16: make it 8 */
    expect_load_error(buf, size, "tensor 'blk.2.ssm_norm.weight' has shape (8, 1, 1, 1); expected (16)");
    free(buf);
}

Test(moe_load, gated_attention_query_shape_is_named) {
    size_t size;
    unsigned char *buf = read_model("qwen35moe", &size);
    set_dim(buf, size, "blk.1.attn_q.weight", 1, 256); /* query without its gate half */
    expect_load_error(buf, size, "tensor 'blk.1.attn_q.weight' has shape (64, 256, 1, 1); expected (64, 512)");
    free(buf);
}

Test(moe_load, delta_net_heads_out_of_range_are_named) {
    size_t size;
    unsigned char *buf = read_model("qwen35", &size);
    set_u32_key(buf, size, "qwen35.ssm.time_step_rank", 3); /* 3 value heads over 2 key heads */
    expect_load_error(buf, size, "time_step_rank 3 (value heads, <= 4096) must be a multiple of group_count 2");
    free(buf);
}

/* ---- hybrids (arch/hybrid.c) ------------------------------------------------------------- */

/* The recurrent state of the hybrids: LFM2's conv-only state (short convolutions), Nemotron-H's
 * Mamba-2 beside attention and MLP blocks, Falcon-H1's attention and Mamba-2 in every layer, Granite
 * 4.0-H's Mamba-2 beside attention with experts. */
Test(ssm_state, lfm2_sequences_in_one_batch_equal_separate_runs) { two_sequences_in_one_batch("lfm2"); }
Test(ssm_state, nemotron_h_sequences_in_one_batch_equal_separate_runs) { two_sequences_in_one_batch("nemotron_h"); }
Test(ssm_state, falcon_h1_sequences_in_one_batch_equal_separate_runs) { two_sequences_in_one_batch("falcon-h1"); }
Test(ssm_state, granitehybrid_sequences_in_one_batch_equal_separate_runs) {
    two_sequences_in_one_batch("granitehybrid");
}

Test(moe_load, missing_lfm2_shortconv_tensor_is_named) {
    size_t size;
    unsigned char *buf = read_model("lfm2", &size);
    hide_tensor(buf, size, "blk.1.shortconv.conv.weight");
    expect_load_error(buf, size, "missing tensor 'blk.1.shortconv.conv.weight'");
    free(buf);
}

/* Falcon-H1's pre-FFN norm has no .weight suffix; the error names it as the file must spell it. */
Test(moe_load, missing_falcon_h1_ffn_norm_is_named) {
    size_t size;
    unsigned char *buf = read_model("falcon-h1", &size);
    hide_tensor(buf, size, "blk.1.ffn_norm");
    expect_load_error(buf, size, "missing tensor 'blk.1.ffn_norm'");
    free(buf);
}

/* Nemotron-H's MLP width comes from the per-layer feed_forward_length (128 on layer 1). */
Test(moe_load, nemotron_h_mlp_shape_is_named) {
    size_t size;
    unsigned char *buf = read_model("nemotron_h", &size);
    set_dim(buf, size, "blk.1.ffn_up.weight", 1, 96);
    expect_load_error(buf, size, "tensor 'blk.1.ffn_up.weight' has shape (64, 96, 1, 1); expected (64, 128)");
    free(buf);
}

/* The golden prompt in passes of n_batch tokens (the recurrent state and the cache carried from pass
 * to pass), flash attention on or off: the worst max|Δ|/range of a row against llama.cpp's logits
 * and the number of rows whose argmax differs. */
static double hybrid_prompt(const char *id, oxl_flash_attn fa, int32_t n_batch, int *n_argmax_diff) {
    golden gd = open_golden(id);
    oxl_model *m = load(id);
    const int32_t n = gd.n_tok, n_vocab = oxl_model_n_vocab(m);
    oxl_error err = {0};
    oxl_ctx_params cp = oxl_ctx_default_params();
    cp.n_ctx = n;
    cp.n_batch = n_batch;
    cp.n_threads = 2;
    cp.type_k = cp.type_v = OXL_KV_F32;
    cp.flash_attn = fa;
    oxl_ctx *ctx = oxl_ctx_new(m, &cp, &err);
    cr_assert_not_null(ctx, "%s", err.msg);
    double worst = 0.0;
    *n_argmax_diff = 0;
    for (int32_t done = 0; done < n; done += n_batch) {
        const int32_t nb = n - done < n_batch ? n - done : n_batch;
        cr_assert_eq(oxl_decode(ctx, gd.tokens + done, nb, true, &err), 0, "%s", err.msg);
        for (int32_t j = 0; j < nb; j++) {
            const float *ours = oxl_get_logits(ctx, j), *want = gd.logits + (size_t)(done + j) * n_vocab;
            const double d = rel_diff(ours, want, n_vocab);
            worst = d > worst || isnan(d) ? d : worst;
            *n_argmax_diff += argmax(ours, n_vocab) != argmax(want, n_vocab);
        }
    }
    oxl_ctx_free(ctx);
    oxl_model_free(m);
    oxl_gguf_close(gd.g);
    return worst;
}

/* Bounds: 3 x the worst measured value, at least 1e-6 (measured, flash off / on: lfm2 6.09e-07 /
 * 5.20e-07, granitehybrid 1.23e-07 / 1.40e-07, nemotron_h 2.93e-07 / 2.77e-07, falcon-h1 3.11e-07 /
 * 3.12e-07). */
Test(ssm_state, hybrids_in_passes_of_5_and_with_flash_attention) {
    static const struct {
        const char *id;
        double bound;
    } cases[] = {
        {"lfm2", 1.9e-6},
        {"granitehybrid", 1.0e-6},
        {"nemotron_h", 1.0e-6},
        {"falcon-h1", 1.0e-6},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        for (int fa = 0; fa <= 1; fa++) {
            int n_diff;
            const double w = hybrid_prompt(cases[i].id, fa ? OXL_FLASH_ATTN_ON : OXL_FLASH_ATTN_OFF, 5, &n_diff);
            cr_log_info("%s (flash %d): passes of 5 max|Δ|/range %.2e, %d argmax differences", cases[i].id, fa, w,
                        n_diff);
            cr_expect_leq(w, cases[i].bound, "%s (flash %d): passes of 5 max|Δ|/range %.2e (bound %.1e)", cases[i].id,
                          fa, w, cases[i].bound);
            cr_expect_eq(n_diff, 0, "%s (flash %d): %d argmax differences", cases[i].id, fa, n_diff);
        }
    }
}
