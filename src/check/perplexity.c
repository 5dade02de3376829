#include "perplexity.h"

#include "errors.h"
#include "file.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Padded row length of the base file (llama.cpp: 2*((n_vocab+1)/2) + 4 u16, the first 4 holding
 * two floats). */
static size_t base_row_u16(int32_t n_vocab) { return 2 * (((size_t)n_vocab + 1) / 2) + 4; }

/* ggml's nearest_int: round to nearest with ties to even via the 1.5*2^23 trick. */
static int nearest_int(float f) {
    float v = f + 12582912.f;
    int i;
    memcpy(&i, &v, sizeof i);
    return (i & 0x007fffff) - 0x00400000;
}

/* Encodes one token's log-probabilities into a base-file row; returns its NLL for token tok. */
static double encode_row(const float *logits, int32_t n_vocab, int32_t tok, uint16_t *row) {
    float max = logits[0], min = logits[0];
    for (int32_t i = 1; i < n_vocab; i++) {
        max = fmaxf(max, logits[i]);
        min = fminf(min, logits[i]);
    }
    min = fmaxf(min, max - 16);
    double sum_exp = 0.0;
    for (int32_t i = 0; i < n_vocab; i++) {
        sum_exp += expf(logits[i] - max);
    }
    const float log_sum_exp = (float)log(sum_exp);
    const float min_log_prob = min - max - log_sum_exp;
    const float scale = (max - min) / 65535.f;
    memcpy(row, &scale, sizeof scale);
    memcpy(row + 2, &min_log_prob, sizeof min_log_prob);
    uint16_t *q = row + 4;
    memset(q, 0, (base_row_u16(n_vocab) - 4) * sizeof(uint16_t));
    if (scale != 0.0f) {
        const float inv = 1 / scale;
        for (int32_t i = 0; i < n_vocab; i++) {
            q[i] = logits[i] > min ? (uint16_t)nearest_int(inv * (logits[i] - min)) : 0;
        }
    }
    return max + log_sum_exp - logits[tok];
}

typedef struct kld_acc {
    double sum_nll, sum_nll2, sum_nll_base, sum_nll_base2, sum_kld, sum_kld2, sum_p_diff2, sum_p_diff4;
    double max_kld;
    size_t n_same_top, count;
} kld_acc;

/* Compares one token's logits with a base row (llama.cpp's log_softmax against base_log_prob). */
static void compare_row(const float *logits, int32_t n_vocab, int32_t tok, const uint16_t *row, kld_acc *a) {
    float max = logits[0];
    int32_t imax = 0;
    for (int32_t i = 1; i < n_vocab; i++) {
        if (logits[i] > max) {
            max = logits[i];
            imax = i;
        }
    }
    double sum_exp = 0.0;
    for (int32_t i = 0; i < n_vocab; i++) {
        sum_exp += expf(logits[i] - max);
    }
    const float log_sum_exp = (float)log(sum_exp);
    float scale, min_log_prob;
    memcpy(&scale, row, sizeof scale);
    memcpy(&min_log_prob, row + 2, sizeof min_log_prob);
    const uint16_t *q = row + 4;
    const float nll = max + log_sum_exp - logits[tok];
    const float nll_base = -(scale * q[tok] + min_log_prob);
    a->sum_nll += nll;
    a->sum_nll2 += nll * nll;
    a->sum_nll_base += nll_base;
    a->sum_nll_base2 += nll_base * nll_base;
    const float log_norm = max + log_sum_exp;
    double kld = 0.0;
    int32_t imax_base = 0;
    float base_max = 0.0f;
    for (int32_t i = 0; i < n_vocab; i++) {
        const float lp_base = scale * q[i] + min_log_prob;
        if (i == 0 || lp_base > base_max) {
            base_max = lp_base;
            imax_base = i;
        }
        if (lp_base > -16.f) {
            kld += expf(lp_base) * (lp_base - logits[i] + log_norm);
        }
    }
    a->sum_kld += kld;
    a->sum_kld2 += kld * kld;
    a->max_kld = kld > a->max_kld ? kld : a->max_kld;
    a->n_same_top += imax == imax_base;
    const float p_diff = expf(-nll) - expf(-nll_base);
    const double p_diff2 = (double)p_diff * p_diff;
    a->sum_p_diff2 += p_diff2;
    a->sum_p_diff4 += p_diff2 * p_diff2;
    a->count++;
}

