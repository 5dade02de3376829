/* Jinja parser: tokens to an AST, following the grammar of jinja2/parser.py (operator precedence,
 * filters and tests binding inside unary expressions, `x if c else y`, tuples, slices, keyword
 * arguments) and the statements chat templates use: if/elif/else, for (targets, `if` filter,
 * `else`, recursive), set (plain, attribute, tuple, block with filters), macro, call, filter,
 * with, break, continue, generation. Nesting is bounded. */
#include "jinja_internal.h"

#include "errors.h"

#include <stdio.h>
#include <string.h>

#define JJ_MAX_PARSE_DEPTH 200

typedef struct parser {
    oxl_jinja_template *t;
    const jj_token *tk;
    size_t n, i;
    int depth;
    int loops; /* for bodies around the current statement, inside the current macro or call block */
    oxl_error *err;
} parser;

static const jj_token *cur(parser *p) { return &p->tk[p->i < p->n ? p->i : p->n - 1]; }
static const jj_token *peek(parser *p, size_t k) { return &p->tk[p->i + k < p->n ? p->i + k : p->n - 1]; }

static bool tok_is(const jj_token *t, jj_tok_type type, const char *s) {
    return t->type == type && (!s || (t->n == strlen(s) && !memcmp(t->s, s, t->n)));
}
static bool is_op(parser *p, const char *s) { return tok_is(cur(p), JT_OP, s); }
static bool is_name(parser *p, const char *s) { return tok_is(cur(p), JT_NAME, s); }

static const char *tok_desc(const jj_token *t, char *buf, size_t n) {
    switch (t->type) {
    case JT_EOF: return "end of template";
    case JT_BLOCK_END: return "end of statement block";
    case JT_VAR_END: return "end of print statement";
    case JT_TEXT: return "template data";
    default: snprintf(buf, n, "'%.*s'", (int)(t->n > 40 ? 40 : t->n), t->s); return buf;
    }
}

static void *fail_at(parser *p, size_t pos, const char *fmt, const char *arg) {
    int line, col;
    jj_line_col(p->t->src, p->t->src_len, pos, &line, &col);
    char msg[256];
    snprintf(msg, sizeof msg, fmt, arg);
    oxl_err_set(p->err, "template:%d:%d: TemplateSyntaxError: %s", line, col, msg);
    return NULL;
}

static void *fail_unexpected(parser *p, const char *expected) {
    char buf[64], msg[160];
    snprintf(msg, sizeof msg, "unexpected %s%s%s", tok_desc(cur(p), buf, sizeof buf), expected ? ", expected " : "",
             expected ? expected : "");
    return fail_at(p, cur(p)->pos, "%s", msg);
}

static jj_node *node(parser *p, jj_kind kind, uint32_t pos) {
    jj_node *n = jj_alloc(&p->t->arena, sizeof(jj_node));
    if (!n) {
        oxl_err_set(p->err, "template: out of memory while parsing");
        return NULL;
    }
    n->kind = (uint8_t)kind;
    n->pos = pos;
    return n;
}

static bool add_kid(parser *p, jj_node *parent, jj_node *kid) {
    if (!kid) {
        return false;
    }
    if ((parent->n_kids & (parent->n_kids - 1)) == 0) { /* grow at powers of two */
        size_t cap = parent->n_kids ? parent->n_kids * 2 : 1;
        jj_node **k = jj_alloc(&p->t->arena, cap * sizeof(jj_node *));
        if (!k) {
            oxl_err_set(p->err, "template: out of memory while parsing");
            return false;
        }
        if (parent->n_kids) {
            memcpy(k, parent->kids, parent->n_kids * sizeof(jj_node *));
        }
        parent->kids = k;
    }
    parent->kids[parent->n_kids++] = kid;
    return true;
}

static bool add_kw(parser *p, jj_node *n, const char *name, jj_node *v) {
    if (!v) {
        return false;
    }
    const char **kn = jj_alloc(&p->t->arena, (n->n_kw + 1) * sizeof(char *));
    jj_node **kv = jj_alloc(&p->t->arena, (n->n_kw + 1) * sizeof(jj_node *));
    if (!kn || !kv) {
        oxl_err_set(p->err, "template: out of memory while parsing");
        return false;
    }
    if (n->n_kw) {
        memcpy(kn, n->kwn, n->n_kw * sizeof(char *));
        memcpy(kv, n->kwv, n->n_kw * sizeof(jj_node *));
    }
    kn[n->n_kw] = name;
    kv[n->n_kw] = v;
    n->kwn = kn;
    n->kwv = kv;
    n->n_kw++;
    return true;
}

