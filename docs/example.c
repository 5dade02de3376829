/* Using oxillama from C: loads a GGUF model, generates greedily and prints the prompt followed by the
 * continuation on stdout (as `oxillama run --temp 0`); the library's version and any error go to stderr.
 *
 * usage: example MODEL PROMPT [N]   (N: most tokens to generate, default 64)
 *
 * Build against an installed oxillama (README "Use it from C"):
 *   cc example.c $(pkg-config --cflags --libs oxillama) -o example
 * or, in CMake:
 *   find_package(oxillama REQUIRED)
 *   target_link_libraries(example PRIVATE oxillama::oxillama)
 */
#include <oxillama.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: %s MODEL PROMPT [N]\n", argv[0]);
        return 2;
    }
    const char *prompt = argv[2];
    int n_predict = argc > 3 ? atoi(argv[3]) : 64;
    fprintf(stderr, "oxillama %s\n", oxl_version());

    int status = 1;
    oxl_error err = {{0}};
    oxl_model *model = NULL;
    oxl_ctx *ctx = NULL;
    oxl_sampler *smpl = NULL;
    oxl_token *toks = NULL;

    oxl_model_params mp = oxl_model_default_params();
    model = oxl_model_load(argv[1], &mp, &err);
    if (!model) {
        fprintf(stderr, "error: %s\n", err.msg);
        goto done;
    }
    oxl_ctx_params cp = oxl_ctx_default_params();
    ctx = oxl_ctx_new(model, &cp, &err);
    if (!ctx) {
        fprintf(stderr, "error: %s\n", err.msg);
        goto done;
    }
    oxl_sampler_params sp = oxl_sampler_default_params();
    sp.temp = 0.0f; /* greedy: the most likely token */
    smpl = oxl_sampler_new(&sp);
    if (!smpl) {
        fprintf(stderr, "error: cannot create the sampler\n");
        goto done;
    }

    /* The prompt's tokens, BOS added as the vocabulary asks: a first call asks how many there are. */
    size_t len = strlen(prompt);
    int32_t n_tok = oxl_tokenize(model, prompt, len, NULL, 0, true, false);
    if (n_tok == INT32_MIN) {
        fprintf(stderr, "error: cannot tokenize the prompt\n");
        goto done;
    }
    n_tok = n_tok < 0 ? -n_tok : n_tok;
    toks = malloc(sizeof *toks * (size_t)(n_tok > 0 ? n_tok : 1));
    if (!toks || n_tok == 0 || oxl_tokenize(model, prompt, len, toks, n_tok, true, false) != n_tok) {
        fprintf(stderr, "error: cannot tokenize the prompt\n");
        goto done;
    }
    int32_t n_ctx = oxl_ctx_n_ctx(ctx);
    if (n_tok >= n_ctx) {
        fprintf(stderr, "error: the prompt is %d tokens, the context only %d\n", n_tok, n_ctx);
        goto done;
    }
    fputs(prompt, stdout);

    /* Evaluate the prompt, then one token at a time: pick, print, feed it back. */
    if (oxl_decode(ctx, toks, n_tok, false, &err) != 0) {
        fprintf(stderr, "error: %s\n", err.msg);
        goto done;
    }
    int32_t n_vocab = oxl_model_n_vocab(model);
    oxl_detok detok = {0}; /* holds back a character split across tokens */
    char piece[256];
    for (int i = 0; i < n_predict; i++) {
        oxl_token next = oxl_sampler_sample(smpl, oxl_get_logits(ctx, -1), n_vocab);
        if (oxl_token_is_eog(model, next)) {
            break;
        }
        int32_t w = oxl_detok_push(&detok, model, next, piece, (int32_t)sizeof piece);
        if (w > 0) {
            fwrite(piece, 1, (size_t)w, stdout);
        }
        if (oxl_ctx_n_past(ctx) >= n_ctx) {
            break;
        }
        if (oxl_decode(ctx, &next, 1, false, &err) != 0) {
            fprintf(stderr, "\nerror: %s\n", err.msg);
            goto done;
        }
    }
    int32_t w = oxl_detok_flush(&detok, piece, (int32_t)sizeof piece);
    if (w > 0) {
        fwrite(piece, 1, (size_t)w, stdout);
    }
    status = fflush(stdout) == 0 ? 0 : 1;
done:
    free(toks);
    oxl_sampler_free(smpl);
    oxl_ctx_free(ctx);
    oxl_model_free(model);
    return status;
}
