/* olmoe, ernie4_5-moe, glm4moe, hunyuan-dense, hunyuan-moe and minimax-m2 (golden/arch/): the prompt
 * in several passes against llama.cpp's logits (the golden runner decodes it in one), and load-time
 * errors on damaged files naming the key or tensor; glm4moe's NextN/MTP block is not read. */
#include "model.h"

#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ARCH_DIR OXL_SOURCE_DIR "/golden/arch/"

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

static unsigned char *read_model(const char *id, size_t *size) {
    char path[512];
    snprintf(path, sizeof path, ARCH_DIR "%s.gguf", id);
    return read_file(path, size);
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

/* The offset of the value of key (after its name and its u32 value type). */
static size_t key_value(const unsigned char *buf, size_t size, const char *key) {
    return find_gguf_str(buf, size, key) + 8 + strlen(key) + 4;
}

static oxl_model *load_buffer(const unsigned char *buf, size_t size, oxl_error *err) {
    oxl_gguf *g = oxl_gguf_open_memory(buf, size, "patched.gguf", err);
    cr_assert_not_null(g, "the patched file must stay a valid GGUF: %s", err->msg);
    return oxl_model_from_gguf(g, err);
}

/* Loads the patched buffer and expects the load to fail with a message containing want. */
static void expect_load_error(const unsigned char *buf, size_t size, const char *want) {
    oxl_error err = {0};
    oxl_model *m = load_buffer(buf, size, &err);
    cr_expect_null(m, "the model loaded; expected: %s", want);
    oxl_model_free(m);
    cr_expect(strstr(err.msg, want) != NULL, "message '%s' does not name '%s'", err.msg, want);
}

/* max|Δ|/range over the golden's prompt rows, the prompt decoded in passes of n_batch tokens, with
 * the model m (NULL: id's file); *n_argmax_diff counts rows whose argmax differs. */
static double prompt_in_passes(const char *id, oxl_model *m, int32_t n_batch, int *n_argmax_diff) {
    char path[512];
    oxl_error err = {0};
    snprintf(path, sizeof path, ARCH_DIR "%s.logits.gguf", id);
    oxl_gguf *g = oxl_gguf_open(path, &err);
    cr_assert_not_null(g, "%s", err.msg);
    const oxl_gguf_tensor *tt = oxl_gguf_find_tensor(g, "tokens"), *tl = oxl_gguf_find_tensor(g, "logits");
    cr_assert(tt && tl, "%s: tokens/logits missing", path);
    const bool own = m == NULL;
    if (own) {
        snprintf(path, sizeof path, ARCH_DIR "%s.gguf", id);
        oxl_model_params mp = oxl_model_default_params();
        m = oxl_model_load(path, &mp, &err);
        cr_assert_not_null(m, "%s", err.msg);
    }
    const int32_t n_tok = (int32_t)tt->ne[0], n_vocab = oxl_model_n_vocab(m);
    cr_assert_eq(tl->ne[0], n_vocab);
    oxl_ctx_params cp = oxl_ctx_default_params();
    cp.n_ctx = n_tok;
    cp.n_batch = n_batch;
    cp.n_threads = 2;
    cp.type_k = cp.type_v = OXL_KV_F32; /* as llama.cpp ran the goldens */
    cp.flash_attn = OXL_FLASH_ATTN_OFF;
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
                const double d = fabs((double)ours[i] - want[i]);
                max_abs = d > max_abs || isnan(d) ? d : max_abs;
                a = ours[i] > ours[a] ? i : a;
                b = want[i] > want[b] ? i : b;
            }
            const double rel = max_abs / (double)(hi - lo);
            worst = rel > worst || isnan(rel) ? rel : worst;
            *n_argmax_diff += a != b;
        }
    }
    oxl_ctx_free(ctx);
    if (own) {
        oxl_model_free(m);
    }
    oxl_gguf_close(g);
    return worst;
}

/* ---- the prompt in several passes (the KV cache read back, routing per pass) ------------- */

Test(arch_moe3, prompt_in_passes_of_five) {
    /* bounds: the files' lines in golden/arch/tolerances.tsv (one-batch measurements x 3) */
    static const struct {
        const char *id;
        double bound;
    } cases[] = {{"olmoe", 1.0e-06},         {"ernie4_5-moe", 1.6e-06}, {"glm4moe", 1.7e-06},
                 {"hunyuan-dense", 1.1e-06}, {"hunyuan-moe", 1.2e-06},  {"minimax-m2", 1.4e-06}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        int diff;
        const double worst = prompt_in_passes(cases[i].id, NULL, 5, &diff);
        cr_log_info("%s: passes of 5 max|Δ|/range %.2e (bound %.1e), %d argmax differences", cases[i].id, worst,
                    cases[i].bound, diff);
        cr_expect_leq(worst, cases[i].bound, "%s: passes of 5 max|Δ|/range %.2e (bound %.1e)", cases[i].id, worst,
                      cases[i].bound);
        cr_expect_eq(diff, 0, "%s: %d argmax differences", cases[i].id, diff);
    }
}

/* ---- glm4moe's NextN/MTP block ----------------------------------------------------------- */

