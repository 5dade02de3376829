/* The chat template adapter. The template engine (src/chat.h, oxl_chat_render) renders the model's
 * tokenizer.chat_template; builds without it (OXL_HAVE_CHAT unset: src/chat.h absent at configure
 * time) render "role: content" lines, which is no model's format and only keeps the route usable. */
#include "chat_prompt.h"

#include "error.h"
#include "model.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef OXL_HAVE_CHAT
#include "chat.h"

/* ChatML, llama.cpp's template for models that carry none. */
static const char chatml[] =
    "{% for message in messages %}{{ '<|im_start|>' + message['role'] + '\\n' + message['content'] + "
    "'<|im_end|>' + '\\n' }}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}";

static char *token_text(const oxl_model *model, oxl_token t) {
    char buf[256];
    int32_t n = t >= 0 ? oxl_token_to_piece(model, t, buf, (int32_t)sizeof buf - 1, true) : 0;
    n = n < 0 ? 0 : n;
    buf[n] = 0;
    return strdup(buf);
}

int oxl_srv_chat_render(const oxl_model *model, const cJSON *messages, const cJSON *tools, char **out, oxl_error *err) {
    const char *tmpl = chatml;
    int64_t k = oxl_gguf_find_key(model->gguf, "tokenizer.chat_template");
    if (k >= 0 && oxl_gguf_kv_type(model->gguf, k) == OXL_GGUF_STRING) {
        tmpl = oxl_gguf_kv_str(model->gguf, k, NULL);
    }
    char *bos = token_text(model, oxl_token_bos(model));
    char *eos = token_text(model, oxl_token_eos(model));
    int rc = -1;
    if (bos && eos) {
        rc = oxl_chat_render(tmpl, messages, tools, true, bos, eos, out, err);
        /* The tokenizer adds BOS itself; drop the template's copy (llama.cpp's server does too). */
        size_t nb = strlen(bos);
        if (rc == 0 && nb > 0 && !strncmp(*out, bos, nb)) {
            memmove(*out, *out + nb, strlen(*out + nb) + 1);
        }
    } else {
        oxl_err_set(err, "out of memory");
    }
    free(bos);
    free(eos);
    return rc;
}

const char *oxl_srv_chat_engine(void) { return "jinja"; }

#else

int oxl_srv_chat_render(const oxl_model *model, const cJSON *messages, const cJSON *tools, char **out, oxl_error *err) {
    size_t cap = 64, len = 0;
    for (const cJSON *m = messages->child; m; m = m->next) {
        const cJSON *c = cJSON_GetObjectItemCaseSensitive(m, "content");
        cap += 16 + strlen(cJSON_GetObjectItemCaseSensitive(m, "role")->valuestring) +
               (cJSON_IsString(c) ? strlen(c->valuestring) : 0);
    }
    char *s = malloc(cap);
    if (!s) {
        return oxl_err_set(err, "out of memory");
    }
    for (const cJSON *m = messages->child; m; m = m->next) {
        const cJSON *c = cJSON_GetObjectItemCaseSensitive(m, "content");
        len += (size_t)snprintf(s + len, cap - len, "%s: %s\n", cJSON_GetObjectItemCaseSensitive(m, "role")->valuestring,
                                cJSON_IsString(c) ? c->valuestring : "");
    }
    snprintf(s + len, cap - len, "assistant:");
    *out = s;
    return 0;
}

const char *oxl_srv_chat_engine(void) { return "plain"; }

#endif
