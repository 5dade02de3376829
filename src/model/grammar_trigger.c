/* The pattern triggers of lazy grammars (grammar.h): llama.cpp's std::regex_match of a trigger
 * pattern against the text generated so far (src/llama-grammar.cpp, llama_grammar_accept_impl),
 * run by PCRE2 on bytes (no UTF mode, as std::regex over std::string sees bytes). The cross-build
 * subset (OXL_SUBSET) has no PCRE2: there a pattern trigger is an error naming that. */
#include "grammar.h"

#include <stdio.h>
#include <stdlib.h>

#ifndef OXL_SUBSET

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

struct oxl_trigger_re {
    pcre2_code *code;
    pcre2_match_data *md;
};

oxl_trigger_re *oxl_trigger_re_new(const char *pattern, char *err, size_t err_len) {
    int ecode = 0;
    PCRE2_SIZE eoff = 0;
    pcre2_code *code = pcre2_compile((PCRE2_SPTR)pattern, PCRE2_ZERO_TERMINATED, 0, &ecode, &eoff, NULL);
    if (!code) {
        PCRE2_UCHAR msg[160];
        pcre2_get_error_message(ecode, msg, sizeof msg);
        if (err && err_len)
            snprintf(err, err_len, "trigger pattern '%.80s': %s at offset %zu", pattern, (const char *)msg,
                     (size_t)eoff);
        return NULL;
    }
    oxl_trigger_re *re = malloc(sizeof *re);
    pcre2_match_data *md = pcre2_match_data_create_from_pattern(code, NULL);
    if (!re || !md) {
        free(re);
        pcre2_match_data_free(md);
        pcre2_code_free(code);
        if (err && err_len)
            snprintf(err, err_len, "out of memory");
        return NULL;
    }
    re->code = code;
    re->md = md;
    return re;
}

long oxl_trigger_re_match(oxl_trigger_re *re, const char *text, size_t len) {
    int rc = pcre2_match(re->code, (PCRE2_SPTR)text, len, 0, PCRE2_ANCHORED | PCRE2_ENDANCHORED, re->md, NULL);
    if (rc < 0)
        return -1; /* no match (or a match limit: no trigger either) */
    const PCRE2_SIZE *ov = pcre2_get_ovector_pointer(re->md);
    /* the first capturing group that matched a non-empty text; else the whole match */
    for (int i = 1; i < rc; i++)
        if (ov[2 * i] != PCRE2_UNSET && ov[2 * i + 1] > ov[2 * i])
            return (long)ov[2 * i];
    return (long)ov[0];
}

void oxl_trigger_re_free(oxl_trigger_re *re) {
    if (!re)
        return;
    pcre2_match_data_free(re->md);
    pcre2_code_free(re->code);
    free(re);
}

#else

oxl_trigger_re *oxl_trigger_re_new(const char *pattern, char *err, size_t err_len) {
    if (err && err_len)
        snprintf(err, err_len, "trigger pattern '%.80s': this build leaves out PCRE2 (OXL_SUBSET)", pattern);
    return NULL;
}

/* unreachable: no pattern compiles in this build */
long oxl_trigger_re_match(oxl_trigger_re *re, const char *text, size_t len) { return -1; }

void oxl_trigger_re_free(oxl_trigger_re *re) {}

#endif
