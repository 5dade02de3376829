/* The shared decoder graph (decoder.h): hyper-parameters, the tensor table and binding, the forward
 * pass and the description `oxillama info` prints. */
#include "decoder.h"
#include "decoder_gpu.h"

#include "adapter.h"
#include "errors.h"

#include <math.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

/* ---- hyper-parameters -------------------------------------------------------------------- */

/* rope.scaling.type values (llama.cpp's LLAMA_ROPE_SCALING_TYPES). */
typedef enum rope_scaling { SCALING_NONE, SCALING_LINEAR, SCALING_YARN, SCALING_LONGROPE } rope_scaling;

static const char *const scaling_names[] = {"none", "linear", "yarn", "longrope"};

int oxl_decoder_hparams(oxl_model *m, oxl_decoder_opts *o, oxl_rope_mode mode, oxl_error *err) {
    oxl_hparams *hp = &m->hp;
    const char *path = oxl_gguf_path(m->gguf);
    const char *arch = m->arch->name;
    if (oxl_hp_int(m, "context_length", &hp->n_ctx_train, true, err) ||
        oxl_hp_int(m, "embedding_length", &hp->n_embd, true, err) ||
        oxl_hp_int(m, "block_count", &hp->n_layer, true, err) ||
        oxl_hp_int(m, "feed_forward_length", &hp->n_ff, true, err) ||
        oxl_hp_int(m, "attention.head_count", &hp->n_head, true, err)) {
        return -1;
    }
    hp->n_head_kv = hp->n_head;
    hp->head_dim = hp->n_embd / hp->n_head;
    int32_t head_dim_v = 0;
    if (hp->n_layer > oxl_gguf_n_tensors(m->gguf)) {
        return oxl_err_set(err, "%s: %s.block_count = %d exceeds the file's %lld tensors", path, arch, hp->n_layer,
                           (long long)oxl_gguf_n_tensors(m->gguf));
    }
    int32_t *kv_layers = malloc(sizeof(int32_t) * (size_t)hp->n_layer);
    if (!kv_layers) {
        return oxl_err_set(err, "%s: out of memory", path);
    }
    for (int32_t il = 0; il < hp->n_layer; il++) {
        kv_layers[il] = hp->n_head;
    }
    int r = oxl_hp_int_layers(m, "attention.head_count_kv", kv_layers, hp->n_layer, false, err);
    hp->n_head_kv = 0;
    for (int32_t il = 0; r == 0 && il < hp->n_layer; il++) {
        if (kv_layers[il] != 0 && hp->n_head_kv != 0 && kv_layers[il] != hp->n_head_kv) {
            r = oxl_err_set(err,
                            "%s: %s.attention.head_count_kv differs between attention layers (%d, %d); "
                            "unsupported",
                            path, arch, hp->n_head_kv, kv_layers[il]);
        }
        hp->n_head_kv = kv_layers[il] ? kv_layers[il] : hp->n_head_kv;
    }
    if (r == 0 && hp->n_head_kv == 0) {
        r = oxl_err_set(err, "%s: %s.attention.head_count_kv is 0 on every layer", path, arch);
    }
    free(kv_layers);
    if (r) {
        return -1;
    }
    if (oxl_hp_int(m, "attention.key_length", &hp->head_dim, false, err) ||
        oxl_hp_int(m, "attention.value_length", &head_dim_v, false, err)) {
        return -1;
    }
    hp->n_rot = hp->head_dim;
    hp->rope_freq_base = 10000.0f;
    float factor = 0.0f, attn_factor = 1.0f;
    int32_t n_ctx_orig = hp->n_ctx_train;
    const char *scaling = "linear";
    if (oxl_hp_int(m, "rope.dimension_count", &hp->n_rot, false, err) ||
        oxl_hp_float(m, "rope.freq_base", &hp->rope_freq_base, false, err) ||
        oxl_hp_str(m, "rope.scaling.type", &scaling, err) ||
        oxl_hp_float(m, "rope.scaling.factor", &factor, false, err) ||
        oxl_hp_float(m, "rope.scaling.attn_factor", &attn_factor, false, err) ||
        oxl_hp_int(m, "rope.scaling.original_context_length", &n_ctx_orig, false, err)) {
        return -1;
    }
    if (factor == 0.0f && oxl_hp_float(m, "rope.scale_linear", &factor, false, err)) {
        return -1;
    }
    const char *eps_key = o->norm == OXL_NORM_RMS ? "attention.layer_norm_rms_epsilon" : "attention.layer_norm_epsilon";
    if (oxl_hp_float(m, eps_key, &o->norm_eps, true, err)) {
        return -1;
    }
    if (hp->n_head % hp->n_head_kv != 0) {
        return oxl_err_set(err, "%s: %s.attention.head_count = %d is not a multiple of head_count_kv = %d", path, arch,
                           hp->n_head, hp->n_head_kv);
    }
    if (head_dim_v && head_dim_v != hp->head_dim && o->mla.kv_lora_rank == 0) {
        return oxl_err_set(err, "%s: %s.attention.value_length = %d differs from key_length %d; unsupported", path,
                           arch, head_dim_v, hp->head_dim);
    }
    if (hp->head_dim < 1 || hp->head_dim > 1024 || hp->n_rot > hp->head_dim || hp->n_rot % 2) {
        return oxl_err_set(err,
                           "%s: unsupported head size %d / %s.rope.dimension_count %d (head size <= 1024, even "
                           "rotary dims <= head size)",
                           path, hp->head_dim, arch, hp->n_rot);
    }
    /* every layer binds at least a query, an output and a down projection: refuse a block count the
     * file cannot back before allocating per layer */
    if (hp->n_layer > oxl_gguf_n_tensors(m->gguf) / 3) {
        return oxl_err_set(err, "%s: %s.block_count = %d needs at least %lld tensors; the file has %lld", path, arch,
                           hp->n_layer, 3LL * hp->n_layer, (long long)oxl_gguf_n_tensors(m->gguf));
    }
    int scaling_type = -1;
    for (int i = 0; i < 4; i++) {
        scaling_type = strcmp(scaling, scaling_names[i]) == 0 ? i : scaling_type;
    }
    if (scaling_type < 0) {
        return oxl_err_set(err, "%s: %s.rope.scaling.type = '%s' is not one of none, linear, yarn, longrope", path,
                           arch, scaling);
    }
    if (!(factor >= 0.0f) || !(attn_factor > 0.0f)) {
        return oxl_err_set(err, "%s: %s.rope.scaling.factor = %g / attn_factor = %g out of range", path, arch, factor,
                           attn_factor);
    }
    /* llama_context: freq_scale 1 without scaling, YaRN's ext_factor 1 and its magnitude correction
     * (get_mscale(factor) / (1 + 0.1 ln factor)), times rope.scaling.attn_factor */
    hp->rope_freq_scale = factor == 0.0f || scaling_type == SCALING_NONE ? 1.0f : 1.0f / factor;
    const float ext_factor = scaling_type == SCALING_YARN ? 1.0f : 0.0f;
    float mscale = 1.0f;
    if (ext_factor != 0.0f) {
        const float f = 1.0f / hp->rope_freq_scale;
        mscale = f <= 1.0f ? 1.0f : 0.1f * logf(f) + 1.0f;
        mscale *= 1.0f / (1.0f + 0.1f * logf(f));
    }
    mscale *= attn_factor;
    o->rope = (oxl_rope){.mode = mode,
                         .n_rot = hp->n_rot,
                         .freq_base = hp->rope_freq_base,
                         .freq_scale = hp->rope_freq_scale,
                         .ext_factor = ext_factor,
                         .attn_factor = mscale,
                         .beta_fast = 32.0f,
                         .beta_slow = 1.0f,
                         .n_ctx_orig = n_ctx_orig};
    o->rope_swa = o->rope;
    o->n_ctx_orig = n_ctx_orig;
    o->kq_scale = 1.0f / sqrtf((float)hp->head_dim);
    hp->mrope = mode == OXL_ROPE_MROPE || mode == OXL_ROPE_IMROPE;
    return 0;
}

