#include "attention.h"

#include "act.h"
#include "oxl_fp16.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* The flash path's per-thread state lives on the thread's stack: at most OXL_ATTN_ACC accumulator
 * values for the query heads of one item (each head_dim long), and at most OXL_ATTN_HEADS heads. */
#define OXL_ATTN_ACC 8192
#define OXL_ATTN_HEADS 64
/* Bytes of one query head converted to K's vec_dot_type: head_dim <= 1024 (checked at load), and
 * f32 is the widest format. */
#define OXL_ATTN_QROW (1024 * 4)
/* Cache rows per step of the f16-V flash kernel: the scores of a block first, then each head's
 * online softmax over them and one mad_rows run over the block's value rows. */
#define OXL_ATTN_BLOCK 64
/* Visible positions from which a pass with fewer items than threads splits each item's positions
 * over several parts (merged afterwards), rather than its query heads; ggml splits a one-token
 * pass's cache over its threads from 512 cells on (ggml_compute_forward_flash_attn_ext_f16). */
#define OXL_ATTN_SPLIT_MIN 512
/* Most items of one flash part interleaved block by block (f16 V): for a one-token pass, the KV
 * heads of a thread's share read as adjacent columns of each cache row. */
#define OXL_ATTN_GROUP 8

typedef struct attn_task {
    oxl_kv_view kv; /* the layer's cache and the pass's tokens */
    const float *q;
    float *out;
    oxl_attn_params p;
    float m0, m1; /* ALiBi slope bases (ggml_soft_max_ext / ggml_flash_attn_ext) */
    uint32_t n_head_log2;
    float *scores;
    oxl_vec_dot_fn vec_dot;    /* K·q for the K cache's type */
    oxl_quant_fn q_conv;       /* q to K's vec_dot_type (NULL: f32, used as is) */
    size_t q_row;              /* bytes of one converted query head */
    oxl_dequant_fn v_to_float; /* f16 or quantized V rows to f32 (NULL for f32 V) */
    oxl_mad_fn mad;            /* the accumulator step: fma, rounded to halves with an f16 V */
    oxl_mad_rows_fn mad_rows;  /* f16 V: a block of those steps with their rescales, NULL otherwise */
    oxl_dot_rows_fn dot_rows;  /* f16 K with vec_dot's ISA: a block's scores of one head, NULL otherwise */
    int group;                 /* query heads per KV head */
    int chunk;                 /* flash: query heads per item (a group is split into group/chunk items) */
    int flash_group;           /* flash: consecutive items per part, their blocks interleaved (f16 V) */
    int n_chunks;
    /* split flash items: each item's visible positions in n_split runs of split_len, each run's
     * running max, sum and accumulator ((2 + head_dim) floats per head) in partials, then merged */
    int n_split;
    int32_t split_len;
    float *partials;
    /* tiled flash (batches of OXL_FA_TILE_Q+ tokens): the token tiles, each of one sequence */
    int32_t *tile_j0, *tile_n;
    int32_t n_tiles;
    oxl_sgemm_acc_fn sgemm;
    oxl_softmax_fn softmax;
    oxl_dequant_fn k_to_float; /* f16 K/V rows to f32, NULL for f32 */
    float *tile_buf;           /* tile_floats per part */
    size_t tile_floats;
} attn_task;

/* The per-token part of an item: cache rows and visible positions. */
typedef struct attn_item {
    size_t k_off, v_off; /* bytes from a cache row's start to this KV head's columns */
    size_t row0;         /* cache row of the sequence's position 0 */
    int32_t lo;          /* first visible position (sliding window) */
    int32_t n_kv;        /* causal: positions lo .. pos of the token */
    int32_t pos;
} attn_item;

static attn_item attn_item_at(const attn_task *t, int32_t j, int hk) {
    const oxl_kv_view *kv = &t->kv;
    const oxl_attn_params *p = &t->p;
    const int32_t pos = kv->pos[j];
    return (attn_item){
        .k_off = oxl_row_size(kv->type_k, (int64_t)hk * p->head_dim),
        .v_off = oxl_row_size(kv->type_v, (int64_t)hk * p->head_dim),
        .row0 = (size_t)kv->seq[j] * (size_t)kv->n_ctx,
        .lo = p->n_chunk > 0                           ? pos / p->n_chunk * p->n_chunk
              : p->n_swa > 0 && pos - p->n_swa + 1 > 0 ? pos - p->n_swa + 1
                                                       : 0,
        .n_kv = (kv->pos_hi ? kv->pos_hi[j] : pos) + 1,
        .pos = pos,
    };
}

void oxl_attention_range(const oxl_kv_view *kv, const oxl_attn_params *p, int32_t j, int32_t *lo, int32_t *n_kv) {
    const attn_task t = {.kv = *kv, .p = *p};
    const attn_item it = attn_item_at(&t, j, 0);
    *lo = it.lo;
    *n_kv = it.n_kv;
}

