/* JSON schema -> GBNF grammar, as llama.cpp's json_schema_to_grammar (common/json-schema-to-grammar.cpp,
 * class common_schema_converter) writes it: the same rules, names and text, so that a schema gives
 * the grammar llama.cpp's tests expect (golden/json_schema/cases.json). The schema is read with cJSON;
 * JSON values inside the grammar (const, enum, property names) are written compactly as
 * nlohmann::json's dump() does.
 *
 * One difference: cJSON does not keep whether a number was written with a fraction, so a constant
 * 1.0 is written "1" where llama.cpp writes "1.0" (integral values print as integers). Remote
 * $refs (https://...) are refused: nothing is fetched.
 *
 * Bounds for hostile schemas: cJSON limits nesting (1000 levels); a $ref cycle is cut as llama.cpp
 * cuts it (a rule being resolved is referred to by name); the grammar text is capped at
 * OXL_JSON_SCHEMA_MAX_GRAMMAR bytes. */
#include "json_schema.h"
#include "errors.h"
#include "oxillama.h"

#include <cjson/cJSON.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define OXL_JSON_SCHEMA_MAX_GRAMMAR (16u << 20)
#define MAX_ERRORS 32

/* --- strings ------------------------------------------------------------------------------------- */

typedef struct sb {
    char *p;
    size_t n, cap;
    bool oom;
} sb;

static void sb_putn(sb *s, const char *t, size_t n) {
    if (s->oom) {
        return;
    }
    if (s->n + n + 1 > s->cap) {
        size_t cap = s->cap ? s->cap : 64;
        while (cap < s->n + n + 1) {
            cap *= 2;
        }
        char *p = cap <= OXL_JSON_SCHEMA_MAX_GRAMMAR * 2 ? realloc(s->p, cap) : NULL;
        if (!p) {
            s->oom = true;
            return;
        }
        s->p = p;
        s->cap = cap;
    }
    memcpy(s->p + s->n, t, n);
    s->n += n;
    s->p[s->n] = 0;
}

static void sb_puts(sb *s, const char *t) { sb_putn(s, t, strlen(t)); }

static void sb_putc(sb *s, char c) { sb_putn(s, &c, 1); }

__attribute__((format(printf, 2, 3))) static void sb_printf(sb *s, const char *fmt, ...) {
    char buf[128];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    sb_putn(s, buf, n < 0 ? 0 : (size_t)n < sizeof buf ? (size_t)n : sizeof buf - 1);
}

/* --- the converter ------------------------------------------------------------------------------- */

typedef struct rule {
    char *name, *body;
} rule;

typedef struct ref_entry {
    char *ref;
    const cJSON *target; /* NULL: a null schema */
} ref_entry;

typedef struct conv {
    rule *rules; /* sorted by name (llama.cpp's std::map) */
    size_t n_rules, cap_rules;
    ref_entry *refs;
    size_t n_refs, cap_refs;
    char **resolving;
    size_t n_resolving, cap_resolving;
    char **garbage; /* strings freed at the end */
    size_t n_garbage, cap_garbage;
    size_t total; /* bytes of rule text */
    char *errors[MAX_ERRORS];
    int n_errors;
    bool oom;
    const cJSON *root;
} conv;

static bool push(void **arr, size_t *n, size_t *cap, size_t elem, const void *item) {
    if (*n == *cap) {
        size_t c = *cap ? *cap * 2 : 16;
        void *p = realloc(*arr, c * elem);
        if (!p) {
            return false;
        }
        *arr = p;
        *cap = c;
    }
    memcpy((char *)*arr + *n * elem, item, elem);
    (*n)++;
    return true;
}

/* Keeps s until the end of the conversion; returns it ("" when out of memory). */
static char *keep(conv *c, char *s) {
    if (!s || !push((void **)&c->garbage, &c->n_garbage, &c->cap_garbage, sizeof s, &s)) {
        free(s);
        c->oom = true;
        return "";
    }
    return s;
}

static char *kstr(conv *c, const char *s) { return keep(c, strdup(s)); }

static char *ksb(conv *c, sb *s) {
    if (s->oom) {
        free(s->p);
        c->oom = true;
        return "";
    }
    return keep(c, s->p ? s->p : strdup(""));
}

__attribute__((format(printf, 2, 3))) static char *kfmt(conv *c, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    char *p = n >= 0 ? malloc((size_t)n + 1) : NULL;
    if (p) {
        va_start(ap, fmt);
        vsnprintf(p, (size_t)n + 1, fmt, ap);
        va_end(ap);
    }
    return keep(c, p);
}

