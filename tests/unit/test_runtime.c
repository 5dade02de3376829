/* Runtime checks that need no reference numbers: the KV cache types llama.cpp refuses are refused
 * here with the same reasons (llama-context.cpp: a quantized V cache needs flash attention; a
 * quantized cache needs head sizes divisible by its block size), a decode step allocates nothing,
 * and a model read into memory (--no-mmap) computes exactly what the mapped one does.
 * How close the quantized and bf16 caches come to llama.cpp's is checked against its own runs by
 * the kv-quant ctest (tests/cli/check_kv_quant.sh). */
#include "alloc_probe.h"
#include "golden_quant.h"
#include "oxillama.h"
#include "oxl_blocks.h"
#include "quantize.h"

#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static oxl_model *load(const char *path, bool mmap) {
    oxl_error err = {0};
    oxl_model_params mp = oxl_model_default_params();
    mp.use_mmap = mmap;
    oxl_model *m = oxl_model_load(path, &mp, &err);
    cr_assert_not_null(m, "%s: %s", path, err.msg);
    return m;
}

static oxl_ctx_params params(oxl_kv_type k, oxl_kv_type v, oxl_flash_attn fa) {
    oxl_ctx_params cp = oxl_ctx_default_params();
    cp.n_ctx = 64;
    cp.n_threads = 2;
    cp.type_k = k;
    cp.type_v = v;
    cp.flash_attn = fa;
    return cp;
}

#define STORIES OXL_SOURCE_DIR "/models/stories260K.gguf"
/* qwen3 from the architecture goldens: head size 32, so q8_0 and q4_0 rows hold whole blocks */
#define QWEN3 OXL_SOURCE_DIR "/golden/arch/qwen3.gguf"

Test(kv_cache, quantized_v_needs_flash_attention) {
    oxl_model *m = load(QWEN3, true);
    oxl_error err = {0};
    oxl_ctx_params cp = params(OXL_KV_F16, OXL_KV_Q8_0, OXL_FLASH_ATTN_OFF);
    cr_assert_null(oxl_ctx_new(m, &cp, &err));
    cr_assert(strstr(err.msg, "V cache type q8_0 needs flash attention"), "%s", err.msg);
    /* every quantized V type; bf16 is not quantized (ggml_is_quantized), so it needs no flash */
    const oxl_kv_type quantized[] = {OXL_KV_Q4_0, OXL_KV_Q4_1, OXL_KV_Q5_0, OXL_KV_Q5_1, OXL_KV_IQ4_NL};
    for (size_t i = 0; i < sizeof quantized / sizeof quantized[0]; i++) {
        cp = params(OXL_KV_F16, quantized[i], OXL_FLASH_ATTN_OFF);
        cr_assert_null(oxl_ctx_new(m, &cp, &err), "V type %d without flash attention", (int)quantized[i]);
        cr_assert(strstr(err.msg, "needs flash attention"), "%s", err.msg);
    }
    cp = params(OXL_KV_BF16, OXL_KV_BF16, OXL_FLASH_ATTN_OFF);
    oxl_ctx *bf = oxl_ctx_new(m, &cp, &err);
    cr_assert_not_null(bf, "%s", err.msg);
    oxl_ctx_free(bf);
    /* a quantized K is fine without flash attention (K·q is a matrix product either way) */
    cp = params(OXL_KV_Q4_0, OXL_KV_F16, OXL_FLASH_ATTN_OFF);
    oxl_ctx *ctx = oxl_ctx_new(m, &cp, &err);
    cr_assert_not_null(ctx, "%s", err.msg);
    oxl_ctx_free(ctx);
    oxl_model_free(m);
}

Test(kv_cache, quantized_cache_needs_whole_blocks_per_head) {
    /* stories260K's heads are 8 wide; a q8_0 block is 32 */
    oxl_model *m = load(STORIES, true);
    oxl_error err = {0};
    oxl_ctx_params cp = params(OXL_KV_Q8_0, OXL_KV_F16, OXL_FLASH_ATTN_ON);
    cr_assert_null(oxl_ctx_new(m, &cp, &err));
    cr_assert(strstr(err.msg, "K cache type q8_0 needs a head size divisible by 32; the model's is 8"), "%s", err.msg);
    cp = params(OXL_KV_F16, OXL_KV_Q4_0, OXL_FLASH_ATTN_ON);
    cr_assert_null(oxl_ctx_new(m, &cp, &err));
    cr_assert(strstr(err.msg, "V cache type q4_0 needs a head size divisible by 32"), "%s", err.msg);
    cp = params(OXL_KV_F16, OXL_KV_IQ4_NL, OXL_FLASH_ATTN_ON);
    cr_assert_null(oxl_ctx_new(m, &cp, &err));
    cr_assert(strstr(err.msg, "V cache type iq4_nl needs a head size divisible by 32"), "%s", err.msg);
    /* bf16 has no blocks: any head size */
    cp = params(OXL_KV_BF16, OXL_KV_BF16, OXL_FLASH_ATTN_ON);
    oxl_ctx *bf = oxl_ctx_new(m, &cp, &err);
    cr_assert_not_null(bf, "%s", err.msg);
    oxl_ctx_free(bf);
    /* q8_1 (9) and q4_K (12) are ggml types but no cache type of llama.cpp's -ctk list */
    const int refused[] = {9, 12, 4, -1};
    for (size_t i = 0; i < sizeof refused / sizeof refused[0]; i++) {
        cp = params((oxl_kv_type)refused[i], OXL_KV_F16, OXL_FLASH_ATTN_ON);
        cr_assert_null(oxl_ctx_new(m, &cp, &err), "type %d", refused[i]);
        cr_assert(strstr(err.msg, "is not one of f32, f16, q4_0, q4_1, q5_0, q5_1, q8_0, iq4_nl, bf16"), "%s", err.msg);
    }
    oxl_model_free(m);
}

