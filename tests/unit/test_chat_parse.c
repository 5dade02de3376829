/* oxl_chat_parse against llama.cpp's own parse expectations (golden/chat-parse/cases.json, from
 * llama.cpp's tests/test-chat.cpp): each reply text, parsed with the golden chat template of its
 * model, gives the expected content, reasoning_content and tool calls, compared as that test
 * compares (content and reasoning with outer whitespace stripped, arguments as JSON values, ids).
 * The prompt each case's template renders for one user message tells whether the reply starts
 * inside a thought, as llama.cpp's generation prompt does. Every shorter prefix parsed as a partial
 * reply gives content and reasoning that the full reply's extend (what streaming relies on). Plus
 * format detection, the message shape, the options' errors and hostile texts. */
#include "chat_parse.h"
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

/* A partial reply's calls as the finished reply's extend them (what streamed call deltas rely on,
 * llama.cpp's common_chat_msg_diff): no more calls, the same names and ids, every call but the last
 * whole, the last one's arguments a prefix of the final ones (its id may be still to come). */
static bool calls_extended(const cJSON *part, const cJSON *full) {
    const cJSON *pc = cJSON_GetObjectItem(part, "tool_calls"), *fc = cJSON_GetObjectItem(full, "tool_calls");
    int n = cJSON_GetArraySize(pc);
    if (n > cJSON_GetArraySize(fc)) {
        return false;
    }
    for (int i = 0; i < n; i++) {
        const cJSON *a = cJSON_GetArrayItem(pc, i), *b = cJSON_GetArrayItem(fc, i);
        const cJSON *fa = cJSON_GetObjectItem(a, "function"), *fb = cJSON_GetObjectItem(b, "function");
        const char *aa = str_of(fa, "arguments"), *ab = str_of(fb, "arguments");
        bool last = i + 1 == n; /* its id may follow its arguments (Mistral's {"arguments", "id"}) */
        if (strcmp(str_of(fa, "name"), str_of(fb, "name")) ||
            (strcmp(str_of(a, "id"), str_of(b, "id")) && !(last && !*str_of(a, "id"))) ||
            (!last ? strcmp(aa, ab) != 0 : !is_prefix(aa, ab))) {
            return false;
        }
    }
    return true;
}

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
        const cJSON *tools = cJSON_GetObjectItem(c, "tools"); /* the offered tools, or false */
        cJSON_AddItemToObject(opts, "tools", cJSON_IsArray(tools) ? cJSON_Duplicate(tools, true) : cJSON_CreateFalse());
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
            bool ok = calls_extended(pm, got) && is_prefix(str_of(pm, "content"), str_of(got, "content")) &&
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
    cr_expect_geq(n, 93);
    cr_expect_eq(failures, 0);
    cr_expect_eq(stream_failures, 0);
    cJSON_Delete(cases);
    free(text);
}

/* The format each golden template selects (the markers chat_parse.c looks for in it). */
Test(chat_parse, format_detection) {
    static const char *const want[][2] = {
        {"NousResearch-Hermes-2-Pro-Llama-3-8B-tool_use", "Hermes 2 Pro"},
        {"Qwen-Qwen2.5-7B-Instruct", "Hermes 2 Pro"},
        {"meta-llama-Llama-3.1-8B-Instruct", "Llama 3.x with builtin tools"},
        {"meta-llama-Llama-3.2-3B-Instruct", "Llama 3.x"},
        {"mistralai-Mistral-Nemo-Instruct-2407", "Mistral Nemo"},
        {"deepseek-ai-DeepSeek-R1-Distill-Llama-8B", "DeepSeek R1"},
        {"llama-cpp-deepseek-r1", "DeepSeek R1"},
        {"deepseek-ai-DeepSeek-V3.1", "DeepSeek V3.1"},
        {"meetkai-functionary-medium-v3.1", "Functionary v3.1 Llama 3.1"},
        {"meetkai-functionary-medium-v3.2", "Functionary v3.2"},
        {"fireworks-ai-llama-3-firefunction-v2", "FireFunction v2"},
        {"CohereForAI-c4ai-command-r7b-12-2024-tool_use", "Command R7B"},
        {"ibm-granite-granite-3.3-2B-Instruct", "Granite"},
        {"openai-gpt-oss-120b", "GPT-OSS"},
        {"google-gemma-2-2b-it", "Generic"},
        {"Qwen3-Coder", "Qwen3 Coder"},
        {"Qwen3.5-4B", "Qwen3 Coder"},
        {"CohereForAI-c4ai-command-r-plus-tool_use", "Command R+"},
    };
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        char *t = template_of(want[i][0]);
        cr_expect_str_eq(oxl_chat_format(NULL, t), want[i][1], "%s", want[i][0]);
        free(t);
    }
    cr_expect_str_eq(oxl_chat_format(NULL, NULL), "Generic");
}

