/* Chat prompts: a conversation (OpenAI-style JSON messages) rendered into the model's prompt text,
 * either by the model's Jinja chat template (src/chat/jinja.h) or, where a GGUF ships none, by one of
 * llama.cpp's named built-in formats (src/llama-chat.cpp: chatml, llama2, llama3, mistral-v7, ...).
 */
#ifndef OXL_CHAT_H
#define OXL_CHAT_H

#include "chat_builtin.h" /* the built-in formats: oxl_chat_detect, oxl_chat_is_builtin, ... */
#include "oxillama.h"

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stddef.h>

/* Renders `messages` (JSON array of {role, content, ...}) into *out (malloc'd, NUL-terminated; the
 * caller frees). template_src is a Jinja chat template, or the name of a built-in format
 * ("chatml", "llama3", "mistral-v7", ... see oxl_chat_builtin_name). tools (JSON array) may be NULL;
 * bos/eos may be NULL (rendered as ""). Jinja templates see messages, tools (only when given),
 * add_generation_prompt, bos_token and eos_token, as HuggingFace's apply_chat_template passes them.
 * Built-in formats take string contents only (null counts as "") and ignore tools, as llama.cpp's
 * llm_chat_apply_template does. Jinja renders are bounded at 32 MiB of output and 256 MiB of values.
 * Returns 0, or -1 with err (template errors carry line:column). */
int oxl_chat_render(const char *template_src, const cJSON *messages, const cJSON *tools, bool add_generation_prompt,
                    const char *bos, const char *eos, char **out, oxl_error *err);

/* oxl_chat_render with chat_template_kwargs: kwargs (a JSON object, may be NULL; borrowed) holds extra
 * variables for a Jinja template, replacing the standard ones of the same name, as llama.cpp passes
 * its chat_template_kwargs (minja's extra_context). When kwargs holds "enable_thinking": false and the
 * rendered prompt still opens a thought, its closer is appended (oxl_chat_thought_closer, as
 * llama.cpp's common_chat_templates_apply does). Built-in formats ignore kwargs. */
int oxl_chat_render_kw(const char *template_src, const cJSON *messages, const cJSON *tools, bool add_generation_prompt,
                       const cJSON *kwargs, const char *bos, const char *eos, char **out, oxl_error *err);

/* Renders a conversation for a model as llama.cpp's server and llama-cli do: with template_src
 * when given (a Jinja template or a built-in name), else the model's tokenizer.chat_template, else
 * the built-in ChatML; bos/eos are the model's token texts, and the template's leading BOS text is
 * dropped because the tokenizer adds BOS. *out is malloc'd; returns 0, or -1 with err. */
int oxl_chat_render_for_model(const oxl_model *model, const char *template_src, const cJSON *messages,
                              const cJSON *tools, bool add_generation_prompt, char **out, oxl_error *err);
/* The same with chat_template_kwargs (oxl_chat_render_kw). */
int oxl_chat_render_for_model_kw(const oxl_model *model, const char *template_src, const cJSON *messages,
                                 const cJSON *tools, bool add_generation_prompt, const cJSON *kwargs, char **out,
                                 oxl_error *err);

#endif
