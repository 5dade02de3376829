/* Jinja engine and chat prompts.
 * - language: 155 templates whose expected renderings (or exception class and message) were made by
 *   Python Jinja2 3.1.6 configured as HuggingFace configures it (tests/unit/jinja_reference.py writes
 *   tests/unit/jinja_cases.inc);
 * - every model template of golden/chat-templates with every conversation (golden/README.md);
 * - llama.cpp's built-in formats against llama.cpp's own test vectors (golden/chat-builtin);
 * - malformed, hostile and fuzzed templates end in errors, within the limits. */
#include "chat.h"
#include "golden.h"
#include "jinja.h"

#include <criterion/criterion.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct unit_case {
    const char *template_src;
    const char *context;
    const char *expected; /* "ERROR <class>: <message>" when Jinja2 raised */
} unit_case;

static const unit_case unit_cases[] = {
#include "jinja_cases.inc"
};

static oxl_jinja_options fixed_clock(void) {
    oxl_jinja_options o = oxl_jinja_default_options();
    o.fixed_time = true; /* tests/unit/jinja_reference.py fixes the clock at 2026-01-15 12:00:00 */
    o.now = (struct tm){.tm_year = 126, .tm_mon = 0, .tm_mday = 15, .tm_hour = 12, .tm_wday = 4, .tm_yday = 14};
    return o;
}

/* Renders src with context (JSON text); returns the output or "ERROR <message without position>". */
static char *render(const char *src, const char *context, const oxl_jinja_options *opt) {
    oxl_error err = {{0}};
    oxl_jinja_template *t = NULL;
    char *out = NULL;
    cJSON *ctx = cJSON_Parse(context ? context : "{}");
    int rc = oxl_jinja_parse(src, strlen(src), &t, &err);
    if (rc == 0) {
        rc = oxl_jinja_render(t, ctx, opt, &out, NULL, &err);
    }
    oxl_jinja_free(t);
    cJSON_Delete(ctx);
    if (rc == 0) {
        return out;
    }
    /* "template:L:C: Class: message" -> "ERROR Class: message" */
    const char *msg = strstr(err.msg, ": ");
    msg = msg ? msg + 2 : err.msg;
    char *e = malloc(strlen(msg) + 8);
    sprintf(e, "ERROR %s", msg);
    return e;
}

Test(jinja, language_against_python_jinja2) {
    oxl_jinja_options opt = fixed_clock();
    int failed = 0;
    for (size_t i = 0; i < sizeof unit_cases / sizeof unit_cases[0]; i++) {
        char *got = render(unit_cases[i].template_src, unit_cases[i].context, &opt);
        if (strcmp(got, unit_cases[i].expected) != 0) {
            cr_log_error("case %zu: %s\n  expected: %s\n  got:      %s", i, unit_cases[i].template_src,
                         unit_cases[i].expected, got);
            failed++;
        }
        free(got);
    }
    cr_assert_eq(failed, 0, "%d of %zu cases differ from Jinja2", failed, sizeof unit_cases / sizeof unit_cases[0]);
}

Test(jinja, golden_chat_templates) {
    oxl_golden_report r = {0};
    oxl_error err = {{0}};
    int rc = oxl_golden_chat_dir(OXL_SOURCE_DIR "/golden/chat-templates", &r, &err);
    cr_assert_eq(rc, 0, "%s", err.msg);
    if (r.n_fail) {
        r.out = stderr; /* print the failing lines */
        r.n_pass = r.n_fail = 0;
        oxl_golden_chat_dir(OXL_SOURCE_DIR "/golden/chat-templates", &r, &err);
    }
    cr_assert_eq(r.n_fail, 0, "%d of %d renderings differ", r.n_fail, r.n_pass + r.n_fail);
    cr_assert_eq(r.n_pass, 65 * 6, "65 templates x 6 conversations, got %d checks", r.n_pass);
}

static char *slurp(const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f) {
        return NULL;
    }
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *s = malloc((size_t)n + 1);
    size_t got = fread(s, 1, (size_t)n, f);
    s[got] = 0;
    fclose(f);
    return s;
}

