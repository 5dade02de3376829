/* The chat prompt of a request: the model's tokenizer.chat_template (or ChatML) rendered by
 * oxl_chat_render (src/chat.h). */
#include "chat_prompt.h"

#include "chat.h"
#include "error.h"
#include "model.h"

#include <stdlib.h>
#include <string.h>

static char *token_text(const oxl_model *model, oxl_token t) {
    char buf[256];
    int32_t n = t >= 0 ? oxl_token_to_piece(model, t, buf, (int32_t)sizeof buf - 1, true) : 0;
    n = n < 0 ? 0 : n;
    buf[n] = 0;
    return strdup(buf);
}

const char *oxl_srv_chat_template(const oxl_model *model) {
    int64_t k = oxl_gguf_find_key(model->gguf, "tokenizer.chat_template");
    if (k >= 0 && oxl_gguf_kv_type(model->gguf, k) == OXL_GGUF_STRING) {
        return oxl_gguf_kv_str(model->gguf, k, NULL);
    }
    return NULL;
}

int oxl_srv_chat_render(const oxl_model *model, const cJSON *messages, const cJSON *tools, char **out, oxl_error *err) {
    const char *tmpl = oxl_srv_chat_template(model);
    char *bos = token_text(model, oxl_token_bos(model));
    char *eos = token_text(model, oxl_token_eos(model));
    int rc = -1;
    if (bos && eos) {
        rc = oxl_chat_render(tmpl ? tmpl : "chatml", messages, tools, true, bos, eos, out, err);
        /* The tokenizer adds BOS itself; drop the template's copy, as llama.cpp's server does. */
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
