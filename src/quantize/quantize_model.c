/* oxl_quantize_model: llama-quantize's main loop (llama.cpp src/llama-quant.cpp
 * llama_model_quantize_impl) on the project's reader, quantizers and writer. */
#include "quantize_model.h"

#include "errors.h"
#include "gguf_split.h"
#include "gguf.h"
#include "gguf_write.h"
#include "imatrix.h"
#include "kernels.h"
#include "oxl_fp16.h"
#include "quantize.h"
#include "pool.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define OXL_QNT_VERSION 2        /* GGML_QNT_VERSION */
#define OXL_QUANT_MAX_THREADS 64 /* threads used per tensor, at most */

/* ---- the model's hyper-parameters the mix rules use ---- */

/* The value llama_model_loader reads for key from an --override-kv: the first override of the key
 * (its map keeps the first), when it is an int (one of another type is ignored, with a warning in
 * llama.cpp); read into the uint32_t hyper-parameter. */
static bool oxl_int_override(const oxl_quantize_params *p, const char *key, int64_t *out) {
    for (int i = 0; i < p->n_kv_overrides; i++) {
        if (strcmp(p->kv_overrides[i].key, key) == 0) {
            if (p->kv_overrides[i].tag != OXL_KV_OVERRIDE_INT) {
                return false;
            }
            *out = (int64_t)(uint32_t)p->kv_overrides[i].val_i64;
            return true;
        }
    }
    return false;
}

/* <arch>.<suffix> as an integer: a scalar, or the first element of a per-layer array. 0 when
 * absent (*found false). An int --override-kv of the key replaces it as llama_model_loader's
 * get_key does (key_or_arr false: even when absent from the file) or get_key_or_arr does
 * (key_or_arr true: only a scalar present in the file). */
static int oxl_arch_int(const oxl_gguf *g, const oxl_quantize_params *p, const char *arch, const char *suffix,
                        bool key_or_arr, bool *found, int64_t *out, oxl_error *err) {
    char key[256];
    snprintf(key, sizeof key, "%s.%s", arch, suffix);
    *found = false;
    *out = 0;
    const int64_t i = oxl_gguf_find_key(g, key);
    if (!key_or_arr && oxl_int_override(p, key, out)) {
        *found = true;
        return 0;
    }
    if (i < 0) {
        return 0;
    }
    *found = true;
    if (oxl_gguf_kv_type(g, i) != OXL_GGUF_ARRAY) {
        if (key_or_arr && oxl_int_override(p, key, out)) {
            return 0;
        }
        if (!oxl_gguf_kv_int(g, i, out)) {
            return oxl_err_set(err, "%s: key '%s' is a %s value, expected an integer", oxl_gguf_path(g), key,
                               oxl_gguf_vtype_name(oxl_gguf_kv_type(g, i)));
        }
        return 0;
    }
    const oxl_gguf_vtype t = oxl_gguf_arr_type(g, i);
    const uint8_t *data = oxl_gguf_arr_data(g, i);
    if (oxl_gguf_arr_n(g, i) == 0 || data == NULL || (t != OXL_GGUF_INT32 && t != OXL_GGUF_UINT32)) {
        return oxl_err_set(err, "%s: key '%s' is an array of %llu %s, expected 32-bit integers", oxl_gguf_path(g), key,
                           (unsigned long long)oxl_gguf_arr_n(g, i), oxl_gguf_vtype_name(t));
    }
    uint32_t u;
    memcpy(&u, data, 4);
    *out = t == OXL_GGUF_INT32 ? (int64_t)(int32_t)u : (int64_t)u;
    return 0;
}

