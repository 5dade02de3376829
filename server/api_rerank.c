/* POST /v1/rerank (also /v1/reranking, /rerank, /reranking). */
#include "generate.h"
#include "json_read.h"
#include "routes.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define RERANK_MAX_DOCUMENTS 2048

/* Appends the tokens of text (no BOS/EOS; special-token text parsed when parse_special) to *toks. */
static int append_text(const oxl_model *m, const char *text, bool parse_special, oxl_token **toks, int32_t *n,
                       int32_t *cap) {
    const size_t len = strlen(text);
    int32_t k = oxl_tokenize(m, text, len, *toks ? *toks + *n : NULL, *cap - *n, false, parse_special);
    if (k == INT32_MIN) {
        return -1;
    }
    if (k < 0) {
        const int32_t want = *n - k + 3;
        oxl_token *p = realloc(*toks, sizeof(oxl_token) * (size_t)want);
        if (!p) {
            return -1;
        }
        *toks = p;
        *cap = want;
        k = oxl_tokenize(m, text, len, *toks + *n, *cap - *n, false, parse_special);
        if (k < 0) {
            return -1;
        }
    }
    *n += k;
    return 0;
}

static int append_token(oxl_token t, oxl_token **toks, int32_t *n, int32_t *cap) {
    if (*n + 1 > *cap) {
        const int32_t want = *cap * 2 + 8;
        oxl_token *p = realloc(*toks, sizeof(oxl_token) * (size_t)want);
        if (!p) {
            return -1;
        }
        *toks = p;
        *cap = want;
    }
    (*toks)[(*n)++] = t;
    return 0;
}

/* The tokens of one query/document pair, as llama.cpp's format_prompt_rerank
 * (tools/server/server-common.cpp): the model's "rerank" template (tokenizer.chat_template.rerank)
 * with {query} and {document} replaced, tokenized without BOS/EOS and with special-token text
 * parsed; else [BOS] query [EOS] [SEP] document [EOS], each bracket as the vocabulary adds it (EOS
 * being SEP when the vocabulary has no EOS), the texts tokenized plainly. */
static int rerank_tokens(const oxl_model *m, const char *tmpl, const char *query, const char *doc, oxl_token **toks,
                         int32_t *n) {
    int32_t cap = 0;
    *toks = NULL;
    *n = 0;
    if (tmpl) {
        size_t lt = strlen(tmpl), lq = strlen(query), ld = strlen(doc), cnt = 0;
        for (const char *p = tmpl; (p = strchr(p, '{')) != NULL; p++) {
            cnt++;
        }
        char *text = malloc(lt + cnt * (lq > ld ? lq : ld) + 1);
        if (!text) {
            return -1;
        }
        size_t o = 0;
        for (const char *p = tmpl; *p;) {
            if (!strncmp(p, "{query}", 7)) {
                memcpy(text + o, query, lq);
                o += lq;
                p += 7;
            } else if (!strncmp(p, "{document}", 10)) {
                memcpy(text + o, doc, ld);
                o += ld;
                p += 10;
            } else {
                text[o++] = *p++;
            }
        }
        text[o] = 0;
        const int rc = append_text(m, text, true, toks, n, &cap);
        free(text);
        return rc;
    }
    oxl_token eos = oxl_token_eos(m);
    if (eos < 0) {
        eos = oxl_token_sep(m);
    }
    const bool add_eos = oxl_vocab_add_eos(m);
    if ((oxl_vocab_add_bos(m) && append_token(oxl_token_bos(m), toks, n, &cap)) ||
        append_text(m, query, false, toks, n, &cap) || (add_eos && append_token(eos, toks, n, &cap)) ||
        (oxl_vocab_add_sep(m) && append_token(oxl_token_sep(m), toks, n, &cap)) ||
        append_text(m, doc, false, toks, n, &cap) || (add_eos && append_token(eos, toks, n, &cap))) {
        return -1;
    }
    return 0;
}

/* A string array, or NULL when v is not one (llama.cpp's json_value then falls back). */
static const cJSON *string_array(const cJSON *v) {
    if (!cJSON_IsArray(v)) {
        return NULL;
    }
    for (const cJSON *x = v->child; x; x = x->next) {
        if (!cJSON_IsString(x)) {
            return NULL;
        }
    }
    return v;
}

typedef struct ranked {
    int32_t index;
    double score;
} ranked;

/* Highest score first; equal scores keep the documents' order. */
static int by_score(const void *a, const void *b) {
    const ranked *x = a, *y = b;
    if (x->score != y->score) {
        return x->score > y->score ? -1 : 1;
    }
    return (x->index > y->index) - (x->index < y->index);
}

/* POST /v1/rerank, as llama.cpp's server (post_rerank, format_response_rerank): "query" (a string)
 * against "documents" (or "texts": the TEI shape), one pair per document through the model's
 * classifier head (rank pooling; the server must run with --rerank), the first value of each
 * pair's pooled output its score. Jina/Cohere shape: {model, object "list", usage, results: [{index,
 * relevance_score}]}; TEI shape (the body has "texts"): a bare array of {index, score[, text with
 * return_text]}. Results are sorted by score, highest first, and cut to top_n (default: all). */
