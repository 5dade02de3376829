/* The mmproj vision towers and projectors (src/mm/clip.h) against llama.cpp's libmtmd: for each golden
 * of golden/mm/ (llava15, llava-next, qwen2vl, qwen25vl, gemma3; golden/mm/README.md), every image chunk's golden
 * pixels (image.K.pixels) go through oxl_clip_encode, and the ViT input (image.K.vit_inp), the pre-LN
 * output, every block's output (where the golden has them: not qwen25vl's or gemma3's) and the embeddings
 * (image.K.embd) are compared with llama.cpp's. Gemma 3's average pooling is also checked on
 * hand-computed values (the mm_pool tests). Bad mmproj files
 * (golden copies patched in memory) must be refused with an error naming the key or tensor.
 *
 * Bounds: vit_inp within 2e-6 abs (fp16 im2col as ggml: the README's numpy model of it is 5.1e-7 off);
 * the block outputs and embeddings within 1e-4 of the largest reference magnitude (the bound;
 * measured: 0 under every ISA cap, the three goldens bit for bit; a RoPE without ggml's fused
 * multiply-adds already gives 1.4e-4 on qwen2vl). The ctest entries mm-clip-<isa> run these tests once
 * per ISA cap (OXILLAMA_ISA). */
#include "clip.h"
#include "gguf.h"
#include "gguf_write.h"
#include "oxl_fp16.h"
#include "pool.h"
#include "quantize.h"

#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MM OXL_SOURCE_DIR "/golden/mm/"

typedef struct probe_state {
    const oxl_gguf *gold;
    int image;
    double vit_inp; /* max |Δ| abs */
    double layers;  /* max over the checked tensors of max |Δ| / max |ref| */
    int n_checked;
    char bad[256]; /* the first mismatch in shape or presence */
} probe_state;

static void diff(const oxl_gguf_tensor *t, const float *x, int64_t n_all, double *max_abs, double *max_ref) {
    const float *ref = t->data;
    *max_abs = 0;
    *max_ref = 0;
    for (int64_t i = 0; i < n_all; i++) {
        const double d = fabs((double)x[i] - (double)ref[i]);
        *max_abs = d > *max_abs || isnan(d) ? (isnan(d) ? INFINITY : d) : *max_abs;
        *max_ref = fabs(ref[i]) > *max_ref ? fabs(ref[i]) : *max_ref;
    }
}

static void on_probe(void *user, const char *name, int layer, const float *x, int64_t ne0, int64_t ne1) {
    probe_state *s = user;
    char tname[64];
    if (layer >= 0) {
        snprintf(tname, sizeof tname, "image.%d.%s.%d", s->image, name, layer);
    } else {
        snprintf(tname, sizeof tname, "image.%d.%s", s->image, name);
    }
    const oxl_gguf_tensor *t = oxl_gguf_find_tensor(s->gold, tname);
    if (!t || t->type != 0 || t->ne[0] != ne0 || t->ne[1] != ne1) {
        if (!s->bad[0]) {
            snprintf(s->bad, sizeof s->bad, "%s: %s in the golden, or of another shape than (%lld, %lld)", tname,
                     t ? "present" : "absent", (long long)ne0, (long long)ne1);
        }
        return;
    }
    double max_abs, max_ref;
    diff(t, x, ne0 * ne1, &max_abs, &max_ref);
    if (strcmp(name, "vit_inp") == 0) {
        s->vit_inp = max_abs > s->vit_inp ? max_abs : s->vit_inp;
    } else {
        const double rel = max_abs / max_ref;
        s->layers = rel > s->layers ? rel : s->layers;
    }
    s->n_checked++;
}

static const int32_t *i32_tensor(const oxl_gguf *g, const char *name) {
    const oxl_gguf_tensor *t = oxl_gguf_find_tensor(g, name);
    cr_assert_not_null(t, "golden lacks %s", name);
    return t->data;
}

/* Encodes every image chunk of golden/mm/<id>.golden.gguf with <id>.mmproj.gguf and checks the tower:
 * the intermediate tensors (vit_inp and n_layer_tensors more) when n_layer_tensors >= 0, the
 * embeddings always (n_layer_tensors < 0: a golden with the embeddings only). */
