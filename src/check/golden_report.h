/* The tally every golden checker writes (golden_report.c), below the checkers and their runner. */
#ifndef OXL_GOLDEN_REPORT_H
#define OXL_GOLDEN_REPORT_H

#include <stdbool.h>
#include <stdio.h>

/* Tally of checks; every check prints one line "PASS|FAIL  <what>  <measured error>" to out. */
typedef struct oxl_golden_report {
    FILE *out; /* NULL: print nothing */
    int n_pass;
    int n_fail;
} oxl_golden_report;

/* Records one check and prints its line (printf-style description). */
void oxl_golden_line(oxl_golden_report *r, bool pass, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

#endif
