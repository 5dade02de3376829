/* Jinja values: the arena, constructors, Python's str()/repr() of values, json.dumps as the
 * HuggingFace `tojson` filter calls it (ensure_ascii=False, default separators), Python equality
 * and ordering, and UTF-8 helpers. */
#include "jinja_internal.h"

#include "errors.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* --- arena ----------------------------------------------------------------------------------- */
struct jj_chunk {
    jj_chunk *next;
    size_t size, used;
    _Alignas(16) unsigned char data[];
};

void *jj_alloc(jj_arena *a, size_t n) {
    n = (n + 15) & ~(size_t)15;
    if (n == 0) {
        n = 16;
    }
    jj_chunk *c = a->head;
    if (!c || c->size - c->used < n) {
        size_t size = n > 60000 ? n : 60000;
        if (a->cap && a->used + size + sizeof(jj_chunk) > a->cap) {
            return NULL;
        }
        c = malloc(sizeof(jj_chunk) + size);
        if (!c) {
            return NULL;
        }
        c->size = size;
        c->used = 0;
        c->next = a->head;
        a->head = c;
        a->used += size + sizeof(jj_chunk);
    }
    void *p = c->data + c->used;
    c->used += n;
    memset(p, 0, n);
    return p;
}

void jj_arena_free(jj_arena *a) {
    jj_chunk *c = a->head;
    while (c) {
        jj_chunk *next = c->next;
        free(c);
        c = next;
    }
    a->head = NULL;
    a->used = 0;
}

/* --- buffer ---------------------------------------------------------------------------------- */
bool jj_buf_put(jj_buf *b, const char *s, size_t n) {
    if (b->limit && b->n + n > b->limit) {
        return false;
    }
    if (b->n + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap * 2 : 256;
        while (cap < b->n + n + 1) {
            cap *= 2;
        }
        char *p = jj_alloc(b->arena, cap);
        if (!p) {
            return false;
        }
        if (b->n) {
            memcpy(p, b->s, b->n);
        }
        b->s = p;
        b->cap = cap;
    }
    memcpy(b->s + b->n, s, n);
    b->n += n;
    b->s[b->n] = 0;
    return true;
}

static bool buf_puts(jj_buf *b, const char *s) { return jj_buf_put(b, s, strlen(s)); }

/* --- constructors ---------------------------------------------------------------------------- */
jv *jv_new(jj_arena *a, jv_type t) {
    jv *v = jj_alloc(a, sizeof(jv));
    if (v) {
        v->type = (uint8_t)t;
    }
    return v;
}

jv *jv_str_ref(jj_arena *a, const char *s, size_t n) {
    jv *v = jv_new(a, JV_STR);
    if (v) {
        v->str.s = s;
        v->str.n = n;
    }
    return v;
}

jv *jv_str(jj_arena *a, const char *s, size_t n) {
    char *p = jj_alloc(a, n + 1);
    if (!p) {
        return NULL;
    }
    if (n) {
        memcpy(p, s, n);
    }
    return jv_str_ref(a, p, n);
}

jv *jv_int(jj_arena *a, int64_t i) {
    jv *v = jv_new(a, JV_INT);
    if (v) {
        v->i = i;
    }
    return v;
}

jv *jv_float(jj_arena *a, double f) {
    jv *v = jv_new(a, JV_FLOAT);
    if (v) {
        v->f = f;
    }
    return v;
}

jv *jv_bool(jj_arena *a, bool b) {
    jv *v = jv_new(a, JV_BOOL);
    if (v) {
        v->b = b;
    }
    return v;
}

jv *jv_undef(jj_arena *a, const char *hint) {
    jv *v = jv_new(a, JV_UNDEF);
    if (v) {
        v->undef.hint = hint;
    }
    return v;
}

bool jv_list_push(jj_arena *a, jv *l, jv *item) {
    if (!item) {
        return false;
    }
    if (l->list.n == l->list.cap) {
        size_t cap = l->list.cap ? l->list.cap * 2 : 4;
        jv **p = jj_alloc(a, cap * sizeof(jv *));
        if (!p) {
            return false;
        }
        if (l->list.n) {
            memcpy(p, l->list.items, l->list.n * sizeof(jv *));
        }
        l->list.items = p;
        l->list.cap = cap;
    }
    l->list.items[l->list.n++] = item;
    return true;
}

