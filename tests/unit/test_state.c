/* Sequence state save / restore (oxl_state_seq_*, docs/state-format.md): a sequence saved after its
 * prompt and restored into a new context continues with logits bit-identical to the run that was
 * never interrupted (KV caches f32 / f16 / q8_0, flash attention on and off, dense, MoE, recurrent,
 * hybrid and shared-KV models); every damaged or mismatched state is a named error that leaves the sequence
 * unchanged. */
#include "oxillama.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MODELS OXL_SOURCE_DIR "/models/"
#define ARCH OXL_SOURCE_DIR "/golden/arch/"

enum { N_PROMPT = 13, N_NEXT = 5, N_CTX = 32 };

static oxl_model *load(const char *path) {
    oxl_error err = {0};
    oxl_model_params mp = oxl_model_default_params();
    oxl_model *m = oxl_model_load(path, &mp, &err);
    cr_assert_not_null(m, "%s", err.msg);
    return m;
}

static oxl_ctx *new_ctx(const oxl_model *m, oxl_kv_type tk, oxl_kv_type tv, oxl_flash_attn fa, int32_t n_seq,
                        int32_t n_ctx) {
    oxl_error err = {0};
    oxl_ctx_params cp = oxl_ctx_default_params();
    cp.n_ctx = n_ctx * n_seq;
    cp.n_seq_max = n_seq;
    cp.n_threads = 2;
    cp.type_k = tk;
    cp.type_v = tv;
    cp.flash_attn = fa;
    oxl_ctx *ctx = oxl_ctx_new(m, &cp, &err);
    cr_assert_not_null(ctx, "%s", err.msg);
    return ctx;
}

static void tokens_for(const oxl_model *m, oxl_token *t, int32_t n) {
    const int32_t n_vocab = oxl_model_n_vocab(m);
    for (int32_t i = 0; i < n; i++) {
        t[i] = (oxl_token)((i * 37 + 11) % (n_vocab - 3) + 3);
    }
}

/* Decodes tokens one at a time on sequence seq, copying each step's logits into out. */
static void decode_steps(oxl_ctx *ctx, int32_t seq, const oxl_token *t, int32_t n, float *out, int32_t n_vocab) {
    oxl_error err = {0};
    for (int32_t i = 0; i < n; i++) {
        const int32_t pos = oxl_seq_n_past(ctx, seq);
        const int8_t keep = 1;
        oxl_batch b = {.n_tokens = 1, .token = t + i, .pos = &pos, .seq_id = &seq, .logits = &keep};
        cr_assert_eq(oxl_decode_batch(ctx, &b, &err), 0, "%s", err.msg);
        memcpy(out + (size_t)i * n_vocab, oxl_get_logits(ctx, 0), sizeof(float) * (size_t)n_vocab);
    }
}

static void prefill(oxl_ctx *ctx, int32_t seq, const oxl_token *t, int32_t n) {
    oxl_error err = {0};
    int32_t pos[64], sq[64];
    for (int32_t i = 0; i < n; i++) {
        pos[i] = i, sq[i] = seq;
    }
    oxl_batch b = {.n_tokens = n, .token = t, .pos = pos, .seq_id = sq, .logits = NULL};
    cr_assert_eq(oxl_decode_batch(ctx, &b, &err), 0, "%s", err.msg);
}

/* The uninterrupted run (prompt, then N_NEXT single-token steps on sequence 0) against: prompt on a
 * context, state saved, that context freed, a new context restoring it into sequence 1, the same
 * steps. Every logit must be bit-identical. via_file: through a file rather than a buffer. */
