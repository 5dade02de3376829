/* src/quantize/iq3_grid: ggml's IQ3 grid search structures (iq3xs_init_impl) checked against their
 * definition by brute force: every grid point maps to its own index, and every other level
 * quadruple lists exactly the grid points within its nwant smallest squared distances, nearest
 * first, ties by index. (The quantizer's bytes against golden/quant/iq3_*.gguf check them too.) */
#include "iq3_grid.h"
#include "oxl_quant_tables.h"

#include <criterion/criterion.h>

static int dist2(const int8_t *p, int u) {
    int d2 = 0;
    for (int k = 0; k < 4; k++) {
        const int diff = p[k] - (2 * ((u >> (3 * k)) & 7) + 1);
        d2 += diff * diff;
    }
    return d2;
}

static void check_grid(int grid_size, const uint32_t *table, int shift, int nwant) {
    const oxl_iq3_grid *g = oxl_iq3_grid_get(grid_size);
    cr_assert_not_null(g, "grid %d not built", grid_size);
    cr_assert_eq(g->grid_size, grid_size);
    for (int j = 0; j < grid_size; j++) {
        int u = 0;
        for (int k = 0; k < 4; k++) {
            const int level = (int)(((table[j] >> (8 * k)) & 0xff) >> shift);
            cr_assert_eq(g->points[j][k], 2 * level + 1, "point %d", j);
            u |= level << (3 * k);
        }
        cr_assert_eq(g->map[u], j, "grid %d: point %d maps to %d", grid_size, j, g->map[u]);
    }
    int n_off = 0;
    for (int u = 0; u < OXL_IQ3_KMAP_SIZE; u++) {
        if (g->map[u] >= 0) {
            continue;
        }
        n_off++;
        const uint16_t *nb = g->neighbours - g->map[u] - 1;
        const int n = nb[0];
        cr_assert_gt(n, 0, "quadruple %d has no neighbours", u);
        /* the distinct distances in the list: the nwant smallest over the grid */
        int levels[8], n_levels = 0;
        for (int j = 0; j < grid_size; j++) {
            const int d = dist2(g->points[j], u);
            int pos = n_levels;
            for (int l = 0; l < n_levels; l++) {
                if (levels[l] == d) {
                    pos = -1;
                    break;
                }
                if (levels[l] > d) {
                    pos = l;
                    break;
                }
            }
            if (pos < 0 || pos >= nwant) {
                continue;
            }
            for (int l = (n_levels < nwant ? n_levels : nwant - 1); l > pos; l--) {
                levels[l] = levels[l - 1];
            }
            levels[pos] = d;
            n_levels = n_levels < nwant ? n_levels + 1 : nwant;
        }
        int expect = 0;
        for (int j = 0; j < grid_size; j++) {
            expect += dist2(g->points[j], u) <= levels[n_levels - 1];
        }
        cr_assert_eq(n, expect, "quadruple %d: %d neighbours, want %d", u, n, expect);
        for (int i = 1; i < n; i++) {
            const int da = dist2(g->points[nb[i]], u), db = dist2(g->points[nb[i + 1]], u);
            cr_assert(da < db || (da == db && nb[i] < nb[i + 1]), "quadruple %d: list out of order at %d", u, i);
        }
    }
    cr_assert_eq(n_off, OXL_IQ3_KMAP_SIZE - grid_size);
}

Test(iq3_grid, xxs_256_points_and_neighbours) { check_grid(256, oxl_iq3xxs_grid, 3, 2); }

Test(iq3_grid, s_512_points_and_neighbours) { check_grid(512, oxl_iq3s_grid, 1, 3); }

Test(iq3_grid, other_sizes_have_no_grid) {
    cr_expect_null(oxl_iq3_grid_get(0));
    cr_expect_null(oxl_iq3_grid_get(1024));
    cr_expect_eq(oxl_iq3_grid_get(256), oxl_iq3_grid_get(256));
}
