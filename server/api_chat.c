/* POST /v1/chat/completions: messages through the chat template, chat.completion objects. */
#include "generate.h"
#include "json_read.h"
#include "routes.h"
#include "toolcall.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static cJSON *chat_object(oxl_srv *srv, const api_req *r, oxl_job *j) {
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "id", r->id);
    cJSON_AddStringToObject(o, "object", "chat.completion");
    cJSON_AddNumberToObject(o, "created", (double)r->created);
    cJSON_AddStringToObject(o, "model", srv->model_id);
    cJSON *choices = cJSON_AddArrayToObject(o, "choices");
    for (int i = 0; i < j->n_choices; i++) {
        const oxl_choice_out *c = &j->choice[i];
        const char *text = c->text ? c->text : "";
        cJSON *ch = cJSON_CreateObject();
        cJSON_AddNumberToObject(ch, "index", i);
        cJSON *msg = oxl_chat_reply(srv, r, text, c->len, false);
        cJSON_AddItemToObject(ch, "message", msg);
        cJSON_AddNullToObject(msg, "refusal");
        bool calls = cJSON_GetObjectItemCaseSensitive(msg, "tool_calls") != NULL;
        if (r->logprobs) {
            cJSON *lp = cJSON_AddObjectToObject(ch, "logprobs");
            cJSON_AddItemToObject(lp, "content", oxl_chat_logprobs(srv, c, 0, c->n_lp));
            cJSON_AddNullToObject(lp, "refusal");
        } else {
            cJSON_AddNullToObject(ch, "logprobs");
        }
        cJSON_AddStringToObject(ch, "finish_reason", calls ? "tool_calls" : c->finish ? c->finish : "stop");
        cJSON_AddItemToArray(choices, ch);
    }
    cJSON_AddItemToObject(o, "usage", oxl_req_usage(&j, 1, API_CHAT));
    cJSON_AddStringToObject(o, "system_fingerprint", "oxillama");
    return o;
}

static cJSON *chat_body(oxl_srv *srv, const api_req *r, oxl_job **jobs, int n_jobs, char **prompts,
                        const char *msg_id) {
    return chat_object(srv, r, jobs[0]);
}

/* The prompt as oxl_req_chat_prompt renders it (assistant tool call arguments given as JSON text
 * passed to templates that take objects as objects), keeping its end for the reply parser. */
static int chat_prompt(oxl_srv *srv, const cJSON *body, cJSON *msgs, api_req *r, oxl_token **toks, int32_t *n,
                       oxl_api_error *e) {
    oxl_chat_args_to_objects(srv, msgs);
    char *text = NULL, *kwargs = NULL;
    oxl_error err = {0};
    if (oxl_req_template_kwargs(srv, body, &kwargs, e) < 0) {
        return -1;
    }
    char *msgs_json = cJSON_PrintUnformatted(msgs);
    char *tools_json = r->tools ? cJSON_PrintUnformatted(r->tools) : NULL;
    if (!msgs_json || (r->tools && !tools_json)) {
        free(msgs_json);
        free(tools_json);
        free(kwargs);
        return oxl_api_fail(e, OXL_E_OUT_OF_MEMORY, NULL, "out of memory");
    }
    int rc_t = oxl_chat_apply_template_kw(srv->model, srv->cfg->chat_template, msgs_json, tools_json, true, kwargs,
                                          &text, &err);
    free(msgs_json);
    free(kwargs);
    r->tools_json = tools_json; /* for the reply parser */
    if (rc_t != 0) {
        return BAD(e, "messages", "'messages': the chat template failed: %s", err.msg);
    }
    oxl_req_budget_defaults(srv, body, text, &r->gen);
    size_t len = strlen(text), keep = len < sizeof r->prompt_tail - 1 ? len : sizeof r->prompt_tail - 1;
    memcpy(r->prompt_tail, text + len - keep, keep);
    r->prompt_tail[keep] = 0;
    int rc = r->media && r->media->n > 0 ? oxl_media_tokenize(srv, text, r->media, toks, n, "messages", e)
                                         : oxl_req_tokenize(srv, text, len, toks, n, "messages", e);
    free(text);
    return rc;
}

