/* llama-server's own API: POST /completion (and /completions), GET and POST /props, POST
 * /apply-template. The reply shapes are llama-server's (tools/server/server-task.cpp,
 * server_task_result_cmpl_final::to_json_non_oaicompat and the partial result of a stream;
 * server-context.cpp for /props and /apply-template). */
#include "api_native.h"
#include "generate.h"
#include "json_read.h"
#include "routes.h"
#include "sse.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The fields /completion takes besides those of every generating route (request_fields.c). */
static const char *const native_fields[] = {"prompt", "n_probs", "return_tokens", "post_sampling_probs", NULL};
/* Fields of /v1/completions that /completion does not take. */
static const char *const openai_only[] = {"echo", "logprobs", "suffix", NULL};

static bool in_list(const char *const *l, const char *s) {
    for (; *l; l++) {
        if (!strcmp(*l, s)) {
            return true;
        }
    }
    return false;
}

/* A prompt: a string, token ids, or a list mixing strings and token ids (llama-server's
 * tokenize_mixed: only a leading string gets the BOS token). */
static int mixed_prompt(oxl_srv *srv, const cJSON *p, const char *param, oxl_token **out, int32_t *n,
                        oxl_api_error *e) {
    if (cJSON_IsString(p)) {
        return oxl_req_tokenize(srv, p->valuestring, strlen(p->valuestring), out, n, param, e);
    }
    int32_t cap = 16, len = 0, i = 0;
    oxl_token *t = malloc(sizeof *t * (size_t)cap);
    if (!t) {
        return oxl_api_fail(e, OXL_E_OUT_OF_MEMORY, NULL, "out of memory");
    }
    for (const cJSON *x = p->child; x; x = x->next, i++) {
        oxl_token *piece = NULL;
        int32_t np = 0;
        if (cJSON_IsString(x)) {
            int32_t need = oxl_tokenize(srv->model, x->valuestring, strlen(x->valuestring), NULL, 0, i == 0, true);
            need = need == INT32_MIN ? -1 : need < 0 ? -need : need;
            piece = need >= 0 ? malloc(sizeof *piece * (size_t)(need + 1)) : NULL;
            np = piece ? oxl_tokenize(srv->model, x->valuestring, strlen(x->valuestring), piece, need, i == 0, true)
                       : -1;
            if (np < 0) {
                free(piece);
                free(t);
                return BAD(e, param, "'%s[%d]': cannot be tokenized", param, i);
            }
        } else if (cJSON_IsNumber(x) && x->valuedouble == floor(x->valuedouble) && x->valuedouble >= 0 &&
                   x->valuedouble < oxl_model_n_vocab(srv->model)) {
            piece = malloc(sizeof *piece);
            if (piece) {
                piece[0] = (oxl_token)x->valuedouble;
                np = 1;
            }
        } else {
            free(t);
            return BAD(e, param, "'%s[%d]': expected a string or a token id in [0, %d)", param, i,
                       oxl_model_n_vocab(srv->model));
        }
        if (!piece && np) {
            free(t);
            return oxl_api_fail(e, OXL_E_OUT_OF_MEMORY, NULL, "out of memory");
        }
        if (len + np + 1 > cap) {
            while (len + np + 1 > cap) {
                cap *= 2;
            }
            oxl_token *nt = realloc(t, sizeof *t * (size_t)cap);
            if (!nt) {
                free(piece);
                free(t);
                return oxl_api_fail(e, OXL_E_OUT_OF_MEMORY, NULL, "out of memory");
            }
            t = nt;
        }
        memcpy(t + len, piece, sizeof *t * (size_t)np);
        len += np;
        free(piece);
    }
    *out = t;
    *n = len;
    return 0;
}

static bool is_single(const cJSON *p);

/* A prompt object {"prompt_string": ..., "multimodal_data": [base64, ...]} (llama-server's
 * tokenize_input_subprompt): without multimodal_data the prompt string (or mixed list) as above;
 * with it, the images in order for the string's media markers (mtmd_tokenize: BOS in front, each
 * text part alone, as many markers as images). media NULL: images are refused (a list of several
 * prompts; the server without --mmproj). */
static int object_prompt(oxl_srv *srv, const cJSON *p, const char *param, oxl_media *media, oxl_token **out, int32_t *n,
                         oxl_api_error *e) {
    char w[96];
    for (const cJSON *f = p->child; f; f = f->next) {
        if (strcmp(f->string, "prompt_string") && strcmp(f->string, "multimodal_data")) {
            snprintf(w, sizeof w, "%s.%.40s", param, f->string);
            return BAD(e, w, "'%s': unknown field of a prompt object (it takes prompt_string and multimodal_data)", w);
        }
    }
    const cJSON *s = cJSON_GetObjectItemCaseSensitive(p, "prompt_string");
    const cJSON *md = cJSON_GetObjectItemCaseSensitive(p, "multimodal_data");
    snprintf(w, sizeof w, "%s.prompt_string", param);
    if (!md) {
        if (!cJSON_IsString(s) && !(cJSON_IsArray(s) && is_single(s))) {
            return BAD_TYPE(e, w, "'%s': expected a string, a list of token ids or a list mixing strings and ids", w);
        }
        return mixed_prompt(srv, s, w, out, n, e);
    }
    if (!cJSON_IsString(s)) {
        return BAD_TYPE(e, w, "'%s': expected a string (with one %s marker per multimodal_data item)", w,
                        OXL_MEDIA_MARKER);
    }
    char wm[96];
    snprintf(wm, sizeof wm, "%s.multimodal_data", param);
    if (!srv->mmproj) {
        return BAD(e, wm, "'%s': images need the model's vision projector: start the server with --mmproj FILE", wm);
    }
    if (!media) {
        return BAD(e, wm, "'%s': images go in a request of one prompt; send one request per prompt with images", wm);
    }
    if (!cJSON_IsArray(md)) {
        return BAD_TYPE(e, wm, "'%s': expected a list of base64 strings (image file bytes)", wm);
    }
    int i = 0;
    for (const cJSON *x = md->child; x; x = x->next, i++) {
        char wi[112];
        snprintf(wi, sizeof wi, "%s[%d]", wm, i);
        if (!cJSON_IsString(x)) {
            return BAD_TYPE(e, wi, "'%s': expected a base64 string (image file bytes)", wi);
        }
        if (oxl_media_add_base64(media, x->valuestring, wi, e) < 0) {
            return -1;
        }
    }
    return oxl_media_tokenize(srv, s->valuestring, media, out, n, w, e);
}

