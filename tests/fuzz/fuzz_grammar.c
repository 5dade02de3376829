/* libFuzzer harness for GBNF grammars (src/model/grammar.c): the parser, the matcher and the
 * candidate filter.
 *
 * Input layout: the grammar text up to the first NUL byte, then a text. Set-up (once): the
 * vocabulary of models/stories260K.gguf (512 tokens), which resolves <piece> references and gives
 * the tokens' texts. A grammar that does not parse must say where ("LINE:COLUMN: ..."). One that
 * parses takes the text in pieces of 1 to 8 bytes (the lengths drawn from the text's own bytes, so
 * UTF-8 sequences split across pieces), each as a piece of its own token id; every fourth step the
 * filter runs over the whole vocabulary and a token it allows is accepted, which must leave some
 * stack (the filter only allows tokens that continue the match), unless a bound stopped it with an
 * error. Bounds (grammar.h) keep every step small, so libFuzzer's -timeout catches a blow-up. */
#include "grammar.h"
#include "model.h"
#include "oxillama.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CHECK(cond)                                                                                                    \
    do {                                                                                                               \
        if (!(cond)) {                                                                                                 \
            fprintf(stderr, "%s:%d: invariant failed: %s\n", __FILE__, __LINE__, #cond);                               \
            __builtin_trap();                                                                                          \
        }                                                                                                              \
    } while (0)

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static oxl_model *g_model;
static int32_t *g_ids;
static bool *g_allowed;
static int32_t g_nv;

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void)argc;
    (void)argv;
    oxl_model_params mp = oxl_model_default_params();
    oxl_error err = {0};
    g_model = oxl_model_load(OXL_SOURCE_DIR "/models/stories260K.gguf", &mp, &err);
    if (!g_model) {
        fprintf(stderr, "fuzz_grammar: %s\n", err.msg);
        abort();
    }
    g_nv = oxl_model_n_vocab(g_model);
    g_ids = malloc((size_t)g_nv * sizeof *g_ids);
    g_allowed = malloc((size_t)g_nv * sizeof *g_allowed);
    if (!g_ids || !g_allowed)
        abort();
    for (int32_t i = 0; i < g_nv; i++)
        g_ids[i] = i;
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    const uint8_t *nul = memchr(data, 0, size);
    size_t glen = nul ? (size_t)(nul - data) : size;
    char *src = malloc(glen + 1);
    CHECK(src != NULL);
    memcpy(src, data, glen);
    src[glen] = 0;
    const uint8_t *text = nul ? nul + 1 : data + size;
    size_t tlen = (size_t)(data + size - text);

    char err[256];
    oxl_grammar *g = oxl_grammar_parse(src, "root", g_model->vocab, err, sizeof err);
    if (!g) {
        int line = 0, col = 0;
        CHECK(sscanf(err, "%d:%d: ", &line, &col) == 2 && line >= 1 && col >= 1);
        free(src);
        return 0;
    }
    size_t pos = 0;
    for (int step = 0; pos < tlen && !oxl_grammar_dead(g); step++) {
        if (step % 4 == 3) {
            if (oxl_grammar_apply(g, g_ids, g_nv, g_allowed) != 0) {
                CHECK(oxl_grammar_error(g) != NULL);
                break;
            }
            /* a token the filter allows, picked by the next text byte */
            int32_t start = text[pos] % g_nv, pick = -1;
            for (int32_t k = 0; k < g_nv && pick < 0; k++) {
                int32_t t = (start + k) % g_nv;
                if (g_allowed[t] && !oxl_token_is_eog(g_model, t))
                    pick = t;
            }
            pos++;
            if (pick >= 0) {
                int rc = oxl_grammar_accept_token(g, pick);
                CHECK(rc == 0 || oxl_grammar_error(g) != NULL);
            }
            continue;
        }
        size_t n = 1 + text[pos] % 8;
        if (n > tlen - pos)
            n = tlen - pos;
        if (oxl_grammar_accept_piece(g, (int32_t)text[pos], (const char *)text + pos, n) != 0)
            CHECK(oxl_grammar_dead(g));
        pos += n;
    }
    (void)oxl_grammar_can_end(g);
    oxl_grammar_free(g);
    free(src);
    return 0;
}
