/* POST /v1/messages and POST /v1/messages/count_tokens: Anthropic's Messages API. A request becomes
 * a chat completions body as llama-server converts it (tools/server/server-chat.cpp,
 * server_chat_convert_anthropic_to_oai) and goes through the chat path (oxl_chat_request: the chat
 * template, tools, tool-call parsing, sampling); the reply is a message object, or its stream of
 * events, as llama-server writes them (tools/server/server-task.cpp, to_json_anthropic and
 * to_json_anthropic_stream) in the shapes Anthropic documents. Errors are Anthropic's
 * {"type": "error", "error": {"type", "message"}}. */
#include "generate.h"
#include "json_read.h"
#include "routes.h"
#include "sse.h"
#include "toolcall.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* --- the request ---------------------------------------------------------------------------------- */

/* Each block kind's fields; cache_control is a caching hint (a slot's cache is reused whenever a
 * prompt shares its prefix) and changes no output. */
static const char *const text_keys[] = {"type", "text", "cache_control", "citations", NULL};
static const char *const tool_use_keys[] = {"type", "id", "name", "input", "cache_control", NULL};
static const char *const tool_result_keys[] = {"type", "tool_use_id", "content", "is_error", "cache_control", NULL};
static const char *const thinking_keys[] = {"type", "thinking", "signature", NULL};

static bool in_list(const char *const *list, const char *name) {
    for (; *list; list++) {
        if (!strcmp(*list, name)) {
            return true;
        }
    }
    return false;
}

/* 400 naming the first member of the object at where that keys does not list. */
static int check_keys(const cJSON *o, const char *const *keys, const char *where, oxl_api_error *e) {
    for (const cJSON *f = o->child; f; f = f->next) {
        if (f->string && !in_list(keys, f->string)) {
            return BAD(e, where, "'%s.%.60s' is not a field of this block; remove it from the request", where,
                       f->string);
        }
    }
    return 0;
}

/* A required string member name of the object at where. */
static const char *need_str(const cJSON *o, const char *name, const char *where, oxl_api_error *e) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, name);
    if (!cJSON_IsString(v)) {
        BAD_TYPE(e, where, "'%s.%s': expected a string", where, name);
        return NULL;
    }
    return v->valuestring;
}

/* A text block ({"type": "text", "text": ...}, no citations) at where: its text, or NULL with e set. */
static const char *text_block(const cJSON *blk, const char *where, oxl_api_error *e) {
    if (check_keys(blk, text_keys, where, e) < 0) {
        return NULL;
    }
    const cJSON *cit = cJSON_GetObjectItemCaseSensitive(blk, "citations");
    if (cit && !cJSON_IsNull(cit) && !(cJSON_IsArray(cit) && cJSON_GetArraySize(cit) == 0)) {
        BAD(e, where, "'%s.citations': citations are not supported by this server", where);
        return NULL;
    }
    return need_str(blk, "text", where, e);
}

/* A block's type at where, or NULL with e set. */
static const char *block_type(const cJSON *blk, const char *where, oxl_api_error *e) {
    if (!cJSON_IsObject(blk)) {
        BAD_TYPE(e, where, "'%s': expected a content block object", where);
        return NULL;
    }
    return need_str(blk, "type", where, e);
}

static int unsupported_block(const char *type, const char *where, oxl_api_error *e) {
    if (!strcmp(type, "image")) {
        return BAD(e, where, "'%s': image blocks go in a message's content, not here", where);
    }
    return BAD(e, where, "'%s': content blocks of type '%.40s' are not supported by this server", where, type);
}

/* An image block {"type": "image", "source": {"type": "base64", "media_type", "data"}} at where: its
 * image goes to media and the text part of its place (the media marker) to parts, as llama-server
 * turns the block into an image_url part of a data: URI. A "url" source is refused (the server makes
 * no network requests), as http(s) image_url parts are; media NULL: the server has no projector. */
static int image_block(const cJSON *blk, const char *where, oxl_media *media, cJSON *parts, oxl_api_error *e) {
    static const char *const keys[] = {"type", "source", "cache_control", NULL};
    static const char *const source_keys[] = {"type", "media_type", "data", "url", NULL};
    if (check_keys(blk, keys, where, e) < 0) {
        return -1;
    }
    if (!media) {
        return BAD(e, where,
                   "'%s': image blocks need the model's vision projector: start the server with --mmproj FILE", where);
    }
    char w[128];
    snprintf(w, sizeof w, "%s.source", where);
    const cJSON *src = cJSON_GetObjectItemCaseSensitive(blk, "source");
    if (!cJSON_IsObject(src)) {
        return BAD_TYPE(e, w, "'%s': expected an object {\"type\": \"base64\", \"media_type\", \"data\"}", w);
    }
    const char *type = check_keys(src, source_keys, w, e) < 0 ? NULL : need_str(src, "type", w, e);
    if (!type) {
        return -1;
    }
    if (!strcmp(type, "url")) {
        return BAD(e, w,
                   "'%s': remote image URLs are not fetched (the server makes no network requests); send the image "
                   "as a base64 source ({\"type\": \"base64\", \"media_type\": \"image/png\", \"data\": ...})",
                   w);
    }
    if (strcmp(type, "base64")) {
        return BAD(e, w, "'%s.type': '%.40s' is not one of base64, url", w, type);
    }
    const char *mt = need_str(src, "media_type", w, e), *data = mt ? need_str(src, "data", w, e) : NULL;
    if (!data) {
        return -1;
    }
    if (strcmp(mt, "image/png") && strcmp(mt, "image/jpeg") && strcmp(mt, "image/webp")) {
        return BAD(e, w, "'%s.media_type': '%.40s' is not one of image/png, image/jpeg, image/webp", w, mt);
    }
    char wd[144];
    snprintf(wd, sizeof wd, "%s.data", w);
    if (oxl_media_add_base64(media, data, wd, e) < 0) {
        return -1;
    }
    cJSON *p = cJSON_CreateObject();
    cJSON_AddStringToObject(p, "type", "text");
    cJSON_AddStringToObject(p, "text", OXL_MEDIA_MARKER);
    cJSON_AddItemToArray(parts, p);
    return 0;
}

