#include "errors.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

int oxl_err_set(oxl_error *err, const char *fmt, ...) {
    if (err) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err->msg, sizeof err->msg, fmt, ap);
        va_end(ap);
    }
    return -1;
}

int oxl_err_prefix(oxl_error *err, const char *fmt, ...) {
    if (err) {
        char prefix[OXL_ERROR_MSG_MAX];
        char old[OXL_ERROR_MSG_MAX];
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(prefix, sizeof prefix, fmt, ap);
        va_end(ap);
        memcpy(old, err->msg, sizeof old);
        int n = snprintf(err->msg, sizeof err->msg, "%s", prefix);
        if (n >= 0 && (size_t)n + 2 < sizeof err->msg) {
            snprintf(err->msg + n, sizeof err->msg - (size_t)n, ": %s", old);
        }
    }
    return -1;
}
