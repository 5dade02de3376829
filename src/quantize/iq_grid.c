/* ggml's I-quant grid neighbour tables (ggml-quants.c iq2xs_init_impl): for every point of the
 * 2-bit lattice that is not a grid entry, the grid entries nearest to it, so that the quantizers
 * round a block of 8 to a nearby entry. iq2_xxs, iq2_xs and iq2_s each have a grid; iq1_s and iq1_m
 * share one. The tables are built once per grid (pthread_once) and kept until the process exits.
 *
 * ggml sorts the distances to all entries by (distance, entry) and keeps the entries of the first
 * `nwant` distinct distances; the squared distances here are small integers (at most 8 * 6^2), so
 * the same lists come from one pass over the entries per kept distance. */
#include "iq_grid.h"

#include "oxl_quant_tables.h"

#include <float.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#define OXL_IQ_GRID_SLOTS 4
#define OXL_IQ_GRID_MAX_SIZE 2048
#define OXL_IQ_GRID_MAX_D2 (8 * 6 * 6)

/* Where each grid slot's values come from and how its bytes map to l in 0..2. */
static const struct {
    const uint64_t *values;
    int size;
    int nwant;
    int8_t byte_of_l[3]; /* the byte value of l = 0, 1, 2 in the source table */
} oxl_iq_grid_sources[OXL_IQ_GRID_SLOTS] = {
    {oxl_iq2xxs_grid, OXL_IQ2XXS_GRID_LEN, 2, {0x08, 0x19, 0x2b}},
    {oxl_iq2xs_grid, OXL_IQ2XS_GRID_LEN, 2, {0x08, 0x19, 0x2b}},
    {oxl_iq2s_grid, OXL_IQ2S_GRID_LEN, 1, {0x08, 0x19, 0x2b}},
    {oxl_iq1s_grid, OXL_IQ1S_GRID_LEN, 3, {-1, 0, 1}},
};

static oxl_iq_grid oxl_iq_grids[OXL_IQ_GRID_SLOTS];
static bool oxl_iq_grid_ok[OXL_IQ_GRID_SLOTS];
static pthread_once_t oxl_iq_grid_once[OXL_IQ_GRID_SLOTS] = {PTHREAD_ONCE_INIT, PTHREAD_ONCE_INIT, PTHREAD_ONCE_INIT,
                                                             PTHREAD_ONCE_INIT};

static int oxl_iq_grid_slot(oxl_type t) {
    switch (t) {
    case OXL_TYPE_IQ2_XXS: return 0;
    case OXL_TYPE_IQ2_XS: return 1;
    case OXL_TYPE_IQ2_S: return 2;
    case OXL_TYPE_IQ1_S:
    case OXL_TYPE_IQ1_M: return 3;
    default: return -1;
    }
}

int oxl_iq_grid_uses(oxl_type t) { return oxl_iq_grid_slot(t) >= 0; }

/* The entries nearest to the lattice point pos (values 1..7) among grid[0..size), written to
 * out[0..n); returns n. d2 is scratch of size entries. */
static int oxl_iq_grid_nearest(const int8_t pos[8], const uint64_t *grid, int size, int nwant, uint16_t *d2,
                               uint16_t *out) {
    bool seen[OXL_IQ_GRID_MAX_D2 + 1] = {false};
    for (int j = 0; j < size; j++) {
        const uint64_t g = grid[j];
        int s = 0;
        for (int k = 0; k < 8; k++) {
            const int diff = (int)(int8_t)(g >> (8 * k)) - pos[k];
            s += diff * diff;
        }
        d2[j] = (uint16_t)s;
        seen[s] = true;
    }
    int n = 0, nhave = 0;
    for (int d = 0; d <= OXL_IQ_GRID_MAX_D2 && nhave < nwant; d++) {
        if (!seen[d]) {
            continue;
        }
        nhave++;
        for (int j = 0; j < size; j++) {
            if (d2[j] == d) {
                out[n++] = (uint16_t)j;
            }
        }
    }
    return n;
}

