/* oxillama bench: llama.cpp's llama-bench tests and output columns (tools/llama-bench), so results
 * read side by side with llama-bench's:
 *   ppN    prompt processing: N random tokens (BOS first) decoded as one batch, from an empty cache
 *   tgN    text generation: N tokens decoded one per call, from an empty cache
 *   ppN+tgM  both, t/s over N+M tokens
 * -d D runs each test after D tokens are already in the KV cache ("pp512 @ d4096"), filled as
 * llama-bench fills them (random tokens, BOS first, in -b batches) and not timed; the filled cache
 * is kept between runs of a test, as llama-bench restores its saved state.
 * Each test runs once to warm up, then -r times; t/s is the mean ± sample standard deviation.
 * --roofline adds, for generation, the share of the memory-bandwidth bound: bytes of weights read
 * per token (every tensor but token_embd) × t/s ÷ the read bandwidth measured here with the same
 * threads, and on stderr the thread pool's share of a generated token: tasks per token × the cost of
 * an empty task.
 * --draft FILE runs the generation tests (tgN) with speculative decoding instead: N tokens generated
 * greedily (argmax), each round drafting up to --draft-max tokens with the draft model (as run's
 * draft-simple, --draft-p-min), verifying them in one batch of the target and dropping the rejected
 * ones from the cache; t/s counts the N tokens, and the "draft acc %" column (JSON/CSV: n_drafted,
 * n_accepted) the share of drafted tokens accepted. Plain tgN decodes random tokens instead: one
 * decode costs the same whichever token it is, so the two read side by side.
 * Load time and peak RSS of each model go to stderr. */
#include "args.h"
#include "cli.h"
#include "context.h"
#include "file.h"
#include "gguf.h"
#include "gguf_split.h"
#include "model.h"
#include "oxillama.h"
#include "quant_mix.h"
#include "pool.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MAX_LIST 16

typedef struct bench_opts {
    char *models[MAX_LIST];
    int n_models;
    int n_prompt[MAX_LIST], n_n_prompt;
    int n_gen[MAX_LIST], n_n_gen;
    int pg[MAX_LIST][2], n_pg;
    int threads[MAX_LIST], n_threads;
    int depth[MAX_LIST], n_depth;
    int reps;
    int n_batch, n_ubatch;
    oxl_kv_type type_k, type_v;
    oxl_flash_attn flash_attn;
    const char *output;
    bool roofline;
    bool no_mmap;
    bool no_repack;
    int n_gpu_layers; /* -ngl (all: -1) */
    bool ngl_set;     /* -ngl given: the CSV/JSON n_gpu_layers field is its value */
    int main_gpu;     /* -mg, --device */
    bool device_none;
    int log_level;     /* OXL_LOG_*: --log-disable, -v */
    const char *draft; /* --draft: the generation tests run with speculative decoding */
    int draft_max;
    float draft_p_min;
} bench_opts;

typedef struct bench_test {
    int n_prompt, n_gen, n_depth;
} bench_test;

/* The most tokens one sequence's KV cache may hold (oxl_ctx_new's bound). */
#define MAX_CTX (1 << 24)

/* Splits a comma-separated list of positive integers; -1 on a bad element. */
static int parse_int_list(char *s, int *out, int cap) {
    int n = 0;
    for (char *tok = strtok(s, ","); tok; tok = strtok(NULL, ",")) {
        char *end;
        long v = strtol(tok, &end, 10);
        if (*end || v < 0 || v > (1 << 24) || n == cap) {
            return -1;
        }
        out[n++] = (int)v;
    }
    return n;
}

static void usage(void) {
    printf("usage: oxillama bench -m FILE[,FILE...] [-p 512] [-n 128] [-pg 512,128] [-d 0[,N...]]\n"
           "                      [-t N[,N...]] [-r 5] [-b 2048] [-ub 512] [-o md|csv|json] [-ctk T] [-ctv T]\n"
           "                      [-fa on|off|auto] [-mmp 0|1] [-nr 0|1] [--roofline] [-v] [--log-disable]\n"
           "                      [--draft FILE [--draft-max 16] [--draft-p-min 0.75]]\n"
           "       oxillama bench --batched -m FILE [-npp 128[,N...]] [-ntg 128[,N...]] [-npl 1[,N...]]\n"
           "                      [-c N] [-b 2048] [-ub 512] [-t N] [-ctk T] [-ctv T] [-fa on|off|auto]\n"
           "  -ngl, --n-gpu-layers, --gpu-layers N|all: layers to run on the Vulkan device (as run's -ngl)\n"
           "  -dev, --device, -mg, --main-gpu N: the Vulkan device (an index, VulkanN or none)\n"
           "  -sm, --split-mode, -ts, --tensor-split: llama-bench's multi-GPU options, ignored\n"
           "  -d, --n-depth: tokens already in the KV cache when each test starts (filled untimed)\n"
           "  --draft FILE (-md, --model-draft): tgN generates N tokens greedily with speculative decoding,\n"
           "     drafting with FILE up to --draft-max tokens a round while its top token's probability is at\n"
           "     least --draft-p-min (as run -md); the 'draft acc %%' column is the share of drafts accepted\n"
           "  --batched: llama-batched-bench's table (PP, TG, B parallel sequences in one context of -c\n"
           "     tokens, default the training context; -tgs: each sequence's tokens generated separately;\n"
           "     --output-format md|jsonl)\n"
           "  T: a KV cache type: " OXL_KV_TYPE_NAMES "\n");
}

