/* oxillama bench --batched: llama.cpp's llama-batched-bench (tools/batched-bench/batched-bench.cpp),
 * its options and its table. For each prompt length PP (-npp), generation length TG (-ntg) and
 * number of parallel sequences B (-npl), in that nesting: B sequences of PP random tokens decoded
 * together in batches of -b tokens (timed: T_PP), then TG steps that each decode one token of every
 * sequence in one batch (timed: T_TG; -tgs: each sequence's TG tokens one at a time, sequence after
 * sequence). One context holds the largest B sequences (n_seq_max), its -c tokens shared equally by
 * them; a combination needing more than -c tokens (B x (PP + TG)) is skipped, as llama-batched-bench
 * does. Columns: N_KV = B x (PP + TG), S_PP = B x PP / T_PP, S_TG = B x TG / T_TG, S = N_KV / T. */
#include "args.h"
#include "cli.h"
#include "file.h"
#include "oxillama.h"
#include "pool.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define BB_MAX_LIST 32

typedef struct bb_opts {
    const char *model;
    int n_pp[BB_MAX_LIST], n_n_pp;
    int n_tg[BB_MAX_LIST], n_n_tg;
    int n_pl[BB_MAX_LIST], n_n_pl;
    int n_ctx, n_batch, n_ubatch, n_threads;
    bool tg_separate, jsonl;
    oxl_kv_type type_k, type_v;
    oxl_flash_attn flash_attn;
} bb_opts;

/* A comma-separated list of integers from lo to hi; its length, or -1 on a bad element. */
static int bb_parse_list(const char *s, int *out, int cap, int lo, int hi) {
    int n = 0;
    while (*s) {
        char *end;
        long v = strtol(s, &end, 10);
        if (end == s || (*end && *end != ',') || v < lo || v > hi || n == cap) {
            return -1;
        }
        out[n++] = (int)v;
        s = *end ? end + 1 : end;
    }
    return n;
}

static int bb_parse(bb_opts *o, int argc, char **argv) {
    memset(o, 0, sizeof *o);
    o->n_batch = 2048;
    o->n_ubatch = 512;
    o->type_k = o->type_v = OXL_KV_F16;
    o->flash_attn = OXL_FLASH_ATTN_AUTO;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--batched")) {
            continue;
        }
        if (!strcmp(a, "-tgs")) {
            o->tg_separate = true;
            continue;
        }
        if (!strcmp(a, "-pps")) {
            /* llama-batched-bench copies sequence 0's cache to the others (llama_memory_seq_cp) */
            fprintf(stderr, "error: -pps: a prompt shared between sequences needs a copy of one sequence's KV "
                            "cache to another, which oxillama does not have\n");
            return -1;
        }
        if (i + 1 >= argc) {
            fprintf(stderr, "error: %s needs a value\n", a);
            return -1;
        }
        const char *v = argv[++i];
        int bad = 0;
        if (!strcmp(a, "-m") || !strcmp(a, "--model")) {
            o->model = v;
        } else if (!strcmp(a, "-npp")) {
            bad = (o->n_n_pp = bb_parse_list(v, o->n_pp, BB_MAX_LIST, 1, 1 << 20)) < 0;
        } else if (!strcmp(a, "-ntg")) {
            bad = (o->n_n_tg = bb_parse_list(v, o->n_tg, BB_MAX_LIST, 1, 1 << 20)) < 0;
        } else if (!strcmp(a, "-npl")) {
            bad = (o->n_n_pl = bb_parse_list(v, o->n_pl, BB_MAX_LIST, 1, 256)) < 0;
        } else if (!strcmp(a, "-c") || !strcmp(a, "--ctx-size")) {
            bad = bb_parse_list(v, &o->n_ctx, 1, 0, 1 << 24) != 1;
        } else if (!strcmp(a, "-b") || !strcmp(a, "--batch-size")) {
            bad = bb_parse_list(v, &o->n_batch, 1, 1, 1 << 24) != 1;
        } else if (!strcmp(a, "-ub") || !strcmp(a, "--ubatch-size")) {
            bad = bb_parse_list(v, &o->n_ubatch, 1, 1, 1 << 24) != 1;
        } else if (!strcmp(a, "-t") || !strcmp(a, "--threads")) {
            bad = bb_parse_list(v, &o->n_threads, 1, 0, 512) != 1;
        } else if (!strcmp(a, "-ctk") || !strcmp(a, "--cache-type-k")) {
            bad = oxl_kv_type_parse(v, &o->type_k);
        } else if (!strcmp(a, "-ctv") || !strcmp(a, "--cache-type-v")) {
            bad = oxl_kv_type_parse(v, &o->type_v);
        } else if (!strcmp(a, "-fa") || !strcmp(a, "--flash-attn")) {
            bad = strcmp(v, "on") && strcmp(v, "off") && strcmp(v, "auto");
            o->flash_attn = !strcmp(v, "on")    ? OXL_FLASH_ATTN_ON
                            : !strcmp(v, "off") ? OXL_FLASH_ATTN_OFF
                                                : OXL_FLASH_ATTN_AUTO;
        } else if (!strcmp(a, "--output-format")) {
            bad = strcmp(v, "md") && strcmp(v, "jsonl");
            o->jsonl = !strcmp(v, "jsonl");
        } else if (oxl_opts_gpu_notice(a, v)) {
            /* GPU options: ignored with a notice */
        } else {
            fprintf(stderr, "error: unknown option '%s' (bench --batched)\n", a);
            return -1;
        }
        if (bad) {
            fprintf(stderr, "error: %s: invalid value '%s'\n", a, v);
            return -1;
        }
    }
    if (!o->model) {
        fprintf(stderr, "error: bench --batched needs a model (-m)\n");
        return -1;
    }
    if (o->n_threads == 0) {
        o->n_threads = oxl_n_physical_cores();
    }
    return 0;
}

