/* The vocabulary's layout, shared by the loader (vocab.c), the pre-tokenizer (pretokenize.c) and the
 * tokenizer of each model (tokenizer_spm.c, tokenizer_bpe.c, tokenizer_wpm.c, tokenizer_ugm.c);
 * the lookup and token list they share are vocab_lookup.c's. Internal to src/text: other layers use
 * vocab.h. */
#ifndef OXL_VOCAB_INTERNAL_H
#define OXL_VOCAB_INTERNAL_H

#include "grow.h"
#include "utf8.h"
#include "vocab.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Attribute bits, as llama.cpp's llama_token_attr. */
enum {
    OXL_ATTR_UNKNOWN = 1 << 0,
    OXL_ATTR_UNUSED = 1 << 1,
    OXL_ATTR_NORMAL = 1 << 2,
    OXL_ATTR_CONTROL = 1 << 3,
    OXL_ATTR_USER_DEFINED = 1 << 4,
    OXL_ATTR_BYTE = 1 << 5,
    OXL_ATTR_LSTRIP = 1 << 7,
    OXL_ATTR_RSTRIP = 1 << 8,
};

/* tokenizer.ggml.model → tokenizer (llama.cpp's llama_vocab_type). */
typedef enum {
    OXL_VOCAB_SPM, /* "llama": SentencePiece BPE by score with byte fallback */
    OXL_VOCAB_BPE, /* "gpt2": byte-level BPE by merge rank after a regex pre-tokenizer */
    OXL_VOCAB_WPM, /* "bert": BERT basic tokenization + WordPiece */
    OXL_VOCAB_UGM, /* "t5": unigram Viterbi after the precompiled SentencePiece normalizer */
} oxl_vocab_type;

/* A byte trie of token texts (token_trie.c): node 0 is the root once anything is inserted; children
 * are a sibling list; value is the token id ending at the node, -1 when none. */
typedef struct {
    int32_t child, sibling, value;
    unsigned char byte;
} oxl_trie_node;

typedef struct {
    oxl_trie_node *node;
    size_t n, cap;
} oxl_trie;

/* The child of node by byte b, or -1 (also for node < 0). */
int32_t oxl_trie_step(const oxl_trie *t, int32_t node, unsigned char b);
/* Adds s[0..n) with value; false when out of memory. */
bool oxl_trie_insert(oxl_trie *t, const char *s, size_t n, int32_t value);
void oxl_trie_free(oxl_trie *t);

typedef struct oxl_pretok oxl_pretok;       /* compiled pre-tokenizer (pretokenize.c) */
typedef struct oxl_bpe_ranks oxl_bpe_ranks; /* merge table (tokenizer_bpe.c) */
typedef struct oxl_ugm oxl_ugm;             /* unigram model data (tokenizer_ugm.c) */

struct oxl_vocab {
    int32_t n;           /* number of tokens */
    char *text;          /* token texts, each followed by a NUL */
    size_t *text_off;    /* (n) byte offset of token i's text in `text` */
    uint32_t *text_len;  /* (n) its length in bytes */
    float *score;        /* (n) tokenizer.ggml.scores (0 when absent) */
    uint16_t *attr;      /* (n) OXL_ATTR_* bits */
    uint8_t *eog;        /* (n) 1 for end-of-generation tokens */
    char *piece;         /* rendered pieces (special = true), concatenated */
    size_t *piece_off;   /* (n) */
    uint32_t *piece_len; /* (n) */
    int32_t *slot;       /* open-addressing hash of texts: token id + 1, 0 = empty */
    size_t slot_mask;    /* number of slots - 1 (a power of two) */
    int32_t *special;    /* control / user-defined / unknown ids, longest text first */
    int32_t n_special;
    uint32_t max_token_len;  /* longest token text in bytes */
    oxl_token byte_tok[256]; /* SPM byte fallback token of each byte value, -1 when none */

    oxl_token bos, eos, eot, eom, unk, sep, pad, mask;
    oxl_token fim_pre, fim_suf, fim_mid, fim_pad, fim_rep, fim_sep;
    oxl_vocab_type type;
    bool add_bos, add_eos, add_sep, add_space_prefix;
    bool ignore_merges;            /* BPE: a word that is a token is not merged */
    bool clean_spaces;             /* detokenize: llama.cpp's clean_up_tokenization_spaces */
    bool escape_whitespaces;       /* spaces become U+2581 before tokenizing (SPM-style) */
    bool remove_extra_whitespaces; /* UGM normalizer */
    bool treat_whitespace_as_suffix;
    bool lowercase, strip_accents; /* WPM (BertNormalizer) */
    char model[16];
    char pre[64];       /* tokenizer.ggml.pre ("" when absent) */
    unsigned pre_flags; /* OXL_PRE_* of the BPE pre-tokenizer */

    oxl_pretok *pretok;   /* BPE only */
    oxl_bpe_ranks *ranks; /* BPE only */
    oxl_ugm *ugm;         /* UGM only */
    oxl_trie wpm_trie;    /* WPM only: every token text */
};

/* FNV-1a of s[0..n): the hash of the vocabulary's slot table (vocab_lookup.c). */
uint64_t oxl_vocab_hash(const char *s, size_t n);

/* Id of the token whose text is exactly s[0..n), or -1. */
oxl_token oxl_vocab_find(const oxl_vocab *v, const char *s, size_t n);

