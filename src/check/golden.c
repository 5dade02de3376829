/* The golden runner: one table from golden.kind to its checker, and the logits checker. */
#include "golden.h"

#include "errors.h"
#include "oxl_types.h"

#include <errno.h>
#include <libgen.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The bounds where no tolerances.tsv is beside a golden file: a logits golden's max|Δ|/range, an
 * embeddings golden's max|Δ|/max|ref|. */
#define OXL_GOLDEN_DEFAULT_BOUND 1e-3
#define OXL_GOLDEN_DEFAULT_EMBD_BOUND 3.8e-5

/* A tensor of the golden file with the expected type and element count (ne1 = 0: any). */
static const oxl_gguf_tensor *need_tensor(const oxl_gguf *g, const char *name, uint32_t type, int64_t ne0, int64_t ne1,
                                          oxl_error *err) {
    const oxl_gguf_tensor *t = oxl_gguf_find_tensor(g, name);
    if (!t) {
        oxl_err_set(err, "%s: missing tensor '%s'", oxl_gguf_path(g), name);
        return NULL;
    }
    if (t->type != type || (ne0 && t->ne[0] != ne0) || (ne1 && t->ne[1] != ne1) || t->ne[2] != 1 || t->ne[3] != 1) {
        oxl_err_set(err, "%s: tensor '%s' has an unexpected type or shape", oxl_gguf_path(g), name);
        return NULL;
    }
    return t;
}

static int32_t argmax(const float *x, int32_t n) {
    int32_t best = 0;
    for (int32_t i = 1; i < n; i++) {
        if (x[i] > x[best]) {
            best = i;
        }
    }
    return best;
}

/* The bound on a measure of the golden file at path: the line of tolerances.tsv beside it named
 * after the file (what NULL) or after the file and the measure ("<file>:<what>"); columns: that
 * name, bound on x86-64, bound on other architectures (golden/README.md, "Tolerances"). Returns 1
 * with *bound set, 0 when no tolerances.tsv is beside the file (*bound = fallback), -1 with err
 * when the table is unreadable, malformed or has no such line. */
static int golden_bound(const char *path, const char *what, double fallback, double *bound, oxl_error *err) {
    char dir_buf[4096], base_buf[4096], table[4096], key[600];
    snprintf(dir_buf, sizeof dir_buf, "%s", path);
    snprintf(base_buf, sizeof base_buf, "%s", path);
    snprintf(key, sizeof key, "%s%s%s", basename(base_buf), what ? ":" : "", what ? what : "");
    snprintf(table, sizeof table, "%s/tolerances.tsv", dirname(dir_buf));
    *bound = fallback;
    FILE *f = fopen(table, "r");
    if (!f) {
        return errno == ENOENT ? 0 : oxl_err_set(err, "%s: %s", table, strerror(errno));
    }
#if defined(__x86_64__)
    const int column = 0;
#else
    const int column = 1;
#endif
    char line[1024];
    int found = 0, line_no = 0;
    while (!found && fgets(line, sizeof line, f)) {
        line_no++;
        char name[512];
        double b[2];
        if (line[0] == '#' || line[strspn(line, " \t\r\n")] == '\0') {
            continue;
        }
        if (sscanf(line, "%511s %lf %lf", name, &b[0], &b[1]) != 3 || !(b[0] >= 0.0) || !(b[1] >= 0.0)) {
            fclose(f);
            return oxl_err_set(err, "%s:%d: expected 'file x86-64-bound other-bound'", table, line_no);
        }
        if (!strcmp(name, key)) {
            *bound = b[column];
            found = 1;
        }
    }
    fclose(f);
    if (!found) {
        return oxl_err_set(err, "%s: no bound for %s (measure it on every ISA cap and add a line)", table, key);
    }
    return 1;
}

