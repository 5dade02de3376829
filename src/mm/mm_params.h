/* The preprocessing parameters of an mmproj file: what llama.cpp's clip.cpp (load_hparams) reads
 * for turning an image into the tiles its vision tower encodes, and which preprocessor mtmd.cpp
 * (mtmd_context::init_vision) picks for the projector. The tower's own keys (embedding_length,
 * heads, blocks, ...) are read with the tower. */
#ifndef OXL_MM_PARAMS_H
#define OXL_MM_PARAMS_H

#include "gguf.h"

#include <stdbool.h>
#include <stdint.h>

/* The projectors whose preprocessing is implemented (clip.projector_type). */
typedef enum oxl_mm_projector {
    OXL_MM_PROJ_MLP,      /* "mlp": LLaVA-1.5; with image_grid_pinpoints LLaVA-NeXT (anyres) */
    OXL_MM_PROJ_QWEN2VL,  /* "qwen2vl_merger": Qwen2-VL */
    OXL_MM_PROJ_QWEN25VL, /* "qwen2.5vl_merger": Qwen2.5-VL (preprocessed as Qwen2-VL) */
    OXL_MM_PROJ_GEMMA3,   /* "gemma3": Gemma 3 (SigLIP tower, average-pooled patches) */
} oxl_mm_projector;

/* How an image becomes tiles (mtmd's image preprocessors). */
typedef enum oxl_mm_prep_kind {
    OXL_MM_PREP_FIXED,  /* letterbox to image_size x image_size (mtmd_image_preprocessor_fixed_size) */
    OXL_MM_PREP_ANYRES, /* pinpoint tiles + overview (mtmd_image_preprocessor_llava_uhd with pinpoints) */
    OXL_MM_PREP_DYN,    /* smart resize to multiples of patch * merge (mtmd_image_preprocessor_dyn_size) */
} oxl_mm_prep_kind;

/* The resize algorithms of mtmd-image.cpp's img_tool (llama.cpp's own, not PIL's). */
typedef enum oxl_mm_resize {
    OXL_MM_RESIZE_BILINEAR,
    OXL_MM_RESIZE_BICUBIC,
} oxl_mm_resize;

#define OXL_MM_MAX_PINPOINTS 64                     /* resolution candidates (pairs) an mmproj may list */
#define OXL_MM_MAX_SIDE 16384                       /* largest image_size, pinpoint side or resized side, pixels */
#define OXL_MM_MAX_TILE_PIXELS (16LL * 1024 * 1024) /* largest resized image, pixels */

typedef struct oxl_mm_params {
    oxl_mm_projector projector;
    const char *projector_name; /* as in the file; static string */
    oxl_mm_prep_kind kind;
    int32_t image_size;    /* clip.vision.image_size: the fixed size, the anyres tile size */
    int32_t patch_size;    /* clip.vision.patch_size */
    float mean[3], std[3]; /* clip.vision.image_mean / image_std, per RGB channel */
    int32_t n_pinpoints;   /* clip.vision.image_grid_pinpoints as (width, height) pairs */
    int32_t pinpoints[OXL_MM_MAX_PINPOINTS][2];
    int32_t n_merge;                /* patches merged per side into one token: Qwen
                                     * clip.vision.spatial_merge_size (default 2), Gemma 3
                                     * clip.vision.projector.scale_factor (default 4); 1 otherwise */
    int64_t min_pixels, max_pixels; /* dynamic resolution bounds (Qwen: 8 .. 4096 merged tokens) */
    oxl_mm_resize resize;           /* the whole image (fixed) or the refined image (anyres) */
    uint8_t pad[3];                 /* letterbox pad colour of that resize */
    oxl_mm_resize resize_overview;  /* anyres overview: no letterbox */
} oxl_mm_params;

/* Image token limits, as mtmd_context_params.image_min_tokens / image_max_tokens: 0 keeps the
 * projector's default (Qwen-VL: 8 and 4096 merged tokens). */
typedef struct oxl_mm_limits {
    int32_t min_tokens, max_tokens;
} oxl_mm_limits;

/* Reads the preprocessing parameters of the mmproj g (a "clip" GGUF) with llama.cpp's type rules:
 * clip.projector_type (else clip.vision.projector_type, else "mlp") must name a projector above;
 * clip.vision.image_size, patch_size, spatial_merge_size and projector.scale_factor must be uint32; image_mean and
 * image_std float32 arrays of 3; image_grid_pinpoints an int32 array of (width, height) pairs. limits may be NULL.
 * Returns 0, or -1 with err naming the file, key, type or value at fault: a missing or mistyped key, a file without a
 * vision encoder, an unknown projector, sizes that are not positive or exceed OXL_MM_MAX_SIDE, a zero std, min above
 * max pixels, a Gemma 3 image_size whose patches per side are not a multiple of the scale factor. */
int oxl_mm_params_read(const oxl_gguf *g, const oxl_mm_limits *limits, oxl_mm_params *p, oxl_error *err);

/* The text mtmd puts before and after each image of the projector (mtmd_context::init_vision img_beg /
 * img_end, tokenized with special tokens parsed): Qwen-VL "<|vision_start|>" / "<|vision_end|>",
 * Gemma 3 "<start_of_image>" / "<end_of_image>", "" otherwise. Static strings. */
void oxl_mm_image_text(oxl_mm_projector proj, const char **begin, const char **end);

/* Whether the projector's images decode with causal attention off (mtmd_decode_use_non_causal:
 * Gemma 3). */
bool oxl_mm_non_causal(oxl_mm_projector proj);

#endif
