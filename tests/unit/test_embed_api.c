/* The public API for embedding programs (include/oxillama.h): the log receiver and level
 * (oxl_log_set, oxl_log_set_level), the load-progress callback of oxl_model_params, the metadata
 * getters by index (against llama.cpp's own listing of the file's keys, golden/meta/) and chat
 * rendering with a model's own template and with a named built-in one. */
#include "gguf.h"
#include "log.h"
#include "oxillama.h"

#include <cjson/cJSON.h>
#include <criterion/criterion.h>
#include <linux/capability.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#define STORIES OXL_SOURCE_DIR "/models/stories260K.gguf"

static char *slurp(const char *path, size_t *size) {
    FILE *f = fopen(path, "rb");
    cr_assert(f, "%s", path);
    fseek(f, 0, SEEK_END);
    const long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *buf = malloc((size_t)n + 1);
    cr_assert(buf && fread(buf, 1, (size_t)n, f) == (size_t)n);
    buf[n] = 0;
    fclose(f);
    if (size) {
        *size = (size_t)n;
    }
    return buf;
}

/* ---- log ------------------------------------------------------------------------------------ */

typedef struct got_log {
    int n;
    oxl_log_level level[16];
    char text[16][600];
} got_log;

static void collect(oxl_log_level level, const char *text, void *user) {
    got_log *g = user;
    if (g->n < 16) {
        g->level[g->n] = level;
        snprintf(g->text[g->n], sizeof g->text[0], "%s", text);
    }
    g->n++;
}

/* stderr goes to a temporary file until stderr_text() gives back what was written there. */
static int saved_stderr = -1;
static FILE *stderr_file;

static void capture_stderr(void) {
    fflush(stderr);
    stderr_file = tmpfile();
    cr_assert(stderr_file);
    saved_stderr = dup(2);
    cr_assert(saved_stderr >= 0 && dup2(fileno(stderr_file), 2) == 2);
}

static long stderr_bytes(void) {
    fflush(stderr);
    dup2(saved_stderr, 2);
    close(saved_stderr);
    const long n = ftell(stderr_file);
    fclose(stderr_file);
    return n;
}

/* Makes --mlock fail in this process (Criterion runs each test in its own): no locked-memory
 * allowance and, for root, no CAP_IPC_LOCK. Checked with a page of our own. */
static void forbid_mlock(void) {
#if defined(__SANITIZE_ADDRESS__)
    /* AddressSanitizer replaces mlock with a no-op that succeeds: the warning cannot be provoked */
    cr_skip_test("AddressSanitizer build: mlock always succeeds");
#endif
    const struct rlimit zero = {0, 0};
    cr_assert_eq(setrlimit(RLIMIT_MEMLOCK, &zero), 0);
    struct __user_cap_header_struct h = {_LINUX_CAPABILITY_VERSION_3, 0};
    struct __user_cap_data_struct d[2];
    if (syscall(SYS_capget, &h, d) == 0 && (d[0].effective & (1u << CAP_IPC_LOCK))) {
        d[0].effective &= ~(1u << CAP_IPC_LOCK);
        cr_assert_eq(syscall(SYS_capset, &h, d), 0);
    }
    static char page[4096] __attribute__((aligned(4096)));
    cr_assert_neq(mlock(page, sizeof page), 0, "mlock still allowed: the warning cannot be provoked");
}

static oxl_model *load_mlocked(void) {
    oxl_error err = {{0}};
    oxl_model_params mp = oxl_model_default_params();
    mp.use_mlock = true;
    oxl_model *m = oxl_model_load(STORIES, &mp, &err);
    cr_assert(m, "%s", err.msg); /* a failed --mlock does not fail the load */
    return m;
}