/* One prompt or several: llama-server takes a string, a list of token ids or a list mixing strings
 * and ids as ONE prompt, and any other list as a list of prompts. */
static bool is_single(const cJSON *p) {
    if (cJSON_IsString(p)) {
        return true;
    }
    bool num = false, str = false, all_num = true;
    for (const cJSON *x = p->child; x; x = x->next) {
        num |= cJSON_IsNumber(x);
        str |= cJSON_IsString(x);
        all_num &= cJSON_IsNumber(x);
    }
    return (num && str) || (all_num && p->child);
}

static cJSON *num_f(float v) { return cJSON_CreateNumber((double)v); }

/* llama-server's generation_settings (server-task.cpp, task_params::to_json) for what this server
 * implements; the fields of features it lacks keep llama-server's defaults. */
cJSON *oxl_native_generation_settings(oxl_srv *srv, const api_req *r) {
    const oxl_gen_params *g = &r->gen;
    const oxl_sampler_params *s = &g->sampling;
    cJSON *o = cJSON_CreateObject();
    cJSON_AddNumberToObject(o, "seed", (double)s->seed);
    cJSON_AddItemToObject(o, "temperature", num_f(s->temp));
    cJSON_AddItemToObject(o, "dynatemp_range", num_f(s->dynatemp_range));
    cJSON_AddItemToObject(o, "dynatemp_exponent", num_f(s->dynatemp_exponent));
    cJSON_AddNumberToObject(o, "top_k", s->top_k);
    cJSON_AddItemToObject(o, "top_p", num_f(s->top_p));
    cJSON_AddItemToObject(o, "min_p", num_f(s->min_p));
    cJSON_AddItemToObject(o, "top_n_sigma", num_f(s->top_n_sigma));
    cJSON_AddItemToObject(o, "xtc_probability", num_f(s->xtc_probability));
    cJSON_AddItemToObject(o, "xtc_threshold", num_f(s->xtc_threshold));
    cJSON_AddItemToObject(o, "typical_p", num_f(s->typ_p));
    cJSON_AddNumberToObject(o, "repeat_last_n", s->penalty_last_n);
    cJSON_AddItemToObject(o, "repeat_penalty", num_f(s->penalty_repeat));
    cJSON_AddItemToObject(o, "presence_penalty", num_f(s->penalty_present));
    cJSON_AddItemToObject(o, "frequency_penalty", num_f(s->penalty_freq));
    cJSON_AddItemToObject(o, "dry_multiplier", num_f(s->dry_multiplier));
    cJSON_AddItemToObject(o, "dry_base", num_f(s->dry_base));
    cJSON_AddNumberToObject(o, "dry_allowed_length", s->dry_allowed_length);
    cJSON_AddNumberToObject(o, "dry_penalty_last_n", s->dry_penalty_last_n);
    cJSON *br = cJSON_AddArrayToObject(o, "dry_sequence_breakers");
    if (g->breakers_set) {
        for (int i = 0; i < g->n_breakers; i++) {
            cJSON_AddItemToArray(br, cJSON_CreateString(g->breakers[i]));
        }
    } else {
        static const char *const def[] = {"\n", ":", "\"", "*"};
        for (int i = 0; i < 4; i++) {
            cJSON_AddItemToArray(br, cJSON_CreateString(def[i]));
        }
    }
    cJSON_AddNumberToObject(o, "mirostat", s->mirostat);
    cJSON_AddItemToObject(o, "mirostat_tau", num_f(s->mirostat_tau));
    cJSON_AddItemToObject(o, "mirostat_eta", num_f(s->mirostat_eta));
    cJSON *stop = cJSON_AddArrayToObject(o, "stop");
    for (int i = 0; i < g->n_stop; i++) {
        cJSON_AddItemToArray(stop, cJSON_CreateString(g->stop[i]));
    }
    cJSON_AddNumberToObject(o, "max_tokens", g->max_tokens);
    cJSON_AddNumberToObject(o, "n_predict", g->max_tokens);
    cJSON_AddNumberToObject(o, "n_keep", srv->cfg->n_keep);
    cJSON_AddNumberToObject(o, "n_discard", 0);
    bool ignore_eos = false;
    cJSON *bias = cJSON_CreateArray();
    for (int i = 0; i < g->n_bias; i++) {
        if (isinf(g->bias_val[i]) && g->bias_val[i] < 0 && oxl_token_is_eog(srv->model, g->bias_tok[i])) {
            ignore_eos = true; /* llama-server lists ignore_eos apart from logit_bias */
            continue;
        }
        cJSON *pair = cJSON_CreateObject();
        cJSON_AddNumberToObject(pair, "bias", isinf(g->bias_val[i]) ? -1e30 : g->bias_val[i]);
        cJSON_AddNumberToObject(pair, "token", g->bias_tok[i]);
        cJSON_AddItemToArray(bias, pair);
    }
    cJSON_AddBoolToObject(o, "ignore_eos", ignore_eos);
    cJSON_AddBoolToObject(o, "stream", r->stream);
    cJSON_AddItemToObject(o, "logit_bias", bias);
    cJSON_AddNumberToObject(o, "n_probs", r->logprobs ? g->top_logprobs : 0);
    cJSON_AddNumberToObject(o, "min_keep", 0);
    cJSON_AddStringToObject(o, "grammar", g->grammar ? g->grammar : "");
    cJSON *smp = cJSON_AddArrayToObject(o, "samplers");
    static const struct {
        char c;
        const char *name;
    } names[] = {{'e', "penalties"}, {'d', "dry"},   {'s', "top_n_sigma"}, {'k', "top_k"},      {'y', "typ_p"},
                 {'p', "top_p"},     {'m', "min_p"}, {'x', "xtc"},         {'t', "temperature"}};
    const char *seq = s->samplers[0] ? s->samplers : "edskypmxt";
    for (const char *c = seq; *c; c++) {
        for (size_t k = 0; k < sizeof names / sizeof names[0]; k++) {
            if (names[k].c == *c) {
                cJSON_AddItemToArray(smp, cJSON_CreateString(names[k].name));
            }
        }
    }
    cJSON_AddBoolToObject(o, "timings_per_token", false);
    cJSON_AddBoolToObject(o, "post_sampling_probs", false);
    cJSON_AddNumberToObject(o, "speculative.n_max", g->spec_n_max);
    cJSON_AddNumberToObject(o, "speculative.n_min", g->spec_n_min);
    cJSON_AddItemToObject(o, "speculative.p_min", num_f(g->spec_p_min));
    /* the request's LoRA scales (without a "lora" field, the global ones when it was read) */
    cJSON *lora = cJSON_AddArrayToObject(o, "lora");
    for (int32_t i = 0; i < srv->n_lora; i++) {
        cJSON *a = cJSON_CreateObject();
        cJSON_AddNumberToObject(a, "id", i);
        cJSON_AddItemToObject(a, "scale", num_f(g->lora[i]));
        cJSON_AddItemToArray(lora, a);
    }
    return o;
}

