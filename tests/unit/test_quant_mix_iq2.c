/* The mix rules of IQ2_XXS, IQ2_XS, IQ2_S and IQ2_M that synth-small (2 layers, 2 queries per KV
 * head, no experts; checked byte for byte by quantize_cli/iq_ftypes_equal_llama_quantize) does not
 * reach, as the branch of llama_tensor_get_type_impl (llama.cpp src/llama-quant.cpp) for the 1/2-bit
 * I-quant ftypes states them, with tensor_type_fallback and tensor_requires_imatrix. */
#include "quant_mix.h"
#include "quant_mix_test_util.h"

#include <criterion/criterion.h>

#include <string.h>

static const oxl_quant_tensor base[] = {
    {.name = "token_embd.weight", .type = OXL_TYPE_F32, .ne = {256, 512, 1, 1}},
    {.name = "blk.0.attn_v.weight", .type = OXL_TYPE_F32, .ne = {256, 64, 1, 1}},
    {.name = "blk.0.attn_k.weight", .type = OXL_TYPE_F32, .ne = {256, 64, 1, 1}},
    {.name = "blk.0.attn_q.weight", .type = OXL_TYPE_F32, .ne = {256, 256, 1, 1}},
    {.name = "blk.0.attn_output.weight", .type = OXL_TYPE_F32, .ne = {256, 256, 1, 1}},
    {.name = "blk.0.ffn_down.weight", .type = OXL_TYPE_F32, .ne = {512, 256, 1, 1}},
    {.name = "blk.1.ffn_down.weight", .type = OXL_TYPE_F32, .ne = {512, 256, 1, 1}},
    {.name = "blk.1.ffn_up.weight", .type = OXL_TYPE_F32, .ne = {256, 512, 1, 1}},
    {.name = "output.weight", .type = OXL_TYPE_F32, .ne = {256, 512, 1, 1}},
};
enum { N = sizeof base / sizeof base[0] };

static int choose(const oxl_quant_model *m, const char *ftype, bool imatrix, oxl_quant_tensor *t, int n,
                  oxl_error *err) {
    const oxl_quant_options o = {.ftype = quant_ftype_row(ftype),
                                 .output_type = OXL_TYPE_COUNT,
                                 .token_embd_type = OXL_TYPE_COUNT,
                                 .has_imatrix = imatrix};
    cr_assert_not_null(o.ftype, "%s", ftype);
    oxl_quant_sort(t, n);
    return oxl_quant_choose_types(m, &o, t, n, err);
}

/* 8 layers: the first ffn_down (running index < 8/8) gets Q2_K (IQ3_S for IQ2_S/IQ2_M); 4 queries
 * per KV head: attn_v Q4_K; token_embd Q2_K (IQ3_S); the output Q5_K; attn_output kept (IQ3_S). */
