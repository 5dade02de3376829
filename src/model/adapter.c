/* LoRA adapters and control vectors (adapter.h): llama.cpp's src/llama-adapter.cpp
 * (llama_adapter_lora_init_impl, llama_adapter_cvec), llama-graph.cpp (build_lora_mm) and
 * common/common.cpp (common_control_vector_load). */
#include "adapter.h"

#include "arch_iface.h"
#include "errors.h"
#include "log.h"
#include "oxl_types.h"

#include <stdlib.h>
#include <string.h>

/* One adapted matrix: the model tensor's data (the key oxl_matmul's weight is recognised by) and
 * the pair of low-rank factors. */
typedef struct lora_pair {
    const void *key;
    int64_t ne0, ne1; /* the model matrix */
    oxl_tensor a;     /* (ne0, rank) */
    oxl_tensor b;     /* (rank, ne1) */
} lora_pair;

struct oxl_lora {
    const oxl_model *model;
    oxl_gguf *g;
    float alpha;
    lora_pair *pairs; /* sorted by key */
    int32_t n_pairs;
};

/* A context's LoRA term: every adapter's pairs with their scale, sorted by key (adapters in the
 * order set for one key), and the buffers of the term's products for up to cap_n columns. */
typedef struct lora_term {
    const void *key;
    const lora_pair *p;
    float scale;
    int32_t order;
} lora_term;

struct oxl_adapters {
    lora_term *terms;
    int32_t n_terms;
    int64_t cap_n;
    float *ax;     /* rank x cap_n */
    float *bax;    /* m x cap_n */
    void *scratch; /* the conversions of the term's products */
    /* control vector: layer il's direction at cvec[(il - 1) * n_embd], il in 1 .. n_cvec */
    float *cvec;
    int32_t n_cvec;
    int32_t cvec_start, cvec_end;
};

static int cmp_pair(const void *x, const void *y) {
    const lora_pair *a = x, *b = y;
    return (uintptr_t)a->key < (uintptr_t)b->key ? -1 : (uintptr_t)a->key > (uintptr_t)b->key;
}

static int cmp_term(const void *x, const void *y) {
    const lora_term *a = x, *b = y;
    if (a->key != b->key) {
        return (uintptr_t)a->key < (uintptr_t)b->key ? -1 : 1;
    }
    return (a->order > b->order) - (a->order < b->order);
}

static bool ends_with(const char *s, const char *suffix) {
    const size_t n = strlen(s), k = strlen(suffix);
    return n >= k && !strcmp(s + n - k, suffix);
}

/* A factor tensor as a matrix oxl_matmul takes. */
static int bind_factor(const char *path, const oxl_gguf_tensor *gt, oxl_tensor *t, oxl_error *err) {
    const oxl_type_traits *tt = oxl_type_traits_get(gt->type);
    if (gt->ne[2] != 1 || gt->ne[3] != 1) {
        return oxl_err_set(err, "%s: tensor '%s' must be 2-D, has shape (%lld, %lld, %lld, %lld)", path, gt->name,
                           (long long)gt->ne[0], (long long)gt->ne[1], (long long)gt->ne[2], (long long)gt->ne[3]);
    }
    if (gt->type != OXL_TYPE_F32 && (!oxl_kernels_get()->vec_dot[gt->type] || !tt)) {
        return oxl_err_set(err, "%s: tensor '%s' has type %s, which oxillama cannot compute with", path, gt->name,
                           tt ? tt->name : "?");
    }
    memset(t, 0, sizeof *t);
    t->name = gt->name;
    t->type = (oxl_type)gt->type;
    t->ne[0] = gt->ne[0];
    t->ne[1] = gt->ne[1];
    t->row_size = oxl_row_size(t->type, gt->ne[0]);
    t->data = gt->data;
    return 0;
}

