/* Request fields, prompts, jobs, usage, logprobs and running a request (generate.h). */
#include "generate.h"
#include "json_read.h"
#include "sse.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define WAIT_MS 50

int oxl_tok_piece(const oxl_model *m, oxl_token t, char *buf, int cap) {
    int n = oxl_token_to_piece(m, t, buf, cap, true);
    return n < 0 ? 0 : n;
}

int oxl_req_check_model(oxl_srv *srv, const cJSON *b, oxl_api_error *e) {
    const char *m = NULL;
    if (oxl_json_str(b, "model", &m, e) < 0) {
        return -1;
    }
    (void)srv; /* one model: any name is accepted, as llama-server does with a single model */
    return 0;
}

static int parse_stop(const cJSON *b, oxl_gen_params *g, oxl_api_error *e) {
    const cJSON *v = oxl_json_field(b, "stop");
    if (!v) {
        return 0;
    }
    if (cJSON_IsString(v)) {
        g->stop[g->n_stop++] = strdup(v->valuestring);
        return 0;
    }
    if (!cJSON_IsArray(v)) {
        return BAD_TYPE(e, "stop", "'stop': expected a string or a list of strings");
    }
    if (cJSON_GetArraySize(v) > OXL_SRV_MAX_STOP) {
        return BAD(e, "stop", "'stop': at most %d sequences", OXL_SRV_MAX_STOP);
    }
    int i = 0;
    for (const cJSON *s = v->child; s; s = s->next, i++) {
        if (!cJSON_IsString(s)) {
            return BAD_TYPE(e, "stop", "'stop[%d]': expected a string", i);
        }
        if (s->valuestring[0]) {
            g->stop[g->n_stop++] = strdup(s->valuestring);
        }
    }
    return 0;
}

/* Fields common to the generating routes. Unspecified sampling uses llama.cpp's server defaults. */
int oxl_req_parse_common(oxl_srv *srv, const cJSON *b, api_req *r, oxl_api_error *e) {
    oxl_gen_params *g = &r->gen;
    g->sampling = oxl_sampler_default_params();
    g->max_tokens = -1;
    g->top_logprobs = -1;
    g->rb_tokens = -1;
    r->n = 1;
    oxl_random_id(r->kind == API_CHAT         ? "chatcmpl-"
                  : r->kind == API_COMPLETION ? "cmpl-"
                                              : "resp_",
                  r->id, sizeof r->id);
    r->created = time(NULL);
    long long k;
    int rc;
    if (oxl_req_check_fields(b, r->kind, e) < 0 || oxl_req_check_model(srv, b, e) < 0) {
        return -1;
    }
    if (!oxl_model_has_decoder(srv->model)) {
        return oxl_api_fail(e, OXL_E_MODEL_NOT_SUPPORTED, "model",
                            "'%s' is an embedding model (no output head): it serves /v1/embeddings only, not "
                            "text generation",
                            srv->model_id);
    }
    if (oxl_req_parse_sampling(srv, b, g, e) < 0 || oxl_req_parse_adapters(srv, b, g, e) < 0) {
        return -1;
    }
    if ((rc = oxl_json_int(b, "n_predict", -1, 1e9, &k, e)) < 0) {
        return -1;
    }
    if (rc && k == 0) {
        return BAD(e, "n_predict", "'n_predict': 0 (evaluate the prompt only) is not supported; use -1 or a count");
    }
    if (rc) {
        g->max_tokens = (int32_t)k;
    }
    const char *max_names[] = {"max_tokens", "max_completion_tokens", "max_output_tokens"};
    for (int i = 0; i < 3; i++) {
        if ((rc = oxl_json_int(b, max_names[i], 1, 1e9, &k, e)) < 0) {
            return -1;
        }
        if (rc) {
            g->max_tokens = (int32_t)k;
        }
    }
    if ((rc = oxl_json_int(b, "n", 1, OXL_SRV_MAX_CHOICES, &k, e)) < 0) {
        return -1;
    }
    if (rc) {
        if (k > oxl_ctx_n_seq_max(srv->ctx)) {
            return BAD(e, "n", "'n': %lld choices need %lld slots; this server has %d (-np)", k, k,
                       oxl_ctx_n_seq_max(srv->ctx));
        }
        r->n = (int)k;
    }
    if (oxl_json_bool(b, "stream", &r->stream, e) < 0) {
        return -1;
    }
    const cJSON *so = oxl_json_field(b, "stream_options");
    if (so) {
        if (!r->stream) {
            return BAD(e, "stream_options", "'stream_options' is only allowed when 'stream' is true");
        }
        if (!cJSON_IsObject(so)) {
            return BAD_TYPE(e, "stream_options", "'stream_options': expected an object");
        }
        if (oxl_json_bool(so, "include_usage", &r->include_usage, e) < 0) {
            snprintf(e->param, sizeof e->param, "stream_options.include_usage");
            return -1;
        }
    }
    const char *user = NULL;
    if (oxl_json_str(b, "user", &user, e) < 0 || parse_stop(b, g, e) < 0) {
        return -1;
    }
    if (oxl_req_parse_structured(srv, b, g, e) < 0) {
        return -1;
    }
    return 0;
}

