/* Embeddings of stories260K (F32). A token's embedding must be the output of the final norm, the
 * vector the output head multiplies: checked against the file's own output.weight and
 * output_norm.weight (logits = output · e, and e / w has a root mean square of 1, the RMS norm's
 * definition), not against values this library printed. Pooled embeddings are then checked against
 * per-token ones averaged or picked here; sequences batched together against separate runs. */
#include "gguf.h"
#include "oxillama.h"

#include <criterion/criterion.h>
#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define STORIES OXL_SOURCE_DIR "/models/stories260K.gguf"

static oxl_model *model;

static void load(void) {
    oxl_error err = {0};
    oxl_model_params mp = oxl_model_default_params();
    model = oxl_model_load(STORIES, &mp, &err);
    cr_assert_not_null(model, "%s", err.msg);
}

static void unload(void) { oxl_model_free(model); }

static oxl_ctx *new_ctx(int n_seq, bool embeddings, oxl_pooling pooling, int32_t n_batch) {
    oxl_error err = {0};
    oxl_ctx_params cp = oxl_ctx_default_params();
    cp.n_ctx = 64 * n_seq;
    cp.n_seq_max = n_seq;
    cp.n_batch = n_batch;
    cp.n_threads = 2;
    cp.embeddings = embeddings;
    cp.pooling = pooling;
    oxl_ctx *ctx = oxl_ctx_new(model, &cp, &err);
    cr_assert_not_null(ctx, "%s", err.msg);
    return ctx;
}

static const oxl_token prompt_a[] = {1, 403, 407, 261, 378};
static const oxl_token prompt_b[] = {1, 319, 286, 260, 292, 263, 402};
#define N_A 5
#define N_B 7
#define E 64 /* stories260K's n_embd */

/* Per-token embeddings of a prompt alone (pooling none), into rows[n][E]. */
static void token_rows(const oxl_token *prompt, int n, float rows[][E]) {
    oxl_error err = {0};
    oxl_ctx *ctx = new_ctx(1, true, OXL_POOLING_NONE, 512);
    cr_assert_eq(oxl_decode(ctx, prompt, n, false, &err), 0, "%s", err.msg);
    for (int i = 0; i < n; i++) {
        const float *e = oxl_get_embeddings_ith(ctx, i);
        cr_assert_not_null(e, "token %d has no embedding", i);
        memcpy(rows[i], e, sizeof(float) * E);
    }
    cr_assert_null(oxl_get_embeddings_ith(ctx, n), "row %d is past the decode's %d tokens", n, n);
    cr_assert_null(oxl_get_embeddings_seq(ctx, 0), "pooling none has no sequence embedding");
    oxl_ctx_free(ctx);
}

/* The pooled embedding of one prompt decoded alone. */
static void pooled(const oxl_token *prompt, int n, oxl_pooling pooling, float out[E]) {
    oxl_error err = {0};
    oxl_ctx *ctx = new_ctx(1, true, pooling, 512);
    cr_assert_eq(oxl_ctx_pooling(ctx), pooling);
    cr_assert_eq(oxl_decode(ctx, prompt, n, false, &err), 0, "%s", err.msg);
    const float *e = oxl_get_embeddings_seq(ctx, 0);
    cr_assert_not_null(e);
    cr_assert_null(oxl_get_embeddings_ith(ctx, 0), "a pooling context has no per-token rows");
    cr_assert_null(oxl_get_embeddings_seq(ctx, 1));
    memcpy(out, e, sizeof(float) * E);
    oxl_ctx_free(ctx);
}

TestSuite(embeddings, .init = load, .fini = unload);

