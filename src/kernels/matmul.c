#include "matmul.h"

#include "oxl_blocks.h"       /* generated: oxl_block_q8_0 */
#include "oxl_kernel_decls.h" /* generated: oxl_gemm_k_step, OXL_RP_EXACT_COLS */

#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#if defined(__unix__) || defined(__APPLE__)
#include <sys/mman.h>
#include <unistd.h>
#endif

/* llamafile's tinyBLAS (ggml-cpu/llamafile/sgemm.cpp, tinyBLAS::matmul) takes only weight matrices
 * whose row count is a multiple of its smallest row tile. */
#define OXL_GEMM_M_STEP 4

/* Below these sizes a task costs less than releasing and collecting the workers (bench/README.md,
 * "Thread pool"), so it runs on the calling thread: converting at most this many activation values,
 * and a vec_dot product of at most this many multiply-adds. */
#define OXL_CONVERT_INLINE 32768
#define OXL_DOT_INLINE 32768

/* Weight rows per part come in multiples of this, so two threads never write one cache line of y
 * (16 floats) in a decode step. */
#define OXL_ROW_ALIGN 16

/* Parts per thread of the vec_dot and conversion phases: a thread the OS deschedules holds back at
 * most one small part while the others take the rest (src/core/pool.h). */
#define OXL_PARTS_PER_THREAD 4

/* The repacked path's activation sums (q8_0 partners): per column one int32 per block of 32 and one
 * per group of 4, after the converted columns, 64-byte aligned. */
static size_t bsum_offset(oxl_type vt, int64_t k, int64_t n) {
    return (oxl_row_size(vt, k) * (size_t)n + 63) & ~(size_t)63;
}

/* int32 sums per q8_0 column of k elements: one per block of 32, then one per group of 4. */
static int64_t bsum_stride(int64_t k) { return k / 32 + k / 4; }

size_t oxl_matmul_scratch_size(oxl_type t, int64_t k, int64_t n) {
    oxl_type vt = oxl_type_traits_get(t)->vec_dot_type;
    if (vt == OXL_TYPE_F32) {
        return 0;
    }
    if (oxl_kernels_get()->repack[t] != NULL && vt == OXL_TYPE_Q8_0) {
        return bsum_offset(vt, k, n) + (size_t)bsum_stride(k) * (size_t)n * sizeof(int32_t);
    }
    return oxl_row_size(vt, k) * (size_t)n;
}

typedef struct matmul_task {
    const oxl_kernels *kern;
    const oxl_tensor *w;
    const float *x;
    int64_t n;
    float *y;
    int64_t ldy;
    const void *xq; /* converted columns */
    size_t xq_row;  /* bytes per converted column */
    void *scratch;
    int32_t *bsum; /* repacked path, q8_0 columns: the sum of each block's quants */
} matmul_task;

/* Phase 1: convert the activation columns to the vec_dot_type, split by column. */
static void convert_columns(void *arg, int ith, int nth) {
    matmul_task *t = arg;
    oxl_type vt = oxl_type_traits_get(t->w->type)->vec_dot_type;
    int64_t lo, hi;
    oxl_split_range(t->n, ith, nth, &lo, &hi);
    int64_t k = t->w->ne[0];
    for (int64_t j = lo; j < hi; j++) {
        const oxl_block_q8_0 *q = (const void *)((char *)t->scratch + (size_t)j * t->xq_row);
        t->kern->quant[vt](t->x + j * k, (void *)q, k);
        if (t->bsum) {
            oxl_q8_0_sums(q, k, t->bsum + j * bsum_stride(k));
        }
    }
}

/* ggml_compute_forward_mul_mat's choice on its AVX-512 build (ggml-cpu.c, llamafile_sgemm): the
 * tinyBLAS kernel takes f32 weights with f32 columns, f16 weights with f16-converted columns and
 * bf16 weights with bf16-converted columns (AVX512-BF16) when there are at least 2 columns, k is a
 * multiple of the kernel's step (16; bf16: 32) and m % 4 == 0; everything else, decode steps
 * included, is one vec_dot per output. The two sum in different orders, so the choice must be
 * ggml's for the results to be its to the last bit. */
static bool use_gemm(const oxl_kernels *kern, const oxl_tensor *w, int64_t n) {
    return kern->gemm[w->type] != NULL && n >= 2 && w->ne[0] % oxl_gemm_k_step(w->type) == 0 &&
           w->ne[1] % OXL_GEMM_M_STEP == 0;
}

/* Phase 2 (gemm): the kernel computes all n columns of a block of weight rows; blocks are whole
 * row tiles, one per thread (the split the kernel's results were checked with). */
