/* A context's memory: the KV cache and the recurrent state. Behaviour reproduced: llama.cpp
 * src/llama-kv-cache.cpp (rows written by ggml_set_rows in the cache's type, the Hadamard rotation
 * around a quantized cache) and src/llama-memory-recurrent.cpp (one state per sequence; seq_rm). */
#include "model_memory.h"

#include "hadamard.h"
#include "quantize.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Per-layer key and value cache: for each sequence s, n_ctx rows of kv_dim = n_head_kv * head_dim
 * elements, position-major: row s*n_ctx + p holds the keys of position p of sequence s, heads
 * concatenated. */
typedef struct oxl_kv_cache {
    oxl_type type_k; /* a format the spec marks kv_cache */
    oxl_type type_v;
    int32_t kv_dim;
    size_t k_row; /* bytes per cached position */
    size_t v_row;
    void **k; /* [n_layer] */
    void **v; /* [n_layer] */
} oxl_kv_cache;

struct oxl_memory {
    int32_t n_layer;
    int32_t n_ctx; /* per sequence */
    int32_t n_seq_max;
    oxl_kv_cache kv;
    int32_t n_embd_r; /* recurrent state per sequence and layer: conv floats (0: no recurrent state) */
    int32_t n_embd_s; /* scan floats */
    float **rs_conv;  /* [n_layer] (n_embd_r, n_seq_max) conv states, zero at start */
    float **rs_ssm;   /* [n_layer] (n_embd_s, n_seq_max) scan states */
    int32_t *kv_src;  /* [n_layer] the layer whose cache each layer reads (llama_kv_cache's layer_reuse_cb:
                       * gemma3n's shared KV); NULL: its own */
};

/* The layer whose cache layer il reads. */
static int kv_layer(const oxl_memory *mem, int il) { return mem->kv_src ? mem->kv_src[il] : il; }

void oxl_memory_free(oxl_memory *mem) {
    if (!mem) {
        return;
    }
    for (int il = 0; il < mem->n_layer; il++) {
        if (mem->kv.k) {
            free(mem->kv.k[il]);
            free(mem->kv.v[il]);
        }
        if (mem->rs_conv) {
            free(mem->rs_conv[il]);
            free(mem->rs_ssm[il]);
        }
    }
    free(mem->kv.k);
    free(mem->kv.v);
    free(mem->rs_conv);
    free(mem->rs_ssm);
    free(mem->kv_src);
    free(mem);
}

oxl_memory *oxl_memory_new(const oxl_hparams *hp, oxl_type type_k, oxl_type type_v, int32_t n_ctx, int32_t n_seq_max) {
    oxl_memory *mem = calloc(1, sizeof *mem);
    if (!mem) {
        return NULL;
    }
    mem->n_layer = hp->n_layer;
    mem->n_ctx = n_ctx;
    mem->n_seq_max = n_seq_max;
    oxl_kv_cache *kv = &mem->kv;
    kv->type_k = type_k;
    kv->type_v = type_v;
    kv->kv_dim = hp->n_head_kv * hp->head_dim;
    kv->k_row = oxl_row_size(kv->type_k, kv->kv_dim);
    kv->v_row = oxl_row_size(kv->type_v, kv->kv_dim);
    kv->k = calloc((size_t)hp->n_layer, sizeof(void *));
    kv->v = calloc((size_t)hp->n_layer, sizeof(void *));
    bool ok = kv->k && kv->v;
    if (ok && hp->kv_src) {
        mem->kv_src = malloc((size_t)hp->n_layer * sizeof *mem->kv_src);
        ok = mem->kv_src != NULL;
        if (ok) {
            memcpy(mem->kv_src, hp->kv_src, (size_t)hp->n_layer * sizeof *mem->kv_src);
        }
    }
    const size_t rows = (size_t)n_ctx * (size_t)n_seq_max;
    for (int il = 0; ok && kv->kv_dim > 0 && il < hp->n_layer; il++) {
        if (kv_layer(mem, il) != il) {
            continue; /* reads another layer's cache: no rows of its own */
        }
        kv->k[il] = calloc(rows, kv->k_row); /* zero: rows no layer writes are saved as zeros */
        kv->v[il] = calloc(rows, kv->v_row);
        ok = kv->k[il] && kv->v[il];
    }
    /* recurrent state beside the KV cache (llama_memory_recurrent): one conv and one scan state per
     * sequence and layer, zero until the first token (a conv-only model, LFM2, has no scan state) */
    if (ok && (hp->n_embd_s > 0 || hp->n_embd_r > 0)) {
        mem->n_embd_r = hp->n_embd_r;
        mem->n_embd_s = hp->n_embd_s;
        mem->rs_conv = calloc((size_t)hp->n_layer, sizeof(float *));
        mem->rs_ssm = calloc((size_t)hp->n_layer, sizeof(float *));
        ok = mem->rs_conv && mem->rs_ssm;
        for (int il = 0; ok && il < hp->n_layer; il++) {
            mem->rs_conv[il] = calloc((size_t)hp->n_embd_r * (size_t)n_seq_max + 1, sizeof(float));
            mem->rs_ssm[il] = calloc((size_t)hp->n_embd_s * (size_t)n_seq_max + 1, sizeof(float));
            ok = mem->rs_conv[il] && mem->rs_ssm[il];
        }
    }
    if (!ok) {
        oxl_memory_free(mem);
        return NULL;
    }
    return mem;
}

