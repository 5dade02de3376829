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
/* The same for a stream: calls carry only the ids the reply gives (the stream gives the others one
 * when it first sends them, as llama-server keeps its generated_tool_call_ids), and a partial
 * reply's calls are cut where the reply stops fixing them (oxl_chat_parse's "partial"). */
cJSON *oxl_chat_reply_stream(oxl_srv *srv, const api_req *r, const char *text, size_t len, bool partial);

/* Assistant messages' tool call arguments given as JSON text become objects when the template
 * takes objects, as llama.cpp hands them over (in place; other values are left as they are). A
 * template takes objects when a probe conversation whose call has object arguments renders with
 * the argument's value in it (llama.cpp's supports_object_arguments capability: the value is used);
 * one that fails on them (Functionary v3.2 appends them to a string) keeps the text. */
void oxl_chat_args_to_objects(oxl_srv *srv, cJSON *msgs);

#endif