/* golden.<key>: an array of file names (beside the golden) and golden.<key>_scale, their scales. */
static int golden_files(const oxl_gguf *g, const char *key, char (*paths)[4096], float *scales, int cap,
                        oxl_error *err) {
    const char *gpath = oxl_gguf_path(g);
    const int64_t ki = oxl_gguf_find_key(g, key);
    if (ki < 0) {
        return 0;
    }
    char skey[128];
    snprintf(skey, sizeof skey, "%s_scale", key);
    const int64_t si = oxl_gguf_find_key(g, skey);
    const uint64_t n = oxl_gguf_kv_type(g, ki) == OXL_GGUF_ARRAY ? oxl_gguf_arr_n(g, ki) : 0;
    if (n == 0 || n > (uint64_t)cap || oxl_gguf_arr_type(g, ki) != OXL_GGUF_STRING || si < 0 ||
        oxl_gguf_kv_type(g, si) != OXL_GGUF_ARRAY || oxl_gguf_arr_type(g, si) != OXL_GGUF_FLOAT32 ||
        oxl_gguf_arr_n(g, si) != n) {
        return oxl_err_set(err, "%s: %s must be 1 to %d file names with as many float32 in %s", gpath, key, cap, skey);
    }
    char dir_buf[4096];
    snprintf(dir_buf, sizeof dir_buf, "%s", gpath);
    const char *dir = dirname(dir_buf);
    for (uint64_t j = 0; j < n; j++) {
        size_t len = 0;
        const char *name = oxl_gguf_arr_str(g, ki, j, &len);
        if (memchr(name, '/', len)) {
            return oxl_err_set(err, "%s: %s: '%.*s' must be a file name", gpath, key, (int)len, name);
        }
        snprintf(paths[j], sizeof paths[j], "%s/%.*s", dir, (int)len, name);
        memcpy(&scales[j], (const char *)oxl_gguf_arr_data(g, si) + 4 * j, sizeof(float));
    }
    return (int)n;
}

#define GOLDEN_MAX_ADAPTERS 8

/* The adapters a golden was made with (golden.lora, golden.control_vector; golden/lora/README.md),
 * set on ctx; the LoRA adapters loaded go to loras[] (freed by the caller). */
static int golden_adapters(const oxl_gguf *g, oxl_model *model, oxl_ctx *ctx, oxl_lora **loras, int *n_loras,
                           oxl_error *err) {
    char paths[GOLDEN_MAX_ADAPTERS][4096];
    float scales[GOLDEN_MAX_ADAPTERS];
    const int n = golden_files(g, "golden.lora", paths, scales, GOLDEN_MAX_ADAPTERS, err);
    if (n < 0) {
        return -1;
    }
    for (int i = 0; i < n; i++) {
        loras[i] = oxl_lora_load(model, paths[i], err);
        if (!loras[i]) {
            return -1;
        }
        *n_loras = i + 1;
    }
    if (n > 0 && oxl_ctx_set_loras(ctx, loras, scales, n, err) != 0) {
        return -1;
    }
    const int nc = golden_files(g, "golden.control_vector", paths, scales, GOLDEN_MAX_ADAPTERS, err);
    if (nc <= 0) {
        return nc;
    }
    const char *names[GOLDEN_MAX_ADAPTERS];
    for (int i = 0; i < nc; i++) {
        names[i] = paths[i];
    }
    float *data = NULL;
    size_t len = 0;
    int32_t n_embd = 0;
    if (oxl_control_vector_load(names, scales, nc, &data, &len, &n_embd, err) != 0) {
        return -1;
    }
    /* llama.cpp's defaults (common_init_from_params): layers 1 .. n_layer */
    int64_t lo = 1, hi = oxl_model_n_layer(model);
    if (oxl_gguf_get_int(g, "golden.control_vector_layer_start", &lo, err) < 0 ||
        oxl_gguf_get_int(g, "golden.control_vector_layer_end", &hi, err) < 0) {
        oxl_control_vector_free(data);
        return -1;
    }
    const int rc = oxl_ctx_set_control_vector(ctx, data, len, n_embd, (int32_t)lo, (int32_t)hi, err);
    oxl_control_vector_free(data);
    return rc;
}

/* The logits bound with layers on the Vulkan device (-ngl): max|Δ|/range. */
#define OXL_GOLDEN_DEVICE_BOUND 1e-3

static int32_t gpu_layers, gpu_device = -1;

void oxl_golden_set_gpu(int32_t n_gpu_layers, int32_t main_gpu) {
    gpu_layers = n_gpu_layers;
    gpu_device = main_gpu;
}

