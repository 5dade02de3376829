/* Growable arrays: doubling capacity, overflow-checked. */
#include "grow.h"

#include <stdint.h>
#include <stdlib.h>

bool oxl_grow(void **buf, size_t *cap, size_t n, size_t more, size_t elem) {
    if (n + more <= *cap)
        return true;
    size_t c = *cap ? *cap : 64;
    while (c < n + more) {
        if (c > SIZE_MAX / 2 / elem)
            return false;
        c *= 2;
    }
    void *p = realloc(*buf, c * elem);
    if (!p)
        return false;
    *buf = p;
    *cap = c;
    return true;
}