static const char *tok_cstr(parser *p, const jj_token *t) {
    char *s = jj_alloc(&p->t->arena, t->n + 1);
    if (!s) {
        oxl_err_set(p->err, "template: out of memory while parsing");
        return NULL;
    }
    memcpy(s, t->s, t->n);
    return s;
}

static bool expect_op(parser *p, const char *op) {
    if (!is_op(p, op)) {
        char e[16];
        snprintf(e, sizeof e, "'%s'", op);
        fail_unexpected(p, e);
        return false;
    }
    p->i++;
    return true;
}

static bool enter(parser *p) {
    if (++p->depth > JJ_MAX_PARSE_DEPTH) {
        fail_at(p, cur(p)->pos, "%s", "template nested too deeply");
        return false;
    }
    return true;
}

/* --- expressions ----------------------------------------------------------------------------- */
static jj_node *parse_expr(parser *p);
static jj_node *parse_or(parser *p);
static jj_node *parse_unary(parser *p, bool with_filter);
static jj_node *parse_tuple(parser *p, bool with_condexpr, bool explicit_parens);
static jj_node *parse_primary(parser *p);

static jj_node *lit_node(parser *p, uint32_t pos, jv *v) {
    jj_node *n = node(p, JN_LIT, pos);
    if (n) {
        if (!v) {
            oxl_err_set(p->err, "template: out of memory while parsing");
            return NULL;
        }
        n->lit = v;
    }
    return n;
}

/* (args, name=value) after '(' */
static bool parse_args(parser *p, jj_node *n) {
    if (!expect_op(p, "(")) {
        return false;
    }
    while (!is_op(p, ")")) {
        if (n->n_kids || n->n_kw) {
            if (!expect_op(p, ",")) {
                return false;
            }
            if (is_op(p, ")")) {
                break;
            }
        }
        if (cur(p)->type == JT_NAME && tok_is(peek(p, 1), JT_OP, "=")) {
            const char *name = tok_cstr(p, cur(p));
            p->i += 2;
            if (!name || !add_kw(p, n, name, parse_expr(p))) {
                return false;
            }
        } else {
            if (n->n_kw) {
                fail_unexpected(p, "a keyword argument");
                return false;
            }
            if (!add_kid(p, n, parse_expr(p))) {
                return false;
            }
        }
    }
    p->i++;
    return true;
}

static jj_node *parse_subscript(parser *p, jj_node *obj) {
    const jj_token *t = cur(p);
    if (is_op(p, ".")) {
        p->i++;
        const jj_token *nt = cur(p);
        if (nt->type == JT_NAME) {
            jj_node *n = node(p, JN_GETATTR, t->pos);
            if (!n) {
                return NULL;
            }
            n->a = obj;
            n->str = tok_cstr(p, nt);
            n->str_len = nt->n;
            p->i++;
            return n->str ? n : NULL;
        }
        if (nt->type == JT_INT) {
            jj_node *n = node(p, JN_GETITEM, t->pos);
            if (!n) {
                return NULL;
            }
            n->a = obj;
            n->b = lit_node(p, nt->pos, jv_int(&p->t->arena, nt->i));
            p->i++;
            return n->b ? n : NULL;
        }
        return fail_unexpected(p, "an attribute name");
    }
    p->i++; /* '[' */
    jj_node *parts[3] = {NULL, NULL, NULL};
    bool slice = false;
    int k = 0;
    for (;;) {
        if (is_op(p, ":")) {
            slice = true;
            if (++k > 2) {
                return fail_unexpected(p, "']'");
            }
            p->i++;
            continue;
        }
        if (is_op(p, "]")) {
            break;
        }
        if (parts[k]) {
            return fail_unexpected(p, "']'");
        }
        parts[k] = slice || k ? parse_expr(p) : parse_tuple(p, true, false);
        if (!parts[k]) {
            return NULL;
        }
    }
    p->i++;
    jj_node *n = node(p, slice ? JN_SLICE : JN_GETITEM, t->pos);
    if (!n) {
        return NULL;
    }
    n->a = obj;
    if (slice) {
        n->b = parts[0];
        n->c = parts[1];
        n->d = parts[2];
    } else {
        if (!parts[0]) {
            return fail_unexpected(p, "an expression");
        }
        n->b = parts[0];
    }
    return n;
}

/* A call of n: `(` arguments `)`. */
static jj_node *parse_call(parser *p, jj_node *n) {
    jj_node *c = node(p, JN_CALL, cur(p)->pos);
    if (!c || !parse_args(p, c)) {
        return NULL;
    }
    c->a = n;
    return c;
}

