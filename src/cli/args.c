#include "args.h"

#include "file.h"
#include "oxl_types.h"

#include <errno.h>
#include <limits.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

typedef enum opt_kind { OPT_STR, OPT_INT, OPT_FLOAT, OPT_U32, OPT_KV, OPT_FA, OPT_FLAG } opt_kind;

typedef struct opt_def {
    const char *short_name;
    const char *long_name;
    opt_kind kind;
    size_t offset;
    const char *help;
} opt_def;

#define F(field) offsetof(oxl_opts, field)

static const opt_def opt_table[] = {
    {"-m", "--model", OPT_STR, F(model), "GGUF model file (default: the bundled stories260K)"},
    {"-p", "--prompt", OPT_STR, F(prompt), "prompt text"},
    {"-f", "--file", OPT_STR, F(file), "text file (prompt, or perplexity input)"},
    {"-n", "--n-predict", OPT_INT, F(n_predict), "tokens to generate (-1: until end of text; default -1)"},
    {"-t", "--threads", OPT_INT, F(n_threads), "threads (default: physical cores)"},
    {"-c", "--ctx-size", OPT_INT, F(n_ctx), "context size in tokens (default: the model's)"},
    {"-b", "--batch-size", OPT_INT, F(n_batch), "tokens per forward pass (default 512)"},
    {NULL, "--temp", OPT_FLOAT, F(sampling.temp), "temperature; 0 = greedy (default 0.8)"},
    {NULL, "--top-k", OPT_INT, F(sampling.top_k), "top-k sampling, 0 = off (default 40)"},
    {NULL, "--top-p", OPT_FLOAT, F(sampling.top_p), "top-p sampling, 1 = off (default 0.95)"},
    {NULL, "--min-p", OPT_FLOAT, F(sampling.min_p), "min-p sampling, 0 = off (default 0.05)"},
    {"-s", "--seed", OPT_U32, F(sampling.seed), "random seed (default: random)"},
    {"-ctk", "--cache-type-k", OPT_KV, F(type_k), "KV cache type for K: " OXL_KV_TYPE_NAMES " (default f16)"},
    {"-ctv", "--cache-type-v", OPT_KV, F(type_v),
     "KV cache type for V: " OXL_KV_TYPE_NAMES " (default f16; "
     "quantized V needs flash attention)"},
    {"-fa", "--flash-attn", OPT_FA, F(flash_attn), "flash attention: on, off, auto (default auto = on)"},
    {NULL, "--no-mmap", OPT_FLAG, F(no_mmap), "read the model into memory instead of mapping it"},
    {NULL, "--mlock", OPT_FLAG, F(mlock), "keep the model's pages in RAM (needs RLIMIT_MEMLOCK)"},
    {"-nr", "--no-repack", OPT_FLAG, F(no_repack), "keep weights in the file's layout (no interleaved repacking)"},
    {NULL, "--kl-divergence-base", OPT_STR, F(kld_base),
     "llama.cpp log-probability file to write, or read with --kl-divergence"},
    {NULL, "--kl-divergence", OPT_FLAG, F(kld), "compare against --kl-divergence-base"},
    {NULL, "--ids", OPT_FLAG, F(ids), "tokenize: print only the ids"},
    {NULL, "--no-bos", OPT_FLAG, F(no_bos), "tokenize: do not add BOS"},
    {NULL, "--parse-special", OPT_FLAG, F(parse_special), "tokenize: parse special-token text"},
    {"-cnv", "--conversation", OPT_FLAG, F(conversation),
     "run: interactive chat with the model's template (/exit ends)"},
    {NULL, "--chat", OPT_FLAG, F(conversation), "run: the same as -cnv"},
    {"-sys", "--system-prompt", OPT_STR, F(system_prompt), "chat: a system message first"},
    {NULL, "--chat-template", OPT_STR, F(chat_template),
     "chat: a built-in format (chatml, llama3, ...) or a Jinja template"},
    {NULL, "--chat-template-file", OPT_STR, F(chat_template_file), "chat: read the Jinja template from a file"},
    {NULL, "--verbose-prompt", OPT_FLAG, F(verbose_prompt),
     "run: print the prompt text and its tokens (on stderr) before "
     "generation; in a chat, each turn's new text"},
    {"-h", "--help", OPT_FLAG, F(help), "show this help"},
};

#define N_OPTS (sizeof opt_table / sizeof opt_table[0])

static int parse_value(const opt_def *d, const char *v, oxl_opts *o) {
    char *end = NULL;
    void *field = (char *)o + d->offset;
    errno = 0;
    switch (d->kind) {
    case OPT_STR: *(const char **)field = v; return 0;
    case OPT_INT: {
        long x = strtol(v, &end, 10);
        if (errno || *end || end == v || x < INT_MIN || x > INT_MAX) {
            break;
        }
        *(int *)field = (int)x;
        return 0;
    }
    case OPT_U32: {
        long long x = strtoll(v, &end, 10);
        if (errno || *end || end == v || x < -1 || x > (long long)UINT32_MAX) {
            break;
        }
        *(uint32_t *)field = x < 0 ? OXL_SEED_RANDOM : (uint32_t)x;
        return 0;
    }
    case OPT_FLOAT: {
        float x = strtof(v, &end);
        if (errno || *end || end == v) {
            break;
        }
        *(float *)field = x;
        return 0;
    }
    case OPT_KV:
        if (oxl_kv_type_parse(v, (oxl_kv_type *)field) == 0) {
            return 0;
        }
        fprintf(stderr, "error: %s %s: unsupported KV cache type (" OXL_KV_TYPE_NAMES ")\n", d->long_name, v);
        return -1;
    case OPT_FA: {
        static const char *const names[] = {"off", "on", "auto"};
        static const oxl_flash_attn values[] = {OXL_FLASH_ATTN_OFF, OXL_FLASH_ATTN_ON, OXL_FLASH_ATTN_AUTO};
        for (int i = 0; i < 3; i++) {
            if (!strcmp(v, names[i])) {
                *(oxl_flash_attn *)field = values[i];
                return 0;
            }
        }
        break;
    }
    case OPT_FLAG: break;
    }
    fprintf(stderr, "error: %s: invalid value '%s'\n", d->long_name, v);
    return -1;
}