/* Query head h of token j, converted to K's vec_dot_type in buf when K is not f32 (ggml converts q
 * with the from_float of K's vec_dot_type: f16, bf16, q8_0 for q8_0, q4_0, q5_0 and iq4_nl caches,
 * q8_1 for q4_1 and q5_1). */
static const void *attn_query(const attn_task *t, int32_t j, int h, void *buf) {
    const float *qj = t->q + ((size_t)j * t->p.n_head + h) * t->p.head_dim;
    if (!t->q_conv) {
        return qj;
    }
    t->q_conv(qj, buf, t->p.head_dim);
    return buf;
}

/* ALiBi slope of head h (1 without ALiBi, whose bias is then 0). */
static float attn_slope(const attn_task *t, int h) {
    if (t->p.max_bias <= 0.0f) {
        return 1.0f;
    }
    const uint32_t hu = (uint32_t)h;
    return hu < t->n_head_log2 ? powf(t->m0, (float)(hu + 1)) : powf(t->m1, (float)(2 * (hu - t->n_head_log2) + 1));
}

float oxl_attention_slope(const oxl_attn_params *p, int h) {
    attn_task t = {.p = *p};
    if (p->max_bias > 0.0f) {
        t.n_head_log2 = 1u << (uint32_t)floor(log2((double)p->n_head));
        t.m0 = powf(2.0f, -(p->max_bias) / (float)t.n_head_log2);
        t.m1 = powf(2.0f, -(p->max_bias / 2.0f) / (float)t.n_head_log2);
    }
    return attn_slope(&t, h);
}

static const char *attn_key(const attn_task *t, const attn_item *it, int32_t p) {
    const oxl_kv_view *kv = &t->kv;
    return (const char *)kv->k + (it->row0 + (size_t)p) * kv->k_row + it->k_off;
}

static const void *attn_value(const attn_task *t, const attn_item *it, int32_t p) {
    const oxl_kv_view *kv = &t->kv;
    return (const char *)kv->v + (it->row0 + (size_t)p) * kv->v_row + it->v_off;
}

/* The mask value of position p: 0, or ALiBi's -(distance) times the head's slope. */
static float attn_bias(const attn_task *t, const attn_item *it, float slope, int32_t p) {
    return t->p.max_bias > 0.0f ? slope * (float)-(it->pos - p) : 0.0f;
}

/* Unfused attention, as llama.cpp's graph without -fa: kq = K·q, the soft-cap of the raw scores,
 * softmax(kq*scale + slope*mask) summing in double (ggml_soft_max_ext), then the weighted sum of
 * values (kq converted to V's type for an f16 or bf16 V cache, the matrix product's vec_dot_type;
 * a quantized V is refused without flash attention). One item per (token, query head). */
static void attn_unfused(void *arg, int ith, int nth) {
    attn_task *t = arg;
    const oxl_kv_view *kv = &t->kv;
    const int D = t->p.head_dim;
    const float cap = t->p.softcap, cap_inv = cap != 0.0f ? 1.0f / cap : 0.0f;
    float *sc = t->scores + (size_t)ith * (size_t)(kv->n_ctx + D);
    float *acc = sc + kv->n_ctx;
    _Alignas(64) char qbuf[OXL_ATTN_QROW];
    /* items dealt round-robin: causal rows grow with the position, so contiguous ranges would leave
     * the thread holding the last tokens with most of the work */
    const int64_t n_items = (int64_t)kv->n_tokens * t->p.n_head;
    for (int64_t item = ith; item < n_items; item += nth) {
        const int32_t j = (int32_t)(item / t->p.n_head);
        const int h = (int)(item % t->p.n_head);
        const attn_item it = attn_item_at(t, j, h / t->group);
        const void *q = attn_query(t, j, h, qbuf);
        const float slope = attn_slope(t, h);
        float max = -INFINITY;
        for (int32_t p = it.lo; p < it.n_kv; p++) {
            float s;
            t->vec_dot(D, &s, attn_key(t, &it, p), q);
            if (cap != 0.0f) {
                s = tanhf(s * cap_inv) * cap;
            }
            sc[p] = s * t->p.scale + attn_bias(t, &it, slope, p);
            max = sc[p] > max ? sc[p] : max;
        }
        const float sink = t->p.sinks ? t->p.sinks[h] : -INFINITY;
        max = sink > max ? sink : max;
        double sum = 0.0;
        for (int32_t p = it.lo; p < it.n_kv; p++) {
            sc[p] = expf(sc[p] - max);
            sum += (double)sc[p];
        }
        if (t->p.sinks) {
            sum += (double)expf(sink - max);
        }
        const float inv = (float)(1.0 / sum);
        memset(acc, 0, (size_t)D * sizeof(float));
        for (int32_t p = it.lo; p < it.n_kv; p++) {
            const float w = sc[p] * inv;
            if (kv->type_v == OXL_TYPE_F16) {
                const uint16_t *vp = attn_value(t, &it, p);
                const float wh = oxl_fp16_to_fp32(oxl_fp32_to_fp16(w));
                for (int d = 0; d < D; d++) {
                    acc[d] += wh * oxl_fp16_to_fp32(vp[d]);
                }
            } else if (kv->type_v == OXL_TYPE_BF16) {
                const uint16_t *vp = attn_value(t, &it, p);
                const float wb = oxl_bf16_to_fp32(oxl_fp32_to_bf16(w));
                for (int d = 0; d < D; d++) {
                    acc[d] += wb * oxl_bf16_to_fp32(vp[d]);
                }
            } else {
                const float *vp = attn_value(t, &it, p);
                for (int d = 0; d < D; d++) {
                    acc[d] += w * vp[d];
                }
            }
        }
        memcpy(t->out + ((size_t)j * t->p.n_head + h) * D, acc, (size_t)D * sizeof(float));
    }
}