static void roundtrip(const char *path, oxl_kv_type tk, oxl_kv_type tv, oxl_flash_attn fa, bool via_file) {
    oxl_model *m = load(path);
    const int32_t n_vocab = oxl_model_n_vocab(m);
    oxl_token t[N_PROMPT + N_NEXT];
    tokens_for(m, t, N_PROMPT + N_NEXT);
    float *want = malloc(sizeof(float) * (size_t)n_vocab * N_NEXT);
    float *got = malloc(sizeof(float) * (size_t)n_vocab * N_NEXT);

    oxl_ctx *ref = new_ctx(m, tk, tv, fa, 2, N_CTX);
    prefill(ref, 0, t, N_PROMPT);
    decode_steps(ref, 0, t + N_PROMPT, N_NEXT, want, n_vocab);
    oxl_ctx_free(ref);

    oxl_error err = {0};
    oxl_ctx *a = new_ctx(m, tk, tv, fa, 2, N_CTX);
    prefill(a, 0, t, N_PROMPT);
    const size_t size = oxl_state_seq_size(a, 0);
    void *buf = malloc(size);
    char file[256];
    snprintf(file, sizeof file, "/tmp/oxl-state-test-%d.bin", (int)getpid());
    if (via_file) {
        cr_assert_eq(oxl_state_seq_save(a, 0, t, N_PROMPT, file, &err), 0, "%s", err.msg);
    } else {
        cr_assert_eq(oxl_state_seq_save_buf(a, 0, t, N_PROMPT, buf, size, &err), (int64_t)size, "%s", err.msg);
    }
    oxl_ctx_free(a);

    /* a bigger context, other sequences busy: the state lands in sequence 1 */
    oxl_ctx *b = new_ctx(m, tk, tv, fa, 2, N_CTX + 8);
    prefill(b, 0, t + 3, 4);
    oxl_token back[N_CTX];
    const int32_t n = via_file ? oxl_state_seq_load(b, 1, file, back, N_CTX, &err)
                               : oxl_state_seq_load_buf(b, 1, buf, size, back, N_CTX, &err);
    cr_assert_eq(n, N_PROMPT, "%s", err.msg);
    cr_assert_eq(memcmp(back, t, sizeof(oxl_token) * N_PROMPT), 0, "token ids");
    cr_assert_eq(oxl_seq_n_past(b, 1), N_PROMPT);
    cr_assert_eq(oxl_seq_n_past(b, 0), 4);
    decode_steps(b, 1, t + N_PROMPT, N_NEXT, got, n_vocab);
    for (int32_t i = 0; i < N_NEXT; i++) {
        cr_expect_eq(memcmp(got + (size_t)i * n_vocab, want + (size_t)i * n_vocab, sizeof(float) * (size_t)n_vocab), 0,
                     "%s (k %d, v %d, fa %d): logits of step %d differ from the uninterrupted run", path, tk, tv, fa,
                     i);
    }
    oxl_ctx_free(b);
    if (via_file) {
        remove(file);
    }
    free(buf);
    free(want);
    free(got);
    oxl_model_free(m);
}

Test(state, stories_f32_cache) {
    roundtrip(MODELS "stories260K.gguf", OXL_KV_F32, OXL_KV_F32, OXL_FLASH_ATTN_ON, false);
    roundtrip(MODELS "stories260K.gguf", OXL_KV_F32, OXL_KV_F32, OXL_FLASH_ATTN_OFF, true);
}
Test(state, stories_f16_cache) {
    roundtrip(MODELS "stories260K.gguf", OXL_KV_F16, OXL_KV_F16, OXL_FLASH_ATTN_ON, true);
    roundtrip(MODELS "stories260K.gguf", OXL_KV_F16, OXL_KV_F16, OXL_FLASH_ATTN_OFF, false);
}
/* stories260K's heads are 8 wide, narrower than a q8_0 block: its cache cannot be q8_0. qwen3moe
 * (head_dim 32) takes one; a quantized V needs flash attention. */
