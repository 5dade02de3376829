#include "hadamard.h"

#include <math.h>

void oxl_fwht_rows(float *x, int64_t total, int n) {
    const float scale = 1.0f / sqrtf((float)n);
    for (int64_t r = 0; r + n <= total; r += n) {
        float *d = x + r;
        for (int j = 0; j < n; j++) {
            d[j] = d[j] * scale;
        }
        for (int len = 1; len < n; len <<= 1) {
            for (int i = 0; i < n; i += 2 * len) {
                for (int j = 0; j < len; j++) {
                    const float u = d[i + j], v = d[i + len + j];
                    d[i + j] = u + v;
                    d[i + len + j] = u - v;
                }
            }
        }
    }
}
