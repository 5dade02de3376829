#include "norm.h"

#include <math.h>

void oxl_norm(oxl_norm_kind kind, const float *x, const oxl_tensor *w, const oxl_tensor *b, float *y, int64_t d,
              int64_t n, float eps) {
    const float *wd = w && w->data ? w->data : NULL;
    const float *bd = b && b->data ? b->data : NULL;
    const int64_t w_rows = wd && w->ne[1] > 1 ? w->ne[1] : 1;
    for (int64_t j = 0; j < n; j++) {
        const float *xj = x + j * d;
        float *yj = y + j * d;
        if (kind == OXL_NORM_RMS) {
            double sum = 0.0; /* ggml accumulates the squares in double */
            for (int64_t i = 0; i < d; i++) {
                sum += (double)(xj[i] * xj[i]);
            }
            const float mean = (float)(sum / (double)d);
            const float scale = 1.0f / sqrtf(mean + eps);
            for (int64_t i = 0; i < d; i++) {
                yj[i] = xj[i] * scale;
            }
        } else {
            double sum = 0.0; /* ggml_vec_sum_f32: double sum, rounded to float before the division */
            for (int64_t i = 0; i < d; i++) {
                sum += (double)xj[i];
            }
            const float mean = (float)sum / (float)d;
            double var = 0.0; /* ggml_vec_cvar_f32: centred squares summed in double */
            for (int64_t i = 0; i < d; i++) {
                const float c = xj[i] - mean;
                yj[i] = c;
                var += (double)(c * c);
            }
            const float scale = 1.0f / sqrtf((float)(var / (double)d) + eps);
            for (int64_t i = 0; i < d; i++) {
                yj[i] *= scale;
            }
        }
        if (wd) {
            const float *wr = wd + (j % w_rows) * d;
            for (int64_t i = 0; i < d; i++) {
                yj[i] *= wr[i];
            }
        }
        if (bd) {
            for (int64_t i = 0; i < d; i++) {
                yj[i] += bd[i];
            }
        }
    }
}