/* One flash score from its dot s = K·q: scaled, soft-capped when the model caps (scale is then divided
 * by the cap), plus the position's bias (mask, ALiBi); ggml_compute_forward_flash_attn_ext_f16's
 * order. attn_score computes the dot first. */
static float attn_finish(const attn_task *t, const attn_item *it, float s, float scale, float slope, int32_t p) {
    s *= scale;
    if (t->p.softcap != 0.0f) {
        s = t->p.softcap * tanhf(s);
    }
    return s + attn_bias(t, it, slope, p);
}

static float attn_score(const attn_task *t, const attn_item *it, const char *kp, const void *q, float scale,
                        float slope, int32_t p) {
    float s;
    t->vec_dot(t->p.head_dim, &s, kp, q);
    return attn_finish(t, it, s, scale, slope, p);
}

/* The block of nb positions from p0 of an f16-V flash item, for its nh query heads (q, slopes,
 * accumulators acc of head_dim each, sums S and maxima M): the scores of every head (each K row
 * read once for all), then per head the online softmax's steps over the block in order, and one
 * mad_rows over the block's value rows for all heads (each V row converted once). Per head, the
 * same operations in the same order as attn_flash's position-by-position loop, so the blocks of an
 * item taken in order, interleaved with other items' blocks or not, give its bits. */
static void attn_flash_block(const attn_task *t, const attn_item *it, int32_t p0, int nb, int nh, const void *const *q,
                             const float *slope, float *acc, float *S, float *M) {
    const int D = t->p.head_dim;
    const float cap = t->p.softcap;
    const float scale = cap != 0.0f ? t->p.scale / cap : t->p.scale;
    float sc[OXL_ATTN_HEADS * OXL_ATTN_BLOCK], ms[OXL_ATTN_HEADS * OXL_ATTN_BLOCK], vs[OXL_ATTN_HEADS * OXL_ATTN_BLOCK];
    if (t->dot_rows) {
        /* the block's raw dots per head (vec_dot's sums, four rows at a time), then each finished */
        for (int i = 0; i < nh; i++) {
            float *si = sc + i * OXL_ATTN_BLOCK;
            t->dot_rows(D, nb, 1, si, attn_key(t, it, p0), t->kv.k_row, q[i], 0);
            for (int b = 0; b < nb; b++) {
                si[b] = attn_finish(t, it, si[b], scale, slope[i], p0 + b);
            }
        }
    } else {
        for (int b = 0; b < nb; b++) {
            const char *kp = attn_key(t, it, p0 + b);
            for (int i = 0; i < nh; i++) {
                sc[i * OXL_ATTN_BLOCK + b] = attn_score(t, it, kp, q[i], scale, slope[i], p0 + b);
            }
        }
    }
    for (int i = 0; i < nh; i++) {
        const float *si = sc + i * OXL_ATTN_BLOCK;
        float *msi = ms + i * nb, *vsi = vs + i * nb;
        float m = M[i], sum = S[i];
        for (int b = 0; b < nb; b++) {
            float msb = 1.0f, vsb = 1.0f;
            if (si[b] > m) {
                msb = expf(m - si[b]);
                m = si[b];
            } else {
                vsb = expf(si[b] - m);
            }
            msi[b] = msb;
            vsi[b] = vsb;
            /* contracted in ggml's build; fma(sum, 1, v) is sum + v rounded once, so only a new maximum
             * (rare) calls libm's fmaf, which this portable file cannot inline */
            sum = msb == 1.0f ? sum + vsb : fmaf(sum, msb, vsb);
        }
        M[i] = m;
        S[i] = sum;
    }
    t->mad_rows(D, nb, nh, acc, attn_value(t, it, p0), t->kv.v_row, ms, vs);
}

/* A head's learned sink joins its running softmax after the values, in f32 (flash-attn's sinks). */
static void attn_sink(float sk, float *a, int D, float *S, float *M) {
    float ms = 1.0f, vs = 1.0f;
    if (sk > *M) {
        ms = expf(*M - sk);
        *M = sk;
        oxl_scale(a, D, ms);
    } else {
        vs = expf(sk - *M);
    }
    *S = *S * ms + vs;
}