/* The library's warning about --mlock reaches the callback, whole, at WARN, and not stderr. */
Test(embed_api, log_callback_gets_the_mlock_warning) {
    forbid_mlock();
    got_log g = {0};
    oxl_log_set(collect, &g);
    capture_stderr();
    oxl_model_free(load_mlocked());
    const long on_stderr = stderr_bytes();
    oxl_log_set(NULL, NULL);
    cr_assert_eq(on_stderr, 0, "%ld bytes reached stderr with a callback set", on_stderr);
    cr_assert_geq(g.n, 1);
    cr_assert_eq(g.level[0], OXL_LOG_LEVEL_WARN);
    const char *want = "warning: " STORIES ": cannot lock ";
    cr_assert_eq(strncmp(g.text[0], want, strlen(want)), 0, "%s", g.text[0]);
    cr_assert(strstr(g.text[0], "(--mlock)") && g.text[0][strlen(g.text[0]) - 1] == '\n', "%s", g.text[0]);
}

/* Without a callback (and after oxl_log_set(NULL, ...)) the same text goes to stderr. */
Test(embed_api, log_default_is_stderr) {
    forbid_mlock();
    got_log g = {0};
    oxl_log_set(collect, &g);
    oxl_log_set(NULL, NULL);
    capture_stderr();
    oxl_model_free(load_mlocked());
    const long on_stderr = stderr_bytes();
    cr_assert_eq(g.n, 0);
    cr_assert_gt(on_stderr, (long)strlen("warning: " STORIES ": cannot lock "));
}

/* Below the minimum level nothing arrives, at or above it everything, in order and with its level;
 * a message longer than the logger's small buffer arrives whole. */
Test(embed_api, log_level_filters) {
    got_log g = {0};
    oxl_log_set(collect, &g);
    oxl_log_set_level(OXL_LOG_LEVEL_WARN);
    oxl_log_msg(OXL_LOG_LEVEL_DEBUG, "d\n");
    oxl_log_msg(OXL_LOG_LEVEL_INFO, "i\n");
    oxl_log_msg(OXL_LOG_LEVEL_WARN, "w %d\n", 3);
    oxl_log_msg(OXL_LOG_LEVEL_ERROR, "e %s\n", "x");
    cr_assert_eq(g.n, 2);
    cr_assert_eq(g.level[0], OXL_LOG_LEVEL_WARN);
    cr_assert_str_eq(g.text[0], "w 3\n");
    cr_assert_eq(g.level[1], OXL_LOG_LEVEL_ERROR);
    cr_assert_str_eq(g.text[1], "e x\n");
    oxl_log_set_level(OXL_LOG_LEVEL_DEBUG);
    char long_text[580];
    memset(long_text, 'a', sizeof long_text - 1);
    long_text[sizeof long_text - 1] = 0;
    oxl_log_msg(OXL_LOG_LEVEL_DEBUG, "%s\n", long_text);
    cr_assert_eq(g.n, 3);
    cr_assert_eq(g.level[2], OXL_LOG_LEVEL_DEBUG);
    cr_assert_eq(strlen(g.text[2]), sizeof long_text);
    /* the default minimum, INFO, drops debug messages */
    oxl_log_set_level(OXL_LOG_LEVEL_INFO);
    oxl_log_msg(OXL_LOG_LEVEL_DEBUG, "d\n");
    oxl_log_msg(OXL_LOG_LEVEL_INFO, "i\n");
    cr_assert_eq(g.n, 4);
    cr_assert_str_eq(g.text[3], "i\n");
    oxl_log_set(NULL, NULL);
}

/* The library's real warning is filtered too: at ERROR the --mlock warning is dropped. */
Test(embed_api, log_level_drops_the_mlock_warning) {
    forbid_mlock();
    got_log g = {0};
    oxl_log_set(collect, &g);
    oxl_log_set_level(OXL_LOG_LEVEL_ERROR);
    oxl_model_free(load_mlocked());
    cr_assert_eq(g.n, 0);
    oxl_log_set_level(OXL_LOG_LEVEL_WARN);
    oxl_model_free(load_mlocked());
    cr_assert_geq(g.n, 1);
    oxl_log_set(NULL, NULL);
}

/* ---- load progress -------------------------------------------------------------------------- */

typedef struct got_progress {
    int n;
    float v[4096];
    float cancel_at; /* > 1: never cancels */
} got_progress;