bool oxl_memory_seq_rm(oxl_memory *mem, int32_t seq, int32_t p0) {
    if (mem->rs_ssm) {
        if (p0 != 0) {
            return false;
        }
        for (int il = 0; il < mem->n_layer; il++) {
            memset(mem->rs_conv[il] + (size_t)seq * mem->n_embd_r, 0, (size_t)mem->n_embd_r * sizeof(float));
            memset(mem->rs_ssm[il] + (size_t)seq * mem->n_embd_s, 0, (size_t)mem->n_embd_s * sizeof(float));
        }
    }
    return true;
}

/* Writes one cache row of n floats in the cache's type, as ggml_set_rows converts rows with the
 * type's from_float (ggml-cpu's type_traits_cpu): f32 copied; f16, bf16 and q8_0 through the
 * activation quantizers (the kernels' quant op); q4_0, q4_1, q5_0 and q5_1 through the reference
 * quantizer without importance weights (quantize_row_<type> is quantize_row_<type>_ref); iq4_nl
 * through quantize_row_iq4_nl_ref, whose single scale is not the weight quantizer's search. Those
 * quantizers refuse non-finite input; such a row is stored with NaN block scales (every format
 * here starts its block with an fp16 scale d) so its scores stay NaN, as the values they came from
 * were. */
static void store_row(oxl_type t, const float *src, void *dst, int64_t n) {
    const oxl_kernels *kern = oxl_kernels_get();
    if (t == OXL_TYPE_F32) {
        memcpy(dst, src, (size_t)n * sizeof(float));
        return;
    }
    if (kern->quant[t]) {
        kern->quant[t](src, dst, n);
        return;
    }
    bool finite = true;
    for (int64_t i = 0; i < n && finite; i++) {
        finite = isfinite(src[i]);
    }
    if (finite && t == OXL_TYPE_IQ4_NL) {
        oxl_quantize_row_iq4_nl_ref(src, dst, n);
    } else if (!finite || oxl_quantize_rows(t, src, dst, 1, n, NULL, NULL) != 0) {
        const oxl_type_traits *tr = oxl_type_traits_get(t);
        for (int64_t b = 0; b < n / tr->blck_size; b++) {
            uint8_t *blk = (uint8_t *)dst + (size_t)b * tr->type_size;
            memset(blk, 0x88, tr->type_size); /* 4-bit values 8: zero after q4_0's offset */
            blk[0] = 0x00;                    /* fp16 NaN scale 0x7e00, little-endian */
            blk[1] = 0x7e;
        }
    }
}

void oxl_memory_kv_store(oxl_memory *mem, int il, const oxl_ubatch *ub, const float *k, const float *v) {
    oxl_kv_cache *kv = &mem->kv;
    if (kv_layer(mem, il) != il) {
        return;
    }
    for (int32_t j = 0; j < ub->n; j++) {
        const size_t r = (size_t)ub->seq[j] * (size_t)mem->n_ctx + (size_t)ub->pos[j];
        store_row(kv->type_k, k + (size_t)j * kv->kv_dim, (char *)kv->k[il] + r * kv->k_row, kv->kv_dim);
        store_row(kv->type_v, v + (size_t)j * kv->kv_dim, (char *)kv->v[il] + r * kv->v_row, kv->kv_dim);
    }
}

void oxl_ubatch_input_row(const oxl_ubatch *ub, const oxl_tensor *tok_embd, int32_t j, int64_t n_embd, float *dst) {
    if (ub->inp_embd) {
        memcpy(dst, ub->inp_embd + (size_t)j * (size_t)n_embd, (size_t)n_embd * sizeof(float));
    } else {
        oxl_tensor_get_row(tok_embd, ub->token[j], dst);
    }
}

