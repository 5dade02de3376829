/* Shared types of the vision side (mm.h). */
#include "mm.h"

#include <stdlib.h>

void oxl_mm_tile_clear(oxl_mm_tile *tile) {
    if (tile) {
        free(tile->pixels);
        tile->pixels = NULL;
    }
}