int oxl_req_tokenize(oxl_srv *srv, const char *text, size_t len, oxl_token **out, int32_t *n, const char *param,
                     oxl_api_error *e) {
    int32_t need = oxl_tokenize(srv->model, text, len, NULL, 0, true, true);
    if (need == INT32_MIN) {
        return BAD(e, param, "'%s': cannot be tokenized", param);
    }
    need = need < 0 ? -need : need;
    *out = malloc(sizeof(oxl_token) * (size_t)(need + 1));
    if (!*out) {
        return oxl_api_fail(e, OXL_E_OUT_OF_MEMORY, NULL, "out of memory");
    }
    *n = oxl_tokenize(srv->model, text, len, *out, need, true, true);
    if (*n != need) {
        return BAD(e, param, "'%s': cannot be tokenized", param);
    }
    return 0;
}

int oxl_req_check_context(oxl_srv *srv, int32_t n_prompt, const char *param, oxl_api_error *e) {
    int32_t n_ctx = oxl_sched_n_ctx_slot(srv->sched);
    if (n_prompt == 0) {
        return BAD(e, param, "'%s': the prompt is empty and the model adds no BOS token", param);
    }
    if (n_prompt >= n_ctx) {
        e->n_prompt_tokens = n_prompt;
        e->n_ctx = n_ctx;
        return oxl_api_fail(e, OXL_E_CONTEXT_EXCEEDED, param,
                            "This model's maximum context length is %d tokens per slot (-c %d over -np %d slots), "
                            "and at least 1 must remain for the completion. However, your %s resulted in %d tokens.",
                            n_ctx, srv->cfg->n_ctx ? srv->cfg->n_ctx : n_ctx * oxl_ctx_n_seq_max(srv->ctx),
                            oxl_ctx_n_seq_max(srv->ctx), strcmp(param, "messages") ? "prompt" : "messages", n_prompt);
    }
    return 0;
}

/* Turns chat messages into the template's input: content parts joined into one string. */
/* The URL of an image part (chat's image_url object, the Responses API's image_url string), or NULL
 * when p is no image part; *bad set when it is one without a string URL. */
static const char *image_part_url(const cJSON *p, const char *type, bool *bad) {
    *bad = false;
    if (strcmp(type, "image_url") && strcmp(type, "input_image")) {
        return NULL;
    }
    const cJSON *iu = cJSON_GetObjectItemCaseSensitive(p, "image_url");
    if (cJSON_IsObject(iu)) {
        iu = cJSON_GetObjectItemCaseSensitive(iu, "url");
    }
    *bad = !cJSON_IsString(iu);
    return *bad ? type : iu->valuestring;
}

