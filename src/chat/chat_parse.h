/* Parsing a chat model's reply into an OpenAI assistant message: content, reasoning_content and
 * tool_calls. The reply's format is picked from the chat template text by marker strings, as
 * llama.cpp's common/chat.cpp names and detects them (Hermes 2 Pro, Llama 3.x, Mistral Nemo,
 * DeepSeek R1 / V3.1, Functionary v3.1 / v3.2, FireFunction v2, Command R7B, Granite, gpt-oss,
 * Qwen3-Coder's XML calls, and a generic JSON fallback); reasoning is the <think> block of
 * think-tag templates (also when the prompt itself opened it), Command R7B's START_THINKING block
 * and harmony's analysis channel.
 */
#ifndef OXL_CHAT_PARSE_H
#define OXL_CHAT_PARSE_H

#include "oxillama.h"

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stddef.h>

typedef enum oxl_chat_fmt {
    OXL_CHAT_FMT_CONTENT_ONLY,
    OXL_CHAT_FMT_GENERIC,
    OXL_CHAT_FMT_HERMES_2_PRO,
    OXL_CHAT_FMT_LLAMA_3_X,
    OXL_CHAT_FMT_LLAMA_3_X_BUILTIN,
    OXL_CHAT_FMT_MISTRAL_NEMO,
    OXL_CHAT_FMT_DEEPSEEK_R1,
    OXL_CHAT_FMT_DEEPSEEK_V3_1,
    OXL_CHAT_FMT_FUNCTIONARY_V3_1,
    OXL_CHAT_FMT_FUNCTIONARY_V3_2,
    OXL_CHAT_FMT_FIREFUNCTION_V2,
    OXL_CHAT_FMT_COMMAND_R7B,
    OXL_CHAT_FMT_GRANITE,
    OXL_CHAT_FMT_GPT_OSS,
    OXL_CHAT_FMT_QWEN3_CODER,
    OXL_CHAT_FMT_COMMAND_R_PLUS,
    OXL_CHAT_FMT_COUNT
} oxl_chat_fmt;

typedef struct oxl_chat_syntax {
    oxl_chat_fmt format;
    bool think_tags;        /* the template knows <think> blocks */
    bool mistral_think;     /* ... written [THINK]...[/THINK] (Magistral, Ministral 3) */
    bool reasoning;         /* reasoning_format deepseek: thoughts go to reasoning_content */
    const char *think_open; /* the prompt ended inside a thought: its opener text ("<think>\n"), else NULL */
    bool tools;             /* tools were offered: parse tool calls */
    bool generate_ids;      /* give calls without an id a fresh "call_..." id */
    const cJSON *tool_defs; /* the offered tools (may be NULL): their schemas type XML parameter values */
} oxl_chat_syntax;

/* DeepSeek R1/V3's tool-call tags (fullwidth bars and U+2581 in UTF-8), for the parser and the
 * grammar builder */
#define DS_CALLS_BEGIN                                                                                                 \
    "<\xef\xbd\x9ctool\xe2\x96\x81"                                                                                    \
    "calls\xe2\x96\x81"                                                                                                \
    "begin\xef\xbd\x9c>"
#define DS_CALLS_END                                                                                                   \
    "<\xef\xbd\x9ctool\xe2\x96\x81"                                                                                    \
    "calls\xe2\x96\x81"                                                                                                \
    "end\xef\xbd\x9c>"
#define DS_CALL_BEGIN                                                                                                  \
    "<\xef\xbd\x9ctool\xe2\x96\x81"                                                                                    \
    "call\xe2\x96\x81"                                                                                                 \
    "begin\xef\xbd\x9c>"
#define DS_CALL_END                                                                                                    \
    "<\xef\xbd\x9ctool\xe2\x96\x81"                                                                                    \
    "call\xe2\x96\x81"                                                                                                 \
    "end\xef\xbd\x9c>"
#define DS_SEP "<\xef\xbd\x9ctool\xe2\x96\x81sep\xef\xbd\x9c>"

/* The format of a template text (NULL: no template, the generic format). */
oxl_chat_fmt oxl_chat_format_detect(const char *tmpl);
/* "Hermes 2 Pro", "Llama 3.x", ... as llama.cpp's common_chat_format_name spelled them. */
const char *oxl_chat_format_name(oxl_chat_fmt f);
/* A syntax for template tmpl (may be NULL) with reasoning and tools as given; when prompt is given
 * and ends inside an opened thought, think_open points into prompt (which must outlive it). */
oxl_chat_syntax oxl_chat_syntax_for(const char *tmpl, const char *prompt, bool reasoning, bool tools);

/* The text to append to a prompt rendered with enable_thinking false, as llama.cpp's
 * common_chat_templates_apply does for a template that opens a thought anyway: the format's
 * closing tag when the prompt ends with its opener (and whitespace), "<|START_THINKING|>
 * <|END_THINKING|>" (without the space) for a Command R7B prompt ending with <|CHATBOT_TOKEN|>,
 * else NULL. A static string. */
const char *oxl_chat_thought_closer(const char *tmpl, const char *prompt);

/* Parses len bytes of a reply into a new {"role": "assistant", "content", "reasoning_content"
 * (present when not empty), "tool_calls" (present when any)} object; content is null when the reply
 * is only calls. partial: the reply is still being generated; content and reasoning then stop
 * before any text that may still become markup, and the calls so far are returned, the last one's
 * arguments cut where the reply stops fixing them (see oxl_chat_parse). NULL when out of memory. */
cJSON *oxl_chat_parse_msg(const oxl_chat_syntax *s, const char *text, size_t len, bool partial);

#endif
