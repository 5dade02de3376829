/* WordPiece tokenizer for BERT vocabularies (behaviour of llama.cpp src/llama-vocab.cpp
 * llm_tokenizer_wpm_session: BERT basic tokenization, then the longest vocabulary match at each
 * position of "▁" + word). */
#include "vocab_internal.h"

#include <stdlib.h>
#include <string.h>
#include <utf8proc.h>

/* The CJK ideograph blocks BERT splits into single-character words (HuggingFace's list, with its
 * 0x2B920 start of Extension E). */
static bool is_chinese_char(uint32_t c) {
    return (c >= 0x4E00 && c <= 0x9FFF) || (c >= 0x3400 && c <= 0x4DBF) || (c >= 0x20000 && c <= 0x2A6DF) ||
           (c >= 0x2A700 && c <= 0x2B73F) || (c >= 0x2B740 && c <= 0x2B81F) || (c >= 0x2B920 && c <= 0x2CEAF) ||
           (c >= 0xF900 && c <= 0xFAFF) || (c >= 0x2F800 && c <= 0x2FA1F);
}

/* The first code point of c's canonical decomposition (llama.cpp's unicode_cpts_normalize_nfd maps
 * each code point to that one code point). */
static uint32_t nfd_first(uint32_t c) {
    if (c > 0x10FFFF || (c >= 0xD800 && c <= 0xDFFF))
        return c;
    utf8proc_int32_t d[8];
    int bound = 0;
    utf8proc_ssize_t n = utf8proc_decompose_char((utf8proc_int32_t)c, d, 8, UTF8PROC_DECOMPOSE, &bound);
    return n >= 1 && n <= 8 ? (uint32_t)d[0] : c;
}

static uint32_t to_lower(uint32_t c) {
    return c > 0x10FFFF || (c >= 0xD800 && c <= 0xDFFF) ? c : (uint32_t)utf8proc_tolower((utf8proc_int32_t)c);
}

/* Appends the WordPiece ids of word[0..n) ("▁" already in front) to out: at each position the
 * longest token that starts there (walking the token trie); a word with a position no token starts
 * at becomes the unknown token. */
static bool wordpiece(const oxl_vocab *v, const char *word, size_t n, oxl_tok_list *out) {
    size_t start = out->n;
    for (size_t i = 0; i < n;) {
        oxl_token id = -1;
        size_t end = i;
        int32_t node = v->wpm_trie.n ? 0 : -1;
        for (size_t k = i; k < n && (node = oxl_trie_step(&v->wpm_trie, node, (unsigned char)word[k])) >= 0;) {
            k++;
            if (v->wpm_trie.node[node].value >= 0)
                id = v->wpm_trie.node[node].value, end = k;
        }
        if (id < 0) {
            out->n = start;
            break;
        }
        if (!oxl_tok_push(out, id))
            return false;
        i = end;
    }
    if (out->n == start && v->unk >= 0)
        return oxl_tok_push(out, v->unk);
    return true;
}

bool oxl_wpm_tokenize(const oxl_vocab *v, const char *text, size_t len, oxl_tok_list *out) {
    /* the current word, "▁" first, as UTF-8 */
    char *word = malloc(3 + 4 * len + 4);
    if (!word)
        return false;
    memcpy(word, "\xe2\x96\x81", 3);
    size_t wn = 3;
    bool ok = true;
    for (size_t off = 0; ok && off <= len;) {
        uint32_t c = 0;
        bool end = off == len;
        if (!end && !oxl_utf8_decode(text, len, &off, &c)) {
            c = 0xFFFD;
            off++;
        }
        if (!end && v->strip_accents)
            c = nfd_first(c);
        unsigned f = end ? OXL_CPT_WHITESPACE : oxl_cpt_flags(c);
        bool single = !end && ((f & OXL_CPT_PUNCTUATION) || (c < 0x7F && (f & OXL_CPT_SYMBOL)) || is_chinese_char(c));
        if ((f & OXL_CPT_WHITESPACE) || single) { /* the word so far ends */
            if (wn > 3)
                ok = wordpiece(v, word, wn, out);
            wn = 3;
        }
        if (end) {
            off++;
            continue;
        }
        if ((f & OXL_CPT_WHITESPACE) || c == 0 || c == 0xFFFD || (f & OXL_CPT_CONTROL) ||
            (v->strip_accents && (f & OXL_CPT_MARK)))
            continue;
        size_t ul = oxl_utf8_encode(v->lowercase ? to_lower(c) : c, word + wn);
        if (ul == 0)
            continue;
        wn += ul;
        if (single && ok) { /* a word of its own */
            ok = wordpiece(v, word, wn, out);
            wn = 3;
        }
    }
    free(word);
    return ok;
}
