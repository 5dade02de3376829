/* Chat replies as messages (toolcall.h). */
#include "toolcall.h"
#include "api.h"

#include <stdlib.h>
#include <string.h>

static cJSON *chat_reply(oxl_srv *srv, const api_req *r, const char *text, size_t len, bool partial, bool ids) {
    char *t = strndup(text ? text : "", text ? len : 0);
    cJSON *opts = cJSON_CreateObject();
    cJSON_AddStringToObject(opts, "reasoning_format", r->reasoning_none ? "none" : "deepseek");
    /* the definitions type the calls (Qwen3-Coder's XML parameters) */
    cJSON *tools = r->has_tools && r->tools_json ? cJSON_Parse(r->tools_json) : NULL;
    cJSON_AddItemToObject(opts, "tools", tools ? tools : cJSON_CreateBool(r->has_tools));
    cJSON_AddBoolToObject(opts, "partial", partial);
    cJSON_AddBoolToObject(opts, "generate_ids", ids);
    cJSON_AddStringToObject(opts, "prompt", r->prompt_tail);
    char *oj = cJSON_PrintUnformatted(opts), *out = NULL;
    cJSON_Delete(opts);
    cJSON *msg = NULL;
    if (t && oj && oxl_chat_parse(srv->model, srv->cfg->chat_template, t, oj, &out, NULL) == 0) {
        msg = cJSON_Parse(out);
    }
    free(out);
    free(oj);
    if (!msg) {
        msg = cJSON_CreateObject();
        cJSON_AddStringToObject(msg, "role", "assistant");
        cJSON_AddStringToObject(msg, "content", t ? t : "");
    }
    free(t);
    return msg;
}

cJSON *oxl_chat_reply(oxl_srv *srv, const api_req *r, const char *text, size_t len, bool partial) {
    return chat_reply(srv, r, text, len, partial, true);
}

cJSON *oxl_chat_reply_stream(oxl_srv *srv, const api_req *r, const char *text, size_t len, bool partial) {
    return chat_reply(srv, r, text, len, partial, false);
}

static bool takes_object_args(oxl_srv *srv) {
    static const char probe[] =
        "[{\"role\": \"user\", \"content\": \"User message\"}, {\"role\": \"assistant\", \"content\": \"\", "
        "\"tool_calls\": [{\"id\": \"call00001\", \"type\": \"function\", \"function\": {\"name\": \"tool1\", "
        "\"arguments\": {\"arg\": \"oxl-probe-7e1\"}}}]}, {\"role\": \"tool\", \"content\": \"Tool response\", "
        "\"tool_call_id\": \"call00001\"}, {\"role\": \"assistant\", \"content\": \"The tool response was 'tool "
        "response'\"}, {\"role\": \"user\", \"content\": \"User message\"}]";
    static const char tools[] =
        "[{\"type\": \"function\", \"function\": {\"name\": \"tool1\", \"description\": \"Tool description\", "
        "\"parameters\": {\"type\": \"object\", \"properties\": {\"arg\": {\"type\": \"string\"}}, \"required\": "
        "[\"arg\"]}}}]";
    char *out = NULL;
    bool yes = oxl_chat_apply_template(srv->model, srv->cfg->chat_template, probe, tools, false, &out, NULL) == 0 &&
               strstr(out, "oxl-probe-7e1") != NULL;
    free(out);
    return yes;
}

void oxl_chat_args_to_objects(oxl_srv *srv, cJSON *msgs) {
    int probed = 0; /* 1: objects, -1: text */
    for (cJSON *m = msgs ? msgs->child : NULL; m; m = m->next) {
        cJSON *calls = cJSON_GetObjectItemCaseSensitive(m, "tool_calls");
        for (cJSON *c = cJSON_IsArray(calls) ? calls->child : NULL; c; c = c->next) {
            cJSON *fn = cJSON_GetObjectItemCaseSensitive(c, "function");
            cJSON *args = cJSON_GetObjectItemCaseSensitive(fn, "arguments");
            if (!cJSON_IsString(args)) {
                continue;
            }
            if (probed == 0) {
                probed = takes_object_args(srv) ? 1 : -1;
            }
            if (probed < 0) {
                return;
            }
            cJSON *obj = cJSON_Parse(args->valuestring);
            if (cJSON_IsObject(obj)) {
                cJSON_ReplaceItemInObjectCaseSensitive(fn, "arguments", obj);
            } else {
                cJSON_Delete(obj);
            }
        }
    }
}
