/* The decoder mechanisms of smollm3, exaone4, mistral3 and llama4 that their 48-token goldens cannot
 * show, and their load errors:
 * - the attention temperature at the positions where its floor steps (llama.cpp's
 *   llm_graph_input_attn_temp::set_input: 1 + scale * ln(1 + floor((pos + offset) / floor_scale)));
 *   llama4's floor of 8192 is never reached by a golden;
 * - the chunked attention mask (LLAMA_SWA_TYPE_CHUNKED: a query at p sees floor(p / c) * c .. p)
 *   against attention computed here by hand, with a chunk small enough to cut the batch;
 * - flash attention and prompts split in passes of 5 tokens (the temperature, windows and chunks
 *   computed from cache positions), against llama.cpp's logits;
 * - llama4 files with a missing router, a router on a dense layer, or sliding_window = 0 are refused
 *   with a message naming the tensor or key. */
#include "attention.h"
#include "context.h"
#include "decoder.h"
#include "model.h"
#include "pool.h"

#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ARCH_DIR OXL_SOURCE_DIR "/golden/arch/"

/* ---- attention temperature --------------------------------------------------------------- */

Test(arch_nope, attention_temperature_steps_at_the_floor) {
    /* llama4 (llama-model: scale 0.1, offset 1, floor 8192): the first step is at pos 8191 */
    const oxl_attn_temp l4 = {.scale = 0.1f, .offset = 1.0f, .floor_scale = 8192};
    cr_expect_eq(oxl_attn_temp_scale(&l4, 0), 1.0f);
    cr_expect_eq(oxl_attn_temp_scale(&l4, 8190), 1.0f);
    cr_expect_float_eq(oxl_attn_temp_scale(&l4, 8191), 1.0f + 0.1f * (float)M_LN2, 1e-7);
    cr_expect_float_eq(oxl_attn_temp_scale(&l4, 16383), (float)(1.0 + 0.1 * log(3.0)), 1e-7);
    /* mistral3's golden (golden/arch/README.md: scale 0.5, floor 16): 1.347 for 16-31, 1.549 for 32-47 */
    const oxl_attn_temp m3 = {.scale = 0.5f, .offset = 0.0f, .floor_scale = 16};
    cr_expect_eq(oxl_attn_temp_scale(&m3, 15), 1.0f);
    cr_expect_float_eq(oxl_attn_temp_scale(&m3, 16), 1.3465736f, 1e-6);
    cr_expect_float_eq(oxl_attn_temp_scale(&m3, 31), 1.3465736f, 1e-6);
    cr_expect_float_eq(oxl_attn_temp_scale(&m3, 32), 1.5493061f, 1e-6);
    cr_expect_float_eq(oxl_attn_temp_scale(&m3, 47), 1.5493061f, 1e-6);
}

/* ---- chunked attention ------------------------------------------------------------------- */

enum { HD = 8, NT = 11, CHUNK = 4 };

/* Softmax attention of token j's query over keys lo .. j, by hand. */
static void attend_by_hand(const float *q, const float *k, const float *v, int32_t lo, int32_t j, float scale,
                           float *out) {
    double s[NT], max = -INFINITY, sum = 0.0;
    for (int32_t p = lo; p <= j; p++) {
        double dot = 0.0;
        for (int d = 0; d < HD; d++) {
            dot += (double)q[d] * k[p * HD + d];
        }
        s[p] = dot * scale;
        max = s[p] > max ? s[p] : max;
    }
    for (int32_t p = lo; p <= j; p++) {
        s[p] = exp(s[p] - max);
        sum += s[p];
    }
    for (int d = 0; d < HD; d++) {
        double acc = 0.0;
        for (int32_t p = lo; p <= j; p++) {
            acc += s[p] / sum * v[p * HD + d];
        }
        out[d] = (float)acc;
    }
}

static void check_chunked(bool flash) {
    float k[NT * HD], v[NT * HD], q[NT * HD], out[NT * HD], want[HD];
    int32_t pos[NT], seq[NT];
    for (int i = 0; i < NT * HD; i++) {
        k[i] = sinf(0.37f * (float)i + 0.1f);
        v[i] = cosf(0.23f * (float)i - 0.4f);
        q[i] = sinf(0.11f * (float)i * (float)i + 1.0f);
    }
    for (int32_t j = 0; j < NT; j++) {
        pos[j] = j;
        seq[j] = 0;
    }
    const oxl_kv_view kv = {.type_k = OXL_TYPE_F32,
                            .type_v = OXL_TYPE_F32,
                            .k = k,
                            .v = v,
                            .k_row = HD * sizeof(float),
                            .v_row = HD * sizeof(float),
                            .n_ctx = NT,
                            .n_tokens = NT,
                            .n_stream = NT,
                            .pos = pos,
                            .seq = seq};
    const oxl_attn_params p = {.n_head = 1, .n_head_kv = 1, .head_dim = HD, .scale = 0.35f, .n_chunk = CHUNK};
    oxl_pool *pool = oxl_pool_new(1, NULL);
    cr_assert_not_null(pool);
    float *scores = malloc((NT + HD) * sizeof(float) * 4);
    oxl_attention(pool, &kv, q, out, &p, flash, scores);
    for (int32_t j = 0; j < NT; j++) {
        attend_by_hand(q + j * HD, k, v, j / CHUNK * CHUNK, j, p.scale, want);
        for (int d = 0; d < HD; d++) {
            cr_expect(fabsf(out[j * HD + d] - want[d]) < 1e-5f, "%s: token %d dim %d: %g, by hand %g",
                      flash ? "flash" : "unfused", j, d, out[j * HD + d], want[d]);
        }
    }
    free(scores);
    oxl_pool_free(pool);
}

