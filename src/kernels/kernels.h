/* Kernel dispatch: the best kernel per (op, format) for this CPU, chosen once at start-up by a loop
 * over the generated kernel list (generated/oxl_kernel_list.inc, best ISA first, scalar last),
 * capped by OXILLAMA_ISA=<isa name>.
 *
 * The ops, their signatures (oxl_<op>_fn) and what each computes come from the spec's op table
 * (gen/spec.py OP_TABLE), generated into oxl_kernel_decls.h; this header adds the table of chosen
 * kernels, whose fields the same X-macro lists.
 */
#ifndef OXL_KERNELS_H
#define OXL_KERNELS_H

#include "oxl_kernel_decls.h" /* generated: op signatures oxl_<op>_fn, OXL_KERNEL_OPS, the kernel list */
#include "oxl_types.h"        /* generated: oxl_type enum, oxl_type_traits, oxl_isa enum */

#include <stddef.h>
#include <stdint.h>

/* The chosen kernel per (op, format): op[type] (NULL where the format has no such op on this CPU
 * and cap) and op_isa[type], the ISA of that kernel; for every op of OXL_KERNEL_OPS. The repacked
 * layout's shape comes with repack[type]: rows per group (0: none) and bytes per group block. */
typedef struct oxl_kernels {
#define X(op)                                                                                                          \
    oxl_##op##_fn op[OXL_TYPE_COUNT];                                                                                  \
    oxl_isa op##_isa[OXL_TYPE_COUNT];
    OXL_KERNEL_OPS(X)
#undef X
    int repack_rows[OXL_TYPE_COUNT];
    size_t repack_group_bytes[OXL_TYPE_COUNT];
} oxl_kernels;

/* The process-wide table, built on first use (thread-safe). */
const oxl_kernels *oxl_kernels_get(void);
/* Builds a table using only ISAs <= cap that the CPU supports (tests pin every ISA this way). */
void oxl_kernels_build(oxl_kernels *k, oxl_isa cap);

/* CPU support for an ISA level (CPUID + XGETBV on x86). */
bool oxl_cpu_has_isa(oxl_isa isa);
/* The cap from OXILLAMA_ISA, or the best ISA this CPU runs when it is unset, not an ISA's name, or
 * names an ISA this CPU cannot run (oxl_isa_env_check reports those two cases). */
oxl_isa oxl_isa_cap(void);
/* 0 when OXILLAMA_ISA is unset or names an ISA this CPU runs; otherwise -1 with err saying which
 * (an unknown name, or an ISA the CPU lacks, with the ISAs it has). oxl_model_load and the CLI refuse
 * to run on such a setting rather than silently use another ISA. */
struct oxl_error;
int oxl_isa_env_check(struct oxl_error *err);
const char *oxl_isa_name(oxl_isa isa);
/* -1 when name is not an ISA of the spec. */
int oxl_isa_from_name(const char *name);

#endif
