/* GBNF grammars (llama.cpp's src/llama-grammar.cpp and grammars/README.md): a parser into rules of
 * elements, and a matcher that keeps the set of pushdown stacks of rule positions a text can be in,
 * advanced one UTF-8 code point at a time, with partial UTF-8 sequences at a token's end carried
 * into the next token as llama.cpp carries them.
 *
 * Syntax: `name ::= alternatives` rules (one per line, continued inside groups and after `|`),
 * sequences of "literals", [character classes] with ranges and ^ negation, `.` (any character),
 * rule references, ( groups ), the repetitions * + ? {m} {m,} {m,n} (at most 2000 copies, as
 * llama.cpp), escapes \x.. \u.... \U........ \t \r \n \\ \" \[ \], # comments, and the token
 * references <[id]>, <piece> (a text that is one token of the vocabulary) and their negations !<…>.
 *
 * Work is bounded: a grammar has at most OXL_GRAMMAR_MAX_ELEMENTS elements and
 * OXL_GRAMMAR_MAX_SYMBOLS rules, groups nest at most OXL_GRAMMAR_MAX_NESTING deep, a matcher state
 * holds at most OXL_GRAMMAR_MAX_STACKS stacks of at most OXL_GRAMMAR_MAX_DEPTH positions, and one
 * expansion visits at most OXL_GRAMMAR_MAX_WORK stacks; going past a bound is an error that says
 * which bound, never a hang. Left recursion is refused, as llama.cpp refuses it. */
#ifndef OXL_GRAMMAR_H
#define OXL_GRAMMAR_H

#include "vocab.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define OXL_GRAMMAR_MAX_ELEMENTS (1 << 22)
#define OXL_GRAMMAR_MAX_SYMBOLS (1 << 18)
#define OXL_GRAMMAR_MAX_NESTING 256
#define OXL_GRAMMAR_MAX_STACKS 4096
#define OXL_GRAMMAR_MAX_DEPTH 2048
#define OXL_GRAMMAR_MAX_WORK (1 << 16)

typedef struct oxl_grammar oxl_grammar;

/* Parses src (NUL-terminated) and builds the matcher at the start of rule root (NULL: "root").
 * vocab (may be NULL) resolves <piece> token references and is kept for oxl_grammar_apply and
 * oxl_grammar_accept_token, so it must outlive the grammar. Returns NULL and writes
 * "LINE:COLUMN: what is wrong" (1-based, columns in bytes) into err (err_len bytes, may be 0)
 * when the text is not a grammar, a rule is used but not defined, the root is missing, a rule is
 * left-recursive, a bound is passed or memory runs out. */
oxl_grammar *oxl_grammar_parse(const char *src, const char *root, const oxl_vocab *vocab, char *err, size_t err_len);
void oxl_grammar_free(oxl_grammar *g);

/* Some stack is empty: the text so far is a complete match (end of generation allowed). */
bool oxl_grammar_can_end(const oxl_grammar *g);
/* No stack is left: the text so far matches no prefix of the grammar (or an error happened). */
bool oxl_grammar_dead(const oxl_grammar *g);
/* The error that stopped the matcher (a bound passed, memory), or NULL. */
const char *oxl_grammar_error(const oxl_grammar *g);

/* llama_grammar_accept_token: advances every stack by token tok whose text is piece[0..len) (a
 * token-reference position matches tok, the others the piece's code points; bytes of an unfinished
 * UTF-8 sequence wait for the next piece). Returns 0, or -1 when no stack is left or a bound was
 * passed (the grammar is then dead). */
int oxl_grammar_accept_piece(oxl_grammar *g, int32_t tok, const char *piece, size_t len);
/* llama_grammar_accept_impl: the same with tok's text (special tokens rendered) from the vocabulary;
 * an end-of-generation token leaves the state as it is. Returns 0 or -1 as above. */
int oxl_grammar_accept_token(oxl_grammar *g, int32_t tok);

/* llama_grammar_apply_impl for n candidate ids: allowed[i] becomes false for a candidate the grammar
 * rejects (an end-of-generation token unless the match can end here, a token with an empty text or
 * one starting with a NUL byte, a token whose text cannot continue any stack), true otherwise.
 * Needs the vocabulary. Returns 0, or -1 (a bound passed, memory, no vocabulary). */
int oxl_grammar_apply(oxl_grammar *g, const int32_t *ids, int32_t n, bool *allowed);

/* --- lazy grammars (llama.cpp's grammar_lazy: llama_grammar_init_impl with lazy = true) ------------
 * A lazy grammar waits for a trigger: while waiting, oxl_grammar_apply allows every token and
 * oxl_grammar_accept_token (end-of-generation tokens too) only appends the token's text to a buffer.
 * A trigger token starts the grammar with that token accepted; else, once a trigger pattern matches
 * the whole buffer (std::regex_match), the grammar starts with the text from the pattern's first
 * capturing group that matched a non-empty text (the whole buffer when none did) accepted, and the
 * buffer is dropped (llama_grammar_accept_impl). */

/* A compiled trigger pattern (grammar_trigger.c; PCRE2 on bytes). NULL with err written when the
 * pattern does not compile or memory runs out. */
typedef struct oxl_trigger_re oxl_trigger_re;
oxl_trigger_re *oxl_trigger_re_new(const char *pattern, char *err, size_t err_len);
/* Where the constrained text starts when re matches all of text[0..len), else -1. */
long oxl_trigger_re_match(oxl_trigger_re *re, const char *text, size_t len);
void oxl_trigger_re_free(oxl_trigger_re *re);

/* Makes g lazy with the given full-match patterns and trigger token ids (either list may be empty,
 * not both). Returns 0, or -1 with err written (a pattern that does not compile, memory). */
int oxl_grammar_set_lazy(oxl_grammar *g, const char *const *patterns, size_t n_patterns, const int32_t *tokens,
                         size_t n_tokens, char *err, size_t err_len);
/* A lazy grammar still waiting for its trigger. */
bool oxl_grammar_awaiting(const oxl_grammar *g);

#endif
