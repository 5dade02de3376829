/* Quantizing a whole GGUF model: what llama-quantize does (llama.cpp src/llama-quant.cpp
 * llama_model_quantize_impl, tools/quantize/quantize.cpp): choose each tensor's type by the ftype
 * mix (quant_mix.h), convert its data with the reference quantizers (quantize.h), optionally with
 * an importance matrix (imatrix.h), and write a GGUF file with the input's metadata plus
 * general.quantization_version and general.file_type (gguf_write.h). */
#ifndef OXL_QUANTIZE_MODEL_H
#define OXL_QUANTIZE_MODEL_H

#include "oxillama.h"
#include "oxl_types.h"
#include "quant_mix.h"
#include "quantize_options.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

typedef struct oxl_quantize_params {
    const oxl_ftype_mix *ftype;           /* required (oxl_ftype_find) */
    const char *imatrix_path;             /* NULL, or a llama-imatrix file (GGUF or legacy .dat) */
    oxl_type output_type;                 /* OXL_TYPE_COUNT: the mix decides */
    oxl_type token_embd_type;             /* OXL_TYPE_COUNT: the mix decides */
    bool pure;                            /* no mix rules: the ftype's type for every quantizable tensor */
    bool allow_requantize;                /* accept quantized input tensors (needs their dequant kernel) */
    bool leave_output;                    /* --leave-output-tensor: output.weight is copied as it is */
    const oxl_tensor_types *tensor_types; /* NULL, or the --tensor-type patterns */
    const oxl_kv_override *kv_overrides;  /* --override-kv, n_kv_overrides of them, set in order */
    int n_kv_overrides;
    int n_threads; /* >= 1 */
    /* NULL, or where llama-quantize's lines go: "<name> - applying manual override: A -> B" per
     * --tensor-type tensor whose type differs from the ftype's, then per tensor
     * "[   i/   N] <name> - [ne0, ne1, ne2, ne3], type = <in>, " followed by
     * "converting to <out> .. size = X MiB -> Y MiB" or "size = X MiB" */
    FILE *progress;
    /* --keep-split: a split input gives split outputs as llama-quantize --keep-split writes them:
     * out_path is then the prefix of the parts (out_path-0000K-of-0000N.gguf), one per input part,
     * each with that part's tensors in file order, the first with the metadata, every one ending
     * with split.no, split.count and split.tensors.count. No effect on a whole-file input. */
    bool keep_split;
} oxl_quantize_params;

typedef struct oxl_quantize_stats {
    uint64_t bytes_in;   /* tensor data of the input */
    uint64_t bytes_out;  /* tensor data of the output */
    uint64_t n_elements; /* weights in the model */
    int64_t n_tensors;
    int n_fallback; /* tensors whose row length needed a fallback type */
} oxl_quantize_stats;

/* Reads in_path and writes out_path (through a temporary file renamed at the end: on error no
 * output is left). Tensors are written in llama.cpp's order with the types llama-quantize chooses.
 * Returns 0 and fills stats (may be NULL), or -1 with err naming the file, tensor, and where it
 * applies the row and column (non-finite weights), or the missing imatrix entry. */
int oxl_quantize_model(const char *in_path, const char *out_path, const oxl_quantize_params *p,
                       oxl_quantize_stats *stats, oxl_error *err);

#endif
