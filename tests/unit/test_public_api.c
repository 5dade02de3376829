/* The public entry points the HTTP server relies on (include/oxillama.h): chat-template rendering
 * for a model with messages as JSON text (checked against llama.cpp's tests/test-chat-template.cpp
 * vectors in golden/chat-builtin/) and GGUF metadata look-ups by key, with
 * llama_model_meta_val_str's conventions (absent and array keys give -1, snprintf's count). */
#include "oxillama.h"

#include <cjson/cJSON.h>
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static oxl_model *model;

static void setup(void) {
    oxl_error err = {{0}};
    oxl_model_params mp = oxl_model_default_params();
    model = oxl_model_load(OXL_SOURCE_DIR "/models/stories260K.gguf", &mp, &err);
    cr_assert(model, "%s", err.msg);
}

static void teardown(void) { oxl_model_free(model); }

static cJSON *golden_vectors(void) {
    FILE *f = fopen(OXL_SOURCE_DIR "/golden/chat-builtin/llama-cpp-test-chat-template.json", "rb");
    cr_assert(f);
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *buf = malloc((size_t)n + 1);
    cr_assert(buf && fread(buf, 1, (size_t)n, f) == (size_t)n);
    buf[n] = 0;
    fclose(f);
    cJSON *root = cJSON_Parse(buf);
    free(buf);
    cr_assert(root);
    return root;
}

/* stories260K has no tokenizer.chat_template, so NULL renders ChatML; "chatml" names it; both must
 * equal llama.cpp's rendering of the OpenHermes (ChatML) case. */
Test(public_api, chat_apply_template_chatml, .init = setup, .fini = teardown) {
    cr_assert_null(oxl_model_chat_template(model));
    cJSON *root = golden_vectors();
    const cJSON *c = cJSON_GetArrayItem(cJSON_GetObjectItem(root, "cases"), 0);
    cr_assert_str_eq(cJSON_GetObjectItem(c, "name")->valuestring, "teknium/OpenHermes-2.5-Mistral-7B");
    char *msgs = cJSON_PrintUnformatted(cJSON_GetObjectItem(root, "conversation"));
    const bool agp = cJSON_IsTrue(cJSON_GetObjectItem(root, "add_generation_prompt"));
    const char *tmpls[] = {NULL, "chatml"};
    for (int i = 0; i < 2; i++) {
        char *out = NULL;
        oxl_error err = {{0}};
        cr_assert_eq(oxl_chat_apply_template(model, tmpls[i], msgs, NULL, agp, &out, &err), 0, "%s", err.msg);
        cr_assert_str_eq(out, cJSON_GetObjectItem(c, "expected_builtin")->valuestring, "tmpl %s", tmpls[i]);
        free(out);
    }
    /* the case's own Jinja template text, rendered by the Jinja engine */
    char *out = NULL;
    oxl_error err = {{0}};
    cr_assert_eq(
        oxl_chat_apply_template(model, cJSON_GetObjectItem(c, "template")->valuestring, msgs, NULL, agp, &out, &err), 0,
        "%s", err.msg);
    cr_assert_str_eq(out, cJSON_GetObjectItem(c, "expected_jinja")->valuestring);
    free(out);
    free(msgs);
    cJSON_Delete(root);
}

Test(public_api, chat_apply_template_rejects_bad_json, .init = setup, .fini = teardown) {
    char *out = NULL;
    oxl_error err = {{0}};
    cr_assert_eq(oxl_chat_apply_template(model, NULL, "[{\"role\":", NULL, true, &out, &err), -1);
    cr_assert_null(out);
    cr_assert(strstr(err.msg, "messages"), "%s", err.msg);
    cr_assert_eq(oxl_chat_apply_template(model, NULL, "{\"role\":\"user\"}", NULL, true, &out, &err), -1);
    cr_assert_eq(oxl_chat_apply_template(model, NULL, "[]", "{}", true, &out, &err), -1);
    cr_assert(strstr(err.msg, "tools"), "%s", err.msg);
}

Test(public_api, meta_val_str, .init = setup, .fini = teardown) {
    char buf[64];
    cr_assert_eq(oxl_model_meta_val_str(model, "general.architecture", buf, sizeof buf), 5);
    cr_assert_str_eq(buf, "llama");
    /* snprintf's convention: the full length, the text cut to fit */
    cr_assert_eq(oxl_model_meta_val_str(model, "general.architecture", buf, 3), 5);
    cr_assert_str_eq(buf, "ll");
    cr_assert_eq(oxl_model_meta_val_str(model, "general.architecture", NULL, 0), 5);
    /* an integer key in decimal: the training context the model reports */
    char want[32];
    snprintf(want, sizeof want, "%d", (int)oxl_model_n_ctx_train(model));
    cr_assert_eq(oxl_model_meta_val_str(model, "llama.context_length", buf, sizeof buf), (int32_t)strlen(want));
    cr_assert_str_eq(buf, want);
    /* absent keys and array values (llama.cpp leaves arrays out of its metadata map) */
    strcpy(buf, "x");
    cr_assert_eq(oxl_model_meta_val_str(model, "no.such.key", buf, sizeof buf), -1);
    cr_assert_str_eq(buf, "");
    cr_assert_eq(oxl_model_meta_val_str(model, "tokenizer.ggml.tokens", buf, sizeof buf), -1);
    cr_assert_eq(oxl_model_meta_val_str(model, "tokenizer.ggml.fim_pre_token_id", NULL, 0), -1);
}