jv *jv_dict_getv(const jv *d, const jv *k) {
    for (size_t i = 0; i < d->dict.n; i++) {
        if (jv_equal(d->dict.keys[i], k)) {
            return d->dict.vals[i];
        }
    }
    return NULL;
}

jv *jv_dict_get(const jv *d, const char *k, size_t n) {
    for (size_t i = 0; i < d->dict.n; i++) {
        const jv *key = d->dict.keys[i];
        if (key->type == JV_STR && key->str.n == n && !memcmp(key->str.s, k, n)) {
            return d->dict.vals[i];
        }
    }
    return NULL;
}

bool jv_dict_set(jj_arena *a, jv *d, jv *k, jv *v) {
    if (!k || !v) {
        return false;
    }
    for (size_t i = 0; i < d->dict.n; i++) {
        if (jv_equal(d->dict.keys[i], k)) {
            d->dict.vals[i] = v;
            return true;
        }
    }
    if (d->dict.n == d->dict.cap) {
        size_t cap = d->dict.cap ? d->dict.cap * 2 : 4;
        jv **pk = jj_alloc(a, cap * sizeof(jv *));
        jv **pv = jj_alloc(a, cap * sizeof(jv *));
        if (!pk || !pv) {
            return false;
        }
        if (d->dict.n) {
            memcpy(pk, d->dict.keys, d->dict.n * sizeof(jv *));
            memcpy(pv, d->dict.vals, d->dict.n * sizeof(jv *));
        }
        d->dict.keys = pk;
        d->dict.vals = pv;
        d->dict.cap = cap;
    }
    d->dict.keys[d->dict.n] = k;
    d->dict.vals[d->dict.n] = v;
    d->dict.n++;
    return true;
}

/* JSON numbers that are integral and fit int64 become ints (cJSON keeps no trace of "1.0"). */
jv *jv_from_json(jj_arena *a, const cJSON *j, oxl_error *err) {
    if (cJSON_IsNull(j)) {
        return jv_new(a, JV_NONE);
    }
    if (cJSON_IsBool(j)) {
        return jv_bool(a, cJSON_IsTrue(j));
    }
    if (cJSON_IsNumber(j)) {
        double d = j->valuedouble;
        if (d == floor(d) && fabs(d) < 9.2e18) {
            return jv_int(a, (int64_t)d);
        }
        return jv_float(a, d);
    }
    if (cJSON_IsString(j)) {
        size_t n = strlen(j->valuestring);
        if (!jj_utf8_valid(j->valuestring, n)) {
            oxl_err_set(err, "context string \"%.40s\" is not valid UTF-8", j->valuestring);
            return NULL;
        }
        return jv_str(a, j->valuestring, n);
    }
    if (cJSON_IsArray(j)) {
        jv *l = jv_new(a, JV_LIST);
        if (!l) {
            return NULL;
        }
        for (const cJSON *c = j->child; c; c = c->next) {
            jv *item = jv_from_json(a, c, err);
            if (!item || !jv_list_push(a, l, item)) {
                return NULL;
            }
        }
        return l;
    }
    if (cJSON_IsObject(j)) {
        jv *d = jv_new(a, JV_DICT);
        if (!d) {
            return NULL;
        }
        for (const cJSON *c = j->child; c; c = c->next) {
            jv *item = jv_from_json(a, c, err);
            const char *k = c->string ? c->string : "";
            if (!item || !jv_dict_set(a, d, jv_str(a, k, strlen(k)), item)) {
                return NULL;
            }
        }
        return d;
    }
    oxl_err_set(err, "context holds a JSON value of an unknown kind");
    return NULL;
}

/* --- Python semantics -------------------------------------------------------------------------- */
bool jv_truthy(const jv *v) {
    switch (v->type) {
    case JV_UNDEF:
    case JV_NONE: return false;
    case JV_BOOL: return v->b;
    case JV_INT: return v->i != 0;
    case JV_FLOAT: return v->f != 0.0;
    case JV_STR: return v->str.n != 0;
    case JV_LIST: return (v->flags & JF_GEN) || v->list.n != 0;
    case JV_DICT: return (v->flags & JF_NS) || v->dict.n != 0;
    default: return true;
    }
}

bool jv_is_number(const jv *v) { return v->type == JV_INT || v->type == JV_FLOAT || v->type == JV_BOOL; }

double jv_num(const jv *v) {
    return v->type == JV_FLOAT ? v->f : v->type == JV_INT ? (double)v->i : v->type == JV_BOOL ? (double)v->b : 0.0;
}