Test(jinja, builtin_formats) {
    char *text = slurp(OXL_SOURCE_DIR "/golden/chat-builtin/llama-cpp-test-chat-template.json");
    cr_assert(text);
    cJSON *root = cJSON_Parse(text);
    free(text);
    cr_assert(root);
    const cJSON *conv = cJSON_GetObjectItem(root, "conversation"), *c;
    int n = 0;
    cJSON_ArrayForEach(c, cJSON_GetObjectItem(root, "cases")) {
        const char *name = cJSON_GetObjectItem(c, "name")->valuestring;
        cJSON *msgs = cJSON_Duplicate(conv, 1), *e;
        cJSON_ArrayForEach(e, cJSON_GetObjectItem(c, "extra_conversation")) {
            cJSON_AddItemToArray(msgs, cJSON_Duplicate(e, 1));
        }
        const char *fmt = oxl_chat_detect(cJSON_GetObjectItem(c, "template")->valuestring);
        cr_assert(fmt, "%s: no built-in format detected", name);
        char *out = NULL;
        oxl_error err = {{0}};
        cr_assert_eq(oxl_chat_render(fmt, msgs, NULL, true, NULL, NULL, &out, &err), 0, "%s: %s", name, err.msg);
        cr_assert_str_eq(out, cJSON_GetObjectItem(c, "expected_builtin")->valuestring, "%s (%s)", name, fmt);
        free(out);
        cJSON_Delete(msgs);
        n++;
    }
    cr_assert_eq(n, 36);
    cJSON_Delete(root);
}

Test(jinja, builtin_names) {
    cr_assert(oxl_chat_is_builtin("chatml"));
    cr_assert(oxl_chat_is_builtin("mistral-v7-tekken"));
    cr_assert(!oxl_chat_is_builtin("INVALID TEMPLATE"));
    cr_assert_str_eq(oxl_chat_detect("llama3"), "llama3"); /* a name detects as itself */
    cr_assert_null(oxl_chat_detect("INVALID TEMPLATE"));
    size_t n = 0;
    while (oxl_chat_builtin_name(n)) {
        n++;
    }
    /* llama.cpp d32676d77426 names 54 formats; dots1, which it reaches only by detection, is named here too */
    cr_assert_eq(n, 55);
}

/* The request-side entry: messages and tools become the template's variables. */
Test(jinja, chat_render_passes_request_variables) {
    cJSON *msgs = cJSON_Parse("[{\"role\":\"user\",\"content\":\"hi\"}]");
    cJSON *tools = cJSON_Parse("[{\"type\":\"function\",\"function\":{\"name\":\"f\"}}]");
    const char *tmpl = "{{ bos_token }}{% for m in messages %}{{ m.role }}:{{ m.content }}{% endfor %}"
                       "{% if tools %}|{{ tools|map(attribute='function.name')|join }}{% endif %}"
                       "{% if add_generation_prompt %}|gen{% endif %}{{ eos_token }}";
    char *out = NULL;
    oxl_error err = {{0}};
    cr_assert_eq(oxl_chat_render(tmpl, msgs, tools, true, "<s>", "</s>", &out, &err), 0, "%s", err.msg);
    cr_assert_str_eq(out, "<s>user:hi|f|gen</s>");
    free(out);
    cr_assert_eq(oxl_chat_render(tmpl, msgs, NULL, false, NULL, NULL, &out, &err), 0, "%s", err.msg);
    cr_assert_str_eq(out, "user:hi");
    free(out);
    cJSON_Delete(msgs);
    cJSON_Delete(tools);
}

/* --- errors and limits --------------------------------------------------------------------- */
static int parse_error(const char *src, oxl_error *err) {
    oxl_jinja_template *t = NULL;
    int rc = oxl_jinja_parse(src, strlen(src), &t, err);
    oxl_jinja_free(t);
    return rc;
}