/* The tool-call grammar of the template's reply format, as llama.cpp's server sets it
 * (common_chat_templates_apply, oxl_chat_tool_grammar): for tool_choice "auto" a lazy grammar that
 * applies from the format's trigger on (a call's opening tag), for "required" or a named function
 * ({"type": "function", "function": {"name": N}}: the tools list cut to N) one that applies from the
 * first token and admits only calls. A format llama.cpp builds no grammar for (Command R+) leaves
 * "auto" unconstrained and refuses "required". The generic format's
 * grammar, which llama.cpp applies also for "auto" (a JSON reply of either calls or a response,
 * asked for by a system message its prompt adds), is used for "required" only, as the prompt here is
 * the template's own. A request's own grammar stays for "auto" and is refused with "required". */
static int tool_grammar(oxl_srv *srv, const cJSON *tc, const api_req *r, oxl_gen_params *g, oxl_api_error *e) {
    bool required = tc && (cJSON_IsObject(tc) || !strcmp(tc->valuestring, "required"));
    if (!r->tools) {
        return required
                   ? BAD(e, "tool_choice", "'tool_choice': a required or named tool needs a non-empty 'tools' list")
                   : 0;
    }
    if (g->grammar) {
        return required ? BAD(e, "tool_choice",
                              "'tool_choice': a required or named tool cannot be combined with 'grammar', "
                              "'json_schema' or 'response_format'")
                        : 0;
    }
    const char *fmt = oxl_chat_format(srv->model, srv->cfg->chat_template);
    if (!required && !strcmp(fmt, "Generic")) {
        return 0;
    }
    const char *only = NULL;
    if (cJSON_IsObject(tc)) {
        const cJSON *fn = cJSON_GetObjectItemCaseSensitive(tc, "function");
        const cJSON *nm = cJSON_IsObject(fn) ? cJSON_GetObjectItemCaseSensitive(fn, "name") : NULL;
        if (!cJSON_IsString(nm)) {
            return BAD_TYPE(e, "tool_choice",
                            "'tool_choice': expected {\"type\": \"function\", \"function\": {\"name\": ...}}");
        }
        only = nm->valuestring;
    }
    cJSON *list = cJSON_CreateArray();
    for (const cJSON *t = r->tools->child; t; t = t->next) {
        const cJSON *fn = cJSON_GetObjectItemCaseSensitive(t, "function");
        const cJSON *nm = cJSON_IsObject(fn) ? cJSON_GetObjectItemCaseSensitive(fn, "name") : NULL;
        if (cJSON_IsString(nm) && (!only || !strcmp(only, nm->valuestring))) {
            cJSON_AddItemToArray(list, cJSON_Duplicate(t, true));
        }
    }
    if (cJSON_GetArraySize(list) == 0) {
        cJSON_Delete(list);
        return only ? BAD(e, "tool_choice", "'tool_choice': no tool named '%.80s' in 'tools'", only)
                    : BAD(e, "tools", "'tools': no tool has a function with a name");
    }
    cJSON *opts = cJSON_CreateObject();
    cJSON_AddStringToObject(opts, "tool_choice", required ? "required" : "auto");
    cJSON_AddStringToObject(opts, "prompt", r->prompt_tail);
    char *tj = cJSON_PrintUnformatted(list), *oj = cJSON_PrintUnformatted(opts), *out = NULL;
    cJSON_Delete(list);
    cJSON_Delete(opts);
    oxl_error err = {{0}};
    int rc = tj && oj ? oxl_chat_tool_grammar(srv->model, srv->cfg->chat_template, tj, oj, &out, &err) : -1;
    free(tj);
    free(oj);
    cJSON *res = rc == 0 ? cJSON_Parse(out) : NULL;
    free(out);
    if (!res) {
        return rc == 0 ? oxl_api_fail(e, OXL_E_OUT_OF_MEMORY, NULL, "out of memory")
                       : BAD(e, "tools", "'tools': %s", err.msg);
    }
    const cJSON *gr = cJSON_GetObjectItemCaseSensitive(res, "grammar");
    const cJSON *pres = cJSON_GetObjectItemCaseSensitive(res, "preserved_token_ids");
    g->n_preserved = cJSON_GetArraySize(pres);
    if (g->n_preserved && !(g->preserved = malloc(sizeof(oxl_token) * (size_t)g->n_preserved))) {
        cJSON_Delete(res);
        return oxl_api_fail(e, OXL_E_OUT_OF_MEMORY, NULL, "out of memory");
    }
    int32_t n_pres = 0;
    for (const cJSON *t = pres ? pres->child : NULL; t; t = t->next) {
        g->preserved[n_pres++] = (oxl_token)t->valuedouble;
    }
    const cJSON *pats = cJSON_GetObjectItemCaseSensitive(res, "trigger_patterns");
    const cJSON *toks = cJSON_GetObjectItemCaseSensitive(res, "trigger_tokens");
    if (!cJSON_IsString(gr)) {
        cJSON_Delete(res);
        return required ? BAD(e, "tool_choice",
                              "'tool_choice': a required or named tool is not enforced for this model's '%s' reply "
                              "format (no tool-call grammar, as in llama.cpp)",
                              fmt)
                        : 0;
    }
    bool ok = (g->grammar = strdup(gr->valuestring)) != NULL;
    g->grammar_lazy = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(res, "lazy"));
    if (ok && g->grammar_lazy) {
        size_t n = 0;
        for (const cJSON *p = pats->child; p; p = p->next) {
            n += strlen(p->valuestring) + 1;
        }
        g->n_trigger_patterns = cJSON_GetArraySize(pats);
        g->n_trigger_tokens = cJSON_GetArraySize(toks);
        g->trigger_patterns = malloc(n + 1);
        g->trigger_tokens = malloc(sizeof(oxl_token) * ((size_t)g->n_trigger_tokens + 1));
        ok = g->trigger_patterns && g->trigger_tokens && g->n_trigger_patterns <= OXL_SRV_MAX_TRIGGER_PATTERNS;
        char *o = g->trigger_patterns;
        for (const cJSON *p = pats->child; ok && p; p = p->next) {
            size_t k = strlen(p->valuestring) + 1;
            memcpy(o, p->valuestring, k);
            o += k;
        }
        int32_t i = 0;
        for (const cJSON *t = toks->child; ok && t; t = t->next) {
            g->trigger_tokens[i++] = (oxl_token)t->valuedouble;
        }
    }
    cJSON_Delete(res);
    if (!ok) {
        return oxl_api_fail(e, OXL_E_OUT_OF_MEMORY, NULL, "out of memory");
    }
    return oxl_req_check_grammar(srv, g->grammar, "tools", e);
}