static int parse_opts(bench_opts *o, int argc, char **argv) {
    memset(o, 0, sizeof *o);
    o->reps = 5;
    o->main_gpu = -1;
    o->n_batch = 2048;
    o->n_ubatch = 512;
    o->type_k = o->type_v = OXL_KV_F16;
    o->flash_attn = OXL_FLASH_ATTN_AUTO;
    o->output = "md";
    o->log_level = OXL_LOG_INFO;
    o->draft_max = 16;
    o->draft_p_min = 0.75f;
    bool set_p = false, set_n = false, set_pg = false;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--roofline")) {
            o->roofline = true;
            continue;
        }
        if (!strcmp(a, "-v") || !strcmp(a, "--verbose") || !strcmp(a, "--log-verbose")) {
            o->log_level = o->log_level == OXL_LOG_OFF ? OXL_LOG_OFF : OXL_LOG_VERBOSE; /* --log-disable wins */
            continue;
        }
        if (!strcmp(a, "--log-disable")) {
            o->log_level = OXL_LOG_OFF;
            continue;
        }
        if (a[0] != '-') {
            fprintf(stderr, "error: unexpected argument '%s' (bench takes options only)\n", a);
            return -1;
        }
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            usage();
            exit(0);
        }
        if (i + 1 >= argc) {
            fprintf(stderr, "error: %s needs a value\n", a);
            return -1;
        }
        char *v = argv[++i];
        int bad = 0;
        if (!strcmp(a, "-m") || !strcmp(a, "--model")) {
            for (char *tok = strtok(v, ","); tok && !bad; tok = strtok(NULL, ",")) {
                bad = o->n_models == MAX_LIST;
                if (!bad) {
                    o->models[o->n_models++] = tok;
                }
            }
        } else if (!strcmp(a, "-p") || !strcmp(a, "--n-prompt")) {
            set_p = true;
            bad = (o->n_n_prompt = parse_int_list(v, o->n_prompt, MAX_LIST)) < 0;
        } else if (!strcmp(a, "-n") || !strcmp(a, "--n-gen")) {
            set_n = true;
            bad = (o->n_n_gen = parse_int_list(v, o->n_gen, MAX_LIST)) < 0;
        } else if (!strcmp(a, "-pg")) {
            int pair[2];
            set_pg = true;
            bad = parse_int_list(v, pair, 2) != 2 || o->n_pg == MAX_LIST;
            if (!bad) {
                o->pg[o->n_pg][0] = pair[0];
                o->pg[o->n_pg][1] = pair[1];
                o->n_pg++;
            }
        } else if (!strcmp(a, "-d") || !strcmp(a, "--n-depth")) {
            bad = (o->n_depth = parse_int_list(v, o->depth, MAX_LIST)) <= 0;
        } else if (!strcmp(a, "-t") || !strcmp(a, "--threads")) {
            bad = (o->n_threads = parse_int_list(v, o->threads, MAX_LIST)) <= 0;
        } else if (!strcmp(a, "-r") || !strcmp(a, "--repetitions")) {
            o->reps = atoi(v);
            bad = o->reps < 1 || o->reps > 1000;
        } else if (!strcmp(a, "-b") || !strcmp(a, "--batch-size")) {
            o->n_batch = atoi(v);
            bad = o->n_batch < 1;
        } else if (!strcmp(a, "-ub") || !strcmp(a, "--ubatch-size")) {
            o->n_ubatch = atoi(v);
            bad = o->n_ubatch < 1;
        } else if (!strcmp(a, "-o") || !strcmp(a, "--output")) {
            o->output = v;
            bad = strcmp(v, "md") && strcmp(v, "csv") && strcmp(v, "json");
        } else if (!strcmp(a, "-ctk") || !strcmp(a, "--cache-type-k")) {
            bad = oxl_kv_type_parse(v, &o->type_k);
        } else if (!strcmp(a, "-ctv") || !strcmp(a, "--cache-type-v")) {
            bad = oxl_kv_type_parse(v, &o->type_v);
        } else if (!strcmp(a, "-nr") || !strcmp(a, "--no-repack")) {
            bad = strcmp(v, "0") && strcmp(v, "1");
            o->no_repack = !strcmp(v, "1");
        } else if (!strcmp(a, "-mmp") || !strcmp(a, "--mmap")) {
            bad = strcmp(v, "0") && strcmp(v, "1");
            o->no_mmap = !strcmp(v, "0");
        } else if (!strcmp(a, "-fa") || !strcmp(a, "--flash-attn")) {
            bad = strcmp(v, "on") && strcmp(v, "off") && strcmp(v, "auto") && strcmp(v, "1") && strcmp(v, "0") &&
                  strcmp(v, "-1");
            o->flash_attn = (!strcmp(v, "off") || !strcmp(v, "0"))     ? OXL_FLASH_ATTN_OFF
                            : (!strcmp(v, "auto") || !strcmp(v, "-1")) ? OXL_FLASH_ATTN_AUTO
                                                                       : OXL_FLASH_ATTN_ON;
        } else if (!strcmp(a, "--draft") || !strcmp(a, "-md") || !strcmp(a, "--model-draft")) {
            o->draft = v;
        } else if (!strcmp(a, "--draft-max")) {
            char *end;
            long n = strtol(v, &end, 10);
            bad = *end || n < 1 || n > 1024;
            o->draft_max = (int)n;
        } else if (!strcmp(a, "--draft-p-min")) {
            char *end;
            o->draft_p_min = strtof(v, &end);
            bad = *end || !(o->draft_p_min >= 0.0f && o->draft_p_min <= 1.0f);
        } else if (!strcmp(a, "-ngl") || !strcmp(a, "--n-gpu-layers") || !strcmp(a, "--gpu-layers")) {
            if (oxl_opts_parse_ngl(a, v, &o->n_gpu_layers) != 0) {
                return -1;
            }
            o->ngl_set = true;
        } else if (!strcmp(a, "-mg") || !strcmp(a, "--main-gpu") || !strcmp(a, "-dev") || !strcmp(a, "--device")) {
            if (oxl_opts_parse_device(a, v, &o->main_gpu, &o->device_none) != 0) {
                return -1;
            }
        } else if (oxl_opts_gpu_notice(a, v)) {
            /* llama-bench's -ngl and the other GPU options: ignored with a notice */
        } else {
            fprintf(stderr, "error: unknown option '%s'\n", a);
            return -1;
        }
        if (bad) {
            fprintf(stderr, "error: %s: invalid value '%s'\n", a, v);
            return -1;
        }
    }
    if (o->n_models == 0) {
        fprintf(stderr, "error: bench needs a model (-m)\n");
        return -1;
    }
    /* llama-bench's defaults: -p 512 -n 128, one thread count = physical cores */
    if (!set_p && !set_pg) {
        o->n_prompt[o->n_n_prompt++] = 512;
    }
    if (!set_n && !set_pg) {
        o->n_gen[o->n_n_gen++] = 128;
    }
    if (o->n_depth == 0) {
        o->depth[o->n_depth++] = 0;
    }
    if (o->n_threads == 0) {
        o->threads[o->n_threads++] = oxl_n_physical_cores();
    }
    for (int i = 0; i < o->n_threads; i++) {
        if (o->threads[i] == 0) { /* -t 0: the default */
            o->threads[i] = oxl_n_physical_cores();
        }
    }
    return 0;
}