/* Flash attention, as ggml_flash_attn_ext on the CPU: for each query head, each score is scaled (by
 * scale / softcap with a soft-cap, then softcap * tanh), the mask added, then an online softmax over
 * the positions (running max M and sum S), rescaling the accumulator when the max grows. With an
 * f16 V cache the accumulator itself is f16, rounded after every fused multiply-add, exactly as
 * ggml's ggml_vec_mad_f16 / ggml_vec_scale_f16 do (held here as the f32 values of those halves, each
 * step rounded through the f16 row converters: the same values, whole rows at a time); with f32 or a
 * quantized V (each row converted to f32 by the format's dequantizer, ggml's v_to_float) it is f32
 * (ggml_vec_mad_f32).
 * One item is one token and a chunk of the query heads that share a KV head: each K and V row is
 * read once for all of them, and every head's arithmetic is the same sequence as one head alone. */
static void attn_flash(void *arg, int ith, int nth) {
    attn_task *t = arg;
    const int D = t->p.head_dim;
    const float cap = t->p.softcap;
    const float scale = cap != 0.0f ? t->p.scale / cap : t->p.scale;
    _Alignas(64) float acc[OXL_ATTN_ACC];
    _Alignas(64) char qbuf[OXL_ATTN_ACC * sizeof(float)]; /* heads * q_row <= heads * head_dim * 4 */
    _Alignas(64) float vbuf[1024];
    const void *q[OXL_ATTN_HEADS];
    float S[OXL_ATTN_HEADS], M[OXL_ATTN_HEADS], slope[OXL_ATTN_HEADS];
    /* the items of one group: their cache rows, ranges, first query head, heads and first state slot */
    attn_item its[OXL_ATTN_GROUP];
    int32_t g_lo[OXL_ATTN_GROUP], g_hi[OXL_ATTN_GROUP], g_j[OXL_ATTN_GROUP];
    int g_h0[OXL_ATTN_GROUP], g_nh[OXL_ATTN_GROUP], g_off[OXL_ATTN_GROUP], g_sp[OXL_ATTN_GROUP];
    int64_t g_part[OXL_ATTN_GROUP];
    /* groups of flash_group consecutive items dealt round-robin to the parts: causal rows grow with
     * the position, so contiguous ranges would leave the part holding the last tokens with most of
     * the work */
    const int64_t per_token = (int64_t)t->p.n_head_kv * t->n_chunks;
    const int64_t n_items = (int64_t)t->kv.n_tokens * per_token * t->n_split;
    const int G = t->flash_group;
    const int64_t n_groups = (n_items + G - 1) / G;
    for (int64_t grp = ith; grp < n_groups; grp += nth) {
        const int ng = n_items - grp * G < G ? (int)(n_items - grp * G) : G;
        int off = 0;
        for (int g = 0; g < ng; g++) {
            const int64_t part = grp * G + g;
            const int64_t item = part / t->n_split;
            const int sp = (int)(part % t->n_split);
            const int32_t j = (int32_t)(item / per_token);
            const int hk = (int)(item % per_token / t->n_chunks);
            const int h0 = hk * t->group + (int)(item % t->n_chunks) * t->chunk;
            const int nh = (hk + 1) * t->group - h0 < t->chunk ? (hk + 1) * t->group - h0 : t->chunk;
            its[g] = attn_item_at(t, j, hk);
            for (int i = 0; i < nh; i++) {
                q[off + i] = attn_query(t, j, h0 + i, qbuf + (size_t)(off + i) * t->q_row);
                slope[off + i] = attn_slope(t, h0 + i);
                S[off + i] = 0.0f;
                M[off + i] = -INFINITY;
            }
            memset(acc + (size_t)off * D, 0, (size_t)nh * D * sizeof(float));
            int32_t p_lo = its[g].lo, p_hi = its[g].n_kv;
            if (t->n_split > 1) {
                const int64_t lo = (int64_t)its[g].lo + (int64_t)sp * t->split_len;
                p_lo = lo < its[g].n_kv ? (int32_t)lo : its[g].n_kv;
                p_hi = its[g].n_kv - p_lo > t->split_len ? p_lo + t->split_len : its[g].n_kv;
            }
            g_lo[g] = p_lo, g_hi[g] = p_hi, g_j[g] = j, g_h0[g] = h0, g_nh[g] = nh, g_off[g] = off, g_sp[g] = sp;
            g_part[g] = part;
            off += nh;
        }
        if (t->mad_rows) {
            /* block k of every item of the group, then block k + 1: the items' K and V columns of a
             * cache row are adjacent, so the group streams whole stretches of rows */
            for (int32_t k = 0;; k++) {
                bool any = false;
                for (int g = 0; g < ng; g++) {
                    const int32_t p0 = g_lo[g] + k * OXL_ATTN_BLOCK;
                    if (p0 >= g_hi[g]) {
                        continue;
                    }
                    any = true;
                    const int nb = g_hi[g] - p0 < OXL_ATTN_BLOCK ? (int)(g_hi[g] - p0) : OXL_ATTN_BLOCK;
                    const int o = g_off[g];
                    attn_flash_block(t, &its[g], p0, nb, g_nh[g], q + o, slope + o, acc + (size_t)o * D, S + o, M + o);
                }
                if (!any) {
                    break;
                }
            }
        } else {
            /* f32 or quantized V: position by position, an f32 accumulator */
            for (int g = 0; g < ng; g++) {
                const int o = g_off[g];
                for (int32_t p = g_lo[g]; p < g_hi[g]; p++) {
                    const char *kp = attn_key(t, &its[g], p);
                    const void *vp = attn_value(t, &its[g], p);
                    if (t->v_to_float) {
                        t->v_to_float(vp, vbuf, D);
                        vp = vbuf;
                    }
                    for (int i = o; i < o + g_nh[g]; i++) {
                        const float s = attn_score(t, &its[g], kp, q[i], scale, slope[i], p);
                        float ms = 1.0f, vs = 1.0f;
                        if (s > M[i]) {
                            ms = expf(M[i] - s);
                            M[i] = s;
                            oxl_scale(acc + (size_t)i * D, D, ms);
                        } else {
                            vs = expf(s - M[i]);
                        }
                        t->mad(D, acc + (size_t)i * D, vp, vs);
                        S[i] = ms == 1.0f ? S[i] + vs : fmaf(S[i], ms, vs); /* as attn_flash_block */
                    }
                }
            }
        }
        for (int g = 0; g < ng; g++) {
            for (int i = 0; i < g_nh[g]; i++) {
                const int si = g_off[g] + i;
                float *a = acc + (size_t)si * D;
                if (t->p.sinks && g_sp[g] == 0) {
                    attn_sink(t->p.sinks[g_h0[g] + i], a, D, &S[si], &M[si]); /* in the first run only */
                }
                if (t->n_split > 1) {
                    float *part_out = t->partials + ((size_t)g_part[g] * t->chunk + (size_t)i) * (size_t)(D + 2);
                    part_out[0] = M[si];
                    part_out[1] = S[si];
                    memcpy(part_out + 2, a, (size_t)D * sizeof(float));
                    continue;
                }
                const float s_inv = S[si] == 0.0f ? 0.0f : 1.0f / S[si];
                float *out = t->out + ((size_t)g_j[g] * t->p.n_head + g_h0[g] + i) * D;
                for (int d = 0; d < D; d++) {
                    out[d] = a[d] * s_inv;
                }
            }
        }
    }
}

