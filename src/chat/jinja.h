/* A Jinja template engine for chat templates: renders `tokenizer.chat_template` the way Python
 * Jinja2 3.1 does when configured as HuggingFace transformers configures it for
 * apply_chat_template (sandboxed environment with trim_blocks, lstrip_blocks, loop controls, the
 * `tojson` that keeps non-ASCII, the globals raise_exception and strftime_now, and the
 * `{% generation %}` block rendering its body). The default Undefined semantics apply: an unknown
 * name renders as "", is false and iterates as empty, while attribute access, arithmetic and
 * `tojson` on it raise.
 *
 * Everything is bounded (template size, nesting depth, call depth, output size, memory, steps), so
 * fuzzed or hostile templates end in an error, never a crash or a hang.
 */
#ifndef OXL_JINJA_H
#define OXL_JINJA_H

#include "oxillama.h"

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

typedef struct oxl_jinja_template oxl_jinja_template;

typedef struct oxl_jinja_options {
    size_t max_output;  /* bytes of rendered text (default 1 MiB) */
    size_t max_memory;  /* bytes of values allocated during one render (default 64 MiB) */
    int max_depth;      /* nesting of macro calls and recursive loops (default 64) */
    uint64_t max_steps; /* loop iterations plus evaluated nodes (default 10 million) */
    bool fixed_time;    /* strftime_now uses `now` instead of the local clock */
    struct tm now;
} oxl_jinja_options;

/* Defaults listed above; the clock is the local time at the call. */
oxl_jinja_options oxl_jinja_default_options(void);

/* Parses src (len bytes of UTF-8; at most 4 MiB) into *out. Errors name line:column of the
 * template ("template:3:17: unexpected 'endfor'"). Free with oxl_jinja_free. */
int oxl_jinja_parse(const char *src, size_t len, oxl_jinja_template **out, oxl_error *err);
void oxl_jinja_free(oxl_jinja_template *t);

/* Renders t with the members of the JSON object `context` as template variables (messages, tools,
 * add_generation_prompt, bos_token, ...). opt may be NULL for defaults. On success *out is a
 * NUL-terminated malloc'd string of *out_len bytes (out_len may be NULL) that the caller frees.
 * Errors carry the Python exception class Jinja2 would raise and the template position:
 * "template:12:5: UndefinedError: 'functions' is undefined", "TemplateError: <raise_exception
 * message>", "TypeError: ...", "SecurityError: ...". Returns 0 or -1. */
int oxl_jinja_render(const oxl_jinja_template *t, const cJSON *context, const oxl_jinja_options *opt, char **out,
                     size_t *out_len, oxl_error *err);

#endif