static void oxl_iq_grid_build(int slot) {
    const int size = oxl_iq_grid_sources[slot].size;
    const int nwant = oxl_iq_grid_sources[slot].nwant;
    uint64_t *grid = malloc((size_t)size * sizeof *grid);
    int *map = malloc((size_t)OXL_IQ_GRID_KMAP_SIZE * sizeof *map);
    uint16_t *d2 = malloc((size_t)size * sizeof *d2);
    uint16_t *nb = NULL;
    if (grid == NULL || map == NULL || d2 == NULL) {
        goto fail;
    }
    for (int i = 0; i < OXL_IQ_GRID_KMAP_SIZE; i++) {
        map[i] = -1;
    }
    for (int j = 0; j < size; j++) {
        const uint64_t v = oxl_iq_grid_sources[slot].values[j];
        uint64_t g = 0;
        int index = 0;
        for (int k = 0; k < 8; k++) {
            const int8_t b = (int8_t)(v >> (8 * k));
            int l = 0;
            while (l < 3 && oxl_iq_grid_sources[slot].byte_of_l[l] != b) {
                l++;
            }
            if (l == 3) {
                goto fail; /* not a value of the grid's alphabet */
            }
            g |= (uint64_t)(uint8_t)(2 * l + 1) << (8 * k);
            index |= l << (2 * k);
        }
        grid[j] = g;
        map[index] = j;
    }
    /* The lists in the order of the points, each its length then its entries, in a buffer grown as
     * needed (a list holds at most size entries). */
    size_t cap = (size_t)1 << 16, off = 0;
    nb = malloc(cap * sizeof *nb);
    if (nb == NULL) {
        goto fail;
    }
    for (int i = 0; i < OXL_IQ_GRID_KMAP_SIZE; i++) {
        if (map[i] >= 0) {
            continue;
        }
        if (cap - off < 1 + (size_t)size) {
            uint16_t *grown = realloc(nb, 2 * cap * sizeof *nb);
            if (grown == NULL) {
                goto fail;
            }
            nb = grown;
            cap *= 2;
        }
        int8_t pos[8];
        for (int k = 0; k < 8; k++) {
            pos[k] = (int8_t)(2 * ((i >> (2 * k)) & 3) + 1);
        }
        const int n = oxl_iq_grid_nearest(pos, grid, size, nwant, d2, nb + off + 1);
        nb[off] = (uint16_t)n;
        map[i] = -(int)(off + 1);
        off += 1 + (size_t)n;
    }
    free(d2);
    oxl_iq_grids[slot] = (oxl_iq_grid){size, grid, map, nb};
    oxl_iq_grid_ok[slot] = true;
    return;
fail:
    free(grid);
    free(map);
    free(d2);
    free(nb);
}

static void oxl_iq_grid_build0(void) { oxl_iq_grid_build(0); }
static void oxl_iq_grid_build1(void) { oxl_iq_grid_build(1); }
static void oxl_iq_grid_build2(void) { oxl_iq_grid_build(2); }
static void oxl_iq_grid_build3(void) { oxl_iq_grid_build(3); }

const oxl_iq_grid *oxl_iq_grid_get(oxl_type t) {
    static void (*const builders[OXL_IQ_GRID_SLOTS])(void) = {oxl_iq_grid_build0, oxl_iq_grid_build1,
                                                              oxl_iq_grid_build2, oxl_iq_grid_build3};
    const int slot = oxl_iq_grid_slot(t);
    if (slot < 0) {
        return NULL;
    }
    pthread_once(&oxl_iq_grid_once[slot], builders[slot]);
    return oxl_iq_grid_ok[slot] ? &oxl_iq_grids[slot] : NULL;
}

int oxl_iq_grid_best_neighbour(const uint16_t *nb, const uint64_t *grid, const float *x, const float *w, float scale,
                               int8_t *L) {
    const int n = nb[0];
    float best_d2 = FLT_MAX;
    int best = -1;
    for (int j = 1; j <= n; j++) {
        const uint64_t g = grid[nb[j]];
        float d2 = 0;
        for (int i = 0; i < 8; i++) {
            const float q = (float)(int8_t)(g >> (8 * i));
            const float diff = scale * q - x[i];
            d2 += w[i] * diff * diff;
        }
        if (d2 < best_d2) {
            best_d2 = d2;
            best = nb[j];
        }
    }
    if (best < 0) {
        return -1;
    }
    const uint64_t g = grid[best];
    for (int i = 0; i < 8; i++) {
        L[i] = (int8_t)(((int8_t)(g >> (8 * i)) - 1) / 2);
    }
    return best;
}
