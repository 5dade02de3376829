#include "args.h"

#include "file.h"
#include "kernels.h"
#ifndef OXL_SUBSET
#include "chat.h"
#endif
#include "oxl_types.h"
#ifdef OXL_VULKAN
#include "gpu.h"
#endif

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

typedef enum opt_kind {
    OPT_BREAKER,
    OPT_STR,
    OPT_INT,
    OPT_FLOAT,
    OPT_U32,
    OPT_KV,
    OPT_FA,
    OPT_FLAG,
    OPT_NOFLAG, /* sets a bool false: the --no- form of an OPT_FLAG */
    OPT_GPU,
    OPT_NGL,         /* N or all */
    OPT_DEVICE,      /* N, VulkanN or none */
    OPT_IMAGE,       /* FILE, repeatable */
    OPT_LORA,        /* FNAME[,FNAME...] */
    OPT_LORA_SCALED, /* FNAME:SCALE[,...], or FNAME SCALE */
    OPT_CVEC,
    OPT_CVEC_SCALED,
    OPT_RANGE, /* START END */
} opt_kind;

typedef struct opt_def {
    const char *short_name;
    const char *long_name;
    opt_kind kind;
    size_t offset;
    unsigned verbs; /* OXL_VERB_* */
    const char *help;
} opt_def;

#define F(field) offsetof(oxl_opts, field)
#define R OXL_VERB_RUN
#define T OXL_VERB_TOKENIZE
#define P OXL_VERB_PERPLEXITY
#define G OXL_VERB_GOLDEN
#define S OXL_VERB_SERVE
#define GPU_HELP "ignored: llama.cpp's multi-GPU option (one Vulkan device is used)"

