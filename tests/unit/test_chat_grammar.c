/* Tool-call grammars per reply format (oxl_chat_tool_grammar) against llama.cpp's own tool-call
 * replies: every case of golden/chat-parse/cases.json (llama.cpp's tests/test-chat.cpp) whose reply
 * holds calls is run through its format's lazy grammar as llama.cpp's sampler would run it: the
 * reply fed a byte at a time until a trigger pattern matches, then the text from the trigger's
 * capture given to the grammar, which must accept it to the end. The same reply with its arguments
 * broken (a name the tools do not have, a missing brace) is rejected. */
#include "grammar.h"
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

static const char *str_of(const cJSON *o, const char *key) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    return cJSON_IsString(v) ? v->valuestring : "";
}

/* 1: the lazy grammar triggers on text and accepts the rest; 0: it rejects it; -1: no trigger. */
static int run_lazy(const cJSON *res, const char *text) {
    char err[256];
    const char *gtext = str_of(res, "grammar");
    oxl_grammar *g = oxl_grammar_parse(gtext, "root", NULL, err, sizeof err);
    cr_assert(g, "%s\n%s", err, gtext);
    const cJSON *pats = cJSON_GetObjectItem(res, "trigger_patterns");
    int n = cJSON_GetArraySize(pats);
    oxl_trigger_re **re = calloc((size_t)n + 1, sizeof *re);
    for (int i = 0; i < n; i++) {
        re[i] = oxl_trigger_re_new(cJSON_GetArrayItem(pats, i)->valuestring, err, sizeof err);
        cr_assert(re[i], "%s", err);
    }
    size_t len = strlen(text);
    long at = -1;
    for (size_t k = 1; k <= len && at < 0; k++)
        for (int i = 0; i < n && at < 0; i++)
            at = oxl_trigger_re_match(re[i], text, k);
    int rc = -1;
    if (at >= 0) {
        rc = oxl_grammar_accept_piece(g, -1, text + at, len - (size_t)at) == 0 && oxl_grammar_can_end(g);
    }
    for (int i = 0; i < n; i++)
        oxl_trigger_re_free(re[i]);
    free(re);
    oxl_grammar_free(g);
    return rc;
}

static cJSON *tool_grammar(const char *tmpl, const cJSON *tools, const char *choice, const char *prompt) {
    char *tj = cJSON_PrintUnformatted(tools);
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "tool_choice", choice);
    if (prompt)
        cJSON_AddStringToObject(o, "prompt", prompt);
    char *oj = cJSON_PrintUnformatted(o), *out = NULL;
    oxl_error err = {0};
    cr_assert_eq(oxl_chat_tool_grammar(NULL, tmpl, tj, oj, &out, &err), 0, "%s", err.msg);
    cJSON *res = cJSON_Parse(out);
    free(out);
    free(oj);
    free(tj);
    cJSON_Delete(o);
    return res;
}

/* text with its last occurrence of from replaced by to (NULL when absent) */
static char *replace(const char *text, const char *from, const char *to) {
    const char *at = NULL;
    for (const char *p = strstr(text, from); p; p = strstr(p + 1, from))
        at = p;
    if (!at)
        return NULL;
    char *r = malloc(strlen(text) + strlen(to) + 1);
    sprintf(r, "%.*s%s%s", (int)(at - text), text, to, at + strlen(from));
    return r;
}

