/* The golden checkers' tally. */
#include "golden_report.h"

#include <stdarg.h>

void oxl_golden_line(oxl_golden_report *r, bool pass, const char *fmt, ...) {
    if (pass) {
        r->n_pass++;
    } else {
        r->n_fail++;
    }
    if (r->out) {
        va_list ap;
        va_start(ap, fmt);
        fprintf(r->out, "%s  ", pass ? "PASS" : "FAIL");
        vfprintf(r->out, fmt, ap);
        fputc('\n', r->out);
        va_end(ap);
    }
}
