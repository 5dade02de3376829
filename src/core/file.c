#include "file.h"

#include "errors.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

char *oxl_read_file(const char *path, size_t *size, oxl_error *err) {
    return oxl_read_file_max(path, SIZE_MAX - 1, size, err);
}

char *oxl_read_file_max(const char *path, size_t max, size_t *size, oxl_error *err) {
    FILE *f = fopen(path, "rb");
    if (f == NULL) {
        oxl_err_set(err, "%s: cannot open: %s", path, strerror(errno));
        return NULL;
    }
    char *buf = NULL;
    size_t n = 0, cap = 0;
    for (;;) {
        if (cap - n < 2) { /* room to read into, and for the NUL */
            const size_t grown = cap ? 2 * cap : (size_t)1 << 16;
            char *p = grown > cap ? realloc(buf, grown) : NULL;
            if (p == NULL) {
                free(buf);
                fclose(f);
                oxl_err_set(err, "%s: out of memory after %zu bytes", path, n);
                return NULL;
            }
            buf = p;
            cap = grown;
        }
        const size_t got = fread(buf + n, 1, cap - n - 1, f);
        n += got;
        if (n > max) {
            free(buf);
            fclose(f);
            oxl_err_set(err, "%s: larger than %zu bytes", path, max);
            return NULL;
        }
        if (got == 0) {
            break;
        }
    }
    const int failed = ferror(f), read_errno = errno;
    fclose(f);
    if (failed) {
        free(buf);
        oxl_err_set(err, "%s: read error after %zu bytes: %s", path, n, strerror(read_errno));
        return NULL;
    }
    buf[n] = '\0';
    *size = n;
    return buf;
}

double oxl_clock_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}
