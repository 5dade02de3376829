/* oxillama gguf-split: splits a GGUF model into parts or merges the parts back, writing the bytes
 * llama.cpp's llama-gguf-split writes (tools/gguf-split/gguf-split.cpp):
 *   split: parts OUT-00001-of-0000N.gguf ..., the first with every key of the input, each then the
 *          keys split.no (u16), split.tensors.count (i32) and split.count (u16) in that order (a key
 *          the input already has is moved to the end, as gguf_set_val does); the tensors in the
 *          input's order, a new part when --split-max-tensors N tensors are in the current one, or
 *          (--split-max-size N[M|G], decimal megabytes/gigabytes) when the part's tensor data,
 *          each padded to 32 bytes, would pass the size; --no-tensor-first-split leaves the first
 *          part with the metadata only. A part that would get no tensor is an error.
 *   merge: IN is the first part; OUT gets its keys with split.count set to 0 and the tensors of
 *          every part in order. OUT must not exist.
 * --dry-run prints the plan only. The printed lines are llama-gguf-split's. */
#include "cli.h"
#include "errors.h"
#include "gguf.h"
#include "gguf_split.h"
#include "gguf_write.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define ALIGN 32 /* GGUF_DEFAULT_ALIGNMENT: gguf-split pads each tensor's data to it */

typedef struct split_opts {
    bool merge, dry_run, no_tensor_first;
    bool by_size;
    int max_tensors;
    uint64_t max_bytes;
    const char *in, *out;
} split_opts;

static void usage(FILE *f) {
    fprintf(f, "usage: oxillama gguf-split [options] GGUF_IN GGUF_OUT\n\n"
               "Split GGUF_IN into parts GGUF_OUT-0000K-of-0000N.gguf, or merge the parts (GGUF_IN the first)\n"
               "into GGUF_OUT, as llama-gguf-split.\n\n"
               "options:\n"
               "  --split                 split GGUF to multiple GGUF (the default)\n"
               "  --merge                 merge multiple GGUF to a single GGUF\n"
               "  --split-max-tensors N   max tensors in each split (default: 128)\n"
               "  --split-max-size N(M|G) max size per split (decimal megabytes or gigabytes)\n"
               "  --no-tensor-first-split do not add tensors to the first split\n"
               "  --dry-run               only print out a split plan and exit, without writing any file\n");
}

static uint64_t pad32(uint64_t n) { return (n + ALIGN - 1) / ALIGN * ALIGN; }

/* "128M" or "4G" (llama-gguf-split's split_str_to_n_bytes: decimal units, a positive count). */
static int parse_size(const char *s, uint64_t *out) {
    const size_t len = strlen(s);
    char *end = NULL;
    const long long n = strtoll(s, &end, 10);
    if (len < 2 || (s[len - 1] != 'M' && s[len - 1] != 'G')) {
        fprintf(stderr, "error: supported units are M (megabytes) or G (gigabytes), but got: %s\n", s);
        return -1;
    }
    if (end != s + len - 1 || n <= 0 || n > 1000000) {
        fprintf(stderr, "error: size must be a positive value\n");
        return -1;
    }
    *out = (uint64_t)n * (s[len - 1] == 'M' ? 1000000ull : 1000000000ull);
    return 0;
}

static int parse(split_opts *o, int argc, char **argv) {
    memset(o, 0, sizeof *o);
    o->max_tensors = 128;
    bool split = false, mode_t = false, mode_s = false;
    int i = 1;
    for (; i < argc && !strncmp(argv[i], "--", 2); i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--help")) {
            usage(stdout);
            return 1;
        } else if (!strcmp(a, "--dry-run")) {
            o->dry_run = true;
        } else if (!strcmp(a, "--no-tensor-first-split")) {
            o->no_tensor_first = true;
        } else if (!strcmp(a, "--merge") || !strcmp(a, "--split")) {
            const bool m = !strcmp(a, "--merge");
            if ((m && split) || (!m && o->merge)) {
                fprintf(stderr, "error: either --split or --merge can be specified, but not both\n");
                return -1;
            }
            o->merge = m;
            split = !m;
        } else if (!strcmp(a, "--split-max-tensors") || !strcmp(a, "--split-max-size")) {
            const bool size = !strcmp(a, "--split-max-size");
            if (i + 1 >= argc) {
                fprintf(stderr, "error: invalid parameter for argument: %s\n", a);
                return -1;
            }
            if ((size && mode_t) || (!size && mode_s)) {
                fprintf(stderr, "error: either --split-max-tensors or --split-max-size can be specified, but not "
                                "both\n");
                return -1;
            }
            const char *v = argv[++i];
            if (size) {
                mode_s = true;
                if (parse_size(v, &o->max_bytes) != 0) {
                    return -1;
                }
            } else {
                mode_t = true;
                char *end = NULL;
                const long n = strtol(v, &end, 10);
                if (!*v || *end || n <= 0 || n > INT_MAX) {
                    fprintf(stderr, "error: --split-max-tensors '%s': expected a positive number of tensors\n", v);
                    return -1;
                }
                o->max_tensors = (int)n;
            }
        } else {
            fprintf(stderr, "error: unknown argument: %s\n", a);
            return -1;
        }
    }
    o->by_size = mode_s;
    if (argc - i != 2) {
        fprintf(stderr, "error: bad arguments\n");
        usage(stderr);
        return -1;
    }
    o->in = argv[i];
    o->out = argv[i + 1];
    return 0;
}