/* A tool_result's content (a string, or text blocks joined without a separator as llama-server joins
 * them) as a tool message. */
static cJSON *tool_message(const cJSON *blk, const char *where, oxl_api_error *e) {
    const char *id = check_keys(blk, tool_result_keys, where, e) < 0 ? NULL : need_str(blk, "tool_use_id", where, e);
    if (!id) {
        return NULL;
    }
    const cJSON *err = cJSON_GetObjectItemCaseSensitive(blk, "is_error");
    if (err && !cJSON_IsBool(err)) {
        BAD_TYPE(e, where, "'%s.is_error': expected a boolean", where);
        return NULL;
    }
    const cJSON *c = oxl_json_field(blk, "content");
    size_t cap = 1;
    if (c && cJSON_IsArray(c)) {
        int k = 0;
        for (const cJSON *p = c->child; p; p = p->next, k++) {
            char w[128];
            snprintf(w, sizeof w, "%s.content[%d]", where, k);
            const char *type = block_type(p, w, e), *t = NULL;
            if (!type) {
                return NULL;
            }
            if (strcmp(type, "text")) {
                unsupported_block(type, w, e);
                return NULL;
            }
            if (!(t = text_block(p, w, e))) {
                return NULL;
            }
            cap += strlen(t);
        }
    } else if (c && !cJSON_IsString(c)) {
        BAD_TYPE(e, where, "'%s.content': expected a string or a list of text blocks", where);
        return NULL;
    }
    char *text = malloc(cap + (cJSON_IsString(c) ? strlen(c->valuestring) : 0));
    if (!text) {
        oxl_api_fail(e, OXL_E_OUT_OF_MEMORY, NULL, "out of memory");
        return NULL;
    }
    text[0] = 0;
    if (cJSON_IsString(c)) {
        strcpy(text, c->valuestring);
    }
    for (const cJSON *p = cJSON_IsArray(c) ? c->child : NULL; p; p = p->next) {
        strcat(text, cJSON_GetObjectItemCaseSensitive(p, "text")->valuestring);
    }
    cJSON *m = cJSON_CreateObject();
    cJSON_AddStringToObject(m, "role", "tool");
    cJSON_AddStringToObject(m, "tool_call_id", id);
    cJSON_AddStringToObject(m, "content", text);
    free(text);
    return m;
}

/* One Anthropic message (index i) as chat messages appended to out: its text blocks as content parts,
 * tool_use blocks as tool_calls (input as JSON text), thinking blocks as reasoning_content, then each
 * tool_result as a tool message, in llama-server's order. */
