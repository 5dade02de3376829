/* Tool calls in generated text: the Hermes/Qwen <tool_call>{json}</tool_call> form, or a reply
 * that is one bare JSON call. */
#ifndef OXL_SRV_TOOLCALL_H
#define OXL_SRV_TOOLCALL_H

#include <cjson/cJSON.h>
#include <stddef.h>

/* The calls in text as OpenAI tool_calls ([{id, type: "function", function: {name, arguments}}]),
 * or NULL when there is none; *content_len is the length of the text before the first call. */
cJSON *oxl_tool_calls_parse(const char *text, size_t *content_len);
/* How much of len bytes of streamed text can be sent as content: it stops at "<tool_call>", at a
 * reply that opens with "{", or before a tail that could begin "<tool_call>". */
size_t oxl_tool_safe_len(const char *text, size_t len);

#endif