static jj_node *parse_postfix(parser *p, jj_node *n) {
    while (n) {
        if (is_op(p, ".") || is_op(p, "[")) {
            n = parse_subscript(p, n);
        } else if (is_op(p, "(")) {
            n = parse_call(p, n);
        } else {
            break;
        }
    }
    return n;
}

static const char *parse_dotted_name(parser *p, size_t *len) {
    if (cur(p)->type != JT_NAME) {
        fail_unexpected(p, "a name");
        return NULL;
    }
    const char *s = tok_cstr(p, cur(p));
    *len = cur(p)->n;
    p->i++;
    return s;
}

/* `| name(args)` repeated; base may be a JN_CAPTURED placeholder */
static jj_node *parse_filter(parser *p, jj_node *base, bool start_inline) {
    while (base && (is_op(p, "|") || start_inline)) {
        if (!start_inline) {
            p->i++;
        }
        start_inline = false;
        jj_node *f = node(p, JN_FILTER, cur(p)->pos);
        if (!f) {
            return NULL;
        }
        f->a = base;
        f->str = parse_dotted_name(p, &f->str_len);
        if (!f->str) {
            return NULL;
        }
        if (is_op(p, "(") && !parse_args(p, f)) {
            return NULL;
        }
        base = f;
    }
    return base;
}

static jj_node *parse_test(parser *p, jj_node *base) {
    uint32_t pos = cur(p)->pos;
    p->i++; /* is */
    bool negated = false;
    if (is_name(p, "not")) {
        negated = true;
        p->i++;
    }
    jj_node *t = node(p, JN_TEST, pos);
    if (!t) {
        return NULL;
    }
    t->a = base;
    t->flag = negated;
    t->str = parse_dotted_name(p, &t->str_len);
    if (!t->str) {
        return NULL;
    }
    const jj_token *c = cur(p);
    if (is_op(p, "(")) {
        if (!parse_args(p, t)) {
            return NULL;
        }
    } else if ((c->type == JT_NAME || c->type == JT_STRING || c->type == JT_INT || c->type == JT_FLOAT ||
                is_op(p, "[") || is_op(p, "{")) &&
               !is_name(p, "else") && !is_name(p, "or") && !is_name(p, "and")) {
        if (is_name(p, "is")) {
            return fail_unexpected(p, NULL);
        }
        if (!add_kid(p, t, parse_postfix(p, parse_primary(p)))) {
            return NULL;
        }
    }
    return t;
}

static jj_node *parse_filter_expr(parser *p, jj_node *n) {
    while (n) {
        if (is_op(p, "|")) {
            n = parse_filter(p, n, false);
        } else if (is_name(p, "is")) {
            n = parse_test(p, n);
        } else if (is_op(p, "(")) {
            n = parse_call(p, n);
        } else {
            break;
        }
    }
    return n;
}

static jj_node *parse_primary(parser *p) {
    const jj_token *t = cur(p);
    jj_arena *a = &p->t->arena;
    if (!enter(p)) {
        return NULL;
    }
    jj_node *n = NULL;
    if (t->type == JT_NAME) {
        p->i++;
        if (tok_is(t, JT_NAME, "true") || tok_is(t, JT_NAME, "True")) {
            n = lit_node(p, t->pos, jv_bool(a, true));
        } else if (tok_is(t, JT_NAME, "false") || tok_is(t, JT_NAME, "False")) {
            n = lit_node(p, t->pos, jv_bool(a, false));
        } else if (tok_is(t, JT_NAME, "none") || tok_is(t, JT_NAME, "None")) {
            n = lit_node(p, t->pos, jv_new(a, JV_NONE));
        } else {
            n = node(p, JN_NAME, t->pos);
            if (n) {
                n->str = tok_cstr(p, t);
                n->str_len = t->n;
                if (!n->str) {
                    n = NULL;
                }
            }
        }
    } else if (t->type == JT_STRING) {
        /* adjacent string literals concatenate */
        size_t total = 0, j = p->i;
        while (j < p->n && p->tk[j].type == JT_STRING) {
            total += p->tk[j++].n;
        }
        char *s = jj_alloc(a, total + 1);
        if (!s) {
            oxl_err_set(p->err, "template: out of memory while parsing");
            return NULL;
        }
        size_t o = 0;
        for (; p->i < j; p->i++) {
            memcpy(s + o, p->tk[p->i].s, p->tk[p->i].n);
            o += p->tk[p->i].n;
        }
        n = lit_node(p, t->pos, jv_str_ref(a, s, total));
    } else if (t->type == JT_INT) {
        p->i++;
        n = lit_node(p, t->pos, jv_int(a, t->i));
    } else if (t->type == JT_FLOAT) {
        p->i++;
        n = lit_node(p, t->pos, jv_float(a, t->f));
    } else if (is_op(p, "(")) {
        p->i++;
        n = parse_tuple(p, true, true);
        if (n && !expect_op(p, ")")) {
            n = NULL;
        }
    } else if (is_op(p, "[")) {
        p->i++;
        n = node(p, JN_LIST, t->pos);
        while (n && !is_op(p, "]")) {
            if (n->n_kids && !expect_op(p, ",")) {
                n = NULL;
                break;
            }
            if (is_op(p, "]")) {
                break;
            }
            if (!add_kid(p, n, parse_expr(p))) {
                n = NULL;
            }
        }
        if (n) {
            p->i++;
        }
    } else if (is_op(p, "{")) {
        p->i++;
        n = node(p, JN_DICT, t->pos);
        while (n && !is_op(p, "}")) {
            if (n->n_kids && !expect_op(p, ",")) {
                n = NULL;
                break;
            }
            if (is_op(p, "}")) {
                break;
            }
            if (!add_kid(p, n, parse_expr(p)) || !expect_op(p, ":") || !add_kid(p, n, parse_expr(p))) {
                n = NULL;
            }
        }
        if (n) {
            p->i++;
        }
    } else {
        n = fail_unexpected(p, "an expression");
    }
    p->depth--;
    return n;
}

