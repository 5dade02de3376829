/* Saving and restoring one sequence's state (oxl_state_seq_*, include/oxillama.h): its KV cache rows,
 * recurrent state and token ids, in the versioned format of docs/state-format.md. Behaviour reproduced:
 * llama.cpp src/llama-context.cpp (llama_state_seq_save_file / load_file: a sequence's cells and
 * tokens; the file is this project's own, with a model identity and a checksum). */
#include "arch_iface.h"
#include "context.h"
#include "errors.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define STATE_MAGIC "OXLSTATE"
#define STATE_VERSION 1u
#define STATE_HEADER 128u
#define ARCH_NAME_MAX 32

/* Header fields, byte offsets (docs/state-format.md); integers little-endian. */
enum {
    OFF_MAGIC = 0,
    OFF_VERSION = 8,
    OFF_HEADER_SIZE = 12,
    OFF_MODEL_HASH = 16,
    OFF_ARCH = 24,
    OFF_N_VOCAB = 56,
    OFF_N_EMBD = 60,
    OFF_N_LAYER = 64,
    OFF_KV_DIM = 68,
    OFF_N_EMBD_R = 72,
    OFF_N_EMBD_S = 76,
    OFF_TYPE_K = 80,
    OFF_TYPE_V = 84,
    OFF_N_TOKENS = 88,
    OFF_FLAGS = 92,
    OFF_PAYLOAD_SIZE = 96,
    OFF_PAYLOAD_HASH = 104,
    OFF_HEADER_HASH = 112,
    OFF_RESERVED = 120,
};

static void put32(uint8_t *p, uint32_t v) {
    for (int i = 0; i < 4; i++) {
        p[i] = (uint8_t)(v >> (8 * i));
    }
}

static void put64(uint8_t *p, uint64_t v) {
    for (int i = 0; i < 8; i++) {
        p[i] = (uint8_t)(v >> (8 * i));
    }
}

