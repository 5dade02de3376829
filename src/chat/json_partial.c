/* JSON values that may be cut short (json_partial.h): the healing rules of llama.cpp's
 * common/json-partial.cpp (common_json_parse) and nlohmann::json's dump format. */
#include "json_partial.h"

#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_DEPTH 512

/* --- growing strings ------------------------------------------------------------------------- */

typedef struct jbuf {
    char *p;
    size_t n, cap;
    bool oom;
} jbuf;

static void jput(jbuf *b, const char *s, size_t n) {
    if (b->oom) {
        return;
    }
    if (b->n + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 64;
        while (cap < b->n + n + 1) {
            cap *= 2;
        }
        char *q = realloc(b->p, cap);
        if (!q) {
            b->oom = true;
            return;
        }
        b->p = q;
        b->cap = cap;
    }
    if (n) {
        memcpy(b->p + b->n, s, n);
    }
    b->n += n;
    b->p[b->n] = 0;
}
static void jputs(jbuf *b, const char *s) { jput(b, s, strlen(s)); }

/* --- the reader ------------------------------------------------------------------------------ */

/* The open containers as nlohmann's SAX events leave them (json_error_locator's stack). */
enum { EL_OBJECT, EL_KEY, EL_ARRAY };

typedef struct jreader {
    const char *p, *end;
    bool build;      /* make cJSON nodes */
    const char *err; /* where the first error was seen (the offending byte, or end) */
    unsigned char stack[MAX_DEPTH * 2 + 2];
    int n_stack, depth;
    bool oom;
} jreader;

static bool jws(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }
static void skip(jreader *r) {
    while (r->p < r->end && jws(*r->p)) {
        r->p++;
    }
}
static bool fail(jreader *r, const char *at) {
    if (!r->err) {
        r->err = at;
    }
    return false;
}
static void push(jreader *r, unsigned char t) { r->stack[r->n_stack++] = t; }
static void close_value(jreader *r) {
    if (r->n_stack > 0 && r->stack[r->n_stack - 1] == EL_KEY) {
        r->n_stack--;
    }
}

static int hex4(const char *p, const char *end, const char **bad) {
    int v = 0;
    for (int i = 0; i < 4; i++) {
        if (p + i >= end) {
            *bad = end;
            return -1;
        }
        char c = p[i];
        int d = c >= '0' && c <= '9'   ? c - '0'
                : c >= 'a' && c <= 'f' ? c - 'a' + 10
                : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                       : -1;
        if (d < 0) {
            *bad = p + i;
            return -1;
        }
        v = v * 16 + d;
    }
    return v;
}

