/* Kernel dispatch: a loop over the generated kernel list (best ISA first within each (op, format)),
 * keeping the first kernel per (op, format) whose ISA is within the cap and supported by the CPU. */
#include "kernels.h"

#include <pthread.h>
#include <string.h>

typedef enum oxl_kernel_op {
#define X(op) OXL_KERNEL_OP_##op,
    OXL_KERNEL_OPS(X)
#undef X
} oxl_kernel_op;

typedef struct oxl_kernel_entry {
    oxl_kernel_op op;
    oxl_type type;
    oxl_isa isa;
    union {
#define X(op) oxl_##op##_fn op;
        OXL_KERNEL_OPS(X)
#undef X
    } fn;
} oxl_kernel_entry;

static const oxl_kernel_entry oxl_kernel_entries[] = {
#define OXL_KERNEL(op, type, isa, fn) {OXL_KERNEL_OP_##op, type, isa, {.op = fn}},
#include "oxl_kernel_list.inc"
#undef OXL_KERNEL
};

void oxl_kernels_build(oxl_kernels *k, oxl_isa cap) {
    memset(k, 0, sizeof *k);
    const size_t n = sizeof oxl_kernel_entries / sizeof oxl_kernel_entries[0];
    for (size_t i = 0; i < n; i++) {
        const oxl_kernel_entry *e = &oxl_kernel_entries[i];
        if (e->isa > cap || !oxl_cpu_has_isa(e->isa)) {
            continue;
        }
        /* the first listed within the cap is the best; a repacked layout and its gemm_rp are listed
         * by the same ISAs in the same order, so they come as a pair */
        switch (e->op) {
#define X(op)                                                                                                          \
    case OXL_KERNEL_OP_##op:                                                                                           \
        if (k->op[e->type] == NULL) {                                                                                  \
            k->op[e->type] = e->fn.op;                                                                                 \
            k->op##_isa[e->type] = e->isa;                                                                             \
        }                                                                                                              \
        break;
            OXL_KERNEL_OPS(X)
#undef X
        }
    }
    for (int t = 0; t < OXL_TYPE_COUNT; t++) {
        if (k->repack[t] != NULL) {
            k->repack_rows[t] = oxl_repack_rows((oxl_type)t, k->repack_isa[t]);
            k->repack_group_bytes[t] = oxl_repack_group_bytes((oxl_type)t, k->repack_isa[t]);
        }
    }
}

static pthread_once_t oxl_kernels_once = PTHREAD_ONCE_INIT;
static oxl_kernels oxl_kernels_table;

static void oxl_kernels_init(void) { oxl_kernels_build(&oxl_kernels_table, oxl_isa_cap()); }

const oxl_kernels *oxl_kernels_get(void) {
    pthread_once(&oxl_kernels_once, oxl_kernels_init);
    return &oxl_kernels_table;
}
