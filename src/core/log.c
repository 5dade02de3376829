/* The library's logger: one receiver (stderr or oxl_log_set's callback) and a minimum level. */
#include "log.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>

static pthread_mutex_t log_mutex = PTHREAD_MUTEX_INITIALIZER; /* guards the pair below */
static oxl_log_fn log_fn;
static void *log_user;
static atomic_int log_min = OXL_LOG_LEVEL_INFO;

void oxl_log_set(oxl_log_fn fn, void *user) {
    pthread_mutex_lock(&log_mutex);
    log_fn = fn;
    log_user = fn ? user : NULL;
    pthread_mutex_unlock(&log_mutex);
}

void oxl_log_set_level(oxl_log_level min) { atomic_store(&log_min, (int)min); }

void oxl_log_msg(oxl_log_level level, const char *fmt, ...) {
    if ((int)level < atomic_load(&log_min)) {
        return;
    }
    pthread_mutex_lock(&log_mutex);
    const oxl_log_fn fn = log_fn;
    void *user = log_user;
    pthread_mutex_unlock(&log_mutex);

    char small[512];
    char *text = small;
    va_list ap;
    va_start(ap, fmt);
    const int n = vsnprintf(small, sizeof small, fmt, ap);
    va_end(ap);
    if (n < 0) {
        return;
    }
    if ((size_t)n >= sizeof small) {
        /* a long message: formatted again into a buffer of its size (cut to the small one if short
         * of memory) */
        char *big = malloc((size_t)n + 1);
        if (big) {
            va_start(ap, fmt);
            vsnprintf(big, (size_t)n + 1, fmt, ap);
            va_end(ap);
            text = big;
        }
    }
    if (fn) {
        fn(level, text, user);
    } else {
        fputs(text, stderr);
    }
    if (text != small) {
        free(text);
    }
}
