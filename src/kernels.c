/* Kernel dispatch: a loop over the generated kernel list (best ISA first within each (op, format)),
 * keeping the first kernel per (op, format) whose ISA is within the cap and supported by the CPU. */
#include "kernels.h"

#include "oxl_kernel_decls.h"

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
        switch (e->op) {
        case OXL_KERNEL_OP_dequant:
            if (k->dequant[e->type] == NULL) {
                k->dequant[e->type] = e->fn.dequant;
                k->dequant_isa[e->type] = e->isa;
            }
            break;
        case OXL_KERNEL_OP_quant:
            if (k->quant[e->type] == NULL) {
                k->quant[e->type] = e->fn.quant;
                k->quant_isa[e->type] = e->isa;
            }
            break;
        case OXL_KERNEL_OP_vec_dot:
            if (k->vec_dot[e->type] == NULL) {
                k->vec_dot[e->type] = e->fn.vec_dot;
                k->vec_dot_isa[e->type] = e->isa;
            }
            break;
        case OXL_KERNEL_OP_gemm:
            if (k->gemm[e->type] == NULL) {
                k->gemm[e->type] = e->fn.gemm;
                k->gemm_isa[e->type] = e->isa;
            }
            break;
        case OXL_KERNEL_OP_swiglu:
            if (k->swiglu[e->type] == NULL) {
                k->swiglu[e->type] = e->fn.swiglu;
                k->swiglu_isa[e->type] = e->isa;
            }
            break;
        case OXL_KERNEL_OP_repack:
            /* a layout and its gemm come as a pair from one ISA (the first listed, the best) */
            if (k->repack[e->type] == NULL) {
                k->repack[e->type] = e->fn.repack;
                k->repack_isa[e->type] = e->isa;
                k->repack_rows[e->type] = oxl_repack_rows(e->type, e->isa);
                k->repack_group_bytes[e->type] = oxl_repack_group_bytes(e->type, e->isa);
            }
            break;
        case OXL_KERNEL_OP_gemm_rp:
            break;
        case OXL_KERNEL_OP_sgemm_acc:
            if (k->sgemm_acc[e->type] == NULL) {
                k->sgemm_acc[e->type] = e->fn.sgemm_acc;
            }
            break;
        case OXL_KERNEL_OP_softmax:
            if (k->softmax[e->type] == NULL) {
                k->softmax[e->type] = e->fn.softmax;
            }
            break;
        case OXL_KERNEL_OP_mad:
            if (k->mad[e->type] == NULL) {
                k->mad[e->type] = e->fn.mad;
                k->mad_isa[e->type] = e->isa;
            }
            break;
        }
    }
    /* the gemm of the chosen layout's ISA */
    for (size_t i = 0; i < n; i++) {
        const oxl_kernel_entry *e = &oxl_kernel_entries[i];
        if (e->op == OXL_KERNEL_OP_gemm_rp && k->repack[e->type] != NULL && e->isa == k->repack_isa[e->type]) {
            k->gemm_rp[e->type] = e->fn.gemm_rp;
        }
    }
}

static pthread_once_t oxl_kernels_once = PTHREAD_ONCE_INIT;
static oxl_kernels oxl_kernels_table;

static void oxl_kernels_init(void) {
    oxl_kernels_build(&oxl_kernels_table, oxl_isa_cap());
}

const oxl_kernels *oxl_kernels_get(void) {
    pthread_once(&oxl_kernels_once, oxl_kernels_init);
    return &oxl_kernels_table;
}