int oxl_kv_type_parse(const char *v, oxl_kv_type *out) {
    const int t = oxl_type_from_name(v);
    const oxl_type_traits *tr = t >= 0 ? oxl_type_traits_get((uint32_t)t) : NULL;
    if (tr == NULL || !tr->kv_cache || strcmp(v, tr->name) != 0) {
        return -1;
    }
    *out = (oxl_kv_type)t;
    return 0;
}

int oxl_opts_parse(oxl_opts *o, int argc, char **argv) {
    memset(o, 0, sizeof *o);
    o->n_predict = -1;
    o->n_batch = 512;
    o->sampling = oxl_sampler_default_params();
    o->type_k = OXL_KV_F16;
    o->type_v = OXL_KV_F16;
    o->flash_attn = OXL_FLASH_ATTN_AUTO;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const opt_def *d = NULL;
        for (size_t k = 0; k < N_OPTS && !d; k++) {
            if ((opt_table[k].short_name && !strcmp(a, opt_table[k].short_name)) ||
                !strcmp(a, opt_table[k].long_name)) {
                d = &opt_table[k];
            }
        }
        if (!d) {
            if (a[0] == '-' && a[1] != '\0') {
                fprintf(stderr, "error: unknown option '%s'\n", a);
                return -1;
            }
            if (o->n_positional == OXL_MAX_POSITIONAL) {
                fprintf(stderr, "error: too many arguments\n");
                return -1;
            }
            o->positional[o->n_positional++] = argv[i];
            continue;
        }
        if (d->kind == OPT_FLAG) {
            *(bool *)((char *)o + d->offset) = true;
            continue;
        }
        if (i + 1 >= argc) {
            fprintf(stderr, "error: %s needs a value\n", a);
            return -1;
        }
        if (parse_value(d, argv[++i], o) != 0) {
            return -1;
        }
    }
    return 0;
}

void oxl_opts_usage(const char *verb, const char *synopsis) {
    printf("usage: oxillama %s %s\n\noptions:\n", verb, synopsis);
    for (size_t k = 0; k < N_OPTS; k++) {
        char names[64];
        snprintf(names, sizeof names, "%s%s%s", opt_table[k].short_name ? opt_table[k].short_name : "",
                 opt_table[k].short_name ? ", " : "", opt_table[k].long_name);
        printf("  %-26s %s\n", names, opt_table[k].help);
    }
}

const char *oxl_opts_model(const oxl_opts *o) {
#ifdef OXL_DEFAULT_MODEL
    return o->model ? o->model : OXL_DEFAULT_MODEL;
#else
    return o->model;
#endif
}

/* Reads a whole file into a NUL-terminated buffer (caller frees); NULL with a message on error. */
char *oxl_read_text_file(const char *path, size_t *len) {
    oxl_error err = {{0}};
    char *buf = oxl_read_file(path, len, &err);
    if (buf == NULL) {
        fprintf(stderr, "error: %s\n", err.msg);
    }
    return buf;
}

/* Backslash escapes in -p, as llama.cpp applies them to prompts (common.cpp string_process_escapes):
 * \n \r \t \' \" \\ and \xHH; any other escape is kept as written. Works in place; returns the new
 * length. */
size_t oxl_process_escapes(char *s, size_t len) {
    size_t o = 0;
    for (size_t i = 0; i < len; i++) {
        if (s[i] != '\\' || i + 1 >= len) {
            s[o++] = s[i];
            continue;
        }
        char c = s[++i];
        switch (c) {
        case 'n': s[o++] = '\n'; break;
        case 'r': s[o++] = '\r'; break;
        case 't': s[o++] = '\t'; break;
        case '\'':
        case '"':
        case '\\': s[o++] = c; break;
        default:
            if (c == 'x' && i + 2 < len) {
                char hex[3] = {s[i + 1], s[i + 2], 0}, *end;
                long val = strtol(hex, &end, 16);
                if (end == hex + 2) {
                    s[o++] = (char)val;
                    i += 2;
                    break;
                }
            }
            s[o++] = '\\';
            s[o++] = c;
        }
    }
    return o;
}

void oxl_print_peak_rss(const char *prefix) {
#if defined(__wasi__)
    (void)prefix; /* WASI's getrusage has no peak RSS */
#else
    struct rusage ru;
    if (getrusage(RUSAGE_SELF, &ru) == 0) {
        /* ru_maxrss is in KiB on Linux */
        fprintf(stderr, "%s: peak RSS %.1f MiB\n", prefix, (double)ru.ru_maxrss / 1024.0);
    }
#endif
}