Test(embeddings, pooling_defaults_to_the_model_key_else_none) {
    /* stories260K has no llama.pooling_type: unspecified resolves to none, as llama_context does */
    oxl_ctx *ctx = new_ctx(1, true, OXL_POOLING_UNSPECIFIED, 512);
    cr_assert_eq(oxl_ctx_pooling(ctx), OXL_POOLING_NONE);
    oxl_ctx_free(ctx);
    ctx = new_ctx(1, false, OXL_POOLING_MEAN, 512);
    cr_assert_eq(oxl_ctx_pooling(ctx), OXL_POOLING_NONE, "no embeddings: nothing is pooled");
    oxl_error err = {0};
    cr_assert_eq(oxl_decode(ctx, prompt_a, N_A, false, &err), 0, "%s", err.msg);
    cr_assert_null(oxl_get_embeddings_ith(ctx, 0));
    cr_assert_null(oxl_get_embeddings_seq(ctx, 0));
    oxl_ctx_free(ctx);
}

Test(embeddings, unknown_pooling_is_refused) {
    oxl_error err = {0};
    oxl_ctx_params cp = oxl_ctx_default_params();
    cp.n_ctx = 64;
    cp.n_threads = 1;
    cp.embeddings = true;
    cp.pooling = (oxl_pooling)4;
    cr_assert_null(oxl_ctx_new(model, &cp, &err));
    cr_assert(strstr(err.msg, "pooling 4") && strstr(err.msg, "rank"), "%s", err.msg);
    cp.pooling = (oxl_pooling)5;
    cr_assert_null(oxl_ctx_new(model, &cp, &err));
    cr_assert(strstr(err.msg, "pooling 5"), "%s", err.msg);
    cp.pooling = (oxl_pooling)-7;
    cr_assert_null(oxl_ctx_new(model, &cp, &err));
    cr_assert(strstr(err.msg, "pooling -7"), "%s", err.msg);
}

Test(embeddings, token_embedding_is_the_output_heads_input) {
    oxl_error err = {0};
    oxl_gguf *g = oxl_gguf_open(STORIES, &err);
    cr_assert_not_null(g, "%s", err.msg);
    const oxl_gguf_tensor *out_w = oxl_gguf_find_tensor(g, "output.weight");
    if (!out_w) {
        out_w = oxl_gguf_find_tensor(g, "token_embd.weight"); /* tied head */
    }
    const oxl_gguf_tensor *norm_w = oxl_gguf_find_tensor(g, "output_norm.weight");
    float eps = 0.0f;
    cr_assert_eq(oxl_gguf_get_float(g, "llama.attention.layer_norm_rms_epsilon", &eps, &err), 1, "%s", err.msg);
    cr_assert(out_w && norm_w && out_w->type == 0 && norm_w->type == 0, "stories260K's head is F32");
    cr_assert_eq(out_w->ne[0], E);
    const int64_t n_vocab = out_w->ne[1];
    cr_assert_eq(n_vocab, oxl_model_n_vocab(model));
    const float *W = out_w->data, *w = norm_w->data;

    /* logits of a context without embeddings, every token kept */
    oxl_ctx *plain = new_ctx(1, false, OXL_POOLING_UNSPECIFIED, 512);
    cr_assert_eq(oxl_decode(plain, prompt_b, N_B, true, &err), 0, "%s", err.msg);
    oxl_ctx *ctx = new_ctx(1, true, OXL_POOLING_NONE, 512);
    cr_assert_eq(oxl_decode(ctx, prompt_b, N_B, true, &err), 0, "%s", err.msg);
    for (int i = 0; i < N_B; i++) {
        const float *e = oxl_get_embeddings_ith(ctx, i);
        const float *logits = oxl_get_logits(ctx, i);
        cr_assert(e && logits);
        cr_assert_eq(memcmp(logits, oxl_get_logits(plain, i), sizeof(float) * (size_t)n_vocab), 0,
                     "token %d: keeping embeddings changed the logits", i);
        double ms = 0.0;
        for (int k = 0; k < E; k++) {
            const double u = (double)e[k] / w[k];
            ms += u * u;
        }
        ms /= E;
        /* rms_norm: u = x / sqrt(mean(x^2) + eps), so mean(u^2) = m / (m + eps) with m = mean(x^2) */
        cr_assert(ms > 1.0 - 1e-3 && ms < 1.0 + 1e-5, "token %d: e / output_norm has mean square %g", i, ms);
        for (int64_t v = 0; v < n_vocab; v++) {
            double dot = 0.0;
            for (int k = 0; k < E; k++) {
                dot += (double)W[v * E + k] * e[k];
            }
            cr_assert(fabs(dot - logits[v]) <= 1e-4 * (1.0 + fabs(dot)),
                      "token %d vocab %lld: output . embedding = %.7g, logit %.7g", i, (long long)v, dot, logits[v]);
        }
    }
    cr_assert_eq(memcmp(oxl_get_embeddings_ith(ctx, -1), oxl_get_embeddings_ith(ctx, N_B - 1), sizeof(float) * E), 0,
                 "i = -1 is the last token");
    oxl_ctx_free(ctx);
    oxl_ctx_free(plain);
    oxl_gguf_close(g);
}

