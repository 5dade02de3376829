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
        cJSON *msg = cJSON_AddObjectToObject(ch, "message");
        cJSON_AddStringToObject(msg, "role", "assistant");
        size_t content_len = c->len;
        cJSON *calls = r->has_tools ? oxl_tool_calls_parse(text, &content_len) : NULL;
        if (calls && content_len == 0) {
            cJSON_AddNullToObject(msg, "content");
        } else {
            cJSON_AddItemToObject(msg, "content", oxl_json_text(text, content_len));
        }
        cJSON_AddNullToObject(msg, "refusal");
        if (calls) {
            cJSON_AddItemToObject(msg, "tool_calls", calls);
        }
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

void oxl_api_chat(oxl_srv *srv, const oxl_request *rq, oxl_reply *out) {
    api_req r = {.kind = API_CHAT, .object = chat_body, .produce = oxl_produce_chunks};
    oxl_api_error e = {0};
    const cJSON *b = rq->json;
    oxl_token *toks = NULL;
    int32_t n_toks = 0;
    cJSON *msgs = NULL;
    if (oxl_req_parse_common(srv, b, &r, &e) < 0 || oxl_json_bool(b, "logprobs", &r.logprobs, &e) < 0) {
        goto fail;
    }
    long long k = 0;
    int rc = oxl_json_int(b, "top_logprobs", 0, OXL_SRV_MAX_TOP_LOGPROBS, &k, &e);
    if (rc < 0) {
        goto fail;
    }
    if (rc && !r.logprobs) {
        BAD(&e, "top_logprobs", "'top_logprobs' requires 'logprobs': true");
        goto fail;
    }
    r.gen.top_logprobs = r.logprobs ? (int32_t)k : -1;
    /* llama-server's n_probs: the top alternatives of each token, as logprobs with top_logprobs */
    if ((rc = oxl_json_int(b, "n_probs", 0, OXL_SRV_MAX_TOP_LOGPROBS, &k, &e)) < 0) {
        goto fail;
    }
    if (rc && k > 0) {
        r.logprobs = true;
        r.gen.top_logprobs = (int32_t)k;
    }
    bool parallel = true;
    if (oxl_json_bool(b, "parallel_tool_calls", &parallel, &e) < 0) {
        goto fail;
    }
    if (!parallel) {
        BAD(&e, "parallel_tool_calls",
            "'parallel_tool_calls': false is not supported by this server (a reply may hold several calls)");
        goto fail;
    }
    const cJSON *tools = oxl_json_field(b, "tools");
    if (tools && !cJSON_IsArray(tools)) {
        BAD_TYPE(&e, "tools", "'tools': expected a list of tool definitions");
        goto fail;
    }
    const cJSON *tc = oxl_json_field(b, "tool_choice");
    if (tc && !cJSON_IsString(tc) && !cJSON_IsObject(tc)) {
        BAD_TYPE(&e, "tool_choice", "'tool_choice': expected a string or an object");
        goto fail;
    }
    if (tc && (cJSON_IsObject(tc) || strcmp(tc->valuestring, "required") == 0)) {
        BAD(&e, "tool_choice",
            "'tool_choice': 'required' and a named function need grammar-constrained sampling, which this server "
            "does not have yet; use 'auto' or 'none'");
        goto fail;
    }
    if (tc && cJSON_IsString(tc) && strcmp(tc->valuestring, "auto") && strcmp(tc->valuestring, "none")) {
        BAD(&e, "tool_choice", "'tool_choice': '%.40s' is not one of auto, none, required", tc->valuestring);
        goto fail;
    }
    if (tc && cJSON_IsString(tc) && !strcmp(tc->valuestring, "none")) {
        tools = NULL;
    }
    r.tools = tools && cJSON_GetArraySize(tools) > 0 ? tools : NULL;
    r.has_tools = r.tools != NULL;
    const cJSON *m = cJSON_GetObjectItemCaseSensitive(b, "messages");
    if (!m) {
        BAD(&e, "messages", "'messages' is required");
        goto fail;
    }
    if (!(msgs = oxl_req_normalize_messages(m, "messages", &e)) ||
        oxl_req_chat_prompt(srv, msgs, r.tools, &toks, &n_toks, "messages", &e) < 0 ||
        oxl_req_check_context(srv, n_toks, "messages", &e) < 0) {
        goto fail;
    }
    cJSON_Delete(msgs);
    oxl_req_run(srv, rq, &r, &toks, &n_toks, NULL, 1, out);
    free(toks);
    oxl_gen_params_free(&r.gen);
    return;
fail:
    cJSON_Delete(msgs);
    free(toks);
    oxl_gen_params_free(&r.gen);
    oxl_reply_error(out, &e);
}