Test(state, moe_q8_0_cache) {
    roundtrip(ARCH "qwen3moe.gguf", OXL_KV_Q8_0, OXL_KV_Q8_0, OXL_FLASH_ATTN_ON, true);
    roundtrip(ARCH "qwen3moe.gguf", OXL_KV_Q8_0, OXL_KV_F16, OXL_FLASH_ATTN_OFF, false);
}
Test(state, moe_f16_cache) {
    roundtrip(ARCH "qwen3moe.gguf", OXL_KV_F16, OXL_KV_F16, OXL_FLASH_ATTN_ON, false);
    roundtrip(ARCH "mixtral.gguf", OXL_KV_F16, OXL_KV_F16, OXL_FLASH_ATTN_OFF, true);
}
Test(state, recurrent_mamba) {
    roundtrip(ARCH "mamba.gguf", OXL_KV_F16, OXL_KV_F16, OXL_FLASH_ATTN_ON, true);
    roundtrip(ARCH "mamba.gguf", OXL_KV_F32, OXL_KV_F32, OXL_FLASH_ATTN_OFF, false);
}
Test(state, hybrid_jamba) {
    roundtrip(ARCH "jamba.gguf", OXL_KV_F16, OXL_KV_F16, OXL_FLASH_ATTN_ON, false);
    roundtrip(ARCH "jamba.gguf", OXL_KV_F16, OXL_KV_F16, OXL_FLASH_ATTN_OFF, true);
}
Test(state, hybrid_moe_qwen35moe_q8_0) {
    roundtrip(ARCH "qwen35moe.gguf", OXL_KV_Q8_0, OXL_KV_Q8_0, OXL_FLASH_ATTN_ON, true);
    roundtrip(ARCH "qwen35moe.gguf", OXL_KV_F16, OXL_KV_F16, OXL_FLASH_ATTN_OFF, false);
}

/* gemma3n's last layers read the cache of earlier ones (no rows of their own); lfm2's recurrent
 * layers have a conv state only; granitehybrid mixes mamba2 and attention layers */
Test(state, shared_kv_gemma3n) {
    roundtrip(ARCH "gemma3n.gguf", OXL_KV_F16, OXL_KV_F16, OXL_FLASH_ATTN_ON, true);
    roundtrip(ARCH "gemma3n.gguf", OXL_KV_F32, OXL_KV_F32, OXL_FLASH_ATTN_OFF, false);
}
Test(state, conv_only_lfm2) {
    roundtrip(ARCH "lfm2.gguf", OXL_KV_F16, OXL_KV_F16, OXL_FLASH_ATTN_ON, false);
    roundtrip(ARCH "lfm2.gguf", OXL_KV_F16, OXL_KV_F16, OXL_FLASH_ATTN_OFF, true);
}
Test(state, hybrid_granitehybrid) {
    roundtrip(ARCH "granitehybrid.gguf", OXL_KV_F16, OXL_KV_F16, OXL_FLASH_ATTN_ON, true);
    roundtrip(ARCH "granitehybrid.gguf", OXL_KV_F16, OXL_KV_F16, OXL_FLASH_ATTN_OFF, false);
}

/* ---- refusals ------------------------------------------------------------------------------ */

typedef struct saved {
    oxl_model *m;
    uint8_t *buf;
    size_t size;
    oxl_token t[N_PROMPT];
} saved;

static saved save_stories(oxl_kv_type t) {
    saved s = {.m = load(MODELS "stories260K.gguf")};
    tokens_for(s.m, s.t, N_PROMPT);
    oxl_ctx *a = new_ctx(s.m, t, t, OXL_FLASH_ATTN_ON, 1, N_CTX);
    prefill(a, 0, s.t, N_PROMPT);
    s.size = oxl_state_seq_size(a, 0);
    s.buf = malloc(s.size);
    oxl_error err = {0};
    cr_assert_eq(oxl_state_seq_save_buf(a, 0, s.t, N_PROMPT, s.buf, s.size, &err), (int64_t)s.size, "%s", err.msg);
    oxl_ctx_free(a);
    return s;
}

/* FNV-1a-64 of the first 112 header bytes, stored at 112 (docs/state-format.md), so a test can
 * change one field and still pass the header checksum to reach the field's own check. */
