#include "blocks.h"

#include "error.h"
#include "quantize.h"

#include <math.h>
#include <stdlib.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

/* ---- loading ---------------------------------------------------------------------------- */

static void arch_key(const oxl_model *m, const char *key, char *buf, size_t cap) {
    snprintf(buf, cap, "%s.%s", m->arch->name, key);
}

int oxl_hp_int(const oxl_model *m, const char *key, int32_t *out, bool required, oxl_error *err) {
    char full[256];
    arch_key(m, key, full, sizeof full);
    int64_t v;
    int r = oxl_gguf_get_int(m->gguf, full, &v, err);
    if (r < 0) {
        return -1;
    }
    if (r == 0) {
        return required ? oxl_err_set(err, "%s: missing required key '%s'", oxl_gguf_path(m->gguf), full) : 0;
    }
    if (v <= 0 || v > INT32_MAX) {
        return oxl_err_set(err, "%s: key '%s' = %lld: must be a positive 32-bit integer", oxl_gguf_path(m->gguf), full,
                           (long long)v);
    }
    *out = (int32_t)v;
    return 0;
}

int oxl_hp_float(const oxl_model *m, const char *key, float *out, bool required, oxl_error *err) {
    char full[256];
    arch_key(m, key, full, sizeof full);
    float v;
    int r = oxl_gguf_get_float(m->gguf, full, &v, err);
    if (r < 0) {
        return -1;
    }
    if (r == 0) {
        return required ? oxl_err_set(err, "%s: missing required key '%s'", oxl_gguf_path(m->gguf), full) : 0;
    }
    if (!isfinite(v)) {
        return oxl_err_set(err, "%s: key '%s' = %g: must be finite", oxl_gguf_path(m->gguf), full, v);
    }
    *out = v;
    return 0;
}

int oxl_hp_bool(const oxl_model *m, const char *key, bool *out, bool required, oxl_error *err) {
    char full[256];
    arch_key(m, key, full, sizeof full);
    int r = oxl_gguf_get_bool(m->gguf, full, out, err);
    if (r == 0 && required) {
        return oxl_err_set(err, "%s: missing required key '%s'", oxl_gguf_path(m->gguf), full);
    }
    return r < 0 ? -1 : 0;
}

int oxl_hp_str(const oxl_model *m, const char *key, const char **out, oxl_error *err) {
    char full[256];
    arch_key(m, key, full, sizeof full);
    return oxl_gguf_get_str(m->gguf, full, out, err) < 0 ? -1 : 0;
}

int oxl_hp_count(const oxl_model *m, const char *key, int32_t *out, bool required, oxl_error *err) {
    char full[256];
    arch_key(m, key, full, sizeof full);
    int64_t v;
    int r = oxl_gguf_get_int(m->gguf, full, &v, err);
    if (r < 0) {
        return -1;
    }
    if (r == 0) {
        return required ? oxl_err_set(err, "%s: missing required key '%s'", oxl_gguf_path(m->gguf), full) : 0;
    }
    if (v < 0 || v > INT32_MAX) {
        return oxl_err_set(err, "%s: key '%s' = %lld: must be a non-negative 32-bit integer", oxl_gguf_path(m->gguf),
                           full, (long long)v);
    }
    *out = (int32_t)v;
    return 0;
}