/* The runs of a split flash item merged in order, as ggml_flash_attn_ext_reduce_partials: a run with
 * a zero sum is skipped; otherwise M' = max(M, M_run), the merged accumulator and sum both
 * acc * exp(M - M') + acc_run * exp(M_run - M'); the output acc / sum (0 for a zero sum). One part
 * per (token, query head). */
static void attn_merge(void *arg, int ith, int nth) {
    attn_task *t = arg;
    const int D = t->p.head_dim;
    float acc[1024];
    const int64_t n_rows = (int64_t)t->kv.n_tokens * t->p.n_head;
    for (int64_t row = ith; row < n_rows; row += nth) {
        const int32_t j = (int32_t)(row / t->p.n_head);
        const int h = (int)(row % t->p.n_head), hk = h / t->group;
        const int ci = (h - hk * t->group) / t->chunk, i = (h - hk * t->group) % t->chunk;
        const int64_t item = ((int64_t)j * t->p.n_head_kv + hk) * t->n_chunks + ci;
        float M = -INFINITY, S = 0.0f;
        memset(acc, 0, (size_t)D * sizeof(float));
        for (int sp = 0; sp < t->n_split; sp++) {
            const float *run = t->partials + (((size_t)item * t->n_split + sp) * t->chunk + i) * (size_t)(D + 2);
            if (run[1] == 0.0f) {
                continue;
            }
            const float m_new = fmaxf(M, run[0]);
            const float s_old = expf(M - m_new), s_new = expf(run[0] - m_new);
            for (int d = 0; d < D; d++) {
                acc[d] = acc[d] * s_old + run[2 + d] * s_new;
            }
            S = S * s_old + run[1] * s_new;
            M = m_new;
        }
        const float s_inv = S == 0.0f ? 0.0f : 1.0f / S;
        float *out = t->out + ((size_t)j * t->p.n_head + h) * D;
        for (int d = 0; d < D; d++) {
            out[d] = acc[d] * s_inv;
        }
    }
}

/* ggml's tiled flash attention (ggml_compute_forward_flash_attn_ext_tiled, ggml-cpu/ops.cpp), which
 * ggml runs for batches of at least GGML_FA_TILE_Q (64) tokens when K and V are both f32 or both f16
 * and head_dim is a multiple of 16: per query row, f32 queries (not rounded to f16), the keys and
 * values in tiles of 64 cache cells from cell 0, each tile's scores one product (simd_gemm),
 * times scale, soft-capped, plus the mask; a tile whose cells are all masked is skipped; the online
 * softmax works per tile (the tile's max, then ggml_vec_soft_max_f32's double sum added to the
 * float S), and the f32 accumulator gains softmax(scores) x V as one more product. Every row's
 * arithmetic depends only on the row, so the rows are grouped here as suits this cache: one item
 * is a KV head's query heads over a tile of up to 64 consecutive tokens of one sequence. */
