/* The mmproj vision tower and projectors (clip.h), as llama.cpp's tools/mtmd computes them on the CPU
 * backend with flash attention off:
 *
 *   x    = conv_p(pixels)                    patch kernels, fp16 im2col (ggml_conv_2d); qwen: two, summed
 *   mlp:   x = [x; class] + pos[0..n-1]       class embedding appended LAST, then learned positions
 *          x = LN_pre(x)
 *   qwen:  rows in 2x2-merge order; qwen2.5 with windows: merged tokens then in window order
 *   gemma3: x = x + bias + pos[0..n-1]       SigLIP: patch bias, learned positions, no class embedding
 *   block: x += o(attn(LN1(x)))              q/k/v/o with biases, softmax(q k^T / sqrt(hd)); qwen: 2D RoPE;
 *                                            qwen2.5 windowed blocks: keys of the row's window only
 *          x += down(act(up(LN2(x))))        act: quick-GELU, GELU or SiLU (clip.use_gelu / use_silu);
 *                                            with ffn_gate: down(act(gate(x)) * up(x))
 *   norms: LayerNorm; qwen2.5 RMSNorm (weight, optional bias)
 *
 * Numerics follow ggml's CPU backend as the goldens (golden/mm/) show it: the patch convolution on fp16
 * pixels and weights, GELU and quick-GELU through fp16 tables, products through the kernels (tinyBLAS's
 * order where ggml's AVX-512 build takes it), LayerNorm's variance in AVX-512 chunks, RoPE and the GELU
 * table with fused multiply-adds; the three goldens come out bit for bit.
 *   mlp:   features = concat(feature layers) or x;  out = mm2(gelu(mm0(features[1..n-1])))
 *   qwen:  x = LN_post(x);  out = mm2(gelu(mm0(x viewed as [4 n_embd, n/4]))), back in raster order
 *   gemma3: x = LN_post(x);  x = avg_pool(x as a patch grid, k = stride = n_merge)
 *          out = proj^T (rms(x) * soft_emb_norm)
 *
 * Window attention equals llama.cpp's softmax over all n keys with a -FLT_MAX mask without building the
 * n x n mask: a row's keys run over its window widened to 64-aligned bounds (the masked keys inside
 * that range set to -FLT_MAX, whose exponentials are exactly 0), so the softmax's groups of 16 and the
 * products' lanes and tails fall on the same keys as over the whole row, and the keys outside only add
 * exact zeros there.
 */
#include "clip.h"

#include "act.h"
#include "errors.h"
#include "kernels.h"
#include "matmul.h"
#include "norm.h"
#include "oxl_fp16.h"

#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- the model ------------------------------------------------------------------------------ */

typedef enum clip_act { CLIP_ACT_GELU_QUICK, CLIP_ACT_GELU, CLIP_ACT_SILU } clip_act;

typedef struct clip_layer {
    oxl_tensor ln1_w, ln1_b;   /* (n_embd) */
    oxl_tensor q_w, k_w, v_w;  /* (n_embd, n_head * head_dim) */
    oxl_tensor q_b, k_b, v_b;  /* (n_head * head_dim), optional */
    oxl_tensor o_w;            /* (n_head * head_dim, n_embd) */
    oxl_tensor o_b;            /* (n_embd), optional */
    oxl_tensor ln2_w, ln2_b;   /* (n_embd) */
    oxl_tensor gate_w, gate_b; /* (n_embd, n_ff), (n_ff): optional; act(gate) * up when present */
    oxl_tensor up_w, up_b;     /* (n_embd, n_ff), (n_ff): after llama.cpp's up/down swap */
    oxl_tensor down_w, down_b; /* (n_ff, n_embd), (n_embd) */
} clip_layer;

struct oxl_clip {
    oxl_gguf *g;
    const char *path;
    oxl_clip_proj proj;
    int32_t n_embd, n_ff, n_layer, n_head, head_dim, patch;
    int32_t n_run; /* blocks the graph runs: mlp feature_layer max or block_count - 1; qwen all */
    bool *feature; /* mlp: (n_run + 1) flags: hidden state i (input of block i; n_run = last output)
                      is a projected feature (clip.vision.feature_layer) */
    int32_t n_feature;
    float eps;
    bool rms;             /* qwen2.5: RMSNorm for every norm */
    int32_t n_wa_pattern; /* qwen2.5: blocks with (il + 1) % n_wa_pattern == 0 attend fully; 0: no windows */
    int32_t grid_window;  /* qwen2.5: window side in merged tokens (112 / patch / 2) */
    clip_act act;
    int n_kernels;         /* patch kernels: 1, qwen2vl 2 */
    oxl_tensor patch_w[2]; /* (p * p * 3, n_embd): v.patch_embd.weight[.1] (p, p, 3, n_embd) as rows */
    oxl_tensor patch_b;    /* (n_embd) v.patch_embd.bias, optional */
    oxl_tensor class_embd; /* (n_embd) mlp */
    oxl_tensor pos_embd;   /* (n_embd, n_pos_max) mlp; gemma3 (n_embd, n_patches), optional */
    oxl_tensor pre_ln_w, pre_ln_b, post_ln_w, post_ln_b; /* (n_embd), optional */
    clip_layer *layers;                                  /* (n_layer) */
    oxl_tensor mm0_w, mm0_b; /* (n_in, n_mid), (n_mid): n_in = n_embd * features (mlp) or 4 n_embd (qwen) */
    oxl_tensor mm2_w, mm2_b; /* (n_mid, n_out), (n_out) */
    oxl_tensor soft_norm_w;  /* gemma3: (n_embd) mm.soft_emb_norm.weight */
    oxl_tensor inp_proj;     /* gemma3: (n_embd, n_out), mm.input_projection.weight (n_out, n_embd)
                                transposed into inp_proj_data, as ggml_cont(ggml_transpose(w)) */
    void *inp_proj_data;
    int32_t n_merge; /* patches per side merged into one token: mlp 1, qwen 2, gemma3 scale_factor */
    int32_t n_out;
    oxl_clip_probe_fn probe;
    void *probe_user;
};

static const struct {
    const char *name;
    oxl_clip_proj proj;
} clip_projs[] = {
    {"mlp", OXL_CLIP_PROJ_MLP},
    {"qwen2vl_merger", OXL_CLIP_PROJ_QWEN2VL},
    {"qwen2.5vl_merger", OXL_CLIP_PROJ_QWEN25VL},
    {"gemma3", OXL_CLIP_PROJ_GEMMA3},
};
#define CLIP_N_PROJS (sizeof clip_projs / sizeof clip_projs[0])

const char *oxl_clip_projector_name(oxl_clip_proj proj) {
    for (size_t i = 0; i < CLIP_N_PROJS; i++) {
        if (clip_projs[i].proj == proj) {
            return clip_projs[i].name;
        }
    }
    return "?";
}

/* ---- keys, with llama.cpp's type rules (clip.cpp get_u32 / get_f32 / get_bool / get_arr_int) ------ */

static int key_find(const oxl_clip *c, const char *key, oxl_gguf_vtype want, bool required, int64_t *idx,
                    oxl_error *err) {
    *idx = oxl_gguf_find_key(c->g, key);
    if (*idx < 0) {
        return required ? oxl_err_set(err, "%s: missing required key '%s'", c->path, key) : 0;
    }
    const oxl_gguf_vtype t = oxl_gguf_kv_type(c->g, *idx);
    if (t != want) {
        return oxl_err_set(err, "%s: key '%s' has type %s; expected %s", c->path, key, oxl_gguf_vtype_name(t),
                           oxl_gguf_vtype_name(want));
    }
    return 0;
}