void oxl_ubatch_rope(const oxl_ubatch *ub, int32_t j, float *x, int n_head, int head_dim, const oxl_rope *r) {
    if (ub->mpos) {
        oxl_rope_apply_multi(x, n_head, head_dim, ub->mpos + 4 * (size_t)j, r);
    } else {
        oxl_rope_apply(x, n_head, head_dim, ub->pos[j], r);
    }
}

bool oxl_memory_has_recurrent(const oxl_memory *mem) { return mem->rs_conv != NULL; }

/* One cache row of n elements of type t as floats (f32 copied; the rest through the format's
 * to_float, as ggml_cast does). */
static void load_row(oxl_type t, const void *src, float *dst, int64_t n) {
    if (t == OXL_TYPE_F32) {
        memcpy(dst, src, (size_t)n * sizeof(float));
    } else {
        oxl_kernels_get()->dequant[t](src, dst, n);
    }
}

bool oxl_memory_seq_shift(oxl_memory *mem, int32_t seq, int32_t p0, int32_t p1, int32_t delta, const oxl_rope *rope,
                          const bool *rotate, int n_head_kv, int head_dim) {
    oxl_kv_cache *kv = &mem->kv;
    if (kv->kv_dim <= 0 || p1 <= p0 || delta == 0) {
        return true;
    }
    float *row = malloc((size_t)kv->kv_dim * sizeof(float));
    if (!row) {
        return false;
    }
    const int rot_k = oxl_memory_rot_k(mem, head_dim);
    const size_t r0 = (size_t)seq * (size_t)mem->n_ctx;
    const size_t n = (size_t)(p1 - p0);
    for (int il = 0; il < mem->n_layer; il++) {
        if (!kv->k[il]) {
            continue; /* reads another layer's cache */
        }
        char *k = (char *)kv->k[il] + r0 * kv->k_row, *v = (char *)kv->v[il] + r0 * kv->v_row;
        memmove(k + (size_t)(p0 + delta) * kv->k_row, k + (size_t)p0 * kv->k_row, n * kv->k_row);
        memmove(v + (size_t)(p0 + delta) * kv->v_row, v + (size_t)p0 * kv->v_row, n * kv->v_row);
        if (!rotate[il]) {
            continue;
        }
        /* build_rope_shift: dequantize -> undo the Hadamard rotation -> RoPE of the shift -> redo
         * it -> quantize back (f16, bf16: converted and rounded back, as ggml_rope_ext_inplace) */
        for (int32_t p = p0 + delta; p < p1 + delta; p++) {
            void *kr = k + (size_t)p * kv->k_row;
            load_row(kv->type_k, kr, row, kv->kv_dim);
            if (rot_k) {
                oxl_fwht_rows(row, kv->kv_dim, rot_k);
            }
            oxl_rope_apply(row, n_head_kv, head_dim, delta, &rope[il]);
            if (rot_k) {
                oxl_fwht_rows(row, kv->kv_dim, rot_k);
            }
            store_row(kv->type_k, row, kr, kv->kv_dim);
        }
    }
    free(row);
    return true;
}

oxl_kv_view oxl_memory_kv_view(const oxl_memory *mem, int il, const oxl_ubatch *ub) {
    const oxl_kv_cache *kv = &mem->kv;
    il = kv_layer(mem, il);
    return (oxl_kv_view){.type_k = kv->type_k,
                         .type_v = kv->type_v,
                         .k = kv->k[il],
                         .v = kv->v[il],
                         .k_row = kv->k_row,
                         .v_row = kv->v_row,
                         .n_ctx = mem->n_ctx,
                         .n_tokens = ub->n,
                         .n_stream = ub->n_stream > 0 ? ub->n_stream : ub->n,
                         .pos = ub->pos,
                         .seq = ub->seq,
                         .pos_hi = ub->pos_hi};
}

size_t oxl_memory_kv_bytes(const oxl_memory *mem) {
    const size_t rows = (size_t)mem->n_ctx * (size_t)mem->n_seq_max;
    size_t bytes = 0;
    for (int il = 0; il < mem->n_layer; il++) {
        if (mem->kv.k && mem->kv.k[il]) {
            bytes += (mem->kv.k_row + mem->kv.v_row) * rows;
        }
    }
    return bytes;
}