static void gemm_rows(void *arg, int ith, int nth) {
    matmul_task *t = arg;
    int64_t lo, hi;
    oxl_split_range(t->w->ne[1] / OXL_GEMM_M_STEP, ith, nth, &lo, &hi);
    lo *= OXL_GEMM_M_STEP;
    hi *= OXL_GEMM_M_STEP;
    if (hi > lo) {
        t->kern->gemm[t->w->type](t->w->ne[0], hi - lo, t->n, (const char *)t->w->data + (size_t)lo * t->w->row_size,
                                  t->w->row_size, t->xq, t->xq_row, t->y + lo, t->ldy);
    }
}

/* Phase 2 (vec_dot): one vec_dot per output, split by weight row so each thread streams its own rows
 * once. Every output is one independent vec_dot, so the split does not change any result. */
static void dot_rows(void *arg, int ith, int nth) {
    matmul_task *t = arg;
    oxl_vec_dot_fn dot = t->kern->vec_dot[t->w->type];
    int64_t lo, hi;
    oxl_split_range_aligned(t->w->ne[1], OXL_ROW_ALIGN, ith, nth, &lo, &hi);
    int64_t k = t->w->ne[0];
    const char *wrow = (const char *)t->w->data + (size_t)lo * t->w->row_size;
    for (int64_t r = lo; r < hi; r++, wrow += t->w->row_size) {
        const char *xcol = t->xq;
        for (int64_t j = 0; j < t->n; j++, xcol += t->xq_row) {
            dot(k, &t->y[j * t->ldy + r], wrow, xcol);
        }
    }
}

void oxl_q8_0_sums(const void *xq, int64_t k, int32_t *out) {
    const oxl_block_q8_0 *q = xq;
    int32_t *g = out + k / 32;
    for (int64_t b = 0; b < k / 32; b++) {
        int32_t sum = 0;
        for (int v = 0; v < 8; v++) {
            const int8_t *e = q[b].qs + 4 * v;
            g[8 * b + v] = e[0] + e[1] + e[2] + e[3];
            sum += g[8 * b + v];
        }
        out[b] = sum;
    }
}

/* Phase 2 (repacked): parts of whole row groups, each for all n columns: a group's weights stay in
 * the core's cache while the columns stream past; groups are 16 rows, so parts never share a cache
 * line of y. */
static void gemm_rp_rows(void *arg, int ith, int nth) {
    matmul_task *t = arg;
    const int rows = t->kern->repack_rows[t->w->type];
    const size_t gbytes =
        t->kern->repack_group_bytes[t->w->type] * (size_t)(t->w->ne[0] / oxl_type_traits_get(t->w->type)->blck_size);
    int64_t lo, hi;
    oxl_split_range(t->w->ne[1] / rows, ith, nth, &lo, &hi);
    if (hi > lo) {
        t->kern->gemm_rp[t->w->type](t->w->ne[0], (hi - lo) * rows, t->n, (const char *)t->w->rp + (size_t)lo * gbytes,
                                     t->xq, t->xq_row, t->bsum, t->y + lo * rows, t->ldy);
    }
}

size_t oxl_tensor_repack_bytes(const oxl_tensor *w) {
    const oxl_kernels *k = oxl_kernels_get();
    if (w->data == NULL || w->rp != NULL || k->repack[w->type] == NULL || k->gemm_rp[w->type] == NULL) {
        return 0;
    }
    const int rows = k->repack_rows[w->type];
    const int64_t blck = oxl_type_traits_get(w->type)->blck_size;
    if (w->ne[1] % rows != 0 || w->ne[0] % blck != 0 || w->row_size != oxl_row_size(w->type, w->ne[0]) ||
        w->row_size > (size_t)INT32_MAX / 16) {
        return 0;
    }
    return (size_t)(w->ne[1] / rows) * (size_t)(w->ne[0] / blck) * k->repack_group_bytes[w->type];
}

void *oxl_tensor_repack_alloc(size_t bytes) {
#if defined(__unix__) || defined(__APPLE__)
    /* its own mapping, page-aligned, its pages faulted in by the threads that fill them */
    void *buf = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    return buf == MAP_FAILED ? NULL : buf;
#else
    void *buf = NULL;
    return posix_memalign(&buf, 64, bytes) == 0 ? buf : NULL;
#endif
}

void oxl_tensor_repack_rows(const oxl_tensor *w, void *dst, int64_t r0, int64_t r1) {
    const oxl_kernels *k = oxl_kernels_get();
    const int rows = k->repack_rows[w->type];
    const size_t group = (size_t)(w->ne[0] / oxl_type_traits_get(w->type)->blck_size) * k->repack_group_bytes[w->type];
    const char *src = (const char *)w->data + (size_t)r0 * w->row_size;
    k->repack[w->type](w->ne[0], r1 - r0, src, w->row_size, (char *)dst + (size_t)(r0 / rows) * group);
}

