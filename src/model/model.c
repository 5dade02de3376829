/* Model loading and the model-level public API (include/oxillama.h). */
#include "model.h"

#include "arch_iface.h"
#include "gguf_split.h"
#include "errors.h"
#include "log.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#if !defined(__wasi__)
#include <sys/mman.h>
#endif

oxl_model_params oxl_model_default_params(void) {
    return (oxl_model_params){.use_mmap = true, .use_mlock = false, .repack = true, .main_gpu = -1};
}

oxl_model *oxl_model_from_gguf(oxl_gguf *g, oxl_error *err) {
    const char *path = oxl_gguf_path(g);
    const char *arch_name = NULL;
    int r = oxl_gguf_get_str(g, "general.architecture", &arch_name, err);
    if (r <= 0) {
        if (r == 0) {
            oxl_err_set(err, "%s: missing key 'general.architecture'", path);
        }
        oxl_gguf_close(g);
        return NULL;
    }
    const oxl_arch *arch = oxl_arch_find(arch_name);
    if (!arch) {
        oxl_err_set(err, "%s: unknown architecture '%s' (general.architecture); supported: %s", path, arch_name,
                    oxl_arch_names());
        oxl_gguf_close(g);
        return NULL;
    }
    oxl_model *m = calloc(1, sizeof *m);
    if (!m) {
        oxl_err_set(err, "%s: out of memory", path);
        oxl_gguf_close(g);
        return NULL;
    }
    m->gguf = g;
    m->arch = arch;
    m->vocab = oxl_vocab_load(g, err);
    if (!m->vocab) {
        oxl_model_free(m);
        return NULL;
    }
    m->hp.n_vocab = oxl_vocab_n_tokens(m->vocab);
    if (arch->load(m, err) != 0) {
        oxl_model_free(m);
        return NULL;
    }
    for (int64_t i = 0; i < oxl_gguf_n_tensors(g); i++) {
        const oxl_gguf_tensor *t = oxl_gguf_tensor_at(g, i);
        if (t->nbytes > 0) { /* an empty tensor may claim any other dimensions: their product can overflow */
            m->n_params += t->ne[0] * t->ne[1] * t->ne[2] * t->ne[3];
        }
        m->n_bytes += t->nbytes;
    }
    snprintf(m->desc, sizeof m->desc, "%s %.2fM params, %d layers, n_embd %d", arch->name, (double)m->n_params / 1e6,
             m->hp.n_layer, m->hp.n_embd);
    return m;
}

/* The load-progress callback of p (oxl_model_params.progress_callback) told `progress`; false when
 * it cancels the load, with err set. */
static bool report_progress(const oxl_model_params *p, float progress, const char *path, oxl_error *err) {
    if (p->progress_callback && !p->progress_callback(progress, p->progress_callback_user_data)) {
        oxl_err_set(err, "%s: load cancelled by the progress callback", path);
        return false;
    }
    return true;
}

/* done / total as a progress value below 1.0 (a float rounds a share within 6e-8 of 1 up to 1.0,
 * which only the final report may be). */
static float share_before_end(double done, double total) {
    const float f = total > 0 ? (float)(done / total) : 0.0f;
    return f < 0x1.fffffep-1f ? f : 0x1.fffffep-1f;
}

/* llama.cpp's --no-mmap (llama_model_loader with use_mmap false): the whole file read into one
 * page-aligned buffer that the model owns, in 64 steps (of 64 KiB at least) with the share read
 * before each reported to p's progress callback. *size is the file's size. */
