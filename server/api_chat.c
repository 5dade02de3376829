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
static int chat_prompt(oxl_srv *srv, cJSON *msgs, api_req *r, oxl_token **toks, int32_t *n, oxl_api_error *e) {
    oxl_chat_args_to_objects(srv, msgs);
    char *text = NULL;
    oxl_error err = {0};
    char *msgs_json = cJSON_PrintUnformatted(msgs);
    char *tools_json = r->tools ? cJSON_PrintUnformatted(r->tools) : NULL;
    if (!msgs_json || (r->tools && !tools_json)) {
        free(msgs_json);
        free(tools_json);
        return oxl_api_fail(e, OXL_E_OUT_OF_MEMORY, NULL, "out of memory");
    }
    int rc_t = oxl_chat_apply_template(srv->model, srv->cfg->chat_template, msgs_json, tools_json, true, &text, &err);
    free(msgs_json);
    r->tools_json = tools_json; /* for the reply parser */
    if (rc_t != 0) {
        return BAD(e, "messages", "'messages': the chat template failed: %s", err.msg);
    }
    size_t len = strlen(text), keep = len < sizeof r->prompt_tail - 1 ? len : sizeof r->prompt_tail - 1;
    memcpy(r->prompt_tail, text + len - keep, keep);
    r->prompt_tail[keep] = 0;
    int rc = oxl_req_tokenize(srv, text, len, toks, n, "messages", e);
    free(text);
    return rc;
}

/* tool_choice "required" or {"type": "function", "function": {"name": N}}: a grammar from the first
 * token that admits only tool calls, as llama.cpp builds one for the reply format when the choice
 * is required (common/chat.cpp: grammar not lazy): one or more
 * <tool_call>{"name": N, "arguments": ARGS}</tool_call> blocks, ARGS following the tool's
 * parameters schema (converted as llama.cpp converts JSON schemas). The Hermes 2 Pro and generic
 * reply formats read those blocks; other formats get a 400 naming theirs. */