int oxl_chat_request(oxl_srv *srv, const cJSON *b, api_req *r, oxl_token **toks, int32_t *n_toks, oxl_api_error *e) {
    cJSON *msgs = NULL;
    if (oxl_req_parse_common(srv, b, r, e) < 0 || oxl_json_bool(b, "logprobs", &r->logprobs, e) < 0) {
        return -1;
    }
    long long k = 0;
    int rc = oxl_json_int(b, "top_logprobs", 0, OXL_SRV_MAX_TOP_LOGPROBS, &k, e);
    if (rc < 0) {
        return -1;
    }
    if (rc && !r->logprobs) {
        return BAD(e, "top_logprobs", "'top_logprobs' requires 'logprobs': true");
    }
    r->gen.top_logprobs = r->logprobs ? (int32_t)k : -1;
    /* llama-server's n_probs: the top alternatives of each token, as logprobs with top_logprobs */
    if ((rc = oxl_json_int(b, "n_probs", 0, OXL_SRV_MAX_TOP_LOGPROBS, &k, e)) < 0) {
        return -1;
    }
    if (rc && k > 0) {
        r->logprobs = true;
        r->gen.top_logprobs = (int32_t)k;
    }
    bool parallel = true;
    if (oxl_json_bool(b, "parallel_tool_calls", &parallel, e) < 0) {
        return -1;
    }
    if (!parallel) {
        return BAD(e, "parallel_tool_calls",
                   "'parallel_tool_calls': false is not supported by this server (a reply may hold several calls)");
    }
    const cJSON *tools = oxl_json_field(b, "tools");
    if (tools && !cJSON_IsArray(tools)) {
        return BAD_TYPE(e, "tools", "'tools': expected a list of tool definitions");
    }
    const cJSON *tc = oxl_json_field(b, "tool_choice");
    if (tc && !cJSON_IsString(tc) && !cJSON_IsObject(tc)) {
        return BAD_TYPE(e, "tool_choice", "'tool_choice': expected a string or an object");
    }
    if (tc && cJSON_IsString(tc) && strcmp(tc->valuestring, "auto") && strcmp(tc->valuestring, "none") &&
        strcmp(tc->valuestring, "required")) {
        return BAD(e, "tool_choice", "'tool_choice': '%.40s' is not one of auto, none, required", tc->valuestring);
    }
    if (tc && cJSON_IsString(tc) && !strcmp(tc->valuestring, "none")) {
        tools = NULL;
    }
    r->tools = tools && cJSON_GetArraySize(tools) > 0 ? tools : NULL;
    r->has_tools = r->tools != NULL;
    const cJSON *m = cJSON_GetObjectItemCaseSensitive(b, "messages");
    if (!m) {
        return BAD(e, "messages", "'messages' is required");
    }
    const cJSON *rf = oxl_json_field(b, "reasoning_format");
    if (rf && !cJSON_IsString(rf)) {
        return BAD_TYPE(e, "reasoning_format", "'reasoning_format': expected a string");
    }
    int reasoning = oxl_chat_reasoning_format(rf ? rf->valuestring : srv->cfg->reasoning_none ? "none" : NULL);
    if (reasoning < 0) {
        return BAD(e, "reasoning_format", "'reasoning_format': '%.40s' is not one of none, deepseek, auto",
                   rf->valuestring);
    }
    r->reasoning_none = reasoning == 0;
    rc = (msgs = oxl_req_normalize_messages(m, "messages", r->media, e)) != NULL &&
                 chat_prompt(srv, b, msgs, r, toks, n_toks, e) == 0 && tool_grammar(srv, tc, r, &r->gen, e) == 0
             ? 0
             : -1;
    cJSON_Delete(msgs);
    return rc;
}

void oxl_api_chat(oxl_srv *srv, const oxl_request *rq, oxl_reply *out) {
    oxl_media media = {0};
    api_req r = {.kind = API_CHAT, .object = chat_body, .produce = oxl_produce_chunks};
    r.media = srv->mmproj ? &media : NULL;
    oxl_api_error e = {0};
    oxl_token *toks = NULL;
    int32_t n_toks = 0;
    if (oxl_chat_request(srv, rq->json, &r, &toks, &n_toks, &e) == 0 &&
        oxl_req_check_context(srv, n_toks, "messages", &e) == 0) {
        oxl_req_run(srv, rq, &r, &toks, &n_toks, NULL, 1, out);
    } else {
        oxl_reply_error(out, &e);
    }
    free(toks);
    free(r.tools_json);
    oxl_gen_params_free(&r.gen);
    oxl_media_free(&media);
}