static bool record(float progress, void *user) {
    got_progress *g = user;
    if (g->n < 4096) {
        g->v[g->n] = progress;
    }
    g->n++;
    return progress < g->cancel_at;
}

static void check_progress(const got_progress *g) {
    cr_assert_gt(g->n, 2, "only %d calls", g->n);
    cr_assert_leq(g->n, 4096);
    cr_assert_geq(g->v[0], 0.0f);
    for (int i = 1; i < g->n; i++) {
        cr_assert_geq(g->v[i], g->v[i - 1], "call %d: %g after %g", i, (double)g->v[i], (double)g->v[i - 1]);
    }
    for (int i = 0; i + 1 < g->n; i++) {
        cr_assert_lt(g->v[i], 1.0f, "call %d of %d is already %g", i, g->n, (double)g->v[i]);
    }
    cr_assert_eq(g->v[g->n - 1], 1.0f);
}

/* mmap (one call per tensor) and --no-mmap (the file read in steps), each with and without repacking */
Test(embed_api, load_progress_is_monotonic_and_ends_at_one) {
    for (int mode = 0; mode < 4; mode++) {
        got_progress g = {.cancel_at = 2.0f};
        oxl_error err = {{0}};
        oxl_model_params mp = oxl_model_default_params();
        mp.use_mmap = mode & 1;
        mp.repack = mode & 2;
        mp.progress_callback = record;
        mp.progress_callback_user_data = &g;
        oxl_model *m = oxl_model_load(OXL_SOURCE_DIR "/models/stories260K-Q4_0.gguf", &mp, &err);
        cr_assert(m, "%s", err.msg);
        check_progress(&g);
        oxl_model_free(m);
    }
}

/* Returning false at the first value >= 0.5 stops the load there: NULL, the error, no more calls. */
Test(embed_api, load_cancelled_at_half) {
    for (int mmap_mode = 0; mmap_mode < 2; mmap_mode++) {
        got_progress g = {.cancel_at = 0.5f};
        oxl_error err = {{0}};
        oxl_model_params mp = oxl_model_default_params();
        mp.use_mmap = mmap_mode;
        mp.progress_callback = record;
        mp.progress_callback_user_data = &g;
        cr_assert_null(oxl_model_load(STORIES, &mp, &err));
        cr_assert_str_eq(err.msg, STORIES ": load cancelled by the progress callback");
        cr_assert_geq(g.n, 2);
        cr_assert_geq(g.v[g.n - 1], 0.5f);
        cr_assert_lt(g.v[g.n - 1], 1.0f, "the cancel came only at the end");
        cr_assert_lt(g.v[g.n - 2], 0.5f);
    }
    /* false as the answer to 1.0 cancels as well */
    got_progress g = {.cancel_at = 1.0f};
    oxl_error err = {{0}};
    oxl_model_params mp = oxl_model_default_params();
    mp.progress_callback = record;
    mp.progress_callback_user_data = &g;
    cr_assert_null(oxl_model_load(STORIES, &mp, &err));
    cr_assert_eq(g.v[g.n - 1], 1.0f);
    cr_assert(strstr(err.msg, "load cancelled by the progress callback"), "%s", err.msg);
}

/* ---- metadata ------------------------------------------------------------------------------- */

/* golden/meta/stories260K.kv is llama.cpp's listing of the file's keys at load
 * ("- kv N: KEY TYPE = VALUE"); its non-array keys, in that (the file's) order, with their values
 * (none is long enough for llama.cpp to cut it there), are what the getters must give. */