/* A uint32 key in lo..INT32_MAX; absent and not required leaves out untouched. */
static int key_u32(const oxl_clip *c, const char *key, int32_t *out, bool required, int32_t lo, oxl_error *err) {
    int64_t i;
    if (key_find(c, key, OXL_GGUF_UINT32, required, &i, err)) {
        return -1;
    }
    if (i < 0) {
        return 0;
    }
    uint64_t v = 0;
    oxl_gguf_kv_uint(c->g, i, &v);
    if (v < (uint64_t)lo || v > INT32_MAX) {
        return oxl_err_set(err, "%s: key '%s' = %llu: must be in %d..%d", c->path, key, (unsigned long long)v, lo,
                           INT32_MAX);
    }
    *out = (int32_t)v;
    return 0;
}

static int key_f32(const oxl_clip *c, const char *key, float *out, oxl_error *err) {
    int64_t i;
    if (key_find(c, key, OXL_GGUF_FLOAT32, true, &i, err)) {
        return -1;
    }
    double v = 0;
    oxl_gguf_kv_float(c->g, i, &v);
    if (!isfinite(v) || v < 0) {
        return oxl_err_set(err, "%s: key '%s' = %g: must be finite and non-negative", c->path, key, v);
    }
    *out = (float)v;
    return 0;
}

/* A bool key; absent reads as false. */
static int key_bool(const oxl_clip *c, const char *key, bool *out, oxl_error *err) {
    int64_t i;
    *out = false;
    if (key_find(c, key, OXL_GGUF_BOOL, false, &i, err)) {
        return -1;
    }
    if (i >= 0) {
        oxl_gguf_kv_bool(c->g, i, out);
    }
    return 0;
}

/* clip.vision.feature_layer (optional, int32 array; a set in llama.cpp): n_run = its largest value, or
 * block_count - 1 when it is absent or has no non-negative value. */
static int read_feature_layers(oxl_clip *c, oxl_error *err) {
    const char *key = "clip.vision.feature_layer";
    int64_t i;
    if (key_find(c, key, OXL_GGUF_ARRAY, false, &i, err)) {
        return -1;
    }
    int32_t deepest = -1;
    uint64_t n = 0;
    const char *data = NULL;
    if (i >= 0) {
        if (oxl_gguf_arr_type(c->g, i) != OXL_GGUF_INT32) {
            return oxl_err_set(err, "%s: key '%s' is an array of %s; expected int32", c->path, key,
                               oxl_gguf_vtype_name(oxl_gguf_arr_type(c->g, i)));
        }
        n = oxl_gguf_arr_n(c->g, i);
        data = oxl_gguf_arr_data(c->g, i);
        for (uint64_t j = 0; j < n; j++) {
            int32_t v;
            memcpy(&v, data + j * 4, 4);
            if (v > c->n_layer) {
                return oxl_err_set(err, "%s: key '%s'[%llu] = %d: more than block_count %d", c->path, key,
                                   (unsigned long long)j, v, c->n_layer);
            }
            deepest = v > deepest ? v : deepest;
        }
    }
    c->n_run = deepest < 0 ? c->n_layer - 1 : deepest;
    c->feature = calloc((size_t)c->n_run + 1, sizeof *c->feature);
    if (!c->feature) {
        return oxl_err_set(err, "%s: out of memory", c->path);
    }
    for (uint64_t j = 0; j < n; j++) {
        int32_t v;
        memcpy(&v, data + j * 4, 4);
        if (v >= 0 && !c->feature[v]) {
            c->feature[v] = true;
            c->n_feature++;
        }
    }
    return 0;
}

/* ---- tensors -------------------------------------------------------------------------------- */

/* Binds the tensor `name` as (ne0) when ne1 == 0 (F32 only) or (ne0, ne1) (a type with kernels).
 * Absent: an error when required, else t stays unbound (data NULL). */
static int bind(const oxl_clip *c, oxl_tensor *t, const char *name, int64_t ne0, int64_t ne1, bool required,
                oxl_error *err) {
    memset(t, 0, sizeof *t);
    const oxl_gguf_tensor *gt = oxl_gguf_find_tensor(c->g, name);
    if (!gt) {
        return required ? oxl_err_set(err, "%s: missing tensor '%s'", c->path, name) : 0;
    }
    const int64_t want1 = ne1 ? ne1 : 1;
    if (gt->ne[0] != ne0 || gt->ne[1] != want1 || gt->ne[2] != 1 || gt->ne[3] != 1) {
        char want[64];
        if (ne1) {
            snprintf(want, sizeof want, "(%lld, %lld)", (long long)ne0, (long long)ne1);
        } else {
            snprintf(want, sizeof want, "(%lld)", (long long)ne0);
        }
        return oxl_err_set(err, "%s: tensor '%s' has shape (%lld, %lld, %lld, %lld); expected %s", c->path, name,
                           (long long)gt->ne[0], (long long)gt->ne[1], (long long)gt->ne[2], (long long)gt->ne[3],
                           want);
    }
    const oxl_type_traits *tt = oxl_type_traits_get(gt->type);
    if (ne1 == 0 && gt->type != OXL_TYPE_F32) {
        return oxl_err_set(err, "%s: tensor '%s' has type %s; 1-D tensors must be f32", c->path, name,
                           tt ? tt->name : "?");
    }
    const oxl_kernels *k = oxl_kernels_get();
    if (gt->type != OXL_TYPE_F32 && (!k->vec_dot[gt->type] || !k->dequant[gt->type])) {
        return oxl_err_set(err, "%s: tensor '%s' has type %s, which oxillama cannot compute with yet", c->path, name,
                           tt ? tt->name : "?");
    }
    t->name = gt->name;
    t->type = (oxl_type)gt->type;
    t->ne[0] = ne0;
    t->ne[1] = want1;
    t->row_size = oxl_row_size(t->type, ne0);
    t->data = gt->data;
    return 0;
}

/* A patch kernel (p, p, 3, n_embd), bound as n_embd rows of p * p * 3 (ggml_conv_2d's reshape). */
static int bind_patch(const oxl_clip *c, oxl_tensor *t, const char *name, oxl_error *err) {
    const oxl_gguf_tensor *gt = oxl_gguf_find_tensor(c->g, name);
    const int64_t p = c->patch;
    if (!gt) {
        return oxl_err_set(err, "%s: missing tensor '%s'", c->path, name);
    }
    if (gt->ne[0] != p || gt->ne[1] != p || gt->ne[2] != 3 || gt->ne[3] != c->n_embd) {
        return oxl_err_set(err, "%s: tensor '%s' has shape (%lld, %lld, %lld, %lld); expected (%lld, %lld, 3, %d)",
                           c->path, name, (long long)gt->ne[0], (long long)gt->ne[1], (long long)gt->ne[2],
                           (long long)gt->ne[3], (long long)p, (long long)p, c->n_embd);
    }
    const oxl_type_traits *tt = oxl_type_traits_get(gt->type);
    const oxl_kernels *k = oxl_kernels_get();
    if (gt->type != OXL_TYPE_F32 && (!k->dequant[gt->type] || (p * p * 3) % tt->blck_size != 0)) {
        return oxl_err_set(err, "%s: tensor '%s' has type %s, which a patch kernel of %lld values cannot use", c->path,
                           name, tt ? tt->name : "?", (long long)(p * p * 3));
    }
    memset(t, 0, sizeof *t);
    t->name = gt->name;
    t->type = (oxl_type)gt->type;
    t->ne[0] = p * p * 3;
    t->ne[1] = c->n_embd;
    t->row_size = oxl_row_size(t->type, t->ne[0]);
    t->data = gt->data;
    return 0;
}

