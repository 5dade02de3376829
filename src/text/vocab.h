/* Vocabulary and tokenizer read from a GGUF file's tokenizer.ggml.* metadata.
 *
 * Supported tokenizer.ggml.model values: "llama" (SPM: SentencePiece BPE with byte fallback), "gpt2"
 * (byte-level BPE with tokenizer.ggml.merges and the regex pre-tokenizer named by tokenizer.ggml.pre),
 * "bert" (WordPiece) and "t5" (unigram with the precompiled normalizer). Behaviour reproduced: llama.cpp
 * src/llama-vocab.cpp and src/unicode.cpp (llama_vocab::impl::load, tokenize, tokenizer_st_partition,
 * token_to_piece, detokenize and the SPM/BPE/WPM/UGM tokenizer sessions), so that the same text gives
 * the same token ids. The public oxl_tokenize/oxl_token_* wrappers in include/oxillama.h forward here.
 */
#ifndef OXL_VOCAB_H
#define OXL_VOCAB_H

#include "gguf.h"
#include "oxillama.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct oxl_vocab oxl_vocab;

/* Builds the vocabulary from g's metadata: tokenizer.ggml.model (required; see above),
 * tokenizer.ggml.tokens (required), .scores and .token_type (optional; when present, arrays of the
 * same length as the tokens), for BPE tokenizer.ggml.merges (required, except for Kimi-K2) and
 * tokenizer.ggml.pre (a name from llama.cpp's pre-tokenizer list; absent = llama.cpp's default), for
 * UGM tokenizer.ggml.precompiled_charsmap (optional), the special token ids
 * (bos/eos/eot/eom/unknown/seperator/padding/mask/fim_*; 0xFFFFFFFF or -1 means none, any other id
 * outside the vocabulary is an error naming the key; each model has llama.cpp's defaults),
 * add_bos_token / add_eos_token / add_sep_token / add_space_prefix / remove_extra_whitespaces and the
 * normalizer's lowercase / strip_accents (defaults per model and pre-tokenizer, as llama.cpp).
 * Copies everything it needs: g may be closed afterwards. Returns NULL with err set (naming file, key,
 * index and value) on any invalid input: an unknown model or pre-tokenizer, a missing merges list, a
 * repeated token text, a charsmap whose double array does not fit it. Merges naming unknown tokens,
 * empty merges and tokens that are not UTF-8 load and never apply wrongly. */
oxl_vocab *oxl_vocab_load(const oxl_gguf *g, oxl_error *err);
void oxl_vocab_free(oxl_vocab *v);

int32_t oxl_vocab_n_tokens(const oxl_vocab *v);

/* As oxl_tokenize in include/oxillama.h: writes the ids to out and returns their number, or minus the
 * number needed when cap is too small (out untouched); INT32_MIN when an argument is invalid (v NULL,
 * text NULL with len > 0, cap < 0, out NULL with cap > 0, len > INT32_MAX / 4) or memory runs out.
 * Steps (llama_vocab::impl::tokenize): split on special-token texts (control and unknown ones only
 * when parse_special, user-defined ones always, with their LSTRIP/RSTRIP); BOS when add_special and the
 * vocabulary adds it (WordPiece: always); each text fragment through the model's tokenizer:
 * - SPM: a leading space if it starts the text or follows a special token (add_space_prefix), spaces
 *   become U+2581, characters merge pairwise by token score (ties: leftmost first), leftover
 *   characters become byte tokens <0xXX> (else the unknown token);
 * - BPE: the pre-tokenizer's regex split, GPT-2 byte encoding, merges by rank (ties: leftmost);
 * - WPM: BERT's basic tokenization (lowercase, accents stripped, punctuation and CJK apart), then the
 *   longest "▁"-prefixed token match, a word that cannot be covered becoming [UNK];
 * - UGM: the precompiled normalizer, space escaping, the best-scoring segmentation (Viterbi);
 * then EOS (WordPiece: SEP) when add_special and the vocabulary adds it. Time and memory grow
 * linearly with len (BPE merging: n log n). Thread-safe: v is only read. */
