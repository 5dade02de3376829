/* Recording the weight formats' shaders (gpu_quant.h). */
#include "gpu_quant.h"

#include "gpu_ops.h"
#include "oxl_kernel_decls.h" /* generated: oxl_gemm_k_step */

#include <stdio.h>
#include <string.h>

/* The name of shader `op`_<format name of t> into buf; -1 + err when t is not a type. */
static int shader_name(char *buf, size_t size, const char *op, oxl_type t, oxl_error *err) {
    const oxl_type_traits *tr = oxl_type_traits_get((uint32_t)t);
    if (tr == NULL) {
        return oxl_err_set(err, "Vulkan: type id %d is not a ggml type", (int)t);
    }
    snprintf(buf, size, "%s_%s", op, tr->name);
    return 0;
}

bool oxl_gpu_mul_mat_supported(oxl_type t) {
    const oxl_type_traits *tr = oxl_type_traits_get((uint32_t)t);
    if (tr == NULL) {
        return false;
    }
    char name[64];
    snprintf(name, sizeof name, "mul_mat_%s", tr->name);
    if (oxl_gpu_shader(name) == NULL) {
        return false;
    }
    if (t == OXL_TYPE_F32) {
        return true;
    }
    const oxl_type_traits *p = oxl_type_traits_get((uint32_t)tr->vec_dot_type);
    snprintf(name, sizeof name, "quantize_%s", p->name);
    return oxl_gpu_shader(name) != NULL;
}

size_t oxl_gpu_mul_mat_scratch(oxl_type t, uint32_t K, uint32_t ncols) {
    const oxl_type_traits *tr = oxl_type_traits_get((uint32_t)t);
    if (tr == NULL || t == OXL_TYPE_F32) {
        return 0;
    }
    return oxl_row_size(tr->vec_dot_type, K) * ncols;
}

int oxl_gpu_quantize_q8(oxl_gpu *g, oxl_type p, oxl_gpu_buf *x, uint32_t x_off, uint32_t x_col, oxl_gpu_buf *y,
                        uint32_t y_off, uint32_t y_col, uint32_t K, uint32_t ncols, oxl_error *err) {
    if (p != OXL_TYPE_Q8_0 && p != OXL_TYPE_Q8_1 && p != OXL_TYPE_Q8_K) {
        return oxl_err_set(err, "Vulkan: no activation quantizer for %s", oxl_type_traits_get((uint32_t)p)->name);
    }
    const int64_t blck = oxl_type_traits_get((uint32_t)p)->blck_size;
    if (K % blck != 0) {
        return oxl_err_set(err, "Vulkan: quantize_%s: K %u is not a multiple of %ld",
                           oxl_type_traits_get((uint32_t)p)->name, K, (long)blck);
    }
    char name[64];
    if (shader_name(name, sizeof name, "quantize", p, err) != 0) {
        return -1;
    }
    if (K == 0 || ncols == 0) {
        return 0;
    }
    const uint32_t push[6] = {K, ncols, x_off, x_col, y_off, y_col};
    const oxl_gpu_bind b[2] = {{x, 0, 0}, {y, 0, 0}};
    uint32_t gy, gz;
    oxl_gpu_groups_1d(ncols, 1, &gy, &gz);
    return oxl_gpu_dispatch(g, name, b, 2, push, sizeof push, (uint32_t)(K / blck), gy, gz, err);
}

int oxl_gpu_dequant(oxl_gpu *g, oxl_type t, oxl_gpu_buf *w, uint32_t w_off, uint32_t w_row, oxl_gpu_buf *y,
                    uint32_t y_off, uint32_t y_row, uint32_t K, uint32_t nrows, oxl_error *err) {
    char name[64];
    if (shader_name(name, sizeof name, "dequant", t, err) != 0) {
        return -1;
    }
    const oxl_gpu_shader_info *s = oxl_gpu_shader(name);
    if (s == NULL) {
        return oxl_err_set(err, "Vulkan: shader '%s' is not in the shader list (generated/gpu)", name);
    }
    if (K == 0 || nrows == 0) {
        return 0;
    }
    const uint32_t push[6] = {nrows, K, w_off, w_row, y_off, y_row};
    const oxl_gpu_bind b[2] = {{w, 0, 0}, {y, 0, 0}};
    uint32_t gy, gz;
    oxl_gpu_groups_1d(nrows, 1, &gy, &gz);
    return oxl_gpu_dispatch(g, name, b, 2, push, sizeof push, (K + s->local - 1) / s->local, gy, gz, err);
}

