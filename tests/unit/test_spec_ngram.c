/* oxl_ngram_draft against llama.cpp's common_ngram_simple_draft (common/ngram-map.cpp), cases
 * worked out by hand from its rules: the pattern is the last size_n - 1 history tokens plus the
 * sampled one, searched backwards from n_hist - size_n - 1 down to position 1 (position 0 is "no
 * match"); the draft is up to size_m tokens after the match, none when fewer than size_n follow,
 * and none while the history holds size_n + size_m + 1 tokens or fewer. */
#include "oxillama.h"

#include <criterion/criterion.h>

Test(spec_ngram, copies_what_followed_the_latest_match) {
    /* 0 1 2 3 | 9 1 2 3 4 5 6 | 7 1 2 : pattern (size_n 3) = 1 2 + sampled 3; matches at 5 and 1,
     * the latest (5) wins: the draft is what follows 1 2 3 at 5: 4 5 6 7 (size_m 4) */
    const oxl_token h[] = {0, 1, 2, 3, 9, 1, 2, 3, 4, 5, 6, 7, 1, 2};
    oxl_token out[8] = {0};
    cr_assert_eq(oxl_ngram_draft(h, 14, 3, 3, 4, out, 8), 4);
    cr_assert(out[0] == 4 && out[1] == 5 && out[2] == 6 && out[3] == 7);
    /* cap cuts the draft */
    cr_assert_eq(oxl_ngram_draft(h, 14, 3, 3, 4, out, 2), 2);
    cr_assert(out[0] == 4 && out[1] == 5);
}

Test(spec_ngram, no_draft_cases) {
    const oxl_token h[] = {0, 1, 2, 3, 9, 1, 2, 3, 4, 5, 6, 7, 1, 2};
    oxl_token out[64];
    /* another sampled token: no match */
    cr_assert_eq(oxl_ngram_draft(h, 14, 8, 3, 4, out, 64), 0);
    /* history of 14 <= size_n + size_m + 1 = 3 + 10 + 1: too short */
    cr_assert_eq(oxl_ngram_draft(h, 14, 3, 3, 10, out, 64), 0);
    /* a match only at position 0 counts as none: 1 2 3 at 0 in 1 2 3 x x x x x x 1 2 + 3 */
    const oxl_token z[] = {1, 2, 3, 8, 8, 8, 8, 8, 8, 1, 2};
    cr_assert_eq(oxl_ngram_draft(z, 11, 3, 3, 2, out, 64), 0);
    /* fewer than size_n tokens after the match: pattern 1 2 + 3 matches at 7 (the search starts
     * at 12 - 3 - 1 = 8), and only 12 - (7 + 3) = 2 < 3 tokens follow */
    const oxl_token s[] = {9, 9, 9, 9, 9, 9, 9, 1, 2, 3, 1, 2};
    cr_assert_eq(oxl_ngram_draft(s, 12, 3, 3, 4, out, 64), 0);
    /* bad arguments */
    cr_assert_eq(oxl_ngram_draft(NULL, 14, 3, 3, 4, out, 8), 0);
    cr_assert_eq(oxl_ngram_draft(h, 14, 3, 0, 4, out, 8), 0);
    cr_assert_eq(oxl_ngram_draft(h, 14, 3, 3, 4, NULL, 8), 0);
}

Test(spec_ngram, size_n_one_matches_the_sampled_token_alone) {
    /* size_n 1: the pattern is the sampled token; the search starts at n_hist - 2 */
    const oxl_token h[] = {5, 7, 1, 2, 3, 7, 4, 6, 8, 4};
    oxl_token out[8];
    /* 7 at 5 (the search starts at 8): the draft is the 3 tokens after it, 4 6 8 */
    cr_assert_eq(oxl_ngram_draft(h, 10, 7, 1, 3, out, 8), 3);
    cr_assert(out[0] == 4 && out[1] == 6 && out[2] == 8);
}
