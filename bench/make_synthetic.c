/* oxl-make-synthetic: writes a llama-shaped GGUF with random weights and a real vocabulary, so
 * benchmarks need no download. The default shape is the 0.25B model of the project's reference
 * speed figures (n_embd 1024, 16 layers, n_ff 2816, 16 heads, 8 KV heads, context 4096, separate
 * output matrix). Matrices are normal with std 1/sqrt(fan_in), norm weights 1; F16 or F32. The
 * vocabulary (tokenizer.* keys) is copied from --vocab, a GGUF such as ggml-vocab-llama-spm.gguf.
 *
 * Tensors are drawn in llama.cpp's order (embeddings, output norm, output, then layer by layer)
 * from one random stream, so a model made with --n-layer K and the same seed and shape holds
 * exactly the first K layers, embeddings and output head of a deeper one: a self-speculative
 * (layer-skip) draft of it. --tail-scale S multiplies the output projections (attn_output,
 * ffn_down) of the layers from --tail-from K on by S after drawing them (the stream is unchanged),
 * so those layers add only small residual contributions and the first K layers decide most greedy
 * tokens: a target on which such a draft is mostly accepted. --tied writes no output matrix (the
 * head is token_embd, as llama.cpp falls back to): each token's own embedding then dominates its
 * logits, so greedy generation repeats the last token, a loop for n-gram drafting. --recite IDS
 * (token ids, as `oxillama tokenize --ids --no-bos` prints them) makes the output head recite that
 * passage: for each pair of consecutive ids a, b the head's row b becomes token a's embedding (the
 * sum of them where b follows several ids), so a context ending in a passage token continues with
 * the token after it, as a model that had memorised the passage would: the case of n-gram
 * drafting from a prompt that quotes the text the model goes on to write. The other rows stay
 * random; with --tail-from 0 --tail-scale S (every layer's output projections scaled) the layers'
 * small contributions leave each token's own embedding in charge of its logits.
 *
 *   oxl-make-synthetic --vocab VOCAB.gguf [--n-embd N] [--n-layer N] [--n-ff N] [--n-head N]
 *                      [--n-head-kv N] [--ctx N] [--type f16|f32] [--seed S]
 *                      [--tail-from K --tail-scale S] [--tied] [--recite IDS] OUT.gguf
 */
#include "gguf.h"
#include "gguf_write.h"
#include "oxl_fp16.h"
#include "oxl_types.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct shape {
    int n_embd, n_layer, n_ff, n_head, n_head_kv, ctx;
} shape;

/* xorshift64* and Box-Muller: reproducible normal samples from a seed. */
static uint64_t rng_state;

static double uniform01(void) {
    rng_state ^= rng_state >> 12;
    rng_state ^= rng_state << 25;
    rng_state ^= rng_state >> 27;
    return (double)((rng_state * 2685821657736338717ull) >> 11) * (1.0 / 9007199254740992.0);
}

static float normal(void) {
    double u1 = uniform01(), u2 = uniform01();
    return (float)(sqrt(-2.0 * log(u1 > 1e-300 ? u1 : 1e-300)) * cos(2.0 * M_PI * u2));
}

/* Fills n elements of type t (f16/f32): normal with std scale, or all ones when scale == 0; every
 * value is multiplied by mul afterwards (the stream of draws does not depend on mul). */
static void fill(void *dst, oxl_type t, size_t n, float scale, float mul) {
    for (size_t i = 0; i < n; i++) {
        const float v = (scale == 0.0f ? 1.0f : normal() * scale) * mul;
        if (t == OXL_TYPE_F16) {
            ((uint16_t *)dst)[i] = oxl_fp32_to_fp16(v);
        } else {
            ((float *)dst)[i] = v;
        }
    }
}

typedef struct tensor_spec {
    char name[64];
    int64_t ne[2];
    int n_dims;
} tensor_spec;

/* True for the output projections of layers >= from (names blk.N.attn_output / blk.N.ffn_down). */
static bool in_tail(const char *name, int from) {
    int il = 0, off = 0;
    if (sscanf(name, "blk.%d.%n", &il, &off) != 1 || off == 0 || il < from) {
        return false;
    }
    return !strcmp(name + off, "attn_output.weight") || !strcmp(name + off, "ffn_down.weight");
}

/* The ids of a --recite list: every run of digits in s, in order (brackets, commas and spaces
 * separate them). Returns their number, or -1 when one is not below n_vocab or memory is short;
 * *out is malloc'ed. */