/* The checks of llama_adapter_lora_init_impl on the metadata. */
static int check_meta(const oxl_model *model, const oxl_gguf *g, const char *path, float *alpha, oxl_error *err) {
    const char *s = NULL;
    int r = oxl_gguf_get_str(g, "general.type", &s, err);
    if (r < 0 || r == 0 || strcmp(s, "adapter") != 0) {
        return oxl_err_set(err, "%s: general.type must be 'adapter', is '%s'", path, r == 1 ? s : "");
    }
    const char *want = NULL;
    if (oxl_gguf_get_str(model->gguf, "general.architecture", &want, NULL) != 1) {
        want = "";
    }
    r = oxl_gguf_get_str(g, "general.architecture", &s, err);
    if (r != 1 || strcmp(s, want) != 0) {
        return oxl_err_set(err, "%s: general.architecture '%s' is not the model's '%s'", path, r == 1 ? s : "", want);
    }
    r = oxl_gguf_get_str(g, "adapter.type", &s, err);
    if (r != 1 || strcmp(s, "lora") != 0) {
        return oxl_err_set(err, "%s: adapter.type must be 'lora', is '%s'", path, r == 1 ? s : "");
    }
    const int64_t ka = oxl_gguf_find_key(g, "adapter.lora.alpha");
    *alpha = 0.0f;
    if (ka >= 0) {
        if (oxl_gguf_kv_type(g, ka) != OXL_GGUF_FLOAT32) {
            return oxl_err_set(err, "%s: adapter.lora.alpha must be a float32, is %s", path,
                               oxl_gguf_vtype_name(oxl_gguf_kv_type(g, ka)));
        }
        double v = 0.0;
        oxl_gguf_kv_float(g, ka, &v);
        *alpha = (float)v;
    }
    if (oxl_gguf_find_key(g, "adapter.alora.invocation_tokens") >= 0) {
        return oxl_err_set(err, "%s: adapter.alora.invocation_tokens: activated LoRA is not supported yet", path);
    }
    return 0;
}

/* Pairs the tensors: "<name>.lora_a" with "<name>.lora_b". */
static int pair_tensors(const oxl_model *model, oxl_lora *l, const char *path, oxl_error *err) {
    const oxl_gguf *g = l->g;
    const int64_t nt = oxl_gguf_n_tensors(g);
    l->pairs = calloc((size_t)(nt > 0 ? nt : 1), sizeof *l->pairs);
    if (!l->pairs) {
        return oxl_err_set(err, "%s: out of memory", path);
    }
    for (int64_t i = 0; i < nt; i++) {
        const oxl_gguf_tensor *ta = oxl_gguf_tensor_at(g, i);
        if (ends_with(ta->name, "_norm.weight")) {
            continue; /* llama.cpp skips norm vectors */
        }
        if (ends_with(ta->name, ".lora_b")) {
            char a_name[512];
            const size_t base = strlen(ta->name) - strlen(".lora_b");
            snprintf(a_name, sizeof a_name, "%.*s.lora_a", (int)base, ta->name);
            if (!oxl_gguf_find_tensor(g, a_name)) {
                return oxl_err_set(err, "%s: LoRA tensor pair for '%.*s' is missing its lora_a", path, (int)base,
                                   ta->name);
            }
            continue;
        }
        if (!ends_with(ta->name, ".lora_a")) {
            return oxl_err_set(err, "%s: LoRA tensor '%s' has an unexpected suffix (.lora_a, .lora_b)", path, ta->name);
        }
        char name[512], b_name[520];
        const size_t base = strlen(ta->name) - strlen(".lora_a");
        if (base >= sizeof name - 8) {
            return oxl_err_set(err, "%s: LoRA tensor name '%s' is too long", path, ta->name);
        }
        snprintf(name, sizeof name, "%.*s", (int)base, ta->name);
        snprintf(b_name, sizeof b_name, "%s.lora_b", name);
        const oxl_gguf_tensor *tb = oxl_gguf_find_tensor(g, b_name);
        if (!tb) {
            return oxl_err_set(err, "%s: LoRA tensor pair for '%s' is missing its lora_b", path, name);
        }
        const oxl_gguf_tensor *w = oxl_gguf_find_tensor(model->gguf, name);
        if (!w) {
            return oxl_err_set(err, "%s: LoRA tensor '%s' does not exist in the base model", path, name);
        }
        if (ends_with(name, "token_embd.weight")) {
            return oxl_err_set(err, "%s: LoRA tensor '%s': adapting the token embedding is not supported yet", path,
                               name);
        }
        if (w->ne[2] != 1 || w->ne[3] != 1) {
            return oxl_err_set(err, "%s: LoRA tensor '%s': adapting a %u-D (expert) tensor is not supported yet", path,
                               name, (unsigned)w->n_dims);
        }
        lora_pair *p = &l->pairs[l->n_pairs];
        if (bind_factor(path, ta, &p->a, err) != 0 || bind_factor(path, tb, &p->b, err) != 0) {
            return -1;
        }
        if (w->ne[0] != p->a.ne[0] || w->ne[1] != p->b.ne[1]) {
            return oxl_err_set(err,
                               "%s: LoRA tensor '%s' has shape a (%lld, %lld), b (%lld, %lld); the base model's is "
                               "(%lld, %lld) (a wrong base model?)",
                               path, name, (long long)p->a.ne[0], (long long)p->a.ne[1], (long long)p->b.ne[0],
                               (long long)p->b.ne[1], (long long)w->ne[0], (long long)w->ne[1]);
        }
        if (p->a.ne[1] != p->b.ne[0]) {
            return oxl_err_set(err, "%s: LoRA tensor '%s': lora_a has rank %lld, lora_b %lld (lora_a not transposed?)",
                               path, name, (long long)p->a.ne[1], (long long)p->b.ne[0]);
        }
        p->key = w->data;
        p->ne0 = w->ne[0];
        p->ne1 = w->ne[1];
        l->n_pairs++;
    }
    qsort(l->pairs, (size_t)l->n_pairs, sizeof *l->pairs, cmp_pair);
    return 0;
}

