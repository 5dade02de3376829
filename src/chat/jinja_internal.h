/* Internals of the Jinja engine shared by the lexer, parser, values and evaluator (src/jinja*.c).
 * Memory: the AST lives in the template's arena and every value of a render in the render's arena;
 * nothing is freed one by one, an arena is dropped whole. The arena refuses to grow past its cap. */
#ifndef OXL_JINJA_INTERNAL_H
#define OXL_JINJA_INTERNAL_H

#include "jinja.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* --- arena ----------------------------------------------------------------------------------- */
typedef struct jj_chunk jj_chunk;
typedef struct jj_arena {
    jj_chunk *head;
    size_t used; /* bytes handed out plus chunk overhead */
    size_t cap;  /* refuse allocations beyond this */
} jj_arena;

void *jj_alloc(jj_arena *a, size_t n); /* zeroed; NULL when over the cap */
void jj_arena_free(jj_arena *a);

/* --- values ---------------------------------------------------------------------------------- */
typedef enum {
    JV_UNDEF,
    JV_NONE,
    JV_BOOL,
    JV_INT,
    JV_FLOAT,
    JV_STR,
    JV_LIST,   /* also tuples (JF_TUPLE) and the generators map/select/... return (JF_GEN) */
    JV_DICT,   /* insertion ordered; JF_NS marks a namespace() (assignable attributes) */
    JV_METHOD, /* a bound method such as `message.items`: self + name */
    JV_FUNC,   /* a global function (range, namespace, raise_exception, ...) or caller */
    JV_MACRO,
    JV_LOOP,
} jv_type;

enum {
    JF_TUPLE = 1,    /* a list that is a Python tuple */
    JF_GEN = 2,      /* a list that is a Python generator: no len(), no JSON, no indexing */
    JF_NS = 4,       /* a dict that is a namespace() */
    JF_SECURITY = 8, /* an Undefined from a sandbox refusal: using it raises SecurityError */
    JF_MARKUP = 16,  /* a str that is markupsafe.Markup (from safe, escape) */
};

typedef struct jv jv;
struct jj_node;
struct jj_scope;
struct jj_loop;

struct jv {
    uint8_t type;
    uint8_t flags;
    union {
        bool b;
        int64_t i;
        double f;
        struct {
            const char *s; /* not NUL-terminated */
            size_t n;
        } str;
        struct {
            jv **items;
            size_t n, cap;
        } list;
        struct {
            jv **keys;
            jv **vals;
            size_t n, cap;
        } dict;
        struct {
            const char *hint; /* the UndefinedError message, e.g. "'x' is undefined" */
        } undef;
        struct {
            jv *self;
            const char *name;
        } method;
        struct {
            int id;
            const struct jj_node *body; /* caller: the call block's body */
            struct jj_scope *scope;     /* caller: where the call block stands */
            const struct jj_node *params;
        } func;
        struct {
            const struct jj_node *node;
            struct jj_scope *closure;
        } macro;
        struct jj_loop *loop;
    };
};

/* --- AST ------------------------------------------------------------------------------------- */
typedef enum {
    /* statements */
    JN_BLOCK,  /* kids: statements */
    JN_TEXT,   /* str */
    JN_OUTPUT, /* a */
    JN_IF,     /* a cond, b then, c else (block or nested if) */
    JN_FOR,    /* a target, b iterable, c body, d else, e filter; flag recursive */
    JN_SET,    /* a target, b value | c body (block set) with e filters over JN_CAPTURED */
    JN_MACRO,  /* str name, kids params (JN_NAME, a default), c body; flag: body names caller 1, varargs 2, kwargs 4 */
    JN_CALLBLOCK, /* a call expression, kids caller params, c body */
    JN_FILTERBLK, /* e filter chain over JN_CAPTURED, c body */
    JN_WITH,      /* kids targets (JN_NAME, a value), c body */
    JN_BREAK,
    JN_CONTINUE,
    /* expressions */
    JN_LIT,      /* lit */
    JN_NAME,     /* str */
    JN_LIST,     /* kids */
    JN_TUPLE,    /* kids */
    JN_DICT,     /* kids: key, value, key, value ... */
    JN_BIN,      /* op, a, b */
    JN_NEG,      /* a */
    JN_POS,      /* a */
    JN_NOT,      /* a */
    JN_AND,      /* a, b */
    JN_OR,       /* a, b */
    JN_COND,     /* a cond, b then, c else (may be NULL) */
    JN_COMPARE,  /* kids operands, ops */
    JN_CONCAT,   /* kids */
    JN_GETATTR,  /* a, str */
    JN_GETITEM,  /* a, b */
    JN_SLICE,    /* a object, b start, c stop, d step (each may be NULL) */
    JN_CALL,     /* a callee, kids args, kwn/kwv */
    JN_FILTER,   /* a operand, str name, kids args, kwn/kwv */
    JN_TEST,     /* a operand, str name, kids args; flag negated */
    JN_CAPTURED, /* the text of a filter block or block set */
} jj_kind;

