/* Parsing of llama-quantize's option values (quantize_options.h). */
#include "quantize_options.h"

#include "errors.h"
#include "quantize.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifndef OXL_SUBSET
#define PCRE2_CODE_UNIT_WIDTH 32
#include <pcre2.h>
#endif

/* ---- type names ---- */

/* A type a model's weights can be written in: one with a reference quantizer, but not the
 * activation formats q8_1 and q8_K, which ggml_quantize_chunk does not write. */
static bool oxl_writable(oxl_type t) { return oxl_quantize_supported(t) && t != OXL_TYPE_Q8_1 && t != OXL_TYPE_Q8_K; }

int oxl_quant_type_parse(const char *flag, const char *name, oxl_type *out, oxl_error *err) {
    const int t = oxl_type_from_name(name);
    if (t >= 0 && oxl_writable((oxl_type)t)) {
        *out = (oxl_type)t;
        return 0;
    }
    char list[512] = "";
    size_t n = 0;
    for (int i = 0; i < OXL_TYPE_COUNT; i++) {
        const oxl_type_traits *tr = oxl_type_traits_get((uint32_t)i);
        if (tr != NULL && oxl_writable((oxl_type)i) && n + strlen(tr->name) + 2 < sizeof list) {
            n += (size_t)snprintf(list + n, sizeof list - n, "%s%s", n ? " " : "", tr->name);
        }
    }
    return oxl_err_set(err, "%s: %s ggml type '%s' (supported: %s)", flag, t >= 0 ? "unsupported" : "unknown", name,
                       list);
}

/* ---- --tensor-type ---- */

typedef struct oxl_tensor_type {
#ifndef OXL_SUBSET
    pcre2_code *code;
#endif
    oxl_type type;
} oxl_tensor_type;

struct oxl_tensor_types {
    oxl_tensor_type *v;
    size_t n, cap;
#ifndef OXL_SUBSET
    pcre2_match_data *md;
#endif
};

oxl_tensor_types *oxl_tensor_types_new(oxl_error *err) {
    oxl_tensor_types *tt = calloc(1, sizeof *tt);
    if (tt == NULL) {
        oxl_err_set(err, "out of memory");
    }
    return tt;
}

void oxl_tensor_types_free(oxl_tensor_types *tt) {
    if (tt == NULL) {
        return;
    }
#ifndef OXL_SUBSET
    for (size_t i = 0; i < tt->n; i++) {
        pcre2_code_free(tt->v[i].code);
    }
    pcre2_match_data_free(tt->md);
#endif
    free(tt->v);
    free(tt);
}

size_t oxl_tensor_types_count(const oxl_tensor_types *tt) { return tt ? tt->n : 0; }

#ifndef OXL_SUBSET
/* The bytes of s (n of them) as 32-bit code units, one per byte, in a new buffer. */
static uint32_t *oxl_units(const char *s, size_t n, bool lower) {
    uint32_t *u = malloc((n + 1) * sizeof *u);
    if (u != NULL) {
        for (size_t i = 0; i < n; i++) {
            const unsigned char c = (unsigned char)s[i];
            u[i] = lower ? (uint32_t)tolower(c) : c;
        }
        u[n] = 0;
    }
    return u;
}
#endif

