/* The built-in chat formats through the public entry points oxl_chat_builtin_apply and
 * oxl_chat_builtin_templates (llama.cpp's llama_chat_apply_template and
 * llama_chat_builtin_templates), against llama.cpp's own test vectors (golden/chat-builtin: the
 * template texts of tests/test-chat-template.cpp and llama.cpp's renderings of them); the same
 * strings the JavaScript package's applyTemplate gives (js/test/oxillama.test.mjs). */
#include "oxillama.h"

#include <cjson/cJSON.h>
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_MSGS 16

typedef struct conv {
    const char *roles[MAX_MSGS];
    const char *contents[MAX_MSGS];
    int32_t n;
} conv;

static cJSON *load_golden(void) {
    FILE *f = fopen(OXL_SOURCE_DIR "/golden/chat-builtin/llama-cpp-test-chat-template.json", "rb");
    cr_assert(f);
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *s = malloc((size_t)n + 1);
    cr_assert(s);
    size_t got = fread(s, 1, (size_t)n, f);
    s[got] = 0;
    fclose(f);
    cJSON *root = cJSON_Parse(s);
    free(s);
    cr_assert(root);
    return root;
}

static void add_messages(conv *c, const cJSON *list) {
    const cJSON *m;
    cJSON_ArrayForEach(m, list) {
        cr_assert_lt(c->n, MAX_MSGS);
        c->roles[c->n] = cJSON_GetObjectItem(m, "role")->valuestring;
        c->contents[c->n] = cJSON_GetObjectItem(m, "content")->valuestring;
        c->n++;
    }
}

static const cJSON *find_case(const cJSON *root, const char *name) {
    const cJSON *c;
    cJSON_ArrayForEach(c, cJSON_GetObjectItem(root, "cases")) {
        if (!strcmp(cJSON_GetObjectItem(c, "name")->valuestring, name)) {
            return c;
        }
    }
    cr_assert_fail("no case %s in the golden", name);
    return NULL;
}

/* the rendering through a buffer of exactly the asked length + 1 */
static char *apply(const char *tmpl, const conv *c, bool add_ass) {
    int32_t n = oxl_chat_builtin_apply(tmpl, c->roles, c->contents, c->n, add_ass, NULL, 0);
    cr_assert_geq(n, 0, "%s: %d", tmpl ? tmpl : "(null)", n);
    char *buf = malloc((size_t)n + 1);
    cr_assert(buf);
    cr_assert_eq(oxl_chat_builtin_apply(tmpl, c->roles, c->contents, c->n, add_ass, buf, n + 1), n);
    cr_assert_eq(strlen(buf), (size_t)n);
    return buf;
}

Test(chat_builtin, llama_cpp_vectors_by_template_text) {
    cJSON *root = load_golden();
    conv base = {0};
    add_messages(&base, cJSON_GetObjectItem(root, "conversation"));
    cr_assert_eq(base.n, 6);
    cr_assert(cJSON_IsTrue(cJSON_GetObjectItem(root, "add_generation_prompt")));
    const cJSON *c;
    int n = 0;
    cJSON_ArrayForEach(c, cJSON_GetObjectItem(root, "cases")) {
        conv cv = base;
        add_messages(&cv, cJSON_GetObjectItem(c, "extra_conversation"));
        const char *name = cJSON_GetObjectItem(c, "name")->valuestring;
        char *out = apply(cJSON_GetObjectItem(c, "template")->valuestring, &cv, true);
        cr_assert_str_eq(out, cJSON_GetObjectItem(c, "expected_builtin")->valuestring, "%s", name);
        free(out);
        n++;
    }
    cr_assert_eq(n, 36);
    cJSON_Delete(root);
}

Test(chat_builtin, llama_cpp_vectors_by_name) {
    /* the format llama.cpp detects for these cases' templates, given by name */
    static const char *const by_name[][2] = {
        {"chatml", "teknium/OpenHermes-2.5-Mistral-7B"},
        {"llama3", "Llama-3"},
        {"gemma", "google/gemma-7b-it"},
        {"phi3", "Phi-3-mini"},
        {"mistral-v7", "mistralai/Mistral-Large-Instruct-2411 (mistralai 'v7' template)"},
        {"llama2", "mistralai/Mistral-7B-Instruct-v0.2 (NOTE: Old pre-v1 without a system prompt)"},
    };
    cJSON *root = load_golden();
    conv cv = {0};
    add_messages(&cv, cJSON_GetObjectItem(root, "conversation"));
    for (size_t i = 0; i < sizeof by_name / sizeof by_name[0]; i++) {
        char *out = apply(by_name[i][0], &cv, true);
        cr_assert_str_eq(out, cJSON_GetObjectItem(find_case(root, by_name[i][1]), "expected_builtin")->valuestring,
                         "%s", by_name[i][0]);
        free(out);
    }
    /* no template is ChatML, as llama_chat_apply_template's nullptr */
    const char *chatml = cJSON_GetObjectItem(find_case(root, by_name[0][1]), "expected_builtin")->valuestring;
    char *out = apply(NULL, &cv, true);
    cr_assert_str_eq(out, chatml);
    free(out);
    /* without the generation prompt: the text up to the assistant turn's opening */
    const char *gen = "<|im_start|>assistant\n";
    out = apply("chatml", &cv, false);
    cr_assert_eq(strlen(out) + strlen(gen), strlen(chatml));
    cr_assert(!strncmp(out, chatml, strlen(out)) && !strcmp(chatml + strlen(out), gen));
    free(out);
    cJSON_Delete(root);
}

