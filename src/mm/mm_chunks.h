/* A prompt with images as llama.cpp's mtmd_tokenize (tools/mtmd/mtmd.cpp) splits it: text chunks
 * of token ids and image chunks (one per tile the tower encodes), each with its place in the
 * sequence: how many embeddings or tokens it holds (n_tokens), how far it advances the position
 * (n_pos) and where it starts (pos0). */
#ifndef OXL_MM_CHUNKS_H
#define OXL_MM_CHUNKS_H

#include "mm_params.h"
#include "mm_preprocess.h"
#include "oxillama.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* llama.cpp's default media marker (mtmd_default_marker). */
#define OXL_MM_DEFAULT_MARKER "<__media__>"

typedef enum oxl_mm_chunk_type {
    OXL_MM_CHUNK_TEXT = 0, /* numbered as mtmd_input_chunk_type */
    OXL_MM_CHUNK_IMAGE = 1,
} oxl_mm_chunk_type;

typedef struct oxl_mm_chunk {
    oxl_mm_chunk_type type;
    oxl_token *tokens;      /* text: [n_tokens] token ids, owned by the chunk; NULL for images */
    int32_t image, tile;    /* image: index of the image among those given, of the tile in its oxl_mm_tiles */
    int32_t n_tokens;       /* text tokens, or embeddings of the tile */
    int32_t n_pos;          /* positions it takes: n_tokens, or max(grid_x, grid_y) with M-RoPE */
    int32_t pos0;           /* position of its first token: the sum of the n_pos before it */
    int32_t grid_x, grid_y; /* image: the tile's token grid (mm.h); 0 for text */
} oxl_mm_chunk;

typedef struct oxl_mm_chunks {
    oxl_mm_chunk *chunks; /* [n] */
    int32_t n;
    int32_t n_tokens; /* sum of n_tokens: sequence length */
    int32_t n_pos;    /* sum of n_pos: the position after the prompt */
    bool mrope;       /* four positions per token (mtmd_decode_use_mrope: the Qwen-VL projectors) */
} oxl_mm_chunks;

typedef struct oxl_mm_prompt {
    const char *marker; /* the media marker; NULL: OXL_MM_DEFAULT_MARKER */
    bool images_first;  /* a prompt without a marker gets one per image in front (llama-mtmd-cli) */
    bool add_special;   /* BOS / EOS as the vocabulary asks (mtmd_input_text.add_special) */
    bool parse_special; /* special tokens' text becomes those tokens (mtmd_input_text.parse_special) */
} oxl_mm_prompt;

/* mtmd_tokenize: splits text (len bytes) at every marker, one image per marker in order; each text
 * part is tokenized alone with model's tokenizer (add_special false); image i becomes one chunk per
 * tile of images[i] (LLaVA-NeXT: the tiles, then the overview), framed by the text
 * <|vision_start|> / <|vision_end|> for the Qwen-VL projectors; consecutive text merges into one
 * chunk; with add_special, BOS goes in front (into the first chunk if it is text) and EOS at the end
 * when the vocabulary adds them. Positions as mtmd: M-RoPE images advance by max(grid_x, grid_y).
 * On success out owns the chunks (oxl_mm_chunks_free). Returns 0, or -1 with err: more markers
 * than images or fewer, a tokenizer failure, a sequence beyond INT32_MAX tokens, memory. */
int oxl_mm_tokenize(const oxl_model *model, const oxl_mm_params *p, const char *text, size_t len,
                    const oxl_mm_tiles *images, int32_t n_images, const oxl_mm_prompt *opt, oxl_mm_chunks *out,
                    oxl_error *err);

/* The text mtmd puts before and after each image of projector p (init_vision's img_beg / img_end):
 * "<|vision_start|>" / "<|vision_end|>" for the Qwen-VL projectors, "" otherwise; static strings. */
void oxl_mm_image_frame(const oxl_mm_params *p, const char **beg, const char **end);

/* The sequence, one entry per position j < c->n_tokens, any output may be NULL: tokens[j] the token id
 * (-1 where an image embedding goes), token_chunk[j] its chunk, pos the decoder positions: [n_tokens]
 * without M-RoPE; with M-RoPE [n_tokens, 4] as ggml_rope_multi reads them, pos[s * n_tokens + j] for
 * section s = t, h, w, e: text at p is (p, p, p, 0), image token i of a chunk at p0 with a grid gw
 * wide is (p0, p0 + i / gw, p0 + i % gw, 0) (mtmd_image_tokens_get_decoder_pos). */
void oxl_mm_chunks_sequence(const oxl_mm_chunks *c, int32_t *tokens, int32_t *token_chunk, int32_t *pos);

/* Frees the chunks and their tokens; zeroes *c. NULL is a no-op. */
void oxl_mm_chunks_free(oxl_mm_chunks *c);

#endif