Test(embed_api, meta_by_index_equals_llama_cpp_listing) {
    char *golden = slurp(OXL_SOURCE_DIR "/golden/meta/stories260K.kv", NULL);
    oxl_error err = {{0}};
    oxl_model *m = oxl_model_load(STORIES, NULL, &err);
    cr_assert(m, "%s", err.msg);
    int n_listed = 0, n_scalar = 0;
    for (char *line = strtok(golden, "\n"); line; line = strtok(NULL, "\n")) {
        char key[128], type[64];
        const char *eq = strstr(line, " = ");
        cr_assert(eq && sscanf(line, "llama_model_loader: - kv %*d: %127s %63s", key, type) == 2, "%s", line);
        n_listed++;
        if (strncmp(type, "arr[", 4) == 0) {
            continue;
        }
        const char *want = eq + 3;
        char buf[256];
        cr_assert_eq(oxl_model_meta_key_by_index(m, n_scalar, buf, sizeof buf), (int32_t)strlen(key));
        cr_assert_str_eq(buf, key, "index %d", n_scalar);
        cr_assert_eq(oxl_model_meta_val_str_by_index(m, n_scalar, buf, sizeof buf), (int32_t)strlen(want), "%s", key);
        cr_assert_str_eq(buf, want, "%s", key);
        n_scalar++;
    }
    cr_assert_eq(n_listed, 19);
    cr_assert_eq(n_scalar, 16);
    cr_assert_eq(oxl_model_meta_count(m), n_scalar);
    /* the file read by the project's GGUF reader has as many keys, arrays included */
    oxl_gguf *g = oxl_gguf_open(STORIES, &err);
    cr_assert(g, "%s", err.msg);
    cr_assert_eq(oxl_gguf_n_kv(g), n_listed);
    oxl_gguf_close(g);
    /* snprintf's conventions and out-of-range indices */
    char buf[8] = "x";
    cr_assert_eq(oxl_model_meta_key_by_index(m, 8, buf, 4), (int32_t)strlen("llama.context_length"));
    cr_assert_str_eq(buf, "lla");
    cr_assert_eq(oxl_model_meta_val_str_by_index(m, 0, NULL, 0), (int32_t)strlen("llama"));
    strcpy(buf, "x");
    cr_assert_eq(oxl_model_meta_key_by_index(m, n_scalar, buf, sizeof buf), -1);
    cr_assert_str_eq(buf, "");
    strcpy(buf, "x");
    cr_assert_eq(oxl_model_meta_val_str_by_index(m, -1, buf, sizeof buf), -1);
    cr_assert_str_eq(buf, "");
    cr_assert_eq(oxl_model_meta_key_by_index(m, INT32_MAX, NULL, 0), -1);
    oxl_model_free(m);
    free(golden);
}

/* ---- chat templates ------------------------------------------------------------------------- */

/* stories260K.gguf with one more key, tokenizer.chat_template = tmpl: the header's key count + 1,
 * the key appended after the others, the tensor infos and the data section as they were (the
 * infos' end found from their sizes: name, n_dims, dims, type, offset). */
static void write_with_template(const char *tmpl, const char *path) {
    size_t size;
    char *in = slurp(STORIES, &size);
    oxl_error err = {{0}};
    oxl_gguf *g = oxl_gguf_open(STORIES, &err);
    cr_assert(g, "%s", err.msg);
    size_t infos = 0;
    for (int64_t i = 0; i < oxl_gguf_n_tensors(g); i++) {
        const oxl_gguf_tensor *t = oxl_gguf_tensor_at(g, i);
        infos += 8 + strlen(t->name) + 4 + 8 * (size_t)t->n_dims + 4 + 8;
    }
    const size_t data = oxl_gguf_data_offset(g), align = oxl_gguf_alignment(g);
    const char *first = oxl_gguf_tensor_at(g, 0)->name;
    size_t infos_end = 0;
    for (size_t e = data; e + align > data && e >= infos && !infos_end; e--) {
        uint64_t len;
        memcpy(&len, in + e - infos, 8);
        if (len == strlen(first) && memcmp(in + e - infos + 8, first, len) == 0) {
            infos_end = e;
        }
    }
    cr_assert(infos_end, "tensor infos not found");
    const size_t kv_end = infos_end - infos;
    uint64_t n_kv;
    memcpy(&n_kv, in + 16, 8);
    n_kv++;
    FILE *f = fopen(path, "wb");
    cr_assert(f);
    const uint64_t klen = strlen("tokenizer.chat_template"), vlen = strlen(tmpl);
    const uint32_t vtype = 8; /* GGUF_TYPE_STRING */
    fwrite(in, 1, 16, f);
    fwrite(&n_kv, 8, 1, f);
    fwrite(in + 24, 1, kv_end - 24, f);
    fwrite(&klen, 8, 1, f);
    fwrite("tokenizer.chat_template", 1, klen, f);
    fwrite(&vtype, 4, 1, f);
    fwrite(&vlen, 8, 1, f);
    fwrite(tmpl, 1, vlen, f);
    fwrite(in + kv_end, 1, infos, f);
    for (long pos = ftell(f); pos % (long)align; pos++) {
        fputc(0, f);
    }
    fwrite(in + data, 1, size - data, f);
    cr_assert_eq(fclose(f), 0);
    oxl_gguf_close(g);
    free(in);
}

