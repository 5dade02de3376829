/* oxillama info: a GGUF file's header, metadata and tensor table, in the spirit of llama.cpp's
 * gguf-py/gguf/scripts/gguf_dump.py. Metadata is grouped (architecture hyper-parameters, general.*,
 * tokenizer, the rest); long strings and arrays are abbreviated to their length and first
 * elements, so a 100k-token vocabulary prints as one line. */
#include "cli.h"
#include "gguf.h"
#include "gguf_split.h"
#include "model.h"
#include "oxl_types.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#define INFO_MAX_STR 64  /* bytes of a string shown before it is cut */
#define INFO_MAX_ELEMS 8 /* array elements shown */

/* ---- values ---------------------------------------------------------------------------------- */

/* Prints n bytes as a quoted string: control bytes, quotes and backslashes escaped, UTF-8 as is,
 * cut after INFO_MAX_STR bytes with the full length noted. */
static void print_str(FILE *f, const char *s, size_t n) {
    size_t shown = n > INFO_MAX_STR ? INFO_MAX_STR : n;
    fputc('"', f);
    for (size_t i = 0; i < shown; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c == '"' || c == '\\')
            fprintf(f, "\\%c", c);
        else if (c == '\n')
            fputs("\\n", f);
        else if (c == '\t')
            fputs("\\t", f);
        else if (c < 0x20 || c == 0x7f)
            fprintf(f, "\\x%02x", c);
        else
            fputc(c, f);
    }
    fputc('"', f);
    if (shown < n)
        fprintf(f, "... (%zu bytes)", n);
}

/* One fixed-size element of type t at p (little-endian, unaligned). */
static void print_scalar(FILE *f, oxl_gguf_vtype t, const unsigned char *p) {
    union {
        uint8_t u8;
        int8_t i8;
        uint16_t u16;
        int16_t i16;
        uint32_t u32;
        int32_t i32;
        uint64_t u64;
        int64_t i64;
        float f32;
        double f64;
    } v;
    switch (t) {
    case OXL_GGUF_UINT8:
        memcpy(&v.u8, p, 1);
        fprintf(f, "%" PRIu8, v.u8);
        break;
    case OXL_GGUF_INT8:
        memcpy(&v.i8, p, 1);
        fprintf(f, "%" PRId8, v.i8);
        break;
    case OXL_GGUF_UINT16:
        memcpy(&v.u16, p, 2);
        fprintf(f, "%" PRIu16, v.u16);
        break;
    case OXL_GGUF_INT16:
        memcpy(&v.i16, p, 2);
        fprintf(f, "%" PRId16, v.i16);
        break;
    case OXL_GGUF_UINT32:
        memcpy(&v.u32, p, 4);
        fprintf(f, "%" PRIu32, v.u32);
        break;
    case OXL_GGUF_INT32:
        memcpy(&v.i32, p, 4);
        fprintf(f, "%" PRId32, v.i32);
        break;
    case OXL_GGUF_UINT64:
        memcpy(&v.u64, p, 8);
        fprintf(f, "%" PRIu64, v.u64);
        break;
    case OXL_GGUF_INT64:
        memcpy(&v.i64, p, 8);
        fprintf(f, "%" PRId64, v.i64);
        break;
    case OXL_GGUF_FLOAT32:
        memcpy(&v.f32, p, 4);
        fprintf(f, "%.9g", v.f32);
        break;
    case OXL_GGUF_FLOAT64:
        memcpy(&v.f64, p, 8);
        fprintf(f, "%.17g", v.f64);
        break;
    case OXL_GGUF_BOOL: fputs(p[0] ? "true" : "false", f); break;
    default: fputs("?", f); break;
    }
}