Test(embeddings, mean_pooling_is_the_average_of_the_token_rows) {
    static float rows[N_B][E];
    token_rows(prompt_b, N_B, rows);
    float got[E];
    pooled(prompt_b, N_B, OXL_POOLING_MEAN, got);
    for (int k = 0; k < E; k++) {
        double sum = 0.0;
        for (int i = 0; i < N_B; i++) {
            sum += rows[i][k];
        }
        const double want = sum / N_B;
        cr_assert(fabs(got[k] - want) <= 1e-6 * (1.0 + fabs(want)), "element %d: mean %.9g, pooled %.9g", k, want,
                  (double)got[k]);
    }
}

Test(embeddings, last_and_cls_pick_a_token_row) {
    static float rows[N_A][E];
    token_rows(prompt_a, N_A, rows);
    float got[E];
    pooled(prompt_a, N_A, OXL_POOLING_LAST, got);
    cr_assert_eq(memcmp(got, rows[N_A - 1], sizeof got), 0, "last pooling is the last token's row");
    pooled(prompt_a, N_A, OXL_POOLING_CLS, got);
    cr_assert_eq(memcmp(got, rows[0], sizeof got), 0, "cls pooling is the first token's row");
}

Test(embeddings, batched_sequences_equal_separate_runs) {
    const oxl_pooling kinds[] = {OXL_POOLING_MEAN, OXL_POOLING_LAST, OXL_POOLING_CLS};
    for (size_t kd = 0; kd < sizeof kinds / sizeof kinds[0]; kd++) {
        float want_a[E], want_b[E];
        pooled(prompt_a, N_A, kinds[kd], want_a);
        pooled(prompt_b, N_B, kinds[kd], want_b);
        /* interleaved in one batch, sequence 1 = a, sequence 2 = b, sequence 0 absent */
        oxl_token tok[N_A + N_B];
        int32_t pos[N_A + N_B], seq[N_A + N_B];
        int ia = 0, ib = 0;
        for (int i = 0; i < N_A + N_B; i++) {
            const bool take_a = (i % 2 == 0 && ia < N_A) || ib == N_B;
            tok[i] = take_a ? prompt_a[ia] : prompt_b[ib];
            pos[i] = take_a ? ia++ : ib++;
            seq[i] = take_a ? 1 : 2;
        }
        oxl_error err = {0};
        oxl_ctx *ctx = new_ctx(3, true, kinds[kd], 512);
        oxl_batch b = {.n_tokens = N_A + N_B, .token = tok, .pos = pos, .seq_id = seq};
        cr_assert_eq(oxl_decode_batch(ctx, &b, &err), 0, "%s", err.msg);
        cr_assert_null(oxl_get_embeddings_seq(ctx, 0), "sequence 0 had no token in the batch");
        const float *a = oxl_get_embeddings_seq(ctx, 1), *bb = oxl_get_embeddings_seq(ctx, 2);
        cr_assert(a && bb);
        cr_assert_eq(memcmp(a, want_a, sizeof want_a), 0, "pooling %d: batched a differs from its own run",
                     (int)kinds[kd]);
        cr_assert_eq(memcmp(bb, want_b, sizeof want_b), 0, "pooling %d: batched b differs from its own run",
                     (int)kinds[kd]);
        /* the next decode replaces the pooled set: only sequence 1 has tokens in it */
        oxl_seq_truncate(ctx, 1, 0);
        const int32_t pos_a[N_A] = {0, 1, 2, 3, 4}, seq_a[N_A] = {1, 1, 1, 1, 1};
        b = (oxl_batch){.n_tokens = N_A, .token = prompt_a, .pos = pos_a, .seq_id = seq_a};
        cr_assert_eq(oxl_decode_batch(ctx, &b, &err), 0, "%s", err.msg);
        cr_assert_null(oxl_get_embeddings_seq(ctx, 2), "sequence 2 had no token in the last decode");
        cr_assert_eq(memcmp(oxl_get_embeddings_seq(ctx, 1), want_a, sizeof want_a), 0);
        oxl_ctx_free(ctx);
    }
}