/* The writer of part k of the plan: keys (the input's on the first part) and split keys, the
 * part's tensors. */
static oxl_gguf_writer *part_writer(const oxl_gguf *g, int k, int n_parts, const int64_t *first, int64_t n,
                                    oxl_error *err) {
    oxl_gguf_writer *w = oxl_gguf_writer_new(err);
    if (!w) {
        return NULL;
    }
    const int64_t n_tensors = oxl_gguf_n_tensors(g);
    if ((k == 0 && oxl_gguf_writer_copy_kvs(w, g, err)) || oxl_gguf_writer_set_u16(w, "split.no", (uint16_t)k, err) ||
        oxl_gguf_writer_set_u16(w, "split.count", 0, err) ||
        oxl_gguf_writer_set_i32(w, "split.tensors.count", (int32_t)n_tensors, err) ||
        oxl_gguf_writer_set_u16(w, "split.count", (uint16_t)n_parts, err)) {
        oxl_gguf_writer_free(w);
        return NULL;
    }
    for (int64_t i = first[k]; i < first[k] + n; i++) {
        const oxl_gguf_tensor *t = oxl_gguf_tensor_at(g, i);
        if (oxl_gguf_writer_add_tensor(w, t->name, (oxl_type)t->type, t->n_dims, t->ne, err)) {
            oxl_gguf_writer_free(w);
            return NULL;
        }
    }
    return w;
}

static int do_split(const split_opts *o) {
    oxl_error err = {0};
    oxl_gguf *g = oxl_gguf_open(o->in, &err);
    if (!g) {
        fprintf(stderr, "gguf_split: failed to load input GGUF from %s: %s\n", o->in, err.msg);
        return 1;
    }
    int rc = 1;
    const int64_t n = oxl_gguf_n_tensors(g);
    int64_t *first = calloc((size_t)n + 2, sizeof *first);
    int n_parts = 0;
    if (!first) {
        fprintf(stderr, "error: out of memory\n");
        goto done;
    }
    if (n > INT32_MAX) {
        fprintf(stderr, "error: %s has %lld tensors\n", o->in, (long long)n);
        goto done;
    }
    /* the plan: part k holds tensors first[k] .. first[k + 1] - 1 */
    first[n_parts++] = 0;
    if (o->no_tensor_first) {
        first[n_parts++] = 0;
    }
    uint64_t cur = 0;
    for (int64_t i = 0; i < n; i++) {
        const uint64_t nb = pad32(oxl_gguf_tensor_at(g, i)->nbytes);
        const bool cut = o->by_size ? cur + nb > o->max_bytes : i > 0 && i % o->max_tensors == 0;
        if (cut) {
            if (first[n_parts - 1] == i) {
                fprintf(stderr, "error: one of splits have 0 tensors. Maybe size or tensors limit is too small\n");
                goto done;
            }
            first[n_parts++] = i;
            cur = nb;
        } else {
            cur += nb;
        }
    }
    first[n_parts] = n;
    if (n_parts > 99999) {
        fprintf(stderr, "error: %d parts; at most 99999\n", n_parts);
        goto done;
    }
    printf("n_split: %d\n", n_parts);
    for (int k = 0; k < n_parts; k++) {
        oxl_gguf_writer *w = part_writer(g, k, n_parts, first, first[k + 1] - first[k], &err);
        if (!w) {
            fprintf(stderr, "error: %s\n", err.msg);
            goto done;
        }
        uint64_t total = oxl_gguf_writer_meta_size(w);
        for (int64_t i = first[k]; i < first[k + 1]; i++) {
            total += oxl_gguf_tensor_at(g, i)->nbytes;
        }
        printf("split %05d: n_tensors = %lld, total_size = %lluM\n", k + 1, (long long)(first[k + 1] - first[k]),
               (unsigned long long)(total / 1000 / 1000));
        oxl_gguf_writer_free(w);
    }
    if (!o->dry_run) {
        for (int k = 0; k < n_parts; k++) {
            char path[4096];
            if (!oxl_gguf_split_path(path, sizeof path, o->out, k, n_parts)) {
                fprintf(stderr, "error: output name too long\n");
                goto done;
            }
            printf("Writing file %s ... ", path);
            fflush(stdout);
            oxl_gguf_writer *w = part_writer(g, k, n_parts, first, first[k + 1] - first[k], &err);
            int r = w ? oxl_gguf_writer_begin(w, path, &err) : -1;
            for (int64_t i = first[k]; r == 0 && i < first[k + 1]; i++) {
                const oxl_gguf_tensor *t = oxl_gguf_tensor_at(g, i);
                r = oxl_gguf_writer_write_data(w, t->data, t->nbytes, &err);
            }
            r = r == 0 ? oxl_gguf_writer_finish(w, &err) : r;
            oxl_gguf_writer_free(w);
            if (r != 0) {
                printf("\n");
                fprintf(stderr, "error: %s\n", err.msg);
                goto done;
            }
            printf("done\n");
        }
    }
    fprintf(stderr, "gguf_split: %d gguf split written with a total of %lld tensors.\n", n_parts, (long long)n);
    rc = 0;
done:
    free(first);
    oxl_gguf_close(g);
    return rc;
}