static int bind_layer(const oxl_clip *c, clip_layer *l, int il, oxl_error *err) {
    const int64_t E = c->n_embd, HD = (int64_t)c->n_head * c->head_dim, F = c->n_ff;
    char name[96];
#define BLK(field, suffix, ne0, ne1, req)                                                                              \
    do {                                                                                                               \
        snprintf(name, sizeof name, "v.blk.%d.%s", il, suffix);                                                        \
        if (bind(c, &l->field, name, ne0, ne1, req, err)) {                                                            \
            return -1;                                                                                                 \
        }                                                                                                              \
    } while (0)
    BLK(ln1_w, "ln1.weight", E, 0, true);
    BLK(ln1_b, "ln1.bias", E, 0, false);
    BLK(q_w, "attn_q.weight", E, HD, true);
    BLK(q_b, "attn_q.bias", HD, 0, false);
    BLK(k_w, "attn_k.weight", E, HD, true);
    BLK(k_b, "attn_k.bias", HD, 0, false);
    BLK(v_w, "attn_v.weight", E, HD, true);
    BLK(v_b, "attn_v.bias", HD, 0, false);
    BLK(o_w, "attn_out.weight", HD, E, true);
    BLK(o_b, "attn_out.bias", E, 0, false);
    BLK(ln2_w, "ln2.weight", E, 0, true);
    BLK(ln2_b, "ln2.bias", E, 0, false);
    BLK(gate_w, "ffn_gate.weight", E, F, false);
    BLK(gate_b, "ffn_gate.bias", F, 0, false);
    /* Legacy LLaVA files name CLIP's fc1 ffn_down and fc2 ffn_up; llama.cpp swaps them back when the
     * tensor named down takes n_embd inputs (load_tensors, is_ffn_swapped). */
    snprintf(name, sizeof name, "v.blk.%d.ffn_down.weight", il);
    const oxl_gguf_tensor *down = oxl_gguf_find_tensor(c->g, name);
    const bool swapped = down && down->ne[0] == E;
    const char *up = swapped ? "ffn_down" : "ffn_up", *dn = swapped ? "ffn_up" : "ffn_down";
    char suffix[32];
    snprintf(suffix, sizeof suffix, "%s.weight", up);
    BLK(up_w, suffix, E, F, true);
    snprintf(suffix, sizeof suffix, "%s.bias", up);
    BLK(up_b, suffix, F, 0, false);
    snprintf(suffix, sizeof suffix, "%s.weight", dn);
    BLK(down_w, suffix, F, E, true);
    snprintf(suffix, sizeof suffix, "%s.bias", dn);
    BLK(down_b, suffix, E, 0, false);
#undef BLK
    return 0;
}

/* ---- loading -------------------------------------------------------------------------------- */

/* Largest accepted clip.vision.n_wa_pattern: far above real files (Qwen2.5-VL: 8). */
#define CLIP_MAX_WA_PATTERN 4096
/* The attention window of Qwen2.5-VL in pixels: clip.cpp's set_input falls back to 112 when
 * hparams.attn_window_size is 0, and load_hparams never reads clip.vision.window_size for
 * PROJECTOR_TYPE_QWEN25VL, so 112 is what llama.cpp uses whatever the file says. */
#define CLIP_QWEN25_WINDOW 112

/* Qwen2.5-VL's window attention (clip.cpp load_hparams, set_input): clip.vision.n_wa_pattern required
 * (0: no window attention); windows of 112 pixels (clip.vision.window_size is not read, as in
 * llama.cpp). The window must hold at least one merged token (llama.cpp's window loop never ends
 * otherwise). */
static int read_windows(oxl_clip *c, oxl_error *err) {
    const char *kp = "clip.vision.n_wa_pattern";
    c->n_wa_pattern = 0;
    if (key_u32(c, kp, &c->n_wa_pattern, true, 0, err)) {
        return -1;
    }
    if (c->n_wa_pattern > CLIP_MAX_WA_PATTERN) {
        return oxl_err_set(err, "%s: key '%s' = %d: must be at most %d", c->path, kp, c->n_wa_pattern,
                           CLIP_MAX_WA_PATTERN);
    }
    c->grid_window = CLIP_QWEN25_WINDOW / c->patch / 2;
    if (c->n_wa_pattern > 0 && c->grid_window < 1) {
        return oxl_err_set(err,
                           "%s: clip.vision.patch_size %d: qwen2.5vl_merger's %d-pixel attention window holds no "
                           "merged token of 2 x 2 patches",
                           c->path, c->patch, CLIP_QWEN25_WINDOW);
    }
    return 0;
}

/* Gemma 3's projector: mm.soft_emb_norm.weight (n_embd) and mm.input_projection.weight (n_out,
 * n_embd), which the graph multiplies as ggml_cont(ggml_transpose(w)): a copy (n_embd, n_out) of
 * the same type, so the product rounds as llama.cpp's (F32, F16 and BF16: a block-quantized matrix
 * cannot be transposed element by element, and ggml refuses it as well). */
static int load_gemma3_proj(oxl_clip *c, oxl_error *err) {
    const int64_t E = c->n_embd;
    static const char name[] = "mm.input_projection.weight";
    if (bind(c, &c->soft_norm_w, "mm.soft_emb_norm.weight", E, 0, true, err)) {
        return -1;
    }
    const oxl_gguf_tensor *gt = oxl_gguf_find_tensor(c->g, name);
    if (!gt) {
        return oxl_err_set(err, "%s: missing tensor '%s'", c->path, name);
    }
    const int64_t n_out = gt->ne[0];
    if (n_out < 1 || n_out > INT32_MAX || gt->ne[1] != E || gt->ne[2] != 1 || gt->ne[3] != 1) {
        return oxl_err_set(err, "%s: tensor '%s' has shape (%lld, %lld, %lld, %lld); expected (n_out, %lld)", c->path,
                           name, (long long)gt->ne[0], (long long)gt->ne[1], (long long)gt->ne[2], (long long)gt->ne[3],
                           (long long)E);
    }
    const oxl_type_traits *tt = oxl_type_traits_get(gt->type);
    size_t es;
    switch (gt->type) {
    case OXL_TYPE_F32: es = 4; break;
    case OXL_TYPE_F16:
    case OXL_TYPE_BF16: es = 2; break;
    default:
        return oxl_err_set(err, "%s: tensor '%s' has type %s; the transposed projection takes f32, f16 or bf16",
                           c->path, name, tt ? tt->name : "?");
    }
    const oxl_kernels *k = oxl_kernels_get();
    if (!k->vec_dot[gt->type]) {
        return oxl_err_set(err, "%s: tensor '%s' has type %s, which oxillama cannot compute with yet", c->path, name,
                           tt ? tt->name : "?");
    }
    char *dst = malloc((size_t)(E * n_out) * es);
    if (!dst) {
        return oxl_err_set(err, "%s: out of memory for '%s'", c->path, name);
    }
    const char *src = gt->data;
    for (int64_t o = 0; o < n_out; o++) {
        for (int64_t i = 0; i < E; i++) {
            memcpy(dst + (size_t)(o * E + i) * es, src + (size_t)(i * n_out + o) * es, es);
        }
    }
    c->inp_proj_data = dst;
    c->inp_proj = (oxl_tensor){.name = gt->name, .type = (oxl_type)gt->type, .ne = {E, n_out}, .data = dst};
    c->inp_proj.row_size = oxl_row_size(c->inp_proj.type, E);
    c->n_out = (int32_t)n_out;
    return 0;
}