__attribute__((format(printf, 2, 3))) static void add_error(conv *c, const char *fmt, ...) {
    if (c->n_errors == MAX_ERRORS) {
        return;
    }
    char buf[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    c->errors[c->n_errors] = strdup(buf);
    if (c->errors[c->n_errors]) {
        c->n_errors++;
    } else {
        c->oom = true;
    }
}

static rule *find_rule(conv *c, const char *name) {
    size_t lo = 0, hi = c->n_rules;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        int d = strcmp(c->rules[mid].name, name);
        if (d == 0) {
            return &c->rules[mid];
        }
        if (d < 0) {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    return NULL;
}

static void set_rule(conv *c, const char *name, const char *body) {
    rule *r = find_rule(c, name);
    c->total += strlen(name) + strlen(body) + 6;
    if (c->total > OXL_JSON_SCHEMA_MAX_GRAMMAR) {
        if (c->n_errors == 0 || strstr(c->errors[c->n_errors - 1], "larger than") == NULL) {
            add_error(c, "the grammar would be larger than %u MiB", OXL_JSON_SCHEMA_MAX_GRAMMAR >> 20);
        }
        return;
    }
    if (r) {
        r->body = kstr(c, body);
        return;
    }
    rule nr = {kstr(c, name), kstr(c, body)};
    if (!push((void **)&c->rules, &c->n_rules, &c->cap_rules, sizeof nr, &nr)) {
        c->oom = true;
        return;
    }
    size_t i = c->n_rules - 1;
    while (i > 0 && strcmp(c->rules[i - 1].name, nr.name) > 0) {
        c->rules[i] = c->rules[i - 1];
        i--;
    }
    c->rules[i] = nr;
}

/* Runs of characters other than [a-zA-Z0-9-] as one '-' (INVALID_RULE_CHARS_RE). */
static char *rule_chars(conv *c, const char *name) {
    sb s = {0};
    sb_puts(&s, "");
    for (const char *p = name; *p;) {
        unsigned char ch = (unsigned char)*p;
        bool ok = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') || ch == '-';
        if (ok) {
            sb_putc(&s, (char)ch);
            p++;
            continue;
        }
        sb_putc(&s, '-');
        while (*p) {
            ch = (unsigned char)*p;
            if ((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') || ch == '-') {
                break;
            }
            p++;
        }
    }
    return ksb(c, &s);
}

/* _add_rule: the name made of rule characters; a different rule already under it gets the first
 * free numbered name (name0, name1, ...). */
static char *add_rule(conv *c, const char *name, const char *body) {
    char *esc = rule_chars(c, name);
    rule *r = find_rule(c, esc);
    if (!r || !strcmp(r->body, body)) {
        set_rule(c, esc, body);
        return esc;
    }
    for (unsigned i = 0;; i++) {
        char *key = kfmt(c, "%s%u", esc, i);
        r = find_rule(c, key);
        if (!r || !strcmp(r->body, body) || c->oom) {
            set_rule(c, key, body);
            return key;
        }
    }
}

/* --- built-in rules ------------------------------------------------------------------------------ */

typedef struct builtin {
    const char *name, *content;
    const char *deps[6];
} builtin;

static const builtin PRIMITIVES[] = {
    {"boolean", "(\"true\" | \"false\")", {NULL}},
    {"decimal-part", "[0-9]{1,16}", {NULL}},
    {"integral-part", "[0] | [1-9] [0-9]{0,15}", {NULL}},
    {"number",
     "(\"-\"? integral-part) (\".\" decimal-part)? ([eE] [-+]? integral-part)?",
     {"integral-part", "decimal-part", NULL}},
    {"integer", "(\"-\"? integral-part)", {"integral-part", NULL}},
    {"value",
     "object | array | string | number | boolean | null",
     {"object", "array", "string", "number", "boolean", "null"}},
    {"object",
     "\"{\" space ( string \":\" space value (\",\" space string \":\" space value)* )? space \"}\"",
     {"string", "value", NULL}},
    {"array", "\"[\" space ( value (\",\" space value)* )? space \"]\"", {"value", NULL}},
    {"uuid",
     "\"\\\"\" [0-9a-fA-F]{8} \"-\" [0-9a-fA-F]{4} \"-\" [0-9a-fA-F]{4} \"-\" [0-9a-fA-F]{4} \"-\" "
     "[0-9a-fA-F]{12} \"\\\"\"",
     {NULL}},
    {"char", "[^\"\\\\\\x7F\\x00-\\x1F] | [\\\\] ([\"\\\\bfnrt] | \"u\" [0-9a-fA-F]{4})", {NULL}},
    {"string", "\"\\\"\" char* \"\\\"\"", {"char", NULL}},
    {"null", "\"null\"", {NULL}},
};

static const builtin STRING_FORMATS[] = {
    {"date", "[0-9]{4} \"-\" ( \"0\" [1-9] | \"1\" [0-2] ) \"-\" ( \"0\" [1-9] | [1-2] [0-9] | \"3\" [0-1] )", {NULL}},
    {"time",
     "([01] [0-9] | \"2\" [0-3]) \":\" [0-5] [0-9] \":\" [0-5] [0-9] ( \".\" [0-9]{3} )? ( \"Z\" | ( \"+\" | \"-\" ) "
     "( [01] [0-9] | \"2\" [0-3] ) \":\" [0-5] [0-9] )",
     {NULL}},
    {"date-time", "date \"T\" time", {"date", "time", NULL}},
    {"date-string", "\"\\\"\" date \"\\\"\"", {"date", NULL}},
    {"time-string", "\"\\\"\" time \"\\\"\"", {"time", NULL}},
    {"date-time-string", "\"\\\"\" date-time \"\\\"\"", {"date-time", NULL}},
};

#define SPACE_RULE "| \" \" | \"\\n\"{1,2} [ \\t]{0,20}"

static const builtin *find_builtin(const builtin *t, size_t n, const char *name) {
    for (size_t i = 0; i < n; i++) {
        if (!strcmp(t[i].name, name)) {
            return &t[i];
        }
    }
    return NULL;
}

#define N_PRIM (sizeof PRIMITIVES / sizeof PRIMITIVES[0])
#define N_FMT (sizeof STRING_FORMATS / sizeof STRING_FORMATS[0])

static bool is_reserved(const char *name) {
    return !strcmp(name, "root") || find_builtin(PRIMITIVES, N_PRIM, name) || find_builtin(STRING_FORMATS, N_FMT, name);
}

static char *add_primitive(conv *c, const char *name, const builtin *b) {
    char *n = add_rule(c, name, b->content);
    for (int i = 0; i < 6 && b->deps[i]; i++) {
        const builtin *d = find_builtin(PRIMITIVES, N_PRIM, b->deps[i]);
        if (!d) {
            d = find_builtin(STRING_FORMATS, N_FMT, b->deps[i]);
        }
        if (!find_rule(c, b->deps[i])) {
            add_primitive(c, b->deps[i], d);
        }
    }
    return n;
}

static char *prim(conv *c, const char *name, const char *kind) {
    return add_primitive(c, name, find_builtin(PRIMITIVES, N_PRIM, kind));
}

/* --- JSON text as nlohmann::json's dump() writes it ----------------------------------------------- */

/* The length of the valid UTF-8 sequence at s, 0 when invalid. */
static int utf8_len(const unsigned char *s) {
    unsigned ch = s[0];
    int len = ch < 0x80                  ? 1
              : ch >= 0xC2 && ch <= 0xDF ? 2
              : ch >= 0xE0 && ch <= 0xEF ? 3
              : ch >= 0xF0 && ch <= 0xF4 ? 4
                                         : 0;
    for (int i = 1; i < len; i++) {
        if ((s[i] & 0xC0) != 0x80) {
            return 0;
        }
    }
    if (len > 1 && ((ch == 0xE0 && s[1] < 0xA0) || (ch == 0xED && s[1] > 0x9F) || (ch == 0xF0 && s[1] < 0x90) ||
                    (ch == 0xF4 && s[1] > 0x8F))) {
        return 0;
    }
    return len;
}

static void dump_string(conv *c, sb *s, const char *str) {
    sb_putc(s, '"');
    for (const unsigned char *p = (const unsigned char *)str; *p;) {
        switch (*p) {
        case '"': sb_puts(s, "\\\""); break;
        case '\\': sb_puts(s, "\\\\"); break;
        case '\b': sb_puts(s, "\\b"); break;
        case '\f': sb_puts(s, "\\f"); break;
        case '\n': sb_puts(s, "\\n"); break;
        case '\r': sb_puts(s, "\\r"); break;
        case '\t': sb_puts(s, "\\t"); break;
        default:
            if (*p < 0x20) {
                sb_printf(s, "\\u%04x", *p);
            } else {
                int n = utf8_len(p);
                if (n == 0) {
                    add_error(c, "a string of the schema is not valid UTF-8");
                    return;
                }
                sb_putn(s, (const char *)p, (size_t)n);
                p += n;
                continue;
            }
        }
        p++;
    }
    sb_putc(s, '"');
}

/* A double as nlohmann's dump: integral values as integers (see the top comment), others in the
 * shortest form that reads back, with its layout (fixed for exponents -4..15, else d.ddde+XX). */
static void dump_number(sb *s, double x) {
    if (!isfinite(x)) {
        sb_puts(s, "null");
        return;
    }
    if (x == floor(x) && fabs(x) < 9007199254740992.0) {
        sb_printf(s, "%.0f", x);
        return;
    }
    char buf[40];
    int prec = 0;
    for (prec = 0; prec < 17; prec++) {
        snprintf(buf, sizeof buf, "%.*e", prec, x);
        if (strtod(buf, NULL) == x) {
            break;
        }
    }
    snprintf(buf, sizeof buf, "%.*e", prec, x);
    const char *p = buf;
    if (*p == '-') {
        sb_putc(s, '-');
        p++;
    }
    char digits[24];
    int k = 0;
    for (; *p && *p != 'e'; p++) {
        if (*p != '.') {
            digits[k++] = *p;
        }
    }
    while (k > 1 && digits[k - 1] == '0') {
        k--;
    }
    digits[k] = 0;
    int e10 = atoi(p + 1);
    int n = e10 + 1; /* the decimal point's position */
    if (k <= n && n <= 15) {
        sb_puts(s, digits);
        for (int i = k; i < n; i++) {
            sb_putc(s, '0');
        }
        sb_puts(s, ".0");
    } else if (0 < n && n <= 15) {
        sb_putn(s, digits, (size_t)n);
        sb_putc(s, '.');
        sb_puts(s, digits + n);
    } else if (-4 < n && n <= 0) {
        sb_puts(s, "0.");
        for (int i = 0; i < -n; i++) {
            sb_putc(s, '0');
        }
        sb_puts(s, digits);
    } else {
        sb_putc(s, digits[0]);
        if (k > 1) {
            sb_putc(s, '.');
            sb_puts(s, digits + 1);
        }
        int ex = n - 1;
        sb_printf(s, "e%c%02d", ex < 0 ? '-' : '+', ex < 0 ? -ex : ex);
    }
}

static void dump(conv *c, sb *s, const cJSON *v) {
    if (!v || cJSON_IsNull(v)) {
        sb_puts(s, "null");
    } else if (cJSON_IsTrue(v)) {
        sb_puts(s, "true");
    } else if (cJSON_IsFalse(v)) {
        sb_puts(s, "false");
    } else if (cJSON_IsNumber(v)) {
        dump_number(s, v->valuedouble);
    } else if (cJSON_IsString(v)) {
        dump_string(c, s, v->valuestring);
    } else if (cJSON_IsArray(v) || cJSON_IsObject(v)) {
        bool obj = cJSON_IsObject(v);
        sb_putc(s, obj ? '{' : '[');
        for (const cJSON *x = v->child; x; x = x->next) {
            if (x != v->child) {
                sb_putc(s, ',');
            }
            if (obj) {
                dump_string(c, s, x->string);
                sb_putc(s, ':');
            }
            dump(c, s, x);
        }
        sb_putc(s, obj ? '}' : ']');
    }
}

static char *dump_text(conv *c, const cJSON *v) {
    sb s = {0};
    sb_puts(&s, "");
    dump(c, &s, v);
    return ksb(c, &s);
}

/* format_literal: the text in double quotes with \r \n " \ escaped. */
static char *format_literal(conv *c, const char *lit) {
    sb s = {0};
    sb_putc(&s, '"');
    for (const char *p = lit; *p; p++) {
        switch (*p) {
        case '\r': sb_puts(&s, "\\r"); break;
        case '\n': sb_puts(&s, "\\n"); break;
        case '"': sb_puts(&s, "\\\""); break;
        case '\\': sb_puts(&s, "\\\\"); break;
        default: sb_putc(&s, *p);
        }
    }
    sb_putc(&s, '"');
    return ksb(c, &s);
}

static char *constant_rule(conv *c, const cJSON *v) { return format_literal(c, dump_text(c, v)); }

/* --- repetitions and integer ranges ---------------------------------------------------------------- */

static char *build_repetition(conv *c, const char *item, int min_items, int max_items, const char *sep) {
    bool has_max = max_items != INT_MAX;
    if (max_items == 0) {
        return "";
    }
    if (min_items == 0 && max_items == 1) {
        return kfmt(c, "%s?", item);
    }
    if (!sep || !*sep) {
        if (min_items == 1 && !has_max) {
            return kfmt(c, "%s+", item);
        }
        if (min_items == 0 && !has_max) {
            return kfmt(c, "%s*", item);
        }
        if (has_max) {
            return kfmt(c, "%s{%d,%d}", item, min_items, max_items);
        }
        return kfmt(c, "%s{%d,}", item, min_items);
    }
    char *inner = kfmt(c, "(%s %s)", sep, item);
    char *rest =
        build_repetition(c, inner, min_items == 0 ? 0 : min_items - 1, has_max ? max_items - 1 : max_items, "");
    char *result = kfmt(c, "%s %s", item, rest);
    return min_items == 0 ? kfmt(c, "(%s)?", result) : result;
}

static void digit_range(sb *out, char from, char to) {
    sb_putc(out, '[');
    if (from == to) {
        sb_putc(out, from);
    } else {
        sb_printf(out, "%c-%c", from, to);
    }
    sb_putc(out, ']');
}

static void more_digits(sb *out, int min_digits, int max_digits) {
    sb_puts(out, "[0-9]");
    if (min_digits == max_digits && min_digits == 1) {
        return;
    }
    sb_printf(out, "{%d", min_digits);
    if (max_digits != min_digits) {
        sb_putc(out, ',');
        if (max_digits != INT_MAX) {
            sb_printf(out, "%d", max_digits);
        }
    }
    sb_putc(out, '}');
}

/* uniform_range over two digit strings of equal length. */
static void uniform_range(sb *out, const char *from, const char *to) {
    size_t i = 0, lf = strlen(from), lt = strlen(to);
    while (i < lf && i < lt && from[i] == to[i]) {
        i++;
    }
    if (i > 0) {
        sb_putc(out, '"');
        sb_putn(out, from, i);
        sb_putc(out, '"');
    }
    if (i < lf && i < lt) {
        if (i > 0) {
            sb_putc(out, ' ');
        }
        size_t sub_len = lf - i - 1;
        if (sub_len > 0) {
            char zeros[24], nines[24];
            memset(zeros, '0', sub_len);
            memset(nines, '9', sub_len);
            zeros[sub_len] = nines[sub_len] = 0;
            const char *from_sub = from + i + 1, *to_sub = to + i + 1;
            bool to_reached = false;
            sb_putc(out, '(');
            if (!strcmp(from_sub, zeros)) {
                digit_range(out, from[i], (char)(to[i] - 1));
                sb_putc(out, ' ');
                more_digits(out, (int)sub_len, (int)sub_len);
            } else {
                sb_printf(out, "[%c] (", from[i]);
                uniform_range(out, from_sub, nines);
                sb_putc(out, ')');
                if (from[i] < to[i] - 1) {
                    sb_puts(out, " | ");
                    if (!strcmp(to_sub, nines)) {
                        digit_range(out, (char)(from[i] + 1), to[i]);
                        to_reached = true;
                    } else {
                        digit_range(out, (char)(from[i] + 1), (char)(to[i] - 1));
                    }
                    sb_putc(out, ' ');
                    more_digits(out, (int)sub_len, (int)sub_len);
                }
            }
            if (!to_reached) {
                sb_puts(out, " | ");
                digit_range(out, to[i], to[i]);
                sb_putc(out, ' ');
                uniform_range(out, zeros, to_sub);
            }
            sb_putc(out, ')');
        } else {
            sb_printf(out, "[%c-%c]", from[i], to[i]);
        }
    }
}

static void build_min_max_int(sb *out, int64_t min_value, int64_t max_value, int decimals_left, bool top_level) {
    bool has_min = min_value != INT64_MIN, has_max = max_value != INT64_MAX;
    char min_s[24], max_s[24];
    if (has_min && has_max) {
        if (min_value < 0 && max_value < 0) {
            sb_puts(out, "\"-\" (");
            build_min_max_int(out, -max_value, -min_value, decimals_left, true);
            sb_putc(out, ')');
            return;
        }
        if (min_value < 0) {
            sb_puts(out, "\"-\" (");
            build_min_max_int(out, 0, -min_value, decimals_left, true);
            sb_puts(out, ") | ");
            min_value = 0;
        }
        snprintf(min_s, sizeof min_s, "%lld", (long long)min_value);
        snprintf(max_s, sizeof max_s, "%lld", (long long)max_value);
        size_t min_digits = strlen(min_s), max_digits = strlen(max_s);
        for (size_t digits = min_digits; digits < max_digits; digits++) {
            char nines[24];
            memset(nines, '9', digits);
            nines[digits] = 0;
            uniform_range(out, min_s, nines);
            min_s[0] = '1';
            memset(min_s + 1, '0', digits);
            min_s[digits + 1] = 0;
            sb_puts(out, " | ");
        }
        uniform_range(out, min_s, max_s);
        return;
    }
    int less_decimals = decimals_left - 1 > 1 ? decimals_left - 1 : 1;
    if (has_min) {
        if (min_value < 0) {
            sb_puts(out, "\"-\" (");
            build_min_max_int(out, INT64_MIN, -min_value, decimals_left, false);
            sb_puts(out, ") | [0] | [1-9] ");
            more_digits(out, 0, decimals_left - 1);
        } else if (min_value == 0) {
            if (top_level) {
                sb_puts(out, "[0] | [1-9] ");
                more_digits(out, 0, less_decimals);
            } else {
                more_digits(out, 1, decimals_left);
            }
        } else if (min_value <= 9) {
            char ch = (char)('0' + min_value);
            char range_start = top_level ? '1' : '0';
            if (ch > range_start) {
                digit_range(out, range_start, (char)(ch - 1));
                sb_putc(out, ' ');
                more_digits(out, 1, less_decimals);
                sb_puts(out, " | ");
            }
            digit_range(out, ch, '9');
            sb_putc(out, ' ');
            more_digits(out, 0, less_decimals);
        } else {
            snprintf(min_s, sizeof min_s, "%lld", (long long)min_value);
            int len = (int)strlen(min_s);
            char ch = min_s[0];
            if (ch > '1') {
                digit_range(out, top_level ? '1' : '0', (char)(ch - 1));
                sb_putc(out, ' ');
                more_digits(out, len, less_decimals);
                sb_puts(out, " | ");
            }
            digit_range(out, ch, ch);
            sb_puts(out, " (");
            build_min_max_int(out, strtoll(min_s + 1, NULL, 10), INT64_MAX, less_decimals, false);
            sb_putc(out, ')');
            if (ch < '9') {
                sb_puts(out, " | ");
                digit_range(out, (char)(ch + 1), '9');
                sb_putc(out, ' ');
                more_digits(out, len - 1, less_decimals);
            }
        }
        return;
    }
    /* has_max only (the caller makes sure one is set) */
    if (max_value >= 0) {
        if (top_level) {
            sb_puts(out, "\"-\" [1-9] ");
            more_digits(out, 0, less_decimals);
            sb_puts(out, " | ");
        }
        build_min_max_int(out, 0, max_value, decimals_left, true);
    } else {
        sb_puts(out, "\"-\" (");
        build_min_max_int(out, -max_value, INT64_MAX, decimals_left, false);
        sb_putc(out, ')');
    }
}

/* --- schema helpers -------------------------------------------------------------------------------- */

static const cJSON *get(const cJSON *o, const char *key) {
    return cJSON_IsObject(o) ? cJSON_GetObjectItemCaseSensitive(o, key) : NULL;
}

static bool has(const cJSON *o, const char *key) { return get(o, key) != NULL; }

static bool is_str(const cJSON *v, const char *s) { return cJSON_IsString(v) && !strcmp(v->valuestring, s); }

/* nlohmann's empty(): null, or an array or object without elements. */
static bool is_empty(const cJSON *v) {
    return !v || cJSON_IsNull(v) || ((cJSON_IsArray(v) || cJSON_IsObject(v)) && v->child == NULL);
}

static char *join_name(conv *c, const char *name, const char *suffix) {
    return kfmt(c, "%s%s%s", name, *name ? "-" : "", suffix);
}

/* An integer field (minItems, minLength, ...) as llama.cpp's get<int> reads it. */
static bool int_of(conv *c, const cJSON *v, const char *what, int *out) {
    if (!cJSON_IsNumber(v) || !(v->valuedouble >= INT_MIN && v->valuedouble <= INT_MAX)) {
        add_error(c, "'%s' must be an integer", what);
        return false;
    }
    *out = (int)v->valuedouble;
    return true;
}

static char *visit(conv *c, const cJSON *schema, const char *name, int depth);

/* --- regular expressions (string "pattern") ---------------------------------------------------- */

typedef struct lit_rule {
    char *s;
    bool literal;
} lit_rule;

typedef struct pattern_state {
    conv *c;
    const char *p; /* the pattern without ^ and $ */
    size_t i, n;
    const char *name;
    char **sub_keys, **sub_ids; /* sub_rule_ids */
    size_t n_sub, cap_sub;
    int depth;
    bool failed;
} pattern_state;

static char *to_rule(conv *c, lit_rule ls) { return ls.literal ? kfmt(c, "\"%s\"", ls.s) : ls.s; }

static bool non_literal(char ch) { return ch && strchr("|.()[]{}*+?", ch) != NULL; }

static bool escaped_in_regex_only(char ch) { return ch && strchr("^$.[](){}|*+?", ch) != NULL; }

static lit_rule join_seq(conv *c, lit_rule *seq, size_t n) {
    sb out = {0};
    sb_puts(&out, "");
    sb lit = {0};
    bool first = true;
    for (size_t k = 0; k <= n; k++) {
        if (k < n && seq[k].literal) {
            sb_puts(&lit, seq[k].s);
            continue;
        }
        if (lit.n > 0) {
            sb_puts(&out, first ? "" : " ");
            sb_printf(&out, "%s", "\"");
            sb_putn(&out, lit.p, lit.n);
            sb_putc(&out, '"');
            first = false;
            lit.n = 0;
        }
        if (k < n) {
            sb_puts(&out, first ? "" : " ");
            sb_puts(&out, seq[k].s);
            first = false;
        }
    }
    free(lit.p);
    if (lit.oom) {
        c->oom = true;
    }
    return (lit_rule){ksb(c, &out), false};
}

static lit_rule transform(pattern_state *st) {
    conv *c = st->c;
    size_t start = st->i;
    lit_rule *seq = NULL;
    size_t n = 0, cap = 0;
    lit_rule result = {"", false};
    if (++st->depth > 200) {
        add_error(c, "pattern: groups nested more than 200 deep");
        st->failed = true;
        goto done;
    }
    while (st->i < st->n && !st->failed && !c->oom) {
        char ch = st->p[st->i];
        lit_rule item = {NULL, false};
        if (ch == '.') {
            item.s = add_rule(c, "dot", "[^\\x0A\\x0D]");
            st->i++;
        } else if (ch == '(') {
            st->i++;
            if (st->i < st->n && st->p[st->i] == '?') {
                if (st->i + 1 < st->n && st->p[st->i + 1] == ':') {
                    st->i += 2;
                } else {
                    /* lookahead/lookbehind: skipped, as llama.cpp does (with a warning there) */
                    int d = 1;
                    while (st->i < st->n && d > 0) {
                        if (st->p[st->i] == '\\' && st->i + 1 < st->n) {
                            st->i += 2;
                        } else {
                            d += st->p[st->i] == '(' ? 1 : st->p[st->i] == ')' ? -1 : 0;
                            st->i++;
                        }
                    }
                    continue;
                }
            }
            lit_rule g = transform(st);
            item.s = kfmt(c, "(%s)", to_rule(c, g));
        } else if (ch == ')') {
            st->i++;
            if (start > 0 && st->p[start - 1] != '(' &&
                (start < 2 || st->p[start - 2] != '?' || st->p[start - 1] != ':')) {
                add_error(c, "Unbalanced parentheses");
            }
            result = join_seq(c, seq, n);
            goto done;
        } else if (ch == '[') {
            sb s = {0};
            sb_putc(&s, '[');
            st->i++;
            while (st->i < st->n && st->p[st->i] != ']') {
                if (st->p[st->i] == '\\') {
                    size_t k = st->i + 1 < st->n ? 2 : 1;
                    sb_putn(&s, st->p + st->i, k);
                    st->i += 2;
                } else {
                    sb_putc(&s, st->p[st->i]);
                    st->i++;
                }
            }
            if (st->i >= st->n) {
                add_error(c, "Unbalanced square brackets");
            }
            sb_putc(&s, ']');
            st->i++;
            item.s = ksb(c, &s);
        } else if (ch == '|') {
            item.s = "|";
            st->i++;
        } else if (ch == '*' || ch == '+' || ch == '?') {
            if (n == 0) {
                add_error(c, "pattern: '%c' at offset %zu repeats nothing", ch, st->i);
                st->failed = true;
                break;
            }
            seq[n - 1] = (lit_rule){kfmt(c, "%s%c", to_rule(c, seq[n - 1]), ch), false};
            st->i++;
            continue;
        } else if (ch == '{') {
            size_t from = ++st->i;
            while (st->i < st->n && st->p[st->i] != '}') {
                st->i++;
            }
            if (st->i >= st->n) {
                add_error(c, "Unbalanced curly brackets");
            }
            char inner[64];
            size_t len = st->i - from < sizeof inner - 1 ? st->i - from : sizeof inner - 1;
            memcpy(inner, st->p + from, len);
            inner[len] = 0;
            st->i++;
            int min_times = 0, max_times = INT_MAX;
            char *comma = strchr(inner, ',');
            char *end = NULL;
            if (!comma) {
                long v = strtol(inner, &end, 10);
                if (end == inner || *end || v < 0 || v > INT_MAX) {
                    add_error(c, "Invalid number in curly brackets");
                    st->failed = true;
                    break;
                }
                min_times = max_times = (int)v;
            } else if (strchr(comma + 1, ',')) {
                add_error(c, "Wrong number of values in curly brackets");
            } else {
                *comma = 0;
                if (*inner) {
                    long v = strtol(inner, &end, 10);
                    if (end == inner || *end || v < 0 || v > INT_MAX) {
                        add_error(c, "Invalid number in curly brackets");
                        st->failed = true;
                        break;
                    }
                    min_times = (int)v;
                }
                if (comma[1]) {
                    long v = strtol(comma + 1, &end, 10);
                    if (end == comma + 1 || *end || v < 0 || v > INT_MAX) {
                        add_error(c, "Invalid number in curly brackets");
                        st->failed = true;
                        break;
                    }
                    max_times = (int)v;
                }
            }
            if (n == 0) {
                add_error(c, "pattern: a repetition {...} repeats nothing");
                st->failed = true;
                break;
            }
            lit_rule *last = &seq[n - 1];
            char *sub = last->s;
            if (!last->literal) {
                char *id = NULL;
                for (size_t k = 0; k < st->n_sub; k++) {
                    if (!strcmp(st->sub_keys[k], sub)) {
                        id = st->sub_ids[k];
                    }
                }
                if (!id) {
                    size_t idx = st->n_sub + 1;
                    char *key = sub;
                    if (!push((void **)&st->sub_keys, &st->n_sub, &st->cap_sub, sizeof key, &key)) {
                        c->oom = true;
                        break;
                    }
                    size_t n2 = st->n_sub - 1, cap2 = st->cap_sub;
                    char **ids = realloc(st->sub_ids, sizeof *ids * cap2);
                    if (!ids) {
                        c->oom = true;
                        break;
                    }
                    st->sub_ids = ids;
                    id = add_rule(c, kfmt(c, "%s-%zu", st->name, idx), sub);
                    st->sub_ids[n2] = id;
                }
                sub = id;
            }
            *last = (lit_rule){
                build_repetition(c, last->literal ? kfmt(c, "\"%s\"", sub) : sub, min_times, max_times, ""), false};
            continue;
        } else {
            sb lit = {0};
            sb_puts(&lit, "");
            while (st->i < st->n) {
                const char *p = st->p;
                size_t i = st->i;
                if (p[i] == '\\' && i < st->n - 1) {
                    if (escaped_in_regex_only(p[i + 1])) {
                        sb_putc(&lit, p[i + 1]);
                    } else {
                        sb_putn(&lit, p + i, 2);
                    }
                    st->i += 2;
                } else if (p[i] == '"') {
                    sb_puts(&lit, "\\\"");
                    st->i++;
                } else if (!non_literal(p[i]) &&
                           (i == st->n - 1 || lit.n == 0 || p[i + 1] == '.' || !non_literal(p[i + 1]))) {
                    sb_putc(&lit, p[i]);
                    st->i++;
                } else {
                    break;
                }
            }
            if (lit.n == 0) {
                free(lit.p);
                add_error(c, "pattern: unexpected '%c' at offset %zu", ch, st->i);
                st->failed = true;
                break;
            }
            item.s = ksb(c, &lit);
            item.literal = true;
        }
        if (!push((void **)&seq, &n, &cap, sizeof item, &item)) {
            c->oom = true;
            break;
        }
    }
    result = join_seq(c, seq, n);
done:
    st->depth--;
    free(seq);
    return result;
}

static char *visit_pattern(conv *c, const char *pattern, const char *name) {
    size_t len = strlen(pattern);
    if (len < 2 || pattern[0] != '^' || pattern[len - 1] != '$') {
        add_error(c, "Pattern must start with '^' and end with '$'");
        return "";
    }
    pattern_state st = {.c = c, .p = pattern + 1, .n = len - 2, .name = name};
    lit_rule r = transform(&st);
    free(st.sub_keys);
    free(st.sub_ids);
    return add_rule(c, name, kfmt(c, "\"\\\"\" (%s) \"\\\"\"", to_rule(c, r)));
}

/* --- not_strings: a JSON string that is none of the given strings ---------------------------------- */

typedef struct trie {
    struct trie *child[256]; /* by byte, visited in signed-char order as std::map<char> does */
    bool has_child, end;
} trie;

static void trie_free(trie *t) {
    if (!t) {
        return;
    }
    for (int i = 0; i < 256; i++) {
        trie_free(t->child[i]);
    }
    free(t);
}

static void trie_visit(conv *c, sb *out, const trie *t, const char *char_rule, int depth) {
    if (depth > 4096) {
        add_error(c, "a property name is too long");
        return;
    }
    sb rejects = {0};
    sb_puts(&rejects, "");
    bool first = true;
    for (int k = 0; k < 256; k++) {
        int b = (k + 128) & 255; /* -128..127 as bytes 0x80..0xFF then 0x00..0x7F */
        const trie *ch = t->child[b];
        if (!ch) {
            continue;
        }
        sb_putc(&rejects, (char)b);
        if (!first) {
            sb_puts(out, " | ");
        }
        first = false;
        sb_printf(out, "[%c]", (char)b);
        if (ch->has_child) {
            sb_puts(out, " (");
            trie_visit(c, out, ch, char_rule, depth + 1);
            sb_putc(out, ')');
        } else if (ch->end) {
            sb_printf(out, " %s+", char_rule);
        }
    }
    if (t->has_child) {
        if (!first) {
            sb_puts(out, " | ");
        }
        sb_puts(out, "[^\"");
        sb_puts(out, rejects.p);
        sb_printf(out, "] %s*", char_rule);
    }
    free(rejects.p);
}

static char *not_strings(conv *c, char **strings, size_t n) {
    trie *root = calloc(1, sizeof *root);
    if (!root) {
        c->oom = true;
        return "";
    }
    for (size_t i = 0; i < n; i++) {
        trie *t = root;
        for (const unsigned char *p = (const unsigned char *)strings[i]; *p && t; p++) {
            if (!t->child[*p]) {
                t->child[*p] = calloc(1, sizeof *t);
                t->has_child = true;
            }
            t = t->child[*p];
        }
        if (!t) {
            c->oom = true;
            break;
        }
        t->end = true;
    }
    char *char_rule = prim(c, "char", "char");
    sb out = {0};
    sb_puts(&out, "[\"] ( ");
    trie_visit(c, &out, root, char_rule, 0);
    sb_puts(&out, " )");
    if (!root->end) {
        sb_putc(&out, '?');
    }
    sb_puts(&out, " [\"]");
    trie_free(root);
    return ksb(c, &out);
}

/* --- objects ---------------------------------------------------------------------------------------- */

typedef struct prop {
    const char *name;
    const cJSON *schema;
} prop;

typedef struct kv_name {
    const char *prop, *rule;
} kv_name;

static const char *kv_rule_of(kv_name *kv, size_t n, const char *prop_name) {
    const char *r = "";
    for (size_t i = 0; i < n; i++) {
        if (!strcmp(kv[i].prop, prop_name)) {
            r = kv[i].rule; /* the last one, as a map assignment keeps */
        }
    }
    return r;
}

static char *recursive_refs(conv *c, const char *name, kv_name *kv, size_t n_kv, const char **ks, size_t n_ks,
                            bool first_is_optional) {
    if (n_ks == 0) {
        return "";
    }
    const char *k = ks[0];
    const char *kv_rule = kv_rule_of(kv, n_kv, k);
    char *comma_ref = kfmt(c, "( \",\" space %s )", kv_rule);
    bool star = !strcmp(k, "*");
    char *res = first_is_optional ? kfmt(c, "%s%s", comma_ref, star ? "*" : "?")
                                  : (star ? kfmt(c, "%s %s*", kv_rule, comma_ref) : (char *)kv_rule);
    if (n_ks > 1) {
        char *rest = recursive_refs(c, name, kv, n_kv, ks + 1, n_ks - 1, true);
        res = kfmt(c, "%s %s", res, add_rule(c, kfmt(c, "%s%s%s-rest", name, *name ? "-" : "", k), rest));
    }
    return res;
}

static bool listed(char **list, size_t n, const char *s) {
    for (size_t i = 0; i < n; i++) {
        if (!strcmp(list[i], s)) {
            return true;
        }
    }
    return false;
}

static char *build_object_rule(conv *c, const prop *props, size_t n_props, char **required, size_t n_required,
                               const char *name, const cJSON *additional, int depth) {
    const char **req = calloc(n_props + 1, sizeof *req);
    const char **opt = calloc(n_props + 2, sizeof *opt);
    kv_name *kv = calloc(n_props + 1, sizeof *kv);
    char **names = calloc(n_props + 1, sizeof *names);
    size_t n_req = 0, n_opt = 0, n_kv = 0, n_names = 0;
    char *result = "";
    if (!req || !opt || !kv || !names) {
        c->oom = true;
        goto done;
    }
    for (size_t i = 0; i < n_props; i++) {
        const char *pn = props[i].name;
        char *prop_rule = visit(c, props[i].schema, join_name(c, name, pn), depth + 1);
        cJSON *key = cJSON_CreateString(pn);
        char *key_lit = key ? format_literal(c, dump_text(c, key)) : "";
        cJSON_Delete(key);
        kv[n_kv++] = (kv_name){pn, add_rule(c, kfmt(c, "%s%s%s-kv", name, *name ? "-" : "", pn),
                                            kfmt(c, "%s space \":\" space %s", key_lit, prop_rule))};
        if (listed(required, n_required, pn)) {
            req[n_req++] = pn;
        } else {
            opt[n_opt++] = pn;
        }
        names[n_names++] = (char *)pn;
    }
    if (cJSON_IsTrue(additional) || cJSON_IsObject(additional)) {
        char *sub_name = join_name(c, name, "additional");
        char *value_rule = cJSON_IsObject(additional) ? visit(c, additional, kfmt(c, "%s-value", sub_name), depth + 1)
                                                      : prim(c, "value", "value");
        char *key_rule = n_names == 0 ? prim(c, "string", "string")
                                      : add_rule(c, kfmt(c, "%s-k", sub_name), not_strings(c, names, n_names));
        char *kv_rule = add_rule(c, kfmt(c, "%s-kv", sub_name), kfmt(c, "%s \":\" space %s", key_rule, value_rule));
        kv[n_kv++] = (kv_name){"*", kv_rule};
        opt[n_opt++] = "*";
    }
    sb r = {0};
    sb_puts(&r, "\"{\" space ");
    for (size_t i = 0; i < n_req; i++) {
        if (i > 0) {
            sb_puts(&r, " \",\" space ");
        }
        sb_puts(&r, kv_rule_of(kv, n_kv, req[i]));
    }
    if (n_opt > 0) {
        sb_puts(&r, " (");
        if (n_req > 0) {
            sb_puts(&r, " \",\" space ( ");
        }
        for (size_t i = 0; i < n_opt; i++) {
            if (i > 0) {
                sb_puts(&r, " | ");
            }
            sb_puts(&r, recursive_refs(c, name, kv, n_kv, opt + i, n_opt - i, false));
        }
        if (n_req > 0) {
            sb_puts(&r, " )");
        }
        sb_puts(&r, " )?");
    }
    sb_puts(&r, " space \"}\"");
    result = ksb(c, &r);
done:
    free(req);
    free(opt);
    free(kv);
    free(names);
    return result;
}

/* The "required" names of a schema (strings only). */
static size_t required_of(conv *c, const cJSON *schema, char ***out) {
    const cJSON *r = get(schema, "required");
    size_t n = 0, cap = 0;
    *out = NULL;
    if (cJSON_IsArray(r)) {
        for (const cJSON *x = r->child; x; x = x->next) {
            if (cJSON_IsString(x) && !push((void **)out, &n, &cap, sizeof(char *), &x->valuestring)) {
                c->oom = true;
            }
        }
    }
    return n;
}

static const cJSON *ref_target(conv *c, const char *ref, bool *found) {
    for (size_t i = 0; i < c->n_refs; i++) {
        if (!strcmp(c->refs[i].ref, ref)) {
            *found = true;
            return c->refs[i].target;
        }
    }
    *found = false;
    return NULL;
}

static char *resolve_ref(conv *c, const char *ref, int depth) {
    const char *hash = strchr(ref, '#');
    const char *frag = hash ? hash + 1 : ref;
    char *ref_name = rule_chars(c, kfmt(c, "ref%s", frag));
    /* rule_chars maps runs of other characters to '-'; "ref" + fragment is escaped as a whole here,
     * while llama.cpp escapes the fragment alone: the same text, since "ref" is all rule characters */
    bool being = false;
    for (size_t i = 0; i < c->n_resolving; i++) {
        being |= !strcmp(c->resolving[i], ref);
    }
    if (!find_rule(c, ref_name) && !being) {
        char *r = (char *)ref;
        if (!push((void **)&c->resolving, &c->n_resolving, &c->cap_resolving, sizeof r, &r)) {
            c->oom = true;
            return ref_name;
        }
        bool found;
        const cJSON *target = ref_target(c, ref, &found);
        ref_name = visit(c, target, ref_name, depth + 1);
        c->n_resolving--;
    }
    return ref_name;
}

/* resolve_refs: records every local $ref ("#/a/b") with its target in the schema. */
static void resolve_refs(conv *c, const cJSON *n, int depth) {
    if (depth > 2000 || c->n_errors >= MAX_ERRORS) {
        return;
    }
    if (cJSON_IsArray(n)) {
        for (const cJSON *x = n->child; x; x = x->next) {
            resolve_refs(c, x, depth + 1);
        }
        return;
    }
    if (!cJSON_IsObject(n)) {
        return;
    }
    const cJSON *rv = get(n, "$ref");
    if (!rv) {
        for (const cJSON *x = n->child; x; x = x->next) {
            resolve_refs(c, x, depth + 1);
        }
        return;
    }
    if (!cJSON_IsString(rv)) {
        add_error(c, "$ref must be a string");
        return;
    }
    const char *ref = rv->valuestring;
    bool found;
    ref_target(c, ref, &found);
    if (found) {
        return;
    }
    if (!strncmp(ref, "https://", 8)) {
        add_error(c, "Unsupported ref: %.200s (remote schemas are not fetched)", ref);
        return;
    }
    if (strncmp(ref, "#/", 2)) {
        add_error(c, "Unsupported ref: %.200s", ref);
        return;
    }
    const cJSON *target = c->root;
    const char *p = ref + 2;
    while (true) {
        const char *slash = strchr(p, '/');
        size_t len = slash ? (size_t)(slash - p) : strlen(p);
        char sel[256];
        if (len >= sizeof sel) {
            add_error(c, "Error resolving ref %.200s: a part is too long", ref);
            return;
        }
        memcpy(sel, p, len);
        sel[len] = 0;
        const cJSON *next = NULL;
        if (cJSON_IsObject(target) && (next = cJSON_GetObjectItemCaseSensitive(target, sel)) != NULL) {
            target = next;
        } else if (cJSON_IsArray(target)) {
            char *end = NULL;
            unsigned long long idx = strtoull(sel, &end, 10);
            if (end == sel || idx >= (unsigned long long)cJSON_GetArraySize(target)) {
                add_error(c, "Error resolving ref %.200s: %s not in the array", ref, sel);
                return;
            }
            target = cJSON_GetArrayItem(target, (int)idx);
        } else {
            add_error(c, "Error resolving ref %.200s: %s not found", ref, sel);
            return;
        }
        if (!slash) {
            break;
        }
        p = slash + 1;
    }
    ref_entry e = {kstr(c, ref), target};
    if (!push((void **)&c->refs, &c->n_refs, &c->cap_refs, sizeof e, &e)) {
        c->oom = true;
    }
}

static char *union_rule(conv *c, const char *name, const cJSON **alts, size_t n, int depth) {
    sb s = {0};
    sb_puts(&s, "");
    for (size_t i = 0; i < n; i++) {
        char *nm = kfmt(c, "%s%s%zu", name, *name ? "-" : "alternative-", i);
        if (i > 0) {
            sb_puts(&s, " | ");
        }
        sb_puts(&s, visit(c, alts[i], nm, depth + 1));
    }
    return ksb(c, &s);
}

/* allOf: the properties of its components (anyOf members optional), or the intersection of their
 * enums. */
typedef struct allof_state {
    prop *props;
    size_t n_props, cap_props;
    char **required;
    size_t n_required, cap_required;
    char **enum_rules; /* sorted, with counts */
    size_t *enum_counts;
    size_t n_enum, cap_enum;
} allof_state;

static void allof_add(conv *c, allof_state *a, const cJSON *comp, bool is_required, int depth) {
    if (depth > 64) {
        add_error(c, "allOf: $refs nested too deep");
        return;
    }
    const cJSON *ref = get(comp, "$ref");
    if (ref) {
        bool found;
        const cJSON *t = cJSON_IsString(ref) ? ref_target(c, ref->valuestring, &found) : NULL;
        allof_add(c, a, t, is_required, depth + 1);
        return;
    }
    const cJSON *props = get(comp, "properties");
    const cJSON *en = get(comp, "enum");
    if (props) {
        for (const cJSON *p = cJSON_IsObject(props) ? props->child : NULL; p; p = p->next) {
            prop pr = {p->string, p};
            if (!push((void **)&a->props, &a->n_props, &a->cap_props, sizeof pr, &pr) ||
                (is_required &&
                 !push((void **)&a->required, &a->n_required, &a->cap_required, sizeof(char *), &p->string))) {
                c->oom = true;
            }
        }
    } else if (en) {
        for (const cJSON *v = cJSON_IsArray(en) ? en->child : NULL; v; v = v->next) {
            char *r = constant_rule(c, v);
            size_t i = 0;
            while (i < a->n_enum && strcmp(a->enum_rules[i], r) < 0) {
                i++;
            }
            if (i < a->n_enum && !strcmp(a->enum_rules[i], r)) {
                a->enum_counts[i]++;
                continue;
            }
            if (a->n_enum == a->cap_enum) {
                size_t cap = a->cap_enum ? a->cap_enum * 2 : 16;
                char **er = realloc(a->enum_rules, sizeof *er * cap);
                if (er) {
                    a->enum_rules = er;
                }
                size_t *ec = realloc(a->enum_counts, sizeof *ec * cap);
                if (ec) {
                    a->enum_counts = ec;
                }
                if (!er || !ec) {
                    c->oom = true;
                    return;
                }
                a->cap_enum = cap;
            }
            memmove(a->enum_rules + i + 1, a->enum_rules + i, sizeof(char *) * (a->n_enum - i));
            memmove(a->enum_counts + i + 1, a->enum_counts + i, sizeof(size_t) * (a->n_enum - i));
            a->enum_rules[i] = r;
            a->enum_counts[i] = 1;
            a->n_enum++;
        }
    }
}

static char *visit(conv *c, const cJSON *schema, const char *name, int depth) {
    if (depth > 1000) {
        add_error(c, "the schema is nested more than 1000 deep");
        return "";
    }
    if (c->oom || c->n_errors >= MAX_ERRORS) {
        return "";
    }
    const cJSON *type = get(schema, "type");
    const cJSON *fmtv = get(schema, "format");
    if (fmtv && !cJSON_IsString(fmtv)) {
        add_error(c, "'format' must be a string");
        return "";
    }
    const char *format = fmtv ? fmtv->valuestring : "";
    const char *rule_name = is_reserved(name) ? kfmt(c, "%s-", name) : *name ? name : "root";
    bool type_null = type == NULL || cJSON_IsNull(type);

    const cJSON *v;
    if ((v = get(schema, "$ref"))) {
        if (!cJSON_IsString(v)) {
            add_error(c, "$ref must be a string");
            return "";
        }
        return add_rule(c, rule_name, resolve_ref(c, v->valuestring, depth));
    }
    if (has(schema, "oneOf") || has(schema, "anyOf")) {
        const cJSON *alts = has(schema, "oneOf") ? get(schema, "oneOf") : get(schema, "anyOf");
        if (!cJSON_IsArray(alts)) {
            add_error(c, "'%s' must be a list of schemas", has(schema, "oneOf") ? "oneOf" : "anyOf");
            return "";
        }
        size_t n = (size_t)cJSON_GetArraySize(alts), i = 0;
        const cJSON **list = calloc(n + 1, sizeof *list);
        if (!list) {
            c->oom = true;
            return "";
        }
        for (const cJSON *x = alts->child; x; x = x->next) {
            list[i++] = x;
        }
        char *u = union_rule(c, name, list, n, depth);
        free(list);
        return add_rule(c, rule_name, u);
    }
    if (cJSON_IsArray(type)) {
        size_t n = (size_t)cJSON_GetArraySize(type), i = 0;
        const cJSON **list = calloc(n + 1, sizeof *list);
        cJSON **copies = calloc(n + 1, sizeof *copies);
        char *u = "";
        if (list && copies) {
            for (const cJSON *t = type->child; t; t = t->next, i++) {
                copies[i] = cJSON_Duplicate(schema, true);
                if (!copies[i]) {
                    c->oom = true;
                    break;
                }
                cJSON_ReplaceItemInObjectCaseSensitive(copies[i], "type", cJSON_Duplicate(t, true));
                list[i] = copies[i];
            }
            if (!c->oom) {
                u = union_rule(c, name, list, n, depth);
            }
        } else {
            c->oom = true;
        }
        for (size_t k = 0; copies && k < n; k++) {
            cJSON_Delete(copies[k]);
        }
        free(copies);
        free(list);
        return add_rule(c, rule_name, u);
    }
    if ((v = get(schema, "const"))) {
        return add_rule(c, rule_name, constant_rule(c, v));
    }
    if ((v = get(schema, "enum"))) {
        if (!cJSON_IsArray(v)) {
            add_error(c, "'enum' must be a list");
            return "";
        }
        sb s = {0};
        sb_putc(&s, '(');
        for (const cJSON *x = v->child; x; x = x->next) {
            if (x != v->child) {
                sb_puts(&s, " | ");
            }
            sb_puts(&s, constant_rule(c, x));
        }
        sb_putc(&s, ')');
        return add_rule(c, rule_name, ksb(c, &s));
    }
    const cJSON *additional = get(schema, "additionalProperties");
    if ((type_null || is_str(type, "object")) &&
        (has(schema, "properties") || (additional && !cJSON_IsTrue(additional)))) {
        char **required;
        size_t n_required = required_of(c, schema, &required);
        const cJSON *props = get(schema, "properties");
        size_t n = cJSON_IsObject(props) ? (size_t)cJSON_GetArraySize(props) : 0, i = 0;
        prop *list = calloc(n + 1, sizeof *list);
        char *r = "";
        if (list) {
            for (const cJSON *p = n ? props->child : NULL; p; p = p->next) {
                list[i++] = (prop){p->string, p};
            }
            r = build_object_rule(c, list, n, required, n_required, name, additional, depth);
        } else {
            c->oom = true;
        }
        free(list);
        free(required);
        return add_rule(c, rule_name, r);
    }
    if ((type_null || is_str(type, "object") || is_str(type, "string")) && (v = get(schema, "allOf"))) {
        allof_state a = {0};
        size_t n_all = cJSON_IsArray(v) ? (size_t)cJSON_GetArraySize(v) : 0;
        for (const cJSON *t = cJSON_IsArray(v) ? v->child : NULL; t; t = t->next) {
            const cJSON *any = get(t, "anyOf");
            if (any) {
                for (const cJSON *tt = cJSON_IsArray(any) ? any->child : NULL; tt; tt = tt->next) {
                    allof_add(c, &a, tt, false, 0);
                }
            } else {
                allof_add(c, &a, t, true, 0);
            }
        }
        char *r = NULL;
        if (a.n_enum > 0) {
            sb s = {0};
            size_t k = 0;
            for (size_t i = 0; i < a.n_enum; i++) {
                if (a.enum_counts[i] == n_all) {
                    sb_puts(&s, k++ ? " | " : "(");
                    sb_puts(&s, a.enum_rules[i]);
                }
            }
            if (k > 0) {
                sb_putc(&s, ')');
                r = add_rule(c, rule_name, ksb(c, &s));
            } else {
                free(s.p);
            }
        }
        if (!r) {
            r = add_rule(c, rule_name,
                         build_object_rule(c, a.props, a.n_props, a.required, a.n_required, name, NULL, depth));
        }
        free(a.props);
        free(a.required);
        free(a.enum_rules);
        free(a.enum_counts);
        return r;
    }
    if ((type_null || is_str(type, "array")) && (has(schema, "items") || has(schema, "prefixItems"))) {
        const cJSON *items = has(schema, "items") ? get(schema, "items") : get(schema, "prefixItems");
        if (cJSON_IsArray(items)) {
            sb s = {0};
            sb_puts(&s, "\"[\" space ");
            size_t i = 0;
            for (const cJSON *it = items->child; it; it = it->next, i++) {
                if (i > 0) {
                    sb_puts(&s, " \",\" space ");
                }
                sb_puts(&s, visit(c, it, join_name(c, name, kfmt(c, "tuple-%zu", i)), depth + 1));
            }
            sb_puts(&s, " space \"]\"");
            return add_rule(c, rule_name, ksb(c, &s));
        }
        char *item_rule = visit(c, items, join_name(c, name, "item"), depth + 1);
        int min_items = 0, max_items = INT_MAX;
        if (has(schema, "minItems") && !int_of(c, get(schema, "minItems"), "minItems", &min_items)) {
            return "";
        }
        const cJSON *mx = get(schema, "maxItems");
        if (cJSON_IsNumber(mx) && mx->valuedouble == floor(mx->valuedouble) && !int_of(c, mx, "maxItems", &max_items)) {
            return "";
        }
        return add_rule(
            c, rule_name,
            kfmt(c, "\"[\" space %s space \"]\"", build_repetition(c, item_rule, min_items, max_items, "\",\" space")));
    }
    if ((type_null || is_str(type, "string")) && (v = get(schema, "pattern"))) {
        if (!cJSON_IsString(v)) {
            add_error(c, "'pattern' must be a string");
            return "";
        }
        return visit_pattern(c, v->valuestring, rule_name);
    }
    bool uuid = !strcmp(format, "uuid") ||
                (strlen(format) == 5 && !strncmp(format, "uuid", 4) && format[4] >= '1' && format[4] <= '5');
    if ((type_null || is_str(type, "string")) && uuid) {
        return prim(c, !strcmp(rule_name, "root") ? "root" : format, "uuid");
    }
    char *fmt_name = kfmt(c, "%s-string", format);
    const builtin *fb = find_builtin(STRING_FORMATS, N_FMT, fmt_name);
    if ((type_null || is_str(type, "string")) && fb) {
        return add_rule(c, rule_name, add_primitive(c, fmt_name, fb));
    }
    if (is_str(type, "string") && (has(schema, "minLength") || has(schema, "maxLength"))) {
        char *char_rule = prim(c, "char", "char");
        int min_len = 0, max_len = INT_MAX;
        if ((has(schema, "minLength") && !int_of(c, get(schema, "minLength"), "minLength", &min_len)) ||
            (has(schema, "maxLength") && !int_of(c, get(schema, "maxLength"), "maxLength", &max_len))) {
            return "";
        }
        return add_rule(c, rule_name,
                        kfmt(c, "\"\\\"\" %s \"\\\"\"", build_repetition(c, char_rule, min_len, max_len, "")));
    }
    if (is_str(type, "integer") && (has(schema, "minimum") || has(schema, "exclusiveMinimum") ||
                                    has(schema, "maximum") || has(schema, "exclusiveMaximum"))) {
        int64_t min_value = INT64_MIN, max_value = INT64_MAX;
        const char *keys[4] = {"minimum", "exclusiveMinimum", "maximum", "exclusiveMaximum"};
        for (int k = 0; k < 4; k++) {
            const cJSON *x = get(schema, keys[k]);
            if (!x || (k == 1 && has(schema, "minimum")) || (k == 3 && has(schema, "maximum"))) {
                continue;
            }
            /* beyond +-2^62 the digit strings and the +-1 below would overflow */
            if (!cJSON_IsNumber(x) || !(fabs(x->valuedouble) < 4.6e18)) {
                add_error(c, "'%s' must be an integer between -4.6e18 and 4.6e18", keys[k]);
                return "";
            }
            int64_t val = (int64_t)x->valuedouble;
            if (k == 0) {
                min_value = val;
            } else if (k == 1) {
                min_value = val + 1;
            } else if (k == 2) {
                max_value = val;
            } else {
                max_value = val - 1;
            }
        }
        sb s = {0};
        sb_putc(&s, '(');
        build_min_max_int(&s, min_value, max_value, 16, true);
        sb_putc(&s, ')');
        return add_rule(c, rule_name, ksb(c, &s));
    }
    if (is_empty(schema) || is_str(type, "object")) {
        return add_rule(c, rule_name, prim(c, "object", "object"));
    }
    if (type_null && cJSON_IsObject(schema)) {
        return add_rule(c, rule_name, prim(c, "value", "value"));
    }
    const builtin *pb = cJSON_IsString(type) ? find_builtin(PRIMITIVES, N_PRIM, type->valuestring) : NULL;
    if (!pb) {
        char *d = dump_text(c, schema);
        add_error(c, "Unrecognized schema: %.300s", d);
        return "";
    }
    return add_primitive(c, !strcmp(rule_name, "root") ? "root" : type->valuestring, pb);
}

/* --- the builder (json_schema.h): llama.cpp's build_grammar ---------------------------------------- */

struct oxl_gbuild {
    conv c;
    cJSON **schemas; /* copies of the schemas given, kept for their $refs until the end */
    size_t n_schemas, cap_schemas;
};

oxl_gbuild *oxl_gbuild_new(void) {
    oxl_gbuild *b = calloc(1, sizeof *b);
    if (b) {
        set_rule(&b->c, "space", SPACE_RULE);
    }
    return b;
}

const char *oxl_gbuild_rule(oxl_gbuild *b, const char *name, const char *body) { return add_rule(&b->c, name, body); }

const char *oxl_gbuild_literal(oxl_gbuild *b, const char *text) { return format_literal(&b->c, text); }

const char *oxl_gbuild_schema(oxl_gbuild *b, const char *name, const cJSON *schema) {
    cJSON *copy = cJSON_Duplicate(schema, true);
    if (!copy || !push((void **)&b->schemas, &b->n_schemas, &b->cap_schemas, sizeof copy, &copy)) {
        cJSON_Delete(copy);
        b->c.oom = true;
        return "";
    }
    b->c.root = copy;
    resolve_refs(&b->c, copy, 0);
    if (b->c.n_errors > 0) {
        return "";
    }
    return visit(&b->c, copy, !strcmp(name, "root") ? "" : name, 0);
}

int oxl_gbuild_finish(oxl_gbuild *b, char **out, oxl_error *err) {
    conv *c = &b->c;
    *out = NULL;
    if (c->oom) {
        return oxl_err_set(err, "json schema: out of memory");
    }
    if (c->n_errors > 0) {
        char msg[OXL_ERROR_MSG_MAX];
        size_t o = (size_t)snprintf(msg, sizeof msg, "JSON schema conversion failed:");
        for (int i = 0; i < c->n_errors && o < sizeof msg; i++) {
            o += (size_t)snprintf(msg + o, sizeof msg - o, "\n%s", c->errors[i]);
        }
        return oxl_err_set(err, "%s", msg);
    }
    sb s = {0};
    sb_puts(&s, "");
    for (size_t i = 0; i < c->n_rules; i++) {
        sb_puts(&s, c->rules[i].name);
        sb_puts(&s, " ::= ");
        sb_puts(&s, c->rules[i].body);
        sb_putc(&s, '\n');
    }
    if (s.oom) {
        free(s.p);
        return oxl_err_set(err, "json schema: out of memory");
    }
    *out = s.p;
    return 0;
}

void oxl_gbuild_free(oxl_gbuild *b) {
    if (!b) {
        return;
    }
    conv *c = &b->c;
    for (int i = 0; i < c->n_errors; i++) {
        free(c->errors[i]);
    }
    for (size_t i = 0; i < c->n_garbage; i++) {
        free(c->garbage[i]);
    }
    free(c->garbage);
    free(c->rules);
    free(c->refs);
    free(c->resolving);
    for (size_t i = 0; i < b->n_schemas; i++) {
        cJSON_Delete(b->schemas[i]);
    }
    free(b->schemas);
    free(b);
}

int oxl_json_schema_to_grammar(const char *schema_json, char **out, oxl_error *err) {
    if (out) {
        *out = NULL;
    }
    if (!schema_json || !out) {
        return oxl_err_set(err, "json schema: missing argument");
    }
    const char *end = NULL;
    cJSON *schema = cJSON_ParseWithOpts(schema_json, &end, true);
    if (!schema) {
        size_t off = end ? (size_t)(end - schema_json) : 0;
        return oxl_err_set(err, "json schema: invalid JSON at byte offset %zu", off);
    }
    oxl_gbuild *b = oxl_gbuild_new();
    if (!b) {
        cJSON_Delete(schema);
        return oxl_err_set(err, "json schema: out of memory");
    }
    oxl_gbuild_schema(b, "root", schema);
    int rc = oxl_gbuild_finish(b, out, err);
    oxl_gbuild_free(b);
    cJSON_Delete(schema);
    return rc;
}