static const opt_def opt_table[] = {
    {"-m", "--model", OPT_STR, F(model), R | T | P | G, "GGUF model file (default: the bundled stories260K)"},
    {"-p", "--prompt", OPT_STR, F(prompt), R | T, "prompt text (one argument: quote it)"},
    {"-f", "--file", OPT_STR, F(file), R | T | P, "text file (prompt, or perplexity input)"},
    {"-n", "--n-predict", OPT_INT, F(n_predict), R, "tokens to generate (-1: until end of text; default -1)"},
    {"-t", "--threads", OPT_INT, F(n_threads), R | P, "threads (default: physical cores)"},
    {"-c", "--ctx-size", OPT_INT, F(n_ctx), R | P, "context size in tokens (default: the model's; perplexity 512)"},
    {"-b", "--batch-size", OPT_INT, F(n_batch), R | P, "tokens per forward pass (default 512)"},
    {NULL, "--temp", OPT_FLOAT, F(sampling.temp), R, "temperature; 0 = greedy (default 0.8)"},
    {NULL, "--top-k", OPT_INT, F(sampling.top_k), R, "top-k sampling, 0 = off (default 40)"},
    {NULL, "--top-p", OPT_FLOAT, F(sampling.top_p), R, "top-p sampling, 1 = off (default 0.95)"},
    {NULL, "--min-p", OPT_FLOAT, F(sampling.min_p), R, "min-p sampling, 0 = off (default 0.05)"},
    {"-s", "--seed", OPT_U32, F(sampling.seed), R, "random seed (default: random)"},
    {NULL, "--repeat-last-n", OPT_INT, F(sampling.penalty_last_n), R,
     "last N tokens (prompt and output) the penalties look at, 0 = off (default 64)"},
    {NULL, "--repeat-penalty", OPT_FLOAT, F(sampling.penalty_repeat), R, "repeat penalty, 1 = off (default 1)"},
    {NULL, "--frequency-penalty", OPT_FLOAT, F(sampling.penalty_freq), R, "frequency penalty, 0 = off (default 0)"},
    {NULL, "--presence-penalty", OPT_FLOAT, F(sampling.penalty_present), R, "presence penalty, 0 = off (default 0)"},
    {NULL, "--typical", OPT_FLOAT, F(sampling.typ_p), R, "locally typical sampling p, 1 = off (default 1)"},
    {NULL, "--top-a", OPT_FLOAT, F(sampling.top_a), R,
     "top-a (an extension): keep p >= a * p_max^2, 0 = off (default 0)"},
    {NULL, "--eta", OPT_FLOAT, F(sampling.eta), R,
     "eta-sampling (an extension): keep p >= min(eta, sqrt(eta) e^-H), H the entropy; 0 = off (default 0)"},
    {NULL, "--typical-p", OPT_FLOAT, F(sampling.typ_p), R, "the same as --typical"},
    {NULL, "--top-nsigma", OPT_FLOAT, F(sampling.top_n_sigma), R, "top-n-sigma sampling, -1 = off (default -1)"},
    {NULL, "--top-n-sigma", OPT_FLOAT, F(sampling.top_n_sigma), R, "the same as --top-nsigma"},
    {NULL, "--xtc-probability", OPT_FLOAT, F(sampling.xtc_probability), R, "XTC probability, 0 = off (default 0)"},
    {NULL, "--xtc-threshold", OPT_FLOAT, F(sampling.xtc_threshold), R, "XTC threshold, > 0.5 = off (default 0.1)"},
    {NULL, "--dynatemp-range", OPT_FLOAT, F(sampling.dynatemp_range), R,
     "dynamic temperature range, 0 = off (default 0)"},
    {NULL, "--dynatemp-exp", OPT_FLOAT, F(sampling.dynatemp_exponent), R, "dynamic temperature exponent (default 1)"},
    {NULL, "--mirostat", OPT_INT, F(sampling.mirostat), R, "mirostat: 0 = off, 1 = mirostat, 2 = mirostat 2.0"},
    {NULL, "--mirostat-lr", OPT_FLOAT, F(sampling.mirostat_eta), R, "mirostat learning rate eta (default 0.1)"},
    {NULL, "--mirostat-ent", OPT_FLOAT, F(sampling.mirostat_tau), R, "mirostat target entropy tau (default 5)"},
    {NULL, "--dry-multiplier", OPT_FLOAT, F(sampling.dry_multiplier), R, "DRY multiplier, 0 = off (default 0)"},
    {NULL, "--dry-base", OPT_FLOAT, F(sampling.dry_base), R, "DRY base; a value below 1 is ignored (default 1.75)"},
    {NULL, "--dry-allowed-length", OPT_INT, F(sampling.dry_allowed_length), R,
     "DRY: repeats longer than this are penalized (default 2)"},
    {NULL, "--dry-penalty-last-n", OPT_INT, F(sampling.dry_penalty_last_n), R,
     "DRY: last N tokens scanned, 0 = off (default 64)"},
    {NULL, "--dry-sequence-breaker", OPT_BREAKER, 0, R,
     "DRY sequence breaker (repeatable; replaces the defaults \\n : \" *; \"none\": none)"},
    {NULL, "--samplers", OPT_STR, F(samplers_names), R,
     "the chain's order, names separated by ';' (default penalties;dry;top_n_sigma;top_k;typ_p;top_p;min_p;xtc;"
     "temperature)"},
    {NULL, "--sampling-seq", OPT_STR, F(sampling_seq), R,
     "the chain's order as letters (default edskypmxt; A top-a, H eta)"},
    {NULL, "--sampler-seq", OPT_STR, F(sampling_seq), R, "the same as --sampling-seq"},
    {NULL, "--grammar", OPT_STR, F(grammar), R, "GBNF grammar the output must follow (llama.cpp's syntax)"},
    {NULL, "--grammar-file", OPT_STR, F(grammar_file), R, "read the GBNF grammar from a file"},
    {"-j", "--json-schema", OPT_STR, F(json_schema), R,
     "JSON schema the output must follow (converted to a grammar as llama.cpp converts it)"},
    {"-jf", "--json-schema-file", OPT_STR, F(json_schema_file), R, "read the JSON schema from a file"},
    {"-ctk", "--cache-type-k", OPT_KV, F(type_k), R | P | S,
     "KV cache type for K: " OXL_KV_TYPE_NAMES " (default f16)"},
    {"-ctv", "--cache-type-v", OPT_KV, F(type_v), R | P | S,
     "KV cache type for V: " OXL_KV_TYPE_NAMES " (default f16; "
     "quantized V needs flash attention)"},
    {"-fa", "--flash-attn", OPT_FA, F(flash_attn), R | P | S, "flash attention: on, off, auto (default auto = on)"},
    {NULL, "--no-mmap", OPT_FLAG, F(no_mmap), R | P | S, "read the model into memory instead of mapping it"},
    {NULL, "--mlock", OPT_FLAG, F(mlock), R | P | S, "keep the model's pages in RAM (needs RLIMIT_MEMLOCK)"},
    {"-nr", "--no-repack", OPT_FLAG, F(no_repack), R | P | S,
     "keep weights in the file's layout (no interleaved repacking)"},
    {NULL, "--kl-divergence-base", OPT_STR, F(kld_base), P,
     "llama.cpp log-probability file to write, or read with --kl-divergence"},
    {NULL, "--kl-divergence", OPT_FLAG, F(kld), P, "compare against --kl-divergence-base"},
    {NULL, "--ids", OPT_FLAG, F(ids), T, "print only the ids"},
    {NULL, "--no-bos", OPT_FLAG, F(no_bos), T, "do not add BOS"},
    {NULL, "--parse-special", OPT_FLAG, F(parse_special), T, "parse special-token text"},
    {"-cnv", "--conversation", OPT_FLAG, F(conversation), R, "interactive chat with the model's template (/exit ends)"},
    {NULL, "--chat", OPT_FLAG, F(conversation), R, "the same as -cnv"},
    {"-sys", "--system-prompt", OPT_STR, F(system_prompt), R, "chat: a system message first"},
    {NULL, "--chat-template", OPT_STR, F(chat_template), R | S,
     "chat: a built-in format (chatml, llama3, ...) or a Jinja template"},
    {NULL, "--chat-template-file", OPT_STR, F(chat_template_file), R | S, "chat: read the Jinja template from a file"},
    {NULL, "--reasoning-format", OPT_STR, F(reasoning_format), R | S,
     "chat: deepseek (default) puts <think> blocks in reasoning_content, none leaves them in content"},
    {NULL, "--reasoning-budget", OPT_INT, F(reasoning_budget), R | S,
     "chat: -1 for unrestricted thinking (default), 0 to disable thinking (the template gets enable_thinking "
     "false), N > 0 to end a thought after N tokens (the message and the end tag are then forced)"},
    {NULL, "--reasoning-budget-message", OPT_STR, F(reasoning_budget_message), R | S,
     "chat: text forced before the end-of-thinking tag when the budget is spent (default: none)"},
    {NULL, "--verbose-prompt", OPT_FLAG, F(verbose_prompt), R,
     "print the prompt text and its tokens (on stderr) before "
     "generation; in a chat, each turn's new text"},
    {"-md", "--model-draft", OPT_STR, F(model_draft), R | S, "draft model for speculative decoding (default: none)"},
    {NULL, "--spec-draft-model", OPT_STR, F(model_draft), R | S, "the same as -md"},
    {NULL, "--spec-type", OPT_STR, F(spec_type), R | S,
     "speculative decoding: none, ngram-simple, draft-simple, comma-separated (default: draft-simple with -md)"},
    {NULL, "--spec-draft-n-max", OPT_INT, F(draft_max), R | S, "most tokens to draft (default 16)"},
    {NULL, "--draft-max", OPT_INT, F(draft_max), R | S, "the same as --spec-draft-n-max"},
    {NULL, "--spec-draft-n-min", OPT_INT, F(draft_min), R | S, "fewest draft-model tokens worth verifying (default 0)"},
    {NULL, "--draft-min", OPT_INT, F(draft_min), R | S, "the same as --spec-draft-n-min"},
    {NULL, "--spec-draft-p-min", OPT_FLOAT, F(draft_p_min), R | S,
     "least probability of a draft-model token to go on drafting (default 0.75)"},
    {NULL, "--draft-p-min", OPT_FLOAT, F(draft_p_min), R | S, "the same as --spec-draft-p-min"},
    {NULL, "--spec-ngram-simple-size-n", OPT_INT, F(ngram_size_n), R | S,
     "ngram-simple: tokens of the n-gram looked up (default 12)"},
    {NULL, "--spec-ngram-simple-size-m", OPT_INT, F(ngram_size_m), R | S,
     "ngram-simple: most tokens drafted after a match (default 48)"},
    {"-v", "--verbose", OPT_FLAG, F(verbose), R | P | S, "more log lines on stderr (the settings used)"},
    {NULL, "--log-verbose", OPT_FLAG, F(verbose), R | P | S, "the same as -v"},
    {NULL, "--log-disable", OPT_FLAG, F(log_disable), R | P | S, "no log lines on stderr (errors still)"},
    {"-lv", "--log-verbosity", OPT_INT, F(log_verbosity), R | P | S,
     "llama.cpp's verbosity threshold: 0-2 errors only, 3 info (default), 4 or more as -v"},
    {NULL, "--verbosity", OPT_INT, F(log_verbosity), R | P | S, "the same as --log-verbosity"},
    {NULL, "--log-format", OPT_STR, F(log_format), S, "request log lines: text (default) or json (one object a line)"},
    {NULL, "--context-shift", OPT_FLAG, F(ctx_shift), R | S,
     "when the context is full, drop half of the tokens after --keep and go on (default: off)"},
    {NULL, "--no-context-shift", OPT_NOFLAG, F(ctx_shift), R | S, "stop when the context is full (the default)"},
    {NULL, "--keep", OPT_INT, F(n_keep), R | S,
     "context shift: prompt tokens kept at the start, BOS aside (default 0; -1: the whole prompt)"},
    {"-ngl", "--n-gpu-layers", OPT_NGL, F(n_gpu_layers), R | P | S | G,
     "layers to run on the Vulkan device: the last N repeating layers; more than the model has (or all) also the "
     "output layer (default 0)"},
    {NULL, "--gpu-layers", OPT_NGL, F(n_gpu_layers), R | P | S | G, "the same as -ngl"},
    {"-dev", "--device", OPT_DEVICE, F(main_gpu), R | P | S | G,
     "Vulkan device for -ngl: an index, VulkanN, or none (default: OXILLAMA_VK_DEVICE, else 0)"},
    {"-mg", "--main-gpu", OPT_DEVICE, F(main_gpu), R | P | S | G, "the same as --device"},
    {NULL, "--list-devices", OPT_FLAG, F(list_devices), R | P | S | G, "print the Vulkan devices and exit"},
    {"-sm", "--split-mode", OPT_GPU, 0, R | P | S, GPU_HELP},
    {"-ts", "--tensor-split", OPT_GPU, 0, R | P | S, GPU_HELP},
    {NULL, "--prompt-cache", OPT_STR, F(prompt_cache), R,
     "state file: reuse the prompt prefix it holds, save the state after the prompt"},
    {NULL, "--prompt-cache-ro", OPT_FLAG, F(prompt_cache_ro), R, "with --prompt-cache: read the file, never write it"},
    {NULL, "--mmproj", OPT_STR, F(mmproj), R, "vision projector (mmproj GGUF) for --image and /image"},
    {NULL, "--image", OPT_IMAGE, 0, R,
     "image file (PNG, JPEG, WebP) for the prompt's <__media__> markers, in order (repeatable)"},
    {NULL, "--audio", OPT_STR, F(audio), R, "not supported: audio input (an error)"},
    {NULL, "--image-min-tokens", OPT_INT, F(image_min_tokens), R,
     "fewest tokens an image takes, dynamic-resolution projectors only (Qwen-VL; default: the projector's, 8)"},
    {NULL, "--image-max-tokens", OPT_INT, F(image_max_tokens), R,
     "most tokens an image takes, dynamic-resolution projectors only (Qwen-VL; default: the projector's, 4096)"},
    {NULL, "--no-mmproj-offload", OPT_FLAG, F(no_mmproj_offload), R,
     "ignored: llama.cpp's GPU option for the projector (this engine runs on the CPU)"},
    {NULL, "--lora", OPT_LORA, 0, R | P | S, "LoRA adapter file (repeatable; comma-separated files)"},
    {NULL, "--lora-scaled", OPT_LORA_SCALED, 0, R | P | S,
     "LoRA adapter with a scale: FILE:SCALE[,...] (or FILE SCALE; repeatable)"},
    {NULL, "--lora-init-without-apply", OPT_FLAG, F(lora_init_without_apply), S,
     "load the LoRA adapters with global scale 0 (set them with POST /lora-adapters)"},
    {NULL, "--control-vector", OPT_CVEC, 0, R | P | S, "control vector file (repeatable; comma-separated files)"},
    {NULL, "--control-vector-scaled", OPT_CVEC_SCALED, 0, R | P | S,
     "control vector with a strength: FILE:SCALE[,...] (or FILE SCALE; repeatable)"},
    {NULL, "--control-vector-layer-range", OPT_RANGE, 0, R | P | S,
     "the layers the control vectors are added to, inclusive (default 1 to the last)"},
    {"-h", "--help", OPT_FLAG, F(help), R | T | P | G | S, "show this help"},
};
#undef R
#undef T
#undef P
#undef G
#undef S