static int convert_message(const cJSON *m, int i, cJSON *out, oxl_media *media, oxl_api_error *e) {
    char where[64];
    snprintf(where, sizeof where, "messages[%d]", i);
    if (!cJSON_IsObject(m)) {
        return BAD_TYPE(e, where, "'%s': expected a message object", where);
    }
    static const char *const keys[] = {"role", "content", NULL};
    for (const cJSON *f = m->child; f; f = f->next) {
        if (f->string && !in_list(keys, f->string)) {
            return BAD(e, where, "'%s.%.60s' is not a field of a message; remove it from the request", where,
                       f->string);
        }
    }
    const char *role = need_str(m, "role", where, e);
    if (!role) {
        return -1;
    }
    const bool user = !strcmp(role, "user");
    if (!user && strcmp(role, "assistant")) {
        return BAD(e, where, "'%s.role': '%.40s' is not one of user, assistant (the system prompt is 'system')", where,
                   role);
    }
    const cJSON *c = cJSON_GetObjectItemCaseSensitive(m, "content");
    if (cJSON_IsString(c)) {
        cJSON *nm = cJSON_CreateObject();
        cJSON_AddStringToObject(nm, "role", role);
        cJSON_AddStringToObject(nm, "content", c->valuestring);
        cJSON_AddItemToArray(out, nm);
        return 0;
    }
    if (!cJSON_IsArray(c)) {
        return BAD_TYPE(e, where, "'%s.content': expected a string or a list of content blocks", where);
    }
    cJSON *parts = cJSON_CreateArray(), *calls = cJSON_CreateArray(), *results = cJSON_CreateArray();
    char *reasoning = NULL;
    size_t n_reasoning = 0;
    int k = 0, rc = 0;
    for (const cJSON *blk = c->child; blk && rc == 0; blk = blk->next, k++) {
        char w[96];
        snprintf(w, sizeof w, "%s.content[%d]", where, k);
        const char *type = block_type(blk, w, e), *t;
        if (!type) {
            rc = -1;
        } else if (!strcmp(type, "text")) {
            if (!(t = text_block(blk, w, e))) {
                rc = -1;
                break;
            }
            cJSON *p = cJSON_CreateObject();
            cJSON_AddStringToObject(p, "type", "text");
            cJSON_AddStringToObject(p, "text", t);
            cJSON_AddItemToArray(parts, p);
        } else if (!strcmp(type, "image")) {
            rc = image_block(blk, w, media, parts, e);
        } else if (!strcmp(type, "tool_use") && !user) {
            const char *id = NULL, *name = NULL;
            const cJSON *in = cJSON_GetObjectItemCaseSensitive(blk, "input");
            if (check_keys(blk, tool_use_keys, w, e) < 0 || !(id = need_str(blk, "id", w, e)) ||
                !(name = need_str(blk, "name", w, e))) {
                rc = -1;
                break;
            }
            if (!cJSON_IsObject(in)) {
                rc = BAD_TYPE(e, w, "'%s.input': expected an object", w);
                break;
            }
            char *args = cJSON_PrintUnformatted(in);
            cJSON *call = cJSON_CreateObject();
            cJSON_AddStringToObject(call, "id", id);
            cJSON_AddStringToObject(call, "type", "function");
            cJSON *fn = cJSON_AddObjectToObject(call, "function");
            cJSON_AddStringToObject(fn, "name", name);
            cJSON_AddStringToObject(fn, "arguments", args ? args : "{}");
            free(args);
            cJSON_AddItemToArray(calls, call);
        } else if (!strcmp(type, "tool_result") && user) {
            cJSON *tm = tool_message(blk, w, e);
            if (!tm) {
                rc = -1;
                break;
            }
            cJSON_AddItemToArray(results, tm);
        } else if (!strcmp(type, "thinking") && !user) {
            if (check_keys(blk, thinking_keys, w, e) < 0 || !(t = need_str(blk, "thinking", w, e))) {
                rc = -1;
                break;
            }
            size_t n = strlen(t);
            char *grown = realloc(reasoning, n_reasoning + n + 1);
            if (!grown) {
                rc = oxl_api_fail(e, OXL_E_OUT_OF_MEMORY, NULL, "out of memory");
                break;
            }
            reasoning = grown;
            memcpy(reasoning + n_reasoning, t, n + 1);
            n_reasoning += n;
        } else if (!strcmp(type, "tool_use") || !strcmp(type, "tool_result") || !strcmp(type, "thinking")) {
            rc = BAD(e, w, "'%s': a %s block belongs in %s message", w, type,
                     strcmp(type, "tool_result") ? "an assistant" : "a user");
        } else {
            rc = unsupported_block(type, w, e);
        }
    }
    if (rc == 0 && (cJSON_GetArraySize(parts) > 0 || cJSON_GetArraySize(calls) > 0 || n_reasoning > 0)) {
        cJSON *nm = cJSON_CreateObject();
        cJSON_AddStringToObject(nm, "role", role);
        if (cJSON_GetArraySize(parts) > 0) {
            cJSON_AddItemToObject(nm, "content", parts);
            parts = NULL;
        } else {
            cJSON_AddStringToObject(nm, "content", "");
        }
        if (cJSON_GetArraySize(calls) > 0) {
            cJSON_AddItemToObject(nm, "tool_calls", calls);
            calls = NULL;
        }
        if (n_reasoning > 0) {
            cJSON_AddStringToObject(nm, "reasoning_content", reasoning);
        }
        cJSON_AddItemToArray(out, nm);
    }
    while (rc == 0 && results->child) {
        cJSON_AddItemToArray(out, cJSON_DetachItemViaPointer(results, results->child));
    }
    cJSON_Delete(parts);
    cJSON_Delete(calls);
    cJSON_Delete(results);
    free(reasoning);
    return rc;
}

/* 'system': a string, or text blocks joined without a separator (llama-server). */
static int convert_system(const cJSON *sys, cJSON *out, oxl_api_error *e) {
    if (!sys) {
        return 0;
    }
    size_t cap = 1;
    if (cJSON_IsArray(sys)) {
        int k = 0;
        for (const cJSON *blk = sys->child; blk; blk = blk->next, k++) {
            char w[64];
            snprintf(w, sizeof w, "system[%d]", k);
            const char *type = block_type(blk, w, e), *t = NULL;
            if (!type) {
                return -1;
            }
            if (strcmp(type, "text")) {
                return unsupported_block(type, w, e);
            }
            if (!(t = text_block(blk, w, e))) {
                return -1;
            }
            cap += strlen(t);
        }
    } else if (cJSON_IsString(sys)) {
        cap += strlen(sys->valuestring);
    } else {
        return BAD_TYPE(e, "system", "'system': expected a string or a list of text blocks");
    }
    char *text = malloc(cap);
    if (!text) {
        return oxl_api_fail(e, OXL_E_OUT_OF_MEMORY, NULL, "out of memory");
    }
    strcpy(text, cJSON_IsString(sys) ? sys->valuestring : "");
    for (const cJSON *blk = cJSON_IsArray(sys) ? sys->child : NULL; blk; blk = blk->next) {
        strcat(text, cJSON_GetObjectItemCaseSensitive(blk, "text")->valuestring);
    }
    cJSON *m = cJSON_CreateObject();
    cJSON_AddStringToObject(m, "role", "system");
    cJSON_AddStringToObject(m, "content", text);
    free(text);
    cJSON_AddItemToArray(out, m);
    return 0;
}