/* Every architecture's graph (the dense decoder, MoE, latent attention, SSM, hybrid and encoder
 * families of golden/arch): keeping embeddings leaves the logits bit for bit unchanged, every token has a
 * finite embedding of n_embd floats, and mean pooling averages them. */
Test(embeddings, every_architecture_keeps_its_logits, .timeout = 300) {
    DIR *dir = opendir(OXL_SOURCE_DIR "/golden/arch");
    cr_assert_not_null(dir);
    int n_models = 0;
    for (struct dirent *de; (de = readdir(dir));) {
        const size_t len = strlen(de->d_name);
        if (len < 6 || strcmp(de->d_name + len - 5, ".gguf") || strstr(de->d_name, ".logits.")) {
            continue;
        }
        char path[512];
        snprintf(path, sizeof path, "%s/golden/arch/%s", OXL_SOURCE_DIR, de->d_name);
        oxl_error err = {0};
        oxl_model_params mp = oxl_model_default_params();
        oxl_model *m = oxl_model_load(path, &mp, &err);
        cr_assert_not_null(m, "%s: %s", de->d_name, err.msg);
        const int32_t n_vocab = oxl_model_n_vocab(m), n_embd = oxl_model_n_embd(m);
        enum { N = 6 };
        oxl_token tok[N];
        for (int i = 0; i < N; i++) {
            tok[i] = (oxl_token)((1 + 37 * i) % n_vocab);
        }
        oxl_ctx *cx[3];
        const bool embd[3] = {false, true, true};
        const oxl_pooling pool[3] = {OXL_POOLING_UNSPECIFIED, OXL_POOLING_NONE, OXL_POOLING_MEAN};
        for (int c = 0; c < 3; c++) {
            oxl_ctx_params cp = oxl_ctx_default_params();
            cp.n_ctx = 32;
            cp.n_threads = 2;
            cp.embeddings = embd[c];
            cp.pooling = pool[c];
            cx[c] = oxl_ctx_new(m, &cp, &err);
            cr_assert_not_null(cx[c], "%s: %s", de->d_name, err.msg);
            cr_assert_eq(oxl_decode(cx[c], tok, N, true, &err), 0, "%s: %s", de->d_name, err.msg);
        }
        for (int i = 0; i < N; i++) {
            cr_assert_eq(memcmp(oxl_get_logits(cx[0], i), oxl_get_logits(cx[1], i), sizeof(float) * (size_t)n_vocab), 0,
                         "%s token %d: keeping embeddings changed the logits", de->d_name, i);
        }
        const float *mean = oxl_get_embeddings_seq(cx[2], 0);
        cr_assert_not_null(mean, "%s", de->d_name);
        for (int k = 0; k < n_embd; k++) {
            double sum = 0.0;
            for (int i = 0; i < N; i++) {
                const float v = oxl_get_embeddings_ith(cx[1], i)[k];
                cr_assert(isfinite(v), "%s token %d element %d: %g", de->d_name, i, k, (double)v);
                sum += v;
            }
            cr_assert(fabs(mean[k] - sum / N) <= 1e-5 * (1.0 + fabs(sum / N)), "%s element %d: mean %.9g, pooled %.9g",
                      de->d_name, k, sum / N, (double)mean[k]);
        }
        for (int c = 0; c < 3; c++) {
            oxl_ctx_free(cx[c]);
        }
        oxl_model_free(m);
        n_models++;
    }
    closedir(dir);
    cr_assert_geq(n_models, 30, "golden/arch holds %d models", n_models);
}