/* The value of key i: scalars in full, strings and arrays abbreviated. */
static void print_value(FILE *f, const oxl_gguf *g, int64_t i) {
    oxl_gguf_vtype t = oxl_gguf_kv_type(g, i);
    if (t == OXL_GGUF_STRING) {
        size_t n;
        const char *s = oxl_gguf_kv_str(g, i, &n);
        print_str(f, s, n);
        return;
    }
    if (t != OXL_GGUF_ARRAY) {
        int64_t s;
        uint64_t u;
        double d;
        bool b;
        if (oxl_gguf_kv_bool(g, i, &b))
            fputs(b ? "true" : "false", f);
        else if (oxl_gguf_kv_float(g, i, &d))
            fprintf(f, t == OXL_GGUF_FLOAT32 ? "%.9g" : "%.17g", d);
        else if (oxl_gguf_kv_int(g, i, &s))
            fprintf(f, "%" PRId64, s);
        else if (oxl_gguf_kv_uint(g, i, &u))
            fprintf(f, "%" PRIu64, u);
        return;
    }
    oxl_gguf_vtype et = oxl_gguf_arr_type(g, i);
    uint64_t n = oxl_gguf_arr_n(g, i);
    uint64_t shown = n < INFO_MAX_ELEMS ? n : INFO_MAX_ELEMS;
    fprintf(f, "%s[%" PRIu64 "]", oxl_gguf_vtype_name(et), n);
    if (et == OXL_GGUF_ARRAY || n == 0)
        return; /* nested arrays: type and count only */
    fputs(" [", f);
    const unsigned char *p = oxl_gguf_arr_data(g, i);
    size_t esize = 0;
    for (uint64_t j = 0; j < shown; j++) {
        if (j)
            fputs(", ", f);
        if (et == OXL_GGUF_STRING) {
            size_t len;
            const char *s = oxl_gguf_arr_str(g, i, j, &len);
            print_str(f, s, len);
        } else {
            if (esize == 0) {
                static const size_t sizes[OXL_GGUF_VTYPE_COUNT] = {1, 1, 2, 2, 4, 4, 4, 1, 0, 0, 8, 8, 8};
                esize = sizes[et];
            }
            print_scalar(f, et, p + j * esize);
        }
    }
    fputs(shown < n ? ", ...]" : "]", f);
}

static void print_kv(FILE *f, const oxl_gguf *g, int64_t i) {
    fprintf(f, "  %-44s %-8s = ", oxl_gguf_key(g, i), oxl_gguf_vtype_name(oxl_gguf_kv_type(g, i)));
    print_value(f, g, i);
    fputc('\n', f);
}

static bool has_prefix(const char *s, const char *prefix, size_t n) {
    return strncmp(s, prefix, n) == 0 && s[n] == '.';
}

/* ---- sections -------------------------------------------------------------------------------- */

/* The id stored under key, and the vocabulary's text for it. */
static void print_token(FILE *f, const oxl_gguf *g, const char *label, const char *key, int64_t tokens) {
    int64_t k = oxl_gguf_find_key(g, key);
    int64_t id;
    if (k < 0)
        return;
    if (!oxl_gguf_kv_int(g, k, &id)) {
        fprintf(f, "  %-14s ", label);
        print_value(f, g, k);
        fputs(" (not an integer)\n", f);
        return;
    }
    fprintf(f, "  %-14s %" PRId64, label, id);
    size_t len;
    const char *s = tokens >= 0 && id >= 0 ? oxl_gguf_arr_str(g, tokens, (uint64_t)id, &len) : NULL;
    if (s) {
        fputc(' ', f);
        print_str(f, s, len);
    } else {
        fputs(" (not in the vocabulary)", f);
    }
    fputc('\n', f);
}

