/* Chat messages -> prompt text, through the model's chat template (tokenizer.chat_template). */
#ifndef OXL_SRV_CHAT_PROMPT_H
#define OXL_SRV_CHAT_PROMPT_H

#include "oxillama.h"

#include <cjson/cJSON.h>

/* Renders messages (an array of {role, content: string, ...}) and tools (an array or NULL) with
 * the generation prompt appended, by src/chat.h's oxl_chat_render. A model without a template gets
 * the built-in ChatML format, as llama.cpp's server. The template's leading BOS text is dropped
 * (the tokenizer adds BOS). *out is malloc'd text; returns 0, or -1 with err naming the template
 * error. */
int oxl_srv_chat_render(const oxl_model *model, const cJSON *messages, const cJSON *tools, char **out, oxl_error *err);

/* The model's tokenizer.chat_template (owned by the model), or NULL when it has none. */
const char *oxl_srv_chat_template(const oxl_model *model);

#endif