#define OXL_FA_TILE_Q 64
#define OXL_FA_TILE_KV 64

static void attn_tiled(void *arg, int ith, int nth) {
    attn_task *t = arg;
    const int D = t->p.head_dim, G = t->group, T = OXL_FA_TILE_KV;
    const float cap = t->p.softcap;
    const float scale = cap != 0.0f ? t->p.scale / cap : t->p.scale;
    const int64_t max_rows = (int64_t)G * OXL_FA_TILE_Q;
    float *Q = t->tile_buf + (size_t)ith * t->tile_floats, *KQ = Q + max_rows * D, *mask = KQ + max_rows * T,
          *VKQ = mask + max_rows * T;
    float *V32 = VKQ + max_rows * D, *K32 = V32 + (size_t)T * D, *M = K32 + (size_t)T * D, *S = M + max_rows;
    bool *skip = (bool *)(S + max_rows);
    const int64_t n_items = (int64_t)t->p.n_head_kv * t->n_tiles;
    for (int64_t item = ith; item < n_items; item += nth) {
        const int hk = (int)(item % t->p.n_head_kv);
        const int32_t j0 = t->tile_j0[item / t->p.n_head_kv], len = t->tile_n[item / t->p.n_head_kv];
        const int h0 = hk * G;
        const int64_t rows = (int64_t)G * len; /* row r: head h0 + r / len, token j0 + r % len */
        attn_item tok[OXL_FA_TILE_Q];          /* each token's cache rows and visible positions */
        int32_t lo = INT32_MAX, end = 0;
        for (int32_t tq = 0; tq < len; tq++) {
            tok[tq] = attn_item_at(t, j0 + tq, hk);
            lo = tok[tq].lo < lo ? tok[tq].lo : lo;
            end = tok[tq].n_kv > end ? tok[tq].n_kv : end;
        }
        const attn_item it0 = attn_item_at(t, j0, hk); /* the rows all tokens of the tile share */
        for (int64_t r = 0; r < rows; r++) {
            memcpy(Q + r * D, t->q + ((size_t)(j0 + r % len) * t->p.n_head + h0 + r / len) * D,
                   (size_t)D * sizeof(float));
            M[r] = -INFINITY;
            S[r] = 0.0f;
        }
        memset(VKQ, 0, (size_t)rows * D * sizeof(float));
        memset(K32, 0, (size_t)T * D * sizeof(float));
        memset(V32, 0, (size_t)T * D * sizeof(float));
        for (int32_t ic = lo / T * T; ic < end; ic += T) {
            const int kv_tile = end - ic < T ? end - ic : T;
            bool can_skip = true;
            for (int hi = 0; hi < G; hi++) {
                const float slope = attn_slope(t, h0 + hi);
                for (int32_t tq = 0; tq < len; tq++) {
                    const attn_item *it = &tok[tq];
                    float *mrow = mask + ((int64_t)hi * len + tq) * T;
                    for (int tk = 0; tk < T; tk++) {
                        const int32_t p = ic + tk;
                        const float m =
                            tk < kv_tile && p >= it->lo && p < it->n_kv ? attn_bias(t, it, slope, p) : -INFINITY;
                        mrow[tk] = m;
                        can_skip &= m == -INFINITY;
                    }
                }
            }
            if (can_skip) {
                continue;
            }
            /* K tile transposed: K32[d][tk] */
            for (int tk = 0; tk < kv_tile; tk++) {
                const char *kp = attn_key(t, &it0, ic + tk);
                float krow[1024];
                if (t->k_to_float) {
                    t->k_to_float(kp, krow, D);
                } else {
                    memcpy(krow, kp, (size_t)D * sizeof(float));
                }
                for (int d = 0; d < D; d++) {
                    K32[d * T + tk] = krow[d];
                }
            }
            memset(KQ, 0, (size_t)rows * T * sizeof(float));
            t->sgemm(rows, D, T, KQ, Q, K32);
            for (int64_t e = 0; e < rows * T; e++) {
                KQ[e] *= scale;
            }
            if (cap != 0.0f) {
                for (int64_t e = 0; e < rows * T; e++) {
                    KQ[e] = tanhf(KQ[e]) * cap;
                }
            }
            for (int64_t e = 0; e < rows * T; e++) {
                /* padded cells: -inf (ggml sets them before adding its mask, whose value there is
                 * -inf too) */
                KQ[e] = KQ[e] + mask[e];
            }
            for (int64_t r = 0; r < rows; r++) {
                float *kq = KQ + r * T;
                float tile_max = -INFINITY;
                for (int tk = 0; tk < T; tk++) {
                    tile_max = tile_max > kq[tk] ? tile_max : kq[tk];
                }
                skip[r] = tile_max == -INFINITY;
                if (skip[r]) {
                    continue;
                }
                const float m_new = fmaxf(M[r], tile_max);
                if (m_new > M[r]) {
                    const float ms = expf(M[r] - m_new);
                    oxl_scale(VKQ + r * D, D, ms);
                    S[r] *= ms;
                }
                M[r] = m_new;
                S[r] += t->softmax(T, kq, kq, m_new);
            }
            for (int tk = 0; tk < kv_tile; tk++) {
                const void *vp = attn_value(t, &it0, ic + tk);
                if (t->k_to_float) {
                    t->k_to_float(vp, V32 + tk * D, D);
                } else {
                    memcpy(V32 + tk * D, vp, (size_t)D * sizeof(float));
                }
            }
            for (int64_t r = 0; r < rows; r++) {
                if (skip[r]) {
                    memset(KQ + r * T, 0, (size_t)T * sizeof(float));
                }
            }
            t->sgemm(rows, T, D, VKQ, KQ, V32);
        }
        for (int64_t r = 0; r < rows; r++) {
            const int h = h0 + (int)(r / len);
            float *a = VKQ + r * D;
            if (t->p.sinks) {
                const float sk = t->p.sinks[h];
                float ms = 1.0f, vs = 1.0f;
                if (sk > M[r]) {
                    ms = expf(M[r] - sk);
                    oxl_scale(a, D, ms);
                } else {
                    vs = expf(sk - M[r]);
                }
                S[r] = S[r] * ms + vs;
            }
            const float s_inv = S[r] == 0.0f ? 0.0f : 1.0f / S[r];
            float *out = t->out + ((size_t)(j0 + r % len) * t->p.n_head + h) * D;
            for (int d = 0; d < D; d++) {
                out[d] = a[d] * s_inv;
            }
        }
    }
}