static void print_tokenizer(FILE *f, const oxl_gguf *g) {
    const char *s;
    fputs("\ntokenizer:\n", f);
    fprintf(f, "  %-14s %s\n", "model", oxl_gguf_get_str(g, "tokenizer.ggml.model", &s, NULL) == 1 ? s : "(none)");
    fprintf(f, "  %-14s %s\n", "pre", oxl_gguf_get_str(g, "tokenizer.ggml.pre", &s, NULL) == 1 ? s : "(none)");
    int64_t tokens = oxl_gguf_find_key(g, "tokenizer.ggml.tokens");
    if (tokens >= 0 && oxl_gguf_arr_type(g, tokens) == OXL_GGUF_STRING) {
        fprintf(f, "  %-14s %" PRIu64 "\n", "tokens", oxl_gguf_arr_n(g, tokens));
    } else {
        fprintf(f, "  %-14s (none)\n", "tokens");
        tokens = -1;
    }
    int64_t merges = oxl_gguf_find_key(g, "tokenizer.ggml.merges");
    if (merges >= 0)
        fprintf(f, "  %-14s %" PRIu64 "\n", "merges", oxl_gguf_arr_n(g, merges));
    print_token(f, g, "bos", "tokenizer.ggml.bos_token_id", tokens);
    print_token(f, g, "eos", "tokenizer.ggml.eos_token_id", tokens);
    print_token(f, g, "eot", "tokenizer.ggml.eot_token_id", tokens);
    print_token(f, g, "unk", "tokenizer.ggml.unknown_token_id", tokens);
    print_token(f, g, "pad", "tokenizer.ggml.padding_token_id", tokens);
    size_t len;
    int64_t tmpl = oxl_gguf_find_key(g, "tokenizer.chat_template");
    if (tmpl >= 0 && oxl_gguf_kv_str(g, tmpl, &len))
        fprintf(f, "  %-14s present (%zu bytes)\n", "chat template", len);
    else
        fprintf(f, "  %-14s absent\n", "chat template");
    for (int64_t i = 0; i < oxl_gguf_n_kv(g); i++)
        if (has_prefix(oxl_gguf_key(g, i), "tokenizer", 9))
            print_kv(f, g, i);
}

static void print_tensors(FILE *f, const oxl_gguf *g) {
    int64_t n = oxl_gguf_n_tensors(g);
    size_t w = 4;
    for (int64_t i = 0; i < n; i++) {
        size_t l = strlen(oxl_gguf_tensor_at(g, i)->name);
        if (l > w)
            w = l;
    }
    fprintf(f, "\ntensors: %" PRId64 "\n", n);
    fprintf(f, "  %5s  %-*s  %-8s  %-24s  %12s  %12s\n", "index", (int)w, "name", "type", "shape", "bytes", "offset");
    uint64_t total_bytes = 0, total_elems = 0;
    for (int64_t i = 0; i < n; i++) {
        const oxl_gguf_tensor *t = oxl_gguf_tensor_at(g, i);
        char shape[128];
        int len = 0;
        for (uint32_t d = 0; d < t->n_dims; d++)
            len += snprintf(shape + len, sizeof shape - (size_t)len, "%s%" PRId64, d ? " x " : "", t->ne[d]);
        const oxl_type_traits *tr = oxl_type_traits_get(t->type);
        fprintf(f, "  %5" PRId64 "  %-*s  %-8s  %-24s  %12zu  %12" PRIu64 "\n", i, (int)w, t->name, tr->name, shape,
                t->nbytes, t->offset);
        total_bytes += t->nbytes;
        /* the reader checked the product fits int64 unless a dimension is 0 */
        bool empty = t->ne[0] == 0 || t->ne[1] == 0 || t->ne[2] == 0 || t->ne[3] == 0;
        total_elems += empty ? 0 : (uint64_t)(t->ne[0] * t->ne[1] * t->ne[2] * t->ne[3]);
    }
    fprintf(f, "  total: %" PRIu64 " elements, %" PRIu64 " bytes\n", total_elems, total_bytes);
}

