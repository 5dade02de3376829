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

/* Interleaved M-RoPE (ggml_mrope_cache_init with is_imrope): whether sector s takes the extra
 * position, which is 0 for text. */
static bool imrope_extra(const int32_t sections[4], int s) {
    return !((s % 3 == 1 && s < 3 * sections[1]) || (s % 3 == 2 && s < 3 * sections[2]) ||
             (s % 3 == 0 && s < 3 * sections[0]));
}

void oxl_rope_apply(float *x, int n_head, int head_dim, int32_t pos, const oxl_rope *r) {
    float cs[1024]; /* cos, sin of each pair; n_rot <= head_dim <= 1024 is checked at load */
    const int n_pairs = r->n_rot / 2;
    const float theta_scale = powf(r->freq_base, -2.0f / (float)r->n_rot);
    float corr[2] = {0.0f, 0.0f};
    if (r->ext_factor != 0.0f) {
        corr[0] = fmaxf(0.0f, floorf(rope_yarn_corr_dim(r->n_rot, r->n_ctx_orig, r->beta_fast, r->freq_base)));
        corr[1] = fminf((float)(r->n_rot - 1),
                        ceilf(rope_yarn_corr_dim(r->n_rot, r->n_ctx_orig, r->beta_slow, r->freq_base)));
    }
    float theta = (float)pos;
    const int sect_dims = r->sections[0] + r->sections[1] + r->sections[2] + r->sections[3];
    const int sect_extra = r->sections[0] + r->sections[1] + r->sections[2];
    for (int i = 0; i < n_pairs; i++) {
        /* M-RoPE: the extra section's position is 0 for text, so its angle is 0 */
        const float th = (r->mode == OXL_ROPE_MROPE && i % sect_dims >= sect_extra) ||
                                 (r->mode == OXL_ROPE_IMROPE && imrope_extra(r->sections, i % sect_dims))
                             ? 0.0f
                             : theta;
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
        theta *= theta_scale;
    }
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
