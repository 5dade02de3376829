/* libFuzzer harness for the chat reply parser (oxl_chat_parse, src/chat/chat_parse.c). Input:
 * [selector byte][reply text]. The selector's low 4 bits pick a template whose markers select one
 * of the reply formats (or none: the generic format), its high bits the options: reasoning format
 * deepseek or none, tools offered, a partial reply, a prompt that opened a thought. The text is
 * copied into a buffer of its exact size (plus the NUL) so that a read past it is caught.
 * Contracts checked: parsing succeeds with a JSON object {"role": "assistant", "content": a string,
 * or null only beside tool calls, "reasoning_content": a non-empty string when present,
 * "tool_calls": a non-empty list of {"type": "function", "function": {"name": a non-empty string,
 * "arguments": a string}} when present} (a partial parse too: its calls so far, as llama.cpp's is_partial parse);
 * without tools there are no calls. */
#include "oxillama.h"

#include <cjson/cJSON.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CHECK(cond)                                                                                                    \
    do {                                                                                                               \
        if (!(cond)) {                                                                                                 \
            fprintf(stderr, "%s:%d: invariant failed: %s\n", __FILE__, __LINE__, #cond);                               \
            __builtin_trap();                                                                                          \
        }                                                                                                              \
    } while (0)

/* Marker texts that select each format as a template would (chat_parse.c's detection). */
static const char *const templates[16] = {
    NULL,
    "<think>",
    "<tool_call>",
    "<tool_call><think>",
    "<|CHATBOT_TOKEN|> Action:",
    "<|start_header_id|>ipython<|end_header_id|><|python_tag|>",
    "[TOOL_CALLS][THINK]",
    "<\xef\xbd\x9ctool\xe2\x96\x81"
    "calls\xe2\x96\x81"
    "begin\xef\xbd\x9c> ```json <think>",
    "<\xef\xbd\x9ctool\xe2\x96\x81"
    "calls\xe2\x96\x81"
    "begin\xef\xbd\x9c> <think>",
    "<function= <|start_header_id|>",
    ">>>all",
    " functools[",
    "<|START_ACTION|><|START_THINKING|>",
    "<|tool_call|><think>",
    "<|channel|>",
    "<tool_call><function=<parameter=<think>",
};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 1) {
        return 0;
    }
    const uint8_t sel = data[0];
    char *text = malloc(size);
    if (!text) {
        return 0;
    }
    memcpy(text, data + 1, size - 1);
    text[size - 1] = 0;
    const bool reasoning = !(sel & 0x10), tools = sel & 0x20, partial = sel & 0x40, opened = sel & 0x80;
    char opts[160];
    snprintf(opts, sizeof opts,
             "{\"reasoning_format\": \"%s\", \"tools\": %s, \"partial\": %s, \"thinking_forced_open\": %s}",
             reasoning ? "deepseek" : "none", tools ? "true" : "false", partial ? "true" : "false",
             opened ? "true" : "false");
    char *out = NULL;
    oxl_error err = {{0}};
    int rc = oxl_chat_parse(NULL, templates[sel & 15], text, opts, &out, &err);
    CHECK(rc == 0 && out != NULL);
    cJSON *m = cJSON_Parse(out);
    CHECK(cJSON_IsObject(m));
    CHECK(!strcmp(cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(m, "role")), "assistant"));
    const cJSON *content = cJSON_GetObjectItemCaseSensitive(m, "content");
    const cJSON *reason = cJSON_GetObjectItemCaseSensitive(m, "reasoning_content");
    const cJSON *calls = cJSON_GetObjectItemCaseSensitive(m, "tool_calls");
    CHECK(cJSON_IsString(content) || (cJSON_IsNull(content) && calls));
    CHECK(!reason || (cJSON_IsString(reason) && reason->valuestring[0]));
    CHECK(!calls || (cJSON_IsArray(calls) && cJSON_GetArraySize(calls) > 0 && tools));
    for (const cJSON *c = calls ? calls->child : NULL; c; c = c->next) {
        const cJSON *fn = cJSON_GetObjectItemCaseSensitive(c, "function");
        const char *name = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(fn, "name"));
        CHECK(!strcmp(cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(c, "type")), "function"));
        CHECK(name && name[0]);
        CHECK(cJSON_IsString(cJSON_GetObjectItemCaseSensitive(fn, "arguments")));
        CHECK(cJSON_IsString(cJSON_GetObjectItemCaseSensitive(c, "id")));
    }
    cJSON_Delete(m);
    free(out);
    free(text);
    return 0;
}