static jj_node *parse_unary(parser *p, bool with_filter) {
    const jj_token *t = cur(p);
    if (!enter(p)) {
        return NULL;
    }
    jj_node *n;
    if (is_op(p, "-") || is_op(p, "+")) {
        p->i++;
        n = node(p, t->s[0] == '-' ? JN_NEG : JN_POS, t->pos);
        if (n && !(n->a = parse_unary(p, false))) {
            n = NULL;
        }
    } else {
        n = parse_primary(p);
    }
    n = parse_postfix(p, n);
    if (with_filter) {
        n = parse_filter_expr(p, n);
    }
    p->depth--;
    return n;
}

static jj_node *binary(parser *p, uint32_t pos, jj_op op, jj_node *a, jj_node *b) {
    if (!a || !b) {
        return NULL;
    }
    jj_node *n = node(p, JN_BIN, pos);
    if (n) {
        n->op = (uint8_t)op;
        n->a = a;
        n->b = b;
    }
    return n;
}

static jj_node *parse_pow(parser *p) {
    jj_node *n = parse_unary(p, true);
    while (n && is_op(p, "**")) {
        uint32_t pos = cur(p)->pos;
        p->i++;
        n = binary(p, pos, JOP_POW, n, parse_unary(p, true));
    }
    return n;
}

static jj_node *parse_math2(parser *p) {
    jj_node *n = parse_pow(p);
    while (n) {
        jj_op op;
        if (is_op(p, "*")) {
            op = JOP_MUL;
        } else if (is_op(p, "/")) {
            op = JOP_DIV;
        } else if (is_op(p, "//")) {
            op = JOP_FLOORDIV;
        } else if (is_op(p, "%")) {
            op = JOP_MOD;
        } else {
            break;
        }
        uint32_t pos = cur(p)->pos;
        p->i++;
        n = binary(p, pos, op, n, parse_pow(p));
    }
    return n;
}

static jj_node *parse_concat(parser *p) {
    jj_node *first = parse_math2(p);
    if (!first || !is_op(p, "~")) {
        return first;
    }
    jj_node *n = node(p, JN_CONCAT, cur(p)->pos);
    if (!n || !add_kid(p, n, first)) {
        return NULL;
    }
    while (is_op(p, "~")) {
        p->i++;
        if (!add_kid(p, n, parse_math2(p))) {
            return NULL;
        }
    }
    return n;
}

static jj_node *parse_math1(parser *p) {
    jj_node *n = parse_concat(p);
    while (n && (is_op(p, "+") || is_op(p, "-"))) {
        jj_op op = is_op(p, "+") ? JOP_ADD : JOP_SUB;
        uint32_t pos = cur(p)->pos;
        p->i++;
        n = binary(p, pos, op, n, parse_concat(p));
    }
    return n;
}

