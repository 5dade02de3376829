/* LoRA merging (export_lora.h), as llama.cpp's tools/export-lora/export-lora.cpp (lora_merge_ctx). */
#include "export_lora.h"

#include "errors.h"
#include "gguf.h"
#include "gguf_write.h"
#include "matmul.h"
#include "oxl_types.h"
#include "pool.h"

#include <stdlib.h>
#include <string.h>

#define MAX_ADAPTERS 64

typedef struct adapter {
    oxl_gguf *g;
    const char *path;
    float alpha, scale;
} adapter;

static bool ends_with(const char *s, const char *suffix) {
    const size_t n = strlen(s), k = strlen(suffix);
    return n >= k && !strcmp(s + n - k, suffix);
}

static const char *str_or_empty(const oxl_gguf *g, const char *key) {
    const char *s = NULL;
    return oxl_gguf_get_str(g, key, &s, NULL) == 1 ? s : "";
}

/* check_metadata_lora */
static int check_adapter(const oxl_gguf *base, adapter *a, oxl_error *err) {
    const char *t = str_or_empty(a->g, "general.type");
    if (strcmp(t, "adapter") != 0) {
        return oxl_err_set(err, "%s: general.type must be 'adapter', is '%s'", a->path, t);
    }
    t = str_or_empty(a->g, "adapter.type");
    if (strcmp(t, "lora") != 0) {
        return oxl_err_set(err, "%s: adapter.type must be 'lora', is '%s'", a->path, t);
    }
    const char *want = str_or_empty(base, "general.architecture");
    t = str_or_empty(a->g, "general.architecture");
    if (strcmp(t, want) != 0) {
        return oxl_err_set(err, "%s: general.architecture '%s' is not the base model's '%s'", a->path, t, want);
    }
    const int64_t ka = oxl_gguf_find_key(a->g, "adapter.lora.alpha");
    a->alpha = 0.0f;
    if (ka >= 0) {
        double v = 0.0;
        if (oxl_gguf_kv_type(a->g, ka) != OXL_GGUF_FLOAT32 || !oxl_gguf_kv_float(a->g, ka, &v)) {
            return oxl_err_set(err, "%s: adapter.lora.alpha must be a float32", a->path);
        }
        a->alpha = (float)v;
    }
    return 0;
}

static int cmp_name(const void *x, const void *y) {
    const oxl_gguf_tensor *const *a = x, *const *b = y;
    return strcmp((*a)->name, (*b)->name);
}

/* A factor as f32 (ggml_cast), ne0 x ne1 floats. */
static int factor_f32(const adapter *a, const oxl_gguf_tensor *t, float *out, oxl_error *err) {
    const oxl_type_traits *tt = oxl_type_traits_get(t->type);
    if (!tt || tt->is_quantized || (t->type != OXL_TYPE_F32 && !oxl_kernels_get()->dequant[t->type])) {
        return oxl_err_set(err, "%s: tensor '%s' has type %s: quantized LoRA adapters are not supported (f16 or f32)",
                           a->path, t->name, tt ? tt->name : "?");
    }
    const int64_t n = t->ne[0] * t->ne[1];
    if (t->type == OXL_TYPE_F32) {
        memcpy(out, t->data, (size_t)n * sizeof(float));
    } else {
        oxl_kernels_get()->dequant[t->type](t->data, out, n);
    }
    return 0;
}

/* merge_tensor: W (f32) + sum over adapters of scale * (A^T B), the product as ggml_mul_mat of the
 * contiguous transpose of A with B, then cast to the output type into out. */