int32_t oxl_vocab_tokenize(const oxl_vocab *v, const char *text, size_t len, oxl_token *out, int32_t cap,
                           bool add_special, bool parse_special);

/* As oxl_token_to_piece: the bytes of tok (U+2581 rendered as a space, byte tokens as their raw byte,
 * byte-level BPE tokens mapped back through GPT-2's byte table);
 * control and unknown tokens are empty unless special. Returns bytes written, minus the size needed
 * when cap is too small, 0 for an id outside the vocabulary. */
int32_t oxl_vocab_token_to_piece(const oxl_vocab *v, oxl_token tok, char *buf, int32_t cap, bool special);

oxl_token oxl_vocab_bos(const oxl_vocab *v); /* -1 when none */
oxl_token oxl_vocab_eos(const oxl_vocab *v); /* -1 when none */
/* End of generation: EOS, EOT, EOM, FIM pad/repo/file-separator, and the tokens llama.cpp recognises
 * by text ("<|eot_id|>", "<|im_end|>", "<|end|>", "<end_of_turn>", "<|endoftext|>", …). */
bool oxl_vocab_is_eog(const oxl_vocab *v, oxl_token tok);

/* Text of toks[0..n) (llama_vocab::impl::detokenize): the pieces concatenated (control and unknown
 * tokens only when unparse_special), one leading space of the first piece dropped when the vocabulary
 * adds a space prefix, a leading BOS and trailing EOS the vocabulary adds dropped when remove_special,
 * and llama.cpp's clean-up of spaces before punctuation and contractions for the vocabularies that
 * ask for it (BPE and WPM, except the pre-tokenizers that keep spaces). Returns the bytes written, or
 * minus the size needed (before clean-up) when cap is too small; INT32_MIN for invalid arguments. */
int32_t oxl_vocab_detokenize(const oxl_vocab *v, const oxl_token *toks, int32_t n, char *out, int32_t cap,
                             bool remove_special, bool unparse_special);

/* Streaming detokenizer step (oxl_detok_push): appends the piece of tok (special = false, as
 * llama.cpp's generation output) to what d holds back, writes everything up to the last complete
 * UTF-8 character to out and keeps an incomplete trailing sequence (at most 3 bytes) in d. Bytes that
 * can never form a character are written as they are. Returns bytes written, or minus the size needed
 * when cap is too small (d is then unchanged); INT32_MIN when d is NULL. oxl_detok_flush writes what
 * is still held at the end of the stream. */
int32_t oxl_vocab_detok_push(oxl_detok *d, const oxl_vocab *v, oxl_token tok, char *out, int32_t cap);

/* Whether detokenization drops one leading space of the first piece (the vocabulary adds a space
 * prefix when tokenizing: SPM, and UGM/BPE files that set tokenizer.ggml.add_space_prefix). */
bool oxl_vocab_adds_space_prefix(const oxl_vocab *v);
/* The separator token (tokenizer.ggml.seperator_token_id; -1 when none) and whether the vocabulary
 * adds BOS, EOS and SEP (llama_vocab_get_add_bos / _eos / _sep). */
oxl_token oxl_vocab_sep(const oxl_vocab *v);
/* The fill-in-the-middle token which (oxl_fim_token: pre, suf, mid, pad, rep, sep); -1 when none. */
oxl_token oxl_vocab_fim(const oxl_vocab *v, int which);
bool oxl_vocab_adds_bos(const oxl_vocab *v);
bool oxl_vocab_adds_eos(const oxl_vocab *v);
bool oxl_vocab_adds_sep(const oxl_vocab *v);

/* tokenizer.ggml.model: "llama", "gpt2", "bert" or "t5". Owned by v. */
const char *oxl_vocab_model_name(const oxl_vocab *v);

#endif