static int load(oxl_clip *c, oxl_error *err) {
    const char *arch = NULL;
    int64_t i;
    if (key_find(c, "general.architecture", OXL_GGUF_STRING, true, &i, err)) {
        return -1;
    }
    arch = oxl_gguf_kv_str(c->g, i, NULL);
    if (strcmp(arch, "clip") != 0) {
        return oxl_err_set(err, "%s: general.architecture is '%s'; an mmproj file has 'clip'", c->path, arch);
    }
    bool has_vision = false;
    if (key_bool(c, "clip.has_vision_encoder", &has_vision, err)) {
        return -1;
    }
    if (!has_vision) {
        return oxl_err_set(err, "%s: clip.has_vision_encoder is absent or false: the file has no vision encoder",
                           c->path);
    }
    if (key_find(c, "clip.projector_type", OXL_GGUF_STRING, true, &i, err)) {
        return -1;
    }
    const char *proj = oxl_gguf_kv_str(c->g, i, NULL);
    size_t p = 0;
    while (p < CLIP_N_PROJS && strcmp(clip_projs[p].name, proj) != 0) {
        p++;
    }
    if (p == CLIP_N_PROJS) {
        char list[128] = "";
        for (size_t j = 0; j < CLIP_N_PROJS; j++) {
            snprintf(list + strlen(list), sizeof list - strlen(list), "%s%s", j ? ", " : "", clip_projs[j].name);
        }
        return oxl_err_set(err, "%s: clip.projector_type '%s' is not supported (supported: %s)", c->path, proj, list);
    }
    c->proj = clip_projs[p].proj;

    if (key_u32(c, "clip.vision.embedding_length", &c->n_embd, true, 1, err) ||
        key_u32(c, "clip.vision.feed_forward_length", &c->n_ff, true, 1, err) ||
        key_u32(c, "clip.vision.block_count", &c->n_layer, true, 1, err) ||
        key_u32(c, "clip.vision.attention.head_count", &c->n_head, true, 1, err) ||
        key_u32(c, "clip.vision.patch_size", &c->patch, true, 1, err) ||
        key_f32(c, "clip.vision.attention.layer_norm_epsilon", &c->eps, err)) {
        return -1;
    }
    c->head_dim = 0;
    if (key_u32(c, "clip.vision.attention.head_dim", &c->head_dim, false, 1, err)) {
        return -1;
    }
    if (c->head_dim == 0) {
        if (c->n_embd % c->n_head != 0) {
            return oxl_err_set(err, "%s: clip.vision.embedding_length %d is not a multiple of head_count %d", c->path,
                               c->n_embd, c->n_head);
        }
        c->head_dim = c->n_embd / c->n_head;
    }
    const bool qwen = c->proj == OXL_CLIP_PROJ_QWEN2VL || c->proj == OXL_CLIP_PROJ_QWEN25VL;
    if (qwen && (c->head_dim % 4 != 0 || c->head_dim > 512)) {
        return oxl_err_set(err, "%s: head_dim %d: the 2D vision RoPE of %s needs a multiple of 4 up to 512", c->path,
                           c->head_dim, oxl_clip_projector_name(c->proj));
    }
    if (c->proj == OXL_CLIP_PROJ_QWEN25VL && read_windows(c, err)) {
        return -1;
    }
    if ((int64_t)c->patch * c->patch * 3 > (int64_t)oxl_gguf_file_size(c->g)) {
        return oxl_err_set(err, "%s: clip.vision.patch_size %d is larger than the file could hold", c->path, c->patch);
    }
    if (c->n_layer > oxl_gguf_n_tensors(c->g)) {
        return oxl_err_set(err, "%s: clip.vision.block_count %d: the file has only %lld tensors", c->path, c->n_layer,
                           (long long)oxl_gguf_n_tensors(c->g));
    }
    bool use_gelu = false, use_silu = false;
    if (key_bool(c, "clip.use_gelu", &use_gelu, err) || key_bool(c, "clip.use_silu", &use_silu, err)) {
        return -1;
    }
    c->act = use_gelu ? CLIP_ACT_GELU : use_silu ? CLIP_ACT_SILU : CLIP_ACT_GELU_QUICK;
    c->rms = c->proj == OXL_CLIP_PROJ_QWEN25VL;

    if (c->proj == OXL_CLIP_PROJ_MLP) {
        if (read_feature_layers(c, err)) {
            return -1;
        }
    } else {
        c->n_run = c->n_layer;
    }
    c->n_merge = qwen ? 2 : 1;
    if (c->proj == OXL_CLIP_PROJ_GEMMA3) {
        /* hparams.n_merge = 4, then the optional clip.vision.projector.scale_factor */
        c->n_merge = 4;
        if (key_u32(c, "clip.vision.projector.scale_factor", &c->n_merge, false, 1, err)) {
            return -1;
        }
        if (c->n_merge > 64) {
            return oxl_err_set(err, "%s: key 'clip.vision.projector.scale_factor' = %d: must be in 1..64", c->path,
                               c->n_merge);
        }
    }

    const int64_t E = c->n_embd;
    c->n_kernels = qwen ? 2 : 1;
    if (bind_patch(c, &c->patch_w[0], "v.patch_embd.weight", err) ||
        (c->n_kernels == 2 && bind_patch(c, &c->patch_w[1], "v.patch_embd.weight.1", err))) {
        return -1;
    }
    /* the patch bias: llama.cpp adds it whenever the file has it (build_inp) */
    if (bind(c, &c->patch_b, "v.patch_embd.bias", E, 0, false, err)) {
        return -1;
    }
    if (c->proj == OXL_CLIP_PROJ_MLP && bind(c, &c->class_embd, "v.class_embd", E, 0, true, err)) {
        return -1;
    }
    if (c->proj != OXL_CLIP_PROJ_QWEN2VL) {
        /* learned positions: required by the mlp graph, added when present by SigLIP's build_vit */
        const oxl_gguf_tensor *pe = oxl_gguf_find_tensor(c->g, "v.position_embd.weight");
        if (!pe && c->proj == OXL_CLIP_PROJ_MLP) {
            return oxl_err_set(err, "%s: missing tensor 'v.position_embd.weight'", c->path);
        }
        if (pe && bind(c, &c->pos_embd, "v.position_embd.weight", E, pe->ne[1], true, err)) {
            return -1;
        }
    }
    if (bind(c, &c->pre_ln_w, "v.pre_ln.weight", E, 0, false, err) ||
        bind(c, &c->pre_ln_b, "v.pre_ln.bias", E, 0, false, err) ||
        bind(c, &c->post_ln_w, "v.post_ln.weight", E, 0, false, err) ||
        bind(c, &c->post_ln_b, "v.post_ln.bias", E, 0, false, err)) {
        return -1;
    }
    c->layers = calloc((size_t)c->n_layer, sizeof *c->layers);
    if (!c->layers) {
        return oxl_err_set(err, "%s: out of memory", c->path);
    }
    for (int il = 0; il < c->n_layer; il++) {
        if (bind_layer(c, &c->layers[il], il, err)) {
            return -1;
        }
    }

    if (c->proj == OXL_CLIP_PROJ_GEMMA3) {
        return load_gemma3_proj(c, err);
    }
    /* The projector: mm.0 takes the features (mlp: n_embd per feature layer; qwen: 4 merged patches). */
    const int64_t n_in = qwen ? 4 * E : E * (c->n_feature ? c->n_feature : 1);
    const oxl_gguf_tensor *m0 = oxl_gguf_find_tensor(c->g, "mm.0.weight");
    const oxl_gguf_tensor *m2 = oxl_gguf_find_tensor(c->g, "mm.2.weight");
    if (!m0 || !m2) {
        return oxl_err_set(err, "%s: missing tensor '%s'", c->path, m0 ? "mm.2.weight" : "mm.0.weight");
    }
    const int64_t n_mid = m0->ne[1], n_out = m2->ne[1];
    if (n_mid < 1 || n_mid > INT32_MAX || n_out < 1 || n_out > INT32_MAX) {
        return oxl_err_set(err, "%s: tensor 'mm.0.weight' / 'mm.2.weight' has an unusable size", c->path);
    }
    if (bind(c, &c->mm0_w, "mm.0.weight", n_in, n_mid, true, err) ||
        bind(c, &c->mm0_b, "mm.0.bias", n_mid, 0, false, err) ||
        bind(c, &c->mm2_w, "mm.2.weight", n_mid, n_out, true, err) ||
        bind(c, &c->mm2_b, "mm.2.bias", n_out, 0, false, err)) {
        return -1;
    }
    c->n_out = (int32_t)n_out;
    return 0;
}

oxl_clip *oxl_clip_load_gguf(oxl_gguf *g, oxl_error *err) {
    oxl_clip *c = calloc(1, sizeof *c);
    if (!c) {
        oxl_gguf_close(g);
        oxl_err_set(err, "out of memory");
        return NULL;
    }
    c->g = g;
    c->path = oxl_gguf_path(g);
    if (load(c, err)) {
        oxl_clip_free(c);
        return NULL;
    }
    return c;
}

