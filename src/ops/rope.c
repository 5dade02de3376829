#include "rope.h"

#include <math.h>
#include <stdbool.h>
#include <stddef.h>

/* YaRN: the share of extrapolation for pair i, 1 below corr_dims[0] falling to 0 at corr_dims[1]. */
static float rope_yarn_ramp(float low, float high, int i) {
    const float y = ((float)i - low) / fmaxf(0.001f, high - low);
    return 1.0f - fminf(1.0f, fmaxf(0.0f, y));
}

/* ggml_rope_yarn_corr_dim: the dimension whose wavelength fits n_rotations times in n_ctx_orig. */
static float rope_yarn_corr_dim(int n_dims, int32_t n_ctx_orig, float n_rotations, float base) {
    return (float)n_dims * logf((float)n_ctx_orig / (n_rotations * 2.0f * (float)M_PI)) / (2.0f * logf(base));
}

/* The position (0 t, 1 h, 2 w, 3 extra) that sector s of an M-RoPE head takes, as
 * ggml_mrope_cache_init: consecutive sections for M-RoPE; for interleaved M-RoPE h when s % 3 == 1
 * and s < 3 sections[1], w when s % 3 == 2 and s < 3 sections[2], t when s % 3 == 0 and
 * s < 3 sections[0], else the extra position. */
static int mrope_section(const oxl_rope *r, int s) {
    const int32_t *sec = r->sections;
    if (r->mode == OXL_ROPE_IMROPE) {
        const int k = s % 3; /* 0 t, 1 h, 2 w */
        return s < 3 * sec[k] ? k : 3;
    }
    return s < sec[0] ? 0 : s < sec[0] + sec[1] ? 1 : s < sec[0] + sec[1] + sec[2] ? 2 : 3;
}

void oxl_rope_cos_sin(const int32_t pos[4], const oxl_rope *r, float *cs) {
    const int n_pairs = r->n_rot / 2;
    const float theta_scale = powf(r->freq_base, -2.0f / (float)r->n_rot);
    float corr[2] = {0.0f, 0.0f};
    if (r->ext_factor != 0.0f) {
        corr[0] = fmaxf(0.0f, floorf(rope_yarn_corr_dim(r->n_rot, r->n_ctx_orig, r->beta_fast, r->freq_base)));
        corr[1] = fminf((float)(r->n_rot - 1),
                        ceilf(rope_yarn_corr_dim(r->n_rot, r->n_ctx_orig, r->beta_slow, r->freq_base)));
    }
    /* one angle per position, each multiplied by theta_scale at every pair, as
     * ggml_mrope_cache_init; the plain modes take the first */
    float theta[4] = {(float)pos[0], (float)pos[1], (float)pos[2], (float)pos[3]};
    const bool multi = r->mode == OXL_ROPE_MROPE || r->mode == OXL_ROPE_IMROPE;
    const int sect_dims = r->sections[0] + r->sections[1] + r->sections[2] + r->sections[3];
    for (int i = 0; i < n_pairs; i++) {
        const float th = multi ? theta[mrope_section(r, i % sect_dims)] : theta[0];
        const float theta_extrap = r->factors ? th / r->factors[i] : th;
        const float theta_interp = r->freq_scale * theta_extrap;
        float t = theta_interp, mscale = r->attn_factor;
        if (r->ext_factor != 0.0f) {
            const float mix = rope_yarn_ramp(corr[0], corr[1], i) * r->ext_factor;
            t = theta_interp * (1.0f - mix) + theta_extrap * mix;
            mscale *= 1.0f + 0.1f * logf(1.0f / r->freq_scale);
        }
        cs[2 * i] = cosf(t) * mscale;
        cs[2 * i + 1] = sinf(t) * mscale;
        for (int k = 0; k < 4; k++) {
            theta[k] *= theta_scale;
        }
    }
}

void oxl_rope_apply_multi(float *x, int n_head, int head_dim, const int32_t pos[4], const oxl_rope *r) {
    float cs[1024]; /* cos, sin of each pair; n_rot <= head_dim <= 1024 is checked at load */
    const int n_pairs = r->n_rot / 2;
    oxl_rope_cos_sin(pos, r, cs);
    /* normal mode pairs neighbours (2i, 2i+1); NeoX pairs the halves (i, i + n_rot/2) */
    const bool neox = r->mode == OXL_ROPE_NEOX || r->mode == OXL_ROPE_MROPE || r->mode == OXL_ROPE_IMROPE;
    const int stride = neox ? n_pairs : 1;
    for (int h = 0; h < n_head; h++) {
        float *xh = x + (size_t)h * head_dim;
        for (int i = 0; i < n_pairs; i++) {
            float *a = xh + (neox ? i : 2 * i);
            const float x0 = a[0], x1 = a[stride];
            /* ggml's C++ is compiled with FMA contraction: x0*cos - x1*sin as one fused step */
            if (r->fused) {
                a[0] = fmaf(x0, cs[2 * i], -(x1 * cs[2 * i + 1]));
                a[stride] = fmaf(x0, cs[2 * i + 1], x1 * cs[2 * i]);
            } else {
                a[0] = x0 * cs[2 * i] - x1 * cs[2 * i + 1];
                a[stride] = x0 * cs[2 * i + 1] + x1 * cs[2 * i];
            }
        }
    }
}

void oxl_rope_apply(float *x, int n_head, int head_dim, int32_t pos, const oxl_rope *r) {
    const int32_t p[4] = {pos, pos, pos, 0};
    oxl_rope_apply_multi(x, n_head, head_dim, p, r);
}
