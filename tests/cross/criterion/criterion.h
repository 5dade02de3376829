/* The subset of Criterion's API that the kernel tests use (tests/kernels/kernel_checker.c,
 * tests/kernels/test_kernels.c, generated/tests/kernels.c), for the cross builds, whose sysroots have no
 * Criterion: Test() registers a function, cr_assert* stops the test, cr_expect* records a failure
 * and goes on, cr_skip_test stops it as skipped. runner.c runs the registered tests in order. Only
 * on the include path of oxl-kernel-tests (tests/cross/CMakeLists.txt). */
#ifndef OXL_CROSS_CRITERION_H
#define OXL_CROSS_CRITERION_H

#include <stdbool.h>
#include <string.h>

typedef void (*oxl_cr_fn)(void);
void oxl_cr_register(const char *suite, const char *name, oxl_cr_fn fn);
/* ok false: print the failed expression and fmt's message at file:line; fatal stops the test.
 * fmt starts with a space (the macros prepend one, so that a missing message is no empty format). */
void oxl_cr_check(bool ok, bool fatal, const char *expr, const char *file, int line, const char *fmt, ...)
    __attribute__((format(printf, 6, 7)));
_Noreturn void oxl_cr_skip(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Test(suite, name, options...): the options (.timeout, ...) are ignored */
#define Test(suite, name, ...)                                                                                         \
    static void oxl_cr_test_##suite##_##name(void);                                                                    \
    __attribute__((constructor)) static void oxl_cr_reg_##suite##_##name(void) {                                       \
        oxl_cr_register(#suite, #name, oxl_cr_test_##suite##_##name);                                                  \
    }                                                                                                                  \
    static void oxl_cr_test_##suite##_##name(void)

#define OXL_CR_CHECK(fatal, cond, expr, ...) oxl_cr_check((cond), (fatal), (expr), __FILE__, __LINE__, " " __VA_ARGS__)

#define cr_assert(c, ...) OXL_CR_CHECK(true, !!(c), #c, __VA_ARGS__)
#define cr_assert_not(c, ...) OXL_CR_CHECK(true, !(c), "!(" #c ")", __VA_ARGS__)
#define cr_assert_eq(a, b, ...) OXL_CR_CHECK(true, (a) == (b), #a " == " #b, __VA_ARGS__)
#define cr_assert_null(p, ...) OXL_CR_CHECK(true, (p) == NULL, #p " == NULL", __VA_ARGS__)
#define cr_assert_not_null(p, ...) OXL_CR_CHECK(true, (p) != NULL, #p " != NULL", __VA_ARGS__)
#define cr_expect(c, ...) OXL_CR_CHECK(false, !!(c), #c, __VA_ARGS__)
#define cr_expect_not(c, ...) OXL_CR_CHECK(false, !(c), "!(" #c ")", __VA_ARGS__)
#define cr_expect_eq(a, b, ...) OXL_CR_CHECK(false, (a) == (b), #a " == " #b, __VA_ARGS__)
#define cr_expect_neq(a, b, ...) OXL_CR_CHECK(false, (a) != (b), #a " != " #b, __VA_ARGS__)
#define cr_expect_geq(a, b, ...) OXL_CR_CHECK(false, (a) >= (b), #a " >= " #b, __VA_ARGS__)
#define cr_expect_leq(a, b, ...) OXL_CR_CHECK(false, (a) <= (b), #a " <= " #b, __VA_ARGS__)
#define cr_expect_null(p, ...) OXL_CR_CHECK(false, (p) == NULL, #p " == NULL", __VA_ARGS__)
#define cr_expect_not_null(p, ...) OXL_CR_CHECK(false, (p) != NULL, #p " != NULL", __VA_ARGS__)
#define cr_expect_str_eq(a, b, ...) OXL_CR_CHECK(false, strcmp((a), (b)) == 0, #a " == " #b, __VA_ARGS__)
#define cr_skip_test(...) oxl_cr_skip(" " __VA_ARGS__)

#endif