static void *read_file(const char *path, const oxl_model_params *p, size_t *size, oxl_error *err) {
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        oxl_err_set(err, "%s: cannot open: %s", path, strerror(errno));
        return NULL;
    }
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || (uint64_t)st.st_size > SIZE_MAX / 2) {
        oxl_err_set(err, "%s: not a regular file of a size that fits in memory", path);
        close(fd);
        return NULL;
    }
    *size = (size_t)st.st_size;
    void *buf = NULL;
    if (posix_memalign(&buf, 4096, *size > 0 ? *size : 1) != 0) {
        oxl_err_set(err, "%s: out of memory reading %zu bytes (--no-mmap)", path, *size);
        close(fd);
        return NULL;
    }
    const size_t step = *size / 64 > ((size_t)64 << 10) ? *size / 64 : (size_t)64 << 10;
    for (size_t done = 0; done < *size;) {
        if (!report_progress(p, share_before_end((double)done, (double)*size), path, err)) {
            free(buf);
            close(fd);
            return NULL;
        }
        ssize_t n = read(fd, (char *)buf + done, *size - done < step ? *size - done : step);
        if (n <= 0) {
            oxl_err_set(err, "%s: read failed at byte %zu: %s", path, done, n < 0 ? strerror(errno) : "end of file");
            free(buf);
            close(fd);
            return NULL;
        }
        done += (size_t)n;
    }
    close(fd);
    return buf;
}

/* llama.cpp's --mlock (llama_mlock): locks the pages of the tensor data (mapped or read) in RAM.
 * Failing is not fatal there either: the message says why and the model stays usable. */
static void lock_range(const oxl_model *m, const void *p, size_t len) {
#if !defined(__wasi__)
    const uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
    const uintptr_t lo = (uintptr_t)p & ~(page - 1);
    if (len > 0 && mlock((const void *)lo, len + ((uintptr_t)p - lo)) != 0) {
        oxl_log_msg(OXL_LOG_LEVEL_WARN,
                    "warning: %s: cannot lock %zu bytes in RAM (--mlock): %s; raise RLIMIT_MEMLOCK (ulimit -l)\n",
                    oxl_gguf_path(m->gguf), len, strerror(errno));
    }
#else
    (void)m, (void)p, (void)len;
#endif
}

static void lock_tensor_data(const oxl_model *m) {
    const oxl_gguf *g = m->gguf;
    if (oxl_gguf_n_tensors(g) == 0) {
        return;
    }
    const oxl_gguf_tensor *t0 = oxl_gguf_tensor_at(g, 0);
    if (!t0->data) {
        return;
    }
    if (m->n_evicted == 0 && oxl_gguf_n_parts(g) == 1) {
        const uintptr_t data = (uintptr_t)t0->data - (uintptr_t)t0->offset; /* start of the data section */
        lock_range(m, (const void *)data, oxl_gguf_file_size(g) - oxl_gguf_data_offset(g));
        return;
    }
    /* repacked or split: the tensors still used in the files' layout, and the repacked copies */
    for (int64_t i = 0; i < oxl_gguf_n_tensors(g); i++) {
        const oxl_gguf_tensor *t = oxl_gguf_tensor_at(g, i);
        bool released = false;
        for (size_t e = 0; e < m->n_evicted && !released; e++) {
            released = m->evicted[e] == t->data;
        }
        if (!released) {
            lock_range(m, t->data, t->nbytes);
        }
    }
    for (size_t i = 0; i < m->n_owned; i++) {
        lock_range(m, m->owned[i].p, m->owned[i].bytes);
    }
}

bool oxl_model_note_evicted(oxl_model *m, const void *data) {
    const void **p = realloc(m->evicted, (m->n_evicted + 1) * sizeof *p);
    if (p == NULL) {
        return false;
    }
    m->evicted = p;
    m->evicted[m->n_evicted++] = data;
    return true;
}

/* A further file of a split model read into memory (--no-mmap), the buffer owned by its oxl_gguf.
 * user is the oxl_model_params; the progress callback may cancel between files. */
static int open_part_in_memory(const char *path, void *user, oxl_gguf **out, oxl_error *err) {
    const oxl_model_params *p = user;
    if (oxl_gguf_part_absent(path)) {
        return 1;
    }
    oxl_model_params quiet = *p;
    quiet.progress_callback = NULL;
    size_t size = 0;
    void *buf = read_file(path, &quiet, &size, err);
    if (!buf) {
        return -1;
    }
    oxl_gguf *g = oxl_gguf_open_memory(buf, size, path, err);
    if (!g) {
        free(buf);
        return -1;
    }
    oxl_gguf_take_buffer(g, buf);
    if (!report_progress(p, 0x1.fffffep-1f, path, err)) {
        oxl_gguf_close(g);
        return -1;
    }
    *out = g;
    return 0;
}