typedef enum {
    JOP_ADD,
    JOP_SUB,
    JOP_MUL,
    JOP_DIV,
    JOP_FLOORDIV,
    JOP_MOD,
    JOP_POW,
    JOP_EQ,
    JOP_NE,
    JOP_LT,
    JOP_LE,
    JOP_GT,
    JOP_GE,
    JOP_IN,
    JOP_NOTIN,
} jj_op;

typedef struct jj_node {
    uint8_t kind;
    uint8_t op;
    uint8_t flag;
    uint32_t pos; /* byte offset in the template */
    struct jj_node *a, *b, *c, *d, *e;
    struct jj_node **kids;
    size_t n_kids;
    uint8_t *ops; /* JN_COMPARE: n_kids - 1 operators */
    const char *str;
    size_t str_len;
    jv *lit;
    const char **kwn;
    struct jj_node **kwv;
    size_t n_kw;
} jj_node;

struct oxl_jinja_template {
    jj_arena arena;
    char *src; /* normalized source (\r\n and \r become \n), for positions */
    size_t src_len;
    jj_node *root;
};

/* --- lexer ----------------------------------------------------------------------------------- */
typedef enum {
    JT_TEXT,
    JT_VAR_BEGIN,
    JT_VAR_END,
    JT_BLOCK_BEGIN,
    JT_BLOCK_END,
    JT_NAME,
    JT_STRING,
    JT_INT,
    JT_FLOAT,
    JT_OP,
    JT_EOF,
} jj_tok_type;

typedef struct jj_token {
    uint8_t type;
    uint32_t pos;
    const char *s; /* text, name, operator or decoded string (arena) */
    size_t n;
    int64_t i;
    double f;
} jj_token;

/* Tokenizes src into *toks (arena). Returns 0 or -1 with err "template:L:C: ...". */
int jj_lex(jj_arena *a, const char *src, size_t len, jj_token **toks, size_t *n_toks, oxl_error *err);
/* line and column (1-based) of byte offset pos */
void jj_line_col(const char *src, size_t len, size_t pos, int *line, int *col);

/* --- parser ---------------------------------------------------------------------------------- */
int jj_parse(oxl_jinja_template *t, const jj_token *toks, size_t n_toks, oxl_error *err);

/* --- value helpers (jinja_value.c) --------------------------------------------------------- */
typedef struct jj_buf {
    char *s;
    size_t n, cap;
    size_t limit; /* 0: unlimited (bounded by the arena cap) */
    jj_arena *arena;
} jj_buf;

bool jj_buf_put(jj_buf *b, const char *s, size_t n); /* false when over its limit or out of memory */

jv *jv_new(jj_arena *a, jv_type t);
jv *jv_str(jj_arena *a, const char *s, size_t n);     /* copies */
jv *jv_str_ref(jj_arena *a, const char *s, size_t n); /* keeps the pointer */
jv *jv_int(jj_arena *a, int64_t i);
jv *jv_float(jj_arena *a, double f);
jv *jv_bool(jj_arena *a, bool b);
jv *jv_undef(jj_arena *a, const char *hint);
bool jv_list_push(jj_arena *a, jv *l, jv *item);
bool jv_dict_set(jj_arena *a, jv *d, jv *k, jv *v);
jv *jv_dict_get(const jv *d, const char *k, size_t n);
jv *jv_dict_getv(const jv *d, const jv *k);
jv *jv_from_json(jj_arena *a, const cJSON *j, oxl_error *err);

bool jv_truthy(const jv *v);
bool jv_equal(const jv *x, const jv *y);
const char *jv_type_name(const jv *v); /* Python's name: 'str', 'dict', 'NoneType' ... */
bool jv_is_number(const jv *v);        /* int, float or bool */
double jv_num(const jv *v);
/* str(v) as Python prints it (repr inside containers); false on over-limit */
bool jv_to_str(jj_buf *b, const jv *v);
bool jv_repr(jj_buf *b, const jv *v);
void jj_fmt_float(double f, char out[32]); /* Python repr of a float */
/* the arguments of json.dumps that HuggingFace's tojson passes on */
typedef struct jj_json_opts {
    int indent; /* < 0: no newlines */
    bool ascii; /* ensure_ascii */
    bool sort_keys;
    const char *item_sep; /* separators; NULL: Python's defaults for the indent */
    const char *key_sep;
} jj_json_opts;

/* json.dumps(v, ...); returns false and sets *bad to the offending value when v holds something
 * JSON cannot encode (false with *bad NULL: out of memory or over the buffer's limit) */
bool jv_to_json(jj_buf *b, const jv *v, const jj_json_opts *o, int depth, const jv **bad);
/* Python ordering: -2 when the types do not order (TypeError) */
int jv_compare(const jv *x, const jv *y);
size_t jj_utf8_len(const char *s, size_t n);
/* byte offset of code point index cp (clamped to n) */
size_t jj_utf8_off(const char *s, size_t n, size_t cp);
bool jj_utf8_valid(const char *s, size_t n);

#endif
