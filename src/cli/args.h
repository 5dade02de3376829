/* Command-line options shared by the subcommands, with llama.cpp's flag names
 * (common/arg.cpp): -m -p -f -n -t -c -b --temp --top-k --top-p --min-p --seed -ctk -ctv. */
#ifndef OXL_CLI_ARGS_H
#define OXL_CLI_ARGS_H

#include "oxillama.h"

#include <stdbool.h>
#include <stddef.h>

#define OXL_MAX_POSITIONAL 256

typedef struct oxl_opts {
    const char *model;  /* -m, --model */
    const char *prompt; /* -p, --prompt */
    const char *file;   /* -f, --file */
    int n_predict;      /* -n, --n-predict (-1: until end of generation or context) */
    int n_threads;      /* -t, --threads (0: physical cores) */
    int n_ctx;          /* -c, --ctx-size (0: the model's) */
    int n_batch;        /* -b, --batch-size */
    oxl_sampler_params sampling;
    oxl_kv_type type_k;             /* -ctk, --cache-type-k */
    oxl_kv_type type_v;             /* -ctv, --cache-type-v */
    oxl_flash_attn flash_attn;      /* -fa, --flash-attn */
    bool no_mmap;                   /* --no-mmap */
    bool no_repack;                 /* -nr, --no-repack */
    bool mlock;                     /* --mlock */
    const char *kld_base;           /* --kl-divergence-base */
    bool kld;                       /* --kl-divergence */
    bool ids;                       /* --ids */
    bool no_bos;                    /* --no-bos */
    bool parse_special;             /* --parse-special */
    bool conversation;              /* -cnv, --conversation, --chat */
    const char *system_prompt;      /* -sys, --system-prompt */
    const char *chat_template;      /* --chat-template: a built-in name or a Jinja template */
    const char *chat_template_file; /* --chat-template-file */
    bool verbose_prompt;            /* --verbose-prompt */
    bool help;
    int n_positional;
    char *positional[OXL_MAX_POSITIONAL];
} oxl_opts;

/* A -ctk/-ctv value as llama.cpp names the cache types (OXL_KV_TYPE_NAMES); -1 if unknown. */
int oxl_kv_type_parse(const char *v, oxl_kv_type *out);

/* Parses argv[1..]; prints a message naming the bad flag and returns -1 on error. */
int oxl_opts_parse(oxl_opts *o, int argc, char **argv);
/* The option table as help text. */
void oxl_opts_usage(const char *verb, const char *synopsis);
/* -m, or the bundled stories260K model when -m is absent. */
const char *oxl_opts_model(const oxl_opts *o);

/* Reads a whole file into a NUL-terminated buffer (caller frees); NULL with a message on stderr. */
char *oxl_read_text_file(const char *path, size_t *len);

/* llama.cpp's prompt escapes (common.cpp string_process_escapes): \n \r \t \' \" \\ and \xHH,
 * in place; returns the new length. */
size_t oxl_process_escapes(char *s, size_t len);

/* Prints "<prefix>: peak RSS <n> MiB" on stderr: the process's resident-set high-water mark so far
 * (getrusage ru_maxrss; mapped model pages count once touched). */
void oxl_print_peak_rss(const char *prefix);

#endif
