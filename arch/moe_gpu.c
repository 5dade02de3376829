/* The mixture-of-experts block on the Vulkan device (moe_gpu.h); nothing without OXL_VULKAN. */
#ifdef OXL_VULKAN

#include "moe_gpu.h"

#include "gpu_ops.h"
#include "gpu_quant.h"

#include <stddef.h>
#include <stdio.h>
#include <stdint.h>
#include <string.h>

/* Most experts chosen per token topk_moe keeps (its MAX_USED). */
#define MOE_GPU_MAX_USED 64

/* ---- shapes and scratch ------------------------------------------------------------------- */

/* The activation format a weight type pairs with (the CPU's vec_dot_type; f32 with itself). */
static oxl_type partner(oxl_type t) {
    return t == OXL_TYPE_F32 ? OXL_TYPE_F32 : oxl_type_traits_get((uint32_t)t)->vec_dot_type;
}

/* Bytes a push-constant offset into t's activations counts: floats, halves, or bytes of blocks. */
static size_t partner_unit(oxl_type t) {
    const oxl_type p = partner(t);
    return p == OXL_TYPE_F32 ? 4 : p == OXL_TYPE_F16 || p == OXL_TYPE_BF16 ? 2 : 1;
}

/* One column of K activations of t, in partner_unit units. */
static uint32_t partner_col(oxl_type t, uint32_t K) {
    return partner_unit(t) == 1 ? (uint32_t)oxl_row_size(partner(t), K) : K;
}

/* Whether the build has shader `op`_<t> and the quantize shader of t's partner. */
static bool has_shaders(const char *op, oxl_type t) {
    const oxl_type_traits *tr = oxl_type_traits_get((uint32_t)t);
    char name[64];
    if (!tr) {
        return false;
    }
    snprintf(name, sizeof name, "%s_%s", op, tr->name);
    if (!oxl_gpu_shader(name)) {
        return false;
    }
    snprintf(name, sizeof name, "quantize_%s", oxl_type_traits_get((uint32_t)partner(t))->name);
    return t == OXL_TYPE_F32 || oxl_gpu_shader(name);
}

/* The scratch of one call, byte offsets from the work binding's start. */
typedef struct moe_scratch {
    size_t logits; /* (n_expert, n) router logits */
    size_t ids;    /* (n_used, n) int32 chosen experts */
    size_t w;      /* (n_used, n) their weights */
    size_t xq;     /* (n_embd, n) x in the experts' partner format */
    size_t up;     /* (n_ff_exp, n_used, n) */
    size_t gate;   /* (n_ff_exp, n_used, n); the activation is written here */
    size_t aq;     /* (n_ff_exp, n_used, n) the activation in down_exps' partner format */
    size_t down;   /* (n_embd, n_used, n) */
    size_t s_up;   /* (n_ff_shexp, n) shared experts */
    size_t s_gate; /* (n_ff_shexp, n) */
    size_t s_aq;   /* (n_ff_shexp, n) */
    size_t s_down; /* (n_embd, n) */
    size_t s_z;    /* (n) shared-expert gate logits */
    size_t end;
} moe_scratch;

static moe_scratch scratch_layout(const oxl_moe_opts *o, int64_t E, int32_t n) {
    const size_t X = (size_t)o->n_expert, K = (size_t)o->n_expert_used, F = (size_t)o->n_ff_exp;
    const size_t S = (size_t)(o->n_ff_shexp > 0 ? o->n_ff_shexp : 0), N = (size_t)n;
    const size_t sizes[] = {X * N, K * N, K * N, (size_t)E * N, F * K * N, F * K * N, F * K * N, (size_t)E * K * N,
                            S * N, S * N, S * N, (size_t)E * N, N};
    moe_scratch s;
    size_t *dst[] = {&s.logits, &s.ids,  &s.w,      &s.xq,   &s.up,     &s.gate, &s.aq,
                     &s.down,   &s.s_up, &s.s_gate, &s.s_aq, &s.s_down, &s.s_z};
    size_t off = 0;
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        *dst[i] = off;
        off += (sizes[i] * 4 + 255) & ~(size_t)255;
    }
    s.end = off;
    return s;
}