static void check_variant(const char *id, int n_images, int n_layer_tensors) {
    char path[512];
    oxl_error err = {0};
    snprintf(path, sizeof path, MM "%s.golden.gguf", id);
    oxl_gguf *gold = oxl_gguf_open(path, &err);
    cr_assert_not_null(gold, "%s", err.msg);
    snprintf(path, sizeof path, MM "%s.mmproj.gguf", id);
    oxl_clip *clip = oxl_clip_load(path, &err);
    cr_assert_not_null(clip, "%s", err.msg);
    oxl_pool *pool = oxl_pool_new(2, &err);
    cr_assert_not_null(pool, "%s", err.msg);

    int64_t ki = oxl_gguf_find_key(gold, "golden.n_chunks");
    uint64_t n_chunks = 0;
    cr_assert(ki >= 0 && oxl_gguf_kv_uint(gold, ki, &n_chunks));
    const int32_t *type = i32_tensor(gold, "chunk_type");
    const int32_t *n_tok = i32_tensor(gold, "chunk_n_tokens");
    const int32_t *gx = i32_tensor(gold, "chunk_grid_x");
    const int32_t *gy = i32_tensor(gold, "chunk_grid_y");
    cr_assert_eq(oxl_clip_n_embd_out(clip), 64);

    probe_state s = {.gold = gold};
    if (n_layer_tensors >= 0) {
        oxl_clip_set_probe(clip, on_probe, &s);
    }
    double worst_abs = 0, worst_rel = 0;
    int image = 0;
    for (uint64_t ch = 0; ch < n_chunks; ch++) {
        if (type[ch] != 1) {
            continue;
        }
        char name[64];
        snprintf(name, sizeof name, "image.%d.pixels", image);
        const oxl_gguf_tensor *px = oxl_gguf_find_tensor(gold, name);
        cr_assert_not_null(px, "golden lacks %s", name);
        cr_assert_eq(px->ne[2], 3);
        oxl_mm_tile tile = {.w = (int32_t)px->ne[0],
                            .h = (int32_t)px->ne[1],
                            .grid_x = gx[ch],
                            .grid_y = gy[ch],
                            .n_tokens = n_tok[ch]};
        cr_assert_eq(oxl_clip_n_tokens(clip, tile.w, tile.h), n_tok[ch], "%s image %d: tokens", id, image);
        cr_assert_eq(gx[ch] * gy[ch], n_tok[ch]);
        tile.pixels = malloc(px->nbytes);
        memcpy(tile.pixels, px->data, px->nbytes);
        float *out = malloc((size_t)64 * n_tok[ch] * sizeof(float));
        s.image = image;
        s.n_checked = 0;
        int rc = oxl_clip_encode(clip, &tile, out, pool, &err);
        cr_assert_eq(rc, 0, "%s image %d: %s", id, image, err.msg);
        cr_assert_eq(s.bad[0], 0, "%s: %s", id, s.bad);
        cr_assert_eq(s.n_checked, n_layer_tensors >= 0 ? 1 + n_layer_tensors : 0,
                     "%s image %d: %d intermediate tensors checked", id, image, s.n_checked);

        snprintf(name, sizeof name, "image.%d.embd", image);
        const oxl_gguf_tensor *embd = oxl_gguf_find_tensor(gold, name);
        cr_assert_not_null(embd, "golden lacks %s", name);
        cr_assert(embd->ne[0] == 64 && embd->ne[1] == n_tok[ch]);
        double max_abs, max_ref;
        diff(embd, out, 64 * (int64_t)n_tok[ch], &max_abs, &max_ref);
        worst_abs = max_abs > worst_abs ? max_abs : worst_abs;
        worst_rel = max_abs / max_ref > worst_rel ? max_abs / max_ref : worst_rel;
        free(out);
        oxl_mm_tile_clear(&tile);
        image++;
    }
    cr_assert_eq(image, n_images);
    cr_log_info("%s: vit_inp max|d| %.3g, layers max|d|/max|ref| %.3g, embd max|d| %.3g, max|d|/max|ref| %.3g", id,
                s.vit_inp, s.layers, worst_abs, worst_rel);
    cr_expect_leq(s.vit_inp, 2e-6, "%s: vit_inp max|d| %g", id, s.vit_inp);
    cr_expect_leq(s.layers, 1e-4, "%s: block outputs max|d|/max|ref| %g", id, s.layers);
    cr_expect_leq(worst_rel, 1e-4, "%s: embd max|d| %g, max|d|/max|ref| %g", id, worst_abs, worst_rel);
    oxl_pool_free(pool);
    oxl_clip_free(clip);
    oxl_gguf_close(gold);
}