int oxl_golden_logits(const oxl_gguf *g, const char *model_path, oxl_golden_report *r, oxl_error *err) {
    double bound;
    const int have_bound = golden_bound(oxl_gguf_path(g), NULL, OXL_GOLDEN_DEFAULT_BOUND, &bound, err);
    if (have_bound < 0) {
        return -1;
    }
    oxl_model_params mp = oxl_model_default_params();
    mp.n_gpu_layers = gpu_layers;
    mp.main_gpu = gpu_device;
    oxl_model *model = oxl_model_load(model_path, &mp, err);
    if (!model) {
        return -1;
    }
    const int32_t n_vocab = oxl_model_n_vocab(model);
    int rc = -1;
    oxl_ctx *ctx = NULL;
    oxl_lora *loras[GOLDEN_MAX_ADAPTERS];
    int n_loras = 0;
    const oxl_gguf_tensor *tt = need_tensor(g, "tokens", OXL_TYPE_I32, 0, 0, err);
    const oxl_gguf_tensor *tl = tt ? need_tensor(g, "logits", OXL_TYPE_F32, n_vocab, tt->ne[0], err) : NULL;
    const oxl_gguf_tensor *tg = tl ? need_tensor(g, "greedy", OXL_TYPE_I32, 0, 0, err) : NULL;
    if (!tg) {
        oxl_err_prefix(err, "logits golden for %s (n_vocab %d)", model_path, n_vocab);
        goto done;
    }
    const int32_t n_tok = (int32_t)tt->ne[0], n_greedy = (int32_t)tg->ne[0];
    oxl_token *tokens = malloc(sizeof(oxl_token) * (size_t)(n_tok + n_greedy));
    if (!tokens) {
        oxl_err_set(err, "out of memory");
        goto done;
    }
    memcpy(tokens, tt->data, sizeof(oxl_token) * (size_t)n_tok);
    oxl_ctx_params cp = oxl_ctx_default_params();
    cp.n_ctx = n_tok + n_greedy + 1;
    cp.n_batch = n_tok;
    cp.type_k = cp.type_v = OXL_KV_F32; /* as the reference run: f32 KV cache, no flash attention */
    cp.flash_attn = OXL_FLASH_ATTN_OFF;
    ctx = oxl_ctx_new(model, &cp, err);
    if (!ctx || golden_adapters(g, model, ctx, loras, &n_loras, err) != 0 ||
        oxl_decode(ctx, tokens, n_tok, true, err) != 0) {
        free(tokens);
        goto done;
    }
    /* logits of every prompt position: argmax and max |Δ| relative to the reference's range */
    const float *ref = tl->data;
    int n_argmax_diff = 0;
    double max_rel = 0.0;
    for (int32_t j = 0; j < n_tok; j++) {
        const float *ours = oxl_get_logits(ctx, j);
        const float *want = ref + (size_t)j * n_vocab;
        float lo = want[0], hi = want[0];
        double max_abs = 0.0;
        for (int32_t i = 0; i < n_vocab; i++) {
            lo = fminf(lo, want[i]);
            hi = fmaxf(hi, want[i]);
            double d = fabs((double)ours[i] - (double)want[i]);
            max_abs = d > max_abs || isnan(d) ? d : max_abs;
        }
        const double rel = max_abs / fmax((double)(hi - lo), 1e-30);
        max_rel = rel > max_rel || isnan(rel) ? rel : max_rel;
        n_argmax_diff += argmax(ours, n_vocab) != argmax(want, n_vocab);
    }
    oxl_golden_line(r, n_argmax_diff == 0, "logits argmax  %d/%d positions differ", n_argmax_diff, n_tok);
    /* layers on the Vulkan device sum in other orders (and attend with f32 accumulators): its bound */
    const bool on_device = oxl_model_n_gpu_layers(model) > 0 && bound < OXL_GOLDEN_DEVICE_BOUND;
    if (on_device) {
        bound = OXL_GOLDEN_DEVICE_BOUND;
    }
    oxl_golden_line(r, max_rel <= bound, "logits max|Δ|/range %.2e (bound %.1e%s) over %d positions", max_rel, bound,
                    on_device    ? ", the Vulkan device's"
                    : have_bound ? ""
                                 : ", default: no tolerances.tsv beside the file",
                    n_tok);
    /* greedy continuation, one token per decode step */
    const int32_t *want_greedy = tg->data;
    int32_t first_diff = -1;
    oxl_token next = argmax(oxl_get_logits(ctx, -1), n_vocab);
    for (int32_t s = 0; s < n_greedy; s++) {
        if (next != want_greedy[s]) {
            first_diff = s;
            break;
        }
        if (s + 1 < n_greedy && oxl_decode(ctx, &next, 1, false, err) != 0) {
            free(tokens);
            goto done;
        }
        next = argmax(oxl_get_logits(ctx, -1), n_vocab);
    }
    if (first_diff < 0) {
        oxl_golden_line(r, true, "greedy  %d/%d tokens equal", n_greedy, n_greedy);
    } else {
        oxl_golden_line(r, false, "greedy  first difference at step %d: got %d, want %d", first_diff, next,
                        want_greedy[first_diff]);
    }
    free(tokens);
    rc = 0;
done:
    oxl_ctx_free(ctx);
    for (int i = 0; i < n_loras; i++) {
        oxl_lora_free(loras[i]);
    }
    oxl_model_free(model);
    return rc;
}

