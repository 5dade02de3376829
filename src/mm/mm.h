/* The vision side, as llama.cpp's libmtmd defines it (tools/mtmd/): an image becomes one or more
 * tiles (preprocessing: mtmd-image.cpp), each tile goes through the vision tower and projector of an
 * mmproj file (clip.cpp, models/<family>.cpp) and comes out as embeddings of the text model's n_embd, which
 * the text model decodes at positions the prompt's chunks assign (mtmd.cpp, mtmd-helper.cpp).
 *
 * This header holds the types the parts share. */
#ifndef OXL_MM_H
#define OXL_MM_H

#include <stdint.h>

/* One picture the vision tower encodes: a whole image, a LLaVA-NeXT tile or its overview. */
typedef struct oxl_mm_tile {
    int32_t w, h;     /* pixels */
    float *pixels;    /* [w, h, 3] planar (R plane, G plane, B plane; each row-major from the
                         top-left pixel), normalised: the vision graph's input (llama.cpp's inp_raw);
                         malloc'd, owned by the tile */
    int32_t grid_x;   /* token grid as mtmd stores it: M-RoPE: merged-token columns; otherwise the */
    int32_t grid_y;   /*   number of tokens x 1 */
    int32_t n_tokens; /* embeddings the tower makes for it */
} oxl_mm_tile;

/* Frees the tile's pixels (not the tile); NULL is a no-op. */
void oxl_mm_tile_clear(oxl_mm_tile *tile);

#endif
