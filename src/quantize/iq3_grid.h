/* Internal to the reference quantizers (src/quantize/): ggml's search structures over the IQ3
 * grids (iq3xs_init_impl in ggml/src/ggml-quants.c), for quantize_iq3.c. Each grid point is 4
 * levels l in 0..7 standing for the odd values 2l + 1 (IQ3_XXS's grid of 256 points, IQ3_S's of
 * 512). Every one of the 8^4 level quadruples u = l0 | l1 << 3 | l2 << 6 | l3 << 9 maps either to
 * its grid index or to the list of grid points nearest to it. */
#ifndef OXL_IQ3_GRID_H
#define OXL_IQ3_GRID_H

#include <stdint.h>

#define OXL_IQ3_KMAP_SIZE 4096

typedef struct oxl_iq3_grid {
    int grid_size;             /* 256 or 512 */
    const int8_t (*points)[4]; /* points[g][i] = 2 l_i + 1 of grid point g */
    /* map[u] >= 0: u is grid point map[u]; else neighbours - map[u] - 1 is its list: a count n, then n
     * grid indices (the points within the nwant smallest squared distances from u, nearest first,
     * ties by index; nwant = 2 for 256 points, 3 for 512) */
    const int32_t *map;
    const uint16_t *neighbours;
} oxl_iq3_grid;

/* The structures of the grid of grid_size points (256: oxl_iq3xxs_grid, 512: oxl_iq3s_grid), built
 * on the first call in static storage (thread-safe, nothing to free); NULL for another size. */
const oxl_iq3_grid *oxl_iq3_grid_get(int grid_size);

#endif