size_t oxl_moe_gpu_work_size(const oxl_moe_opts *o, int64_t n_embd, int32_t n) {
    return o->n_expert > 0 ? scratch_layout(o, n_embd, n).end : 0;
}

/* The shader of an expert activation. */
static const char *act_shader(oxl_moe_act act) {
    return act == OXL_MOE_SILU ? "glu_swiglu" : act == OXL_MOE_GELU ? "glu_geglu" : "glu_swiglu_oai";
}

const char *oxl_moe_gpu_unsupported(const oxl_gpu *g, const oxl_moe_opts *o, const oxl_moe_layer *l) {
    (void)g;
    if (!oxl_gpu_shader(act_shader(o->act))) {
        return "no device shader for the experts' activation";
    }
    if (o->weight_before_ffn) {
        return "the expert weights scale the experts' input (weight_before_ffn)";
    }
    if (o->n_expert_used > MOE_GPU_MAX_USED) {
        return "more than 64 experts chosen per token";
    }
    const oxl_tensor *ex[] = {&l->gate_exps, &l->up_exps, &l->down_exps};
    for (size_t i = 0; i < sizeof ex / sizeof ex[0]; i++) {
        if (!has_shaders("mul_mat_id", ex[i]->type)) {
            return "an expert weight type without a device mul_mat_id";
        }
        if (ex[i]->row_size * (size_t)ex[i]->ne[1] * (size_t)o->n_expert > UINT32_MAX) {
            return "an expert tensor over 4 GiB (mul_mat_id's byte offsets are 32-bit)";
        }
    }
    const oxl_tensor *mm[] = {&l->gate_inp, &l->gate_shexp, &l->up_shexp, &l->down_shexp};
    for (size_t i = 0; i < sizeof mm / sizeof mm[0]; i++) {
        if (mm[i]->data && !has_shaders("mul_mat", mm[i]->type)) {
            return "a router or shared-expert weight type without a device mul_mat";
        }
    }
    if (l->gate_exps.type != l->up_exps.type || (l->up_shexp.data && l->gate_shexp.type != l->up_shexp.type)) {
        return "gate and up weights of different types";
    }
    return NULL;
}

/* ---- weights ------------------------------------------------------------------------------ */

/* The tensors of a layer, as (host tensor, device bind) member offsets. */
#define MOE_PART(f)                                                                                                    \
    { offsetof(oxl_moe_layer, f), offsetof(oxl_moe_gpu_layer, f) }
static const size_t moe_parts[][2] = {
    MOE_PART(gate_inp),   MOE_PART(gate_inp_b),  MOE_PART(exp_probs_b), MOE_PART(gate_exps),   MOE_PART(up_exps),
    MOE_PART(down_exps),  MOE_PART(gate_exps_b), MOE_PART(up_exps_b),   MOE_PART(down_exps_b), MOE_PART(gate_inp_shexp),
    MOE_PART(gate_shexp), MOE_PART(up_shexp),    MOE_PART(down_shexp),
};
#undef MOE_PART

int oxl_moe_gpu_upload(oxl_gpu *g, const oxl_moe_layer *host, oxl_moe_gpu_layer *l, oxl_error *err) {
    memset(l, 0, sizeof *l);
    l->host = host;
    for (size_t i = 0; i < sizeof moe_parts / sizeof moe_parts[0]; i++) {
        const oxl_tensor *t = (const oxl_tensor *)((const char *)host + moe_parts[i][0]);
        oxl_gpu_bind *b = (oxl_gpu_bind *)((char *)l + moe_parts[i][1]);
        if (!t->data) {
            continue;
        }
        /* a 3-D expert tensor: all n_slice experts of it */
        const size_t bytes = t->row_size * (size_t)t->ne[1] * (size_t)(t->n_slice > 0 ? t->n_slice : 1);
        b->buf = oxl_gpu_alloc(g, bytes, err);
        if (!b->buf || oxl_gpu_write(g, b->buf, 0, t->data, bytes, err)) {
            oxl_moe_gpu_layer_free(g, l);
            return -1;
        }
    }
    return 0;
}