/* 'tools': [{name, description, input_schema}] as function tools; Anthropic's server tools (a type
 * other than custom) are refused. */
static cJSON *convert_tools(const cJSON *tools, oxl_api_error *e) {
    if (!cJSON_IsArray(tools)) {
        BAD_TYPE(e, "tools", "'tools': expected a list of tool definitions");
        return NULL;
    }
    static const char *const keys[] = {"type", "name", "description", "input_schema", "cache_control", NULL};
    cJSON *out = cJSON_CreateArray();
    int k = 0;
    for (const cJSON *t = tools->child; t; t = t->next, k++) {
        char w[64];
        snprintf(w, sizeof w, "tools[%d]", k);
        const cJSON *type = cJSON_GetObjectItemCaseSensitive(t, "type");
        const cJSON *schema = cJSON_GetObjectItemCaseSensitive(t, "input_schema");
        const cJSON *desc = oxl_json_field(t, "description");
        const char *name = NULL;
        if (!cJSON_IsObject(t)) {
            BAD_TYPE(e, w, "'%s': expected a tool definition object", w);
        } else if (type && !cJSON_IsNull(type) && (!cJSON_IsString(type) || strcmp(type->valuestring, "custom"))) {
            char b[80];
            oxl_json_brief(type, b, sizeof b);
            BAD(e, w, "'%s.type': %s is not supported by this server (client tools only: 'custom' or no type)", w, b);
        } else if (check_keys(t, keys, w, e) == 0 && (name = need_str(t, "name", w, e)) != NULL) {
            if (desc && !cJSON_IsString(desc)) {
                BAD_TYPE(e, w, "'%s.description': expected a string", w);
            } else if (!cJSON_IsObject(schema)) {
                BAD_TYPE(e, w, "'%s.input_schema': expected a JSON schema object", w);
            } else {
                cJSON *ft = cJSON_CreateObject();
                cJSON_AddStringToObject(ft, "type", "function");
                cJSON *fn = cJSON_AddObjectToObject(ft, "function");
                cJSON_AddStringToObject(fn, "name", name);
                cJSON_AddStringToObject(fn, "description", desc ? desc->valuestring : "");
                cJSON_AddItemToObject(fn, "parameters", cJSON_Duplicate(schema, true));
                cJSON_AddItemToArray(out, ft);
                continue;
            }
        }
        cJSON_Delete(out);
        return NULL;
    }
    return out;
}

/* 'tool_choice': auto, any (the chat route's required), tool (a named function; llama-server
 * makes it required, any tool), none. */
static cJSON *convert_tool_choice(const cJSON *tc, oxl_api_error *e) {
    static const char *const keys[] = {"type", "name", "disable_parallel_tool_use", NULL};
    const char *type = NULL;
    if (!cJSON_IsObject(tc)) {
        BAD_TYPE(e, "tool_choice", "'tool_choice': expected an object {\"type\": auto|any|tool|none}");
        return NULL;
    }
    for (const cJSON *f = tc->child; f; f = f->next) {
        if (f->string && !in_list(keys, f->string)) {
            BAD(e, "tool_choice", "'tool_choice.%.60s' is not a field of tool_choice", f->string);
            return NULL;
        }
    }
    if (!(type = need_str(tc, "type", "tool_choice", e))) {
        return NULL;
    }
    const cJSON *dp = cJSON_GetObjectItemCaseSensitive(tc, "disable_parallel_tool_use");
    if (dp && !cJSON_IsBool(dp)) {
        BAD_TYPE(e, "tool_choice", "'tool_choice.disable_parallel_tool_use': expected a boolean");
        return NULL;
    }
    if (cJSON_IsTrue(dp)) {
        BAD(e, "tool_choice",
            "'tool_choice.disable_parallel_tool_use': true is not supported by this server (a reply may hold "
            "several tool_use blocks)");
        return NULL;
    }
    if (!strcmp(type, "tool")) {
        const char *name = need_str(tc, "name", "tool_choice", e);
        if (!name) {
            return NULL;
        }
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "type", "function");
        cJSON_AddStringToObject(cJSON_AddObjectToObject(o, "function"), "name", name);
        return o;
    }
    if (cJSON_GetObjectItemCaseSensitive(tc, "name")) {
        BAD(e, "tool_choice", "'tool_choice.name' is only allowed with type 'tool'");
        return NULL;
    }
    if (!strcmp(type, "auto") || !strcmp(type, "none")) {
        return cJSON_CreateString(type);
    }
    if (!strcmp(type, "any")) {
        return cJSON_CreateString("required");
    }
    BAD(e, "tool_choice", "'tool_choice.type': '%.40s' is not one of auto, any, tool, none", type);
    return NULL;
}

/* 'thinking': {"type": "disabled"} is what this server does (no thinking budget; thoughts a template
 * opens still come back as thinking blocks); a budget is refused. */
