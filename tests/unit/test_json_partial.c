/* Partial JSON healing and dumped arguments (src/chat/json_partial.c) against llama.cpp's own
 * expectations: tests/test-json-partial.cpp (common_json_parse: the healed value's dump and the
 * dump marker, healing marker "$foo") and tests/test-chat-parser.cpp (test_json_with_dumped_args*:
 * try_consume_json_with_dumped_args with its argument and content paths). The expected strings are
 * copied from those files (llama.cpp commit 05002b5 for test-chat-parser.cpp); nlohmann's dump()
 * there does not escape non-ASCII (ensure_ascii false), as oxl_json_dump(v, false). */
#include "json_partial.h"

#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

/* common_json_parse(input, "$foo") -> out.json.dump() and out.healing_marker.json_dump_marker */
static void heal_case(const char *input, const char *want_dump, const char *want_marker) {
    oxl_json_heal h;
    cr_assert(oxl_json_heal_parse(input, input + strlen(input), "$foo", &h), "cannot heal %s", input);
    char *d = oxl_json_dump(h.json, false);
    cr_expect_str_eq(d, want_dump, "dump of %s", input);
    cr_expect_str_eq(h.dump_marker, want_marker, "dump marker of %s", input);
    cr_expect_eq(h.after, input + strlen(input), "%s: not read to its end", input);
    free(d);
    cJSON_Delete(h.json);
}

Test(json_partial, llama_cpp_healing) {
    /* No healing needed */
    heal_case("[{\"a\":\"b\"}, \"y\"]", "[{\"a\":\"b\"},\"y\"]", "");
    /* Partial literals can't be healed */
    static const char *const arr[] = {"[1", "[tru", "[n", "[nul", "[23.2"};
    for (int i = 0; i < 5; i++) {
        heal_case(arr[i], "[\"$foo\"]", "\"$foo");
    }
    static const char *const obj[] = {"{\"a\": 1", "{\"a\": tru", "{\"a\": n", "{\"a\": nul", "{\"a\": 23.2"};
    for (int i = 0; i < 5; i++) {
        heal_case(obj[i], "{\"a\":\"$foo\"}", "\"$foo");
    }
    heal_case("{", "{\"$foo\":1}", "\"$foo");
    heal_case("[", "[\"$foo\"]", "\"$foo");
    /* Healing right after a full literal */
    heal_case("1 ", "1", "");
    heal_case("true", "true", "");
    heal_case("true ", "true", "");
    heal_case("null", "null", "");
    heal_case("null ", "null", "");
    heal_case("[1 ", "[1,\"$foo\"]", ",\"$foo");
    heal_case("[{}", "[{},\"$foo\"]", ",\"$foo");
    heal_case("[{} ", "[{},\"$foo\"]", ",\"$foo");
    heal_case("[true", "[\"$foo\"]", "\"$foo"); /* llama.cpp's TODO: the literal was complete */
    heal_case("[true ", "[true,\"$foo\"]", ",\"$foo");
    heal_case("[true,", "[true,\"$foo\"]", "\"$foo");
    /* Nesting */
    heal_case("[{\"a\": [{\"b\": [{", "[{\"a\":[{\"b\":[{\"$foo\":1}]}]}]", "\"$foo");
    heal_case("[{\"a\": [{\"b\": [", "[{\"a\":[{\"b\":[\"$foo\"]}]}]", "\"$foo");
    heal_case("[{\"a\": \"b\"}", "[{\"a\":\"b\"},\"$foo\"]", ",\"$foo");
    heal_case("[{\"a\": \"b\"} ", "[{\"a\":\"b\"},\"$foo\"]", ",\"$foo");
    heal_case("[{\"a\": \"b\"},", "[{\"a\":\"b\"},\"$foo\"]", "\"$foo");
    heal_case("[{\"a\": \"b\"}, ", "[{\"a\":\"b\"},\"$foo\"]", "\"$foo");
    heal_case("{ \"code", "{\"code$foo\":1}", "$foo");
    heal_case("{ \"code\\", "{\"code\\\\$foo\":1}", "\\$foo");
    heal_case("{ \"code\"", "{\"code\":\"$foo\"}", ":\"$foo");
    heal_case("{ \"key\"", "{\"key\":\"$foo\"}", ":\"$foo");
}

/* test-json-partial.cpp's parse_all: every prefix of these heals, and the dump cut at the marker
 * is the prefix's text as nlohmann would write it (here: a prefix of the whole value's dump). */