bool jv_equal(const jv *x, const jv *y) {
    if (jv_is_number(x) && jv_is_number(y)) {
        if (x->type != JV_FLOAT && y->type != JV_FLOAT) {
            int64_t a = x->type == JV_BOOL ? x->b : x->i, b = y->type == JV_BOOL ? y->b : y->i;
            return a == b;
        }
        return jv_num(x) == jv_num(y);
    }
    if (x->type != y->type) {
        return false;
    }
    switch (x->type) {
    case JV_UNDEF:
    case JV_NONE: return true;
    case JV_STR: return x->str.n == y->str.n && !memcmp(x->str.s, y->str.s, x->str.n);
    case JV_LIST:
        if ((x->flags | y->flags) & JF_GEN) {
            return x == y;
        }
        if ((x->flags & JF_TUPLE) != (y->flags & JF_TUPLE) || x->list.n != y->list.n) {
            return false;
        }
        for (size_t i = 0; i < x->list.n; i++) {
            if (!jv_equal(x->list.items[i], y->list.items[i])) {
                return false;
            }
        }
        return true;
    case JV_DICT:
        if ((x->flags | y->flags) & JF_NS) {
            return x == y;
        }
        if (x->dict.n != y->dict.n) {
            return false;
        }
        for (size_t i = 0; i < x->dict.n; i++) {
            const jv *o = jv_dict_getv(y, x->dict.keys[i]);
            if (!o || !jv_equal(x->dict.vals[i], o)) {
                return false;
            }
        }
        return true;
    default: return x == y;
    }
}

int jv_compare(const jv *x, const jv *y) {
    if (jv_is_number(x) && jv_is_number(y)) {
        if (x->type != JV_FLOAT && y->type != JV_FLOAT) {
            int64_t a = x->type == JV_BOOL ? x->b : x->i, b = y->type == JV_BOOL ? y->b : y->i;
            return a < b ? -1 : a > b;
        }
        double a = jv_num(x), b = jv_num(y);
        return a < b ? -1 : a > b;
    }
    if (x->type == JV_STR && y->type == JV_STR) {
        size_t n = x->str.n < y->str.n ? x->str.n : y->str.n;
        int c = memcmp(x->str.s, y->str.s, n);
        if (c) {
            return c < 0 ? -1 : 1;
        }
        return x->str.n < y->str.n ? -1 : x->str.n > y->str.n;
    }
    if (x->type == JV_LIST && y->type == JV_LIST && !((x->flags | y->flags) & JF_GEN) &&
        (x->flags & JF_TUPLE) == (y->flags & JF_TUPLE)) {
        for (size_t i = 0; i < x->list.n && i < y->list.n; i++) {
            if (!jv_equal(x->list.items[i], y->list.items[i])) {
                return jv_compare(x->list.items[i], y->list.items[i]);
            }
        }
        return x->list.n < y->list.n ? -1 : x->list.n > y->list.n;
    }
    return -2;
}

const char *jv_type_name(const jv *v) {
    switch (v->type) {
    case JV_UNDEF: return "Undefined";
    case JV_NONE: return "NoneType";
    case JV_BOOL: return "bool";
    case JV_INT: return "int";
    case JV_FLOAT: return "float";
    case JV_STR: return "str";
    case JV_LIST: return v->flags & JF_GEN ? "generator" : v->flags & JF_TUPLE ? "tuple" : "list";
    case JV_DICT: return v->flags & JF_NS ? "Namespace" : "dict";
    case JV_METHOD: return "builtin_function_or_method";
    case JV_MACRO: return "Macro";
    case JV_LOOP: return "LoopContext";
    default: return "function";
    }
}

/* --- UTF-8 ----------------------------------------------------------------------------------- */
size_t jj_utf8_len(const char *s, size_t n) {
    size_t c = 0;
    for (size_t i = 0; i < n; i++) {
        c += ((unsigned char)s[i] & 0xC0) != 0x80;
    }
    return c;
}

size_t jj_utf8_off(const char *s, size_t n, size_t cp) {
    size_t i = 0;
    while (i < n && cp > 0) {
        i++;
        while (i < n && ((unsigned char)s[i] & 0xC0) == 0x80) {
            i++;
        }
        cp--;
    }
    return i;
}