static int oxl_read_model(const oxl_gguf *g, const oxl_quantize_params *p, oxl_quant_model *m, oxl_error *err) {
    const char *arch = NULL;
    if (oxl_gguf_get_str(g, "general.architecture", &arch, err) <= 0) {
        return arch ? -1 : oxl_err_set(err, "%s: missing key general.architecture", oxl_gguf_path(g));
    }
    bool found;
    int64_t n_layer, n_head, n_head_kv, n_expert;
    if (oxl_arch_int(g, p, arch, "block_count", false, &found, &n_layer, err) < 0 ||
        oxl_arch_int(g, p, arch, "attention.head_count", true, &found, &n_head, err) < 0 ||
        oxl_arch_int(g, p, arch, "attention.head_count_kv", true, &found, &n_head_kv, err) < 0) {
        return -1;
    }
    if (!found) {
        n_head_kv = n_head;
    }
    if (oxl_arch_int(g, p, arch, "expert_count", false, &found, &n_expert, err) < 0) {
        return -1;
    }
    if (n_layer < 0 || n_layer > 1 << 20 || n_head < 0 || n_head > 1 << 20 || n_head_kv < 0 || n_head_kv > 1 << 20 ||
        n_expert < 0 || n_expert > 1 << 20) {
        return oxl_err_set(err,
                           "%s: implausible hyper-parameters (block_count %lld, head_count %lld, head_count_kv %lld, "
                           "expert_count %lld)",
                           oxl_gguf_path(g), (long long)n_layer, (long long)n_head, (long long)n_head_kv,
                           (long long)n_expert);
    }
    *m = (oxl_quant_model){
        .arch = arch,
        .n_layer = (int)n_layer,
        .n_head = (int)n_head,
        .n_head_kv = (int)n_head_kv,
        .n_expert = (int)n_expert,
        /* llama-model.cpp: an 80-layer llama with grouped-query attention is LLM_TYPE_70B */
        .is_70b = strcmp(arch, "llama") == 0 && n_layer == 80 && n_head != n_head_kv,
    };
    return 0;
}

/* ---- conversion of one tensor ---- */

typedef struct oxl_quant_job {
    oxl_type type;
    const float *x;
    uint8_t *y;
    int64_t nrows, ne0;
    size_t row_size;
    const float *imatrix;
    int rc[OXL_QUANT_MAX_THREADS];
} oxl_quant_job;

static void oxl_quant_task(void *arg, int ith, int nth) {
    oxl_quant_job *j = arg;
    int64_t lo, hi;
    oxl_split_range(j->nrows, ith, nth, &lo, &hi);
    j->rc[ith] = hi > lo ? oxl_quantize_rows(j->type, j->x + lo * j->ne0, j->y + (size_t)lo * j->row_size, hi - lo,
                                             j->ne0, j->imatrix, NULL)
                         : 0;
}

/* The first non-finite value of n floats, as row and column of rows of ne0; false when none. */
static bool oxl_find_non_finite(const float *x, int64_t n, int64_t ne0, int64_t *row, int64_t *col) {
    for (int64_t i = 0; i < n; i++) {
        if (!isfinite(x[i])) {
            *row = i / ne0;
            *col = i % ne0;
            return true;
        }
    }
    return false;
}

/* The tensor's weights as floats: the data itself (f32), or converted into *buf. */
static const float *oxl_tensor_f32(const oxl_gguf_tensor *t, bool allow_requantize, float **buf, size_t *cap,
                                   oxl_error *err) {
    if (t->type == OXL_TYPE_F32) {
        return t->data;
    }
    const int64_t n = t->ne[0] * t->ne[1] * t->ne[2] * t->ne[3];
    if ((size_t)n > *cap) {
        float *p = realloc(*buf, (size_t)n * sizeof(float));
        if (p == NULL) {
            oxl_err_set(err, "tensor '%s': out of memory for %lld floats", t->name, (long long)n);
            return NULL;
        }
        *buf = p;
        *cap = (size_t)n;
    }
    const oxl_type_traits *tr = oxl_type_traits_get(t->type);
    const uint16_t *h = t->data;
    if (t->type == OXL_TYPE_F16) {
        for (int64_t i = 0; i < n; i++) {
            uint16_t v;
            memcpy(&v, h + i, 2);
            (*buf)[i] = oxl_fp16_to_fp32(v);
        }
    } else if (t->type == OXL_TYPE_BF16) {
        for (int64_t i = 0; i < n; i++) {
            uint16_t v;
            memcpy(&v, h + i, 2);
            (*buf)[i] = oxl_bf16_to_fp32(v);
        }
    } else if (t->type == OXL_TYPE_F64 || (t->type >= OXL_TYPE_I8 && t->type <= OXL_TYPE_I64)) {
        oxl_err_set(err, "tensor '%s': cannot convert type %s to floats", t->name, tr->name);
        return NULL;
    } else {
        if (!allow_requantize) {
            oxl_err_set(err, "tensor '%s': requantizing from type %s is disabled (--allow-requantize)", t->name,
                        tr->name);
            return NULL;
        }
        const oxl_dequant_fn dq = oxl_kernels_get()->dequant[t->type];
        if (dq == NULL) {
            oxl_err_set(err, "tensor '%s': cannot requantize from %s: no dequantization kernel for it", t->name,
                        tr->name);
            return NULL;
        }
        const size_t row_size = oxl_row_size((oxl_type)t->type, t->ne[0]);
        for (int64_t r = 0; r < n / t->ne[0]; r++) {
            dq((const uint8_t *)t->data + (size_t)r * row_size, *buf + r * t->ne[0], t->ne[0]);
        }
    }
    return *buf;
}