/* A token's text as llama-server writes it in completion_probabilities: special tokens as nothing. */
static int piece_plain(oxl_srv *srv, oxl_token t, char *buf, int cap) {
    int n = oxl_token_to_piece(srv->model, t, buf, cap, false);
    return n < 0 ? 0 : n;
}

/* completion_probabilities: [{id, token, bytes, logprob, top_logprobs: [{id, token, bytes, logprob}]}]
 * of records from..to (llama-server's completion_token_output::probs_to_json, post_sampling_probs
 * off). */
static cJSON *native_probs(oxl_srv *srv, const oxl_choice_out *c, int32_t from, int32_t to) {
    cJSON *arr = cJSON_CreateArray();
    char buf[256];
    for (int32_t i = from; i < to; i++) {
        const oxl_tok_logprob *r = &c->lp[i];
        cJSON *o = cJSON_CreateObject();
        int n = piece_plain(srv, r->tok, buf, sizeof buf);
        cJSON_AddNumberToObject(o, "id", r->tok);
        cJSON_AddItemToObject(o, "token", oxl_json_text(buf, (size_t)n));
        cJSON_AddItemToObject(o, "bytes", oxl_json_bytes(buf, n));
        cJSON_AddNumberToObject(o, "logprob", r->logprob);
        cJSON *top = cJSON_AddArrayToObject(o, "top_logprobs");
        for (int k = 0; k < r->n_top; k++) {
            cJSON *t = cJSON_CreateObject();
            n = piece_plain(srv, r->top_tok[k], buf, sizeof buf);
            cJSON_AddNumberToObject(t, "id", r->top_tok[k]);
            cJSON_AddItemToObject(t, "token", oxl_json_text(buf, (size_t)n));
            cJSON_AddItemToObject(t, "bytes", oxl_json_bytes(buf, n));
            cJSON_AddNumberToObject(t, "logprob", r->top_lp[k]);
            cJSON_AddItemToArray(top, t);
        }
        cJSON_AddItemToArray(arr, o);
    }
    return arr;
}

/* Why a finished choice stopped, as llama-server's stop_type: "limit" (n_predict or a full slot),
 * "word" (a stop string: *word set to it), else "eos". The scheduler cuts the text at a stop string,
 * so a choice stopped by one holds fewer bytes than its tokens' text, and that text continues with
 * the stop string. */