static int do_merge(const split_opts *o) {
    oxl_error err = {0};
    fprintf(stderr, "gguf_merge: %s -> %s\n", o->in, o->out);
    if (access(o->out, F_OK) == 0) {
        fprintf(stderr, "gguf_merge: output file %s already exists\n", o->out);
        return 1;
    }
    oxl_gguf *first = oxl_gguf_open(o->in, &err);
    if (!first) {
        fprintf(stderr, "gguf_merge: failed to load input GGUF from %s: %s\n", o->in, err.msg);
        return 1;
    }
    const bool has_count = oxl_gguf_find_key(first, "split.count") >= 0;
    const int n_split = has_count ? oxl_gguf_split_count(first, &err) : 0;
    oxl_gguf_close(first);
    if (!has_count) {
        fprintf(stderr, "gguf_merge: input file does not contain split.count metadata\n");
        return 1;
    }
    char prefix[4096];
    if (n_split < 1) {
        fprintf(stderr, "gguf_merge: input file does not contain a valid split count %d%s%s\n", n_split,
                err.msg[0] ? ": " : "", err.msg);
        return 1;
    }
    if (!oxl_gguf_split_prefix(prefix, sizeof prefix, o->in, 0, n_split)) {
        fprintf(stderr, "gguf_merge: unexpected input file name: %s i_split=0 n_split=%d\n", o->in, n_split);
        return 1;
    }
    oxl_gguf *g = oxl_gguf_open_model(o->in, &err);
    if (!g) {
        fprintf(stderr, "gguf_merge: %s\n", err.msg);
        return 1;
    }
    int rc = 1;
    oxl_gguf_writer *w = oxl_gguf_writer_new(&err);
    int r = w ? oxl_gguf_writer_copy_kvs(w, g, &err) : -1;
    r = r == 0 ? oxl_gguf_writer_set_u16(w, "split.count", 0, &err) : r;
    const int64_t n = oxl_gguf_n_tensors(g);
    for (int64_t i = 0; r == 0 && i < n; i++) {
        const oxl_gguf_tensor *t = oxl_gguf_tensor_at(g, i);
        r = oxl_gguf_writer_add_tensor(w, t->name, (oxl_type)t->type, t->n_dims, t->ne, &err);
    }
    if (r == 0 && !o->dry_run) {
        r = oxl_gguf_writer_begin(w, o->out, &err);
        for (int64_t i = 0; r == 0 && i < n; i++) {
            const oxl_gguf_tensor *t = oxl_gguf_tensor_at(g, i);
            r = oxl_gguf_writer_write_data(w, t->data, t->nbytes, &err);
        }
        r = r == 0 ? oxl_gguf_writer_finish(w, &err) : r;
    }
    if (r != 0) {
        fprintf(stderr, "gguf_merge: %s\n", err.msg);
    } else {
        fprintf(stderr, "gguf_merge: %s merged from %d split with %lld tensors.\n", o->out, n_split, (long long)n);
        rc = 0;
    }
    oxl_gguf_writer_free(w);
    oxl_gguf_close(g);
    return rc;
}

int oxl_cmd_gguf_split(int argc, char **argv) {
    split_opts o;
    const int p = parse(&o, argc, argv);
    if (p != 0) {
        return p < 0 ? 1 : 0;
    }
    return o.merge ? do_merge(&o) : do_split(&o);
}