bool jj_utf8_valid(const char *s, size_t n) {
    const unsigned char *u = (const unsigned char *)s;
    for (size_t i = 0; i < n;) {
        unsigned c = u[i];
        size_t len;
        unsigned cp;
        if (c < 0x80) {
            i++;
            continue;
        } else if ((c & 0xE0) == 0xC0) {
            len = 2, cp = c & 0x1F;
        } else if ((c & 0xF0) == 0xE0) {
            len = 3, cp = c & 0x0F;
        } else if ((c & 0xF8) == 0xF0) {
            len = 4, cp = c & 0x07;
        } else {
            return false;
        }
        if (i + len > n) {
            return false;
        }
        for (size_t k = 1; k < len; k++) {
            if ((u[i + k] & 0xC0) != 0x80) {
                return false;
            }
            cp = (cp << 6) | (u[i + k] & 0x3F);
        }
        if ((len == 2 && cp < 0x80) || (len == 3 && cp < 0x800) || (len == 4 && (cp < 0x10000 || cp > 0x10FFFF)) ||
            (cp >= 0xD800 && cp <= 0xDFFF)) {
            return false;
        }
        i += len;
    }
    return true;
}

/* --- printing -------------------------------------------------------------------------------- */
void jj_fmt_float(double f, char out[32]) {
    if (isnan(f)) {
        strcpy(out, "nan");
        return;
    }
    if (isinf(f)) {
        strcpy(out, f < 0 ? "-inf" : "inf");
        return;
    }
    /* shortest digits that round-trip, then Python's repr layout */
    char tmp[40];
    int prec = 1;
    for (; prec <= 17; prec++) {
        snprintf(tmp, sizeof tmp, "%.*e", prec - 1, f);
        if (strtod(tmp, NULL) == f) {
            break;
        }
    }
    char digits[24];
    int nd = 0;
    const char *p = tmp;
    bool neg = false;
    if (*p == '-') {
        neg = true;
        p++;
    }
    for (; *p && *p != 'e'; p++) {
        if (*p != '.') {
            digits[nd++] = *p;
        }
    }
    int exp10 = atoi(p + 1);
    while (nd > 1 && digits[nd - 1] == '0') {
        nd--;
    }
    digits[nd] = 0;
    char *o = out;
    if (neg) {
        *o++ = '-';
    }
    if (exp10 < -4 || exp10 >= 16) {
        *o++ = digits[0];
        if (nd > 1) {
            *o++ = '.';
            memcpy(o, digits + 1, (size_t)nd - 1);
            o += nd - 1;
        }
        sprintf(o, "e%c%02d", exp10 < 0 ? '-' : '+', exp10 < 0 ? -exp10 : exp10);
    } else if (exp10 < 0) {
        *o++ = '0';
        *o++ = '.';
        for (int i = 0; i < -exp10 - 1; i++) {
            *o++ = '0';
        }
        memcpy(o, digits, (size_t)nd);
        o[nd] = 0;
    } else {
        for (int i = 0; i <= exp10; i++) {
            *o++ = i < nd ? digits[i] : '0';
        }
        *o++ = '.';
        if (nd > exp10 + 1) {
            memcpy(o, digits + exp10 + 1, (size_t)(nd - exp10 - 1));
            o += nd - exp10 - 1;
        } else {
            *o++ = '0';
        }
        *o = 0;
    }
}

static bool repr_str(jj_buf *b, const char *s, size_t n) {
    bool has_sq = memchr(s, '\'', n) != NULL, has_dq = memchr(s, '"', n) != NULL;
    char q = has_sq && !has_dq ? '"' : '\'';
    if (!jj_buf_put(b, &q, 1)) {
        return false;
    }
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        char esc[8];
        const char *e = NULL;
        if (c == '\\') {
            e = "\\\\";
        } else if (c == (unsigned char)q) {
            e = q == '\'' ? "\\'" : "\\\"";
        } else if (c == '\n') {
            e = "\\n";
        } else if (c == '\r') {
            e = "\\r";
        } else if (c == '\t') {
            e = "\\t";
        } else if (c < 0x20 || c == 0x7f) {
            snprintf(esc, sizeof esc, "\\x%02x", c);
            e = esc;
        }
        if (e ? !buf_puts(b, e) : !jj_buf_put(b, s + i, 1)) {
            return false;
        }
    }
    return jj_buf_put(b, &q, 1);
}

