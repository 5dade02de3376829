/* oxillama imatrix: llama.cpp's llama-imatrix (tools/imatrix/imatrix.cpp): the importance matrix
 * that the 1- and 2-bit I-quants need, from a model's activations over a text:
 *   oxillama imatrix -m MODEL -f TEXT [-c N] [-o OUT] [--output-format gguf|dat] [--chunks N]
 *                    [-t N] [-b N] [-ub N] [--process-output] [--no-ppl]
 * Informational lines on stderr; the running perplexity per chunk and the final estimate on stdout. */
#include "cli.h"
#include "imatrix_collect.h"
#include "imatrix_run.h"

#include "args.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void usage(FILE *f) {
    fprintf(f, "usage: oxillama imatrix -m MODEL -f TEXT [-c N] [-o OUT] [--output-format gguf|dat]\n"
               "                        [--chunks N] [-t N] [-b N] [-ub N] [-ctk T] [-ctv T] [-fa MODE]\n"
               "                        [--process-output] [--no-ppl]\n\n"
               "  -m, --model FILE        the model (GGUF)\n"
               "  -f, --file TEXT         the text to run the model over\n"
               "  -c, --ctx-size N        chunk length in tokens (default 512); the text needs 2 chunks\n"
               "  -o, --output-file OUT   output file (default imatrix.gguf)\n"
               "  --output-format FMT     gguf (default) or dat (the legacy layout)\n"
               "  --chunks N              process at most N chunks (default: all)\n"
               "  -t, --threads N         threads (default: physical cores)\n"
               "  -b, --batch-size N      tokens per decode (default 2048): N / c chunks at once\n"
               "  -ub, --ubatch-size N    tokens per forward pass (default 512)\n"
               "  -ctk, -ctv TYPE         K / V cache type (default f16)\n"
               "  -fa, --flash-attn MODE  on, off or auto (default auto: on)\n"
               "  --process-output        also collect output.weight\n"
               "  --no-ppl                do not compute the perplexity\n\n"
               "As llama-imatrix: statistics of every matrix product with a blk.* weight (and the experts)\n"
               "over the chunks, each started with BOS from an empty cache; llama-quantize --imatrix and\n"
               "oxillama quantize --imatrix read the output.\n");
}

/* A whole decimal int for flag; -1 with a message otherwise. */
static int parse_int(const char *flag, const char *v, int min, int *out) {
    char *end = NULL;
    errno = 0;
    const long x = strtol(v, &end, 10);
    if (end == v || *end != '\0' || errno != 0 || x < min || x > INT_MAX) {
        fprintf(stderr, "error: %s expects an integer >= %d, not '%s'\n", flag, min, v);
        return -1;
    }
    *out = (int)x;
    return 0;
}

static bool ends_with(const char *s, const char *suffix) {
    const size_t n = strlen(s), m = strlen(suffix);
    return n >= m && !strcmp(s + n - m, suffix);
}

