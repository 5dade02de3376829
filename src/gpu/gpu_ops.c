#include "gpu_ops.h"

#include <string.h>

/* Push-constant structs: the fields of gen/spec.py's GPU_*_PUSH, in order. */
typedef struct binary_push {
    uint32_t n, nb, a_off, b_off, y_off;
    float s;
} binary_push;
typedef struct norm_push {
    uint32_t d, n, x_off, y_off, w_off, b_off, w_rows, flags;
    float eps;
} norm_push;
typedef struct rope_push {
    uint32_t n_dims, head_dim, n_head, n_tok, x_off, x_tok, cs_off, flags;
} rope_push;
typedef struct set_rows_push {
    uint32_t d, n, x_off, x_row, row0, dst_off, dst_row;
} set_rows_push;
typedef struct soft_max_push {
    uint32_t d, n, x_off, y_off;
    float scale;
} soft_max_push;

/* A 1-D dispatch of n invocations. */
static int run_1d(oxl_gpu *g, const char *shader, const oxl_gpu_bind *b, int nb, const void *pc, size_t pc_size,
                  uint64_t n, oxl_error *err) {
    const oxl_gpu_shader_info *s = oxl_gpu_shader(shader);
    if (!s) {
        return oxl_err_set(err, "Vulkan: shader '%s' is not in the shader list (generated/gpu)", shader);
    }
    uint32_t gx, gz;
    oxl_gpu_groups_1d(n, s->local, &gx, &gz);
    return oxl_gpu_dispatch(g, shader, b, nb, pc, pc_size, gx, 1, gz, err);
}

int oxl_gpu_binary(oxl_gpu *g, const char *op, oxl_gpu_buf *a, uint32_t a_off, oxl_gpu_buf *b, uint32_t b_off,
                   uint32_t nb, oxl_gpu_buf *y, uint32_t y_off, uint32_t n, float s, oxl_error *err) {
    const binary_push pc = {n, nb ? nb : 1, a_off, b_off, y_off, s};
    if (strcmp(op, "scale") == 0 || strcmp(op, "softcap") == 0) {
        const oxl_gpu_bind bd[2] = {{a, 0, 0}, {y, 0, 0}};
        return run_1d(g, op, bd, 2, &pc, sizeof pc, n, err);
    }
    const oxl_gpu_bind bd[3] = {{a, 0, 0}, {b, 0, 0}, {y, 0, 0}};
    return run_1d(g, op, bd, 3, &pc, sizeof pc, n, err);
}

int oxl_gpu_norm(oxl_gpu *g, bool rms, oxl_gpu_buf *x, uint32_t x_off, oxl_gpu_buf *w, uint32_t w_off, uint32_t w_rows,
                 oxl_gpu_buf *b, uint32_t b_off, oxl_gpu_buf *y, uint32_t y_off, uint32_t d, uint32_t n, float eps,
                 oxl_error *err) {
    const norm_push pc = {d, n, x_off, y_off, w_off, b_off, w ? w_rows : 0, (w ? 1u : 0u) | (b ? 2u : 0u), eps};
    const oxl_gpu_bind bd[4] = {{x, 0, 0}, {w ? w : x, 0, 0}, {b ? b : x, 0, 0}, {y, 0, 0}};
    uint32_t gx, gz;
    oxl_gpu_groups_1d(n, 1, &gx, &gz); /* one workgroup per row */
    return oxl_gpu_dispatch(g, rms ? "rms_norm" : "norm", bd, 4, &pc, sizeof pc, gx, 1, gz, err);
}

int oxl_gpu_rope(oxl_gpu *g, const char *shader, oxl_gpu_buf *x, uint32_t x_off, uint32_t x_tok, oxl_gpu_buf *cs,
                 uint32_t cs_off, uint32_t n_dims, uint32_t head_dim, uint32_t n_head, uint32_t n_tok, bool fused,
                 oxl_error *err) {
    const rope_push pc = {n_dims, head_dim, n_head, n_tok, x_off, x_tok, cs_off, fused ? 1u : 0u};
    const oxl_gpu_bind bd[2] = {{x, 0, 0}, {cs, 0, 0}};
    return run_1d(g, shader, bd, 2, &pc, sizeof pc, (uint64_t)(n_dims / 2) * n_head * n_tok, err);
}

