/* Importance-matrix runs over a text (see imatrix_run.h). */
#include "imatrix_run.h"

#include "errors.h"
#include "matmul.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* -log p(tok) from one row of logits, as llama-imatrix's log_softmax. */
static double nll_of(const float *logits, int32_t n_vocab, int32_t tok) {
    float max = logits[0];
    for (int32_t i = 1; i < n_vocab; i++) {
        max = logits[i] > max ? logits[i] : max;
    }
    double sum_exp = 0.0;
    for (int32_t i = 0; i < n_vocab; i++) {
        sum_exp += expf(logits[i] - max);
    }
    return -(logits[tok] - max - log(sum_exp));
}

/* The work of one decode: n_seq sequences of one chunk each. */
typedef struct run {
    oxl_ctx *ctx;
    const oxl_imatrix_params *p;
    oxl_imatrix_acc *acc;
    oxl_token *tok;     /* [pass_max] the pass */
    int32_t *pos, *seq; /* [pass_max] */
    int8_t *keep;       /* [pass_max] all 1: every token's logits, as llama-imatrix asks */
    int32_t *done;      /* [n_seq] tokens of each sequence's batch already passed */
    double *nll, *nll2; /* [n_seq] of this decode */
    int32_t n_vocab;
} run;

/* One pass: sequences s0 .. s0+ns-1 (chunks: their tokens, n_ctx each), t tokens of each from
 * position j_pos + done[s] on (j_pos: the start of this batch within the chunk; bos_first: position
 * 0 becomes bos), then the perplexity terms of its tokens in the chunks' second halves. */
static int pass(run *r, const oxl_token *chunks, int32_t s0, int32_t ns, int32_t t, int32_t j_pos, bool bos_first,
                oxl_token bos, oxl_error *err) {
    const int32_t n_ctx = r->p->n_ctx, first = n_ctx / 2;
    int32_t n = 0;
    for (int32_t s = s0; s < s0 + ns; s++) {
        for (int32_t k = r->done[s]; k < r->done[s] + t; k++) {
            const int32_t p = j_pos + k;
            r->tok[n] = bos_first && p == 0 ? bos : chunks[(size_t)s * n_ctx + p];
            r->pos[n] = p;
            r->seq[n] = s;
            n++;
        }
    }
    oxl_batch b = {.n_tokens = n, .token = r->tok, .pos = r->pos, .seq_id = r->seq, .logits = r->keep};
    oxl_matmul_set_observer(oxl_imatrix_acc_observe, r->acc);
    const int rc = oxl_decode_batch(r->ctx, &b, err);
    oxl_matmul_set_observer(NULL, NULL);
    if (rc != 0) {
        return -1;
    }
    if (r->p->compute_ppl) {
        for (int32_t i = 0; i < n; i++) {
            const int32_t s = r->seq[i], p = r->pos[i];
            if (p >= first && p < n_ctx - 1) {
                const double v = nll_of(oxl_get_logits(r->ctx, i), r->n_vocab, chunks[(size_t)s * n_ctx + p + 1]);
                r->nll[s] += v;
                r->nll2[s] += v * v;
            }
        }
    }
    for (int32_t s = s0; s < s0 + ns; s++) {
        r->done[s] += t;
    }
    return 0;
}