/* ---- llama.cpp's embeddings of the encoder models of golden/arch (bert: cls pooling, learned
 * positions, GELU; nomic-bert: mean pooling, NeoX RoPE, SwiGLU, fused QKV): golden.kind
 * "embeddings", tensors tokens (48 ids), embd (the pooled sequence embedding, llama.cpp's
 * llama_get_embeddings_seq with the model's pooling) and embd_tokens (n_embd x 48: the per-token
 * output embeddings of a second context with pooling none). llama.cpp ran them without flash
 * attention, 2 threads. ---- */

typedef struct embd_golden {
    oxl_gguf *g;
    const int32_t *tokens;
    int32_t n_tokens;
    const float *embd, *embd_tokens;
    int64_t n_embd;
    char model[256];
} embd_golden;

static void embd_golden_open(const char *id, embd_golden *eg) {
    char path[512];
    snprintf(path, sizeof path, "%s/golden/arch/%s.logits.gguf", OXL_SOURCE_DIR, id);
    oxl_error err = {0};
    eg->g = oxl_gguf_open(path, &err);
    cr_assert_not_null(eg->g, "%s", err.msg);
    const char *kind = NULL, *model_file = NULL;
    cr_assert_eq(oxl_gguf_get_str(eg->g, "golden.kind", &kind, &err), 1, "%s", err.msg);
    cr_assert_str_eq(kind, "embeddings");
    cr_assert_eq(oxl_gguf_get_str(eg->g, "golden.model", &model_file, &err), 1, "%s", err.msg);
    snprintf(eg->model, sizeof eg->model, "%s/golden/arch/%s", OXL_SOURCE_DIR, model_file);
    const oxl_gguf_tensor *t = oxl_gguf_find_tensor(eg->g, "tokens");
    const oxl_gguf_tensor *e = oxl_gguf_find_tensor(eg->g, "embd");
    const oxl_gguf_tensor *et = oxl_gguf_find_tensor(eg->g, "embd_tokens");
    cr_assert(t && e && et && t->type == 26 && e->type == 0 && et->type == 0,
              "%s: tokens (i32), embd, embd_tokens (f32)", path);
    eg->tokens = t->data;
    eg->n_tokens = (int32_t)t->ne[0];
    eg->embd = e->data;
    eg->n_embd = e->ne[0];
    eg->embd_tokens = et->data;
    cr_assert(et->ne[0] == eg->n_embd && et->ne[1] == eg->n_tokens, "%s: embd_tokens is %lld x %lld", path,
              (long long)et->ne[0], (long long)et->ne[1]);
}

static oxl_ctx *embd_ctx(oxl_model *m, oxl_pooling pooling, int n_seq) {
    oxl_error err = {0};
    oxl_ctx_params cp = oxl_ctx_default_params();
    cp.n_ctx = 128 * n_seq;
    cp.n_seq_max = n_seq;
    cp.n_threads = 2;
    cp.embeddings = true;
    cp.pooling = pooling;
    cp.flash_attn = OXL_FLASH_ATTN_OFF; /* as the golden was made */
    oxl_ctx *ctx = oxl_ctx_new(m, &cp, &err);
    cr_assert_not_null(ctx, "%s", err.msg);
    return ctx;
}

static double max_abs_diff(const float *a, const float *b, int64_t n) {
    double m = 0.0;
    for (int64_t i = 0; i < n; i++) {
        const double d = fabs((double)a[i] - (double)b[i]);
        m = d > m || isnan(d) ? d : m;
    }
    return m;
}

