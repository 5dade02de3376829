/* libFuzzer harness for the loading of split models (src/gguf/gguf_split.c, oxl_gguf_add_part).
 *
 * The input holds the files of a split model one after the other, each but the first after the
 * 8-byte separator "\nOXLPART" (tests/fuzz/make_corpus.py writes seeds from tiny-llama-q8_0 split
 * by tests/cli/split_gguf.py). The first file is opened under the name its split.count gives
 * (fuzz-00001-of-0000N.gguf); oxl_gguf_load_split then opens part K from the K-th file of the
 * input (a missing one when the input has fewer). When the model is accepted: every tensor finds
 * itself by name, lies inside the file its split index names, and is read end to end; the part
 * count is split.count. A rejection always has a message. */
#include "gguf.h"
#include "gguf_split.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CHECK(cond)                                                                                                    \
    do {                                                                                                               \
        if (!(cond)) {                                                                                                 \
            fprintf(stderr, "%s:%d: invariant failed: %s\n", __FILE__, __LINE__, #cond);                               \
            __builtin_trap();                                                                                          \
        }                                                                                                              \
    } while (0)

#define MAX_FILES 8
static const char SEP[8] = "\nOXLPART";

typedef struct files {
    const uint8_t *p[MAX_FILES];
    size_t n[MAX_FILES];
    int count;
} files;

static volatile uint64_t g_sink;

static int open_from_input(const char *path, void *user, oxl_gguf **out, oxl_error *err) {
    const files *f = user;
    const int k = strncmp(path, "fuzz-", 5) == 0 ? atoi(path + 5) : 0; /* fuzz-0000K-of-0000N.gguf */
    if (k < 1 || k > f->count) {
        return 1;
    }
    *out = oxl_gguf_open_memory(f->p[k - 1], f->n[k - 1], path, err);
    return *out ? 0 : -1;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    files f = {.count = 0};
    for (size_t start = 0; f.count < MAX_FILES;) {
        const uint8_t *sep = NULL;
        for (size_t i = start; i + sizeof SEP <= size; i++) {
            if (!memcmp(data + i, SEP, sizeof SEP)) {
                sep = data + i;
                break;
            }
        }
        f.p[f.count] = data + start;
        f.n[f.count] = (sep ? (size_t)(sep - data) : size) - start;
        f.count++;
        if (!sep) {
            break;
        }
        start = (size_t)(sep - data) + sizeof SEP;
    }
    oxl_error err;
    err.msg[0] = '\0';
    oxl_gguf *probe = oxl_gguf_open_memory(f.p[0], f.n[0], "fuzz.gguf", &err);
    if (!probe) {
        CHECK(err.msg[0] != '\0');
        return 0;
    }
    const int count = oxl_gguf_split_count(probe, &err);
    oxl_gguf_close(probe);
    if (count < 0) {
        CHECK(err.msg[0] != '\0');
        return 0;
    }
    char name[64];
    CHECK(oxl_gguf_split_path(name, sizeof name, "fuzz", 0, count) > 0);
    char prefix[64];
    CHECK(oxl_gguf_split_prefix(prefix, sizeof prefix, name, 0, count) == 4 && !strcmp(prefix, "fuzz"));
    oxl_gguf *g = oxl_gguf_open_memory(f.p[0], f.n[0], name, &err);
    CHECK(g != NULL);
    err.msg[0] = '\0';
    if (oxl_gguf_load_split(g, open_from_input, &f, &err)) {
        CHECK(err.msg[0] != '\0' && memchr(err.msg, '\0', sizeof err.msg) != NULL);
        oxl_gguf_close(g);
        return 0;
    }
    CHECK(oxl_gguf_n_parts(g) == count);
    uint64_t s = 0;
    for (int64_t i = 0; i < oxl_gguf_n_tensors(g); i++) {
        const oxl_gguf_tensor *t = oxl_gguf_tensor_at(g, i);
        CHECK(oxl_gguf_find_tensor(g, t->name) == t);
        CHECK((int)t->split < count);
        const oxl_gguf *part = oxl_gguf_part(g, (int)t->split);
        CHECK(part != NULL && oxl_gguf_find_tensor(part, t->name) != NULL);
        const uint8_t *base = t->split < (uint32_t)f.count ? f.p[t->split] : NULL;
        const size_t n = t->split < (uint32_t)f.count ? f.n[t->split] : 0;
        if (t->nbytes) {
            const uint8_t *q = t->data;
            CHECK(base && q >= base && t->nbytes <= n && (size_t)(q - base) <= n - t->nbytes);
            for (size_t b = 0; b < t->nbytes; b++) {
                s = s * 31 + q[b];
            }
        }
    }
    g_sink = s;
    oxl_gguf_close(g);
    return 0;
}