int oxl_hp_int_layers(const oxl_model *m, const char *key, int32_t *out, int32_t n_layer, bool required,
                      oxl_error *err) {
    char full[256];
    arch_key(m, key, full, sizeof full);
    const char *path = oxl_gguf_path(m->gguf);
    const int64_t i = oxl_gguf_find_key(m->gguf, full);
    if (i < 0) {
        return required ? oxl_err_set(err, "%s: missing required key '%s'", path, full) : 0;
    }
    if (oxl_gguf_kv_type(m->gguf, i) != OXL_GGUF_ARRAY) {
        int32_t v = 0;
        if (oxl_hp_count(m, key, &v, true, err)) {
            return -1;
        }
        for (int32_t il = 0; il < n_layer; il++) {
            out[il] = v;
        }
        return 0;
    }
    const oxl_gguf_vtype et = oxl_gguf_arr_type(m->gguf, i);
    if ((et != OXL_GGUF_INT32 && et != OXL_GGUF_UINT32) || oxl_gguf_arr_n(m->gguf, i) != (uint64_t)n_layer) {
        return oxl_err_set(err, "%s: key '%s' is an array of %llu %s; expected %d int32", path, full,
                           (unsigned long long)oxl_gguf_arr_n(m->gguf, i), oxl_gguf_vtype_name(et), n_layer);
    }
    const char *data = oxl_gguf_arr_data(m->gguf, i);
    for (int32_t il = 0; il < n_layer; il++) {
        int32_t v;
        memcpy(&v, data + (size_t)il * 4, 4);
        if (v < 0) {
            return oxl_err_set(err, "%s: key '%s'[%d] = %d: must be non-negative", path, full, il, v);
        }
        out[il] = v;
    }
    return 0;
}

int oxl_bind_tensor_view(const oxl_model *m, oxl_tensor *t, const oxl_gguf_tensor *gt, int64_t ne0, int64_t ne1,
                         oxl_error *err) {
    const char *path = oxl_gguf_path(m->gguf);
    const oxl_kernels *k = oxl_kernels_get();
    const oxl_type_traits *tt = oxl_type_traits_get(gt->type);
    memset(t, 0, sizeof *t);
    if (gt->type != OXL_TYPE_F32 && (!k->vec_dot[gt->type] || !k->dequant[gt->type])) {
        return oxl_err_set(err, "%s: tensor '%s' has type %s, which oxillama cannot compute with yet", path, gt->name,
                           tt ? tt->name : "?");
    }
    if (ne1 == 0 && gt->type != OXL_TYPE_F32) {
        return oxl_err_set(err, "%s: tensor '%s' has type %s; 1-D tensors must be f32", path, gt->name, tt->name);
    }
    t->name = gt->name;
    t->type = (oxl_type)gt->type;
    t->ne[0] = ne0;
    t->ne[1] = ne1 ? ne1 : 1;
    t->row_size = oxl_row_size(t->type, ne0);
    t->data = gt->data;
    return 0;
}

int oxl_bind_tensor_3d(const oxl_model *m, oxl_tensor *t, const char *name, int il, int64_t ne0, int64_t ne1,
                       int64_t ne2, oxl_error *err) {
    char full[128];
    snprintf(full, sizeof full, name, il);
    const oxl_gguf_tensor *gt = oxl_gguf_find_tensor(m->gguf, full);
    const char *path = oxl_gguf_path(m->gguf);
    memset(t, 0, sizeof *t);
    if (!gt) {
        return oxl_err_set(err, "%s: missing tensor '%s'", path, full);
    }
    if (gt->ne[0] != ne0 || gt->ne[1] != ne1 || gt->ne[2] != ne2 || gt->ne[3] != 1) {
        return oxl_err_set(err, "%s: tensor '%s' has shape (%lld, %lld, %lld, %lld); expected (%lld, %lld, %lld)", path,
                           full, (long long)gt->ne[0], (long long)gt->ne[1], (long long)gt->ne[2], (long long)gt->ne[3],
                           (long long)ne0, (long long)ne1, (long long)ne2);
    }
    return oxl_bind_tensor_view(m, t, gt, ne0, ne1, err);
}

oxl_tensor oxl_tensor_slice(const oxl_tensor *t, int64_t i) {
    oxl_tensor v = *t;
    v.data = (const char *)t->data + (size_t)i * (size_t)t->ne[1] * t->row_size;
    return v;
}