int oxl_imatrix_compute(const oxl_model *model, const oxl_ctx_params *cp, const char *text, size_t len,
                        const oxl_imatrix_params *p, oxl_imatrix_acc *acc, oxl_imatrix_result *out, oxl_error *err) {
    memset(out, 0, sizeof *out);
    const int32_t n_ctx = p->n_ctx;
    if (n_ctx <= 0) {
        return oxl_err_set(err, "imatrix: the chunk length (-c) must be positive, not %d", n_ctx);
    }
    if (p->n_batch <= 0 || p->n_ubatch <= 0) {
        return oxl_err_set(err, "imatrix: -b %d and -ub %d must be positive", p->n_batch, p->n_ubatch);
    }
    if (!oxl_model_has_decoder(model)) {
        return oxl_err_set(err, "imatrix: an embedding model (no output head) has no next-token passes");
    }
    /* llama-imatrix's main: n_seq chunks per decode, the batch at most their tokens; the context
     * caps the micro-batch at the batch */
    const int32_t n_seq = p->n_batch / n_ctx > 1 ? p->n_batch / n_ctx : 1;
    const int32_t n_batch = p->n_batch < n_seq * n_ctx ? p->n_batch : n_seq * n_ctx;
    const int32_t n_ubatch = p->n_ubatch < n_batch ? p->n_ubatch : n_batch;
    if ((int64_t)n_seq * n_ctx > (1 << 24)) {
        return oxl_err_set(err, "imatrix: -c %d with -b %d asks for %lld cache cells", n_ctx, p->n_batch,
                           (long long)n_seq * n_ctx);
    }

    if (p->info) {
        fprintf(p->info, "compute_imatrix: tokenizing the input ..\n");
    }
    const double t0 = now_s();
    int32_t need = oxl_tokenize(model, text, len, NULL, 0, true, false);
    if (need == INT32_MIN) {
        return oxl_err_set(err, "imatrix: cannot tokenize the input text");
    }
    const int64_t n_tokens = need < 0 ? -(int64_t)need : need;
    oxl_token *tokens = malloc(sizeof(oxl_token) * (size_t)(n_tokens + 1));
    if (tokens == NULL || oxl_tokenize(model, text, len, tokens, (int32_t)n_tokens, true, false) != n_tokens) {
        free(tokens);
        return oxl_err_set(err, "imatrix: cannot tokenize the input text");
    }
    if (p->info) {
        fprintf(p->info, "compute_imatrix: tokenization took %g ms\n", 1e3 * (now_s() - t0));
    }
    if (n_tokens < 2 * (int64_t)n_ctx) {
        free(tokens);
        return oxl_err_set(err,
                           "imatrix: you need at least %lld tokens for a context of %d tokens; the text tokenizes to "
                           "only %lld tokens",
                           2 * (long long)n_ctx, n_ctx, (long long)n_tokens);
    }
    const int32_t n_chunk_max = (int32_t)(n_tokens / n_ctx);
    const int32_t n_chunk = p->n_chunks < 0 || p->n_chunks > n_chunk_max ? n_chunk_max : p->n_chunks;
    const int32_t n_vocab = oxl_model_n_vocab(model);
    const int32_t num_batches = (n_ctx + n_batch - 1) / n_batch;
    /* split_equal takes at most n_ubatch + 1 sequences, at least one token of each */
    const int32_t seq_cap = n_seq < n_ubatch + 1 ? n_seq : n_ubatch + 1;
    const int32_t pass_max = n_ubatch > seq_cap ? n_ubatch : seq_cap;

    int rc = -1;
    run r = {.p = p, .acc = acc, .n_vocab = n_vocab};
    r.tok = malloc(sizeof(oxl_token) * (size_t)pass_max);
    r.pos = malloc(sizeof(int32_t) * (size_t)pass_max);
    r.seq = malloc(sizeof(int32_t) * (size_t)pass_max);
    r.keep = malloc((size_t)pass_max);
    r.done = malloc(sizeof(int32_t) * (size_t)n_seq);
    r.nll = malloc(sizeof(double) * (size_t)n_seq);
    r.nll2 = malloc(sizeof(double) * (size_t)n_seq);
    if (!r.tok || !r.pos || !r.seq || !r.keep || !r.done || !r.nll || !r.nll2) {
        oxl_err_set(err, "imatrix: out of memory");
        goto done;
    }
    memset(r.keep, 1, (size_t)pass_max);
    oxl_ctx_params c = *cp;
    c.n_ctx = n_seq * n_ctx;
    c.n_seq_max = n_seq;
    c.n_batch = pass_max;
    c.seq_streams = n_seq > 1; /* llama-imatrix's cache: one stream per sequence */
    r.ctx = oxl_ctx_new(model, &c, err);
    if (r.ctx == NULL) {
        goto done;
    }
    const oxl_token bos = oxl_token_bos(model);
    oxl_token probe = -1; /* the vocabulary adds BOS iff empty text tokenizes to [BOS] */
    const bool add_bos = bos >= 0 && oxl_tokenize(model, "", 0, &probe, 1, true, false) == 1 && probe == bos;
    if (p->info) {
        fprintf(p->info, "compute_imatrix: computing over %d chunks, n_ctx=%d, batch_size=%d, n_seq=%d\n", n_chunk,
                n_ctx, n_batch, n_seq);
    }

    const int32_t first = n_ctx / 2;
    double nll = 0.0, nll2 = 0.0;
    int64_t count = 0;
    for (int32_t i = 0; i < n_chunk; i += n_seq) {
        const int32_t n_seq_batch = n_seq < n_chunk - i ? n_seq : n_chunk - i;
        const oxl_token *chunks = tokens + (size_t)i * n_ctx;
        const double t_start = now_s();
        for (int32_t s = 0; s < n_seq; s++) {
            oxl_seq_truncate(r.ctx, s, 0);
            r.nll[s] = r.nll2[s] = 0.0;
        }
        for (int32_t j = 0; j < num_batches; j++) {
            const int32_t batch_size = n_ctx - j * n_batch < n_batch ? n_ctx - j * n_batch : n_batch;
            memset(r.done, 0, sizeof(int32_t) * (size_t)n_seq);
            for (;;) {
                /* the next micro-batch: consecutive sequences from the first with tokens left (one
                 * stream: split_simple, n_ubatch tokens in order) */
                int32_t s0 = 0;
                while (s0 < n_seq_batch && r.done[s0] >= batch_size) {
                    s0++;
                }
                if (s0 == n_seq_batch) {
                    break;
                }
                int32_t ns = 0, t = 0;
                if (n_seq == 1) {
                    ns = 1;
                    t = batch_size - r.done[0] < n_ubatch ? batch_size - r.done[0] : n_ubatch;
                } else {
                    while (s0 + ns < n_seq_batch && r.done[s0 + ns] < batch_size && ns < seq_cap) {
                        ns++;
                    }
                    for (;;) {
                        bool left = true;
                        for (int32_t s = s0; s < s0 + ns; s++) {
                            left = left && r.done[s] + t < batch_size;
                        }
                        if (!left) {
                            break;
                        }
                        t++;
                        if ((int64_t)(t + 1) * ns > n_ubatch) {
                            break;
                        }
                    }
                }
                if (pass(&r, chunks, s0, ns, t, j * n_batch, add_bos && j == 0, bos, err) != 0) {
                    goto done;
                }
            }
        }
        if (i == 0 && p->info) {
            const double t_total = now_s() - t_start;
            fprintf(p->info, "compute_imatrix: %.2f seconds per pass - ETA %.2f minutes\n", t_total,
                    (double)(int)(t_total * n_chunk / n_seq) / 60.0);
        }
        if (p->compute_ppl) {
            for (int32_t s = 0; s < n_seq_batch; s++) {
                nll += r.nll[s];
                nll2 += r.nll2[s];
                count += n_ctx - first - 1;
                if (p->progress) {
                    fprintf(p->progress, "[%d]%.4f,", i + s + 1, exp(nll / (double)count));
                }
            }
            if (p->progress) {
                fflush(p->progress);
            }
        }
    }
    if (p->progress) {
        fputc('\n', p->progress);
    }
    if (oxl_imatrix_acc_check(acc, err) != 0) {
        goto done;
    }
    out->n_chunk = n_chunk;
    out->n_seq = n_seq;
    if (p->compute_ppl && count > 1) {
        nll2 /= (double)count;
        nll /= (double)count;
        out->ppl = exp(nll);
        nll2 -= nll * nll;
        out->ppl_unc = nll2 > 0 ? sqrt(nll2 / (double)(count - 1)) * out->ppl : 0.0;
    }
    rc = 0;
done:
    oxl_matmul_set_observer(NULL, NULL);
    oxl_ctx_free(r.ctx);
    free(r.tok);
    free(r.pos);
    free(r.seq);
    free(r.keep);
    free(r.done);
    free(r.nll);
    free(r.nll2);
    free(tokens);
    return rc;
}