/* Read bandwidth in bytes/s: a streaming sum over a 1 GiB buffer split over n threads. */
typedef struct bw_task {
    const float *buf;
    size_t n;
    double sums[64];
} bw_task;

static void bw_worker(void *arg, int ith, int nth) {
    bw_task *t = arg;
    int64_t lo, hi;
    oxl_split_range((int64_t)t->n, ith, nth, &lo, &hi);
    float acc[16] = {0};
    for (int64_t i = lo; i + 16 <= hi; i += 16) {
        for (int k = 0; k < 16; k++) {
            acc[k] += t->buf[i + k];
        }
    }
    double s = 0;
    for (int k = 0; k < 16; k++) {
        s += acc[k];
    }
    t->sums[ith % 64] = s;
}

static double measure_bandwidth(int n_threads) {
    const size_t n = (size_t)1 << 28; /* 1 GiB of floats */
    float *buf = malloc(n * sizeof(float));
    oxl_error err = {0};
    oxl_pool *pool = oxl_pool_new(n_threads, &err);
    if (!buf || !pool) {
        free(buf);
        oxl_pool_free(pool);
        return 0.0;
    }
    for (size_t i = 0; i < n; i++) {
        buf[i] = (float)(i & 7);
    }
    bw_task t = {.buf = buf, .n = n};
    double best = 0.0;
    for (int rep = 0; rep < 4; rep++) {
        double t0 = oxl_clock_s();
        oxl_pool_run(pool, bw_worker, &t);
        double bw = (double)(n * sizeof(float)) / (oxl_clock_s() - t0);
        best = bw > best ? bw : best;
    }
    oxl_pool_free(pool);
    free(buf);
    return best;
}

static void empty_task(void *arg, int ith, int nth) {
    (void)arg;
    (void)ith;
    (void)nth;
}

/* Seconds per empty task on a pool of n threads: the release and the collection of the workers
 * that every split op pays (the median of 21 batches of 1000, workers kept spinning). */
static double measure_task_cost(int n_threads) {
    oxl_error err = {0};
    oxl_pool *pool = oxl_pool_new(n_threads, &err);
    if (!pool) {
        return 0.0;
    }
    double batch[21];
    for (int b = 0; b < 21; b++) {
        const double t0 = oxl_clock_s();
        for (int i = 0; i < 1000; i++) {
            oxl_pool_run(pool, empty_task, NULL);
        }
        batch[b] = (oxl_clock_s() - t0) / 1000.0;
    }
    oxl_pool_free(pool);
    for (int i = 1; i < 21; i++) { /* insertion sort for the median */
        for (int j = i; j > 0 && batch[j] < batch[j - 1]; j--) {
            const double x = batch[j];
            batch[j] = batch[j - 1];
            batch[j - 1] = x;
        }
    }
    return batch[10];
}

/* Bytes of weights a generated token reads: every tensor but the token embedding (a row look-up). */
static double weight_bytes_per_token(const char *path) {
    oxl_error err = {0};
    oxl_gguf *g = oxl_gguf_open_model(path, &err);
    if (!g) {
        return 0.0;
    }
    double bytes = 0.0;
    for (int64_t i = 0; i < oxl_gguf_n_tensors(g); i++) {
        const oxl_gguf_tensor *t = oxl_gguf_tensor_at(g, i);
        if (strcmp(t->name, "token_embd.weight") != 0) {
            bytes += (double)t->nbytes;
        }
    }
    oxl_gguf_close(g);
    return bytes;
}

/* Decodes n random tokens, BOS first, in batches of n_batch (llama-bench's test_prompt);
 * false on a decode error. */
static bool decode_prompt(oxl_ctx *ctx, const oxl_model *m, int n, oxl_token *toks, int n_batch) {
    const int32_t n_vocab = oxl_model_n_vocab(m);
    const oxl_token bos = oxl_token_bos(m);
    oxl_error err = {0};
    for (int i = 0; i < n; i++) {
        toks[i] = i == 0 && bos >= 0 ? bos : rand() % n_vocab;
    }
    for (int done = 0; done < n;) {
        int nb = n - done < n_batch ? n - done : n_batch;
        if (oxl_decode(ctx, toks + done, nb, false, &err) != 0) {
            fprintf(stderr, "error: %s\n", err.msg);
            return false;
        }
        done += nb;
    }
    return true;
}

/* One timed run of a test from a cache holding t->n_depth tokens; returns seconds, or -1 on a
 * decode error. The depth is filled untimed, once: later runs drop what the test added and keep
 * the rest (a recurrent model, whose state cannot step back, refills it). */
static double run_test(oxl_ctx *ctx, const oxl_model *m, const bench_test *t, oxl_token *toks, int n_batch) {
    const int32_t n_vocab = oxl_model_n_vocab(m);
    const oxl_token bos = oxl_token_bos(m);
    oxl_error err = {0};
    oxl_ctx_truncate(ctx, t->n_depth);
    if (oxl_ctx_n_past(ctx) != t->n_depth) {
        oxl_ctx_truncate(ctx, 0);
        if (!decode_prompt(ctx, m, t->n_depth, toks, n_batch)) {
            return -1.0;
        }
    }
    double t0 = oxl_clock_s();
    if (!decode_prompt(ctx, m, t->n_prompt, toks, n_batch)) {
        return -1.0;
    }
    oxl_token tok = t->n_prompt == 0 && bos >= 0 ? bos : rand() % n_vocab;
    for (int i = 0; i < t->n_gen; i++) {
        if (oxl_decode(ctx, &tok, 1, false, &err) != 0) {
            fprintf(stderr, "error: %s\n", err.msg);
            return -1.0;
        }
        tok = rand() % n_vocab;
    }
    return oxl_clock_s() - t0;
}

