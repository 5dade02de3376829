/* The dense decoder architectures against llama.cpp's logits (golden/arch/), on the paths the golden
 * runner does not take: flash attention (with sliding windows, ALiBi and soft-caps), f16 KV caches,
 * prompts split over several passes; and load-time errors on damaged files naming what is wrong. */
#include "model.h"

#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ARCH_DIR OXL_SOURCE_DIR "/golden/arch/"

/* ---- parity on other attention paths ----------------------------------------------------- */

/* Runs the golden's prompt through id's model in passes of n_batch tokens and returns the largest
 * max|Δ|/range over the prompt rows against llama.cpp's logits; counts argmax differences. */
static double run_prompt(const char *id, oxl_flash_attn fa, oxl_kv_type kv, int32_t n_batch, int *n_argmax_diff) {
    char path[512];
    oxl_error err = {0};
    snprintf(path, sizeof path, ARCH_DIR "%s.logits.gguf", id);
    oxl_gguf *g = oxl_gguf_open(path, &err);
    cr_assert_not_null(g, "%s", err.msg);
    const oxl_gguf_tensor *tt = oxl_gguf_find_tensor(g, "tokens");
    const oxl_gguf_tensor *tl = oxl_gguf_find_tensor(g, "logits");
    cr_assert(tt && tl, "%s: tokens/logits missing", path);
    snprintf(path, sizeof path, ARCH_DIR "%s.gguf", id);
    oxl_model_params mp = oxl_model_default_params();
    oxl_model *m = oxl_model_load(path, &mp, &err);
    cr_assert_not_null(m, "%s", err.msg);
    const int32_t n_tok = (int32_t)tt->ne[0], n_vocab = oxl_model_n_vocab(m);
    cr_assert_eq(tl->ne[0], n_vocab);
    oxl_ctx_params cp = oxl_ctx_default_params();
    cp.n_ctx = n_tok;
    cp.n_batch = n_batch;
    cp.n_threads = 2;
    cp.flash_attn = fa;
    cp.type_k = cp.type_v = kv;
    oxl_ctx *ctx = oxl_ctx_new(m, &cp, &err);
    cr_assert_not_null(ctx, "%s", err.msg);
    const oxl_token *tokens = tt->data;
    const float *ref = tl->data;
    double worst = 0.0;
    *n_argmax_diff = 0;
    for (int32_t done = 0; done < n_tok; done += n_batch) {
        const int32_t nb = n_tok - done < n_batch ? n_tok - done : n_batch;
        cr_assert_eq(oxl_decode(ctx, tokens + done, nb, true, &err), 0, "%s", err.msg);
        for (int32_t j = 0; j < nb; j++) {
            const float *ours = oxl_get_logits(ctx, j), *want = ref + (size_t)(done + j) * n_vocab;
            float lo = want[0], hi = want[0];
            double max_abs = 0.0;
            int32_t a = 0, b = 0;
            for (int32_t i = 0; i < n_vocab; i++) {
                lo = fminf(lo, want[i]);
                hi = fmaxf(hi, want[i]);
                max_abs = fmax(max_abs, fabs((double)ours[i] - want[i]));
                a = ours[i] > ours[a] ? i : a;
                b = want[i] > want[b] ? i : b;
            }
            worst = fmax(worst, max_abs / (double)(hi - lo));
            *n_argmax_diff += a != b;
        }
    }
    oxl_ctx_free(ctx);
    oxl_model_free(m);
    oxl_gguf_close(g);
    return worst;
}

/* Models whose masks or scores go beyond plain causal attention, and the feature each carries. */
static const char *const mask_models[] = {
    "gemma2",  /* sliding window on alternate layers, attention soft-cap, final soft-cap */
    "gemma3",  /* sliding window, per-layer RoPE bases */
    "cohere2", /* sliding window with RoPE, global layers without */
    "olmo3",   /* sliding window, YaRN on the global layer */
    "bloom",   /* ALiBi with 6 heads */
    "phi3",    /* LongRoPE short factors, attn_factor */
    "gpt-oss", /* attention sinks, sliding window, YaRN */
    "deepseek2-v3", /* latent attention: one 40-wide KV head, YaRN-scaled softmax */
    "jamba",   /* attention beside recurrent layers */
};

Test(arch_attention, flash_f32_kv_matches_llama_cpp) {
    for (size_t i = 0; i < sizeof mask_models / sizeof mask_models[0]; i++) {
        int n_diff;
        const double rel = run_prompt(mask_models[i], OXL_FLASH_ATTN_ON, OXL_KV_F32, 48, &n_diff);
        cr_expect_leq(rel, 1e-3, "%s: flash attention max|Δ|/range %g", mask_models[i], rel);
        cr_expect_eq(n_diff, 0, "%s: flash attention: %d argmax differences", mask_models[i], n_diff);
    }
}