int oxl_decoder_swa_pattern(oxl_model *m, oxl_decoder_opts *o, uint32_t default_pattern, oxl_error *err) {
    int32_t pattern = (int32_t)default_pattern;
    if (oxl_hp_int(m, "attention.sliding_window_pattern", &pattern, false, err)) {
        return -1;
    }
    o->swa_pattern = (uint32_t)pattern;
    return 0;
}

int oxl_decoder_rope_alpha(oxl_model *m, oxl_decoder_opts *o, oxl_error *err) {
    float alpha = 0.0f;
    if (oxl_hp_float(m, "rope.scaling.alpha", &alpha, false, err)) {
        return -1;
    }
    if (alpha == 0.0f) {
        return 0;
    }
    const int32_t dim = m->hp.head_dim;
    if (!(alpha > 0.0f) || !isfinite(alpha) || dim <= 2) {
        return oxl_err_set(err, "%s: %s.rope.scaling.alpha = %g must be positive with a head size above 2 (%d)",
                           oxl_gguf_path(m->gguf), m->arch->name, alpha, dim);
    }
    m->hp.rope_freq_base *= powf(alpha, (float)dim / (float)(dim - 2));
    o->rope.freq_base = o->rope_swa.freq_base = m->hp.rope_freq_base;
    o->rope_alpha = alpha;
    return 0;
}

int oxl_decoder_skip_nextn(oxl_model *m, oxl_decoder_opts *o, oxl_error *err) {
    int32_t n = 0;
    if (oxl_hp_count(m, "nextn_predict_layers", &n, false, err)) {
        return -1;
    }
    if (n >= m->hp.n_layer) {
        return oxl_err_set(err, "%s: %s.nextn_predict_layers = %d must be below block_count = %d",
                           oxl_gguf_path(m->gguf), m->arch->name, n, m->hp.n_layer);
    }
    m->hp.n_layer -= n;
    o->n_layer_nextn = n;
    return 0;
}

int oxl_decoder_refuse_mrope(const oxl_model *m, oxl_error *err) {
    int32_t sec[4] = {0, 0, 0, 0};
    if (oxl_hp_int_layers(m, "rope.dimension_sections", sec, 4, false, err)) {
        return -1;
    }
    if (sec[0] || sec[1] || sec[2] || sec[3]) {
        return oxl_err_set(err, "%s: %s.rope.dimension_sections (M-RoPE, vision variant) is unsupported",
                           oxl_gguf_path(m->gguf), m->arch->name);
    }
    return 0;
}

bool oxl_decoder_is_swa(const oxl_decoder_opts *o, int il) {
    return o->n_swa > 0 && (o->swa_pattern == 0 || (uint32_t)il % o->swa_pattern < o->swa_pattern - 1);
}

/* llama.cpp's llm_graph_input_attn_temp::set_input (src/llama-graph.cpp): the float position plus
 * the offset over the floor scale, floored, then log and scale in double. */
float oxl_attn_temp_scale(const oxl_attn_temp *t, int32_t pos) {
    const float q = ((float)pos + t->offset) / (float)t->floor_scale;
    return (float)(log(floor(q) + 1.0) * t->scale + 1.0);
}

/* ---- tensors ----------------------------------------------------------------------------- */

/* Dimension letters of the tensor table. */
typedef enum dim { D_NONE, D_E, D_V, D_Q, D_KV, D_QKV, D_F, D_2F, D_HD, D_H, D_HKV, D_CTX, D_ROT2 } dim;

typedef struct tensor_info {
    const char *name; /* "blk.%d." prefix for layer tensors */
    bool layer;
    size_t offset; /* into oxl_decoder or oxl_decoder_layer */
    dim ne0, ne1;
    bool f32; /* norms and biases: f32 as llama.cpp computes them */
} tensor_info;

#define G(f) false, offsetof(oxl_decoder, f)
#define L(f) true, offsetof(oxl_decoder_layer, f)

static const tensor_info tensor_table[OXL_TENSOR_KIND_COUNT] = {
    [OXL_T_TOKEN_EMBD] = {"token_embd.weight", G(token_embd), D_E, D_V, false},
    [OXL_T_TOKEN_EMBD_NORM] = {"token_embd_norm.weight", G(token_embd_norm), D_E, D_NONE, true},
    [OXL_T_TOKEN_EMBD_NORM_B] = {"token_embd_norm.bias", G(token_embd_norm_b), D_E, D_NONE, true},
    [OXL_T_POS_EMBD] = {"position_embd.weight", G(pos_embd), D_E, D_CTX, false},
    [OXL_T_OUTPUT_NORM] = {"output_norm.weight", G(output_norm), D_E, D_NONE, true},
    [OXL_T_OUTPUT_NORM_B] = {"output_norm.bias", G(output_norm_b), D_E, D_NONE, true},
    [OXL_T_OUTPUT] = {"output.weight", G(output), D_E, D_V, false},
    [OXL_T_OUTPUT_B] = {"output.bias", G(output_b), D_V, D_NONE, true},
    [OXL_T_ROPE_FREQS] = {"rope_freqs.weight", G(rope_freqs), D_ROT2, D_NONE, true},
    [OXL_T_ROPE_LONG] = {"rope_factors_long.weight", G(rope_long), D_ROT2, D_NONE, true},
    [OXL_T_ROPE_SHORT] = {"rope_factors_short.weight", G(rope_short), D_ROT2, D_NONE, true},
    [OXL_L_ATTN_NORM] = {"blk.%d.attn_norm.weight", L(attn_norm), D_E, D_NONE, true},
    [OXL_L_ATTN_NORM_B] = {"blk.%d.attn_norm.bias", L(attn_norm_b), D_E, D_NONE, true},
    [OXL_L_ATTN_NORM_2] = {"blk.%d.attn_norm_2.weight", L(attn_norm_2), D_E, D_NONE, true},
    [OXL_L_ATTN_NORM_2_B] = {"blk.%d.attn_norm_2.bias", L(attn_norm_2_b), D_E, D_NONE, true},
    [OXL_L_QKV] = {NULL, true, 0, D_NONE, D_NONE, false},
    [OXL_L_ATTN_QKV] = {"blk.%d.attn_qkv.weight", L(wqkv), D_E, D_QKV, false},
    [OXL_L_ATTN_QKV_B] = {"blk.%d.attn_qkv.bias", L(bqkv), D_QKV, D_NONE, true},
    [OXL_L_Q_NORM_HEAD] = {"blk.%d.attn_q_norm.weight", L(q_norm), D_HD, D_NONE, true},
    [OXL_L_K_NORM_HEAD] = {"blk.%d.attn_k_norm.weight", L(k_norm), D_HD, D_NONE, true},
    [OXL_L_Q_NORM_HEADS] = {"blk.%d.attn_q_norm.weight", L(q_norm), D_HD, D_H, true},
    [OXL_L_K_NORM_HEADS] = {"blk.%d.attn_k_norm.weight", L(k_norm), D_HD, D_HKV, true},
    [OXL_L_Q_NORM_FULL] = {"blk.%d.attn_q_norm.weight", L(q_norm), D_Q, D_NONE, true},
    [OXL_L_K_NORM_FULL] = {"blk.%d.attn_k_norm.weight", L(k_norm), D_KV, D_NONE, true},
    [OXL_L_ATTN_OUT] = {"blk.%d.attn_output.weight", L(wo), D_Q, D_E, false},
    [OXL_L_ATTN_OUT_B] = {"blk.%d.attn_output.bias", L(bo), D_E, D_NONE, true},
    [OXL_L_ATTN_POST_NORM] = {"blk.%d.post_attention_norm.weight", L(attn_post_norm), D_E, D_NONE, true},
    [OXL_L_FFN_NORM] = {"blk.%d.ffn_norm.weight", L(ffn_norm), D_E, D_NONE, true},
    [OXL_L_FFN_NORM_B] = {"blk.%d.ffn_norm.bias", L(ffn_norm_b), D_E, D_NONE, true},
    [OXL_L_FFN_GATE] = {"blk.%d.ffn_gate.weight", L(ffn_gate), D_E, D_F, false},
    [OXL_L_FFN_GATE_B] = {"blk.%d.ffn_gate.bias", L(ffn_gate_b), D_F, D_NONE, true},
    [OXL_L_FFN_UP] = {"blk.%d.ffn_up.weight", L(ffn_up), D_E, D_F, false},
    [OXL_L_FFN_UP_B] = {"blk.%d.ffn_up.bias", L(ffn_up_b), D_F, D_NONE, true},
    [OXL_L_FFN_UP_GATE] = {"blk.%d.ffn_up.weight", L(ffn_up), D_E, D_2F, false},
    [OXL_L_FFN_DOWN] = {"blk.%d.ffn_down.weight", L(ffn_down), D_F, D_E, false},
    [OXL_L_FFN_DOWN_B] = {"blk.%d.ffn_down.bias", L(ffn_down_b), D_E, D_NONE, true},
    [OXL_L_FFN_POST_NORM] = {"blk.%d.post_ffw_norm.weight", L(ffn_post_norm), D_E, D_NONE, true},
    [OXL_L_ATTN_OUT_NORM] = {"blk.%d.attn_output_norm.weight", L(attn_post_norm), D_E, D_NONE, true},
    [OXL_L_ATTN_OUT_NORM_FFN] = {"blk.%d.attn_output_norm.weight", L(ffn_norm), D_E, D_NONE, true},
    [OXL_L_LAYER_OUT_NORM] = {"blk.%d.layer_output_norm.weight", L(ffn_post_norm), D_E, D_NONE, true},
    [OXL_L_MOE] = {NULL, true, 0, D_NONE, D_NONE, false},
    [OXL_L_SSM] = {NULL, true, 0, D_NONE, D_NONE, false},
    [OXL_L_MLA] = {NULL, true, 0, D_NONE, D_NONE, false},
    [OXL_L_POST_ATTN_NORM_FFN] = {"blk.%d.post_attention_norm.weight", L(ffn_norm), D_E, D_NONE, true},
    [OXL_L_ATTN_SINKS] = {"blk.%d.attn_sinks.weight", L(attn_sinks), D_H, D_NONE, true},
};