static int required_tool_grammar(oxl_srv *srv, const cJSON *tc, const cJSON *tools, oxl_gen_params *g,
                                 oxl_api_error *e) {
    if (!tools) {
        return BAD(e, "tool_choice", "'tool_choice': a required or named tool needs a non-empty 'tools' list");
    }
    if (g->grammar) {
        return BAD(e, "tool_choice",
                   "'tool_choice': a required or named tool cannot be combined with 'grammar', 'json_schema' or "
                   "'response_format'");
    }
    const char *fmt = oxl_chat_format(srv->model, srv->cfg->chat_template);
    if (strcmp(fmt, "Hermes 2 Pro") && strcmp(fmt, "Generic")) {
        return BAD(e, "tool_choice",
                   "'tool_choice': a required or named tool is enforced for the Hermes 2 Pro and generic reply "
                   "formats; this model's template has the '%s' format",
                   fmt);
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
    cJSON *schema = cJSON_CreateObject();
    cJSON *any = cJSON_AddArrayToObject(schema, "anyOf");
    int n = 0;
    for (const cJSON *t = tools->child; t; t = t->next) {
        const cJSON *fn = cJSON_GetObjectItemCaseSensitive(t, "function");
        const cJSON *nm = cJSON_IsObject(fn) ? cJSON_GetObjectItemCaseSensitive(fn, "name") : NULL;
        if (!cJSON_IsString(nm) || (only && strcmp(only, nm->valuestring))) {
            continue;
        }
        const cJSON *params = cJSON_GetObjectItemCaseSensitive(fn, "parameters");
        cJSON *alt = cJSON_CreateObject();
        cJSON_AddStringToObject(alt, "type", "object");
        cJSON *props = cJSON_AddObjectToObject(alt, "properties");
        cJSON_AddItemToObject(cJSON_AddObjectToObject(props, "name"), "const", cJSON_CreateString(nm->valuestring));
        cJSON_AddItemToObject(props, "arguments",
                              cJSON_IsObject(params) ? cJSON_Duplicate(params, true) : cJSON_CreateObject());
        cJSON *req = cJSON_AddArrayToObject(alt, "required");
        cJSON_AddItemToArray(req, cJSON_CreateString("name"));
        cJSON_AddItemToArray(req, cJSON_CreateString("arguments"));
        cJSON_AddItemToArray(any, alt);
        n++;
    }
    if (n == 0) {
        cJSON_Delete(schema);
        return BAD(e, "tool_choice", "'tool_choice': no tool named '%.80s' in 'tools'", only ? only : "");
    }
    char *text = cJSON_PrintUnformatted(schema);
    cJSON_Delete(schema);
    char *call = NULL;
    oxl_error err = {{0}};
    int rc = text ? oxl_json_schema_to_grammar(text, &call, &err) : -1;
    free(text);
    if (rc != 0) {
        return BAD(e, "tools", "'tools': a tool's parameters are not a usable JSON schema: %s", err.msg);
    }
    /* the schema's root becomes the call; the new root wraps calls in the format's tags */
    char *at = strncmp(call, "root ::= ", 9) == 0 ? call : strstr(call, "\nroot ::= ");
    if (!at) {
        free(call);
        return oxl_api_fail(e, OXL_E_GENERATION_FAILED, "tools", "the tool-call grammar has no root rule");
    }
    at += at == call ? 0 : 1;
    memcpy(at, "tool", 4); /* "root ::= " -> "tool ::= " (the converter names no rule "tool") */
    static const char wrap[] = "root ::= call-block (\"\\n\" call-block)*\n"
                               "call-block ::= \"<tool_call>\" \"\\n\"? tool \"\\n\"? \"</tool_call>\"\n";
    size_t n_call = strlen(call);
    g->grammar = malloc(n_call + sizeof wrap + 2);
    if (!g->grammar) {
        free(call);
        return oxl_api_fail(e, OXL_E_OUT_OF_MEMORY, NULL, "out of memory");
    }
    memcpy(g->grammar, call, n_call);
    memcpy(g->grammar + n_call, wrap, sizeof wrap);
    free(call);
    return oxl_req_check_grammar(srv, g->grammar, "tools", e);
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
    if (tc && cJSON_IsString(tc) && strcmp(tc->valuestring, "auto") && strcmp(tc->valuestring, "none") &&
        strcmp(tc->valuestring, "required")) {
        BAD(&e, "tool_choice", "'tool_choice': '%.40s' is not one of auto, none, required", tc->valuestring);
        goto fail;
    }
    if (tc && cJSON_IsString(tc) && !strcmp(tc->valuestring, "none")) {
        tools = NULL;
    }
    r.tools = tools && cJSON_GetArraySize(tools) > 0 ? tools : NULL;
    r.has_tools = r.tools != NULL;
    if (tc && (cJSON_IsObject(tc) || !strcmp(tc->valuestring, "required")) &&
        required_tool_grammar(srv, tc, r.tools, &r.gen, &e) < 0) {
        goto fail;
    }
    const cJSON *m = cJSON_GetObjectItemCaseSensitive(b, "messages");
    if (!m) {
        BAD(&e, "messages", "'messages' is required");
        goto fail;
    }
    const cJSON *rf = oxl_json_field(b, "reasoning_format");
    if (rf && !cJSON_IsString(rf)) {
        BAD_TYPE(&e, "reasoning_format", "'reasoning_format': expected a string");
        goto fail;
    }
    int reasoning = oxl_chat_reasoning_format(rf ? rf->valuestring : srv->cfg->reasoning_none ? "none" : NULL);
    if (reasoning < 0) {
        BAD(&e, "reasoning_format", "'reasoning_format': '%.40s' is not one of none, deepseek, auto", rf->valuestring);
        goto fail;
    }
    r.reasoning_none = reasoning == 0;
    if (!(msgs = oxl_req_normalize_messages(m, "messages", &e)) || chat_prompt(srv, msgs, &r, &toks, &n_toks, &e) < 0 ||
        oxl_req_check_context(srv, n_toks, "messages", &e) < 0) {
        goto fail;
    }
    cJSON_Delete(msgs);
    oxl_req_run(srv, rq, &r, &toks, &n_toks, NULL, 1, out);
    free(toks);
    free(r.tools_json);
    oxl_gen_params_free(&r.gen);
    return;
fail:
    cJSON_Delete(msgs);
    free(toks);
    free(r.tools_json);
    oxl_gen_params_free(&r.gen);
    oxl_reply_error(out, &e);
}
