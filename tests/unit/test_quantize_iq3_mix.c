/* The IQ3 ftypes' mix rules that synth-small (2 layers, 2 queries per KV head, no experts) does not
 * reach, as llama_tensor_get_type_impl (llama.cpp src/llama-quant.cpp) states them, and the
 * importance-matrix refusal of tensor_requires_imatrix (llama-quantize refuses IQ3_XS and IQ3_XXS
 * without one). synth-small's own outputs are checked byte for byte by quantize-cli-llama. */
#include "oxl_ftypes.h"
#include "quant_mix.h"
#include "quant_mix_test_util.h"
#include "quantize_model.h"

#include <criterion/criterion.h>

#include <string.h>

#define GOLDEN OXL_SOURCE_DIR "/golden/quantize/"

static const oxl_quant_tensor base[] = {
    {.name = "token_embd.weight", .type = OXL_TYPE_F32, .ne = {256, 512, 1, 1}},
    {.name = "output.weight", .type = OXL_TYPE_F32, .ne = {256, 512, 1, 1}},
    {.name = "blk.0.attn_v.weight", .type = OXL_TYPE_F32, .ne = {256, 64, 1, 1}},
    {.name = "blk.0.attn_output.weight", .type = OXL_TYPE_F32, .ne = {256, 256, 1, 1}},
    {.name = "blk.0.ffn_down.weight", .type = OXL_TYPE_F32, .ne = {512, 256, 1, 1}},
    {.name = "blk.1.ffn_down.weight", .type = OXL_TYPE_F32, .ne = {512, 256, 1, 1}},
    {.name = "blk.3.ffn_down.weight", .type = OXL_TYPE_F32, .ne = {512, 256, 1, 1}},
    {.name = "blk.0.attn_q.weight", .type = OXL_TYPE_F32, .ne = {256, 256, 1, 1}},
    {.name = "blk.0.attn_k.weight", .type = OXL_TYPE_F32, .ne = {256, 64, 1, 1}},
    {.name = "blk.0.ffn_gate.weight", .type = OXL_TYPE_F32, .ne = {256, 512, 1, 1}},
    {.name = "blk.1.ffn_gate.weight", .type = OXL_TYPE_F32, .ne = {256, 512, 1, 1}},
    {.name = "blk.0.ffn_up.weight", .type = OXL_TYPE_F32, .ne = {256, 512, 1, 1}},
    {.name = "blk.1.ffn_up.weight", .type = OXL_TYPE_F32, .ne = {256, 512, 1, 1}},
    {.name = "blk.2.ffn_up.weight", .type = OXL_TYPE_F32, .ne = {256, 512, 1, 1}},
    {.name = "blk.3.ffn_up.weight", .type = OXL_TYPE_F32, .ne = {256, 512, 1, 1}},
    {.name = "blk.4.ffn_up.weight", .type = OXL_TYPE_F32, .ne = {256, 512, 1, 1}},
    {.name = "blk.5.ffn_up.weight", .type = OXL_TYPE_F32, .ne = {256, 512, 1, 1}},
    {.name = "blk.6.ffn_up.weight", .type = OXL_TYPE_F32, .ne = {256, 512, 1, 1}},
    {.name = "blk.7.ffn_up.weight", .type = OXL_TYPE_F32, .ne = {256, 512, 1, 1}},
};
enum { N = sizeof base / sizeof base[0] };

/* the chosen type of each tensor of base, for ftype f on model m */
static void choose_n(const oxl_quant_model *m, const char *ftype, bool imatrix, oxl_quant_tensor t[N], int n) {
    oxl_quant_options o = {.ftype = quant_ftype_row(ftype),
                           .output_type = OXL_TYPE_COUNT,
                           .token_embd_type = OXL_TYPE_COUNT,
                           .has_imatrix = imatrix};
    memcpy(t, base, n * sizeof base[0]);
    oxl_quant_sort(t, n);
    oxl_error err = {{0}};
    cr_assert_geq(oxl_quant_choose_types(m, &o, t, n, &err), 0, "%s", err.msg);
}

static void choose(const oxl_quant_model *m, const char *ftype, bool imatrix, oxl_quant_tensor t[N]) {
    choose_n(m, ftype, imatrix, t, N);
}