cJSON *oxl_req_normalize_messages(const cJSON *msgs, const char *param, oxl_media *media, oxl_api_error *e) {
    if (!cJSON_IsArray(msgs) || cJSON_GetArraySize(msgs) == 0) {
        BAD_TYPE(e, param, "'%s': expected a non-empty list of messages", param);
        return NULL;
    }
    static const char *roles[] = {"system", "developer", "user", "assistant", "tool"};
    cJSON *out = cJSON_CreateArray();
    int i = 0;
    for (const cJSON *m = msgs->child; m; m = m->next, i++) {
        char where[64];
        snprintf(where, sizeof where, "%s[%d]", param, i);
        const char *role = NULL;
        if (!cJSON_IsObject(m) || oxl_json_str(m, "role", &role, e) < 0 || !role) {
            BAD_TYPE(e, where, "'%s': expected an object with a string 'role'", where);
            cJSON_Delete(out);
            return NULL;
        }
        bool known = false;
        for (size_t r = 0; r < sizeof roles / sizeof roles[0]; r++) {
            known |= !strcmp(role, roles[r]);
        }
        if (!known) {
            BAD(e, where, "'%s.role': '%.40s' is not one of system, developer, user, assistant, tool", where, role);
            cJSON_Delete(out);
            return NULL;
        }
        cJSON *nm = cJSON_Duplicate(m, true);
        const cJSON *c = oxl_json_field(m, "content");
        if (c && cJSON_IsArray(c)) {
            size_t cap = 1, len = 0;
            for (const cJSON *p = c->child; p; p = p->next) {
                const cJSON *t = cJSON_GetObjectItemCaseSensitive(p, "text");
                cap += cJSON_IsString(t) ? strlen(t->valuestring) + 1 : strlen(OXL_MEDIA_MARKER) + 1;
            }
            char *text = malloc(cap);
            int pi = 0;
            for (const cJSON *p = c->child; p && text; p = p->next, pi++) {
                const char *type = NULL, *t = NULL;
                oxl_api_error ign;
                oxl_json_str(p, "type", &type, &ign);
                oxl_json_str(p, "text", &t, &ign);
                bool bad_url = false;
                const char *url = type ? image_part_url(p, type, &bad_url) : NULL;
                if (url) {
                    char w2[128];
                    snprintf(w2, sizeof w2, "%s.content[%d].image_url%s", where, pi,
                             strcmp(type, "image_url") ? "" : ".url");
                    int rc = 0;
                    if (!media) {
                        rc = BAD(e, w2,
                                 "'%s': image parts need the model's vision projector: start the server with "
                                 "--mmproj FILE",
                                 w2);
                    } else if (bad_url) {
                        rc = BAD_TYPE(e, w2, "'%s': expected a string URL", w2);
                    } else {
                        rc = oxl_media_add_url(media, url, w2, e);
                    }
                    if (rc < 0) {
                        free(text);
                        cJSON_Delete(nm);
                        cJSON_Delete(out);
                        return NULL;
                    }
                    t = OXL_MEDIA_MARKER;
                } else if (!type ||
                           (strcmp(type, "text") && strcmp(type, "input_text") && strcmp(type, "output_text")) || !t) {
                    char w2[96];
                    snprintf(w2, sizeof w2, "%s.content[%d]", where, pi);
                    BAD(e, w2,
                        "'%s': only text parts ({\"type\": \"text\", \"text\": ...}) are supported; got type '%.40s'",
                        w2, type ? type : "?");
                    free(text);
                    cJSON_Delete(nm);
                    cJSON_Delete(out);
                    return NULL;
                }
                text[len] = '\n'; /* llama.cpp joins text parts with newlines (common/chat.cpp) */
                len += len > 0;
                memcpy(text + len, t, strlen(t));
                len += strlen(t);
            }
            if (!text) {
                cJSON_Delete(nm);
                cJSON_Delete(out);
                oxl_api_fail(e, OXL_E_OUT_OF_MEMORY, NULL, "out of memory");
                return NULL;
            }
            text[len] = 0;
            cJSON_ReplaceItemInObjectCaseSensitive(nm, "content", cJSON_CreateString(text));
            free(text);
        } else if (c && !cJSON_IsString(c)) {
            BAD_TYPE(e, where, "'%s.content': expected a string or a list of content parts", where);
            cJSON_Delete(nm);
            cJSON_Delete(out);
            return NULL;
        } else if (!c) {
            cJSON_DeleteItemFromObjectCaseSensitive(nm, "content");
            cJSON_AddStringToObject(nm, "content", "");
        }
        cJSON_AddItemToArray(out, nm);
    }
    return out;
}