/* Floats of one part's tile state (attn_tiled): Q (rows x D), scores and mask (rows x T), the
 * accumulator (rows x D), a V tile (T x D), a transposed K tile (D x T), the rows' M and S, and
 * their skip flags (a float each, for alignment). */
static size_t attn_tile_floats(int group, int head_dim) {
    const size_t rows = (size_t)group * OXL_FA_TILE_Q, D = (size_t)head_dim, T = OXL_FA_TILE_KV;
    return rows * (2 * D + 2 * T) + 2 * T * D + 3 * rows;
}

void oxl_attention(oxl_pool *pool, const oxl_kv_view *kv, const float *q, float *out, const oxl_attn_params *p,
                   bool flash, float *scores) {
    const oxl_kernels *kern = oxl_kernels_get();
    const oxl_type qt = oxl_type_traits_get(kv->type_k)->vec_dot_type;
    const int32_t n = kv->n_tokens;
    attn_task t = {.kv = *kv,
                   .q = q,
                   .out = out,
                   .p = *p,
                   .scores = scores,
                   .vec_dot = kern->vec_dot[kv->type_k],
                   .q_conv = qt == OXL_TYPE_F32 ? NULL : kern->quant[qt],
                   .q_row = oxl_row_size(qt, p->head_dim),
                   .v_to_float = kv->type_v == OXL_TYPE_F32 ? NULL : kern->dequant[kv->type_v],
                   .mad = kern->mad[kv->type_v == OXL_TYPE_F16 ? OXL_TYPE_F16 : OXL_TYPE_F32],
                   .mad_rows = kv->type_v == OXL_TYPE_F16 ? kern->mad_rows[OXL_TYPE_F16] : NULL,
                   /* exact only beside the vec_dot of the same ISA */
                   .dot_rows =
                       kv->type_k == OXL_TYPE_F16 && kern->dot_rows_isa[OXL_TYPE_F16] == kern->vec_dot_isa[OXL_TYPE_F16]
                           ? kern->dot_rows[OXL_TYPE_F16]
                           : NULL,
                   .n_split = 1,
                   .group = p->n_head / p->n_head_kv};
    if (p->max_bias > 0.0f) {
        /* ggml: n_head_log2 = the largest power of two <= n_head; heads past it take m1's odd powers */
        t.n_head_log2 = 1u << (uint32_t)floor(log2((double)p->n_head));
        t.m0 = powf(2.0f, -(p->max_bias) / (float)t.n_head_log2);
        t.m1 = powf(2.0f, -(p->max_bias / 2.0f) / (float)t.n_head_log2);
    }
    /* flash items: as many of a group's heads as the stack state holds, and at least as many items
     * as threads when the pass is small (a decode step of a model with few KV heads) */
    int fit = OXL_ATTN_ACC / p->head_dim < OXL_ATTN_HEADS ? OXL_ATTN_ACC / p->head_dim : OXL_ATTN_HEADS;
    const int64_t groups = (int64_t)n * p->n_head_kv;
    const int nth = oxl_pool_size(pool);
    /* the longest visible range of the pass's tokens */
    int32_t range = 0;
    for (int32_t j = 0; j < n && groups < nth; j++) {
        const attn_item it = attn_item_at(&t, j, 0);
        range = it.n_kv - it.lo > range ? it.n_kv - it.lo : range;
    }
    /* few items and long ranges: each group's positions split over the threads, every part reading
     * its own run of K and V rows once (the partial states fit in scores: nth * (n_ctx + head_dim)
     * floats) */
    const int whole = fit < t.group ? fit : t.group; /* the chunk an unsplit head set takes */
    const size_t part_floats = (size_t)whole * (size_t)((t.group + whole - 1) / whole) * (size_t)(p->head_dim + 2);
    int split = groups < nth && range >= OXL_ATTN_SPLIT_MIN ? (int)((nth + groups - 1) / groups) : 1;
    while (split > 1 &&
           (size_t)groups * (size_t)split * part_floats > (size_t)nth * ((size_t)kv->n_ctx + (size_t)p->head_dim)) {
        split--;
    }
    if (flash && split > 1 && scores) {
        t.n_split = split;
        t.split_len = (range + split - 1) / split;
        t.partials = scores;
    } else if (groups < nth) {
        const int per_group = (int)((nth + groups - 1) / groups);
        const int want = (t.group + per_group - 1) / per_group;
        fit = want < fit ? want : fit;
    }
    t.chunk = fit < t.group ? fit : t.group;
    t.n_chunks = (t.group + t.chunk - 1) / t.chunk;
    /* ggml's choice of its tiled kernel (ggml_compute_forward_flash_attn_ext_f16) */
    const bool tiled = flash && kv->n_stream >= OXL_FA_TILE_Q && kv->type_k == kv->type_v &&
                       (kv->type_k == OXL_TYPE_F32 || kv->type_k == OXL_TYPE_F16) && p->head_dim % 16 == 0 &&
                       p->head_dim <= 1024;
    int32_t *tiles = tiled ? malloc(2 * (size_t)n * sizeof(int32_t)) : NULL;
    int parts_tiled = 0;
    if (tiles) {
        /* runs of consecutive tokens of one sequence, cut every OXL_FA_TILE_Q */
        t.tile_j0 = tiles;
        t.tile_n = tiles + n;
        for (int32_t j = 0; j < n; j++) {
            const bool same = t.n_tiles > 0 && kv->seq[j] == kv->seq[j - 1] && t.tile_n[t.n_tiles - 1] < OXL_FA_TILE_Q;
            if (same) {
                t.tile_n[t.n_tiles - 1]++;
            } else {
                t.tile_j0[t.n_tiles] = j;
                t.tile_n[t.n_tiles++] = 1;
            }
        }
        const int64_t n_items = (int64_t)p->n_head_kv * t.n_tiles, parts = 4 * (int64_t)nth;
        parts_tiled = (int)(n_items < parts ? n_items : parts);
        t.tile_floats = attn_tile_floats(t.group, p->head_dim);
        t.tile_buf = malloc((size_t)parts_tiled * t.tile_floats * sizeof(float));
        if (!t.tile_buf) {
            free(tiles); /* short of memory: the position-by-position kernel needs none */
            tiles = NULL;
        }
    }
    if (tiles) {
        t.sgemm = kern->sgemm_acc[OXL_TYPE_F32];
        t.softmax = kern->softmax[OXL_TYPE_F32];
        t.k_to_float = kv->type_k == OXL_TYPE_F16 ? kern->dequant[OXL_TYPE_F16] : NULL;
        oxl_pool_run_parts(pool, attn_tiled, &t, parts_tiled);
        free(t.tile_buf);
        free(tiles);
    } else if (!flash) {
        oxl_pool_run(pool, attn_unfused, &t); /* one part per thread: scores are per part */
    } else {
        /* flash keeps its state on the stack: several parts per thread, so a descheduled thread
         * holds back only a few items; except with an f16 V, where one part per thread takes its
         * items as a group (a decode step: each thread's KV heads block by block, streaming
         * adjacent columns of the cache rows; alternated with one head per part on the same
         * machine, tg128 @ d4096 of the Q4_K_M reference shape gave 1.27x median per pair) */
        const int64_t n_items = groups * t.n_chunks * t.n_split, parts = 4 * (int64_t)nth;
        t.flash_group = 1;
        if (t.mad_rows && t.n_split == 1) {
            /* as many items per part as leave each thread one part, within the stack state */
            int64_t g = n_items / nth;
            g = g < 1 ? 1 : g > OXL_ATTN_GROUP ? OXL_ATTN_GROUP : g;
            while (g > 1 && (g * t.chunk > OXL_ATTN_HEADS || g * t.chunk * p->head_dim > OXL_ATTN_ACC)) {
                g--;
            }
            t.flash_group = (int)g;
        }
        const int64_t n_groups = (n_items + t.flash_group - 1) / t.flash_group;
        oxl_pool_run_parts(pool, attn_flash, &t, (int)(n_groups < parts ? n_groups : parts));
        if (t.n_split > 1) {
            oxl_pool_run(pool, attn_merge, &t);
        }
    }
}
