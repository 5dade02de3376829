/* The tokenizer golden checker (golden_tokenizer.c). */
#ifndef OXL_GOLDEN_TOKENIZER_H
#define OXL_GOLDEN_TOKENIZER_H

#include "errors.h"
#include "golden_report.h"

/* llama.cpp's tokenizer fixtures (golden/tokenizer: <vocab>.gguf with <vocab>.gguf.inp and .out, the
 * layout of llama.cpp tests/test-tokenizer-0.cpp): each string, tokenized without BOS/EOS and without
 * parsing special tokens, must give the ids on its line (one check per string), and the pieces of
 * its ids must give the string back (one more check per string, except for WordPiece, which is
 * lossy, and text that is not UTF-8). Returns 0 when the files could be read (failures are counted
 * in r), -1 with err otherwise. */
int oxl_golden_tokenizer(const char *vocab_path, oxl_golden_report *r, oxl_error *err);

#endif
