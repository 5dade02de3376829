/* Qwen2.5-VL's window attention (src/mm/clip.h): the window order of the merged tokens, the vision
 * RoPE positions that follow it, and the windowed attention against llama.cpp's masked softmax.
 *
 * The expected orders are worked out by hand from llama.cpp's loops (tools/mtmd/clip.cpp, set_input
 * for PROJECTOR_TYPE_QWEN25VL): windows of grid_window x grid_window merged tokens taken row of
 * windows by row of windows, left to right, the tokens of a window in raster order; idx[src] = dst,
 * inv_idx[dst] = src; the positions loop (y, x by 2; dy; dx) writes patch (dx, dy) of raster token t
 * at row 4 idx[t] + 2 dy + dx.
 *
 * The attention reference is llama.cpp's graph without flash attention, written out with the same
 * kernels over every key of the row: kq = k.q, times the scale, plus the window mask (0 inside,
 * -FLT_MAX outside, as clip.cpp fills window_mask), the softmax over all n keys, V^T w over all n keys
 * (tinyBLAS's gemm when n % 16 == 0, else one vec_dot per output). The windowed attention must equal it
 * bit for bit under every ISA cap (ctests mm-clip-<isa>). */
#include "clip.h"
#include "kernels.h"
#include "oxl_kernel_decls.h"
#include "pool.h"

#include <criterion/criterion.h>
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* A 6 x 4 grid of merged tokens (12 x 8 patches), windows of 2 x 2 merged tokens: six full windows. */
Test(mm_clip_window, six_by_four_grid_in_windows_of_two) {
    int32_t idx[24], inv[24], bounds[25];
    cr_assert_eq(oxl_clip_window_index(6, 4, 2, idx, inv, bounds), 6);
    /* window (x 0, y 0): raster tokens 0 1 / 6 7; (x 2, y 0): 2 3 / 8 9; (x 4, y 0): 4 5 / 10 11;
     * (x 0, y 2): 12 13 / 18 19; (x 2, y 2): 14 15 / 20 21; (x 4, y 2): 16 17 / 22 23 */
    static const int32_t want_inv[24] = {0,  1,  6,  7,  2,  3,  8,  9,  4,  5,  10, 11,
                                         12, 13, 18, 19, 14, 15, 20, 21, 16, 17, 22, 23};
    static const int32_t want_idx[24] = {0,  1,  4,  5,  8,  9,  2,  3,  6,  7,  10, 11,
                                         12, 13, 16, 17, 20, 21, 14, 15, 18, 19, 22, 23};
    static const int32_t want_bounds[7] = {0, 4, 8, 12, 16, 20, 24};
    for (int i = 0; i < 24; i++) {
        cr_assert_eq(inv[i], want_inv[i], "inv_window_idx[%d] = %d, want %d", i, inv[i], want_inv[i]);
        cr_assert_eq(idx[i], want_idx[i], "window_idx[%d] = %d, want %d", i, idx[i], want_idx[i]);
    }
    for (int i = 0; i < 7; i++) {
        cr_assert_eq(bounds[i], want_bounds[i], "bounds[%d] = %d, want %d", i, bounds[i], want_bounds[i]);
    }

    /* positions: window-order token d is raster token inv[d] = (x, y); its four patch rows are
     * (2y, 2x), (2y, 2x+1), (2y+1, 2x), (2y+1, 2x+1) */
    int32_t py[96], px[96];
    oxl_clip_window_positions(6, 4, idx, py, px);
    static const int32_t top[24] = {0, 0, 2, 2, 0, 0, 2, 2, 0, 0, 2, 2, 4, 4, 6, 6, 4, 4, 6, 6, 4, 4, 6, 6};
    static const int32_t left[24] = {0, 2, 0, 2, 4, 6, 4, 6, 8, 10, 8, 10, 0, 2, 0, 2, 4, 6, 4, 6, 8, 10, 8, 10};
    for (int d = 0; d < 24; d++) {
        for (int k = 0; k < 4; k++) {
            cr_assert_eq(py[4 * d + k], top[d] + k / 2, "row %d: y %d", 4 * d + k, py[4 * d + k]);
            cr_assert_eq(px[4 * d + k], left[d] + k % 2, "row %d: x %d", 4 * d + k, px[4 * d + k]);
        }
    }
}