void oxl_moe_gpu_layer_free(oxl_gpu *g, oxl_moe_gpu_layer *l) {
    for (size_t i = 0; i < sizeof moe_parts / sizeof moe_parts[0]; i++) {
        oxl_gpu_bind *b = (oxl_gpu_bind *)((char *)l + moe_parts[i][1]);
        if (b->buf) {
            oxl_gpu_free(g, b->buf);
        }
    }
    memset(l, 0, sizeof *l);
}

/* ---- recording helpers -------------------------------------------------------------------- */

/* An offset in units of `unit` bytes as a push constant; -1 when it does not fit 32 bits. */
static int push_off(size_t bytes, size_t unit, uint32_t *out, oxl_error *err) {
    if (bytes % unit != 0 || bytes / unit > UINT32_MAX) {
        return oxl_err_set(err, "MoE on the device: offset %zu bytes is not a 32-bit count of %zu-byte units", bytes,
                           unit);
    }
    *out = (uint32_t)(bytes / unit);
    return 0;
}

/* Workgroups for n invocations of a 1-D shader (oxl_gpu_groups_1d); -1 when the shader is not in
 * the list. */
static int groups_1d(const char *shader, uint64_t n, uint32_t *gx, uint32_t *gz, oxl_error *err) {
    const oxl_gpu_shader_info *info = oxl_gpu_shader(shader);
    if (!info) {
        return oxl_err_set(err, "MoE on the device: no shader %s", shader);
    }
    oxl_gpu_groups_1d(n, info->local, gx, gz);
    return 0;
}

static oxl_gpu_bind whole(oxl_gpu_buf *b) { return (oxl_gpu_bind){.buf = b}; }

/* The scratch region `off` bytes into work. */
static oxl_gpu_bind at(oxl_gpu_bind work, size_t off) { return (oxl_gpu_bind){.buf = work.buf, .off = work.off + off}; }

/* ncols columns of K floats at src (contiguous) in the partner format of weight type t: src itself
 * for f32, else converted into dst (quantize_f16 / _bf16 / _q8_0 / _q8_1 / _q8_K, columns
 * partner_col apart) and *out = dst. */
static int to_partner(oxl_gpu *g, oxl_type t, oxl_gpu_bind src, uint32_t K, uint32_t ncols, oxl_gpu_bind dst,
                      oxl_gpu_bind *out, oxl_error *err) {
    const oxl_type p = partner(t);
    *out = dst;
    if (p == OXL_TYPE_F32) {
        *out = src;
        return 0;
    }
    uint32_t x_off = 0, y_off = 0;
    if (push_off(src.off, 4, &x_off, err) || push_off(dst.off, partner_unit(t), &y_off, err)) {
        return -1;
    }
    if (p == OXL_TYPE_F16 || p == OXL_TYPE_BF16) {
        return oxl_gpu_quantize(g, p == OXL_TYPE_F16 ? "quantize_f16" : "quantize_bf16", src.buf, x_off, dst.buf, y_off,
                                K * ncols, err);
    }
    return oxl_gpu_quantize_q8(g, p, src.buf, x_off, K, dst.buf, y_off, partner_col(t, K), K, ncols, err);
}

/* Y (nrows, n) = W . X for a plain matrix w at wb: X at x in w's partner format, columns x_col
 * elements apart; Y at y, columns y_col floats apart. */