/* The greedy pick (the first of equal logits, as the greedy sampler). */
static oxl_token argmax(const float *lg, int32_t n) {
    int32_t best = 0;
    for (int32_t i = 1; i < n; i++) {
        if (lg[i] > lg[best]) {
            best = i;
        }
    }
    return best;
}

/* Decodes toks[0..n) in batches of n_batch; false after a message. */
static bool decode_tokens(oxl_ctx *ctx, const oxl_token *toks, int n, int n_batch) {
    oxl_error err = {0};
    for (int done = 0; done < n;) {
        int nb = n - done < n_batch ? n - done : n_batch;
        if (oxl_decode(ctx, toks + done, nb, false, &err) != 0) {
            fprintf(stderr, "error: %s\n", err.msg);
            return false;
        }
        done += nb;
    }
    return true;
}

/* Buffers of one generation test with --draft: hist (the target's tokens), dtoks (the draft's),
 * batch and room for depth + n_gen + 2 tokens each. */
typedef struct draft_run {
    oxl_ctx *dctx;
    const oxl_model *dm;
    oxl_token *hist, *dtoks, *batch;
    long n_drafted, n_accepted;
} draft_run;

/* One timed run of tgN with speculative decoding (run's draft-simple loop, greedy): the depth is
 * filled untimed in both caches with the same random tokens, then N tokens are generated, each
 * round's draft verified in one decode of the target. Returns seconds, or -1 after a message. */
static double run_test_draft(oxl_ctx *ctx, const oxl_model *m, const bench_test *t, draft_run *d, int n_batch,
                             const bench_opts *o) {
    const int32_t n_vocab = oxl_model_n_vocab(m);
    const oxl_token bos = oxl_token_bos(m);
    oxl_error err = {0};
    oxl_ctx_truncate(ctx, 0);
    oxl_ctx_truncate(d->dctx, 0);
    for (int i = 0; i < t->n_depth; i++) {
        d->hist[i] = i == 0 && bos >= 0 ? bos : rand() % n_vocab;
    }
    if (!decode_tokens(ctx, d->hist, t->n_depth, n_batch) || !decode_tokens(d->dctx, d->hist, t->n_depth, n_batch)) {
        return -1.0;
    }
    memcpy(d->dtoks, d->hist, sizeof(oxl_token) * (size_t)t->n_depth);
    int32_t n_hist = t->n_depth;
    oxl_token last = t->n_depth == 0 && bos >= 0 ? bos : rand() % n_vocab;
    oxl_ctx_set_exact_batch(ctx, true); /* as run -md verifies */
    const double t0 = oxl_clock_s();
    for (int gen = 0; gen < t->n_gen;) {
        const int left = t->n_gen - gen - 1;
        const int32_t cap = left < o->draft_max ? left : o->draft_max;
        const int32_t nd = cap > 0 ? oxl_draft_propose(d->dctx, 0, d->dtoks, d->hist, n_hist, last, o->draft_p_min, 0,
                                                       cap, d->batch + 1, &err)
                                   : 0;
        if (nd < 0) {
            fprintf(stderr, "error: draft model: %s\n", err.msg);
            return -1.0;
        }
        d->batch[0] = last;
        if (oxl_decode(ctx, d->batch, nd + 1, true, &err) != 0) {
            fprintf(stderr, "error: %s\n", err.msg);
            return -1.0;
        }
        d->hist[n_hist++] = last;
        int32_t acc = 0;
        for (;;) {
            last = argmax(oxl_get_logits(ctx, acc), n_vocab);
            gen++;
            if (acc == nd || last != d->batch[1 + acc]) {
                break;
            }
            d->hist[n_hist++] = last;
            acc++;
        }
        d->n_drafted += nd;
        d->n_accepted += acc;
        oxl_ctx_truncate(ctx, n_hist);
    }
    const double dt = oxl_clock_s() - t0;
    oxl_ctx_set_exact_batch(ctx, false);
    return dt;
}

static void test_name(const bench_test *t, char *buf, size_t cap) {
    if (t->n_prompt && t->n_gen) {
        snprintf(buf, cap, "pp%d+tg%d", t->n_prompt, t->n_gen);
    } else if (t->n_prompt) {
        snprintf(buf, cap, "pp%d", t->n_prompt);
    } else {
        snprintf(buf, cap, "tg%d", t->n_gen);
    }
    if (t->n_depth > 0) { /* llama-bench's name of a test at depth: "pp512 @ d4096" */
        const size_t len = strlen(buf);
        snprintf(buf + len, cap - len, " @ d%d", t->n_depth);
    }
}

static void print_json_string(const char *s) {
    putchar('"');
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\') {
            printf("\\%c", c);
        } else if (c < 0x20) {
            printf("\\u%04x", c);
        } else {
            putchar(c);
        }
    }
    putchar('"');
}

/* llama.cpp's llama_ftype_name for general.file_type (llama-bench's model_type column). */
static const char *ftype_name(uint64_t ft) {
    const char *name = ft <= UINT32_MAX ? oxl_ftype_describe((uint32_t)ft) : NULL;
    return name != NULL ? name : "?";
}

/* "<architecture> <parameters> <file type>", as llama-bench's model_type ("llama 1B Q4_0") with the
 * parameter count in place of llama.cpp's size class. */