Test(quant_mix_iq2, dense_rules) {
    static const struct {
        const char *ftype;
        oxl_type type, low, attn_output;
    } cases[] = {
        {"IQ2_XXS", OXL_TYPE_IQ2_XXS, OXL_TYPE_Q2_K, OXL_TYPE_IQ2_XXS},
        {"IQ2_XS", OXL_TYPE_IQ2_XS, OXL_TYPE_Q2_K, OXL_TYPE_IQ2_XS},
        {"IQ2_S", OXL_TYPE_IQ2_XS, OXL_TYPE_IQ3_S, OXL_TYPE_IQ3_S},
        {"IQ2_M", OXL_TYPE_IQ2_S, OXL_TYPE_IQ3_S, OXL_TYPE_IQ3_S},
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        oxl_quant_model m = {.arch = "llama", .n_layer = 8, .n_head = 8, .n_head_kv = 2};
        oxl_quant_tensor t[N];
        memcpy(t, base, sizeof t);
        oxl_error err = {{0}};
        const char *f = cases[c].ftype;
        cr_assert_eq(choose(&m, f, true, t, N, &err), 0, "%s: %s", f, err.msg);
        cr_expect_eq(quant_target_of(t, N, "token_embd.weight"), cases[c].low, "%s", f);
        cr_expect_eq(quant_target_of(t, N, "blk.0.attn_v.weight"), OXL_TYPE_Q4_K, "%s", f);
        cr_expect_eq(quant_target_of(t, N, "blk.0.attn_k.weight"), cases[c].type, "%s", f);
        cr_expect_eq(quant_target_of(t, N, "blk.0.attn_q.weight"), cases[c].type, "%s", f);
        cr_expect_eq(quant_target_of(t, N, "blk.0.attn_output.weight"), cases[c].attn_output, "%s", f);
        cr_expect_eq(quant_target_of(t, N, "blk.0.ffn_down.weight"), cases[c].low, "%s", f);
        cr_expect_eq(quant_target_of(t, N, "blk.1.ffn_down.weight"), cases[c].type, "%s", f);
        cr_expect_eq(quant_target_of(t, N, "blk.1.ffn_up.weight"), cases[c].type, "%s", f);
        cr_expect_eq(quant_target_of(t, N, "output.weight"), OXL_TYPE_Q5_K, "%s", f);
        /* 2 queries per KV head: attn_v Q2_K (IQ3_S); Falcon: the output Q8_0 */
        m.n_head_kv = 4;
        m.arch = "falcon";
        memcpy(t, base, sizeof t);
        cr_assert_eq(choose(&m, f, true, t, N, &err), 0, "%s: %s", f, err.msg);
        cr_expect_eq(quant_target_of(t, N, "blk.0.attn_v.weight"), cases[c].low, "%s", f);
        cr_expect_eq(quant_target_of(t, N, "output.weight"), OXL_TYPE_Q8_0, "%s", f);
        cr_expect_eq(quant_target_of(t, N, "blk.0.attn_output.weight"), cases[c].attn_output, "%s", f);
    }
}

/* 8 experts: attn_v Q4_K (n_expert >= 4, not the Q8_0 of the other ftypes), attn_k Q4_K, attn_output
 * Q5_K; ffn_down counts by running index (a tensor name without blk.N is no error); tied embeddings:
 * token_embd gets the output's Q5_K. */
Test(quant_mix_iq2, experts_and_tied_embeddings) {
    oxl_quant_model m = {.arch = "llama", .n_layer = 8, .n_head = 4, .n_head_kv = 4, .n_expert = 8};
    oxl_quant_tensor t[] = {
        {.name = "token_embd.weight", .type = OXL_TYPE_F32, .ne = {256, 512, 1, 1}},
        {.name = "blk.0.attn_v.weight", .type = OXL_TYPE_F32, .ne = {256, 64, 1, 1}},
        {.name = "blk.0.attn_k.weight", .type = OXL_TYPE_F32, .ne = {256, 64, 1, 1}},
        {.name = "blk.0.attn_output.weight", .type = OXL_TYPE_F32, .ne = {256, 256, 1, 1}},
        {.name = "blk.0.ffn_down_exps.weight", .type = OXL_TYPE_F32, .ne = {512, 256, 8, 1}},
        {.name = "ffn_down.weight", .type = OXL_TYPE_F32, .ne = {512, 256, 1, 1}},
    };
    enum { M = sizeof t / sizeof t[0] };
    oxl_error err = {{0}};
    cr_assert_eq(choose(&m, "IQ2_XXS", true, t, M, &err), 0, "%s", err.msg);
    cr_expect_eq(quant_target_of(t, M, "token_embd.weight"), OXL_TYPE_Q5_K);
    cr_expect_eq(quant_target_of(t, M, "blk.0.attn_v.weight"), OXL_TYPE_Q4_K);
    cr_expect_eq(quant_target_of(t, M, "blk.0.attn_k.weight"), OXL_TYPE_Q4_K);
    cr_expect_eq(quant_target_of(t, M, "blk.0.attn_output.weight"), OXL_TYPE_Q5_K);
    /* running index 0 of 8 layers: Q2_K; the second ffn_down (index 1): IQ2_XXS */
    cr_expect_eq(quant_target_of(t, M, "ffn_down.weight"), OXL_TYPE_Q2_K);
    cr_expect_eq(quant_target_of(t, M, "blk.0.ffn_down_exps.weight"), OXL_TYPE_IQ2_XXS);
}