static int mul_mat(oxl_gpu *g, const oxl_tensor *w, oxl_gpu_bind wb, oxl_gpu_bind x, uint32_t x_col, oxl_gpu_bind y,
                   uint32_t y_col, int32_t n, oxl_error *err) {
    char shader[32];
    snprintf(shader, sizeof shader, "mul_mat_%s", oxl_type_traits_get((uint32_t)w->type)->name);
    oxl_gpu_mm_push pc = {.nrows = (uint32_t)w->ne[1],
                          .ncols = (uint32_t)n,
                          .K = (uint32_t)w->ne[0],
                          .w_row = (uint32_t)w->row_size,
                          .x_col = x_col,
                          .y_col = y_col};
    if (push_off(wb.off, 1, &pc.w_off, err) || push_off(x.off, partner_unit(w->type), &pc.x_off, err) ||
        push_off(y.off, 4, &pc.y_off, err)) {
        return -1;
    }
    return oxl_gpu_mul_mat(g, shader, wb.buf, x.buf, y.buf, &pc, err);
}

/* The push constants of mul_mat_id_<fmt>: mul_mat's, then the expert selection. */
typedef struct mm_id_push {
    uint32_t nrows, ncols, K, w_off, w_row, x_off, x_col, y_off, y_col;
    uint32_t n_used, w_expert, x_slot, ids_off;
} mm_id_push;

/* Y[:, s, t] = W_ids[s,t] . X[:, s, t] (+ B[:, ids[s, t]]) for the n tokens' n_used slots: w the
 * 3-D expert tensor (its expert-0 view) at wb, X at x (x_col elements between tokens,
 * x_slot between slots: 0 when every slot reads its token's column), ids and Y at bytes of work. */
static int mul_mat_id(oxl_gpu *g, const oxl_moe_opts *o, const oxl_tensor *w, oxl_gpu_bind wb, const oxl_tensor *bias,
                      oxl_gpu_bind bb, oxl_gpu_buf *work, size_t ids, oxl_gpu_bind x, uint32_t x_col, uint32_t x_slot,
                      size_t y, int32_t n, oxl_error *err) {
    const uint32_t K = (uint32_t)o->n_expert_used, rows = (uint32_t)w->ne[1];
    char shader[32];
    snprintf(shader, sizeof shader, "mul_mat_id_%s", oxl_type_traits_get((uint32_t)w->type)->name);
    mm_id_push pc = {.nrows = rows,
                     .K = (uint32_t)w->ne[0],
                     .w_row = (uint32_t)w->row_size,
                     .x_col = x_col,
                     .y_col = rows,
                     .n_used = K,
                     .w_expert = (uint32_t)(w->row_size * (size_t)w->ne[1]),
                     .x_slot = x_slot};
    if (wb.off + w->row_size * (size_t)w->ne[1] * (size_t)o->n_expert > UINT32_MAX) {
        return oxl_err_set(err, "MoE on the device: %s ends past 4 GiB of its buffer (32-bit byte offsets)", w->name);
    }
    uint32_t x0 = 0, y0 = 0, ids0 = 0;
    if (push_off(wb.off, 1, &pc.w_off, err) || push_off(x.off, partner_unit(w->type), &x0, err) ||
        push_off(y, 4, &y0, err) || push_off(ids, 4, &ids0, err)) {
        return -1;
    }
    const oxl_gpu_bind b[] = {whole(wb.buf), whole(x.buf), whole(work), whole(work)};
    /* the (token, slot) pairs go over y: at most 65535 per dispatch, whole tokens */
    const int32_t per = (int32_t)(65535 / K);
    for (int32_t t0 = 0; t0 < n; t0 += per) {
        const int32_t m = n - t0 < per ? n - t0 : per;
        pc.ncols = (uint32_t)m * K;
        pc.x_off = x0 + (uint32_t)t0 * x_col;
        pc.y_off = y0 + (uint32_t)t0 * K * rows;
        pc.ids_off = ids0 + (uint32_t)t0 * K;
        const uint32_t gx = rows < 65535 ? rows : 65535, gz = (rows + gx - 1) / gx;
        if (oxl_gpu_dispatch(g, shader, b, 4, &pc, sizeof pc, gx, pc.ncols, gz, err)) {
            return -1;
        }
    }
    if (!bias->data) {
        return 0;
    }
    struct {
        uint32_t nrows, npairs, y_off, y_col, b_off, b_row, ids_off;
    } pa = {rows, (uint32_t)n * K, y0, rows, 0, (uint32_t)bias->ne[0], ids0};
    if (push_off(bb.off, 4, &pa.b_off, err)) {
        return -1;
    }
    const oxl_gpu_bind ba[] = {whole(work), whole(bb.buf), whole(work)};
    uint32_t gx, gz;
    if (groups_1d("add_id", (uint64_t)rows * n * K, &gx, &gz, err)) {
        return -1;
    }
    return oxl_gpu_dispatch(g, "add_id", ba, 3, &pa, sizeof pa, gx, 1, gz, err);
}