Test(chat_builtin, buffer_as_strncpy) {
    const char *roles[] = {"user"}, *contents[] = {"Hello"};
    const char *want = "<|im_start|>user\nHello<|im_end|>\n<|im_start|>assistant\n";
    const int32_t len = (int32_t)strlen(want);
    char buf[128];
    memset(buf, 'x', sizeof buf);
    /* too short: the first 10 bytes, no NUL, nothing past them */
    cr_assert_eq(oxl_chat_builtin_apply("chatml", roles, contents, 1, true, buf, 10), len);
    cr_assert(!memcmp(buf, want, 10));
    cr_assert_eq(buf[10], 'x');
    /* exactly the length: no NUL either */
    cr_assert_eq(oxl_chat_builtin_apply("chatml", roles, contents, 1, true, buf, len), len);
    cr_assert(!memcmp(buf, want, (size_t)len));
    cr_assert_eq(buf[len], 'x');
    cr_assert_eq(oxl_chat_builtin_apply("chatml", roles, contents, 1, true, buf, (int32_t)sizeof buf), len);
    cr_assert_str_eq(buf, want);
    /* a NULL content is "" */
    const char *none[] = {NULL};
    const char *empty = "<|im_start|>user\n<|im_end|>\n";
    cr_assert_eq(oxl_chat_builtin_apply("chatml", roles, none, 1, false, buf, (int32_t)sizeof buf),
                 (int32_t)strlen(empty));
    cr_assert_str_eq(buf, empty);
    /* no messages */
    cr_assert_eq(oxl_chat_builtin_apply("chatml", NULL, NULL, 0, true, buf, (int32_t)sizeof buf),
                 (int32_t)strlen("<|im_start|>assistant\n"));
    cr_assert_str_eq(buf, "<|im_start|>assistant\n");
    cr_assert_eq(oxl_chat_builtin_apply("llama3", NULL, NULL, 0, false, buf, (int32_t)sizeof buf), 0);
    cr_assert_str_eq(buf, "");
}

Test(chat_builtin, errors) {
    const char *roles[] = {"user", NULL}, *contents[] = {"Hello", "x"};
    char buf[64];
    /* neither a name nor a template llama.cpp recognises: -1, as llama_chat_apply_template */
    cr_assert_eq(oxl_chat_builtin_apply("INVALID TEMPLATE", roles, contents, 1, true, buf, 64), -1);
    cr_assert_eq(oxl_chat_builtin_apply("{{ messages[0]['content'] }}", roles, contents, 1, true, buf, 64), -1);
    cr_assert_eq(oxl_chat_builtin_apply("", roles, contents, 1, true, buf, 64), -1);
    cr_assert_eq(oxl_chat_builtin_apply("chatml", roles, contents, -1, true, buf, 64), -2);
    cr_assert_eq(oxl_chat_builtin_apply("chatml", NULL, contents, 1, true, buf, 64), -2);
    cr_assert_eq(oxl_chat_builtin_apply("chatml", roles, NULL, 1, true, buf, 64), -2);
    cr_assert_eq(oxl_chat_builtin_apply("chatml", roles, contents, 2, true, buf, 64), -2); /* a NULL role */
    cr_assert_eq(oxl_chat_builtin_apply("chatml", roles, contents, 1, true, buf, -1), -2);
    cr_assert_eq(oxl_chat_builtin_apply("chatml", roles, contents, 1, true, NULL, 64), -2);
}

Test(chat_builtin, names) {
    const int32_t n = oxl_chat_builtin_templates(NULL, 0);
    /* llama.cpp d32676d names 54 formats; dots1, which it reaches only by detection, is named too */
    cr_assert_eq(n, 55);
    const char *names[64] = {0};
    cr_assert_eq(oxl_chat_builtin_templates(names, 64), n);
    cr_assert_str_eq(names[0], "chatml");
    cr_assert_null(names[n]);
    const char *first[2] = {0};
    cr_assert_eq(oxl_chat_builtin_templates(first, 1), n);
    cr_assert_str_eq(first[0], "chatml");
    cr_assert_null(first[1]);
    /* every name renders, and renders as itself (a name is never taken for a template text) */
    const char *roles[] = {"system", "user"}, *contents[] = {"s", "u"};
    for (int32_t i = 0; i < n; i++) {
        cr_assert_geq(oxl_chat_builtin_apply(names[i], roles, contents, 2, true, NULL, 0), 0, "%s", names[i]);
    }
}