/* tensor_type_fallback: rows that are no multiple of 256 get IQ4_NL, F16 when not even of 32;
 * tensor_requires_imatrix: without an imatrix the IQ2 tensors are refused (not the embeddings and
 * the output), with llama.cpp's reason. */
Test(quant_mix_iq2, fallback_and_imatrix_requirement) {
    const oxl_quant_model m = {.arch = "llama", .n_layer = 1, .n_head = 4, .n_head_kv = 4};
    for (int f = 0; f < 2; f++) {
        oxl_quant_tensor t[] = {
            {.name = "blk.0.attn_q.weight", .type = OXL_TYPE_F32, .ne = {96, 4, 1, 1}},
            {.name = "blk.0.ffn_up.weight", .type = OXL_TYPE_F32, .ne = {172, 4, 1, 1}},
            {.name = "blk.0.ffn_gate.weight", .type = OXL_TYPE_F32, .ne = {256, 4, 1, 1}},
        };
        oxl_error err = {{0}};
        const char *ft = f ? "IQ2_XS" : "IQ2_XXS";
        cr_assert_eq(choose(&m, ft, true, t, 3, &err), 2, "%s: %s", ft, err.msg);
        cr_expect_eq(quant_target_of(t, 3, "blk.0.attn_q.weight"), OXL_TYPE_IQ4_NL, "%s", ft);
        cr_expect_eq(quant_target_of(t, 3, "blk.0.ffn_up.weight"), OXL_TYPE_F16, "%s", ft);
        cr_expect_eq(quant_target_of(t, 3, "blk.0.ffn_gate.weight"), f ? OXL_TYPE_IQ2_XS : OXL_TYPE_IQ2_XXS, "%s", ft);
        memcpy(t, (oxl_quant_tensor[]){{.name = "blk.0.ffn_gate.weight", .type = OXL_TYPE_F32, .ne = {256, 4, 1, 1}}},
               sizeof t[0]);
        cr_expect_eq(choose(&m, ft, false, t, 1, &err), -1, "%s", ft);
        cr_expect(strstr(err.msg, "requires an importance matrix") != NULL, "%s", err.msg);
        cr_expect(strstr(err.msg, "blk.0.ffn_gate.weight") != NULL, "%s", err.msg);
    }
    /* the embeddings and the output need none */
    oxl_quant_tensor e[] = {
        {.name = "token_embd.weight", .type = OXL_TYPE_F32, .ne = {256, 8, 1, 1}},
        {.name = "output.weight", .type = OXL_TYPE_F32, .ne = {256, 8, 1, 1}},
    };
    oxl_error err = {{0}};
    cr_expect_eq(choose(&m, "IQ2_XXS", false, e, 2, &err), 0, "%s", err.msg);
    cr_expect_eq(quant_target_of(e, 2, "token_embd.weight"), OXL_TYPE_Q2_K);
    cr_expect_eq(quant_target_of(e, 2, "output.weight"), OXL_TYPE_Q5_K);
    /* all four are written (IQ2_S and IQ2_M use the IQ3_S quantizer too), by name or number */
    cr_expect_not_null(oxl_ftype_find("IQ2_XXS"));
    cr_expect_not_null(oxl_ftype_find("20"));
    cr_expect_not_null(oxl_ftype_find("IQ2_S"));
    cr_expect_not_null(oxl_ftype_find("29"));
}