int oxl_req_template_kwargs(oxl_srv *srv, const cJSON *b, char **out, oxl_api_error *e) {
    *out = NULL;
    const cJSON *kw = b ? oxl_json_field(b, "chat_template_kwargs") : NULL;
    if (kw && !cJSON_IsObject(kw)) {
        return BAD_TYPE(e, "chat_template_kwargs", "'chat_template_kwargs': expected an object");
    }
    const cJSON *think = kw ? cJSON_GetObjectItemCaseSensitive(kw, "enable_thinking") : NULL;
    if (cJSON_IsString(think)) {
        return BAD_TYPE(e, "chat_template_kwargs",
                        "'chat_template_kwargs': invalid type for \"enable_thinking\" (expected boolean, got string)");
    }
    /* llama-server: enable_thinking = --reasoning-budget != 0 && the template reacts to it, unless
     * the request's kwargs set it to a boolean; the template always gets it */
    const bool thinking =
        cJSON_IsBool(think) ? cJSON_IsTrue(think) : srv->cfg->reasoning_budget != 0 && srv->thinking_template;
    cJSON *all = kw ? cJSON_Duplicate(kw, true) : cJSON_CreateObject();
    if (all) {
        cJSON_DeleteItemFromObjectCaseSensitive(all, "enable_thinking");
        cJSON_AddBoolToObject(all, "enable_thinking", thinking);
    }
    *out = all ? cJSON_PrintUnformatted(all) : NULL;
    cJSON_Delete(all);
    return *out ? 0 : oxl_api_fail(e, OXL_E_OUT_OF_MEMORY, NULL, "out of memory");
}

void oxl_req_budget_defaults(oxl_srv *srv, const cJSON *body, const char *prompt, oxl_gen_params *g) {
    const char *think_start = NULL, *think_end = NULL;
    bool think_open = false;
    if (oxl_chat_thinking_tags(srv->model, srv->cfg->chat_template, prompt, &think_start, &think_end, &think_open) !=
        1) {
        return;
    }
    const char *msg = srv->cfg->reasoning_budget_message ? srv->cfg->reasoning_budget_message : "";
    if (!oxl_json_field(body, "reasoning_budget_tokens")) {
        g->rb_tokens = srv->cfg->reasoning_budget;
    }
    if (!oxl_json_field(body, "reasoning_budget_start_tag")) {
        snprintf(g->rb_start, sizeof g->rb_start, "%s", think_start);
    }
    if (!oxl_json_field(body, "reasoning_budget_end_tag")) {
        snprintf(g->rb_end, sizeof g->rb_end, "%s", think_end);
    }
    if (!oxl_json_field(body, "reasoning_budget_message") && strlen(msg) < sizeof g->rb_message) {
        snprintf(g->rb_message, sizeof g->rb_message, "%s", msg);
    }
    if (!oxl_json_field(body, "reasoning_budget_arm_immediately")) {
        g->rb_arm = think_open;
    }
}

int oxl_req_chat_prompt(oxl_srv *srv, const cJSON *msgs, const cJSON *tools, const char *kwargs, const cJSON *body,
                        oxl_gen_params *g, oxl_media *media, oxl_token **toks, int32_t *n, const char *param,
                        oxl_api_error *e) {
    char *text = NULL;
    oxl_error err = {0};
    char *msgs_json = cJSON_PrintUnformatted(msgs);
    char *tools_json = tools ? cJSON_PrintUnformatted(tools) : NULL;
    if (!msgs_json || (tools && !tools_json)) {
        free(msgs_json);
        free(tools_json);
        return oxl_api_fail(e, OXL_E_OUT_OF_MEMORY, NULL, "out of memory");
    }
    int rc_t = oxl_chat_apply_template_kw(srv->model, srv->cfg->chat_template, msgs_json, tools_json, true, kwargs,
                                          &text, &err);
    free(msgs_json);
    free(tools_json);
    if (rc_t != 0) {
        return BAD(e, param, "'%s': the chat template failed: %s", param, err.msg);
    }
    if (g) {
        oxl_req_budget_defaults(srv, body, text, g);
    }
    int rc = media && media->n > 0 ? oxl_media_tokenize(srv, text, media, toks, n, param, e)
                                   : oxl_req_tokenize(srv, text, strlen(text), toks, n, param, e);
    free(text);
    return rc;
}