/* ---- the whole model ---- */

typedef struct oxl_qm {
    const oxl_quantize_params *p;
    oxl_gguf *in;
    oxl_imatrix *im;
    oxl_gguf_writer *w;
    oxl_pool *pool;
    oxl_quant_tensor *plan;
    float *fbuf;
    size_t fcap;
    uint8_t *qbuf;
    size_t qcap;
} oxl_qm;

/* Output metadata: the input's key/values, the quantization version and file type, no split keys,
 * and (with an imatrix) the keys llama-quantize records about it. */
static int oxl_qm_metadata(oxl_qm *q, oxl_error *err) {
    if (oxl_gguf_writer_copy_kvs(q->w, q->in, err) < 0 ||
        oxl_gguf_writer_set_u32(q->w, "general.quantization_version", OXL_QNT_VERSION, err) < 0 ||
        oxl_gguf_writer_set_u32(q->w, "general.file_type", oxl_ftype_id(q->p->ftype), err) < 0) {
        return -1;
    }
    oxl_gguf_writer_remove(q->w, "split.no");
    oxl_gguf_writer_remove(q->w, "split.count");
    oxl_gguf_writer_remove(q->w, "split.tensors.count");
    /* --override-kv, with the value types llama_model_quantize_impl writes */
    for (int i = 0; i < q->p->n_kv_overrides; i++) {
        const oxl_kv_override *o = &q->p->kv_overrides[i];
        int rc = 0;
        switch (o->tag) {
        case OXL_KV_OVERRIDE_FLOAT: rc = oxl_gguf_writer_set_f32(q->w, o->key, (float)o->val_f64, err); break;
        case OXL_KV_OVERRIDE_INT:
            /* u32 of the absolute value, as llama.cpp writes it */
            rc = oxl_gguf_writer_set_u32(
                q->w, o->key, (uint32_t)(o->val_i64 < 0 ? 0 - (uint64_t)o->val_i64 : (uint64_t)o->val_i64), err);
            break;
        case OXL_KV_OVERRIDE_BOOL: rc = oxl_gguf_writer_set_bool(q->w, o->key, o->val_bool, err); break;
        case OXL_KV_OVERRIDE_STR: rc = oxl_gguf_writer_set_str(q->w, o->key, o->val_str, err); break;
        }
        if (rc < 0) {
            return -1;
        }
    }
    if (q->im == NULL) {
        return 0;
    }
    if (oxl_gguf_writer_set_str(q->w, "quantize.imatrix.file", q->p->imatrix_path, err) < 0 ||
        (oxl_imatrix_dataset(q->im) != NULL &&
         oxl_gguf_writer_set_str(q->w, "quantize.imatrix.dataset", oxl_imatrix_dataset(q->im), err) < 0) ||
        oxl_gguf_writer_set_u32(q->w, "quantize.imatrix.entries_count", (uint32_t)oxl_imatrix_n_entries(q->im), err) <
            0 ||
        (oxl_imatrix_chunk_count(q->im) > 0 &&
         oxl_gguf_writer_set_u32(q->w, "quantize.imatrix.chunks_count", (uint32_t)oxl_imatrix_chunk_count(q->im), err) <
             0)) {
        return -1;
    }
    return 0;
}