/* The attention tensors a recurrent layer does not have. */
static bool attention_kind(oxl_tensor_kind k) {
    switch (k) {
    case OXL_L_QKV:
    case OXL_L_ATTN_QKV:
    case OXL_L_ATTN_QKV_B:
    case OXL_L_Q_NORM_HEAD:
    case OXL_L_K_NORM_HEAD:
    case OXL_L_Q_NORM_HEADS:
    case OXL_L_K_NORM_HEADS:
    case OXL_L_Q_NORM_FULL:
    case OXL_L_K_NORM_FULL:
    case OXL_L_ATTN_OUT:
    case OXL_L_ATTN_OUT_B: return true;
    default: return false;
    }
}

#undef G
#undef L

static int64_t dim_value(const oxl_hparams *hp, dim d) {
    const int64_t Q = (int64_t)hp->n_head * hp->head_dim, KV = (int64_t)hp->n_head_kv * hp->head_dim;
    switch (d) {
    case D_NONE: return 0;
    case D_E: return hp->n_embd;
    case D_V: return hp->n_vocab;
    case D_Q: return Q;
    case D_KV: return KV;
    case D_QKV: return Q + 2 * KV;
    case D_F: return hp->n_ff;
    case D_2F: return 2 * (int64_t)hp->n_ff;
    case D_HD: return hp->head_dim;
    case D_H: return hp->n_head;
    case D_HKV: return hp->n_head_kv;
    case D_CTX: return hp->n_ctx_train;
    case D_ROT2: return hp->n_rot / 2;
    }
    return 0;
}

static int bind_kind(const oxl_model *m, void *base, oxl_tensor_kind kind, int il, bool required, oxl_error *err) {
    const tensor_info *ti = &tensor_table[kind];
    oxl_tensor *t = (oxl_tensor *)((char *)base + ti->offset);
    if (oxl_bind_tensor(m, t, ti->name, il, dim_value(&m->hp, ti->ne0), dim_value(&m->hp, ti->ne1), required, err)) {
        return -1;
    }
    if (t->data && ti->f32 && t->type != OXL_TYPE_F32) {
        return oxl_err_set(err, "%s: tensor '%s' must be f32 (norm weights and biases are)", oxl_gguf_path(m->gguf),
                           t->name);
    }
    return 0;
}

/* llama.cpp's create_tensor_qkv: a fused attn_qkv when the file has one, else attn_q/k/v; biases
 * optional either way. */
static int bind_qkv(const oxl_model *m, oxl_decoder_layer *l, int il, oxl_error *err) {
    if (bind_kind(m, l, OXL_L_ATTN_QKV, il, false, err)) {
        return -1;
    }
    if (l->wqkv.data) {
        return bind_kind(m, l, OXL_L_ATTN_QKV_B, il, false, err);
    }
    const int64_t E = m->hp.n_embd, Q = (int64_t)m->hp.n_head * m->hp.head_dim;
    const int64_t KV = (int64_t)m->hp.n_head_kv * m->hp.head_dim;
    const struct {
        oxl_tensor *w, *b;
        const char *name, *bias;
        int64_t rows;
    } parts[] = {{&l->wq, &l->bq, "blk.%d.attn_q.weight", "blk.%d.attn_q.bias", Q},
                 {&l->wk, &l->bk, "blk.%d.attn_k.weight", "blk.%d.attn_k.bias", KV},
                 {&l->wv, &l->bv, "blk.%d.attn_v.weight", "blk.%d.attn_v.bias", KV}};
    for (size_t i = 0; i < 3; i++) {
        if (oxl_bind_tensor(m, parts[i].w, parts[i].name, il, E, parts[i].rows, true, err) ||
            oxl_bind_tensor(m, parts[i].b, parts[i].bias, il, parts[i].rows, 0, false, err)) {
            return -1;
        }
    }
    return 0;
}

void oxl_decoder_free(void *weights) {
    oxl_decoder *d = weights;
    if (d) {
        oxl_decoder_gpu_free(d->gpu);
        free(d->layers);
        free(d);
    }
}

int oxl_decoder_load(oxl_model *m, const oxl_decoder_opts *o, const oxl_tensor_spec *spec, size_t n_spec,
                     oxl_error *err) {
    const char *path = oxl_gguf_path(m->gguf);
    oxl_decoder *d = calloc(1, sizeof *d);
    if (!d) {
        return oxl_err_set(err, "%s: out of memory", path);
    }
    m->weights = d;
    d->o = *o;
    d->o.n_head_kv_layers = NULL; /* the caller's array lives for the load only */
    d->layers = calloc((size_t)m->hp.n_layer, sizeof *d->layers);
    if (!d->layers) {
        return oxl_err_set(err, "%s: out of memory for %d layers", path, m->hp.n_layer);
    }
    for (size_t i = 0; i < n_spec; i++) {
        if (!tensor_table[spec[i].kind].layer && bind_kind(m, d, spec[i].kind, -1, spec[i].required, err)) {
            return -1;
        }
    }
    for (int il = 0; il < m->hp.n_layer; il++) {
        oxl_decoder_layer *l = &d->layers[il];
        l->recurrent = o->ssm.kind != OXL_SSM_NONE && (!o->n_head_kv_layers || o->n_head_kv_layers[il] == 0);
        /* llama.cpp's per-model use_rope: (il + 1) % n_no_rope_layer_step (smollm3.cpp, llama4.cpp), or
         * RoPE on the swa layers only (exaone4.cpp) */
        l->no_rope = (o->no_rope_step > 0 && (uint32_t)(il + 1) % o->no_rope_step == 0) ||
                     (o->no_rope_global && !oxl_decoder_is_swa(o, il));
        for (size_t i = 0; i < n_spec; i++) {
            const oxl_tensor_kind k = spec[i].kind;
            if (!tensor_table[k].layer || (l->recurrent && attention_kind(k)) || (!l->recurrent && k == OXL_L_SSM)) {
                continue;
            }
            int r;
            if (k == OXL_L_SSM) {
                r = oxl_ssm_bind(m, &o->ssm, &l->ssm, il, o->ssm_dt_b_c_norms, err);
            } else if (k == OXL_L_MLA) {
                r = oxl_mla_bind(m, &o->mla, &l->mla, il, err);
            } else if (k == OXL_L_QKV) {
                r = bind_qkv(m, l, il, err);
            } else if (k == OXL_L_MOE) {
                r = il < o->moe.n_dense_lead ? 0 : oxl_moe_bind(m, &o->moe, &l->moe, il, o->moe_parts, err);
            } else {
                r = bind_kind(m, l, k, il, spec[i].required, err);
            }
            if (r) {
                return -1;
            }
        }
    }
    if (!d->output.data) {
        d->output = d->token_embd;
    }
    if (d->rope_freqs.data) {
        d->o.rope.factors = d->o.rope_swa.factors = d->rope_freqs.data;
    }
    if (d->pos_embd.data) {
        m->hp.n_pos_max = (int32_t)d->pos_embd.ne[1];
    }
    return 0;
}