oxl_lora *oxl_lora_from_gguf(const oxl_model *model, oxl_gguf *g, oxl_error *err) {
    if (!model || !g) {
        oxl_gguf_close(g);
        oxl_err_set(err, "lora: a model and a file are required");
        return NULL;
    }
    const char *path = oxl_gguf_path(g);
    oxl_lora *l = calloc(1, sizeof *l);
    if (!l) {
        oxl_gguf_close(g);
        oxl_err_set(err, "%s: out of memory", path);
        return NULL;
    }
    l->model = model;
    l->g = g;
    if (check_meta(model, l->g, path, &l->alpha, err) != 0 || pair_tensors(model, l, path, err) != 0) {
        oxl_err_prefix(err, "lora adapter");
        oxl_lora_free(l);
        return NULL;
    }
    oxl_log_msg(OXL_LOG_LEVEL_INFO, "lora: %s: %d matrices, alpha %g\n", path, l->n_pairs, (double)l->alpha);
    return l;
}

oxl_lora *oxl_lora_load(const oxl_model *model, const char *path, oxl_error *err) {
    if (!model || !path) {
        oxl_err_set(err, "lora: model and path are required");
        return NULL;
    }
    oxl_gguf *g = oxl_gguf_open(path, err);
    if (!g) {
        oxl_err_prefix(err, "lora adapter");
        return NULL;
    }
    return oxl_lora_from_gguf(model, g, err);
}

void oxl_lora_free(oxl_lora *l) {
    if (l) {
        free(l->pairs);
        oxl_gguf_close(l->g);
        free(l);
    }
}

float oxl_lora_alpha(const oxl_lora *l) { return l ? l->alpha : 0.0f; }

int32_t oxl_lora_n_pairs(const oxl_lora *l) { return l ? l->n_pairs : 0; }

void oxl_adapters_free(oxl_adapters *a) {
    if (a) {
        free(a->terms);
        free(a->ax);
        free(a->bax);
        free(a->scratch);
        free(a->cvec);
        free(a);
    }
}

static oxl_adapters *adapters_of(oxl_ctx *ctx, oxl_error *err) {
    if (!ctx->adapters) {
        ctx->adapters = calloc(1, sizeof *ctx->adapters);
        if (!ctx->adapters) {
            oxl_err_set(err, "adapters: out of memory");
        }
    }
    return ctx->adapters;
}

