/* oxl_chat_parse against llama.cpp's own parse expectations (golden/chat-parse/cases.json, from
 * llama.cpp's tests/test-chat.cpp): each reply text, parsed with the golden chat template of its
 * model, gives the expected content, reasoning_content and tool calls, compared as that test
 * compares (content and reasoning with outer whitespace stripped, arguments as JSON values, ids).
 * The prompt each case's template renders for one user message tells whether the reply starts
 * inside a thought, as llama.cpp's generation prompt does. Every shorter prefix parsed as a partial
 * reply gives content and reasoning that the full reply's extend (what streaming relies on). Plus
 * format detection, the message shape, the options' errors and hostile texts. */
#include "jinja.h"
#include "oxillama.h"

#include <cjson/cJSON.h>
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char *read_all(const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f) {
        return NULL;
    }
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *buf = malloc((size_t)n + 1);
    cr_assert(buf && fread(buf, 1, (size_t)n, f) == (size_t)n);
    buf[n] = 0;
    fclose(f);
    return buf;
}

static char *template_of(const char *name) {
    char path[512];
    snprintf(path, sizeof path, OXL_SOURCE_DIR "/golden/chat-templates/%s/template.jinja", name);
    char *t = read_all(path);
    cr_assert(t, "cannot read %s", path);
    return t;
}

/* The generation prompt after one user message, as test-chat.cpp renders it (NULL if it fails). */
static char *gen_prompt(const char *tmpl, bool enable_thinking) {
    oxl_jinja_template *t = NULL;
    oxl_error err = {0};
    if (oxl_jinja_parse(tmpl, strlen(tmpl), &t, &err) < 0) {
        return NULL;
    }
    cJSON *ctx = cJSON_Parse("{\"messages\": [{\"role\": \"user\", \"content\": \"Hey there\"}],"
                             "\"add_generation_prompt\": true, \"bos_token\": \"\", \"eos_token\": \"\"}");
    cJSON_AddBoolToObject(ctx, "enable_thinking", enable_thinking);
    char *out = NULL;
    if (oxl_jinja_render(t, ctx, NULL, &out, NULL, &err) < 0) {
        out = NULL;
    }
    cJSON_Delete(ctx);
    oxl_jinja_free(t);
    return out;
}

/* s without leading and trailing whitespace (string_strip). */
static char *strip(const char *s) {
    s = s ? s : "";
    while (*s && strchr(" \t\n\r", *s)) {
        s++;
    }
    size_t n = strlen(s);
    while (n > 0 && strchr(" \t\n\r", s[n - 1])) {
        n--;
    }
    return strndup(s, n);
}

static const char *str_of(const cJSON *o, const char *key) {
    const char *v = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(o, key));
    return v ? v : "";
}

static bool same_stripped(const char *a, const char *b) {
    char *x = strip(a), *y = strip(b);
    bool eq = !strcmp(x, y);
    free(x);
    free(y);
    return eq;
}

/* Compares a parsed message with an expectation; returns a description of the first difference or
 * NULL. */
static const char *diff(const cJSON *got, const cJSON *want) {
    if (!same_stripped(str_of(got, "content"), str_of(want, "content"))) {
        return "content";
    }
    if (!same_stripped(str_of(got, "reasoning_content"), str_of(want, "reasoning_content"))) {
        return "reasoning_content";
    }
    const cJSON *gc = cJSON_GetObjectItemCaseSensitive(got, "tool_calls");
    const cJSON *wc = cJSON_GetObjectItemCaseSensitive(want, "tool_calls");
    if (cJSON_GetArraySize(gc) != cJSON_GetArraySize(wc)) {
        return "number of tool calls";
    }
    const cJSON *g = gc ? gc->child : NULL;
    for (const cJSON *w = wc ? wc->child : NULL; w; w = w->next, g = g->next) {
        const cJSON *fn = cJSON_GetObjectItemCaseSensitive(g, "function");
        if (strcmp(str_of(fn, "name"), str_of(w, "name"))) {
            return "tool call name";
        }
        cJSON *ga = cJSON_Parse(str_of(fn, "arguments")), *wa = cJSON_Parse(str_of(w, "arguments"));
        bool eq = ga && wa && cJSON_Compare(ga, wa, true);
        cJSON_Delete(ga);
        cJSON_Delete(wa);
        if (!eq) {
            return "tool call arguments";
        }
        if (strcmp(str_of(g, "id"), str_of(w, "id"))) {
            return "tool call id";
        }
        if (strcmp(str_of(g, "type"), "function")) {
            return "tool call type";
        }
    }
    return NULL;
}