oxl_clip *oxl_clip_load(const char *path, oxl_error *err) {
    oxl_gguf *g = oxl_gguf_open(path, err);
    return g ? oxl_clip_load_gguf(g, err) : NULL;
}

void oxl_clip_free(oxl_clip *c) {
    if (!c) {
        return;
    }
    free(c->layers);
    free(c->feature);
    free(c->inp_proj_data);
    oxl_gguf_close(c->g);
    free(c);
}

oxl_clip_proj oxl_clip_projector(const oxl_clip *c) { return c->proj; }
int32_t oxl_clip_n_embd_out(const oxl_clip *c) { return c->n_out; }
int32_t oxl_clip_patch_size(const oxl_clip *c) { return c->patch; }
int32_t oxl_clip_merge(const oxl_clip *c) { return c->n_merge; }

int32_t oxl_clip_n_tokens(const oxl_clip *c, int32_t w, int32_t h) {
    if (w <= 0 || h <= 0) {
        return 0;
    }
    if (c->proj == OXL_CLIP_PROJ_GEMMA3) {
        const int64_t n = (int64_t)(w / c->patch) * (h / c->patch) / ((int64_t)c->n_merge * c->n_merge);
        return n > INT32_MAX ? INT32_MAX : (int32_t)n;
    }
    const int32_t s = c->patch * c->n_merge;
    return (w / s) * (h / s);
}

void oxl_clip_set_probe(oxl_clip *c, oxl_clip_probe_fn fn, void *user) {
    c->probe = fn;
    c->probe_user = user;
}

int32_t oxl_clip_window_index(int32_t pw, int32_t ph, int32_t grid_window, int32_t *idx, int32_t *inv_idx,
                              int32_t *bounds) {
    if (pw < 1 || ph < 1 || grid_window < 1) {
        return -1;
    }
    int32_t dst = 0, n_win = 0;
    for (int32_t y = 0; y < ph; y += grid_window) {
        for (int32_t x = 0; x < pw; x += grid_window) {
            const int32_t win_h = grid_window < ph - y ? grid_window : ph - y;
            const int32_t win_w = grid_window < pw - x ? grid_window : pw - x;
            bounds[n_win++] = dst;
            for (int32_t dy = 0; dy < win_h; dy++) {
                for (int32_t dx = 0; dx < win_w; dx++) {
                    const int32_t src = (y + dy) * pw + x + dx;
                    idx[src] = dst;
                    inv_idx[dst] = src;
                    dst++;
                }
            }
        }
    }
    bounds[n_win] = dst;
    return n_win;
}

void oxl_clip_window_positions(int32_t pw, int32_t ph, const int32_t *idx, int32_t *pos_y, int32_t *pos_x) {
    for (int32_t y = 0; y < ph; y++) {
        for (int32_t x = 0; x < pw; x++) {
            const int64_t at = 4 * (int64_t)idx[y * pw + x];
            for (int32_t k = 0; k < 4; k++) {
                pos_y[at + k] = 2 * y + k / 2;
                pos_x[at + k] = 2 * x + k % 2;
            }
        }
    }
}

/* LayerNorm as ggml_norm computes it in an AVX-512 build (ggml_vec_cvar_f32: the centred squares of each
 * 16 values summed in float by _mm512_reduce_add_ps's halving tree, those sums and the tail in double),
 * then ggml_mul by w and ggml_add of b. x and y may alias. */
static void layer_norm(const float *x, const oxl_tensor *w, const oxl_tensor *b, float *y, int64_t d, int64_t n,
                       float eps) {
    const float *wd = w && w->data ? w->data : NULL;
    const float *bd = b && b->data ? b->data : NULL;
    for (int64_t j = 0; j < n; j++) {
        const float *xj = x + j * d;
        float *yj = y + j * d;
        double sum = 0.0;
        for (int64_t i = 0; i < d; i++) {
            sum += (double)xj[i];
        }
        const float mean = (float)sum / (float)d;
        double var = 0.0;
        int64_t i = 0;
        for (; i + 15 < d; i += 16) {
            float v[16];
            for (int l = 0; l < 16; l++) {
                const float c = xj[i + l] - mean;
                yj[i + l] = c;
                v[l] = c * c;
            }
            for (int l = 0; l < 8; l++) {
                v[l] += v[l + 8];
            }
            for (int l = 0; l < 4; l++) {
                v[l] += v[l + 4];
            }
            var += (double)((v[0] + v[2]) + (v[1] + v[3]));
        }
        for (; i < d; i++) {
            const float c = xj[i] - mean;
            yj[i] = c;
            var += (double)(c * c);
        }
        const float scale = 1.0f / sqrtf((float)(var / (double)d) + eps);
        for (int64_t k = 0; k < d; k++) {
            yj[k] *= scale;
            if (wd) {
                yj[k] *= wd[k];
            }
            if (bd) {
                yj[k] += bd[k];
            }
        }
    }
}

/* ---- the graph ------------------------------------------------------------------------------ */

/* Scratch of the products, sized for the largest. */
typedef struct clip_run {
    const oxl_clip *c;
    oxl_pool *pool;
    void *scratch;
    size_t scratch_size;
} clip_run;

static void matmul(clip_run *r, const oxl_tensor *w, const float *x, int64_t n, float *y) {
    oxl_matmul(r->pool, w, x, n, y, w->ne[1], r->scratch);
}

static void linear(clip_run *r, const oxl_tensor *w, const oxl_tensor *b, const float *x, int64_t n, float *y) {
    matmul(r, w, x, n, y);
    oxl_add_bias(y, b, w->ne[1], n);
}

/* The patch embedding as ggml_conv_2d computes it: an fp16 im2col of the pixels (per patch: channel,
 * kernel row, kernel column; patches in raster order) times the kernel converted to fp16, f32 sums
 * (one mul_mat with the im2col as src0). y: (n_patches, n_embd), added to what is there when add. */
static void patch_embed(clip_run *r, const oxl_tensor *kern, const uint16_t *im2col, int64_t n_patches, float *kern_f32,
                        float *tmp, float *y, bool add) {
    const oxl_clip *c = r->c;
    const int64_t K = kern->ne[0];
    for (int64_t o = 0; o < c->n_embd; o++) {
        oxl_tensor_get_row(kern, o, kern_f32 + o * K);
    }
    oxl_tensor cols = {.name = "im2col", .type = OXL_TYPE_F16, .ne = {K, n_patches}};
    cols.row_size = oxl_row_size(OXL_TYPE_F16, K);
    cols.data = im2col;
    oxl_matmul(r->pool, &cols, kern_f32, c->n_embd, add ? tmp : y, n_patches, r->scratch);
    if (add) {
        oxl_add(y, tmp, n_patches * c->n_embd);
    }
}

/* 2D vision RoPE of one row (ggml_rope_multi, GGML_ROPE_TYPE_VISION, n_dims = head_dim / 2, sections all
 * head_dim / 4, base 10000): pair i rotates dims (i, i + head_dim/2); its angle runs from p_t (pairs of
 * the first section) or p_h (the second), multiplied by base^(-2/n_dims) per pair and restarted at each
 * section (ggml_mrope_cache_init with indep_sects). */
static void rope_vision(float *x, int n_head, int head_dim, float p_t, float p_h) {
    const int n_dims = head_dim / 2, sect = head_dim / 4;
    const float theta_scale = powf(10000.0f, -2.0f / (float)n_dims);
    float cs[256], sn[256];
    float theta_t = p_t, theta_h = p_h;
    for (int i = 0; i < n_dims; i++) {
        const int sector = i % (4 * sect);
        if (sector == sect) {
            theta_h = p_h;
        }
        const float theta = sector < sect ? theta_t : theta_h;
        cs[i] = cosf(theta);
        sn[i] = sinf(theta);
        theta_t *= theta_scale;
        theta_h *= theta_scale;
    }
    for (int h = 0; h < n_head; h++) {
        float *v = x + (size_t)h * head_dim;
        for (int i = 0; i < n_dims; i++) {
            const float x0 = v[i], x1 = v[i + n_dims];
            v[i] = fmaf(x0, cs[i], -(x1 * sn[i]));
            v[i + n_dims] = fmaf(x0, sn[i], x1 * cs[i]);
        }
    }
}