#define N_OPTS (sizeof opt_table / sizeof opt_table[0])

static int parse_value(const opt_def *d, const char *v, oxl_opts *o) {
    char *end = NULL;
    void *field = (char *)o + d->offset;
    errno = 0;
    switch (d->kind) {
    case OPT_STR: *(const char **)field = v; return 0;
    case OPT_BREAKER:
        if (!o->dry_breakers_set) {
            o->dry_breakers_set = true;
            o->n_dry_breakers = 0;
        }
        if (!strcmp(v, "none")) {
            o->n_dry_breakers = 0;
            return 0;
        }
        if (o->n_dry_breakers == (int)(sizeof o->dry_breakers / sizeof o->dry_breakers[0])) {
            fprintf(stderr, "error: %s: too many breakers (at most %zu)\n", d->long_name,
                    sizeof o->dry_breakers / sizeof o->dry_breakers[0]);
            return -1;
        }
        o->dry_breakers[o->n_dry_breakers++] = v;
        return 0;
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
    case OPT_NGL: return oxl_opts_parse_ngl(d->long_name, v, (int *)field);
    case OPT_DEVICE: return oxl_opts_parse_device(d->long_name, v, (int *)field, &o->device_none);
    case OPT_FLAG:
    case OPT_NOFLAG:
    case OPT_GPU:
    case OPT_IMAGE:
    case OPT_LORA:
    case OPT_LORA_SCALED:
    case OPT_CVEC:
    case OPT_CVEC_SCALED:
    case OPT_RANGE: break;
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

static const opt_def *find_opt(const char *a) {
    for (size_t k = 0; k < N_OPTS; k++) {
        if ((opt_table[k].short_name && !strcmp(a, opt_table[k].short_name)) || !strcmp(a, opt_table[k].long_name)) {
            return &opt_table[k];
        }
    }
    return NULL;
}

/* A word after the value of a text option (-p Once upon a time): the shell split an unquoted text.
 * Names the words and shows the quoted form. */
static void several_words(const char *opt, char **argv, int value_i, int argc) {
    const bool prompt = !strcmp(opt, "-p") || !strcmp(opt, "--prompt");
    fprintf(stderr, "error: unexpected argument '%s': %s%s has several words; quote it: %s \"%s", argv[value_i + 1],
            prompt ? "the prompt" : "the value of ", prompt ? "" : opt, opt, argv[value_i]);
    for (int j = value_i + 1; j < argc && !(argv[j][0] == '-' && argv[j][1] != '\0'); j++) {
        fprintf(stderr, " %s", argv[j]);
    }
    fputs("\"\n", stderr);
}

#ifndef OXL_SUBSET
/* --chat-template: a built-in name, or a template (llama.cpp takes a value with Jinja syntax as the
 * template itself). */
static int check_chat_template(const char *v) {
    if (strstr(v, "{%") || strstr(v, "{{") || oxl_chat_is_builtin(v)) {
        return 0;
    }
    fprintf(stderr, "error: --chat-template: unknown template '%s'; the built-in templates are:", v);
    for (size_t i = 0; oxl_chat_builtin_name(i); i++) {
        fprintf(stderr, "%s %s", i ? "," : "", oxl_chat_builtin_name(i));
    }
    fputs("\n(a value with Jinja syntax, {% or {{, is used as the template itself)\n", stderr);
    return -1;
}
#endif

int oxl_opts_parse_ngl(const char *opt, const char *v, int *out) {
    if (!strcmp(v, "all")) {
        *out = -1;
        return 0;
    }
    char *end;
    errno = 0;
    const long n = strtol(v, &end, 10);
    if (end == v || *end || errno || n < -1 || n > 1000000) {
        fprintf(stderr, "error: %s: invalid value '%s' (a number of layers, or all)\n", opt, v);
        return -1;
    }
    *out = (int)n;
    return 0;
}

int oxl_opts_parse_device(const char *opt, const char *v, int *out, bool *none) {
    if (!strcmp(v, "none")) {
        *none = true;
        return 0;
    }
    const char *num = !strncmp(v, "Vulkan", 6) ? v + 6 : v;
    char *end;
    errno = 0;
    const long n = strtol(num, &end, 10);
    if (end == num || *end || errno || n < 0 || n > 1000000) {
        fprintf(stderr, "error: %s: invalid value '%s' (a device index, VulkanN or none: --list-devices)\n", opt, v);
        return -1;
    }
    *out = (int)n;
    *none = false;
    return 0;
}

void oxl_opts_list_devices(void) {
#ifdef OXL_VULKAN
    const int n = oxl_gpu_device_count();
    if (n == 0) {
        printf("Available devices: none (no Vulkan device)\n");
        return;
    }
    printf("Available devices:\n");
    for (int i = 0; i < n; i++) {
        char name[256];
        if (oxl_gpu_device_name(i, name, sizeof name, NULL) == 0) {
            printf("  Vulkan%d: %s\n", i, name);
        }
    }
#else
    printf("Available devices: none (this build has no Vulkan backend)\n");
#endif
}

void oxl_opts_gpu_params(const oxl_opts *o, oxl_model_params *mp) {
    mp->n_gpu_layers = o->device_none ? 0 : o->n_gpu_layers;
    mp->main_gpu = o->main_gpu;
}

bool oxl_opts_gpu_notice(const char *a, const char *value) {
    const opt_def *d = find_opt(a);
    if (!d || d->kind != OPT_GPU) {
        return false;
    }
    fprintf(stderr, "oxillama: %s %s ignored: one Vulkan device is used (no multi-GPU split)\n", a, value);
    return true;
}

/* llama.cpp's sampler names (common_sampler_types_from_names: canonical, kebab-case, without the
 * dash, and aliases; case-insensitive) and letters, for --samplers and --sampling-seq. */
static const struct {
    const char *name;
    char letter;
} sampler_names[] = {
    {"dry", 'd'},       {"top_k", 'k'},  {"top-k", 'k'},     {"topk", 'k'},        {"top_p", 'p'},
    {"top-p", 'p'},     {"topp", 'p'},   {"nucleus", 'p'},   {"top_n_sigma", 's'}, {"top-n-sigma", 's'},
    {"topnsigma", 's'}, {"typ_p", 'y'},  {"typ-p", 'y'},     {"typp", 'y'},        {"typ", 'y'},
    {"min_p", 'm'},     {"min-p", 'm'},  {"minp", 'm'},      {"temperature", 't'}, {"temp", 't'},
    {"xtc", 'x'},       {"infill", 'i'}, {"penalties", 'e'}, {"adaptive_p", 'a'},  {"adaptive-p", 'a'},
    {"adaptivep", 'a'}, {"top_a", 'A'},  {"top-a", 'A'},     {"topa", 'A'},        {"eta", 'H'},
};

/* Appends the step of letter c to the chain (16 places). Unknown letters are skipped with a warning,
 * as llama.cpp. */
static int add_sampler(oxl_sampler_params *sp, size_t *n, char c, const char *shown) {
    if (!strchr("edskypmxtAH", c)) {
        if (c == 'i' || c == 'a') {
            fprintf(stderr, "error: sampler '%s' is not supported\n", shown);
            return -1;
        }
        fprintf(stderr, "warning: unable to match sampler '%s'\n", shown);
        return 0;
    }
    if (*n + 1 >= sizeof sp->samplers) {
        fprintf(stderr, "error: too many samplers (at most %zu)\n", sizeof sp->samplers - 1);
        return -1;
    }
    sp->samplers[(*n)++] = c;
    sp->samplers[*n] = '\0';
    return 0;
}

/* --samplers NAMES (';'-separated) or --sampling-seq LETTERS into o->sampling.samplers; the later
 * option on the command line wins in llama.cpp, here --sampling-seq when both are given. */
static int parse_samplers(oxl_opts *o) {
    oxl_sampler_params *sp = &o->sampling;
    size_t n = 0;
    if (o->sampling_seq) {
        sp->samplers[0] = '\0';
        for (const char *c = o->sampling_seq; *c; c++) {
            char shown[2] = {*c, 0};
            if (add_sampler(sp, &n, *c, shown) != 0) {
                return -1;
            }
        }
    } else if (o->samplers_names) {
        sp->samplers[0] = '\0';
        const char *a = o->samplers_names;
        for (;;) {
            const char *e = strchr(a, ';');
            size_t len = e ? (size_t)(e - a) : strlen(a);
            char word[32];
            if (len < sizeof word) {
                for (size_t k = 0; k < len; k++) {
                    word[k] = (char)tolower((unsigned char)a[k]);
                }
                word[len] = '\0';
                char letter = '?';
                for (size_t k = 0; k < sizeof sampler_names / sizeof sampler_names[0]; k++) {
                    if (!strcmp(word, sampler_names[k].name)) {
                        letter = sampler_names[k].letter;
                    }
                }
                if (add_sampler(sp, &n, letter, word) != 0) {
                    return -1;
                }
            } else {
                fprintf(stderr, "warning: unable to match sampler '%.*s'\n", (int)len, a);
            }
            if (!e) {
                break;
            }
            a = e + 1;
        }
    } else {
        return 0;
    }
    if (n == 0) { /* an empty chain: dist alone (the struct's "" would mean the default order) */
        fprintf(stderr, "error: no sampler left in the chain\n");
        return -1;
    }
    return 0;
}

/* One FILE or FILE:SCALE item of an adapter option (llama.cpp's parse_csv_row items). */
static int add_adapter(const opt_def *d, char *item, const char *next, int *used, oxl_opts *o) {
    const bool cvec = d->kind == OPT_CVEC || d->kind == OPT_CVEC_SCALED;
    const char **names = cvec ? o->cvec : o->lora;
    float *scales = cvec ? o->cvec_scale : o->lora_scale;
    int *n = cvec ? &o->n_cvec : &o->n_lora;
    float scale = 1.0f;
    if (d->kind == OPT_LORA_SCALED || d->kind == OPT_CVEC_SCALED) {
        char *colon = strrchr(item, ':');
        const char *sv = colon ? colon + 1 : next;
        char *end = NULL;
        if (sv) {
            errno = 0;
            scale = strtof(sv, &end);
        }
        if (!sv || errno || end == sv || *end) {
            fprintf(stderr, "error: %s: expected FILE:SCALE (or FILE SCALE), got '%s'\n", d->long_name, item);
            return -1;
        }
        if (colon) {
            *colon = '\0';
        } else {
            *used = 2;
        }
    }
    if (*item == '\0') {
        fprintf(stderr, "error: %s: empty file name\n", d->long_name);
        return -1;
    }
    if (*n == OXL_MAX_ADAPTERS) {
        fprintf(stderr, "error: %s: too many files (at most %d)\n", d->long_name, OXL_MAX_ADAPTERS);
        return -1;
    }
    names[*n] = item;
    scales[(*n)++] = scale;
    return 0;
}

/* The adapter options; returns the arguments consumed after the option, or -1. */
static int parse_adapter_opt(const opt_def *d, int n_args, char **args, oxl_opts *o) {
    if (d->kind == OPT_RANGE) {
        char *e1 = NULL, *e2 = NULL;
        long lo = n_args >= 2 ? strtol(args[0], &e1, 10) : 0, hi = n_args >= 2 ? strtol(args[1], &e2, 10) : 0;
        if (n_args < 2 || e1 == args[0] || *e1 || e2 == args[1] || *e2 || lo < INT_MIN || lo > INT_MAX ||
            hi < INT_MIN || hi > INT_MAX) {
            fprintf(stderr, "error: %s needs START and END (integers)\n", d->long_name);
            return -1;
        }
        o->cvec_layer_start = (int)lo;
        o->cvec_layer_end = (int)hi;
        return 2;
    }
    /* the items are cut out of a copy of the value, kept with the options */
    const size_t len = strlen(args[0]) + 1;
    char *buf = malloc(len);
    if (!buf) {
        fprintf(stderr, "error: out of memory\n");
        return -1;
    }
    memcpy(buf, args[0], len);
    char **keep = realloc(o->adapter_keep, sizeof(char *) * (o->n_adapter_keep + 1));
    if (!keep) {
        free(buf);
        fprintf(stderr, "error: out of memory\n");
        return -1;
    }
    o->adapter_keep = keep;
    o->adapter_keep[o->n_adapter_keep++] = buf;
    int used = 1;
    const bool single = strchr(buf, ',') == NULL;
    for (char *item = buf, *comma; item; item = comma ? comma + 1 : NULL) {
        comma = strchr(item, ',');
        if (comma) {
            *comma = '\0';
        }
        if (add_adapter(d, item, single && n_args >= 2 ? args[1] : NULL, &used, o) != 0) {
            return -1;
        }
    }
    return used;
}

int oxl_opts_apply_adapters(oxl_opts *o, const oxl_model *model, oxl_ctx *ctx) {
    oxl_error err = {0};
    for (int i = o->n_lora_loaded; i < o->n_lora; i++) {
        o->lora_loaded[i] = oxl_lora_load(model, o->lora[i], &err);
        if (!o->lora_loaded[i]) {
            fprintf(stderr, "error: %s\n", err.msg);
            return -1;
        }
        o->n_lora_loaded = i + 1;
    }
    if (o->n_lora > 0 && oxl_ctx_set_loras(ctx, o->lora_loaded, o->lora_scale, o->n_lora, &err) != 0) {
        fprintf(stderr, "error: %s\n", err.msg);
        return -1;
    }
    if (o->n_cvec == 0) {
        return 0;
    }
    float *data = NULL;
    size_t len = 0;
    int32_t n_embd = 0;
    if (oxl_control_vector_load(o->cvec, o->cvec_scale, o->n_cvec, &data, &len, &n_embd, &err) != 0) {
        fprintf(stderr, "error: %s\n", err.msg);
        return -1;
    }
    /* common_init_from_params: a start or end <= 0 is layer 1 or the model's last */
    const int32_t lo = o->cvec_layer_start <= 0 ? 1 : o->cvec_layer_start;
    const int32_t hi = o->cvec_layer_end <= 0 ? oxl_model_n_layer(model) : o->cvec_layer_end;
    const int rc = oxl_ctx_set_control_vector(ctx, data, len, n_embd, lo, hi, &err);
    oxl_control_vector_free(data);
    if (rc != 0) {
        fprintf(stderr, "error: %s\n", err.msg);
    }
    return rc;
}

void oxl_opts_free_adapters(oxl_opts *o) {
    for (int i = 0; i < o->n_lora_loaded; i++) {
        oxl_lora_free(o->lora_loaded[i]);
    }
    o->n_lora_loaded = 0;
    for (int i = 0; i < o->n_adapter_keep; i++) {
        free(o->adapter_keep[i]);
    }
    free(o->adapter_keep);
    o->adapter_keep = NULL;
    o->n_adapter_keep = 0;
}

int oxl_opts_parse(oxl_opts *o, unsigned verbs, int argc, char **argv) {
    memset(o, 0, sizeof *o);
    o->n_predict = -1;
    o->reasoning_budget = -1;
    o->n_batch = 512;
    o->sampling = oxl_sampler_default_params();
    o->type_k = OXL_KV_F16;
    o->type_v = OXL_KV_F16;
    o->flash_attn = OXL_FLASH_ATTN_AUTO;
    o->draft_max = 16;
    o->draft_p_min = 0.75f;
    o->ngram_size_n = 12;
    o->ngram_size_m = 48;
    o->log_verbosity = -1;
    o->main_gpu = -1;
    const char *verb = argc > 0 ? argv[0] : "oxillama";
    const bool pass = (verbs & OXL_OPTS_PASS_UNKNOWN) != 0;
    int str_value_i = -1; /* argv index of the last text option's value */
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const opt_def *d = find_opt(a);
        if (d && !(d->verbs & verbs)) {
            d = pass ? NULL : d;
            if (d) {
                fprintf(stderr, "error: %s is not an option of '%s' (see oxillama %s --help)\n", a, verb, verb);
                return -1;
            }
        }
        if (!d) {
            if (!pass && a[0] == '-' && a[1] != '\0') {
                fprintf(stderr, "error: unknown option '%s' (see oxillama %s --help)\n", a, verb);
                return -1;
            }
            if (!pass && !(verbs & OXL_OPTS_POSITIONAL)) {
                if (str_value_i == i - 1) {
                    several_words(argv[i - 2], argv, i - 1, argc);
                } else {
                    fprintf(stderr, "error: unexpected argument '%s' ('%s' takes no file or word arguments)\n", a,
                            verb);
                }
                return -1;
            }
            if (o->n_positional == OXL_MAX_POSITIONAL) {
                fprintf(stderr, "error: too many arguments\n");
                return -1;
            }
            o->positional[o->n_positional++] = argv[i];
            continue;
        }
        if (d->kind == OPT_FLAG || d->kind == OPT_NOFLAG) {
            *(bool *)((char *)o + d->offset) = d->kind == OPT_FLAG;
            continue;
        }
        if (i + 1 >= argc) {
            fprintf(stderr, "error: %s needs a value\n", a);
            return -1;
        }
        if (d->kind == OPT_GPU) {
            oxl_opts_gpu_notice(a, argv[++i]);
            continue;
        }
        if (d->kind == OPT_IMAGE) {
            if (o->n_images == OXL_MAX_IMAGES) {
                fprintf(stderr, "error: %s: too many images (at most %d)\n", a, OXL_MAX_IMAGES);
                return -1;
            }
            o->images[o->n_images++] = argv[++i];
            continue;
        }
        if (d->kind >= OPT_LORA) {
            const int used = parse_adapter_opt(d, argc - i - 1, argv + i + 1, o);
            if (used < 0) {
                return -1;
            }
            i += used;
            continue;
        }
        if (parse_value(d, argv[++i], o) != 0) {
            return -1;
        }
        str_value_i = d->kind == OPT_STR ? i : -1;
    }
    if (o->sampling.penalty_last_n < 0) {
        fprintf(stderr, "error: invalid repeat-last-n = %d\n", o->sampling.penalty_last_n);
        return -1;
    }
    if (o->sampling.dry_penalty_last_n < 0) {
        fprintf(stderr, "error: invalid dry-penalty-last-n = %d\n", o->sampling.dry_penalty_last_n);
        return -1;
    }
    if (!(o->sampling.dry_base >= 1.0f)) { /* llama.cpp keeps the previous base */
        o->sampling.dry_base = oxl_sampler_default_params().dry_base;
    }
    if (!o->dry_breakers_set) {
        static const char *const defaults[] = {"\n", ":", "\"", "*"};
        for (int k = 0; k < 4; k++) {
            o->dry_breakers[k] = defaults[k];
        }
        o->n_dry_breakers = 4;
    }
    if (o->sampling.mirostat < 0 || o->sampling.mirostat > 2) {
        fprintf(stderr, "error: --mirostat %d: 0, 1 or 2\n", o->sampling.mirostat);
        return -1;
    }
    if (parse_samplers(o) != 0) {
        return -1;
    }
#ifndef OXL_SUBSET
    if (o->reasoning_format && oxl_chat_reasoning_format(o->reasoning_format) < 0) {
        fprintf(stderr, "error: --reasoning-format: '%s' is not one of none, deepseek, auto\n", o->reasoning_format);
        return -1;
    }
    /* llama.cpp's common/arg.cpp: -1 unrestricted, 0 no thinking, N > 0 a budget of N thinking tokens
     * (common/reasoning-budget.cpp's sampler) */
    if (o->reasoning_budget < -1) {
        fprintf(stderr,
                "error: --reasoning-budget %d: -1 (unrestricted), 0 (no thinking) or a number of thinking tokens\n",
                o->reasoning_budget);
        return -1;
    }
    if (o->reasoning_budget_message && strlen(o->reasoning_budget_message) > 1023) {
        fprintf(stderr, "error: --reasoning-budget-message: at most 1023 bytes\n");
        return -1;
    }
    if (o->chat_template && check_chat_template(o->chat_template) != 0) {
        return -1;
    }
#endif
    if (o->list_devices) {
        oxl_opts_list_devices();
        exit(0);
    }
    if (o->no_mmproj_offload) {
        fprintf(stderr, "oxillama: --no-mmproj-offload ignored: this engine runs on the CPU (no GPU offload)\n");
    }
    if (o->n_keep < -1) {
        fprintf(stderr, "error: --keep %d: a count of tokens, or -1 for the whole prompt\n", o->n_keep);
        return -1;
    }
    if (o->log_format && strcmp(o->log_format, "text") != 0 && strcmp(o->log_format, "json") != 0) {
        fprintf(stderr, "error: --log-format '%s': text or json\n", o->log_format);
        return -1;
    }
    /* --log-disable, then -v, then --log-verbosity (llama.cpp's thresholds: 3 info, 4 debug) */
    o->log_level = o->log_disable                                  ? OXL_LOG_OFF
                   : o->verbose || o->log_verbosity >= 4           ? OXL_LOG_VERBOSE
                   : o->log_verbosity >= 0 && o->log_verbosity < 3 ? OXL_LOG_OFF
                                                                   : OXL_LOG_INFO;
    oxl_log_set_level(o->log_level == OXL_LOG_OFF       ? OXL_LOG_LEVEL_ERROR
                      : o->log_level == OXL_LOG_VERBOSE ? OXL_LOG_LEVEL_DEBUG
                                                        : OXL_LOG_LEVEL_INFO);
    return 0;
}

void oxl_opts_usage_table(unsigned verbs) {
    for (size_t k = 0; k < N_OPTS; k++) {
        const opt_def *d = &opt_table[k];
        if (!(d->verbs & verbs)) {
            continue;
        }
        static const char *const metavar[] = {
            [OPT_BREAKER] = " S",
            [OPT_STR] = " S",
            [OPT_INT] = " N",
            [OPT_FLOAT] = " X",
            [OPT_U32] = " N",
            [OPT_KV] = " T",
            [OPT_FA] = " on|off|auto",
            [OPT_FLAG] = "",
            [OPT_NOFLAG] = "",
            [OPT_GPU] = " V",
            [OPT_NGL] = " N|all",
            [OPT_DEVICE] = " N",
            [OPT_IMAGE] = " FILE",
            [OPT_LORA] = " FILE",
            [OPT_LORA_SCALED] = " FILE:SCALE",
            [OPT_CVEC] = " FILE",
            [OPT_CVEC_SCALED] = " FILE:SCALE",
            [OPT_RANGE] = " START END",
        };
        char names[64];
        snprintf(names, sizeof names, "%s%s%s%s", d->short_name ? d->short_name : "", d->short_name ? ", " : "",
                 d->long_name, metavar[d->kind]);
        printf("  %-30s %s\n", names, d->help);
    }
}

void oxl_opts_usage(const char *verb, unsigned verbs, const char *synopsis) {
    printf("usage: oxillama %s %s\n\noptions:\n", verb, synopsis);
    oxl_opts_usage_table(verbs);
}

void oxl_log_settings(const oxl_opts *o) {
    const char *fa = o->flash_attn == OXL_FLASH_ATTN_ON ? "on" : o->flash_attn == OXL_FLASH_ATTN_OFF ? "off" : "auto";
    const oxl_type_traits *tk = oxl_type_traits_get((uint32_t)o->type_k);
    const oxl_type_traits *tv = oxl_type_traits_get((uint32_t)o->type_v);
    oxl_log(o, OXL_LOG_VERBOSE,
            "oxillama: isa %s; threads %d (0: physical cores); batch %d; cache K %s, V %s; flash attention %s; "
            "repacking %s; model %s%s\n",
            oxl_isa_name(oxl_isa_cap()), o->n_threads, o->n_batch, tk ? tk->name : "?", tv ? tv->name : "?", fa,
            o->no_repack ? "off" : "on", o->no_mmap ? "read" : "mapped", o->mlock ? " and locked" : "");
}

void oxl_log(const oxl_opts *o, int level, const char *fmt, ...) {
    if (level > o->log_level) {
        return;
    }
    va_list ap;
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
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
