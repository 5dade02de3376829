/* ggml's I-quant grid neighbour tables (ggml-quants.c iq2xs_init_impl, iq2_find_best_neighbour),
 * shared by the quantizers of iq2_xxs, iq2_xs, iq2_s, iq1_s and iq1_m.
 *
 * A grid entry holds 8 values 2*l+1 with l in 0..2, one int8 per byte of a uint64 (byte i is
 * element i). A point of the 2-bit lattice l[0..8) with l in 0..3 has the index sum l[i] << 2i
 * (< OXL_IQ_GRID_KMAP_SIZE). map[index] is the grid entry at that point when there is one (>= 0),
 * else -(o + 1) where neighbours[o] = n and neighbours[o+1..o+n] are the grid entries nearest to the
 * point: every entry whose squared distance is among the `nwant` smallest distinct distances (2 for
 * iq2_xxs and iq2_xs, 1 for iq2_s, 3 for iq1_s and iq1_m), by increasing (distance, entry). */
#ifndef OXL_IQ_GRID_H
#define OXL_IQ_GRID_H

#include "oxl_types.h"

#include <stdint.h>

#define OXL_IQ_GRID_KMAP_SIZE 43692

typedef struct {
    int size;                   /* number of grid entries: 256, 512, 1024 or 2048 */
    const uint64_t *grid;       /* size entries, bytes 2*l+1 */
    const int *map;             /* OXL_IQ_GRID_KMAP_SIZE entries */
    const uint16_t *neighbours; /* the neighbour lists map refers to */
} oxl_iq_grid;

/* The tables of type t (iq2_xxs, iq2_xs, iq2_s, iq1_s, iq1_m; iq1_s and iq1_m share one), built on
 * the first call (thread-safe, once; kept until the process exits). NULL when t has no grid or
 * the tables could not be allocated. */
const oxl_iq_grid *oxl_iq_grid_get(oxl_type t);

/* Whether type t's quantizer uses a grid (then oxl_iq_grid_get(t) must succeed before it runs). */
int oxl_iq_grid_uses(oxl_type t);

/* iq2_find_best_neighbour: among the entries of the neighbour list nb (nb[0] = n, nb[1..n]) the
 * one minimising sum_i w[i] (scale * g[i] - x[i])^2 (the first on a tie), its grid index, and its
 * values' l = (g[i] - 1) / 2 in L[0..8). -1 (L untouched) when the list is empty or no distance
 * compares below FLT_MAX (ggml asserts there). */
int oxl_iq_grid_best_neighbour(const uint16_t *nb, const uint64_t *grid, const float *x, const float *w, float scale,
                               int8_t *L);

#endif