oxl_model *oxl_model_load(const char *path, const oxl_model_params *params, oxl_error *err) {
    if (oxl_isa_env_check(err) < 0) {
        return NULL;
    }
    const oxl_model_params p = params ? *params : oxl_model_default_params();
    void *buf = NULL;
    size_t size = 0;
    oxl_gguf *g;
    if (p.use_mmap) {
        g = oxl_gguf_open(path, err);
    } else {
        buf = read_file(path, &p, &size, err);
        if (!buf) {
            return NULL;
        }
        g = oxl_gguf_open_memory(buf, size, path, err);
    }
    if (!g) {
        free(buf);
        return NULL;
    }
    if (oxl_gguf_load_split(g, p.use_mmap ? oxl_gguf_open_part : open_part_in_memory, (void *)&p, err)) {
        oxl_gguf_close(g);
        free(buf);
        return NULL;
    }
    oxl_model *m = oxl_model_from_gguf(g, err);
    if (!m) {
        free(buf);
        return NULL;
    }
    m->file_buf = buf;
    m->file_buf_size = size;
    if (p.use_mmap && p.progress_callback) {
        /* llama.cpp's load_all_data with mmap: the share of the tensor bytes before each tensor */
        const oxl_gguf *gg = m->gguf;
        for (int64_t i = 0, done = 0; i < oxl_gguf_n_tensors(gg); i++) {
            if (!report_progress(&p, share_before_end((double)done, (double)m->n_bytes), path, err)) {
                oxl_model_free(m);
                return NULL;
            }
            done += oxl_gguf_tensor_at(gg, i)->nbytes;
        }
    }
    if (p.n_gpu_layers != 0) {
        /* before repacking, which may release the plain rows the device copies */
        oxl_error oerr = {0};
        if (!m->arch->offload) {
            oxl_log_msg(OXL_LOG_LEVEL_WARN,
                        "-ngl %d: architecture %s runs its own forward pass, which the Vulkan backend does not cover: "
                        "running on the CPU\n",
                        p.n_gpu_layers, m->arch->name);
        } else if (m->arch->offload(m, p.n_gpu_layers, p.main_gpu, &oerr) != 0) {
            oxl_log_msg(OXL_LOG_LEVEL_WARN, "-ngl %d: %s: running on the CPU\n", p.n_gpu_layers, oerr.msg);
        }
    }
    if (p.repack && m->arch->repack) {
        /* the plain rows of repacked tensors are released: a read-only file mapping pages them in
         * again if ever read, and nothing reads them from a --no-mmap copy (the repacked rows serve
         * the products, look-ups use tensors that are not repacked) */
        m->arch->repack(m, true);
    }
    if (p.use_mlock) {
        lock_tensor_data(m);
    }
    if (!report_progress(&p, 1.0f, path, err)) {
        oxl_model_free(m);
        return NULL;
    }
    return m;
}

bool oxl_model_own(oxl_model *m, void *buf, size_t bytes) {
    if (buf == NULL) {
        return true;
    }
    if (m->n_owned == m->cap_owned) {
        const size_t cap = m->cap_owned ? 2 * m->cap_owned : 64;
        struct oxl_owned_buf *p = realloc(m->owned, cap * sizeof *p);
        if (p == NULL) {
            oxl_tensor_repack_free(buf, bytes);
            return false;
        }
        m->owned = p;
        m->cap_owned = cap;
    }
    m->owned[m->n_owned++] = (struct oxl_owned_buf){buf, bytes};
    return true;
}

void oxl_model_free(oxl_model *m) {
    if (!m) {
        return;
    }
    for (size_t i = 0; i < m->n_owned; i++) {
        oxl_tensor_repack_free(m->owned[i].p, m->owned[i].bytes);
    }
    free(m->owned);
    free(m->evicted);
    if (m->arch && m->weights) {
        m->arch->free_weights(m->weights);
    }
    oxl_vocab_free(m->vocab);
    oxl_gguf_close(m->gguf);
    free(m->file_buf);
    free(m);
}