/* Llama 3.x replies as Meta's prompt format documents them: a custom tool call is a JSON object
 * {"name", "parameters"}; a builtin tool call is <|python_tag|>NAME.call(ARG="...") ending in
 * <|eom_id|> (not part of the reply text here); other <|python_tag|> text is code for "python". */
Test(chat_parse, llama_3_x) {
    char *t = template_of("meta-llama-Llama-3.1-8B-Instruct");
    const char *opts = "{\"generate_ids\": false}";
    cJSON *m = parse(t, "{\"name\": \"get_weather\", \"parameters\": {\"city\": \"Paris\"}}", opts);
    cJSON *want = cJSON_Parse("{\"tool_calls\": [{\"name\": \"get_weather\", \"arguments\": \"{\\\"city\\\": "
                              "\\\"Paris\\\"}\", \"id\": \"\"}]}");
    cr_expect_null(diff(m, want));
    cr_expect(cJSON_IsNull(cJSON_GetObjectItem(m, "content")));
    cJSON_Delete(m);
    cJSON_Delete(want);
    m = parse(t, "<|python_tag|>brave_search.call(query=\"weather in Paris\")", opts);
    want = cJSON_Parse("{\"tool_calls\": [{\"name\": \"brave_search\", \"arguments\": \"{\\\"query\\\": "
                       "\\\"weather in Paris\\\"}\", \"id\": \"\"}]}");
    cr_expect_null(diff(m, want));
    cJSON_Delete(m);
    cJSON_Delete(want);
    m = parse(t, "<|python_tag|>print('hey')", opts);
    want = cJSON_Parse("{\"tool_calls\": [{\"name\": \"python\", \"arguments\": \"{\\\"code\\\": "
                       "\\\"print('hey')\\\"}\", \"id\": \"\"}]}");
    cr_expect_null(diff(m, want));
    cJSON_Delete(m);
    cJSON_Delete(want);
    /* without tools the same text is content */
    m = parse(t, "{\"name\": \"get_weather\", \"parameters\": {}}", "{\"tools\": false}");
    cr_expect_str_eq(str_of(m, "content"), "{\"name\": \"get_weather\", \"parameters\": {}}");
    cr_expect_null(cJSON_GetObjectItem(m, "tool_calls"));
    cJSON_Delete(m);
    free(t);
}

/* No template: llama.cpp's generic JSON replies ({"tool_calls": [...]}, {"tool_call": {...}}), a
 * bare {"name", "arguments"} object or Hermes tags; several calls in one reply; ids generated
 * unless the reply has them; content null beside calls; arguments as JSON text. */
Test(chat_parse, generic_and_ids) {
    cJSON *m = parse(NULL,
                     "{\"tool_calls\": [{\"name\": \"a\", \"arguments\": {\"x\": 1}}, {\"name\": \"b\", "
                     "\"arguments\": {}, \"id\": \"own\"}]}",
                     NULL);
    const cJSON *calls = cJSON_GetObjectItem(m, "tool_calls");
    cr_assert_eq(cJSON_GetArraySize(calls), 2);
    cr_expect(cJSON_IsNull(cJSON_GetObjectItem(m, "content")));
    const cJSON *c0 = cJSON_GetArrayItem(calls, 0), *c1 = cJSON_GetArrayItem(calls, 1);
    cr_expect_eq(strncmp(str_of(c0, "id"), "call_", 5), 0);
    cr_expect_eq(strlen(str_of(c0, "id")), 29);
    cr_expect_str_eq(str_of(c1, "id"), "own");
    cr_expect_str_eq(str_of(c0, "type"), "function");
    cr_expect_str_eq(str_of(cJSON_GetObjectItem(c0, "function"), "arguments"), "{\"x\":1}");
    cJSON_Delete(m);
    m = parse(
        NULL,
        "Sure.<tool_call>{\"name\": \"a\", \"arguments\": {}}</tool_call>\n<tool_call>{\"name\": \"b\"}</tool_call>",
        NULL);
    cr_expect_eq(cJSON_GetArraySize(cJSON_GetObjectItem(m, "tool_calls")), 2);
    cr_expect_str_eq(str_of(m, "content"), "Sure.");
    const cJSON *a = cJSON_GetArrayItem(cJSON_GetObjectItem(m, "tool_calls"), 0);
    const cJSON *b = cJSON_GetArrayItem(cJSON_GetObjectItem(m, "tool_calls"), 1);
    cr_expect_str_neq(str_of(a, "id"), str_of(b, "id"));
    cJSON_Delete(m);
    /* a malformed call is content */
    m = parse(NULL, "<tool_call>{\"name\": </tool_call>", NULL);
    cr_expect_str_eq(str_of(m, "content"), "<tool_call>{\"name\": </tool_call>");
    cr_expect_null(cJSON_GetObjectItem(m, "tool_calls"));
    cJSON_Delete(m);
}

