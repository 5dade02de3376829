#include "vocab_test_util.h"

#include "gguf.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

char *oxl_test_slurp(const char *path, size_t *size) {
    FILE *f = fopen(path, "rb");
    cr_assert_not_null(f, "cannot open %s", path);
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *buf = malloc((size_t)n + 1);
    cr_assert_not_null(buf);
    cr_assert_eq(fread(buf, 1, (size_t)n, f), (size_t)n);
    buf[n] = '\0';
    fclose(f);
    *size = (size_t)n;
    return buf;
}

bool oxl_test_file_exists(const char *path) {
    FILE *f = fopen(path, "rb");
    if (f)
        fclose(f);
    return f != NULL;
}

oxl_vocab *oxl_test_load_vocab(const char *path) {
    oxl_error err = {{0}};
    oxl_gguf *g = oxl_gguf_open(path, &err);
    cr_assert_not_null(g, "%s: %s", path, err.msg);
    oxl_vocab *v = oxl_vocab_load(g, &err);
    cr_assert_not_null(v, "%s: %s", path, err.msg);
    oxl_gguf_close(g);
    return v;
}

int32_t oxl_test_file_token_id(const char *path, const char *text) {
    oxl_error err = {{0}};
    oxl_gguf *g = oxl_gguf_open(path, &err);
    cr_assert_not_null(g, "%s", err.msg);
    int64_t ki = oxl_gguf_find_key(g, "tokenizer.ggml.tokens");
    cr_assert_geq(ki, 0);
    int32_t found = -1;
    for (uint64_t i = 0; i < oxl_gguf_arr_n(g, ki) && found < 0; i++) {
        size_t len;
        const char *s = oxl_gguf_arr_str(g, ki, i, &len);
        if (len == strlen(text) && memcmp(s, text, len) == 0)
            found = (int32_t)i;
    }
    oxl_gguf_close(g);
    return found;
}
