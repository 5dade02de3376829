#include "blocks.h"

#include "errors.h"

#include <math.h>
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
    if (oxl_bind_tensor_view(m, t, gt, ne0, ne1, err) != 0) {
        return -1;
    }
    t->n_slice = (int32_t)ne2;
    return 0;
}

oxl_tensor oxl_tensor_slice(const oxl_tensor *t, int64_t i) {
    oxl_tensor v = *t;
    v.slice = (int32_t)i;
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

size_t oxl_carve(void *base, float **const *slots, const size_t *sizes, size_t n) {
    size_t off = 0;
    for (size_t i = 0; i < n; i++) {
        if (base) {
            *slots[i] = (float *)((char *)base + off);
        }
        off += (sizes[i] * sizeof(float) + 63) & ~(size_t)63;
    }
    return off;
}

void oxl_rms_output_head(oxl_pool *pool, const oxl_ubatch *ub, const float *x, int64_t E, int32_t n,
                         const oxl_tensor *output_norm, float eps, const oxl_tensor *output, int64_t n_vocab, float *xb,
                         float *xout, float *logits, void *scratch) {
    const int32_t n_out = ub->n_out;
    if (ub->embd) {
        oxl_norm(OXL_NORM_RMS, x, output_norm, NULL, ub->embd, E, n, eps);
    }
    if (n_out == 0) {
        return;
    }
    if (ub->embd) {
        for (int32_t j = 0; j < n_out; j++) {
            memcpy(xb + (size_t)j * E, ub->embd + (size_t)ub->out_ids[j] * E, (size_t)E * sizeof(float));
        }
    } else {
        for (int32_t j = 0; j < n_out; j++) {
            memcpy(xout + (size_t)j * E, x + (size_t)ub->out_ids[j] * E, (size_t)E * sizeof(float));
        }
        oxl_norm(OXL_NORM_RMS, xout, output_norm, NULL, xb, E, n_out, eps);
    }
    oxl_matmul(pool, output, xb, n_out, logits, n_vocab, scratch);
}