Test(jinja, syntax_errors_name_line_and_column) {
    oxl_error err = {{0}};
    cr_assert_eq(parse_error("line one\n{% if x %}never closed", &err), -1);
    cr_assert(strstr(err.msg, "template:2:"), "%s", err.msg);
    cr_assert(strstr(err.msg, "endif"), "%s", err.msg);
    cr_assert_eq(parse_error("{{ 1 + }}", &err), -1);
    cr_assert(strstr(err.msg, "template:1:8"), "%s", err.msg);
    const char *bad[] = {"{% endfor %}", "{{ x", "{% for x %}", "{# open comment", "{{ (1 }}", "{{ 'abc }}",
                         "{% unknowntag %}", "{% set %}", "{% macro m( %}{% endmacro %}", "{{ x | }}", "{{ ] }}",
                         "{% raw %}no end", "{% if x %}{% else %}{% else %}{% endif %}", "{{ 99999999999999999999 }}",
                         /* loop controls outside a loop, or in a macro inside one (Jinja2: SyntaxError) */
                         "{% if true %}{% break %}{% endif %}",
                         "{% for i in [1] %}{% macro m() %}{% continue %}{% endmacro %}{% endfor %}",
                         "{% for i in [1] %}{% else %}{% break %}{% endfor %}"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        cr_assert_eq(parse_error(bad[i], &err), -1, "accepted: %s", bad[i]);
        cr_assert(!strncmp(err.msg, "template:", 9), "%s -> %s", bad[i], err.msg);
    }
}

Test(jinja, runtime_errors_name_the_position) {
    oxl_jinja_template *t = NULL;
    oxl_error err = {{0}};
    const char *src = "ok\n  {{ messages[0].content.upper() + 1 }}";
    cr_assert_eq(oxl_jinja_parse(src, strlen(src), &t, &err), 0);
    cJSON *ctx = cJSON_Parse("{\"messages\":[{\"content\":\"x\"}]}");
    char *out = NULL;
    cr_assert_eq(oxl_jinja_render(t, ctx, NULL, &out, NULL, &err), -1);
    cr_assert_str_eq(err.msg, "template:2:34: TypeError: can only concatenate str (not \"int\") to str");
    cJSON_Delete(ctx);
    oxl_jinja_free(t);
}

Test(jinja, invalid_utf8_is_refused) {
    oxl_error err = {{0}};
    cr_assert_eq(parse_error("ok \xff\xfe {{ 1 }}", &err), -1);
    cr_assert(strstr(err.msg, "UTF-8"), "%s", err.msg);
    cr_assert_eq(parse_error("{{ '\xc3' }}", &err), -1);
    cr_assert_eq(parse_error("\xed\xa0\x80", &err), -1); /* a UTF-16 surrogate */
    char *got = render("{{ s }}", "{\"s\":\"\\ud800\"}", NULL);
    cr_assert(!strncmp(got, "ERROR", 5) || !strcmp(got, ""), "%s", got);
    free(got);
}

Test(jinja, deep_nesting_is_bounded) {
    enum { DEPTH = 5000 };
    char *src = malloc(DEPTH * 12 + 64);
    char *p = src;
    for (int i = 0; i < DEPTH; i++) {
        p += sprintf(p, "{%% if 1 %%}");
    }
    strcpy(p, "x");
    oxl_error err = {{0}};
    cr_assert_eq(parse_error(src, &err), -1);
    cr_assert(strstr(err.msg, "nested too deeply"), "%s", err.msg);
    p = src;
    p += sprintf(p, "{{ ");
    for (int i = 0; i < DEPTH; i++) {
        *p++ = '(';
    }
    strcpy(p, "1 }}");
    cr_assert_eq(parse_error(src, &err), -1);
    p = src;
    p += sprintf(p, "{{ ");
    for (int i = 0; i < DEPTH; i++) {
        p += sprintf(p, "not ");
    }
    strcpy(p, "1 }}");
    cr_assert_eq(parse_error(src, &err), -1);
    free(src);
}