static const char *stop_type(oxl_srv *srv, const api_req *r, const oxl_choice_out *c, const char **word) {
    *word = "";
    if (!c->finish || !strcmp(c->finish, "length")) {
        return "limit";
    }
    size_t cap = c->len + 1;
    char buf[256];
    for (int32_t i = 0; i < c->n_lp; i++) {
        cap += (size_t)oxl_token_to_piece(srv->model, c->lp[i].tok, buf, sizeof buf, false) + 1;
    }
    char *all = malloc(cap);
    size_t len = 0;
    for (int32_t i = 0; all && i < c->n_lp; i++) {
        int n = oxl_token_to_piece(srv->model, c->lp[i].tok, buf, sizeof buf, false);
        if (n > 0) {
            memcpy(all + len, buf, (size_t)n);
            len += (size_t)n;
        }
    }
    const char *type = "eos";
    for (int k = 0; all && k < r->gen.n_stop; k++) {
        size_t sl = strlen(r->gen.stop[k]);
        if (len >= c->len + sl && !memcmp(all + c->len, r->gen.stop[k], sl)) {
            *word = r->gen.stop[k];
            type = "word";
            break;
        }
    }
    free(all);
    return type;
}

/* tokens_predicted: llama-server counts the end-of-generation token it sampled. */
static int32_t n_predicted(const oxl_choice_out *c, const char *type) {
    return c->n_gen + (!strcmp(type, "eos") ? 1 : 0);
}

static cJSON *token_ids(const oxl_choice_out *c, int32_t from, int32_t to) {
    cJSON *a = cJSON_CreateArray();
    for (int32_t i = from; i < to; i++) {
        cJSON_AddItemToArray(a, cJSON_CreateNumber(c->lp[i].tok));
    }
    return a;
}

/* Whether the tokenizer adds a space prefix (SentencePiece vocabularies unless
 * tokenizer.ggml.add_space_prefix is false; llama.cpp's llama_vocab). */
static bool adds_space_prefix(const oxl_model *m) {
    char v[16];
    if (oxl_model_meta_val_str(m, "tokenizer.ggml.model", v, sizeof v) < 0 || strcmp(v, "llama")) {
        return false;
    }
    return oxl_model_meta_val_str(m, "tokenizer.ggml.add_space_prefix", v, sizeof v) < 0 || strcmp(v, "false");
}

/* The final result of one job (server_task_result_cmpl_final::to_json_non_oaicompat); content is the
 * text not yet sent (all of it unless streaming). */
static cJSON *final_result(oxl_srv *srv, const api_req *r, const oxl_job *j, int index, const char *content,
                           size_t content_len, bool streamed) {
    const oxl_choice_out *c = &j->choice[0];
    const char *word;
    const char *type = stop_type(srv, r, c, &word);
    int32_t predicted = n_predicted(c, type);
    cJSON *o = cJSON_CreateObject();
    cJSON_AddNumberToObject(o, "index", index);
    cJSON_AddItemToObject(o, "content", oxl_json_text(content, content_len));
    cJSON_AddItemToObject(o, "tokens", r->return_tokens && !streamed ? token_ids(c, 0, c->n_lp) : cJSON_CreateArray());
    /* llama-server lists the end-of-generation token it sampled; the scheduler does not keep which one it
     * was, so this is the model's EOS (another end-of-generation token, such as EOT, would differ) */
    if (r->return_tokens && !streamed && !strcmp(type, "eos") && oxl_token_eos(srv->model) >= 0) {
        cJSON_AddItemToArray(cJSON_GetObjectItemCaseSensitive(o, "tokens"),
                             cJSON_CreateNumber(oxl_token_eos(srv->model)));
    }
    cJSON_AddNumberToObject(o, "id_slot", c->id_slot);
    cJSON_AddBoolToObject(o, "stop", true);
    cJSON_AddStringToObject(o, "model", srv->model_id);
    cJSON_AddNumberToObject(o, "tokens_predicted", predicted);
    cJSON_AddNumberToObject(o, "tokens_evaluated", j->n_prompt);
    cJSON_AddItemToObject(o, "generation_settings", oxl_native_generation_settings(srv, r));
    /* the prompt's tokens as text, special tokens rendered; image rows left out (llama-server's
     * server_tokens::detokenize) */
    size_t cap = 1, len = 0;
    char buf[256];
    for (int32_t i = 0; i < j->n_prompt; i++) {
        cap += j->prompt[i] < 0 ? 0 : (size_t)oxl_tok_piece(srv->model, j->prompt[i], buf, sizeof buf);
    }
    char *pt = malloc(cap);
    for (int32_t i = 0, first = 1; pt && i < j->n_prompt; i++) {
        if (j->prompt[i] < 0) {
            continue;
        }
        int n = oxl_tok_piece(srv->model, j->prompt[i], buf, sizeof buf);
        /* llama_detokenize: a vocabulary that adds a space prefix drops the first piece's space */
        int skip = first && n > 0 && buf[0] == ' ' && adds_space_prefix(srv->model);
        first = 0;
        memcpy(pt + len, buf + skip, (size_t)(n - skip));
        len += (size_t)(n - skip);
    }
    cJSON_AddItemToObject(o, "prompt", oxl_json_text(pt ? pt : "", pt ? len : 0));
    free(pt);
    cJSON_AddBoolToObject(o, "has_new_line", c->text && memchr(c->text, '\n', c->len) != NULL);
    cJSON_AddBoolToObject(o, "truncated", c->truncated);
    cJSON_AddStringToObject(o, "stop_type", type);
    cJSON_AddStringToObject(o, "stopping_word", word);
    cJSON_AddNumberToObject(o, "tokens_cached", j->n_prompt + predicted - 1);
    cJSON *t = cJSON_AddObjectToObject(o, "timings");
    double prompt_ms = j->t_first > j->t_start ? (j->t_first - j->t_start) * 1e3 : 0;
    double pred_ms = j->t_end > j->t_first ? (j->t_end - j->t_first) * 1e3 : 0;
    int32_t prompt_n = j->n_prompt - j->n_cached;
    cJSON_AddNumberToObject(t, "cache_n", j->n_cached);
    cJSON_AddNumberToObject(t, "prompt_n", prompt_n);
    cJSON_AddNumberToObject(t, "prompt_ms", prompt_ms);
    cJSON_AddNumberToObject(t, "prompt_per_token_ms", prompt_n ? prompt_ms / prompt_n : 0);
    cJSON_AddNumberToObject(t, "prompt_per_second", prompt_ms > 0 ? 1e3 * prompt_n / prompt_ms : 0);
    cJSON_AddNumberToObject(t, "predicted_n", predicted);
    cJSON_AddNumberToObject(t, "predicted_ms", pred_ms);
    cJSON_AddNumberToObject(t, "predicted_per_token_ms", predicted ? pred_ms / predicted : 0);
    cJSON_AddNumberToObject(t, "predicted_per_second", pred_ms > 0 ? 1e3 * predicted / pred_ms : 0);
    if (c->n_drafted > 0) {
        /* speculative decoding, as llama-server's result_timings: draft tokens verified, accepted */
        cJSON_AddNumberToObject(t, "draft_n", c->n_drafted);
        cJSON_AddNumberToObject(t, "draft_n_accepted", c->n_accepted);
    }
    if (r->logprobs) {
        cJSON_AddItemToObject(o, "completion_probabilities",
                              streamed ? cJSON_CreateArray() : native_probs(srv, c, 0, c->n_lp));
    }
    return o;
}

