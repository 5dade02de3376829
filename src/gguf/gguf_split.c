/* Split GGUF models (llama.cpp's gguf-split and llama_model_loader's checks). */
#include "gguf_split.h"

#include "errors.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define OXL_SPLIT_MAX_COUNT 65535 /* split.count and split.no are uint16 */

int oxl_gguf_split_path(char *buf, size_t cap, const char *prefix, int no, int count) {
    const int n = snprintf(buf, cap, "%s-%05d-of-%05d.gguf", prefix, no + 1, count);
    return n < 0 || (size_t)n >= cap ? 0 : n;
}

int oxl_gguf_split_prefix(char *buf, size_t cap, const char *path, int no, int count) {
    char suffix[48];
    snprintf(suffix, sizeof suffix, "-%05d-of-%05d.gguf", no + 1, count);
    const size_t n = strlen(path), ns = strlen(suffix);
    if (n <= ns || strcmp(path + n - ns, suffix) != 0 || n - ns >= cap) {
        return 0;
    }
    memcpy(buf, path, n - ns);
    buf[n - ns] = 0;
    return (int)(n - ns);
}

/* The value of the integer key `key` of g: 1 when found (in 0..65535), 0 when absent, -1 (err
 * set) otherwise. */
static int get_u16(const oxl_gguf *g, const char *key, int *out, oxl_error *err) {
    const int64_t k = oxl_gguf_find_key(g, key);
    if (k < 0) {
        return 0;
    }
    int64_t v;
    if (!oxl_gguf_kv_int(g, k, &v) || v < 0 || v > OXL_SPLIT_MAX_COUNT) {
        return oxl_err_set(err, "%s: key '%s' is not a count from 0 to %d (type %s)", oxl_gguf_path(g), key,
                           OXL_SPLIT_MAX_COUNT, oxl_gguf_vtype_name(oxl_gguf_kv_type(g, k)));
    }
    *out = (int)v;
    return 1;
}

int oxl_gguf_split_count(const oxl_gguf *g, oxl_error *err) {
    int n = 1;
    if (get_u16(g, "split.count", &n, err) < 0) {
        return -1;
    }
    return n > 1 ? n : 1;
}

int oxl_gguf_load_split(oxl_gguf *g, oxl_gguf_opener open, void *user, oxl_error *err) {
    const char *path = oxl_gguf_path(g);
    const int count = oxl_gguf_split_count(g, err);
    if (count < 0) {
        return -1;
    }
    if (count == 1) {
        return 0;
    }
    int no = 0;
    int r = get_u16(g, "split.no", &no, err);
    if (r <= 0) {
        return r < 0 ? -1 : oxl_err_set(err, "%s: split.count is %d but the key split.no is missing", path, count);
    }
    char prefix[4096], part_path[4096];
    if (no != 0) {
        const int known = oxl_gguf_split_prefix(prefix, sizeof prefix, path, no, count) > 0 &&
                          oxl_gguf_split_path(part_path, sizeof part_path, prefix, 0, count) > 0;
        return oxl_err_set(err, "%s: part %d of %d of a split model (split.no %d); load it from its first part%s%s",
                           path, no + 1, count, no, known ? " " : "", known ? part_path : "");
    }
    if (oxl_gguf_split_prefix(prefix, sizeof prefix, path, 0, count) == 0) {
        return oxl_err_set(err,
                           "%s: first part of a split model of %d files (split.count), but its name does not end in "
                           "-00001-of-%05d.gguf, which names the other parts",
                           path, count, count);
    }
    for (int i = 1; i < count; i++) {
        if (oxl_gguf_split_path(part_path, sizeof part_path, prefix, i, count) == 0) {
            return oxl_err_set(err, "%s: the name of part %d of %d is too long", path, i + 1, count);
        }
        oxl_gguf *part = NULL;
        r = open(part_path, user, &part, err);
        if (r == 1) {
            return oxl_err_set(err, "%s: missing part %d of %d of the split model %s", part_path, i + 1, count, path);
        }
        if (r != 0 || !part) {
            char msg[OXL_ERROR_MSG_MAX];
            snprintf(msg, sizeof msg, "%s", err ? err->msg : "");
            return oxl_err_set(err, "part %d of %d of the split model %s: %s", i + 1, count, path, msg);
        }
        int part_count = 0, part_no = 0;
        if ((r = get_u16(part, "split.count", &part_count, err)) <= 0 || part_count != count) {
            if (r == 0) {
                oxl_err_set(err, "%s: key split.count is missing (part %d of the split model %s)", part_path, i + 1,
                            path);
            } else if (r > 0) {
                oxl_err_set(err, "%s: split.count is %d, but the first part %s says %d", part_path, part_count, path,
                            count);
            }
            oxl_gguf_close(part);
            return -1;
        }
        if ((r = get_u16(part, "split.no", &part_no, err)) <= 0 || part_no != i) {
            if (r == 0) {
                oxl_err_set(err, "%s: key split.no is missing (part %d of the split model %s)", part_path, i + 1, path);
            } else if (r > 0) {
                oxl_err_set(err, "%s: split.no is %d, but the file is part %d of %d, split.no %d", part_path, part_no,
                            i + 1, count, i);
            }
            oxl_gguf_close(part);
            return -1;
        }
        if (oxl_gguf_add_part(g, part, err)) {
            return -1;
        }
    }
    int64_t want = 0;
    r = oxl_gguf_get_int(g, "split.tensors.count", &want, err);
    if (r <= 0) {
        return r < 0 ? -1 : oxl_err_set(err, "%s: split model without the key split.tensors.count", path);
    }
    if (want != oxl_gguf_n_tensors(g)) {
        return oxl_err_set(err, "%s: split.tensors.count is %" PRId64 ", but the %d parts hold %" PRId64 " tensors%s",
                           path, want, count, oxl_gguf_n_tensors(g),
                           want > oxl_gguf_n_tensors(g) ? " (tensors missing)" : "");
    }
    return 0;
}

int oxl_gguf_part_absent(const char *path) {
    struct stat st;
    return stat(path, &st) != 0 && errno == ENOENT;
}

int oxl_gguf_open_part(const char *path, void *user, oxl_gguf **out, oxl_error *err) {
    (void)user;
    if (oxl_gguf_part_absent(path)) {
        return 1;
    }
    *out = oxl_gguf_open(path, err);
    return *out ? 0 : -1;
}

oxl_gguf *oxl_gguf_open_model(const char *path, oxl_error *err) {
    oxl_gguf *g = oxl_gguf_open(path, err);
    if (g && oxl_gguf_load_split(g, oxl_gguf_open_part, NULL, err)) {
        oxl_gguf_close(g);
        return NULL;
    }
    return g;
}