/* y = act(gate, up) over `rows` rows of `width` values (contiguous), into gate. */
static int activation(oxl_gpu *g, oxl_moe_act act, oxl_gpu_buf *work, size_t gate, size_t up, uint32_t width,
                      uint32_t rows, oxl_error *err) {
    const oxl_gpu_bind b[] = {whole(work), whole(work), whole(work)};
    uint32_t g_off = 0, u_off = 0, gx, gz;
    if (push_off(gate, 4, &g_off, err) || push_off(up, 4, &u_off, err)) {
        return -1;
    }
    if (act == OXL_MOE_SWIGLU_OAI) {
        struct {
            uint32_t n, g_off, u_off, y_off;
            float alpha, limit;
        } pc = {width * rows, g_off, u_off, g_off, 1.702f, 7.0f};
        if (groups_1d("glu_swiglu_oai", (uint64_t)width * rows, &gx, &gz, err)) {
            return -1;
        }
        return oxl_gpu_dispatch(g, "glu_swiglu_oai", b, 3, &pc, sizeof pc, gx, 1, gz, err);
    }
    const char *shader = act_shader(act);
    const struct {
        uint32_t n, n_rows, g_off, g_row, u_off, u_row, y_off, y_row;
    } pc = {width, rows, g_off, width, u_off, width, g_off, width};
    if (groups_1d(shader, (uint64_t)width * rows, &gx, &gz, err)) {
        return -1;
    }
    return oxl_gpu_dispatch(g, shader, b, 3, &pc, sizeof pc, gx, 1, gz, err);
}

/* ---- the block ---------------------------------------------------------------------------- */

/* The push constants of topk_moe. */
typedef struct topk_push {
    uint32_t n_expert, n_used, n_tokens, gating, flags, n_group, n_group_used;
    float w_scale;
    uint32_t l_off, l_col, rb_off, pb_off, ids_off, w_off;
} topk_push;