/* Repacking at load: every tensor's buffer is allocated first, then the work is cut into pieces of
 * a few hundred rows (whole groups) that the threads claim, so one big tensor (the output head)
 * does not leave the other threads idle. */
typedef struct repack_piece {
    int32_t tensor;
    int64_t r0, r1;
} repack_piece;

typedef struct repack_job {
    oxl_tensor **t;
    void **buf;
    size_t *bytes;
    bool *evict;
    atomic_int *left; /* pieces of each tensor not yet done: the thread finishing the last evicts */
    repack_piece *pieces;
    size_t n_pieces;
} repack_job;

static void repack_part(void *arg, int ith, int nth) {
    repack_job *j = arg;
    for (size_t i = (size_t)ith; i < j->n_pieces; i += (size_t)nth) {
        const repack_piece *p = &j->pieces[i];
        oxl_tensor_repack_rows(j->t[p->tensor], j->buf[p->tensor], p->r0, p->r1);
        /* one release of the plain pages per tensor: each is a TLB shootdown on every thread */
        if (atomic_fetch_sub(&j->left[p->tensor], 1) == 1 && j->evict[p->tensor]) {
            oxl_tensor_evict(j->t[p->tensor]);
        }
    }
}

/* The projection weights of every attention/dense-FFN layer and the output head: the 2-D tensors of
 * the table that are not norms or biases, and attn_q/k/v (bound by bind_qkv; MoE experts, Mamba and
 * latent-attention tensors keep their plain rows). A field two kinds share is repacked once. The
 * pieces are shared out to one thread per physical core. */
void oxl_decoder_repack(oxl_model *m, bool evict) {
    oxl_decoder *d = m->weights;
    const size_t per_layer = sizeof tensor_table / sizeof tensor_table[0] + 3;
    const size_t cap = (size_t)m->hp.n_layer * per_layer + 1;
    repack_job j = {calloc(cap, sizeof *j.t),
                    calloc(cap, sizeof *j.buf),
                    calloc(cap, sizeof *j.bytes),
                    calloc(cap, sizeof *j.evict),
                    calloc(cap, sizeof *j.left),
                    NULL,
                    0};
    if (!j.t || !j.buf || !j.bytes || !j.evict || !j.left) {
        goto out;
    }
    size_t n = 0;
    for (int il = 0; il < m->hp.n_layer; il++) {
        oxl_decoder_layer *l = &d->layers[il];
        for (size_t kind = 0; kind < sizeof tensor_table / sizeof tensor_table[0]; kind++) {
            const tensor_info *ti = &tensor_table[kind];
            if (ti->name && ti->layer && !ti->f32) {
                j.t[n++] = (oxl_tensor *)((char *)l + ti->offset);
            }
        }
        j.t[n++] = &l->wq;
        j.t[n++] = &l->wk;
        j.t[n++] = &l->wv;
    }
    /* the head; a tied head shares token_embd's rows, which look-ups still read */
    j.t[n++] = &d->output;
    /* the tensors with a layout, once each (a field two kinds share appears twice), and their pieces */
    size_t u = 0, n_pieces = 0;
    for (size_t i = 0; i < n; i++) {
        bool dup = false;
        for (size_t q = 0; q < u && !dup; q++) {
            dup = j.t[q] == j.t[i];
        }
        const size_t bytes = dup ? 0 : oxl_tensor_repack_bytes(j.t[i]);
        if (bytes == 0) {
            continue;
        }
        j.evict[u] = evict && !(j.t[i] == &d->output && d->output.data == d->token_embd.data);
        j.bytes[u] = bytes;
        j.t[u++] = j.t[i];
        n_pieces += (size_t)((j.t[i]->ne[1] + 255) / 256);
    }
    j.pieces = malloc(n_pieces * sizeof *j.pieces + 1);
    if (!j.pieces) {
        goto out;
    }
    for (size_t i = 0; i < u; i++) {
        j.buf[i] = oxl_tensor_repack_alloc(j.bytes[i]);
        if (!j.buf[i]) {
            continue; /* short of memory: this tensor keeps its plain rows */
        }
        /* 256 rows a piece (a multiple of every layout's group) */
        for (int64_t r0 = 0; r0 < j.t[i]->ne[1]; r0 += 256) {
            const int64_t r1 = r0 + 256 < j.t[i]->ne[1] ? r0 + 256 : j.t[i]->ne[1];
            j.pieces[j.n_pieces++] = (repack_piece){(int32_t)i, r0, r1};
            atomic_fetch_add(&j.left[i], 1);
        }
    }
    oxl_pool *pool = oxl_pool_new(oxl_n_physical_cores(), NULL);
    if (pool) {
        oxl_pool_run_parts(pool, repack_part, &j,
                           j.n_pieces < OXL_POOL_MAX_PARTS ? (int)j.n_pieces : OXL_POOL_MAX_PARTS);
        oxl_pool_free(pool);
    } else {
        repack_part(&j, 0, 1);
    }
    for (size_t i = 0; i < u; i++) {
        if (j.buf[i] && oxl_model_own(m, j.buf[i], j.bytes[i])) {
            j.t[i]->rp = j.buf[i];
            if (j.evict[i]) {
                (void)oxl_model_note_evicted(m, j.t[i]->data); /* short of memory: --mlock locks it too */
            }
        }
    }
out:
    free(j.t);
    free(j.buf);
    free(j.bytes);
    free(j.evict);
    free(j.left);
    free(j.pieces);
}

/* ---- forward ----------------------------------------------------------------------------- */

/* Activation buffers of one batch, carved from ctx->work in this order. */
typedef struct acts {
    float *x;       /* (n_embd, n) residual stream */
    float *xb;      /* (n_embd, n) normalised input of attention (and of a parallel FFN) */
    float *xb2;     /* (n_embd, n) the second norm: falcon-40b's attention input, the FFN's input */
    float *qkv;     /* (n_head*head_dim + 2*n_head_kv*head_dim, n) fused projection */
    float *q;       /* (n_head*head_dim, n) */
    float *k;       /* (n_head_kv*head_dim, n) */
    float *v;       /* (n_head_kv*head_dim, n) */
    float *att;     /* (n_head*head_dim, n) attention output before Wo */
    float *ao;      /* (n_embd, n) attention branch output */
    float *fo;      /* (n_embd, n) FFN branch output */
    float *gate;    /* (2*n_ff, n) gate (fused: gate;up) */
    float *up;      /* (n_ff, n) */
    float *xout;    /* (n_embd, n) residual stream of the tokens whose logits are wanted */
    float *fo2;     /* (n_embd, n) the MoE output beside a dense FFN */
    void *moe;      /* the MoE block's work (oxl_moe_work_size) */
    void *ssm;      /* the Mamba mixer's work (oxl_ssm_work_size) */
    void *mla;      /* latent attention's work (oxl_mla_work_size) */
    float *scores;  /* (n_ctx + head_dim) per thread */
    float *scratch; /* activation columns converted for matmuls (raw bytes) */
} acts;