typedef struct attn_task {
    const oxl_kernels *kern;
    const float *q, *k, *v; /* (HD, n) */
    float *out;             /* (HD, n) */
    float *work;            /* (2 + head_dim) n floats per thread */
    int64_t n, hd, ld;
    int n_head;
    float scale;
    const int32_t *lo, *hi; /* (n): row i attends to keys lo[i]..hi[i]-1 only; NULL: to all */
} attn_task;

/* Keys a windowed row's softmax and products run over: its window [lo, hi) widened to multiples of 64
 * (the products' four 16-lane accumulators; the softmax's groups of 16), up to n. */
#define CLIP_WINDOW_ALIGN 64

/* Attention of every (row, head) item, as llama.cpp's build_attn without flash attention and without
 * a mask: kq one f32 vec_dot per key (q is a permuted view, so ggml takes no tinyBLAS path), times the
 * scale, ggml_soft_max_ext (the softmax kernel, summed in double, scaled by the float inverse), then
 * V^T w: tinyBLAS's order (the gemm kernel) when n % its k step == 0 and head_dim % 4 == 0 (v and kq
 * are contiguous there), else one vec_dot of n per output. With windows (t->lo), the same over the row's
 * widened window (CLIP_WINDOW_ALIGN), keys outside the window scored -FLT_MAX as llama.cpp's mask makes
 * them; the gemm/vec_dot choice stays that of all n keys. */
static void attn_items(void *arg, int ith, int nth) {
    const attn_task *t = arg;
    const int64_t n = t->n, D = t->hd;
    float *sc = t->work + (size_t)ith * (size_t)(2 + D) * (size_t)n, *w = sc + n, *vt = w + n;
    const oxl_vec_dot_fn dot = t->kern->vec_dot[OXL_TYPE_F32];
    const oxl_gemm_fn gemm = t->kern->gemm[OXL_TYPE_F32];
    const oxl_softmax_fn softmax = t->kern->softmax[OXL_TYPE_F32];
    const bool use_gemm = gemm && n >= 2 && n % oxl_gemm_k_step(OXL_TYPE_F32) == 0 && D % 4 == 0;
    int h_vt = -1;
    for (int64_t item = ith; item < n * t->n_head; item += nth) {
        const int h = (int)(item % t->n_head);
        const int64_t i = item / t->n_head;
        const float *qi = t->q + i * t->ld + h * D;
        int64_t a = 0, e = n, lo = 0, hi = n;
        if (t->lo) {
            lo = t->lo[i];
            hi = t->hi[i];
            a = lo & ~(int64_t)(CLIP_WINDOW_ALIGN - 1);
            e = (hi + CLIP_WINDOW_ALIGN - 1) & ~(int64_t)(CLIP_WINDOW_ALIGN - 1);
            e = e < n ? e : n;
        }
        /* V^T of the head: every key once per head, or a windowed row's keys each time */
        if (t->lo || h != h_vt) {
            for (int64_t j = a; j < e; j++) {
                for (int64_t d = 0; d < D; d++) {
                    vt[d * n + j] = t->v[j * t->ld + h * D + d];
                }
            }
            h_vt = t->lo ? -1 : h;
        }
        const int64_t len = e - a;
        float max = -INFINITY;
        for (int64_t j = a; j < e; j++) {
            float s = -FLT_MAX;
            if (j >= lo && j < hi) {
                dot(D, &s, t->k + j * t->ld + h * D, qi);
                s *= t->scale;
            }
            sc[j - a] = s;
            max = s > max ? s : max;
        }
        const double sum = softmax(len, w, sc, max);
        const float inv = (float)(1.0 / sum);
        for (int64_t j = 0; j < len; j++) {
            w[j] *= inv;
        }
        float *o = t->out + i * t->ld + h * D;
        if (use_gemm) {
            gemm(len, D, 1, vt + a, (size_t)n * sizeof(float), w, (size_t)len * sizeof(float), o, D);
        } else {
            for (int64_t d = 0; d < D; d++) {
                dot(len, &o[d], vt + d * n + a, w);
            }
        }
    }
}

void oxl_clip_attention(oxl_pool *pool, const float *q, const float *k, const float *v, float *out, int64_t n,
                        int n_head, int head_dim, const int32_t *lo, const int32_t *hi, float *work) {
    attn_task t = {.kern = oxl_kernels_get(),
                   .q = q,
                   .k = k,
                   .v = v,
                   .out = out,
                   .work = work,
                   .n = n,
                   .hd = head_dim,
                   .ld = (int64_t)n_head * head_dim,
                   .n_head = n_head,
                   .scale = 1.0f / sqrtf((float)head_dim),
                   .lo = lo,
                   .hi = hi};
    oxl_pool_run(pool, attn_items, &t);
}

void oxl_mm_avg_pool(const float *x, int64_t d, int64_t side, int64_t k, float *y) {
    const int64_t ps = side / k;
    const int ka = (int)(k * k);
    for (int64_t oy = 0; oy < ps; oy++) {
        for (int64_t ox = 0; ox < ps; ox++) {
            float *yo = y + (oy * ps + ox) * d;
            for (int64_t e = 0; e < d; e++) {
                float res = 0.0f;
                for (int64_t ky = 0; ky < k; ky++) {
                    for (int64_t kx = 0; kx < k; kx++) {
                        res += x[((oy * k + ky) * side + ox * k + kx) * d + e];
                    }
                }
                res /= (float)ka;
                yo[e] = res;
            }
        }
    }
}

static void activation(clip_act act, float *x, int64_t n) {
    switch (act) {
    case CLIP_ACT_GELU: oxl_gelu_fused(x, n); break;
    case CLIP_ACT_SILU: oxl_silu(x, n); break;
    case CLIP_ACT_GELU_QUICK: oxl_gelu_quick(x, n); break;
    }
}

/* g = act(g) * u over n columns of d (build_ffn with a gate: ggml_swiglu_split, ggml_geglu_split,
 * ggml_geglu_quick_split; the GELU tables as the ungated activation's). */
static void activation_gated(clip_act act, float *g, const float *u, int64_t d, int64_t n) {
    switch (act) {
    case CLIP_ACT_GELU: oxl_geglu_fused(g, u, d * n); break;
    case CLIP_ACT_SILU: oxl_swiglu(g, u, d, n); break;
    case CLIP_ACT_GELU_QUICK:
        oxl_gelu_quick(g, d * n);
        for (int64_t i = 0; i < d * n; i++) {
            g[i] *= u[i];
        }
        break;
    }
}

/* The tower's norm: LayerNorm, or RMSNorm for qwen2.5 (ggml_rms_norm, then weight and bias). */
static void clip_norm(const oxl_clip *c, const float *x, const oxl_tensor *w, const oxl_tensor *b, float *y,
                      int64_t n) {
    if (c->rms) {
        oxl_norm(OXL_NORM_RMS, x, w, b, y, c->n_embd, n, c->eps);
    } else {
        layer_norm(x, w, b, y, c->n_embd, n, c->eps);
    }
}

static void probe(const oxl_clip *c, const char *name, int layer, const float *x, int64_t n) {
    if (c->probe) {
        c->probe(c->probe_user, name, layer, x, c->n_embd, n);
    }
}

/* Gemma 3's projector (models/siglip.cpp) on the tower's output x (n_embd, side * side patches in
 * raster order): each n_merge x n_merge block of the patch grid averaged as ggml_pool_2d AVG does it
 * (a float sum in row-major order within the block, then divided by the block's size), tokens in
 * raster order of the pooled grid; ggml_rms_norm with the tower's eps times mm.soft_emb_norm.weight;
 * then the transposed mm.input_projection.weight. pooled: (n_embd, tokens) scratch. */