/* LLaVA-1.5: 1 image, pre_ln + 2 of 3 blocks run. */
Test(mm_clip, llava15_tower_matches_llama_cpp) { check_variant("llava15", 1, 3); }
/* LLaVA-NeXT: 6 tiles and the overview, pre_ln + 2 blocks (feature_layer [2]). */
Test(mm_clip, llava_next_tower_matches_llama_cpp) { check_variant("llava-next", 7, 3); }
/* Qwen2-VL: 1 image, 2 blocks (no pre_ln). */
Test(mm_clip, qwen2vl_tower_matches_llama_cpp) { check_variant("qwen2vl", 1, 2); }
/* Qwen2.5-VL: 1 image of 4 x 3 merged tokens in two windows (patch 16: 3-token windows); the golden has
 * no intermediate tensors, so the embeddings only. */
Test(mm_clip, qwen25vl_tower_matches_llama_cpp) { check_variant("qwen25vl", 1, -1); }
/* Gemma 3: 1 image; the golden holds the embeddings (the projector's output) only. */
Test(mm_clip, gemma3_tower_matches_llama_cpp) { check_variant("gemma3", 1, -1); }

Test(mm_clip, reports_what_the_chunking_needs) {
    oxl_error err = {0};
    oxl_clip *l = oxl_clip_load(MM "llava15.mmproj.gguf", &err);
    cr_assert_not_null(l, "%s", err.msg);
    oxl_clip *q = oxl_clip_load(MM "qwen2vl.mmproj.gguf", &err);
    cr_assert_not_null(q, "%s", err.msg);
    cr_assert_eq(oxl_clip_projector(l), OXL_CLIP_PROJ_MLP);
    cr_assert_str_eq(oxl_clip_projector_name(oxl_clip_projector(q)), "qwen2vl_merger");
    cr_assert_eq(oxl_clip_merge(l), 1);
    cr_assert_eq(oxl_clip_merge(q), 2);
    cr_assert_eq(oxl_clip_patch_size(q), 14);
    cr_assert_eq(oxl_clip_n_tokens(l, 42, 42), 9);
    cr_assert_eq(oxl_clip_n_tokens(q, 112, 84), 12);
    oxl_clip_free(l);
    oxl_clip_free(q);
}

/* A tile the graph cannot take is an error naming it, not a crash. */
Test(mm_clip, unfit_tiles_are_refused) {
    oxl_error err = {0};
    oxl_clip *l = oxl_clip_load(MM "llava15.mmproj.gguf", &err);
    cr_assert_not_null(l, "%s", err.msg);
    oxl_clip *q = oxl_clip_load(MM "qwen2vl.mmproj.gguf", &err);
    cr_assert_not_null(q, "%s", err.msg);
    oxl_pool *pool = oxl_pool_new(1, &err);
    float *px = calloc((size_t)56 * 42 * 3, sizeof(float));
    float out[64 * 16];
    oxl_mm_tile t = {.w = 56, .h = 42, .pixels = px, .n_tokens = 12};
    cr_assert_eq(oxl_clip_encode(l, &t, out, pool, &err), -1);
    cr_assert(strstr(err.msg, "square"), "%s", err.msg);
    t = (oxl_mm_tile){.w = 56, .h = 42, .pixels = px, .n_tokens = 6};
    cr_assert_eq(oxl_clip_encode(q, &t, out, pool, &err), -1);
    cr_assert(strstr(err.msg, "multiples of 28"), "%s", err.msg);
    t = (oxl_mm_tile){.w = 56, .h = 56, .pixels = px, .n_tokens = 16};
    cr_assert_eq(oxl_clip_encode(l, &t, out, pool, &err), -1);
    cr_assert(strstr(err.msg, "needs 17 positions"), "%s", err.msg);
    t = (oxl_mm_tile){.w = 42, .h = 42, .pixels = px, .n_tokens = 8};
    cr_assert_eq(oxl_clip_encode(l, &t, out, pool, &err), -1);
    cr_assert(strstr(err.msg, "makes 9 embeddings"), "%s", err.msg);
    free(px);
    oxl_pool_free(pool);
    oxl_clip_free(l);
    oxl_clip_free(q);
}

