/* The thread pool (src/core/threads.h): every part of a task runs exactly once, whichever thread claims
 * it, and its writes are visible to the caller when oxl_pool_run_parts returns; back-to-back tasks
 * of changing sizes (as a decode step issues them) never mix their parts. */
#include "pool.h"

#include <criterion/criterion.h>
#include <stdatomic.h>
#include <string.h>

#define MAX_PARTS 64

typedef struct count_task {
    atomic_int runs[MAX_PARTS]; /* how often each part ran */
    int plain[MAX_PARTS];       /* written without atomics: must be visible after the task */
    atomic_int bad_nth;         /* parts that saw another task's part count */
    int want_nth;
} count_task;

static void count_part(void *arg, int ith, int nth) {
    count_task *t = arg;
    if (nth != t->want_nth || ith < 0 || ith >= nth) {
        atomic_fetch_add(&t->bad_nth, 1);
        return;
    }
    atomic_fetch_add(&t->runs[ith], 1);
    t->plain[ith] = ith + 1;
}

Test(threads, every_part_runs_once) {
    for (int n_threads = 1; n_threads <= 4; n_threads++) {
        oxl_error err = {0};
        oxl_pool *pool = oxl_pool_new(n_threads, &err);
        cr_assert_not_null(pool, "%s", err.msg);
        static count_task t;
        for (int rep = 0; rep < 3000; rep++) {
            const int n_parts = 1 + (rep * 7) % MAX_PARTS; /* 1 .. 64, changing every task */
            memset(&t, 0, sizeof t);
            t.want_nth = n_parts;
            oxl_pool_run_parts(pool, count_part, &t, n_parts);
            cr_assert_eq(atomic_load(&t.bad_nth), 0, "threads %d, task %d: a part saw another part count", n_threads,
                         rep);
            for (int i = 0; i < MAX_PARTS; i++) {
                const int want = i < n_parts ? 1 : 0;
                cr_assert_eq(atomic_load(&t.runs[i]), want, "threads %d, task %d of %d parts: part %d ran %d times",
                             n_threads, rep, n_parts, i, atomic_load(&t.runs[i]));
                cr_assert_eq(t.plain[i], want ? i + 1 : 0, "threads %d, task %d: part %d's write not visible",
                             n_threads, rep, i);
            }
        }
        cr_assert_eq(oxl_pool_n_runs(pool), 3000);
        oxl_pool_free(pool);
    }
}

Test(threads, run_gives_one_part_per_thread) {
    oxl_error err = {0};
    oxl_pool *pool = oxl_pool_new(3, &err);
    cr_assert_not_null(pool, "%s", err.msg);
    static count_task t;
    memset(&t, 0, sizeof t);
    t.want_nth = 3;
    oxl_pool_run(pool, count_part, &t);
    for (int i = 0; i < 3; i++) {
        cr_assert_eq(atomic_load(&t.runs[i]), 1);
    }
    cr_assert_eq(atomic_load(&t.bad_nth), 0);
    oxl_pool_free(pool);
}

Test(threads, split_range_aligned_covers_without_sharing_lines) {
    /* 100 rows in blocks of 16 over 3 parts: [0,48) [48,80) [80,100) */
    const int64_t want[3][2] = {{0, 48}, {48, 80}, {80, 100}};
    for (int i = 0; i < 3; i++) {
        int64_t lo, hi;
        oxl_split_range_aligned(100, 16, i, 3, &lo, &hi);
        cr_assert_eq(lo, want[i][0]);
        cr_assert_eq(hi, want[i][1]);
    }
    /* more parts than blocks: the extra parts are empty */
    int64_t lo, hi;
    oxl_split_range_aligned(20, 16, 5, 8, &lo, &hi);
    cr_assert_eq(lo, hi);
}