static void gemma3_project(clip_run *r, const float *x, int64_t side, float *pooled, float *out) {
    const oxl_clip *c = r->c;
    const int64_t E = c->n_embd, m = c->n_merge, ps = side / m, n_tok = ps * ps;
    oxl_mm_avg_pool(x, E, side, m, pooled);
    oxl_norm(OXL_NORM_RMS, pooled, &c->soft_norm_w, NULL, pooled, E, n_tok, c->eps);
    matmul(r, &c->inp_proj, pooled, n_tok, out);
}

/* Buffers of one encode, in one allocation. */
typedef struct clip_bufs {
    uint16_t *im2col;       /* (p p 3, n_patches) fp16 */
    float *kern;            /* (p p 3, n_embd) */
    float *conv, *tmp;      /* (n_patches, n_embd) */
    float *x, *cur;         /* (n_embd, n) */
    float *q, *k, *v, *att; /* (HD, n) */
    float *ff, *gate;       /* (n_ff, n) */
    float *scores;          /* (2 + head_dim) n per thread: attention work */
    float *feat;            /* (n_in, n): mlp feature stack */
    float *mid;             /* (n_mid, n_tokens) */
    int32_t *pos;           /* (2, n) qwen: patch row, column */
    int32_t *win;           /* (2, n) qwen2.5 windows: each row's first key and key past its window */
    int32_t *idx;           /* (3 n_tok + 1) qwen2.5 windows: window_idx, inv_window_idx, bounds */
    float *proj;            /* (n_out, n_tok) qwen2.5 windows: the projector's output in window order */
} clip_bufs;