/* The reply: one result object, or a list of them for several prompts. */
static cJSON *native_object(oxl_srv *srv, const api_req *r, oxl_job **jobs, int n_jobs, char **prompts,
                            const char *msg_id) {
    (void)prompts;
    (void)msg_id;
    if (n_jobs == 1) {
        return final_result(srv, r, jobs[0], 0, jobs[0]->choice[0].text ? jobs[0]->choice[0].text : "",
                            jobs[0]->choice[0].len, false);
    }
    cJSON *a = cJSON_CreateArray();
    for (int p = 0; p < n_jobs; p++) {
        const oxl_choice_out *c = &jobs[p]->choice[0];
        cJSON_AddItemToArray(a, final_result(srv, r, jobs[p], p, c->text ? c->text : "", c->len, false));
    }
    return a;
}

/* The stream: a data event per piece of new text or new tokens ({index, content, tokens, stop false,
 * id_slot -1, tokens_predicted, tokens_evaluated}, completion_probabilities with n_probs), then the
 * final result with the text left (none) and stop true; no [DONE] (llama-server's non-OpenAI
 * stream). */
static size_t produce_native(oxl_stream *st) {
    stream_state *ss = st->state;
    size_t before = st->len;
    oxl_api_error e;
    if (oxl_req_job_error(st->jobs, st->n_jobs, &e)) {
        oxl_sse_error(st, &e, false, 0);
        st->done = true;
        return st->len - before;
    }
    bool all = true;
    for (int p = 0; p < st->n_jobs; p++) {
        oxl_job *j = st->jobs[p];
        const oxl_choice_out *c = &j->choice[0];
        choice_progress *cp = &ss->cp[p];
        if (cp->finished) {
            continue;
        }
        if (c->len > cp->sent || c->n_lp > cp->lp_sent) {
            cJSON *o = cJSON_CreateObject();
            cJSON_AddNumberToObject(o, "index", p);
            cJSON_AddItemToObject(o, "content", oxl_json_text(c->text + cp->sent, c->len - cp->sent));
            cJSON_AddItemToObject(o, "tokens", token_ids(c, cp->lp_sent, c->n_lp));
            cJSON_AddBoolToObject(o, "stop", false);
            cJSON_AddNumberToObject(o, "id_slot", -1);
            cJSON_AddNumberToObject(o, "tokens_predicted", c->n_lp);
            cJSON_AddNumberToObject(o, "tokens_evaluated", j->n_prompt);
            if (ss->r.logprobs) {
                cJSON_AddItemToObject(o, "completion_probabilities", native_probs(st->srv, c, cp->lp_sent, c->n_lp));
            }
            oxl_sse_event(st, NULL, o);
            cp->sent = c->len;
            cp->lp_sent = c->n_lp;
        }
        if (c->finish) {
            cp->finished = true;
            oxl_sse_event(st, NULL, final_result(st->srv, &ss->r, j, p, "", 0, true));
        } else {
            all = false;
        }
    }
    st->done = all;
    return st->len - before;
}

