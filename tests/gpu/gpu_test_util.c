#include "gpu_test_util.h"

#include "kernels.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static oxl_gpu *dev;
static int tried;

/* The test process closes its device on exit, so that what the driver holds for it is released
 * before LeakSanitizer looks. */
static void close_device(void) {
    if (dev) {
        oxl_gpu_close(dev);
        dev = NULL;
    }
}

oxl_gpu *gpu_test_device(void) {
    if (!tried) {
        tried = 1;
        oxl_error err = {0};
        dev = oxl_gpu_open(-1, &err);
        if (dev) {
            atexit(close_device);
        }
        if (!dev) {
            fprintf(stderr, "gpu tests: %s\n", err.msg);
        }
    }
    if (!dev) {
        const char *req = getenv("OXILLAMA_REQUIRE_VULKAN");
        if (req && strcmp(req, "1") == 0) {
            cr_assert_fail("no Vulkan device and OXILLAMA_REQUIRE_VULKAN=1");
        }
        cr_skip_test("no Vulkan device");
    }
    return dev;
}

oxl_gpu_buf *gpu_test_buf(oxl_gpu *g, const void *src, size_t n) {
    oxl_error err = {0};
    oxl_gpu_buf *b = oxl_gpu_alloc(g, (n + 3) & ~(size_t)3, &err);
    cr_assert(b, "%s", err.msg);
    if (src) {
        cr_assert_eq(oxl_gpu_write(g, b, 0, src, n, &err), 0, "%s", err.msg);
    } else {
        cr_assert_eq(oxl_gpu_fill(g, b, 0, (n + 3) & ~(size_t)3, 0, &err), 0, "%s", err.msg);
    }
    return b;
}

void *gpu_test_read(oxl_gpu *g, oxl_gpu_buf *b, size_t n) {
    void *p = malloc(n);
    cr_assert(p);
    oxl_error err = {0};
    cr_assert_eq(oxl_gpu_read(g, b, 0, p, n, &err), 0, "%s", err.msg);
    return p;
}

void gpu_test_fill(float *x, size_t n, float lo, float hi, uint32_t seed) {
    uint32_t s = seed * 2654435761u + 12345u;
    for (size_t i = 0; i < n; i++) {
        s = s * 1664525u + 1013904223u;
        x[i] = lo + (hi - lo) * (float)(s >> 8) / (float)(1u << 24);
    }
}

void gpu_test_close(const float *a, const float *b, size_t n, float rel, float floor, const char *what) {
    for (size_t i = 0; i < n; i++) {
        const float m = fabsf(b[i]) > floor ? fabsf(b[i]) : floor;
        if (!(fabsf(a[i] - b[i]) <= rel * m)) {
            cr_assert_fail("%s: element %zu: device %.9g, CPU %.9g (tolerance %g x %g)", what, i, (double)a[i],
                           (double)b[i], (double)rel, (double)m);
        }
    }
}

bool gpu_test_cpu_product(oxl_type t, int64_t K, int64_t nrows, int64_t ncols, const void *w, size_t wrow,
                          const void *x, size_t xrow, float *y) {
    const oxl_kernels *k = oxl_kernels_get();
    cr_assert(t == OXL_TYPE_F32 || t == OXL_TYPE_F16 || t == OXL_TYPE_BF16, "type %d has no ggml order", (int)t);
    cr_assert(k->gemm[t] != NULL, "no gemm kernel for type %d", (int)t);
    if (ncols >= 2 && K % oxl_gemm_k_step(t) == 0 && nrows % 4 == 0) {
        k->gemm[t](K, nrows, ncols, w, wrow, x, xrow, y, nrows);
        return true;
    }
    for (int64_t c = 0; c < ncols; c++) {
        for (int64_t r = 0; r < nrows; r++) {
            k->vec_dot[t](K, &y[c * nrows + r], (const char *)w + (size_t)r * wrow, (const char *)x + (size_t)c * xrow);
        }
    }
    return false;
}

void gpu_test_same_bits(const float *a, const float *b, size_t n, const char *what) {
    for (size_t i = 0; i < n; i++) {
        if (memcmp(&a[i], &b[i], sizeof(float)) != 0) {
            cr_assert_fail("%s: element %zu: device %.9g, CPU %.9g (not the same bits)", what, i, (double)a[i],
                           (double)b[i]);
        }
    }
}

bool gpu_test_exact_math(const oxl_gpu *g) { return strstr(oxl_gpu_name(g), "llvmpipe") != NULL; }
