/* The cross-build subset (CMake option OXL_SUBSET): the cross sysroots have no libpng, libjpeg or
 * libwebp, so image_decode.c is left out and its entry points fail with an error naming what the
 * build lacks. Images made from pixels (oxl_image_from_rgb) work. */
#ifdef OXL_SUBSET

#include "image.h"

#include "errors.h"

oxl_image *oxl_image_load(const uint8_t *data, size_t len, oxl_error *err) {
    (void)data;
    (void)len;
    oxl_err_set(err, "image: decoding PNG, JPEG or WebP needs libpng, libjpeg and libwebp, which this build "
                     "(OXL_SUBSET) leaves out");
    return NULL;
}

oxl_image *oxl_image_load_file(const char *path, oxl_error *err) {
    oxl_image_load(NULL, 0, err);
    oxl_err_prefix(err, "%s", path);
    return NULL;
}

#endif