/* ---- F16 and Q8_0 weights -------------------------------------------------------------------- */

/* Writes golden/mm/<id>.mmproj.gguf with every matrix of the blocks and the projector (2-D tensors
 * named v.blk.* or mm.*) converted to type t to path. */
static void convert_mmproj(const char *id, oxl_type t, const char *path) {
    char src[512];
    snprintf(src, sizeof src, MM "%s.mmproj.gguf", id);
    oxl_error err = {0};
    oxl_gguf *g = oxl_gguf_open(src, &err);
    cr_assert_not_null(g, "%s", err.msg);
    oxl_gguf_writer *w = oxl_gguf_writer_new(&err);
    cr_assert_not_null(w, "%s", err.msg);
    cr_assert_eq(oxl_gguf_writer_copy_kvs(w, g, &err), 0, "%s", err.msg);
    const int64_t n = oxl_gguf_n_tensors(g);
    oxl_type *types = calloc((size_t)n, sizeof *types);
    for (int64_t i = 0; i < n; i++) {
        const oxl_gguf_tensor *gt = oxl_gguf_tensor_at(g, i);
        const bool matrix =
            gt->n_dims == 2 && (strncmp(gt->name, "v.blk.", 6) == 0 || strncmp(gt->name, "mm.", 3) == 0);
        types[i] = matrix ? t : OXL_TYPE_F32;
        cr_assert_eq(oxl_gguf_writer_add_tensor(w, gt->name, types[i], gt->n_dims, gt->ne, &err), 0, "%s", err.msg);
    }
    cr_assert_eq(oxl_gguf_writer_begin(w, path, &err), 0, "%s", err.msg);
    for (int64_t i = 0; i < n; i++) {
        const oxl_gguf_tensor *gt = oxl_gguf_tensor_at(g, i);
        const size_t nbytes = oxl_gguf_writer_tensor_nbytes(w, i);
        void *buf = malloc(nbytes);
        const int64_t rows = (int64_t)(gt->nbytes / ((size_t)gt->ne[0] * sizeof(float)));
        if (types[i] == OXL_TYPE_F32) {
            memcpy(buf, gt->data, nbytes);
        } else {
            cr_assert_eq(oxl_quantize_rows(types[i], gt->data, buf, rows, gt->ne[0], NULL, &err), 0, "%s", err.msg);
        }
        cr_assert_eq(oxl_gguf_writer_write_data(w, buf, nbytes, &err), 0, "%s", err.msg);
        free(buf);
    }
    cr_assert_eq(oxl_gguf_writer_finish(w, &err), 0, "%s", err.msg);
    oxl_gguf_writer_free(w);
    free(types);
    oxl_gguf_close(g);
}

