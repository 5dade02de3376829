/* Jinja evaluator: runs the AST against the request's values with the semantics of Python Jinja2
 * 3.1 in HuggingFace's ImmutableSandboxedEnvironment (jinja2/runtime.py, filters.py, tests.py,
 * sandbox.py): default Undefined, a fresh scope per loop iteration, namespaces, macros with
 * caller, Python operators and string methods, and the sandbox's refusal of mutating methods.
 * Errors read "template:LINE:COL: <Python exception class>: <message>". */
#include "jinja_internal.h"

#include "errors.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define JJ_MAX_FRAMES 1000  /* nested eval/exec frames: bounds the C stack near 1 MiB (about 1 KiB each) */
#define JJ_MAX_RANGE 100000 /* Jinja's sandbox limit for range() */

typedef struct jj_scope {
    struct jj_scope *parent;
    jv *vars; /* JV_DICT */
} jj_scope;

typedef struct jj_loop {
    jv *items;
    size_t index0;
    int depth;
    const jj_node *fornode;
    jj_scope *scope; /* where the for statement stands (for recursive calls) */
    jv *changed_last;
} jj_loop;

typedef struct ctx {
    const oxl_jinja_template *t;
    const oxl_jinja_options *opt;
    jj_arena *a;
    oxl_error *err;
    bool failed;
    jj_buf *out;
    jj_scope *root;
    uint64_t steps;
    int depth;  /* macro calls and recursive loops */
    int frames; /* eval/exec recursion */
    jv *captured;
} ctx;

typedef struct args {
    jv **pos;
    size_t npos;
    const char **kwn;
    jv **kwv;
    size_t nkw;
} args;

enum { F_RANGE, F_NAMESPACE, F_RAISE, F_STRFTIME, F_DICT, F_CALLER };

/* --- errors ---------------------------------------------------------------------------------- */
__attribute__((format(printf, 4, 5))) static void *fail(ctx *c, const jj_node *n, const char *cls, const char *fmt,
                                                        ...) {
    if (c->failed) {
        return NULL;
    }
    c->failed = true;
    char msg[400];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    int line = 0, col = 0;
    jj_line_col(c->t->src, c->t->src_len, n ? n->pos : 0, &line, &col);
    oxl_err_set(c->err, "template:%d:%d: %s: %s", line, col, cls, msg);
    return NULL;
}

static void *oom(ctx *c, const jj_node *n) {
    return fail(c, n, "MemoryError", "render needs more than %zu bytes of values", c->opt->max_memory);
}

static void *undef_fail(ctx *c, const jj_node *n, const jv *u) {
    return fail(c, n, u->flags & JF_SECURITY ? "SecurityError" : "UndefinedError", "%s",
                u->undef.hint ? u->undef.hint : "value is undefined");
}