void oxl_api_native_completion(oxl_srv *srv, const oxl_request *rq, oxl_reply *out) {
    api_req r = {.kind = API_COMPLETION, .object = native_object, .produce = produce_native};
    oxl_api_error e = {0};
    const cJSON *b = rq->json;
    int n_prompts = 0;
    oxl_token **toks = NULL;
    int32_t *n_toks = NULL;
    char **prompts = NULL;
    oxl_media media = {0};
    cJSON *common = cJSON_Duplicate(b, true); /* b less the fields of this route alone */
    if (!common) {
        oxl_api_fail(&e, OXL_E_OUT_OF_MEMORY, NULL, "out of memory");
        goto fail;
    }
    for (const cJSON *f = b->child; f; f = f->next) {
        if (f->string && in_list(openai_only, f->string)) {
            oxl_api_fail(&e, OXL_E_INVALID_VALUE, f->string,
                         "'%.60s' is not a field of /completion (it is one of /v1/completions); remove it from the "
                         "request",
                         f->string);
            goto fail;
        }
        if (f->string && in_list(native_fields, f->string)) {
            cJSON_DeleteItemFromObjectCaseSensitive(common, f->string);
        }
    }
    if (oxl_req_parse_common(srv, common, &r, &e) < 0 || oxl_json_bool(b, "return_tokens", &r.return_tokens, &e) < 0) {
        goto fail;
    }
    bool post = false;
    if (oxl_json_bool(b, "post_sampling_probs", &post, &e) < 0) {
        goto fail;
    }
    if (post) {
        BAD(&e, "post_sampling_probs",
            "'post_sampling_probs': probabilities after the sampler chain are not implemented by this server; use "
            "n_probs alone (probabilities of the model's distribution)");
        goto fail;
    }
    if (r.n != 1) {
        BAD(&e, "n", "'n': /completion gives one completion per prompt");
        goto fail;
    }
    long long k = 0;
    int rc = oxl_json_int(b, "n_probs", 0, OXL_SRV_MAX_TOP_LOGPROBS, &k, &e);
    if (rc < 0) {
        goto fail;
    }
    r.logprobs = rc == 1 && k > 0;
    /* every token is recorded: its id (tokens, stop_type) and, with n_probs, its alternatives */
    r.gen.top_logprobs = r.logprobs ? (int32_t)k : 0;
    const cJSON *p = oxl_json_field(b, "prompt");
    if (!p) {
        BAD(&e, "prompt", "'prompt' is required");
        goto fail;
    }
    if (!cJSON_IsString(p) && !cJSON_IsArray(p) && !cJSON_IsObject(p)) {
        BAD_TYPE(&e, "prompt",
                 "'prompt': expected a string, a list of token ids, a list mixing strings and token ids, an object "
                 "{\"prompt_string\", \"multimodal_data\"}, or a list of prompts");
        goto fail;
    }
    bool single = cJSON_IsObject(p) || is_single(p);
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
        if (cJSON_IsObject(item)) {
            if (object_prompt(srv, item, param, n_prompts == 1 ? &media : NULL, &toks[i], &n_toks[i], &e) < 0 ||
                oxl_req_check_context(srv, n_toks[i], param, &e) < 0) {
                goto fail;
            }
            continue;
        }
        if (!cJSON_IsString(item) && !(cJSON_IsArray(item) && is_single(item))) {
            BAD_TYPE(&e, param,
                     "'%s': expected a string, a list of token ids, a list mixing strings and ids, or an "
                     "object {\"prompt_string\", \"multimodal_data\"}",
                     param);
            goto fail;
        }
        if (mixed_prompt(srv, item, param, &toks[i], &n_toks[i], &e) < 0 ||
            oxl_req_check_context(srv, n_toks[i], param, &e) < 0) {
            goto fail;
        }
    }
    r.media = media.n > 0 ? &media : NULL;
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
    oxl_media_free(&media);
    cJSON_Delete(common);
    oxl_gen_params_free(&r.gen);
}

/* --- POST /infill ---------------------------------------------------------------------------- */

typedef struct tokvec {
    oxl_token *t;
    int32_t n, cap;
    bool oom;
} tokvec;

static void tv_push(tokvec *v, const oxl_token *t, int32_t n) {
    if (v->oom || n <= 0) {
        return;
    }
    if (v->n + n > v->cap) {
        int32_t cap = v->cap ? v->cap : 64;
        while (cap < v->n + n) {
            cap *= 2;
        }
        oxl_token *nt = realloc(v->t, sizeof *nt * (size_t)cap);
        if (!nt) {
            v->oom = true;
            return;
        }
        v->t = nt;
        v->cap = cap;
    }
    memcpy(v->t + v->n, t, sizeof *t * (size_t)n);
    v->n += n;
}

static void tv_one(tokvec *v, oxl_token t) { tv_push(v, &t, 1); }

/* text tokenized (common_tokenize with add_special and parse_special) onto v; -1 when it cannot be */
static int tv_text(oxl_srv *srv, tokvec *v, const char *s, bool add_special, bool parse_special) {
    size_t len = strlen(s);
    int32_t need = oxl_tokenize(srv->model, s, len, NULL, 0, add_special, parse_special);
    if (need == INT32_MIN) {
        return -1;
    }
    need = need < 0 ? -need : need;
    oxl_token *t = malloc(sizeof *t * (size_t)(need + 1));
    int32_t n = t ? oxl_tokenize(srv->model, s, len, t, need, add_special, parse_special) : -1;
    if (n < 0) {
        free(t);
        v->oom |= t == NULL;
        return t ? -1 : 0;
    }
    tv_push(v, t, n);
    free(t);
    return 0;
}