static bool print_value(jj_buf *b, const jv *v, bool repr) {
    char tmp[64];
    switch (v->type) {
    case JV_UNDEF: return true;
    case JV_NONE: return buf_puts(b, "None");
    case JV_BOOL: return buf_puts(b, v->b ? "True" : "False");
    case JV_INT: snprintf(tmp, sizeof tmp, "%lld", (long long)v->i); return buf_puts(b, tmp);
    case JV_FLOAT: jj_fmt_float(v->f, tmp); return buf_puts(b, tmp);
    case JV_STR: return repr ? repr_str(b, v->str.s, v->str.n) : jj_buf_put(b, v->str.s, v->str.n);
    case JV_LIST: {
        if (v->flags & JF_GEN) {
            return buf_puts(b, "<generator object>");
        }
        bool tuple = v->flags & JF_TUPLE;
        if (!buf_puts(b, tuple ? "(" : "[")) {
            return false;
        }
        for (size_t i = 0; i < v->list.n; i++) {
            if ((i && !buf_puts(b, ", ")) || !print_value(b, v->list.items[i], true)) {
                return false;
            }
        }
        if (tuple && v->list.n == 1 && !buf_puts(b, ",")) {
            return false;
        }
        return buf_puts(b, tuple ? ")" : "]");
    }
    case JV_DICT: {
        if (v->flags & JF_NS) {
            return buf_puts(b, "<Namespace>");
        }
        if (!buf_puts(b, "{")) {
            return false;
        }
        for (size_t i = 0; i < v->dict.n; i++) {
            if ((i && !buf_puts(b, ", ")) || !print_value(b, v->dict.keys[i], true) || !buf_puts(b, ": ") ||
                !print_value(b, v->dict.vals[i], true)) {
                return false;
            }
        }
        return buf_puts(b, "}");
    }
    case JV_METHOD: snprintf(tmp, sizeof tmp, "<built-in method %s>", v->method.name); return buf_puts(b, tmp);
    case JV_MACRO: snprintf(tmp, sizeof tmp, "<Macro '%.40s'>", v->macro.node->str); return buf_puts(b, tmp);
    case JV_FUNC: return buf_puts(b, v->func.body ? "<Macro anonymous>" : "<function>");
    case JV_LOOP: return buf_puts(b, "<LoopContext>");
    default: return buf_puts(b, "<function>");
    }
}

bool jv_to_str(jj_buf *b, const jv *v) { return print_value(b, v, false); }
bool jv_repr(jj_buf *b, const jv *v) { return print_value(b, v, true); }

/* --- JSON ------------------------------------------------------------------------------------ */
static bool json_str(jj_buf *b, const char *s, size_t n, bool ascii) {
    if (!buf_puts(b, "\"")) {
        return false;
    }
    size_t run = 0;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        const char *e = NULL;
        char esc[16];
        switch (c) {
        case '"': e = "\\\""; break;
        case '\\': e = "\\\\"; break;
        case '\n': e = "\\n"; break;
        case '\r': e = "\\r"; break;
        case '\t': e = "\\t"; break;
        case '\b': e = "\\b"; break;
        case '\f': e = "\\f"; break;
        default:
            if (c < 0x20) {
                snprintf(esc, sizeof esc, "\\u%04x", c);
                e = esc;
            }
        }
        if (e) {
            if (!jj_buf_put(b, s + run, i - run) || !buf_puts(b, e)) {
                return false;
            }
            run = i + 1;
        } else if (ascii && c >= 0x80) {
            /* \uXXXX, with a surrogate pair above the BMP */
            size_t len = (c & 0xE0) == 0xC0 ? 2 : (c & 0xF0) == 0xE0 ? 3 : 4;
            if (i + len > n) {
                len = n - i;
            }
            unsigned cp = len == 2 ? c & 0x1Fu : len == 3 ? c & 0x0Fu : c & 0x07u;
            for (size_t k = 1; k < len; k++) {
                cp = (cp << 6) | ((unsigned char)s[i + k] & 0x3Fu);
            }
            if (cp >= 0x10000) {
                cp -= 0x10000;
                snprintf(esc, sizeof esc, "\\u%04x", 0xD800 + (cp >> 10));
                char esc2[16];
                snprintf(esc2, sizeof esc2, "\\u%04x", 0xDC00 + (cp & 0x3FF));
                if (!jj_buf_put(b, s + run, i - run) || !buf_puts(b, esc) || !buf_puts(b, esc2)) {
                    return false;
                }
            } else {
                snprintf(esc, sizeof esc, "\\u%04x", cp);
                if (!jj_buf_put(b, s + run, i - run) || !buf_puts(b, esc)) {
                    return false;
                }
            }
            i += len - 1;
            run = i + 1;
        }
    }
    return jj_buf_put(b, s + run, n - run) && buf_puts(b, "\"");
}