static void model_type(const oxl_model *m, char *buf, size_t cap) {
    const char *arch = "?";
    const char *ft = "?";
    int64_t k = oxl_gguf_find_key(m->gguf, "general.architecture");
    if (k >= 0 && oxl_gguf_kv_type(m->gguf, k) == OXL_GGUF_STRING) {
        arch = oxl_gguf_kv_str(m->gguf, k, NULL);
    }
    uint64_t v;
    char guessed[48] = "";
    k = oxl_gguf_find_key(m->gguf, "general.file_type");
    if (k >= 0 && oxl_gguf_kv_uint(m->gguf, k, &v)) {
        ft = ftype_name(v);
    } else {
        /* as llama.cpp guesses: the type most of the matrices have */
        int64_t count[OXL_TYPE_COUNT] = {0};
        uint32_t best = 0;
        for (int64_t i = 0; i < oxl_gguf_n_tensors(m->gguf); i++) {
            const oxl_gguf_tensor *t = oxl_gguf_tensor_at(m->gguf, i);
            if (t->n_dims >= 2 && t->type < OXL_TYPE_COUNT && ++count[t->type] > count[best]) {
                best = t->type;
            }
        }
        snprintf(guessed, sizeof guessed, "%s (guessed)",
                 best == OXL_TYPE_F32 ? "all F32" : oxl_type_traits_get((oxl_type)best)->name);
        ft = guessed;
    }
    const double p = (double)oxl_model_n_params(m);
    if (p >= 1e9) {
        snprintf(buf, cap, "%s %.1fB %s", arch, p / 1e9, ft);
    } else {
        snprintf(buf, cap, "%s %.*fM %s", arch, p >= 1e7 ? 0 : 2, p / 1e6, ft);
    }
}

/* The CPU's name (/proc/cpuinfo "model name"), or "unknown". */
static void cpu_info(char *buf, size_t cap) {
    snprintf(buf, cap, "unknown");
    FILE *f = fopen("/proc/cpuinfo", "r");
    char line[512];
    while (f && fgets(line, sizeof line, f)) {
        char *colon = strchr(line, ':');
        if (!strncmp(line, "model name", 10) && colon) {
            colon += 1 + (colon[1] == ' ');
            colon[strcspn(colon, "\n")] = 0;
            snprintf(buf, cap, "%s", colon);
            break;
        }
    }
    if (f) {
        fclose(f);
    }
}

static const char *kv_name(oxl_kv_type t) {
    const oxl_type_traits *tr = oxl_type_traits_get((uint32_t)t);
    return tr != NULL ? tr->name : "?";
}

/* One row of results, printed in llama-bench's markdown, CSV or JSON. */
typedef struct bench_row {
    const char *filename;
    char type[96];
    uint64_t size, n_params;
    int n_batch, n_ubatch, n_threads, n_prompt, n_gen, n_depth, flash_attn;
    int n_gpu_layers, main_gpu; /* -ngl (-1 when not given, as before), the device */
    bool on_device;             /* layers ran on the Vulkan device: backends "Vulkan,CPU" */
    const char *type_k, *type_v, *load_mode;
    int n_samples;
    const double *samples_ns;
    bool repack;
    char test_time[32];
    double avg_ns, stddev_ns, avg_ts, stddev_ts, bound;
    const char *draft;          /* --draft's file, NULL without */
    long n_drafted, n_accepted; /* over the timed runs of a generation test with --draft */
} bench_row;

/* llama-bench's CSV and JSON fields in its order, with the values that apply to a CPU-only engine
 * (GPU fields empty or 0), then oxillama's own: repack, and bound_share with --roofline. */
static void print_fields(const bench_row *r, const char *cpu, bool json, bool roofline, bool draft) {
    struct {
        const char *key;
        char kind;       /* 's' string, 'n' number, 'b' boolean */
        const char *str; /* 's' */
        char val[64];    /* 'n', 'b' ("0"/"1") */
    } f[48];
    int n = 0;
#define S(k, v) (f[n].key = (k), f[n].kind = 's', f[n].str = (v), n++)
#define N(k, ...) (f[n].key = (k), f[n].kind = 'n', snprintf(f[n].val, sizeof f[n].val, __VA_ARGS__), n++)
#define B(k, v) (f[n].key = (k), f[n].kind = 'b', snprintf(f[n].val, sizeof f[n].val, "%d", (v) ? 1 : 0), n++)
    S("build_commit", "oxillama");
    N("build_number", "0");
    S("cpu_info", cpu);
    S("gpu_info", "");
    S("backends", r->on_device ? "Vulkan,CPU" : "CPU");
    S("model_filename", r->filename);
    S("model_type", r->type);
    N("model_size", "%llu", (unsigned long long)r->size);
    N("model_n_params", "%llu", (unsigned long long)r->n_params);
    N("n_batch", "%d", r->n_batch);
    N("n_ubatch", "%d", r->n_ubatch);
    N("n_threads", "%d", r->n_threads);
    S("cpu_mask", "0x0");
    B("cpu_strict", false);
    N("poll", "50");
    S("type_k", r->type_k);
    S("type_v", r->type_v);
    N("n_gpu_layers", "%d", r->n_gpu_layers);
    N("n_cpu_moe", "0");
    S("split_mode", "layer");
    N("main_gpu", "%d", r->main_gpu);
    B("no_kv_offload", false);
    N("flash_attn", "%d", r->flash_attn);
    S("devices", "auto");
    S("tensor_split", "0.00");
    S("tensor_buft_overrides", "none");
    S("load_mode", r->load_mode);
    B("embeddings", false);
    N("no_op_offload", "0");
    B("no_host", false);
    N("fit_target", "0");
    N("fit_min_ctx", "0");
    N("n_prompt", "%d", r->n_prompt);
    N("n_gen", "%d", r->n_gen);
    N("n_depth", "%d", r->n_depth);
    S("test_time", r->test_time);
    N("avg_ns", "%.0f", r->avg_ns);
    N("stddev_ns", "%.0f", r->stddev_ns);
    N("avg_ts", "%.6f", r->avg_ts);
    N("stddev_ts", "%.6f", r->stddev_ts);
#undef S
#undef N
#undef B
    for (int i = 0; i < n; i++) {
        if (json) {
            printf("%s\"%s\": ", i ? ", " : "  {", f[i].key);
            if (f[i].kind == 's') {
                print_json_string(f[i].str);
            } else if (f[i].kind == 'b') {
                fputs(f[i].val[0] == '1' ? "true" : "false", stdout);
            } else {
                fputs(f[i].val, stdout);
            }
        } else {
            /* CSV as llama-bench writes it: every value quoted, any quote doubled */
            if (i) {
                putchar(',');
            }
            putchar('"');
            for (const char *c = f[i].kind == 's' ? f[i].str : f[i].val; *c; c++) {
                if (*c == '"') {
                    putchar('"');
                }
                putchar(*c);
            }
            putchar('"');
        }
    }
    if (json) {
        /* llama-bench's per-run samples, then oxillama's own fields */
        printf(", \"samples_ns\": [ ");
        for (int i = 0; i < r->n_samples; i++) {
            printf("%s%.0f", i ? ", " : "", r->samples_ns[i]);
        }
        printf(" ], \"samples_ts\": [ ");
        for (int i = 0; i < r->n_samples; i++) {
            printf("%s%g", i ? ", " : "", (r->n_prompt + r->n_gen) / (r->samples_ns[i] * 1e-9));
        }
        printf(" ], \"repack\": %s", r->repack ? "true" : "false");
        if (roofline) {
            printf(", \"bound_share\": %.4f", r->bound);
        }
        if (draft) {
            printf(", \"model_draft\": ");
            print_json_string(r->draft ? r->draft : "");
            printf(", \"n_drafted\": %ld, \"n_accepted\": %ld", r->n_drafted, r->n_accepted);
        }
        printf("}");
    } else {
        printf(",\"%d\"", r->repack ? 1 : 0);
        if (roofline) {
            printf(",\"%.4f\"", r->bound);
        }
        if (draft) {
            printf(",\"");
            for (const char *c = r->draft ? r->draft : ""; *c; c++) {
                if (*c == '"') {
                    putchar('"');
                }
                putchar(*c);
            }
            printf("\",\"%ld\",\"%ld\"", r->n_drafted, r->n_accepted);
        }
        printf("\n");
    }
}