/* input_prefix / input_suffix: a string, or a list mixing strings and token ids (tokenize_mixed
 * without special tokens) */
static int tv_mixed(oxl_srv *srv, tokvec *v, const cJSON *x, const char *param, oxl_api_error *e) {
    if (cJSON_IsString(x)) {
        return tv_text(srv, v, x->valuestring, false, false) < 0 ? BAD(e, param, "'%s': cannot be tokenized", param)
                                                                 : 0;
    }
    if (!cJSON_IsArray(x)) {
        return BAD_TYPE(e, param, "'%s': expected a string or a list of strings and token ids", param);
    }
    int i = 0;
    for (const cJSON *c = x->child; c; c = c->next, i++) {
        if (cJSON_IsString(c)) {
            if (tv_text(srv, v, c->valuestring, false, false) < 0) {
                return BAD(e, param, "'%s[%d]': cannot be tokenized", param, i);
            }
        } else if (cJSON_IsNumber(c) && c->valuedouble == floor(c->valuedouble) && c->valuedouble >= 0 &&
                   c->valuedouble < oxl_model_n_vocab(srv->model)) {
            tv_one(v, (oxl_token)c->valuedouble);
        } else {
            return BAD(e, param, "'%s[%d]': expected a string or a token id in [0, %d)", param, i,
                       oxl_model_n_vocab(srv->model));
        }
    }
    return 0;
}

static void not_supported(oxl_reply *out, const char *msg) {
    cJSON *o = cJSON_CreateObject();
    cJSON *err = cJSON_AddObjectToObject(o, "error");
    cJSON_AddNumberToObject(err, "code", 501);
    cJSON_AddStringToObject(err, "message", msg);
    cJSON_AddStringToObject(err, "type", "not_supported_error");
    oxl_reply_json(out, 501, o);
}

/* llama-server's /infill: the prompt is built as its format_prompt_infill builds it (server-common.cpp;
 * the FIM repo-level pattern), without --spm-infill:
 *   [extra: <fim_rep>myproject\n (<fim_sep>FILENAME\n TEXT)... <fim_sep>filename\n] [BOS] <fim_pre> PREFIX
 *   PROMPT <fim_suf> SUFFIX <fim_mid>
 * keeping the last 3/4 of a batch of the prefix, the first (batch/4 - 2 - prompt) tokens of the
 * suffix and the last (slot context - batch + 2) tokens of the extra context. The reply is
 * /completion's. */