static void rehash(uint8_t *hdr) {
    uint64_t h = 0xcbf29ce484222325ull;
    for (int i = 0; i < 112; i++) {
        h = (h ^ hdr[i]) * 0x100000001b3ull;
    }
    for (int i = 0; i < 8; i++) {
        hdr[112 + i] = (uint8_t)(h >> (8 * i));
    }
}

/* Loading buf into sequence 0 of ctx (which holds 2 tokens) fails with a message containing what,
 * and leaves the sequence as it was. */
static void expect_refused(oxl_ctx *ctx, const uint8_t *buf, size_t size, const char *what) {
    oxl_token back[N_CTX];
    oxl_error err = {0};
    cr_expect_eq(oxl_state_seq_load_buf(ctx, 0, buf, size, back, N_CTX, &err), -1, "accepted: %s", what);
    cr_expect_not_null(strstr(err.msg, what), "message \"%s\" lacks \"%s\"", err.msg, what);
    cr_expect_eq(oxl_seq_n_past(ctx, 0), 2, "%s: the sequence changed", what);
}

Test(state, damaged_or_mismatched_states_are_named_errors) {
    saved s = save_stories(OXL_KV_F16);
    oxl_ctx *ctx = new_ctx(s.m, OXL_KV_F16, OXL_KV_F16, OXL_FLASH_ATTN_ON, 1, N_CTX);
    prefill(ctx, 0, s.t, 2);
    uint8_t *b = malloc(s.size + 1);

    expect_refused(ctx, s.buf, s.size - 1, "truncated: 8371 payload bytes of 8372");
    memcpy(b, s.buf, s.size);
    b[s.size] = 0;
    expect_refused(ctx, b, s.size + 1, "1 bytes after the payload's 8372");
    expect_refused(ctx, s.buf, 100, "truncated: 100 bytes; the header alone has 128");
    memcpy(b, s.buf, s.size);
    b[0] = 'X';
    expect_refused(ctx, b, s.size, "magic");
    memcpy(b, s.buf, s.size);
    b[8] = 2;
    expect_refused(ctx, b, s.size, "version 2; this library reads version 1");
    memcpy(b, s.buf, s.size);
    b[60] ^= 1; /* n_embd, header checksum not updated */
    expect_refused(ctx, b, s.size, "header checksum");
    rehash(b);
    expect_refused(ctx, b, s.size, "n_embd 65; the context's model has 64");
    memcpy(b, s.buf, s.size);
    b[s.size - 1] ^= 0x40;
    expect_refused(ctx, b, s.size, "payload checksum");
    memcpy(b, s.buf, s.size);
    b[88] = 40; /* n_tokens beyond n_ctx 32 */
    rehash(b);
    expect_refused(ctx, b, s.size, "n_tokens 40; the context holds 32 per sequence");
    memcpy(b, s.buf, s.size);
    b[88] = 12; /* one token fewer than the payload holds */
    rehash(b);
    expect_refused(ctx, b, s.size, "payload_size 8372; 12 tokens in this context's cache take 7728");
    memcpy(b, s.buf, s.size);
    b[24] = 'X'; /* architecture */
    rehash(b);
    expect_refused(ctx, b, s.size, "architecture \"Xlama\"; the context's model is \"llama\"");
    /* a token id outside the vocabulary under a valid checksum */
    memcpy(b, s.buf, s.size);
    b[128 + 3] = 0x7f;
    uint64_t h = 0xcbf29ce484222325ull;
    for (size_t i = 128; i < s.size; i++) {
        h = (h ^ b[i]) * 0x100000001b3ull;
    }
    for (int i = 0; i < 8; i++) {
        b[104 + i] = (uint8_t)(h >> (8 * i));
    }
    rehash(b);
    expect_refused(ctx, b, s.size, "outside the vocabulary of 512");
    /* the token buffer too small */
    oxl_token few[4];
    oxl_error err = {0};
    cr_expect_eq(oxl_state_seq_load_buf(ctx, 0, s.buf, s.size, few, 4, &err), -1);
    cr_expect_not_null(strstr(err.msg, "n_tokens 13; the token buffer holds 4"), "%s", err.msg);
    oxl_ctx_free(ctx);

    /* another cache type; a context too short */
    ctx = new_ctx(s.m, OXL_KV_F32, OXL_KV_F16, OXL_FLASH_ATTN_ON, 1, N_CTX);
    prefill(ctx, 0, s.t, 2);
    expect_refused(ctx, s.buf, s.size, "type_k f16 (1); the context's cache holds f32 (0)");
    oxl_ctx_free(ctx);
    ctx = new_ctx(s.m, OXL_KV_F16, OXL_KV_F16, OXL_FLASH_ATTN_ON, 1, 12);
    prefill(ctx, 0, s.t, 2);
    expect_refused(ctx, s.buf, s.size, "n_tokens 13; the context holds 12 per sequence (n_ctx too small)");
    oxl_ctx_free(ctx);

    /* another model: same architecture and shapes, other tensor types */
    oxl_model *m2 = load(MODELS "stories260K-Q8_0.gguf");
    ctx = new_ctx(m2, OXL_KV_F16, OXL_KV_F16, OXL_FLASH_ATTN_ON, 1, N_CTX);
    prefill(ctx, 0, s.t, 2);
    expect_refused(ctx, s.buf, s.size, "model_hash");
    oxl_ctx_free(ctx);
    oxl_model_free(m2);
    /* another architecture */
    m2 = load(ARCH "mamba.gguf");
    ctx = new_ctx(m2, OXL_KV_F16, OXL_KV_F16, OXL_FLASH_ATTN_ON, 1, N_CTX);
    prefill(ctx, 0, s.t, 2);
    expect_refused(ctx, s.buf, s.size, "architecture \"llama\"; the context's model is \"mamba\"");
    oxl_ctx_free(ctx);
    oxl_model_free(m2);

    free(b);
    free(s.buf);
    oxl_model_free(s.m);
}