/* The importance weights for tensor t: NULL when the file has none for it (or none was given);
 * -1 with err when its size does not match (tolerated for token embeddings, as llama.cpp does) or
 * the target requires one. */
static int oxl_qm_imatrix(const oxl_qm *q, const oxl_quant_tensor *t, const float **out, oxl_error *err) {
    *out = NULL;
    if (q->im != NULL) {
        size_t n = 0;
        const float *w = oxl_imatrix_find(q->im, t->name, &n);
        if (w != NULL && n == (size_t)(t->ne[0] * t->ne[2])) {
            *out = w;
        } else if (w != NULL && strcmp(t->name, "token_embd.weight") != 0 &&
                   strcmp(t->name, "per_layer_token_embd.weight") != 0) {
            return oxl_err_set(err, "%s: imatrix entry '%s' has %zu values, the tensor needs %lld", q->p->imatrix_path,
                               t->name, n, (long long)(t->ne[0] * t->ne[2]));
        }
    }
    if (*out == NULL && t->requires_imatrix) {
        return oxl_err_set(err, "tensor '%s': no importance matrix entry, and %s needs one", t->name,
                           oxl_type_traits_get((uint32_t)t->target)->name);
    }
    return 0;
}

/* Converts tensor t (input tensor src) and writes it. */
static int oxl_qm_tensor(oxl_qm *q, const oxl_quant_tensor *t, const oxl_gguf_tensor *src, size_t nbytes,
                         oxl_error *err) {
    if (t->target == t->type) {
        return oxl_gguf_writer_write_data(q->w, src->data, src->nbytes, err);
    }
    const float *imatrix = NULL;
    if (oxl_qm_imatrix(q, t, &imatrix, err) < 0) {
        return -1;
    }
    const float *x = oxl_tensor_f32(src, q->p->allow_requantize, &q->fbuf, &q->fcap, err);
    if (x == NULL) {
        return -1;
    }
    const int64_t ne0 = t->ne[0], nrows = t->ne[1], nslices = t->ne[2] * t->ne[3];
    int64_t row, col;
    if (oxl_find_non_finite(x, ne0 * nrows * nslices, ne0, &row, &col)) {
        return oxl_err_set(err, "%s: tensor '%s' row %lld column %lld holds %g (not finite)", oxl_gguf_path(q->in),
                           t->name, (long long)row, (long long)col, (double)x[row * ne0 + col]);
    }
    if (nbytes > q->qcap) {
        uint8_t *p = realloc(q->qbuf, nbytes);
        if (p == NULL) {
            return oxl_err_set(err, "tensor '%s': out of memory for %zu bytes", t->name, nbytes);
        }
        q->qbuf = p;
        q->qcap = nbytes;
    }
    const size_t row_size = oxl_row_size(t->target, ne0);
    for (int64_t s = 0; s < nslices; s++) {
        /* experts (ne2) are quantized separately, each with its own slice of the imatrix */
        oxl_quant_job job = {
            .type = t->target,
            .x = x + s * nrows * ne0,
            .y = q->qbuf + (size_t)(s * nrows) * row_size,
            .nrows = nrows,
            .ne0 = ne0,
            .row_size = row_size,
            .imatrix = imatrix ? imatrix + (s % t->ne[2]) * ne0 : NULL,
        };
        oxl_pool_run(q->pool, oxl_quant_task, &job);
        for (int i = 0; i < oxl_pool_size(q->pool); i++) {
            if (job.rc[i] != 0) {
                return oxl_err_set(err, "tensor '%s': cannot quantize to %s", t->name,
                                   oxl_type_traits_get((uint32_t)t->target)->name);
            }
        }
    }
    return oxl_gguf_writer_write_data(q->w, q->qbuf, nbytes, err);
}

