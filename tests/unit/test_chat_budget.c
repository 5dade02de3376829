/* --reasoning-budget 0 renders the chat template as llama.cpp does: with enable_thinking false
 * (oxl_chat_render_kw's chat_template_kwargs), and, for a template that opens a thought regardless,
 * with the thought closed after the generation prompt (common/chat.cpp, e.g.
 * common_chat_params_init_deepseek_r1: `if (string_ends_with(data.prompt, "<think>\n")) { if
 * (!inputs.enable_thinking) data.prompt += "</think>"; ...}`).
 *
 * The expected texts are the golden renderings of golden/chat-templates (Python Jinja2 as
 * HuggingFace's apply_chat_template, without enable_thinking) plus what the budget changes, read
 * off the template text and llama.cpp's source as each test says: golden/chat-templates holds no
 * rendering with enable_thinking false. */
#include "chat.h"
#include "chat_parse.h"
#include "oxillama.h"

#include <cjson/cJSON.h>
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char *read_all(const char *path) {
    FILE *f = fopen(path, "rb");
    cr_assert(f, "cannot open %s", path);
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *buf = malloc((size_t)n + 1);
    cr_assert(buf && fread(buf, 1, (size_t)n, f) == (size_t)n);
    buf[n] = 0;
    fclose(f);
    return buf;
}

static char *golden(const char *model, const char *file) {
    char path[512];
    snprintf(path, sizeof path, OXL_SOURCE_DIR "/golden/chat-templates/%s/%s", model, file);
    return read_all(path);
}

/* cases.json's user_gen conversation (bos "<s>", eos "</s>") rendered with kwargs (JSON text or NULL). */
static char *render_user_gen(const char *tmpl, const char *kwargs_json) {
    cJSON *msgs = cJSON_Parse("[{\"role\": \"user\", \"content\": \"Hello!\"}]");
    cJSON *kw = kwargs_json ? cJSON_Parse(kwargs_json) : NULL;
    char *out = NULL;
    oxl_error err = {0};
    cr_assert_eq(oxl_chat_render_kw(tmpl, msgs, NULL, true, kw, "<s>", "</s>", &out, &err), 0, "%s", err.msg);
    cJSON_Delete(msgs);
    cJSON_Delete(kw);
    return out;
}

static char *concat(const char *a, const char *b) {
    char *s = malloc(strlen(a) + strlen(b) + 1);
    cr_assert(s);
    strcpy(s, a);
    strcat(s, b);
    return s;
}

/* Qwen3 honours the flag: its generation prompt is
 *   {{- '<|im_start|>assistant\n' }}
 *   {%- if enable_thinking is defined and enable_thinking is false %}{{- '<think>\n\n</think>\n\n' }}
 * so the prompt is the golden one plus "<think>\n\n</think>\n\n"; it then ends with "\n\n", not with
 * an opener, and llama.cpp's Hermes 2 Pro handler appends nothing more. */
Test(chat_budget, qwen3_enable_thinking_false) {
    char *tmpl = golden("Qwen-Qwen3-0.6B", "template.jinja"), *plain = golden("Qwen-Qwen3-0.6B", "user_gen.txt");
    char *want = concat(plain, "<think>\n\n</think>\n\n");
    char *got = render_user_gen(tmpl, "{\"enable_thinking\": false}");
    cr_assert_str_eq(got, want);
    free(got);
    /* without the flag, or with it true, the golden rendering itself */
    got = render_user_gen(tmpl, NULL);
    cr_assert_str_eq(got, plain);
    free(got);
    got = render_user_gen(tmpl, "{\"enable_thinking\": true}");
    cr_assert_str_eq(got, plain);
    free(got);
    free(want);
    free(plain);
    free(tmpl);
}

/* DeepSeek-R1-Distill-Llama-8B's template ignores the flag and always ends with
 * '<｜Assistant｜><think>\n'; llama.cpp's common_chat_params_init_deepseek_r1 then appends "</think>". */
Test(chat_budget, deepseek_r1_closes_the_thought) {
    const char *model = "deepseek-ai-DeepSeek-R1-Distill-Llama-8B";
    char *tmpl = golden(model, "template.jinja"), *plain = golden(model, "user_gen.txt");
    const size_t n = strlen(plain);
    cr_assert(n > 8 && !strcmp(plain + n - 8, "<think>\n"), "the golden prompt opens a thought");
    char *want = concat(plain, "</think>");
    char *got = render_user_gen(tmpl, "{\"enable_thinking\": false}");
    cr_assert_str_eq(got, want);
    free(got);
    got = render_user_gen(tmpl, NULL);
    cr_assert_str_eq(got, plain);
    free(got);
    free(want);
    free(plain);
    free(tmpl);
}

