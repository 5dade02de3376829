/* The device side of the decoder's forward pass (arch/decoder.c) over the Vulkan runtime (src/gpu):
 * the last repeating layers, and with them the output head, run as one command stream. Without
 * OXL_VULKAN every entry point reports that the build has no Vulkan backend. */
#ifndef OXL_DECODER_GPU_H
#define OXL_DECODER_GPU_H

#include "decoder.h"

/* oxl_decoder_offload (decoder.h), oxl_arch.offload of the decoder families: checks that every offloaded layer is one
 * the device path runs (attention layers without latent attention, experts, recurrence, KV sharing, clamping, attention
 * temperature or xIELU; f32/f16/bf16 projections), opens the device, uploads the weights, sets m->gpu_layers and prints
 * the line naming the device. -1 with err naming what is not covered (nothing is left on the device then). */
/* Frees the device weights of d (NULL: nothing). */
void oxl_decoder_gpu_free(struct oxl_decoder_gpu *dg);

/* The first layer the device runs for this context: n_layer when nothing is offloaded, or when
 * the context's settings are not covered (a cache type other than f16, LoRA adapters or a control
 * vector: said once, then the whole model runs on the CPU for this context). */
int oxl_decoder_gpu_first_layer(oxl_ctx *ctx);
/* Runs layers il0 .. n_layer-1 on the device from the residual stream x (n_embd, ub->n), then the
 * head when it is offloaded and no embeddings are asked for: returns 1 with the logits of
 * ub->out_ids written to logits; else 0 with x holding the stream after the last layer (the CPU
 * then runs the head). A device failure is reported through the log, with zero logits (1). */
int oxl_decoder_gpu_forward(oxl_ctx *ctx, const oxl_ubatch *ub, int il0, float *x, float *logits);

#endif
