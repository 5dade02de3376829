/* llama-quantize's --tensor-type, --leave-output-tensor and --override-kv below the command line:
 * the value parsers (quantize_options.h) and the override hook of the mix (quant_mix.h), with the
 * rules of llama.cpp src/llama-quant.cpp (llama_tensor_get_type, tensor_allows_quantization) and
 * tools/quantize/quantize.cpp / common/common.cpp (parse_tensor_type, string_parse_kv_override).
 * The end-to-end bytes are checked against llama-quantize by tests/cli/check_quantize_flags.py. */
#include "quant_mix.h"
#include "quant_mix_test_util.h"
#include "quantize_options.h"

#include <criterion/criterion.h>
#include <string.h>

static oxl_tensor_types *types_of(const char *const *args, int n) {
    oxl_error err = {{0}};
    oxl_tensor_types *tt = oxl_tensor_types_new(&err);
    cr_assert_not_null(tt, "%s", err.msg);
    for (int i = 0; i < n; i++) {
        cr_assert_eq(oxl_tensor_types_add(tt, args[i], &err), 0, "%s: %s", args[i], err.msg);
    }
    return tt;
}

static oxl_type match(oxl_tensor_types *tt, const char *name) {
    oxl_type t = OXL_TYPE_COUNT;
    return oxl_tensor_types_match(tt, name, &t) ? t : OXL_TYPE_COUNT;
}

Test(quantize_flags, tensor_type_patterns_search_in_order_lower_cased) {
    const char *const args[] = {"attn_v=q8_0", "BLK\\.1\\..*=Q5_0", "^blk\\.\\d\\.ffn_(up|gate)\\.weight$=q4_1",
                                "norm$=f16"};
    oxl_tensor_types *tt = types_of(args, 4);
    cr_expect_eq(oxl_tensor_types_count(tt), 4);
    cr_expect_eq(match(tt, "blk.1.attn_v.weight"), OXL_TYPE_Q8_0); /* the first that matches */
    cr_expect_eq(match(tt, "blk.1.attn_k.weight"), OXL_TYPE_Q5_0); /* pattern lower-cased */
    cr_expect_eq(match(tt, "blk.0.ffn_up.weight"), OXL_TYPE_Q4_1); /* \d, a group, anchors */
    cr_expect_eq(match(tt, "blk.0.ffn_down.weight"), OXL_TYPE_COUNT);
    cr_expect_eq(match(tt, "BLK.0.attn_k.weight"), OXL_TYPE_COUNT); /* the name is not lower-cased */
    cr_expect_eq(match(tt, "output_norm.weight"), OXL_TYPE_COUNT);  /* $ at the end only */
    cr_expect_eq(match(tt, "x.norm"), OXL_TYPE_F16);
    oxl_tensor_types_free(tt);
}

Test(quantize_flags, tensor_type_errors_name_the_value) {
    static const struct {
        const char *arg, *needle;
    } bad[] = {
        {"attn_v", "malformed value 'attn_v'"},          {"=q8_0", "missing tensor name pattern in '=q8_0'"},
        {"attn_v=", "missing type in 'attn_v='"},        {"attn_v=q9_9", "unknown ggml type 'q9_9'"},
        {"attn_v=q8_K", "unsupported ggml type 'q8_K'"}, {"a[b=q8_0", "invalid regex 'a[b'"},
    };
    oxl_error err = {{0}};
    oxl_tensor_types *tt = oxl_tensor_types_new(&err);
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        err.msg[0] = '\0';
        cr_expect_eq(oxl_tensor_types_add(tt, bad[i].arg, &err), -1, "%s", bad[i].arg);
        cr_expect(strstr(err.msg, bad[i].needle) != NULL, "'%s' gives '%s'", bad[i].arg, err.msg);
    }
    cr_expect_eq(oxl_tensor_types_count(tt), 0);
    oxl_tensor_types_free(tt);
}

static const oxl_quant_tensor base[] = {
    {.name = "output.weight", .type = OXL_TYPE_F32, .ne = {256, 512, 1, 1}},
    {.name = "token_embd.weight", .type = OXL_TYPE_F32, .ne = {256, 512, 1, 1}},
    {.name = "blk.0.attn_v.weight", .type = OXL_TYPE_F32, .ne = {256, 128, 1, 1}},
    {.name = "blk.0.ffn_down.weight", .type = OXL_TYPE_F32, .ne = {512, 256, 1, 1}},
    {.name = "blk.1.attn_v.weight", .type = OXL_TYPE_F32, .ne = {256, 128, 1, 1}},
    {.name = "blk.1.ffn_down.weight", .type = OXL_TYPE_F32, .ne = {512, 256, 1, 1}},
};
enum { N = sizeof base / sizeof base[0] };

static void choose(const oxl_quant_options *o, oxl_quant_tensor *t) {
    const oxl_quant_model m = {.arch = "llama", .n_layer = 2, .n_head = 4, .n_head_kv = 2};
    oxl_error err = {{0}};
    memcpy(t, base, sizeof base);
    oxl_quant_sort(t, N);
    cr_assert_geq(oxl_quant_choose_types(&m, o, t, N, &err), 0, "%s", err.msg);
}

