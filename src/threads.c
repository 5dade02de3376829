#include "threads.h"

#include "error.h"

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

/* Spins before a worker sleeps, and before the caller yields while waiting for workers. */
#define OXL_SPIN_ITERS 20000

/* The fields the caller writes per task and the counter the workers write when they finish sit on
 * their own cache lines, so workers spinning on the generation do not pull the line the others are
 * incrementing. */
struct oxl_pool {
    int n_threads;
    pthread_t *threads;
    pthread_mutex_t mutex;
    pthread_cond_t cond;
    atomic_bool stop;
    oxl_task_fn fn;
    void *arg;
    uint64_t n_runs;                    /* tasks run so far (oxl_pool_n_runs) */
    _Alignas(64) atomic_uint generation; /* bumped once per task */
    atomic_int n_sleeping;              /* workers blocked (or about to block) on cond */
    _Alignas(64) atomic_int n_done;     /* workers finished with the current task */
    char pad[64 - sizeof(atomic_int)];
};

typedef struct worker_arg {
    oxl_pool *pool;
    int ith;
} worker_arg;

static void *worker_main(void *p) {
    worker_arg wa = *(worker_arg *)p;
    free(p);
    oxl_pool *pool = wa.pool;
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
        pool->fn(pool->arg, wa.ith, pool->n_threads);
        atomic_fetch_add_explicit(&pool->n_done, 1, memory_order_acq_rel);
    }
}

oxl_pool *oxl_pool_new(int n_threads, oxl_error *err) {
    if (n_threads < 1) {
        n_threads = 1;
    }
    /* aligned, so the cache-line separation of the hot fields holds */
    oxl_pool *pool = aligned_alloc(_Alignof(oxl_pool), sizeof *pool);
    if (pool) {
        memset(pool, 0, sizeof *pool);
    }
    if (!pool) {
        oxl_err_set(err, "thread pool: out of memory");
        return NULL;
    }
    pool->n_threads = n_threads;
    pthread_mutex_init(&pool->mutex, NULL);
    pthread_cond_init(&pool->cond, NULL);
    pool->threads = calloc((size_t)n_threads, sizeof(pthread_t));
    if (!pool->threads) {
        free(pool);
        oxl_err_set(err, "thread pool: out of memory");
        return NULL;
    }
    for (int i = 1; i < n_threads; i++) {
        worker_arg *wa = malloc(sizeof *wa);
        if (wa) {
            wa->pool = pool;
            wa->ith = i;
        }
        if (!wa || pthread_create(&pool->threads[i], NULL, worker_main, wa) != 0) {
            free(wa);
            pool->n_threads = i; /* join the ones already started */
            oxl_pool_free(pool);
            oxl_err_set(err, "thread pool: cannot start thread %d of %d", i, n_threads);
            return NULL;
        }
    }
    return pool;
}

void oxl_pool_free(oxl_pool *pool) {
    if (!pool) {
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

void oxl_pool_run(oxl_pool *pool, oxl_task_fn fn, void *arg) {
    pool->n_runs++;
    if (pool->n_threads == 1) {
        fn(arg, 0, 1);
        return;
    }
    pool->fn = fn;
    pool->arg = arg;
    atomic_store_explicit(&pool->n_done, 0, memory_order_relaxed);
    atomic_fetch_add(&pool->generation, 1);
    /* spinning workers see the new generation by themselves; the mutex and the broadcast are only
     * for those that went to sleep */
    if (atomic_load(&pool->n_sleeping) > 0) {
        pthread_mutex_lock(&pool->mutex);
        pthread_cond_broadcast(&pool->cond);
        pthread_mutex_unlock(&pool->mutex);
    }

    fn(arg, 0, pool->n_threads);

    int want = pool->n_threads - 1;
    for (long i = 0; atomic_load_explicit(&pool->n_done, memory_order_acquire) != want; i++) {
        if (i < OXL_SPIN_ITERS) {
            OXL_CPU_RELAX();
        } else {
            sched_yield();
        }
    }
}

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