/* max |a - b| over n floats relative to the largest |b| (NaN when any difference is NaN). */
static double rel_diff(const float *a, const float *b, int64_t n) {
    double max_abs = 0.0, scale = 0.0;
    for (int64_t i = 0; i < n; i++) {
        const double d = fabs((double)a[i] - (double)b[i]);
        max_abs = d > max_abs || isnan(d) ? d : max_abs;
        scale = fmax(scale, fabs((double)b[i]));
    }
    return max_abs / fmax(scale, 1e-30);
}

static oxl_ctx *embeddings_ctx(oxl_model *model, int32_t n_tok, oxl_pooling pooling, oxl_error *err) {
    oxl_ctx_params cp = oxl_ctx_default_params();
    cp.n_ctx = n_tok + 1;
    cp.n_batch = n_tok; /* the whole sequence in one pass, as llama_encode */
    cp.embeddings = true;
    cp.pooling = pooling;
    cp.type_k = cp.type_v = OXL_KV_F32; /* as the reference run: no flash attention */
    cp.flash_attn = OXL_FLASH_ATTN_OFF;
    return oxl_ctx_new(model, &cp, err);
}

int oxl_golden_embeddings(const oxl_gguf *g, const char *model_path, oxl_golden_report *r, oxl_error *err) {
    static const char *const pooling_names[] = {"none", "mean", "cls", "last"};
    const char *path = oxl_gguf_path(g);
    double tol_pooled, tol_tokens;
    const int have_pooled = golden_bound(path, "pooled", OXL_GOLDEN_DEFAULT_EMBD_BOUND, &tol_pooled, err);
    const int have_tokens =
        have_pooled < 0 ? -1 : golden_bound(path, "tokens", OXL_GOLDEN_DEFAULT_EMBD_BOUND, &tol_tokens, err);
    if (have_tokens < 0) {
        return -1;
    }
    const char *no_table = have_tokens ? "" : ", default: no tolerances.tsv beside the file";
    oxl_model_params mp = oxl_model_default_params();
    mp.n_gpu_layers = gpu_layers;
    mp.main_gpu = gpu_device;
    oxl_model *model = oxl_model_load(model_path, &mp, err);
    if (!model) {
        return -1;
    }
    const int32_t n_embd = oxl_model_n_embd(model);
    int rc = -1;
    oxl_ctx *ctx = NULL;
    const char *want_pooling = NULL;
    const oxl_gguf_tensor *tt = need_tensor(g, "tokens", OXL_TYPE_I32, 0, 0, err);
    const oxl_gguf_tensor *te = tt ? need_tensor(g, "embd", OXL_TYPE_F32, n_embd, 0, err) : NULL;
    const oxl_gguf_tensor *tet = te ? need_tensor(g, "embd_tokens", OXL_TYPE_F32, n_embd, tt->ne[0], err) : NULL;
    if (!tet || te->ne[1] != 1) {
        oxl_err_prefix(err, "embeddings golden for %s (n_embd %d)", model_path, n_embd);
        goto done;
    }
    if (oxl_gguf_get_str(g, "golden.pooling", &want_pooling, err) != 1) {
        oxl_err_set(err, "%s: missing string key 'golden.pooling'", oxl_gguf_path(g));
        goto done;
    }
    const int32_t n_tok = (int32_t)tt->ne[0];
    ctx = embeddings_ctx(model, n_tok, OXL_POOLING_UNSPECIFIED, err);
    if (!ctx || oxl_decode(ctx, tt->data, n_tok, false, err) != 0) {
        goto done;
    }
    const oxl_pooling pooling = oxl_ctx_pooling(ctx);
    const char *name = pooling >= 0 && pooling <= OXL_POOLING_LAST ? pooling_names[pooling] : "?";
    oxl_golden_line(r, !strcmp(name, want_pooling), "embeddings pooling  the model's is %s, llama.cpp's %s", name,
                    want_pooling);
    const float *pooled = oxl_get_embeddings_seq(ctx, 0);
    const double d_pooled = pooled ? rel_diff(pooled, te->data, n_embd) : NAN;
    oxl_golden_line(r, d_pooled <= tol_pooled, "embeddings pooled (%s) max|Δ|/max|ref| %.2e (bound %.1e%s)", name,
                    d_pooled, tol_pooled, no_table);
    oxl_ctx_free(ctx);
    ctx = embeddings_ctx(model, n_tok, OXL_POOLING_NONE, err);
    if (!ctx || oxl_decode(ctx, tt->data, n_tok, false, err) != 0) {
        goto done;
    }
    double d_tokens = 0.0;
    for (int32_t j = 0; j < n_tok; j++) {
        const float *e = oxl_get_embeddings_ith(ctx, j);
        const double d = e ? rel_diff(e, (const float *)tet->data + (size_t)j * n_embd, n_embd) : NAN;
        d_tokens = d > d_tokens || isnan(d) ? d : d_tokens;
    }
    oxl_golden_line(r, d_tokens <= tol_tokens,
                    "embeddings per token max|Δ|/max|ref| %.2e (bound %.1e%s) over %d tokens", d_tokens, tol_tokens,
                    no_table, n_tok);
    rc = 0;
done:
    oxl_ctx_free(ctx);
    oxl_model_free(model);
    return rc;
}

