/* The multimodal golden checker (golden.kind = multimodal; golden/mm/README.md): llama.cpp's libmtmd
 * on an mmproj, a text model and an image, step by step. */
#ifndef OXL_GOLDEN_MM_H
#define OXL_GOLDEN_MM_H

#include "gguf.h"
#include "golden_report.h"
#include "oxillama.h"

/* Loads the mmproj golden.mmproj (beside the golden file) and the text model (text_model_path, or
 * golden.text_model_path relative to the golden file when NULL), preprocesses `image_rgb` and splits
 * golden.prompt into chunks, then compares with llama.cpp: the chunk layout (chunk_type,
 * chunk_n_tokens, chunk_n_pos, chunk_pos0, chunk_grid_x / _y, golden.n_chunks), the sequence
 * (tokens, token_chunk, pos in either layout, golden.n_tokens, golden.n_pos) exactly, and every
 * image.K.pixels bit for bit. One report line per check; returns -1 with err when the files cannot
 * be read or have the wrong shapes. */
int oxl_golden_mm(const oxl_gguf *g, const char *text_model_path, oxl_golden_report *r, oxl_error *err);

#endif