Test(chat_grammar, llama_cpp_tool_call_replies) {
    char *text = read_all(OXL_SOURCE_DIR "/golden/chat-parse/cases.json");
    cJSON *cases = cJSON_Parse(text);
    cr_assert(cJSON_IsArray(cases));
    int n = 0, accepted = 0, untriggered = 0, rejected_bad = 0, n_bad = 0, no_grammar = 0;
    for (const cJSON *c = cases->child; c; c = c->next) {
        const cJSON *tools = cJSON_GetObjectItem(c, "tools");
        const cJSON *calls = cJSON_GetObjectItem(cJSON_GetObjectItem(c, "expect"), "tool_calls");
        if (!cJSON_IsArray(tools) || cJSON_GetArraySize(calls) == 0 || cJSON_IsTrue(cJSON_GetObjectItem(c, "partial")))
            continue;
        const char *src = str_of(c, "source"), *input = str_of(c, "input");
        char *tmpl = template_of(str_of(c, "template"));
        char *prompt = gen_prompt(tmpl, cJSON_IsTrue(cJSON_GetObjectItem(c, "enable_thinking")));
        /* the offered tools, and an any-object tool for each called name they lack (replies calling
         * get_time, edit) */
        cJSON *offered = cJSON_Duplicate(tools, true);
        for (const cJSON *k = calls->child; k; k = k->next) {
            bool have = false;
            for (const cJSON *t = offered->child; t; t = t->next)
                have |= !strcmp(str_of(cJSON_GetObjectItem(t, "function"), "name"), str_of(k, "name"));
            if (!have) {
                cJSON *t = cJSON_CreateObject(), *fn = cJSON_AddObjectToObject(t, "function");
                cJSON_AddStringToObject(t, "type", "function");
                cJSON_AddStringToObject(fn, "name", str_of(k, "name"));
                cJSON_AddStringToObject(cJSON_AddObjectToObject(fn, "parameters"), "type", "object");
                cJSON_AddItemToArray(offered, t);
            }
        }
        cJSON *res = tool_grammar(tmpl, offered, "auto", prompt);
        cJSON_Delete(offered);
        if (cJSON_IsNull(cJSON_GetObjectItem(res, "grammar"))) {
            no_grammar++;
        } else {
            n++;
            int rc = run_lazy(res, input);
            if (rc == 1)
                accepted++;
            else if (rc < 0) {
                /* text first (llama.cpp's patterns trigger at the reply's start), or a call without
                 * its opening tag: left to the parser, unconstrained */
                cr_log_info("%s (%s): no trigger: %.60s", src, str_of(res, "format"), input);
                untriggered++;
            } else
                cr_log_error("%s (%s, %s): the lazy grammar %s the reply %s", src, str_of(c, "template"),
                             str_of(res, "format"), rc < 0 ? "never triggers on" : "rejects", input);
            /* a call of a tool not offered, arguments without their closing brace */
            const char *name = str_of(cJSON_GetArrayItem(calls, 0), "name");
            char *bad[2] = {replace(input, name, "no_such_tool"), NULL};
            const char *close = strrchr(input, '}');
            if (close) {
                bad[1] = strdup(input);
                memmove(bad[1] + (close - input), close + 1, strlen(close));
            }
            for (int k = 0; k < 2; k++) {
                if (!bad[k])
                    continue;
                n_bad++;
                if (run_lazy(res, bad[k]) == 1)
                    cr_log_error("%s (%s): the lazy grammar accepts the broken reply %s", src, str_of(res, "format"),
                                 bad[k]);
                else
                    rejected_bad++;
                free(bad[k]);
            }
        }
        cJSON_Delete(res);
        free(prompt);
        free(tmpl);
    }
    cr_log_info("tool grammars: %d replies with calls, %d accepted, %d left unconstrained (text before the "
                "calls, or no opening tag), %d of %d broken ones rejected, %d without a grammar",
                n, accepted, untriggered, rejected_bad, n_bad, no_grammar);
    cr_expect_gt(n, 20);
    cr_expect_eq(accepted + untriggered, n);
    cr_expect_leq(untriggered, 4);
    cr_expect_geq(accepted, 37);
    cr_expect_eq(rejected_bad, n_bad);
    cJSON_Delete(cases);
    free(text);
}

/* tool_choice required: the grammar is not lazy and admits calls from the first byte only (Hermes 2
 * Pro's, llama.cpp's reply text of test-chat.cpp); bad arguments are errors that say what is wrong. */
Test(chat_grammar, required_and_errors) {
    char *tmpl = template_of("NousResearch-Hermes-2-Pro-Llama-3-8B-tool_use");
    cJSON *tools = cJSON_Parse("[{\"type\": \"function\", \"function\": {\"name\": \"special_function\", "
                               "\"parameters\": {\"type\": \"object\", \"properties\": {\"arg1\": {\"type\": "
                               "\"integer\"}}, \"required\": [\"arg1\"]}}}]");
    cJSON *res = tool_grammar(tmpl, tools, "required", NULL);
    cr_expect_str_eq(str_of(res, "format"), "Hermes 2 Pro");
    cr_expect(cJSON_IsFalse(cJSON_GetObjectItem(res, "lazy")));
    char err[256];
    oxl_grammar *g = oxl_grammar_parse(str_of(res, "grammar"), "root", NULL, err, sizeof err);
    cr_assert(g, "%s", err);
    static const char call[] =
        "<tool_call>\n{\"name\": \"special_function\", \"arguments\": {\"arg1\": 1}}</tool_call>";
    cr_expect(oxl_grammar_accept_piece(g, -1, call, strlen(call)) == 0 && oxl_grammar_can_end(g));
    oxl_grammar_free(g);
    g = oxl_grammar_parse(str_of(res, "grammar"), "root", NULL, err, sizeof err);
    cr_expect(oxl_grammar_accept_piece(g, -1, "Hello", 5) == -1, "text before the call is refused");
    oxl_grammar_free(g);
    cJSON_Delete(res);

    char *out = NULL;
    oxl_error e = {0};
    cr_expect(oxl_chat_tool_grammar(NULL, tmpl, "[]", NULL, &out, &e) == -1 && !out);
    cr_expect(strstr(e.msg, "not a non-empty JSON array"), "%s", e.msg);
    cr_expect(oxl_chat_tool_grammar(NULL, tmpl, "[{\"type\": \"function\"}]", NULL, &out, &e) == -1);
    cr_expect(strstr(e.msg, "no function with a name"), "%s", e.msg);
    cr_expect(oxl_chat_tool_grammar(NULL, tmpl, "[{\"function\": {\"name\": \"f\"}}]", "{\"tool_choice\": \"x\"}", &out,
                                    &e) == -1);
    cr_expect(strstr(e.msg, "'tool_choice' must be"), "%s", e.msg);
    /* a schema the converter refuses: its message */
    cr_expect(oxl_chat_tool_grammar(NULL, tmpl,
                                    "[{\"function\": {\"name\": \"f\", \"parameters\": {\"$ref\": \"#/nope\"}}}]", NULL,
                                    &out, &e) == -1);
    cr_expect(strstr(e.msg, "JSON schema conversion failed"), "%s", e.msg);
    cJSON_Delete(tools);
    free(tmpl);
}