/* Renaming every tensor of blk.3 (the MTP block) away leaves the model loadable with the same logits:
 * llama.cpp never runs that block. */
Test(arch_moe3, glm4moe_mtp_block_is_not_read) {
    size_t size;
    unsigned char *buf = read_model("glm4moe", &size);
    int renamed = 0;
    for (size_t i = 0; i + 14 <= size; i++) {
        uint64_t n;
        memcpy(&n, buf + i, 8);
        if (n > 6 && n < 64 && i + 8 + n <= size && !memcmp(buf + i + 8, "blk.3.", 6)) {
            buf[i + 8 + 4] = '9'; /* "blk.9.": a block beyond block_count */
            renamed++;
        }
    }
    cr_assert_eq(renamed, 23, "blk.3 tensors renamed: %d", renamed);
    oxl_error err = {0};
    oxl_model *m = load_buffer(buf, size, &err);
    cr_assert_not_null(m, "%s", err.msg);
    cr_expect_eq(m->hp.n_layer, 3);
    int diff;
    const double worst = prompt_in_passes("glm4moe", m, 48, &diff);
    cr_expect_leq(worst, 1.7e-06, "max|Δ|/range %.2e without the MTP block", worst);
    cr_expect_eq(diff, 0);
    oxl_model_free(m);
    free(buf);
}

/* ---- load errors ------------------------------------------------------------------------- */

Test(arch_moe3, glm4moe_nextn_layers_not_below_block_count) {
    size_t size;
    unsigned char *buf = read_model("glm4moe", &size);
    const size_t at = key_value(buf, size, "glm4moe.nextn_predict_layers");
    const uint32_t four = 4;
    memcpy(buf + at, &four, 4);
    expect_load_error(buf, size, "glm4moe.nextn_predict_layers = 4 must be below block_count = 4");
    free(buf);
}

/* rope.dimension_sections (M-RoPE in llama.cpp's graph) is refused: the file's
 * attention.head_count_kv (u32 2, a name of the same length) renamed into it. */
Test(arch_moe3, glm4moe_mrope_sections_are_refused) {
    size_t size;
    unsigned char *buf = read_model("glm4moe", &size);
    const char *key = "glm4moe.attention.head_count_kv", *as = "glm4moe.rope.dimension_sections";
    cr_assert_eq(strlen(key), strlen(as));
    memcpy(buf + find_gguf_str(buf, size, key) + 8, as, strlen(as));
    expect_load_error(buf, size, "glm4moe.rope.dimension_sections (M-RoPE, vision variant) is unsupported");
    free(buf);
}

Test(arch_moe3, minimax_m2_missing_selection_bias_is_named) {
    size_t size;
    unsigned char *buf = read_model("minimax-m2", &size);
    const char *name = "blk.1.exp_probs_b.bias";
    buf[find_gguf_str(buf, size, name) + 8 + strlen(name) - 1] = 'X';
    expect_load_error(buf, size, "missing tensor 'blk.1.exp_probs_b.bias'");
    free(buf);
}

Test(arch_moe3, minimax_m2_gating_out_of_range_is_named) {
    size_t size;
    unsigned char *buf = read_model("minimax-m2", &size);
    const uint32_t seven = 7;
    memcpy(buf + key_value(buf, size, "minimax-m2.expert_gating_func"), &seven, 4);
    expect_load_error(buf, size, "minimax-m2.expert_gating_func = 7 is not 1 (softmax), 2 (sigmoid)");
    free(buf);
}

Test(arch_moe3, hunyuan_negative_rope_alpha_is_named) {
    size_t size;
    unsigned char *buf = read_model("hunyuan-dense", &size);
    const float alpha = -4.0f;
    memcpy(buf + key_value(buf, size, "hunyuan-dense.rope.scaling.alpha"), &alpha, 4);
    expect_load_error(buf, size, "hunyuan-dense.rope.scaling.alpha = -4 must be positive");
    free(buf);
}

Test(arch_moe3, ernie4_5_moe_layer_step_is_named) {
    size_t size;
    unsigned char *buf = read_model("ernie4_5-moe", &size);
    const uint32_t two = 2;
    memcpy(buf + key_value(buf, size, "ernie4_5-moe.interleave_moe_layer_step"), &two, 4);
    expect_load_error(buf, size, "ernie4_5-moe.interleave_moe_layer_step = 2 is unsupported");
    free(buf);
}

Test(arch_moe3, olmoe_missing_q_norm_is_named) {
    size_t size;
    unsigned char *buf = read_model("olmoe", &size);
    const char *name = "blk.1.attn_q_norm.weight";
    buf[find_gguf_str(buf, size, name) + 8 + strlen(name) - 1] = 'X';
    expect_load_error(buf, size, "missing tensor 'blk.1.attn_q_norm.weight'");
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
Test(arch_moe3, hyper_parameter_and_tensor_table_flips_are_safe, .timeout = 600) {
    static const char *const ids[] = {"olmoe", "ernie4_5-moe", "glm4moe", "hunyuan-dense", "hunyuan-moe", "minimax-m2"};
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
