/* Command-line options shared by the subcommands, with llama.cpp's flag names
 * (common/arg.cpp): -m -p -f -n -t -c -b --temp --top-k --top-p --min-p --seed -ctk -ctv. */
#ifndef OXL_CLI_ARGS_H
#define OXL_CLI_ARGS_H

#include "oxillama.h"

#include <stdbool.h>
#include <stddef.h>

#define OXL_MAX_POSITIONAL 256
#define OXL_MAX_ADAPTERS 16
#define OXL_MAX_IMAGES 64

/* The verbs an option of the shared table belongs to (oxl_opts_parse accepts, and --help lists, only
 * the calling verb's). */
enum {
    OXL_VERB_RUN = 1u << 0,
    OXL_VERB_TOKENIZE = 1u << 1,
    OXL_VERB_PERPLEXITY = 1u << 2,
    OXL_VERB_GOLDEN = 1u << 3,
    OXL_VERB_SERVE = 1u << 4,
    /* parse flags, not verbs: positional arguments are the verb's (golden's files) */
    OXL_OPTS_POSITIONAL = 1u << 8,
    /* other options and words are kept, in order, in positional[] for another parser (serve) */
    OXL_OPTS_PASS_UNKNOWN = 1u << 9,
};

/* Log levels of -v/--verbose and --log-disable (llama.cpp's flags): OXL_LOG_INFO by default. */
enum { OXL_LOG_OFF = 0, OXL_LOG_INFO = 1, OXL_LOG_VERBOSE = 2 };

typedef struct oxl_opts {
    const char *model;  /* -m, --model */
    const char *prompt; /* -p, --prompt */
    const char *file;   /* -f, --file */
    int n_predict;      /* -n, --n-predict (-1: until end of generation or context) */
    int n_threads;      /* -t, --threads (0: physical cores) */
    int n_ctx;          /* -c, --ctx-size (0: the model's) */
    int n_batch;        /* -b, --batch-size */
    oxl_sampler_params sampling;
    const char *samplers_names;     /* --samplers (names separated by ';') */
    const char *sampling_seq;       /* --sampling-seq, --sampler-seq (letters) */
    const char *dry_breakers[16];   /* --dry-sequence-breaker values; not given: llama.cpp's "\n" ":" */
    int n_dry_breakers;             /* "\"" "*"; "none": no breaker (n = 0) */
    bool dry_breakers_set;          /* a --dry-sequence-breaker was given (its escapes are processed) */
    const char *grammar;            /* --grammar: GBNF text */
    const char *grammar_file;       /* --grammar-file */
    const char *json_schema;        /* -j/--json-schema: a JSON schema's text */
    const char *json_schema_file;   /* -jf/--json-schema-file */
    oxl_kv_type type_k;             /* -ctk, --cache-type-k */
    oxl_kv_type type_v;             /* -ctv, --cache-type-v */
    oxl_flash_attn flash_attn;      /* -fa, --flash-attn */
    bool no_mmap;                   /* --no-mmap */
    int n_gpu_layers;               /* -ngl, --n-gpu-layers, --gpu-layers (all: -1; default 0) */
    int main_gpu;                   /* -mg, --main-gpu, -dev, --device (-1: OXILLAMA_VK_DEVICE or 0) */
    bool device_none;               /* --device none: nothing offloaded */
    bool list_devices;              /* --list-devices */
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
    const char *reasoning_format;   /* --reasoning-format: none, deepseek (NULL: deepseek) */
    int reasoning_budget;           /* --reasoning-budget: -1 unrestricted (default), 0 no thinking, N > 0 tokens */
    const char *reasoning_budget_message; /* --reasoning-budget-message: forced before the end tag (NULL: none) */
    bool verbose_prompt;                  /* --verbose-prompt */
    const char *model_draft;              /* -md, --model-draft, --spec-draft-model */
    const char *spec_type;                /* --spec-type: none, ngram-simple, draft-simple (comma-separated) */
    int draft_max;                        /* --spec-draft-n-max, --draft-max (default 16) */
    int draft_min;                        /* --spec-draft-n-min, --draft-min (default 0) */
    float draft_p_min;                    /* --spec-draft-p-min, --draft-p-min (default 0.75) */
    int ngram_size_n;                     /* --spec-ngram-simple-size-n (default 12) */
    int ngram_size_m;                     /* --spec-ngram-simple-size-m (default 48) */
    bool verbose;                         /* -v, --verbose, --log-verbose */
    bool log_disable;                     /* --log-disable */
    int log_verbosity;                    /* -lv, --log-verbosity (-1: not given) */
    const char *log_format;               /* --log-format: text or json (serve's request log; NULL: text) */
    bool ctx_shift;                       /* --context-shift / --no-context-shift (default off, as llama.cpp) */
    int n_keep;                           /* --keep: prompt tokens a context shift keeps (-1: all; BOS added) */
    int log_level;                        /* OXL_LOG_*, from the two above */
    const char *prompt_cache;             /* --prompt-cache: sequence state file (docs/state-format.md) */
    bool prompt_cache_ro;                 /* --prompt-cache-ro: read it, do not write it */
    const char *mmproj;                   /* --mmproj: the vision projector (llama-mtmd-cli's) */
    const char *images[OXL_MAX_IMAGES];   /* --image (repeatable, in order) */
    int n_images;
    const char *audio;      /* --audio: refused by run (no audio encoder) */
    bool no_mmproj_offload; /* --no-mmproj-offload: accepted and ignored (CPU only) */
    int image_min_tokens;   /* --image-min-tokens / --image-max-tokens: dynamic-resolution bounds in */
    int image_max_tokens;   /* image tokens (<= 0: the projector's default; oxl_mmproj_params) */
    /* --lora, --lora-scaled, --control-vector, --control-vector-scaled (repeatable, comma-separated
     * lists) and --control-vector-layer-range (0: llama.cpp's defaults, 1 and n_layer) */
    const char *lora[OXL_MAX_ADAPTERS];
    float lora_scale[OXL_MAX_ADAPTERS];
    int n_lora;
    bool lora_init_without_apply; /* serve --lora-init-without-apply: the adapters' global scales start at 0 */
    const char *cvec[OXL_MAX_ADAPTERS];
    float cvec_scale[OXL_MAX_ADAPTERS];
    int n_cvec;
    int cvec_layer_start, cvec_layer_end;
    oxl_lora *lora_loaded[OXL_MAX_ADAPTERS]; /* oxl_opts_apply_adapters; oxl_opts_free_adapters */
    int n_lora_loaded;
    char **adapter_keep; /* copies of the option values, cut at commas (owned) */
    int n_adapter_keep;
    bool help;
    int n_positional;
    char *positional[OXL_MAX_POSITIONAL];
} oxl_opts;

