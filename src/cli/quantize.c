/* oxillama quantize: llama-quantize's command line (tools/quantize/quantize.cpp) for the ftypes
 * with reference quantizers:
 *   oxillama quantize [--imatrix FILE] [--pure] [--output-tensor-type T] [--token-embedding-type T]
 *                     [--allow-requantize] IN.gguf OUT.gguf FTYPE [threads]
 * Progress on stderr when it is a terminal; the sizes before and after at the end. */
#include "cli.h"
#include "quantize_model.h"
#include "threads.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void usage(FILE *f) {
    fprintf(f, "usage: oxillama quantize [--imatrix FILE] [--pure] [--output-tensor-type T]\n"
               "                         [--token-embedding-type T] [--allow-requantize]\n"
               "                         IN.gguf OUT.gguf FTYPE [threads]\n\n"
               "  --imatrix FILE              importance matrix from llama-imatrix (GGUF or legacy .dat)\n"
               "  --pure                      no k-quant mixture: every tensor gets the ftype's type\n"
               "  --output-tensor-type T      ggml type for output.weight (e.g. q8_0)\n"
               "  --token-embedding-type T    ggml type for token_embd.weight\n"
               "  --allow-requantize          accept already quantized input tensors\n\n"
               "FTYPE (llama-quantize's names):");
    for (const char *const *n = oxl_ftype_names(); *n != NULL; n++) {
        fprintf(f, " %s", *n);
    }
    fprintf(f, "\n");
}

/* A ggml type name for --output-tensor-type / --token-embedding-type. */
static int parse_type(const char *flag, const char *name, oxl_type *out) {
    const int t = oxl_type_from_name(name);
    if (t < 0) {
        fprintf(stderr, "error: %s: unknown ggml type '%s'\n", flag, name);
        return -1;
    }
    *out = (oxl_type)t;
    return 0;
}

int oxl_cmd_quantize(int argc, char **argv) {
    oxl_quantize_params p = {
        .output_type = OXL_TYPE_COUNT,
        .token_embd_type = OXL_TYPE_COUNT,
        .n_threads = oxl_n_physical_cores(),
    };
    const char *pos[4] = {0};
    int n_pos = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const bool has_value = i + 1 < argc;
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            usage(stdout);
            return 0;
        } else if (!strcmp(a, "--pure")) {
            p.pure = true;
        } else if (!strcmp(a, "--allow-requantize")) {
            p.allow_requantize = true;
        } else if (!strcmp(a, "--imatrix") && has_value) {
            p.imatrix_path = argv[++i];
        } else if (!strcmp(a, "--output-tensor-type") && has_value) {
            if (parse_type(a, argv[++i], &p.output_type) < 0) {
                return 1;
            }
        } else if (!strcmp(a, "--token-embedding-type") && has_value) {
            if (parse_type(a, argv[++i], &p.token_embd_type) < 0) {
                return 1;
            }
        } else if (a[0] == '-' && a[1] != '\0') {
            fprintf(stderr, "error: unknown option or missing value: %s\n\n", a);
            usage(stderr);
            return 1;
        } else if (n_pos < 4) {
            pos[n_pos++] = a;
        } else {
            fprintf(stderr, "error: unexpected argument '%s'\n\n", a);
            usage(stderr);
            return 1;
        }
    }
    if (n_pos < 3) {
        usage(stderr);
        return 1;
    }
    p.ftype = oxl_ftype_find(pos[2]);
    if (p.ftype == NULL) {
        fprintf(stderr, "error: unknown or unsupported ftype '%s'\n\n", pos[2]);
        usage(stderr);
        return 1;
    }
    if (n_pos == 4) {
        char *end = NULL;
        const long n = strtol(pos[3], &end, 10);
        if (end == pos[3] || *end != '\0' || n < 1 || n > 1024) {
            fprintf(stderr, "error: threads must be a number from 1 to 1024, got '%s'\n", pos[3]);
            return 1;
        }
        p.n_threads = (int)n;
    }
    p.progress = isatty(STDERR_FILENO) ? stderr : NULL;

    oxl_quantize_stats s;
    oxl_error err = {{0}};
    if (oxl_quantize_model(pos[0], pos[1], &p, &s, &err) < 0) {
        fprintf(stderr, "error: %s\n", err.msg);
        return 1;
    }
    const double n_el = s.n_elements > 0 ? (double)s.n_elements : 1.0;
    fprintf(stderr, "%s: %lld tensors, %s\n", pos[1], (long long)s.n_tensors, oxl_ftype_name(p.ftype));
    fprintf(stderr, "model size = %8.2f MiB (%.2f BPW)\n", (double)s.bytes_in / 1048576.0,
            (double)s.bytes_in * 8.0 / n_el);
    fprintf(stderr, "quant size = %8.2f MiB (%.2f BPW)\n", (double)s.bytes_out / 1048576.0,
            (double)s.bytes_out * 8.0 / n_el);
    if (s.n_fallback > 0) {
        fprintf(stderr, "warning: %d of %lld tensors needed a fallback type (row length not a multiple of the block)\n",
                s.n_fallback, (long long)s.n_tensors);
    }
    return 0;
}