/* reasoning_format none keeps <think> blocks in content; deepseek moves them; a reply still being
 * generated holds back a tail that may become a closing tag. */
Test(chat_parse, reasoning_options) {
    const char *t = "{{ messages }}<think>";
    cJSON *m = parse(t, "<think>a</think>b", "{\"reasoning_format\": \"none\"}");
    cr_expect_str_eq(str_of(m, "content"), "<think>a</think>b");
    cr_expect_null(cJSON_GetObjectItem(m, "reasoning_content"));
    cJSON_Delete(m);
    m = parse(t, "<think>a</think>b", NULL);
    cr_expect_str_eq(str_of(m, "content"), "b");
    cr_expect_str_eq(str_of(m, "reasoning_content"), "a");
    cJSON_Delete(m);
    m = parse(t, "ab</th", "{\"thinking_forced_open\": true, \"partial\": true}");
    cr_expect_str_eq(str_of(m, "reasoning_content"), "ab");
    cr_expect_str_eq(str_of(m, "content"), "");
    cJSON_Delete(m);
    m = parse(t, "ab", "{\"prompt\": \"<|im_start|>assistant\\n<think>\\n\"}");
    cr_expect_str_eq(str_of(m, "reasoning_content"), "ab");
    cJSON_Delete(m);
}

Test(chat_parse, errors) {
    char *out = (char *)1;
    oxl_error err = {0};
    cr_expect_eq(oxl_chat_parse(NULL, NULL, NULL, NULL, &out, &err), -1);
    cr_expect_null(out);
    cr_expect(strstr(err.msg, "required"));
    static const char *const bad[] = {"[1]",
                                      "{\"reasoning_format\": \"x\"}",
                                      "{\"reasoning_format\": 1}",
                                      "{\"tools\": 1}",
                                      "{\"prompt\": 2}",
                                      "{\"format\": \"nope\"}",
                                      "{"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        out = (char *)1;
        err.msg[0] = 0;
        cr_expect_eq(oxl_chat_parse(NULL, NULL, "x", bad[i], &out, &err), -1, "%s", bad[i]);
        cr_expect_null(out);
        cr_expect(strstr(err.msg, "chat parse: options"), "%s: %s", bad[i], err.msg);
    }
    cr_expect_eq(oxl_chat_reasoning_format("none"), 0);
    cr_expect_eq(oxl_chat_reasoning_format("deepseek"), 1);
    cr_expect_eq(oxl_chat_reasoning_format(NULL), 1);
    cr_expect_eq(oxl_chat_reasoning_format("deepseek-legacy"), -1);
}

/* A partial parse's calls: n of them, the last named name with arguments args (exact text). */
static void expect_partial_call(const char *tmpl_name, const char *input, int n, const char *name, const char *args) {
    char *t = template_of(tmpl_name);
    cJSON *m = parse(t, input, "{\"partial\": true, \"generate_ids\": false}");
    const cJSON *calls = cJSON_GetObjectItem(m, "tool_calls");
    cr_expect_eq(cJSON_GetArraySize(calls), n, "%s: %s", tmpl_name, input);
    if (n > 0 && cJSON_GetArraySize(calls) == n) {
        const cJSON *fn = cJSON_GetObjectItem(cJSON_GetArrayItem(calls, n - 1), "function");
        cr_expect_str_eq(str_of(fn, "name"), name, "%s", input);
        cr_expect_str_eq(str_of(fn, "arguments"), args, "%s", input);
    }
    cJSON_Delete(m);
    free(t);
}