int oxl_ctx_set_loras(oxl_ctx *ctx, oxl_lora *const *loras, const float *scales, int32_t n, oxl_error *err) {
    if (!ctx || n < 0 || (n > 0 && (!loras || !scales))) {
        return oxl_err_set(err, "set loras: a context and, for n > 0, adapters and scales are required");
    }
    size_t n_terms = 0;
    int64_t max_rank = 0, max_m = 0;
    size_t scratch = 0;
    const int64_t cap_n = ctx->params.n_batch > 0 ? ctx->params.n_batch : 1;
    for (int32_t i = 0; i < n; i++) {
        if (!loras[i] || loras[i]->model != ctx->model) {
            return oxl_err_set(err, "set loras: adapter %d was not loaded for this context's model", i);
        }
        n_terms += (size_t)loras[i]->n_pairs;
        for (int32_t k = 0; k < loras[i]->n_pairs; k++) {
            const lora_pair *p = &loras[i]->pairs[k];
            max_rank = p->a.ne[1] > max_rank ? p->a.ne[1] : max_rank;
            max_m = p->ne1 > max_m ? p->ne1 : max_m;
            const size_t sa = oxl_matmul_scratch_size(p->a.type, p->a.ne[0], cap_n);
            const size_t sb = oxl_matmul_scratch_size(p->b.type, p->b.ne[0], cap_n);
            scratch = sa > scratch ? sa : scratch;
            scratch = sb > scratch ? sb : scratch;
        }
    }
    lora_term *terms = calloc(n_terms ? n_terms : 1, sizeof *terms);
    float *ax = malloc(sizeof(float) * (size_t)(max_rank ? max_rank : 1) * (size_t)cap_n);
    float *bax = malloc(sizeof(float) * (size_t)(max_m ? max_m : 1) * (size_t)cap_n);
    void *scr = scratch ? malloc(scratch) : NULL;
    oxl_adapters *a = adapters_of(ctx, err);
    if (!terms || !ax || !bax || (scratch && !scr) || !a) {
        free(terms);
        free(ax);
        free(bax);
        free(scr);
        return a ? oxl_err_set(err, "set loras: out of memory") : -1;
    }
    size_t t = 0;
    for (int32_t i = 0; i < n; i++) {
        for (int32_t k = 0; k < loras[i]->n_pairs; k++) {
            const lora_pair *p = &loras[i]->pairs[k];
            const float rank = (float)p->b.ne[0];
            const float alpha = loras[i]->alpha;
            terms[t] = (lora_term){.key = p->key,
                                   .p = p,
                                   .scale = alpha != 0.0f ? scales[i] * alpha / rank : scales[i],
                                   .order = (int32_t)t};
            t++;
        }
    }
    qsort(terms, n_terms, sizeof *terms, cmp_term);
    free(a->terms);
    free(a->ax);
    free(a->bax);
    free(a->scratch);
    a->terms = terms;
    a->n_terms = (int32_t)n_terms;
    a->cap_n = cap_n;
    a->ax = ax;
    a->bax = bax;
    a->scratch = scr;
    return 0;
}