static int64_t parse_ids(const char *s, int64_t n_vocab, int64_t **out) {
    int64_t n = 0, cap = 0, *ids = NULL;
    while (*s) {
        if (*s < '0' || *s > '9') {
            s++;
            continue;
        }
        char *end;
        const long long v = strtoll(s, &end, 10);
        s = end;
        if (v >= n_vocab) {
            free(ids);
            return -1;
        }
        if (n == cap) {
            cap = cap ? 2 * cap : 64;
            int64_t *g = realloc(ids, (size_t)cap * sizeof *ids);
            if (!g) {
                free(ids);
                return -1;
            }
            ids = g;
        }
        ids[n++] = v;
    }
    *out = ids;
    return n;
}

/* --recite: row b of the output head (n_embd values of type t per row) becomes the sum of the
 * embeddings of the ids that precede b in ids[0..n). */
static void recite_rows(void *head, const void *embd, oxl_type t, int64_t n_embd, int64_t n_vocab, const int64_t *ids,
                        int64_t n) {
    unsigned char *set = calloc((size_t)n_vocab, 1);
    if (!set) {
        return;
    }
    const size_t es = t == OXL_TYPE_F16 ? 2 : 4;
    for (int64_t i = 0; i + 1 < n; i++) {
        const int64_t a = ids[i], b = ids[i + 1];
        for (int64_t e = 0; e < n_embd; e++) {
            const size_t ob = ((size_t)b * (size_t)n_embd + (size_t)e) * es,
                         oa = ((size_t)a * (size_t)n_embd + (size_t)e) * es;
            float v = t == OXL_TYPE_F16 ? oxl_fp16_to_fp32(*(const uint16_t *)((const char *)embd + oa))
                                        : *(const float *)((const char *)embd + oa);
            if (set[b]) {
                v += t == OXL_TYPE_F16 ? oxl_fp16_to_fp32(*(const uint16_t *)((char *)head + ob))
                                       : *(const float *)((char *)head + ob);
            }
            if (t == OXL_TYPE_F16) {
                *(uint16_t *)((char *)head + ob) = oxl_fp32_to_fp16(v);
            } else {
                *(float *)((char *)head + ob) = v;
            }
        }
        set[b] = 1;
    }
    free(set);
}

static int parse_int(const char *s, int *out) {
    char *end;
    long v = strtol(s, &end, 10);
    if (*end || v <= 0 || v > (1 << 20)) {
        return -1;
    }
    *out = (int)v;
    return 0;
}