int oxl_moe_gpu_route(oxl_gpu *g, const oxl_moe_opts *o, const oxl_moe_gpu_layer *l, oxl_gpu_bind logits, int32_t n,
                      oxl_gpu_bind ids, oxl_gpu_bind w, oxl_error *err) {
    const oxl_moe_layer *h = l->host;
    const uint32_t X = (uint32_t)o->n_expert, K = (uint32_t)o->n_expert_used;
    if (K > MOE_GPU_MAX_USED) {
        return oxl_err_set(err, "MoE on the device: %d experts chosen per token (at most %d)", (int)K,
                           MOE_GPU_MAX_USED);
    }
    topk_push tk = {.n_expert = X,
                    .n_used = K,
                    .gating = (uint32_t)o->gating,
                    .flags = (h->gate_inp_b.data ? 1u : 0u) | (h->exp_probs_b.data ? 2u : 0u) |
                             (o->select_logits ? 4u : 0u) | (o->norm_w ? 8u : 0u),
                    .n_group = (uint32_t)(o->n_group > 1 ? o->n_group : 0),
                    .n_group_used = (uint32_t)o->n_group_used,
                    .w_scale = o->w_scale,
                    .l_col = X};
    if (push_off(logits.off, 4, &tk.l_off, err) || push_off(ids.off, 4, &tk.ids_off, err) ||
        push_off(w.off, 4, &tk.w_off, err) || (h->gate_inp_b.data && push_off(l->gate_inp_b.off, 4, &tk.rb_off, err)) ||
        (h->exp_probs_b.data && push_off(l->exp_probs_b.off, 4, &tk.pb_off, err))) {
        return -1;
    }
    const oxl_gpu_bind tb[] = {whole(logits.buf), whole(h->gate_inp_b.data ? l->gate_inp_b.buf : logits.buf),
                               whole(h->exp_probs_b.data ? l->exp_probs_b.buf : logits.buf), whole(ids.buf),
                               whole(w.buf)};
    for (int32_t t0 = 0; t0 < n; t0 += 65535) { /* one workgroup per token */
        const uint32_t m = (uint32_t)(n - t0 < 65535 ? n - t0 : 65535);
        topk_push pc = tk;
        pc.n_tokens = m;
        pc.l_off += (uint32_t)t0 * X;
        pc.ids_off += (uint32_t)t0 * K;
        pc.w_off += (uint32_t)t0 * K;
        if (oxl_gpu_dispatch(g, "topk_moe", tb, 5, &pc, sizeof pc, m, 1, 1, err)) {
            return -1;
        }
    }
    return 0;
}

/* The push constants of moe_sum. */
typedef struct sum_push {
    uint32_t n_embd, n_tokens, n_used, flags, d_off, w_off, sh_off, gate_off, o_off;
} sum_push;

/* The shared experts' SwiGLU FFN on every token into s_down, and their gate's logits into s_z. */
static int shared_experts(oxl_gpu *g, const oxl_moe_opts *o, const oxl_moe_gpu_layer *l, const moe_scratch *s,
                          uint32_t E, oxl_gpu_bind x, int32_t n, oxl_gpu_bind work, oxl_error *err) {
    const oxl_moe_layer *h = l->host;
    const uint32_t S = (uint32_t)o->n_ff_shexp;
    const oxl_gpu_bind up = at(work, s->s_up), gate = at(work, s->s_gate), down = at(work, s->s_down);
    oxl_gpu_bind xs, as;
    if (to_partner(g, h->up_shexp.type, x, E, (uint32_t)n, at(work, s->xq), &xs, err) ||
        mul_mat(g, &h->up_shexp, l->up_shexp, xs, partner_col(h->up_shexp.type, E), up, S, n, err) ||
        mul_mat(g, &h->gate_shexp, l->gate_shexp, xs, partner_col(h->up_shexp.type, E), gate, S, n, err) ||
        activation(g, OXL_MOE_SILU, work.buf, gate.off, up.off, S, (uint32_t)n, err) ||
        to_partner(g, h->down_shexp.type, gate, S, (uint32_t)n, at(work, s->s_aq), &as, err) ||
        mul_mat(g, &h->down_shexp, l->down_shexp, as, partner_col(h->down_shexp.type, S), down, E, n, err)) {
        return -1;
    }
    if (!h->gate_inp_shexp.data) {
        return 0;
    }
    /* z (1, n) = the gate vector . x: a one-row f32 matrix */
    const oxl_tensor gv = {.name = h->gate_inp_shexp.name,
                           .type = OXL_TYPE_F32,
                           .ne = {E, 1},
                           .row_size = (size_t)E * sizeof(float),
                           .data = h->gate_inp_shexp.data};
    return mul_mat(g, &gv, l->gate_inp_shexp, x, E, at(work, s->s_z), 1, n, err);
}

