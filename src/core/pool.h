/* A fixed pool of worker threads that run one data-parallel task at a time.
 * A task is split into parts that the threads (the caller included) claim one at a time, so a
 * thread the OS has descheduled delays only the part it holds: on a busy machine the others run
 * the rest instead of waiting for it. Workers spin briefly, then sleep on a condition variable, so
 * a task costs no thread creation and little latency. */
#ifndef OXL_POOL_H
#define OXL_POOL_H

#include "oxillama.h"

typedef struct oxl_pool oxl_pool;

/* fn(arg, ith, nth) runs part ith of nth, once for each ith = 0 .. nth-1, on whichever thread claims
 * it (one thread may run several parts, one after another). Parts must not wait for each other;
 * per-part scratch indexed by ith is never used by two threads at once. */
typedef void (*oxl_task_fn)(void *arg, int ith, int nth);

/* Most parts of one task. */
#define OXL_POOL_MAX_PARTS 4096

/* n_threads >= 1 (including the caller). NULL with err on failure to start threads. The pool has
 * one owner; oxl_pool_retain adds one (returning pool) and oxl_pool_free drops one, stopping the
 * threads when the last goes. Owners must not run tasks at the same time (not reentrant). */
oxl_pool *oxl_pool_new(int n_threads, oxl_error *err);
oxl_pool *oxl_pool_retain(oxl_pool *pool);
void oxl_pool_free(oxl_pool *pool);
int oxl_pool_size(const oxl_pool *pool);
/* Runs fn as n_parts parts (clamped to 1 .. OXL_POOL_MAX_PARTS) and returns when all have finished.
 * Not reentrant. The cost beyond fn is one release of the spinning workers, one atomic claim per
 * part and the wait for the last part (bench/README.md gives the measured cost per task). */
void oxl_pool_run_parts(oxl_pool *pool, oxl_task_fn fn, void *arg, int n_parts);
/* oxl_pool_run_parts with one part per thread (nth = oxl_pool_size). */
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
