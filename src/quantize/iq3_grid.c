/* ggml's iq3xs_init_impl (ggml/src/ggml-quants.c) in static storage: the grid points come from
 * the generated tables (oxl_iq3xxs_grid's bytes 4, 12, ..., 52, 62 and oxl_iq3s_grid's 1, 3, ..., 15
 * are levels 0..7 in order, so a byte's level is b >> 3 or b >> 1), the map of all 4096 level
 * quadruples, and for each quadruple off the grid its nearest grid points, as ggml lists them. */
#include "iq3_grid.h"

#include "oxl_quant_tables.h"

#include <pthread.h>
#include <stdlib.h>

/* The neighbour lists' total length (counts included) for each grid: fixed by the tables, checked
 * by the build below (a wrong value leaves the grid unbuilt and oxl_iq3_grid_get returns NULL). */
#define OXL_IQ3_NEIGHBOURS_256 22825
#define OXL_IQ3_NEIGHBOURS_512 28317

typedef struct oxl_iq3_store {
    oxl_iq3_grid grid;
    int8_t points[512][4];
    int32_t map[OXL_IQ3_KMAP_SIZE];
    uint16_t *neighbours;
    size_t neighbours_cap;
    int ok;
} oxl_iq3_store;

static uint16_t oxl_iq3_neighbours_256[OXL_IQ3_NEIGHBOURS_256];
static uint16_t oxl_iq3_neighbours_512[OXL_IQ3_NEIGHBOURS_512];
static oxl_iq3_store oxl_iq3_stores[2] = {
    {.neighbours = oxl_iq3_neighbours_256, .neighbours_cap = OXL_IQ3_NEIGHBOURS_256},
    {.neighbours = oxl_iq3_neighbours_512, .neighbours_cap = OXL_IQ3_NEIGHBOURS_512},
};
static pthread_once_t oxl_iq3_once = PTHREAD_ONCE_INIT;

/* (squared distance, grid index), ordered by distance then index (ggml's iq3_compare_func) */
typedef struct {
    int d2;
    int index;
} oxl_iq3_dist;

static int oxl_iq3_dist_cmp(const void *a, const void *b) {
    const oxl_iq3_dist *l = a, *r = b;
    if (l->d2 != r->d2) {
        return l->d2 < r->d2 ? -1 : 1;
    }
    return l->index < r->index ? -1 : l->index > r->index ? 1 : 0;
}

/* The grid points sorted by squared distance from quadruple u; returns how many of them the list
 * of u takes: all those within the nwant smallest distinct distances. */
static int oxl_iq3_nearest(const oxl_iq3_store *st, int u, int nwant, oxl_iq3_dist *dist) {
    int8_t pos[4];
    for (int k = 0; k < 4; k++) {
        pos[k] = (int8_t)(2 * ((u >> (3 * k)) & 7) + 1);
    }
    for (int j = 0; j < st->grid.grid_size; j++) {
        int d2 = 0;
        for (int k = 0; k < 4; k++) {
            const int diff = st->points[j][k] - pos[k];
            d2 += diff * diff;
        }
        dist[j] = (oxl_iq3_dist){d2, j};
    }
    qsort(dist, (size_t)st->grid.grid_size, sizeof dist[0], oxl_iq3_dist_cmp);
    int n = 0, nhave = 1, d2 = dist[0].d2;
    for (int j = 0; j < st->grid.grid_size; j++) {
        if (dist[j].d2 > d2) {
            if (nhave == nwant) {
                break;
            }
            d2 = dist[j].d2;
            nhave++;
        }
        n++;
    }
    return n;
}

static void oxl_iq3_build(oxl_iq3_store *st, int grid_size, const uint32_t *table, int level_shift, int nwant) {
    st->grid.grid_size = grid_size;
    for (int g = 0; g < grid_size; g++) {
        for (int i = 0; i < 4; i++) {
            st->points[g][i] = (int8_t)(2 * (((table[g] >> (8 * i)) & 0xff) >> level_shift) + 1);
        }
    }
    for (int u = 0; u < OXL_IQ3_KMAP_SIZE; u++) {
        st->map[u] = -1;
    }
    for (int g = 0; g < grid_size; g++) {
        int u = 0;
        for (int k = 0; k < 4; k++) {
            u |= ((st->points[g][k] - 1) / 2) << (3 * k);
        }
        st->map[u] = g;
    }
    oxl_iq3_dist dist[512];
    size_t counter = 0;
    for (int u = 0; u < OXL_IQ3_KMAP_SIZE; u++) {
        if (st->map[u] >= 0) {
            continue;
        }
        const int n = oxl_iq3_nearest(st, u, nwant, dist);
        if (counter + 1 + (size_t)n > st->neighbours_cap) {
            return;
        }
        st->map[u] = -(int32_t)counter - 1;
        st->neighbours[counter++] = (uint16_t)n;
        for (int j = 0; j < n; j++) {
            st->neighbours[counter++] = (uint16_t)dist[j].index;
        }
    }
    if (counter != st->neighbours_cap) {
        return;
    }
    st->grid.points = (const int8_t(*)[4])st->points;
    st->grid.map = st->map;
    st->grid.neighbours = st->neighbours;
    st->ok = 1;
}

static void oxl_iq3_init(void) {
    oxl_iq3_build(&oxl_iq3_stores[0], 256, oxl_iq3xxs_grid, 3, 2);
    oxl_iq3_build(&oxl_iq3_stores[1], 512, oxl_iq3s_grid, 1, 3);
}

const oxl_iq3_grid *oxl_iq3_grid_get(int grid_size) {
    if (grid_size != 256 && grid_size != 512) {
        return NULL;
    }
    pthread_once(&oxl_iq3_once, oxl_iq3_init);
    const oxl_iq3_store *st = &oxl_iq3_stores[grid_size == 256 ? 0 : 1];
    return st->ok ? &st->grid : NULL;
}