/* A model whose file carries Gemma 2's template: NULL renders that template as Python Jinja2 does
 * (golden/chat-templates, the BOS text dropped as documented); "gemma" renders llama.cpp's built-in
 * Gemma format instead of the model's own (golden/chat-builtin, llama.cpp's test vectors). */
Test(embed_api, chat_template_of_the_model_and_built_in) {
    char *tmpl = slurp(OXL_SOURCE_DIR "/golden/chat-templates/google-gemma-2-2b-it/template.jinja", NULL);
    char path[] = "/tmp/oxl-embed-api-XXXXXX";
    const int fd = mkstemp(path);
    cr_assert(fd >= 0);
    close(fd);
    write_with_template(tmpl, path);
    oxl_error err = {{0}};
    oxl_model *m = oxl_model_load(path, NULL, &err);
    unlink(path);
    cr_assert(m, "%s", err.msg);
    cr_assert_str_eq(oxl_model_chat_template(m), tmpl);

    char *out = NULL;
    cr_assert_eq(
        oxl_chat_apply_template(m, NULL, "[{\"role\":\"user\",\"content\":\"Hello!\"}]", NULL, true, &out, &err), 0,
        "%s", err.msg);
    char *want = slurp(OXL_SOURCE_DIR "/golden/chat-templates/google-gemma-2-2b-it/user_gen.txt", NULL);
    cr_assert_eq(strncmp(want, "<s>", 3), 0);
    cr_assert_str_eq(out, want + 3);
    free(out);
    free(want);

    char *js = slurp(OXL_SOURCE_DIR "/golden/chat-builtin/llama-cpp-test-chat-template.json", NULL);
    cJSON *root = cJSON_Parse(js);
    cr_assert(root);
    const cJSON *c = NULL;
    cJSON_ArrayForEach(c, cJSON_GetObjectItem(root, "cases")) {
        if (strcmp(cJSON_GetObjectItem(c, "name")->valuestring, "google/gemma-7b-it") == 0) {
            break;
        }
    }
    cr_assert(c);
    char *msgs = cJSON_PrintUnformatted(cJSON_GetObjectItem(root, "conversation"));
    const bool agp = cJSON_IsTrue(cJSON_GetObjectItem(root, "add_generation_prompt"));
    cr_assert_eq(oxl_chat_apply_template(m, "gemma", msgs, NULL, agp, &out, &err), 0, "%s", err.msg);
    cr_assert_str_eq(out, cJSON_GetObjectItem(c, "expected_builtin")->valuestring);
    free(out);
    free(msgs);
    cJSON_Delete(root);
    free(js);
    free(tmpl);
    /* on failure *out is NULL, whatever it held */
    out = (char *)"stale";
    cr_assert_eq(oxl_chat_apply_template(m, NULL, "[{\"role\":", NULL, true, &out, &err), -1);
    cr_assert_null(out);
    out = (char *)"stale";
    cr_assert_eq(oxl_chat_apply_template(m, "{% if %}", "[]", NULL, true, &out, &err), -1);
    cr_assert_null(out);
    oxl_model_free(m);
}