/* Decodes tokens [0, n) of the arrays in batches of at most n_batch tokens (llama-batched-bench's
 * decode_helper); false on an error, printed. */
static bool bb_decode(oxl_ctx *ctx, const oxl_token *tok, const int32_t *pos, const int32_t *seq, const int8_t *keep,
                      int n, int n_batch) {
    for (int i = 0; i < n; i += n_batch) {
        const int nb = n - i < n_batch ? n - i : n_batch;
        const oxl_batch b = {.n_tokens = nb, .token = tok + i, .pos = pos + i, .seq_id = seq + i, .logits = keep + i};
        oxl_error err = {0};
        if (oxl_decode_batch(ctx, &b, &err) != 0) {
            fprintf(stderr, "error: %s\n", err.msg);
            return false;
        }
    }
    return true;
}

int oxl_bench_batched(int argc, char **argv) {
    bb_opts o;
    if (bb_parse(&o, argc, argv) != 0) {
        return 1;
    }
    oxl_error err = {0};
    oxl_model_params mp = oxl_model_default_params();
    oxl_model *m = oxl_model_load(o.model, &mp, &err);
    if (!m) {
        fprintf(stderr, "error: %s\n", err.msg);
        return 1;
    }
    int n_seq_max = 1;
    for (int i = 0; i < o.n_n_pl; i++) {
        n_seq_max = o.n_pl[i] > n_seq_max ? o.n_pl[i] : n_seq_max;
    }
    oxl_ctx_params cp = oxl_ctx_default_params();
    /* -c 0: the training context, for all the sequences together (llama.cpp's n_ctx) */
    cp.n_ctx = o.n_ctx > 0 ? o.n_ctx : oxl_model_n_ctx_train(m);
    cp.n_seq_max = n_seq_max;
    cp.n_batch = o.n_ubatch;
    cp.n_threads = o.n_threads;
    cp.type_k = o.type_k;
    cp.type_v = o.type_v;
    cp.flash_attn = o.flash_attn;
    oxl_ctx *ctx = cp.n_ctx >= n_seq_max ? oxl_ctx_new(m, &cp, &err) : NULL;
    if (!ctx) {
        fprintf(stderr, "error: %s\n", cp.n_ctx >= n_seq_max ? err.msg : "context smaller than -npl's largest value");
        oxl_model_free(m);
        return 1;
    }
    const int n_kv_max = cp.n_ctx;
    const int n_ctx_seq = oxl_ctx_n_ctx(ctx);
    const int32_t n_vocab = oxl_model_n_vocab(m);
    /* one batch of up to n_kv_max tokens, as llama-batched-bench's */
    oxl_token *tok = malloc(sizeof *tok * (size_t)n_kv_max);
    int32_t *pos = malloc(sizeof *pos * (size_t)n_kv_max);
    int32_t *seq = malloc(sizeof *seq * (size_t)n_kv_max);
    int8_t *keep = malloc((size_t)n_kv_max);
    int status = 0;
    if (!tok || !pos || !seq || !keep) {
        fprintf(stderr, "error: out of memory\n");
        status = 1;
        goto done;
    }
    srand(1234);
    /* warm-up: 16 tokens of sequence 0 (fewer when one sequence's share of the cache is smaller) */
    const int n_warm = n_ctx_seq < 16 ? n_ctx_seq : 16;
    for (int i = 0; i < n_warm; i++) {
        tok[i] = rand() % n_vocab;
        pos[i] = i;
        seq[i] = 0;
        keep[i] = 0;
    }
    if (!bb_decode(ctx, tok, pos, seq, keep, n_warm, o.n_batch)) {
        status = 1;
        goto done;
    }
    if (!o.jsonl) {
        printf("\nbench: n_kv_max = %d, n_batch = %d, n_ubatch = %d, flash_attn = %d, is_pp_shared = 0, "
               "is_tg_separate = %d, n_gpu_layers = -1, n_threads = %d, n_threads_batch = %d\n\n",
               n_kv_max, o.n_batch, o.n_ubatch, (int)o.flash_attn, o.tg_separate ? 1 : 0, o.n_threads, o.n_threads);
        printf("|%6s | %6s | %4s | %6s | %8s | %8s | %8s | %8s | %8s | %8s |\n", "PP", "TG", "B", "N_KV", "T_PP s",
               "S_PP t/s", "T_TG s", "S_TG t/s", "T s", "S t/s");
        printf("|%6s-|-%6s-|-%4s-|-%6s-|-%8s-|-%8s-|-%8s-|-%8s-|-%8s-|-%8s-|\n", "------", "------", "----", "------",
               "--------", "--------", "--------", "--------", "--------", "--------");
    }
    for (int ip = 0; ip < o.n_n_pp; ip++) {
        for (int it = 0; it < o.n_n_tg; it++) {
            for (int il = 0; il < o.n_n_pl; il++) {
                const int pp = o.n_pp[ip], tg = o.n_tg[it], pl = o.n_pl[il];
                const int64_t n_ctx_req = (int64_t)pl * (pp + tg);
                if (n_ctx_req > n_kv_max) {
                    continue;
                }
                if (pp + tg > n_ctx_seq) { /* fits the cache, not one sequence's share of it */
                    fprintf(stderr, "bench: PP %d + TG %d skipped: one sequence holds %d tokens (-c %d / %d)\n", pp, tg,
                            n_ctx_seq, n_kv_max, n_seq_max);
                    continue;
                }
                int n = 0;
                for (int j = 0; j < pl; j++) {
                    for (int i = 0; i < pp; i++, n++) {
                        tok[n] = rand() % n_vocab;
                        pos[n] = i;
                        seq[n] = j;
                        keep[n] = i == pp - 1;
                    }
                }
                for (int s = 0; s < n_seq_max; s++) {
                    oxl_seq_truncate(ctx, s, 0);
                }
                const double t_pp0 = oxl_clock_s();
                bool ok = bb_decode(ctx, tok, pos, seq, keep, n, o.n_batch);
                const double t_pp1 = oxl_clock_s();
                if (o.tg_separate) { /* 0 0 0 ... 1 1 1 ... */
                    for (int j = 0; ok && j < pl; j++) {
                        for (int i = 0; ok && i < tg; i++) {
                            tok[0] = rand() % n_vocab;
                            pos[0] = pp + i;
                            seq[0] = j;
                            keep[0] = 1;
                            ok = bb_decode(ctx, tok, pos, seq, keep, 1, o.n_batch);
                        }
                    }
                } else { /* 0123 0123 ... */
                    for (int i = 0; ok && i < tg; i++) {
                        for (int j = 0; j < pl; j++) {
                            tok[j] = rand() % n_vocab;
                            pos[j] = pp + i;
                            seq[j] = j;
                            keep[j] = 1;
                        }
                        ok = bb_decode(ctx, tok, pos, seq, keep, pl, o.n_batch);
                    }
                }
                const double t_tg1 = oxl_clock_s();
                if (!ok) {
                    status = 1;
                    goto done;
                }
                const double t_pp = t_pp1 - t_pp0, t_tg = t_tg1 - t_pp1, t = t_pp + t_tg;
                const double s_pp = pl * pp / t_pp, s_tg = pl * tg / t_tg, s = (double)n_ctx_req / t;
                if (o.jsonl) {
                    printf("{\"n_kv_max\": %d, \"n_batch\": %d, \"n_ubatch\": %d, \"flash_attn\": %d, "
                           "\"is_pp_shared\": 0, \"n_gpu_layers\": -1, \"n_threads\": %d, \"n_threads_batch\": %d, "
                           "\"pp\": %d, \"tg\": %d, \"pl\": %d, \"n_kv\": %lld, \"t_pp\": %f, \"speed_pp\": %f, "
                           "\"t_tg\": %f, \"speed_tg\": %f, \"t\": %f, \"speed\": %f}\n",
                           n_kv_max, o.n_batch, o.n_ubatch, (int)o.flash_attn, o.n_threads, o.n_threads, pp, tg, pl,
                           (long long)n_ctx_req, t_pp, s_pp, t_tg, s_tg, t, s);
                } else {
                    printf("|%6d | %6d | %4d | %6lld | %8.3f | %8.2f | %8.3f | %8.2f | %8.3f | %8.2f |\n", pp, tg, pl,
                           (long long)n_ctx_req, t_pp, s_pp, t_tg, s_tg, t, s);
                }
                fflush(stdout);
            }
        }
    }
    if (!o.jsonl) {
        printf("\n");
    }
done:
    free(tok);
    free(pos);
    free(seq);
    free(keep);
    oxl_ctx_free(ctx);
    oxl_model_free(m);
    return status;
}
