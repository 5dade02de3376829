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
/* Runs fn on every thread and returns when all have finished. Not reentrant. */
void oxl_pool_run(oxl_pool *pool, oxl_task_fn fn, void *arg);

/* Splits [0, n) into nth near-equal ranges; thread ith gets [*lo, *hi). */
static inline void oxl_split_range(int64_t n, int ith, int nth, int64_t *lo, int64_t *hi) {
    int64_t per = n / nth, rem = n % nth;
    *lo = ith * per + (ith < rem ? ith : rem);
    *hi = *lo + per + (ith < rem ? 1 : 0);
}

/* Physical cores of this machine (falls back to logical CPUs). */
int oxl_n_physical_cores(void);

#endif
