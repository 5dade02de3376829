/* Golden check of chat templates: the chat-templates layout of golden/README.md. Every
 * <model>/template.jinja is rendered with every conversation of cases.json and compared byte for
 * byte with <model>/<case>.txt; where the reference raised (<case>.error) the engine must raise
 * the same exception with the same message, except that sandbox refusals (SecurityError) may
 * render instead. */
#include "golden_chat.h"

#include "errors.h"
#include "file.h"
#include "jinja.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int cmp_names(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

/* Up to 40 bytes of s from `at` with newlines, tabs and quotes escaped, for one-line reports. */
static void excerpt(const char *s, size_t n, size_t at, char out[200]) {
    size_t o = 0;
    for (size_t i = at; i < n && i < at + 40 && o + 3 < 200; i++) {
        char ch = s[i];
        const char *e = ch == '\n' ? "\\n" : ch == '\t' ? "\\t" : ch == '\r' ? "\\r" : ch == '"' ? "\\\"" : NULL;
        if (e) {
            out[o++] = e[0];
            out[o++] = e[1];
        } else {
            out[o++] = ch;
        }
    }
    out[o] = 0;
}

/* The offset of the first differing byte of two renderings. */
static size_t first_diff(const char *a, size_t na, const char *b, size_t nb) {
    size_t i = 0;
    while (i < na && i < nb && a[i] == b[i]) {
        i++;
    }
    return i;
}

static void check_case(const char *dir, const char *model, const oxl_jinja_template *t, const cJSON *c,
                       oxl_golden_report *r) {
    const cJSON *id = cJSON_GetObjectItemCaseSensitive(c, "id");
    const cJSON *context = cJSON_GetObjectItemCaseSensitive(c, "context");
    if (!cJSON_IsString(id) || !cJSON_IsObject(context)) {
        oxl_golden_line(r, false, "chat %s: a case of cases.json lacks \"id\" or \"context\"", model);
        return;
    }
    char path[4096];
    size_t exp_len = 0;
    snprintf(path, sizeof path, "%s/%s/%s.txt", dir, model, id->valuestring);
    char *expected = oxl_read_file(path, &exp_len, NULL);
    bool want_error = false;
    if (!expected) {
        snprintf(path, sizeof path, "%s/%s/%s.error", dir, model, id->valuestring);
        expected = oxl_read_file(path, &exp_len, NULL);
        want_error = true;
        if (!expected) {
            oxl_golden_line(r, false, "chat %s/%s: neither .txt nor .error exists", model, id->valuestring);
            return;
        }
        while (exp_len && (expected[exp_len - 1] == '\n' || expected[exp_len - 1] == '\r')) {
            expected[--exp_len] = 0;
        }
    }
    oxl_jinja_options opt = oxl_jinja_default_options();
    opt.fixed_time = true; /* the reference fixed the clock at 2026-01-15 12:00:00 */
    opt.now = (struct tm){.tm_year = 126, .tm_mon = 0, .tm_mday = 15, .tm_hour = 12, .tm_wday = 4, .tm_yday = 14};
    oxl_error err = {{0}};
    char *out = NULL;
    size_t out_len = 0;
    int rc = oxl_jinja_render(t, context, &opt, &out, &out_len, &err);
    if (want_error) {
        bool sandbox = !strncmp(expected, "SecurityError", 13);
        if (rc < 0) {
            /* our message is "template:L:C: <Class>: <text>", the reference's "<Class>: <text>" */
            const char *msg = strstr(err.msg, ": ");
            msg = msg ? msg + 2 : err.msg;
            oxl_golden_line(r, !strcmp(msg, expected), "chat %s/%s  raised %s (reference: %s)", model, id->valuestring,
                            err.msg, expected);
        } else {
            oxl_golden_line(r, sandbox, "chat %s/%s  rendered where the reference raised %s", model, id->valuestring,
                            expected);
        }
    } else if (rc < 0) {
        oxl_golden_line(r, false, "chat %s/%s  raised: %s", model, id->valuestring, err.msg);
    } else {
        bool same = out_len == exp_len && !memcmp(out, expected, exp_len);
        if (same) {
            oxl_golden_line(r, true, "chat %s/%s  %zu bytes identical", model, id->valuestring, out_len);
        } else {
            size_t at = first_diff(out, out_len, expected, exp_len);
            char got_s[200], exp_s[200];
            excerpt(out, out_len, at, got_s);
            excerpt(expected, exp_len, at, exp_s);
            oxl_golden_line(r, false,
                            "chat %s/%s  differs at byte %zu (got %zu bytes, expected %zu): got \"%s\" expected \"%s\"",
                            model, id->valuestring, at, out_len, exp_len, got_s, exp_s);
        }
    }
    free(out);
    free(expected);
}

int oxl_golden_chat_dir(const char *dir, oxl_golden_report *r, oxl_error *err) {
    char path[4096];
    size_t len = 0;
    snprintf(path, sizeof path, "%s/cases.json", dir);
    char *text = oxl_read_file(path, &len, NULL);
    if (!text) {
        return oxl_err_set(err, "%s: cannot read", path);
    }
    cJSON *cases = cJSON_ParseWithLength(text, len);
    free(text);
    if (!cJSON_IsArray(cases)) {
        cJSON_Delete(cases);
        return oxl_err_set(err, "%s: not a JSON array of cases", path);
    }
    DIR *d = opendir(dir);
    if (!d) {
        cJSON_Delete(cases);
        return oxl_err_set(err, "%s: cannot open the directory", dir);
    }
    char **models = NULL;
    size_t n_models = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.') {
            continue;
        }
        snprintf(path, sizeof path, "%s/%s/template.jinja", dir, e->d_name);
        FILE *f = fopen(path, "rb");
        if (!f) {
            continue;
        }
        fclose(f);
        char **p = realloc(models, (n_models + 1) * sizeof(char *));
        if (!p || !(p[n_models] = strdup(e->d_name))) {
            free(p ? p : models);
            closedir(d);
            cJSON_Delete(cases);
            return oxl_err_set(err, "out of memory listing %s", dir);
        }
        models = p;
        n_models++;
    }
    closedir(d);
    qsort(models, n_models, sizeof(char *), cmp_names);
    for (size_t m = 0; m < n_models; m++) {
        snprintf(path, sizeof path, "%s/%s/template.jinja", dir, models[m]);
        char *src = oxl_read_file(path, &len, NULL);
        oxl_jinja_template *t = NULL;
        oxl_error perr = {{0}};
        if (!src || oxl_jinja_parse(src, len, &t, &perr) < 0) {
            oxl_golden_line(r, false, "chat %s: template does not parse: %s", models[m], src ? perr.msg : "unreadable");
        } else {
            const cJSON *c;
            cJSON_ArrayForEach(c, cases) { check_case(dir, models[m], t, c, r); }
        }
        oxl_jinja_free(t);
        free(src);
        free(models[m]);
    }
    free(models);
    cJSON_Delete(cases);
    return 0;
}