/* A prompt given as token ids. */
int oxl_req_token_list(oxl_srv *srv, const cJSON *a, const char *param, oxl_token **out, int32_t *n, oxl_api_error *e) {
    int32_t cnt = cJSON_GetArraySize(a), n_vocab = oxl_model_n_vocab(srv->model);
    *out = malloc(sizeof(oxl_token) * (size_t)(cnt + 1));
    if (!*out) {
        return oxl_api_fail(e, OXL_E_OUT_OF_MEMORY, NULL, "out of memory");
    }
    int32_t i = 0;
    for (const cJSON *t = a->child; t; t = t->next, i++) {
        if (!cJSON_IsNumber(t) || t->valuedouble != floor(t->valuedouble) || t->valuedouble < 0 ||
            t->valuedouble >= n_vocab) {
            return BAD(e, param, "'%s[%d]': expected a token id in [0, %d)", param, i, n_vocab);
        }
        (*out)[i] = (oxl_token)t->valuedouble;
    }
    *n = cnt;
    return 0;
}

int oxl_req_submit(oxl_srv *srv, oxl_job *j, oxl_api_error *e) {
    if (oxl_sched_submit(srv->sched, j) != 0) {
        atomic_fetch_add(&srv->n_rejected_queue, 1);
        const bool down = atomic_load(&srv->stopping);
        oxl_api_fail(e, down ? OXL_E_SHUTTING_DOWN : OXL_E_OVERLOADED, NULL, "%s",
                     down ? "The server is shutting down"
                          : "The server is overloaded: the request queue is full; retry later");
        e->retry_after = 1;
        return -1;
    }
    return 0;
}

bool oxl_req_job_done(const oxl_job *j) { return j->n_done == j->n_choices; }

/* Blocks until every job is done; -1 (jobs cancelled) when the client disconnects first. */
int oxl_req_wait(oxl_srv *srv, oxl_job **jobs, int n, int fd) {
    oxl_sched_lock(srv->sched);
    for (;;) {
        int i = 0;
        while (i < n && oxl_req_job_done(jobs[i])) {
            i++;
        }
        if (i == n) {
            break;
        }
        oxl_sched_wait(srv->sched, jobs[i], WAIT_MS);
        if (oxl_client_gone(fd)) {
            oxl_sched_unlock(srv->sched);
            for (int k = 0; k < n; k++) {
                oxl_job_cancel(srv->sched, jobs[k]);
            }
            atomic_fetch_add(&srv->n_cancelled, 1);
            return -1;
        }
    }
    oxl_sched_unlock(srv->sched);
    return 0;
}

void oxl_req_release(oxl_srv *srv, oxl_job **jobs, int n) {
    for (int i = 0; i < n; i++) {
        if (jobs[i]) {
            oxl_job_release(srv->sched, jobs[i]);
        }
    }
    free(jobs);
}

cJSON *oxl_req_usage(oxl_job **jobs, int n_jobs, api_kind kind) {
    long long in = 0, out = 0, cached = 0;
    for (int i = 0; i < n_jobs; i++) {
        in += jobs[i]->n_prompt;
        cached += jobs[i]->n_cached;
        for (int c = 0; c < jobs[i]->n_choices; c++) {
            out += jobs[i]->choice[c].n_gen;
        }
    }
    cJSON *u = cJSON_CreateObject();
    cJSON_AddNumberToObject(u, kind == API_RESPONSES ? "input_tokens" : "prompt_tokens", (double)in);
    cJSON_AddNumberToObject(u, kind == API_RESPONSES ? "output_tokens" : "completion_tokens", (double)out);
    cJSON_AddNumberToObject(u, "total_tokens", (double)(in + out));
    cJSON *d = cJSON_AddObjectToObject(u, kind == API_RESPONSES ? "input_tokens_details" : "prompt_tokens_details");
    cJSON_AddNumberToObject(d, "cached_tokens", (double)cached);
    return u;
}

