/* A fixed pool of worker threads that run one data-parallel task at a time.
 * The caller is thread 0; workers spin briefly, then sleep on a condition variable, so an op costs no
 * thread creation and little latency. */
#ifndef OXL_THREADS_H
#define OXL_THREADS_H

#include "oxillama.h"

typedef struct oxl_pool oxl_pool;

/* fn(arg, ith, nth) runs once on each of the nth threads, ith = 0 .. nth-1. */
typedef void (*oxl_task_fn)(void *arg, int ith, int nth);

/* n_threads >= 1 (including the caller). NULL with err on failure to start threads. */
oxl_pool *oxl_pool_new(int n_threads, oxl_error *err);
void oxl_pool_free(oxl_pool *pool);
int oxl_pool_size(const oxl_pool *pool);
/* Runs fn on every thread and returns when all have finished. Not reentrant. The cost beyond fn is
 * one release of the spinning workers and one wait for the last of them (bench/README.md gives
 * the measured cost per task). */
void oxl_pool_run(oxl_pool *pool, oxl_task_fn fn, void *arg);
/* Tasks run through the pool since it was made (counts the work split into tasks). */
uint64_t oxl_pool_n_runs(const oxl_pool *pool);

/* Splits [0, n) into nth near-equal ranges; thread ith gets [*lo, *hi). */
static inline void oxl_split_range(int64_t n, int ith, int nth, int64_t *lo, int64_t *hi) {
    int64_t per = n / nth, rem = n % nth;
    *lo = ith * per + (ith < rem ? ith : rem);
    *hi = *lo + per + (ith < rem ? 1 : 0);
}

/* As oxl_split_range, with range boundaries on multiples of align (the last range takes the rest):
 * threads writing adjacent outputs of 4-byte floats with align 16 never share a cache line. */
static inline void oxl_split_range_aligned(int64_t n, int64_t align, int ith, int nth, int64_t *lo, int64_t *hi) {
    oxl_split_range((n + align - 1) / align, ith, nth, lo, hi);
    *lo = *lo * align < n ? *lo * align : n;
    *hi = *hi * align < n ? *hi * align : n;
}

/* Physical cores of this machine (falls back to logical CPUs). */
int oxl_n_physical_cores(void);

#endif