static size_t acts_layout(const oxl_model *m, int32_t n, int32_t n_ctx, int n_threads, void *base, acts *a) {
    const oxl_hparams *hp = &m->hp;
    const size_t E = hp->n_embd, Q = (size_t)hp->n_head * hp->head_dim, KV = (size_t)hp->n_head_kv * hp->head_dim;
    const size_t F = hp->n_ff, QKV = Q + 2 * KV;
    size_t widest = E > 2 * F ? E : 2 * F;
    widest = widest > QKV ? widest : QKV;
    const oxl_decoder *d = m->weights;
    const size_t moe = oxl_moe_work_size(&d->o.moe, hp->n_embd, n) / sizeof(float);
    const size_t ssm = oxl_ssm_work_size(&d->o.ssm, n) / sizeof(float);
    const size_t mla = oxl_mla_work_size(m, &d->o.mla, n) / sizeof(float);
    const size_t sizes[] = {
        E * n,          E * n, E * n, QKV * n, Q * n,     KV * n,
        KV * n,         Q * n, E * n, E * n,   2 * F * n, F * n,
        E * n,          E * n, moe,   ssm,     mla,       (size_t)(n_ctx + hp->head_dim) * n_threads,
        widest * n + 64};
    float **slots[] = {&a->x,
                       &a->xb,
                       &a->xb2,
                       &a->qkv,
                       &a->q,
                       &a->k,
                       &a->v,
                       &a->att,
                       &a->ao,
                       &a->fo,
                       &a->gate,
                       &a->up,
                       &a->xout,
                       &a->fo2,
                       (float **)&a->moe,
                       (float **)&a->ssm,
                       (float **)&a->mla,
                       &a->scores,
                       &a->scratch};
    return oxl_carve(base, slots, sizes, sizeof sizes / sizeof sizes[0]);
}

size_t oxl_decoder_work_size(const oxl_model *m, int32_t n_batch, int32_t n_ctx, int n_threads) {
    acts a;
    return acts_layout(m, n_batch, n_ctx, n_threads, NULL, &a);
}

/* y = W x + b for n columns (y has W's ne1 rows). */
static void linear(oxl_pool *pool, const oxl_tensor *w, const oxl_tensor *b, const float *x, int32_t n, float *y,
                   void *scratch) {
    oxl_matmul(pool, w, x, n, y, w->ne[1], scratch);
    oxl_add_bias(y, b, w->ne[1], n);
}

/* y_i = W_i x + b_i for weights that read the same n columns (oxl_matmul_many: the same results as
 * linear on each, with one meeting of the threads). */
static void linear_many(oxl_pool *pool, int nw, const oxl_tensor *const *w, const oxl_tensor *const *b, const float *x,
                        int32_t n, float *const *y, void *scratch) {
    int64_t ldy[OXL_MATMUL_MANY_MAX];
    for (int i = 0; i < nw; i++) {
        ldy[i] = w[i]->ne[1];
    }
    oxl_matmul_many(pool, nw, w, x, n, y, ldy, scratch);
    for (int i = 0; i < nw; i++) {
        oxl_add_bias(y[i], b[i], w[i]->ne[1], n);
    }
}

/* Q, K, V of the pass from the attention input a: fused (views of one product, as build_qkv) or
 * separate projections, then q/k norms, RoPE and the query pre-scale. */
static void attn_qkv(oxl_ctx *ctx, const oxl_ubatch *ub, const oxl_decoder *d, const oxl_decoder_layer *l,
                     const oxl_rope *rope, const float *a, acts *b) {
    const oxl_hparams *hp = &ctx->model->hp;
    const oxl_decoder_opts *o = &d->o;
    const int32_t n = ub->n;
    const int64_t D = hp->head_dim, Q = hp->n_head * D, KV = hp->n_head_kv * D;
    if (l->wqkv.data) {
        linear(ctx->pool, &l->wqkv, &l->bqkv, a, n, b->qkv, b->scratch);
        for (int32_t j = 0; j < n; j++) {
            const float *src = b->qkv + (size_t)j * (Q + 2 * KV);
            memcpy(b->q + (size_t)j * Q, src, (size_t)Q * sizeof(float));
            memcpy(b->k + (size_t)j * KV, src + Q, (size_t)KV * sizeof(float));
            memcpy(b->v + (size_t)j * KV, src + Q + KV, (size_t)KV * sizeof(float));
        }
    } else {
        const oxl_tensor *w[] = {&l->wq, &l->wk, &l->wv}, *bias[] = {&l->bq, &l->bk, &l->bv};
        float *y[] = {b->q, b->k, b->v};
        linear_many(ctx->pool, 3, w, bias, a, n, y, b->scratch);
    }
    if (o->clamp_kqv > 0.0f) {
        const float c = o->clamp_kqv;
        float *parts[] = {b->q, b->k, b->v};
        const int64_t len[] = {Q * n, KV * n, KV * n};
        for (int i = 0; i < 3; i++) {
            for (int64_t e = 0; e < len[i]; e++) {
                parts[i][e] = fminf(fmaxf(parts[i][e], -c), c);
            }
        }
    }
    const int64_t d_q = o->qk_norm_full ? Q : D, d_k = o->qk_norm_full ? KV : D;
    if (l->q_norm.data && !o->qk_norm_after_rope) {
        oxl_norm(o->norm, b->q, &l->q_norm, NULL, b->q, d_q, n * (Q / d_q), o->norm_eps);
    }
    if (l->k_norm.data && !o->qk_norm_after_rope) {
        oxl_norm(o->norm, b->k, &l->k_norm, NULL, b->k, d_k, n * (KV / d_k), o->norm_eps);
    }
    if (rope->mode != OXL_ROPE_NONE && !l->no_rope) {
        for (int32_t j = 0; j < n; j++) {
            oxl_ubatch_rope(ub, j, b->q + j * Q, hp->n_head, hp->head_dim, rope);
            oxl_ubatch_rope(ub, j, b->k + j * KV, hp->n_head_kv, hp->head_dim, rope);
        }
    }
    if (o->attn_temp.scale != 0.0f && (!o->attn_temp_no_rope_only || l->no_rope)) {
        for (int32_t j = 0; j < n; j++) {
            oxl_scale(b->q + j * Q, Q, oxl_attn_temp_scale(&o->attn_temp, ub->pos[j]));
        }
    }
    if (o->qk_rms_after_rope && !l->no_rope) {
        oxl_norm(OXL_NORM_RMS, b->q, NULL, NULL, b->q, D, n * hp->n_head, o->norm_eps);
        oxl_norm(OXL_NORM_RMS, b->k, NULL, NULL, b->k, D, n * hp->n_head_kv, o->norm_eps);
    }
    if (o->qk_norm_after_rope) {
        /* hunyuan (src/models/hunyuan-moe.cpp, hunyuan-vl.cpp): k then q normalised after RoPE */
        if (l->k_norm.data) {
            oxl_norm(o->norm, b->k, &l->k_norm, NULL, b->k, d_k, n * (KV / d_k), o->norm_eps);
        }
        if (l->q_norm.data) {
            oxl_norm(o->norm, b->q, &l->q_norm, NULL, b->q, d_q, n * (Q / d_q), o->norm_eps);
        }
    }
    if (o->q_scale != 0.0f) {
        oxl_scale(b->q, Q * n, o->q_scale);
    }
}

