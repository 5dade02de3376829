/* The Walsh-Hadamard transform (ggml_compute_forward_fwht). */
#ifndef OXL_HADAMARD_H
#define OXL_HADAMARD_H

#include <stdint.h>

/* The Walsh-Hadamard rotation llama.cpp applies around a quantized KV cache (llama-kv-cache.cpp
 * attn_rot_k / attn_rot_v, computed by ggml_compute_forward_fwht): each run of n floats of x (total
 * of them, n a power of two) times 1/sqrtf(n), then the butterflies u + v, u - v with the run
 * length doubling. The rotation is its own inverse. */
void oxl_fwht_rows(float *x, int64_t total, int n);

#endif
