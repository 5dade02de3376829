/* The cross-build subset (CMake option OXL_SUBSET, on for the aarch64, riscv64 and wasm32
 * toolchain files in cmake/): the library and CLI without the parts that need PCRE2, utf8proc,
 * cJSON or libmicrohttpd, which the cross sysroots do not have. Left out: the BPE pre-tokenizer and
 * tokenizer (pretokenize.c, tokenizer_bpe.c: PCRE2, utf8proc), WordPiece (tokenizer_wpm.c:
 * utf8proc), Jinja chat templates (src/chat, src/check/golden_chat.c: cJSON; the
 * chat golden stand-in is src/check/subset_chat.c; llama.cpp's built-in chat formats,
 * src/text/chat_builtin.c, are in the subset), the JSON schema converter (src/chat/json_schema.c)
 * and the HTTP server.
 * This file stands in for their entry points: loading such a vocabulary, running a chat golden or
 * `oxillama serve` fails with an error naming what this build lacks. SentencePiece and Unigram
 * vocabularies, `run`, `info`, `golden` (quant, model, tokenizer goldens of those vocabularies),
 * `quantize` and `perplexity` are complete. The byte-encoding helper shared with the other tokenizers is the same
 * function as in pretokenize.c. */
#ifdef OXL_SUBSET

#include "errors.h"
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

/* JSON schemas need cJSON (src/chat/json_schema.c). */
int oxl_json_schema_to_grammar(const char *schema_json, char **out, oxl_error *err) {
    (void)schema_json;
    if (out) {
        *out = NULL;
    }
    return oxl_err_set(err, "json schema: this build leaves out the JSON reader (OXL_SUBSET: no cJSON)");
}

#else
typedef int oxl_subset_unused; /* the full build has the real functions */
#endif
