/* Rotary position embedding as ggml's ggml_rope_ext / ggml_rope_multi compute it on the CPU
 * (ggml/src/ggml-cpu/ops.cpp), YaRN included. */
#ifndef OXL_ROPE_H
#define OXL_ROPE_H

#include <stdbool.h>
#include <stdint.h>

typedef enum oxl_rope_mode {
    OXL_ROPE_NONE = -1,
    OXL_ROPE_NORM = 0,    /* GPT-J style: rotates adjacent pairs (2i, 2i+1)     (LLAMA_ROPE_TYPE_NORM) */
    OXL_ROPE_NEOX = 2,    /* GPT-NeoX style: rotates (i, i + n_rot/2)            (LLAMA_ROPE_TYPE_NEOX) */
    OXL_ROPE_MROPE = 8,   /* multi-section NeoX (ggml_rope_multi, LLAMA_ROPE_TYPE_MROPE): pair i takes the
                           * position of its section (i % sum(sections)); for text the t, h, w positions
                           * are the token's and the fourth (extra) position is 0 */
    OXL_ROPE_IMROPE = 40, /* interleaved M-RoPE (LLAMA_ROPE_TYPE_IMROPE, qwen35): pair i of sector
                           * s = i % sum(sections) takes h when s % 3 == 1 and s < 3 sections[1], w when
                           * s % 3 == 2 and s < 3 sections[2], t when s % 3 == 0 and s < 3 sections[0],
                           * else the extra position (0 for text) */
} oxl_rope_mode;

/* The arguments of one ggml_rope_ext call. */
typedef struct oxl_rope {
    oxl_rope_mode mode;
    int n_rot; /* rotated dims at the start of each head; the rest pass through */
    float freq_base;
    float freq_scale;  /* 1 / linear scaling factor */
    float ext_factor;  /* YaRN extrapolation mix (0: off) */
    float attn_factor; /* multiplies cos and sin */
    float beta_fast, beta_slow;
    int32_t n_ctx_orig;   /* YaRN's original context (ggml_rope_yarn_corr_dims) */
    const float *factors; /* (n_rot/2) frequency divisors (llama3 rope_freqs, LongRoPE), or NULL */
    int32_t sections[4]; /* OXL_ROPE_MROPE, OXL_ROPE_IMROPE: pairs per section (t, h, w, extra); sum in 1 .. head_dim */
    bool fused;          /* each rotated value with one fused multiply-add, as ggml's FMA-contracting build
                          * computes it: fma(x0, cos, -(x1 * sin)) and fma(x0, sin, x1 * cos) (gemma3n) */
} oxl_rope;

/* Rotary position embedding of n_head heads of head_dim floats at position pos, as ggml's
 * ggml_compute_forward_rope_flt: theta_i = pos * base^(-2i/n_rot) / factors[i] by repeated
 * multiplication, YaRN's ramp between interpolation and extrapolation when ext_factor != 0. */
void oxl_rope_apply(float *x, int n_head, int head_dim, int32_t pos, const oxl_rope *r);
/* The same at the four positions of ggml_rope_multi (t, h, w, extra): M-RoPE and interleaved M-RoPE
 * give each rotated pair the position of its section (ggml_mrope_cache_init: each position's angle
 * multiplied by theta_scale pair by pair); the other modes take pos[0]. oxl_rope_apply(pos) is this
 * at (pos, pos, pos, 0), llama.cpp's positions for a text token (llm_graph_input_pos::set_input). */
void oxl_rope_apply_multi(float *x, int n_head, int head_dim, const int32_t pos[4], const oxl_rope *r);
/* The table oxl_rope_apply_multi rotates by: cs[2i], cs[2i+1] = cos, sin of pair i's angle times the
 * attention factor (YaRN's mscale included), for the n_rot / 2 pairs (the GPU's RoPE reads it). */
void oxl_rope_cos_sin(const int32_t pos[4], const oxl_rope *r, float *cs);

#endif
