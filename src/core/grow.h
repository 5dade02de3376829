/* Growable arrays. */
#ifndef OXL_GROW_H
#define OXL_GROW_H

#include <stdbool.h>
#include <stddef.h>

/* Makes room for `more` elements of size `elem` after `n` used ones; false when out of memory or
 * when the size would overflow. */
bool oxl_grow(void **buf, size_t *cap, size_t n, size_t more, size_t elem);

#endif