/* One tensor's progress line, as llama_model_quantize_impl prints it once the tensor is written. */
static void oxl_qm_progress(const oxl_qm *q, const oxl_quant_tensor *t, const oxl_gguf_tensor *src, size_t nbytes,
                            int64_t i, int64_t n) {
    FILE *f = q->p->progress;
    if (f == NULL) {
        return;
    }
    fprintf(f, "[%4lld/%4lld] %-36s - [%6lld, %6lld, %6lld, %6lld], type = %6s, ", (long long)(i + 1), (long long)n,
            t->name, (long long)t->ne[0], (long long)t->ne[1], (long long)t->ne[2], (long long)t->ne[3],
            oxl_type_traits_get((uint32_t)t->type)->name);
    if (t->target == t->type) {
        fprintf(f, "size = %8.3f MiB\n", (double)src->nbytes / 1024.0 / 1024.0);
    } else {
        fprintf(f, "converting to %s .. size = %8.2f MiB -> %8.2f MiB\n",
                oxl_type_traits_get((uint32_t)t->target)->name, (double)src->nbytes / 1024.0 / 1024.0,
                (double)nbytes / 1024.0 / 1024.0);
    }
    fflush(f);
}

/* Source file order: the part, then the offset in it (llama-quantize sorts its weights so with
 * --keep-split). */
static const oxl_gguf *g_order_in;
static int oxl_qm_file_order(const void *a, const void *b) {
    const oxl_gguf_tensor *x = oxl_gguf_find_tensor(g_order_in, ((const oxl_quant_tensor *)a)->name);
    const oxl_gguf_tensor *y = oxl_gguf_find_tensor(g_order_in, ((const oxl_quant_tensor *)b)->name);
    if (x->split != y->split) {
        return x->split < y->split ? -1 : 1;
    }
    return (x->offset > y->offset) - (x->offset < y->offset);
}

/* --keep-split on a split input (llama_model_quantize_impl with keep_split): the types chosen as for
 * one output, then one output per input part, named out_prefix-0000K-of-0000N.gguf, holding that
 * part's tensors in file order; the first holds the metadata; each ends with split.no,
 * split.count and split.tensors.count. Written one after the other, each through its temporary
 * file; on error the parts already written stay (as llama-quantize's). */
static int oxl_qm_write_split(oxl_qm *q, const char *out_prefix, int64_t n, int n_fallback, oxl_quantize_stats *st,
                              oxl_error *err) {
    const int n_parts = oxl_gguf_n_parts(q->in);
    g_order_in = q->in;
    qsort(q->plan, (size_t)n, sizeof *q->plan, oxl_qm_file_order);
    g_order_in = NULL;
    if ((q->pool = oxl_pool_new(q->p->n_threads > OXL_QUANT_MAX_THREADS ? OXL_QUANT_MAX_THREADS : q->p->n_threads,
                                err)) == NULL) {
        return -1;
    }
    oxl_quantize_stats s = {.n_tensors = n, .n_fallback = n_fallback};
    int64_t i = 0;
    for (int k = 0; k < n_parts; k++) {
        q->w = oxl_gguf_writer_new(err);
        if (q->w == NULL || (k == 0 && oxl_qm_metadata(q, err) < 0) ||
            oxl_gguf_writer_set_u16(q->w, "split.no", (uint16_t)k, err) < 0 ||
            oxl_gguf_writer_set_u16(q->w, "split.count", (uint16_t)n_parts, err) < 0 ||
            oxl_gguf_writer_set_i32(q->w, "split.tensors.count", (int32_t)n, err) < 0) {
            return -1;
        }
        int64_t end = i;
        while (end < n && oxl_gguf_find_tensor(q->in, q->plan[end].name)->split == (uint32_t)k) {
            const oxl_gguf_tensor *t = oxl_gguf_find_tensor(q->in, q->plan[end].name);
            if (oxl_gguf_writer_add_tensor(q->w, t->name, q->plan[end].target, t->n_dims, t->ne, err) < 0) {
                return -1;
            }
            end++;
        }
        char path[4096];
        if (!oxl_gguf_split_path(path, sizeof path, out_prefix, k, n_parts)) {
            return oxl_err_set(err, "%s: output name too long", out_prefix);
        }
        if (oxl_gguf_writer_begin(q->w, path, err) < 0) {
            return -1;
        }
        for (int64_t j = i; j < end; j++) {
            const oxl_quant_tensor *t = &q->plan[j];
            const oxl_gguf_tensor *src = oxl_gguf_find_tensor(q->in, t->name);
            const size_t nbytes = oxl_gguf_writer_tensor_nbytes(q->w, j - i);
            if (oxl_qm_tensor(q, t, src, nbytes, err) < 0) {
                return -1;
            }
            s.bytes_in += src->nbytes;
            s.bytes_out += nbytes;
            s.n_elements += (uint64_t)(t->ne[0] * t->ne[1] * t->ne[2] * t->ne[3]);
            oxl_qm_progress(q, t, src, nbytes, j, n);
        }
        if (oxl_gguf_writer_finish(q->w, err) < 0) {
            return -1;
        }
        oxl_gguf_writer_free(q->w);
        q->w = NULL;
        i = end;
    }
    if (st != NULL) {
        *st = s;
    }
    return 0;
}