/* max |Δ| / max |ref| of the embeddings of image 0 of <id> with the mmproj at path. */
static double embd_rel_diff(const char *id, const char *mmproj) {
    char path[512];
    oxl_error err = {0};
    snprintf(path, sizeof path, MM "%s.golden.gguf", id);
    oxl_gguf *gold = oxl_gguf_open(path, &err);
    cr_assert_not_null(gold, "%s", err.msg);
    oxl_clip *clip = oxl_clip_load(mmproj, &err);
    cr_assert_not_null(clip, "%s", err.msg);
    oxl_pool *pool = oxl_pool_new(2, &err);
    const oxl_gguf_tensor *px = oxl_gguf_find_tensor(gold, "image.0.pixels");
    const oxl_gguf_tensor *embd = oxl_gguf_find_tensor(gold, "image.0.embd");
    cr_assert(px && embd);
    oxl_mm_tile tile = {.w = (int32_t)px->ne[0], .h = (int32_t)px->ne[1], .n_tokens = (int32_t)embd->ne[1]};
    tile.pixels = malloc(px->nbytes);
    memcpy(tile.pixels, px->data, px->nbytes);
    float *out = malloc(embd->nbytes);
    cr_assert_eq(oxl_clip_encode(clip, &tile, out, pool, &err), 0, "%s", err.msg);
    double max_abs, max_ref;
    diff(embd, out, embd->ne[0] * embd->ne[1], &max_abs, &max_ref);
    free(out);
    oxl_mm_tile_clear(&tile);
    oxl_pool_free(pool);
    oxl_clip_free(clip);
    oxl_gguf_close(gold);
    return max_abs / max_ref;
}

/* F16 matrices (llava15, qwen2vl) and Q8_0 ones (qwen2vl: every row a multiple of 32) go through the
 * same graph and kernels: the embeddings stay near llama.cpp's F32 ones. F16 rounds each weight by up to
 * 2^-11 relative; Q8_0 by up to 1/254 of its block's largest, and its products also round the
 * activations to q8_0 (ggml's vec_dot_type). Measured max|Δ|/max|ref|: f16 5.3e-4 (llava15) and 1.3e-3
 * (qwen2vl), q8_0 1.9e-2; bounds 1e-2 and 5e-2. A misread row, block or scale moves the embeddings by
 * their whole range. */
Test(mm_clip, f16_and_q8_0_weights_stay_near_the_f32_golden) {
    char path[512];
    const struct {
        const char *id;
        oxl_type t;
        double bound;
    } cases[] = {
        {"llava15", OXL_TYPE_F16, 1e-2},
        {"qwen2vl", OXL_TYPE_F16, 1e-2},
        {"qwen2vl", OXL_TYPE_Q8_0, 5e-2},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        snprintf(path, sizeof path, "%s/mm_clip_%ld_%s_%d.gguf", P_tmpdir, (long)getpid(), cases[i].id,
                 (int)cases[i].t);
        convert_mmproj(cases[i].id, cases[i].t, path);
        const double rel = embd_rel_diff(cases[i].id, path);
        remove(path);
        cr_log_info("%s with %s matrices: embd max|d|/max|ref| %.3g", cases[i].id,
                    cases[i].t == OXL_TYPE_F16 ? "f16" : "q8_0", rel);
        cr_expect_leq(rel, cases[i].bound, "%s type %d: %g", cases[i].id, (int)cases[i].t, rel);
        cr_expect_gt(rel, 0.0, "%s type %d: the converted weights gave the f32 result", cases[i].id, (int)cases[i].t);
    }
}

/* ---- bad files: a golden mmproj patched in memory ---------------------------------------------- */

static unsigned char *read_all(const char *path, size_t *size) {
    FILE *f = fopen(path, "rb");
    cr_assert_not_null(f, "cannot open %s", path);
    fseek(f, 0, SEEK_END);
    *size = (size_t)ftell(f);
    fseek(f, 0, SEEK_SET);
    unsigned char *buf = malloc(*size);
    cr_assert_eq(fread(buf, 1, *size, f), *size);
    fclose(f);
    return buf;
}

/* The offset of GGUF string s (u64 length, bytes) in buf; it must occur once. */
static size_t find_str(const unsigned char *buf, size_t size, const char *s) {
    const uint64_t n = strlen(s);
    size_t at = SIZE_MAX;
    for (size_t i = 0; i + 8 + n <= size; i++) {
        if (memcmp(buf + i, &n, 8) == 0 && memcmp(buf + i + 8, s, n) == 0) {
            cr_assert_eq(at, SIZE_MAX, "string '%s' occurs twice", s);
            at = i;
        }
    }
    cr_assert_neq(at, SIZE_MAX, "string '%s' not in the file", s);
    return at;
}

typedef void (*patch_fn)(unsigned char *buf, size_t size);