void oxl_api_rerank(oxl_srv *srv, const oxl_request *rq, oxl_reply *out) {
    oxl_api_error e = {0};
    const cJSON *b = rq->json;
    oxl_token **toks = NULL;
    int32_t *lens = NULL, n_doc = 0;
    ranked *rk = NULL;
    if (!srv->cfg->rerank) {
        oxl_api_fail(&e, OXL_E_MODEL_NOT_SUPPORTED, NULL,
                     "This server does not support reranking. Start it with `--reranking`");
        e.status = 501;
        e.type = "not_supported_error";
        e.code = "not_supported";
        goto fail;
    }
    const cJSON *q = oxl_json_field(b, "query");
    if (!q) {
        BAD(&e, "query", "\"query\" must be provided");
        goto fail;
    }
    if (!cJSON_IsString(q)) {
        BAD_TYPE(&e, "query", "\"query\" must be a string");
        goto fail;
    }
    const cJSON *texts = oxl_json_field(b, "texts");
    const bool tei = texts != NULL;
    const cJSON *docs = oxl_json_field(b, "documents");
    docs = docs && !cJSON_IsNull(docs) ? string_array(docs) : NULL;
    if (!docs && texts && !cJSON_IsNull(texts)) {
        docs = string_array(texts);
    }
    n_doc = docs ? cJSON_GetArraySize(docs) : 0;
    if (n_doc <= 0) {
        n_doc = 0;
        BAD(&e, "documents", "\"documents\" must be a non-empty string array");
        goto fail;
    }
    if (n_doc > RERANK_MAX_DOCUMENTS) {
        BAD(&e, "documents", "\"documents\": %d documents; at most %d are accepted", n_doc, RERANK_MAX_DOCUMENTS);
        n_doc = 0;
        goto fail;
    }
    long long top_n = n_doc;
    const cJSON *tn = oxl_json_field(b, "top_n");
    if (cJSON_IsNumber(tn)) {
        if (tn->valuedouble < 0) {
            BAD(&e, "top_n", "\"top_n\" must not be negative");
            goto fail;
        }
        /* compared as a double first: a huge value does not fit a long long */
        top_n = tn->valuedouble < (double)n_doc ? (long long)tn->valuedouble : n_doc;
    }
    const cJSON *rt = oxl_json_field(b, "return_text");
    const bool return_text = tei && cJSON_IsTrue(rt);
    const cJSON *mj = oxl_json_field(b, "model");
    const char *model = cJSON_IsString(mj) ? mj->valuestring : srv->model_id;

    char tmpl_buf[8192];
    const int32_t tl = oxl_model_meta_val_str(srv->model, "tokenizer.chat_template.rerank", tmpl_buf, sizeof tmpl_buf);
    if (tl >= (int32_t)sizeof tmpl_buf) {
        oxl_api_fail(&e, OXL_E_GENERATION_FAILED, NULL, "the model's rerank template is longer than %d bytes",
                     (int)sizeof tmpl_buf - 1);
        goto fail;
    }
    const char *tmpl = tl >= 0 ? tmpl_buf : NULL;
    const int32_t n_ctx = oxl_sched_n_ctx_slot(srv->sched), n_embd = oxl_model_n_embd(srv->model);
    toks = calloc((size_t)n_doc, sizeof *toks);
    lens = calloc((size_t)n_doc, sizeof *lens);
    rk = malloc(sizeof *rk * (size_t)n_doc);
    if (!toks || !lens || !rk) {
        oxl_api_fail(&e, OXL_E_OUT_OF_MEMORY, NULL, "out of memory");
        goto fail;
    }
    size_t total = 0;
    const cJSON *d = docs->child;
    for (int32_t i = 0; i < n_doc; i++, d = d->next) {
        if (rerank_tokens(srv->model, tmpl, q->valuestring, d->valuestring, &toks[i], &lens[i]) != 0) {
            oxl_api_fail(&e, OXL_E_OUT_OF_MEMORY, NULL, "cannot tokenize document %d", i);
            goto fail;
        }
        if (lens[i] == 0) {
            BAD(&e, "documents", "document %d: the query and document give no token", i);
            goto fail;
        }
        if (lens[i] > n_ctx) {
            oxl_api_fail(&e, OXL_E_CONTEXT_EXCEEDED, "documents",
                         "This model's maximum context length is %d tokens per slot, however the query and document "
                         "%d resulted in %d tokens",
                         n_ctx, i, lens[i]);
            goto fail;
        }
        total += (size_t)lens[i];
    }
    oxl_job *j = oxl_req_run_embd(srv, rq, toks, lens, n_doc, total, n_embd, &e);
    if (!j) {
        goto fail;
    }
    for (int32_t i = 0; i < n_doc; i++) {
        rk[i].index = i;
        rk[i].score = (double)j->embd[(size_t)i * (size_t)n_embd];
    }
    oxl_job_release(srv->sched, j);
    qsort(rk, (size_t)n_doc, sizeof *rk, by_score);
    const int32_t n_out = top_n < n_doc ? (int32_t)top_n : n_doc;
    cJSON *results = cJSON_CreateArray();
    for (int32_t i = 0; i < n_out; i++) {
        cJSON *r = cJSON_CreateObject();
        cJSON_AddNumberToObject(r, "index", rk[i].index);
        cJSON_AddNumberToObject(r, tei ? "score" : "relevance_score", rk[i].score);
        if (return_text) {
            cJSON_AddStringToObject(r, "text", cJSON_GetArrayItem(docs, rk[i].index)->valuestring);
        }
        cJSON_AddItemToArray(results, r);
    }
    if (tei) {
        oxl_reply_json(out, 200, results);
        goto done;
    }
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "model", model);
    cJSON_AddStringToObject(o, "object", "list");
    cJSON *u = cJSON_AddObjectToObject(o, "usage");
    cJSON_AddNumberToObject(u, "prompt_tokens", (double)total);
    cJSON_AddNumberToObject(u, "total_tokens", (double)total);
    cJSON_AddItemToObject(o, "results", results);
    oxl_reply_json(out, 200, o);
    goto done;
fail:
    oxl_reply_error(out, &e);
done:
    for (int32_t i = 0; toks && i < n_doc; i++) {
        free(toks[i]);
    }
    free(toks);
    free(lens);
    free(rk);
}
