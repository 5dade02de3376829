/* Chat messages -> prompt text, through the model's chat template (tokenizer.chat_template). */
#ifndef OXL_SRV_CHAT_PROMPT_H
#define OXL_SRV_CHAT_PROMPT_H

#include "oxillama.h"

#include <cjson/cJSON.h>

/* Renders messages (an array of {role, content: string}) and tools (an array or NULL) with the
 * generation prompt appended. A model without a template gets ChatML, as llama.cpp's server.
 * *out is malloc'd text; returns 0, or -1 with err naming the template error. */
int oxl_srv_chat_render(const oxl_model *model, const cJSON *messages, const cJSON *tools, char **out, oxl_error *err);

/* "jinja" when the model's template is rendered by the template engine, "plain" for the
 * role-prefixed fallback used while the engine is not part of the build. */
const char *oxl_srv_chat_engine(void);

#endif
