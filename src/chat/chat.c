/* Chat prompts: Jinja chat templates through src/chat/jinja.h, and llama.cpp's named built-in formats
 * through src/text/chat_builtin.h (which the subset build has too). */
#include "chat.h"
#include "chat_parse.h"

#include "errors.h"
#include "jinja.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* --- entry point ----------------------------------------------------------------------------- */
int oxl_chat_render(const char *template_src, const cJSON *messages, const cJSON *tools, bool add_generation_prompt,
                    const char *bos, const char *eos, char **out, oxl_error *err) {
    return oxl_chat_render_kw(template_src, messages, tools, add_generation_prompt, NULL, bos, eos, out, err);
}

/* Appends closer to *out (reallocated). */
static int append(char **out, const char *closer, oxl_error *err) {
    const size_t n = strlen(*out), k = strlen(closer);
    char *grown = realloc(*out, n + k + 1);
    if (!grown) {
        free(*out);
        *out = NULL;
        return oxl_err_set(err, "chat: out of memory");
    }
    memcpy(grown + n, closer, k + 1);
    *out = grown;
    return 0;
}

int oxl_chat_render_kw(const char *template_src, const cJSON *messages, const cJSON *tools, bool add_generation_prompt,
                       const cJSON *kwargs, const char *bos, const char *eos, char **out, oxl_error *err) {
    *out = NULL;
    if (kwargs && !cJSON_IsObject(kwargs)) {
        return oxl_err_set(err, "chat: chat_template_kwargs must be a JSON object");
    }
    if (!template_src) {
        return oxl_err_set(err, "chat: no template");
    }
    if (!cJSON_IsArray(messages)) {
        return oxl_err_set(err, "chat: messages must be a JSON array");
    }
    if (oxl_chat_is_builtin(template_src)) {
        size_t n = (size_t)cJSON_GetArraySize(messages), i = 0;
        const char **roles = calloc(n + 1, sizeof(char *)), **contents = calloc(n + 1, sizeof(char *));
        if (!roles || !contents) {
            free(roles);
            free(contents);
            return oxl_err_set(err, "chat: out of memory");
        }
        for (const cJSON *it = messages->child; it; it = it->next, i++) {
            const cJSON *role = cJSON_GetObjectItemCaseSensitive(it, "role");
            const cJSON *content = cJSON_GetObjectItemCaseSensitive(it, "content");
            if (!cJSON_IsString(role) || !(cJSON_IsString(content) || cJSON_IsNull(content) || !content)) {
                free(roles);
                free(contents);
                return oxl_err_set(err,
                                   "chat: message %zu needs a string role and a string content for the built-in "
                                   "format '%s'",
                                   i, template_src);
            }
            roles[i] = role->valuestring;
            contents[i] = cJSON_IsString(content) ? content->valuestring : "";
        }
        size_t len = 0;
        int rc = oxl_chat_builtin_render(template_src, roles, contents, n, add_generation_prompt, out, &len);
        free(roles);
        free(contents);
        return rc == 0 ? 0 : oxl_err_set(err, "chat: out of memory");
    }
    oxl_jinja_template *t = NULL;
    if (oxl_jinja_parse(template_src, strlen(template_src), &t, err) < 0) {
        return oxl_err_prefix(err, "chat template");
    }
    /* a prompt may fill a long context (a million tokens is a few MiB of text): the engine's limits
     * are raised from its defaults, still bounding what a hostile template can make */
    oxl_jinja_options opt = oxl_jinja_default_options();
    opt.max_output = 32u << 20;
    opt.max_memory = 256u << 20;
    /* the variables apply_chat_template passes; the JSON is borrowed, not copied */
    cJSON *ctx = cJSON_CreateObject();
    bool ok = ctx && cJSON_AddItemReferenceToObject(ctx, "messages", (cJSON *)messages) &&
              (!tools || cJSON_AddItemReferenceToObject(ctx, "tools", (cJSON *)tools)) &&
              cJSON_AddBoolToObject(ctx, "add_generation_prompt", add_generation_prompt) &&
              cJSON_AddStringToObject(ctx, "bos_token", bos ? bos : "") &&
              cJSON_AddStringToObject(ctx, "eos_token", eos ? eos : "");
    /* chat_template_kwargs: extra variables, replacing the standard ones of the same name (minja's
     * extra_context) */
    for (const cJSON *kw = kwargs ? kwargs->child : NULL; ok && kw; kw = kw->next) {
        cJSON_DeleteItemFromObjectCaseSensitive(ctx, kw->string);
        ok = cJSON_AddItemReferenceToObject(ctx, kw->string, (cJSON *)kw);
    }
    const cJSON *think = kwargs ? cJSON_GetObjectItemCaseSensitive(kwargs, "enable_thinking") : NULL;
    int rc = -1;
    if (!ok) {
        oxl_err_set(err, "chat: out of memory");
    } else if (oxl_jinja_render(t, ctx, &opt, out, NULL, err) == 0) {
        /* enable_thinking false and a template that opened a thought regardless: llama.cpp closes it */
        const char *closer = cJSON_IsFalse(think) ? oxl_chat_thought_closer(template_src, *out) : NULL;
        rc = closer ? append(out, closer, err) : 0;
    } else {
        oxl_err_prefix(err, "chat template");
    }
    cJSON_Delete(ctx);
    oxl_jinja_free(t);
    return rc;
}

