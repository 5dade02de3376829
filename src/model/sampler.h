/* The random number generator behind the samplers, exposed for tests.
 *
 * llama.cpp's dist sampler (src/llama-sampler.cpp) draws with std::mt19937 seeded with the seed and
 * std::uniform_real_distribution<double>(0, 1); these reproduce both (the standard's MT19937 and
 * libstdc++'s generate_canonical<double, 53>), so a seed picks the same token as llama.cpp built with
 * GCC for the same candidates.
 */
#ifndef OXL_SAMPLER_H
#define OXL_SAMPLER_H

#include <stdint.h>

typedef struct oxl_mt19937 {
    uint32_t mt[624];
    int32_t i; /* next state word to temper; 624 = regenerate first */
} oxl_mt19937;

/* std::mt19937(seed). */
void oxl_mt19937_seed(oxl_mt19937 *r, uint32_t seed);
/* The next 32-bit output (operator()). */
uint32_t oxl_mt19937_next(oxl_mt19937 *r);
/* std::uniform_real_distribution<double>(0, 1)(r) as libstdc++ computes it: two draws u0, u1,
 * (u0 + u1·2^32) / 2^64 rounded to double, kept below 1. */
double oxl_mt19937_uniform(oxl_mt19937 *r);

#endif
