/* The cross-build subset (CMake option OXL_SUBSET, on for the aarch64, riscv64 and wasm32
 * toolchain files in cmake/): the library and CLI without the parts that need PCRE2, utf8proc,
 * cJSON or libmicrohttpd, which the cross sysroots do not have. Left out: the BPE pre-tokenizer and
 * tokenizer (pretokenize.c, tokenizer_bpe.c: PCRE2, utf8proc), WordPiece (tokenizer_wpm.c:
 * utf8proc), Jinja chat templates (jinja_*.c, chat.c, golden_chat.c: cJSON) and the HTTP server.
 * This file stands in for their entry points: loading such a vocabulary, running a chat golden or
 * `oxillama serve` fails with an error naming what this build lacks. SentencePiece and Unigram
 * vocabularies, `run`, `info`, `golden` (quant, model, tokenizer goldens of those vocabularies),
 * `quantize` and `perplexity` are complete. The three UTF-8 / byte-encoding helpers shared with the
 * other tokenizers are the same functions as in pretokenize.c. */
#ifdef OXL_SUBSET

#include "error.h"
#include "golden.h"
#include "vocab_internal.h"

#include <stdio.h>

/* bytes_to_unicode of GPT-2 (as pretokenize.c): printable Latin-1 bytes stand for themselves */
static bool oxl_subset_byte_is_printable(unsigned b) {
    return (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || b >= 0xAE;
}

int oxl_cpt_to_byte(uint32_t cpt) {
    if (cpt < 256) {
        return oxl_subset_byte_is_printable(cpt) ? (int)cpt : -1;
    }
    uint32_t n = 0;
    for (unsigned b = 0; b < 256; b++) {
        if (!oxl_subset_byte_is_printable(b) && 256 + n++ == cpt) {
            return (int)b;
        }
    }
    return -1;
}

bool oxl_utf8_decode(const char *s, size_t n, size_t *off, uint32_t *cpt) {
    const unsigned char *u = (const unsigned char *)s + *off;
    const size_t left = n - *off;
    if (!(u[0] & 0x80)) {
        *cpt = u[0];
        *off += 1;
        return true;
    }
    const size_t len = !(u[0] & 0x40) ? 0 : !(u[0] & 0x20) ? 2 : !(u[0] & 0x10) ? 3 : !(u[0] & 0x08) ? 4 : 0;
    if (len == 0 || len > left) {
        return false;
    }
    uint32_t c = u[0] & (0x7F >> len);
    for (size_t i = 1; i < len; i++) {
        if ((u[i] & 0xC0) != 0x80) {
            return false;
        }
        c = (c << 6) | (u[i] & 0x3F);
    }
    *cpt = c;
    *off += len;
    return true;
}

size_t oxl_utf8_encode(uint32_t c, char *o) {
    if (c <= 0x7F) {
        o[0] = (char)c;
        return 1;
    }
    if (c <= 0x7FF) {
        o[0] = (char)(0xC0 | (c >> 6)), o[1] = (char)(0x80 | (c & 0x3F));
        return 2;
    }
    if (c <= 0xFFFF) {
        o[0] = (char)(0xE0 | (c >> 12)), o[1] = (char)(0x80 | ((c >> 6) & 0x3F)), o[2] = (char)(0x80 | (c & 0x3F));
        return 3;
    }
    if (c <= 0x10FFFF) {
        o[0] = (char)(0xF0 | (c >> 18)), o[1] = (char)(0x80 | ((c >> 12) & 0x3F));
        o[2] = (char)(0x80 | ((c >> 6) & 0x3F)), o[3] = (char)(0x80 | (c & 0x3F));
        return 4;
    }
    return 0;
}

int oxl_bpe_load(oxl_vocab *v, const oxl_gguf *g, const char *path, oxl_error *err) {
    return oxl_err_set(err,
                       "%s: tokenizer.ggml.model: BPE vocabularies need PCRE2 and utf8proc, which this "
                       "build (OXL_SUBSET) leaves out",
                       path);
}

/* nothing to free: oxl_bpe_load never loads anything in this build */
void oxl_bpe_free(oxl_vocab *v) {}

/* unreachable: no BPE vocabulary loads in this build; tokenizing fails */
bool oxl_bpe_tokenize(const oxl_vocab *v, const char *text, size_t len, oxl_tok_list *out) { return false; }

/* WordPiece needs utf8proc (lowercasing, decomposition): tokenizing fails in this build */
bool oxl_wpm_tokenize(const oxl_vocab *v, const char *text, size_t len, oxl_tok_list *out) { return false; }

int oxl_golden_chat_dir(const char *dir, oxl_golden_report *r, oxl_error *err) {
    return oxl_err_set(err,
                       "%s: chat goldens need cJSON and the Jinja engine, which this build (OXL_SUBSET) "
                       "leaves out",
                       dir);
}

#else
typedef int oxl_subset_unused; /* the full build has the real functions */
#endif
