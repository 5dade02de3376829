/* Chat replies as messages: the library's parser (oxl_chat_parse) with the server's template,
 * reasoning format and the request's tools. */
#ifndef OXL_SRV_TOOLCALL_H
#define OXL_SRV_TOOLCALL_H

#include "generate.h"

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stddef.h>

/* len bytes of a reply as an assistant message ({role, content, reasoning_content?, tool_calls?},
 * see oxl_chat_parse); partial: the reply is still being generated. Never NULL: when the parser
 * fails the text is the content. */
cJSON *oxl_chat_reply(oxl_srv *srv, const api_req *r, const char *text, size_t len, bool partial);

/* Assistant messages' tool call arguments given as JSON text become objects, as llama.cpp hands
 * them to templates that iterate or serialise them (in place; other values are left as they are). */
void oxl_chat_args_to_objects(cJSON *msgs);

#endif