static uint32_t get32(const uint8_t *p) {
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static uint64_t get64(const uint8_t *p) { return (uint64_t)get32(p) | (uint64_t)get32(p + 4) << 32; }

/* FNV-1a, 64 bits (offset basis 0xcbf29ce484222325, prime 0x100000001b3). */
static uint64_t fnv1a(uint64_t h, const void *data, size_t n) {
    const uint8_t *p = data;
    for (size_t i = 0; i < n; i++) {
        h = (h ^ p[i]) * 0x100000001b3ull;
    }
    return h;
}
#define FNV_BASIS 0xcbf29ce484222325ull

static uint64_t fnv_u64(uint64_t h, uint64_t v) {
    uint8_t b[8];
    put64(b, v);
    return fnv1a(h, b, 8);
}

/* The model's identity: FNV-1a-64 over the architecture name, the hyper-parameters the cache
 * depends on, and the tensor table (each tensor's name, type and dimensions, in file order). */
static uint64_t model_hash(const oxl_model *m) {
    uint64_t h = fnv1a(FNV_BASIS, m->arch->name, strlen(m->arch->name) + 1);
    const oxl_hparams *hp = &m->hp;
    const int64_t v[] = {hp->n_vocab,  hp->n_embd, hp->n_layer,  hp->n_head,   hp->n_head_kv,
                         hp->head_dim, hp->n_rot,  hp->n_embd_r, hp->n_embd_s, hp->head_dim_v};
    for (size_t i = 0; i < sizeof v / sizeof v[0]; i++) {
        h = fnv_u64(h, (uint64_t)v[i]);
    }
    const int64_t nt = oxl_gguf_n_tensors(m->gguf);
    h = fnv_u64(h, (uint64_t)nt);
    for (int64_t i = 0; i < nt; i++) {
        const oxl_gguf_tensor *t = oxl_gguf_tensor_at(m->gguf, i);
        h = fnv1a(h, t->name, strlen(t->name) + 1);
        h = fnv_u64(h, t->type);
        for (int d = 0; d < OXL_GGUF_MAX_DIMS; d++) {
            h = fnv_u64(h, (uint64_t)t->ne[d]);
        }
    }
    return h;
}

/* The header this context would write for a sequence of n_tokens tokens (hashes left zero). */
static void make_header(const oxl_ctx *ctx, int32_t n_tokens, uint8_t *hdr) {
    const oxl_model *m = ctx->model;
    const oxl_memory_layout l = oxl_memory_get_layout(ctx->mem);
    memset(hdr, 0, STATE_HEADER);
    memcpy(hdr + OFF_MAGIC, STATE_MAGIC, 8);
    put32(hdr + OFF_VERSION, STATE_VERSION);
    put32(hdr + OFF_HEADER_SIZE, STATE_HEADER);
    put64(hdr + OFF_MODEL_HASH, model_hash(m));
    strncpy((char *)hdr + OFF_ARCH, m->arch->name, ARCH_NAME_MAX - 1);
    put32(hdr + OFF_N_VOCAB, (uint32_t)m->hp.n_vocab);
    put32(hdr + OFF_N_EMBD, (uint32_t)m->hp.n_embd);
    put32(hdr + OFF_N_LAYER, (uint32_t)l.n_layer);
    put32(hdr + OFF_KV_DIM, (uint32_t)l.kv_dim);
    put32(hdr + OFF_N_EMBD_R, (uint32_t)l.n_embd_r);
    put32(hdr + OFF_N_EMBD_S, (uint32_t)l.n_embd_s);
    put32(hdr + OFF_TYPE_K, (uint32_t)l.type_k);
    put32(hdr + OFF_TYPE_V, (uint32_t)l.type_v);
    put32(hdr + OFF_N_TOKENS, (uint32_t)n_tokens);
}

/* Payload bytes for n tokens: the token ids, then the memory's rows and states. */
static size_t payload_size(const oxl_ctx *ctx, int32_t n) {
    return (size_t)n * sizeof(int32_t) + oxl_memory_seq_state_size(ctx->mem, n);
}

size_t oxl_state_seq_size(const oxl_ctx *ctx, int32_t seq) {
    if (!ctx || seq < 0 || seq >= ctx->n_seq_max) {
        return 0;
    }
    return STATE_HEADER + payload_size(ctx, ctx->n_past[seq]);
}

static int check_save_args(const oxl_ctx *ctx, int32_t seq, const oxl_token *tokens, int32_t n_tokens, oxl_error *err) {
    if (!ctx) {
        return oxl_err_set(err, "state save: no context");
    }
    if (seq < 0 || seq >= ctx->n_seq_max) {
        return oxl_err_set(err, "state save: sequence %d; the context has %d (n_seq_max)", seq, ctx->n_seq_max);
    }
    if (ctx->model->gpu_layers > 0) {
        return oxl_err_set(err,
                           "state save: the KV cache of %d layers is on the Vulkan device (-ngl), where saving it is "
                           "not supported",
                           ctx->model->gpu_layers);
    }
    if (n_tokens != ctx->n_past[seq] || (n_tokens > 0 && !tokens)) {
        return oxl_err_set(err, "state save: %d token ids given; sequence %d holds %d (oxl_seq_n_past)", n_tokens, seq,
                           ctx->n_past[seq]);
    }
    /* the format keeps rows, not M-RoPE positions that images made lag them */
    const oxl_seq_lag *l = &ctx->lag[seq];
    if (l->n > 0) {
        return oxl_err_set(err,
                           "state save: sequence %d holds an image whose M-RoPE positions lag its rows by %d (next "
                           "position %d at row %d); such a sequence cannot be saved",
                           seq, l->lag[l->n - 1], ctx->n_past[seq] - l->lag[l->n - 1], ctx->n_past[seq]);
    }
    for (int32_t i = 0; i < n_tokens; i++) {
        if (tokens[i] < 0 || tokens[i] >= ctx->model->hp.n_vocab) {
            return oxl_err_set(err, "state save: token %d at index %d is outside the vocabulary of %d", tokens[i], i,
                               ctx->model->hp.n_vocab);
        }
    }
    return 0;
}

int64_t oxl_state_seq_save_buf(const oxl_ctx *ctx, int32_t seq, const oxl_token *tokens, int32_t n_tokens, void *buf,
                               size_t size, oxl_error *err) {
    if (check_save_args(ctx, seq, tokens, n_tokens, err) != 0) {
        return -1;
    }
    const size_t need = oxl_state_seq_size(ctx, seq);
    if (!buf || size < need) {
        return oxl_err_set(err, "state save: buffer of %zu bytes; the state of sequence %d needs %zu", size, seq, need);
    }
    uint8_t *hdr = buf, *pay = hdr + STATE_HEADER;
    make_header(ctx, n_tokens, hdr);
    for (int32_t i = 0; i < n_tokens; i++) {
        put32(pay + (size_t)i * 4, (uint32_t)tokens[i]);
    }
    oxl_memory_seq_state_read(ctx->mem, seq, n_tokens, pay + (size_t)n_tokens * 4);
    const size_t np = need - STATE_HEADER;
    put64(hdr + OFF_PAYLOAD_SIZE, np);
    put64(hdr + OFF_PAYLOAD_HASH, fnv1a(FNV_BASIS, pay, np));
    put64(hdr + OFF_HEADER_HASH, fnv1a(FNV_BASIS, hdr, OFF_HEADER_HASH));
    return (int64_t)need;
}

int oxl_state_seq_save(const oxl_ctx *ctx, int32_t seq, const oxl_token *tokens, int32_t n_tokens, const char *path,
                       oxl_error *err) {
    if (check_save_args(ctx, seq, tokens, n_tokens, err) != 0) {
        return -1;
    }
    if (!path) {
        return oxl_err_set(err, "state save: no path");
    }
    const size_t size = oxl_state_seq_size(ctx, seq);
    void *buf = malloc(size);
    if (!buf) {
        return oxl_err_set(err, "state save: out of memory for %zu bytes", size);
    }
    if (oxl_state_seq_save_buf(ctx, seq, tokens, n_tokens, buf, size, err) < 0) {
        free(buf);
        return -1;
    }
    /* written beside the target and renamed over it, so a reader never sees half a file */
    const size_t pl = strlen(path);
    char *tmp = malloc(pl + 5);
    if (!tmp) {
        free(buf);
        return oxl_err_set(err, "state save: out of memory");
    }
    memcpy(tmp, path, pl);
    memcpy(tmp + pl, ".tmp", 5);
    FILE *f = fopen(tmp, "wb");
    int rc = 0;
    if (!f) {
        rc = oxl_err_set(err, "%s: cannot write: %s", path, strerror(errno));
    } else {
        const bool ok = fwrite(buf, 1, size, f) == size;
        const int saved = errno;
        if (fclose(f) != 0 || !ok) {
            rc = oxl_err_set(err, "%s: write failed: %s", path, strerror(ok ? errno : saved));
            remove(tmp);
        } else if (rename(tmp, path) != 0) {
            rc = oxl_err_set(err, "%s: cannot rename %s over it: %s", path, tmp, strerror(errno));
            remove(tmp);
        }
    }
    free(tmp);
    free(buf);
    return rc;
}

static const char *type_name(uint32_t t) {
    const oxl_type_traits *tr = oxl_type_traits_get(t);
    return tr ? tr->name : "unknown";
}

/* Checks a header against the context (every field before any payload is read or allocated) and
 * returns its token count, or -1 with err naming the field and both values. avail: bytes after
 * the header that the source holds. */
static int32_t check_header(const oxl_ctx *ctx, const char *name, const uint8_t *hdr, uint64_t avail, oxl_error *err) {
    if (memcmp(hdr + OFF_MAGIC, STATE_MAGIC, 8) != 0) {
        return oxl_err_set(err, "%s: magic is not \"" STATE_MAGIC "\": not an oxillama state file", name);
    }
    const uint32_t version = get32(hdr + OFF_VERSION);
    if (version != STATE_VERSION) {
        return oxl_err_set(err, "%s: version %u; this library reads version %u", name, version, STATE_VERSION);
    }
    if (get32(hdr + OFF_HEADER_SIZE) != STATE_HEADER) {
        return oxl_err_set(err, "%s: header_size %u; version 1 has %u", name, get32(hdr + OFF_HEADER_SIZE),
                           STATE_HEADER);
    }
    const uint64_t hh = fnv1a(FNV_BASIS, hdr, OFF_HEADER_HASH);
    if (get64(hdr + OFF_HEADER_HASH) != hh) {
        return oxl_err_set(err, "%s: header checksum 0x%016llx; the header's bytes give 0x%016llx", name,
                           (unsigned long long)get64(hdr + OFF_HEADER_HASH), (unsigned long long)hh);
    }
    const int32_t n = (int32_t)get32(hdr + OFF_N_TOKENS);
    uint8_t want[STATE_HEADER];
    make_header(ctx, n < 0 ? 0 : n, want);
    char arch[ARCH_NAME_MAX + 1] = {0};
    memcpy(arch, hdr + OFF_ARCH, ARCH_NAME_MAX);
    if (memcmp(hdr + OFF_ARCH, want + OFF_ARCH, ARCH_NAME_MAX) != 0) {
        return oxl_err_set(err, "%s: architecture \"%s\"; the context's model is \"%s\"", name, arch,
                           ctx->model->arch->name);
    }
    static const struct {
        int off;
        const char *field;
    } dims[] = {{OFF_N_VOCAB, "n_vocab"}, {OFF_N_EMBD, "n_embd"},     {OFF_N_LAYER, "n_layer"},
                {OFF_KV_DIM, "kv_dim"},   {OFF_N_EMBD_R, "n_embd_r"}, {OFF_N_EMBD_S, "n_embd_s"}};
    for (size_t i = 0; i < sizeof dims / sizeof dims[0]; i++) {
        if (get32(hdr + dims[i].off) != get32(want + dims[i].off)) {
            return oxl_err_set(err, "%s: %s %u; the context's model has %u", name, dims[i].field,
                               get32(hdr + dims[i].off), get32(want + dims[i].off));
        }
    }
    if (get64(hdr + OFF_MODEL_HASH) != get64(want + OFF_MODEL_HASH)) {
        return oxl_err_set(err, "%s: model_hash 0x%016llx; the context's model is 0x%016llx (another model file)", name,
                           (unsigned long long)get64(hdr + OFF_MODEL_HASH),
                           (unsigned long long)get64(want + OFF_MODEL_HASH));
    }
    const char *kv[2] = {"type_k", "type_v"};
    for (int i = 0; i < 2; i++) {
        const uint32_t got = get32(hdr + OFF_TYPE_K + 4 * i), have = get32(want + OFF_TYPE_K + 4 * i);
        if (got != have) {
            return oxl_err_set(err, "%s: %s %s (%u); the context's cache holds %s (%u)", name, kv[i], type_name(got),
                               got, type_name(have), have);
        }
    }
    if (get32(hdr + OFF_FLAGS) != 0) {
        return oxl_err_set(err, "%s: flags 0x%x; version 1 has none", name, get32(hdr + OFF_FLAGS));
    }
    if (get64(hdr + OFF_RESERVED) != 0) {
        return oxl_err_set(err, "%s: reserved bytes 120..127 are 0x%016llx; version 1 has 0", name,
                           (unsigned long long)get64(hdr + OFF_RESERVED));
    }
    if (n < 0 || n > ctx->n_ctx) {
        return oxl_err_set(err, "%s: n_tokens %d; the context holds %d per sequence (n_ctx too small)", name, n,
                           ctx->n_ctx);
    }
    const uint64_t ps = get64(hdr + OFF_PAYLOAD_SIZE), want_ps = payload_size(ctx, n);
    if (ps != want_ps) {
        return oxl_err_set(err, "%s: payload_size %llu; %d tokens in this context's cache take %llu", name,
                           (unsigned long long)ps, n, (unsigned long long)want_ps);
    }
    if (avail < ps) {
        return oxl_err_set(err, "%s: truncated: %llu payload bytes of %llu", name, (unsigned long long)avail,
                           (unsigned long long)ps);
    }
    if (avail > ps) {
        return oxl_err_set(err, "%s: %llu bytes after the payload's %llu", name, (unsigned long long)(avail - ps),
                           (unsigned long long)ps);
    }
    return n;
}

/* Checks the payload and, when it is sound, replaces sequence seq with it. */
static int32_t apply(oxl_ctx *ctx, int32_t seq, const char *name, const uint8_t *hdr, const uint8_t *pay, int32_t n,
                     oxl_token *tokens_out, int32_t cap, oxl_error *err) {
    const size_t ps = payload_size(ctx, n);
    const uint64_t h = fnv1a(FNV_BASIS, pay, ps);
    if (h != get64(hdr + OFF_PAYLOAD_HASH)) {
        return oxl_err_set(err, "%s: payload checksum 0x%016llx; the payload's bytes give 0x%016llx", name,
                           (unsigned long long)get64(hdr + OFF_PAYLOAD_HASH), (unsigned long long)h);
    }
    for (int32_t i = 0; i < n; i++) {
        const int32_t t = (int32_t)get32(pay + (size_t)i * 4);
        if (t < 0 || t >= ctx->model->hp.n_vocab) {
            return oxl_err_set(err, "%s: token %d at index %d is outside the vocabulary of %d", name, t, i,
                               ctx->model->hp.n_vocab);
        }
    }
    if (n > 0 && (!tokens_out || cap < n)) {
        return oxl_err_set(err, "%s: n_tokens %d; the token buffer holds %d", name, n, tokens_out ? cap : 0);
    }
    for (int32_t i = 0; i < n; i++) {
        tokens_out[i] = (oxl_token)get32(pay + (size_t)i * 4);
    }
    oxl_memory_seq_rm(ctx->mem, seq, 0);
    oxl_memory_seq_state_write(ctx->mem, seq, n, pay + (size_t)n * 4);
    ctx->n_past[seq] = n;
    ctx->lag[seq].n = 0; /* a saved sequence holds no image with lagging positions */
    return n;
}

static int check_load_args(const oxl_ctx *ctx, int32_t seq, oxl_error *err) {
    if (!ctx) {
        return oxl_err_set(err, "state load: no context");
    }
    if (seq < 0 || seq >= ctx->n_seq_max) {
        return oxl_err_set(err, "state load: sequence %d; the context has %d (n_seq_max)", seq, ctx->n_seq_max);
    }
    if (ctx->model->gpu_layers > 0) {
        return oxl_err_set(err,
                           "state load: the KV cache of %d layers is on the Vulkan device (-ngl), where loading it is "
                           "not supported",
                           ctx->model->gpu_layers);
    }
    return 0;
}

int32_t oxl_state_seq_load_buf(oxl_ctx *ctx, int32_t seq, const void *buf, size_t size, oxl_token *tokens_out,
                               int32_t cap, oxl_error *err) {
    if (check_load_args(ctx, seq, err) != 0) {
        return -1;
    }
    if (!buf || size < STATE_HEADER) {
        return oxl_err_set(err, "state buffer: truncated: %zu bytes; the header alone has %u", buf ? size : 0,
                           STATE_HEADER);
    }
    const int32_t n = check_header(ctx, "state buffer", buf, size - STATE_HEADER, err);
    if (n < 0) {
        return -1;
    }
    return apply(ctx, seq, "state buffer", buf, (const uint8_t *)buf + STATE_HEADER, n, tokens_out, cap, err);
}

int32_t oxl_state_seq_load(oxl_ctx *ctx, int32_t seq, const char *path, oxl_token *tokens_out, int32_t cap,
                           oxl_error *err) {
    if (check_load_args(ctx, seq, err) != 0) {
        return -1;
    }
    if (!path) {
        return oxl_err_set(err, "state load: no path");
    }
    FILE *f = fopen(path, "rb");
    if (!f) {
        return oxl_err_set(err, "%s: cannot open: %s", path, strerror(errno));
    }
    uint8_t hdr[STATE_HEADER];
    const size_t got = fread(hdr, 1, sizeof hdr, f);
    int64_t end = -1;
    if (got == sizeof hdr && fseek(f, 0, SEEK_END) == 0) {
        end = ftell(f);
    }
    if (got < sizeof hdr || end < (int64_t)STATE_HEADER || fseek(f, STATE_HEADER, SEEK_SET) != 0) {
        fclose(f);
        return oxl_err_set(err, "%s: truncated: %zu bytes; the header alone has %u", path, got, STATE_HEADER);
    }
    const int32_t n = check_header(ctx, path, hdr, (uint64_t)end - STATE_HEADER, err);
    if (n < 0) {
        fclose(f);
        return -1;
    }
    /* the size is the context's own for n <= n_ctx tokens, checked above against the header */
    const size_t ps = payload_size(ctx, n);
    uint8_t *pay = malloc(ps ? ps : 1);
    if (!pay) {
        fclose(f);
        return oxl_err_set(err, "%s: out of memory for a payload of %zu bytes", path, ps);
    }
    const bool ok = fread(pay, 1, ps, f) == ps;
    fclose(f);
    int32_t rc = ok ? apply(ctx, seq, path, hdr, pay, n, tokens_out, cap, err)
                    : oxl_err_set(err, "%s: truncated while reading the payload of %zu bytes", path, ps);
    free(pay);
    return rc;
}
