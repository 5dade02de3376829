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
 *   qwen2.5vl_merger  Qwen2.5-VL: as Qwen2-VL with RMSNorm for every norm, a gated FFN
 *                   (act(gate) * up) and window attention (clip.vision.n_wa_pattern; windows of 112
 *                   pixels, clip.vision.window_size unread as in llama.cpp): merged tokens in window
 *                   order through the blocks, blocks
 *                   with (il + 1) % n_wa_pattern != 0 attending within their window only, the projector's
 *                   output put back in raster order (clip.cpp set_input, PROJECTOR_TYPE_QWEN25VL);
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
    OXL_CLIP_PROJ_MLP,      /* "mlp" */
    OXL_CLIP_PROJ_QWEN2VL,  /* "qwen2vl_merger" */
    OXL_CLIP_PROJ_QWEN25VL, /* "qwen2.5vl_merger" */
    OXL_CLIP_PROJ_GEMMA3,   /* "gemma3" */
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
/* Patches merged into one output token along each side: 2 for the qwen mergers, 1 for mlp, the
 * pooling factor for gemma3. */
int32_t oxl_clip_merge(const oxl_clip *clip);
/* Embeddings the tower makes for a w x h tile: mlp (w/p)(h/p); the qwen mergers (w/2p)(h/2p); gemma3
 * (w/p)(h/p) / n_merge^2 (clip_n_output_tokens). */
int32_t oxl_clip_n_tokens(const oxl_clip *clip, int32_t w, int32_t h);

/* Encodes one tile: out [n_embd_out, tile->n_tokens] (column j = the embedding of the chunk's j-th
 * position), as llama.cpp's clip_image_batch_encode with the CPU backend and flash attention off. The
 * tile must fit the projector (mlp: square, at least one patch and no more positions than
 * v.position_embd has rows; the qwen mergers: sides multiples of 2 x patch; gemma3: square, patches per
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

/* The tower's attention (llama.cpp's build_attn, flash attention off): q, k, v and out (n_head head_dim,
 * n), out = softmax(q k^T / sqrt(head_dim)) v per head. lo/hi NULL: every row attends to all n rows;
 * else row i to rows lo[i]..hi[i]-1 only, equal bit for bit to the softmax over all n with llama.cpp's
 * -FLT_MAX mask elsewhere (0 < hi[i] - lo[i], hi[i] <= n). work: (2 + head_dim) n floats per thread of
 * pool. */
void oxl_clip_attention(oxl_pool *pool, const float *q, const float *k, const float *v, float *out, int64_t n,
                        int n_head, int head_dim, const int32_t *lo, const int32_t *hi, float *work);

/* The window order of Qwen2.5-VL (clip.cpp set_input, PROJECTOR_TYPE_QWEN25VL): a grid of pw x ph
 * merged tokens (raster order, token (x, y) = y pw + x) cut into windows of grid_window x grid_window
 * tokens (the last row and column of windows smaller), windows in raster order, the tokens of each
 * window in raster order within it. idx[src] = the window-order place of raster token src,
 * inv_idx[dst] = the raster token at window-order place dst (both pw ph entries); bounds[w] = the
 * window-order place of window w's first token, bounds[n_win] = pw ph (at most pw ph + 1 entries).
 * Returns n_win; -1 when a side or grid_window is below 1. */
int32_t oxl_clip_window_index(int32_t pw, int32_t ph, int32_t grid_window, int32_t *idx, int32_t *inv_idx,
                              int32_t *bounds);
/* The 2D vision RoPE positions of the 4 pw ph patch rows in window order: row 4 idx[t] + k (k = 2 dy +
 * dx, the patch (dx, dy) of raster merged token t = y pw + x) gets pos_y = 2 y + dy, pos_x = 2 x + dx
 * (clip.cpp's remap of the positions input). */
void oxl_clip_window_positions(int32_t pw, int32_t ph, const int32_t *idx, int32_t *pos_y, int32_t *pos_x);

#endif