/* build_lora_mm: y += scale * (B (A x)) for each of w's terms, in the adapters' order. */
static void lora_addend(void *user, oxl_pool *pool, const oxl_tensor *w, const float *x, int64_t n, float *y,
                        int64_t ldy) {
    oxl_adapters *a = user;
    if (w->n_slice != 0 || a->n_terms == 0) {
        return;
    }
    int32_t lo = 0, hi = a->n_terms;
    while (lo < hi) {
        const int32_t mid = lo + (hi - lo) / 2;
        if ((uintptr_t)a->terms[mid].key < (uintptr_t)w->data) {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    for (int32_t i = lo; i < a->n_terms && a->terms[i].key == w->data; i++) {
        const lora_term *t = &a->terms[i];
        const int64_t k = w->ne[0], m = w->ne[1], rank = t->p->a.ne[1];
        if (k != t->p->ne0 || m != t->p->ne1) {
            continue; /* a view of another shape on the same data */
        }
        for (int64_t j0 = 0; j0 < n; j0 += a->cap_n) {
            const int64_t nc = n - j0 < a->cap_n ? n - j0 : a->cap_n;
            oxl_matmul(pool, &t->p->a, x + j0 * k, nc, a->ax, rank, a->scratch);
            oxl_matmul(pool, &t->p->b, a->ax, nc, a->bax, m, a->scratch);
            for (int64_t j = 0; j < nc; j++) {
                float *yc = y + (j0 + j) * ldy;
                const float *bc = a->bax + j * m;
                for (int64_t r = 0; r < m; r++) {
                    const float s = bc[r] * t->scale; /* ggml_scale, then ggml_add */
                    yc[r] = yc[r] + s;
                }
            }
        }
    }
}

void oxl_adapters_begin(oxl_ctx *ctx) {
    if (ctx->adapters && ctx->adapters->n_terms > 0) {
        oxl_matmul_set_addend(lora_addend, ctx->adapters);
    }
}

void oxl_adapters_end(oxl_ctx *ctx) {
    if (ctx->adapters && ctx->adapters->n_terms > 0) {
        oxl_matmul_set_addend(NULL, NULL);
    }
}

/* ---- control vectors ----------------------------------------------------------------------- */

/* The most floats a control vector may hold (n_embd x layers): 64 MiB, e.g. 16384 x 1024. */
#define OXL_CVEC_MAX_FLOATS (1 << 24)

/* common_control_vector_load_one: the file's directions times strength, into *data (grown). */
int oxl_cvec_add_gguf(const oxl_gguf *g, float strength, float **data, size_t *len, int32_t *n_embd, oxl_error *err) {
    const char *path = oxl_gguf_path(g);
    int rc = -1;
    int32_t ne = -1;
    const int64_t nt = oxl_gguf_n_tensors(g);
    if (nt == 0) {
        oxl_err_set(err, "control vector %s: no direction tensors", path);
        goto done;
    }
    for (int64_t i = 0; i < nt; i++) {
        const oxl_gguf_tensor *t = oxl_gguf_tensor_at(g, i);
        char *end = NULL;
        long il = -1;
        if (!strncmp(t->name, "direction.", 10) && t->name[10] >= '0' && t->name[10] <= '9') {
            il = strtol(t->name + 10, &end, 10);
        }
        if (il < 0 || il > 1000000) {
            oxl_err_set(err, "control vector %s: tensor '%s' is not direction.<layer>", path, t->name);
            goto done;
        }
        if (il == 0) {
            oxl_err_set(err, "control vector %s: tensor '%s': layer 0 has no direction", path, t->name);
            goto done;
        }
        if (t->type != OXL_TYPE_F32) {
            oxl_err_set(err, "control vector %s: tensor '%s' must be f32", path, t->name);
            goto done;
        }
        if (t->ne[1] != 1 || t->ne[2] != 1 || t->ne[3] != 1) {
            oxl_err_set(err, "control vector %s: tensor '%s' must be 1-D", path, t->name);
            goto done;
        }
        if (t->ne[0] < 1 || t->ne[0] > OXL_CVEC_MAX_FLOATS) {
            oxl_err_set(err, "control vector %s: tensor '%s' has %lld values", path, t->name, (long long)t->ne[0]);
            goto done;
        }
        if (ne == -1) {
            ne = (int32_t)t->ne[0];
        } else if (t->ne[0] != ne) {
            oxl_err_set(err, "control vector %s: tensor '%s' has %lld values, the others %d", path, t->name,
                        (long long)t->ne[0], ne);
            goto done;
        }
        if (*n_embd != -1 && ne != *n_embd) {
            oxl_err_set(err, "control vector %s: directions of %d values, the previous files' %d", path, ne, *n_embd);
            goto done;
        }
        if ((int64_t)ne * il > OXL_CVEC_MAX_FLOATS) {
            oxl_err_set(err, "control vector %s: tensor '%s': %d layers of %d values is more than oxillama takes", path,
                        t->name, (int)il, ne);
            goto done;
        }
        const size_t need = (size_t)ne * (size_t)il;
        if (need > *len) {
            float *d = realloc(*data, need * sizeof(float));
            if (!d) {
                oxl_err_set(err, "control vector %s: out of memory", path);
                goto done;
            }
            memset(d + *len, 0, (need - *len) * sizeof(float));
            *data = d;
            *len = need;
        }
        float *dst = *data + (size_t)ne * (size_t)(il - 1);
        const float *src = t->data;
        for (int32_t j = 0; j < ne; j++) {
            dst[j] += src[j] * strength;
        }
        *n_embd = ne;
    }
    rc = 0;
done:
    return rc;
}

static int cvec_load_one(const char *path, float strength, float **data, size_t *len, int32_t *n_embd, oxl_error *err) {
    oxl_gguf *g = oxl_gguf_open(path, err);
    if (!g) {
        return oxl_err_prefix(err, "control vector");
    }
    const int rc = oxl_cvec_add_gguf(g, strength, data, len, n_embd, err);
    oxl_gguf_close(g);
    return rc;
}

int oxl_control_vector_load(const char *const *paths, const float *strengths, int32_t n, float **data, size_t *len,
                            int32_t *n_embd, oxl_error *err) {
    if (!paths || !strengths || !data || !len || !n_embd || n <= 0) {
        return oxl_err_set(err, "control vector: paths, strengths and outputs are required");
    }
    *data = NULL;
    *len = 0;
    *n_embd = -1;
    for (int32_t i = 0; i < n; i++) {
        if (cvec_load_one(paths[i], strengths[i], data, len, n_embd, err) != 0) {
            free(*data);
            *data = NULL;
            *len = 0;
            return -1;
        }
    }
    return 0;
}

void oxl_control_vector_free(float *data) { free(data); }

int oxl_ctx_set_control_vector(oxl_ctx *ctx, const float *data, size_t len, int32_t n_embd, int32_t il_start,
                               int32_t il_end, oxl_error *err) {
    if (!ctx) {
        return oxl_err_set(err, "control vector: a context is required");
    }
    if (!data) {
        if (ctx->adapters) {
            free(ctx->adapters->cvec);
            ctx->adapters->cvec = NULL;
            ctx->adapters->n_cvec = 0;
        }
        return 0;
    }
    /* the families with their own forward pass: the encoders (bert, nomic-bert), whose llama.cpp
     * graph has no build_cvec either, and the gated delta-net, gemma3n and attention/SSM hybrid
     * families, which oxillama does not apply it to yet */
    static const char *const unsupported[] = {"qwen35", "qwen35moe",     "qwen3next",  "gemma3n",
                                              "lfm2",   "granitehybrid", "nemotron_h", "falcon-h1"};
    for (size_t i = 0; i < sizeof unsupported / sizeof unsupported[0]; i++) {
        if (!strcmp(ctx->model->arch->name, unsupported[i])) {
            return oxl_err_set(err, "control vector: not supported for architecture '%s' yet", unsupported[i]);
        }
    }
    if (n_embd != ctx->model->hp.n_embd) {
        return oxl_err_set(err, "control vector: n_embd %d does not match the model's %d", n_embd,
                           ctx->model->hp.n_embd);
    }
    oxl_adapters *a = adapters_of(ctx, err);
    if (!a) {
        return -1;
    }
    /* llama_adapter_cvec::apply: layers 1 .. n_layer-1, each one whose direction data holds whole */
    const int32_t n_layer = ctx->model->hp.n_layer;
    float *c = calloc((size_t)(n_layer > 1 ? n_layer - 1 : 1) * (size_t)n_embd, sizeof(float));
    if (!c) {
        return oxl_err_set(err, "control vector: out of memory");
    }
    for (int32_t il = 1; il < n_layer; il++) {
        const size_t off = (size_t)n_embd * (size_t)(il - 1);
        if (off + (size_t)n_embd <= len) {
            memcpy(c + off, data + off, (size_t)n_embd * sizeof(float));
        }
    }
    free(a->cvec);
    a->cvec = c;
    a->n_cvec = n_layer - 1;
    a->cvec_start = il_start;
    a->cvec_end = il_end;
    return 0;
}

void oxl_cvec_apply(const oxl_ctx *ctx, int il, float *x, int32_t n) {
    const oxl_adapters *a = ctx->adapters;
    if (!a || !a->cvec || il < 1 || il < a->cvec_start || il > a->cvec_end || il > a->n_cvec) {
        return;
    }
    const int64_t E = ctx->model->hp.n_embd;
    const float *d = a->cvec + (size_t)E * (size_t)(il - 1);
    for (int32_t j = 0; j < n; j++) {
        float *row = x + (size_t)j * (size_t)E;
        for (int64_t i = 0; i < E; i++) {
            row[i] = row[i] + d[i];
        }
    }
}
