/* The mix rules of the IQ1_S and IQ1_M ftypes, as llama_tensor_get_type_impl (llama.cpp
 * src/llama-quant.cpp) states them for its branch of the 1- and 2-bit I-quant ftypes, including
 * those synth-small (2 layers, 2 heads per KV head, no experts) does not reach: attn_v Q4_K with
 * n_head/n_head_kv >= 4 or >= 4 experts, else Q2_K, with no 70B or 8-expert change; attn_k Q4_K
 * with 8 experts; ffn_down Q2_K while the running index is below n_layer/8; attn_output IQ2_XXS, or
 * Q5_K with 8 experts; token_embd Q2_K; output Q5_K; rows that are not a multiple of 256 fall back
 * to IQ4_NL; without an importance matrix tensor_requires_imatrix refuses the file. */
#include "quant_mix.h"
#include "quant_mix_test_util.h"

#include <criterion/criterion.h>

#include <string.h>

static const oxl_quant_tensor base[] = {
    {.name = "token_embd.weight", .type = OXL_TYPE_F32, .ne = {256, 512, 1, 1}},
    {.name = "blk.0.attn_k.weight", .type = OXL_TYPE_F32, .ne = {256, 64, 1, 1}},
    {.name = "blk.0.attn_v.weight", .type = OXL_TYPE_F32, .ne = {256, 64, 1, 1}},
    {.name = "blk.0.attn_q.weight", .type = OXL_TYPE_F32, .ne = {256, 256, 1, 1}},
    {.name = "blk.0.attn_output.weight", .type = OXL_TYPE_F32, .ne = {256, 256, 1, 1}},
    {.name = "blk.0.ffn_down.weight", .type = OXL_TYPE_F32, .ne = {512, 256, 1, 1}},
    {.name = "blk.1.ffn_down.weight", .type = OXL_TYPE_F32, .ne = {512, 256, 1, 1}},
    {.name = "blk.1.ffn_up.weight", .type = OXL_TYPE_F32, .ne = {288, 256, 1, 1}},
    {.name = "blk.1.attn_norm.weight", .type = OXL_TYPE_F32, .ne = {256, 1, 1, 1}},
    {.name = "output.weight", .type = OXL_TYPE_F32, .ne = {256, 512, 1, 1}},
};
enum { N = sizeof base / sizeof base[0] };

static void choose(const oxl_quant_model *m, const oxl_quant_options *o, oxl_quant_tensor *t) {
    oxl_error err = {{0}};
    memcpy(t, base, sizeof base);
    oxl_quant_sort(t, N);
    cr_assert_geq(oxl_quant_choose_types(m, o, t, N, &err), 0, "%s", err.msg);
}