/* Generating a token allocates nothing: every buffer is sized when the context is made. */
static void decode_steps_allocate_nothing(const char *path, oxl_kv_type kv, oxl_flash_attn fa) {
    oxl_model *m = load(path, true);
    oxl_error err = {0};
    oxl_ctx_params cp = params(kv, kv, fa);
    oxl_ctx *ctx = oxl_ctx_new(m, &cp, &err);
    cr_assert_not_null(ctx, "%s", err.msg);
    const oxl_token prompt[] = {1, 403, 407, 261, 378};
    cr_assert_eq(oxl_decode(ctx, prompt, 5, false, &err), 0, "%s", err.msg);
    oxl_token t = 300;
    cr_assert_eq(oxl_decode(ctx, &t, 1, false, &err), 0, "%s", err.msg);
    oxl_probe_reset();
    for (int i = 0; i < 16; i++) {
        t = (oxl_token)(3 + (i * 37) % 500);
        cr_assert_eq(oxl_decode(ctx, &t, 1, false, &err), 0, "%s", err.msg);
        cr_assert_not_null(oxl_get_logits(ctx, -1));
    }
    cr_assert_eq(oxl_probe_largest(), 0, "a decode step allocated %zu bytes", oxl_probe_largest());
    oxl_ctx_free(ctx);
    oxl_model_free(m);
}

Test(kv_cache, decode_steps_allocate_nothing) {
    decode_steps_allocate_nothing(STORIES, OXL_KV_F16, OXL_FLASH_ATTN_ON);
    decode_steps_allocate_nothing(STORIES, OXL_KV_F32, OXL_FLASH_ATTN_OFF);
    decode_steps_allocate_nothing(QWEN3, OXL_KV_Q8_0, OXL_FLASH_ATTN_ON);
    decode_steps_allocate_nothing(QWEN3, OXL_KV_Q4_0, OXL_FLASH_ATTN_ON);
    decode_steps_allocate_nothing(QWEN3, OXL_KV_Q4_1, OXL_FLASH_ATTN_ON);
    decode_steps_allocate_nothing(QWEN3, OXL_KV_Q5_0, OXL_FLASH_ATTN_ON);
    decode_steps_allocate_nothing(QWEN3, OXL_KV_Q5_1, OXL_FLASH_ATTN_ON);
    decode_steps_allocate_nothing(QWEN3, OXL_KV_IQ4_NL, OXL_FLASH_ATTN_ON);
    decode_steps_allocate_nothing(STORIES, OXL_KV_BF16, OXL_FLASH_ATTN_ON);
    decode_steps_allocate_nothing(STORIES, OXL_KV_BF16, OXL_FLASH_ATTN_OFF);
}

/* The logits of a 5-token prompt and 4 single steps. */
static void run_logits(oxl_model *m, oxl_kv_type kv, float *out) {
    oxl_error err = {0};
    oxl_ctx_params cp = params(kv, kv, OXL_FLASH_ATTN_ON);
    oxl_ctx *ctx = oxl_ctx_new(m, &cp, &err);
    cr_assert_not_null(ctx, "%s", err.msg);
    const int32_t nv = oxl_model_n_vocab(m);
    const oxl_token prompt[] = {1, 85, 406, 80, 298};
    cr_assert_eq(oxl_decode(ctx, prompt, 5, true, &err), 0, "%s", err.msg);
    for (int i = 0; i < 5; i++) {
        memcpy(out + (size_t)i * nv, oxl_get_logits(ctx, i), sizeof(float) * (size_t)nv);
    }
    for (int i = 0; i < 4; i++) {
        const oxl_token t = (oxl_token)(159 + i);
        cr_assert_eq(oxl_decode(ctx, &t, 1, true, &err), 0, "%s", err.msg);
        memcpy(out + (size_t)(5 + i) * nv, oxl_get_logits(ctx, 0), sizeof(float) * (size_t)nv);
    }
    oxl_ctx_free(ctx);
}

