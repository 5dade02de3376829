/* Error values: every failure fills an oxl_error with a message naming file, field and value. */
#ifndef OXL_ERRORS_H
#define OXL_ERRORS_H

#include "oxillama.h"

/* printf-style; err may be NULL. Always returns -1 so callers can `return oxl_err_set(...)`. */
int oxl_err_set(oxl_error *err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Prepends "prefix: " to an existing message (adds context while an error travels up). */
int oxl_err_prefix(oxl_error *err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif
