/* The gated short convolution of LFM2's conv layers, as llama.cpp's build_shortconv_block
 * (src/models/lfm2.cpp) with ggml's ssm_conv (ggml/src/ggml-cpu/ops.cpp):
 *
 *   B | C | x = W_in · a                    (n_embd each)
 *   y = C * conv(B * x)                     (causal depthwise conv over the last l_cache inputs of each
 *                                            channel, no bias, no activation)
 *   out = W_out · y
 *
 * The conv state (the last l_cache - 1 inputs B * x of every channel) of each sequence lives in the
 * context's memory (oxl_memory_conv_state, src/model/model_memory.h); there is no scan state. Tokens
 * advance the state one at a time in the order of the pass, so several sequences may share a pass. */
#ifndef OXL_SHORTCONV_H
#define OXL_SHORTCONV_H

#include "blocks.h"

typedef struct oxl_shortconv_layer {
    oxl_tensor in;   /* (n_embd, 3*n_embd) B | C | x */
    oxl_tensor conv; /* (l_cache, n_embd) f32 taps, oldest first */
    oxl_tensor out;  /* (n_embd, n_embd) */
} oxl_shortconv_layer;

/* Reads shortconv.l_cache into *l_cache and sets the per-sequence conv state size (m->hp.n_embd_r
 * = (l_cache - 1) * n_embd; n_embd_s 0). Returns -1 with err naming the key when absent or out of
 * range (2 .. 64). */
int oxl_shortconv_hparams(oxl_model *m, int32_t *l_cache, oxl_error *err);

/* Binds layer il's blk.N.shortconv.{in_proj,conv,out_proj}.weight with their shapes; a missing or
 * mis-shaped tensor is an error naming it. */
int oxl_shortconv_bind(const oxl_model *m, int32_t l_cache, oxl_shortconv_layer *l, int il, oxl_error *err);

/* Bytes of work oxl_shortconv_forward needs for n tokens. */
size_t oxl_shortconv_work_size(const oxl_model *m, int32_t n);

/* out (n_embd, n) = the block of layer il on a (n_embd, n), advancing the conv states of the pass's
 * sequences. work holds oxl_shortconv_work_size bytes. */
void oxl_shortconv_forward(oxl_ctx *ctx, int32_t l_cache, const oxl_shortconv_layer *l, int il, const oxl_ubatch *ub,
                           const float *a, float *out, void *work);

#endif