int oxl_moe_gpu_forward(oxl_gpu *g, const oxl_moe_opts *o, const oxl_moe_gpu_layer *l, int64_t n_embd, oxl_gpu_bind x,
                        int32_t n, oxl_gpu_bind out, oxl_gpu_bind work, oxl_error *err) {
    const oxl_moe_layer *h = l->host;
    const uint32_t E = (uint32_t)n_embd, X = (uint32_t)o->n_expert, K = (uint32_t)o->n_expert_used;
    const uint32_t F = (uint32_t)o->n_ff_exp;
    const char *why = oxl_moe_gpu_unsupported(g, o, h);
    if (why) {
        return oxl_err_set(err, "MoE on the device: %s", why);
    }
    const moe_scratch s = scratch_layout(o, n_embd, n);
    oxl_gpu_buf *wb = work.buf;

    /* router logits, then each token's experts and weights */
    oxl_gpu_bind xr, xe, ae;
    if (to_partner(g, h->gate_inp.type, x, E, (uint32_t)n, at(work, s.xq), &xr, err) ||
        mul_mat(g, &h->gate_inp, l->gate_inp, xr, partner_col(h->gate_inp.type, E), at(work, s.logits), X, n, err) ||
        oxl_moe_gpu_route(g, o, l, at(work, s.logits), n, at(work, s.ids), at(work, s.w), err)) {
        return -1;
    }

    /* the chosen experts: up and gate on the token's input, the activation, down on that */
    const size_t ids = work.off + s.ids;
    const uint32_t xcol = partner_col(h->up_exps.type, E), acol = partner_col(h->down_exps.type, F);
    if (to_partner(g, h->up_exps.type, x, E, (uint32_t)n, at(work, s.xq), &xe, err) ||
        mul_mat_id(g, o, &h->up_exps, l->up_exps, &h->up_exps_b, l->up_exps_b, wb, ids, xe, xcol, 0, work.off + s.up, n,
                   err) ||
        mul_mat_id(g, o, &h->gate_exps, l->gate_exps, &h->gate_exps_b, l->gate_exps_b, wb, ids, xe, xcol, 0,
                   work.off + s.gate, n, err) ||
        activation(g, o->act, wb, work.off + s.gate, work.off + s.up, F, K * (uint32_t)n, err) ||
        to_partner(g, h->down_exps.type, at(work, s.gate), F, K * (uint32_t)n, at(work, s.aq), &ae, err) ||
        mul_mat_id(g, o, &h->down_exps, l->down_exps, &h->down_exps_b, l->down_exps_b, wb, ids, ae, K * acol, acol,
                   work.off + s.down, n, err)) {
        return -1;
    }

    /* the shared experts, then the weighted sum of the slots (+ the shared output) into out */
    if (h->up_shexp.data && shared_experts(g, o, l, &s, E, x, n, work, err)) {
        return -1;
    }
    sum_push sp = {.n_embd = E,
                   .n_tokens = (uint32_t)n,
                   .n_used = K,
                   .flags = (h->up_shexp.data ? 1u : 0u) | (h->gate_inp_shexp.data ? 2u : 0u)};
    uint32_t gx, gz;
    if (push_off(work.off + s.down, 4, &sp.d_off, err) || push_off(work.off + s.w, 4, &sp.w_off, err) ||
        push_off(work.off + s.s_down, 4, &sp.sh_off, err) || push_off(work.off + s.s_z, 4, &sp.gate_off, err) ||
        push_off(out.off, 4, &sp.o_off, err) || groups_1d("moe_sum", (uint64_t)E * n, &gx, &gz, err)) {
        return -1;
    }
    const oxl_gpu_bind sb[] = {whole(wb), whole(wb), whole(wb), whole(wb), whole(out.buf)};
    return oxl_gpu_dispatch(g, "moe_sum", sb, 5, &sp, sizeof sp, gx, 1, gz, err);
}

#endif