static inline const char *oxl_tok_text(const oxl_vocab *v, oxl_token id) { return v->text + v->text_off[id]; }

/* A growable list of token ids; every append reports running out of memory with false. */
typedef struct {
    oxl_token *ids;
    size_t n, cap;
} oxl_tok_list;

bool oxl_tok_push(oxl_tok_list *l, oxl_token t);

// --- per-model tokenizers: append the ids of one raw text fragment to out; false when out of memory

/* SPM (llama.cpp llm_tokenizer_spm_session): text has its spaces escaped already. */
bool oxl_spm_tokenize(const oxl_vocab *v, const char *text, size_t len, oxl_tok_list *out);

/* BPE (llm_tokenizer_bpe_session): pre-tokenize, byte-encode, merge by rank. */
int oxl_bpe_load(oxl_vocab *v, const oxl_gguf *g, const char *path, oxl_error *err);
void oxl_bpe_free(oxl_vocab *v);
bool oxl_bpe_tokenize(const oxl_vocab *v, const char *text, size_t len, oxl_tok_list *out);

/* WPM (llm_tokenizer_wpm_session). */
bool oxl_wpm_tokenize(const oxl_vocab *v, const char *text, size_t len, oxl_tok_list *out);

/* UGM (llm_tokenizer_ugm_session). */
int oxl_ugm_load(oxl_vocab *v, const oxl_gguf *g, const char *path, oxl_error *err);
void oxl_ugm_free(oxl_vocab *v);
bool oxl_ugm_tokenize(const oxl_vocab *v, const char *text, size_t len, oxl_tok_list *out);

// --- the BPE pre-tokenizer (pretokenize.c) ----------------------------------------------------------

/* Flags a tokenizer.ggml.pre value sets besides its regexes (llama_vocab::impl::load). */
enum {
    OXL_PRE_IGNORE_MERGES = 1 << 0, /* whole-word tokens skip merging */
    OXL_PRE_KEEP_SPACES = 1 << 1,   /* clean_spaces = false */
    OXL_PRE_ADD_BOS = 1 << 2,       /* add_bos = true */
    OXL_PRE_ADD_SEP = 1 << 3,       /* add_sep = true */
    OXL_PRE_RAW_UTF8 = 1 << 4,      /* no GPT-2 byte encoding; byte tokens are <0xXX> */
    OXL_PRE_ESCAPE_WS = 1 << 5,     /* spaces become U+2581 first */
    OXL_PRE_NO_BOS = 1 << 6,        /* the default BOS id is dropped */
    OXL_PRE_KEEP_CASE = 1 << 7,     /* normalizer lowercase = false */
    OXL_PRE_NEWLINE_WORDS = 1 << 8, /* a word of newlines that is a token is not merged (Gemma 4) */
    OXL_PRE_NO_MERGES_OK = 1 << 9,  /* tokenizer.ggml.merges may be absent (Kimi-K2) */
};

/* Looks name up in the table of tokenizer.ggml.pre values ("" = llama.cpp's default) and compiles
 * its regexes; NULL with err set (naming the value) when the name is unknown or a regex does not
 * compile. *flags receives its OXL_PRE_* bits. */
oxl_pretok *oxl_pretok_new(const char *name, unsigned *flags, const char *path, oxl_error *err);
void oxl_pretok_free(oxl_pretok *p);

/* Words of a pre-tokenized text: word i is buf[off[i] .. off[i+1]). */
typedef struct {
    char *buf;
    size_t n_buf, cap_buf;
    size_t *off;
    size_t n, cap_off; /* n words; off has n + 1 entries */
    uint32_t *cpts;    /* scratch: the text's code points */
    size_t cap_cpts;
    uint32_t *subject; /* scratch: what the regexes see */
    size_t cap_subject;
    size_t *seg, n_seg, cap_seg, *seg2, cap_seg2;
} oxl_words;

/* Splits text[0..len) the way llama.cpp's unicode_regex_split does with p's regexes: invalid UTF-8
 * bytes become U+FFFD, each regex splits every current piece into matches and the gaps between
 * them, and (unless raw) each byte of a word is written as its GPT-2 bytes_to_unicode character.
 * Memory grows with len only (linear); false when out of memory. */
bool oxl_pretok_split(const oxl_pretok *p, const char *text, size_t len, bool raw, oxl_words *w);
void oxl_words_free(oxl_words *w);

/* GPT-2's bytes_to_unicode: the code point standing for byte b, and the inverse (-1 for a code point
 * that stands for no byte). */
uint32_t oxl_byte_to_cpt(uint8_t b);
int oxl_cpt_to_byte(uint32_t cpt);

/* llama.cpp's code point categories (unicode_cpt_flags), from utf8proc's general category and
 * llama.cpp's White_Space list. */
enum {
    OXL_CPT_UNDEFINED = 1 << 0,
    OXL_CPT_NUMBER = 1 << 1,
    OXL_CPT_LETTER = 1 << 2,
    OXL_CPT_SEPARATOR = 1 << 3,
    OXL_CPT_MARK = 1 << 4,
    OXL_CPT_PUNCTUATION = 1 << 5,
    OXL_CPT_SYMBOL = 1 << 6,
    OXL_CPT_CONTROL = 1 << 7,
    OXL_CPT_WHITESPACE = 1 << 8,
};
unsigned oxl_cpt_flags(uint32_t cpt);

#endif