static int merge(oxl_pool *pool, const oxl_gguf_tensor *w, adapter *ad, int n, oxl_type out_type, void *out,
                 oxl_error *err) {
    const int64_t n_in = w->ne[0], n_out = w->ne[1], nel = n_in * n_out;
    float *cur = malloc((size_t)nel * sizeof(float));
    float *delta = malloc((size_t)nel * sizeof(float));
    float *fa = NULL, *at = NULL, *fb = NULL;
    void *scratch = NULL;
    int rc = -1;
    if (!cur || !delta) {
        oxl_err_set(err, "out of memory merging '%s'", w->name);
        goto done;
    }
    if (w->type == OXL_TYPE_F32) {
        memcpy(cur, w->data, (size_t)nel * sizeof(float));
    } else {
        oxl_kernels_get()->dequant[w->type](w->data, cur, nel);
    }
    for (int i = 0; i < n; i++) {
        char name[600];
        snprintf(name, sizeof name, "%s.lora_a", w->name);
        const oxl_gguf_tensor *ta = oxl_gguf_find_tensor(ad[i].g, name);
        snprintf(name, sizeof name, "%s.lora_b", w->name);
        const oxl_gguf_tensor *tb = oxl_gguf_find_tensor(ad[i].g, name);
        const int64_t rank = tb->ne[0];
        if (ta->ne[0] != n_in || tb->ne[1] != n_out || ta->ne[1] != rank || ta->ne[2] * ta->ne[3] != 1 ||
            tb->ne[2] * tb->ne[3] != 1) {
            oxl_err_set(err,
                        "%s: LoRA tensors of '%s' have shapes a (%lld, %lld), b (%lld, %lld); the base model's is "
                        "(%lld, %lld)",
                        ad[i].path, w->name, (long long)ta->ne[0], (long long)ta->ne[1], (long long)tb->ne[0],
                        (long long)tb->ne[1], (long long)n_in, (long long)n_out);
            goto done;
        }
        free(fa);
        free(at);
        free(fb);
        fa = malloc((size_t)(n_in * rank) * sizeof(float));
        at = malloc((size_t)(n_in * rank) * sizeof(float));
        fb = malloc((size_t)(rank * n_out) * sizeof(float));
        if (!fa || !at || !fb) {
            oxl_err_set(err, "out of memory merging '%s'", w->name);
            goto done;
        }
        if (factor_f32(&ad[i], ta, fa, err) != 0 || factor_f32(&ad[i], tb, fb, err) != 0) {
            goto done;
        }
        /* ggml_cont(ggml_transpose(A)): rows of rank values, one per input element */
        for (int64_t r = 0; r < rank; r++) {
            for (int64_t c = 0; c < n_in; c++) {
                at[c * rank + r] = fa[r * n_in + c];
            }
        }
        const oxl_tensor wt = {.name = w->name,
                               .type = OXL_TYPE_F32,
                               .ne = {rank, n_in},
                               .row_size = (size_t)rank * sizeof(float),
                               .data = at};
        free(scratch);
        scratch = malloc(oxl_matmul_scratch_size(OXL_TYPE_F32, rank, n_out) + 1);
        if (!scratch) {
            oxl_err_set(err, "out of memory merging '%s'", w->name);
            goto done;
        }
        oxl_matmul(pool, &wt, fb, n_out, delta, n_in, scratch);
        const float alpha = ad[i].alpha;
        const float scale = alpha != 0.0f ? ad[i].scale * alpha / (float)rank : ad[i].scale;
        for (int64_t k = 0; k < nel; k++) {
            const float d = delta[k] * scale; /* ggml_scale, then ggml_add(delta, cur) */
            cur[k] = d + cur[k];
        }
    }
    if (out_type == OXL_TYPE_F32) {
        memcpy(out, cur, (size_t)nel * sizeof(float));
    } else {
        oxl_kernels_get()->quant[out_type](cur, out, nel);
    }
    rc = 0;
done:
    free(cur);
    free(delta);
    free(fa);
    free(at);
    free(fb);
    free(scratch);
    return rc;
}

/* Every adapter holds both parts (1), none (0), or something else (-1, err set). */
static int pair_state(const oxl_gguf_tensor *w, adapter *ad, int n, oxl_error *err) {
    char na[600], nb[600];
    snprintf(na, sizeof na, "%s.lora_a", w->name);
    snprintf(nb, sizeof nb, "%s.lora_b", w->name);
    bool all_a = true, all_b = true;
    for (int i = 0; i < n; i++) {
        all_a &= oxl_gguf_find_tensor(ad[i].g, na) != NULL;
        all_b &= oxl_gguf_find_tensor(ad[i].g, nb) != NULL;
    }
    if (!all_a && !all_b) {
        return 0;
    }
    if (all_a && all_b) {
        if (w->ne[2] * w->ne[3] != 1) {
            return oxl_err_set(err, "tensor '%s': merging a %u-D tensor is not supported", w->name,
                               (unsigned)w->n_dims);
        }
        if (ends_with(w->name, "token_embd.weight") || !strncmp(w->name, "token_embd", 10)) {
            return oxl_err_set(err, "tensor '%s': merging the token embedding is not supported yet", w->name);
        }
        return 1;
    }
    return oxl_err_set(err, "tensor '%s' is missing either lora_a or lora_b", w->name);
}