/* Compares oxillama's pooled and per-token embeddings of one golden with llama.cpp's. The bounds
 * are 4x the largest difference measured on the reference machine kind (printed each run). */
static void check_encoder_golden(const char *id, oxl_pooling want_pooling, double tol_pooled, double tol_tokens) {
    embd_golden eg;
    embd_golden_open(id, &eg);
    oxl_error err = {0};
    oxl_model_params mp = oxl_model_default_params();
    oxl_model *m = oxl_model_load(eg.model, &mp, &err);
    cr_assert_not_null(m, "%s: %s", eg.model, err.msg);
    cr_assert_eq(oxl_model_n_embd(m), eg.n_embd);

    /* the model's own pooling (unspecified resolves to <arch>.pooling_type) */
    oxl_ctx *ctx = embd_ctx(m, OXL_POOLING_UNSPECIFIED, 1);
    cr_assert_eq(oxl_ctx_pooling(ctx), want_pooling, "%s: pooling %d", id, (int)oxl_ctx_pooling(ctx));
    cr_assert_eq(oxl_decode(ctx, eg.tokens, eg.n_tokens, false, &err), 0, "%s", err.msg);
    const float *pooled = oxl_get_embeddings_seq(ctx, 0);
    cr_assert_not_null(pooled);
    const double d_pooled = max_abs_diff(pooled, eg.embd, eg.n_embd);
    double scale = 0.0;
    for (int64_t k = 0; k < eg.n_embd; k++) {
        scale = fabs(eg.embd[k]) > scale ? fabs(eg.embd[k]) : scale;
    }
    oxl_ctx_free(ctx);

    ctx = embd_ctx(m, OXL_POOLING_NONE, 1);
    cr_assert_eq(oxl_decode(ctx, eg.tokens, eg.n_tokens, false, &err), 0, "%s", err.msg);
    double d_tokens = 0.0;
    float *first = malloc(sizeof(float) * (size_t)(eg.n_embd * eg.n_tokens));
    cr_assert_not_null(first);
    for (int32_t i = 0; i < eg.n_tokens; i++) {
        const float *e = oxl_get_embeddings_ith(ctx, i);
        cr_assert_not_null(e, "%s token %d", id, i);
        const double d = max_abs_diff(e, eg.embd_tokens + (size_t)i * eg.n_embd, eg.n_embd);
        d_tokens = d > d_tokens || isnan(d) ? d : d_tokens;
        memcpy(first + (size_t)i * eg.n_embd, e, sizeof(float) * (size_t)eg.n_embd);
    }
    /* llama_encode keeps nothing between calls: the same tokens again give the same embeddings,
     * although the context counts them at positions 48.. of the sequence */
    cr_assert_eq(oxl_decode(ctx, eg.tokens, eg.n_tokens, false, &err), 0, "%s", err.msg);
    for (int32_t i = 0; i < eg.n_tokens; i++) {
        cr_expect_eq(
            memcmp(oxl_get_embeddings_ith(ctx, i), first + (size_t)i * eg.n_embd, sizeof(float) * (size_t)eg.n_embd), 0,
            "%s token %d: a second decode of the same tokens differs", id, i);
    }
    free(first);
    oxl_ctx_free(ctx);

    /* the golden sequence as sequence 1, interleaved in one batch with another sequence (0): each
     * token attends to its own sequence only */
    ctx = embd_ctx(m, OXL_POOLING_UNSPECIFIED, 2);
    enum { N_OTHER = 5 };
    const int32_t n_all = eg.n_tokens + N_OTHER;
    oxl_token *tok = malloc(sizeof(oxl_token) * (size_t)n_all);
    int32_t *bpos = malloc(sizeof(int32_t) * (size_t)n_all), *bseq = malloc(sizeof(int32_t) * (size_t)n_all);
    cr_assert(tok && bpos && bseq);
    int32_t ig = 0, io = 0;
    for (int32_t i = 0; i < n_all; i++) {
        const bool other = i % 3 == 1 && io < N_OTHER;
        tok[i] = other ? 7 + 11 * io : eg.tokens[ig];
        bpos[i] = other ? io++ : ig++;
        bseq[i] = other ? 0 : 1;
    }
    oxl_batch b = {.n_tokens = n_all, .token = tok, .pos = bpos, .seq_id = bseq};
    cr_assert_eq(oxl_decode_batch(ctx, &b, &err), 0, "%s", err.msg);
    const double d_batched = max_abs_diff(oxl_get_embeddings_seq(ctx, 1), eg.embd, eg.n_embd);
    free(tok);
    free(bpos);
    free(bseq);
    oxl_ctx_free(ctx);
    fprintf(stderr, "embeddings %s: batched beside another sequence, pooled max |diff| %.3g\n", id, d_batched);
    cr_expect(d_batched <= tol_pooled, "%s: pooled embedding batched with another sequence differs by %.3g > %.3g", id,
              d_batched, tol_pooled);
    fprintf(stderr,
            "embeddings %s: max |oxillama - llama.cpp| pooled %.3g (bound %.3g), per token %.3g (bound %.3g); "
            "largest |value| %.3g\n",
            id, d_pooled, tol_pooled, d_tokens, tol_tokens, scale);
    cr_expect(d_pooled <= tol_pooled, "%s: pooled embedding differs from llama.cpp's by %.3g > %.3g", id, d_pooled,
              tol_pooled);
    cr_expect(d_tokens <= tol_tokens, "%s: token embeddings differ from llama.cpp's by %.3g > %.3g", id, d_tokens,
              tol_tokens);
    oxl_model_free(m);
    oxl_gguf_close(eg.g);
}