/* A 5 x 3 grid in windows of 2: the last column and row of windows are cut short. */
Test(mm_clip_window, partial_windows_at_the_edges) {
    int32_t idx[15], inv[15], bounds[16];
    cr_assert_eq(oxl_clip_window_index(5, 3, 2, idx, inv, bounds), 6);
    /* (x 0, y 0): 0 1 / 5 6; (x 2, y 0): 2 3 / 7 8; (x 4, y 0): 4 / 9; (x 0, y 2): 10 11;
     * (x 2, y 2): 12 13; (x 4, y 2): 14 */
    static const int32_t want_inv[15] = {0, 1, 5, 6, 2, 3, 7, 8, 4, 9, 10, 11, 12, 13, 14};
    static const int32_t want_idx[15] = {0, 1, 4, 5, 8, 2, 3, 6, 7, 9, 10, 11, 12, 13, 14};
    static const int32_t want_bounds[7] = {0, 4, 8, 10, 12, 14, 15};
    for (int i = 0; i < 15; i++) {
        cr_assert_eq(inv[i], want_inv[i], "inv_window_idx[%d] = %d, want %d", i, inv[i], want_inv[i]);
        cr_assert_eq(idx[i], want_idx[i], "window_idx[%d] = %d, want %d", i, idx[i], want_idx[i]);
    }
    for (int i = 0; i < 7; i++) {
        cr_assert_eq(bounds[i], want_bounds[i], "bounds[%d] = %d, want %d", i, bounds[i], want_bounds[i]);
    }
    /* window-order token 8 is raster token 4 = (4, 0): rows 32..35 at y 0 0 1 1, x 8 9 8 9; token 14 is
     * raster 14 = (4, 2): y 4 4 5 5, x 8 9 8 9 */
    int32_t py[60], px[60];
    oxl_clip_window_positions(5, 3, idx, py, px);
    static const int32_t y8[4] = {0, 0, 1, 1}, x8[4] = {8, 9, 8, 9}, y14[4] = {4, 4, 5, 5};
    for (int k = 0; k < 4; k++) {
        cr_assert_eq(py[32 + k], y8[k]);
        cr_assert_eq(px[32 + k], x8[k]);
        cr_assert_eq(py[56 + k], y14[k]);
        cr_assert_eq(px[56 + k], x8[k]);
    }
    /* a window larger than the grid: one window, the identity */
    cr_assert_eq(oxl_clip_window_index(5, 3, 9, idx, inv, bounds), 1);
    for (int i = 0; i < 15; i++) {
        cr_assert_eq(idx[i], i);
        cr_assert_eq(inv[i], i);
    }
    cr_assert_eq(bounds[1], 15);
    cr_assert_eq(oxl_clip_window_index(5, 3, 0, idx, inv, bounds), -1);
    cr_assert_eq(oxl_clip_window_index(0, 3, 2, idx, inv, bounds), -1);
}

/* llama.cpp's masked attention over all n keys, one (row, head) at a time. */
static void masked_reference(const float *q, const float *k, const float *v, float *out, int64_t n, int n_head, int D,
                             const int32_t *lo, const int32_t *hi) {
    const oxl_kernels *kern = oxl_kernels_get();
    const int64_t ld = (int64_t)n_head * D;
    const float scale = 1.0f / sqrtf((float)D);
    float *sc = malloc((size_t)n * sizeof(float)), *w = malloc((size_t)n * sizeof(float));
    float *vt = malloc((size_t)n * D * sizeof(float));
    const bool use_gemm = kern->gemm[OXL_TYPE_F32] && n % oxl_gemm_k_step(OXL_TYPE_F32) == 0 && D % 4 == 0;
    for (int h = 0; h < n_head; h++) {
        for (int64_t j = 0; j < n; j++) {
            for (int d = 0; d < D; d++) {
                vt[d * n + j] = v[j * ld + h * D + d];
            }
        }
        for (int64_t i = 0; i < n; i++) {
            float max = -INFINITY;
            for (int64_t j = 0; j < n; j++) {
                float s;
                kern->vec_dot[OXL_TYPE_F32](D, &s, k + j * ld + h * D, q + i * ld + h * D);
                const float mask = j >= lo[i] && j < hi[i] ? 0.0f : -FLT_MAX;
                sc[j] = s * scale + mask;
                max = sc[j] > max ? sc[j] : max;
            }
            const double sum = kern->softmax[OXL_TYPE_F32](n, w, sc, max);
            const float inv = (float)(1.0 / sum);
            for (int64_t j = 0; j < n; j++) {
                w[j] *= inv;
            }
            float *o = out + i * ld + h * D;
            if (use_gemm) {
                kern->gemm[OXL_TYPE_F32](n, D, 1, vt, (size_t)n * sizeof(float), w, (size_t)n * sizeof(float), o, D);
            } else {
                for (int d = 0; d < D; d++) {
                    kern->vec_dot[OXL_TYPE_F32](n, &o[d], vt + d * n, w);
                }
            }
        }
    }
    free(sc);
    free(w);
    free(vt);
}