int oxl_gpu_mul_mat_f32(oxl_gpu *g, oxl_type t, oxl_gpu_buf *w, uint32_t w_off, uint32_t w_row, oxl_gpu_buf *x,
                        uint32_t x_off, uint32_t x_col, oxl_gpu_buf *scratch, oxl_gpu_buf *y, uint32_t y_off,
                        uint32_t y_col, uint32_t nrows, uint32_t ncols, uint32_t K, oxl_error *err) {
    char name[64];
    if (shader_name(name, sizeof name, "mul_mat", t, err) != 0) {
        return -1;
    }
    if (!oxl_gpu_mul_mat_supported(t)) {
        return oxl_err_set(err, "Vulkan: no mul_mat shader for %s weights", oxl_type_traits_get((uint32_t)t)->name);
    }
    const oxl_type_traits *tr = oxl_type_traits_get((uint32_t)t);
    const oxl_type p = tr->vec_dot_type;
    const int64_t pblck = oxl_type_traits_get((uint32_t)p)->blck_size;
    if (K % tr->blck_size != 0 || K % pblck != 0) {
        return oxl_err_set(err, "Vulkan: mul_mat_%s: K %u is not a multiple of the block", tr->name, K);
    }
    /* many columns: the tiled product, which reads each weight block once per tile of columns. For
     * f32, f16 and bf16 it sums in tinyBLAS's order, which the CPU takes only when k is a multiple
     * of its step and the rows of 4 (src/kernels/matmul.c use_gemm); otherwise mul_mat_<t>, which
     * picks ggml's vec_dot order itself. */
    const bool ggml_order = t == OXL_TYPE_F32 || t == OXL_TYPE_F16 || t == OXL_TYPE_BF16;
    if (ncols >= OXL_GPU_TILED_MIN_COLS && (!ggml_order || (K % oxl_gemm_k_step(t) == 0 && nrows % 4 == 0))) {
        char tiled[64];
        snprintf(tiled, sizeof tiled, "mul_mat_tiled_%s", tr->name);
        if (oxl_gpu_shader(tiled) != NULL) {
            memcpy(name, tiled, sizeof tiled);
        }
    }
    oxl_gpu_mm_push pc = {nrows, ncols, K, w_off, w_row, x_off, x_col, y_off, y_col};
    if (t == OXL_TYPE_F32) {
        return oxl_gpu_mul_mat(g, name, w, x, y, &pc, err);
    }
    if (p == OXL_TYPE_F16 || p == OXL_TYPE_BF16) {
        /* columns packed as K halves each */
        const char *q = p == OXL_TYPE_F16 ? "quantize_f16" : "quantize_bf16";
        if (x_col == K) {
            if (oxl_gpu_quantize(g, q, x, x_off, scratch, 0, K * ncols, err) != 0) {
                return -1;
            }
        } else {
            for (uint32_t c = 0; c < ncols; c++) {
                if (oxl_gpu_quantize(g, q, x, x_off + c * x_col, scratch, c * K, K, err) != 0) {
                    return -1;
                }
            }
        }
        pc.x_off = 0;
        pc.x_col = K;
    } else {
        const uint32_t row = (uint32_t)oxl_row_size(p, K);
        if (oxl_gpu_quantize_q8(g, p, x, x_off, x_col, scratch, 0, row, K, ncols, err) != 0) {
            return -1;
        }
        pc.x_off = 0;
        pc.x_col = row;
    }
    return oxl_gpu_mul_mat(g, name, w, scratch, y, &pc, err);
}