Test(arch_nope, chunked_mask_sees_the_query_chunk_only) {
    check_chunked(false);
    check_chunked(true);
}

/* ---- other attention paths --------------------------------------------------------------- */

/* The golden's prompt through id's model in passes of n_batch tokens: the largest max|Δ|/range of a
 * row against llama.cpp's logits, and the rows whose argmax differs, into *n_diff. */
static double run_prompt(const char *id, oxl_flash_attn fa, int32_t n_batch, int *n_diff) {
    char path[512];
    oxl_error err = {0};
    snprintf(path, sizeof path, ARCH_DIR "%s.logits.gguf", id);
    oxl_gguf *g = oxl_gguf_open(path, &err);
    cr_assert_not_null(g, "%s", err.msg);
    const oxl_gguf_tensor *tt = oxl_gguf_find_tensor(g, "tokens"), *tl = oxl_gguf_find_tensor(g, "logits");
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
    cp.type_k = cp.type_v = OXL_KV_F32;
    oxl_ctx *ctx = oxl_ctx_new(m, &cp, &err);
    cr_assert_not_null(ctx, "%s", err.msg);
    const oxl_token *tokens = tt->data;
    const float *ref = tl->data;
    double worst = 0.0;
    *n_diff = 0;
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
                const double d = fabs((double)ours[i] - want[i]);
                max_abs = d > max_abs || isnan(d) ? d : max_abs;
                a = ours[i] > ours[a] ? i : a;
                b = want[i] > want[b] ? i : b;
            }
            const double rel = max_abs / (double)(hi - lo);
            worst = rel > worst || isnan(rel) ? rel : worst;
            *n_diff += a != b;
        }
    }
    oxl_ctx_free(ctx);
    oxl_model_free(m);
    oxl_gguf_close(g);
    return worst;
}

/* Bounds on max|Δ|/range: max(3 x the worst measured, 1e-6) rounded up to two digits, the worst over
 * OXILLAMA_ISA = scalar, sse41, avx2, avx512bw and avx512vnni (all gave the same values, in
 * parentheses: flash one pass; passes of 5 flash off, on), as golden/README.md's "Tolerances". */
typedef struct nope_case {
    const char *id;
    double flash;     /* flash attention, one pass */
    double passes[2]; /* passes of 5 tokens (later passes read earlier positions from the cache), flash off / on */
} nope_case;

static const nope_case nope_models[] = {
    /* NoPE layer 3 (4.27e-07; 4.95e-07, 4.27e-07) */
    {"smollm3", 1.3e-6, {1.5e-6, 1.3e-6}},
    /* 48 sliding-window layers, 16 global NoPE layers (1.76e-06; 1.45e-06, 1.76e-06) */
    {"exaone4", 5.3e-6, {4.4e-6, 5.3e-6}},
    /* attention temperature steps at positions 16 and 32, YaRN (5.65e-07; 4.07e-07, 5.65e-07) */
    {"mistral3", 1.7e-6, {1.3e-6, 1.7e-6}},
    /* chunked layers, NoPE layer 3, expert input weighting (5.85e-07; 4.72e-07, 5.46e-07) */
    {"llama4", 1.8e-6, {1.5e-6, 1.7e-6}},
};

Test(arch_nope, flash_and_passes_match_llama_cpp) {
    for (size_t i = 0; i < sizeof nope_models / sizeof nope_models[0]; i++) {
        const nope_case *c = &nope_models[i];
        const struct {
            oxl_flash_attn fa;
            int32_t n_batch;
            double bound;
            const char *what;
        } runs[] = {{OXL_FLASH_ATTN_ON, 48, c->flash, "flash, one pass"},
                    {OXL_FLASH_ATTN_OFF, 5, c->passes[0], "passes of 5"},
                    {OXL_FLASH_ATTN_ON, 5, c->passes[1], "flash, passes of 5"}};
        for (size_t r = 0; r < sizeof runs / sizeof runs[0]; r++) {
            int n_diff;
            const double worst = run_prompt(c->id, runs[r].fa, runs[r].n_batch, &n_diff);
            cr_log_info("%s (%s): max|Δ|/range %.2e (bound %.1e), %d argmax differences", c->id, runs[r].what, worst,
                        runs[r].bound, n_diff);
            cr_expect_leq(worst, runs[r].bound, "%s (%s): max|Δ|/range %.2e (bound %.1e)", c->id, runs[r].what, worst,
                          runs[r].bound);
            cr_expect_eq(n_diff, 0, "%s (%s): %d argmax differences from llama.cpp", c->id, runs[r].what, n_diff);
        }
    }
}