Test(embeddings_golden, bert_equals_llama_cpp) {
    /* measured: pooled 3.58e-07, per token 2.62e-05 (values up to 2.6) */
    check_encoder_golden("bert", OXL_POOLING_CLS, 1.4e-6, 1.0e-4);
}

Test(embeddings_golden, nomic_bert_equals_llama_cpp) {
    /* measured: pooled 1.19e-07, per token 1.13e-06 (values up to 1.6) */
    check_encoder_golden("nomic-bert", OXL_POOLING_MEAN, 4.7e-7, 4.5e-6);
}

/* An encoder has no output head and encodes each decode afresh: oxl_model_has_decoder says so, and a
 * decode larger than one pass is refused (llama.cpp: llama_encode needs n_ubatch >= n_tokens),
 * where splitting it would silently encode two halves apart. */
Test(embeddings_golden, encoder_refuses_a_decode_over_one_pass) {
    embd_golden eg;
    embd_golden_open("bert", &eg);
    oxl_error err = {0};
    oxl_model *m = oxl_model_load(eg.model, NULL, &err);
    cr_assert_not_null(m, "%s", err.msg);
    cr_expect_not(oxl_model_has_decoder(m));
    oxl_ctx_params cp = oxl_ctx_default_params();
    cp.n_ctx = 128;
    cp.n_batch = eg.n_tokens / 2;
    cp.embeddings = true;
    oxl_ctx *ctx = oxl_ctx_new(m, &cp, &err);
    cr_assert_not_null(ctx, "%s", err.msg);
    cr_expect_eq(oxl_decode(ctx, eg.tokens, eg.n_tokens, false, &err), -1);
    cr_expect(strstr(err.msg, "must fit one pass") != NULL, "%s", err.msg);
    oxl_ctx_free(ctx);
    oxl_model_free(m);
    oxl_gguf_close(eg.g);

    oxl_model *dec = oxl_model_load(OXL_SOURCE_DIR "/models/stories260K.gguf", NULL, &err);
    cr_assert_not_null(dec, "%s", err.msg);
    cr_expect(oxl_model_has_decoder(dec));
    oxl_model_free(dec);
}