Test(state, save_arguments_are_checked) {
    saved s = save_stories(OXL_KV_F32);
    oxl_ctx *ctx = new_ctx(s.m, OXL_KV_F32, OXL_KV_F32, OXL_FLASH_ATTN_ON, 1, N_CTX);
    prefill(ctx, 0, s.t, 3);
    oxl_error err = {0};
    uint8_t buf[4096];
    cr_expect_eq(oxl_state_seq_save_buf(ctx, 0, s.t, 2, buf, sizeof buf, &err), -1);
    cr_expect_not_null(strstr(err.msg, "2 token ids given; sequence 0 holds 3"), "%s", err.msg);
    cr_expect_eq(oxl_state_seq_save_buf(ctx, 1, s.t, 3, buf, sizeof buf, &err), -1);
    cr_expect_not_null(strstr(err.msg, "sequence 1; the context has 1"), "%s", err.msg);
    cr_expect_eq(oxl_state_seq_save_buf(ctx, 0, s.t, 3, buf, 100, &err), -1);
    cr_expect_not_null(strstr(err.msg, "buffer of 100 bytes"), "%s", err.msg);
    cr_expect_eq(oxl_state_seq_save(ctx, 0, s.t, 3, "/nonexistent-dir/x.bin", &err), -1);
    cr_expect_not_null(strstr(err.msg, "/nonexistent-dir/x.bin: cannot write"), "%s", err.msg);
    cr_expect_eq(oxl_state_seq_load(ctx, 0, "/nonexistent-dir/x.bin", NULL, 0, &err), -1);
    cr_expect_not_null(strstr(err.msg, "cannot open"), "%s", err.msg);
    cr_expect_eq(oxl_state_seq_size(ctx, 5), 0);
    oxl_ctx_free(ctx);
    free(s.buf);
    oxl_model_free(s.m);
}
