/* Internal to the reference quantizers (src/quantize/): ggml's rounding helpers and the scale searches
 * of ggml/src/ggml-quants.c (quantize_search.c), below the row functions that use them. */
#ifndef OXL_QUANTIZE_SEARCH_H
#define OXL_QUANTIZE_SEARCH_H

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

/* Below this, a group counts as all zero (ggml's GROUP_MAX_EPS). */
#define OXL_GROUP_MAX_EPS 1e-15f

static inline int oxl_imin(int a, int b) { return a < b ? a : b; }
static inline int oxl_imax(int a, int b) { return a > b ? a : b; }

/* Round to nearest (ties to even) by adding 1.5 * 2^23 (ggml's nearest_int). Exact for
 * |v| <= 2^22; beyond that the result is wrong but defined, as in ggml (which only asserts). */
static inline int oxl_nearest_int(float v) {
    const float t = v + 12582912.0f;
    int32_t i;
    memcpy(&i, &t, sizeof i);
    return (i & 0x007fffff) - 0x00400000;
}

/* A float to a 32-bit integer as x86's cvttss2si converts it (truncation; NaN and values out of
 * range give INT32_MIN), and its low byte as ggml's (int8_t)/(uint8_t) casts of a float give it on
 * x86. Finite input reaches the out-of-range case when a block's scale is zero or subnormal and its
 * inverse is infinite; these helpers give ggml's bytes there without undefined behaviour. */
static inline int32_t oxl_trunc_i32(float v) {
    return v >= -2147483648.0f && v < 2147483648.0f ? (int32_t)v : INT32_MIN;
}
static inline int8_t oxl_trunc_i8(float v) { return (int8_t)(uint8_t)oxl_trunc_i32(v); }
static inline uint8_t oxl_trunc_u8(float v) { return (uint8_t)oxl_trunc_i32(v); }

/* make_qx_quants (rmse_type 1): signed levels in [-nmax, nmax) stored offset by nmax in L, the
 * scale chosen among 19 candidates by weighted least squares; weights w, or x^2 when w is NULL.
 * Returns the scale (0 for an all-zero group). */
float oxl_make_qx_quants(int n, int nmax, const float *x, int8_t *L, const float *w);
/* make_q3_quants with do_rmse: make_qx's first guess refined by up to 5 coordinate passes, x^2 weights. */
float oxl_make_q3_quants(int n, int nmax, const float *x, int8_t *L);
/* make_qkx2_quants: levels in [0, nmax] with a scale and a non-positive minimum (returned negated in
 * *the_min), searching nstep+1 scales from (nmax + rmin)/(max - min) in steps of rdelta;
 * use_mad: absolute instead of squared error. Laux: n bytes of scratch. */
float oxl_make_qkx2_quants(int n, int nmax, const float *x, const float *w, uint8_t *L, float *the_min, uint8_t *Laux,
                           float rmin, float rdelta, int nstep, bool use_mad);
/* make_qkx3_quants: as qkx2, with x^2 weights when w is NULL and max <= min as the flat case. */
float oxl_make_qkx3_quants(int n, int nmax, const float *x, const float *w, uint8_t *L, float *the_min, uint8_t *Laux,
                           float rmin, float rdelta, int nstep, bool use_mad);
/* make_qp_quants: non-negative x (block scales) to levels in [0, nmax] with weights w. */
float oxl_make_qp_quants(int n, int nmax, const float *x, uint8_t *L, const float *w);

#endif