/* Loads golden/mm/<file> after patch; the load must fail with a message containing want. */
static void expect_refused(const char *file, patch_fn patch, const char *want) {
    char path[512];
    snprintf(path, sizeof path, MM "%s", file);
    size_t size;
    unsigned char *buf = read_all(path, &size);
    patch(buf, size);
    oxl_error err = {0};
    oxl_gguf *g = oxl_gguf_open_memory(buf, size, file, &err);
    cr_assert_not_null(g, "%s", err.msg);
    oxl_gguf_take_buffer(g, buf);
    oxl_clip *c = oxl_clip_load_gguf(g, &err);
    cr_assert_null(c, "%s was accepted", file);
    cr_assert(strstr(err.msg, want), "message '%s' lacks '%s'", err.msg, want);
    cr_assert(strstr(err.msg, file), "message '%s' does not name the file", err.msg);
}

static void rename_block_count(unsigned char *b, size_t n) {
    b[find_str(b, n, "clip.vision.block_count") + 8 + 22] = 'X';
}
static void patch_size_as_i32(unsigned char *b, size_t n) {
    const size_t at = find_str(b, n, "clip.vision.patch_size") + 8 + strlen("clip.vision.patch_size");
    const uint32_t i32 = 5;
    memcpy(b + at, &i32, 4);
}
static void eps_as_u32(unsigned char *b, size_t n) {
    const char *k = "clip.vision.attention.layer_norm_epsilon";
    const uint32_t u32 = 4;
    memcpy(b + find_str(b, n, k) + 8 + strlen(k), &u32, 4);
}
static void use_gelu_as_u8(unsigned char *b, size_t n) {
    const uint32_t u8 = 0;
    memcpy(b + find_str(b, n, "clip.use_gelu") + 8 + strlen("clip.use_gelu"), &u8, 4);
}
static void projector_mlq(unsigned char *b, size_t n) {
    const size_t key = find_str(b, n, "clip.projector_type") + 8 + strlen("clip.projector_type");
    cr_assert_eq(memcmp(b + key + 4 + 8, "mlp", 3), 0);
    b[key + 4 + 8 + 2] = 'q';
}
static void arch_clap(unsigned char *b, size_t n) { b[find_str(b, n, "clip") + 8 + 2] = 'a'; }
/* mm.0.weight (48, 64) -> (64, 48): the same bytes, a row length that does not fit n_embd 48. */
static void mm0_transposed(unsigned char *b, size_t n) {
    const size_t at = find_str(b, n, "mm.0.weight") + 8 + strlen("mm.0.weight") + 4;
    const uint64_t ne[2] = {64, 48};
    memcpy(b + at, ne, sizeof ne);
}
/* v.blk.1.attn_k.weight -> ...attn_X...: a missing tensor. */
static void drop_attn_k(unsigned char *b, size_t n) { b[find_str(b, n, "v.blk.1.attn_k.weight") + 8 + 13] = 'X'; }
/* llava-next: clip.vision.feature_layer [2] -> [9] with block_count 2. */
static void feature_layer_9(unsigned char *b, size_t n) {
    const char *k = "clip.vision.feature_layer";
    const size_t at = find_str(b, n, k) + 8 + strlen(k) + 4 + 4 + 8;
    const int32_t v = 9;
    memcpy(b + at, &v, 4);
}
/* qwen2vl: the second temporal kernel missing. */
static void drop_kernel_1(unsigned char *b, size_t n) { b[find_str(b, n, "v.patch_embd.weight.1") + 8 + 20] = 'X'; }