void oxl_tensor_evict(const oxl_tensor *w) {
#if defined(__unix__) || defined(__APPLE__)
    const uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
    const uintptr_t lo = ((uintptr_t)w->data + page - 1) & ~(page - 1);
    const uintptr_t hi = ((uintptr_t)w->data + (size_t)w->ne[1] * w->row_size) & ~(page - 1);
    if (hi > lo) {
        (void)madvise((void *)lo, hi - lo, MADV_DONTNEED);
    }
#else
    (void)w;
#endif
}

void oxl_tensor_repack_free(void *buf, size_t bytes) {
#if defined(__unix__) || defined(__APPLE__)
    if (buf != NULL) {
        munmap(buf, bytes);
    }
#else
    (void)bytes;
    free(buf);
#endif
}

static _Thread_local oxl_matmul_observer_fn observer;
static _Thread_local void *observer_user;

void oxl_matmul_set_observer(oxl_matmul_observer_fn fn, void *user) {
    observer = fn;
    observer_user = fn ? user : NULL;
}

static _Thread_local bool exact;

void oxl_matmul_set_exact(bool on) { exact = on; }

static _Thread_local oxl_matmul_addend_fn addend;
static _Thread_local void *addend_user;

void oxl_matmul_set_addend(oxl_matmul_addend_fn fn, void *user) {
    addend = fn;
    addend_user = fn ? user : NULL;
}

static void matmul_plain(oxl_pool *pool, const oxl_tensor *w, const float *x, int64_t n, float *y, int64_t ldy,
                         void *scratch);

/* Phase 2's split of W's rows for n columns outside the tiled gemm: the part function (row groups
 * of the repacked layout, else vec_dot rows) and the part count (whole groups or blocks of
 * OXL_ROW_ALIGN rows; OXL_PARTS_PER_THREAD per thread, except repacked products of several
 * columns, which take one part per thread). */
static int split_parts(const oxl_kernels *kern, const oxl_tensor *w, int64_t n, oxl_pool *pool, oxl_task_fn *fn) {
    int64_t units, per;
    if (w->rp != NULL) {
        *fn = gemm_rp_rows;
        units = w->ne[1] / kern->repack_rows[w->type];
        per = n == 1 ? OXL_PARTS_PER_THREAD : 1;
    } else {
        *fn = dot_rows;
        units = (w->ne[1] + OXL_ROW_ALIGN - 1) / OXL_ROW_ALIGN;
        per = OXL_PARTS_PER_THREAD;
    }
    const int64_t want = per * (int64_t)oxl_pool_size(pool);
    return (int)(units < want ? units : want);
}

/* Phase 1 for all of t's columns: on the calling thread for one column or little work (a decode
 * step's single column would keep one thread busy and the others waiting), else split. */
static void convert_all(oxl_pool *pool, matmul_task *t) {
    if (t->n == 1 || t->n * t->w->ne[0] <= OXL_CONVERT_INLINE) {
        convert_columns(t, 0, 1);
    } else {
        oxl_pool_run_parts(pool, convert_columns, t, OXL_PARTS_PER_THREAD * oxl_pool_size(pool));
    }
}

void oxl_matmul(oxl_pool *pool, const oxl_tensor *w, const float *x, int64_t n, float *y, int64_t ldy, void *scratch) {
    matmul_plain(pool, w, x, n, y, ldy, scratch);
    if (addend) {
        oxl_matmul_addend_fn fn = addend;
        addend = NULL; /* the term's own products are plain */
        fn(addend_user, pool, w, x, n, y, ldy);
        addend = fn;
    }
}