/* DeepSeek-R1-Distill-Qwen-32B's template (llama.cpp's models/templates copy) closes the thought
 * itself: '<｜Assistant｜><think>\n'{% if not enable_thinking %}'</think>'{% endif %}; its golden
 * rendering (enable_thinking undefined) already ends with "</think>", so with false the prompt is
 * the golden one and nothing is appended; with true the thought stays open. */
Test(chat_budget, deepseek_r1_qwen_closes_it_itself) {
    const char *model = "deepseek-ai-DeepSeek-R1-Distill-Qwen-32B";
    char *tmpl = golden(model, "template.jinja"), *plain = golden(model, "user_gen.txt");
    const size_t n = strlen(plain);
    cr_assert(n > 16 && !strcmp(plain + n - 16, "<think>\n</think>"));
    char *got = render_user_gen(tmpl, "{\"enable_thinking\": false}");
    cr_assert_str_eq(got, plain);
    free(got);
    plain[n - 8] = 0;
    got = render_user_gen(tmpl, "{\"enable_thinking\": true}");
    cr_assert_str_eq(got, plain);
    free(got);
    free(plain);
    free(tmpl);
}

/* The closers of common/chat.cpp's handlers: "<think>\n" and DeepSeek V3.1's "<think>" get
 * "</think>", Command R7B's "<|START_THINKING|>" gets "<|END_THINKING|>" and its bare
 * "<|CHATBOT_TOKEN|>" an empty thought; a prompt that opens nothing gets nothing. */
Test(chat_budget, thought_closers) {
    char *r1 = golden("deepseek-ai-DeepSeek-R1-Distill-Llama-8B", "template.jinja");
    char *v31 = golden("deepseek-ai-DeepSeek-V3.1", "template.jinja");
    char *r7b = golden("CohereForAI-c4ai-command-r7b-12-2024-tool_use", "template.jinja");
    cr_assert_str_eq(oxl_chat_thought_closer(r1, "x<think>\n"), "</think>");
    cr_assert_str_eq(oxl_chat_thought_closer(v31, "x<think>"), "</think>");
    cr_assert_str_eq(oxl_chat_thought_closer(r7b, "x<|START_THINKING|>"), "<|END_THINKING|>");
    cr_assert_str_eq(oxl_chat_thought_closer(r7b, "x<|CHATBOT_TOKEN|>"), "<|START_THINKING|><|END_THINKING|>");
    cr_assert_null(oxl_chat_thought_closer(r1, "x<think>\n</think>"));
    cr_assert_null(oxl_chat_thought_closer(r1, "x"));
    cr_assert_null(oxl_chat_thought_closer(NULL, "x<think>\n"), "a template without thoughts");
    free(r1);
    free(v31);
    free(r7b);
}

/* chat_template_kwargs are template variables, replacing the standard ones of the same name. */
Test(chat_budget, kwargs_are_variables) {
    char *got = render_user_gen("{{ greeting }} {{ bos_token }}{{ messages[0].content }}",
                                "{\"greeting\": \"hi\", \"bos_token\": \"[B]\"}");
    cr_assert_str_eq(got, "hi [B]Hello!");
    free(got);
    cJSON *msgs = cJSON_Parse("[]"), *bad = cJSON_CreateArray();
    char *out = NULL;
    oxl_error err = {0};
    cr_assert_eq(oxl_chat_render_kw("x", msgs, NULL, true, bad, NULL, NULL, &out, &err), -1);
    cr_assert(strstr(err.msg, "chat_template_kwargs"), "%s", err.msg);
    cr_assert_null(out);
    cJSON_Delete(msgs);
    cJSON_Delete(bad);
}

/* common_chat_templates_support_enable_thinking: Qwen3 (the flag adds an empty thought) and
 * DeepSeek-R1-Distill-Llama-8B (the closer llama.cpp appends) react to enable_thinking; Qwen2.5 and a
 * built-in format do not. */
Test(chat_budget, supports_thinking) {
    oxl_model_params mp = oxl_model_default_params();
    oxl_error err = {0};
    oxl_model *model = oxl_model_load(OXL_SOURCE_DIR "/models/stories260K.gguf", &mp, &err);
    cr_assert(model, "%s", err.msg);
    static const struct {
        const char *model;
        bool yes;
    } cases[] = {{"Qwen-Qwen3-0.6B", true},
                 {"deepseek-ai-DeepSeek-R1-Distill-Llama-8B", true},
                 {"deepseek-ai-DeepSeek-R1-Distill-Qwen-32B", true},
                 {"Qwen-Qwen2.5-7B-Instruct", false}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char *tmpl = golden(cases[i].model, "template.jinja");
        cr_assert_eq(oxl_chat_supports_thinking(model, tmpl), cases[i].yes, "%s", cases[i].model);
        free(tmpl);
    }
    cr_assert_not(oxl_chat_supports_thinking(model, "chatml"));
    cr_assert_not(oxl_chat_supports_thinking(NULL, "chatml"));
    oxl_model_free(model);
}
