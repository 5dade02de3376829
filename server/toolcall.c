/* Tool-call parsing (toolcall.h). */
#include "toolcall.h"
#include "api.h"

#include <stdlib.h>
#include <string.h>

cJSON *oxl_tool_calls_parse(const char *text, size_t *content_len) {
    cJSON *calls = cJSON_CreateArray();
    const char *p = strstr(text, "<tool_call>");
    *content_len = p ? (size_t)(p - text) : strlen(text);
    const char *q = p ? p : text;
    while (q && *q) {
        const char *start = p ? q + strlen("<tool_call>") : q;
        const char *end = p ? strstr(start, "</tool_call>") : start + strlen(start);
        if (!end) {
            end = start + strlen(start);
        }
        char *js = strndup(start, (size_t)(end - start));
        cJSON *c = js ? cJSON_Parse(js) : NULL;
        free(js);
        const cJSON *name = cJSON_GetObjectItemCaseSensitive(c, "name");
        const cJSON *args = cJSON_GetObjectItemCaseSensitive(c, "arguments");
        if (!args) {
            args = cJSON_GetObjectItemCaseSensitive(c, "parameters");
        }
        if (cJSON_IsString(name)) {
            cJSON *call = cJSON_CreateObject();
            char id[48];
            oxl_random_id("call_", id, sizeof id);
            cJSON_AddStringToObject(call, "id", id);
            cJSON_AddStringToObject(call, "type", "function");
            cJSON *fn = cJSON_AddObjectToObject(call, "function");
            cJSON_AddStringToObject(fn, "name", name->valuestring);
            char *a =
                args ? (cJSON_IsString(args) ? strdup(args->valuestring) : cJSON_PrintUnformatted(args)) : strdup("{}");
            cJSON_AddStringToObject(fn, "arguments", a ? a : "{}");
            free(a);
            cJSON_AddItemToArray(calls, call);
        }
        cJSON_Delete(c);
        if (!p) {
            break;
        }
        q = *end ? strstr(end, "<tool_call>") : NULL;
    }
    if (cJSON_GetArraySize(calls) == 0) {
        cJSON_Delete(calls);
        return NULL;
    }
    return calls;
}

/* With tools, streamed content stops where a tool call may begin: at "<tool_call>", at a reply
 * that opens with "{" (a bare JSON call), or before a tail that could begin "<tool_call>". */
size_t oxl_tool_safe_len(const char *text, size_t len) {
    static const char tag[] = "<tool_call>";
    if (len == 0) {
        return 0;
    }
    const char *hit = memmem(text, len, tag, sizeof tag - 1);
    if (hit) {
        return (size_t)(hit - text);
    }
    size_t i = 0;
    while (i < len && (text[i] == ' ' || text[i] == '\n' || text[i] == '\t' || text[i] == '\r')) {
        i++;
    }
    if (i < len && text[i] == '{') {
        return 0;
    }
    for (size_t h = sizeof tag - 2; h > 0; h--) {
        if (h <= len && !memcmp(text + len - h, tag, h)) {
            return len - h;
        }
    }
    return len;
}