int oxl_export_lora(const char *base_path, const char *const *loras, const float *scales, int n, const char *out,
                    int n_threads, FILE *log, oxl_error *err) {
    if (n < 1 || n > MAX_ADAPTERS) {
        return oxl_err_set(err, "export-lora: 1 to %d adapters (--lora)", MAX_ADAPTERS);
    }
    adapter ad[MAX_ADAPTERS] = {0};
    oxl_gguf *base = oxl_gguf_open(base_path, err);
    oxl_gguf_writer *wr = NULL;
    oxl_pool *pool = NULL;
    const oxl_gguf_tensor **order = NULL;
    void *buf = NULL;
    int rc = -1;
    if (!base) {
        goto done;
    }
    if (oxl_gguf_find_key(base, "split.count") >= 0) {
        oxl_err_set(err, "%s: a split model is not supported", base_path);
        goto done;
    }
    for (int i = 0; i < n; i++) {
        ad[i].path = loras[i];
        ad[i].scale = scales[i];
        ad[i].g = oxl_gguf_open(loras[i], err);
        if (!ad[i].g || check_adapter(base, &ad[i], err) != 0) {
            goto done;
        }
    }
    /* every adapter must have the same tensors (llama-export-lora's err_no_subset_adapter) */
    for (int i = 1; i < n; i++) {
        bool same = oxl_gguf_n_tensors(ad[i].g) == oxl_gguf_n_tensors(ad[0].g);
        for (int64_t k = 0; same && k < oxl_gguf_n_tensors(ad[i].g); k++) {
            same = oxl_gguf_find_tensor(ad[0].g, oxl_gguf_tensor_at(ad[i].g, k)->name) != NULL;
        }
        if (!same) {
            oxl_err_set(err, "%s and %s do not have the same list of tensors: merge the adapters one by one", loras[0],
                        loras[i]);
            goto done;
        }
    }
    const int64_t nt = oxl_gguf_n_tensors(base);
    order = malloc(sizeof *order * (size_t)(nt > 0 ? nt : 1));
    wr = oxl_gguf_writer_new(err);
    pool = wr ? oxl_pool_new(n_threads, err) : NULL;
    if (!order || !pool) {
        if (!order) {
            oxl_err_set(err, "out of memory");
        }
        goto done;
    }
    for (int64_t k = 0; k < nt; k++) {
        order[k] = oxl_gguf_tensor_at(base, k);
    }
    qsort(order, (size_t)nt, sizeof *order, cmp_name); /* std::map order */
    if (oxl_gguf_writer_copy_kvs(wr, base, err) != 0 || oxl_gguf_writer_set_u32(wr, "general.file_type", 1, err) != 0) {
        goto done;
    }
    size_t max_bytes = 0;
    for (int64_t k = 0; k < nt; k++) {
        const oxl_gguf_tensor *t = order[k];
        const int st = pair_state(t, ad, n, err);
        if (st < 0) {
            goto done;
        }
        const oxl_type ty = st == 0 || t->type == OXL_TYPE_F32 ? (oxl_type)t->type : OXL_TYPE_F16;
        if (oxl_gguf_writer_add_tensor(wr, t->name, ty, t->n_dims, t->ne, err) != 0) {
            goto done;
        }
        const size_t nb = oxl_gguf_writer_tensor_nbytes(wr, k);
        max_bytes = nb > max_bytes ? nb : max_bytes;
        if (st == 1 && t->type != OXL_TYPE_F32 && (!oxl_kernels_get()->dequant[t->type])) {
            oxl_err_set(err, "%s: tensor '%s' has a type oxillama cannot dequantize", base_path, t->name);
            goto done;
        }
    }
    buf = malloc(max_bytes ? max_bytes : 1);
    if (!buf) {
        oxl_err_set(err, "out of memory");
        goto done;
    }
    if (oxl_gguf_writer_begin(wr, out, err) != 0) {
        goto done;
    }
    int n_merged = 0;
    for (int64_t k = 0; k < nt; k++) {
        const oxl_gguf_tensor *t = order[k];
        const size_t nb = oxl_gguf_writer_tensor_nbytes(wr, k);
        if (pair_state(t, ad, n, err) == 1) {
            const oxl_type ty = t->type == OXL_TYPE_F32 ? OXL_TYPE_F32 : OXL_TYPE_F16;
            if (merge(pool, t, ad, n, ty, buf, err) != 0 || oxl_gguf_writer_write_data(wr, buf, nb, err) != 0) {
                goto done;
            }
            n_merged++;
            if (log) {
                fprintf(log, "merge_tensor : %s\n", t->name);
            }
        } else if (oxl_gguf_writer_write_data(wr, t->data, nb, err) != 0) {
            goto done;
        }
    }
    if (oxl_gguf_writer_finish(wr, err) != 0) {
        goto done;
    }
    if (log) {
        fprintf(log, "run_merge : merged %d tensors with lora adapters\n", n_merged);
        fprintf(log, "run_merge : wrote %lld tensors to output file\n", (long long)nt);
    }
    rc = 0;
done:
    if (rc != 0) {
        oxl_err_prefix(err, "export-lora");
    }
    free(buf);
    free(order);
    oxl_pool_free(pool);
    oxl_gguf_writer_free(wr);
    for (int i = 0; i < n; i++) {
        oxl_gguf_close(ad[i].g);
    }
    oxl_gguf_close(base);
    return rc;
}
