/* The I-quant grid neighbour tables (src/quantize/iq_grid.c) against ggml's iq2xs_init_impl:
 * golden/quant/iq-grid.tsv holds, per grid, the number of lattice points off the grid, the length of
 * the neighbour lists and FNV-1a 64 hashes of ggml's grid (uint64 words), map (int32 words) and
 * neighbour lists (uint16 words), each word little-endian, as ggml built them. */
#include "iq_grid.h"

#include <criterion/criterion.h>

#include <pthread.h>
#include <stdio.h>
#include <string.h>

static uint64_t fnv_words(const void *p, size_t n_words, size_t word_size) {
    uint64_t h = 14695981039346656037ULL;
    for (size_t i = 0; i < n_words; i++) {
        uint64_t v = 0;
        memcpy(&v, (const char *)p + i * word_size, word_size); /* the host is little-endian */
        for (size_t b = 0; b < word_size; b++) {
            h ^= (v >> (8 * b)) & 0xff;
            h *= 1099511628211ULL;
        }
    }
    return h;
}

static oxl_type grid_type(const char *name) {
    if (strcmp(name, "iq2_xxs") == 0)
        return OXL_TYPE_IQ2_XXS;
    if (strcmp(name, "iq2_xs") == 0)
        return OXL_TYPE_IQ2_XS;
    if (strcmp(name, "iq2_s") == 0)
        return OXL_TYPE_IQ2_S;
    if (strcmp(name, "iq1_s") == 0)
        return OXL_TYPE_IQ1_S;
    return OXL_TYPE_COUNT;
}

Test(iq_grid, tables_equal_ggml) {
    FILE *f = fopen(OXL_SOURCE_DIR "/golden/quant/iq-grid.tsv", "r");
    cr_assert_not_null(f);
    char line[512];
    int n = 0;
    while (fgets(line, sizeof line, f) != NULL) {
        if (line[0] == '#') {
            continue;
        }
        char name[32];
        int size, off_grid;
        size_t words;
        unsigned long long hg, hm, hn;
        cr_assert_eq(sscanf(line, "%31s %d %d %zu %llx %llx %llx", name, &size, &off_grid, &words, &hg, &hm, &hn), 7);
        const oxl_type t = grid_type(name);
        cr_assert_neq(t, OXL_TYPE_COUNT, "%s", name);
        const oxl_iq_grid *g = oxl_iq_grid_get(t);
        cr_assert_not_null(g, "%s", name);
        cr_expect_eq(g->size, size, "%s", name);
        int points = 0;
        size_t total = 0;
        for (int i = 0; i < OXL_IQ_GRID_KMAP_SIZE; i++) {
            if (g->map[i] < 0) {
                points++;
                total += 1 + g->neighbours[-g->map[i] - 1];
            }
        }
        cr_expect_eq(points, off_grid, "%s: %d points off the grid", name, points);
        cr_expect_eq(total, words, "%s: %zu words of neighbour lists", name, total);
        cr_expect_eq(fnv_words(g->grid, (size_t)g->size, 8), hg, "%s grid", name);
        cr_expect_eq(fnv_words(g->map, OXL_IQ_GRID_KMAP_SIZE, 4), hm, "%s map", name);
        cr_expect_eq(fnv_words(g->neighbours, total, 2), hn, "%s neighbours", name);
        n++;
    }
    fclose(f);
    cr_expect_eq(n, 4);
    cr_expect_eq(oxl_iq_grid_get(OXL_TYPE_IQ1_M), oxl_iq_grid_get(OXL_TYPE_IQ1_S), "iq1_m shares iq1_s's grid");
    cr_expect_null(oxl_iq_grid_get(OXL_TYPE_Q4_K));
}

static void *get_iq2_s(void *arg) { return (void *)oxl_iq_grid_get(*(const oxl_type *)arg); }

Test(iq_grid, concurrent_first_calls_see_one_table) {
    static const oxl_type t = OXL_TYPE_IQ2_S;
    pthread_t th[4];
    for (int i = 0; i < 4; i++) {
        cr_assert_eq(pthread_create(&th[i], NULL, get_iq2_s, (void *)&t), 0);
    }
    const void *first = NULL;
    for (int i = 0; i < 4; i++) {
        void *r = NULL;
        pthread_join(th[i], &r);
        cr_assert_not_null(r);
        if (first == NULL) {
            first = r;
        }
        cr_expect_eq(r, first);
    }
}

Test(iq_grid, best_neighbour_is_the_weighted_nearest) {
    const oxl_iq_grid *g = oxl_iq_grid_get(OXL_TYPE_IQ2_XXS);
    cr_assert_not_null(g);
    /* the lattice point l = (3,0,...,0) is off the grid; its list holds grid entries near it */
    const int m = g->map[3];
    cr_assert_lt(m, 0);
    const uint16_t *nb = g->neighbours + (-m - 1);
    cr_assert_gt(nb[0], 0);
    const float x[8] = {7, 1, 1, 1, 1, 1, 1, 1}, w[8] = {1, 1, 1, 1, 1, 1, 1, 1};
    int8_t L[8];
    const int best = oxl_iq_grid_best_neighbour(nb, g->grid, x, w, 1.0f, L);
    cr_assert_geq(best, 0);
    /* the nearest grid entry to (7,1,...,1) is (5,1,...,1): l = (2,0,...,0), grid index 2 = kmap[2] */
    cr_expect_eq(best, g->map[2]);
    cr_expect_eq(L[0], 2);
    for (int i = 1; i < 8; i++) {
        cr_expect_eq(L[i], 0);
    }
    const uint16_t empty[1] = {0};
    cr_expect_eq(oxl_iq_grid_best_neighbour(empty, g->grid, x, w, 1.0f, L), -1);
}