static void put_utf8(jbuf *b, uint32_t cp) {
    char u[4];
    size_t n;
    if (cp < 0x80) {
        u[0] = (char)cp;
        n = 1;
    } else if (cp < 0x800) {
        u[0] = (char)(0xC0 | (cp >> 6));
        u[1] = (char)(0x80 | (cp & 0x3F));
        n = 2;
    } else if (cp < 0x10000) {
        u[0] = (char)(0xE0 | (cp >> 12));
        u[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
        u[2] = (char)(0x80 | (cp & 0x3F));
        n = 3;
    } else {
        u[0] = (char)(0xF0 | (cp >> 18));
        u[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
        u[2] = (char)(0x80 | ((cp >> 6) & 0x3F));
        u[3] = (char)(0x80 | (cp & 0x3F));
        n = 4;
    }
    jput(b, u, n);
}

/* Length of the well-formed UTF-8 sequence at p (0 when malformed or cut by end); *cp its value. */
static size_t utf8_seq(const unsigned char *p, const unsigned char *end, uint32_t *cp) {
    unsigned c = p[0];
    size_t n = c < 0x80 ? 1 : (c & 0xE0) == 0xC0 ? 2 : (c & 0xF0) == 0xE0 ? 3 : (c & 0xF8) == 0xF0 ? 4 : 0;
    if (n == 0 || (size_t)(end - p) < n) {
        return 0;
    }
    uint32_t v = n == 1 ? c : n == 2 ? c & 0x1F : n == 3 ? c & 0x0F : c & 0x07;
    for (size_t i = 1; i < n; i++) {
        if ((p[i] & 0xC0) != 0x80) {
            return 0;
        }
        v = (v << 6) | (p[i] & 0x3F);
    }
    static const uint32_t min[5] = {0, 0, 0x80, 0x800, 0x10000};
    if (v < min[n] || v > 0x10FFFF || (v >= 0xD800 && v <= 0xDFFF)) {
        return 0;
    }
    *cp = v;
    return n;
}

/* A string at r->p (on its opening quote); its text goes to out when given. */
static bool read_string(jreader *r, jbuf *out) {
    const char *p = r->p + 1;
    for (;;) {
        if (p >= r->end) {
            return fail(r, r->end);
        }
        unsigned char c = (unsigned char)*p;
        if (c == '"') {
            r->p = p + 1;
            return true;
        }
        if (c < 0x20) {
            return fail(r, p);
        }
        if (c == '\\') {
            if (p + 1 >= r->end) {
                return fail(r, r->end);
            }
            char e = p[1];
            const char *esc = strchr("\"\\/bfnrt", e);
            if (e && esc) {
                static const char val[] = "\"\\/\b\f\n\r\t";
                if (out) {
                    jput(out, &val[esc - "\"\\/bfnrt"], 1);
                }
                p += 2;
                continue;
            }
            if (e != 'u') {
                return fail(r, p + 1);
            }
            const char *bad = NULL;
            int hi = hex4(p + 2, r->end, &bad);
            if (hi < 0) {
                return fail(r, bad);
            }
            p += 6;
            uint32_t cp = (uint32_t)hi;
            if (hi >= 0xD800 && hi <= 0xDBFF) {
                if (p + 1 >= r->end) {
                    return fail(r, r->end);
                }
                if (p[0] != '\\' || p[1] != 'u') {
                    return fail(r, p);
                }
                int lo = hex4(p + 2, r->end, &bad);
                if (lo < 0) {
                    return fail(r, bad);
                }
                if (lo < 0xDC00 || lo > 0xDFFF) {
                    return fail(r, p + 5);
                }
                p += 6;
                cp = 0x10000 + (((uint32_t)hi - 0xD800) << 10) + ((uint32_t)lo - 0xDC00);
            } else if (hi >= 0xDC00 && hi <= 0xDFFF) {
                return fail(r, p - 1);
            }
            if (out) {
                put_utf8(out, cp);
            }
            continue;
        }
        uint32_t cp = 0;
        size_t n = utf8_seq((const unsigned char *)p, (const unsigned char *)r->end, &cp);
        if (n == 0) {
            /* a sequence cut by the end of the input is truncation, anything else an error */
            size_t want = c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : c >= 0xC0 ? 2 : 0;
            bool cut = want && (size_t)(r->end - p) < want;
            for (size_t i = 1; cut && p + i < r->end; i++) {
                cut = ((unsigned char)p[i] & 0xC0) == 0x80;
            }
            return fail(r, cut ? r->end : p);
        }
        if (out) {
            jput(out, p, n);
        }
        p += n;
    }
}

/* The shortest digits that read back as d (d > 0, finite): digits into dig, returns the count;
 * *exp10 is the exponent of the first digit. */
static int shortest_digits(double d, char *dig, int *exp10) {
    char buf[40];
    for (int prec = 0; prec < 17; prec++) {
        snprintf(buf, sizeof buf, "%.*e", prec, d);
        if (strtod(buf, NULL) == d || prec == 16) {
            break;
        }
    }
    int n = 0;
    const char *q = buf;
    for (; *q && *q != 'e'; q++) {
        if (*q >= '0' && *q <= '9') {
            dig[n++] = *q;
        }
    }
    *exp10 = *q == 'e' ? atoi(q + 1) : 0;
    while (n > 1 && dig[n - 1] == '0') {
        n--;
    }
    dig[n] = 0;
    return n;
}

/* d as nlohmann's to_chars writes a double (grisu2 digits, format_buffer with exponents -4..15). */
static void format_double(double d, char *out, size_t cap) {
    if (!isfinite(d)) {
        snprintf(out, cap, "null");
        return;
    }
    char s[64];
    size_t o = 0;
    if (signbit(d)) {
        s[o++] = '-';
        d = -d;
    }
    if (d == 0) {
        memcpy(s + o, "0.0", 4);
        snprintf(out, cap, "%s", s);
        return;
    }
    char dig[24];
    int e10 = 0;
    int k = shortest_digits(d, dig, &e10);
    int n = e10 + 1; /* the decimal point's place after the first digit */
    if (k <= n && n <= 15) {
        memcpy(s + o, dig, (size_t)k);
        o += (size_t)k;
        for (int i = k; i < n; i++) {
            s[o++] = '0';
        }
        s[o++] = '.';
        s[o++] = '0';
    } else if (0 < n && n <= 15) {
        memcpy(s + o, dig, (size_t)n);
        o += (size_t)n;
        s[o++] = '.';
        memcpy(s + o, dig + n, (size_t)(k - n));
        o += (size_t)(k - n);
    } else if (-4 < n && n <= 0) {
        s[o++] = '0';
        s[o++] = '.';
        for (int i = 0; i < -n; i++) {
            s[o++] = '0';
        }
        memcpy(s + o, dig, (size_t)k);
        o += (size_t)k;
    } else {
        s[o++] = dig[0];
        if (k > 1) {
            s[o++] = '.';
            memcpy(s + o, dig + 1, (size_t)(k - 1));
            o += (size_t)(k - 1);
        }
        int e = n - 1;
        s[o++] = 'e';
        s[o++] = e < 0 ? '-' : '+';
        e = e < 0 ? -e : e;
        o += (size_t)snprintf(s + o, sizeof s - o, e < 10 ? "0%d" : "%d", e);
    }
    s[o] = 0;
    snprintf(out, cap, "%s", s);
}

/* A number's text as nlohmann dumps what it parses from it: integers that fit 64 bits stay
 * integers, others are doubles. */
static void normalize_number(const char *a, size_t n, char *out, size_t cap, double *value) {
    char t[512];
    if (n >= sizeof t) {
        n = sizeof t - 1; /* a longer number is cut: its value is still a double */
    }
    memcpy(t, a, n);
    t[n] = 0;
    *value = strtod(t, NULL);
    if (!strpbrk(t, ".eE")) {
        errno = 0;
        if (t[0] == '-') {
            long long v = strtoll(t, NULL, 10);
            if (errno == 0) {
                snprintf(out, cap, "%lld", v);
                return;
            }
        } else {
            unsigned long long v = strtoull(t, NULL, 10);
            if (errno == 0) {
                snprintf(out, cap, "%llu", v);
                return;
            }
        }
    }
    format_double(*value, out, cap);
}

static bool digit(char c) { return c >= '0' && c <= '9'; }

static cJSON *read_value(jreader *r, bool *ok);

static cJSON *node(jreader *r, cJSON *n) {
    if (r->build && !n) {
        r->oom = true;
    }
    return n;
}

static cJSON *read_number(jreader *r, bool *ok) {
    const char *a = r->p, *p = r->p, *e = r->end;
    if (p < e && *p == '-') {
        p++;
    }
    if (p >= e) {
        *ok = fail(r, e);
        return NULL;
    }
    if (*p == '0') {
        p++;
    } else if (digit(*p)) {
        while (p < e && digit(*p)) {
            p++;
        }
    } else {
        *ok = fail(r, p);
        return NULL;
    }
    if (p < e && *p == '.') {
        p++;
        if (p >= e || !digit(*p)) {
            *ok = fail(r, p >= e ? e : p);
            return NULL;
        }
        while (p < e && digit(*p)) {
            p++;
        }
    }
    if (p < e && (*p == 'e' || *p == 'E')) {
        p++;
        if (p < e && (*p == '+' || *p == '-')) {
            p++;
        }
        if (p >= e || !digit(*p)) {
            *ok = fail(r, p >= e ? e : p);
            return NULL;
        }
        while (p < e && digit(*p)) {
            p++;
        }
    }
    r->p = p;
    close_value(r);
    *ok = true;
    if (!r->build) {
        return NULL;
    }
    char text[64];
    double v = 0;
    normalize_number(a, (size_t)(p - a), text, sizeof text, &v);
    cJSON *n = node(r, cJSON_CreateNumber(v));
    if (n) {
        /* nlohmann's spelling rides along in valuestring (cJSON_Delete frees it) */
        n->valuestring = strdup(text);
        r->oom |= !n->valuestring;
    }
    return n;
}

static cJSON *read_value(jreader *r, bool *ok) {
    skip(r);
    *ok = false;
    if (r->p >= r->end) {
        fail(r, r->end);
        return NULL;
    }
    char c = *r->p;
    if (c == '{' || c == '[') {
        if (r->depth >= MAX_DEPTH) {
            fail(r, r->p);
            return NULL;
        }
        bool obj = c == '{';
        r->depth++;
        push(r, obj ? EL_OBJECT : EL_ARRAY);
        r->p++;
        cJSON *v = r->build ? node(r, obj ? cJSON_CreateObject() : cJSON_CreateArray()) : NULL;
        skip(r);
        if (r->p < r->end && *r->p == (obj ? '}' : ']')) {
            r->p++;
        } else {
            for (;;) {
                jbuf key = {0};
                if (obj) {
                    skip(r);
                    if (r->p >= r->end || *r->p != '"') {
                        fail(r, r->p >= r->end ? r->end : r->p);
                        goto bad;
                    }
                    if (!read_string(r, r->build ? &key : NULL)) {
                        free(key.p);
                        goto bad;
                    }
                    push(r, EL_KEY);
                    skip(r);
                    if (r->p >= r->end || *r->p != ':') {
                        free(key.p);
                        fail(r, r->p >= r->end ? r->end : r->p);
                        goto bad;
                    }
                    r->p++;
                }
                bool vok = false;
                cJSON *item = read_value(r, &vok);
                if (!vok) {
                    free(key.p);
                    cJSON_Delete(item);
                    goto bad;
                }
                if (r->build && v && item) {
                    if (obj) {
                        cJSON_AddItemToObject(v, key.p ? key.p : "", item);
                    } else {
                        cJSON_AddItemToArray(v, item);
                    }
                } else {
                    cJSON_Delete(item);
                }
                r->oom |= key.oom;
                free(key.p);
                skip(r);
                if (r->p >= r->end) {
                    fail(r, r->end);
                    goto bad;
                }
                if (*r->p == ',') {
                    r->p++;
                    continue;
                }
                if (*r->p == (obj ? '}' : ']')) {
                    r->p++;
                    break;
                }
                fail(r, r->p);
                goto bad;
            }
        }
        r->n_stack--;
        close_value(r);
        r->depth--;
        *ok = true;
        return v;
    bad:
        cJSON_Delete(v);
        return NULL;
    }
    if (c == '"') {
        jbuf s = {0};
        if (!read_string(r, r->build ? &s : NULL)) {
            free(s.p);
            return NULL;
        }
        close_value(r);
        *ok = true;
        cJSON *v = r->build ? node(r, cJSON_CreateString(s.p ? s.p : "")) : NULL;
        r->oom |= s.oom;
        free(s.p);
        return v;
    }
    static const char *const lits[] = {"true", "false", "null"};
    for (int i = 0; i < 3; i++) {
        if (c != lits[i][0]) {
            continue;
        }
        size_t k = strlen(lits[i]);
        for (size_t j = 1; j < k; j++) {
            if (r->p + j >= r->end) {
                fail(r, r->end);
                return NULL;
            }
            if (r->p[j] != lits[i][j]) {
                fail(r, r->p + j);
                return NULL;
            }
        }
        r->p += k;
        close_value(r);
        *ok = true;
        return r->build ? node(r, i == 0   ? cJSON_CreateTrue()
                                  : i == 1 ? cJSON_CreateFalse()
                                           : cJSON_CreateNull())
                        : NULL;
    }
    if (c == '-' || digit(c)) {
        return read_number(r, ok);
    }
    fail(r, r->p);
    return NULL;
}

/* Reads one value from [p, end) followed by nothing but whitespace. */
static cJSON *read_whole(jreader *r, bool *ok) {
    cJSON *v = read_value(r, ok);
    if (*ok) {
        skip(r);
        if (r->p < r->end) {
            *ok = fail(r, r->p);
        }
    }
    if (!*ok || r->oom) {
        cJSON_Delete(v);
        *ok = *ok && !r->oom;
        return NULL;
    }
    return v;
}

static bool can_parse(const char *s, size_t n) {
    jreader r = {.p = s, .end = s + n};
    bool ok = false;
    read_whole(&r, &ok);
    return ok;
}

cJSON *oxl_json_parse_strict(const char *p, const char *end) {
    jreader r = {.p = p, .end = end, .build = true};
    bool ok = false;
    return read_whole(&r, &ok);
}

/* --- healing (common_json_parse) ------------------------------------------------------------ */

/* str + a + closing parses */
static bool can_parse_with(jbuf *t, const jbuf *str, const char *a, const char *closing) {
    t->n = 0;
    jput(t, str->p, str->n);
    jputs(t, a);
    jputs(t, closing);
    return !t->oom && can_parse(t->p, t->n);
}

bool oxl_json_heal_parse(const char *p, const char *end, const char *marker, oxl_json_heal *out) {
    memset(out, 0, sizeof *out);
    jreader r = {.p = p, .end = end};
    bool ok = false;
    read_whole(&r, &ok);
    if (ok) {
        out->json = oxl_json_parse_strict(p, end);
        out->after = end;
        return out->json != NULL;
    }
    const char *stop = r.err ? r.err : end;
    /* a whole value followed by other text */
    if ((out->json = oxl_json_parse_strict(p, stop)) != NULL) {
        out->after = stop;
        return true;
    }
    if (!marker || !*marker || strlen(marker) >= sizeof out->marker) {
        return false;
    }
    jbuf str = {0}, t = {0}, closing = {0};
    jput(&str, p, (size_t)(stop - p));
    const size_t n = str.n;
    size_t last = n;
    while (last > 0 && jws(str.p[last - 1])) {
        last--;
    }
    const char lc = last > 0 ? str.p[last - 1] : 0; /* the last character that is not a space */
    const char tail = n > 0 ? str.p[n - 1] : 0;
    const bool maybe_number = !(n > 0 && jws(tail)) && (digit(lc) || lc == '.' || lc == 'e' || lc == 'E' || lc == '-');
    char m_str[40], m_colon[44], m_comma[44], m_bs[40];
    snprintf(m_str, sizeof m_str, "\"%s", marker);
    snprintf(m_colon, sizeof m_colon, ":\"%s", marker);
    snprintf(m_comma, sizeof m_comma, ",\"%s", marker);
    snprintf(m_bs, sizeof m_bs, "\\%s", marker);
    const char *dm = NULL; /* the dump marker */
    bool healed = false;
    if (r.n_stack > 0 && last > 0) {
        for (int i = r.n_stack; i > 0; i--) {
            if (r.stack[i - 1] == EL_OBJECT) {
                jputs(&closing, "}");
            } else if (r.stack[i - 1] == EL_ARRAY) {
                jputs(&closing, "]");
            }
        }
        const char *cl = closing.p ? closing.p : "";
        const int top = r.stack[r.n_stack - 1];
        const char *suffix = NULL; /* str += dm + suffix + closing */
        const char *cut_at = NULL; /* else: cut back past the last of these, then add "marker" */
        if (top == EL_KEY) {
            if (lc == ':' && can_parse_with(&t, &str, "1", cl)) {
                dm = m_str, suffix = "\"";
            } else if (can_parse_with(&t, &str, ": 1", cl)) {
                dm = m_colon, suffix = "\"";
            } else if (lc == '{' && can_parse_with(&t, &str, "", cl)) {
                dm = m_str, suffix = "\": 1";
            } else if (can_parse_with(&t, &str, "\"", cl)) {
                dm = marker, suffix = "\"";
            } else if (tail == '\\' && can_parse_with(&t, &str, "\\\"", cl)) {
                dm = m_bs, suffix = "\"";
            } else {
                cut_at = ":";
            }
        } else if (top == EL_ARRAY) {
            if ((lc == ',' || lc == '[') && can_parse_with(&t, &str, "1", cl)) {
                dm = m_str, suffix = "\"";
            } else if (can_parse_with(&t, &str, "\"", cl)) {
                dm = marker, suffix = "\"";
            } else if (tail == '\\' && can_parse_with(&t, &str, "\\\"", cl)) {
                dm = m_bs, suffix = "\"";
            } else if (!maybe_number && can_parse_with(&t, &str, ", 1", cl)) {
                dm = m_comma, suffix = "\"";
            } else {
                cut_at = "[,";
            }
        } else {
            if ((lc == '{' && can_parse_with(&t, &str, "", cl)) ||
                (lc == ',' && can_parse_with(&t, &str, "\"\": 1", cl))) {
                dm = m_str, suffix = "\": 1";
            } else if (!maybe_number && can_parse_with(&t, &str, ",\"\": 1", cl)) {
                dm = m_comma, suffix = "\": 1";
            } else if (can_parse_with(&t, &str, "\": 1", cl)) {
                dm = marker, suffix = "\": 1";
            } else if (tail == '\\' && can_parse_with(&t, &str, "\\\": 1", cl)) {
                dm = m_bs, suffix = "\": 1";
            } else {
                cut_at = ":";
            }
        }
        if (cut_at) {
            size_t k = n;
            while (k > 0 && !(str.p[k - 1] && strchr(cut_at, str.p[k - 1]))) {
                k--;
            }
            if (k > 0) {
                str.n = k;
                str.p[k] = 0;
                dm = m_str, suffix = "\"";
            }
        }
        if (dm) {
            jputs(&str, dm);
            jputs(&str, suffix);
            jputs(&str, cl);
            healed = true;
        }
    } else if (r.n_stack == 0 && n > 0) {
        /* a top-level string cut short */
        if (can_parse_with(&t, &str, "\"", "")) {
            dm = marker;
        } else if (tail == '\\' && can_parse_with(&t, &str, "\\\"", "")) {
            dm = m_bs;
        }
        if (dm) {
            jputs(&str, dm);
            jputs(&str, "\"");
            healed = true;
        }
    }
    if (healed && !str.oom && (out->json = oxl_json_parse_strict(str.p, str.p + str.n)) != NULL) {
        snprintf(out->marker, sizeof out->marker, "%s", marker);
        snprintf(out->dump_marker, sizeof out->dump_marker, "%s", dm);
        out->after = stop;
    }
    free(str.p);
    free(t.p);
    free(closing.p);
    return out->json != NULL;
}

/* --- the dump (nlohmann::json::dump) -------------------------------------------------------- */

static void dump_string(jbuf *b, const char *s, bool ascii) {
    jputs(b, "\"");
    const unsigned char *p = (const unsigned char *)s, *end = p + strlen(s);
    while (p < end) {
        unsigned c = *p;
        char esc[16];
        const char *short_esc = c == '\b'   ? "\\b"
                                : c == '\t' ? "\\t"
                                : c == '\n' ? "\\n"
                                : c == '\f' ? "\\f"
                                : c == '\r' ? "\\r"
                                : c == '"'  ? "\\\""
                                : c == '\\' ? "\\\\"
                                            : NULL;
        if (short_esc) {
            jputs(b, short_esc);
            p++;
            continue;
        }
        if (c < 0x20 || (ascii && c == 0x7F)) {
            snprintf(esc, sizeof esc, "\\u%04x", c);
            jputs(b, esc);
            p++;
            continue;
        }
        if (c < 0x80) {
            jput(b, (const char *)p, 1);
            p++;
            continue;
        }
        uint32_t cp = 0xFFFD;
        size_t n = utf8_seq(p, end, &cp);
        if (n == 0) {
            cp = 0xFFFD; /* not UTF-8: written as the replacement character */
            n = 1;
        }
        if (!ascii) {
            if (cp == 0xFFFD && n == 1) {
                jputs(b, "\xEF\xBF\xBD");
            } else {
                jput(b, (const char *)p, n);
            }
        } else if (cp <= 0xFFFF) {
            snprintf(esc, sizeof esc, "\\u%04x", (unsigned)cp);
            jputs(b, esc);
        } else {
            snprintf(esc, sizeof esc, "\\u%04x\\u%04x", (unsigned)(0xD7C0 + (cp >> 10)),
                     (unsigned)(0xDC00 + (cp & 0x3FF)));
            jputs(b, esc);
        }
        p += n;
    }
    jputs(b, "\"");
}

static void dump_value(jbuf *b, const cJSON *v, bool ascii, int depth) {
    if (depth > MAX_DEPTH * 2) {
        jputs(b, "null");
        return;
    }
    if (cJSON_IsObject(v) || cJSON_IsArray(v)) {
        bool obj = cJSON_IsObject(v);
        jputs(b, obj ? "{" : "[");
        for (const cJSON *c = v->child; c; c = c->next) {
            if (obj) {
                dump_string(b, c->string ? c->string : "", ascii);
                jputs(b, ":");
            }
            dump_value(b, c, ascii, depth + 1);
            if (c->next) {
                jputs(b, ",");
            }
        }
        jputs(b, obj ? "}" : "]");
    } else if (cJSON_IsString(v)) {
        dump_string(b, v->valuestring ? v->valuestring : "", ascii);
    } else if (cJSON_IsNumber(v)) {
        char t[64];
        if (v->valuestring) {
            jputs(b, v->valuestring);
        } else {
            double d = v->valuedouble;
            if (isfinite(d) && d == floor(d) && fabs(d) < 9.2e18) {
                snprintf(t, sizeof t, "%lld", (long long)d);
            } else {
                format_double(d, t, sizeof t);
            }
            jputs(b, t);
        }
    } else if (cJSON_IsTrue(v)) {
        jputs(b, "true");
    } else if (cJSON_IsFalse(v)) {
        jputs(b, "false");
    } else {
        jputs(b, "null");
    }
}

char *oxl_json_dump(const cJSON *v, bool ensure_ascii) {
    jbuf b = {0};
    jput(&b, "", 0);
    dump_value(&b, v, ensure_ascii, 0);
    if (b.oom) {
        free(b.p);
        return NULL;
    }
    return b.p;
}

/* --- dumped arguments (common_chat_msg_parser::try_consume_json_with_dumped_args) ----------- */

typedef struct heal_walk {
    const oxl_json_paths *paths;
    const oxl_json_heal *h;
    const char *path[2];
    int depth;
    bool found; /* the marker was met: the value is cut */
} heal_walk;

static bool on_path(const heal_walk *w, const char *const (*list)[2], int n_list) {
    for (int i = 0; i < n_list; i++) {
        const char *const *a = list[i];
        int n = a[0] ? (a[1] ? 2 : 1) : 0;
        if (n == w->depth && (n < 1 || !strcmp(a[0], w->path[0])) && (n < 2 || !strcmp(a[1], w->path[1]))) {
            return true;
        }
    }
    return false;
}

static cJSON *walk(heal_walk *w, const cJSON *j) {
    const char *mk = w->h->marker;
    if (on_path(w, w->paths->args, w->paths->n_args)) {
        char *a = oxl_json_dump(j, true);
        if (!a) {
            return NULL;
        }
        if (mk[0]) {
            char *m = strstr(a, w->h->dump_marker);
            if (m) {
                *m = 0;
                w->found = true;
            }
            if (!strcmp(a, "\"")) {
                a[0] = 0; /* the marker completed `"arguments": "` */
            }
        }
        cJSON *s = cJSON_CreateString(a);
        free(a);
        return s;
    }
    if (on_path(w, w->paths->content, w->paths->n_content) && cJSON_IsString(j)) {
        char *m = mk[0] ? strstr(j->valuestring, mk) : NULL;
        if (!m) {
            return cJSON_CreateString(j->valuestring);
        }
        w->found = true;
        char *t = strndup(j->valuestring, (size_t)(m - j->valuestring));
        cJSON *s = t ? cJSON_CreateString(t) : NULL;
        free(t);
        return s;
    }
    if (cJSON_IsObject(j)) {
        cJSON *obj = cJSON_CreateObject();
        for (const cJSON *c = j->child; c && obj; c = c->next) {
            const char *key = c->string ? c->string : "";
            if (mk[0] && strstr(key, mk)) {
                w->found = true;
                break;
            }
            int d = w->depth;
            if (d < 2) {
                w->path[d] = key;
            }
            w->depth++;
            cJSON *v = NULL;
            bool stop = false;
            if (cJSON_IsString(c) && mk[0] && strstr(c->valuestring, mk)) {
                /* a string cut short: kept (cut) only at a content path healed inside the string */
                w->found = stop = true;
                if (on_path(w, w->paths->content, w->paths->n_content) && !strcmp(mk, w->h->dump_marker)) {
                    v = walk(w, c);
                }
            } else {
                v = cJSON_IsString(c) ? cJSON_Duplicate(c, true) : walk(w, c);
            }
            w->depth = d;
            if (v) {
                cJSON_AddItemToObject(obj, key, v);
            }
            if (stop) {
                break;
            }
        }
        return obj;
    }
    if (cJSON_IsArray(j)) {
        cJSON *arr = cJSON_CreateArray();
        for (const cJSON *c = j->child; c && arr; c = c->next) {
            if (mk[0] && cJSON_IsString(c) && strstr(c->valuestring, mk)) {
                w->found = true; /* array strings are not healed */
                break;
            }
            cJSON *v = walk(w, c);
            if (v) {
                cJSON_AddItemToArray(arr, v);
            }
        }
        return arr;
    }
    return cJSON_Duplicate(j, true);
}

cJSON *oxl_json_with_dumped_args(const char *p, const char *end, const char *marker, const oxl_json_paths *paths,
                                 bool *is_partial, const char **after) {
    oxl_json_heal h;
    if (is_partial) {
        *is_partial = false;
    }
    if (!oxl_json_heal_parse(p, end, marker, &h)) {
        return NULL;
    }
    if (after) {
        *after = h.after;
    }
    if (!h.marker[0] && paths->n_args == 0) {
        return h.json; /* whole, nothing to dump */
    }
    heal_walk w = {.paths = paths, .h = &h};
    cJSON *v = walk(&w, h.json);
    cJSON_Delete(h.json);
    if (is_partial) {
        *is_partial = w.found;
    }
    return v;
}
