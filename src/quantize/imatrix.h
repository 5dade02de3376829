/* Importance matrices written by llama-imatrix (tools/imatrix/imatrix.cpp), in both layouts, turned
 * into the per-column weights llama-quantize passes to the quantizers (tools/quantize/quantize.cpp
 * load_imatrix, common/imatrix-loader.cpp):
 *   GGUF layout: tensors "<weight>.in_sum2" (ne0 * n_expert sums of squared activations) and
 *     "<weight>.counts" (n_expert counts, stored as f32 and rounded to integers), keys
 *     imatrix.datasets, imatrix.chunk_count, imatrix.chunk_size (all three required);
 *     weight = sum / count per expert, or 1 where the count is 0.
 *   Legacy .dat: int32 n_entries; per entry int32 name length, name, int32 ncall, int32 nval,
 *     nval floats; optionally int32 chunk count, int32 length, dataset name;
 *     weight = value / ncall (value as is when ncall <= 0).
 * A file that starts with "GGUF" is read as the GGUF layout, any other as the legacy one. */
#ifndef OXL_IMATRIX_H
#define OXL_IMATRIX_H

#include "oxillama.h"

#include <stddef.h>
#include <stdint.h>

typedef struct oxl_imatrix oxl_imatrix;

/* NULL with err naming the file, entry and byte offset on malformed input, or on a non-finite
 * weight (llama-quantize refuses those too). Owned by the caller; oxl_imatrix_free. */
oxl_imatrix *oxl_imatrix_load(const char *path, oxl_error *err);
void oxl_imatrix_free(oxl_imatrix *m);

/* The weights for tensor `name` (n values: ne0 per expert), or NULL when the file has none. */
const float *oxl_imatrix_find(const oxl_imatrix *m, const char *name, size_t *n);
int64_t oxl_imatrix_n_entries(const oxl_imatrix *m);
/* Chunks the statistics were collected over (0 when the file does not say). */
int64_t oxl_imatrix_chunk_count(const oxl_imatrix *m);
/* The first dataset name, or NULL. */
const char *oxl_imatrix_dataset(const oxl_imatrix *m);

#endif
