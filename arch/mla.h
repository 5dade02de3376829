/* Multi-head latent attention (DeepSeek-V2/V3), in the absorbed form llama.cpp's
 * src/models/deepseek2.cpp builds when the file has split attn_k_b / attn_v_b:
 *
 *   q       = Wq · a  |  Wq_b · rms(Wq_a · a)                (n_head heads of nope + rope dims)
 *   c | kpe = Wkv_a · a                                      (kv_lora_rank latent, rope dims shared by heads)
 *   c       = rms(c, kv_a_norm);  q_rope, kpe = rope(q_rope), rope(kpe)   (normal RoPE on the rope dims)
 *   Q_h     = [Wk_b_h · q_nope_h ; q_rope_h]                 (kv_lora_rank + rope per head)
 *   K = V   = [c ; kpe]                                      (one KV head: multi-query attention)
 *   o_h     = Wv_b_h · attention(Q_h, K, V)[0 : kv_lora_rank];  out = Wo · [o_0 .. o_{n_head-1}]
 *
 * The cache holds the latent and the rotated kpe (kv_lora_rank + rope floats per token); V reads its
 * first kv_lora_rank values (the attention here also weights the kpe part, which is dropped). */
#ifndef OXL_MLA_H
#define OXL_MLA_H

#include "blocks.h"

typedef struct oxl_mla_opts {
    int32_t q_lora_rank;  /* attention.q_lora_rank (0: plain attn_q, DeepSeek-V2-Lite) */
    int32_t kv_lora_rank; /* attention.kv_lora_rank */
    int32_t head_k;       /* attention.key_length_mla: nope + rope dims of a query head */
    int32_t head_v;       /* attention.value_length_mla */
    float kq_scale;       /* softmax scale (YaRN's mscale^2 / sqrt(head_k)) */
    float norm_eps;       /* the model's RMS epsilon (q_a_norm, kv_a_norm) */
    /* files converted before llama.cpp split attn_kv_b (no attention.key_length_mla and
     * value_length_mla: llama_hparams::is_mla() false): the merged up-projection decompresses the
     * latent into per-head K and V, multi-head attention over a cache of n_head heads of head_k */
    bool merged_kv_b;
} oxl_mla_opts;

typedef struct oxl_mla_layer {
    oxl_tensor wq;        /* (n_embd, n_head*head_k) when q_lora_rank is 0 */
    oxl_tensor wq_a;      /* (n_embd, q_lora_rank) */
    oxl_tensor q_a_norm;  /* (q_lora_rank) */
    oxl_tensor wq_b;      /* (q_lora_rank, n_head*head_k) */
    oxl_tensor wkv_a;     /* (n_embd, kv_lora_rank + n_rot) attn_kv_a_mqa */
    oxl_tensor kv_a_norm; /* (kv_lora_rank) */
    oxl_tensor wk_b;      /* (head_k - n_rot, kv_lora_rank) x n_head */
    oxl_tensor wv_b;      /* (kv_lora_rank, head_v) x n_head */
    oxl_tensor wo;        /* (n_head*head_v, n_embd) */
    oxl_tensor wkv_b;     /* merged_kv_b: (kv_lora_rank, n_head*(head_k - n_rot + head_v)) attn_kv_b */
} oxl_mla_layer;

/* Binds layer il's MLA tensors (names of llama.cpp's LLM_TENSOR_ATTN_{Q,Q_A,Q_B,KV_A_MQA,K_B,V_B,...};
 * with merged_kv_b, KV_B instead of K_B and V_B). A missing or mis-shaped one is an error naming it;
 * a file with the *_mla keys but only the merged attn_kv_b is refused by name (llama.cpp then misses
 * attn_k_b). */
int oxl_mla_bind(const oxl_model *m, const oxl_mla_opts *o, oxl_mla_layer *l, int il, oxl_error *err);

/* Bytes of work oxl_mla_attention needs for n tokens. */
size_t oxl_mla_work_size(const oxl_model *m, const oxl_mla_opts *o, int32_t n);

/* out (n_embd, n) = the attention block of layer il on a (n_embd, n), storing the pass's latents in
 * the cache (hp.head_dim = kv_lora_rank + n_rot, hp.n_head_kv = 1); with merged_kv_b the
 * decompressed per-head keys and values (hp.head_dim = head_k, hp.n_head_kv = n_head; each V row
 * padded with zeros from head_v to head_k, which changes no output value). scores as oxl_attention. */
void oxl_mla_attention(oxl_ctx *ctx, const oxl_mla_opts *o, const oxl_mla_layer *l, int il, const oxl_ubatch *ub,
                       const oxl_rope *rope, const float *a, float *out, void *work, float *scores);

#endif