/* The first job error, as an API error (503 for shutdown, 500 otherwise). */
bool oxl_req_job_error(oxl_job **jobs, int n, oxl_api_error *e) {
    for (int i = 0; i < n; i++) {
        if (jobs[i]->error[0]) {
            bool down = strstr(jobs[i]->error, "shutting down") != NULL;
            oxl_api_fail(e, down ? OXL_E_SHUTTING_DOWN : OXL_E_GENERATION_FAILED, NULL, "%s", jobs[i]->error);
            return true;
        }
    }
    return false;
}

/* Chat shape: [{token, logprob, bytes, top_logprobs: [{token, logprob, bytes}]}]. */
cJSON *oxl_chat_logprobs(oxl_srv *srv, const oxl_choice_out *c, int32_t from, int32_t to) {
    cJSON *arr = cJSON_CreateArray();
    char buf[256];
    for (int32_t i = from; i < to; i++) {
        const oxl_tok_logprob *r = &c->lp[i];
        cJSON *o = cJSON_CreateObject();
        int n = oxl_tok_piece(srv->model, r->tok, buf, sizeof buf);
        cJSON_AddItemToObject(o, "token", oxl_json_text(buf, (size_t)n));
        cJSON_AddNumberToObject(o, "logprob", r->logprob);
        cJSON_AddItemToObject(o, "bytes", oxl_json_bytes(buf, n));
        cJSON *top = cJSON_AddArrayToObject(o, "top_logprobs");
        for (int k = 0; k < r->n_top; k++) {
            cJSON *t = cJSON_CreateObject();
            n = oxl_tok_piece(srv->model, r->top_tok[k], buf, sizeof buf);
            cJSON_AddItemToObject(t, "token", oxl_json_text(buf, (size_t)n));
            cJSON_AddNumberToObject(t, "logprob", r->top_lp[k]);
            cJSON_AddItemToObject(t, "bytes", oxl_json_bytes(buf, n));
            cJSON_AddItemToArray(top, t);
        }
        cJSON_AddItemToArray(arr, o);
    }
    return arr;
}

/* Completions shape: {tokens, token_logprobs, top_logprobs: [{piece: logprob}], text_offset}. */
cJSON *oxl_completion_logprobs(oxl_srv *srv, const oxl_choice_out *c, int32_t from, int32_t to, size_t offset) {
    cJSON *o = cJSON_CreateObject();
    cJSON *toks = cJSON_AddArrayToObject(o, "tokens");
    cJSON *lps = cJSON_AddArrayToObject(o, "token_logprobs");
    cJSON *tops = cJSON_AddArrayToObject(o, "top_logprobs");
    cJSON *offs = cJSON_AddArrayToObject(o, "text_offset");
    char buf[256];
    for (int32_t i = from; i < to; i++) {
        const oxl_tok_logprob *r = &c->lp[i];
        int n = oxl_tok_piece(srv->model, r->tok, buf, sizeof buf);
        cJSON_AddItemToArray(toks, oxl_json_text(buf, (size_t)n));
        cJSON_AddItemToArray(lps, cJSON_CreateNumber(r->logprob));
        cJSON_AddItemToArray(offs, cJSON_CreateNumber((double)offset));
        offset += (size_t)n;
        cJSON *t = cJSON_CreateObject();
        for (int k = 0; k < r->n_top; k++) {
            n = oxl_tok_piece(srv->model, r->top_tok[k], buf, sizeof buf);
            buf[n] = 0;
            if (!cJSON_GetObjectItemCaseSensitive(t, buf)) {
                cJSON_AddNumberToObject(t, buf, r->top_lp[k]);
            }
        }
        cJSON_AddItemToArray(tops, t);
    }
    return o;
}

static void stream_state_release(void *state);

static void stream_state_free(stream_state *ss) {
    if (!ss) {
        return;
    }
    for (int i = 0; i < ss->n_prompts; i++) {
        free(ss->prompts[i]);
    }
    free(ss->prompts);
    for (int i = 0; ss->cp && i < ss->n_cp; i++) {
        cJSON_Delete(ss->cp[i].calls);
    }
    free(ss->cp);
    oxl_gen_params_free(&ss->r.gen);
    free(ss->r.tools_json);
    free(ss);
}

static void free_prompts(char **prompts, int n) {
    for (int p = 0; prompts && p < n; p++) {
        free(prompts[p]);
    }
    free(prompts);
}