Test(quant_mix_iq1, the_rules_of_llama_quantize) {
    static const char *const names[] = {"IQ1_S", "IQ1_M"};
    static const oxl_type types[] = {OXL_TYPE_IQ1_S, OXL_TYPE_IQ1_M};
    for (int k = 0; k < 2; k++) {
        oxl_quant_tensor t[N];
        oxl_quant_model m = {.arch = "llama", .n_layer = 8, .n_head = 8, .n_head_kv = 8};
        oxl_quant_options o = {.ftype = quant_ftype_row(names[k]),
                               .output_type = OXL_TYPE_COUNT,
                               .token_embd_type = OXL_TYPE_COUNT,
                               .has_imatrix = true};
        cr_assert_not_null(o.ftype);
        cr_expect_eq(oxl_ftype_id(o.ftype), k == 0 ? 24u : 31u);
        choose(&m, &o, t);
        cr_expect_eq(quant_target_of(t, N, "token_embd.weight"), OXL_TYPE_Q2_K, "%s", names[k]);
        cr_expect_eq(quant_target_of(t, N, "blk.0.attn_k.weight"), types[k], "%s", names[k]);
        cr_expect_eq(quant_target_of(t, N, "blk.0.attn_v.weight"), OXL_TYPE_Q2_K, "%s", names[k]);
        cr_expect_eq(quant_target_of(t, N, "blk.0.attn_q.weight"), types[k], "%s", names[k]);
        cr_expect_eq(quant_target_of(t, N, "blk.0.attn_output.weight"), OXL_TYPE_IQ2_XXS, "%s", names[k]);
        cr_expect_eq(quant_target_of(t, N, "blk.0.ffn_down.weight"), OXL_TYPE_Q2_K, "%s", names[k]);
        cr_expect_eq(quant_target_of(t, N, "blk.1.ffn_down.weight"), types[k], "%s", names[k]);
        cr_expect_eq(quant_target_of(t, N, "blk.1.ffn_up.weight"), OXL_TYPE_IQ4_NL, "%s: rows of 288", names[k]);
        cr_expect_eq(quant_target_of(t, N, "blk.1.attn_norm.weight"), OXL_TYPE_F32, "%s", names[k]);
        cr_expect_eq(quant_target_of(t, N, "output.weight"), OXL_TYPE_Q5_K, "%s", names[k]);

        /* 4 queries per KV head: attn_v Q4_K, and a 70B model does not raise it to Q5_K */
        m.n_head_kv = 2;
        m.is_70b = true;
        choose(&m, &o, t);
        cr_expect_eq(quant_target_of(t, N, "blk.0.attn_v.weight"), OXL_TYPE_Q4_K, "%s", names[k]);
        m.n_head_kv = 8;
        m.is_70b = false;

        /* 4 experts: attn_v Q4_K; the rest as without experts */
        m.n_expert = 4;
        choose(&m, &o, t);
        cr_expect_eq(quant_target_of(t, N, "blk.0.attn_v.weight"), OXL_TYPE_Q4_K, "%s", names[k]);
        cr_expect_eq(quant_target_of(t, N, "blk.0.attn_k.weight"), types[k], "%s", names[k]);
        cr_expect_eq(quant_target_of(t, N, "blk.0.attn_output.weight"), OXL_TYPE_IQ2_XXS, "%s", names[k]);

        /* 8 experts: attn_k Q4_K (not Q8_0), attn_output Q5_K, attn_v still Q4_K (not Q8_0) */
        m.n_expert = 8;
        choose(&m, &o, t);
        cr_expect_eq(quant_target_of(t, N, "blk.0.attn_k.weight"), OXL_TYPE_Q4_K, "%s", names[k]);
        cr_expect_eq(quant_target_of(t, N, "blk.0.attn_output.weight"), OXL_TYPE_Q5_K, "%s", names[k]);
        cr_expect_eq(quant_target_of(t, N, "blk.0.attn_v.weight"), OXL_TYPE_Q4_K, "%s", names[k]);
    }
}

Test(quant_mix_iq1, refuses_without_an_importance_matrix) {
    oxl_quant_tensor t[N];
    oxl_quant_model m = {.arch = "llama", .n_layer = 8, .n_head = 8, .n_head_kv = 8};
    oxl_quant_options o = {
        .ftype = quant_ftype_row("IQ1_M"), .output_type = OXL_TYPE_COUNT, .token_embd_type = OXL_TYPE_COUNT};
    memcpy(t, base, sizeof base);
    oxl_quant_sort(t, N);
    oxl_error err = {{0}};
    cr_expect_eq(oxl_quant_choose_types(&m, &o, t, N, &err), -1);
    cr_expect(strstr(err.msg, "importance matrix") != NULL, "message: %s", err.msg);
    /* token_embd and output need none: a model of those alone is written */
    oxl_quant_tensor two[] = {base[0], base[N - 1]};
    cr_expect_geq(oxl_quant_choose_types(&m, &o, two, 2, &err), 0, "%s", err.msg);
    cr_expect_eq(two[0].target, OXL_TYPE_Q2_K);
    cr_expect_eq(two[1].target, OXL_TYPE_Q5_K);
}