/* The model a logits golden names (golden.model), looked up beside the golden file and in the
 * models/ folders next to it. */
static int find_model(const oxl_gguf *g, const char *golden_path, char *out, size_t cap, oxl_error *err) {
    const char *name = NULL;
    if (oxl_gguf_get_str(g, "golden.model", &name, err) != 1) {
        return oxl_err_set(err, "%s: no -m given and no golden.model key", golden_path);
    }
    if (strchr(name, '/')) {
        return oxl_err_set(err, "%s: golden.model '%s' must be a file name", golden_path, name);
    }
    char dir_buf[4096];
    snprintf(dir_buf, sizeof dir_buf, "%s", golden_path);
    const char *dir = dirname(dir_buf);
    const char *places[] = {"%s/%s", "%s/../models/%s", "%s/../../models/%s", "%s/../arch/%s"};
    for (size_t i = 0; i < sizeof places / sizeof places[0]; i++) {
        snprintf(out, cap, places[i], dir, name);
        if (access(out, R_OK) == 0) {
            return 0;
        }
    }
    return oxl_err_set(err, "%s: model '%s' not found beside it or in ../models; pass -m", golden_path, name);
}

int oxl_golden_run_file(const char *path, const char *model_path, oxl_golden_report *r, oxl_error *err) {
    /* a vocabulary with llama.cpp's tokenizer fixtures beside it (<vocab>.gguf.inp / .out) */
    char inp[4096];
    snprintf(inp, sizeof inp, "%s.inp", path);
    if (access(inp, R_OK) == 0) {
        return oxl_golden_tokenizer(path, r, err);
    }
    /* a chat-templates directory: cases.json beside <model>/template.jinja */
    snprintf(inp, sizeof inp, "%s/cases.json", path);
    if (access(inp, R_OK) == 0) {
        return oxl_golden_chat_dir(path, r, err);
    }
    oxl_gguf *g = oxl_gguf_open(path, err);
    if (!g) {
        return -1;
    }
    const char *kind = NULL;
    int rc = -1;
    if (oxl_gguf_get_str(g, "golden.kind", &kind, err) != 1) {
        oxl_err_set(err, "%s: missing string key 'golden.kind'", path);
    } else if (!strcmp(kind, "quant")) {
        rc = oxl_golden_quant(g, r, err);
    } else if (!strcmp(kind, "logits") || !strcmp(kind, "embeddings")) {
        char found[4096];
        if (model_path || find_model(g, path, found, sizeof found, err) == 0) {
            rc = !strcmp(kind, "logits") ? oxl_golden_logits(g, model_path ? model_path : found, r, err)
                                         : oxl_golden_embeddings(g, model_path ? model_path : found, r, err);
        }
    } else if (!strcmp(kind, "multimodal")) {
        rc = oxl_golden_mm(g, model_path, r, err);
    } else {
        oxl_err_set(err, "%s: golden.kind '%s' is not one oxillama checks yet (quant, logits, embeddings, multimodal)",
                    path, kind);
    }
    oxl_gguf_close(g);
    return rc;
}
