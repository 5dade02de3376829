/* libFuzzer harness for the chat-template engine (src/chat/jinja.h) and the chat renderer (src/chat/chat.h).
 *
 * Input layout: one selector byte s, then the payload.
 *   s even: the payload is a template. It is parsed and rendered against conversation (s >> 1) % 6
 *           of golden/chat-templates/cases.json (a full HuggingFace apply_chat_template context),
 *           and run through the built-in format detection.
 *   s odd:  the payload is JSON: a list of messages, or an object {messages, tools,
 *           add_generation_prompt}. It is rendered with real template (s >> 1) % n, where the n
 *           choices are the 65 templates of golden/chat-templates/<model>/template.jinja followed by
 *           the built-in formats of src/chat/chat.c, exactly as the server renders a request.
 * Both parts are copied into buffers of their exact size, so a read past either is caught.
 * Contracts checked: success gives a NUL-terminated string (of out_len bytes for oxl_jinja_render),
 * failure gives a non-empty message; the engine's bounds (steps, memory, output, depth) must end
 * hostile templates in errors, which -timeout and -rss_limit_mb in run.sh enforce. */
#include "chat.h"
#include "jinja.h"

#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CHECK(cond)                                                                                                    \
    do {                                                                                                               \
        if (!(cond)) {                                                                                                 \
            fprintf(stderr, "%s:%d: invariant failed: %s\n", __FILE__, __LINE__, #cond);                               \
            __builtin_trap();                                                                                          \
        }                                                                                                              \
    } while (0)

#define MAX_TEMPLATES 128

static cJSON *g_cases;                   /* cases.json: array of {id, context} */
static char *g_templates[MAX_TEMPLATES]; /* template sources, then built-in names (not owned) */
static int g_n_templates;
static oxl_jinja_options g_opt;

static char *slurp(const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *s = n >= 0 ? malloc((size_t)n + 1) : NULL;
    if (s && fread(s, 1, (size_t)n, f) != (size_t)n) {
        free(s);
        s = NULL;
    }
    if (s)
        s[n] = '\0';
    fclose(f);
    return s;
}

static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void)argc;
    (void)argv;
    const char *dir = OXL_SOURCE_DIR "/golden/chat-templates";
    char path[4096];
    snprintf(path, sizeof path, "%s/cases.json", dir);
    char *cases = slurp(path);
    g_cases = cases ? cJSON_Parse(cases) : NULL;
    free(cases);
    if (!cJSON_IsArray(g_cases) || cJSON_GetArraySize(g_cases) == 0) {
        fprintf(stderr, "fuzz_jinja: cannot read %s\n", path);
        return 1;
    }
    /* template directories in name order, so a selector byte means the same template everywhere */
    char *names[MAX_TEMPLATES];
    int n_names = 0;
    DIR *d = opendir(dir);
    for (struct dirent *e; d && (e = readdir(d)) && n_names < MAX_TEMPLATES;) {
        if (e->d_name[0] != '.')
            names[n_names++] = strdup(e->d_name);
    }
    if (d)
        closedir(d);
    qsort(names, (size_t)n_names, sizeof *names, cmp_str);
    for (int i = 0; i < n_names; i++) {
        snprintf(path, sizeof path, "%s/%s/template.jinja", dir, names[i]);
        char *src = slurp(path);
        if (src)
            g_templates[g_n_templates++] = src;
        free(names[i]);
    }
    for (size_t i = 0; oxl_chat_builtin_name(i) && g_n_templates < MAX_TEMPLATES; i++) {
        g_templates[g_n_templates++] = (char *)oxl_chat_builtin_name(i);
    }
    g_opt = oxl_jinja_default_options();
    g_opt.fixed_time = true;
    g_opt.now.tm_year = 126;
    g_opt.now.tm_mday = 30;
    g_opt.now.tm_mon = 10;
    return 0;
}

static void fuzz_template(uint8_t sel, const uint8_t *data, size_t len) {
    char *src = malloc(len ? len : 1);
    CHECK(src != NULL);
    memcpy(src, data, len);
    oxl_error err;
    err.msg[0] = '\0';
    oxl_jinja_template *t = NULL;
    if (oxl_jinja_parse(src, len, &t, &err) != 0) {
        CHECK(t == NULL && err.msg[0] != '\0');
    } else {
        const cJSON *c = cJSON_GetArrayItem(g_cases, (sel >> 1) % cJSON_GetArraySize(g_cases));
        char *out = NULL;
        size_t out_len = 0;
        err.msg[0] = '\0';
        if (oxl_jinja_render(t, cJSON_GetObjectItemCaseSensitive(c, "context"), &g_opt, &out, &out_len, &err) == 0) {
            CHECK(out != NULL && out[out_len] == '\0' && out_len <= g_opt.max_output);
        } else {
            CHECK(err.msg[0] != '\0');
        }
        free(out);
        oxl_jinja_free(t);
    }
    /* the detection reads a NUL-terminated text */
    char *z = malloc(len + 1);
    CHECK(z != NULL);
    memcpy(z, data, len);
    z[len] = '\0';
    const char *name = oxl_chat_detect(z);
    CHECK(name == NULL || oxl_chat_is_builtin(name));
    free(z);
    free(src);
}

static void fuzz_messages(uint8_t sel, const uint8_t *data, size_t len) {
    char *text = malloc(len ? len : 1);
    CHECK(text != NULL);
    memcpy(text, data, len);
    cJSON *j = cJSON_ParseWithLength(text, len);
    free(text);
    if (!j)
        return;
    const cJSON *messages = j, *tools = NULL;
    bool agp = true;
    if (cJSON_IsObject(j)) {
        messages = cJSON_GetObjectItemCaseSensitive(j, "messages");
        tools = cJSON_GetObjectItemCaseSensitive(j, "tools");
        const cJSON *a = cJSON_GetObjectItemCaseSensitive(j, "add_generation_prompt");
        if (cJSON_IsBool(a))
            agp = cJSON_IsTrue(a);
    }
    const char *tmpl = g_templates[(sel >> 1) % g_n_templates];
    char *out = NULL;
    oxl_error err;
    err.msg[0] = '\0';
    if (oxl_chat_render(tmpl, messages, tools, agp, "<s>", "</s>", &out, &err) == 0) {
        CHECK(out != NULL);
        (void)strlen(out);
    } else {
        CHECK(out == NULL && err.msg[0] != '\0');
    }
    free(out);
    cJSON_Delete(j);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 1)
        return 0;
    if (data[0] & 1) {
        fuzz_messages(data[0], data + 1, size - 1);
    } else {
        fuzz_template(data[0], data + 1, size - 1);
    }
    return 0;
}
