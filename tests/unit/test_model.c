/* Model loading on damaged files: every truncation and byte flip of stories260K.gguf's header and
 * tensor-info region either fails with a message or loads a model that decodes without crashing. */
#include "model.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static unsigned char *read_file(const char *path, size_t *size) {
    FILE *f = fopen(path, "rb");
    cr_assert_not_null(f, "cannot open %s", path);
    fseek(f, 0, SEEK_END);
    *size = (size_t)ftell(f);
    fseek(f, 0, SEEK_SET);
    unsigned char *buf = malloc(*size);
    cr_assert_eq(fread(buf, 1, *size, f), *size);
    fclose(f);
    return buf;
}

/* Loads the buffer as a model; when that works, decodes two tokens. Returns 1 when loaded. */
static int try_load_and_run(const unsigned char *buf, size_t size) {
    oxl_error err = {0};
    oxl_gguf *g = oxl_gguf_open_memory(buf, size, "damaged.gguf", &err);
    if (!g) {
        cr_assert(err.msg[0] != '\0', "a rejected file must come with a message");
        return 0;
    }
    oxl_model *m = oxl_model_from_gguf(g, &err);
    if (!m) {
        cr_assert(err.msg[0] != '\0', "a rejected model must come with a message");
        return 0;
    }
    oxl_ctx_params cp = oxl_ctx_default_params();
    cp.n_ctx = 8;
    cp.n_threads = 1;
    oxl_ctx *ctx = oxl_ctx_new(m, &cp, &err);
    if (ctx) {
        oxl_token toks[2] = {1, oxl_model_n_vocab(m) - 1};
        oxl_decode(ctx, toks, 2, false, &err);
        oxl_ctx_free(ctx);
    }
    oxl_model_free(m);
    return 1;
}

static size_t header_end(const unsigned char *buf, size_t size) {
    oxl_error err = {0};
    oxl_gguf *g = oxl_gguf_open_memory(buf, size, "stories260K.gguf", &err);
    cr_assert_not_null(g, "%s", err.msg);
    size_t end = oxl_gguf_data_offset(g);
    oxl_gguf_close(g);
    return end;
}

Test(model_damage, intact_file_loads) {
    size_t size;
    unsigned char *buf = read_file(OXL_SOURCE_DIR "/models/stories260K.gguf", &size);
    cr_assert_eq(try_load_and_run(buf, size), 1);
    free(buf);
}

Test(model_damage, every_truncation_is_rejected, .timeout = 300) {
    size_t size;
    unsigned char *buf = read_file(OXL_SOURCE_DIR "/models/stories260K.gguf", &size);
    size_t end = header_end(buf, size);
    /* Every cut inside the header, then a stride through the tensor data: a file shorter than its
     * tensors claim is never loaded. */
    for (size_t cut = 0; cut < size; cut += cut < end + 64 ? 1 : 997) {
        unsigned char *copy = malloc(cut ? cut : 1);
        memcpy(copy, buf, cut);
        cr_assert_eq(try_load_and_run(copy, cut), 0, "truncated at %zu of %zu bytes yet loaded", cut, size);
        free(copy);
    }
    free(buf);
}

Test(model_damage, every_header_byte_flip_is_safe, .timeout = 600) {
    size_t size;
    unsigned char *buf = read_file(OXL_SOURCE_DIR "/models/stories260K.gguf", &size);
    size_t end = header_end(buf, size);
    unsigned char *copy = malloc(size);
    memcpy(copy, buf, size);
    int loaded = 0;
    for (size_t i = 0; i < end; i++) {
        copy[i] = (unsigned char)(buf[i] ^ 0xFF);
        loaded += try_load_and_run(copy, size);
        copy[i] = buf[i];
    }
    /* flips inside token texts and scores still give loadable models; flips of counts do not */
    cr_assert(loaded > 0 && (size_t)loaded < end, "loaded %d of %zu damaged files", loaded, end);
    free(copy);
    free(buf);
}