/* Submits one job per prompt (taking the token arrays and prompts); the reply is a stream (which
 * takes r's parameters) or the finished object. */
void oxl_req_run(oxl_srv *srv, const oxl_request *rq, api_req *r, oxl_token **toks, int32_t *n_toks, char **prompts,
                 int n_prompts, oxl_reply *out) {
    oxl_api_error e = {0};
    void (*reply_error)(oxl_reply *, const oxl_api_error *) = r->reply_error ? r->reply_error : oxl_reply_error;
    oxl_job **jobs = calloc((size_t)n_prompts, sizeof *jobs);
    int n_jobs = 0;
    bool ok = jobs != NULL;
    for (int p = 0; ok && p < n_prompts; p++) {
        oxl_gen_params g = r->gen;
        /* each job owns a copy of the parameters' arrays */
        memset(g.stop, 0, sizeof g.stop);
        for (int k = 0; k < g.n_stop; k++) {
            g.stop[k] = strdup(r->gen.stop[k]);
        }
        memset(g.breakers, 0, sizeof g.breakers);
        bool copied = true;
        g.grammar = NULL;
        if (r->gen.grammar) {
            copied &= (g.grammar = strdup(r->gen.grammar)) != NULL;
        }
        g.trigger_patterns = NULL;
        g.trigger_tokens = NULL;
        if (r->gen.trigger_patterns) {
            const char *tp = r->gen.trigger_patterns;
            size_t n = 0;
            for (int32_t k = 0; k < g.n_trigger_patterns; k++) {
                n += strlen(tp + n) + 1;
            }
            copied &= (g.trigger_patterns = malloc(n)) != NULL;
            if (g.trigger_patterns) {
                memcpy(g.trigger_patterns, tp, n);
            }
        }
        g.preserved = NULL;
        if (r->gen.n_preserved) {
            size_t n = sizeof(oxl_token) * (size_t)g.n_preserved;
            copied &= (g.preserved = malloc(n)) != NULL;
            if (g.preserved) {
                memcpy(g.preserved, r->gen.preserved, n);
            }
        }
        if (r->gen.n_trigger_tokens) {
            size_t n = sizeof(oxl_token) * (size_t)g.n_trigger_tokens;
            copied &= (g.trigger_tokens = malloc(n)) != NULL;
            if (g.trigger_tokens) {
                memcpy(g.trigger_tokens, r->gen.trigger_tokens, n);
            }
        }
        for (int k = 0; k < g.n_breakers; k++) {
            copied &= (g.breakers[k] = strdup(r->gen.breakers[k])) != NULL;
        }
        g.cap_bias = g.n_bias;
        g.bias_tok = g.n_bias ? malloc(sizeof(oxl_token) * (size_t)g.n_bias) : NULL;
        g.bias_val = g.n_bias ? malloc(sizeof(float) * (size_t)g.n_bias) : NULL;
        if (g.n_bias && g.bias_tok && g.bias_val) {
            memcpy(g.bias_tok, r->gen.bias_tok, sizeof(oxl_token) * (size_t)g.n_bias);
            memcpy(g.bias_val, r->gen.bias_val, sizeof(float) * (size_t)g.n_bias);
        }
        copied &= !g.n_bias || (g.bias_tok && g.bias_val);
        oxl_job *j = copied ? oxl_job_new(toks[p], n_toks[p], r->n, &g) : NULL;
        if (!j) {
            oxl_gen_params_free(&g);
            ok = false;
            oxl_api_fail(&e, OXL_E_OUT_OF_MEMORY, NULL, "out of memory");
            break;
        }
        toks[p] = NULL;
        if (r->media && n_prompts == 1) {
            oxl_media_give(r->media, j);
        }
        if (oxl_req_submit(srv, j, &e) != 0) {
            oxl_job_release(NULL, j);
            ok = false;
            break;
        }
        jobs[n_jobs++] = j;
    }
    if (!ok) {
        for (int p = 0; p < n_jobs; p++) {
            oxl_job_cancel(srv->sched, jobs[p]);
        }
        oxl_req_release(srv, jobs, n_jobs);
        free_prompts(prompts, n_prompts);
        reply_error(out, &e);
        return;
    }
    if (r->stream) {
        oxl_stream *st = calloc(1, sizeof *st);
        stream_state *ss = calloc(1, sizeof *ss);
        choice_progress *cp = calloc((size_t)(n_prompts * r->n), sizeof *cp);
        if (!st || !ss || !cp) {
            free(st);
            free(ss);
            free(cp);
            for (int p = 0; p < n_jobs; p++) {
                oxl_job_cancel(srv->sched, jobs[p]);
            }
            oxl_req_release(srv, jobs, n_jobs);
            free_prompts(prompts, n_prompts);
            oxl_api_fail(&e, OXL_E_OUT_OF_MEMORY, NULL, "out of memory");
            reply_error(out, &e);
            return;
        }
        ss->r = *r;
        memset(&r->gen, 0, sizeof r->gen);
        r->tools_json = NULL;
        ss->prompts = prompts;
        ss->n_prompts = prompts ? n_prompts : 0;
        ss->cp = cp;
        ss->n_cp = n_prompts * r->n;
        oxl_random_id("msg_", ss->msg_id, sizeof ss->msg_id);
        st->srv = srv;
        st->log = rq->log;
        oxl_req_log_ref(st->log);
        st->fd = rq->fd;
        st->jobs = jobs;
        st->n_jobs = n_jobs;
        st->state = ss;
        st->free_state = stream_state_release;
        st->produce = r->produce;
        out->status = 200;
        out->stream = st;
        return;
    }
    const int waited = oxl_req_wait(srv, jobs, n_jobs, rq->fd);
    oxl_req_log_jobs(rq->log, jobs, n_jobs);
    if (waited != 0) {
        oxl_req_release(srv, jobs, n_jobs);
        oxl_api_fail(&e, OXL_E_CLIENT_CLOSED, NULL, "client closed the request");
        reply_error(out, &e);
    } else if (oxl_req_job_error(jobs, n_jobs, &e)) {
        oxl_req_release(srv, jobs, n_jobs);
        reply_error(out, &e);
    } else {
        char msg_id[64];
        oxl_random_id("msg_", msg_id, sizeof msg_id);
        cJSON *o = r->object(srv, r, jobs, n_jobs, prompts, msg_id);
        oxl_req_release(srv, jobs, n_jobs);
        oxl_reply_json(out, 200, o);
    }
    free_prompts(prompts, n_prompts);
}

