/* Single-threaded POSIX threads for the wasm32-wasi build (cmake/wasm32-wasi.cmake): WASI preview 1
 * has no threads and Debian's wasi-libc no <pthread.h>. Once-initialisation runs its function on
 * the first call; mutexes and condition variables do nothing (there is no other thread);
 * pthread_create fails with EAGAIN, so the thread pool (src/core/pool.c) refuses more than one thread
 * with its usual error and one thread runs everything. */
#ifndef OXL_WASI_PTHREAD_H
#define OXL_WASI_PTHREAD_H

#include <errno.h>
#include <sched.h>

typedef struct {
    int unused;
} pthread_attr_t, pthread_mutexattr_t, pthread_condattr_t;
typedef unsigned long pthread_t;
typedef struct {
    int unused;
} pthread_mutex_t, pthread_cond_t;
typedef int pthread_once_t;
#define PTHREAD_ONCE_INIT 0
#define PTHREAD_MUTEX_INITIALIZER                                                                                      \
    { 0 }
#define PTHREAD_COND_INITIALIZER                                                                                       \
    { 0 }

static inline int pthread_once(pthread_once_t *once, void (*fn)(void)) {
    if (*once == 0) {
        *once = 1;
        fn();
    }
    return 0;
}

static inline int pthread_create(pthread_t *t, const pthread_attr_t *attr, void *(*fn)(void *), void *arg) {
    (void)t, (void)attr, (void)fn, (void)arg;
    return EAGAIN;
}

static inline int pthread_join(pthread_t t, void **ret) {
    (void)t, (void)ret;
    return ESRCH;
}

static inline int pthread_mutex_init(pthread_mutex_t *m, const pthread_mutexattr_t *a) {
    (void)m, (void)a;
    return 0;
}
static inline int pthread_mutex_destroy(pthread_mutex_t *m) {
    (void)m;
    return 0;
}
static inline int pthread_mutex_lock(pthread_mutex_t *m) {
    (void)m;
    return 0;
}
static inline int pthread_mutex_unlock(pthread_mutex_t *m) {
    (void)m;
    return 0;
}
static inline int pthread_cond_init(pthread_cond_t *c, const pthread_condattr_t *a) {
    (void)c, (void)a;
    return 0;
}
static inline int pthread_cond_destroy(pthread_cond_t *c) {
    (void)c;
    return 0;
}
static inline int pthread_cond_broadcast(pthread_cond_t *c) {
    (void)c;
    return 0;
}
static inline int pthread_cond_signal(pthread_cond_t *c) {
    (void)c;
    return 0;
}
/* no other thread can signal: waiting would never end */
static inline int pthread_cond_wait(pthread_cond_t *c, pthread_mutex_t *m) {
    (void)c, (void)m;
    return EINVAL;
}

#endif