int oxl_memory_rot_k(const oxl_memory *mem, int head_dim) {
    if (!oxl_type_traits_get(mem->kv.type_k)->is_quantized || head_dim % 64 != 0) {
        return 0;
    }
    int n = 64;
    while (head_dim % (2 * n) == 0) {
        n *= 2;
    }
    return n;
}

int oxl_memory_rot_v(const oxl_memory *mem, int head_dim) {
    return oxl_type_traits_get(mem->kv.type_v)->is_quantized && head_dim % 64 == 0 ? 64 : 0;
}

float *oxl_memory_conv_state(oxl_memory *mem, int il, int32_t seq) {
    return mem->rs_conv[il] + (size_t)seq * (size_t)mem->n_embd_r;
}

float *oxl_memory_ssm_state(oxl_memory *mem, int il, int32_t seq) {
    return mem->rs_ssm[il] + (size_t)seq * (size_t)mem->n_embd_s;
}

oxl_memory_layout oxl_memory_get_layout(const oxl_memory *mem) {
    const oxl_kv_cache *kv = &mem->kv;
    return (oxl_memory_layout){.type_k = kv->type_k,
                               .type_v = kv->type_v,
                               .n_layer = mem->n_layer,
                               .n_ctx = mem->n_ctx,
                               .kv_dim = kv->kv_dim,
                               .k_row = kv->kv_dim > 0 ? kv->k_row : 0,
                               .v_row = kv->kv_dim > 0 ? kv->v_row : 0,
                               .n_embd_r = mem->n_embd_r,
                               .n_embd_s = mem->n_embd_s};
}

/* Layers with cache rows of their own (a layer reading another's cache, hp.kv_src, has none). */
static int32_t n_kv_layers(const oxl_memory *mem) {
    int32_t n = 0;
    for (int il = 0; mem->kv.kv_dim > 0 && il < mem->n_layer; il++) {
        n += mem->kv.k[il] != NULL;
    }
    return n;
}

size_t oxl_memory_seq_state_size(const oxl_memory *mem, int32_t n_pos) {
    const oxl_memory_layout l = oxl_memory_get_layout(mem);
    return (size_t)n_kv_layers(mem) * (size_t)n_pos * (l.k_row + l.v_row) +
           (size_t)l.n_layer * ((size_t)l.n_embd_r + (size_t)l.n_embd_s) * sizeof(float);
}

/* Copies sequence seq's state between the memory and a flat buffer (to_buf: memory -> buf). */
static void seq_state_copy(const oxl_memory *mem, int32_t seq, int32_t n_pos, uint8_t *buf, bool to_buf) {
    const oxl_memory_layout l = oxl_memory_get_layout(mem);
    const size_t r0 = (size_t)seq * (size_t)mem->n_ctx;
    for (int il = 0; l.kv_dim > 0 && il < l.n_layer; il++) {
        if (!mem->kv.k[il]) {
            continue; /* reads another layer's cache */
        }
        uint8_t *k = (uint8_t *)mem->kv.k[il] + r0 * l.k_row, *v = (uint8_t *)mem->kv.v[il] + r0 * l.v_row;
        const size_t nk = (size_t)n_pos * l.k_row, nv = (size_t)n_pos * l.v_row;
        memcpy(to_buf ? buf : k, to_buf ? k : buf, nk);
        buf += nk;
        memcpy(to_buf ? buf : v, to_buf ? v : buf, nv);
        buf += nv;
    }
    for (int il = 0; mem->rs_conv && il < l.n_layer; il++) {
        uint8_t *c = (uint8_t *)(mem->rs_conv[il] + (size_t)seq * (size_t)l.n_embd_r);
        uint8_t *s = (uint8_t *)(mem->rs_ssm[il] + (size_t)seq * (size_t)l.n_embd_s);
        const size_t nc = (size_t)l.n_embd_r * sizeof(float), ns = (size_t)l.n_embd_s * sizeof(float);
        memcpy(to_buf ? buf : c, to_buf ? c : buf, nc);
        buf += nc;
        memcpy(to_buf ? buf : s, to_buf ? s : buf, ns);
        buf += ns;
    }
}

void oxl_memory_seq_state_read(const oxl_memory *mem, int32_t seq, int32_t n_pos, void *dst) {
    seq_state_copy(mem, seq, n_pos, dst, true);
}

void oxl_memory_seq_state_write(oxl_memory *mem, int32_t seq, int32_t n_pos, const void *src) {
    seq_state_copy(mem, seq, n_pos, (uint8_t *)(uintptr_t)src, false);
}