/* Calls of replies still being generated, as llama.cpp's common_chat_parse(is_partial = true) gives
 * them: tests/test-chat.cpp's partial expectations (Functionary v3.1 "...{\"arg1\": 1}<", Command
 * R7B and generic calls whose name is cut, Hermes "<tool_call>{\"name\"", the generic format's
 * name-only and cut-argument calls) and, per format, a call
 * whose arguments the reply cuts, cut where test-chat-parser.cpp's test_json_with_dumped_args cuts
 * them (a value that may still grow is left out; a string is kept up to its end). */
Test(chat_parse, partial_calls) {
    expect_partial_call("meetkai-functionary-medium-v3.1", "<function=special_function>{\"arg1\": 1}<", 1,
                        "special_function", "{\"arg1\":1}");
    char *t = template_of("CohereForAI-c4ai-command-r7b-12-2024-tool_use");
    cJSON *m = parse(t,
                     "<|START_THINKING|>I'm\nthinking<|END_THINKING|><|START_ACTION|>[\n    {\"tool_call_id\": \"0\", "
                     "\"tool_name\": \"special",
                     "{\"partial\": true}");
    cr_expect_str_eq(str_of(m, "reasoning_content"), "I'm\nthinking");
    cr_expect_null(cJSON_GetObjectItem(m, "tool_calls"));
    cJSON_Delete(m);
    free(t);
    t = template_of("google-gemma-2-2b-it");
    m = parse(t, "{ \"tool_call\" : { \"name\" : \"t", "{\"partial\": true}");
    cr_expect_null(cJSON_GetObjectItem(m, "tool_calls"));
    cr_expect_str_eq(str_of(m, "content"), "");
    cJSON_Delete(m);
    free(t);
    static const char *const hermes_cut[] = {"Let's call something\n<tool_call>{\"name\"",
                                             "Let's call something\n<tool_call>{\"name"};
    t = template_of("NousResearch-Hermes-2-Pro-Llama-3-8B-tool_use");
    for (int i = 0; i < 2; i++) {
        m = parse(t, hermes_cut[i], "{\"partial\": true}");
        cr_expect_null(cJSON_GetObjectItem(m, "tool_calls"));
        /* llama.cpp keeps the newline; content before a call is trimmed here (as when finished) */
        cr_expect_str_eq(str_of(m, "content"), "Let's call something");
        cJSON_Delete(m);
    }
    free(t);
    const char *h = "NousResearch-Hermes-2-Pro-Llama-3-8B-tool_use";
    expect_partial_call(h, "<tool_call>\n{\"name\": \"get_wea", 0, NULL, NULL);
    expect_partial_call(h, "<tool_call>\n{\"name\": \"get_weather\", ", 1, "get_weather", "");
    expect_partial_call(h, "<tool_call>\n{\"name\": \"get_weather\", \"arguments\"", 1, "get_weather", "");
    expect_partial_call(h, "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": ", 1, "get_weather",
                        "{\"city\":");
    expect_partial_call(h, "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Par", 1, "get_weather",
                        "{\"city\":\"Par");
    expect_partial_call(h, "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"days\": 12", 1, "get_weather",
                        "{\"days\":");
    expect_partial_call(h,
                        "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"caf\xc3\xa9\"}}\n</tool_",
                        1, "get_weather", "{\"city\":\"caf\\u00e9\"}");
    expect_partial_call(h,
                        "<tool_call>\n{\"name\": \"a\", \"arguments\": {}}\n</tool_call>\n<tool_call>\n{\"name\": "
                        "\"b\", \"arguments\": [1, ",
                        2, "b", "[1,");
    expect_partial_call("meta-llama-Llama-3.2-3B-Instruct",
                        "{\"name\": \"special_function\", \"parameters\": {\"arg1\": \"a", 1, "special_function",
                        "{\"arg1\":\"a");
    expect_partial_call("mistralai-Mistral-Nemo-Instruct-2407",
                        "[TOOL_CALLS][{\"name\": \"special_function\", \"arguments\": {\"arg1\": 1}, \"id\": "
                        "\"123456789\"}, {\"name\": \"spe",
                        1, "special_function", "{\"arg1\":1}");
    expect_partial_call("mistralai-Mistral-Nemo-Instruct-2407",
                        "[TOOL_CALLS][{\"name\": \"special_function\", \"arguments\": {\"arg1\": tr", 1,
                        "special_function", "{\"arg1\":");
    expect_partial_call("deepseek-ai-DeepSeek-R1-Distill-Llama-8B",
                        "<\xef\xbd\x9ctool\xe2\x96\x81"
                        "calls\xe2\x96\x81"
                        "begin\xef\xbd\x9c><\xef\xbd\x9ctool\xe2\x96\x81"
                        "call\xe2\x96\x81"
                        "begin\xef\xbd\x9c>function<\xef\xbd\x9ctool\xe2\x96\x81sep\xef\xbd\x9c>special_function\n"
                        "```json\n{\"arg1\": [\"x\", ",
                        1, "special_function", "{\"arg1\":[\"x\",");
    expect_partial_call("openai-gpt-oss-120b",
                        "<|channel|>commentary to=functions.special_function <|constrain|>json<|message|>{\"arg1\": ",
                        1, "special_function", "{\"arg1\":");
    /* test-chat.cpp's generic partial calls */
    const char *g = "google-gemma-2-2b-it";
    expect_partial_call(g,
                        "{\"tool_call\": {\"name\": \"puppeteer_screenshot\", \"arguments\": {\"name\": "
                        "\"servethehome_homepage\",",
                        1, "puppeteer_screenshot", "{\"name\":\"servethehome_homepage\",");
    expect_partial_call(g, "{ \"tool_call\" : { \"name\" : \"special_function\"", 1, "special_function", "");
    expect_partial_call(g, "{ \"tool_call\" : { \"name\" : \"special_function\", \"arguments\" : { \"arg", 1,
                        "special_function", "{\"arg");
}