static void matmul_plain(oxl_pool *pool, const oxl_tensor *w, const float *x, int64_t n, float *y, int64_t ldy,
                         void *scratch) {
    if (observer) {
        observer(observer_user, w, x, n);
    }
    oxl_type vt = oxl_type_traits_get(w->type)->vec_dot_type;
    matmul_task t = {
        .kern = oxl_kernels_get(),
        .w = w,
        .x = x,
        .n = n,
        .y = y,
        .ldy = ldy,
        .scratch = scratch,
    };
    if (vt == OXL_TYPE_F32) {
        t.xq = x;
        t.xq_row = (size_t)w->ne[0] * sizeof(float);
    } else {
        t.xq = scratch;
        t.xq_row = oxl_row_size(vt, w->ne[0]);
        if (w->rp != NULL && vt == OXL_TYPE_Q8_0) {
            t.bsum = (int32_t *)((char *)scratch + bsum_offset(vt, w->ne[0], n));
        }
        convert_all(pool, &t);
    }
    oxl_task_fn fn;
    if (w->rp != NULL && exact && n > OXL_RP_EXACT_COLS) {
        /* chunks the kernel sums column by column (the columns are converted already) */
        for (int64_t j = 0; j < n; j += OXL_RP_EXACT_COLS) {
            matmul_task c = t;
            c.n = n - j < OXL_RP_EXACT_COLS ? n - j : OXL_RP_EXACT_COLS;
            c.xq = (const char *)t.xq + (size_t)j * t.xq_row;
            c.bsum = t.bsum ? t.bsum + j * bsum_stride(w->ne[0]) : NULL;
            c.y = y + j * ldy;
            const int parts = split_parts(t.kern, w, OXL_RP_EXACT_COLS, pool, &fn);
            oxl_pool_run_parts(pool, fn, &c, parts);
        }
    } else if (w->rp == NULL && use_gemm(t.kern, w, n)) {
        oxl_pool_run(pool, gemm_rows, &t);
    } else {
        const int parts = split_parts(t.kern, w, n, pool, &fn);
        if (w->ne[0] * w->ne[1] * n <= OXL_DOT_INLINE) {
            fn(&t, 0, 1);
        } else {
            oxl_pool_run_parts(pool, fn, &t, parts);
        }
    }
}

/* oxl_matmul_many's task: the parts of each weight's own split (as matmul_plain makes it), numbered
 * one after another. */
typedef struct many_task {
    matmul_task t[OXL_MATMUL_MANY_MAX];
    oxl_task_fn fn[OXL_MATMUL_MANY_MAX];
    int parts[OXL_MATMUL_MANY_MAX];
    int nw;
} many_task;

static void many_parts(void *arg, int ith, int nth) {
    many_task *m = arg;
    (void)nth;
    int i = 0;
    while (i + 1 < m->nw && ith >= m->parts[i]) {
        ith -= m->parts[i++];
    }
    m->fn[i](&m->t[i], ith, m->parts[i]);
}

void oxl_matmul_many(oxl_pool *pool, int nw, const oxl_tensor *const *w, const float *x, int64_t n, float *const *y,
                     const int64_t *ldy, void *scratch) {
    const oxl_kernels *kern = oxl_kernels_get();
    const oxl_type vt = oxl_type_traits_get(w[0]->type)->vec_dot_type;
    bool fuse = nw >= 2 && nw <= OXL_MATMUL_MANY_MAX && !observer && !addend && vt != OXL_TYPE_F32 &&
                !(exact && n > OXL_RP_EXACT_COLS);
    bool any_rp = false;
    for (int i = 0; fuse && i < nw; i++) {
        fuse = w[i]->ne[0] == w[0]->ne[0] && oxl_type_traits_get(w[i]->type)->vec_dot_type == vt &&
               (vt != OXL_TYPE_Q8_0 || w[i]->type == w[0]->type) && (w[i]->rp != NULL || !use_gemm(kern, w[i], n));
        any_rp |= w[i]->rp != NULL;
    }
    if (!fuse) {
        for (int i = 0; i < nw; i++) {
            oxl_matmul(pool, w[i], x, n, y[i], ldy[i], scratch);
        }
        return;
    }
    const int64_t k = w[0]->ne[0];
    many_task m = {.nw = nw};
    int total = 0;
    int64_t work = 0;
    for (int i = 0; i < nw; i++) {
        m.t[i] = (matmul_task){
            .kern = kern,
            .w = w[i],
            .x = x,
            .n = n,
            .y = y[i],
            .ldy = ldy[i],
            .scratch = scratch,
            .xq = scratch,
            .xq_row = oxl_row_size(vt, k),
            .bsum = any_rp && vt == OXL_TYPE_Q8_0 ? (int32_t *)((char *)scratch + bsum_offset(vt, k, n)) : NULL,
        };
        m.parts[i] = split_parts(kern, w[i], n, pool, &m.fn[i]);
        total += m.parts[i];
        work += w[i]->ne[0] * w[i]->ne[1] * n;
    }
    convert_all(pool, &m.t[0]); /* the columns, converted once */
    if (work <= OXL_DOT_INLINE) {
        for (int p = 0; p < total; p++) {
            many_parts(&m, p, total);
        }
    } else {
        oxl_pool_run_parts(pool, many_parts, &m, total);
    }
}

void oxl_tensor_get_row(const oxl_tensor *w, int64_t r, float *out) {
    const char *row = (const char *)w->data + (size_t)r * w->row_size;
    if (w->type == OXL_TYPE_F32) {
        memcpy(out, row, (size_t)w->ne[0] * sizeof(float));
    } else {
        oxl_kernels_get()->dequant[w->type](row, out, w->ne[0]);
    }
}
