/* The mmproj file of a vision model (GGUF, general.architecture = "clip"): its vision tower and
 * projector, as llama.cpp's libmtmd loads and runs them (tools/mtmd/clip.cpp: load_hparams,
 * load_tensors; the graphs of tools/mtmd/models/llava.cpp and qwen2vl.cpp). A tile's normalised
 * pixels go in, embeddings of the text model's n_embd come out.
 *
 * Projectors:
 *   mlp             LLaVA-1.5 / LLaVA-NeXT: CLIP ViT (patch conv, class embedding appended LAST,
 *                   learned positions, pre-LN, the first feature_layer / block_count-1 blocks), then
 *                   rows 1..n-1 through mm.0 -> GELU -> mm.2;
 *   qwen2vl_merger  Qwen2-VL: two patch kernels summed, patches in 2x2-merge order, 2D vision RoPE,
 *                   all blocks, post-LN, groups of 4 patches through mm.0 -> GELU -> mm.2;
 *   gemma3          Gemma 3 (models/siglip.cpp): SigLIP (patch conv with bias, learned positions, no
 *                   class embedding, all blocks, post-LN), the patch grid average-pooled n_merge x
 *                   n_merge (clip.vision.projector.scale_factor, default 4), RMSNorm times
 *                   mm.soft_emb_norm.weight, then mm.input_projection.weight transposed. */
#ifndef OXL_CLIP_H
#define OXL_CLIP_H

#include "gguf.h"
#include "mm.h"
#include "pool.h"

#include <stdbool.h>
#include <stdint.h>

typedef enum oxl_clip_proj {
    OXL_CLIP_PROJ_MLP,     /* "mlp" */
    OXL_CLIP_PROJ_QWEN2VL, /* "qwen2vl_merger" */
    OXL_CLIP_PROJ_GEMMA3,  /* "gemma3" */
} oxl_clip_proj;

typedef struct oxl_clip oxl_clip;

/* Opens the mmproj file at path and binds its tower and projector. NULL with err naming the file and
 * the key or tensor at fault: not a clip file, no vision encoder, an unknown projector (the message
 * lists the supported ones), a key missing or of another type than llama.cpp reads (u32 keys must be
 * uint32, eps float32, flags bool), a tensor missing, of a shape that does not fit the keys, or of a
 * type the kernels cannot compute with. Weights F32, F16, Q8_0 (any type with kernels; vectors F32). */
oxl_clip *oxl_clip_load(const char *path, oxl_error *err);
/* The same on an open GGUF; the clip takes g over (closes it in oxl_clip_free, also on failure). */
oxl_clip *oxl_clip_load_gguf(oxl_gguf *g, oxl_error *err);
void oxl_clip_free(oxl_clip *clip);

oxl_clip_proj oxl_clip_projector(const oxl_clip *clip);
/* The projector's name as clip.projector_type spells it. */
const char *oxl_clip_projector_name(oxl_clip_proj proj);
/* Size of one output embedding: mm.2.weight ne1; it must equal the text model's n_embd. */
int32_t oxl_clip_n_embd_out(const oxl_clip *clip);
/* clip.vision.patch_size, in pixels. */
int32_t oxl_clip_patch_size(const oxl_clip *clip);
/* Patches merged into one output token along each side: 2 for qwen2vl_merger, 1 for mlp, the
 * pooling factor for gemma3. */
int32_t oxl_clip_merge(const oxl_clip *clip);
/* Embeddings the tower makes for a w x h tile: mlp (w/p)(h/p); qwen2vl_merger (w/2p)(h/2p); gemma3
 * (w/p)(h/p) / n_merge^2 (clip_n_output_tokens). */
int32_t oxl_clip_n_tokens(const oxl_clip *clip, int32_t w, int32_t h);

/* Encodes one tile: out [n_embd_out, tile->n_tokens] (column j = the embedding of the chunk's j-th
 * position), as llama.cpp's clip_image_batch_encode with the CPU backend and flash attention off. The
 * tile must fit the projector (mlp: square, at least one patch and no more positions than
 * v.position_embd has rows; qwen2vl_merger: sides multiples of 2 x patch; gemma3: square, patches per
 * side a multiple of n_merge, as many as v.position_embd has rows) and tile->n_tokens must be
 * oxl_clip_n_tokens; otherwise -1 with err saying which. pool: the threads of the products. */
int oxl_clip_encode(const oxl_clip *clip, const oxl_mm_tile *tile, float *out, oxl_pool *pool, oxl_error *err);

/* The average pooling of Gemma 3's projector, as ggml_pool_2d(GGML_OP_POOL_AVG, k, k, k, k, 0, 0) on the
 * transposed sequence: x (d, side * side) holds one d-vector per patch of a side x side grid in raster
 * order; y (d, (side / k)^2) gets, for each k x k block (raster order of blocks), the float sum of its
 * k * k vectors in row-major order, divided by (float)(k * k). side must be a multiple of k. */
void oxl_mm_avg_pool(const float *x, int64_t d, int64_t side, int64_t k, float *y);

/* An observer of the tower's intermediate sequences, for checks against llama.cpp's graph: called
 * during oxl_clip_encode with name "vit_inp" (the sequence before the first norm), "pre_ln" (after
 * v.pre_ln, when the file has it) and "vit_layer_out" (after block layer), x [ne0 = n_embd, ne1 = rows]
 * valid during the call. fn NULL removes it. */
typedef void (*oxl_clip_probe_fn)(void *user, const char *name, int layer, const float *x, int64_t ne0, int64_t ne1);
void oxl_clip_set_probe(oxl_clip *clip, oxl_clip_probe_fn fn, void *user);

#endif