static int check_thinking(const cJSON *th, oxl_api_error *e) {
    const cJSON *type = cJSON_IsObject(th) ? cJSON_GetObjectItemCaseSensitive(th, "type") : NULL;
    if (!cJSON_IsString(type)) {
        return BAD_TYPE(e, "thinking", "'thinking': expected an object {\"type\": \"enabled\"|\"disabled\"}");
    }
    if (!strcmp(type->valuestring, "disabled") && cJSON_GetArraySize(th) == 1) {
        return 0;
    }
    if (!strcmp(type->valuestring, "enabled") || !strcmp(type->valuestring, "adaptive")) {
        return BAD(e, "thinking",
                   "'thinking': type '%s' (a thinking budget) is not supported by this server; omit 'thinking' or "
                   "send {\"type\": \"disabled\"}",
                   type->valuestring);
    }
    return BAD(e, "thinking", "'thinking': expected {\"type\": \"enabled\"|\"disabled\"}");
}

/* 'metadata': {"user_id": string}; it does not change generation (as at Anthropic). */
static int check_metadata(const cJSON *md, oxl_api_error *e) {
    if (!cJSON_IsObject(md)) {
        return BAD_TYPE(e, "metadata", "'metadata': expected an object");
    }
    for (const cJSON *f = md->child; f; f = f->next) {
        if (strcmp(f->string, "user_id")) {
            return BAD(e, "metadata", "'metadata.%.60s' is not a field of metadata (only user_id)", f->string);
        }
        if (!cJSON_IsString(f) && !cJSON_IsNull(f)) {
            return BAD_TYPE(e, "metadata", "'metadata.user_id': expected a string");
        }
    }
    return 0;
}

/* The chat completions body of an Anthropic request b (count: the count_tokens route, whose body has
 * no generation fields), or NULL with e naming the field at fault. */
static cJSON *to_chat_body(const cJSON *b, bool count, oxl_media *media, oxl_api_error *e) {
    if (oxl_req_check_anthropic_fields(b, count, e) < 0) {
        return NULL;
    }
    const cJSON *msgs = cJSON_GetObjectItemCaseSensitive(b, "messages");
    if (!msgs) {
        BAD(e, "messages", "'messages' is required");
        return NULL;
    }
    if (!cJSON_IsArray(msgs) || cJSON_GetArraySize(msgs) == 0) {
        BAD_TYPE(e, "messages", "'messages': expected a non-empty list of messages");
        return NULL;
    }
    if (!count && !oxl_json_field(b, "max_tokens")) {
        BAD(e, "max_tokens", "'max_tokens' is required");
        return NULL;
    }
    cJSON *o = cJSON_CreateObject();
    cJSON *om = cJSON_AddArrayToObject(o, "messages");
    int i = 0, rc = convert_system(oxl_json_field(b, "system"), om, e);
    for (const cJSON *m = msgs->child; m && rc == 0; m = m->next, i++) {
        rc = convert_message(m, i, om, media, e);
    }
    const cJSON *v;
    if (rc == 0 && (v = oxl_json_field(b, "tools"))) {
        cJSON *t = convert_tools(v, e);
        rc = t ? 0 : -1;
        if (t) {
            cJSON_AddItemToObject(o, "tools", t);
        }
    }
    if (rc == 0 && (v = oxl_json_field(b, "tool_choice"))) {
        cJSON *t = convert_tool_choice(v, e);
        rc = t ? 0 : -1;
        if (t) {
            cJSON_AddItemToObject(o, "tool_choice", t);
        }
    }
    if (rc == 0 && (v = oxl_json_field(b, "stop_sequences"))) {
        int k = 0;
        if (!cJSON_IsArray(v)) {
            rc = BAD_TYPE(e, "stop_sequences", "'stop_sequences': expected a list of strings");
        } else if (cJSON_GetArraySize(v) > OXL_SRV_MAX_STOP) {
            rc = BAD(e, "stop_sequences", "'stop_sequences': at most %d sequences", OXL_SRV_MAX_STOP);
        }
        for (const cJSON *s = rc == 0 ? v->child : NULL; s && rc == 0; s = s->next, k++) {
            if (!cJSON_IsString(s)) {
                rc = BAD_TYPE(e, "stop_sequences", "'stop_sequences[%d]': expected a string", k);
            }
        }
        if (rc == 0) {
            cJSON_AddItemToObject(o, "stop", cJSON_Duplicate(v, true));
        }
    }
    if (rc == 0 && (v = oxl_json_field(b, "thinking"))) {
        rc = check_thinking(v, e);
    }
    if (rc == 0 && (v = oxl_json_field(b, "metadata"))) {
        rc = check_metadata(v, e);
    }
    /* the fields the chat path reads under the same names, checked there */
    static const char *const same[] = {"model", "max_tokens", "temperature", "top_p", "top_k", "stream", NULL};
    for (int k = 0; rc == 0 && same[k]; k++) {
        if ((v = cJSON_GetObjectItemCaseSensitive(b, same[k]))) {
            cJSON_AddItemToObject(o, same[k], cJSON_Duplicate(v, true));
        }
    }
    if (rc != 0) {
        cJSON_Delete(o);
        return NULL;
    }
    return o;
}

/* --- the reply ------------------------------------------------------------------------------------ */

/* end_turn, max_tokens, stop_sequence or tool_use (llama-server: tool_use when a reply that ended
 * by itself holds calls; a stop string is Anthropic's stop_sequence). */
static const char *stop_reason(const oxl_choice_out *c, bool calls) {
    if (!c->finish || !strcmp(c->finish, "length")) {
        return "max_tokens";
    }
    return calls ? "tool_use" : c->stop_word ? "stop_sequence" : "end_turn";
}