int oxl_bind_tensor(const oxl_model *m, oxl_tensor *t, const char *name, int il, int64_t ne0, int64_t ne1,
                    bool required, oxl_error *err) {
    char full[128];
    if (il >= 0) {
        snprintf(full, sizeof full, name, il);
    } else {
        snprintf(full, sizeof full, "%s", name);
    }
    const char *path = oxl_gguf_path(m->gguf);
    const oxl_gguf_tensor *gt = oxl_gguf_find_tensor(m->gguf, full);
    memset(t, 0, sizeof *t);
    if (!gt) {
        return required ? oxl_err_set(err, "%s: missing tensor '%s'", path, full) : 0;
    }
    bool ok = gt->ne[0] == ne0 && gt->ne[1] == (ne1 ? ne1 : 1) && gt->ne[2] == 1 && gt->ne[3] == 1;
    if (!ok) {
        char want[64];
        if (ne1) {
            snprintf(want, sizeof want, "(%lld, %lld)", (long long)ne0, (long long)ne1);
        } else {
            snprintf(want, sizeof want, "(%lld)", (long long)ne0);
        }
        return oxl_err_set(err, "%s: tensor '%s' has shape (%lld, %lld, %lld, %lld); expected %s", path, full,
                           (long long)gt->ne[0], (long long)gt->ne[1], (long long)gt->ne[2], (long long)gt->ne[3],
                           want);
    }
    return oxl_bind_tensor_view(m, t, gt, ne0, ne1, err);
}

/* ---- the KV cache ------------------------------------------------------------------------ */

/* Writes one cache row of n floats in the cache's type, as ggml_set_rows converts rows: f32 copied,
 * f16 and q8_0 through the activation quantizers (ggml-cpu's from_float), q4_0 through the
 * reference quantizer (quantize_row_q4_0 is quantize_row_q4_0_ref). That quantizer refuses
 * non-finite input; such a row is stored with NaN block scales so its scores stay NaN, as the
 * values they came from were. */
static void store_row(oxl_type t, const float *src, void *dst, int64_t n) {
    if (t == OXL_TYPE_F32) {
        memcpy(dst, src, (size_t)n * sizeof(float));
    } else if (t == OXL_TYPE_Q4_0) {
        if (oxl_quantize_rows(t, src, dst, 1, n, NULL, NULL) != 0) {
            const oxl_type_traits *tr = oxl_type_traits_get(t);
            for (int64_t b = 0; b < n / tr->blck_size; b++) {
                uint8_t *blk = (uint8_t *)dst + (size_t)b * tr->type_size;
                memset(blk, 0x88, tr->type_size); /* every 4-bit value 8: zero after the offset */
                blk[0] = 0x00;                    /* fp16 NaN scale 0x7e00, little-endian */
                blk[1] = 0x7e;
            }
        }
    } else {
        oxl_kernels_get()->quant[t](src, dst, n);
    }
}

int oxl_kv_rot_k(const oxl_ctx *ctx, int head_dim) {
    if (!oxl_type_traits_get(ctx->kv.type_k)->is_quantized || head_dim % 64 != 0) {
        return 0;
    }
    int n = 64;
    while (head_dim % (2 * n) == 0) {
        n *= 2;
    }
    return n;
}

int oxl_kv_rot_v(const oxl_ctx *ctx, int head_dim) {
    return oxl_type_traits_get(ctx->kv.type_v)->is_quantized && head_dim % 64 == 0 ? 64 : 0;
}

void oxl_kv_store(oxl_ctx *ctx, int il, const oxl_ubatch *ub, const float *k, const float *v) {
    oxl_kv_cache *kv = &ctx->kv;
    for (int32_t j = 0; j < ub->n; j++) {
        const size_t r = (size_t)ub->seq[j] * (size_t)ctx->n_ctx + (size_t)ub->pos[j];
        store_row(kv->type_k, k + (size_t)j * kv->kv_dim, (char *)kv->k[il] + r * kv->k_row, kv->kv_dim);
        store_row(kv->type_v, v + (size_t)j * kv->kv_dim, (char *)kv->v[il] + r * kv->v_row, kv->kv_dim);
    }
}

oxl_kv_view oxl_ctx_kv_view(const oxl_ctx *ctx, int il, const oxl_ubatch *ub) {
    const oxl_kv_cache *kv = &ctx->kv;
    return (oxl_kv_view){.type_k = kv->type_k,
                         .type_v = kv->type_v,
                         .k = kv->k[il],
                         .v = kv->v[il],
                         .k_row = kv->k_row,
                         .v_row = kv->v_row,
                         .n_ctx = ctx->n_ctx,
                         .n_tokens = ub->n,
                         .pos = ub->pos,
                         .seq = ub->seq};
}