Test(mm_clip_bad, missing_key_is_named) {
    expect_refused("llava15.mmproj.gguf", rename_block_count, "missing required key 'clip.vision.block_count'");
}
Test(mm_clip_bad, u32_key_of_type_int32_is_named) {
    expect_refused("llava15.mmproj.gguf", patch_size_as_i32,
                   "key 'clip.vision.patch_size' has type int32; expected uint32");
}
Test(mm_clip_bad, eps_of_type_uint32_is_named) {
    expect_refused("qwen2vl.mmproj.gguf", eps_as_u32,
                   "key 'clip.vision.attention.layer_norm_epsilon' has type uint32; expected float32");
}
Test(mm_clip_bad, flag_of_type_uint8_is_named) {
    expect_refused("llava15.mmproj.gguf", use_gelu_as_u8, "key 'clip.use_gelu' has type uint8; expected bool");
}
Test(mm_clip_bad, unknown_projector_lists_the_supported) {
    expect_refused("llava15.mmproj.gguf", projector_mlq,
                   "clip.projector_type 'mlq' is not supported (supported: mlp, qwen2vl_merger, qwen2.5vl_merger, "
                   "gemma3)");
}
Test(mm_clip_bad, other_architecture_is_named) {
    expect_refused("llava15.mmproj.gguf", arch_clap, "general.architecture is 'clap'");
}
Test(mm_clip_bad, tensor_shape_is_named) {
    expect_refused("llava15.mmproj.gguf", mm0_transposed,
                   "tensor 'mm.0.weight' has shape (64, 48, 1, 1); expected (48, 48)");
}
Test(mm_clip_bad, missing_tensor_is_named) {
    expect_refused("llava15.mmproj.gguf", drop_attn_k, "missing tensor 'v.blk.1.attn_k.weight'");
}
Test(mm_clip_bad, feature_layer_beyond_the_blocks_is_named) {
    expect_refused("llava-next.mmproj.gguf", feature_layer_9,
                   "key 'clip.vision.feature_layer'[0] = 9: more than block_count 2");
}
Test(mm_clip_bad, missing_second_kernel_is_named) {
    expect_refused("qwen2vl.mmproj.gguf", drop_kernel_1, "missing tensor 'v.patch_embd.weight.1'");
}

/* The tiny Qwen2.5-VL tower of the clip fuzzer's seeds (tests/fuzz/make_corpus.py: patch 2, RMSNorm,
 * gated SiLU FFN, n_wa_pattern 2; llama.cpp's windows of 112 pixels = 28 x 28 merged tokens). */
#define Q25 "../../tests/fuzz/corpus/clip/qwen25vl-f32.gguf"

static void set_u32_key(unsigned char *b, size_t n, const char *k, uint32_t v) {
    memcpy(b + find_str(b, n, k) + 8 + strlen(k) + 4, &v, 4);
}
static void patch_57(unsigned char *b, size_t n) { set_u32_key(b, n, "clip.vision.patch_size", 57); }
static void pattern_huge(unsigned char *b, size_t n) { set_u32_key(b, n, "clip.vision.n_wa_pattern", 5000); }
static void drop_pattern(unsigned char *b, size_t n) { b[find_str(b, n, "clip.vision.n_wa_pattern") + 8 + 12] = 'X'; }

Test(mm_clip_bad, window_without_a_merged_token_is_named) {
    expect_refused(Q25, patch_57,
                   "clip.vision.patch_size 57: qwen2.5vl_merger's 112-pixel attention window holds no merged token");
}
Test(mm_clip_bad, window_pattern_beyond_the_bound_is_named) {
    expect_refused(Q25, pattern_huge, "key 'clip.vision.n_wa_pattern' = 5000: must be at most 4096");
}
Test(mm_clip_bad, missing_window_pattern_is_named) {
    expect_refused(Q25, drop_pattern, "missing required key 'clip.vision.n_wa_pattern'");
}

/* Encodes a w x h tile of fixed pixels with the Q25 tower, n_wa_pattern set to pattern. */
static void encode_q25(uint32_t pattern, int32_t w, int32_t h, float *out, oxl_pool *pool) {
    size_t size;
    unsigned char *buf = read_all(MM Q25, &size);
    set_u32_key(buf, size, "clip.vision.n_wa_pattern", pattern);
    oxl_error err = {0};
    oxl_gguf *g = oxl_gguf_open_memory(buf, size, "q25", &err);
    cr_assert_not_null(g, "%s", err.msg);
    oxl_gguf_take_buffer(g, buf);
    oxl_clip *c = oxl_clip_load_gguf(g, &err);
    cr_assert_not_null(c, "%s", err.msg);
    cr_assert_eq(oxl_clip_projector(c), OXL_CLIP_PROJ_QWEN25VL);
    cr_assert_str_eq(oxl_clip_projector_name(oxl_clip_projector(c)), "qwen2.5vl_merger");
    cr_assert_eq(oxl_clip_merge(c), 2);
    float *px = malloc((size_t)w * h * 3 * sizeof(float));
    for (int i = 0; i < w * h * 3; i++) {
        px[i] = (float)((i * 37) % 19) / 9.0f - 1.0f;
    }
    oxl_mm_tile t = {.w = w, .h = h, .pixels = px, .n_tokens = oxl_clip_n_tokens(c, w, h)};
    cr_assert_eq(t.n_tokens, (w / 4) * (h / 4));
    cr_assert_eq(oxl_clip_encode(c, &t, out, pool, &err), 0, "%dx%d: %s", w, h, err.msg);
    for (int64_t i = 0; i < (int64_t)oxl_clip_n_embd_out(c) * t.n_tokens; i++) {
        cr_assert(isfinite(out[i]), "%dx%d: value %lld", w, h, (long long)i);
    }
    free(px);
    oxl_clip_free(c);
}