/* A special token's text (empty when the model has none). */
static char *special_text(const oxl_model *model, oxl_token t) {
    char buf[256];
    int32_t n = t >= 0 ? oxl_token_to_piece(model, t, buf, (int32_t)sizeof buf - 1, true) : 0;
    n = n < 0 ? 0 : n;
    buf[n] = 0;
    return strdup(buf);
}

int oxl_chat_render_for_model(const oxl_model *model, const char *template_src, const cJSON *messages,
                              const cJSON *tools, bool add_generation_prompt, char **out, oxl_error *err) {
    return oxl_chat_render_for_model_kw(model, template_src, messages, tools, add_generation_prompt, NULL, out, err);
}

int oxl_chat_render_for_model_kw(const oxl_model *model, const char *template_src, const cJSON *messages,
                                 const cJSON *tools, bool add_generation_prompt, const cJSON *kwargs, char **out,
                                 oxl_error *err) {
    const char *tmpl = template_src ? template_src : oxl_model_chat_template(model);
    char *bos = special_text(model, oxl_token_bos(model));
    char *eos = special_text(model, oxl_token_eos(model));
    int rc = -1;
    if (bos && eos) {
        rc = oxl_chat_render_kw(tmpl ? tmpl : "chatml", messages, tools, add_generation_prompt, kwargs, bos, eos, out,
                                err);
        const size_t nb = strlen(bos);
        if (rc == 0 && nb > 0 && !strncmp(*out, bos, nb)) {
            memmove(*out, *out + nb, strlen(*out + nb) + 1);
        }
    } else {
        oxl_err_set(err, "out of memory");
    }
    free(bos);
    free(eos);
    return rc;
}

int oxl_chat_apply_template(const oxl_model *model, const char *tmpl, const char *messages_json, const char *tools_json,
                            bool add_generation_prompt, char **out, oxl_error *err) {
    return oxl_chat_apply_template_kw(model, tmpl, messages_json, tools_json, add_generation_prompt, NULL, out, err);
}

/* common_chat_templates_support_enable_thinking (common/chat.cpp): a user message "test" rendered
 * with the generation prompt, enable_thinking false and true, gives two different prompts. */
bool oxl_chat_supports_thinking(const oxl_model *model, const char *tmpl) {
    static const char msgs[] = "[{\"role\": \"user\", \"content\": \"test\"}]";
    char *off = NULL, *on = NULL;
    const bool yes =
        model &&
        oxl_chat_apply_template_kw(model, tmpl, msgs, NULL, true, "{\"enable_thinking\": false}", &off, NULL) == 0 &&
        oxl_chat_apply_template_kw(model, tmpl, msgs, NULL, true, "{\"enable_thinking\": true}", &on, NULL) == 0 &&
        strcmp(off, on) != 0;
    free(off);
    free(on);
    return yes;
}

int oxl_chat_apply_template_kw(const oxl_model *model, const char *tmpl, const char *messages_json,
                               const char *tools_json, bool add_generation_prompt, const char *kwargs_json, char **out,
                               oxl_error *err) {
    if (out) {
        *out = NULL;
    }
    if (!model || !messages_json || !out) {
        return oxl_err_set(err, "chat: model, messages and out are required");
    }
    cJSON *msgs = cJSON_Parse(messages_json);
    cJSON *tools = tools_json ? cJSON_Parse(tools_json) : NULL;
    cJSON *kwargs = kwargs_json ? cJSON_Parse(kwargs_json) : NULL;
    int rc = -1;
    if (!cJSON_IsArray(msgs)) {
        oxl_err_set(err, "chat: messages: not a JSON array");
    } else if (tools_json && !cJSON_IsArray(tools)) {
        oxl_err_set(err, "chat: tools: not a JSON array");
    } else if (kwargs_json && !cJSON_IsObject(kwargs)) {
        oxl_err_set(err, "chat: chat_template_kwargs: not a JSON object");
    } else {
        rc = oxl_chat_render_for_model_kw(model, tmpl, msgs, tools, add_generation_prompt, kwargs, out, err);
    }
    cJSON_Delete(msgs);
    cJSON_Delete(tools);
    cJSON_Delete(kwargs);
    return rc;
}
