/* llama-quantize's file types (ftypes) and the per-tensor type each one chooses: the mix rules of
 * llama.cpp src/llama-quant.cpp (llama_tensor_get_type, llama_tensor_get_type_impl,
 * tensor_allows_quantization, tensor_type_fallback, tensor_requires_imatrix), for the ftypes whose
 * formats have reference quantizers here. The rules are data: one row per ftype in gen/spec.py's FTYPES
 * (generated/oxl_ftypes.c); quant_mix.c applies them. */
#ifndef OXL_QUANT_MIX_H
#define OXL_QUANT_MIX_H

#include "oxillama.h"
#include "oxl_ftypes.h"
#include "oxl_types.h"

#include <stdbool.h>
#include <stdint.h>

/* One row of the spec's ftype table (generated/oxl_ftypes.h) that oxillama quantize writes. */
typedef oxl_ftype_info oxl_ftype_mix;

/* An ftype by llama-quantize's name (case-insensitive: "Q4_K_M", "q8_0", aliases "Q3_K", "Q4_K",
 * "Q5_K") or by its llama_ftype number ("15"); NULL when unknown or not supported. */
const oxl_ftype_mix *oxl_ftype_find(const char *name);
const char *oxl_ftype_name(const oxl_ftype_mix *f);
/* The llama_ftype number written as general.file_type. */
uint32_t oxl_ftype_id(const oxl_ftype_mix *f);
/* llama_ftype_name of a llama_ftype number ("Q4_K - Medium" for 15; llama-bench's model_type),
 * for every ftype llama.cpp names, written or not; NULL when unknown. */
const char *oxl_ftype_describe(uint32_t id);
/* The names of the supported ftypes, NULL-terminated, for help text. */
const char *const *oxl_ftype_names(void);

/* What the rules need to know of the model (its hparams). */
typedef struct oxl_quant_model {
    const char *arch; /* general.architecture */
    int n_layer;      /* <arch>.block_count */
    int n_head;       /* <arch>.attention.head_count (of layer 0) */
    int n_head_kv;    /* <arch>.attention.head_count_kv (of layer 0; n_head when absent) */
    int n_expert;     /* <arch>.expert_count (0 when absent) */
    bool is_70b;      /* llama.cpp's LLM_TYPE_70B (80 layers with grouped-query attention) */
} oxl_quant_model;

typedef struct oxl_quant_options {
    const oxl_ftype_mix *ftype;
    oxl_type output_type;     /* --output-tensor-type; OXL_TYPE_COUNT when not given */
    oxl_type token_embd_type; /* --token-embedding-type; OXL_TYPE_COUNT when not given */
    bool pure;                /* --pure: the ftype's type everywhere (no mix rules) */
    bool has_imatrix;         /* an importance matrix was given (changes the Q4_0/Q5_0 mixes) */
    bool leave_output;        /* --leave-output-tensor: output.weight keeps its type */
    /* --tensor-type: the type the user gives a tensor (true), or false to leave it to the mix. Asked
     * after --token-embedding-type / --output-tensor-type, and only when the ftype's type is
     * quantized; a tensor it answers skips the mix rules and their layer counters, not the
     * fallback. NULL: no overrides. */
    bool (*override_type)(void *ctx, const char *name, oxl_type *type);
    void *override_ctx;
} oxl_quant_options;

/* One tensor of the model: name, type and shape in; the chosen type out. */
typedef struct oxl_quant_tensor {
    const char *name;
    oxl_type type;         /* type in the input file */
    int64_t ne[4];         /* shape, ggml order; unused dimensions 1 */
    oxl_type target;       /* out: type in the output file */
    bool requires_imatrix; /* out: the target needs an importance matrix (Q2_K in Q2_K_S) */
    bool fallback;         /* out: the row length did not fit the mix's type */
    bool manual;           /* out: the type came from the override hook */
} oxl_quant_tensor;

/* Sorts tensors into llama.cpp's processing order (its loader's weight map: layer number of
 * "blk.N." first, -1 for other names, then by name). The counters of the mix rules depend on it,
 * and llama-quantize writes the tensors in this order. */
void oxl_quant_sort(oxl_quant_tensor *t, int64_t n);

/* Chooses target for each of the n tensors, which must be in oxl_quant_sort order. Returns the
 * number of tensors that needed a fallback type, or -1 with err when a row length has no fallback,
 * a layer number is missing or out of range (mixture-of-experts models), or a tensor requires an
 * importance matrix that was not given. */
int oxl_quant_choose_types(const oxl_quant_model *m, const oxl_quant_options *o, oxl_quant_tensor *t, int64_t n,
                           oxl_error *err);

#endif