Test(jinja, runaway_templates_end_in_errors) {
    const char *cases[][2] = {
        {"{% macro f(n) %}{{ f(n + 1) }}{% endmacro %}{{ f(0) }}", "RecursionError"},
        {"{% for i in range(100000) %}{% for j in tree %}{% endfor %}{% endfor %}", "steps"},
        {"{% for i in range(100000) %}{{ 'x' * 100 }}{% endfor %}", "output exceeds"},
        {"{{ 'x' * 1000000000 }}", "MemoryError"},
        {"{{ range(1000000000)|list }}", "OverflowError"},
        {"{% set s = namespace(v='ab') %}{% for i in range(40) %}{% set s.v = s.v ~ s.v %}{% endfor %}{{ s.v|length }}",
         "Error"},
        {"{{ [1, 2] * 100000000 }}", "MemoryError"},
        {"{% for x in tree recursive %}{{ loop(tree) }}{% endfor %}", "RecursionError"},
    };
    /* a context list of 100 items to loop over */
    char tree[512] = "{\"tree\":[0";
    for (int i = 1; i < 100; i++) {
        strcat(tree, ",0");
    }
    strcat(tree, "]}");
    oxl_jinja_options opt = oxl_jinja_default_options();
    opt.max_steps = 2000000;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char *got = render(cases[i][0], tree, &opt);
        cr_assert(!strncmp(got, "ERROR", 5) && strstr(got, cases[i][1]), "%s -> %.200s", cases[i][0], got);
        free(got);
    }
}

Test(jinja, output_limit_is_configurable) {
    oxl_jinja_options opt = oxl_jinja_default_options();
    opt.max_output = 10;
    char *got = render("{{ 'abcdefghij' }}", NULL, &opt);
    cr_assert_str_eq(got, "abcdefghij");
    free(got);
    got = render("{{ 'abcdefghijk' }}", NULL, &opt);
    cr_assert(!strncmp(got, "ERROR", 5), "%s", got);
    free(got);
}

/* Byte-level mutations of real model templates: every render must return (an error is fine). */
Test(jinja, fuzzed_templates_never_crash) {
    const char *models[] = {"Qwen-Qwen3-0.6B", "openai-gpt-oss-120b", "google-gemma-4-31B-it",
                            "meetkai-functionary-medium-v3.1"};
    char *cases_text = slurp(OXL_SOURCE_DIR "/golden/chat-templates/cases.json");
    cr_assert(cases_text);
    cJSON *cases = cJSON_Parse(cases_text);
    free(cases_text);
    const cJSON *ctx = cJSON_GetObjectItem(cJSON_GetArrayItem(cases, 5), "context");
    uint64_t state = 0x9E3779B97F4A7C15ull;
    oxl_jinja_options opt = oxl_jinja_default_options();
    opt.max_steps = 200000;
    static const char pieces[] = "{}%#-+()[]'\"|.~,:=!<> \n\xc3\xa9\xff";
    int n_ok = 0, n_err = 0;
    for (size_t m = 0; m < sizeof models / sizeof models[0]; m++) {
        char path[512];
        snprintf(path, sizeof path, "%s/golden/chat-templates/%s/template.jinja", OXL_SOURCE_DIR, models[m]);
        char *src = slurp(path);
        cr_assert(src, "%s", path);
        size_t len = strlen(src);
        for (int iter = 0; iter < 60; iter++) {
            char *mut = malloc(len + 1);
            memcpy(mut, src, len + 1);
            for (int k = 0; k < 1 + iter % 8; k++) {
                state = state * 6364136223846793005ull + 1442695040888963407ull;
                size_t at = (size_t)(state >> 33) % len;
                mut[at] = pieces[(state >> 13) % (sizeof pieces - 1)];
            }
            oxl_jinja_template *t = NULL;
            oxl_error err = {{0}};
            char *out = NULL;
            if (oxl_jinja_parse(mut, len, &t, &err) == 0 && oxl_jinja_render(t, ctx, &opt, &out, NULL, &err) == 0) {
                n_ok++;
            } else {
                cr_assert(err.msg[0], "an error without a message");
                n_err++;
            }
            free(out);
            oxl_jinja_free(t);
            free(mut);
        }
        free(src);
    }
    cr_assert_eq(n_ok + n_err, 240);
    cJSON_Delete(cases);
}