static void add_stop_sequence(cJSON *o, const oxl_choice_out *c) {
    if (c->stop_word) {
        cJSON_AddStringToObject(o, "stop_sequence", c->stop_word);
    } else {
        cJSON_AddNullToObject(o, "stop_sequence");
    }
}

/* llama-server's usage: the prompt's tokens less those read from a slot's cache, those, the output. */
static cJSON *usage(const oxl_job *j, bool final) {
    cJSON *u = cJSON_CreateObject();
    cJSON_AddNumberToObject(u, "cache_read_input_tokens", j->n_cached);
    cJSON_AddNumberToObject(u, "input_tokens", j->n_prompt - j->n_cached);
    cJSON_AddNumberToObject(u, "output_tokens", final ? j->choice[0].n_gen : 0);
    return u;
}

/* A parsed call's tool_use block; input is the arguments object (empty when they do not parse). */
static cJSON *tool_use_block(const cJSON *call, bool with_input) {
    const cJSON *fn = cJSON_GetObjectItemCaseSensitive(call, "function");
    const char *id = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(call, "id"));
    const char *name = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(fn, "name"));
    const char *args = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(fn, "arguments"));
    cJSON *blk = cJSON_CreateObject();
    cJSON_AddStringToObject(blk, "type", "tool_use");
    if (id && id[0]) {
        cJSON_AddStringToObject(blk, "id", id);
    } else {
        char fresh[64];
        oxl_random_id("toolu_", fresh, sizeof fresh);
        cJSON_AddStringToObject(blk, "id", fresh);
    }
    cJSON_AddStringToObject(blk, "name", name ? name : "");
    cJSON *in = with_input && args ? cJSON_Parse(args) : NULL;
    if (!cJSON_IsObject(in)) {
        cJSON_Delete(in);
        in = cJSON_CreateObject();
    }
    cJSON_AddItemToObject(blk, "input", in);
    return blk;
}

static const char *str_of(const cJSON *msg, const char *name) {
    const char *s = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(msg, name));
    return s ? s : "";
}

/* The message object: thinking, text, then tool_use blocks. */
static cJSON *message_body(oxl_srv *srv, const api_req *r, oxl_job **jobs, int n_jobs, char **prompts,
                           const char *msg_id) {
    const oxl_job *j = jobs[0];
    const oxl_choice_out *c = &j->choice[0];
    cJSON *msg = oxl_chat_reply(srv, r, c->text, c->len, false);
    const cJSON *calls = cJSON_GetObjectItemCaseSensitive(msg, "tool_calls");
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "id", r->id);
    cJSON_AddStringToObject(o, "type", "message");
    cJSON_AddStringToObject(o, "role", "assistant");
    cJSON *content = cJSON_AddArrayToObject(o, "content");
    if (*str_of(msg, "reasoning_content")) {
        cJSON *blk = cJSON_CreateObject();
        cJSON_AddStringToObject(blk, "type", "thinking");
        cJSON_AddStringToObject(blk, "thinking", str_of(msg, "reasoning_content"));
        cJSON_AddStringToObject(blk, "signature", ""); /* a local model signs nothing */
        cJSON_AddItemToArray(content, blk);
    }
    if (*str_of(msg, "content")) {
        cJSON *blk = cJSON_CreateObject();
        cJSON_AddStringToObject(blk, "type", "text");
        cJSON_AddStringToObject(blk, "text", str_of(msg, "content"));
        cJSON_AddItemToArray(content, blk);
    }
    for (const cJSON *call = cJSON_IsArray(calls) ? calls->child : NULL; call; call = call->next) {
        cJSON_AddItemToArray(content, tool_use_block(call, true));
    }
    cJSON_AddStringToObject(o, "model", srv->model_id);
    cJSON_AddStringToObject(o, "stop_reason", stop_reason(c, cJSON_GetArraySize(calls) > 0));
    add_stop_sequence(o, c);
    cJSON_AddItemToObject(o, "usage", usage(j, true));
    cJSON_Delete(msg);
    return o;
}

/* --- the stream ----------------------------------------------------------------------------------- */

enum { BLOCK_NONE, BLOCK_THINKING, BLOCK_TEXT, BLOCK_TOOL };

/* One event: "event: TYPE" and data {"type": TYPE, ...o's members} (takes o). */
static void put_event(oxl_stream *st, const char *type, cJSON *o) {
    cJSON *d = cJSON_CreateObject();
    cJSON_AddStringToObject(d, "type", type);
    for (cJSON *m = o->child; m;) {
        cJSON *next = m->next;
        cJSON_AddItemToObject(d, m->string, cJSON_DetachItemViaPointer(o, m));
        m = next;
    }
    cJSON_Delete(o);
    oxl_sse_event(st, type, d);
}

static cJSON *indexed(int index) {
    cJSON *o = cJSON_CreateObject();
    cJSON_AddNumberToObject(o, "index", index);
    return o;
}

/* A delta of the given type with one string field (text, thinking, partial_json, signature). */
static void put_delta(oxl_stream *st, int index, const char *type, const char *field, const char *s, size_t n) {
    cJSON *o = indexed(index);
    cJSON *d = cJSON_AddObjectToObject(o, "delta");
    cJSON_AddStringToObject(d, "type", type);
    cJSON_AddItemToObject(d, field, oxl_json_text(s, n));
    put_event(st, "content_block_delta", o);
}