static jj_node *parse_compare(parser *p) {
    jj_node *first = parse_math1(p);
    jj_node *n = NULL;
    while (first) {
        jj_op op;
        size_t skip = 1;
        if (is_op(p, "==")) {
            op = JOP_EQ;
        } else if (is_op(p, "!=")) {
            op = JOP_NE;
        } else if (is_op(p, "<")) {
            op = JOP_LT;
        } else if (is_op(p, "<=")) {
            op = JOP_LE;
        } else if (is_op(p, ">")) {
            op = JOP_GT;
        } else if (is_op(p, ">=")) {
            op = JOP_GE;
        } else if (is_name(p, "in")) {
            op = JOP_IN;
        } else if (is_name(p, "not") && tok_is(peek(p, 1), JT_NAME, "in")) {
            op = JOP_NOTIN;
            skip = 2;
        } else {
            break;
        }
        if (!n) {
            n = node(p, JN_COMPARE, cur(p)->pos);
            if (!n || !add_kid(p, n, first)) {
                return NULL;
            }
        }
        p->i += skip;
        uint8_t *ops = jj_alloc(&p->t->arena, n->n_kids);
        if (!ops) {
            oxl_err_set(p->err, "template: out of memory while parsing");
            return NULL;
        }
        if (n->n_kids > 1) {
            memcpy(ops, n->ops, n->n_kids - 1);
        }
        ops[n->n_kids - 1] = (uint8_t)op;
        n->ops = ops;
        if (!add_kid(p, n, parse_math1(p))) {
            return NULL;
        }
    }
    return n ? n : first;
}

static jj_node *parse_not(parser *p) {
    if (is_name(p, "not")) {
        uint32_t pos = cur(p)->pos;
        p->i++;
        if (!enter(p)) {
            return NULL;
        }
        jj_node *n = node(p, JN_NOT, pos);
        if (n && !(n->a = parse_not(p))) {
            n = NULL;
        }
        p->depth--;
        return n;
    }
    return parse_compare(p);
}

static jj_node *parse_and(parser *p) {
    jj_node *n = parse_not(p);
    while (n && is_name(p, "and")) {
        jj_node *m = node(p, JN_AND, cur(p)->pos);
        p->i++;
        if (!m || !(m->b = parse_not(p))) {
            return NULL;
        }
        m->a = n;
        n = m;
    }
    return n;
}

static jj_node *parse_or(parser *p) {
    jj_node *n = parse_and(p);
    while (n && is_name(p, "or")) {
        jj_node *m = node(p, JN_OR, cur(p)->pos);
        p->i++;
        if (!m || !(m->b = parse_and(p))) {
            return NULL;
        }
        m->a = n;
        n = m;
    }
    return n;
}

static jj_node *parse_expr(parser *p) {
    if (!enter(p)) {
        return NULL;
    }
    jj_node *n = parse_or(p);
    while (n && is_name(p, "if")) {
        jj_node *c = node(p, JN_COND, cur(p)->pos);
        p->i++;
        if (!c || !(c->a = parse_or(p))) {
            n = NULL;
            break;
        }
        c->b = n;
        if (is_name(p, "else")) {
            p->i++;
            if (!(c->c = parse_expr(p))) {
                n = NULL;
                break;
            }
        }
        n = c;
    }
    p->depth--;
    return n;
}

static bool tuple_end(parser *p) {
    const jj_token *t = cur(p);
    return t->type == JT_BLOCK_END || t->type == JT_VAR_END || t->type == JT_EOF || is_op(p, ")") || is_op(p, "]") ||
           is_name(p, "in") || is_name(p, "recursive") || is_op(p, "=");
}

/* comma separated expressions: one without a comma is itself, otherwise a tuple */
static jj_node *parse_tuple(parser *p, bool with_condexpr, bool explicit_parens) {
    uint32_t pos = cur(p)->pos;
    jj_node *tuple = node(p, JN_TUPLE, pos);
    if (!tuple) {
        return NULL;
    }
    bool comma = false;
    for (;;) {
        if (tuple->n_kids) {
            if (!is_op(p, ",")) {
                break;
            }
            p->i++;
            comma = true;
        }
        if (tuple_end(p)) {
            break;
        }
        if (!add_kid(p, tuple, with_condexpr ? parse_expr(p) : parse_or(p))) {
            return NULL;
        }
    }
    if (!comma && tuple->n_kids == 1) {
        return tuple->kids[0];
    }
    if (tuple->n_kids == 0 && !explicit_parens) {
        return fail_unexpected(p, "an expression");
    }
    return tuple;
}

/* name, ns.attr (when allowed) or a tuple of names */
static jj_node *parse_target(parser *p, bool with_namespace) {
    uint32_t pos = cur(p)->pos;
    bool parens = is_op(p, "(");
    if (parens) {
        p->i++;
    }
    jj_node *tuple = node(p, JN_TUPLE, pos);
    while (tuple) {
        if (cur(p)->type != JT_NAME) {
            return fail_unexpected(p, "a name");
        }
        jj_node *n = node(p, JN_NAME, cur(p)->pos);
        if (!n || !(n->str = tok_cstr(p, cur(p)))) {
            return NULL;
        }
        n->str_len = cur(p)->n;
        p->i++;
        if (with_namespace && is_op(p, ".") && tok_is(peek(p, 1), JT_NAME, NULL)) {
            jj_node *g = node(p, JN_GETATTR, cur(p)->pos);
            p->i++;
            if (!g || !(g->str = tok_cstr(p, cur(p)))) {
                return NULL;
            }
            g->str_len = cur(p)->n;
            g->a = n;
            p->i++;
            n = g;
        }
        if (!add_kid(p, tuple, n)) {
            return NULL;
        }
        if (!is_op(p, ",")) {
            break;
        }
        p->i++;
    }
    if (parens && !expect_op(p, ")")) {
        return NULL;
    }
    return tuple && tuple->n_kids == 1 && !parens ? tuple->kids[0] : tuple;
}