int main(int argc, char **argv) {
    shape sh = {1024, 16, 2816, 16, 8, 4096};
    const char *vocab_path = NULL, *out = NULL;
    oxl_type wtype = OXL_TYPE_F16;
    int tail_from = -1; /* -1: no --tail-from */
    bool tied = false;
    const char *recite = NULL;
    float tail_scale = 1.0f;
    rng_state = 0x9E3779B97F4A7C15ull;
    struct {
        const char *flag;
        int *field;
    } ints[] = {{"--n-embd", &sh.n_embd}, {"--n-layer", &sh.n_layer},     {"--n-ff", &sh.n_ff},
                {"--n-head", &sh.n_head}, {"--n-head-kv", &sh.n_head_kv}, {"--ctx", &sh.ctx}};
    for (int i = 1; i < argc; i++) {
        bool used = false;
        for (size_t k = 0; k < sizeof ints / sizeof ints[0] && i + 1 < argc; k++) {
            if (!strcmp(argv[i], ints[k].flag)) {
                if (parse_int(argv[++i], ints[k].field) != 0) {
                    fprintf(stderr, "error: %s %s: expected a positive integer\n", ints[k].flag, argv[i]);
                    return 1;
                }
                used = true;
            }
        }
        if (used) {
            continue;
        }
        if (!strcmp(argv[i], "--vocab") && i + 1 < argc) {
            vocab_path = argv[++i];
        } else if (!strcmp(argv[i], "--type") && i + 1 < argc) {
            const char *t = argv[++i];
            if (strcmp(t, "f16") && strcmp(t, "f32")) {
                fprintf(stderr, "error: --type %s: f16 or f32\n", t);
                return 1;
            }
            wtype = !strcmp(t, "f16") ? OXL_TYPE_F16 : OXL_TYPE_F32;
        } else if (!strcmp(argv[i], "--tied")) {
            tied = true;
        } else if (!strcmp(argv[i], "--tail-from") && i + 1 < argc) {
            char *end;
            const long v = strtol(argv[++i], &end, 10);
            if (*end || v < 0 || v > (1 << 20)) {
                fprintf(stderr, "error: --tail-from %s: expected a layer index (0 for every layer)\n", argv[i]);
                return 1;
            }
            tail_from = (int)v;
        } else if (!strcmp(argv[i], "--recite") && i + 1 < argc) {
            recite = argv[++i];
        } else if (!strcmp(argv[i], "--tail-scale") && i + 1 < argc) {
            char *end;
            tail_scale = strtof(argv[++i], &end);
            if (*end || !(tail_scale >= 0.0f && tail_scale <= 1.0f)) {
                fprintf(stderr, "error: --tail-scale %s: expected a number in [0, 1]\n", argv[i]);
                return 1;
            }
        } else if (!strcmp(argv[i], "--seed") && i + 1 < argc) {
            rng_state = strtoull(argv[++i], NULL, 10) * 0x9E3779B97F4A7C15ull + 1;
        } else if (argv[i][0] != '-' && !out) {
            out = argv[i];
        } else {
            fprintf(stderr, "error: unknown argument '%s'\n", argv[i]);
            return 1;
        }
    }
    if (!vocab_path || !out || sh.n_embd % sh.n_head || sh.n_head % sh.n_head_kv ||
        (tail_scale != 1.0f && tail_from < 0) || (recite && tied)) {
        fprintf(stderr, "usage: oxl-make-synthetic --vocab VOCAB.gguf [--n-embd N] [--n-layer N] [--n-ff N]\n"
                        "       [--n-head N] [--n-head-kv N] [--ctx N] [--type f16|f32] [--seed S]\n"
                        "       [--tail-from K --tail-scale S] [--tied] [--recite IDS] OUT.gguf\n"
                        "(n_embd must divide by n_head, n_head by n_head_kv; --tail-scale needs --tail-from;\n"
                        " --recite needs an output matrix, so not --tied)\n");
        return 1;
    }
    oxl_error err = {0};
    oxl_gguf *vocab = oxl_gguf_open(vocab_path, &err);
    oxl_gguf_writer *w = vocab ? oxl_gguf_writer_new(&err) : NULL;
    if (!w) {
        fprintf(stderr, "error: %s\n", err.msg);
        oxl_gguf_close(vocab);
        return 1;
    }
    int rc = 0;
    for (int64_t i = 0; rc == 0 && i < oxl_gguf_n_kv(vocab); i++) {
        if (!strncmp(oxl_gguf_key(vocab, i), "tokenizer.", 10)) {
            rc = oxl_gguf_writer_copy_kv(w, vocab, i, &err);
        }
    }
    int64_t n_vocab_i = oxl_gguf_find_key(vocab, "tokenizer.ggml.tokens");
    const int64_t n_vocab = n_vocab_i >= 0 ? (int64_t)oxl_gguf_arr_n(vocab, n_vocab_i) : 0;
    if (rc == 0 && n_vocab <= 0) {
        rc = -1;
        snprintf(err.msg, sizeof err.msg, "%s: no tokenizer.ggml.tokens array", vocab_path);
    }
    int64_t *recite_ids = NULL, n_recite = 0;
    if (rc == 0 && recite && (n_recite = parse_ids(recite, n_vocab, &recite_ids)) < 2) {
        rc = -1;
        snprintf(err.msg, sizeof err.msg, "--recite: expected at least two token ids below %lld", (long long)n_vocab);
    }
    void *embd = NULL; /* token_embd's data, kept for --recite */
    const int head_dim = sh.n_embd / sh.n_head, kv = head_dim * sh.n_head_kv;
    rc = rc ? rc
         : (oxl_gguf_writer_set_str(w, "general.architecture", "llama", &err) ||
            oxl_gguf_writer_set_str(w, "general.name", "oxillama synthetic", &err) ||
            oxl_gguf_writer_set_u32(w, "general.file_type", wtype == OXL_TYPE_F16 ? 1 : 0, &err) ||
            oxl_gguf_writer_set_u32(w, "llama.context_length", (uint32_t)sh.ctx, &err) ||
            oxl_gguf_writer_set_u32(w, "llama.embedding_length", (uint32_t)sh.n_embd, &err) ||
            oxl_gguf_writer_set_u32(w, "llama.block_count", (uint32_t)sh.n_layer, &err) ||
            oxl_gguf_writer_set_u32(w, "llama.feed_forward_length", (uint32_t)sh.n_ff, &err) ||
            oxl_gguf_writer_set_u32(w, "llama.attention.head_count", (uint32_t)sh.n_head, &err) ||
            oxl_gguf_writer_set_u32(w, "llama.attention.head_count_kv", (uint32_t)sh.n_head_kv, &err) ||
            oxl_gguf_writer_set_u32(w, "llama.rope.dimension_count", (uint32_t)head_dim, &err) ||
            oxl_gguf_writer_set_f32(w, "llama.rope.freq_base", 10000.0f, &err) ||
            oxl_gguf_writer_set_f32(w, "llama.attention.layer_norm_rms_epsilon", 1e-5f, &err))
             ? -1
             : 0;
    /* the tensors, in llama.cpp's order */
    size_t n_specs = 3 + 9 * (size_t)sh.n_layer, k = 0;
    tensor_spec *specs = calloc(n_specs, sizeof *specs);
    if (!specs) {
        fprintf(stderr, "error: out of memory\n");
        return 1;
    }
#define SPEC(nd, e0, e1, ...)                                                                                          \
    do {                                                                                                               \
        snprintf(specs[k].name, sizeof specs[k].name, __VA_ARGS__);                                                    \
        specs[k].n_dims = nd;                                                                                          \
        specs[k].ne[0] = e0;                                                                                           \
        specs[k].ne[1] = e1;                                                                                           \
        k++;                                                                                                           \
    } while (0)
    SPEC(2, sh.n_embd, n_vocab, "token_embd.weight");
    SPEC(1, sh.n_embd, 1, "output_norm.weight");
    if (!tied) {
        SPEC(2, sh.n_embd, n_vocab, "output.weight");
    }
    for (int il = 0; il < sh.n_layer; il++) {
        SPEC(2, sh.n_embd, sh.n_embd, "blk.%d.attn_q.weight", il);
        SPEC(2, sh.n_embd, kv, "blk.%d.attn_k.weight", il);
        SPEC(2, sh.n_embd, kv, "blk.%d.attn_v.weight", il);
        SPEC(2, sh.n_embd, sh.n_embd, "blk.%d.attn_output.weight", il);
        SPEC(1, sh.n_embd, 1, "blk.%d.attn_norm.weight", il);
        SPEC(2, sh.n_embd, sh.n_ff, "blk.%d.ffn_gate.weight", il);
        SPEC(2, sh.n_ff, sh.n_embd, "blk.%d.ffn_down.weight", il);
        SPEC(2, sh.n_embd, sh.n_ff, "blk.%d.ffn_up.weight", il);
        SPEC(1, sh.n_embd, 1, "blk.%d.ffn_norm.weight", il);
    }
#undef SPEC
    n_specs = k;
    for (size_t i = 0; rc == 0 && i < n_specs; i++) {
        rc = oxl_gguf_writer_add_tensor(w, specs[i].name, specs[i].n_dims == 1 ? OXL_TYPE_F32 : wtype,
                                        (uint32_t)specs[i].n_dims, specs[i].ne, &err);
    }
    rc = rc ? rc : oxl_gguf_writer_begin(w, out, &err);
    for (size_t i = 0; rc == 0 && i < n_specs; i++) {
        const size_t nbytes = oxl_gguf_writer_tensor_nbytes(w, (int64_t)i);
        const oxl_type t = specs[i].n_dims == 1 ? OXL_TYPE_F32 : wtype;
        void *data = malloc(nbytes);
        if (!data) {
            rc = -1;
            snprintf(err.msg, sizeof err.msg, "out of memory for %s", specs[i].name);
            break;
        }
        const float tail = tail_from >= 0 && in_tail(specs[i].name, tail_from) ? tail_scale : 1.0f;
        fill(data, t, (size_t)(specs[i].ne[0] * specs[i].ne[1]),
             specs[i].n_dims == 1 ? 0.0f : 1.0f / sqrtf((float)specs[i].ne[0]), tail);
        if (recite && embd && !strcmp(specs[i].name, "output.weight")) {
            recite_rows(data, embd, t, sh.n_embd, n_vocab, recite_ids, n_recite);
        }
        rc = oxl_gguf_writer_write_data(w, data, nbytes, &err);
        if (recite && !embd && !strcmp(specs[i].name, "token_embd.weight")) {
            embd = data;
        } else {
            free(data);
        }
    }
    rc = rc ? rc : oxl_gguf_writer_finish(w, &err);
    if (rc != 0) {
        fprintf(stderr, "error: %s\n", err.msg);
    } else {
        fprintf(stderr, "%s: %.1f MiB\n", out, (double)oxl_gguf_writer_bytes_written(w) / (1024.0 * 1024.0));
    }
    free(specs);
    free(embd);
    free(recite_ids);
    oxl_gguf_writer_free(w);
    oxl_gguf_close(vocab);
    return rc == 0 ? 0 : 1;
}