/* ---- llama4 load errors ------------------------------------------------------------------ */

static unsigned char *read_file(const char *id, size_t *size) {
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

/* The offset of the bytes just after GGUF string s (u64 length, then the bytes). */
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

static void expect_refused(const unsigned char *buf, size_t size, const char *want) {
    oxl_error err = {0};
    oxl_gguf *g = oxl_gguf_open_memory(buf, size, "llama4-patched.gguf", &err);
    cr_assert_not_null(g, "the patched file must stay a valid GGUF: %s", err.msg);
    oxl_model *m = oxl_model_from_gguf(g, &err);
    cr_expect_null(m, "the model loaded; expected: %s", want);
    oxl_model_free(m);
    cr_expect(strstr(err.msg, want) != NULL, "message '%s' does not contain '%s'", err.msg, want);
}

Test(arch_nope, llama4_missing_router_is_named) {
    size_t size;
    unsigned char *buf = read_file("llama4", &size);
    buf[after_gguf_str(buf, size, "blk.3.ffn_gate_inp.weight") - 1] = 'X';
    expect_refused(buf, size,
                   "missing tensor 'blk.3.ffn_gate_inp.weight' (expert layer: llama4.interleave_moe_layer_step = 2)");
    free(buf);
}

Test(arch_nope, llama4_router_on_a_dense_layer_is_named) {
    size_t size;
    unsigned char *buf = read_file("llama4", &size);
    /* interleave_moe_layer_step 2 -> 4: layer 1 keeps its router but is now a dense layer */
    const size_t val = after_gguf_str(buf, size, "llama4.interleave_moe_layer_step") + 4;
    const uint32_t four = 4;
    memcpy(buf + val, &four, 4);
    expect_refused(buf, size,
                   "tensor 'blk.1.ffn_gate_inp.weight' on a dense layer (llama4.interleave_moe_layer_step = 4)");
    free(buf);
}

Test(arch_nope, llama4_sliding_window_zero_is_refused) {
    size_t size;
    unsigned char *buf = read_file("llama4", &size);
    const size_t val = after_gguf_str(buf, size, "llama4.attention.sliding_window") + 4;
    const uint32_t zero = 0;
    memcpy(buf + val, &zero, 4);
    expect_refused(buf, size, "llama4.attention.sliding_window = 0");
    free(buf);
}

/* ---- damaged files ----------------------------------------------------------------------- */

/* Loads the buffer; when that works, decodes two tokens. Returns 1 when the model loaded. */
static int load_and_run(const unsigned char *buf, size_t size) {
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

/* Every byte of the architecture's keys (type and value; and of the tensor table, but for the
 * 64-layer exaone4), inverted one at a time: refused with a message, or loads and decodes. */
Test(arch_nope, hyper_parameter_and_tensor_table_flips_are_safe, .timeout = 600) {
    static const char *const ids[] = {"smollm3", "mistral3", "llama4", "exaone4"};
    for (size_t k = 0; k < sizeof ids / sizeof ids[0]; k++) {
        size_t size;
        unsigned char *buf = read_file(ids[k], &size);
        oxl_error err = {0};
        oxl_gguf *g = oxl_gguf_open_memory(buf, size, ids[k], &err);
        cr_assert_not_null(g, "%s", err.msg);
        size_t lo[64], hi[64], n = 0;
        for (int64_t i = 0; i < oxl_gguf_n_kv(g) && n < 63; i++) {
            const char *key = oxl_gguf_key(g, i);
            if (strncmp(key, ids[k], strlen(ids[k])) == 0) {
                lo[n] = after_gguf_str(buf, size, key);
                hi[n] = lo[n] + 12; /* type, then a scalar or a string's length */
                n++;
            }
        }
        if (strcmp(ids[k], "exaone4") != 0) {
            lo[n] =
                after_gguf_str(buf, size, oxl_gguf_tensor_at(g, 0)->name) - 8 - strlen(oxl_gguf_tensor_at(g, 0)->name);
            hi[n] = oxl_gguf_data_offset(g);
            n++;
        }
        oxl_gguf_close(g);
        unsigned char *copy = malloc(size);
        memcpy(copy, buf, size);
        int flips = 0, loaded = 0;
        for (size_t r = 0; r < n; r++) {
            for (size_t i = lo[r]; i < hi[r] && i < size; i++) {
                copy[i] = (unsigned char)(buf[i] ^ 0xFF);
                loaded += load_and_run(copy, size);
                flips++;
                copy[i] = buf[i];
            }
        }
        cr_expect(loaded > 0 && loaded < flips, "%s: loaded %d of %d damaged files", ids[k], loaded, flips);
        cr_log_info("%s: %d flips, %d loaded", ids[k], flips, loaded);
        free(copy);
        free(buf);
    }
}
