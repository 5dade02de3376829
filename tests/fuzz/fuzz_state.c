/* libFuzzer harness for the sequence state reader (src/model/state.c, oxl_state_seq_load_buf;
 * docs/state-format.md).
 *
 * Input: one mode byte, then a state file. Mode bit 0 set: the harness first rewrites the file's
 * header and payload checksums (bytes 104..119) to match its bytes, so that mutated fields reach
 * their own checks instead of stopping at a checksum. The file is loaded into sequence 1 of a
 * stories260K context (f16 cache, 64 positions per sequence) whose sequence 1 holds 3 tokens.
 * Invariants: a refusal has a message and leaves sequence 1 as it was; an accepted state gives
 * n_past = its token count <= 64, saves back to exactly the bytes that were loaded, and the
 * sequence then decodes one more token when it has room. Seeds: tests/fuzz/make_state_corpus.sh. */
#include "oxillama.h"

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

enum { N_CTX = 64, HEADER = 128 };

static oxl_model *g_model;
static oxl_ctx *g_ctx;

static void put64(uint8_t *p, uint64_t v) {
    for (int i = 0; i < 8; i++) {
        p[i] = (uint8_t)(v >> (8 * i));
    }
}

static uint64_t fnv1a(const uint8_t *p, size_t n) {
    uint64_t h = 0xcbf29ce484222325ull;
    for (size_t i = 0; i < n; i++) {
        h = (h ^ p[i]) * 0x100000001b3ull;
    }
    return h;
}

/* Sequence 1 back to its 3 starting tokens. */
static void reset_seq1(void) {
    static const oxl_token t[3] = {1, 403, 407};
    static const int32_t pos[3] = {0, 1, 2}, seq[3] = {1, 1, 1};
    oxl_error err = {{0}};
    oxl_seq_truncate(g_ctx, 1, 0);
    const oxl_batch b = {.n_tokens = 3, .token = t, .pos = pos, .seq_id = seq, .logits = NULL};
    CHECK(oxl_decode_batch(g_ctx, &b, &err) == 0);
}

static void setup(void) {
    oxl_error err = {{0}};
    oxl_model_params mp = oxl_model_default_params();
    g_model = oxl_model_load(OXL_SOURCE_DIR "/models/stories260K.gguf", &mp, &err);
    CHECK(g_model != NULL);
    oxl_ctx_params cp = oxl_ctx_default_params();
    cp.n_ctx = 2 * N_CTX;
    cp.n_seq_max = 2;
    cp.n_threads = 1;
    cp.n_batch = 16;
    g_ctx = oxl_ctx_new(g_model, &cp, &err);
    CHECK(g_ctx != NULL);
    reset_seq1();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (!g_ctx) {
        setup();
    }
    if (size < 1) {
        return 0;
    }
    const uint8_t mode = data[0];
    size_t n = size - 1;
    uint8_t *buf = malloc(n ? n : 1);
    CHECK(buf != NULL);
    memcpy(buf, data + 1, n);
    if ((mode & 1) && n >= HEADER) {
        put64(buf + 104, fnv1a(buf + HEADER, n - HEADER));
        put64(buf + 112, fnv1a(buf, 112));
    }
    const int32_t before = oxl_seq_n_past(g_ctx, 1);
    oxl_token toks[N_CTX];
    oxl_error err;
    err.msg[0] = '\0';
    const int32_t rc = oxl_state_seq_load_buf(g_ctx, 1, buf, n, toks, N_CTX, &err);
    if (rc < 0) {
        CHECK(rc == -1);
        CHECK(err.msg[0] != '\0' && memchr(err.msg, '\0', sizeof err.msg) != NULL);
        CHECK(oxl_seq_n_past(g_ctx, 1) == before);
        free(buf);
        return 0;
    }
    CHECK(rc <= N_CTX && oxl_seq_n_past(g_ctx, 1) == rc);
    /* what was accepted saves back to the same bytes */
    const size_t want = oxl_state_seq_size(g_ctx, 1);
    CHECK(want == n);
    uint8_t *again = malloc(want);
    CHECK(again != NULL);
    CHECK(oxl_state_seq_save_buf(g_ctx, 1, toks, rc, again, want, &err) == (int64_t)want);
    CHECK(memcmp(again, buf, want) == 0);
    free(again);
    if (rc < N_CTX) {
        const oxl_token t = rc > 0 ? toks[rc - 1] : 1;
        const int32_t pos = rc, seq = 1;
        const int8_t keep = 1;
        const oxl_batch b = {.n_tokens = 1, .token = &t, .pos = &pos, .seq_id = &seq, .logits = &keep};
        CHECK(oxl_decode_batch(g_ctx, &b, &err) == 0);
        CHECK(oxl_get_logits(g_ctx, 0) != NULL);
    }
    reset_seq1();
    free(buf);
    return 0;
}