/* The Qwen2.5-VL tower encodes with and without windows: a tile within one window (112 x 8 pixels,
 * 28 x 2 merged tokens) gives the embeddings of full attention (one window holds every key, in raster
 * order), a tile of two windows (120 x 8 pixels, 30 x 2 merged tokens: 28 + 2 columns) does not. */
Test(mm_clip, qwen25vl_tower_encodes_windows) {
    oxl_error err = {0};
    oxl_pool *pool = oxl_pool_new(2, &err);
    cr_assert_not_null(pool, "%s", err.msg);
    const size_t n_one = (size_t)32 * 28 * 2, n_two = (size_t)32 * 30 * 2;
    float *a = malloc(n_two * sizeof(float)), *b = malloc(n_two * sizeof(float));
    encode_q25(2, 112, 8, a, pool);
    encode_q25(0, 112, 8, b, pool);
    cr_assert(memcmp(a, b, n_one * sizeof(float)) == 0, "one window differs from full attention");
    encode_q25(2, 120, 8, a, pool);
    encode_q25(0, 120, 8, b, pool);
    cr_assert(memcmp(a, b, n_two * sizeof(float)) != 0, "two windows equal full attention");
    free(a);
    free(b);
    oxl_pool_free(pool);
}

/* Gemma 3's pooling (oxl_mm_avg_pool, ggml_pool_2d AVG with kernel = stride = 2 on a 4x4 patch grid):
 * patch (py, px) holds 10 py + px in dimension 0 and 100 more in dimension 1, so block (by, bx)
 * averages 10 (2 by) + 2 bx + {0, 1, 10, 11}: 5.5, 7.5, 25.5, 27.5 (+100), tokens in raster order
 * of the blocks. */
Test(mm_pool, hand_computed_averages) {
    float x[2 * 16], y[2 * 4];
    for (int py = 0; py < 4; py++) {
        for (int px = 0; px < 4; px++) {
            x[(py * 4 + px) * 2] = (float)(10 * py + px);
            x[(py * 4 + px) * 2 + 1] = (float)(10 * py + px + 100);
        }
    }
    oxl_mm_avg_pool(x, 2, 4, 2, y);
    const float want[8] = {5.5f, 105.5f, 7.5f, 107.5f, 25.5f, 125.5f, 27.5f, 127.5f};
    for (int i = 0; i < 8; i++) {
        cr_expect_eq(y[i], want[i], "token %d dim %d: %g, want %g", i / 2, i % 2, (double)y[i], (double)want[i]);
    }
}

/* The block's sum runs in ggml's order, a float accumulator over kernel rows then columns: for the
 * block {1e8, 1; -1e8, 1} that is ((1e8 + 1) + -1e8) + 1 = 1 (1e8 + 1 rounds to 1e8), so 0.25; a
 * column-first sum would give 0.5, a double sum 0.5. */
Test(mm_pool, float_sum_in_row_major_order) {
    const float x[4] = {1e8f, 1.0f, -1e8f, 1.0f};
    float y = -1.0f;
    oxl_mm_avg_pool(x, 1, 2, 2, &y);
    cr_expect_eq(y, 0.25f, "%.9g", (double)y);
}
