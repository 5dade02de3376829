/* oxillama export-lora: llama-export-lora's command line (tools/export-lora): merges LoRA adapters
 * into a base model's weights and writes a new GGUF (src/quantize/export_lora.h).
 *   oxillama export-lora -m BASE.gguf --lora F[,F...] [--lora-scaled F:S[,...] | F S]... [-o OUT] [-t N] */
#include "cli.h"
#include "export_lora.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_LORAS 64

static void usage(FILE *f) {
    fprintf(f, "usage: oxillama export-lora -m BASE.gguf --lora FILE [--lora-scaled FILE:SCALE]... [-o OUT.gguf] "
               "[-t N]\n\n"
               "  -m, --model FILE        base model\n"
               "  --lora FILE[,FILE...]   LoRA adapter, scale 1 (repeatable)\n"
               "  --lora-scaled F:S[,...] LoRA adapter with a scale (also F S; repeatable)\n"
               "  -o, --output FILE       merged model (default ggml-lora-merged-f16.gguf)\n"
               "  -t, --threads N         threads (default 4)\n\n"
               "Merged f32 tensors stay f32; merged tensors of other types are written f16.\n");
}

int oxl_cmd_export_lora(int argc, char **argv) {
    const char *model = NULL, *out = "ggml-lora-merged-f16.gguf";
    const char *files[MAX_LORAS];
    float scales[MAX_LORAS];
    char *copies[MAX_LORAS];
    int n = 0, n_copies = 0, n_threads = 4, rc = 1;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            usage(stdout);
            rc = 0;
            goto done;
        }
        if (i + 1 >= argc) {
            fprintf(stderr, "error: %s needs a value (see oxillama export-lora --help)\n", a);
            goto done;
        }
        if (!strcmp(a, "-m") || !strcmp(a, "--model")) {
            model = argv[++i];
        } else if (!strcmp(a, "-o") || !strcmp(a, "--output") || !strcmp(a, "--output-file")) {
            out = argv[++i];
        } else if (!strcmp(a, "-t") || !strcmp(a, "--threads")) {
            char *end = NULL;
            long t = strtol(argv[++i], &end, 10);
            if (*end || end == argv[i] || t < 1 || t > 1024) {
                fprintf(stderr, "error: %s: invalid value '%s'\n", a, argv[i]);
                goto done;
            }
            n_threads = (int)t;
        } else if (!strcmp(a, "--lora") || !strcmp(a, "--lora-scaled")) {
            const bool scaled = !strcmp(a, "--lora-scaled");
            char *v = strdup(argv[++i]);
            if (!v || n_copies == MAX_LORAS) {
                free(v);
                fprintf(stderr, "error: too many adapters\n");
                goto done;
            }
            copies[n_copies++] = v;
            const bool single = strchr(v, ',') == NULL;
            for (char *item = v, *comma; item; item = comma ? comma + 1 : NULL) {
                comma = strchr(item, ',');
                if (comma) {
                    *comma = '\0';
                }
                float s = 1.0f;
                if (scaled) {
                    char *colon = strrchr(item, ':');
                    const char *sv = colon ? colon + 1 : single && i + 1 < argc ? argv[i + 1] : NULL;
                    char *end = NULL;
                    errno = 0;
                    s = sv ? strtof(sv, &end) : 0.0f;
                    if (!sv || errno || end == sv || *end) {
                        fprintf(stderr, "error: --lora-scaled: expected FILE:SCALE (or FILE SCALE), got '%s'\n", item);
                        goto done;
                    }
                    if (colon) {
                        *colon = '\0';
                    } else {
                        i++;
                    }
                }
                if (n == MAX_LORAS || !*item) {
                    fprintf(stderr, "error: %s: %s\n", a, *item ? "too many adapters" : "empty file name");
                    goto done;
                }
                files[n] = item;
                scales[n++] = s;
            }
        } else {
            fprintf(stderr, "error: unknown option '%s' (see oxillama export-lora --help)\n", a);
            goto done;
        }
    }
    if (!model || n == 0) {
        usage(stderr);
        goto done;
    }
    oxl_error err = {0};
    if (oxl_export_lora(model, files, scales, n, out, n_threads, stdout, &err) != 0) {
        fprintf(stderr, "error: %s\n", err.msg);
        goto done;
    }
    printf("done, output file is %s\n", out);
    rc = 0;
done:
    for (int i = 0; i < n_copies; i++) {
        free(copies[i]);
    }
    return rc;
}