int32_t oxl_model_n_vocab(const oxl_model *m) { return m->hp.n_vocab; }
int32_t oxl_model_n_ctx_train(const oxl_model *m) { return m->hp.n_ctx_train; }
int32_t oxl_model_n_embd(const oxl_model *m) { return m->hp.n_embd; }
int32_t oxl_model_n_layer(const oxl_model *m) { return m->hp.n_layer; }

int32_t oxl_model_n_gpu_layers(const oxl_model *m) { return m->gpu_layers; }
bool oxl_model_has_decoder(const oxl_model *m) { return !m->arch->encoder_only; }

/* `<arch>.classifier.output_labels` (an array of strings), or -1 when absent or of another type. */
static int64_t cls_labels_key(const oxl_model *m) {
    char key[160];
    snprintf(key, sizeof key, "%s.classifier.output_labels", m->arch->name);
    const int64_t i = oxl_gguf_find_key(m->gguf, key);
    if (i < 0 || oxl_gguf_kv_type(m->gguf, i) != OXL_GGUF_ARRAY || oxl_gguf_arr_type(m->gguf, i) != OXL_GGUF_STRING) {
        return -1;
    }
    return i;
}

/* llama.cpp's hparams.n_cls_out: 1 unless the file lists classifier labels (llama_model::load_hparams) */
int32_t oxl_model_n_cls_out(const oxl_model *m) {
    const int64_t i = cls_labels_key(m);
    const uint64_t n = i < 0 ? 0 : oxl_gguf_arr_n(m->gguf, i);
    return n == 0 || n > INT32_MAX ? 1 : (int32_t)n;
}

int32_t oxl_model_cls_label(const oxl_model *m, int32_t i, char *buf, size_t buf_size) {
    const int64_t k = cls_labels_key(m);
    if (buf && buf_size) {
        buf[0] = 0;
    }
    if (k < 0 || i < 0 || (uint64_t)i >= oxl_gguf_arr_n(m->gguf, k)) {
        return -1;
    }
    size_t len = 0;
    const char *s = oxl_gguf_arr_str(m->gguf, k, (uint64_t)i, &len);
    if (!s) {
        return -1;
    }
    if (buf && buf_size) {
        const size_t c = len < buf_size - 1 ? len : buf_size - 1;
        memcpy(buf, s, c);
        buf[c] = 0;
    }
    return (int32_t)len;
}
const char *oxl_model_desc(const oxl_model *m) { return m->desc; }
uint64_t oxl_model_n_params(const oxl_model *m) { return (uint64_t)m->n_params; }
uint64_t oxl_model_size(const oxl_model *m) { return (uint64_t)m->n_bytes; }

const char *oxl_model_chat_template(const oxl_model *m) {
    int64_t k = oxl_gguf_find_key(m->gguf, "tokenizer.chat_template");
    if (k >= 0 && oxl_gguf_kv_type(m->gguf, k) == OXL_GGUF_STRING) {
        return oxl_gguf_kv_str(m->gguf, k, NULL);
    }
    return NULL;
}

/* The text of GGUF key k (-1: none) as llama.cpp's gguf_kv_to_str for non-array values, written as
 * snprintf writes; -1 for k < 0 or an array. */
static int32_t meta_text(const oxl_model *m, int64_t k, char *buf, size_t buf_size) {
    if (buf_size > 0) {
        buf[0] = 0;
    }
    const oxl_gguf_vtype t = k >= 0 ? oxl_gguf_kv_type(m->gguf, k) : OXL_GGUF_ARRAY;
    int64_t i;
    uint64_t u;
    double d;
    bool b;
    int n = -1;
    if (t == OXL_GGUF_STRING) {
        n = snprintf(buf, buf_size, "%s", oxl_gguf_kv_str(m->gguf, k, NULL));
    } else if (t == OXL_GGUF_BOOL && oxl_gguf_kv_bool(m->gguf, k, &b)) {
        n = snprintf(buf, buf_size, "%s", b ? "true" : "false");
    } else if ((t == OXL_GGUF_FLOAT32 || t == OXL_GGUF_FLOAT64) && oxl_gguf_kv_float(m->gguf, k, &d)) {
        n = snprintf(buf, buf_size, "%f", d); /* std::to_string(float/double) */
    } else if (t == OXL_GGUF_UINT64 && oxl_gguf_kv_uint(m->gguf, k, &u)) {
        n = snprintf(buf, buf_size, "%" PRIu64, u);
    } else if (t != OXL_GGUF_ARRAY && oxl_gguf_kv_int(m->gguf, k, &i)) {
        n = snprintf(buf, buf_size, "%" PRId64, i);
    }
    return n < 0 ? -1 : (int32_t)n;
}