/* llama.cpp's mean_and_uncertainty. */
static void mean_unc(double sum, double sum2, size_t count, double *mean, double *unc) {
    *mean = count ? sum / (double)count : 0.0;
    double var = count ? sum2 / (double)count - *mean * *mean : 0.0;
    *unc = var > 0 && count > 10 ? sqrt(var / (double)(count - 1)) : 0.0;
}

/* The base file, read whole and validated. */
typedef struct base_file {
    uint8_t *bytes;
    size_t size;
    uint32_t n_ctx;
    int32_t n_vocab, n_chunk;
    const uint8_t *tokens; /* i32 [n_ctx * n_chunk] */
    const uint8_t *rows;   /* u16 rows, per chunk (n_ctx - 1 - n_ctx/2) of them */
} base_file;

static int read_base(const char *path, int32_t n_vocab_model, base_file *b, oxl_error *err) {
    b->bytes = (uint8_t *)oxl_read_file(path, &b->size, err);
    if (b->bytes == NULL) {
        return oxl_err_prefix(err, "KL-divergence base file");
    }
    if (b->size < 20) {
        return oxl_err_set(err, "%s: %zu bytes is too short for a log-probability file (header is 20 bytes)", path,
                           b->size);
    }
    if (memcmp(b->bytes, "_logits_", 8) != 0) {
        return oxl_err_set(err, "%s: byte 0: magic is not \"_logits_\": not a llama.cpp log-probability file", path);
    }
    memcpy(&b->n_ctx, b->bytes + 8, 4);
    memcpy(&b->n_vocab, b->bytes + 12, 4);
    memcpy(&b->n_chunk, b->bytes + 16, 4);
    if (b->n_ctx < 4 || b->n_ctx > (1u << 24)) {
        return oxl_err_set(err, "%s: byte 8: n_ctx = %u is out of range", path, b->n_ctx);
    }
    if (b->n_vocab != n_vocab_model) {
        return oxl_err_set(err, "%s: byte 12: n_vocab = %d but the model has %d tokens", path, b->n_vocab,
                           n_vocab_model);
    }
    if (b->n_chunk <= 0) {
        return oxl_err_set(err, "%s: byte 16: n_chunk = %d must be positive", path, b->n_chunk);
    }
    const size_t n_scored = b->n_ctx - 1 - b->n_ctx / 2;
    const size_t row_bytes = base_row_u16(b->n_vocab) * 2;
    /* 20 + 4*n_ctx*n_chunk + n_chunk*n_scored*row_bytes, checked against the size without overflow */
    const size_t per_chunk = 4 * (size_t)b->n_ctx + n_scored * row_bytes;
    if ((size_t)b->n_chunk > (b->size - 20) / per_chunk || 20 + (size_t)b->n_chunk * per_chunk != b->size) {
        return oxl_err_set(err, "%s: size %zu bytes does not match n_ctx %u, n_vocab %d, n_chunk %d", path, b->size,
                           b->n_ctx, b->n_vocab, b->n_chunk);
    }
    b->tokens = b->bytes + 20;
    b->rows = b->tokens + 4 * (size_t)b->n_ctx * (size_t)b->n_chunk;
    for (size_t i = 0; i < (size_t)b->n_ctx * (size_t)b->n_chunk; i++) {
        int32_t t;
        memcpy(&t, b->tokens + 4 * i, 4);
        if (t < 0 || t >= b->n_vocab) {
            return oxl_err_set(err, "%s: byte %zu: token %d outside the vocabulary", path, 20 + 4 * i, t);
        }
    }
    return 0;
}