/* Anthropic's ping, once: after the first content_block_start (or before message_delta). */
static void put_ping(oxl_stream *st, stream_state *ss) {
    if (!ss->pinged) {
        ss->pinged = true;
        put_event(st, "ping", cJSON_CreateObject());
    }
}

/* Closes the open block (a thinking block gets its empty signature first, as llama-server sends). */
static void close_block(oxl_stream *st, stream_state *ss) {
    if (ss->open_block == BLOCK_NONE) {
        return;
    }
    int index = ss->n_blocks - 1;
    if (ss->open_block == BLOCK_THINKING) {
        put_delta(st, index, "signature_delta", "signature", "", 0);
    }
    put_event(st, "content_block_stop", indexed(index));
    ss->open_block = BLOCK_NONE;
}

/* Opens a block of kind (its content_block: {"type": "thinking", "thinking": ""} or {"type": "text",
 * "text": ""}) unless it is the open one; returns its index. */
static int open_block(oxl_stream *st, stream_state *ss, int kind) {
    if (ss->open_block != kind) {
        close_block(st, ss);
        const char *name = kind == BLOCK_THINKING ? "thinking" : "text";
        cJSON *o = indexed(ss->n_blocks++);
        cJSON *blk = cJSON_AddObjectToObject(o, "content_block");
        cJSON_AddStringToObject(blk, "type", name);
        cJSON_AddStringToObject(blk, name, "");
        put_event(st, "content_block_start", o);
        ss->open_block = kind;
        put_ping(st, ss);
    }
    return ss->n_blocks - 1;
}

/* message_start, once the job has a slot (its cached tokens are known) or has ended. */
static void put_start(oxl_stream *st, stream_state *ss, const oxl_job *j) {
    cJSON *m = cJSON_CreateObject();
    cJSON_AddStringToObject(m, "id", ss->r.id);
    cJSON_AddStringToObject(m, "type", "message");
    cJSON_AddStringToObject(m, "role", "assistant");
    cJSON_AddArrayToObject(m, "content");
    cJSON_AddStringToObject(m, "model", st->srv->model_id);
    cJSON_AddNullToObject(m, "stop_reason");
    cJSON_AddNullToObject(m, "stop_sequence");
    cJSON_AddItemToObject(m, "usage", usage(j, false));
    cJSON *o = cJSON_CreateObject();
    cJSON_AddItemToObject(o, "message", m);
    put_event(st, "message_start", o);
    ss->phase = 1;
}

/* A tool_use block for call k, opened with the arguments so far as its first input_json_delta; or
 * the growth of the open one's arguments (llama-server's to_json_anthropic partial events). Text
 * that does not extend what was sent is not sent: a stream never takes a piece back. */
static void calls_progress(oxl_stream *st, stream_state *ss, choice_progress *cp, const cJSON *calls) {
    int n_new = cJSON_GetArraySize(calls);
    if (n_new == 0 || (!cp->calls && !(cp->calls = cJSON_CreateArray()))) {
        return;
    }
    int n_sent = cJSON_GetArraySize(cp->calls);
    if (n_sent > 0 && n_new >= n_sent && ss->open_block == BLOCK_TOOL) {
        cJSON *sent = cJSON_GetArrayItem(cp->calls, n_sent - 1);
        const cJSON *fn = cJSON_GetObjectItemCaseSensitive(cJSON_GetArrayItem(calls, n_sent - 1), "function");
        const char *args = str_of(fn, "arguments"), *had = str_of(sent, "arguments");
        size_t hl = strlen(had), al = strlen(args);
        if (!strcmp(str_of(fn, "name"), str_of(sent, "name")) && al > hl && !strncmp(args, had, hl)) {
            put_delta(st, ss->n_blocks - 1, "input_json_delta", "partial_json", args + hl, al - hl);
            cJSON_ReplaceItemInObjectCaseSensitive(sent, "arguments", cJSON_CreateString(args));
        }
    }
    for (int k = n_sent; k < n_new; k++) {
        const cJSON *call = cJSON_GetArrayItem(calls, k);
        const cJSON *fn = cJSON_GetObjectItemCaseSensitive(call, "function");
        const char *args = str_of(fn, "arguments");
        close_block(st, ss);
        int index = ss->n_blocks++;
        cJSON *o = indexed(index);
        cJSON *blk = tool_use_block(call, false);
        cJSON_AddItemToObject(o, "content_block", blk);
        cJSON *rec = cJSON_CreateObject();
        cJSON_AddStringToObject(rec, "id", str_of(blk, "id"));
        cJSON_AddStringToObject(rec, "name", str_of(fn, "name"));
        cJSON_AddStringToObject(rec, "arguments", args);
        cJSON_AddItemToArray(cp->calls, rec);
        put_event(st, "content_block_start", o);
        ss->open_block = BLOCK_TOOL;
        put_ping(st, ss);
        if (*args) {
            put_delta(st, index, "input_json_delta", "partial_json", args, strlen(args));
        }
    }
}

/* The events of the reply's first len bytes: they go through the parser (partially until the reply
 * is finished); what its reasoning and content gained goes to thinking and text blocks
 * (thinking_delta, text_delta), then what its calls gained (calls_progress). */
