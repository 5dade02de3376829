#include "pool.h"

#include "errors.h"

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define OXL_CPU_RELAX() _mm_pause()
#else
#define OXL_CPU_RELAX() ((void)0)
#endif

/* Spins before a worker sleeps, and before the caller yields while waiting for the last part. */
#define OXL_SPIN_ITERS 20000

/* A task is n_parts parts; any thread may claim any part. The claim word packs the task's
 * generation (bits 32..63), its part count (16..31) and the next unclaimed part (0..15), so one
 * compare-and-swap both checks that the task is still the current one and takes a part: a worker
 * that wakes late finds no part left and goes back to waiting, and the caller runs the parts of a
 * worker the OS has not scheduled instead of waiting for it.
 * The caller's fields, the claim word and the finish counter each sit on their own cache line. */
struct oxl_pool {
    int n_threads;
    atomic_int refs; /* owners (oxl_pool_retain); the threads stop when the last one frees it */
    pthread_t *threads;
    pthread_mutex_t mutex;
    pthread_cond_t cond;
    atomic_bool stop;
    _Atomic(oxl_task_fn) fn;
    _Atomic(void *) arg;
    uint64_t n_runs;                     /* tasks run so far (oxl_pool_n_runs) */
    uint32_t gen_next;                   /* the caller's generation counter */
    _Alignas(64) atomic_uint generation; /* the current task's generation: wakes the workers */
    atomic_int n_sleeping;               /* workers blocked (or about to block) on cond */
    _Alignas(64) _Atomic uint64_t work;  /* claim word (see above) */
    _Alignas(64) atomic_int n_done;      /* parts finished of the current task */
    char pad[64 - sizeof(atomic_int)];
};

/* Claims the next part of task gen; -1 when it has none left or is no longer current. */
static int claim_part(oxl_pool *pool, uint32_t gen, int *n_parts) {
    uint64_t w = atomic_load_explicit(&pool->work, memory_order_acquire);
    for (;;) {
        const uint32_t next = (uint32_t)(w & 0xffff), n = (uint32_t)(w >> 16) & 0xffff;
        if ((uint32_t)(w >> 32) != gen || next >= n) {
            return -1;
        }
        if (atomic_compare_exchange_weak_explicit(&pool->work, &w, w + 1, memory_order_acq_rel, memory_order_acquire)) {
            *n_parts = (int)n;
            return (int)next;
        }
    }
}

/* Runs parts of task gen until none is left. A successful claim means the task is not finished,
 * so fn and arg (read after the generation) are still this task's. */
static void run_parts(oxl_pool *pool, uint32_t gen) {
    const oxl_task_fn fn = atomic_load_explicit(&pool->fn, memory_order_relaxed);
    void *arg = atomic_load_explicit(&pool->arg, memory_order_relaxed);
    int n_parts, part;
    while ((part = claim_part(pool, gen, &n_parts)) >= 0) {
        fn(arg, part, n_parts);
        atomic_fetch_add_explicit(&pool->n_done, 1, memory_order_release);
    }
}

static void *worker_main(void *p) {
    oxl_pool *pool = p;
    unsigned seen = 0;
    for (;;) {
        /* Wait for a new generation: spin first (ops come back to back), then sleep. */
        unsigned gen = atomic_load_explicit(&pool->generation, memory_order_acquire);
        for (int i = 0; gen == seen && i < OXL_SPIN_ITERS; i++) {
            OXL_CPU_RELAX();
            gen = atomic_load_explicit(&pool->generation, memory_order_acquire);
        }
        if (gen == seen) {
            /* announce the sleep before the last look at the generation: a caller that bumps it
             * after that look sees n_sleeping > 0 and broadcasts under the mutex (both sequentially
             * consistent, so one of the two sees the other's store) */
            pthread_mutex_lock(&pool->mutex);
            atomic_fetch_add(&pool->n_sleeping, 1);
            while ((gen = atomic_load(&pool->generation)) == seen && !atomic_load(&pool->stop)) {
                pthread_cond_wait(&pool->cond, &pool->mutex);
            }
            atomic_fetch_sub(&pool->n_sleeping, 1);
            pthread_mutex_unlock(&pool->mutex);
        }
        if (atomic_load(&pool->stop)) {
            return NULL;
        }
        seen = gen;
        run_parts(pool, gen);
    }
}