int oxl_perplexity(const oxl_model *model, const oxl_ctx_params *cp, const char *text, size_t len,
                   const oxl_ppl_params *p, oxl_ppl_stats *out, oxl_error *err) {
    const int32_t n_vocab = oxl_model_n_vocab(model);
    int rc = -1;
    base_file base = {0};
    oxl_token *tokens = NULL;
    uint16_t *row = NULL;
    FILE *wf = NULL;
    oxl_ctx *ctx = NULL;
    int32_t n_ctx = p->n_ctx;
    int64_t n_tokens = 0;
    memset(out, 0, sizeof *out);

    if (p->compare) {
        if (read_base(p->base_path, n_vocab, &base, err) != 0) {
            goto done;
        }
        n_ctx = (int32_t)base.n_ctx;
        n_tokens = (int64_t)base.n_ctx * base.n_chunk;
        tokens = malloc(sizeof(oxl_token) * (size_t)n_tokens);
        if (!tokens) {
            oxl_err_set(err, "out of memory");
            goto done;
        }
        memcpy(tokens, base.tokens, sizeof(oxl_token) * (size_t)n_tokens);
    } else {
        int32_t need = oxl_tokenize(model, text, len, NULL, 0, true, false);
        if (need == INT32_MIN) {
            oxl_err_set(err, "cannot tokenize the input text");
            goto done;
        }
        n_tokens = need < 0 ? -(int64_t)need : need;
        tokens = malloc(sizeof(oxl_token) * (size_t)(n_tokens + 1));
        if (!tokens || oxl_tokenize(model, text, len, tokens, (int32_t)n_tokens, true, false) != n_tokens) {
            oxl_err_set(err, "cannot tokenize the input text");
            goto done;
        }
        if (n_ctx < 4) {
            oxl_err_set(err, "perplexity: context %d is too small (-c)", n_ctx);
            goto done;
        }
        if (n_tokens < 2 * (int64_t)n_ctx) {
            oxl_err_set(err, "perplexity: %lld tokens; at least %d are needed for a context of %d", (long long)n_tokens,
                        2 * n_ctx, n_ctx);
            goto done;
        }
    }
    const int n_chunk = (int)(n_tokens / n_ctx);
    const int first = n_ctx / 2;
    const size_t row_u16 = base_row_u16(n_vocab);
    row = malloc(row_u16 * sizeof(uint16_t));
    if (!row) {
        oxl_err_set(err, "out of memory");
        goto done;
    }
    if (p->base_path && !p->compare) {
        wf = fopen(p->base_path, "wb");
        if (!wf) {
            oxl_err_set(err, "%s: cannot open for writing", p->base_path);
            goto done;
        }
        uint32_t nc = (uint32_t)n_ctx;
        fwrite("_logits_", 1, 8, wf);
        fwrite(&nc, 4, 1, wf);
        fwrite(&n_vocab, 4, 1, wf);
        fwrite(&n_chunk, 4, 1, wf);
        fwrite(tokens, sizeof(oxl_token), (size_t)n_chunk * n_ctx, wf);
    }
    oxl_ctx_params c = *cp;
    c.n_ctx = n_ctx;
    /* passes of cp->n_batch tokens within each window (llama-perplexity's -b/-ub): the attention
     * kernel ggml picks depends on the pass size */
    c.n_batch = cp->n_batch > 0 && cp->n_batch < n_ctx ? cp->n_batch : n_ctx;
    ctx = oxl_ctx_new(model, &c, err);
    if (!ctx) {
        goto done;
    }
    if (p->setup && p->setup(p->setup_user, ctx) != 0) {
        oxl_err_set(err, "setting up the context failed");
        goto done;
    }
    const oxl_token bos = oxl_token_bos(model);
    oxl_token probe = -1; /* the vocabulary adds BOS iff empty text tokenizes to [BOS] */
    const bool add_bos = bos >= 0 && oxl_tokenize(model, "", 0, &probe, 1, true, false) == 1 && probe == bos;
    double nll = 0.0, nll2 = 0.0;
    kld_acc acc = {0};
    const size_t row_bytes = row_u16 * sizeof(uint16_t);
    for (int ic = 0; ic < n_chunk; ic++) {
        oxl_token *chunk = tokens + (size_t)ic * n_ctx;
        const oxl_token saved = chunk[0];
        if (add_bos) {
            chunk[0] = bos;
        }
        oxl_ctx_truncate(ctx, 0);
        int r = oxl_decode(ctx, chunk, n_ctx, true, err);
        chunk[0] = saved;
        if (r != 0) {
            goto done;
        }
        for (int j = first; j < n_ctx - 1; j++) {
            const float *lg = oxl_get_logits(ctx, j);
            const int32_t next = chunk[j + 1];
            if (p->compare) {
                const uint8_t *brow =
                    base.rows + ((size_t)ic * (size_t)(n_ctx - 1 - first) + (size_t)(j - first)) * row_bytes;
                memcpy(row, brow, row_bytes); /* the file's rows are not 4-byte aligned in general */
                compare_row(lg, n_vocab, next, row, &acc);
            } else {
                const double v = encode_row(lg, n_vocab, next, row);
                nll += v;
                nll2 += v * v;
                if (wf) {
                    fwrite(row, 1, row_bytes, wf);
                }
            }
        }
        if (p->progress) {
            if (p->compare) {
                double m, u;
                mean_unc(acc.sum_kld, acc.sum_kld2, acc.count, &m, &u);
                fprintf(p->progress, "%4d    KLD %10.6f ± %10.6f\n", ic + 1, m, u);
            } else {
                fprintf(p->progress, "[%d]%.4f,", ic + 1, exp(nll / (double)((size_t)(ic + 1) * (n_ctx - 1 - first))));
            }
            fflush(p->progress);
        }
    }
    if (p->progress && !p->compare) {
        fputc('\n', p->progress);
    }
    out->n_chunk = n_chunk;
    if (p->compare) {
        double m, u;
        out->count = acc.count;
        mean_unc(acc.sum_nll, acc.sum_nll2, acc.count, &m, &u);
        out->ppl = exp(m);
        out->ppl_unc = out->ppl * u;
        mean_unc(acc.sum_nll_base, acc.sum_nll_base2, acc.count, &m, &u);
        out->ppl_base = exp(m);
        out->ppl_base_unc = out->ppl_base * u;
        mean_unc(acc.sum_kld, acc.sum_kld2, acc.count, &out->kld, &out->kld_unc);
        mean_unc(acc.sum_p_diff2, acc.sum_p_diff4, acc.count, &m, &u);
        out->rms_dp = sqrt(m);
        out->rms_dp_unc = out->rms_dp > 0 ? 0.5 / out->rms_dp * u : 0.0;
        out->same_top = acc.count ? (double)acc.n_same_top / (double)acc.count : 0.0;
        out->same_top_unc = acc.count > 1 ? sqrt(out->same_top * (1 - out->same_top) / (double)(acc.count - 1)) : 0.0;
        out->kld_max = acc.max_kld;
    } else {
        const size_t count = (size_t)n_chunk * (size_t)(n_ctx - 1 - first);
        out->count = count;
        const double mean = nll / (double)count;
        double var = nll2 / (double)count - mean * mean;
        out->ppl = exp(mean);
        out->ppl_unc = var > 0 ? sqrt(var / (double)(count - 1)) * out->ppl : 0.0;
    }
    if (wf && (fflush(wf) != 0 || ferror(wf))) {
        oxl_err_set(err, "%s: write failed", p->base_path);
        goto done;
    }
    rc = 0;
done:
    if (wf) {
        fclose(wf);
    }
    oxl_ctx_free(ctx);
    free(row);
    free(tokens);
    free(base.bytes);
    return rc;
}