/* The dense FFN of the pass on x (n_embd, n) into b->fo. */
static void dense_ffn(oxl_ctx *ctx, const oxl_decoder *d, const oxl_decoder_layer *l, const float *x, int32_t n,
                      acts *b) {
    oxl_pool *pool = ctx->pool;
    const int64_t F = ctx->model->hp.n_ff;
    switch (d->o.ffn) {
    case OXL_FFN_SWIGLU:
    case OXL_FFN_GEGLU: {
        const oxl_tensor *w[] = {&l->ffn_gate, &l->ffn_up}, *bias[] = {&l->ffn_gate_b, &l->ffn_up_b};
        float *y[] = {b->gate, b->up};
        linear_many(pool, 2, w, bias, x, n, y, b->scratch);
    }
        if (d->o.ffn == OXL_FFN_SWIGLU) {
            oxl_swiglu(b->gate, b->up, F, n);
        } else {
            oxl_geglu(b->gate, b->up, F * n);
        }
        break;
    case OXL_FFN_GELU:
        linear(pool, &l->ffn_up, &l->ffn_up_b, x, n, b->gate, b->scratch);
        oxl_gelu(b->gate, F * n);
        break;
    case OXL_FFN_SWIGLU_FUSED:
        /* ggml_swiglu on the fused product: silu of the first half times the second half */
        linear(pool, &l->ffn_up, NULL, x, n, b->gate, b->scratch);
        for (int32_t j = 0; j < n; j++) {
            float *gj = b->gate + (size_t)j * 2 * F;
            oxl_swiglu(gj, gj + F, F, 1);
            memmove(b->gate + (size_t)j * F, gj, (size_t)F * sizeof(float));
        }
        break;
    case OXL_FFN_XIELU:
        /* src/models/apertus.cpp: ffn_down(ggml_xielu(ffn_up x)) with the layer's parameters */
        linear(pool, &l->ffn_up, &l->ffn_up_b, x, n, b->gate, b->scratch);
        oxl_xielu(b->gate, F * n, l->xielu[0], l->xielu[1], l->xielu[2], l->xielu[3]);
        break;
    }
    linear(pool, &l->ffn_down, &l->ffn_down_b, b->gate, n, b->fo, b->scratch);
}

/* The layer's FFN on x into b->fo: dense, experts, or (Grok) both summed and scaled; then the
 * post-FFN norm. */
static void ffn(oxl_ctx *ctx, const oxl_decoder *d, const oxl_decoder_layer *l, const float *x, int32_t n, acts *b) {
    const int64_t E = ctx->model->hp.n_embd;
    if (!l->moe.gate_inp.data) {
        dense_ffn(ctx, d, l, x, n, b);
    } else if (!l->ffn_up.data) {
        oxl_moe_forward(ctx, &d->o.moe, &l->moe, x, n, b->fo, b->moe);
    } else {
        oxl_moe_forward(ctx, &d->o.moe, &l->moe, x, n, b->fo2, b->moe);
        dense_ffn(ctx, d, l, x, n, b);
        oxl_add(b->fo, b->fo2, E * n);
        oxl_scale(b->fo, E * n, d->o.moe_dense_scale);
    }
    if (l->ffn_post_norm.data) {
        oxl_norm(d->o.norm, b->fo, &l->ffn_post_norm, NULL, b->fo, ctx->model->hp.n_embd, n, d->o.norm_eps);
    }
}

/* The LongRoPE / llama3 frequency divisors for this context (llama_model::get_rope_factors): rope_freqs
 * when present, else the long factors when the context, padded to 256 cells as llama_context pads
 * n_ctx_seq, exceeds the original context, else the short ones. */
static const float *rope_factors(const oxl_ctx *ctx, const oxl_decoder *d) {
    if (d->rope_freqs.data) {
        return d->rope_freqs.data;
    }
    const int64_t n_ctx_seq = ((int64_t)ctx->n_ctx + 255) / 256 * 256;
    return n_ctx_seq > d->o.n_ctx_orig ? d->rope_long.data : d->rope_short.data;
}

int oxl_decoder_k_rope(const oxl_ctx *ctx, int il, oxl_rope *rope, oxl_error *err) {
    const oxl_model *m = ctx->model;
    const oxl_decoder *d = m->weights;
    const oxl_decoder_opts *o = &d->o;
    const oxl_decoder_layer *l = &d->layers[il];
    if (l->recurrent) {
        return oxl_err_set(err, "position shift: architecture %s has recurrent layers", m->arch->name);
    }
    if (l->mla.wkv_a.data) {
        return oxl_err_set(err, "position shift: latent attention (architecture %s) is not supported", m->arch->name);
    }
    const oxl_rope *r = oxl_decoder_is_swa(o, il) ? &o->rope_swa : &o->rope;
    if (r->mode == OXL_ROPE_MROPE || r->mode == OXL_ROPE_IMROPE) {
        /* llama_kv_cache::get_can_shift: false when n_pos_per_embd() > 1 */
        return oxl_err_set(err, "position shift: M-RoPE (architecture %s) cannot be shifted, as in llama.cpp",
                           m->arch->name);
    }
    if (r->mode == OXL_ROPE_NONE || l->no_rope) {
        return 0; /* keys without rotation (learned positions, ALiBi, NoPE layers): moved as they are */
    }
    *rope = *r;
    rope->factors = rope_factors(ctx, d);
    return 1;
}

