/* Helpers shared by the tests of the ftype mixes (test_quant_mix_iq1.c, test_quant_mix_iq2.c,
 * test_quantize_iq3_mix.c, test_quantize_flags.c, test_quantize_cli.c). */
#ifndef OXL_QUANT_MIX_TEST_UTIL_H
#define OXL_QUANT_MIX_TEST_UTIL_H

#include "quant_mix.h"

/* The type chosen for tensor `name` among t[0..n); OXL_TYPE_COUNT when no tensor has that name. */
oxl_type quant_target_of(const oxl_quant_tensor *t, int n, const char *name);

/* The row of the spec's ftype table (oxl_ftype_infos) named `name`, whether `oxillama quantize`
 * writes that ftype or not (oxl_ftype_find answers only for written ones); NULL if none. */
const oxl_ftype_mix *quant_ftype_row(const char *name);

#endif