static void print_csv_header(bool roofline, bool draft) {
    printf("build_commit,build_number,cpu_info,gpu_info,backends,model_filename,model_type,model_size,model_n_params,"
           "n_batch,n_ubatch,n_threads,cpu_mask,cpu_strict,poll,type_k,type_v,n_gpu_layers,n_cpu_moe,split_mode,"
           "main_gpu,no_kv_offload,flash_attn,devices,tensor_split,tensor_buft_overrides,load_mode,embeddings,"
           "no_op_offload,no_host,fit_target,fit_min_ctx,n_prompt,n_gen,n_depth,test_time,avg_ns,stddev_ns,avg_ts,"
           "stddev_ts,repack%s%s\n",
           roofline ? ",bound_share" : "", draft ? ",model_draft,n_drafted,n_accepted" : "");
}

int oxl_cmd_bench(int argc, char **argv) {
    bool batched = false, help = false;
    for (int i = 1; i < argc; i++) {
        batched |= !strcmp(argv[i], "--batched");
        help |= !strcmp(argv[i], "-h") || !strcmp(argv[i], "--help");
    }
    if (batched && !help) { /* llama-batched-bench's tests: src/cli/bench_batched.c */
        const int rc = oxl_bench_batched(argc, argv);
        if (rc != 0) {
            usage();
        }
        return rc;
    }
    bench_opts o;
    if (parse_opts(&o, argc, argv) != 0) {
        usage();
        return 1;
    }
    /* llama-bench's order: for each depth, the pp tests, the tg tests, then the pg pairs */
    static bench_test tests[3 * MAX_LIST * MAX_LIST];
    int n_tests = 0;
    for (int d = 0; d < o.n_depth; d++) {
        const int nd = o.depth[d];
        for (int i = 0; i < o.n_n_prompt; i++) {
            if (o.n_prompt[i] > 0) {
                tests[n_tests++] = (bench_test){o.n_prompt[i], 0, nd};
            }
        }
        for (int i = 0; i < o.n_n_gen; i++) {
            if (o.n_gen[i] > 0) {
                tests[n_tests++] = (bench_test){0, o.n_gen[i], nd};
            }
        }
        for (int i = 0; i < o.n_pg; i++) {
            if (o.pg[i][0] + o.pg[i][1] > 0) {
                tests[n_tests++] = (bench_test){o.pg[i][0], o.pg[i][1], nd};
            }
        }
    }
    /* every test's context (depth + prompt + generated + 1) must fit a KV cache: refused before any run */
    for (int k = 0; k < n_tests; k++) {
        const int64_t need = (int64_t)tests[k].n_depth + tests[k].n_prompt + tests[k].n_gen + 1;
        if (need > MAX_CTX) {
            char name[64];
            test_name(&tests[k], name, sizeof name);
            fprintf(stderr, "error: %s needs a context of %lld tokens, more than the %d a KV cache can hold\n", name,
                    (long long)need, MAX_CTX);
            return 1;
        }
    }
    const bool md = !strcmp(o.output, "md"), csv = !strcmp(o.output, "csv"), json = !strcmp(o.output, "json");
    /* markdown: llama-bench's columns, plus one per setting given away from its default, as it does */
    const bool col_tk = o.type_k != OXL_KV_F16, col_tv = o.type_v != OXL_KV_F16;
    const bool col_fa = o.flash_attn != OXL_FLASH_ATTN_AUTO, col_nr = o.no_repack, col_mmap = o.no_mmap;
    if (md) {
        printf("| model                          |       size |     params | backend    | threads |%s%s%s%s%s"
               "            test |                  t/s |%s%s\n",
               col_tk ? " type_k |" : "", col_tv ? " type_v |" : "", col_fa ? "   fa |" : "", col_nr ? " repack |" : "",
               col_mmap ? " mmap |" : "", o.roofline ? " bound % |" : "", o.draft ? " draft acc % |" : "");
        printf("| ------------------------------ | ---------: | ---------: | ---------- | ------: |%s%s%s%s%s"
               " --------------: | -------------------: |%s%s\n",
               col_tk ? " -----: |" : "", col_tv ? " -----: |" : "", col_fa ? " ---: |" : "", col_nr ? " -----: |" : "",
               col_mmap ? " ---: |" : "", o.roofline ? " ------: |" : "", o.draft ? " ----------: |" : "");
    } else if (csv) {
        print_csv_header(o.roofline, o.draft != NULL);
    } else {
        printf("[\n");
    }
    char cpu[256];
    cpu_info(cpu, sizeof cpu);
    srand(1234);
    int status = 0;
    oxl_model *dm = NULL;
    if (o.draft) {
        oxl_error err = {0};
        oxl_model_params mp = oxl_model_default_params();
        mp.use_mmap = !o.no_mmap;
        mp.repack = !o.no_repack;
        dm = oxl_model_load(o.draft, &mp, &err);
        if (!dm) {
            fprintf(stderr, "error: draft model: %s\n", err.msg);
            return 1;
        }
        if (oxl_model_is_recurrent(dm)) {
            fprintf(stderr, "error: %s: speculative decoding needs a model whose cache can rewind\n", o.draft);
            oxl_model_free(dm);
            return 1;
        }
    }
    bool first_json = true;
    for (int im = 0; im < o.n_models; im++) {
        oxl_error err = {0};
        oxl_model_params mp = oxl_model_default_params();
        mp.use_mmap = !o.no_mmap;
        mp.repack = !o.no_repack;
        mp.n_gpu_layers = o.device_none ? 0 : o.n_gpu_layers;
        mp.main_gpu = o.main_gpu;
        const double t_load = oxl_clock_s();
        oxl_model *m = oxl_model_load(o.models[im], &mp, &err);
        if (!m) {
            fprintf(stderr, "error: %s\n", err.msg);
            status = 1;
            continue;
        }
        if (o.log_level >= OXL_LOG_INFO) {
            fprintf(stderr, "bench: %s loaded in %.1f ms (%s)\n", o.models[im], (oxl_clock_s() - t_load) * 1e3,
                    o.no_mmap ? "read" : "mapped");
        }
        if (o.log_level >= OXL_LOG_VERBOSE) {
            fprintf(stderr, "bench: isa %s; %s\n", oxl_isa_name(oxl_isa_cap()), oxl_model_desc(m));
        }
        if (dm && (oxl_model_is_recurrent(m) || oxl_model_draft_compatible(m, dm, &err) != 0)) {
            fprintf(stderr, "error: %s: %s\n", oxl_model_is_recurrent(m) ? o.models[im] : o.draft,
                    oxl_model_is_recurrent(m) ? "speculative decoding needs a model whose cache can rewind" : err.msg);
            oxl_model_free(m);
            status = 1;
            continue;
        }
        const double bytes_tok = o.roofline ? weight_bytes_per_token(o.models[im]) : 0.0;
        for (int it = 0; it < o.n_threads; it++) {
            const double bw = o.roofline ? measure_bandwidth(o.threads[it]) : 0.0;
            const double task_cost = o.roofline ? measure_task_cost(o.threads[it]) : 0.0;
            for (int k = 0; k < n_tests; k++) {
                const bench_test *t = &tests[k];
                oxl_ctx_params cp = oxl_ctx_default_params();
                cp.n_ctx = t->n_depth + t->n_prompt + t->n_gen + 1;
                if (cp.n_ctx - 1 > oxl_model_n_ctx_train(m) && o.log_level >= OXL_LOG_INFO) {
                    /* as llama.cpp, a warning: the test still runs */
                    fprintf(stderr,
                            "bench: warning: a context of %d tokens exceeds the model's training context (%d)\n",
                            cp.n_ctx - 1, oxl_model_n_ctx_train(m));
                }
                cp.n_batch = o.n_ubatch < cp.n_ctx ? o.n_ubatch : cp.n_ctx; /* the pass: llama-bench's -ub */
                cp.n_threads = o.threads[it];
                cp.type_k = o.type_k;
                cp.type_v = o.type_v;
                cp.flash_attn = o.flash_attn;
                oxl_ctx *ctx = oxl_ctx_new(m, &cp, &err);
                const int n_toks = t->n_prompt > t->n_depth ? t->n_prompt : t->n_depth;
                oxl_token *toks = malloc(sizeof(oxl_token) * (size_t)(n_toks + 1));
                /* --draft: the generation tests (no prompt) draft with dm in a context of their own */
                draft_run dr = {.dm = dm};
                const bool spec = dm && t->n_prompt == 0;
                if (spec && ctx && toks) {
                    const size_t room = (size_t)t->n_depth + (size_t)t->n_gen + 2;
                    dr.dctx = oxl_ctx_new(dm, &cp, &err);
                    if (dr.dctx && oxl_ctx_share_threads(dr.dctx, ctx, &err) != 0) {
                        oxl_ctx_free(dr.dctx);
                        dr.dctx = NULL;
                    }
                    dr.hist = malloc(sizeof(oxl_token) * room);
                    /* the draft sequence's mirror for oxl_draft_propose: its context's length + 1 */
                    const size_t n_mirror = dr.dctx ? (size_t)oxl_ctx_n_ctx(dr.dctx) + 1 : 1;
                    dr.dtoks = calloc(n_mirror > room ? n_mirror : room, sizeof(oxl_token));
                    dr.batch = malloc(sizeof(oxl_token) * room);
                }
                if (!ctx || !toks || (spec && (!dr.dctx || !dr.hist || !dr.dtoks || !dr.batch))) {
                    fprintf(stderr, "error: %s\n", ctx && (!spec || dr.dctx) ? "out of memory" : err.msg);
                    oxl_ctx_free(ctx);
                    oxl_ctx_free(dr.dctx);
                    free(toks);
                    free(dr.hist);
                    free(dr.dtoks);
                    free(dr.batch);
                    status = 1;
                    continue;
                }
                double sum = 0.0, sum2 = 0.0, sum_ns = 0.0, sum_ns2 = 0.0, samples[256];
                char test_time[32];
                const time_t now = time(NULL);
                struct tm tmv;
                strftime(test_time, sizeof test_time, "%Y-%m-%dT%H:%M:%SZ", gmtime_r(&now, &tmv));
                const uint64_t runs0 = oxl_pool_n_runs(ctx->pool);
                bool ok = (spec ? run_test_draft(ctx, m, t, &dr, o.n_batch, &o)
                                : run_test(ctx, m, t, toks, o.n_batch)) >= 0; /* warm-up */
                const uint64_t tasks = oxl_pool_n_runs(ctx->pool) - runs0;
                dr.n_drafted = dr.n_accepted = 0; /* the timed runs' */
                for (int r = 0; ok && r < o.reps; r++) {
                    double s =
                        spec ? run_test_draft(ctx, m, t, &dr, o.n_batch, &o) : run_test(ctx, m, t, toks, o.n_batch);
                    if (r < (int)(sizeof samples / sizeof samples[0])) {
                        samples[r] = s * 1e9;
                    }
                    ok = s > 0;
                    double ts = (t->n_prompt + t->n_gen) / s;
                    sum += ts;
                    sum2 += ts * ts;
                    sum_ns += s * 1e9;
                    sum_ns2 += s * 1e9 * s * 1e9;
                }
                oxl_ctx_free(ctx);
                oxl_ctx_free(dr.dctx);
                free(toks);
                free(dr.hist);
                free(dr.dtoks);
                free(dr.batch);
                if (!ok) {
                    status = 1;
                    continue;
                }
                const double mean = sum / o.reps;
                const double sd = o.reps > 1 ? sqrt(fmax(0.0, (sum2 - o.reps * mean * mean) / (o.reps - 1))) : 0.0;
                const double bound = t->n_prompt == 0 && bw > 0 ? mean * bytes_tok / bw : 0.0;
                if (o.roofline && t->n_prompt == 0) {
                    const double per_tok = (double)tasks / t->n_gen;
                    fprintf(stderr,
                            "bench: tg%d, %d threads: %.1f pool tasks per token x %.2f us per empty task = "
                            "%.1f%% of the token time\n",
                            t->n_gen, o.threads[it], per_tok, task_cost * 1e6, 100.0 * per_tok * task_cost * mean);
                }
                char name[64];
                test_name(t, name, sizeof name);
                bench_row row = {.filename = o.models[im],
                                 .size = oxl_model_size(m),
                                 .n_params = oxl_model_n_params(m),
                                 .n_batch = o.n_batch,
                                 .n_ubatch = o.n_ubatch,
                                 .n_threads = o.threads[it],
                                 .n_prompt = t->n_prompt,
                                 .n_gen = t->n_gen,
                                 .n_depth = t->n_depth,
                                 .n_gpu_layers = o.ngl_set ? o.n_gpu_layers : -1,
                                 .on_device = oxl_model_n_gpu_layers(m) > 0,
                                 .main_gpu = o.main_gpu < 0 ? 0 : o.main_gpu,
                                 .type_k = kv_name(o.type_k),
                                 .type_v = kv_name(o.type_v),
                                 .flash_attn = o.flash_attn == OXL_FLASH_ATTN_OFF  ? 0
                                               : o.flash_attn == OXL_FLASH_ATTN_ON ? 1
                                                                                   : -1,
                                 .n_samples = o.reps < 256 ? o.reps : 256,
                                 .samples_ns = samples,
                                 .load_mode = o.no_mmap ? "none" : "mmap",
                                 .repack = !o.no_repack,
                                 .avg_ns = sum_ns / o.reps,
                                 .avg_ts = mean,
                                 .stddev_ts = sd,
                                 .bound = bound,
                                 .draft = spec ? o.draft : NULL,
                                 .n_drafted = dr.n_drafted,
                                 .n_accepted = dr.n_accepted};
                const double mean_ns = sum_ns / o.reps;
                row.stddev_ns =
                    o.reps > 1 ? sqrt(fmax(0.0, (sum_ns2 - o.reps * mean_ns * mean_ns) / (o.reps - 1))) : 0.0;
                model_type(m, row.type, sizeof row.type);
                memcpy(row.test_time, test_time, sizeof row.test_time);
                if (md) {
                    char size[32], params[32], tps[48], bnd[16] = "";
                    snprintf(size, sizeof size, "%.2f MiB", (double)oxl_model_size(m) / (1024.0 * 1024.0));
                    snprintf(params, sizeof params, "%.2f M", (double)oxl_model_n_params(m) / 1e6);
                    /* "±" is two bytes: one more of field width keeps the column's 20 characters */
                    snprintf(tps, sizeof tps, "%.2f ± %.2f", mean, sd);
                    if (o.roofline) {
                        if (bound > 0) {
                            snprintf(bnd, sizeof bnd, " %6.1f |", 100.0 * bound);
                        } else {
                            snprintf(bnd, sizeof bnd, "       |");
                        }
                    }
                    printf("| %-30.30s | %10s | %10s | %-10s | %7d |", row.type, size, params,
                           row.on_device ? "Vulkan" : "CPU", o.threads[it]);
                    if (col_tk) {
                        printf(" %6s |", row.type_k);
                    }
                    if (col_tv) {
                        printf(" %6s |", row.type_v);
                    }
                    if (col_fa) {
                        printf(" %4s |", o.flash_attn == OXL_FLASH_ATTN_OFF ? "0" : "1");
                    }
                    if (col_nr) {
                        printf(" %6d |", row.repack ? 1 : 0);
                    }
                    if (col_mmap) {
                        printf(" %4d |", o.no_mmap ? 0 : 1);
                    }
                    printf(" %15s | %21s |%s", name, tps, bnd);
                    if (o.draft && spec) {
                        printf(" %11.1f |", dr.n_drafted ? 100.0 * (double)dr.n_accepted / (double)dr.n_drafted : 0.0);
                    } else if (o.draft) {
                        printf("             |");
                    }
                    printf("\n");
                } else {
                    if (json && !first_json) {
                        printf(",\n");
                    }
                    print_fields(&row, cpu, json, o.roofline, o.draft != NULL);
                    first_json = false;
                }
                fflush(stdout);
            }
        }
        oxl_model_free(m);
        if (o.log_level >= OXL_LOG_INFO) {
            oxl_print_peak_rss("bench");
        }
    }
    oxl_model_free(dm);
    if (json) {
        printf("\n]\n");
    } else if (md) {
        printf("\nbuild: oxillama\n");
    }
    return status;
}
