/* oxillama quantize: llama-quantize's command line (tools/quantize/quantize.cpp) for the ftypes
 * with reference quantizers:
 *   oxillama quantize [--imatrix FILE] [--pure] [--output-tensor-type T] [--token-embedding-type T]
 *                     [--tensor-type PATTERN=T]... [--leave-output-tensor] [--override-kv K=TYPE:V]...
 *                     [--allow-requantize] [--keep-split] [--quiet] IN.gguf OUT.gguf FTYPE [threads]
 * On stderr, as llama-quantize prints them: the manual overrides, one line per tensor, and the
 * sizes before and after at the end (--quiet: none of these). */
#include "cli.h"
#include "quantize_model.h"
#include "pool.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void usage(FILE *f) {
    fprintf(
        f, "usage: oxillama quantize [--imatrix FILE] [--pure] [--output-tensor-type T]\n"
           "                         [--token-embedding-type T] [--tensor-type PATTERN=T]...\n"
           "                         [--leave-output-tensor] [--override-kv KEY=TYPE:VALUE]...\n"
           "                         [--allow-requantize] [--keep-split] [--quiet] IN.gguf OUT.gguf FTYPE [threads]\n\n"
           "  --imatrix FILE              importance matrix from llama-imatrix (GGUF or legacy .dat)\n"
           "  --pure                      no k-quant mixture: every tensor gets the ftype's type\n"
           "  --output-tensor-type T      ggml type for output.weight (e.g. q8_0)\n"
           "  --token-embedding-type T    ggml type for token_embd.weight\n"
           "  --tensor-type PATTERN=T     ggml type for the tensors whose name PATTERN (a regex, lower-cased)\n"
           "                              matches; the first matching one applies; may be repeated.\n"
           "                              example: --tensor-type attn_v=q8_0\n"
           "  --leave-output-tensor       leave output.weight as it is in the input\n"
           "  --override-kv KEY=TYPE:VALUE  set metadata KEY in the output; TYPE int, float, bool or str;\n"
           "                              may be repeated. example: --override-kv general.name=str:mine\n"
           "  --allow-requantize          accept already quantized input tensors\n"
           "  --keep-split                a split input gives parts OUT-0000K-of-0000N.gguf, as it is split\n"
           "  --quiet                     no progress lines and no size summary on stderr\n\n"
           "FTYPE (llama-quantize's names):");
    for (const char *const *n = oxl_ftype_names(); *n != NULL; n++) {
        fprintf(f, " %s", *n);
    }
    fprintf(f, "\n");
}

/* A ggml type name for --output-tensor-type / --token-embedding-type. */
static int parse_type(const char *flag, const char *name, oxl_type *out) {
    oxl_error err = {{0}};
    if (oxl_quant_type_parse(flag, name, out, &err) < 0) {
        fprintf(stderr, "error: %s\n", err.msg);
        return -1;
    }
    return 0;
}

static int quantize(int argc, char **argv, oxl_tensor_types *tt, oxl_kv_override *kv) {
    oxl_quantize_params p = {
        .output_type = OXL_TYPE_COUNT,
        .token_embd_type = OXL_TYPE_COUNT,
        .n_threads = oxl_n_physical_cores(),
    };
    bool quiet = false;
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
        } else if (!strcmp(a, "--leave-output-tensor")) {
            p.leave_output = true;
        } else if (!strcmp(a, "--quiet")) {
            quiet = true;
        } else if (!strcmp(a, "--keep-split")) {
            p.keep_split = true;
        } else if (!strcmp(a, "--tensor-type") && has_value) {
            oxl_error err = {{0}};
            if (oxl_tensor_types_add(tt, argv[++i], &err) < 0) {
                fprintf(stderr, "error: %s\n", err.msg);
                return 1;
            }
            p.tensor_types = tt;
        } else if (!strcmp(a, "--override-kv") && has_value) {
            oxl_error err = {{0}};
            if (oxl_kv_override_parse(argv[++i], &kv[p.n_kv_overrides], &err) < 0) {
                fprintf(stderr, "error: %s\n", err.msg);
                return 1;
            }
            p.kv_overrides = kv;
            p.n_kv_overrides++;
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
        fprintf(stderr, "error: unknown or unsupported ftype '%s' (supported:", pos[2]);
        for (const char *const *n = oxl_ftype_names(); *n != NULL; n++) {
            fprintf(stderr, " %s", *n);
        }
        fprintf(stderr, ")\n");
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
    p.progress = quiet ? NULL : stderr;

    /* --keep-split: the output name is the parts' prefix; llama-quantize drops ".gguf" when the name
     * holds it (the last 5 characters, wherever ".gguf" occurs) */
    char out[4096];
    snprintf(out, sizeof out, "%s", pos[1]);
    if (p.keep_split && strstr(out, ".gguf") && strlen(out) >= 5) {
        out[strlen(out) - 5] = 0;
    }
    oxl_quantize_stats s;
    oxl_error err = {{0}};
    if (oxl_quantize_model(pos[0], out, &p, &s, &err) < 0) {
        fprintf(stderr, "error: %s\n", err.msg);
        return 1;
    }
    if (!quiet) {
        /* llama_model_quantize_impl's summary (llama.cpp counts the weights of every tensor) */
        const double n_el = s.n_elements > 0 ? (double)s.n_elements : 1.0;
        fprintf(stderr, "model size  = %8.2f MiB (%.2f BPW)\n", (double)s.bytes_in / 1024.0 / 1024.0,
                (double)s.bytes_in * 8.0 / n_el);
        fprintf(stderr, "quant size  = %8.2f MiB (%.2f BPW)\n", (double)s.bytes_out / 1024.0 / 1024.0,
                (double)s.bytes_out * 8.0 / n_el);
    }
    if (s.n_fallback > 0) {
        fprintf(stderr, "warning: %d of %lld tensors needed a fallback type (row length not a multiple of the block)\n",
                s.n_fallback, (long long)s.n_tensors);
    }
    return 0;
}

int oxl_cmd_quantize(int argc, char **argv) {
    oxl_error err = {{0}};
    oxl_tensor_types *tt = oxl_tensor_types_new(&err);
    /* at most one --override-kv per two arguments */
    oxl_kv_override *kv = calloc((size_t)argc / 2 + 1, sizeof *kv);
    if (tt == NULL || kv == NULL) {
        fprintf(stderr, "error: out of memory\n");
        oxl_tensor_types_free(tt);
        free(kv);
        return 1;
    }
    const int rc = quantize(argc, argv, tt, kv);
    oxl_tensor_types_free(tt);
    free(kv);
    return rc;
}