void oxl_api_infill(oxl_srv *srv, const oxl_request *rq, oxl_reply *out) {
    const oxl_token pre = oxl_token_fim(srv->model, OXL_FIM_PRE), suf = oxl_token_fim(srv->model, OXL_FIM_SUF),
                    mid = oxl_token_fim(srv->model, OXL_FIM_MID), rep = oxl_token_fim(srv->model, OXL_FIM_REP),
                    sep = oxl_token_fim(srv->model, OXL_FIM_SEP);
    if (pre < 0 || suf < 0 || mid < 0) {
        char msg[160];
        snprintf(msg, sizeof msg, "Infill is not supported by this model: %s%s%s",
                 pre < 0 ? "prefix token is missing. " : "", suf < 0 ? "suffix token is missing. " : "",
                 mid < 0 ? "middle token is missing. " : "");
        not_supported(out, msg);
        return;
    }
    api_req r = {.kind = API_COMPLETION, .object = native_object, .produce = produce_native};
    oxl_api_error e = {0};
    const cJSON *b = rq->json;
    tokvec extra = {0}, prefix = {0}, suffix = {0}, prompt = {0}, inp = {0};
    static const char *const infill_fields[] = {"input_prefix", "input_suffix",  "input_extra",         "prompt",
                                                "n_probs",      "return_tokens", "post_sampling_probs", NULL};
    cJSON *common = cJSON_Duplicate(b, true);
    if (!common) {
        oxl_api_fail(&e, OXL_E_OUT_OF_MEMORY, NULL, "out of memory");
        goto fail;
    }
    for (const cJSON *f = b->child; f; f = f->next) {
        if (f->string && in_list(openai_only, f->string)) {
            oxl_api_fail(&e, OXL_E_INVALID_VALUE, f->string,
                         "'%.60s' is not a field of /infill; remove it from the request", f->string);
            goto fail;
        }
        if (f->string && in_list(infill_fields, f->string)) {
            cJSON_DeleteItemFromObjectCaseSensitive(common, f->string);
        }
    }
    bool post = false;
    if (oxl_req_parse_common(srv, common, &r, &e) < 0 || oxl_json_bool(b, "return_tokens", &r.return_tokens, &e) < 0 ||
        oxl_json_bool(b, "post_sampling_probs", &post, &e) < 0) {
        goto fail;
    }
    if (post) {
        BAD(&e, "post_sampling_probs",
            "'post_sampling_probs': probabilities after the sampler chain are not implemented by this server");
        goto fail;
    }
    if (r.n != 1) {
        BAD(&e, "n", "'n': /infill gives one completion");
        goto fail;
    }
    long long k = 0;
    int rc = oxl_json_int(b, "n_probs", 0, OXL_SRV_MAX_TOP_LOGPROBS, &k, &e);
    if (rc < 0) {
        goto fail;
    }
    r.logprobs = rc == 1 && k > 0;
    r.gen.top_logprobs = r.logprobs ? (int32_t)k : 0;
    const char *ptext = NULL;
    if (oxl_json_str(b, "prompt", &ptext, &e) < 0) {
        goto fail;
    }
    const cJSON *ip = oxl_json_field(b, "input_prefix"), *is = oxl_json_field(b, "input_suffix");
    if (!ip) {
        BAD(&e, "input_prefix", "'input_prefix' is required");
        goto fail;
    }
    if (!is) {
        BAD(&e, "input_suffix", "'input_suffix' is required");
        goto fail;
    }
    const cJSON *ix = oxl_json_field(b, "input_extra");
    if (ix && !cJSON_IsArray(ix)) {
        BAD_TYPE(&e, "input_extra", "'input_extra': expected a list of {\"filename\": string, \"text\": string}");
        goto fail;
    }
    if (tv_mixed(srv, &prefix, ip, "input_prefix", &e) < 0 || tv_mixed(srv, &suffix, is, "input_suffix", &e) < 0) {
        goto fail;
    }
    if (ptext && tv_text(srv, &prompt, ptext, false, true) < 0) {
        BAD(&e, "prompt", "'prompt': cannot be tokenized");
        goto fail;
    }
    if (rep >= 0) {
        tv_one(&extra, rep);
        tv_text(srv, &extra, "myproject\n", false, false);
    }
    int i = 0;
    for (const cJSON *c = ix ? ix->child : NULL; c; c = c->next, i++) {
        const char *text = NULL, *filename = NULL;
        char where[48];
        snprintf(where, sizeof where, "input_extra[%d]", i);
        if (!cJSON_IsObject(c) || oxl_json_str(c, "text", &text, &e) < 0 || !text ||
            oxl_json_str(c, "filename", &filename, &e) < 0) {
            BAD(&e, where, "'%s': expected {\"text\": string, \"filename\": string (optional)}", where);
            goto fail;
        }
        if (sep >= 0) {
            const char *fn = filename ? filename : "tmp";
            size_t n = strlen(fn);
            char *line = malloc(n + 2);
            if (!line) {
                oxl_api_fail(&e, OXL_E_OUT_OF_MEMORY, NULL, "out of memory");
                goto fail;
            }
            memcpy(line, fn, n);
            memcpy(line + n, "\n", 2);
            tv_one(&extra, sep);
            int bad = tv_text(srv, &extra, line, false, false);
            free(line);
            if (bad < 0) {
                BAD(&e, where, "'%s.filename': cannot be tokenized", where);
                goto fail;
            }
        } else {
            tv_text(srv, &extra, "\n\n--- snippet ---\n\n", false, false);
        }
        if (tv_text(srv, &extra, text, false, false) < 0) {
            BAD(&e, where, "'%s.text': cannot be tokenized", where);
            goto fail;
        }
    }
    if (sep >= 0) {
        tv_one(&extra, sep);
        tv_text(srv, &extra, "filename\n", false, false);
    }
    const int32_t n_batch = srv->cfg->n_batch > 0 ? srv->cfg->n_batch : 512;
    const int32_t n_ctx = oxl_sched_n_ctx_slot(srv->sched);
    const int32_t n_predict = -1; /* llama-server's -n, this server has none */
    int32_t n_prefix = prefix.n < 3 * (n_batch / 4) ? prefix.n : 3 * (n_batch / 4);
    int32_t room = n_batch / 4 - (2 + prompt.n);
    int32_t n_suffix = suffix.n < (room > 0 ? room : 0) ? suffix.n : (room > 0 ? room : 0);
    int32_t extra_room = n_ctx - n_batch - 2 * n_predict;
    int32_t n_extra = extra.n < (extra_room > 0 ? extra_room : 0) ? extra.n : (extra_room > 0 ? extra_room : 0);
    tv_push(&inp, extra.t + extra.n - n_extra, n_extra);
    if (oxl_vocab_add_bos(srv->model) && oxl_token_bos(srv->model) >= 0) {
        tv_one(&inp, oxl_token_bos(srv->model));
    }
    tv_one(&inp, pre);
    tv_push(&inp, prefix.t + prefix.n - n_prefix, n_prefix);
    tv_push(&inp, prompt.t, prompt.n);
    tv_one(&inp, suf);
    tv_push(&inp, suffix.t, n_suffix);
    tv_one(&inp, mid);
    if (extra.oom || prefix.oom || suffix.oom || prompt.oom || inp.oom) {
        oxl_api_fail(&e, OXL_E_OUT_OF_MEMORY, NULL, "out of memory");
        goto fail;
    }
    if (oxl_req_check_context(srv, inp.n, "input_prefix", &e) < 0) {
        goto fail;
    }
    oxl_token *toks[1] = {inp.t};
    int32_t n_toks[1] = {inp.n};
    char **prompts = calloc(1, sizeof *prompts);
    if (!prompts) {
        oxl_api_fail(&e, OXL_E_OUT_OF_MEMORY, NULL, "out of memory");
        goto fail;
    }
    oxl_req_run(srv, rq, &r, toks, n_toks, prompts, 1, out);
    inp.t = toks[0]; /* NULL once the job took it */
    goto done;
fail:
    oxl_reply_error(out, &e);
done:
    free(extra.t);
    free(prefix.t);
    free(suffix.t);
    free(prompt.t);
    free(inp.t);
    cJSON_Delete(common);
    oxl_gen_params_free(&r.gen);
}