/* --- statements ------------------------------------------------------------------------------ */
static jj_node *parse_body(parser *p, const char *const *ends, size_t n_ends);

static bool expect_block_end(parser *p) {
    if (cur(p)->type != JT_BLOCK_END) {
        fail_unexpected(p, "end of statement block");
        return false;
    }
    p->i++;
    return true;
}

/* after parse_body stopped at `{% name`: consumes `{% name` and returns which end matched */
static const char *take_end(parser *p) {
    p->i++;
    const char *s = tok_cstr(p, cur(p));
    p->i++;
    return s;
}

static jj_node *parse_if(parser *p, uint32_t pos) {
    static const char *const ends[] = {"elif", "else", "endif"};
    jj_node *n = node(p, JN_IF, pos);
    if (!n || !(n->a = parse_tuple(p, false, false)) || !expect_block_end(p) || !(n->b = parse_body(p, ends, 3))) {
        return NULL;
    }
    uint32_t epos = cur(p)->pos;
    const char *end = take_end(p);
    if (!end) {
        return NULL;
    }
    if (!strcmp(end, "elif")) {
        n->c = parse_if(p, epos);
        return n->c ? n : NULL;
    }
    if (!strcmp(end, "else")) {
        static const char *const ends2[] = {"endif"};
        if (!expect_block_end(p) || !(n->c = parse_body(p, ends2, 1)) || !take_end(p)) {
            return NULL;
        }
    }
    return expect_block_end(p) ? n : NULL;
}

static jj_node *parse_for(parser *p, uint32_t pos) {
    static const char *const ends[] = {"else", "endfor"};
    static const char *const ends2[] = {"endfor"};
    jj_node *n = node(p, JN_FOR, pos);
    if (!n || !(n->a = parse_target(p, false))) {
        return NULL;
    }
    if (!is_name(p, "in")) {
        return fail_unexpected(p, "'in'");
    }
    p->i++;
    if (!(n->b = parse_tuple(p, false, false))) {
        return NULL;
    }
    if (is_name(p, "if")) {
        p->i++;
        if (!(n->e = parse_expr(p))) {
            return NULL;
        }
    }
    if (is_name(p, "recursive")) {
        p->i++;
        n->flag = 1;
    }
    p->loops++;
    n->c = expect_block_end(p) ? parse_body(p, ends, 2) : NULL;
    p->loops--;
    if (!n->c) {
        return NULL;
    }
    const char *end = take_end(p);
    if (!end) {
        return NULL;
    }
    if (!strcmp(end, "else")) { /* the else body runs after the loop, not in it */
        if (!expect_block_end(p) || !(n->d = parse_body(p, ends2, 1)) || !take_end(p)) {
            return NULL;
        }
    }
    return expect_block_end(p) ? n : NULL;
}

static jj_node *parse_set(parser *p, uint32_t pos) {
    static const char *const ends[] = {"endset"};
    jj_node *n = node(p, JN_SET, pos);
    if (!n || !(n->a = parse_target(p, true))) {
        return NULL;
    }
    if (is_op(p, "=")) {
        p->i++;
        if (!(n->b = parse_tuple(p, true, false)) || !expect_block_end(p)) {
            return NULL;
        }
        return n;
    }
    if (is_op(p, "|")) {
        jj_node *cap = node(p, JN_CAPTURED, cur(p)->pos);
        if (!cap || !(n->e = parse_filter(p, cap, false))) {
            return NULL;
        }
    }
    if (!expect_block_end(p) || !(n->c = parse_body(p, ends, 1)) || !take_end(p) || !expect_block_end(p)) {
        return NULL;
    }
    return n;
}

