/* oxillama tokenize: the token ids of a text, printed as llama.cpp's llama-tokenize prints them
 * (tools/tokenize/tokenize.cpp): one "%6d -> '<piece>'" line per token, or "[1, 2, 3]" with --ids.
 * Only the vocabulary is read from the GGUF file. */
#include "args.h"
#include "cli.h"
#include "errors.h"
#include "gguf.h"
#include "vocab.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int oxl_cmd_tokenize(int argc, char **argv) {
    oxl_opts o;
    if (oxl_opts_parse(&o, OXL_VERB_TOKENIZE, argc, argv) != 0)
        return 1;
    if (o.help) {
        oxl_opts_usage("tokenize", OXL_VERB_TOKENIZE,
                       "[-m FILE] (-p TEXT | -f FILE) [--ids] [--no-bos] [--parse-special]");
        return 0;
    }
    char *text = NULL;
    size_t len = 0;
    if (o.prompt) {
        len = strlen(o.prompt);
        text = malloc(len + 1);
        if (!text) {
            fprintf(stderr, "error: out of memory\n");
            return 1;
        }
        memcpy(text, o.prompt, len + 1);
        len = oxl_process_escapes(text, len);
    } else if (o.file) {
        text = oxl_read_text_file(o.file, &len);
        if (!text)
            return 1;
        if (len && text[len - 1] == '\n') /* llama.cpp's -f drops one trailing newline */
            len--;
    } else {
        fprintf(stderr, "error: must specify one of: --file or --prompt\n");
        return 1;
    }

    int status = 1;
    oxl_error err = {0};
    oxl_token *toks = NULL;
    oxl_vocab *v = NULL;
    oxl_gguf *g = oxl_gguf_open(oxl_opts_model(&o), &err);
    if (g)
        v = oxl_vocab_load(g, &err);
    if (!v) {
        fprintf(stderr, "error: %s\n", err.msg);
        goto done;
    }

    /* add_special adds BOS only as the vocabulary asks; --no-bos turns it off (llama-tokenize). */
    const bool add_special = !o.no_bos;
    int32_t n = oxl_vocab_tokenize(v, text, len, NULL, 0, add_special, o.parse_special);
    if (n == INT32_MIN || (n < 0 && !(toks = malloc((size_t)-n * sizeof *toks)))) {
        fprintf(stderr, "error: cannot tokenize %zu bytes\n", len);
        goto done;
    }
    n = n < 0 ? oxl_vocab_tokenize(v, text, len, toks, -n, add_special, o.parse_special) : 0;

    char small[256];
    if (o.ids)
        printf("[");
    for (int32_t i = 0; i < n; i++) {
        if (o.ids) {
            printf(i ? ", %d" : "%d", toks[i]);
            continue;
        }
        int32_t np = oxl_vocab_token_to_piece(v, toks[i], small, sizeof small, true);
        char *piece = small;
        if (np < 0) {
            piece = malloc((size_t)-np);
            np = piece ? oxl_vocab_token_to_piece(v, toks[i], piece, -np, true) : 0;
        }
        /* llama-tokenize prints the piece with %s, so it ends at a NUL byte. */
        size_t shown = piece ? strnlen(piece, (size_t)np) : 0;
        printf("%6d -> '", toks[i]);
        if (shown)
            fwrite(piece, 1, shown, stdout);
        printf("'\n");
        if (piece != small)
            free(piece);
    }
    if (o.ids)
        printf("]\n");
    status = 0;
done:
    free(toks);
    oxl_vocab_free(v);
    oxl_gguf_close(g);
    free(text);
    return status;
}