/* The windowed attention of a pw x ph merged grid in windows of g equals the masked reference bit for
 * bit (n = 4 pw ph rows, 2 heads of 8). */
static void check_attention(int32_t pw, int32_t ph, int32_t g) {
    const int64_t n_tok = (int64_t)pw * ph, n = 4 * n_tok;
    const int n_head = 2, D = 8;
    const int64_t ld = n_head * D;
    int32_t *idx = malloc((size_t)n_tok * sizeof(int32_t)), *inv = malloc((size_t)n_tok * sizeof(int32_t));
    int32_t *bounds = malloc((size_t)(n_tok + 1) * sizeof(int32_t)), *lo = malloc((size_t)n * 2 * sizeof(int32_t));
    int32_t *hi = lo + n;
    const int32_t n_win = oxl_clip_window_index(pw, ph, g, idx, inv, bounds);
    cr_assert_gt(n_win, 1);
    for (int32_t w = 0; w < n_win; w++) {
        for (int64_t r = 4 * (int64_t)bounds[w]; r < 4 * (int64_t)bounds[w + 1]; r++) {
            lo[r] = 4 * bounds[w];
            hi[r] = 4 * bounds[w + 1];
        }
    }
    float *q = malloc((size_t)(n * ld) * sizeof(float)), *k = malloc((size_t)(n * ld) * sizeof(float));
    float *v = malloc((size_t)(n * ld) * sizeof(float));
    uint32_t s = 12345u + (uint32_t)n;
    for (int64_t i = 0; i < n * ld; i++) {
        s = s * 1664525u + 1013904223u;
        q[i] = (float)((s >> 8) & 0xffff) / 65536.0f * 6.0f - 3.0f;
        s = s * 1664525u + 1013904223u;
        k[i] = (float)((s >> 8) & 0xffff) / 65536.0f * 6.0f - 3.0f;
        s = s * 1664525u + 1013904223u;
        v[i] = (float)((s >> 8) & 0xffff) / 65536.0f * 2.0f - 1.0f;
    }
    float *ref = malloc((size_t)(n * ld) * sizeof(float)), *got = malloc((size_t)(n * ld) * sizeof(float));
    float *full = malloc((size_t)(n * ld) * sizeof(float));
    masked_reference(q, k, v, ref, n, n_head, D, lo, hi);
    oxl_error err = {0};
    oxl_pool *pool = oxl_pool_new(2, &err);
    cr_assert_not_null(pool, "%s", err.msg);
    float *work = malloc((size_t)((2 + D) * n * oxl_pool_size(pool)) * sizeof(float));
    oxl_clip_attention(pool, q, k, v, got, n, n_head, D, lo, hi, work);
    for (int64_t i = 0; i < n * ld; i++) {
        cr_assert(memcmp(&got[i], &ref[i], sizeof(float)) == 0,
                  "%dx%d in windows of %d, n %lld: value %lld: %.9g, want %.9g", pw, ph, g, (long long)n, (long long)i,
                  got[i], ref[i]);
    }
    /* the window mask matters: full attention differs */
    oxl_clip_attention(pool, q, k, v, full, n, n_head, D, NULL, NULL, work);
    cr_assert(memcmp(full, ref, (size_t)(n * ld) * sizeof(float)) != 0);
    oxl_pool_free(pool);
    free(work);
    free(full);
    free(got);
    free(ref);
    free(q);
    free(k);
    free(v);
    free(lo);
    free(bounds);
    free(inv);
    free(idx);
}

/* n 96 (the products through tinyBLAS's gemm), windows of 16 rows across a 64-row boundary */
Test(mm_clip_window, attention_equals_the_masked_softmax_gemm) { check_attention(6, 4, 2); }
/* n 60 (one vec_dot per output, all in its tail), partial windows */
Test(mm_clip_window, attention_equals_the_masked_softmax_short) { check_attention(5, 3, 2); }
/* n 364 (vec_dot with 64-wide blocks and both tails), windows of 36 rows and cut ones */
Test(mm_clip_window, attention_equals_the_masked_softmax_long) { check_attention(13, 7, 3); }
/* n 576 (gemm), windows of 64 rows */
Test(mm_clip_window, attention_equals_the_masked_softmax_aligned) { check_attention(16, 9, 4); }