static bool json_nl(jj_buf *b, int indent, int depth) {
    if (!buf_puts(b, "\n")) {
        return false;
    }
    for (int i = 0; i < indent * depth; i++) {
        if (!buf_puts(b, " ")) {
            return false;
        }
    }
    return true;
}

bool jv_to_json(jj_buf *b, const jv *v, const jj_json_opts *o, int depth, const jv **bad) {
    char tmp[64];
    if (depth > 200) {
        *bad = v;
        return false;
    }
    const char *item_sep = o->item_sep ? o->item_sep : o->indent >= 0 ? "," : ", ";
    const char *key_sep = o->key_sep ? o->key_sep : ": ";
    switch (v->type) {
    case JV_NONE: return buf_puts(b, "null");
    case JV_BOOL: return buf_puts(b, v->b ? "true" : "false");
    case JV_INT: snprintf(tmp, sizeof tmp, "%lld", (long long)v->i); return buf_puts(b, tmp);
    case JV_FLOAT:
        if (isnan(v->f)) {
            return buf_puts(b, "NaN");
        }
        if (isinf(v->f)) {
            return buf_puts(b, v->f < 0 ? "-Infinity" : "Infinity");
        }
        jj_fmt_float(v->f, tmp);
        return buf_puts(b, tmp);
    case JV_STR: return json_str(b, v->str.s, v->str.n, o->ascii);
    case JV_LIST:
        if (v->flags & JF_GEN) {
            break;
        }
        if (v->list.n == 0) {
            return buf_puts(b, "[]");
        }
        if (!buf_puts(b, "[")) {
            return false;
        }
        for (size_t i = 0; i < v->list.n; i++) {
            if (i && !buf_puts(b, item_sep)) {
                return false;
            }
            if (o->indent >= 0 && !json_nl(b, o->indent, depth + 1)) {
                return false;
            }
            if (!jv_to_json(b, v->list.items[i], o, depth + 1, bad)) {
                return false;
            }
        }
        if (o->indent >= 0 && !json_nl(b, o->indent, depth)) {
            return false;
        }
        return buf_puts(b, "]");
    case JV_DICT: {
        if (v->flags & JF_NS) {
            break;
        }
        if (v->dict.n == 0) {
            return buf_puts(b, "{}");
        }
        /* the order of the entries: as inserted, or by key (sort_keys; an insertion sort, stable) */
        size_t *order = jj_alloc(b->arena, v->dict.n * sizeof(size_t));
        if (!order) {
            return false;
        }
        for (size_t i = 0; i < v->dict.n; i++) {
            size_t j = i;
            while (o->sort_keys && j > 0) {
                int c = jv_compare(v->dict.keys[order[j - 1]], v->dict.keys[i]);
                if (c == -2) {
                    *bad = v; /* keys that do not order: the dict is the culprit */
                    return false;
                }
                if (c <= 0) {
                    break;
                }
                order[j] = order[j - 1];
                j--;
            }
            order[j] = i;
        }
        if (!buf_puts(b, "{")) {
            return false;
        }
        for (size_t e = 0; e < v->dict.n; e++) {
            size_t i = order[e];
            const jv *k = v->dict.keys[i];
            if (e && !buf_puts(b, item_sep)) {
                return false;
            }
            if (o->indent >= 0 && !json_nl(b, o->indent, depth + 1)) {
                return false;
            }
            bool ok;
            if (k->type == JV_STR) {
                ok = json_str(b, k->str.s, k->str.n, o->ascii);
            } else if (k->type == JV_INT || k->type == JV_FLOAT || k->type == JV_BOOL || k->type == JV_NONE) {
                jj_buf kb = {.arena = b->arena};
                ok = jv_to_json(&kb, k, o, depth, bad) && buf_puts(b, "\"") && jj_buf_put(b, kb.s, kb.n) &&
                     buf_puts(b, "\"");
            } else {
                *bad = k;
                return false;
            }
            if (!ok || !buf_puts(b, key_sep) || !jv_to_json(b, v->dict.vals[i], o, depth + 1, bad)) {
                return false;
            }
        }
        if (o->indent >= 0 && !json_nl(b, o->indent, depth)) {
            return false;
        }
        return buf_puts(b, "}");
    }
    default: break;
    }
    *bad = v;
    return false;
}
