/* Merging LoRA adapters into a model's weights, as llama.cpp's llama-export-lora
 * (tools/export-lora/export-lora.cpp): a new GGUF with the base model's key/values (general.file_type
 * set to 1, mostly f16, and moved last), every tensor in name order; a tensor with a pair
 * <name>.lora_a / .lora_b in every adapter becomes W + sum_i s_i * (A_i^T B_i) computed in f32 (base
 * dequantized; f32 stays f32, any other type is written f16), the others are copied unchanged. s_i is
 * scale_i * alpha_i / rank_i when adapter.lora.alpha is not 0, else scale_i. */
#ifndef OXL_EXPORT_LORA_H
#define OXL_EXPORT_LORA_H

#include "oxillama.h"

#include <stdio.h>

/* Writes out (through a temporary file: no partial output on failure). log: one line per tensor
 * and a summary, or NULL. Returns 0, or -1 with err naming the file, key or tensor (an adapter of
 * another architecture or type, a quantized factor, adapters with different tensor lists, a pair
 * missing one part, a shape that does not match the base, a split base model). */
int oxl_export_lora(const char *base, const char *const *loras, const float *scales, int n_loras, const char *out,
                    int n_threads, FILE *log, oxl_error *err);

#endif