int oxl_gpu_glu(oxl_gpu *g, const char *shader, oxl_gpu_buf *gb, oxl_gpu_buf *ub, oxl_gpu_buf *yb,
                const oxl_gpu_glu_push *pc, oxl_error *err) {
    const uint64_t n = (uint64_t)pc->n * pc->n_rows;
    if (strcmp(shader, "gelu") == 0) {
        const oxl_gpu_bind bd[2] = {{gb, 0, 0}, {yb, 0, 0}};
        return run_1d(g, shader, bd, 2, pc, sizeof *pc, n, err);
    }
    const oxl_gpu_bind bd[3] = {{gb, 0, 0}, {ub, 0, 0}, {yb, 0, 0}};
    return run_1d(g, shader, bd, 3, pc, sizeof *pc, n, err);
}

int oxl_gpu_quantize(oxl_gpu *g, const char *shader, oxl_gpu_buf *x, uint32_t x_off, oxl_gpu_buf *y, uint32_t y_off,
                     uint32_t n, oxl_error *err) {
    if (y_off % 2) {
        return oxl_err_set(err, "Vulkan: %s: odd destination offset %u", shader, y_off);
    }
    const uint32_t pc[3] = {n, x_off, y_off};
    const oxl_gpu_bind bd[2] = {{x, 0, 0}, {y, 0, 0}};
    return run_1d(g, shader, bd, 2, pc, sizeof pc, ((uint64_t)n + 1) / 2, err);
}

int oxl_gpu_set_rows(oxl_gpu *g, bool f32, oxl_gpu_buf *x, uint32_t x_off, uint32_t x_row, oxl_gpu_buf *rows,
                     uint32_t row0, oxl_gpu_buf *dst, uint32_t dst_off, uint32_t dst_row, uint32_t d, uint32_t n,
                     oxl_error *err) {
    if (f32) {
        const set_rows_push pc = {d, n, x_off, x_row, row0, dst_off, dst_row};
        const oxl_gpu_bind bd[3] = {{x, 0, 0}, {rows, 0, 0}, {dst, 0, 0}};
        return run_1d(g, "set_rows_f32", bd, 3, &pc, sizeof pc, (uint64_t)d * n, err);
    }
    if (d % 2 || dst_off % 2 || dst_row % 2) {
        return oxl_err_set(err, "Vulkan: set_rows_f16: rows of %u halves at %u, stride %u: not even", d, dst_off,
                           dst_row);
    }
    const set_rows_push pc = {d, n, x_off, x_row, row0, dst_off, dst_row};
    const oxl_gpu_bind bd[3] = {{x, 0, 0}, {rows, 0, 0}, {dst, 0, 0}};
    return run_1d(g, "set_rows_f16", bd, 3, &pc, sizeof pc, (uint64_t)(d / 2) * n, err);
}

int oxl_gpu_soft_max(oxl_gpu *g, oxl_gpu_buf *x, uint32_t x_off, oxl_gpu_buf *y, uint32_t y_off, uint32_t d, uint32_t n,
                     float scale, oxl_error *err) {
    const soft_max_push pc = {d, n, x_off, y_off, scale};
    const oxl_gpu_bind bd[2] = {{x, 0, 0}, {y, 0, 0}};
    uint32_t gx, gz;
    oxl_gpu_groups_1d(n, 1, &gx, &gz); /* one workgroup per row */
    return oxl_gpu_dispatch(g, "soft_max", bd, 2, &pc, sizeof pc, gx, 1, gz, err);
}

int oxl_gpu_flash_attn(oxl_gpu *g, bool f32, oxl_gpu_buf *q, oxl_gpu_buf *k, oxl_gpu_buf *v, oxl_gpu_buf *o,
                       oxl_gpu_buf *aux, oxl_gpu_buf *tok, const oxl_gpu_flash_push *pc, oxl_error *err) {
    const char *shader = f32 ? "flash_attn_f32" : "flash_attn_f16";
    if (pc->head_dim == 0 || pc->head_dim > OXL_GPU_FLASH_MAX_HEAD_DIM || pc->n_head_kv == 0 ||
        pc->n_head % pc->n_head_kv) {
        return oxl_err_set(err, "Vulkan: %s: head_dim %u (at most %d), %u heads over %u KV heads", shader, pc->head_dim,
                           OXL_GPU_FLASH_MAX_HEAD_DIM, pc->n_head, pc->n_head_kv);
    }
    if (pc->n_tok > 65535) {
        return oxl_err_set(err, "Vulkan: %s: %u tokens in one pass (at most 65535)", shader, pc->n_tok);
    }
    const oxl_gpu_bind bd[6] = {{q, 0, 0}, {k, 0, 0}, {v, 0, 0}, {o, 0, 0}, {aux ? aux : q, 0, 0}, {tok, 0, 0}};
    return oxl_gpu_dispatch(g, shader, bd, 6, pc, sizeof *pc, pc->n_head, pc->n_tok, 1, err);
}
