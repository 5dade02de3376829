/* Dispatch and type traits: the table a cap builds, ISA names, and ggml's trait values (ids, names,
 * block sizes and bytes per block from ggml/include/ggml.h and ggml-common.h). */
#include "kernels.h"

#include <criterion/criterion.h>

#include <stdlib.h>

Test(kernels, every_cap_gets_a_kernel_per_cell_within_the_cap) {
    static const oxl_type formats[] = {OXL_TYPE_F32, OXL_TYPE_F16, OXL_TYPE_BF16, OXL_TYPE_Q8_0, OXL_TYPE_Q4_0};
    for (int cap = 0; cap < OXL_ISA_COUNT; cap++) {
        oxl_kernels k;
        oxl_kernels_build(&k, (oxl_isa)cap);
        for (size_t i = 0; i < sizeof formats / sizeof formats[0]; i++) {
            const oxl_type t = formats[i];
            cr_expect_not_null(k.dequant[t], "cap %s: no dequant for type %d", oxl_isa_name((oxl_isa)cap), t);
            cr_expect_not_null(k.vec_dot[t], "cap %s: no vec_dot for type %d", oxl_isa_name((oxl_isa)cap), t);
            cr_expect_leq(k.dequant_isa[t], (oxl_isa)cap);
            cr_expect_leq(k.vec_dot_isa[t], (oxl_isa)cap);
            cr_expect(oxl_cpu_has_isa(k.vec_dot_isa[t]));
            /* the best the CPU has within the cap */
            if (oxl_cpu_has_isa((oxl_isa)cap)) {
                cr_expect_eq(k.vec_dot_isa[t], (oxl_isa)cap);
            }
        }
        cr_expect_not_null(k.quant[OXL_TYPE_Q8_0]);
        cr_expect_null(k.quant[OXL_TYPE_Q4_0], "q4_0 is not an activation format");
        cr_expect_null(k.dequant[OXL_TYPE_Q4_K], "no q4_K kernels yet");
    }
}

Test(kernels, scalar_is_always_there_and_names_round_trip) {
    cr_expect(oxl_cpu_has_isa(OXL_ISA_SCALAR));
    cr_expect_not(oxl_cpu_has_isa(OXL_ISA_COUNT));
    for (int i = 0; i < OXL_ISA_COUNT; i++) {
        cr_expect_eq(oxl_isa_from_name(oxl_isa_name((oxl_isa)i)), i);
    }
    cr_expect_eq(oxl_isa_from_name("AVX2"), OXL_ISA_AVX2);
    cr_expect_eq(oxl_isa_from_name("sse9"), -1);
    cr_expect_eq(oxl_kernels_get()->vec_dot[OXL_TYPE_Q4_0] != NULL, true);
    cr_expect_leq(oxl_kernels_get()->vec_dot_isa[OXL_TYPE_Q4_0], oxl_isa_cap());
}

Test(kernels, ggml_type_traits) {
    const oxl_type_traits *q4k = oxl_type_traits_get(12);
    cr_assert_not_null(q4k);
    cr_expect_str_eq(q4k->name, "q4_K");
    cr_expect_eq(q4k->blck_size, 256);
    cr_expect_eq(q4k->type_size, 144);
    cr_expect_eq(q4k->vec_dot_type, OXL_TYPE_Q8_K);
    cr_expect(q4k->is_quantized);
    const oxl_type_traits *bf16 = oxl_type_traits_get(30);
    cr_expect_str_eq(bf16->name, "bf16");
    cr_expect_not(bf16->is_quantized);
    /* removed ids and ids past the table */
    cr_expect_null(oxl_type_traits_get(4));
    cr_expect_null(oxl_type_traits_get(5));
    cr_expect_null(oxl_type_traits_get(31));
    cr_expect_null(oxl_type_traits_get(36));
    cr_expect_null(oxl_type_traits_get(OXL_TYPE_COUNT));
    cr_expect_null(oxl_type_traits_get(UINT32_MAX));
    cr_expect_eq(oxl_type_from_name("IQ2_XXS"), 16);
    cr_expect_eq(oxl_type_from_name("q4_k"), 12);
    cr_expect_eq(oxl_type_from_name("q4_2"), -1);
    cr_expect_eq(oxl_row_size(OXL_TYPE_Q4_0, 4096), 4096 / 32 * 18);
    cr_expect_eq(oxl_row_size(OXL_TYPE_F16, 7), 14);
}