oxl_pool *oxl_pool_new(int n_threads, oxl_error *err) {
    if (n_threads < 1) {
        n_threads = 1;
    }
    /* aligned, so the cache-line separation of the hot fields holds */
    oxl_pool *pool = aligned_alloc(_Alignof(oxl_pool), sizeof *pool);
    if (!pool) {
        oxl_err_set(err, "thread pool: out of memory");
        return NULL;
    }
    memset(pool, 0, sizeof *pool);
    pool->n_threads = n_threads;
    atomic_init(&pool->refs, 1);
    pthread_mutex_init(&pool->mutex, NULL);
    pthread_cond_init(&pool->cond, NULL);
    pool->threads = calloc((size_t)n_threads, sizeof(pthread_t));
    if (!pool->threads) {
        free(pool);
        oxl_err_set(err, "thread pool: out of memory");
        return NULL;
    }
    for (int i = 1; i < n_threads; i++) {
        if (pthread_create(&pool->threads[i], NULL, worker_main, pool) != 0) {
            pool->n_threads = i; /* join the ones already started */
            oxl_pool_free(pool);
            oxl_err_set(err, "thread pool: cannot start thread %d of %d", i, n_threads);
            return NULL;
        }
    }
    return pool;
}

oxl_pool *oxl_pool_retain(oxl_pool *pool) {
    if (pool) {
        atomic_fetch_add(&pool->refs, 1);
    }
    return pool;
}

void oxl_pool_free(oxl_pool *pool) {
    if (!pool || atomic_fetch_sub(&pool->refs, 1) > 1) {
        return;
    }
    pthread_mutex_lock(&pool->mutex);
    atomic_store(&pool->stop, true);
    atomic_fetch_add(&pool->generation, 1);
    pthread_cond_broadcast(&pool->cond);
    pthread_mutex_unlock(&pool->mutex);
    for (int i = 1; i < pool->n_threads; i++) {
        pthread_join(pool->threads[i], NULL);
    }
    pthread_cond_destroy(&pool->cond);
    pthread_mutex_destroy(&pool->mutex);
    free(pool->threads);
    free(pool);
}

int oxl_pool_size(const oxl_pool *pool) { return pool->n_threads; }

uint64_t oxl_pool_n_runs(const oxl_pool *pool) { return pool->n_runs; }

void oxl_pool_run_parts(oxl_pool *pool, oxl_task_fn fn, void *arg, int n_parts) {
    pool->n_runs++;
    if (n_parts < 1) {
        n_parts = 1;
    }
    if (n_parts > OXL_POOL_MAX_PARTS) {
        n_parts = OXL_POOL_MAX_PARTS;
    }
    if (pool->n_threads == 1 || n_parts == 1) {
        for (int part = 0; part < n_parts; part++) {
            fn(arg, part, n_parts);
        }
        return;
    }
    const uint32_t gen = ++pool->gen_next;
    atomic_store_explicit(&pool->fn, fn, memory_order_relaxed);
    atomic_store_explicit(&pool->arg, arg, memory_order_relaxed);
    atomic_store_explicit(&pool->n_done, 0, memory_order_relaxed);
    atomic_store_explicit(&pool->work, (uint64_t)gen << 32 | (uint64_t)n_parts << 16, memory_order_release);
    atomic_store(&pool->generation, gen);
    /* spinning workers see the new generation by themselves; the mutex and the broadcast are only
     * for those that went to sleep */
    if (atomic_load(&pool->n_sleeping) > 0) {
        pthread_mutex_lock(&pool->mutex);
        pthread_cond_broadcast(&pool->cond);
        pthread_mutex_unlock(&pool->mutex);
    }

    run_parts(pool, gen);

    for (long i = 0; atomic_load_explicit(&pool->n_done, memory_order_acquire) != n_parts; i++) {
        if (i < OXL_SPIN_ITERS) {
            OXL_CPU_RELAX();
        } else {
            sched_yield();
        }
    }
}

void oxl_pool_run(oxl_pool *pool, oxl_task_fn fn, void *arg) { oxl_pool_run_parts(pool, fn, arg, pool->n_threads); }
int oxl_n_physical_cores(void) {
    /* Count distinct (physical id, core id) pairs in /proc/cpuinfo; fall back to online CPUs. */
    long n_online = sysconf(_SC_NPROCESSORS_ONLN);
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (!f) {
        return n_online > 0 ? (int)n_online : 1;
    }
    int seen[1024][2];
    int n_seen = 0, phys = -1;
    char line[512];
    while (fgets(line, sizeof line, f)) {
        int v;
        if (sscanf(line, "physical id : %d", &v) == 1) {
            phys = v;
        } else if (sscanf(line, "core id : %d", &v) == 1) {
            bool dup = false;
            for (int i = 0; i < n_seen; i++) {
                dup |= seen[i][0] == phys && seen[i][1] == v;
            }
            if (!dup && n_seen < 1024) {
                seen[n_seen][0] = phys;
                seen[n_seen][1] = v;
                n_seen++;
            }
        }
    }
    fclose(f);
    if (n_seen > 0) {
        return n_seen;
    }
    return n_online > 0 ? (int)n_online : 1;
}