int oxl_cmd_imatrix(int argc, char **argv) {
    const char *model_path = NULL, *text_path = NULL, *out_path = "imatrix.gguf", *format = NULL;
    int n_threads = 0;
    bool process_output = false;
    oxl_ctx_params cp = oxl_ctx_default_params();
    oxl_imatrix_params ip = {
        .n_ctx = 512,
        .n_batch = 2048,
        .n_ubatch = 512,
        .n_chunks = -1,
        .compute_ppl = true,
        .info = stderr,
        .progress = stdout,
    };
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        int rc = 0;
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            usage(stdout);
            return 0;
        } else if (!strcmp(a, "--process-output")) {
            process_output = true;
            continue;
        } else if (!strcmp(a, "--no-ppl")) {
            ip.compute_ppl = false;
            continue;
        } else if (v == NULL) {
            fprintf(stderr, "error: unknown option or missing value: %s\n\n", a);
            usage(stderr);
            return 1;
        } else if (!strcmp(a, "-m") || !strcmp(a, "--model")) {
            model_path = v;
        } else if (!strcmp(a, "-f") || !strcmp(a, "--file")) {
            text_path = v;
        } else if (!strcmp(a, "-o") || !strcmp(a, "--output") || !strcmp(a, "--output-file")) {
            out_path = v;
        } else if (!strcmp(a, "--output-format")) {
            if (strcmp(v, "gguf") != 0 && strcmp(v, "dat") != 0) {
                fprintf(stderr, "error: --output-format is gguf or dat, not '%s'\n", v);
                return 1;
            }
            format = v;
        } else if (!strcmp(a, "-c") || !strcmp(a, "--ctx-size")) {
            rc = parse_int(a, v, 1, &ip.n_ctx);
        } else if (!strcmp(a, "--chunks")) {
            rc = parse_int(a, v, -1, &ip.n_chunks);
        } else if (!strcmp(a, "-t") || !strcmp(a, "--threads")) {
            rc = parse_int(a, v, 0, &n_threads);
        } else if (!strcmp(a, "-b") || !strcmp(a, "--batch-size")) {
            rc = parse_int(a, v, 1, &ip.n_batch);
        } else if (!strcmp(a, "-ub") || !strcmp(a, "--ubatch-size")) {
            rc = parse_int(a, v, 1, &ip.n_ubatch);
        } else if (!strcmp(a, "-ctk") || !strcmp(a, "--cache-type-k") || !strcmp(a, "-ctv") ||
                   !strcmp(a, "--cache-type-v")) {
            oxl_kv_type *t = !strcmp(a, "-ctk") || !strcmp(a, "--cache-type-k") ? &cp.type_k : &cp.type_v;
            if (oxl_kv_type_parse(v, t) != 0) {
                fprintf(stderr, "error: %s: unknown cache type '%s'\n", a, v);
                return 1;
            }
        } else if (!strcmp(a, "-fa") || !strcmp(a, "--flash-attn")) {
            if (!strcmp(v, "on")) {
                cp.flash_attn = OXL_FLASH_ATTN_ON;
            } else if (!strcmp(v, "off")) {
                cp.flash_attn = OXL_FLASH_ATTN_OFF;
            } else if (!strcmp(v, "auto")) {
                cp.flash_attn = OXL_FLASH_ATTN_AUTO;
            } else {
                fprintf(stderr, "error: %s is on, off or auto, not '%s'\n", a, v);
                return 1;
            }
        } else {
            fprintf(stderr, "error: unknown option: %s\n\n", a);
            usage(stderr);
            return 1;
        }
        if (rc != 0) {
            return 1;
        }
        i++;
    }
    if (model_path == NULL || text_path == NULL) {
        fprintf(stderr, "error: imatrix needs a model (-m) and a text file (-f)\n\n");
        usage(stderr);
        return 1;
    }
    const bool dat = format != NULL && !strcmp(format, "dat");
    if (format == NULL && !ends_with(out_path, ".gguf")) {
        fprintf(stderr, "warning: saving imatrix using GGUF format with a different suffix than .gguf\n"
                        "warning: if you want the previous imatrix format, use --output-format dat\n");
    }
    size_t len = 0;
    char *text = oxl_read_text_file(text_path, &len);
    if (text == NULL) {
        return 1;
    }
    oxl_error err = {{0}};
    oxl_imatrix_acc *acc = NULL;
    oxl_model_params mp = oxl_model_default_params();
    oxl_model *model = oxl_model_load(model_path, &mp, &err);
    int status = 1;
    if (model == NULL || (acc = oxl_imatrix_acc_new(process_output, &err)) == NULL) {
        fprintf(stderr, "error: %s\n", err.msg);
        goto done;
    }
    cp.n_threads = n_threads;
    oxl_imatrix_result res;
    if (oxl_imatrix_compute(model, &cp, text, len, &ip, acc, &res, &err) != 0) {
        fprintf(stderr, "error: %s\n", err.msg);
        goto done;
    }
    if (ip.compute_ppl && res.ppl_unc > 0) {
        printf("Final estimate: PPL = %.4f +/- %.5f\n", res.ppl, res.ppl_unc);
    } else if (ip.compute_ppl) {
        printf("Unexpected negative standard deviation of log(prob)\n"); /* llama-imatrix's line (no scored tokens) */
    }
    const int rc = dat ? oxl_imatrix_write_dat(acc, out_path, text_path, ip.n_ctx, &err)
                       : oxl_imatrix_write_gguf(acc, out_path, &text_path, 1, ip.n_ctx, &err);
    if (rc != 0) {
        fprintf(stderr, "error: %s\n", err.msg);
        goto done;
    }
    fprintf(stderr, "imatrix: stored %lld weights' statistics after %d chunks in %s\n",
            (long long)oxl_imatrix_acc_n_entries(acc), oxl_imatrix_acc_chunk_count(acc, ip.n_ctx), out_path);
    status = 0;
done:
    oxl_imatrix_acc_free(acc);
    oxl_model_free(model);
    free(text);
    return status;
}
