/* Helpers shared by the tokenizer tests (test_tokenizer.c, test_tokenizer_models.c). Each one
 * fails the calling Criterion test on an unexpected error. */
#ifndef OXL_VOCAB_TEST_UTIL_H
#define OXL_VOCAB_TEST_UTIL_H

#include "vocab.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The whole file, NUL-terminated (caller frees); *size its length. */
char *oxl_test_slurp(const char *path, size_t *size);
bool oxl_test_file_exists(const char *path);
/* Loads the vocabulary and closes the file: the vocabulary must not depend on it afterwards. */
oxl_vocab *oxl_test_load_vocab(const char *path);
/* Id of the token whose text is `text` in the file's own token list (-1 when absent). */
int32_t oxl_test_file_token_id(const char *path, const char *text);

/* For fixtures kept only in the shared reference set (../shared beside the clone): when `path` is
 * absent the calling Criterion test is skipped (tests/unit/run_unit.sh lists and counts the skips), or
 * fails when OXILLAMA_REQUIRE_SHARED is set (./build.sh test sets it under CI, where the set must be
 * there). Use inside a Test body; needs <criterion/criterion.h> and <stdlib.h>. */
#define OXL_TEST_SHARED_FIXTURE(path, why)                                                                             \
    do {                                                                                                               \
        if (!oxl_test_file_exists(path)) {                                                                             \
            if (getenv("OXILLAMA_REQUIRE_SHARED"))                                                                     \
                cr_assert_fail("%s is absent, and OXILLAMA_REQUIRE_SHARED asks for the shared reference set", path);   \
            cr_skip_test("%s is absent (%s)", path, why);                                                              \
        }                                                                                                              \
    } while (0)

#endif
