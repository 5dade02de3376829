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

/* oxl_lora_load on an open file (tests/fuzz/fuzz_lora.c reads from memory): takes g, also on failure. */
oxl_lora *oxl_lora_from_gguf(const oxl_model *model, oxl_gguf *g, oxl_error *err);
/* One file of oxl_control_vector_load: its directions times strength added into *data (grown,
 * *len floats, malloc'd); *n_embd -1 before the first file. Returns 0, or -1 with err. */
int oxl_cvec_add_gguf(const oxl_gguf *g, float strength, float **data, size_t *len, int32_t *n_embd, oxl_error *err);

/* Makes the context's LoRA term active on the calling thread for the passes of one decode
 * (oxl_matmul_set_addend); end removes it. Both do nothing when the context has no adapter. */
void oxl_adapters_begin(oxl_ctx *ctx);
void oxl_adapters_end(oxl_ctx *ctx);

/* Adds the context's control vector for layer il (0-based) to the n rows of x (n_embd floats each),
 * as llama.cpp's build_cvec at the end of a layer: only for start <= il <= end, il >= 1. */
void oxl_cvec_apply(const oxl_ctx *ctx, int il, float *x, int32_t n);

#endif