/* (name, name=default, ...) */
static bool parse_params(parser *p, jj_node *n) {
    if (!expect_op(p, "(")) {
        return false;
    }
    while (!is_op(p, ")")) {
        if (n->n_kids && !expect_op(p, ",")) {
            return false;
        }
        if (cur(p)->type != JT_NAME) {
            fail_unexpected(p, "a parameter name");
            return false;
        }
        jj_node *param = node(p, JN_NAME, cur(p)->pos);
        if (!param || !(param->str = tok_cstr(p, cur(p)))) {
            return false;
        }
        param->str_len = cur(p)->n;
        p->i++;
        if (is_op(p, "=")) {
            p->i++;
            if (!(param->a = parse_expr(p))) {
                return false;
            }
        }
        if (!add_kid(p, n, param)) {
            return false;
        }
    }
    p->i++;
    return true;
}

/* Which of caller, varargs and kwargs a macro body names (anywhere inside): Jinja2 only lets a
 * macro take a caller, extra positional or extra keyword arguments when it does. */
static unsigned names_special(const jj_node *n) {
    if (!n) {
        return 0;
    }
    unsigned f = 0;
    if (n->kind == JN_NAME) {
        f |= !strcmp(n->str, "caller") ? 1u : !strcmp(n->str, "varargs") ? 2u : !strcmp(n->str, "kwargs") ? 4u : 0u;
    }
    f |= names_special(n->a) | names_special(n->b) | names_special(n->c) | names_special(n->d) | names_special(n->e);
    for (size_t i = 0; i < n->n_kids; i++) {
        f |= names_special(n->kids[i]);
    }
    for (size_t i = 0; i < n->n_kw; i++) {
        f |= names_special(n->kwv[i]);
    }
    return f;
}

static jj_node *parse_macro(parser *p, uint32_t pos) {
    static const char *const ends[] = {"endmacro"};
    jj_node *n = node(p, JN_MACRO, pos);
    if (!n) {
        return NULL;
    }
    n->str = parse_dotted_name(p, &n->str_len);
    if (!n->str || !parse_params(p, n) || !expect_block_end(p)) {
        return NULL;
    }
    int loops = p->loops; /* a macro body is a function of its own: no loop around it */
    p->loops = 0;
    n->c = parse_body(p, ends, 1);
    p->loops = loops;
    if (!n->c || !take_end(p)) {
        return NULL;
    }
    n->flag = (uint8_t)names_special(n->c);
    if (cur(p)->type == JT_NAME) { /* {% endmacro name %} */
        p->i++;
    }
    return expect_block_end(p) ? n : NULL;
}

static jj_node *parse_call_block(parser *p, uint32_t pos) {
    static const char *const ends[] = {"endcall"};
    jj_node *n = node(p, JN_CALLBLOCK, pos);
    if (!n) {
        return NULL;
    }
    if (is_op(p, "(") && !parse_params(p, n)) {
        return NULL;
    }
    if (!(n->a = parse_expr(p))) {
        return NULL;
    }
    if (n->a->kind != JN_CALL) {
        return fail_at(p, n->a->pos, "%s", "expected call");
    }
    if (!expect_block_end(p)) {
        return NULL;
    }
    int loops = p->loops; /* the caller body is a function of its own */
    p->loops = 0;
    n->c = parse_body(p, ends, 1);
    p->loops = loops;
    if (!n->c || !take_end(p) || !expect_block_end(p)) {
        return NULL;
    }
    return n;
}

static jj_node *parse_filter_block(parser *p, uint32_t pos) {
    static const char *const ends[] = {"endfilter"};
    jj_node *n = node(p, JN_FILTERBLK, pos);
    jj_node *cap = node(p, JN_CAPTURED, pos);
    if (!n || !cap || !(n->e = parse_filter(p, cap, true))) {
        return NULL;
    }
    if (!expect_block_end(p) || !(n->c = parse_body(p, ends, 1)) || !take_end(p) || !expect_block_end(p)) {
        return NULL;
    }
    return n;
}

/* {% with a = 1, b = 2 %} ... {% endwith %} */
static jj_node *parse_with(parser *p, uint32_t pos) {
    static const char *const ends[] = {"endwith"};
    jj_node *n = node(p, JN_WITH, pos);
    while (n && cur(p)->type != JT_BLOCK_END) {
        if (n->n_kids && !expect_op(p, ",")) {
            return NULL;
        }
        if (cur(p)->type != JT_NAME) {
            return fail_unexpected(p, "a name");
        }
        jj_node *target = node(p, JN_NAME, cur(p)->pos);
        if (!target || !(target->str = tok_cstr(p, cur(p)))) {
            return NULL;
        }
        target->str_len = cur(p)->n;
        p->i++;
        if (!expect_op(p, "=") || !(target->a = parse_expr(p)) || !add_kid(p, n, target)) {
            return NULL;
        }
    }
    if (!n || !expect_block_end(p) || !(n->c = parse_body(p, ends, 1)) || !take_end(p) || !expect_block_end(p)) {
        return NULL;
    }
    return n;
}