int32_t oxl_model_meta_val_str(const oxl_model *m, const char *key, char *buf, size_t buf_size) {
    return meta_text(m, m && key ? oxl_gguf_find_key(m->gguf, key) : -1, buf, buf_size);
}

/* The GGUF index of the i-th non-array key (llama.cpp's gguf_kv holds those only); -1 if none. */
static int64_t meta_index(const oxl_model *m, int32_t i) {
    const int64_t n = m && i >= 0 ? oxl_gguf_n_kv(m->gguf) : 0;
    for (int64_t k = 0, seen = 0; k < n; k++) {
        if (oxl_gguf_kv_type(m->gguf, k) != OXL_GGUF_ARRAY && seen++ == i) {
            return k;
        }
    }
    return -1;
}

int32_t oxl_model_meta_count(const oxl_model *m) {
    int32_t n = 0;
    for (int64_t k = 0; m && k < oxl_gguf_n_kv(m->gguf); k++) {
        n += oxl_gguf_kv_type(m->gguf, k) != OXL_GGUF_ARRAY;
    }
    return n;
}

int32_t oxl_model_meta_key_by_index(const oxl_model *m, int32_t i, char *buf, size_t buf_size) {
    const int64_t k = meta_index(m, i);
    if (k < 0) {
        if (buf_size > 0) {
            buf[0] = 0;
        }
        return -1;
    }
    const int n = snprintf(buf, buf_size, "%s", oxl_gguf_key(m->gguf, k));
    return n < 0 ? -1 : (int32_t)n;
}

int32_t oxl_model_meta_val_str_by_index(const oxl_model *m, int32_t i, char *buf, size_t buf_size) {
    return meta_text(m, meta_index(m, i), buf, buf_size);
}

/* ---- tokenizer: the vocabulary does the work ---- */

int32_t oxl_tokenize(const oxl_model *m, const char *text, size_t len, oxl_token *out, int32_t cap, bool add_special,
                     bool parse_special) {
    return oxl_vocab_tokenize(m->vocab, text, len, out, cap, add_special, parse_special);
}

int32_t oxl_token_to_piece(const oxl_model *m, oxl_token tok, char *buf, int32_t cap, bool special) {
    return oxl_vocab_token_to_piece(m->vocab, tok, buf, cap, special);
}

oxl_token oxl_token_bos(const oxl_model *m) { return oxl_vocab_bos(m->vocab); }
oxl_token oxl_token_eos(const oxl_model *m) { return oxl_vocab_eos(m->vocab); }
oxl_token oxl_token_sep(const oxl_model *m) { return oxl_vocab_sep(m->vocab); }
oxl_token oxl_token_fim(const oxl_model *m, oxl_fim_token which) { return oxl_vocab_fim(m->vocab, (int)which); }
bool oxl_vocab_add_bos(const oxl_model *m) { return oxl_vocab_adds_bos(m->vocab); }
bool oxl_vocab_add_eos(const oxl_model *m) { return oxl_vocab_adds_eos(m->vocab); }
bool oxl_vocab_add_sep(const oxl_model *m) { return oxl_vocab_adds_sep(m->vocab); }
bool oxl_token_is_eog(const oxl_model *m, oxl_token tok) { return oxl_vocab_is_eog(m->vocab, tok); }

int32_t oxl_detok_push(oxl_detok *d, const oxl_model *m, oxl_token tok, char *out, int32_t cap) {
    return oxl_vocab_detok_push(d, m->vocab, tok, out, cap);
}
