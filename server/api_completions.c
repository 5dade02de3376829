/* POST /v1/completions: text or token-id prompts, text_completion objects. */
#include "generate.h"
#include "json_read.h"
#include "routes.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static cJSON *completion_object(oxl_srv *srv, const api_req *r, oxl_job **jobs, int n_jobs, char **prompts,
                                const char *msg_id) {
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "id", r->id);
    cJSON_AddStringToObject(o, "object", "text_completion");
    cJSON_AddNumberToObject(o, "created", (double)r->created);
    cJSON_AddStringToObject(o, "model", srv->model_id);
    cJSON *choices = cJSON_AddArrayToObject(o, "choices");
    for (int p = 0; p < n_jobs; p++) {
        for (int i = 0; i < jobs[p]->n_choices; i++) {
            const oxl_choice_out *c = &jobs[p]->choice[i];
            size_t plen = r->echo && prompts[p] ? strlen(prompts[p]) : 0;
            char *text = malloc(plen + c->len + 1);
            if (text) {
                memcpy(text, prompts[p] ? prompts[p] : "", plen);
                memcpy(text + plen, c->text ? c->text : "", c->len);
            }
            cJSON *ch = cJSON_CreateObject();
            cJSON_AddItemToObject(ch, "text", oxl_json_text(text ? text : "", text ? plen + c->len : 0));
            free(text);
            cJSON_AddNumberToObject(ch, "index", p * r->n + i);
            if (r->logprobs) {
                cJSON_AddItemToObject(ch, "logprobs", oxl_completion_logprobs(srv, c, 0, c->n_lp, plen));
            } else {
                cJSON_AddNullToObject(ch, "logprobs");
            }
            cJSON_AddStringToObject(ch, "finish_reason", c->finish ? c->finish : "stop");
            cJSON_AddItemToArray(choices, ch);
        }
    }
    cJSON_AddItemToObject(o, "usage", oxl_req_usage(jobs, n_jobs, API_COMPLETION));
    cJSON_AddStringToObject(o, "system_fingerprint", "oxillama");
    return o;
}

void oxl_api_completions(oxl_srv *srv, const oxl_request *rq, oxl_reply *out) {
    api_req r = {.kind = API_COMPLETION, .object = completion_object, .produce = oxl_produce_chunks};
    oxl_api_error e = {0};
    const cJSON *b = rq->json;
    int n_prompts = 0;
    oxl_token **toks = NULL;
    int32_t *n_toks = NULL;
    char **prompts = NULL;
    if (oxl_req_parse_common(srv, b, &r, &e) < 0 || oxl_json_bool(b, "echo", &r.echo, &e) < 0) {
        goto fail;
    }
    if (!oxl_json_field(b, "max_tokens") && !oxl_json_field(b, "n_predict") &&
        !oxl_json_field(b, "max_completion_tokens")) {
        r.gen.max_tokens = 16; /* the OpenAI default of this route */
    }
    long long k = 0;
    int rc = oxl_json_int(b, "logprobs", 0, 5, &k, &e);
    if (rc < 0) {
        goto fail;
    }
    r.logprobs = rc == 1;
    r.gen.top_logprobs = rc ? (int32_t)k : -1;
    /* llama-server's n_probs: as logprobs (its alias there) */
    if ((rc = oxl_json_int(b, "n_probs", 0, OXL_SRV_MAX_TOP_LOGPROBS, &k, &e)) < 0) {
        goto fail;
    }
    if (rc && k > 0) {
        r.logprobs = true;
        r.gen.top_logprobs = (int32_t)k;
    }
    const char *suffix = NULL;
    if (oxl_json_str(b, "suffix", &suffix, &e) < 0) {
        goto fail;
    }
    if (suffix && *suffix) {
        if (oxl_model_meta_val_str(srv->model, "tokenizer.ggml.fim_pre_token_id", NULL, 0) < 0) {
            BAD(&e, "suffix", "'suffix': model '%s' has no fill-in-the-middle tokens (tokenizer.ggml.fim_pre_token_id)",
                srv->model_id);
        } else {
            BAD(&e, "suffix", "'suffix': fill-in-the-middle prompts are not implemented by this server yet");
        }
        goto fail;
    }
    const cJSON *p = oxl_json_field(b, "prompt");
    if (!p) {
        BAD(&e, "prompt", "'prompt' is required");
        goto fail;
    }
    /* a string, a list of strings, a list of token ids, or a list of such lists */
    bool single = cJSON_IsString(p) || (cJSON_IsArray(p) && p->child && cJSON_IsNumber(p->child));
    if (!single && !cJSON_IsArray(p)) {
        BAD_TYPE(&e, "prompt", "'prompt': expected a string, a list of strings or a list of token ids");
        goto fail;
    }
    n_prompts = single ? 1 : cJSON_GetArraySize(p);
    if (n_prompts == 0 || n_prompts > srv->cfg->queue_size) {
        BAD(&e, "prompt", "'prompt': %d prompts; between 1 and %d are accepted (--queue-size)", n_prompts,
            srv->cfg->queue_size);
        n_prompts = 0;
        goto fail;
    }
    toks = calloc((size_t)n_prompts, sizeof *toks);
    n_toks = calloc((size_t)n_prompts, sizeof *n_toks);
    prompts = calloc((size_t)n_prompts, sizeof *prompts);
    if (!toks || !n_toks || !prompts) {
        oxl_api_fail(&e, OXL_E_OUT_OF_MEMORY, NULL, "out of memory");
        goto fail;
    }
    const cJSON *item = single ? p : p->child;
    for (int i = 0; i < n_prompts; i++, item = item->next) {
        char param[32];
        snprintf(param, sizeof param, single ? "prompt" : "prompt[%d]", i);
        if (cJSON_IsString(item)) {
            prompts[i] = strdup(item->valuestring);
            if (oxl_req_tokenize(srv, item->valuestring, strlen(item->valuestring), &toks[i], &n_toks[i], param, &e) <
                0) {
                goto fail;
            }
        } else if (cJSON_IsArray(item)) {
            if (oxl_req_token_list(srv, item, param, &toks[i], &n_toks[i], &e) < 0) {
                goto fail;
            }
            size_t cap = 1, len = 0;
            char buf[256];
            for (int32_t t = 0; t < n_toks[i]; t++) {
                cap += (size_t)oxl_tok_piece(srv->model, toks[i][t], buf, sizeof buf);
            }
            prompts[i] = malloc(cap);
            for (int32_t t = 0; prompts[i] && t < n_toks[i]; t++) {
                int n = oxl_tok_piece(srv->model, toks[i][t], buf, sizeof buf);
                memcpy(prompts[i] + len, buf, (size_t)n);
                len += (size_t)n;
            }
            if (prompts[i]) {
                prompts[i][len] = 0;
            }
        } else {
            BAD_TYPE(&e, param, "'%s': expected a string or a list of token ids", param);
            goto fail;
        }
        if (oxl_req_check_context(srv, n_toks[i], param, &e) < 0) {
            goto fail;
        }
    }
    oxl_req_run(srv, rq, &r, toks, n_toks, prompts, n_prompts, out);
    prompts = NULL;
    goto done;
fail:
    oxl_reply_error(out, &e);
done:
    for (int i = 0; i < n_prompts; i++) {
        free(toks ? toks[i] : NULL);
        free(prompts ? prompts[i] : NULL);
    }
    free(toks);
    free(n_toks);
    free(prompts);
    oxl_gen_params_free(&r.gen);
}
