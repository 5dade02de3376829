/* The loaded model: GGUF file, vocabulary, architecture and its weights. Internal to the library. */
#ifndef OXL_MODEL_H
#define OXL_MODEL_H

#include "gguf.h"
#include "matmul.h"
#include "oxillama.h"
#include "vocab.h"

#include <stdio.h>

struct oxl_arch;

/* Hyper-parameters shared by the decoder families; an architecture fills the ones it uses from
 * `<arch>.*` GGUF keys (names as llama.cpp's src/llama-arch.cpp). */
typedef struct oxl_hparams {
    int32_t n_vocab;
    int32_t n_ctx_train;   /* <arch>.context_length */
    int32_t n_embd;        /* <arch>.embedding_length */
    int32_t n_layer;       /* <arch>.block_count */
    int32_t n_head;        /* <arch>.attention.head_count */
    int32_t n_head_kv;     /* <arch>.attention.head_count_kv (default n_head) */
    int32_t head_dim;      /* <arch>.attention.key_length (default n_embd / n_head) */
    int32_t n_ff;          /* <arch>.feed_forward_length */
    int32_t n_rot;         /* <arch>.rope.dimension_count (default head_dim) */
    float norm_eps;        /* <arch>.attention.layer_norm_rms_epsilon */
    float rope_freq_base;  /* <arch>.rope.freq_base (default 10000) */
    float rope_freq_scale; /* 1 / <arch>.rope.scaling.factor for linear scaling (default 1) */
    int32_t n_pos_max;     /* positions the model can encode (rows of a learned position table); 0: any */
    int32_t n_embd_r;      /* recurrent models: floats of conv state per sequence and layer (0: none) */
    int32_t n_embd_s;      /* recurrent models: floats of scan state per sequence and layer */
    int32_t head_dim_v;    /* latent attention (deepseek2): the V part of a cache row (kv_lora_rank),
                              V being a view of K; 0: V rows are head_dim wide and stored apart */
    const int32_t *kv_src; /* [n_layer] KV sharing (gemma3n): layer il attends over layer kv_src[il]'s
                              cache and has none of its own when kv_src[il] != il; NULL: every layer
                              its own. Owned by the architecture's weights. */
    bool mrope;            /* the attention's RoPE is M-RoPE or interleaved M-RoPE (ggml_rope_multi): four
                              positions per token (llama.cpp's n_pos_per_embd() == 4), set by the family */
    bool image_non_causal; /* images decode with non-causal attention: the projector llama.cpp pairs with
                              the family decodes its image chunks so (mtmd_decode_use_non_causal: gemma3) */
} oxl_hparams;

struct oxl_model {
    oxl_gguf *gguf; /* owns the mapped file that weights point into */
    oxl_vocab *vocab;
    const struct oxl_arch *arch;
    oxl_hparams hp;
    void *weights;      /* the architecture's weight struct (arch->free_weights) */
    int32_t gpu_layers; /* the last repeating layers whose weights and KV cache are on the Vulkan device
                         * (oxl_model_params.n_gpu_layers, set by arch->offload); 0: none */
    int64_t n_params;
    int64_t n_bytes; /* tensor data */
    char desc[160];
    void *file_buf; /* without mmap: the whole file read into memory (owned), else NULL */
    size_t file_buf_size;
    struct oxl_owned_buf { /* repacked weights, freed with the model */
        void *p;
        size_t bytes;
    } * owned;
    size_t n_owned, cap_owned;
    const void **evicted; /* tensor data released after repacking (not to be locked) */
    size_t n_evicted;
    /* a reranker's classification head for rank pooling (llama.cpp's cls, cls_b, cls_out,
     * cls_out_b), bound by the architectures that have one; unbound tensors have data NULL */
    struct oxl_cls_head {
        oxl_tensor cls, cls_b, cls_out, cls_out_b;
        int32_t n_out; /* oxl_model_n_cls_out */
    } cls_head;
};

/* Hands a buffer of oxl_tensor_repack (NULL: ignored) to the model, which frees it with itself.
 * Returns false (and frees buf) when memory is short. */
bool oxl_model_own(oxl_model *m, void *buf, size_t bytes);
/* Records that the plain data starting at data was released after repacking (--mlock then locks
 * the repacked copy instead). Returns false when memory is short (nothing recorded). */
bool oxl_model_note_evicted(oxl_model *m, const void *data);

/* Takes ownership of g (closed on failure too). */
oxl_model *oxl_model_from_gguf(oxl_gguf *g, oxl_error *err);

/* Prints the hyper-parameters the model's graph actually uses, one per line (the architecture's
 * describe hook, arch/registry.c); returns false when its architecture has none. */
bool oxl_model_describe(const oxl_model *m, FILE *out);

#endif