static jj_node *parse_statement(parser *p) {
    uint32_t pos = cur(p)->pos;
    p->i++; /* {% */
    const jj_token *kw = cur(p);
    if (kw->type != JT_NAME) {
        return fail_unexpected(p, "a statement name");
    }
    p->i++;
    if (!enter(p)) {
        return NULL;
    }
    jj_node *n;
    if (tok_is(kw, JT_NAME, "if")) {
        n = parse_if(p, pos);
    } else if (tok_is(kw, JT_NAME, "for")) {
        n = parse_for(p, pos);
    } else if (tok_is(kw, JT_NAME, "set")) {
        n = parse_set(p, pos);
    } else if (tok_is(kw, JT_NAME, "macro")) {
        n = parse_macro(p, pos);
    } else if (tok_is(kw, JT_NAME, "call")) {
        n = parse_call_block(p, pos);
    } else if (tok_is(kw, JT_NAME, "filter")) {
        n = parse_filter_block(p, pos);
    } else if (tok_is(kw, JT_NAME, "with")) {
        n = parse_with(p, pos);
    } else if ((tok_is(kw, JT_NAME, "break") || tok_is(kw, JT_NAME, "continue")) && !p->loops) {
        n = fail_at(p, kw->pos, "%s", kw->s[0] == 'b' ? "'break' outside loop" : "'continue' not properly in loop");
    } else if (tok_is(kw, JT_NAME, "break") || tok_is(kw, JT_NAME, "continue")) {
        n = node(p, kw->s[0] == 'b' ? JN_BREAK : JN_CONTINUE, pos);
        if (n && !expect_block_end(p)) {
            n = NULL;
        }
    } else if (tok_is(kw, JT_NAME, "generation")) {
        static const char *const ends[] = {"endgeneration"};
        n = NULL;
        if (expect_block_end(p)) {
            n = parse_body(p, ends, 1);
            if (n && (!take_end(p) || !expect_block_end(p))) {
                n = NULL;
            }
        }
    } else {
        char name[64];
        snprintf(name, sizeof name, "%.*s", (int)(kw->n > 40 ? 40 : kw->n), kw->s);
        n = fail_at(p, kw->pos, "Encountered unknown tag '%s'.", name);
    }
    p->depth--;
    return n;
}

static jj_node *parse_body(parser *p, const char *const *ends, size_t n_ends) {
    jj_node *body = node(p, JN_BLOCK, cur(p)->pos);
    while (body) {
        const jj_token *t = cur(p);
        if (t->type == JT_EOF) {
            if (n_ends) {
                char e[64];
                snprintf(e, sizeof e, "'%s'", ends[n_ends - 1]);
                return fail_at(p, t->pos, "unexpected end of template, expected %s", e);
            }
            return body;
        }
        if (t->type == JT_TEXT) {
            jj_node *n = node(p, JN_TEXT, t->pos);
            if (!n) {
                return NULL;
            }
            n->str = t->s;
            n->str_len = t->n;
            p->i++;
            if (!add_kid(p, body, n)) {
                return NULL;
            }
        } else if (t->type == JT_VAR_BEGIN) {
            jj_node *n = node(p, JN_OUTPUT, t->pos);
            p->i++;
            if (!n || !(n->a = parse_tuple(p, true, false))) {
                return NULL;
            }
            if (cur(p)->type != JT_VAR_END) {
                return fail_unexpected(p, "end of print statement");
            }
            p->i++;
            if (!add_kid(p, body, n)) {
                return NULL;
            }
        } else if (t->type == JT_BLOCK_BEGIN) {
            const jj_token *kw = peek(p, 1);
            for (size_t k = 0; k < n_ends; k++) {
                if (tok_is(kw, JT_NAME, ends[k])) {
                    return body;
                }
            }
            if (kw->type == JT_NAME && kw->n > 3 &&
                (!memcmp(kw->s, "end", 3) || tok_is(kw, JT_NAME, "else") || tok_is(kw, JT_NAME, "elif"))) {
                char name[64];
                snprintf(name, sizeof name, "%.*s", (int)(kw->n > 40 ? 40 : kw->n), kw->s);
                return fail_at(p, kw->pos, "unexpected tag '%s'", name);
            }
            if (!add_kid(p, body, parse_statement(p))) {
                return NULL;
            }
        } else {
            return fail_unexpected(p, NULL);
        }
    }
    return NULL;
}

int jj_parse(oxl_jinja_template *t, const jj_token *toks, size_t n_toks, oxl_error *err) {
    parser p = {.t = t, .tk = toks, .n = n_toks, .err = err};
    t->root = parse_body(&p, NULL, 0);
    return t->root ? 0 : -1;
}
