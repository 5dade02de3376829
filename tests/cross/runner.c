/* oxl-kernel-tests: runs the kernel tests registered through tests/cross/criterion/criterion.h
 * (every kernel list cell's checker, tests/kernels/test_kernels.c) one after another in this process, and
 * ends with "N passed, N failed, N skipped". Used where Criterion is not available: the aarch64,
 * riscv64 and wasm32 builds run it under emulation (build.sh cross). Exit status 1 if any test
 * failed. An optional argument keeps only the tests whose name contains it. WASI has no
 * setjmp/longjmp: there a failed cr_assert or a skip ends the whole run (status 1) after the
 * summary so far. */
#include "criterion/criterion.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

typedef struct oxl_cr_test {
    const char *suite, *name;
    oxl_cr_fn fn;
} oxl_cr_test;

static oxl_cr_test *oxl_cr_tests;
static size_t oxl_cr_n, oxl_cr_cap;
#if defined(__wasi__)
static const char *oxl_cr_current;
static void oxl_cr_summary(void);
/* no longjmp: how = 1 (failed) or 2 (skipped) ends the run */
static _Noreturn void oxl_cr_leave(int how) {
    printf("%s  %s\n", how == 2 ? "SKIP" : "FAIL", oxl_cr_current);
    oxl_cr_summary();
    printf("(run stopped: this build cannot leave a test early)\n");
    exit(1);
}
#else
#include <setjmp.h>
static jmp_buf oxl_cr_jmp;
static _Noreturn void oxl_cr_leave(int how) { longjmp(oxl_cr_jmp, how); }
#endif
static bool oxl_cr_failed;
/* file scope: kept across the longjmp out of a failed or skipped test */
static int oxl_cr_passed, oxl_cr_nfailed, oxl_cr_skipped;
static size_t oxl_cr_i;

void oxl_cr_register(const char *suite, const char *name, oxl_cr_fn fn) {
    if (oxl_cr_n == oxl_cr_cap) {
        const size_t cap = oxl_cr_cap ? 2 * oxl_cr_cap : 64;
        oxl_cr_test *t = realloc(oxl_cr_tests, cap * sizeof *t);
        if (t == NULL) {
            fprintf(stderr, "oxl-kernel-tests: out of memory registering %s::%s\n", suite, name);
            return;
        }
        oxl_cr_tests = t;
        oxl_cr_cap = cap;
    }
    oxl_cr_tests[oxl_cr_n++] = (oxl_cr_test){suite, name, fn};
}

void oxl_cr_check(bool ok, bool fatal, const char *expr, const char *file, int line, const char *fmt, ...) {
    if (ok) {
        return;
    }
    oxl_cr_failed = true;
    fprintf(stdout, "  %s:%d: %s", file, line, expr);
    if (fmt[1] != '\0') {
        va_list ap;
        va_start(ap, fmt);
        fputc(':', stdout);
        vfprintf(stdout, fmt, ap);
        va_end(ap);
    }
    fputc('\n', stdout);
    if (fatal) {
        oxl_cr_leave(1);
    }
}

void oxl_cr_skip(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fputs("  skipped:", stdout);
    vfprintf(stdout, fmt, ap);
    fputc('\n', stdout);
    va_end(ap);
    oxl_cr_leave(2);
}

static void oxl_cr_summary(void) {
    printf("%d passed, %d failed, %d skipped\n", oxl_cr_passed, oxl_cr_nfailed, oxl_cr_skipped);
}

int main(int argc, char **argv) {
    const char *filter = argc > 1 ? argv[1] : NULL;
    for (oxl_cr_i = 0; oxl_cr_i < oxl_cr_n; oxl_cr_i++) {
        const oxl_cr_test *t = &oxl_cr_tests[oxl_cr_i];
        if (filter != NULL && strstr(t->name, filter) == NULL) {
            continue;
        }
        oxl_cr_failed = false;
#if defined(__wasi__)
        oxl_cr_current = t->name;
        const int how = 0;
#else
        const int how = setjmp(oxl_cr_jmp);
#endif
        if (how == 0) {
            t->fn();
        }
        const char *verdict = how == 2 ? "SKIP" : oxl_cr_failed ? "FAIL" : "PASS";
        printf("%s  %s::%s\n", verdict, t->suite, t->name);
        fflush(stdout);
        oxl_cr_skipped += how == 2;
        oxl_cr_nfailed += how != 2 && oxl_cr_failed;
        oxl_cr_passed += how != 2 && !oxl_cr_failed;
    }
    oxl_cr_summary();
    return oxl_cr_nfailed ? 1 : 0;
}
