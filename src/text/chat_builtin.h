/* llama.cpp's built-in chat formats (src/llama-chat.cpp: llm_chat_apply_template and
 * llm_chat_detect_template): a conversation of role/content pairs rendered without a template
 * engine. Plain C, no JSON: every build has it, the cross-build subset (OXL_SUBSET) included. The
 * Jinja path (src/chat/chat.c) renders built-in names through it; the public entry points are
 * oxl_chat_builtin_apply and oxl_chat_builtin_templates (include/oxillama.h). */
#ifndef OXL_CHAT_BUILTIN_H
#define OXL_CHAT_BUILTIN_H

#include <stdbool.h>
#include <stddef.h>

/* The i-th built-in format name (i from 0), NULL past the end: llama.cpp's 54 names and "dots1",
 * which llama.cpp reaches only through detection. */
const char *oxl_chat_builtin_name(size_t i);

/* True when name is a built-in format. */
bool oxl_chat_is_builtin(const char *name);

/* The built-in format llama.cpp's llm_chat_detect_template picks for a template text by its marker
 * strings (e.g. "<|im_start|>" -> "chatml"; a format's own name picks itself), or NULL when none
 * matches (or template_src is NULL). */
const char *oxl_chat_detect(const char *template_src);

/* Renders n messages (roles[i], contents[i]; a NULL content is "") in the built-in format `name`
 * into *out (malloc'd, NUL-terminated; the caller frees) and its length into *out_len. Built-in
 * formats take the text of each message only, as llama.cpp's llm_chat_apply_template does.
 * Returns 0; -1 when name is not a built-in format; -2 when out of memory. *out is NULL on failure. */
int oxl_chat_builtin_render(const char *name, const char *const *roles, const char *const *contents, size_t n,
                            bool add_generation_prompt, char **out, size_t *out_len);

#endif