Test(json_partial, every_prefix_heals) {
    static const char *const all[] = {"{\"a\": \"b\"}", "{\"hey\": 1, \"ho\\\"ha\": [1]}", "[{\"a\": \"b\"}]"};
    for (int k = 0; k < 3; k++) {
        size_t n = strlen(all[k]);
        for (size_t i = 1; i < n; i++) {
            oxl_json_heal h;
            cr_assert(oxl_json_heal_parse(all[k], all[k] + i, "$llama.cpp.json$", &h), "prefix %zu of %s", i, all[k]);
            char *d = oxl_json_dump(h.json, false);
            char *m = h.dump_marker[0] ? strstr(d, h.dump_marker) : NULL;
            cr_expect(!h.dump_marker[0] || m, "%s: no marker in %s", all[k], d);
            cJSON_Delete(h.json);
            free(d);
        }
    }
}

static const char *const barely_healable[] = {
    "{",
    "{\"",
    "{\"\\",
    "{\"n",
    "{\"name\"",
    "{\"name\":",
    "{\"name\":\"",
    "{\"name\":\"\\",
    "{\"name\":\"python",
    "{\"name\":\"python\\",
    "{\",",
    "{\":",
    "{\"[",
    "{\"]",
    "{\"{",
    "{\"}",
    "{\"1",
    "{\"name\":\",",
    "{\"name\":\":",
    "{\"name\":\"[",
    "{\"name\":\"]",
    "{\"name\":\"{",
    "{\"name\":\"}",
    "{\"name\":\"1",
};

/* test(input, is_partial, args_paths, content_paths, expected): the value's dump, or the text of
 * a root arguments path. The marker stands in for llama.cpp's random one. */
static void dumped_case(const char *input, bool is_partial, const oxl_json_paths *paths, const char *want) {
    bool part = false;
    const char *marker = is_partial ? "1804289383" : NULL;
    cJSON *v = oxl_json_with_dumped_args(input, input + strlen(input), marker, paths, &part, NULL);
    cr_assert(v, "no value from %s", input);
    cr_expect_eq(part, is_partial, "%s: is_partial", input);
    bool root = paths->n_args == 1 && !paths->args[0][0];
    char *d = root ? strdup(cJSON_GetStringValue(v) ? v->valuestring : "(not a string)") : oxl_json_dump(v, false);
    cr_expect_str_eq(d, want, "%s", input);
    free(d);
    cJSON_Delete(v);
}

static const char *const k_arguments[][2] = {{"arguments", NULL}};
static const char *const k_args[][2] = {{"args", NULL}};
static const char *const k_root[][2] = {{NULL, NULL}};
static const char *const k_content[][2] = {{"content", NULL}};

Test(json_partial, llama_cpp_dumped_args_no_args) {
    const oxl_json_paths none = {NULL, 0, NULL, 0}, root = {k_root, 1, NULL, 0}, args = {k_arguments, 1, NULL, 0};
    dumped_case("{\"name\": \"python\"}", false, &none, "{\"name\":\"python\"}");
    dumped_case("{\"name\": \"python\"}", false, &root, "{\"name\":\"python\"}");
    /* If the arguments are further down, don't heal partial content. */
    for (size_t i = 0; i < sizeof barely_healable / sizeof *barely_healable; i++) {
        dumped_case(barely_healable[i], true, &args, "{}");
    }
    /* But heal content that isn't partial. */
    dumped_case("{\"name\": \"python\"", true, &args, "{\"name\":\"python\"}");
}

static void with_args(const char *input, const char *want, bool is_partial) {
    const oxl_json_paths p = {k_args, 1, NULL, 0};
    dumped_case(input, is_partial, &p, want);
}