void oxl_decoder_forward(oxl_ctx *ctx, const oxl_ubatch *ub, float *logits) {
    const oxl_model *m = ctx->model;
    const oxl_hparams *hp = &m->hp;
    const oxl_decoder *d = m->weights;
    const oxl_decoder_opts *o = &d->o;
    oxl_pool *pool = ctx->pool;
    const int32_t n = ub->n;
    acts b;
    acts_layout(m, n, ctx->n_ctx, oxl_pool_size(pool), ctx->work, &b);
    const int64_t E = hp->n_embd;

    /* embeddings: token rows or the batch's embeddings (+ learned position rows), scaled, optionally
     * normalised */
    for (int32_t j = 0; j < n; j++) {
        oxl_ubatch_input_row(ub, &d->token_embd, j, E, b.x + j * E);
        if (d->pos_embd.data) {
            /* positions past the table (hp.n_pos_max; llama.cpp aborts there) reuse its last row */
            const int64_t p = ub->pos[j] < d->pos_embd.ne[1] ? ub->pos[j] : d->pos_embd.ne[1] - 1;
            oxl_tensor_get_row(&d->pos_embd, p, b.xb);
            oxl_add(b.x + j * E, b.xb, E);
        }
    }
    if (o->embd_scale != 0.0f && (ub->token || !o->embd_scale_tokens_only)) {
        oxl_scale(b.x, E * n, o->embd_scale);
    }
    if (d->token_embd_norm.data) {
        oxl_norm(o->norm, b.x, &d->token_embd_norm, &d->token_embd_norm_b, b.x, E, n, o->norm_eps);
    }

    oxl_rope rope[2] = {o->rope, o->rope_swa};
    rope[0].factors = rope[1].factors = rope_factors(ctx, d);
    /* with -ngl the last layers (and the head) run on the Vulkan device (decoder_gpu.c) */
    const int il_gpu = d->gpu ? oxl_decoder_gpu_first_layer(ctx) : hp->n_layer;
    for (int il = 0; il < il_gpu; il++) {
        const oxl_decoder_layer *l = &d->layers[il];
        const bool swa = oxl_decoder_is_swa(o, il);
        /* attention */
        const float *a = b.x;
        if (l->attn_norm.data) {
            oxl_norm(o->norm, b.x, &l->attn_norm, &l->attn_norm_b, b.xb, E, n, o->norm_eps);
            a = b.xb;
        }
        if (l->attn_norm_2.data) {
            oxl_norm(o->norm, b.x, &l->attn_norm_2, &l->attn_norm_2_b, b.xb2, E, n, o->norm_eps);
            a = b.xb2;
        }
        if (l->recurrent) {
            oxl_ssm_forward(ctx, &o->ssm, &l->ssm, il, ub, a, b.ao, b.ssm);
        } else if (l->mla.wkv_a.data) {
            oxl_mla_attention(ctx, &o->mla, &l->mla, il, ub, &rope[swa], a, b.ao, b.mla, b.scores);
        } else {
            attn_qkv(ctx, ub, d, l, &rope[swa], a, &b);
            /* llama.cpp rotates q and k (v and the output) around a quantized cache */
            const int rot_k = oxl_memory_rot_k(ctx->mem, hp->head_dim),
                      rot_v = oxl_memory_rot_v(ctx->mem, hp->head_dim);
            if (rot_k) {
                oxl_fwht_rows(b.q, (int64_t)hp->n_head * hp->head_dim * n, rot_k);
                oxl_fwht_rows(b.k, (int64_t)hp->n_head_kv * hp->head_dim * n, rot_k);
            }
            if (rot_v) {
                oxl_fwht_rows(b.v, (int64_t)hp->n_head_kv * hp->head_dim * n, rot_v);
            }
            oxl_memory_kv_store(ctx->mem, il, ub, b.k, b.v);
            const oxl_attn_params ap = {.n_head = hp->n_head,
                                        .n_head_kv = hp->n_head_kv,
                                        .head_dim = hp->head_dim,
                                        .scale = o->kq_scale,
                                        .softcap = o->attn_softcap,
                                        .n_swa = swa && !o->swa_chunked ? o->n_swa : 0,
                                        .n_chunk = swa && o->swa_chunked ? o->n_swa : 0,
                                        .max_bias = o->max_alibi_bias,
                                        .sinks = l->attn_sinks.data};
            const oxl_kv_view kv = oxl_memory_kv_view(ctx->mem, il, ub);
            oxl_attention(pool, &kv, b.q, b.att, &ap, ctx->params.flash_attn != OXL_FLASH_ATTN_OFF, b.scores);
            if (rot_v) {
                oxl_fwht_rows(b.att, (int64_t)hp->n_head * hp->head_dim * n, rot_v);
            }
            linear(pool, &l->wo, &l->bo, b.att, n, b.ao, b.scratch);
        }
        if (l->attn_post_norm.data) {
            oxl_norm(o->norm, b.ao, &l->attn_post_norm, NULL, b.ao, E, n, o->norm_eps);
        }
        if (o->residual_scale != 0.0f) {
            oxl_scale(b.ao, E * n, o->residual_scale);
        }
        /* feed-forward: beside attention on the shared (or its own) norm, or after it */
        if (o->parallel || (o->parallel_if_no_ffn_norm && !l->ffn_norm.data)) {
            const float *f_in = b.xb;
            if (l->ffn_norm.data) {
                oxl_norm(o->norm, b.x, &l->ffn_norm, &l->ffn_norm_b, b.xb2, E, n, o->norm_eps);
                f_in = b.xb2;
            }
            ffn(ctx, d, l, f_in, n, &b);
            oxl_add(b.x, b.ao, E * n);
        } else if (!l->ffn_down.data && !l->moe.gate_inp.data) {
            oxl_add(b.x, b.ao, E * n); /* no FFN (Mamba) */
            oxl_cvec_apply(ctx, il, b.x, n);
            continue;
        } else {
            oxl_add(b.x, b.ao, E * n);
            const float *f_in = b.x;
            if (l->ffn_norm.data) {
                oxl_norm(o->norm, b.x, &l->ffn_norm, &l->ffn_norm_b, b.xb2, E, n, o->norm_eps);
                f_in = b.xb2;
            }
            ffn(ctx, d, l, f_in, n, &b);
        }
        if (o->residual_scale != 0.0f) {
            oxl_scale(b.fo, E * n, o->residual_scale);
        }
        oxl_add(b.x, b.fo, E * n);
        oxl_cvec_apply(ctx, il, b.x, n); /* llama.cpp's build_cvec: a control vector's direction */
    }

    if (il_gpu < hp->n_layer && oxl_decoder_gpu_forward(ctx, ub, il_gpu, b.x, logits) == 1) {
        return; /* the head ran on the device */
    }

    /* the final norm: of every token when the context keeps embeddings (llama.cpp's result_norm,
     * t_embd), else only of the tokens whose logits are wanted; those go through the output head */
    const int32_t n_out = ub->n_out;
    if (ub->embd) {
        oxl_norm(o->norm, b.x, &d->output_norm, &d->output_norm_b, ub->embd, E, n, o->norm_eps);
    }
    if (n_out == 0) {
        return;
    }
    if (ub->embd) {
        for (int32_t j = 0; j < n_out; j++) {
            memcpy(b.xb + (size_t)j * E, ub->embd + (size_t)ub->out_ids[j] * E, (size_t)E * sizeof(float));
        }
    } else {
        for (int32_t j = 0; j < n_out; j++) {
            memcpy(b.xout + (size_t)j * E, b.x + (size_t)ub->out_ids[j] * E, (size_t)E * sizeof(float));
        }
        oxl_norm(o->norm, b.xout, &d->output_norm, &d->output_norm_b, b.xb, E, n_out, o->norm_eps);
    }
    oxl_matmul(pool, &d->output, b.xb, n_out, logits, hp->n_vocab, b.scratch);
    oxl_add_bias(logits, &d->output_b, hp->n_vocab, n_out);
    if (o->logit_scale != 0.0f) {
        oxl_scale(logits, (int64_t)hp->n_vocab * n_out, o->logit_scale);
    }
    if (o->final_softcap != 0.0f) {
        oxl_softcap(logits, (int64_t)hp->n_vocab * n_out, o->final_softcap);
    }
}

/* ---- description ------------------------------------------------------------------------- */

static void describe_rope(FILE *out, const char *what, const oxl_rope *r) {
    if (r->mode == OXL_ROPE_NONE) {
        fprintf(out, "  %-16s none\n", what);
        return;
    }
    fprintf(out, "  %-16s %s, n_rot %d, freq_base %g, freq_scale %g, attn_factor %g", what,
            r->mode == OXL_ROPE_NEOX    ? "neox"
            : r->mode == OXL_ROPE_MROPE ? "m-rope"
                                        : "normal",
            r->n_rot, r->freq_base, r->freq_scale, r->attn_factor);
    if (r->mode == OXL_ROPE_MROPE) {
        fprintf(out, ", sections [%d, %d, %d, %d] (text: the extra section unrotated)", r->sections[0], r->sections[1],
                r->sections[2], r->sections[3]);
    }
    if (r->ext_factor != 0.0f) {
        fprintf(out, ", yarn ext_factor %g beta %g/%g n_ctx_orig %d", r->ext_factor, r->beta_fast, r->beta_slow,
                r->n_ctx_orig);
    }
    fputc('\n', out);
}

