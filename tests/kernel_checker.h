/* The one checker behind the generated kernel tests (generated/tests/kernels.c): each cell of the
 * kernel list calls the function of its op, which skips when this CPU lacks the ISA and otherwise
 * compares the kernel against golden/quant/<format>.gguf (src/golden_quant.h). f32, which has no
 * golden file, is checked on the f32 tensors of golden/quant/f16.gguf: conversions must be exact
 * copies and the dot within tolerance of a double-precision sum. */
#ifndef OXL_KERNEL_CHECKER_H
#define OXL_KERNEL_CHECKER_H

#include "kernels.h"

void oxl_check_dequant(oxl_type type, oxl_isa isa, oxl_dequant_fn fn, const char *name);
void oxl_check_quant(oxl_type type, oxl_isa isa, oxl_quant_fn fn, const char *name);
void oxl_check_vec_dot(oxl_type type, oxl_isa isa, oxl_vec_dot_fn fn, const char *name);

#endif