static void message_step(oxl_stream *st, stream_state *ss, const oxl_choice_out *c, choice_progress *cp, size_t len,
                         bool fin) {
    cJSON *msg = oxl_chat_reply_stream(st->srv, &ss->r, c->text, len, !fin);
    cp->sent = len;
    const char *rs = str_of(msg, "reasoning_content"), *cs = str_of(msg, "content");
    const size_t rl = strlen(rs), cl = strlen(cs);
    if (rl > cp->reasoning_sent) {
        int index = open_block(st, ss, BLOCK_THINKING);
        put_delta(st, index, "thinking_delta", "thinking", rs + cp->reasoning_sent, rl - cp->reasoning_sent);
        cp->reasoning_sent = rl;
    }
    if (cl > cp->content_sent) {
        int index = open_block(st, ss, BLOCK_TEXT);
        put_delta(st, index, "text_delta", "text", cs + cp->content_sent, cl - cp->content_sent);
        cp->content_sent = cl;
    }
    calls_progress(st, ss, cp, cJSON_GetObjectItemCaseSensitive(msg, "tool_calls"));
    cJSON_Delete(msg);
}

/* message_start once the job has a slot (its cached tokens are known) or has ended; then, as
 * llama-server re-parses the reply after each token, the events of each publication of its text
 * since the last call (so events do not depend on how fast the client reads) and of the reply as
 * it stands; once finished, the open block's content_block_stop, message_delta and message_stop. */
static size_t produce_message_events(oxl_stream *st) {
    stream_state *ss = st->state;
    size_t before = st->len;
    const oxl_job *j = st->jobs[0];
    const oxl_choice_out *c = &j->choice[0];
    choice_progress *cp = &ss->cp[0];
    oxl_api_error e;
    if (oxl_req_job_error(st->jobs, 1, &e)) {
        cJSON *o = oxl_api_error_anthropic_json(&e);
        cJSON_DeleteItemFromObjectCaseSensitive(o, "type");
        put_event(st, "error", o);
        st->done = true;
        return st->len - before;
    }
    const bool fin = c->finish != NULL;
    if (ss->phase == 0 && (j->t_first > 0 || fin)) {
        put_start(st, ss, j);
    }
    if (ss->phase == 0 || (!fin && c->len == cp->sent)) {
        return st->len - before;
    }
    for (int32_t m = cp->marks_seen; m < c->n_marks; m++) {
        if (c->marks[m] > cp->sent && c->marks[m] < c->len) {
            message_step(st, ss, c, cp, c->marks[m], false);
        }
    }
    cp->marks_seen = c->n_marks;
    message_step(st, ss, c, cp, c->len, fin);
    if (fin) {
        close_block(st, ss);
        put_ping(st, ss);
        cJSON *o = cJSON_CreateObject();
        cJSON *d = cJSON_AddObjectToObject(o, "delta");
        cJSON_AddStringToObject(d, "stop_reason", stop_reason(c, cJSON_GetArraySize(cp->calls) > 0));
        add_stop_sequence(d, c);
        cJSON_AddNumberToObject(cJSON_AddObjectToObject(o, "usage"), "output_tokens", c->n_gen);
        put_event(st, "message_delta", o);
        put_event(st, "message_stop", cJSON_CreateObject());
        st->done = true;
    }
    return st->len - before;
}

/* --- the routes ----------------------------------------------------------------------------------- */

void oxl_api_messages(oxl_srv *srv, const oxl_request *rq, oxl_reply *out) {
    api_req r = {.kind = API_CHAT,
                 .object = message_body,
                 .produce = produce_message_events,
                 .reply_error = oxl_reply_anthropic_error};
    oxl_api_error e = {0};
    oxl_token *toks = NULL;
    int32_t n_toks = 0;
    oxl_media media = {0};
    r.media = srv->mmproj ? &media : NULL;
    cJSON *body = to_chat_body(rq->json, false, r.media, &e);
    if (body && oxl_chat_request(srv, body, &r, &toks, &n_toks, &e) == 0 &&
        oxl_req_check_context(srv, n_toks, "messages", &e) == 0) {
        oxl_random_id("msg_", r.id, sizeof r.id);
        oxl_req_run(srv, rq, &r, &toks, &n_toks, NULL, 1, out);
    } else {
        oxl_reply_anthropic_error(out, &e);
    }
    cJSON_Delete(body);
    free(toks);
    free(r.tools_json);
    oxl_gen_params_free(&r.gen);
    oxl_media_free(&media);
}

/* {"input_tokens": N}: the prompt's tokens as /v1/messages would generate from them (llama-server
 * counts the rendered prompt's tokens without the context check). */
void oxl_api_count_tokens(oxl_srv *srv, const oxl_request *rq, oxl_reply *out) {
    api_req r = {.kind = API_CHAT};
    oxl_api_error e = {0};
    oxl_token *toks = NULL;
    int32_t n_toks = 0;
    oxl_media media = {0};
    r.media = srv->mmproj ? &media : NULL;
    cJSON *body = to_chat_body(rq->json, true, r.media, &e);
    if (body && oxl_chat_request(srv, body, &r, &toks, &n_toks, &e) == 0) {
        cJSON *o = cJSON_CreateObject();
        cJSON_AddNumberToObject(o, "input_tokens", n_toks);
        oxl_reply_json(out, 200, o);
    } else {
        oxl_reply_anthropic_error(out, &e);
    }
    cJSON_Delete(body);
    free(toks);
    free(r.tools_json);
    oxl_gen_params_free(&r.gen);
    oxl_media_free(&media);
}
