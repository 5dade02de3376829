/* Adapters applied at run time without changing the model's weights, as llama.cpp's
 * src/llama-adapter.cpp: LoRA adapters (a low-rank term added to the products of adapted matrices,
 * llama-graph.cpp build_lora_mm) and control vectors (a direction added to a layer's output,
 * llama_adapter_cvec::apply_to). Internal to the library; the API is in include/oxillama.h. */
#ifndef OXL_ADAPTER_H
#define OXL_ADAPTER_H

#include "context.h"

/* The adapters set on a context (oxl_ctx_set_loras, oxl_ctx_set_control_vector); NULL when none. */
typedef struct oxl_adapters oxl_adapters;

void oxl_adapters_free(oxl_adapters *a);

/* Makes the context's LoRA term active on the calling thread for the passes of one decode
 * (oxl_matmul_set_addend); end removes it. Both do nothing when the context has no adapter. */
void oxl_adapters_begin(oxl_ctx *ctx);
void oxl_adapters_end(oxl_ctx *ctx);

/* Adds the context's control vector for layer il (0-based) to the n rows of x (n_embd floats each),
 * as llama.cpp's build_cvec at the end of a layer: only for start <= il <= end, il >= 1. */
void oxl_cvec_apply(const oxl_ctx *ctx, int il, float *x, int32_t n);

#endif