int oxl_clip_encode(const oxl_clip *c, const oxl_mm_tile *tile, float *out, oxl_pool *pool, oxl_error *err) {
    const int64_t p = c->patch, E = c->n_embd, HD = (int64_t)c->n_head * c->head_dim, F = c->n_ff;
    const bool qwen = c->proj == OXL_CLIP_PROJ_QWEN2VL || c->proj == OXL_CLIP_PROJ_QWEN25VL;
    const bool windows = c->proj == OXL_CLIP_PROJ_QWEN25VL && c->n_wa_pattern > 0;
    const bool gemma = c->proj == OXL_CLIP_PROJ_GEMMA3, mlp = c->proj == OXL_CLIP_PROJ_MLP;
    if (!pool) {
        return oxl_err_set(err, "%s: oxl_clip_encode needs a thread pool", c->path);
    }
    if (!tile || !tile->pixels || tile->w < p || tile->h < p) {
        return oxl_err_set(err, "%s: tile of %dx%d pixels: smaller than one %lldx%lld patch", c->path,
                           tile ? tile->w : 0, tile ? tile->h : 0, (long long)p, (long long)p);
    }
    const int64_t nx = tile->w / p, ny = tile->h / p, n_patches = nx * ny;
    if (n_patches > (int64_t)1 << 20) {
        return oxl_err_set(err, "%s: tile of %dx%d pixels: %lld patches, more than the tower takes (%d)", c->path,
                           tile->w, tile->h, (long long)n_patches, 1 << 20);
    }
    int64_t n = n_patches, n_tok = n_patches;
    if (qwen) {
        if (tile->w % (2 * p) != 0 || tile->h % (2 * p) != 0) {
            return oxl_err_set(err, "%s: tile of %dx%d pixels: %s needs sides that are multiples of %lld", c->path,
                               tile->w, tile->h, oxl_clip_projector_name(c->proj), (long long)(2 * p));
        }
        n_tok = n_patches / 4;
    } else if (gemma) {
        /* siglip.cpp: a square grid, pooled n_merge x n_merge (ggml_pool_2d, no padding) */
        const int64_t m = c->n_merge;
        if (nx != ny || nx % m != 0) {
            return oxl_err_set(err,
                               "%s: tile of %dx%d pixels: gemma3 takes a square grid of patches whose side is a "
                               "multiple of %lld",
                               c->path, tile->w, tile->h, (long long)m);
        }
        if (c->pos_embd.data && c->pos_embd.ne[1] != n_patches) {
            return oxl_err_set(err, "%s: tile of %dx%d pixels has %lld patches; v.position_embd.weight has %lld rows",
                               c->path, tile->w, tile->h, (long long)n_patches, (long long)c->pos_embd.ne[1]);
        }
        n_tok = (nx / m) * (ny / m);
    } else {
        if (nx != ny) {
            return oxl_err_set(err, "%s: tile of %dx%d pixels: the mlp projector's graph takes square tiles only",
                               c->path, tile->w, tile->h);
        }
        n = n_patches + 1;
        if (n > c->pos_embd.ne[1]) {
            return oxl_err_set(err, "%s: tile of %dx%d pixels needs %lld positions; v.position_embd.weight has %lld",
                               c->path, tile->w, tile->h, (long long)n, (long long)c->pos_embd.ne[1]);
        }
    }
    if (tile->n_tokens != n_tok) {
        return oxl_err_set(err, "%s: tile of %dx%d pixels makes %lld embeddings; the tile says %d", c->path, tile->w,
                           tile->h, (long long)n_tok, tile->n_tokens);
    }
    const int64_t K = p * p * 3, n_in = gemma ? 0 : c->mm0_w.ne[0], n_mid = gemma ? 0 : c->mm0_w.ne[1];

    /* one allocation for every buffer, each 64-byte aligned */
    clip_bufs b = {0};
    const size_t sizes[] = {
        (size_t)(K * n_patches + 1) / 2,
        (size_t)(K * E),
        (size_t)(n_patches * E),
        (size_t)(n_patches * E),
        (size_t)(E * n),
        (size_t)(E * n),
        (size_t)(HD * n),
        (size_t)(HD * n),
        (size_t)(HD * n),
        (size_t)(HD * n),
        (size_t)(F * n),
        (size_t)(F * n),
        (size_t)((2 + c->head_dim) * n * oxl_pool_size(pool)),
        (size_t)(n_in * n),
        (size_t)(n_mid * n_tok),
        (size_t)(2 * n),
        (size_t)(windows ? 2 * n : 0),
        (size_t)(windows ? 3 * n_tok + 1 : 0),
        (size_t)(windows ? (int64_t)c->n_out * n_tok : 0),
    };
    void **slots[] = {
        (void **)&b.im2col, (void **)&b.kern, (void **)&b.conv,   (void **)&b.tmp,  (void **)&b.x,
        (void **)&b.cur,    (void **)&b.q,    (void **)&b.k,      (void **)&b.v,    (void **)&b.att,
        (void **)&b.ff,     (void **)&b.gate, (void **)&b.scores, (void **)&b.feat, (void **)&b.mid,
        (void **)&b.pos,    (void **)&b.win,  (void **)&b.idx,    (void **)&b.proj,
    };
    size_t total = 0;
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        total += (sizes[i] * sizeof(float) + 63) & ~(size_t)63;
    }
    clip_run r = {.c = c, .pool = pool};
    const oxl_tensor *ws[] = {gemma ? &c->inp_proj : &c->mm0_w, gemma ? &c->inp_proj : &c->mm2_w};
    r.scratch_size = oxl_matmul_scratch_size(OXL_TYPE_F16, K, E);
    for (size_t i = 0; i < 2; i++) {
        size_t s = oxl_matmul_scratch_size(ws[i]->type, ws[i]->ne[0], n_tok);
        r.scratch_size = s > r.scratch_size ? s : r.scratch_size;
    }
    for (int il = 0; il < c->n_run; il++) {
        const clip_layer *l = &c->layers[il];
        const oxl_tensor *lw[] = {&l->q_w, &l->k_w, &l->v_w, &l->o_w, &l->up_w, &l->down_w, &l->gate_w};
        for (size_t i = 0; i < 7; i++) {
            if (!lw[i]->data) {
                continue;
            }
            size_t s = oxl_matmul_scratch_size(lw[i]->type, lw[i]->ne[0], n);
            r.scratch_size = s > r.scratch_size ? s : r.scratch_size;
        }
    }
    char *mem = aligned_alloc(64, total + ((r.scratch_size + 63) & ~(size_t)63));
    if (!mem) {
        return oxl_err_set(err, "%s: out of memory for a %dx%d tile", c->path, tile->w, tile->h);
    }
    size_t off = 0;
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        *slots[i] = mem + off;
        off += (sizes[i] * sizeof(float) + 63) & ~(size_t)63;
    }
    r.scratch = mem + off;

    /* patch embedding: fp16 im2col, patches in raster order */
    const int64_t W = tile->w, H = tile->h;
    for (int64_t py = 0; py < ny; py++) {
        for (int64_t px = 0; px < nx; px++) {
            uint16_t *col = b.im2col + (py * nx + px) * K;
            for (int64_t ch = 0; ch < 3; ch++) {
                for (int64_t ky = 0; ky < p; ky++) {
                    const float *src = tile->pixels + ch * W * H + (py * p + ky) * W + px * p;
                    for (int64_t kx = 0; kx < p; kx++) {
                        *col++ = oxl_fp32_to_fp16(src[kx]);
                    }
                }
            }
        }
    }
    for (int kk = 0; kk < c->n_kernels; kk++) {
        patch_embed(&r, &c->patch_w[kk], b.im2col, n_patches, b.kern, b.tmp, b.conv, kk > 0);
    }
    /* rows of the sequence: raster order (mlp) or 2x2-merge order (qwen) */
    for (int64_t row = 0; row < n_patches; row++) {
        int64_t py, px;
        if (qwen) {
            const int64_t g = row / 4, by = g / (nx / 2), bx = g % (nx / 2);
            py = 2 * by + (row % 4) / 2;
            px = 2 * bx + row % 2;
            b.pos[row] = (int32_t)py;
            b.pos[n + row] = (int32_t)px;
        } else {
            py = row / nx;
            px = row % nx;
        }
        const int64_t src = py * nx + px;
        for (int64_t e = 0; e < E; e++) {
            b.x[row * E + e] = b.conv[e * n_patches + src];
        }
    }
    if (c->patch_b.data) {
        /* build_inp: the bias after the convolution, before any position */
        for (int64_t row = 0; row < n_patches; row++) {
            oxl_add(b.x + row * E, c->patch_b.data, E);
        }
    }
    if (gemma && c->pos_embd.data) {
        for (int64_t row = 0; row < n; row++) {
            oxl_tensor_get_row(&c->pos_embd, row, b.cur);
            oxl_add(b.x + row * E, b.cur, E);
        }
    }
    if (mlp) {
        /* class embedding as the last row, then position rows 0..n-1 */
        memcpy(b.x + n_patches * E, c->class_embd.data, (size_t)E * sizeof(float));
        for (int64_t row = 0; row < n; row++) {
            oxl_tensor_get_row(&c->pos_embd, row, b.cur);
            oxl_add(b.x + row * E, b.cur, E);
        }
    }
    probe(c, "vit_inp", -1, b.x, n);
    if (c->pre_ln_w.data) {
        clip_norm(c, b.x, &c->pre_ln_w, &c->pre_ln_b, b.x, n);
        probe(c, "pre_ln", -1, b.x, n);
    }
    int32_t *widx = NULL;
    if (windows) {
        /* merged tokens into window order (ggml_get_rows by inv_window_idx), the positions with them,
         * and each row's window */
        const int32_t pw = (int32_t)(nx / 2), ph = (int32_t)(ny / 2);
        int32_t *inv = b.idx + n_tok, *bounds = inv + n_tok;
        widx = b.idx;
        const int32_t n_win = oxl_clip_window_index(pw, ph, c->grid_window, widx, inv, bounds);
        for (int64_t dst = 0; dst < n_tok; dst++) {
            memcpy(b.cur + dst * 4 * E, b.x + (int64_t)inv[dst] * 4 * E, (size_t)(4 * E) * sizeof(float));
        }
        memcpy(b.x, b.cur, (size_t)(E * n) * sizeof(float));
        oxl_clip_window_positions(pw, ph, widx, b.pos, b.pos + n);
        for (int32_t w = 0; w < n_win; w++) {
            for (int64_t row = 4 * (int64_t)bounds[w]; row < 4 * (int64_t)bounds[w + 1]; row++) {
                b.win[row] = 4 * bounds[w];
                b.win[n + row] = 4 * bounds[w + 1];
            }
        }
    }

    int64_t n_stack = 0;
    for (int il = 0; il < c->n_run; il++) {
        const clip_layer *l = &c->layers[il];
        if (mlp && c->feature[il]) {
            for (int64_t row = 0; row < n; row++) {
                memcpy(b.feat + row * n_in + n_stack * E, b.x + row * E, (size_t)E * sizeof(float));
            }
            n_stack++;
        }
        clip_norm(c, b.x, &l->ln1_w, &l->ln1_b, b.cur, n);
        linear(&r, &l->q_w, &l->q_b, b.cur, n, b.q);
        linear(&r, &l->k_w, &l->k_b, b.cur, n, b.k);
        linear(&r, &l->v_w, &l->v_b, b.cur, n, b.v);
        if (qwen) {
            for (int64_t row = 0; row < n; row++) {
                rope_vision(b.q + row * HD, c->n_head, c->head_dim, (float)b.pos[row], (float)b.pos[n + row]);
                rope_vision(b.k + row * HD, c->n_head, c->head_dim, (float)b.pos[row], (float)b.pos[n + row]);
            }
        }
        const bool full = !windows || (il + 1) % c->n_wa_pattern == 0;
        oxl_clip_attention(pool, b.q, b.k, b.v, b.att, n, c->n_head, c->head_dim, full ? NULL : b.win,
                           full ? NULL : b.win + n, b.scores);
        linear(&r, &l->o_w, &l->o_b, b.att, n, b.cur);
        oxl_add(b.x, b.cur, E * n);
        clip_norm(c, b.x, &l->ln2_w, &l->ln2_b, b.cur, n);
        linear(&r, &l->up_w, &l->up_b, b.cur, n, b.ff);
        if (l->gate_w.data) {
            linear(&r, &l->gate_w, &l->gate_b, b.cur, n, b.gate);
            activation_gated(c->act, b.gate, b.ff, F, n);
            linear(&r, &l->down_w, &l->down_b, b.gate, n, b.cur);
        } else {
            activation(c->act, b.ff, F * n);
            linear(&r, &l->down_w, &l->down_b, b.ff, n, b.cur);
        }
        oxl_add(b.x, b.cur, E * n);
        probe(c, "vit_layer_out", il, b.x, n);
    }
    if (c->post_ln_w.data) {
        clip_norm(c, b.x, &c->post_ln_w, &c->post_ln_b, b.x, n);
    }

    if (gemma) {
        gemma3_project(&r, b.x, nx, b.cur, out);
        free(mem);
        return 0;
    }
    const float *features = b.x;
    if (mlp) {
        if (c->feature[c->n_run]) {
            for (int64_t row = 0; row < n; row++) {
                memcpy(b.feat + row * n_in + n_stack * E, b.x + row * E, (size_t)E * sizeof(float));
            }
            n_stack++;
        }
        /* rows 1..n-1: patch 0 dropped, the class row kept (clip.cpp's `patches` input) */
        features = (n_stack ? b.feat : b.x) + n_in;
    }
    linear(&r, &c->mm0_w, &c->mm0_b, features, n_tok, b.mid);
    /* ggml_gelu's fp16 table as ggml's FMA-contracting build fills it (the plain table flips an entry
     * that the llava-next golden meets) */
    oxl_gelu_fused(b.mid, n_mid * n_tok);
    linear(&r, &c->mm2_w, &c->mm2_b, b.mid, n_tok, widx ? b.proj : out);
    if (widx) {
        /* back to raster order (ggml_get_rows by window_idx) */
        for (int64_t src = 0; src < n_tok; src++) {
            memcpy(out + src * c->n_out, b.proj + (int64_t)widx[src] * c->n_out, (size_t)c->n_out * sizeof(float));
        }
    }
    free(mem);
    return 0;
}
