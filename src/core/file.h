/* Whole-file reads and the monotonic clock: what the loaders, checkers and front ends share. */
#ifndef OXL_FILE_H
#define OXL_FILE_H

#include "oxillama.h"

#include <stddef.h>

/* Reads the whole file at `path` into a new buffer of *size bytes plus a terminating NUL (so text
 * can be used as a C string; *size does not count it). The caller frees it. NULL with err naming
 * the path and the reason (strerror of the failing call, or out of memory) on failure; *size is
 * then unchanged. Reads until EOF, so pipes and files that grow while read work too. */
char *oxl_read_file(const char *path, size_t *size, oxl_error *err);
/* oxl_read_file that stops with err "<path>: larger than <max> bytes" (and NULL) as soon as more
 * than max bytes have been read, so a huge file or an endless pipe costs at most about 2 * max. */
char *oxl_read_file_max(const char *path, size_t max, size_t *size, oxl_error *err);

/* Seconds on CLOCK_MONOTONIC (for durations only; the origin is arbitrary). */
double oxl_clock_s(void);

#endif
