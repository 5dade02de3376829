/* Jinja lexer: splits a template into text and tag tokens with Jinja2's whitespace rules
 * (jinja2/lexer.py): `{%-`/`-%}` strip all whitespace on that side, trim_blocks drops the first
 * newline after `%}` and `#}`, lstrip_blocks drops spaces and tabs between a line start and `{%` or
 * `{#`, `+` disables either. Comments vanish. Inside tags: names, numbers, strings with Python
 * escapes, and operators; `%}` and `}}` end a tag only outside brackets. */
#include "jinja_internal.h"

#include "errors.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct lexer {
    jj_arena *a;
    const char *s;
    size_t n;
    jj_token *toks;
    size_t n_toks, cap;
    oxl_error *err;
} lexer;

void jj_line_col(const char *src, size_t len, size_t pos, int *line, int *col) {
    int l = 1, c = 1;
    for (size_t i = 0; i < pos && i < len; i++) {
        if (src[i] == '\n') {
            l++;
            c = 1;
        } else if (((unsigned char)src[i] & 0xC0) != 0x80) {
            c++;
        }
    }
    *line = l;
    *col = c;
}

static int lex_fail(lexer *lx, size_t pos, const char *msg) {
    int line, col;
    jj_line_col(lx->s, lx->n, pos, &line, &col);
    return oxl_err_set(lx->err, "template:%d:%d: TemplateSyntaxError: %s", line, col, msg);
}

static jj_token *push(lexer *lx, jj_tok_type type, size_t pos, const char *s, size_t n) {
    if (lx->n_toks == lx->cap) {
        size_t cap = lx->cap ? lx->cap * 2 : 256;
        jj_token *p = jj_alloc(lx->a, cap * sizeof(jj_token));
        if (!p) {
            oxl_err_set(lx->err, "template: out of memory while tokenizing");
            return NULL;
        }
        if (lx->n_toks) {
            memcpy(p, lx->toks, lx->n_toks * sizeof(jj_token));
        }
        lx->toks = p;
        lx->cap = cap;
    }
    jj_token *t = &lx->toks[lx->n_toks++];
    memset(t, 0, sizeof *t);
    t->type = (uint8_t)type;
    t->pos = (uint32_t)pos;
    t->s = s;
    t->n = n;
    return t;
}

static bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f'; }
static bool is_digit(char c) { return c >= '0' && c <= '9'; }
static bool is_name_start(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
static bool is_name_char(char c) { return is_name_start(c) || is_digit(c); }

static int hexval(char c) {
    return c >= '0' && c <= '9'   ? c - '0'
           : c >= 'a' && c <= 'f' ? c - 'a' + 10
           : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                  : -1;
}

static size_t put_utf8(char *o, unsigned cp) {
    if (cp < 0x80) {
        o[0] = (char)cp;
        return 1;
    }
    if (cp < 0x800) {
        o[0] = (char)(0xC0 | (cp >> 6));
        o[1] = (char)(0x80 | (cp & 0x3F));
        return 2;
    }
    if (cp < 0x10000) {
        o[0] = (char)(0xE0 | (cp >> 12));
        o[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
        o[2] = (char)(0x80 | (cp & 0x3F));
        return 3;
    }
    o[0] = (char)(0xF0 | (cp >> 18));
    o[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
    o[2] = (char)(0x80 | ((cp >> 6) & 0x3F));
    o[3] = (char)(0x80 | (cp & 0x3F));
    return 4;
}

/* A quoted string at s[i]; decodes Python escapes (unknown escapes keep their backslash). */
static int lex_string(lexer *lx, size_t *pi) {
    size_t i = *pi, start = i;
    char q = lx->s[i++];
    char *out = jj_alloc(lx->a, lx->n - i + 1);
    if (!out) {
        return oxl_err_set(lx->err, "template: out of memory while tokenizing");
    }
    size_t o = 0;
    for (;;) {
        if (i >= lx->n) {
            return lex_fail(lx, start, "unexpected end of template inside a string");
        }
        char c = lx->s[i];
        if (c == q) {
            i++;
            break;
        }
        if (c != '\\') {
            out[o++] = c;
            i++;
            continue;
        }
        if (i + 1 >= lx->n) {
            return lex_fail(lx, start, "unexpected end of template inside a string");
        }
        char e = lx->s[i + 1];
        i += 2;
        switch (e) {
        case 'n': out[o++] = '\n'; break;
        case 't': out[o++] = '\t'; break;
        case 'r': out[o++] = '\r'; break;
        case '\\': out[o++] = '\\'; break;
        case '\'': out[o++] = '\''; break;
        case '"': out[o++] = '"'; break;
        case 'a': out[o++] = '\a'; break;
        case 'b': out[o++] = '\b'; break;
        case 'f': out[o++] = '\f'; break;
        case 'v': out[o++] = '\v'; break;
        case '0': out[o++] = '\0'; break;
        case '\n': break;
        case 'x':
        case 'u':
        case 'U': {
            int nd = e == 'x' ? 2 : e == 'u' ? 4 : 8;
            unsigned cp = 0;
            if (i + (size_t)nd > lx->n) {
                return lex_fail(lx, i - 2, "truncated escape in a string");
            }
            for (int k = 0; k < nd; k++) {
                int h = hexval(lx->s[i + (size_t)k]);
                if (h < 0) {
                    return lex_fail(lx, i - 2, "truncated escape in a string");
                }
                cp = cp * 16 + (unsigned)h;
            }
            if (cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) {
                return lex_fail(lx, i - 2, "escape names no Unicode scalar value");
            }
            i += (size_t)nd;
            o += put_utf8(out + o, cp);
            break;
        }
        default: out[o++] = '\\'; out[o++] = e;
        }
    }
    if (!push(lx, JT_STRING, start, out, o)) {
        return -1;
    }
    *pi = i;
    return 0;
}

/* Digits with optional `_` separators; returns the end. */
static size_t scan_digits(const char *s, size_t n, size_t i) {
    while (i < n &&
           (is_digit(s[i]) || (s[i] == '_' && i + 1 < n && is_digit(s[i + 1]) && i > 0 && is_digit(s[i - 1])))) {
        i++;
    }
    return i;
}

static int lex_number(lexer *lx, size_t *pi) {
    size_t i = *pi, start = i;
    i = scan_digits(lx->s, lx->n, i);
    bool is_float = false;
    if (i + 1 < lx->n && lx->s[i] == '.' && is_digit(lx->s[i + 1])) {
        is_float = true;
        i = scan_digits(lx->s, lx->n, i + 1);
    }
    if (i < lx->n && (lx->s[i] == 'e' || lx->s[i] == 'E')) {
        size_t j = i + 1;
        if (j < lx->n && (lx->s[j] == '+' || lx->s[j] == '-')) {
            j++;
        }
        if (j < lx->n && is_digit(lx->s[j])) {
            is_float = true;
            i = scan_digits(lx->s, lx->n, j);
        }
    }
    char buf[128];
    size_t k = 0;
    for (size_t j = start; j < i && k + 1 < sizeof buf; j++) {
        if (lx->s[j] != '_') {
            buf[k++] = lx->s[j];
        }
    }
    buf[k] = 0;
    jj_token *t = push(lx, is_float ? JT_FLOAT : JT_INT, start, lx->s + start, i - start);
    if (!t) {
        return -1;
    }
    if (is_float) {
        t->f = strtod(buf, NULL);
    } else {
        char *end;
        unsigned long long v = strtoull(buf, &end, 10);
        if (k > 18 && (v > (unsigned long long)INT64_MAX || k > 19)) {
            return lex_fail(lx, start, "integer literal out of range");
        }
        t->i = (int64_t)v;
    }
    *pi = i;
    return 0;
}

static const char *const ops2[] = {"**", "//", "==", "!=", ">=", "<="};

/* The inside of a {{ }} or {% %} tag from *pi; stops after the closing delimiter. */
static int lex_tag(lexer *lx, size_t *pi, bool block, bool *trailing_nl) {
    size_t i = *pi;
    char close = block ? '%' : '}';
    int depth = 0;
    char stack[256];
    for (;;) {
        while (i < lx->n && is_space(lx->s[i])) {
            i++;
        }
        if (i >= lx->n) {
            return lex_fail(lx, *pi,
                            block ? "unexpected end of template, expected '%}'"
                                  : "unexpected end of template, expected '}}'");
        }
        const char *s = lx->s + i;
        size_t left = lx->n - i;
        if (depth == 0) {
            size_t endlen = 0;
            bool minus = false, plus = false;
            if (left >= 3 && s[0] == '-' && s[1] == close && s[2] == '}') {
                endlen = 3, minus = true;
            } else if (block && left >= 3 && s[0] == '+' && s[1] == '%' && s[2] == '}') {
                endlen = 3, plus = true;
            } else if (left >= 2 && s[0] == close && s[1] == '}') {
                endlen = 2;
            }
            if (endlen) {
                if (!push(lx, block ? JT_BLOCK_END : JT_VAR_END, i, s, endlen)) {
                    return -1;
                }
                i += endlen;
                *trailing_nl = false;
                if (minus) {
                    while (i < lx->n && is_space(lx->s[i])) {
                        *trailing_nl = lx->s[i] == '\n';
                        i++;
                    }
                } else if (block && !plus && i < lx->n && lx->s[i] == '\n') {
                    i++;
                    *trailing_nl = true;
                }
                *pi = i;
                return 0;
            }
        }
        char c = s[0];
        if (c == '\'' || c == '"') {
            if (lex_string(lx, &i) < 0) {
                return -1;
            }
        } else if (is_digit(c)) {
            if (lex_number(lx, &i) < 0) {
                return -1;
            }
        } else if (is_name_start(c)) {
            size_t j = i;
            while (j < lx->n && is_name_char(lx->s[j])) {
                j++;
            }
            if (!push(lx, JT_NAME, i, s, j - i)) {
                return -1;
            }
            i = j;
        } else {
            size_t len = 0;
            for (size_t k = 0; k < sizeof ops2 / sizeof ops2[0]; k++) {
                if (left >= 2 && s[0] == ops2[k][0] && s[1] == ops2[k][1]) {
                    len = 2;
                }
            }
            if (!len && strchr("+-/*%~[](){}><=.:|,;", c) && c) {
                len = 1;
            }
            if (!len) {
                char msg[64];
                snprintf(msg, sizeof msg, "unexpected char '%c' in a tag", (c >= 0x20 && c < 0x7f) ? c : '?');
                return lex_fail(lx, i, msg);
            }
            if (len == 1 && (c == '(' || c == '[' || c == '{')) {
                if (depth >= (int)sizeof stack) {
                    return lex_fail(lx, i, "brackets nested too deeply");
                }
                stack[depth++] = c == '(' ? ')' : c == '[' ? ']' : '}';
            } else if (len == 1 && (c == ')' || c == ']' || c == '}')) {
                if (depth == 0 || stack[depth - 1] != c) {
                    char msg[64];
                    snprintf(msg, sizeof msg, "unexpected '%c'", c);
                    return lex_fail(lx, i, msg);
                }
                depth--;
            }
            if (!push(lx, JT_OP, i, s, len)) {
                return -1;
            }
            i += len;
        }
    }
}

/* `{%[-+]? raw (-%}\s*|%})` starting at the tag body p (after `{%` and its sign): the end offset,
 * or 0 when this is no raw opening */
static size_t raw_open(const char *src, size_t len, size_t p) {
    size_t k = p;
    while (k < len && is_space(src[k])) {
        k++;
    }
    if (k + 3 > len || memcmp(src + k, "raw", 3)) {
        return 0;
    }
    k += 3;
    while (k < len && is_space(src[k])) {
        k++;
    }
    if (k + 3 <= len && !memcmp(src + k, "-%}", 3)) {
        k += 3;
        while (k < len && is_space(src[k])) {
            k++;
        }
        return k;
    }
    return k + 2 <= len && !memcmp(src + k, "%}", 2) ? k + 2 : 0;
}

/* `{%[-+]?\s*endraw\s*(+%}|-%}\s*|%}\n?)` at e: the end offset (0: none) and the opening's sign */
static size_t raw_close(const char *src, size_t len, size_t e, char *sign) {
    size_t t = e + 2;
    *sign = 0;
    if (t < len && (src[t] == '-' || src[t] == '+')) {
        *sign = src[t++];
    }
    while (t < len && is_space(src[t])) {
        t++;
    }
    if (t + 6 > len || memcmp(src + t, "endraw", 6)) {
        return 0;
    }
    t += 6;
    while (t < len && is_space(src[t])) {
        t++;
    }
    if (t + 3 <= len && !memcmp(src + t, "+%}", 3)) {
        return t + 3;
    }
    if (t + 3 <= len && !memcmp(src + t, "-%}", 3)) {
        t += 3;
        while (t < len && is_space(src[t])) {
            t++;
        }
        return t;
    }
    if (t + 2 <= len && !memcmp(src + t, "%}", 2)) {
        t += 2;
        return t < len && src[t] == '\n' ? t + 1 : t;
    }
    return 0;
}

int jj_lex(jj_arena *a, const char *src, size_t len, jj_token **toks, size_t *n_toks, oxl_error *err) {
    lexer lx = {.a = a, .s = src, .n = len, .err = err};
    size_t i = 0;
    bool line_starting = true;
    while (i < len) {
        /* find the next tag opening */
        size_t j = i;
        const char *open = NULL;
        while (j + 1 < len) {
            if (src[j] == '{' && (src[j + 1] == '{' || src[j + 1] == '%' || src[j + 1] == '#')) {
                open = src + j;
                break;
            }
            j++;
        }
        if (!open) {
            if (!push(&lx, JT_TEXT, i, src + i, len - i)) {
                return -1;
            }
            break;
        }
        char kind = open[1];
        char sign = j + 2 < len ? src[j + 2] : 0;
        size_t text_end = j;
        if (sign == '-') {
            while (text_end > i && is_space(src[text_end - 1])) {
                text_end--;
            }
        } else if (sign != '+' && kind != '{') {
            size_t l_pos = text_end;
            while (l_pos > i && src[l_pos - 1] != '\n') {
                l_pos--;
            }
            if (l_pos > i || line_starting) {
                bool ws = l_pos < text_end;
                for (size_t k = l_pos; k < text_end && ws; k++) {
                    ws = is_space(src[k]);
                }
                if (ws) {
                    text_end = l_pos;
                }
            }
        }
        if (text_end > i && !push(&lx, JT_TEXT, i, src + i, text_end - i)) {
            return -1;
        }
        size_t p = j + 2 + ((sign == '-' || sign == '+') ? 1 : 0);
        if (kind == '#') {
            size_t k = p;
            bool found = false;
            while (k + 1 < len) {
                if (src[k] == '#' && src[k + 1] == '}') {
                    found = true;
                    break;
                }
                k++;
            }
            if (!found) {
                return lex_fail(&lx, j, "missing end of comment tag");
            }
            bool minus = k > p && src[k - 1] == '-', plus = k > p && src[k - 1] == '+';
            i = k + 2;
            line_starting = false;
            if (minus) {
                while (i < len && is_space(src[i])) {
                    line_starting = src[i] == '\n';
                    i++;
                }
            } else if (!plus && i < len && src[i] == '\n') {
                i++;
                line_starting = true;
            }
            continue;
        }
        bool block = kind == '%';
        /* {% raw %} ... {% endraw %}: the body is text. As in Jinja2, the opening tag ends in `%}` or
         * `-%}` (no trim_blocks there, no `+%}`); otherwise it is an ordinary (unknown) tag. */
        size_t raw_end = block ? raw_open(src, len, p) : 0;
        if (raw_end) {
            line_starting = src[raw_end - 1] == '\n';
            size_t body = raw_end, e = body, end_close = 0;
            char close_sign = 0;
            for (; e + 1 < len && !end_close; e++) {
                if (src[e] == '{' && src[e + 1] == '%') {
                    end_close = raw_close(src, len, e, &close_sign);
                    if (end_close) {
                        break;
                    }
                }
            }
            if (!end_close) {
                return lex_fail(&lx, j, "missing end of raw directive");
            }
            size_t body_end = e;
            if (close_sign == '-') {
                while (body_end > body && is_space(src[body_end - 1])) {
                    body_end--;
                }
            } else if (close_sign != '+') {
                size_t l_pos = body_end;
                while (l_pos > body && src[l_pos - 1] != '\n') {
                    l_pos--;
                }
                if (l_pos > body || line_starting) {
                    bool ws = l_pos < body_end;
                    for (size_t k = l_pos; k < body_end && ws; k++) {
                        ws = is_space(src[k]);
                    }
                    if (ws) {
                        body_end = l_pos;
                    }
                }
            }
            if (body_end > body && !push(&lx, JT_TEXT, body, src + body, body_end - body)) {
                return -1;
            }
            i = end_close;
            line_starting = src[end_close - 1] == '\n';
            continue;
        }
        if (!push(&lx, block ? JT_BLOCK_BEGIN : JT_VAR_BEGIN, j, src + j, p - j)) {
            return -1;
        }
        i = p;
        bool nl = false;
        if (lex_tag(&lx, &i, block, &nl) < 0) {
            return -1;
        }
        line_starting = nl;
    }
    if (!push(&lx, JT_EOF, len, src + len, 0)) {
        return -1;
    }
    *toks = lx.toks;
    *n_toks = lx.n_toks;
    return 0;
}
