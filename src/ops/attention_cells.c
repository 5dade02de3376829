/* llama.cpp's unfused attention over the cache's cells in ggml's summation order (attention.h,
 * oxl_attention_cells). Reproduced: src/llama-graph.cpp build_attn_mha without flash attention
 * (kq = ggml_mul_mat(k, q), ggml_soft_max_ext with the KQ mask, kqv = ggml_mul_mat(v, kq) on the
 * transposed V cache), src/llama-kv-cache.cpp llama_kv_cache::get_n_kv (the cells spanned: the used
 * ones padded to 256, at least 256), and ggml-cpu's ggml_compute_forward_mul_mat choice between
 * llamafile's tinyBLAS and vec_dot. */
#include "attention.h"

#include "oxl_kernel_decls.h" /* generated: oxl_gemm_k_step */

#include <math.h>
#include <stddef.h>

typedef struct cells_task {
    const oxl_kv_view *kv;
    const oxl_attn_params *p;
    const float *q;
    float *out;
    float *work; /* per part: (2 + head_dim) * n_kv floats */
    int32_t n_kv;
    const oxl_kernels *kern;
} cells_task;

static void cells_part(void *arg, int ith, int nth) {
    const cells_task *t = arg;
    const oxl_kv_view *kv = t->kv;
    const oxl_attn_params *p = t->p;
    const int D = p->head_dim, group = p->n_head / p->n_head_kv;
    const int32_t n_kv = t->n_kv;
    float *sc = t->work + (size_t)ith * (size_t)(2 + D) * (size_t)n_kv, *w = sc + n_kv, *vt = w + n_kv;
    const oxl_vec_dot_fn dot = t->kern->vec_dot[OXL_TYPE_F32];
    const oxl_gemm_fn gemm = t->kern->gemm[OXL_TYPE_F32];
    const oxl_softmax_fn softmax = t->kern->softmax[OXL_TYPE_F32];
    /* kqv: tinyBLAS for a batch (src1 kq is contiguous) when k = n_kv and m = head_dim fit its
     * tiles; else, decode steps included, one vec_dot per output */
    const bool use_gemm = gemm && kv->n_tokens >= 2 && n_kv % oxl_gemm_k_step(OXL_TYPE_F32) == 0 &&
                          D % 4 == 0 /* tinyBLAS's smallest row tile */;
    const int64_t n_items = (int64_t)kv->n_tokens * p->n_head;
    for (int64_t item = ith; item < n_items; item += nth) {
        const int32_t j = (int32_t)(item / p->n_head);
        const int h = (int)(item % p->n_head), hk = h / group;
        const int32_t pos = kv->pos[j];
        const int32_t lo = p->n_swa > 0 && pos - p->n_swa + 1 > 0 ? pos - p->n_swa + 1 : 0;
        const int32_t hi = kv->pos_hi ? kv->pos_hi[j] : pos;
        const size_t row0 = (size_t)kv->seq[j] * (size_t)kv->n_ctx;
        const float *qj = t->q + ((size_t)j * p->n_head + h) * D;
        /* kq: one vec_dot per cell (q is a permuted view, so no tinyBLAS); masked cells -inf; the
         * transposed V of the visible cells, 0 elsewhere (a masked cell's weight is 0) */
        float max = -INFINITY;
        for (int32_t c = 0; c < n_kv; c++) {
            const bool vis = c >= lo && c <= hi;
            if (vis) {
                const float *kc =
                    (const float *)((const char *)kv->k + (row0 + (size_t)c) * kv->k_row) + (size_t)hk * D;
                const float *vc =
                    (const float *)((const char *)kv->v + (row0 + (size_t)c) * kv->v_row) + (size_t)hk * D;
                float s;
                dot(D, &s, kc, qj);
                sc[c] = s * p->scale;
                for (int d = 0; d < D; d++) {
                    vt[(size_t)d * n_kv + c] = vc[d];
                }
            } else {
                sc[c] = -INFINITY;
                for (int d = 0; d < D; d++) {
                    vt[(size_t)d * n_kv + c] = 0.0f;
                }
            }
            max = sc[c] > max ? sc[c] : max;
        }
        /* ggml_soft_max_ext: exp in ggml_vec_soft_max_f32's chunks, summed in double, then scaled */
        const double sum = softmax(n_kv, w, sc, max);
        const float inv = (float)(1.0 / sum);
        for (int32_t c = 0; c < n_kv; c++) {
            w[c] *= inv;
        }
        float *o = t->out + ((size_t)j * p->n_head + h) * D;
        if (use_gemm) {
            gemm(n_kv, D, 1, vt, (size_t)n_kv * sizeof(float), w, (size_t)n_kv * sizeof(float), o, D);
        } else {
            for (int d = 0; d < D; d++) {
                dot(n_kv, &o[d], vt + (size_t)d * n_kv, w);
            }
        }
    }
}

int32_t oxl_attention_cells_n_kv(const oxl_kv_view *kv) {
    int32_t used = 0;
    for (int32_t j = 0; j < kv->n_tokens; j++) {
        used = kv->pos[j] + 1 > used ? kv->pos[j] + 1 : used;
    }
    const int32_t padded = (used + 255) / 256 * 256;
    return padded > 256 ? padded : 256;
}

size_t oxl_attention_cells_work(int32_t n_ctx, int head_dim, int n_threads) {
    const size_t n_kv = (size_t)((n_ctx + 255) / 256 * 256 + 256);
    return (size_t)(2 + head_dim) * n_kv * (size_t)n_threads;
}

void oxl_attention_cells(oxl_pool *pool, const oxl_kv_view *kv, const float *q, float *out, const oxl_attn_params *p,
                         float *work) {
    const cells_task t = {kv, p, q, out, work, oxl_attention_cells_n_kv(kv), oxl_kernels_get()};
    oxl_pool_run(pool, cells_part, (void *)&t);
}