#define EXPECT(t, name, type)                                                                                          \
    cr_expect_eq(quant_target_of(t, N, name), OXL_TYPE_##type, "%s: %d", name, (int)quant_target_of(t, N, name))

Test(quantize_iq3_mix, iq3_xs_and_iq3_s) {
    const oxl_quant_model m = {.arch = "llama", .n_layer = 8, .n_head = 8, .n_head_kv = 2};
    oxl_quant_tensor t[N];
    choose(&m, "IQ3_XS", true, t);
    EXPECT(t, "blk.0.attn_v.weight", Q4_K); /* 4 queries per KV head */
    EXPECT(t, "blk.0.attn_q.weight", IQ3_XXS);
    EXPECT(t, "blk.0.attn_k.weight", IQ3_XXS);
    EXPECT(t, "blk.0.ffn_gate.weight", IQ3_S); /* layers 1 .. 6 of 8 take IQ3_XXS */
    EXPECT(t, "blk.0.ffn_up.weight", IQ3_S);
    EXPECT(t, "blk.1.ffn_gate.weight", IQ3_XXS);
    EXPECT(t, "blk.6.ffn_up.weight", IQ3_XXS);
    EXPECT(t, "blk.7.ffn_up.weight", IQ3_S);
    EXPECT(t, "blk.0.ffn_down.weight", IQ3_S);
    EXPECT(t, "output.weight", Q6_K);
    choose(&m, "IQ3_S", false, t);
    EXPECT(t, "blk.0.attn_v.weight", Q4_K);
    EXPECT(t, "blk.0.attn_q.weight", IQ3_S);
    EXPECT(t, "blk.1.ffn_gate.weight", IQ3_S);
    const oxl_quant_model moe = {.arch = "llama", .n_layer = 8, .n_head = 8, .n_head_kv = 8, .n_expert = 8};
    choose(&moe, "IQ3_S", false, t);
    EXPECT(t, "blk.0.attn_output.weight", Q5_K);
    EXPECT(t, "blk.0.attn_v.weight", Q8_0);
}

Test(quantize_iq3_mix, iq3_m) {
    const oxl_quant_model m = {.arch = "llama", .n_layer = 8, .n_head = 8, .n_head_kv = 8};
    oxl_quant_tensor t[N];
    choose(&m, "IQ3_M", false, t);
    EXPECT(t, "blk.0.attn_v.weight", Q4_K);
    EXPECT(t, "blk.0.attn_output.weight", Q4_K);
    EXPECT(t, "blk.0.ffn_down.weight", Q4_K); /* the first n/8 layers */
    EXPECT(t, "blk.1.ffn_down.weight", IQ3_S);
    EXPECT(t, "blk.3.ffn_down.weight", IQ3_S);
    /* 8 experts: also the use_more_bits layers (1 + 3k after the first eighth: 3 of 8) */
    const oxl_quant_model moe = {.arch = "llama", .n_layer = 8, .n_head = 8, .n_head_kv = 8, .n_expert = 8};
    choose(&moe, "IQ3_M", false, t);
    EXPECT(t, "blk.1.ffn_down.weight", IQ3_S);
    EXPECT(t, "blk.3.ffn_down.weight", Q4_K);
    EXPECT(t, "blk.0.attn_output.weight", Q5_K);
}

Test(quantize_iq3_mix, iq3_xxs) {
    const oxl_quant_model m = {.arch = "llama", .n_layer = 8, .n_head = 8, .n_head_kv = 8};
    oxl_quant_tensor t[N];
    /* without an imatrix llama-quantize refuses any IQ3_XXS or IQ2_S tensor (see below), so these
     * rules only show on a model of the other tensors: the first 7 of base */
    choose_n(&m, "IQ3_XXS", false, t, 7);
    EXPECT(t, "blk.0.attn_v.weight", IQ3_S); /* no imatrix */
    EXPECT(t, "blk.0.ffn_down.weight", Q4_K);
    EXPECT(t, "blk.1.ffn_down.weight", Q3_K);
    EXPECT(t, "blk.0.attn_output.weight", IQ3_S);
    EXPECT(t, "output.weight", Q5_K);
    EXPECT(t, "token_embd.weight", IQ3_S);
    choose(&m, "IQ3_XXS", true, t);
    EXPECT(t, "blk.0.attn_q.weight", IQ2_S);
    EXPECT(t, "blk.0.attn_k.weight", IQ2_S);
    EXPECT(t, "blk.0.attn_output.weight", IQ3_S);
    EXPECT(t, "blk.1.ffn_gate.weight", IQ3_XXS);
    EXPECT(t, "output.weight", Q5_K);
    EXPECT(t, "token_embd.weight", IQ3_S);
    EXPECT(t, "blk.0.attn_v.weight", IQ3_XXS);
    EXPECT(t, "blk.0.ffn_down.weight", IQ3_XXS);
    const oxl_quant_model gqa = {.arch = "llama", .n_layer = 8, .n_head = 8, .n_head_kv = 2};
    choose(&gqa, "IQ3_XXS", true, t);
    EXPECT(t, "blk.0.attn_v.weight", Q4_K);
}

/* tensor_type_fallback: rows that are a multiple of 32 but not of 256 take IQ4_NL */
Test(quantize_iq3_mix, rows_not_of_256_fall_back_to_iq4_nl) {
    const oxl_quant_model m = {.arch = "llama", .n_layer = 1, .n_head = 2, .n_head_kv = 2};
    oxl_quant_options o = {
        .ftype = quant_ftype_row("IQ3_S"), .output_type = OXL_TYPE_COUNT, .token_embd_type = OXL_TYPE_COUNT};
    oxl_quant_tensor t[] = {{.name = "blk.0.attn_q.weight", .type = OXL_TYPE_F32, .ne = {96, 4, 1, 1}},
                            {.name = "blk.0.ffn_up.weight", .type = OXL_TYPE_F32, .ne = {48, 4, 1, 1}}};
    oxl_error err = {{0}};
    cr_assert_eq(oxl_quant_choose_types(&m, &o, t, 2, &err), 2, "%s", err.msg);
    cr_expect_eq(t[0].target, OXL_TYPE_IQ4_NL);
    cr_expect_eq(t[1].target, OXL_TYPE_F16); /* not even a multiple of 32 */
}

/* llama-quantize: "this quantization requires an imatrix!" for IQ3_XS without one (its attn_q,
 * attn_k and middle ffn_gate/ffn_up are IQ3_XXS) */
Test(quantize_iq3_mix, iq3_xs_refused_without_imatrix) {
    oxl_quantize_params p = {.ftype = oxl_ftype_find("IQ3_XS"),
                             .output_type = OXL_TYPE_COUNT,
                             .token_embd_type = OXL_TYPE_COUNT,
                             .n_threads = 1};
    cr_assert_not_null(p.ftype);
    oxl_error err = {{0}};
    cr_expect_eq(oxl_quantize_model(GOLDEN "synth-small-f32.gguf", "/nonexistent-dir/out.gguf", &p, NULL, &err), -1);
    cr_expect(strstr(err.msg, "importance matrix") && strstr(err.msg, "iq3_xxs"), "message: %s", err.msg);
    /* IQ3_XXS likewise (its first tensor in llama-quantize's order, attn_k, is IQ2_S) */
    p.ftype = oxl_ftype_find("IQ3_XXS");
    cr_assert_not_null(p.ftype);
    cr_expect_eq(oxl_quantize_model(GOLDEN "synth-small-f32.gguf", "/nonexistent-dir/out.gguf", &p, NULL, &err), -1);
    cr_expect(strstr(err.msg, "importance matrix") && strstr(err.msg, "iq2_s"), "message: %s", err.msg);
    /* IQ3_S and IQ3_M need none: only IQ3_XXS tensors do */
    const oxl_quant_model m = {.arch = "llama", .n_layer = 2, .n_head = 2, .n_head_kv = 2};
    oxl_quant_tensor t[N];
    choose(&m, "IQ3_M", false, t);
    for (int i = 0; i < N; i++) {
        cr_expect(!t[i].requires_imatrix, "%s", t[i].name);
    }
    choose(&m, "IQ3_XS", true, t);
    cr_expect(t[0].requires_imatrix == (t[0].target == OXL_TYPE_IQ3_XXS));
    int n_req = 0;
    for (int i = 0; i < N; i++) {
        n_req += t[i].requires_imatrix;
        cr_expect_eq(t[i].requires_imatrix, t[i].target == OXL_TYPE_IQ3_XXS, "%s", t[i].name);
    }
    cr_expect_gt(n_req, 0);
}