Test(json_partial, llama_cpp_dumped_args) {
    const oxl_json_paths content = {NULL, 0, k_content, 1}, root = {k_root, 1, NULL, 0};
    /* Partial content. */
    dumped_case("{\"content\": \"t", true, &content, "{\"content\":\"t\"}");
    dumped_case("{\"content\": \"", true, &content, "{\"content\":\"\"}");
    dumped_case("{\"content\": ", true, &content, "{}");
    /* If the entire JSON is the arguments, healing then dumping it gives the input back. */
    dumped_case("{\"name\": \"python", true, &root, "{\"name\":\"python");
    for (size_t i = 0; i < sizeof barely_healable / sizeof *barely_healable; i++) {
        dumped_case(barely_healable[i], true, &root, barely_healable[i]);
    }
    /* Full JSON w/ args (parsed as partial or not: the same) */
    with_args("{\"name\": \"python\", \"args\": {\"arg1\": 1}}", "{\"name\":\"python\",\"args\":\"{\\\"arg1\\\":1}\"}",
              false);
    with_args("{\"foo\": \"bar\", \"args\": {\"", "{\"foo\":\"bar\",\"args\":\"{\\\"\"}", true);
    with_args("{\"foo\": \"bar\", \"args\": {\"ar", "{\"foo\":\"bar\",\"args\":\"{\\\"ar\"}", true);
    with_args("{\"foo\": \"bar\", \"args\": {\"arg1\"", "{\"foo\":\"bar\",\"args\":\"{\\\"arg1\\\"\"}", true);
    with_args("{\"foo\": \"bar\", \"args\": {\"arg1\":", "{\"foo\":\"bar\",\"args\":\"{\\\"arg1\\\":\"}", true);
    with_args("{\"foo\": \"bar\", \"args\": {\"arg1\": ", "{\"foo\":\"bar\",\"args\":\"{\\\"arg1\\\":\"}", true);
    /* a number that may not be complete is left out; one followed by a space is kept */
    with_args("{\"foo\": \"bar\", \"args\": {\"arg1\": 1", "{\"foo\":\"bar\",\"args\":\"{\\\"arg1\\\":\"}", true);
    with_args("{\"foo\": \"bar\", \"args\": {\"arg1\": 1 ", "{\"foo\":\"bar\",\"args\":\"{\\\"arg1\\\":1\"}", true);
    with_args("{\"foo\": \"bar\", \"args\": {\"arg1\": \"", "{\"foo\":\"bar\",\"args\":\"{\\\"arg1\\\":\\\"\"}", true);
    with_args("{\"foo\": \"bar\", \"args\": {\"arg1\": \"1\"", "{\"foo\":\"bar\",\"args\":\"{\\\"arg1\\\":\\\"1\\\"\"}",
              true);
    with_args("{\"foo\": \"bar\", \"args\": [", "{\"foo\":\"bar\",\"args\":\"[\"}", true);
    with_args("{\"foo\": \"bar\", \"args\": [1", "{\"foo\":\"bar\",\"args\":\"[\"}", true);
    with_args("{\"foo\": \"bar\", \"args\": [1 ", "{\"foo\":\"bar\",\"args\":\"[1\"}", true);
    with_args("{\"foo\": \"bar\", \"args\": [\"1\"", "{\"foo\":\"bar\",\"args\":\"[\\\"1\\\"\"}", true);
    with_args("{\"foo\": \"bar\", \"args\": [1,", "{\"foo\":\"bar\",\"args\":\"[1,\"}", true);
    with_args("{\"foo\": \"bar\", \"args\": {\"arg1\": [", "{\"foo\":\"bar\",\"args\":\"{\\\"arg1\\\":[\"}", true);
}

/* nlohmann's number and string spellings (json.hpp's to_chars / dump_escaped): integers stay
 * integers, doubles take the shortest form that reads back with ".0" or an exponent of two
 * digits or more; ensure_ascii escapes non-ASCII as lower-case \uXXXX (surrogate pairs). */
Test(json_partial, nlohmann_dump) {
    static const char *const cases[][2] = {
        {"[1, -0, 1.0, 1.5, 0.1, 1e2, 1E-7, 123456789012345678901234567890, 1e16, 0.0001, -2.50]",
         "[1,0,1.0,1.5,0.1,100.0,1e-07,1.2345678901234568e+29,1e+16,0.0001,-2.5]"},
        {"{\"s\": \"caf\\u00e9 \\ud83d\\ude00 \\u0001\\t/\\\"\\u007f\"}",
         "{\"s\":\"caf\\u00e9 \\ud83d\\ude00 \\u0001\\t/\\\"\\u007f\"}"},
        {"\"\xc3\xa9\"", "\"\\u00e9\""},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        cJSON *v = oxl_json_parse_strict(cases[i][0], cases[i][0] + strlen(cases[i][0]));
        cr_assert(v, "%s", cases[i][0]);
        char *d = oxl_json_dump(v, true);
        cr_expect_str_eq(d, cases[i][1]);
        free(d);
        cJSON_Delete(v);
    }
}

/* Bad input is refused, never a crash: not JSON, unhealable truncations, deep nesting. */
Test(json_partial, hostile) {
    oxl_json_heal h;
    cr_expect_not(oxl_json_heal_parse("x", "x" + 1, "$m", &h));
    cr_expect_not(oxl_json_heal_parse("{\"a\": 1", "{\"a\": 1" + 7, NULL, &h));
    cr_expect_null(oxl_json_parse_strict("{\"a\": 1} x", "{\"a\": 1} x" + 10));
    cr_expect_null(oxl_json_parse_strict("\"\\ud800\"", "\"\\ud800\"" + 8));
    char deep[4000];
    memset(deep, '[', sizeof deep);
    cr_expect_null(oxl_json_parse_strict(deep, deep + sizeof deep));
    if (oxl_json_heal_parse(deep, deep + sizeof deep, "$m", &h)) {
        cJSON_Delete(h.json);
    }
}