static cJSON *parse(const char *tmpl, const char *input, const char *opts) {
    char *out = NULL;
    oxl_error err = {0};
    int rc = oxl_chat_parse(NULL, tmpl, input, opts, &out, &err);
    cr_assert_eq(rc, 0, "oxl_chat_parse: %s", err.msg);
    cJSON *m = cJSON_Parse(out);
    cr_assert(m, "not JSON: %s", out);
    free(out);
    return m;
}

static bool is_prefix(const char *p, const char *s) { return !strncmp(p, s, strlen(p)); }

Test(chat_parse, llama_cpp_cases) {
    char *text = read_all(OXL_SOURCE_DIR "/golden/chat-parse/cases.json");
    cr_assert(text);
    cJSON *cases = cJSON_Parse(text);
    cr_assert(cJSON_IsArray(cases));
    int n = 0, failures = 0, stream_failures = 0;
    for (const cJSON *c = cases->child; c; c = c->next, n++) {
        const char *src = str_of(c, "source"), *input = str_of(c, "input");
        char *tmpl = template_of(str_of(c, "template"));
        char *prompt = gen_prompt(tmpl, cJSON_IsTrue(cJSON_GetObjectItem(c, "enable_thinking")));
        bool partial = cJSON_IsTrue(cJSON_GetObjectItem(c, "partial"));
        cJSON *opts = cJSON_CreateObject();
        cJSON_AddStringToObject(opts, "reasoning_format", str_of(c, "reasoning_format"));
        cJSON_AddBoolToObject(opts, "tools", cJSON_IsTrue(cJSON_GetObjectItem(c, "tools")));
        cJSON_AddBoolToObject(opts, "generate_ids", false);
        cJSON_AddBoolToObject(opts, "partial", partial);
        if (prompt) {
            cJSON_AddStringToObject(opts, "prompt", prompt);
        }
        char *oj = cJSON_PrintUnformatted(opts);
        cJSON *got = parse(tmpl, input, oj);
        const char *d = diff(got, cJSON_GetObjectItem(c, "expect"));
        if (d) {
            char *g = cJSON_PrintUnformatted(got);
            cr_log_error("%s (%s, %s): %s differs: got %s", src, str_of(c, "template"), oxl_chat_format(NULL, tmpl), d,
                         g);
            free(g);
            failures++;
        }
        /* streaming: every prefix's partial parse is extended by the full parse */
        cJSON_ReplaceItemInObject(opts, "partial", cJSON_CreateTrue());
        char *pj = cJSON_PrintUnformatted(opts);
        size_t len = strlen(input);
        for (size_t i = 1; i < len && !partial; i++) {
            if ((input[i] & 0xC0) == 0x80) {
                continue; /* inside a UTF-8 sequence */
            }
            char *pre = strndup(input, i);
            cJSON *pm = parse(tmpl, pre, pj);
            bool ok = cJSON_GetObjectItem(pm, "tool_calls") == NULL &&
                      is_prefix(str_of(pm, "content"), str_of(got, "content")) &&
                      is_prefix(str_of(pm, "reasoning_content"), str_of(got, "reasoning_content"));
            if (!ok) {
                char *g = cJSON_PrintUnformatted(pm);
                cr_log_error("%s: partial parse of %zu bytes is not extended by the full one: %s", src, i, g);
                free(g);
                stream_failures++;
                i = len;
            }
            cJSON_Delete(pm);
            free(pre);
        }
        free(pj);
        free(oj);
        cJSON_Delete(opts);
        cJSON_Delete(got);
        free(prompt);
        free(tmpl);
    }
    cr_log_info("chat parse: %d llama.cpp cases, %d differ, %d stream prefix failures", n, failures, stream_failures);
    cr_expect_geq(n, 70);
    cr_expect_eq(failures, 0);
    cr_expect_eq(stream_failures, 0);
    cJSON_Delete(cases);
    free(text);
}