static const char *fmt_str(ctx *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static const char *fmt_str(ctx *c, const char *fmt, ...) {
    char tmp[300];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(tmp, sizeof tmp, fmt, ap);
    va_end(ap);
    if (n < 0) {
        return "";
    }
    size_t len = (size_t)n < sizeof tmp ? (size_t)n : sizeof tmp - 1;
    char *s = jj_alloc(c->a, len + 1);
    if (s) {
        memcpy(s, tmp, len);
    }
    return s ? s : "";
}

/* Python's object_type_repr as Undefined messages use it */
static const char *obj_repr(ctx *c, const jv *v) {
    if (v->type == JV_NONE) {
        return "None";
    }
    if (v->flags & JF_NS) {
        return "jinja2.utils.Namespace object";
    }
    return fmt_str(c, "%s object", jv_type_name(v));
}

static const char *short_str(ctx *c, const char *s, size_t n) { return fmt_str(c, "%.*s", (int)(n > 60 ? 60 : n), s); }

/* --- helpers --------------------------------------------------------------------------------- */
static jv *mk(ctx *c, const jj_node *n, jv *v) { return v ? v : oom(c, n); }

static jv *new_list(ctx *c, const jj_node *n, uint8_t flags) {
    jv *l = jv_new(c->a, JV_LIST);
    if (!l) {
        return oom(c, n);
    }
    l->flags = flags;
    return l;
}

static bool push(ctx *c, const jj_node *n, jv *l, jv *item) {
    if (!item) {
        if (!c->failed) {
            oom(c, n);
        }
        return false;
    }
    if (!jv_list_push(c->a, l, item)) {
        oom(c, n);
        return false;
    }
    return true;
}

static jv *str_of(ctx *c, const jj_node *n, jv *v) {
    if (v->type == JV_STR) {
        return v;
    }
    jj_buf b = {.arena = c->a};
    if (!jv_to_str(&b, v)) {
        return oom(c, n);
    }
    return mk(c, n, jv_str_ref(c->a, b.s ? b.s : "", b.n));
}

static jv *tuple2(ctx *c, const jj_node *n, jv *x, jv *y) {
    jv *t = new_list(c, n, JF_TUPLE);
    if (!t || !push(c, n, t, x) || !push(c, n, t, y)) {
        return NULL;
    }
    return t;
}

static bool step(ctx *c, const jj_node *n) {
    if (++c->steps > c->opt->max_steps) {
        fail(c, n, "TemplateRuntimeError", "template exceeded %llu evaluation steps",
             (unsigned long long)c->opt->max_steps);
        return false;
    }
    return true;
}

/* The items a for loop, list(), join ... see: list and tuple items, dict keys, characters of a
 * string, nothing for Undefined. */
static jv *iter_items(ctx *c, const jj_node *n, jv *v) {
    switch (v->type) {
    case JV_LIST: return v;
    case JV_UNDEF: return new_list(c, n, 0);
    case JV_DICT: {
        if (v->flags & JF_NS) {
            break;
        }
        jv *l = new_list(c, n, 0);
        for (size_t i = 0; l && i < v->dict.n; i++) {
            if (!push(c, n, l, v->dict.keys[i])) {
                return NULL;
            }
        }
        return l;
    }
    case JV_STR: {
        jv *l = new_list(c, n, 0);
        for (size_t i = 0; l && i < v->str.n;) {
            size_t j = i + 1;
            while (j < v->str.n && ((unsigned char)v->str.s[j] & 0xC0) == 0x80) {
                j++;
            }
            if (!push(c, n, l, jv_str_ref(c->a, v->str.s + i, j - i))) {
                return NULL;
            }
            i = j;
        }
        return l;
    }
    default: break;
    }
    return fail(c, n, "TypeError", "'%s' object is not iterable", jv_type_name(v));
}

static jv *arg(args *a, size_t i, const char *name) {
    if (i < a->npos) {
        return a->pos[i];
    }
    for (size_t k = 0; name && k < a->nkw; k++) {
        if (!strcmp(a->kwn[k], name)) {
            return a->kwv[k];
        }
    }
    return NULL;
}

static bool is_str(const jv *v) { return v && v->type == JV_STR; }
static bool str_eq(const jv *v, const char *s) {
    return is_str(v) && v->str.n == strlen(s) && !memcmp(v->str.s, s, v->str.n);
}

static bool int_arg(ctx *c, const jj_node *n, jv *v, int64_t def, int64_t *out) {
    if (!v || v->type == JV_NONE) {
        *out = def;
        return true;
    }
    if (v->type == JV_INT || v->type == JV_BOOL) {
        *out = v->type == JV_INT ? v->i : v->b;
        return true;
    }
    fail(c, n, "TypeError", "'%s' object cannot be interpreted as an integer", jv_type_name(v));
    return false;
}

/* --- scopes ---------------------------------------------------------------------------------- */
static jj_scope *scope_new(ctx *c, const jj_node *n, jj_scope *parent) {
    jj_scope *s = jj_alloc(c->a, sizeof(jj_scope));
    jv *vars = jv_new(c->a, JV_DICT);
    if (!s || !vars) {
        return oom(c, n);
    }
    s->parent = parent;
    s->vars = vars;
    return s;
}

static bool key_is(const jv *k, const char *name, size_t len) {
    return k && k->type == JV_STR && k->str.n == len && !memcmp(k->str.s, name, len);
}

static bool scope_set(ctx *c, const jj_node *n, jj_scope *s, const char *name, size_t len, jv *v) {
    jv *d = s->vars;
    for (size_t i = 0; i < d->dict.n; i++) {
        if (key_is(d->dict.keys[i], name, len)) {
            d->dict.vals[i] = v;
            return true;
        }
    }
    /* a loop scope emptied for the next iteration keeps its key objects: reuse the next one */
    if (d->dict.n < d->dict.cap && key_is(d->dict.keys[d->dict.n], name, len)) {
        d->dict.vals[d->dict.n++] = v;
        return true;
    }
    jv *k = jv_str_ref(c->a, name, len);
    if (!k || !jv_dict_set(c->a, s->vars, k, v)) {
        oom(c, n);
        return false;
    }
    return true;
}

static jv *lookup(const jj_scope *s, const char *name, size_t len) {
    for (; s; s = s->parent) {
        jv *v = jv_dict_get(s->vars, name, len);
        if (v) {
            return v;
        }
    }
    return NULL;
}

static jv *func(ctx *c, const jj_node *n, int id) {
    jv *f = jv_new(c->a, JV_FUNC);
    if (!f) {
        return oom(c, n);
    }
    f->func.id = id;
    return f;
}

static jv *resolve(ctx *c, const jj_node *n, jj_scope *s) {
    jv *v = lookup(s, n->str, n->str_len);
    if (v) {
        return v;
    }
    static const struct {
        const char *name;
        int id;
    } globals[] = {{"range", F_RANGE},
                   {"namespace", F_NAMESPACE},
                   {"raise_exception", F_RAISE},
                   {"strftime_now", F_STRFTIME},
                   {"dict", F_DICT}};
    for (size_t i = 0; i < sizeof globals / sizeof globals[0]; i++) {
        if (!strcmp(n->str, globals[i].name)) {
            return func(c, n, globals[i].id);
        }
    }
    return mk(c, n, jv_undef(c->a, fmt_str(c, "'%s' is undefined", short_str(c, n->str, n->str_len))));
}

/* --- attribute and item access --------------------------------------------------------------- */
static const char *const str_methods[] = {
    "strip",        "lstrip",    "rstrip",     "split",      "rsplit",  "startswith", "endswith",
    "upper",        "lower",     "title",      "capitalize", "replace", "find",       "rfind",
    "index",        "rindex",    "count",      "join",       "format",  "splitlines", "isdigit",
    "isalpha",      "isalnum",   "isspace",    "isupper",    "islower", "isnumeric",  "isdecimal",
    "swapcase",     "casefold",  "zfill",      "center",     "ljust",   "rjust",      "removeprefix",
    "removesuffix", "partition", "rpartition", "istitle",    "encode",  NULL};
static const char *const dict_methods[] = {"items",  "keys",       "values",  "get",   "copy",     "pop",
                                           "update", "setdefault", "popitem", "clear", "fromkeys", NULL};
static const char *const list_methods[] = {"index", "count",  "copy",  "append", "extend",  "insert",
                                           "pop",   "remove", "clear", "sort",   "reverse", NULL};
/* mutating methods the immutable sandbox refuses */
static const char *const unsafe_methods[] = {"append", "extend",  "insert", "pop",        "remove",  "clear",
                                             "sort",   "reverse", "update", "setdefault", "popitem", NULL};

static bool in_names(const char *const *names, const char *s, size_t n) {
    for (; *names; names++) {
        if (strlen(*names) == n && !memcmp(*names, s, n)) {
            return true;
        }
    }
    return false;
}

static jv *method(ctx *c, const jj_node *n, jv *self, const char *name, size_t len) {
    if (in_names(unsafe_methods, name, len) && (self->type == JV_LIST || self->type == JV_DICT)) {
        jv *u = jv_undef(c->a, fmt_str(c, "access to attribute '%s' of '%s' object is unsafe.", short_str(c, name, len),
                                       jv_type_name(self)));
        if (!u) {
            return oom(c, n);
        }
        u->flags |= JF_SECURITY;
        return u;
    }
    jv *m = jv_new(c->a, JV_METHOD);
    if (!m) {
        return oom(c, n);
    }
    m->method.self = self;
    m->method.name = short_str(c, name, len);
    return m;
}

static jv *loop_attr(ctx *c, const jj_node *n, jv *lv, const char *name);

/* obj.name: Python attribute first (methods), then the item (jinja2 Environment.getattr) */
static jv *get_attr(ctx *c, const jj_node *n, jv *obj, const char *name, size_t len) {
    switch (obj->type) {
    case JV_UNDEF: return undef_fail(c, n, obj);
    case JV_DICT:
        if (!(obj->flags & JF_NS) && in_names(dict_methods, name, len)) {
            return method(c, n, obj, name, len);
        }
        {
            jv *v = jv_dict_get(obj, name, len);
            if (v) {
                return v;
            }
        }
        break;
    case JV_STR:
        if (in_names(str_methods, name, len)) {
            return method(c, n, obj, name, len);
        }
        break;
    case JV_LIST:
        if (!(obj->flags & JF_GEN) && in_names(list_methods, name, len) &&
            (!(obj->flags & JF_TUPLE) || !strcmp(name, "index") || !strcmp(name, "count"))) {
            return method(c, n, obj, name, len);
        }
        break;
    case JV_LOOP: return loop_attr(c, n, obj, short_str(c, name, len));
    default: break;
    }
    return mk(c, n,
              jv_undef(c->a, fmt_str(c, "'%s' has no attribute '%s'", obj_repr(c, obj), short_str(c, name, len))));
}

/* index into a list/tuple/str with Python's negative indices; NULL when out of range */
static bool norm_index(int64_t i, size_t n, size_t *out) {
    if (i < 0) {
        i += (int64_t)n;
    }
    if (i < 0 || (uint64_t)i >= n) {
        return false;
    }
    *out = (size_t)i;
    return true;
}

/* obj[key]: the item first, then the attribute (jinja2 Environment.getitem) */
static jv *get_item(ctx *c, const jj_node *n, jv *obj, jv *key) {
    if (obj->type == JV_UNDEF) {
        return undef_fail(c, n, obj);
    }
    if (obj->type == JV_DICT && !(obj->flags & JF_NS)) {
        jv *v = jv_dict_getv(obj, key);
        if (v) {
            return v;
        }
    } else if ((obj->type == JV_LIST && !(obj->flags & JF_GEN)) || obj->type == JV_STR) {
        if (key->type == JV_INT || key->type == JV_BOOL) {
            int64_t i = key->type == JV_INT ? key->i : key->b;
            size_t idx;
            if (obj->type == JV_LIST) {
                if (norm_index(i, obj->list.n, &idx)) {
                    return obj->list.items[idx];
                }
            } else {
                size_t len = jj_utf8_len(obj->str.s, obj->str.n);
                if (norm_index(i, len, &idx)) {
                    size_t b0 = jj_utf8_off(obj->str.s, obj->str.n, idx);
                    size_t b1 = jj_utf8_off(obj->str.s, obj->str.n, idx + 1);
                    return mk(c, n, jv_str_ref(c->a, obj->str.s + b0, b1 - b0));
                }
            }
        }
    }
    if (key->type == JV_STR) {
        return get_attr(c, n, obj, key->str.s, key->str.n);
    }
    jj_buf b = {.arena = c->a};
    if (!jv_repr(&b, key)) {
        return oom(c, n);
    }
    return mk(c, n, jv_undef(c->a, fmt_str(c, "%s has no element %s", obj_repr(c, obj), short_str(c, b.s, b.n))));
}

static jv *slice(ctx *c, const jj_node *n, jv *obj, jv *vstart, jv *vstop, jv *vstep) {
    if (obj->type == JV_UNDEF) {
        return undef_fail(c, n, obj);
    }
    bool is_list = obj->type == JV_LIST && !(obj->flags & JF_GEN);
    if (!is_list && obj->type != JV_STR) {
        return fail(c, n, "TypeError", "'%s' object is not subscriptable", jv_type_name(obj));
    }
    int64_t len = is_list ? (int64_t)obj->list.n : (int64_t)jj_utf8_len(obj->str.s, obj->str.n);
    int64_t st;
    if (!int_arg(c, n, vstep, 1, &st)) {
        return NULL;
    }
    if (st == 0) {
        return fail(c, n, "ValueError", "slice step cannot be zero");
    }
    int64_t lo, hi;
    if (!int_arg(c, n, vstart, st > 0 ? 0 : len - 1, &lo) || !int_arg(c, n, vstop, st > 0 ? len : -len - 1, &hi)) {
        return NULL;
    }
    /* Python's PySlice_AdjustIndices */
    if (vstart && vstart->type != JV_NONE) {
        if (lo < 0) {
            lo += len;
            if (lo < 0) {
                lo = st < 0 ? -1 : 0;
            }
        } else if (lo >= len) {
            lo = st < 0 ? len - 1 : len;
        }
    }
    if (vstop && vstop->type != JV_NONE) {
        if (hi < 0) {
            hi += len;
            if (hi < 0) {
                hi = st < 0 ? -1 : 0;
            }
        } else if (hi >= len) {
            hi = st < 0 ? len - 1 : len;
        }
    } else {
        hi = st > 0 ? len : -1;
    }
    if (is_list) {
        jv *l = new_list(c, n, obj->flags & JF_TUPLE);
        for (int64_t i = lo; l && (st > 0 ? i < hi : i > hi); i += st) {
            if (!push(c, n, l, obj->list.items[i])) {
                return NULL;
            }
        }
        return l;
    }
    if (st == 1) {
        size_t b0 = jj_utf8_off(obj->str.s, obj->str.n, (size_t)lo);
        size_t b1 = hi > lo ? jj_utf8_off(obj->str.s, obj->str.n, (size_t)hi) : b0;
        return mk(c, n, jv_str_ref(c->a, obj->str.s + b0, b1 - b0));
    }
    jj_buf b = {.arena = c->a};
    for (int64_t i = lo; st > 0 ? i < hi : i > hi; i += st) {
        size_t b0 = jj_utf8_off(obj->str.s, obj->str.n, (size_t)i);
        size_t b1 = jj_utf8_off(obj->str.s, obj->str.n, (size_t)i + 1);
        if (!jj_buf_put(&b, obj->str.s + b0, b1 - b0)) {
            return oom(c, n);
        }
    }
    return mk(c, n, jv_str_ref(c->a, b.s ? b.s : "", b.n));
}

/* --- Markup (strings marked safe) ---------------------------------------------------------- */
static jv *markup(ctx *c, const jj_node *n, jv *s) {
    if (!s || (s->flags & JF_MARKUP)) {
        return s;
    }
    jv *m = jv_str_ref(c->a, s->str.s, s->str.n);
    if (!m) {
        return oom(c, n);
    }
    m->flags |= JF_MARKUP;
    return m;
}

/* markupsafe.escape: Markup stays as it is, anything else is str()'d and & < > " ' escaped */
static jv *html_escape(ctx *c, const jj_node *n, jv *v) {
    if (v->type == JV_STR && (v->flags & JF_MARKUP)) {
        return v;
    }
    jv *s = str_of(c, n, v);
    if (!s) {
        return NULL;
    }
    jj_buf b = {.arena = c->a};
    for (size_t i = 0; i < s->str.n; i++) {
        const char *e = NULL;
        switch (s->str.s[i]) {
        case '&': e = "&amp;"; break;
        case '<': e = "&lt;"; break;
        case '>': e = "&gt;"; break;
        case '"': e = "&#34;"; break;
        case '\'': e = "&#39;"; break;
        default: break;
        }
        if (e ? !jj_buf_put(&b, e, strlen(e)) : !jj_buf_put(&b, s->str.s + i, 1)) {
            return oom(c, n);
        }
    }
    return markup(c, n, mk(c, n, jv_str_ref(c->a, b.s ? b.s : "", b.n)));
}

/* --- operators ------------------------------------------------------------------------------- */
static const char *const op_sym[] = {
    "+", "-", "*", "/", "//", "%", "**", "==", "!=", "<", "<=", ">", ">=", "in", "not in"};

static jv *binop_type_error(ctx *c, const jj_node *n, jj_op op, jv *x, jv *y) {
    if (op == JOP_ADD && (x->type == JV_STR || (x->type == JV_LIST && !(x->flags & JF_GEN)))) {
        return fail(c, n, "TypeError", "can only concatenate %s (not \"%s\") to %s", jv_type_name(x), jv_type_name(y),
                    jv_type_name(x));
    }
    return fail(c, n, "TypeError", "unsupported operand type(s) for %s: '%s' and '%s'",
                op == JOP_POW ? "** or pow()" : op_sym[op], jv_type_name(x), jv_type_name(y));
}

static jv *repeat(ctx *c, const jj_node *n, jv *seq, int64_t times) {
    if (times < 0) {
        times = 0;
    }
    if (seq->type == JV_STR) {
        if (seq->str.n && (uint64_t)times > c->opt->max_output / seq->str.n) {
            return fail(c, n, "MemoryError", "string repetition exceeds the output limit of %zu bytes",
                        c->opt->max_output);
        }
        jj_buf b = {.arena = c->a};
        for (int64_t i = 0; i < times; i++) {
            if (!jj_buf_put(&b, seq->str.s, seq->str.n)) {
                return oom(c, n);
            }
        }
        return mk(c, n, jv_str_ref(c->a, b.s ? b.s : "", b.n));
    }
    if (seq->list.n && (uint64_t)times > JJ_MAX_RANGE / seq->list.n) {
        return fail(c, n, "MemoryError", "list repetition exceeds %d items", JJ_MAX_RANGE);
    }
    jv *l = new_list(c, n, seq->flags & JF_TUPLE);
    for (int64_t i = 0; l && i < times; i++) {
        for (size_t k = 0; k < seq->list.n; k++) {
            if (!push(c, n, l, seq->list.items[k])) {
                return NULL;
            }
        }
    }
    return l;
}

static jv *format_percent(ctx *c, const jj_node *n, jv *fmt, jv *argv);

static jv *arith(ctx *c, const jj_node *n, jj_op op, jv *x, jv *y) {
    if (x->type == JV_UNDEF) {
        return undef_fail(c, n, x);
    }
    if (y->type == JV_UNDEF) {
        return undef_fail(c, n, y);
    }
    jj_arena *a = c->a;
    if (jv_is_number(x) && jv_is_number(y)) {
        bool ints = x->type != JV_FLOAT && y->type != JV_FLOAT;
        int64_t xi = x->type == JV_BOOL ? x->b : x->i, yi = y->type == JV_BOOL ? y->b : y->i;
        double xf = jv_num(x), yf = jv_num(y);
        int64_t r;
        switch (op) {
        case JOP_ADD:
            if (ints) {
                if (__builtin_add_overflow(xi, yi, &r)) {
                    return fail(c, n, "OverflowError", "integer result out of range");
                }
                return mk(c, n, jv_int(a, r));
            }
            return mk(c, n, jv_float(a, xf + yf));
        case JOP_SUB:
            if (ints) {
                if (__builtin_sub_overflow(xi, yi, &r)) {
                    return fail(c, n, "OverflowError", "integer result out of range");
                }
                return mk(c, n, jv_int(a, r));
            }
            return mk(c, n, jv_float(a, xf - yf));
        case JOP_MUL:
            if (ints) {
                if (__builtin_mul_overflow(xi, yi, &r)) {
                    return fail(c, n, "OverflowError", "integer result out of range");
                }
                return mk(c, n, jv_int(a, r));
            }
            return mk(c, n, jv_float(a, xf * yf));
        case JOP_DIV:
            if (yf == 0) {
                return fail(c, n, "ZeroDivisionError", ints ? "division by zero" : "float division by zero");
            }
            return mk(c, n, jv_float(a, xf / yf));
        case JOP_FLOORDIV:
        case JOP_MOD:
            if (ints ? yi == 0 : yf == 0) {
                return fail(c, n, "ZeroDivisionError", "%s",
                            ints ? (op == JOP_MOD ? "integer modulo by zero" : "integer division or modulo by zero")
                            : op == JOP_MOD ? "float modulo"
                                            : "float floor division by zero");
            }
            if (ints) {
                if (xi == INT64_MIN && yi == -1) {
                    return op == JOP_MOD ? mk(c, n, jv_int(a, 0))
                                         : fail(c, n, "OverflowError", "integer result out of range");
                }
                int64_t q = xi / yi, m = xi % yi;
                if (m != 0 && ((m < 0) != (yi < 0))) {
                    q--;
                    m += yi;
                }
                return mk(c, n, jv_int(a, op == JOP_MOD ? m : q));
            } else {
                double m = fmod(xf, yf);
                if (m != 0 && ((m < 0) != (yf < 0))) {
                    m += yf;
                }
                if (op == JOP_MOD) {
                    return mk(c, n, jv_float(a, m));
                }
                return mk(c, n, jv_float(a, floor((xf - m) / yf + 0.5)));
            }
        case JOP_POW:
            if (ints && yi >= 0) {
                int64_t acc = 1;
                for (int64_t k = 0; k < yi; k++) {
                    if (__builtin_mul_overflow(acc, xi, &acc)) {
                        return fail(c, n, "OverflowError", "integer result out of range");
                    }
                    if (acc == 0 || acc == 1) {
                        break;
                    }
                }
                if (acc == 1 && xi == -1) {
                    acc = (yi % 2) ? -1 : 1;
                }
                return mk(c, n, jv_int(a, acc));
            }
            if (xf == 0 && yf < 0) {
                return fail(c, n, "ZeroDivisionError", "0.0 cannot be raised to a negative power");
            }
            return mk(c, n, jv_float(a, pow(xf, yf)));
        default: break;
        }
    }
    if (op == JOP_ADD && x->type == JV_STR && y->type == JV_STR) {
        /* Markup + str escapes the str (markupsafe's __add__ / __radd__) */
        bool safe = (x->flags | y->flags) & JF_MARKUP;
        if (safe && (!(x = html_escape(c, n, x)) || !(y = html_escape(c, n, y)))) {
            return NULL;
        }
        char *s = jj_alloc(a, x->str.n + y->str.n + 1);
        if (!s) {
            return oom(c, n);
        }
        memcpy(s, x->str.s, x->str.n);
        memcpy(s + x->str.n, y->str.s, y->str.n);
        jv *r = mk(c, n, jv_str_ref(a, s, x->str.n + y->str.n));
        return safe ? markup(c, n, r) : r;
    }
    if (op == JOP_ADD && x->type == JV_LIST && y->type == JV_LIST && !((x->flags | y->flags) & JF_GEN) &&
        (x->flags & JF_TUPLE) == (y->flags & JF_TUPLE)) {
        jv *l = new_list(c, n, x->flags & JF_TUPLE);
        for (size_t i = 0; l && i < x->list.n + y->list.n; i++) {
            if (!push(c, n, l, i < x->list.n ? x->list.items[i] : y->list.items[i - x->list.n])) {
                return NULL;
            }
        }
        return l;
    }
    if (op == JOP_MUL) {
        jv *seq = (x->type == JV_STR || (x->type == JV_LIST && !(x->flags & JF_GEN))) ? x : y;
        jv *cnt = seq == x ? y : x;
        if ((seq->type == JV_STR || (seq->type == JV_LIST && !(seq->flags & JF_GEN))) &&
            (cnt->type == JV_INT || cnt->type == JV_BOOL)) {
            return repeat(c, n, seq, cnt->type == JV_INT ? cnt->i : cnt->b);
        }
    }
    if (op == JOP_MOD && x->type == JV_STR) {
        return format_percent(c, n, x, y);
    }
    if (op == JOP_MUL && (x->type == JV_STR || y->type == JV_STR || (x->type == JV_LIST && !(x->flags & JF_GEN)) ||
                          (y->type == JV_LIST && !(y->flags & JF_GEN)))) {
        bool x_seq = x->type == JV_STR || x->type == JV_LIST;
        return fail(c, n, "TypeError", "can't multiply sequence by non-int of type '%s'", jv_type_name(x_seq ? y : x));
    }
    return binop_type_error(c, n, op, x, y);
}

static int contains(ctx *c, const jj_node *n, jv *needle, jv *hay) {
    switch (hay->type) {
    case JV_UNDEF: return 0;
    case JV_STR:
        if (needle->type != JV_STR) {
            fail(c, n, "TypeError", "'in <string>' requires string as left operand, not %s", jv_type_name(needle));
            return -1;
        }
        if (needle->str.n == 0) {
            return 1;
        }
        return memmem(hay->str.s, hay->str.n, needle->str.s, needle->str.n) != NULL;
    case JV_LIST:
        for (size_t i = 0; i < hay->list.n; i++) {
            if (jv_equal(hay->list.items[i], needle)) {
                return 1;
            }
        }
        return 0;
    case JV_DICT:
        if (!(hay->flags & JF_NS)) {
            if ((needle->type == JV_LIST && !(needle->flags & JF_TUPLE)) || needle->type == JV_DICT) {
                fail(c, n, "TypeError", "unhashable type: '%s'", jv_type_name(needle));
                return -1;
            }
            return jv_dict_getv(hay, needle) != NULL;
        }
        break;
    default: break;
    }
    fail(c, n, "TypeError", "argument of type '%s' is not iterable", jv_type_name(hay));
    return -1;
}

/* 1/0 for a comparison, -1 on error */
static int compare_op(ctx *c, const jj_node *n, jj_op op, jv *x, jv *y) {
    switch (op) {
    case JOP_EQ: return jv_equal(x, y);
    case JOP_NE: return !jv_equal(x, y);
    case JOP_IN:
    case JOP_NOTIN: {
        int r = contains(c, n, x, y);
        return r < 0 ? -1 : op == JOP_IN ? r : !r;
    }
    default: break;
    }
    if (x->type == JV_UNDEF) {
        undef_fail(c, n, x);
        return -1;
    }
    if (y->type == JV_UNDEF) {
        undef_fail(c, n, y);
        return -1;
    }
    int r = jv_compare(x, y);
    if (r == -2) {
        fail(c, n, "TypeError", "'%s' not supported between instances of '%s' and '%s'", op_sym[op], jv_type_name(x),
             jv_type_name(y));
        return -1;
    }
    switch (op) {
    case JOP_LT: return r < 0;
    case JOP_LE: return r <= 0;
    case JOP_GT: return r > 0;
    default: return r >= 0;
    }
}

/* --- Unicode helpers for str methods ------------------------------------------------------- */
static unsigned decode_cp(const char *s, size_t n, size_t *len) {
    const unsigned char *u = (const unsigned char *)s;
    if (u[0] < 0x80 || n < 2) {
        *len = 1;
        return u[0];
    }
    if ((u[0] & 0xE0) == 0xC0) {
        *len = 2;
        return ((u[0] & 0x1Fu) << 6) | (u[1] & 0x3Fu);
    }
    if ((u[0] & 0xF0) == 0xE0 && n >= 3) {
        *len = 3;
        return ((u[0] & 0x0Fu) << 12) | ((u[1] & 0x3Fu) << 6) | (u[2] & 0x3Fu);
    }
    if (n >= 4) {
        *len = 4;
        return ((u[0] & 0x07u) << 18) | ((u[1] & 0x3Fu) << 12) | ((u[2] & 0x3Fu) << 6) | (u[3] & 0x3Fu);
    }
    *len = 1;
    return u[0];
}

static size_t encode_cp(char *o, unsigned cp) {
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

/* Python's str.isspace set */
static bool py_space(unsigned cp) {
    return (cp >= 9 && cp <= 13) || (cp >= 0x1c && cp <= 0x20) || cp == 0x85 || cp == 0xa0 || cp == 0x1680 ||
           (cp >= 0x2000 && cp <= 0x200a) || cp == 0x2028 || cp == 0x2029 || cp == 0x202f || cp == 0x205f ||
           cp == 0x3000;
}

/* Case mapping for ASCII, Latin-1, Latin Extended-A pairs, Greek and Cyrillic. */
static unsigned cp_upper(unsigned cp) {
    if (cp >= 'a' && cp <= 'z') {
        return cp - 32;
    }
    if ((cp >= 0xe0 && cp <= 0xfe && cp != 0xf7)) {
        return cp - 32;
    }
    if (cp >= 0x100 && cp <= 0x17f && cp != 0x130 && cp != 0x131 && cp != 0x138 && cp != 0x149 && cp != 0x17f) {
        bool odd_lower = (cp >= 0x139 && cp <= 0x148) || (cp >= 0x179 && cp <= 0x17e);
        if (odd_lower ? (cp & 1) == 0 : (cp & 1) == 1) {
            return cp - 1;
        }
        return cp;
    }
    if (cp >= 0x3b1 && cp <= 0x3c9 && cp != 0x3c2) {
        return cp - 32;
    }
    if (cp >= 0x430 && cp <= 0x44f) {
        return cp - 32;
    }
    if (cp >= 0x450 && cp <= 0x45f) {
        return cp - 80;
    }
    return cp;
}

static unsigned cp_lower(unsigned cp) {
    if (cp >= 'A' && cp <= 'Z') {
        return cp + 32;
    }
    if (cp >= 0xc0 && cp <= 0xde && cp != 0xd7) {
        return cp + 32;
    }
    if (cp >= 0x100 && cp <= 0x17f && cp != 0x130 && cp != 0x131 && cp != 0x138 && cp != 0x149 && cp != 0x17f) {
        bool odd_lower = (cp >= 0x139 && cp <= 0x148) || (cp >= 0x179 && cp <= 0x17e);
        if (odd_lower ? (cp & 1) == 1 : (cp & 1) == 0) {
            return cp + 1;
        }
        return cp;
    }
    if (cp >= 0x391 && cp <= 0x3a9 && cp != 0x3a2) {
        return cp + 32;
    }
    if (cp >= 0x410 && cp <= 0x42f) {
        return cp + 32;
    }
    if (cp >= 0x400 && cp <= 0x40f) {
        return cp + 80;
    }
    return cp;
}

static bool cp_cased(unsigned cp) { return cp_upper(cp) != cp || cp_lower(cp) != cp; }
static bool cp_alpha(unsigned cp) { return cp_cased(cp) || (cp >= 0x80 && !py_space(cp) && cp > 0x2e7f); }
static bool cp_digit(unsigned cp) { return cp >= '0' && cp <= '9'; }

enum { CASE_UPPER, CASE_LOWER, CASE_CAPITALIZE, CASE_TITLE, CASE_SWAP, CASE_JTITLE };

/* upper/lower/capitalize/str.title/swapcase, and the Jinja title filter (words start after
 * whitespace, '-', '(', '{', '[' or '<') */
static jv *case_map(ctx *c, const jj_node *n, jv *s, int mode) {
    char *o = jj_alloc(c->a, s->str.n * 2 + 1);
    if (!o) {
        return oom(c, n);
    }
    size_t k = 0;
    bool prev_cased = false, word_start = true;
    for (size_t i = 0; i < s->str.n;) {
        size_t len;
        unsigned cp = decode_cp(s->str.s + i, s->str.n - i, &len), r = cp;
        switch (mode) {
        case CASE_UPPER: r = cp_upper(cp); break;
        case CASE_LOWER: r = cp_lower(cp); break;
        case CASE_CAPITALIZE: r = i == 0 ? cp_upper(cp) : cp_lower(cp); break;
        case CASE_SWAP: r = cp_upper(cp) != cp ? cp_upper(cp) : cp_lower(cp); break;
        case CASE_TITLE:
            r = prev_cased ? cp_lower(cp) : cp_upper(cp);
            prev_cased = cp_cased(cp);
            break;
        case CASE_JTITLE: {
            bool sep = py_space(cp) || cp == '-' || cp == '(' || cp == '{' || cp == '[' || cp == '<';
            r = sep ? cp : word_start ? cp_upper(cp) : cp_lower(cp);
            word_start = sep;
            break;
        }
        }
        k += encode_cp(o + k, r);
        i += len;
    }
    return mk(c, n, jv_str_ref(c->a, o, k));
}

/* strip(chars): which = 1 left, 2 right, 3 both; chars NULL: whitespace */
static jv *strip(ctx *c, const jj_node *n, jv *s, jv *chars, int which) {
    if (chars && chars->type != JV_NONE && chars->type != JV_STR) {
        return fail(c, n, "TypeError", "strip arg must be None or str");
    }
    bool ws = !chars || chars->type == JV_NONE;
    size_t b = 0, e = s->str.n;
    while ((which & 1) && b < e) {
        size_t len;
        unsigned cp = decode_cp(s->str.s + b, e - b, &len);
        bool hit = ws ? py_space(cp) : memmem(chars->str.s, chars->str.n, s->str.s + b, len) != NULL;
        if (!hit) {
            break;
        }
        b += len;
    }
    while ((which & 2) && e > b) {
        size_t st = e - 1;
        while (st > b && ((unsigned char)s->str.s[st] & 0xC0) == 0x80) {
            st--;
        }
        size_t len;
        unsigned cp = decode_cp(s->str.s + st, e - st, &len);
        bool hit = ws ? py_space(cp) : memmem(chars->str.s, chars->str.n, s->str.s + st, e - st) != NULL;
        if (!hit) {
            break;
        }
        e = st;
    }
    if (b == 0 && e == s->str.n) {
        return s;
    }
    return mk(c, n, jv_str_ref(c->a, s->str.s + b, e - b));
}

static jv *split(ctx *c, const jj_node *n, jv *s, jv *sep, jv *vmax, bool right) {
    int64_t maxsplit;
    if (!int_arg(c, n, vmax, -1, &maxsplit)) {
        return NULL;
    }
    jv *l = new_list(c, n, 0);
    if (!l) {
        return NULL;
    }
    const char *p = s->str.s;
    size_t len = s->str.n;
    if (!sep || sep->type == JV_NONE) {
        /* runs of whitespace, ends ignored */
        size_t i = 0;
        jv *tmp = new_list(c, n, 0);
        if (!tmp) {
            return NULL;
        }
        if (!right) {
            int64_t done = 0;
            while (i < len) {
                size_t cl;
                while (i < len && py_space(decode_cp(p + i, len - i, &cl))) {
                    i += cl;
                }
                if (i >= len) {
                    break;
                }
                size_t st = i;
                if (maxsplit >= 0 && done >= maxsplit) { /* the rest, trailing whitespace kept */
                    if (!push(c, n, l, jv_str_ref(c->a, p + st, len - st))) {
                        return NULL;
                    }
                    break;
                }
                while (i < len && !py_space(decode_cp(p + i, len - i, &cl))) {
                    i += cl;
                }
                if (!push(c, n, l, jv_str_ref(c->a, p + st, i - st))) {
                    return NULL;
                }
                done++;
            }
            return l;
        }
        /* rsplit() without a separator: split everything, then rejoin the head when maxsplit */
        jv *all = split(c, n, s, NULL, NULL, false);
        if (!all || maxsplit < 0 || all->list.n == 0 || (int64_t)all->list.n - 1 < maxsplit) {
            return all;
        }
        /* the head keeps its leading whitespace */
        size_t keep_from = all->list.n - (size_t)maxsplit;
        size_t head_end = (size_t)(all->list.items[keep_from - 1]->str.s - p) + all->list.items[keep_from - 1]->str.n;
        if (!push(c, n, l, jv_str_ref(c->a, p, head_end))) {
            return NULL;
        }
        for (size_t k = keep_from; k < all->list.n; k++) {
            if (!push(c, n, l, all->list.items[k])) {
                return NULL;
            }
        }
        return l;
    }
    if (sep->type != JV_STR) {
        return fail(c, n, "TypeError", "must be str or None, not %s", jv_type_name(sep));
    }
    if (sep->str.n == 0) {
        return fail(c, n, "ValueError", "empty separator");
    }
    if (!right) {
        size_t i = 0;
        int64_t done = 0;
        for (;;) {
            const char *hit = (maxsplit < 0 || done < maxsplit) ? memmem(p + i, len - i, sep->str.s, sep->str.n) : NULL;
            if (!hit) {
                return push(c, n, l, jv_str_ref(c->a, p + i, len - i)) ? l : NULL;
            }
            size_t at = (size_t)(hit - p);
            if (!push(c, n, l, jv_str_ref(c->a, p + i, at - i))) {
                return NULL;
            }
            i = at + sep->str.n;
            done++;
        }
    }
    /* rsplit with a separator: collect from the right, then reverse */
    jv *rev = new_list(c, n, 0);
    size_t e = len;
    int64_t done = 0;
    for (;;) {
        size_t found = (size_t)-1;
        if ((maxsplit < 0 || done < maxsplit) && e >= sep->str.n) {
            for (size_t k = e - sep->str.n + 1; k-- > 0;) {
                if (!memcmp(p + k, sep->str.s, sep->str.n)) {
                    found = k;
                    break;
                }
            }
        }
        if (found == (size_t)-1) {
            if (!push(c, n, rev, jv_str_ref(c->a, p, e))) {
                return NULL;
            }
            break;
        }
        if (!push(c, n, rev, jv_str_ref(c->a, p + found + sep->str.n, e - found - sep->str.n))) {
            return NULL;
        }
        e = found;
        done++;
    }
    for (size_t k = rev->list.n; k-- > 0;) {
        if (!push(c, n, l, rev->list.items[k])) {
            return NULL;
        }
    }
    return l;
}

static jv *replace(ctx *c, const jj_node *n, jv *s, jv *old, jv *new_, jv *vcount) {
    if (!is_str(old) || !is_str(new_)) {
        return fail(c, n, "TypeError", "replace() arguments must be str");
    }
    int64_t count;
    if (!int_arg(c, n, vcount, -1, &count)) {
        return NULL;
    }
    jj_buf b = {.arena = c->a};
    size_t i = 0;
    int64_t done = 0;
    if (old->str.n == 0) {
        while (i <= s->str.n) {
            if ((count < 0 || done < count)) {
                if (!jj_buf_put(&b, new_->str.s, new_->str.n)) {
                    return oom(c, n);
                }
                done++;
            }
            if (i == s->str.n) {
                break;
            }
            size_t len;
            decode_cp(s->str.s + i, s->str.n - i, &len);
            if (!jj_buf_put(&b, s->str.s + i, len)) {
                return oom(c, n);
            }
            i += len;
        }
        return mk(c, n, jv_str_ref(c->a, b.s ? b.s : "", b.n));
    }
    for (;;) {
        const char *hit =
            (count < 0 || done < count) ? memmem(s->str.s + i, s->str.n - i, old->str.s, old->str.n) : NULL;
        if (!hit) {
            if (!jj_buf_put(&b, s->str.s + i, s->str.n - i)) {
                return oom(c, n);
            }
            break;
        }
        size_t at = (size_t)(hit - s->str.s);
        if (!jj_buf_put(&b, s->str.s + i, at - i) || !jj_buf_put(&b, new_->str.s, new_->str.n)) {
            return oom(c, n);
        }
        i = at + old->str.n;
        done++;
    }
    return mk(c, n, jv_str_ref(c->a, b.s ? b.s : "", b.n));
}

static int prefix_test(ctx *c, const jj_node *n, jv *s, jv *p, bool suffix) {
    if (p && p->type == JV_LIST && (p->flags & JF_TUPLE)) {
        for (size_t i = 0; i < p->list.n; i++) {
            int r = prefix_test(c, n, s, p->list.items[i], suffix);
            if (r != 0) {
                return r;
            }
        }
        return 0;
    }
    if (!is_str(p)) {
        fail(c, n, "TypeError", "%s first arg must be str or a tuple of str, not %s",
             suffix ? "endswith" : "startswith", p ? jv_type_name(p) : "nothing");
        return -1;
    }
    if (p->str.n > s->str.n) {
        return 0;
    }
    return !memcmp(s->str.s + (suffix ? s->str.n - p->str.n : 0), p->str.s, p->str.n);
}

/* Python's format spec [[fill]align][sign][0][width][,][.precision][type] for str, int and float */
static bool format_spec(ctx *c, const jj_node *n, jj_buf *b, jv *v, const char *spec, size_t len) {
    size_t k = 0;
    char fill[5] = " ", align = 0, sign = '-', type = 0;
    size_t fill_len = 1;
    size_t cl = 1;
    if (len >= 2) {
        decode_cp(spec, len, &cl);
    }
    if (len > cl && strchr("<>^=", spec[cl])) {
        memcpy(fill, spec, cl);
        fill_len = cl;
        align = spec[cl];
        k = cl + 1;
    } else if (len > 0 && strchr("<>^=", spec[0])) {
        align = spec[0];
        k = 1;
    }
    if (k < len && strchr("+- ", spec[k])) {
        sign = spec[k++];
    }
    if (k < len && spec[k] == '0' && !align) {
        fill[0] = '0';
        fill_len = 1;
        align = '=';
        k++;
    }
    int width = 0, prec = -1;
    while (k < len && cp_digit((unsigned char)spec[k]) && width < 10000) {
        width = width * 10 + (spec[k++] - '0');
    }
    bool comma = k < len && spec[k] == ',';
    k += comma;
    if (k < len && spec[k] == '.') {
        prec = 0;
        for (k++; k < len && cp_digit((unsigned char)spec[k]) && prec < 100; k++) {
            prec = prec * 10 + (spec[k] - '0');
        }
    }
    if (k < len) {
        type = spec[k++];
    }
    if (k != len || (comma && v->type == JV_STR)) {
        fail(c, n, "ValueError", "Invalid format specifier '%.*s'", (int)len, spec);
        return false;
    }
    char num[400];
    const char *body;
    size_t body_len;
    if (v->type == JV_STR && (!type || type == 's')) {
        body = v->str.s;
        body_len = prec >= 0 ? jj_utf8_off(v->str.s, v->str.n, (size_t)prec) : v->str.n;
        if (!align) {
            align = '<';
        }
    } else if (jv_is_number(v)) {
        double d = jv_num(v);
        const char *sg = sign == '+' ? "+" : sign == ' ' ? " " : "";
        if (!type && v->type != JV_FLOAT) {
            snprintf(num, sizeof num, "%s%lld", sg, (long long)(v->type == JV_BOOL ? v->b : v->i));
        } else if (type == 'd') {
            if (v->type == JV_FLOAT) {
                fail(c, n, "ValueError", "Unknown format code 'd' for object of type 'float'");
                return false;
            }
            snprintf(num, sizeof num, "%s%lld", sg, (long long)(v->type == JV_BOOL ? v->b : v->i));
        } else if (type == 'f' || type == 'F' || type == 'e' || type == 'E' || type == '%') {
            char f[16];
            snprintf(f, sizeof f, "%%s%%.%d%c", prec < 0 ? 6 : prec, type == '%' ? 'f' : type);
            snprintf(num, sizeof num, f, sg, type == '%' ? d * 100 : d);
            if (type == '%') {
                strcat(num, "%");
            }
        } else if (!type || type == 'g' || type == 'G') {
            if (prec < 0 && !type) {
                jj_fmt_float(d, num + strlen(sg));
                memcpy(num, sg, strlen(sg));
            } else {
                char f[16];
                snprintf(f, sizeof f, "%%s%%.%d%c", prec < 0 ? 6 : prec == 0 ? 1 : prec, type ? type : 'g');
                snprintf(num, sizeof num, f, sg, d);
            }
        } else if (type == 'x' || type == 'X' || type == 'o' || type == 'b') {
            long long iv = (long long)d;
            if (type == 'b') {
                char bits[80];
                int nb = 0;
                unsigned long long u = iv < 0 ? (unsigned long long)-iv : (unsigned long long)iv;
                do {
                    bits[nb++] = (char)('0' + (u & 1));
                    u >>= 1;
                } while (u);
                char *o = num;
                if (iv < 0) {
                    *o++ = '-';
                }
                while (nb) {
                    *o++ = bits[--nb];
                }
                *o = 0;
            } else {
                char f[8];
                snprintf(f, sizeof f, "%%ll%c", type);
                snprintf(num, sizeof num, f, iv);
            }
        } else {
            fail(c, n, "ValueError", "Unknown format code '%c' for object of type '%s'", type, jv_type_name(v));
            return false;
        }
        if (comma) {
            /* thousands separators in the integer digits */
            char grouped[sizeof num];
            size_t st = strspn(num, "+- "), digits = strspn(num + st, "0123456789"), o = 0;
            memcpy(grouped, num, st);
            o = st;
            for (size_t i = 0; i < digits && o + 2 < sizeof grouped; i++) {
                if (i && (digits - i) % 3 == 0) {
                    grouped[o++] = ',';
                }
                grouped[o++] = num[st + i];
            }
            snprintf(grouped + o, sizeof grouped - o, "%s", num + st + digits);
            memcpy(num, grouped, sizeof num);
        }
        body = num;
        body_len = strlen(num);
        if (!align) {
            align = '>';
        }
    } else {
        fail(c, n, "ValueError", "Unknown format code '%c' for object of type '%s'", type ? type : 's',
             jv_type_name(v));
        return false;
    }
    size_t shown = jj_utf8_len(body, body_len);
    size_t pad = (size_t)width > shown ? (size_t)width - shown : 0;
    size_t left = align == '<' ? 0 : align == '^' ? pad / 2 : pad;
    size_t sign_len = align == '=' && body_len && strchr("+- ", body[0]) ? 1 : 0;
    if (!jj_buf_put(b, body, sign_len)) {
        return false;
    }
    for (size_t i = 0; i < left; i++) {
        if (!jj_buf_put(b, fill, fill_len)) {
            return false;
        }
    }
    if (!jj_buf_put(b, body + sign_len, body_len - sign_len)) {
        return false;
    }
    for (size_t i = left; i < pad; i++) {
        if (!jj_buf_put(b, fill, fill_len)) {
            return false;
        }
    }
    return true;
}

/* "{} and {0} and {name:>5}".format(...) */
static jv *str_format(ctx *c, const jj_node *n, jv *s, args *a) {
    jj_buf b = {.arena = c->a};
    size_t auto_idx = 0;
    for (size_t i = 0; i < s->str.n; i++) {
        char ch = s->str.s[i];
        if ((ch == '{' || ch == '}') && i + 1 < s->str.n && s->str.s[i + 1] == ch) {
            if (!jj_buf_put(&b, &ch, 1)) {
                return oom(c, n);
            }
            i++;
            continue;
        }
        if (ch == '}') {
            return fail(c, n, "ValueError", "Single '}' encountered in format string");
        }
        if (ch != '{') {
            if (!jj_buf_put(&b, &ch, 1)) {
                return oom(c, n);
            }
            continue;
        }
        const char *close = memchr(s->str.s + i, '}', s->str.n - i);
        if (!close) {
            return fail(c, n, "ValueError", "Single '{' encountered in format string");
        }
        size_t whole = (size_t)(close - (s->str.s + i + 1)), fl = 0;
        const char *field = s->str.s + i + 1;
        while (fl < whole && field[fl] != ':' && field[fl] != '!') {
            fl++;
        }
        const char *spec = fl < whole && field[fl] == ':' ? field + fl + 1 : NULL;
        size_t spec_len = spec ? whole - fl - 1 : 0;
        jv *v = NULL;
        if (fl == 0) {
            v = arg(a, auto_idx++, NULL);
        } else if (cp_digit((unsigned char)field[0])) {
            v = arg(a, (size_t)strtoul(field, NULL, 10), NULL);
        } else {
            char name[64];
            snprintf(name, sizeof name, "%.*s", (int)(fl < 63 ? fl : 63), field);
            for (size_t k = 0; k < a->nkw; k++) {
                if (!strcmp(a->kwn[k], name)) {
                    v = a->kwv[k];
                }
            }
        }
        if (!v) {
            return fail(c, n, "IndexError", "Replacement index out of range for positional args tuple");
        }
        if (spec_len ? !format_spec(c, n, &b, v, spec, spec_len) : !jv_to_str(&b, v)) {
            return c->failed ? NULL : oom(c, n);
        }
        i += whole + 1;
    }
    return mk(c, n, jv_str_ref(c->a, b.s ? b.s : "", b.n));
}

/* printf-style "%s %d %f %%" formatting of the % operator and the format filter */
static jv *format_percent(ctx *c, const jj_node *n, jv *fmt, jv *argv) {
    /* a list or dict argument counts as a mapping: unused, it is no error (CPython) */
    bool mapping = (argv->type == JV_LIST && !(argv->flags & (JF_TUPLE | JF_GEN))) || argv->type == JV_DICT;
    jv single = {0};
    jv *items[1] = {argv};
    if (!(argv->type == JV_LIST && (argv->flags & JF_TUPLE))) {
        single.type = JV_LIST;
        single.list.items = items;
        single.list.n = 1;
        argv = &single;
    }
    jj_buf b = {.arena = c->a};
    size_t k = 0;
    const char *s = fmt->str.s;
    for (size_t i = 0; i < fmt->str.n; i++) {
        if (s[i] != '%') {
            if (!jj_buf_put(&b, s + i, 1)) {
                return oom(c, n);
            }
            continue;
        }
        char spec[32] = "%";
        size_t sl = 1;
        i++;
        while (i < fmt->str.n && strchr("-+ #0123456789.", s[i]) && sl < 20) {
            spec[sl++] = s[i++];
        }
        if (i >= fmt->str.n) {
            return fail(c, n, "ValueError", "incomplete format");
        }
        char conv = s[i];
        if (conv == '%') {
            if (!jj_buf_put(&b, "%", 1)) {
                return oom(c, n);
            }
            continue;
        }
        if (k >= argv->list.n) {
            return fail(c, n, "TypeError", "not enough arguments for format string");
        }
        jv *v = argv->list.items[k++];
        char tmp[512];
        if (conv == 's' || conv == 'r') {
            jj_buf vb = {.arena = c->a};
            if (!(conv == 's' ? jv_to_str(&vb, v) : jv_repr(&vb, v)) || !jj_buf_put(&b, vb.s ? vb.s : "", vb.n)) {
                return oom(c, n);
            }
            continue;
        }
        if (!jv_is_number(v)) {
            return fail(c, n, "TypeError", "%%%c format: a real number is required, not %s", conv, jv_type_name(v));
        }
        if (conv == 'd' || conv == 'i') {
            spec[sl++] = 'l';
            spec[sl++] = 'l';
            spec[sl++] = 'd';
            spec[sl] = 0;
            snprintf(tmp, sizeof tmp, spec,
                     v->type == JV_FLOAT ? (long long)v->f : (long long)(v->type == JV_BOOL ? v->b : v->i));
        } else if (strchr("feEgGxXo", conv)) {
            spec[sl++] = conv;
            spec[sl] = 0;
            if (strchr("xXo", conv)) {
                char spec2[40];
                snprintf(spec2, sizeof spec2, "%.*sll%c", (int)sl - 1, spec, conv);
                snprintf(tmp, sizeof tmp, spec2, (long long)jv_num(v));
            } else {
                snprintf(tmp, sizeof tmp, spec, jv_num(v));
            }
        } else {
            return fail(c, n, "ValueError", "unsupported format character '%c'", conv);
        }
        if (!jj_buf_put(&b, tmp, strlen(tmp))) {
            return oom(c, n);
        }
    }
    if (k < argv->list.n && !(mapping && k == 0)) {
        return fail(c, n, "TypeError", "not all arguments converted during string formatting");
    }
    return mk(c, n, jv_str_ref(c->a, b.s ? b.s : "", b.n));
}

/* code point index of byte offset */
static int64_t cp_index(const jv *s, size_t byte) { return (int64_t)jj_utf8_len(s->str.s, byte); }

static jv *find(ctx *c, const jj_node *n, jv *s, jv *sub, bool right, bool raise) {
    if (!is_str(sub)) {
        return fail(c, n, "TypeError", "must be str, not %s", sub ? jv_type_name(sub) : "nothing");
    }
    int64_t r = -1;
    if (!right) {
        const char *hit = memmem(s->str.s, s->str.n, sub->str.s, sub->str.n);
        if (hit) {
            r = cp_index(s, (size_t)(hit - s->str.s));
        }
    } else if (sub->str.n <= s->str.n) {
        for (size_t k = s->str.n - sub->str.n + 1; k-- > 0;) {
            if (!memcmp(s->str.s + k, sub->str.s, sub->str.n)) {
                r = cp_index(s, k);
                break;
            }
        }
    }
    if (r < 0 && raise) {
        return fail(c, n, "ValueError", "substring not found");
    }
    return mk(c, n, jv_int(c->a, r));
}

static jv *str_pred(ctx *c, const jj_node *n, jv *s, const char *name) {
    bool all = s->str.n > 0, any_cased = false, any_upper = false, any_lower = false;
    for (size_t i = 0; i < s->str.n;) {
        size_t len;
        unsigned cp = decode_cp(s->str.s + i, s->str.n - i, &len);
        i += len;
        bool ok;
        if (!strcmp(name, "isdigit") || !strcmp(name, "isnumeric") || !strcmp(name, "isdecimal")) {
            ok = cp_digit(cp);
        } else if (!strcmp(name, "isalpha")) {
            ok = cp_alpha(cp);
        } else if (!strcmp(name, "isalnum")) {
            ok = cp_alpha(cp) || cp_digit(cp);
        } else if (!strcmp(name, "isspace")) {
            ok = py_space(cp);
        } else {
            ok = true;
        }
        all = all && ok;
        if (cp_cased(cp)) {
            any_cased = true;
            any_upper |= cp_lower(cp) != cp;
            any_lower |= cp_upper(cp) != cp;
        }
    }
    bool r = all;
    if (!strcmp(name, "isupper")) {
        r = any_cased && !any_lower;
    } else if (!strcmp(name, "islower")) {
        r = any_cased && !any_upper;
    } else if (!strcmp(name, "istitle")) {
        jv *t = case_map(c, n, s, CASE_TITLE);
        if (!t) {
            return NULL;
        }
        r = any_cased && jv_equal(t, s);
    }
    return mk(c, n, jv_bool(c->a, r));
}

static jv *splitlines(ctx *c, const jj_node *n, jv *s, bool keepends);

static jv *pad(ctx *c, const jj_node *n, jv *s, args *a, int where) {
    int64_t width;
    if (!int_arg(c, n, arg(a, 0, "width"), 0, &width)) {
        return NULL;
    }
    jv *fill = arg(a, 1, "fillchar");
    const char *fc = is_str(fill) ? fill->str.s : " ";
    size_t fcl = is_str(fill) ? fill->str.n : 1;
    int64_t len = (int64_t)jj_utf8_len(s->str.s, s->str.n);
    if (width <= len) {
        return s;
    }
    if (width > (int64_t)c->opt->max_output) {
        return fail(c, n, "MemoryError", "padding exceeds the output limit");
    }
    /* CPython's str.center puts the odd space on the left when width is odd */
    int64_t total = width - len, left = where == 0 ? total / 2 + (total & width & 1) : where < 0 ? 0 : total;
    jj_buf b = {.arena = c->a};
    for (int64_t i = 0; i < left; i++) {
        if (!jj_buf_put(&b, fc, fcl)) {
            return oom(c, n);
        }
    }
    if (!jj_buf_put(&b, s->str.s, s->str.n)) {
        return oom(c, n);
    }
    for (int64_t i = left; i < total; i++) {
        if (!jj_buf_put(&b, fc, fcl)) {
            return oom(c, n);
        }
    }
    return mk(c, n, jv_str_ref(c->a, b.s, b.n));
}

static jv *call_str_method(ctx *c, const jj_node *n, jv *s, const char *name, args *a) {
    if (!strcmp(name, "strip") || !strcmp(name, "lstrip") || !strcmp(name, "rstrip")) {
        return strip(c, n, s, arg(a, 0, "chars"), name[0] == 'l' ? 1 : name[0] == 'r' ? 2 : 3);
    }
    if (!strcmp(name, "split") || !strcmp(name, "rsplit")) {
        return split(c, n, s, arg(a, 0, "sep"), arg(a, 1, "maxsplit"), name[0] == 'r');
    }
    if (!strcmp(name, "startswith") || !strcmp(name, "endswith")) {
        int r = prefix_test(c, n, s, arg(a, 0, NULL), name[0] == 'e');
        return r < 0 ? NULL : mk(c, n, jv_bool(c->a, r));
    }
    if (!strcmp(name, "upper")) {
        return case_map(c, n, s, CASE_UPPER);
    }
    if (!strcmp(name, "lower") || !strcmp(name, "casefold")) {
        return case_map(c, n, s, CASE_LOWER);
    }
    if (!strcmp(name, "title")) {
        return case_map(c, n, s, CASE_TITLE);
    }
    if (!strcmp(name, "capitalize")) {
        return case_map(c, n, s, CASE_CAPITALIZE);
    }
    if (!strcmp(name, "swapcase")) {
        return case_map(c, n, s, CASE_SWAP);
    }
    if (!strcmp(name, "replace")) {
        return replace(c, n, s, arg(a, 0, NULL), arg(a, 1, NULL), arg(a, 2, "count"));
    }
    if (!strcmp(name, "find") || !strcmp(name, "rfind") || !strcmp(name, "index") || !strcmp(name, "rindex")) {
        return find(c, n, s, arg(a, 0, NULL), name[0] == 'r', !strcmp(name, "index") || !strcmp(name, "rindex"));
    }
    if (!strcmp(name, "count")) {
        jv *sub = arg(a, 0, NULL);
        if (!is_str(sub)) {
            return fail(c, n, "TypeError", "must be str");
        }
        int64_t cnt = 0;
        if (sub->str.n == 0) {
            cnt = (int64_t)jj_utf8_len(s->str.s, s->str.n) + 1;
        } else {
            for (size_t i = 0; i + sub->str.n <= s->str.n;) {
                const char *hit = memmem(s->str.s + i, s->str.n - i, sub->str.s, sub->str.n);
                if (!hit) {
                    break;
                }
                cnt++;
                i = (size_t)(hit - s->str.s) + sub->str.n;
            }
        }
        return mk(c, n, jv_int(c->a, cnt));
    }
    if (!strcmp(name, "join")) {
        jv *items = arg(a, 0, NULL);
        if (!items) {
            return fail(c, n, "TypeError", "join() takes exactly one argument");
        }
        items = iter_items(c, n, items);
        if (!items) {
            return NULL;
        }
        jj_buf b = {.arena = c->a};
        for (size_t i = 0; i < items->list.n; i++) {
            if (items->list.items[i]->type != JV_STR) {
                return fail(c, n, "TypeError", "sequence item %zu: expected str instance, %s found", i,
                            jv_type_name(items->list.items[i]));
            }
            if ((i && !jj_buf_put(&b, s->str.s, s->str.n)) ||
                !jj_buf_put(&b, items->list.items[i]->str.s, items->list.items[i]->str.n)) {
                return oom(c, n);
            }
        }
        return mk(c, n, jv_str_ref(c->a, b.s ? b.s : "", b.n));
    }
    if (!strcmp(name, "format")) {
        return str_format(c, n, s, a);
    }
    if (!strcmp(name, "splitlines")) {
        jv *k = arg(a, 0, "keepends");
        return splitlines(c, n, s, k && jv_truthy(k));
    }
    if (!strncmp(name, "is", 2)) {
        return str_pred(c, n, s, name);
    }
    if (!strcmp(name, "removeprefix") || !strcmp(name, "removesuffix")) {
        jv *p = arg(a, 0, NULL);
        if (!is_str(p)) {
            return fail(c, n, "TypeError", "%s() argument must be str", name);
        }
        bool suf = name[6] == 's';
        int r = prefix_test(c, n, s, p, suf);
        if (r <= 0) {
            return r < 0 ? NULL : s;
        }
        return mk(c, n, jv_str_ref(c->a, s->str.s + (suf ? 0 : p->str.n), s->str.n - p->str.n));
    }
    if (!strcmp(name, "partition") || !strcmp(name, "rpartition")) {
        jv *sep = arg(a, 0, NULL);
        if (!is_str(sep) || sep->str.n == 0) {
            return fail(c, n, "ValueError", "empty separator");
        }
        jv *parts = split(c, n, s, sep, mk(c, n, jv_int(c->a, 1)), name[0] == 'r');
        if (!parts) {
            return NULL;
        }
        jv *t = new_list(c, n, JF_TUPLE);
        jv *empty = jv_str_ref(c->a, "", 0);
        if (!t) {
            return NULL;
        }
        bool found = parts->list.n == 2;
        jv *p0 = found ? parts->list.items[0] : name[0] == 'r' ? empty : s;
        jv *p2 = found ? parts->list.items[1] : name[0] == 'r' ? s : empty;
        if (!push(c, n, t, p0) || !push(c, n, t, found ? sep : empty) || !push(c, n, t, p2)) {
            return NULL;
        }
        return t;
    }
    if (!strcmp(name, "center") || !strcmp(name, "ljust") || !strcmp(name, "rjust")) {
        return pad(c, n, s, a, name[0] == 'c' ? 0 : name[0] == 'l' ? -1 : 1);
    }
    if (!strcmp(name, "zfill")) {
        int64_t width;
        if (!int_arg(c, n, arg(a, 0, "width"), 0, &width)) {
            return NULL;
        }
        int64_t len = (int64_t)jj_utf8_len(s->str.s, s->str.n);
        if (width <= len) {
            return s;
        }
        if (width > (int64_t)c->opt->max_output) {
            return fail(c, n, "MemoryError", "padding exceeds the output limit");
        }
        jj_buf b = {.arena = c->a};
        size_t sign = s->str.n && (s->str.s[0] == '-' || s->str.s[0] == '+');
        if (!jj_buf_put(&b, s->str.s, sign)) {
            return oom(c, n);
        }
        for (int64_t i = len; i < width; i++) {
            if (!jj_buf_put(&b, "0", 1)) {
                return oom(c, n);
            }
        }
        if (!jj_buf_put(&b, s->str.s + sign, s->str.n - sign)) {
            return oom(c, n);
        }
        return mk(c, n, jv_str_ref(c->a, b.s, b.n));
    }
    return fail(c, n, "SecurityError", "str.%s is not available in the sandbox", name);
}

static jv *call_method(ctx *c, const jj_node *n, jv *m, args *a) {
    jv *self = m->method.self;
    const char *name = m->method.name;
    if (self->type == JV_STR) {
        return call_str_method(c, n, self, name, a);
    }
    if (self->type == JV_DICT) {
        if (!strcmp(name, "items") || !strcmp(name, "keys") || !strcmp(name, "values")) {
            jv *l = new_list(c, n, 0);
            for (size_t i = 0; l && i < self->dict.n; i++) {
                jv *item = name[0] == 'k'   ? self->dict.keys[i]
                           : name[0] == 'v' ? self->dict.vals[i]
                                            : tuple2(c, n, self->dict.keys[i], self->dict.vals[i]);
                if (!push(c, n, l, item)) {
                    return NULL;
                }
            }
            return l;
        }
        if (!strcmp(name, "get")) {
            jv *k = arg(a, 0, "key");
            if (!k) {
                return fail(c, n, "TypeError", "get expected at least 1 argument, got 0");
            }
            jv *v = jv_dict_getv(self, k);
            if (v) {
                return v;
            }
            v = arg(a, 1, "default");
            return v ? v : mk(c, n, jv_new(c->a, JV_NONE));
        }
        if (!strcmp(name, "copy")) {
            jv *d = jv_new(c->a, JV_DICT);
            for (size_t i = 0; d && i < self->dict.n; i++) {
                if (!jv_dict_set(c->a, d, self->dict.keys[i], self->dict.vals[i])) {
                    return oom(c, n);
                }
            }
            return mk(c, n, d);
        }
    } else if (self->type == JV_LIST) {
        if (!strcmp(name, "index") || !strcmp(name, "count")) {
            jv *x = arg(a, 0, NULL);
            if (!x) {
                return fail(c, n, "TypeError", "%s expected 1 argument, got 0", name);
            }
            int64_t cnt = 0;
            for (size_t i = 0; i < self->list.n; i++) {
                if (jv_equal(self->list.items[i], x)) {
                    if (name[0] == 'i') {
                        return mk(c, n, jv_int(c->a, (int64_t)i));
                    }
                    cnt++;
                }
            }
            if (name[0] == 'i') {
                jj_buf rb = {.arena = c->a};
                return jv_repr(&rb, x)
                           ? fail(c, n, "ValueError", "%.*s is not in list", (int)(rb.n > 60 ? 60 : rb.n), rb.s)
                           : oom(c, n);
            }
            return mk(c, n, jv_int(c->a, cnt));
        }
        if (!strcmp(name, "copy")) {
            jv *l = new_list(c, n, 0);
            for (size_t i = 0; l && i < self->list.n; i++) {
                if (!push(c, n, l, self->list.items[i])) {
                    return NULL;
                }
            }
            return l;
        }
    }
    return fail(c, n, "SecurityError", "access to attribute '%s' of '%s' object is unsafe.", name, jv_type_name(self));
}

static jv *splitlines(ctx *c, const jj_node *n, jv *s, bool keepends) {
    jv *l = new_list(c, n, 0);
    size_t st = 0, i = 0;
    while (l && i < s->str.n) {
        size_t len;
        unsigned cp = decode_cp(s->str.s + i, s->str.n - i, &len);
        bool brk = cp == '\n' || cp == '\r' || cp == 0x0b || cp == 0x0c || (cp >= 0x1c && cp <= 0x1e) || cp == 0x85 ||
                   cp == 0x2028 || cp == 0x2029;
        if (!brk) {
            i += len;
            continue;
        }
        size_t e = i;
        i += len;
        if (cp == '\r' && i < s->str.n && s->str.s[i] == '\n') {
            i++;
        }
        if (!push(c, n, l, jv_str_ref(c->a, s->str.s + st, (keepends ? i : e) - st))) {
            return NULL;
        }
        st = i;
    }
    if (l && st < s->str.n && !push(c, n, l, jv_str_ref(c->a, s->str.s + st, s->str.n - st))) {
        return NULL;
    }
    return l;
}

/* --- evaluation ------------------------------------------------------------------------------ */
static jv *eval(ctx *c, const jj_node *n, jj_scope *s);
static int exec(ctx *c, const jj_node *n, jj_scope *s);
static jv *apply_filter(ctx *c, const jj_node *n, const char *name, jv *v, args *a);
static int apply_test(ctx *c, const jj_node *n, const char *name, jv *v, args *a);
static jv *call_value(ctx *c, const jj_node *n, jv *f, args *a);

static bool eval_args(ctx *c, const jj_node *n, jj_scope *s, args *a) {
    memset(a, 0, sizeof *a);
    if (n->n_kids) {
        a->pos = jj_alloc(c->a, n->n_kids * sizeof(jv *));
        if (!a->pos) {
            oom(c, n);
            return false;
        }
    }
    for (size_t i = 0; i < n->n_kids; i++) {
        if (!(a->pos[i] = eval(c, n->kids[i], s))) {
            return false;
        }
    }
    a->npos = n->n_kids;
    if (n->n_kw) {
        a->kwv = jj_alloc(c->a, n->n_kw * sizeof(jv *));
        if (!a->kwv) {
            oom(c, n);
            return false;
        }
        a->kwn = n->kwn;
        for (size_t i = 0; i < n->n_kw; i++) {
            if (!(a->kwv[i] = eval(c, n->kwv[i], s))) {
                return false;
            }
        }
        a->nkw = n->n_kw;
    }
    return true;
}

/* renders body into a fresh buffer and returns its text; *flow (when given) receives a break (1)
 * or continue (2) that left the body early: a block set or filter block sits inline in its loop */
static jv *capture(ctx *c, const jj_node *n, const jj_node *body, jj_scope *s, int *flow) {
    jj_buf buf = {.arena = c->a, .limit = c->opt->max_output};
    jj_buf *saved = c->out;
    c->out = &buf;
    int rc = exec(c, body, s);
    c->out = saved;
    if (rc < 0) {
        return NULL;
    }
    if (flow) {
        *flow = rc;
    }
    return mk(c, n, jv_str_ref(c->a, buf.s ? buf.s : "", buf.n));
}

static jv *call_macro(ctx *c, const jj_node *n, jv *m, args *a, jv *caller) {
    const jj_node *def = m->macro.node;
    if (++c->depth > c->opt->max_depth) {
        c->depth--;
        return fail(c, n, "RecursionError", "macro calls nested deeper than %d", c->opt->max_depth);
    }
    jv *result = NULL;
    jj_scope *sc = scope_new(c, n, m->macro.closure);
    if (!sc) {
        goto done;
    }
    jv *varargs = new_list(c, n, JF_TUPLE);
    jv *kwargs = jv_new(c->a, JV_DICT);
    if (!varargs || !kwargs) {
        oom(c, n);
        goto done;
    }
    const char *mname = short_str(c, def->str, def->str_len);
    if (a->npos > def->n_kids && !(def->flag & 2)) {
        fail(c, n, "TypeError", "macro '%s' takes not more than %zu argument(s)", mname, def->n_kids);
        goto done;
    }
    if (caller && !(def->flag & 1)) {
        if (!(def->flag & 4)) {
            fail(c, n, "TypeError",
                 "macro '%s' was invoked with two values for the special caller argument. This is most likely a bug.",
                 mname);
            goto done;
        }
        if (!jv_dict_set(c->a, kwargs, jv_str_ref(c->a, "caller", 6), caller)) { /* kwargs takes it */
            oom(c, n);
            goto done;
        }
    }
    for (size_t i = 0; i < a->npos; i++) {
        if (i < def->n_kids) {
            if (!scope_set(c, n, sc, def->kids[i]->str, def->kids[i]->str_len, a->pos[i])) {
                goto done;
            }
        } else if (!push(c, n, varargs, a->pos[i])) {
            goto done;
        }
    }
    for (size_t k = 0; k < a->nkw; k++) {
        bool found = false;
        for (size_t i = 0; i < def->n_kids; i++) {
            if (!strcmp(def->kids[i]->str, a->kwn[k])) {
                found = true;
                if (!scope_set(c, n, sc, def->kids[i]->str, def->kids[i]->str_len, a->kwv[k])) {
                    goto done;
                }
            }
        }
        if (!found && !(def->flag & 4)) {
            fail(c, n, "TypeError", "macro '%s' takes no keyword argument '%s'", mname, a->kwn[k]);
            goto done;
        }
        if (!found && !jv_dict_set(c->a, kwargs, jv_str_ref(c->a, a->kwn[k], strlen(a->kwn[k])), a->kwv[k])) {
            oom(c, n);
            goto done;
        }
    }
    for (size_t i = 0; i < def->n_kids; i++) {
        const jj_node *p = def->kids[i];
        if (jv_dict_get(sc->vars, p->str, p->str_len)) {
            continue;
        }
        jv *v = p->a ? eval(c, p->a, sc)
                     : jv_undef(c->a, fmt_str(c, "parameter '%s' was not provided", short_str(c, p->str, p->str_len)));
        if (!v || !scope_set(c, n, sc, p->str, p->str_len, v)) {
            if (!c->failed) {
                oom(c, n);
            }
            goto done;
        }
    }
    if (!scope_set(c, n, sc, "varargs", 7, varargs) || !scope_set(c, n, sc, "kwargs", 6, kwargs)) {
        goto done;
    }
    if ((def->flag & 1) && !scope_set(c, n, sc, "caller", 6, caller ? caller : jv_undef(c->a, "No caller defined"))) {
        goto done;
    }
    result = capture(c, n, def->c, sc, NULL);
done:
    c->depth--;
    return result;
}

static jv *strftime_now(ctx *c, const jj_node *n, args *a) {
    jv *f = arg(a, 0, NULL);
    if (!is_str(f)) {
        return fail(c, n, "TypeError", "strftime_now() argument must be str");
    }
    struct tm tm;
    if (c->opt->fixed_time) {
        tm = c->opt->now;
    } else {
        time_t now = time(NULL);
        localtime_r(&now, &tm);
    }
    char fmt[256], out[512];
    snprintf(fmt, sizeof fmt, "%.*s", (int)(f->str.n < 255 ? f->str.n : 255), f->str.s);
    size_t len = strftime(out, sizeof out, fmt, &tm);
    return mk(c, n, jv_str(c->a, out, len));
}

static jv *call_func(ctx *c, const jj_node *n, jv *f, args *a) {
    switch (f->func.id) {
    case F_RANGE: {
        int64_t lo = 0, hi, st = 1;
        if (a->npos == 0 || a->npos > 3) {
            return fail(c, n, "TypeError", "range expected 1 to 3 arguments, got %zu", a->npos);
        }
        if (a->npos == 1) {
            if (!int_arg(c, n, a->pos[0], 0, &hi)) {
                return NULL;
            }
        } else if (!int_arg(c, n, a->pos[0], 0, &lo) || !int_arg(c, n, a->pos[1], 0, &hi) ||
                   (a->npos == 3 && !int_arg(c, n, a->pos[2], 1, &st))) {
            return NULL;
        }
        if (st == 0) {
            return fail(c, n, "ValueError", "range() arg 3 must not be zero");
        }
        double count =
            st > 0 ? ceil(((double)hi - (double)lo) / (double)st) : ceil(((double)lo - (double)hi) / (double)-st);
        if (count > JJ_MAX_RANGE) {
            return fail(c, n, "OverflowError", "Range too big. The sandbox blocks ranges larger than MAX_RANGE (%d).",
                        JJ_MAX_RANGE);
        }
        jv *l = new_list(c, n, 0);
        for (int64_t i = lo; l && (st > 0 ? i < hi : i > hi); i += st) {
            if (!push(c, n, l, jv_int(c->a, i))) {
                return NULL;
            }
        }
        return l;
    }
    case F_NAMESPACE:
    case F_DICT: {
        jv *d = jv_new(c->a, JV_DICT);
        if (!d) {
            return oom(c, n);
        }
        if (f->func.id == F_NAMESPACE) {
            d->flags |= JF_NS;
        }
        for (size_t i = 0; i < a->npos; i++) {
            jv *src = a->pos[i];
            if (src->type != JV_DICT) {
                return fail(c, n, "TypeError", "%s() positional argument must be a mapping",
                            f->func.id == F_DICT ? "dict" : "namespace");
            }
            for (size_t k = 0; k < src->dict.n; k++) {
                if (!jv_dict_set(c->a, d, src->dict.keys[k], src->dict.vals[k])) {
                    return oom(c, n);
                }
            }
        }
        for (size_t k = 0; k < a->nkw; k++) {
            if (!jv_dict_set(c->a, d, jv_str_ref(c->a, a->kwn[k], strlen(a->kwn[k])), a->kwv[k])) {
                return oom(c, n);
            }
        }
        return d;
    }
    case F_RAISE: {
        jv *m = arg(a, 0, NULL);
        jv *ms = m ? str_of(c, n, m) : NULL;
        return fail(c, n, "TemplateError", "%.*s", ms ? (int)(ms->str.n > 300 ? 300 : ms->str.n) : 0,
                    ms ? ms->str.s : "");
    }
    case F_STRFTIME: return strftime_now(c, n, a);
    case F_CALLER: {
        if (++c->depth > c->opt->max_depth) {
            c->depth--;
            return fail(c, n, "RecursionError", "calls nested deeper than %d", c->opt->max_depth);
        }
        jv *r = NULL;
        jj_scope *sc = scope_new(c, n, f->func.scope);
        if (sc) {
            bool ok = true;
            for (size_t i = 0; ok && f->func.params && i < f->func.params->n_kids; i++) {
                const jj_node *p = f->func.params->kids[i];
                jv *v = i < a->npos ? a->pos[i]
                        : p->a      ? eval(c, p->a, sc)
                                    : jv_undef(c->a, "parameter was not provided");
                ok = v && scope_set(c, n, sc, p->str, p->str_len, v);
            }
            if (ok) {
                r = capture(c, n, f->func.body, sc, NULL);
            }
        }
        c->depth--;
        return r;
    }
    default: break;
    }
    return fail(c, n, "TypeError", "object is not callable");
}

static int run_loop(ctx *c, const jj_node *fn, jv *iterable, jj_scope *s, int depth);

static jv *call_value(ctx *c, const jj_node *n, jv *f, args *a) {
    switch (f->type) {
    case JV_METHOD: return call_method(c, n, f, a);
    case JV_FUNC: return call_func(c, n, f, a);
    case JV_MACRO: return call_macro(c, n, f, a, NULL);
    case JV_UNDEF: return undef_fail(c, n, f);
    case JV_LOOP: {
        /* loop(children) in a recursive for */
        jj_loop *lp = f->loop;
        if (!lp->fornode->flag) {
            return fail(c, n, "TypeError", "Tried to call non recursive loop.");
        }
        jv *items = arg(a, 0, NULL);
        if (!items) {
            return fail(c, n, "TypeError", "loop() takes one argument");
        }
        jj_buf buf = {.arena = c->a, .limit = c->opt->max_output};
        jj_buf *saved = c->out;
        c->out = &buf;
        int rc = run_loop(c, lp->fornode, items, lp->scope, lp->depth + 1);
        c->out = saved;
        if (rc < 0) {
            return NULL;
        }
        return mk(c, n, jv_str_ref(c->a, buf.s ? buf.s : "", buf.n));
    }
    default: return fail(c, n, "TypeError", "'%s' object is not callable", jv_type_name(f));
    }
}

static jv *loop_attr(ctx *c, const jj_node *n, jv *lv, const char *name) {
    jj_loop *lp = lv->loop;
    size_t len = lp->items->list.n, i = lp->index0;
    jj_arena *a = c->a;
    if (!strcmp(name, "index")) {
        return mk(c, n, jv_int(a, (int64_t)i + 1));
    }
    if (!strcmp(name, "index0")) {
        return mk(c, n, jv_int(a, (int64_t)i));
    }
    if (!strcmp(name, "revindex")) {
        return mk(c, n, jv_int(a, (int64_t)(len - i)));
    }
    if (!strcmp(name, "revindex0")) {
        return mk(c, n, jv_int(a, (int64_t)(len - i - 1)));
    }
    if (!strcmp(name, "first")) {
        return mk(c, n, jv_bool(a, i == 0));
    }
    if (!strcmp(name, "last")) {
        return mk(c, n, jv_bool(a, i + 1 == len));
    }
    if (!strcmp(name, "length")) {
        return mk(c, n, jv_int(a, (int64_t)len));
    }
    if (!strcmp(name, "depth")) {
        return mk(c, n, jv_int(a, lp->depth));
    }
    if (!strcmp(name, "depth0")) {
        return mk(c, n, jv_int(a, lp->depth - 1));
    }
    if (!strcmp(name, "previtem")) {
        return i > 0 ? lp->items->list.items[i - 1] : mk(c, n, jv_undef(a, "there is no previous item"));
    }
    if (!strcmp(name, "nextitem")) {
        return i + 1 < len ? lp->items->list.items[i + 1] : mk(c, n, jv_undef(a, "there is no next item"));
    }
    if (!strcmp(name, "cycle") || !strcmp(name, "changed")) {
        jv *m = jv_new(a, JV_METHOD);
        if (!m) {
            return oom(c, n);
        }
        m->method.self = lv;
        m->method.name = name;
        return m;
    }
    return mk(c, n, jv_undef(a, fmt_str(c, "'LoopContext object' has no attribute '%s'", name)));
}

static bool assign(ctx *c, const jj_node *target, jv *v, jj_scope *s) {
    if (target->kind == JN_NAME) {
        return scope_set(c, target, s, target->str, target->str_len, v);
    }
    if (target->kind == JN_GETATTR) {
        jv *ns = lookup(s, target->a->str, target->a->str_len);
        if (!ns || !(ns->flags & JF_NS)) {
            fail(c, target, "TemplateRuntimeError", "cannot assign attribute on non-namespace object");
            return false;
        }
        jv *k = jv_str_ref(c->a, target->str, target->str_len);
        if (!k || !jv_dict_set(c->a, ns, k, v)) {
            oom(c, target);
            return false;
        }
        return true;
    }
    /* tuple unpacking */
    jv *items = iter_items(c, target, v);
    if (!items) {
        return false;
    }
    if (items->list.n != target->n_kids) {
        fail(c, target, "ValueError",
             items->list.n > target->n_kids ? "too many values to unpack (expected %zu)"
                                            : "not enough values to unpack (expected %zu)",
             target->n_kids);
        return false;
    }
    for (size_t i = 0; i < target->n_kids; i++) {
        if (!assign(c, target->kids[i], items->list.items[i], s)) {
            return false;
        }
    }
    return true;
}

static int run_loop(ctx *c, const jj_node *fn, jv *iterable, jj_scope *s, int depth) {
    if (depth > c->opt->max_depth) {
        fail(c, fn, "RecursionError", "recursive loop nested deeper than %d", c->opt->max_depth);
        return -1;
    }
    jv *items = iter_items(c, fn->b, iterable);
    if (!items) {
        return -1;
    }
    if (fn->e) {
        /* the loop's `if` filters before loop.length is known */
        jv *kept = new_list(c, fn, 0);
        jj_scope *fs = kept ? scope_new(c, fn, s) : NULL;
        if (!fs) {
            return -1;
        }
        for (size_t i = 0; i < items->list.n; i++) {
            if (!step(c, fn)) {
                return -1;
            }
            fs->vars->dict.n = 0;
            if (!assign(c, fn->a, items->list.items[i], fs)) {
                return -1;
            }
            jv *ok = eval(c, fn->e, fs);
            if (!ok) {
                return -1;
            }
            if (jv_truthy(ok) && !push(c, fn, kept, items->list.items[i])) {
                return -1;
            }
        }
        items = kept;
    }
    jj_loop *lp = jj_alloc(c->a, sizeof(jj_loop));
    jv *lv = jv_new(c->a, JV_LOOP);
    if (!lp || !lv) {
        oom(c, fn);
        return -1;
    }
    lp->items = items;
    lp->depth = depth;
    lp->fornode = fn;
    lp->scope = s;
    lv->loop = lp;
    /* each iteration starts from a fresh scope (Jinja2 does not carry a body's `set` over to the
     * next iteration); the scope is emptied and reused so long loops do not grow memory */
    jj_scope *is = scope_new(c, fn, s);
    if (!is) {
        return -1;
    }
    bool completed = false;
    for (size_t i = 0; i < items->list.n; i++) {
        if (!step(c, fn)) {
            return -1;
        }
        lp->index0 = i;
        is->vars->dict.n = 0;
        if (!scope_set(c, fn, is, "loop", 4, lv) || !assign(c, fn->a, items->list.items[i], is)) {
            return -1;
        }
        int rc = exec(c, fn->c, is);
        if (rc < 0) {
            return -1;
        }
        completed |= rc == 0;
        if (rc == 1) {
            break;
        }
    }
    /* Jinja2 runs `else` unless some iteration's body ran to its end (a body left by break or
     * continue does not count) */
    if (!completed && fn->d) {
        return exec(c, fn->d, s) < 0 ? -1 : 0;
    }
    return 0;
}

static jv *eval_inner(ctx *c, const jj_node *n, jj_scope *s) {
    jj_arena *a = c->a;
    switch (n->kind) {
    case JN_LIT: return n->lit;
    case JN_NAME: return resolve(c, n, s);
    case JN_CAPTURED: return c->captured;
    case JN_LIST:
    case JN_TUPLE: {
        jv *l = new_list(c, n, n->kind == JN_TUPLE ? JF_TUPLE : 0);
        for (size_t i = 0; l && i < n->n_kids; i++) {
            jv *v = eval(c, n->kids[i], s);
            if (!v || !push(c, n, l, v)) {
                return NULL;
            }
        }
        return l;
    }
    case JN_DICT: {
        jv *d = jv_new(a, JV_DICT);
        if (!d) {
            return oom(c, n);
        }
        for (size_t i = 0; i + 1 < n->n_kids; i += 2) {
            jv *k = eval(c, n->kids[i], s);
            jv *v = k ? eval(c, n->kids[i + 1], s) : NULL;
            if (!v) {
                return NULL;
            }
            if (k->type == JV_LIST && !(k->flags & JF_TUPLE)) {
                return fail(c, n, "TypeError", "unhashable type: 'list'");
            }
            if (k->type == JV_DICT) {
                return fail(c, n, "TypeError", "unhashable type: 'dict'");
            }
            if (!jv_dict_set(a, d, k, v)) {
                return oom(c, n);
            }
        }
        return d;
    }
    case JN_BIN: {
        jv *x = eval(c, n->a, s);
        jv *y = x ? eval(c, n->b, s) : NULL;
        return y ? arith(c, n, (jj_op)n->op, x, y) : NULL;
    }
    case JN_NEG:
    case JN_POS: {
        jv *x = eval(c, n->a, s);
        if (!x) {
            return NULL;
        }
        if (x->type == JV_UNDEF) {
            return undef_fail(c, n, x);
        }
        if (!jv_is_number(x)) {
            return fail(c, n, "TypeError", "bad operand type for unary %c: '%s'", n->kind == JN_NEG ? '-' : '+',
                        jv_type_name(x));
        }
        if (n->kind == JN_POS) {
            return x->type == JV_BOOL ? mk(c, n, jv_int(a, x->b)) : x;
        }
        if (x->type == JV_FLOAT) {
            return mk(c, n, jv_float(a, -x->f));
        }
        int64_t i = x->type == JV_BOOL ? x->b : x->i;
        if (i == INT64_MIN) {
            return fail(c, n, "OverflowError", "integer result out of range");
        }
        return mk(c, n, jv_int(a, -i));
    }
    case JN_NOT: {
        jv *x = eval(c, n->a, s);
        return x ? mk(c, n, jv_bool(a, !jv_truthy(x))) : NULL;
    }
    case JN_AND:
    case JN_OR: {
        jv *x = eval(c, n->a, s);
        if (!x) {
            return NULL;
        }
        if (jv_truthy(x) == (n->kind == JN_OR)) {
            return x;
        }
        return eval(c, n->b, s);
    }
    case JN_COND: {
        jv *cond = eval(c, n->a, s);
        if (!cond) {
            return NULL;
        }
        if (jv_truthy(cond)) {
            return eval(c, n->b, s);
        }
        if (n->c) {
            return eval(c, n->c, s);
        }
        return mk(c, n,
                  jv_undef(a, "the inline if-expression on line evaluated to false and no else section was defined."));
    }
    case JN_COMPARE: {
        jv *x = eval(c, n->kids[0], s);
        if (!x) {
            return NULL;
        }
        for (size_t i = 1; i < n->n_kids; i++) {
            jv *y = eval(c, n->kids[i], s);
            if (!y) {
                return NULL;
            }
            int r = compare_op(c, n, (jj_op)n->ops[i - 1], x, y);
            if (r < 0) {
                return NULL;
            }
            if (!r) {
                return mk(c, n, jv_bool(a, false));
            }
            x = y;
        }
        return mk(c, n, jv_bool(a, true));
    }
    case JN_CONCAT: {
        jj_buf b = {.arena = a};
        for (size_t i = 0; i < n->n_kids; i++) {
            jv *v = eval(c, n->kids[i], s);
            if (!v) {
                return NULL;
            }
            if (!jv_to_str(&b, v)) {
                return oom(c, n);
            }
        }
        return mk(c, n, jv_str_ref(a, b.s ? b.s : "", b.n));
    }
    case JN_GETATTR: {
        jv *obj = eval(c, n->a, s);
        return obj ? get_attr(c, n, obj, n->str, n->str_len) : NULL;
    }
    case JN_GETITEM: {
        jv *obj = eval(c, n->a, s);
        jv *key = obj ? eval(c, n->b, s) : NULL;
        return key ? get_item(c, n, obj, key) : NULL;
    }
    case JN_SLICE: {
        jv *obj = eval(c, n->a, s);
        if (!obj) {
            return NULL;
        }
        jv *parts[3] = {NULL, NULL, NULL};
        const jj_node *pn[3] = {n->b, n->c, n->d};
        for (int i = 0; i < 3; i++) {
            if (pn[i] && !(parts[i] = eval(c, pn[i], s))) {
                return NULL;
            }
        }
        return slice(c, n, obj, parts[0], parts[1], parts[2]);
    }
    case JN_CALL: {
        jv *f = eval(c, n->a, s);
        args av;
        if (!f || !eval_args(c, n, s, &av)) {
            return NULL;
        }
        if (f->type == JV_METHOD && f->method.self->type == JV_LOOP) {
            jj_loop *lp = f->method.self->loop;
            if (!strcmp(f->method.name, "cycle")) {
                if (av.npos == 0) {
                    return fail(c, n, "TypeError", "no items for cycling given");
                }
                return av.pos[lp->index0 % av.npos];
            }
            jv *cur = new_list(c, n, JF_TUPLE);
            for (size_t i = 0; cur && i < av.npos; i++) {
                if (!push(c, n, cur, av.pos[i])) {
                    return NULL;
                }
            }
            if (!cur) {
                return NULL;
            }
            bool changed = !lp->changed_last || !jv_equal(lp->changed_last, cur);
            lp->changed_last = cur;
            return mk(c, n, jv_bool(a, changed));
        }
        return call_value(c, n, f, &av);
    }
    case JN_FILTER: {
        jv *v = eval(c, n->a, s);
        args av;
        if (!v || !eval_args(c, n, s, &av)) {
            return NULL;
        }
        return apply_filter(c, n, n->str, v, &av);
    }
    case JN_TEST: {
        jv *v = eval(c, n->a, s);
        args av;
        if (!v || !eval_args(c, n, s, &av)) {
            return NULL;
        }
        int r = apply_test(c, n, n->str, v, &av);
        return r < 0 ? NULL : mk(c, n, jv_bool(a, n->flag ? !r : r));
    }
    default: return fail(c, n, "TemplateRuntimeError", "statement used as an expression");
    }
}

static jv *eval(ctx *c, const jj_node *n, jj_scope *s) {
    if (c->failed) {
        return NULL;
    }
    if (++c->frames > JJ_MAX_FRAMES) {
        c->frames--;
        return fail(c, n, "RecursionError", "template nests deeper than %d frames", JJ_MAX_FRAMES);
    }
    jv *v = step(c, n) ? eval_inner(c, n, s) : NULL;
    c->frames--;
    if (!v && !c->failed) {
        oom(c, n);
    }
    return v;
}

static bool emit(ctx *c, const jj_node *n, const char *s, size_t len) {
    if (!jj_buf_put(c->out, s, len)) {
        if (c->out->limit && c->out->n + len > c->out->limit) {
            fail(c, n, "TemplateRuntimeError", "output exceeds %zu bytes", c->out->limit);
        } else {
            oom(c, n);
        }
        return false;
    }
    return true;
}

static int exec_inner(ctx *c, const jj_node *n, jj_scope *s) {
    switch (n->kind) {
    case JN_BLOCK:
        for (size_t i = 0; i < n->n_kids; i++) {
            int rc = exec(c, n->kids[i], s);
            if (rc) {
                return rc;
            }
        }
        return 0;
    case JN_TEXT: return emit(c, n, n->str, n->str_len) ? 0 : -1;
    case JN_OUTPUT: {
        jv *v = eval(c, n->a, s);
        if (!v) {
            return -1;
        }
        if (v->type == JV_STR) {
            return emit(c, n, v->str.s, v->str.n) ? 0 : -1;
        }
        jj_buf b = {.arena = c->a};
        if (!jv_to_str(&b, v)) {
            oom(c, n);
            return -1;
        }
        return emit(c, n, b.s ? b.s : "", b.n) ? 0 : -1;
    }
    case JN_IF: {
        jv *cond = eval(c, n->a, s);
        if (!cond) {
            return -1;
        }
        if (jv_truthy(cond)) {
            return exec(c, n->b, s);
        }
        return n->c ? exec(c, n->c, s) : 0;
    }
    case JN_FOR: {
        jv *it = eval(c, n->b, s);
        return it ? run_loop(c, n, it, s, 1) : -1;
    }
    case JN_SET: {
        jv *v;
        if (n->b) {
            v = eval(c, n->b, s);
        } else {
            /* the body of a block set has a scope of its own */
            jj_scope *bs = scope_new(c, n, s);
            int flow = 0;
            v = bs ? capture(c, n, n->c, bs, &flow) : NULL;
            if (v && flow) {
                return flow;
            }
            if (v && n->e) {
                jv *saved = c->captured;
                c->captured = v;
                v = eval(c, n->e, s);
                c->captured = saved;
            }
        }
        return v && assign(c, n->a, v, s) ? 0 : -1;
    }
    case JN_MACRO: {
        jv *m = jv_new(c->a, JV_MACRO);
        if (!m) {
            oom(c, n);
            return -1;
        }
        m->macro.node = n;
        m->macro.closure = s;
        return scope_set(c, n, s, n->str, n->str_len, m) ? 0 : -1;
    }
    case JN_CALLBLOCK: {
        const jj_node *call = n->a;
        jv *f = eval(c, call->a, s);
        args av;
        if (!f || !eval_args(c, call, s, &av)) {
            return -1;
        }
        if (f->type != JV_MACRO) {
            fail(c, n, "TypeError", "a call block needs a macro, not '%s'", jv_type_name(f));
            return -1;
        }
        jv *caller = func(c, n, F_CALLER);
        if (!caller) {
            return -1;
        }
        caller->func.body = n->c;
        caller->func.scope = s;
        caller->func.params = n;
        jv *r = call_macro(c, call, f, &av, caller);
        return r && emit(c, n, r->str.s, r->str.n) ? 0 : -1;
    }
    case JN_FILTERBLK: {
        jj_scope *bs = scope_new(c, n, s); /* like a block set, the body has a scope of its own */
        int flow = 0;
        jv *v = bs ? capture(c, n, n->c, bs, &flow) : NULL;
        if (!v || flow) {
            return v ? flow : -1;
        }
        jv *saved = c->captured;
        c->captured = v;
        v = eval(c, n->e, s);
        c->captured = saved;
        if (!v || !(v = str_of(c, n, v))) {
            return -1;
        }
        return emit(c, n, v->str.s, v->str.n) ? 0 : -1;
    }
    case JN_WITH: {
        /* values come from the enclosing scope; the names live in a scope of their own */
        jj_scope *ws = scope_new(c, n, s);
        if (!ws) {
            return -1;
        }
        for (size_t i = 0; i < n->n_kids; i++) {
            jv *v = eval(c, n->kids[i]->a, s);
            if (!v || !scope_set(c, n, ws, n->kids[i]->str, n->kids[i]->str_len, v)) {
                return -1;
            }
        }
        return exec(c, n->c, ws);
    }
    case JN_BREAK: return 1;
    case JN_CONTINUE: return 2;
    default: fail(c, n, "TemplateRuntimeError", "expression used as a statement"); return -1;
    }
}

static int exec(ctx *c, const jj_node *n, jj_scope *s) {
    if (c->failed) {
        return -1;
    }
    if (++c->frames > JJ_MAX_FRAMES) {
        c->frames--;
        fail(c, n, "RecursionError", "template nests deeper than %d frames", JJ_MAX_FRAMES);
        return -1;
    }
    int rc = step(c, n) ? exec_inner(c, n, s) : -1;
    c->frames--;
    return rc;
}

#include "jinja_filters.inc"

/* --- entry points ---------------------------------------------------------------------------- */
oxl_jinja_options oxl_jinja_default_options(void) {
    oxl_jinja_options o;
    memset(&o, 0, sizeof o);
    o.max_output = 1u << 20;
    o.max_memory = 64u << 20;
    o.max_depth = 64;
    o.max_steps = 10000000;
    return o;
}

int oxl_jinja_parse(const char *src, size_t len, oxl_jinja_template **out, oxl_error *err) {
    *out = NULL;
    if (len > (4u << 20)) {
        return oxl_err_set(err, "template: %zu bytes is over the 4 MiB limit", len);
    }
    if (!jj_utf8_valid(src, len)) {
        size_t bad = 0;
        while (bad < len && jj_utf8_valid(src, bad + 1)) {
            bad++;
        }
        return oxl_err_set(err, "template: invalid UTF-8 near byte %zu", bad);
    }
    oxl_jinja_template *t = calloc(1, sizeof *t);
    if (!t) {
        return oxl_err_set(err, "template: out of memory");
    }
    t->arena.cap = 64u << 20;
    t->src = jj_alloc(&t->arena, len + 1);
    if (!t->src) {
        free(t);
        return oxl_err_set(err, "template: out of memory");
    }
    /* Jinja2 normalizes \r\n and \r to \n and drops one trailing newline */
    size_t k = 0;
    for (size_t i = 0; i < len; i++) {
        if (src[i] == '\r') {
            t->src[k++] = '\n';
            if (i + 1 < len && src[i + 1] == '\n') {
                i++;
            }
        } else {
            t->src[k++] = src[i];
        }
    }
    if (k && t->src[k - 1] == '\n') {
        k--;
    }
    t->src[k] = 0;
    t->src_len = k;
    jj_token *toks;
    size_t n_toks;
    if (jj_lex(&t->arena, t->src, k, &toks, &n_toks, err) < 0 || jj_parse(t, toks, n_toks, err) < 0) {
        oxl_jinja_free(t);
        return -1;
    }
    *out = t;
    return 0;
}

void oxl_jinja_free(oxl_jinja_template *t) {
    if (t) {
        jj_arena_free(&t->arena);
        free(t);
    }
}

int oxl_jinja_render(const oxl_jinja_template *t, const cJSON *context, const oxl_jinja_options *opt, char **out,
                     size_t *out_len, oxl_error *err) {
    *out = NULL;
    oxl_jinja_options defaults = oxl_jinja_default_options();
    if (!opt) {
        opt = &defaults;
    }
    jj_arena arena = {.cap = opt->max_memory};
    jj_buf buf = {.arena = &arena, .limit = opt->max_output};
    ctx c = {.t = t, .opt = opt, .a = &arena, .err = err, .out = &buf};
    int rc = -1;
    c.root = scope_new(&c, t->root, NULL);
    if (!c.root) {
        goto done;
    }
    if (context) {
        if (!cJSON_IsObject(context)) {
            oxl_err_set(err, "template context must be a JSON object");
            goto done;
        }
        jv *vars = jv_from_json(&arena, context, err);
        if (!vars) {
            if (!err || !err->msg[0]) {
                oxl_err_set(err, "template context: out of memory");
            }
            goto done;
        }
        c.root->vars = vars;
    }
    jj_scope *top = scope_new(&c, t->root, c.root);
    if (!top || exec(&c, t->root, top) < 0) {
        goto done;
    }
    *out = malloc(buf.n + 1);
    if (!*out) {
        oxl_err_set(err, "template: out of memory for %zu bytes of output", buf.n);
        goto done;
    }
    if (buf.n) {
        memcpy(*out, buf.s, buf.n);
    }
    (*out)[buf.n] = 0;
    if (out_len) {
        *out_len = buf.n;
    }
    rc = 0;
done:
    jj_arena_free(&arena);
    return rc;
}