static void print_info(FILE *f, const oxl_gguf *g) {
    fprintf(f, "file: %s\n", oxl_gguf_path(g));
    fprintf(f, "  GGUF version %" PRIu32 ", %zu bytes, alignment %zu, data section at byte %zu\n", oxl_gguf_version(g),
            oxl_gguf_file_size(g), oxl_gguf_alignment(g), oxl_gguf_data_offset(g));
    fprintf(f, "  %" PRId64 " key-value pairs, %" PRId64 " tensors\n", oxl_gguf_n_kv(g), oxl_gguf_n_tensors(g));
    if (oxl_gguf_n_parts(g) > 1) {
        fprintf(f, "  split model: %d files (split.count)\n", oxl_gguf_n_parts(g));
        for (int k = 1; k < oxl_gguf_n_parts(g); k++) {
            const oxl_gguf *part = oxl_gguf_part(g, k);
            fprintf(f, "    part %d: %s, %zu bytes, %" PRId64 " tensors\n", k + 1, oxl_gguf_path(part),
                    oxl_gguf_file_size(part), oxl_gguf_n_tensors(part));
        }
    }

    const char *arch = NULL;
    int64_t n_kv = oxl_gguf_n_kv(g);
    if (oxl_gguf_get_str(g, "general.architecture", &arch, NULL) == 1 && arch[0]) {
        fprintf(f, "\narchitecture: %s\n", arch);
        for (int64_t i = 0; i < n_kv; i++)
            if (has_prefix(oxl_gguf_key(g, i), arch, strlen(arch)))
                print_kv(f, g, i);
    } else {
        fputs("\narchitecture: (general.architecture absent)\n", f);
        arch = NULL;
    }

    fputs("\ngeneral:\n", f);
    for (int64_t i = 0; i < n_kv; i++)
        if (has_prefix(oxl_gguf_key(g, i), "general", 7))
            print_kv(f, g, i);

    print_tokenizer(f, g);

    bool header = false;
    for (int64_t i = 0; i < n_kv; i++) {
        const char *k = oxl_gguf_key(g, i);
        if (has_prefix(k, "general", 7) || has_prefix(k, "tokenizer", 9) || (arch && has_prefix(k, arch, strlen(arch))))
            continue;
        if (!header)
            fputs("\nother keys:\n", f);
        header = true;
        print_kv(f, g, i);
    }

    print_tensors(f, g);
}

/* The hyper-parameters the architecture's graph uses (its describe hook), when oxillama can load the
 * file as a model; why not, when it cannot. */
static void print_graph(FILE *f, const oxl_gguf *g) {
    const char *arch = NULL;
    if (oxl_gguf_get_str(g, "general.architecture", &arch, NULL) != 1) {
        return;
    }
    oxl_error err = {{0}};
    oxl_model_params mp = oxl_model_default_params();
    oxl_model *m = oxl_model_load(oxl_gguf_path(g), &mp, &err);
    if (!m) {
        fprintf(f, "\ngraph: not loadable: %s\n", err.msg);
        return;
    }
    fprintf(f, "\ngraph (%s, as oxillama runs it):\n", arch);
    if (!oxl_model_describe(m, f)) {
        fputs("  (no description)\n", f);
    }
    oxl_model_free(m);
}

/* ---- the verb -------------------------------------------------------------------------------- */

static void usage(FILE *f) {
    fputs("usage: oxillama info [-m] FILE\n"
          "Shows a GGUF file's header, metadata (architecture, general, tokenizer, other keys) and\n"
          "tensor table (of all the files of a split model, given its first file).\n"
          "Arrays and long strings are abbreviated.\n",
          f);
}

int oxl_cmd_info(int argc, char **argv) {
    const char *path = NULL;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            usage(stdout);
            return 0;
        }
        const char *file = a;
        if (!strcmp(a, "-m") || !strcmp(a, "--model")) {
            if (i + 1 == argc) {
                fprintf(stderr, "oxillama info: %s needs a file name\n", a);
                return 1;
            }
            file = argv[++i];
        } else if (a[0] == '-' && a[1] != '\0') {
            fprintf(stderr, "oxillama info: unknown option '%s'\n", a);
            usage(stderr);
            return 1;
        }
        if (path) {
            fprintf(stderr, "oxillama info: one file at a time ('%s' and '%s' given)\n", path, file);
            return 1;
        }
        path = file;
    }
    if (!path) {
        usage(stderr);
        return 1;
    }
    oxl_error err = {{0}};
    oxl_gguf *g = oxl_gguf_open(path, &err);
    if (!g) {
        fprintf(stderr, "oxillama info: %s\n", err.msg);
        return 1;
    }
    /* the first file of a split model shows the whole model; a later part shows itself */
    const int64_t k_no = oxl_gguf_find_key(g, "split.no");
    int64_t no = 0;
    if ((k_no < 0 || (oxl_gguf_kv_int(g, k_no, &no) && no == 0)) &&
        oxl_gguf_load_split(g, oxl_gguf_open_part, NULL, &err)) {
        fprintf(stderr, "oxillama info: %s\n", err.msg);
        oxl_gguf_close(g);
        return 1;
    }
    print_info(stdout, g);
    print_graph(stdout, g);
    oxl_gguf_close(g);
    if (fflush(stdout) != 0) {
        perror("oxillama info: writing the output");
        return 1;
    }
    return 0;
}