void oxl_decoder_describe(const oxl_model *m, FILE *out) {
    static const char *const ffn_names[] = {"swiglu", "geglu", "gelu", "swiglu (fused gate;up)", "xielu (no gate)"};
    const oxl_hparams *hp = &m->hp;
    const oxl_decoder *d = m->weights;
    const oxl_decoder_opts *o = &d->o;
    fprintf(out, "  %-16s n_embd %d, n_layer %d, n_ff %d, n_vocab %d, n_ctx_train %d\n", "shape", hp->n_embd,
            hp->n_layer, hp->n_ff, hp->n_vocab, hp->n_ctx_train);
    if (o->n_layer_nextn > 0) {
        fprintf(out, "  %-16s %d after the %d layers (blk.%d..): loaded unused, not run\n", "nextn/mtp layers",
                o->n_layer_nextn, hp->n_layer, hp->n_layer);
    }
    if (hp->n_head == 0) {
        fprintf(out, "  %-16s none (every layer recurrent)\n", "attention");
    } else {
        fprintf(out, "  %-16s n_head %d, n_head_kv %d, head_dim %d, kq_scale %g", "attention", hp->n_head,
                hp->n_head_kv, hp->head_dim, o->kq_scale);
        const struct {
            bool on;
            const char *what;
            float v;
        } extras[] = {{o->q_scale != 0.0f, "q pre-scale", o->q_scale},
                      {o->attn_softcap != 0.0f, "soft-cap", o->attn_softcap},
                      {o->max_alibi_bias != 0.0f, "alibi max_bias", o->max_alibi_bias}};
        for (size_t i = 0; i < sizeof extras / sizeof extras[0]; i++) {
            if (extras[i].on) {
                fprintf(out, ", %s %g", extras[i].what, extras[i].v);
            }
        }
        bool sinks = false;
        for (int il = 0; il < hp->n_layer; il++) {
            sinks |= d->layers[il].attn_sinks.data != NULL;
        }
        fputs(sinks ? ", attention sinks\n" : "\n", out);
    }
    if (o->n_swa > 0) {
        fprintf(out, "  %-16s %s %d on layers", o->swa_chunked ? "chunked attn" : "sliding window",
                o->swa_chunked ? "chunk" : "n_swa", o->n_swa);
        for (int il = 0; il < hp->n_layer; il++) {
            if (oxl_decoder_is_swa(o, il)) {
                fprintf(out, " %d", il);
            }
        }
        fputc('\n', out);
    }
    if (hp->n_pos_max > 0) {
        fprintf(out, "  %-16s learned, %d positions (later ones reuse the last row)\n", "positions", hp->n_pos_max);
    }
    describe_rope(out, "rope", &o->rope);
    if (o->n_swa > 0) {
        describe_rope(out, "rope (swa)", &o->rope_swa);
    }
    bool any_no_rope = false;
    for (int il = 0; il < hp->n_layer; il++) {
        any_no_rope |= d->layers[il].no_rope;
    }
    if (any_no_rope) {
        fprintf(out, "  %-16s", "no-rope layers");
        for (int il = 0; il < hp->n_layer; il++) {
            if (d->layers[il].no_rope) {
                fprintf(out, " %d", il);
            }
        }
        fputc('\n', out);
    }
    if (o->qk_rms_after_rope) {
        fprintf(out, "  %-16s q, k RMS-normalised (no weights) after RoPE on the RoPE layers\n", "qk l2 norm");
    }
    if (o->attn_temp.scale != 0.0f) {
        fprintf(out, "  %-16s q *= 1 + %g ln(1 + floor((pos + %g) / %u))%s\n", "attn temperature", o->attn_temp.scale,
                o->attn_temp.offset, o->attn_temp.floor_scale,
                o->attn_temp_no_rope_only ? " on the no-rope layers" : "");
    }
    if (o->rope_alpha != 0.0f) {
        fprintf(out, "  %-16s %g: freq_base raised by alpha^(head_dim / (head_dim - 2)) (NTK)\n", "rope alpha",
                o->rope_alpha);
    }
    if (d->rope_freqs.data || d->rope_long.data || d->rope_short.data) {
        fprintf(out, "  %-16s %s\n", "rope factors",
                d->rope_freqs.data ? "rope_freqs" : "LongRoPE short/long by context vs original context");
    }
    fprintf(out, "  %-16s %s, eps %g", "norm", o->norm == OXL_NORM_RMS ? "rms" : "layer", o->norm_eps);
    const oxl_decoder_layer *l0 = &d->layers[0];
    if (l0->q_norm.data) {
        fprintf(out, "; q/k norms %s",
                o->qk_norm_full        ? "over the full projection"
                : l0->q_norm.ne[1] > 1 ? "per head, own weights"
                                       : "per head");
        if (o->qk_norm_after_rope) {
            fputs(", after RoPE", out);
        }
    }
    if (!l0->attn_norm.data) {
        fputs("; no pre-norms", out);
    }
    if (l0->attn_post_norm.data) {
        fputs("; post-attention and post-FFN norms", out);
    }
    fputc('\n', out);
    const bool parallel = o->parallel || (o->parallel_if_no_ffn_norm && !l0->ffn_norm.data);
    bool any_ffn = false;
    for (int il = 0; il < hp->n_layer; il++) {
        any_ffn |= d->layers[il].ffn_down.data || d->layers[il].moe.gate_inp.data;
    }
    if (any_ffn) {
        fprintf(out, "  %-16s %s, %s residual\n", "ffn", ffn_names[o->ffn], parallel ? "parallel" : "sequential");
    } else {
        fprintf(out, "  %-16s none\n", "ffn");
    }
    for (int il = 0; any_ffn && o->ffn == OXL_FFN_XIELU && il < hp->n_layer; il++) {
        const float *p = d->layers[il].xielu;
        fprintf(out, "  %-16s layer %d: alpha_p %g, alpha_n %g, beta %g, eps %g\n", il ? "" : "xielu", il, p[1], p[0],
                p[2], p[3]);
    }
    if (o->moe.n_expert > 0) {
        oxl_moe_describe(&o->moe, out);
        fprintf(out, "  %-16s", "expert layers");
        for (int il = 0; il < hp->n_layer; il++) {
            if (d->layers[il].moe.gate_inp.data) {
                fprintf(out, " %d", il);
            }
        }
        fputc('\n', out);
        if (o->moe_dense_scale != 0.0f) {
            fprintf(out, "  %-16s (dense FFN + experts) x %g\n", "", o->moe_dense_scale);
        }
        bool probs_b = false;
        for (int il = 0; il < hp->n_layer; il++) {
            probs_b |= d->layers[il].moe.exp_probs_b.data != NULL;
        }
        if (probs_b) {
            fprintf(out, "  %-16s exp_probs_b added for the top-k choice only\n", "selection bias");
        }
    }
    if (o->mla.kv_lora_rank > 0 && o->mla.merged_kv_b) {
        fprintf(out,
                "  %-16s q_lora_rank %d, kv_lora_rank %d, head k %d (rope %d) v %d, kq_scale %g; merged attn_kv_b: "
                "multi-head, cache %d heads of %d\n",
                "latent attention", o->mla.q_lora_rank, o->mla.kv_lora_rank, o->mla.head_k, hp->n_rot, o->mla.head_v,
                o->mla.kq_scale, hp->n_head_kv, hp->head_dim);
    } else if (o->mla.kv_lora_rank > 0) {
        fprintf(out,
                "  %-16s q_lora_rank %d, kv_lora_rank %d, head k %d (rope %d) v %d, kq_scale %g; cache: latent + "
                "rope key (%d floats per token)\n",
                "latent attention", o->mla.q_lora_rank, o->mla.kv_lora_rank, o->mla.head_k, hp->n_rot, o->mla.head_v,
                o->mla.kq_scale, hp->head_dim);
    }
    if (o->ssm.kind != OXL_SSM_NONE) {
        oxl_ssm_describe(&o->ssm, out);
        fprintf(out, "  %-16s", "recurrent layers");
        for (int il = 0; il < hp->n_layer; il++) {
            if (d->layers[il].recurrent) {
                fprintf(out, " %d", il);
            }
        }
        fprintf(out, "%s\n", o->ssm_dt_b_c_norms ? " (dt, B, C RMS-normed)" : "");
    }
    if (o->clamp_kqv > 0.0f) {
        fprintf(out, "  %-16s q, k, v clamped to +-%g\n", "clamp", o->clamp_kqv);
    }
    const struct {
        const char *name;
        float v;
    } mults[] = {{"embedding", o->embd_scale},
                 {"residual", o->residual_scale},
                 {"logits", o->logit_scale},
                 {"final soft-cap", o->final_softcap}};
    bool any = false;
    for (size_t i = 0; i < sizeof mults / sizeof mults[0]; i++) {
        if (mults[i].v != 0.0f) {
            fprintf(out, "%s%s %g", any ? ", " : "  multipliers      ", mults[i].name, mults[i].v);
            any = true;
        }
    }
    if (any) {
        fputc('\n', out);
    }
    fprintf(out, "  %-16s %s\n", "output",
            d->output.data == d->token_embd.data ? "tied to token_embd" : "output.weight");
}