static void stream_state_release(void *state) { stream_state_free(state); }

oxl_job *oxl_req_run_embd(oxl_srv *srv, const oxl_request *rq, oxl_token *const *toks, const int32_t *lens, int32_t n,
                          size_t total, int32_t n_embd, oxl_api_error *e) {
    oxl_token *all = malloc(sizeof(oxl_token) * (total ? total : 1));
    int32_t *all_len = malloc(sizeof(int32_t) * (size_t)(n > 0 ? n : 1));
    if (!all || !all_len) {
        free(all);
        free(all_len);
        oxl_api_fail(e, OXL_E_OUT_OF_MEMORY, NULL, "out of memory");
        return NULL;
    }
    size_t off = 0;
    for (int32_t i = 0; i < n; i++) {
        memcpy(all + off, toks[i], sizeof(oxl_token) * (size_t)lens[i]);
        off += (size_t)lens[i];
        all_len[i] = lens[i];
    }
    oxl_job *j = oxl_embd_job_new(all, all_len, n, n_embd); /* takes all and all_len */
    if (!j) {
        oxl_api_fail(e, OXL_E_OUT_OF_MEMORY, NULL, "out of memory");
        return NULL;
    }
    if (oxl_req_submit(srv, j, e) != 0) {
        oxl_job_release(NULL, j);
        return NULL;
    }
    const int waited = oxl_req_wait(srv, &j, 1, rq->fd);
    oxl_req_log_jobs(rq->log, &j, 1);
    if (waited != 0) {
        oxl_job_release(srv->sched, j);
        oxl_api_fail(e, OXL_E_CLIENT_CLOSED, NULL, "client closed the request");
        return NULL;
    }
    if (oxl_req_job_error(&j, 1, e)) {
        oxl_job_release(srv->sched, j);
        return NULL;
    }
    return j;
}