/* A manual tensor skips llama_tensor_get_type_impl, whose attn_v and ffn_down counters then do
 * not advance: blk.1 gets layer 0's choice (Q4_K), not use_more_bits(1, 2)'s Q6_K. */
Test(quantize_flags, manual_tensors_skip_the_mix_and_its_counters) {
    const char *const args[] = {"blk\\.0\\.(attn_v|ffn_down)=q8_0"};
    oxl_tensor_types *tt = types_of(args, 1);
    oxl_quant_options o = {.ftype = oxl_ftype_find("Q4_K_M"),
                           .output_type = OXL_TYPE_COUNT,
                           .token_embd_type = OXL_TYPE_COUNT,
                           .override_type = oxl_tensor_types_match,
                           .override_ctx = tt};
    oxl_quant_tensor t[N];
    choose(&o, t);
    cr_expect_eq(quant_target_of(t, N, "blk.0.attn_v.weight"), OXL_TYPE_Q8_0);
    cr_expect_eq(quant_target_of(t, N, "blk.0.ffn_down.weight"), OXL_TYPE_Q8_0);
    cr_expect_eq(quant_target_of(t, N, "blk.1.attn_v.weight"), OXL_TYPE_Q4_K);
    cr_expect_eq(quant_target_of(t, N, "blk.1.ffn_down.weight"), OXL_TYPE_Q4_K);
    cr_expect_eq(quant_target_of(t, N, "output.weight"), OXL_TYPE_Q6_K);
    /* without the hook the mix gives blk.1 Q6_K */
    o.override_type = NULL;
    choose(&o, t);
    cr_expect_eq(quant_target_of(t, N, "blk.1.attn_v.weight"), OXL_TYPE_Q6_K);
    cr_expect_eq(quant_target_of(t, N, "blk.1.ffn_down.weight"), OXL_TYPE_Q6_K);
    oxl_tensor_types_free(tt);
}

/* --output-tensor-type and --token-embedding-type are asked first; an ftype whose type is not
 * quantized (F16) asks no pattern; --leave-output-tensor keeps output.weight even with a type. */
Test(quantize_flags, precedence_and_leave_output) {
    const char *const args[] = {"weight=q5_0"};
    oxl_tensor_types *tt = types_of(args, 1);
    oxl_quant_options o = {.ftype = oxl_ftype_find("Q4_K_M"),
                           .output_type = OXL_TYPE_Q8_0,
                           .token_embd_type = OXL_TYPE_Q6_K,
                           .override_type = oxl_tensor_types_match,
                           .override_ctx = tt};
    oxl_quant_tensor t[N];
    choose(&o, t);
    cr_expect_eq(quant_target_of(t, N, "output.weight"), OXL_TYPE_Q8_0);
    cr_expect_eq(quant_target_of(t, N, "token_embd.weight"), OXL_TYPE_Q6_K);
    cr_expect_eq(quant_target_of(t, N, "blk.1.attn_v.weight"), OXL_TYPE_Q5_0);
    o.leave_output = true;
    choose(&o, t);
    cr_expect_eq(quant_target_of(t, N, "output.weight"), OXL_TYPE_F32);
    o.ftype = oxl_ftype_find("F16");
    choose(&o, t);
    cr_expect_eq(quant_target_of(t, N, "blk.1.attn_v.weight"), OXL_TYPE_F16);
    oxl_tensor_types_free(tt);
}

Test(quantize_flags, override_kv_values) {
    oxl_kv_override kv;
    oxl_error err = {{0}};
    cr_assert_eq(oxl_kv_override_parse("llama.context_length=int:-4096", &kv, &err), 0, "%s", err.msg);
    cr_expect_str_eq(kv.key, "llama.context_length");
    cr_expect_eq(kv.tag, OXL_KV_OVERRIDE_INT);
    cr_expect_eq(kv.val_i64, -4096);
    cr_assert_eq(oxl_kv_override_parse("a=float:0.25", &kv, &err), 0, "%s", err.msg);
    cr_expect_eq(kv.tag, OXL_KV_OVERRIDE_FLOAT);
    cr_expect_eq(kv.val_f64, 0.25);
    cr_assert_eq(oxl_kv_override_parse("a=bool:false", &kv, &err), 0, "%s", err.msg);
    cr_expect(kv.tag == OXL_KV_OVERRIDE_BOOL && !kv.val_bool);
    cr_assert_eq(oxl_kv_override_parse("general.name=str:a=b:c", &kv, &err), 0, "%s", err.msg);
    cr_expect_eq(kv.tag, OXL_KV_OVERRIDE_STR);
    cr_expect_str_eq(kv.key, "general.name"); /* the first '=' splits */
    cr_expect_str_eq(kv.val_str, "a=b:c");
    char long_key[200];
    memset(long_key, 'k', 128);
    strcpy(long_key + 128, "=int:1");
    static const char *const bad[] = {"a", "=int:1", "a=int:", "a=int:1.5", "a=float:x", "a=bool:1", "a=u32:1"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        err.msg[0] = '\0';
        cr_expect_eq(oxl_kv_override_parse(bad[i], &kv, &err), -1, "%s", bad[i]);
        cr_expect(strstr(err.msg, bad[i]) != NULL, "'%s' gives '%s'", bad[i], err.msg);
    }
    cr_expect_eq(oxl_kv_override_parse(long_key, &kv, &err), -1);
}