Test(kv_cache, read_model_equals_mapped_model) {
    static float mapped[9 * 512], read[9 * 512];
    const oxl_kv_type kinds[] = {OXL_KV_F16, OXL_KV_Q8_0, OXL_KV_Q4_0};
    oxl_model *a = load(QWEN3, true), *b = load(QWEN3, false);
    cr_assert_eq(oxl_model_n_vocab(a), 512);
    for (int k = 0; k < 3; k++) {
        run_logits(a, kinds[k], mapped);
        run_logits(b, kinds[k], read);
        cr_assert(memcmp(mapped, read, sizeof mapped) == 0, "kv type %d: logits differ", (int)kinds[k]);
    }
    oxl_model_free(a);
    oxl_model_free(b);
}

/* The rows an iq4_nl cache stores are ggml's set_rows bytes: golden/quant/iq4_nl.set-rows.tsv holds
 * ggml-cpu's from_float for IQ4_NL (quantize_row_iq4_nl_ref) of each x row of golden/quant/iq4_nl.gguf.
 * A block whose values are all under GROUP_MAX_EPS gets scale 0 and ggml's codes from a scratch
 * buffer it never set (row 4 is all zeros): only the scale of such a block is compared. Those rows
 * are not what the weight quantizer (the file's q, llama-quantize's search) writes. */
Test(kv_cache, iq4_nl_rows_are_ggml_set_rows_bytes) {
    char path[4096];
    snprintf(path, sizeof path, "%s/golden/quant/iq4_nl.gguf", OXL_SOURCE_DIR);
    oxl_error err = {{0}};
    oxl_gguf *g = oxl_gguf_open(path, &err);
    cr_assert_not_null(g, "%s", err.msg);
    oxl_quant_golden qg;
    cr_assert_eq(oxl_quant_golden_read(g, &qg, &err), 0, "%s", err.msg);
    cr_assert(qg.type == OXL_TYPE_IQ4_NL && qg.ne0 % OXL_QK_IQ4_NL == 0);
    const size_t row = oxl_row_size(OXL_TYPE_IQ4_NL, qg.ne0);
    uint8_t *want = malloc(row), *got = malloc(row);
    cr_assert(want && got);
    snprintf(path, sizeof path, "%s/golden/quant/iq4_nl.set-rows.tsv", OXL_SOURCE_DIR);
    FILE *f = fopen(path, "r");
    cr_assert_not_null(f, "cannot open %s", path);
    char line[4096];
    int n_rows = 0, n_differ_from_q = 0, n_zero_blocks = 0;
    while (fgets(line, sizeof line, f) != NULL) {
        if (line[0] == '#') {
            continue;
        }
        char *hex;
        const long r = strtol(line, &hex, 10);
        cr_assert(r >= 0 && r < qg.nrows && *hex == '\t' && strlen(hex + 1) >= 2 * row, "%s: bad line", path);
        for (size_t i = 0; i < row; i++) {
            unsigned b;
            cr_assert_eq(sscanf(hex + 1 + 2 * i, "%2x", &b), 1);
            want[i] = (uint8_t)b;
        }
        const float *x = qg.x + r * qg.ne0;
        oxl_quantize_row_iq4_nl_ref(x, got, qg.ne0);
        for (int64_t ib = 0; ib < qg.ne0 / OXL_QK_IQ4_NL; ib++) {
            float amax = 0.0f;
            for (int j = 0; j < OXL_QK_IQ4_NL; j++) {
                amax = fmaxf(amax, fabsf(x[ib * OXL_QK_IQ4_NL + j]));
            }
            const size_t off = (size_t)ib * sizeof(oxl_block_iq4_nl);
            const size_t n = amax < 1e-15f ? sizeof(uint16_t) : sizeof(oxl_block_iq4_nl);
            n_zero_blocks += amax < 1e-15f;
            cr_expect(memcmp(got + off, want + off, n) == 0, "row %ld block %lld: bytes differ from ggml's", r,
                      (long long)ib);
        }
        n_differ_from_q += memcmp(want, (const uint8_t *)qg.q + r * row, row) != 0;
        n_rows++;
    }
    fclose(f);
    cr_assert_eq(n_rows, qg.nrows, "%s: %d rows", path, n_rows);
    cr_expect_gt(n_zero_blocks, 0, "no all-zero block reached");
    cr_expect_gt(n_differ_from_q, n_rows / 2, "only %d rows differ from the weight quantizer's", n_differ_from_q);
    free(want);
    free(got);
    oxl_gguf_close(g);
}
