/* Collecting an importance matrix, and writing it in both of llama-imatrix's layouts
 * (tools/imatrix/imatrix.cpp, IMatrixCollector): the statistics of the activations each weight
 * matrix is multiplied with during a model's forward passes.
 *
 * What is collected (collect_imatrix): every product with a weight whose name starts with "blk."
 * (and output.weight when asked, llama-imatrix's --process-output) over at least 16 activation
 * columns (llama-imatrix ignores smaller batches), and every product with an expert of a 3-D
 * "*_exps" tensor (ggml_mul_mat_id, whatever its name or size). Per weight: in_sum2 (ne0 floats per
 * expert, or per slice of another 3-D tensor) = the sum over columns x of x[j]*x[j], accumulated in
 * float column by column in the order the products arrive; counts = the number of columns (one
 * count for a plain or batched matrix, one per expert for experts).
 *
 * Use: oxl_imatrix_acc_new, oxl_matmul_set_observer(oxl_imatrix_acc_observe, acc) around the
 * forward passes, then oxl_imatrix_acc_check and a writer. The layouts are those imatrix.h reads:
 *   GGUF (save_imatrix): general.type "imatrix", imatrix.datasets (string array),
 *     imatrix.chunk_count and imatrix.chunk_size (u32); per weight in strcmp order of names
 *     "<name>.in_sum2" f32 (ne0 * n_mat / n_counts, n_counts) and "<name>.counts" f32 (1, n_counts):
 *     experts one row each, the slices of a batched 3-D product in one row; every weight is written.
 *   legacy .dat (save_imatrix_legacy): the weights with a non-zero count, in strcmp order:
 *     ncall = ceil(max count / chunk_size), values (sum / count) * ncall (1 * ncall where a count
 *     is 0); then the chunk count and the dataset name.
 * The chunk count is max count / chunk_size (llama-imatrix's m_last_chunk). */
#ifndef OXL_IMATRIX_COLLECT_H
#define OXL_IMATRIX_COLLECT_H

#include "matmul.h"
#include "oxillama.h"

#include <stdbool.h>
#include <stdint.h>

typedef struct oxl_imatrix_acc oxl_imatrix_acc;

/* process_output: also collect output.weight. NULL with err when memory is short. Owned by the
 * caller; oxl_imatrix_acc_free. */
oxl_imatrix_acc *oxl_imatrix_acc_new(bool process_output, oxl_error *err);
void oxl_imatrix_acc_free(oxl_imatrix_acc *acc);

/* The oxl_matmul observer (user = the accumulator). Problems found while observing (memory, a
 * weight seen with two shapes) are kept for oxl_imatrix_acc_check; later products are then ignored. */
void oxl_imatrix_acc_observe(void *acc, const oxl_tensor *w, const float *x, int64_t n);

/* 0, or -1 with err naming the weight: an error while observing, or a sum that is not finite
 * (llama-imatrix stops on those: "inf detected in <name>"). */
int oxl_imatrix_acc_check(const oxl_imatrix_acc *acc, oxl_error *err);

/* Weights collected so far. */
int64_t oxl_imatrix_acc_n_entries(const oxl_imatrix_acc *acc);
/* The chunk count the writers record for chunks of chunk_size tokens. */
int32_t oxl_imatrix_acc_chunk_count(const oxl_imatrix_acc *acc, int32_t chunk_size);

/* Writes the GGUF layout (datasets: n_datasets file names, usually the text file given to -f).
 * -1 with err naming the file on failure; no partial file is left. */
int oxl_imatrix_write_gguf(const oxl_imatrix_acc *acc, const char *path, const char *const *datasets,
                           int64_t n_datasets, int32_t chunk_size, oxl_error *err);
/* Writes the legacy layout (dataset: the text file's name, "" for none). */
int oxl_imatrix_write_dat(const oxl_imatrix_acc *acc, const char *path, const char *dataset, int32_t chunk_size,
                          oxl_error *err);

#endif
