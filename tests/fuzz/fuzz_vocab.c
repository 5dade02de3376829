/* libFuzzer harness for the vocabulary and tokenizer (src/text/vocab.c).
 *
 * Input layout: a little-endian u32 k, then k bytes of a GGUF file (fewer when the input is
 * shorter), then the text. The two parts are copied into buffers of their exact size, so a read past
 * either is caught. When the vocabulary loads, the text is tokenized with every combination of
 * add_special / parse_special (first asking for the size with cap 0, as callers do), every token is
 * rendered with token_to_piece (plain and special, with a buffer of the size asked for and one byte
 * short), ids just outside the vocabulary are rendered, and the tokens go through the streaming
 * detokenizer. Results must keep the documented contracts (sizes, ranges, negative size requests). */
#include "vocab.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A broken invariant: report it and stop (libFuzzer saves the input). */
#define CHECK(cond)                                                                                                    \
    do {                                                                                                               \
        if (!(cond)) {                                                                                                 \
            fprintf(stderr, "%s:%d: invariant failed: %s\n", __FILE__, __LINE__, #cond);                               \
            __builtin_trap();                                                                                          \
        }                                                                                                              \
    } while (0)

static void render(const oxl_vocab *v, oxl_token tok, bool special) {
    char buf[256];
    int32_t need = oxl_vocab_token_to_piece(v, tok, buf, 0, special);
    if (need >= 0) {
        CHECK(need == 0);
        return;
    }
    need = -need;
    char *exact = malloc((size_t)need);
    CHECK(exact != NULL);
    CHECK(oxl_vocab_token_to_piece(v, tok, exact, need, special) == need);
    if (need > 1)
        CHECK(oxl_vocab_token_to_piece(v, tok, exact, need - 1, special) == -need);
    free(exact);
}

static void tokenize(const oxl_vocab *v, const char *text, size_t len, bool add_special, bool parse_special) {
    int32_t n_vocab = oxl_vocab_n_tokens(v);
    int32_t n = oxl_vocab_tokenize(v, text, len, NULL, 0, add_special, parse_special);
    CHECK(n != INT32_MIN);
    if (n < 0)
        n = -n;
    oxl_token *toks = malloc((size_t)(n ? n : 1) * sizeof *toks);
    CHECK(toks != NULL);
    CHECK(oxl_vocab_tokenize(v, text, len, toks, n, add_special, parse_special) == n);
    oxl_detok d = {0};
    char out[64];
    for (int32_t i = 0; i < n; i++) {
        CHECK(toks[i] >= 0 && toks[i] < n_vocab);
        render(v, toks[i], false);
        render(v, toks[i], true);
        int32_t w = oxl_vocab_detok_push(&d, v, toks[i], out, sizeof out);
        if (w < 0) { /* a long piece: retry with the size asked for */
            char *big = malloc((size_t)-w);
            CHECK(big != NULL);
            CHECK(oxl_vocab_detok_push(&d, v, toks[i], big, -w) >= 0);
            free(big);
        }
        CHECK(d.n_pending >= 0 && d.n_pending <= 3);
    }
    CHECK(oxl_detok_flush(&d, out, sizeof out) >= 0);
    free(toks);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 4)
        return 0;
    uint32_t k;
    memcpy(&k, data, 4);
    size_t gguf_len = k < size - 4 ? k : size - 4;
    size_t text_len = size - 4 - gguf_len;
    uint8_t *gguf = malloc(gguf_len ? gguf_len : 1);
    char *text = malloc(text_len ? text_len : 1);
    CHECK(gguf != NULL && text != NULL);
    memcpy(gguf, data + 4, gguf_len);
    memcpy(text, data + 4 + gguf_len, text_len);

    oxl_error err;
    err.msg[0] = '\0';
    oxl_gguf *g = oxl_gguf_open_memory(gguf, gguf_len, "fuzz.gguf", &err);
    oxl_vocab *v = g ? oxl_vocab_load(g, &err) : NULL;
    oxl_gguf_close(g); /* the vocabulary copies what it needs */
    if (!v) {
        CHECK(err.msg[0] != '\0');
    } else {
        int32_t n_vocab = oxl_vocab_n_tokens(v);
        CHECK(n_vocab > 0);
        for (int f = 0; f < 4; f++)
            tokenize(v, text, text_len, f & 1, f & 2);
        const oxl_token edge[] = {-1, n_vocab, n_vocab + 1, INT32_MAX, INT32_MIN, oxl_vocab_bos(v), oxl_vocab_eos(v)};
        for (size_t i = 0; i < sizeof edge / sizeof *edge; i++) {
            render(v, edge[i], true);
            oxl_vocab_is_eog(v, edge[i]);
        }
        CHECK(oxl_vocab_model_name(v) != NULL);
        oxl_vocab_free(v);
    }
    free(gguf);
    free(text);
    return 0;
}
