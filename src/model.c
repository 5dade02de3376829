/* Model loading and the model-level public API (include/oxillama.h). */
#include "model.h"

#include "arch.h"
#include "error.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

oxl_model_params oxl_model_default_params(void) {
    return (oxl_model_params){.use_mmap = true};
}

oxl_model *oxl_model_from_gguf(oxl_gguf *g, oxl_error *err) {
    const char *path = oxl_gguf_path(g);
    const char *arch_name = NULL;
    int r = oxl_gguf_get_str(g, "general.architecture", &arch_name, err);
    if (r <= 0) {
        if (r == 0) {
            oxl_err_set(err, "%s: missing key 'general.architecture'", path);
        }
        oxl_gguf_close(g);
        return NULL;
    }
    const oxl_arch *arch = oxl_arch_find(arch_name);
    if (!arch) {
        oxl_err_set(err, "%s: unknown architecture '%s' (general.architecture); supported: %s", path, arch_name,
                    oxl_arch_names());
        oxl_gguf_close(g);
        return NULL;
    }
    oxl_model *m = calloc(1, sizeof *m);
    if (!m) {
        oxl_err_set(err, "%s: out of memory", path);
        oxl_gguf_close(g);
        return NULL;
    }
    m->gguf = g;
    m->arch = arch;
    m->vocab = oxl_vocab_load(g, err);
    if (!m->vocab) {
        oxl_model_free(m);
        return NULL;
    }
    m->hp.n_vocab = oxl_vocab_n_tokens(m->vocab);
    if (arch->load(m, err) != 0) {
        oxl_model_free(m);
        return NULL;
    }
    for (int64_t i = 0; i < oxl_gguf_n_tensors(g); i++) {
        const oxl_gguf_tensor *t = oxl_gguf_tensor_at(g, i);
        if (t->nbytes > 0) { /* an empty tensor may claim any other dimensions: their product can overflow */
            m->n_params += t->ne[0] * t->ne[1] * t->ne[2] * t->ne[3];
        }
        m->n_bytes += t->nbytes;
    }
    snprintf(m->desc, sizeof m->desc, "%s %.2fM params, %d layers, n_embd %d", arch->name,
             (double)m->n_params / 1e6, m->hp.n_layer, m->hp.n_embd);
    return m;
}

oxl_model *oxl_model_load(const char *path, const oxl_model_params *params, oxl_error *err) {
    oxl_gguf *g = oxl_gguf_open(path, err);
    if (!g) {
        return NULL;
    }
    return oxl_model_from_gguf(g, err);
}

void oxl_model_free(oxl_model *m) {
    if (!m) {
        return;
    }
    if (m->arch && m->weights) {
        m->arch->free_weights(m->weights);
    }
    oxl_vocab_free(m->vocab);
    oxl_gguf_close(m->gguf);
    free(m);
}

int32_t oxl_model_n_vocab(const oxl_model *m) { return m->hp.n_vocab; }
int32_t oxl_model_n_ctx_train(const oxl_model *m) { return m->hp.n_ctx_train; }
int32_t oxl_model_n_embd(const oxl_model *m) { return m->hp.n_embd; }
const char *oxl_model_desc(const oxl_model *m) { return m->desc; }
uint64_t oxl_model_n_params(const oxl_model *m) { return (uint64_t)m->n_params; }
uint64_t oxl_model_size(const oxl_model *m) { return (uint64_t)m->n_bytes; }

/* ---- tokenizer: the vocabulary does the work ---- */

int32_t oxl_tokenize(const oxl_model *m, const char *text, size_t len, oxl_token *out, int32_t cap, bool add_special,
                     bool parse_special) {
    return oxl_vocab_tokenize(m->vocab, text, len, out, cap, add_special, parse_special);
}

int32_t oxl_token_to_piece(const oxl_model *m, oxl_token tok, char *buf, int32_t cap, bool special) {
    return oxl_vocab_token_to_piece(m->vocab, tok, buf, cap, special);
}

oxl_token oxl_token_bos(const oxl_model *m) { return oxl_vocab_bos(m->vocab); }
oxl_token oxl_token_eos(const oxl_model *m) { return oxl_vocab_eos(m->vocab); }
bool oxl_token_is_eog(const oxl_model *m, oxl_token tok) { return oxl_vocab_is_eog(m->vocab, tok); }

int32_t oxl_detok_push(oxl_detok *d, const oxl_model *m, oxl_token tok, char *out, int32_t cap) {
    return oxl_vocab_detok_push(d, m->vocab, tok, out, cap);
}
