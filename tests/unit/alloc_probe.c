#include "alloc_probe.h"

#include <stdatomic.h>
#include <stdint.h>

static _Atomic size_t largest;

static void note(size_t n) {
    size_t cur = atomic_load_explicit(&largest, memory_order_relaxed);
    while (n > cur &&
           !atomic_compare_exchange_weak_explicit(&largest, &cur, n, memory_order_relaxed, memory_order_relaxed)) {
    }
}

void oxl_probe_reset(void) { atomic_store_explicit(&largest, 0, memory_order_relaxed); }
size_t oxl_probe_largest(void) { return atomic_load_explicit(&largest, memory_order_relaxed); }

/* The linker's --wrap names: __real_* are the C library's (or the sanitizer's) functions. */
void *__real_malloc(size_t n);
void *__real_calloc(size_t n, size_t size);
void *__real_realloc(void *p, size_t n);
void *__wrap_malloc(size_t n);
void *__wrap_calloc(size_t n, size_t size);
void *__wrap_realloc(void *p, size_t n);

void *__wrap_malloc(size_t n) {
    note(n);
    return __real_malloc(n);
}

void *__wrap_calloc(size_t n, size_t size) {
    size_t total;
    note(__builtin_mul_overflow(n, size, &total) ? SIZE_MAX : total);
    return __real_calloc(n, size);
}

void *__wrap_realloc(void *p, size_t n) {
    note(n);
    return __real_realloc(p, n);
}