/* A -ctk/-ctv value as llama.cpp names the cache types (OXL_KV_TYPE_NAMES); -1 if unknown. */
int oxl_kv_type_parse(const char *v, oxl_kv_type *out);

/* Parses argv[1..] (argv[0] is the verb) accepting the options of `verbs` (OXL_VERB_* | OXL_OPTS_*);
 * prints a message naming the bad option or argument and returns -1 on error. llama.cpp's GPU
 * options (-ngl, -sm, -ts, -mg and their long names) are accepted by every verb that loads a model,
 * with a one-line notice on stderr. */
int oxl_opts_parse(oxl_opts *o, unsigned verbs, int argc, char **argv);
/* -ngl's value: a count of layers or "all" (-1); -1 + a message naming the option when it is neither. */
int oxl_opts_parse_ngl(const char *opt, const char *v, int *out);
/* --device's value: an index, VulkanN (llama.cpp's device names) or "none" (*none set). */
int oxl_opts_parse_device(const char *opt, const char *v, int *out, bool *none);
/* --list-devices: prints the Vulkan devices as llama.cpp does ("Available devices:" then one line
 * each, or a line saying there are none). */
void oxl_opts_list_devices(void);
/* The model parameters of -ngl / -mg / --device. */
void oxl_opts_gpu_params(const oxl_opts *o, oxl_model_params *mp);
/* When a is one of llama.cpp's GPU options: prints the one-line notice that it is ignored and
 * returns true (for the verbs with their own parser, bench). */
bool oxl_opts_gpu_notice(const char *a, const char *value);
/* The options of `verbs` as help text, under "options:" or the given heading. */
void oxl_opts_usage(const char *verb, unsigned verbs, const char *synopsis);
void oxl_opts_usage_table(unsigned verbs);
/* -v: one line on stderr of the settings a model is loaded and run with (ISA, threads, batch, cache
 * types, flash attention, repacking, mapping). */
void oxl_log_settings(const oxl_opts *o);
/* printf to stderr when level <= the --log-disable / -v level of o. */
void oxl_log(const oxl_opts *o, int level, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* Loads the --lora adapters for model and sets them and the --control-vector vectors on ctx (as
 * llama.cpp's common_init_from_params); prints the error and returns -1 on failure. The adapters
 * stay loaded until oxl_opts_free_adapters (after the context is freed). */
int oxl_opts_apply_adapters(oxl_opts *o, const oxl_model *model, oxl_ctx *ctx);
void oxl_opts_free_adapters(oxl_opts *o);

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