static int oxl_qm_run(oxl_qm *q, const char *in_path, const char *out_path, oxl_quantize_stats *st, oxl_error *err) {
    const oxl_quantize_params *p = q->p;
    if (p->ftype == NULL || p->n_threads < 1) {
        return oxl_err_set(err, "quantize: no ftype, or %d threads", p->n_threads);
    }
    /* a split model is read from its first part, as llama-quantize reads it */
    q->in = oxl_gguf_open_model(in_path, err);
    if (q->in == NULL) {
        return -1;
    }
    oxl_quant_model m;
    if (oxl_read_model(q->in, p, &m, err) < 0) {
        return -1;
    }
    if (p->imatrix_path != NULL && (q->im = oxl_imatrix_load(p->imatrix_path, err)) == NULL) {
        return -1;
    }
    if (q->im != NULL && oxl_imatrix_n_entries(q->im) == 0) {
        /* llama-quantize passes no imatrix at all when the file has no entries */
        oxl_imatrix_free(q->im);
        q->im = NULL;
    }
    const int64_t n = oxl_gguf_n_tensors(q->in);
    q->plan = calloc((size_t)(n > 0 ? n : 1), sizeof *q->plan);
    if (q->plan == NULL) {
        return oxl_err_set(err, "%s: out of memory for %lld tensors", in_path, (long long)n);
    }
    for (int64_t i = 0; i < n; i++) {
        const oxl_gguf_tensor *t = oxl_gguf_tensor_at(q->in, i);
        q->plan[i] = (oxl_quant_tensor){.name = t->name, .type = (oxl_type)t->type};
        memcpy(q->plan[i].ne, t->ne, sizeof t->ne);
    }
    oxl_quant_sort(q->plan, n);
    const oxl_quant_options o = {
        .ftype = p->ftype,
        .output_type = p->output_type,
        .token_embd_type = p->token_embd_type,
        .pure = p->pure,
        .has_imatrix = q->im != NULL,
        .leave_output = p->leave_output,
        .override_type = p->tensor_types != NULL ? oxl_tensor_types_match : NULL,
        .override_ctx = (void *)p->tensor_types,
    };
    const int n_fallback = oxl_quant_choose_types(&m, &o, q->plan, n, err);
    if (n_fallback < 0) {
        return oxl_err_prefix(err, "%s", in_path);
    }
    for (int64_t i = 0; i < n; i++) {
        /* --output-tensor-type / --token-embedding-type are taken as given, without fallback */
        const oxl_quant_tensor *t = &q->plan[i];
        const oxl_type_traits *tr = oxl_type_traits_get((uint32_t)t->target);
        if (t->target != t->type && !oxl_quantize_supported(t->target)) {
            return oxl_err_set(err, "%s: tensor '%s': no quantizer for type %s", in_path, t->name, tr->name);
        }
        if (t->ne[0] % tr->blck_size != 0) {
            return oxl_err_set(err, "%s: tensor '%s': row length %lld is not a multiple of %s's block size %lld",
                               in_path, t->name, (long long)t->ne[0], tr->name, (long long)tr->blck_size);
        }
    }
    if (p->progress != NULL) {
        for (int64_t i = 0; i < n; i++) {
            oxl_type manual;
            if (q->plan[i].manual && oxl_tensor_types_match((void *)p->tensor_types, q->plan[i].name, &manual) &&
                manual != p->ftype->type) {
                fprintf(p->progress, "%-36s - applying manual override: %s -> %s\n", q->plan[i].name,
                        oxl_type_traits_get((uint32_t)p->ftype->type)->name,
                        oxl_type_traits_get((uint32_t)manual)->name);
            }
        }
    }
    if (p->keep_split && oxl_gguf_n_parts(q->in) > 1) {
        return oxl_qm_write_split(q, out_path, n, n_fallback, st, err);
    }
    q->w = oxl_gguf_writer_new(err);
    if (q->w == NULL || oxl_qm_metadata(q, err) < 0) {
        return -1;
    }
    for (int64_t i = 0; i < n; i++) {
        const oxl_gguf_tensor *t = oxl_gguf_find_tensor(q->in, q->plan[i].name);
        if (oxl_gguf_writer_add_tensor(q->w, t->name, q->plan[i].target, t->n_dims, t->ne, err) < 0) {
            return -1;
        }
    }
    if ((q->pool = oxl_pool_new(p->n_threads > OXL_QUANT_MAX_THREADS ? OXL_QUANT_MAX_THREADS : p->n_threads, err)) ==
            NULL ||
        oxl_gguf_writer_begin(q->w, out_path, err) < 0) {
        return -1;
    }
    oxl_quantize_stats s = {.n_tensors = n, .n_fallback = n_fallback};
    for (int64_t i = 0; i < n; i++) {
        const oxl_quant_tensor *t = &q->plan[i];
        const oxl_gguf_tensor *src = oxl_gguf_find_tensor(q->in, t->name);
        const size_t nbytes = oxl_gguf_writer_tensor_nbytes(q->w, i);
        if (oxl_qm_tensor(q, t, src, nbytes, err) < 0) {
            return -1;
        }
        s.bytes_in += src->nbytes;
        s.bytes_out += nbytes;
        s.n_elements += (uint64_t)(t->ne[0] * t->ne[1] * t->ne[2] * t->ne[3]);
        if (p->progress != NULL) {
            /* llama_model_quantize_impl's line, printed once the tensor is written */
            fprintf(p->progress, "[%4lld/%4lld] %-36s - [%6lld, %6lld, %6lld, %6lld], type = %6s, ", (long long)(i + 1),
                    (long long)n, t->name, (long long)t->ne[0], (long long)t->ne[1], (long long)t->ne[2],
                    (long long)t->ne[3], oxl_type_traits_get((uint32_t)t->type)->name);
            if (t->target == t->type) {
                fprintf(p->progress, "size = %8.3f MiB\n", (double)src->nbytes / 1024.0 / 1024.0);
            } else {
                fprintf(p->progress, "converting to %s .. size = %8.2f MiB -> %8.2f MiB\n",
                        oxl_type_traits_get((uint32_t)t->target)->name, (double)src->nbytes / 1024.0 / 1024.0,
                        (double)nbytes / 1024.0 / 1024.0);
            }
            fflush(p->progress);
        }
    }
    if (oxl_gguf_writer_finish(q->w, err) < 0) {
        return -1;
    }
    if (st != NULL) {
        *st = s;
    }
    return 0;
}

int oxl_quantize_model(const char *in_path, const char *out_path, const oxl_quantize_params *p,
                       oxl_quantize_stats *stats, oxl_error *err) {
    oxl_qm q = {.p = p};
    const int rc = oxl_qm_run(&q, in_path, out_path, stats, err);
    oxl_gguf_writer_free(q.w); /* removes the temporary output unless finished */
    oxl_pool_free(q.pool);
    oxl_imatrix_free(q.im);
    oxl_gguf_close(q.in);
    free(q.plan);
    free(q.fbuf);
    free(q.qbuf);
    return rc;
}