/* An f16 cache rounds keys and values (relative 5e-4), so logits move by about that much. */
Test(arch_attention, f16_kv_both_paths_stay_close) {
    for (size_t i = 0; i < sizeof mask_models / sizeof mask_models[0]; i++) {
        for (int fa = 0; fa <= 1; fa++) {
            int n_diff;
            const double rel = run_prompt(mask_models[i], fa ? OXL_FLASH_ATTN_ON : OXL_FLASH_ATTN_OFF, OXL_KV_F16,
                                          48, &n_diff);
            cr_expect_leq(rel, 1e-2, "%s (flash %d): f16 KV max|Δ|/range %g", mask_models[i], fa, rel);
        }
    }
}

/* Passes of 5 tokens: the windows and ALiBi distances must reach back into the cache. */
Test(arch_attention, prompt_in_several_passes) {
    for (size_t i = 0; i < sizeof mask_models / sizeof mask_models[0]; i++) {
        for (int fa = 0; fa <= 1; fa++) {
            int n_diff;
            const double rel = run_prompt(mask_models[i], fa ? OXL_FLASH_ATTN_ON : OXL_FLASH_ATTN_OFF, OXL_KV_F32, 5,
                                          &n_diff);
            cr_expect_leq(rel, 1e-3, "%s (flash %d): passes of 5 max|Δ|/range %g", mask_models[i], fa, rel);
            cr_expect_eq(n_diff, 0, "%s (flash %d): %d argmax differences", mask_models[i], fa, n_diff);
        }
    }
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

/* The byte offset of GGUF string s (u64 length then bytes) in the buffer. */
static size_t find_gguf_str(const unsigned char *buf, size_t size, const char *s) {
    const uint64_t n = strlen(s);
    for (size_t i = 0; i + 8 + n <= size; i++) {
        if (memcmp(buf + i, &n, 8) == 0 && memcmp(buf + i + 8, s, n) == 0) {
            return i;
        }
    }
    cr_assert_fail("string '%s' not in the file", s);
    return 0;
}

/* Loads the patched buffer and expects the load to fail with a message containing want. */
static void expect_load_error(const unsigned char *buf, size_t size, const char *want) {
    oxl_error err = {0};
    oxl_gguf *g = oxl_gguf_open_memory(buf, size, "patched.gguf", &err);
    cr_assert_not_null(g, "the patched file must stay a valid GGUF: %s", err.msg);
    oxl_model *m = oxl_model_from_gguf(g, &err);
    cr_expect_null(m, "the model loaded; expected: %s", want);
    oxl_model_free(m);
    cr_expect(strstr(err.msg, want) != NULL, "message '%s' does not name '%s'", err.msg, want);
}

Test(arch_load, missing_tensor_is_named) {
    size_t size;
    unsigned char *buf = read_model("gpt2", &size);
    const size_t at = find_gguf_str(buf, size, "blk.1.ffn_up.bias");
    buf[at + 8 + strlen("blk.1.ffn_up.bias") - 1] = 'X'; /* "blk.1.ffn_up.biaX" */
    expect_load_error(buf, size, "missing tensor 'blk.1.ffn_up.bias'");
    free(buf);
}

Test(arch_load, wrong_shape_is_named) {
    size_t size;
    unsigned char *buf = read_model("qwen3", &size);
    const char *name = "blk.0.attn_q_norm.weight"; /* (head_dim = 32): make it (16) */
    const size_t at = find_gguf_str(buf, size, name) + 8 + strlen(name);
    uint32_t n_dims;
    memcpy(&n_dims, buf + at, 4);
    cr_assert_eq(n_dims, 1);
    const int64_t ne0 = 16;
    memcpy(buf + at + 4, &ne0, 8);
    expect_load_error(buf, size, "tensor 'blk.0.attn_q_norm.weight' has shape (16, 1, 1, 1); expected (32)");
    free(buf);
}

Test(arch_load, missing_key_is_named) {
    size_t size;
    unsigned char *buf = read_model("gpt2", &size);
    const char *key = "gpt2.attention.layer_norm_epsilon";
    buf[find_gguf_str(buf, size, key) + 8 + strlen(key) - 1] = 'X';
    expect_load_error(buf, size, "missing required key 'gpt2.attention.layer_norm_epsilon'");
    free(buf);
}

Test(arch_load, unsupported_rope_scaling_is_named) {
    size_t size;
    unsigned char *buf = read_model("gemma3", &size);
    const size_t key = find_gguf_str(buf, size, "gemma3.rope.scaling.type");
    const size_t val = key + 8 + strlen("gemma3.rope.scaling.type") + 4; /* after the value type */
    cr_assert_eq(memcmp(buf + val + 8, "linear", 6), 0);
    memcpy(buf + val + 8, "cubic!", 6);
    expect_load_error(buf, size, "gemma3.rope.scaling.type = 'cubic!' is not one of none, linear, yarn, longrope");
    free(buf);
}

Test(arch_load, head_count_not_dividing_is_named) {
    size_t size;
    unsigned char *buf = read_model("qwen2", &size); /* 4 heads, 2 KV heads: make it 3 KV heads */
    const char *key = "qwen2.attention.head_count_kv";
    const size_t val = find_gguf_str(buf, size, key) + 8 + strlen(key) + 4;
    const uint32_t three = 3;
    memcpy(buf + val, &three, 4);
    expect_load_error(buf, size, "qwen2.attention.head_count = 4 is not a multiple of head_count_kv = 3");
    free(buf);
}

/* ---- damaged files ----------------------------------------------------------------------- */

/* Loads the buffer; when that works, decodes two tokens. Returns 1 when the model loaded. */
static int try_load_and_run(const unsigned char *buf, size_t size) {
    oxl_error err = {0};
    oxl_gguf *g = oxl_gguf_open_memory(buf, size, "damaged.gguf", &err);
    if (!g) {
        cr_assert(err.msg[0] != '\0', "a rejected file must come with a message");
        return 0;
    }
    oxl_model *m = oxl_model_from_gguf(g, &err);
    if (!m) {
        cr_assert(err.msg[0] != '\0', "a rejected model must come with a message");
        return 0;
    }
    oxl_ctx_params cp = oxl_ctx_default_params();
    cp.n_ctx = 8;
    cp.n_threads = 1;
    oxl_ctx *ctx = oxl_ctx_new(m, &cp, &err);
    if (ctx) {
        oxl_token toks[2] = {1, oxl_model_n_vocab(m) - 1};
        oxl_decode(ctx, toks, 2, false, &err);
        oxl_ctx_free(ctx);
    }
    oxl_model_free(m);
    return 1;
}

/* Every byte of the architecture's keys (type and value) and of the tensor table, inverted one at a
 * time: the model is refused with a message or loads and decodes without crashing. */
Test(arch_damage, hyper_parameter_and_tensor_table_flips_are_safe, .timeout = 600) {
    static const char *const ids[] = {"gpt2",    "gemma2",       "bloom",   "phi3",   "olmo3", "stablelm2-12b",
                                      "qwen3",   "falcon-40b",   "mixtral", "grok",   "gpt-oss", "deepseek2-v3",
                                      "mamba2",  "jamba",        "qwen2vl"};
    for (size_t k = 0; k < sizeof ids / sizeof ids[0]; k++) {
        size_t size;
        unsigned char *buf = read_model(ids[k], &size);
        oxl_error err = {0};
        oxl_gguf *g = oxl_gguf_open_memory(buf, size, ids[k], &err);
        cr_assert_not_null(g, "%s", err.msg);
        const char *arch = NULL;
        cr_assert_eq(oxl_gguf_get_str(g, "general.architecture", &arch, &err), 1);
        /* byte ranges: [type, value) of each `<arch>.` key (12 bytes cover scalars and string lengths),
         * then the tensor table up to the data section */
        size_t lo[64], hi[64], n = 0;
        for (int64_t i = 0; i < oxl_gguf_n_kv(g) && n < 63; i++) {
            const char *key = oxl_gguf_key(g, i);
            if (strncmp(key, arch, strlen(arch)) == 0) {
                lo[n] = find_gguf_str(buf, size, key) + 8 + strlen(key);
                hi[n] = lo[n] + 12;
                n++;
            }
        }
        lo[n] = find_gguf_str(buf, size, oxl_gguf_tensor_at(g, 0)->name);
        hi[n] = oxl_gguf_data_offset(g);
        n++;
        oxl_gguf_close(g);
        unsigned char *copy = malloc(size);
        memcpy(copy, buf, size);
        int flips = 0, loaded = 0;
        for (size_t r = 0; r < n; r++) {
            for (size_t i = lo[r]; i < hi[r] && i < size; i++) {
                copy[i] = (unsigned char)(buf[i] ^ 0xFF);
                loaded += try_load_and_run(copy, size);
                flips++;
                copy[i] = buf[i];
            }
        }
        /* flips of float values and of unused bytes still load; flips of counts, shapes and names do not */
        cr_expect(loaded > 0 && loaded < flips, "%s: loaded %d of %d damaged files", ids[k], loaded, flips);
        cr_log_info("%s: %d flips, %d loaded", ids[k], flips, loaded);
        free(copy);
        free(buf);
    }
}

/* A context longer than gpt2's 256 learned positions (llama.cpp aborts there) decodes without
 * reading past the table; the model reports the limit. */
Test(arch_damage, context_past_learned_positions_is_safe) {
    oxl_error err = {0};
    oxl_model_params mp = oxl_model_default_params();
    oxl_model *m = oxl_model_load(ARCH_DIR "gpt2.gguf", &mp, &err);
    cr_assert_not_null(m, "%s", err.msg);
    cr_expect_eq(m->hp.n_pos_max, 256);
    oxl_ctx_params cp = oxl_ctx_default_params();
    cp.n_ctx = 300;
    cp.n_threads = 1;
    oxl_ctx *ctx = oxl_ctx_new(m, &cp, &err);
    cr_assert_not_null(ctx, "%s", err.msg);
    oxl_token toks[300];
    for (int i = 0; i < 300; i++) {
        toks[i] = 3 + i % 500;
    }
    cr_assert_eq(oxl_decode(ctx, toks, 300, false, &err), 0, "%s", err.msg);
    const float *l = oxl_get_logits(ctx, -1);
    for (int32_t i = 0; i < oxl_model_n_vocab(m); i++) {
        cr_assert(isfinite(l[i]));
    }
    oxl_ctx_free(ctx);
    oxl_model_free(m);
}