/* Hostile partial replies: every format, texts cut inside markers, deep nesting, bad UTF-8 and
 * escapes; each parse succeeds with a message whose calls (if any) have a name. */
Test(chat_parse, partial_hostile) {
    static const char *const texts[] = {
        "<tool_call>",
        "<tool_call>{\"name\": \"f\", \"arguments\": {\"a\": \"\\u12",
        "<tool_call>{\"name\": \"f\", \"arguments\": {\"a\": \"\xff\xfe",
        "<tool_call>{\"name\": \"f\", \"arguments\": {\"a\": \"\xe2\x82",
        "<tool_call>{\"name\": \"f\", \"arguments\": {\"a\": x",
        "<tool_call>{\"name\": \"f\", \"arguments\": {{{{",
        "[TOOL_CALLS][{\"name\": \"f\", \"arguments\": [[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[",
        "[TOOL_CALLS]f[ARGS]{\"a\": -",
        "[TOOL_CALLS]f[CALL_ID]1",
        "<function=f>{\"a\": 1.",
        "<function=f",
        "{\"name\": \"f\", \"parameters\": {\"a\": 1e",
        "{\"tool_calls\": [{\"name\": \"f\", \"arguments\": \"{\\\\\"",
        "<|channel|>commentary to=functions.f <|constrain|>json<|message|>{\"a\": tr",
        "<|channel|>commentary to=functions.f<|message|>",
        " functools[{\"name\": \"f\", \"arguments\": {\"a\": nul",
        "<|START_ACTION|>[{\"tool_name\": \"f\", \"parameters\": {\"a\": \"b\\",
        "<|tool_call|>[{\"name\": \"f\", \"arguments\": {",
        "<|python_tag|>f.call(a=\"",
    };
    char deep[3000];
    memset(deep, '[', sizeof deep - 1);
    deep[sizeof deep - 1] = 0;
    for (int f = 0; f < OXL_CHAT_FMT_COUNT; f++) {
        char opts[160];
        snprintf(opts, sizeof opts, "{\"partial\": true, \"format\": \"%s\"}", oxl_chat_format_name((oxl_chat_fmt)f));
        for (size_t i = 0; i <= sizeof texts / sizeof *texts; i++) {
            const char *txt = i < sizeof texts / sizeof *texts ? texts[i] : deep;
            char *out = NULL;
            oxl_error err = {0};
            cr_assert_eq(oxl_chat_parse(NULL, NULL, txt, opts, &out, &err), 0, "%s: %s", opts, err.msg);
            cJSON *m = cJSON_Parse(out);
            cr_assert(m, "%s", out);
            const cJSON *calls = cJSON_GetObjectItem(m, "tool_calls");
            for (const cJSON *c = calls ? calls->child : NULL; c; c = c->next) {
                cr_expect(*str_of(cJSON_GetObjectItem(c, "function"), "name"), "%s: %s", opts, out);
            }
            cJSON_Delete(m);
            free(out);
        }
    }
}