int oxl_tensor_types_add(oxl_tensor_types *tt, const char *arg, oxl_error *err) {
    const char *sep = strchr(arg, '=');
    if (sep == NULL) {
        return oxl_err_set(err, "--tensor-type: malformed value '%s' (expected PATTERN=TYPE)", arg);
    }
    if (sep == arg) {
        return oxl_err_set(err, "--tensor-type: missing tensor name pattern in '%s'", arg);
    }
    if (sep[1] == '\0') {
        return oxl_err_set(err, "--tensor-type: missing type in '%s'", arg);
    }
    oxl_type type;
    if (oxl_quant_type_parse("--tensor-type", sep + 1, &type, err) < 0) {
        return -1;
    }
#ifdef OXL_SUBSET
    (void)tt;
    return oxl_err_set(err, "--tensor-type: '%s': this build has no regex engine (PCRE2)", arg);
#else
    if (tt->n == tt->cap) {
        const size_t cap = tt->cap ? 2 * tt->cap : 8;
        oxl_tensor_type *v = realloc(tt->v, cap * sizeof *v);
        if (v == NULL) {
            return oxl_err_set(err, "out of memory");
        }
        tt->v = v;
        tt->cap = cap;
    }
    const size_t n = (size_t)(sep - arg);
    uint32_t *pat = oxl_units(arg, n, true);
    if (pat == NULL) {
        return oxl_err_set(err, "out of memory");
    }
    int ecode = 0;
    PCRE2_SIZE eoff = 0;
    pcre2_code *code = pcre2_compile(pat, n, PCRE2_DOLLAR_ENDONLY, &ecode, &eoff, NULL);
    free(pat);
    if (code == NULL) {
        PCRE2_UCHAR msg32[256];
        char msg[256];
        const int len = pcre2_get_error_message(ecode, msg32, 256);
        size_t i = 0;
        for (; len > 0 && i < (size_t)len && i + 1 < sizeof msg; i++) {
            msg[i] = msg32[i] < 128 ? (char)msg32[i] : '?';
        }
        msg[i] = '\0';
        return oxl_err_set(err, "--tensor-type: invalid regex '%.*s' at offset %zu: %s", (int)n, arg, (size_t)eoff,
                           msg);
    }
    if (tt->md == NULL && (tt->md = pcre2_match_data_create(1, NULL)) == NULL) {
        pcre2_code_free(code);
        return oxl_err_set(err, "out of memory");
    }
    tt->v[tt->n++] = (oxl_tensor_type){.code = code, .type = type};
    return 0;
#endif
}

bool oxl_tensor_types_match(void *ctx, const char *name, oxl_type *type) {
    oxl_tensor_types *tt = ctx;
    if (tt == NULL || tt->n == 0) {
        return false;
    }
#ifdef OXL_SUBSET
    (void)name;
    (void)type;
    return false;
#else
    const size_t n = strlen(name);
    uint32_t *subject = oxl_units(name, n, false);
    if (subject == NULL) {
        return false;
    }
    bool found = false;
    for (size_t i = 0; i < tt->n && !found; i++) {
        if (pcre2_match(tt->v[i].code, subject, n, 0, 0, tt->md, NULL) >= 0) {
            *type = tt->v[i].type;
            found = true;
        }
    }
    free(subject);
    return found;
#endif
}

/* ---- --override-kv ---- */

int oxl_kv_override_parse(const char *arg, oxl_kv_override *out, oxl_error *err) {
    memset(out, 0, sizeof *out);
    const char *sep = strchr(arg, '=');
    if (sep == NULL || sep == arg || (size_t)(sep - arg) >= sizeof out->key) {
        return oxl_err_set(err, "--override-kv: malformed value '%s' (expected KEY=TYPE:VALUE, KEY of 1 to %zu bytes)",
                           arg, sizeof out->key - 1);
    }
    memcpy(out->key, arg, (size_t)(sep - arg));
    const char *v = sep + 1;
    char *end = NULL;
    if (strncmp(v, "int:", 4) == 0) {
        v += 4;
        out->tag = OXL_KV_OVERRIDE_INT;
        errno = 0;
        out->val_i64 = strtoll(v, &end, 10);
        if (end == v || *end != '\0' || errno == ERANGE) {
            return oxl_err_set(err, "--override-kv: invalid int value in '%s'", arg);
        }
    } else if (strncmp(v, "float:", 6) == 0) {
        v += 6;
        out->tag = OXL_KV_OVERRIDE_FLOAT;
        out->val_f64 = strtod(v, &end);
        if (end == v || *end != '\0' || isspace((unsigned char)*v)) {
            return oxl_err_set(err, "--override-kv: invalid float value in '%s'", arg);
        }
    } else if (strncmp(v, "bool:", 5) == 0) {
        v += 5;
        out->tag = OXL_KV_OVERRIDE_BOOL;
        if (strcmp(v, "true") == 0) {
            out->val_bool = true;
        } else if (strcmp(v, "false") == 0) {
            out->val_bool = false;
        } else {
            return oxl_err_set(err, "--override-kv: invalid boolean value in '%s' (true or false)", arg);
        }
    } else if (strncmp(v, "str:", 4) == 0) {
        v += 4;
        out->tag = OXL_KV_OVERRIDE_STR;
        if (strlen(v) >= sizeof out->val_str) {
            return oxl_err_set(err, "--override-kv: malformed value '%s', value cannot exceed %zu bytes", arg,
                               sizeof out->val_str - 1);
        }
        strcpy(out->val_str, v);
    } else {
        return oxl_err_set(err, "--override-kv: invalid type in '%s' (int, float, bool or str)", arg);
    }
    return 0;
}
