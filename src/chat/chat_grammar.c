/* Tool-call grammars per reply format (oxl_chat_tool_grammar in oxillama.h): the grammar, its
 * laziness, triggers and preserved tokens that llama.cpp's common/chat.cpp builds for offered tools
 * (the build_grammar blocks of common_chat_params_init_<format>), and the sampler-ready triggers
 * that common/sampling.cpp (common_sampler_init) and tools/server (word triggers that are one
 * token become token triggers) derive from them. Rule texts are llama.cpp's, written through the
 * JSON-schema converter's builder (json_schema.h) so rule names and numbering match. */
#include "chat_parse.h"
#include "errors.h"
#include "json_schema.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* the variants of the calls-begin tag that DeepSeek R1's distilled models write */
#define DS_BEGIN_VARIANTS_GBNF                                                                                         \
    "( \"" DS_CALLS_BEGIN "\" | \"<\xef\xbd\x9ctool_calls_begin\xef\xbd\x9c>\" | "                                     \
    "\"<\xef\xbd\x9ctool calls begin\xef\xbd\x9c>\" | \"<\xef\xbd\x9ctool\\\\_calls\\\\_begin\xef\xbd\x9c>\" | "       \
    "\"<\xef\xbd\x9ctool\xe2\x96\x81"                                                                                  \
    "calls\xef\xbd\x9c>\" ) "
#define DS_BEGIN_VARIANTS_RE                                                                                           \
    "(" DS_CALLS_BEGIN "|<\xef\xbd\x9ctool_calls_begin\xef\xbd\x9c>|<\xef\xbd\x9ctool calls begin\xef\xbd\x9c>|"       \
    "<\xef\xbd\x9ctool\\\\_calls\\\\_begin\xef\xbd\x9c>|<\xef\xbd\x9ctool\xe2\x96\x81"                                 \
    "calls\xef\xbd\x9c>)[\\s\\S]*"

enum { TRIG_WORD, TRIG_PATTERN, TRIG_PATTERN_FULL };
static const char *const trig_names[] = {"word", "pattern", "pattern_full"};

typedef struct gctx {
    oxl_gbuild *b;
    const cJSON *tools; /* the offered tools (OpenAI's shape) */
    bool required, parallel, forced_open;
    bool lazy;
    cJSON *triggers;  /* [{"type", "value"}] as llama.cpp's grammar_triggers */
    cJSON *preserved; /* [text] */
    char **keep;      /* strings freed at the end */
    size_t n_keep, cap_keep;
    char err[OXL_ERROR_MSG_MAX]; /* a tool llama.cpp refuses */
    bool oom;
} gctx;

__attribute__((format(printf, 2, 3))) static const char *fmt(gctx *g, const char *f, ...) {
    va_list ap;
    va_start(ap, f);
    int n = vsnprintf(NULL, 0, f, ap);
    va_end(ap);
    char *p = n >= 0 ? malloc((size_t)n + 1) : NULL;
    if (p && g->n_keep == g->cap_keep) {
        size_t cap = g->cap_keep ? 2 * g->cap_keep : 64;
        char **k = realloc(g->keep, cap * sizeof *k);
        if (!k) {
            free(p);
            p = NULL;
        } else {
            g->keep = k;
            g->cap_keep = cap;
        }
    }
    if (!p) {
        g->oom = true;
        return "";
    }
    va_start(ap, f);
    vsnprintf(p, (size_t)n + 1, f, ap);
    va_end(ap);
    g->keep[g->n_keep++] = p;
    return p;
}

/* a + sep + b, or b when a is empty */
static const char *join(gctx *g, const char *a, const char *sep, const char *b) {
    return a[0] ? fmt(g, "%s%s%s", a, sep, b) : b;
}

static void trigger(gctx *g, int type, const char *value) {
    cJSON *t = cJSON_CreateObject();
    cJSON_AddStringToObject(t, "type", trig_names[type]);
    cJSON_AddStringToObject(t, "value", value);
    cJSON_AddItemToArray(g->triggers, t);
}

static void preserve(gctx *g, const char *const *texts) {
    for (; *texts; texts++) {
        cJSON_AddItemToArray(g->preserved, cJSON_CreateString(*texts));
    }
}

/* llama.cpp's regex_escape: a backslash before each of . ^ $ | ( ) * + ? [ ] { } \ */
static const char *regex_escape(gctx *g, const char *s) {
    char *p = malloc(2 * strlen(s) + 1), *o = p;
    if (!p) {
        g->oom = true;
        return "";
    }
    for (; *s; s++) {
        if (strchr(".^$|()*+?[]{}\\", *s)) {
            *o++ = '\\';
        }
        *o++ = *s;
    }
    *o = 0;
    const char *r = fmt(g, "%s", p);
    free(p);
    return r;
}

/* --- the tools ---------------------------------------------------------------------------------- */

static const cJSON *fn_of(const cJSON *tool) {
    const cJSON *fn = cJSON_GetObjectItemCaseSensitive(tool, "function");
    return cJSON_IsObject(fn) && cJSON_IsString(cJSON_GetObjectItemCaseSensitive(fn, "name")) ? fn : NULL;
}
static const char *name_of(const cJSON *fn) { return cJSON_GetObjectItemCaseSensitive(fn, "name")->valuestring; }

/* function.parameters ({} when absent, as an empty schema) */
static const cJSON *params_of(const cJSON *fn) {
    static cJSON empty = {.type = cJSON_Object};
    const cJSON *p = cJSON_GetObjectItemCaseSensitive(fn, "parameters");
    return p ? p : &empty;
}

#define FOREACH_FUNCTION(g, fn)                                                                                        \
    for (const cJSON *t_ = (g)->tools->child; t_; t_ = t_->next)                                                       \
        for (const cJSON *fn = fn_of(t_); fn; fn = NULL)

static cJSON *str_const(const char *name) {
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "type", "string");
    cJSON_AddStringToObject(o, "const", name);
    return o;
}

static cJSON *required_list(const char *const *keys) {
    cJSON *a = cJSON_CreateArray();
    for (; *keys; keys++) {
        cJSON_AddItemToArray(a, cJSON_CreateString(*keys));
    }
    return a;
}

/* {"type": "array", "items": the one schema or {"anyOf": schemas}, "minItems": 1, ("maxItems": 1)} */
static cJSON *array_of(gctx *g, cJSON *schemas) {
    cJSON *s = cJSON_CreateObject();
    cJSON_AddStringToObject(s, "type", "array");
    if (cJSON_GetArraySize(schemas) == 1) {
        cJSON_AddItemToObject(s, "items", cJSON_DetachItemFromArray(schemas, 0));
        cJSON_Delete(schemas);
    } else {
        cJSON *any = cJSON_CreateObject();
        cJSON_AddItemToObject(any, "anyOf", schemas);
        cJSON_AddItemToObject(s, "items", any);
    }
    cJSON_AddNumberToObject(s, "minItems", 1);
    if (!g->parallel) {
        cJSON_AddNumberToObject(s, "maxItems", 1);
    }
    return s;
}

/* builder.add_schema of a schema this file made (and then frees) */
static const char *schema_rule(gctx *g, const char *name, cJSON *schema) {
    const char *r = schema ? oxl_gbuild_schema(g->b, name, schema) : "";
    g->oom |= schema == NULL;
    cJSON_Delete(schema);
    return r;
}

static const char *rule(gctx *g, const char *name, const char *body) { return oxl_gbuild_rule(g->b, name, body); }

/* --- the formats (common_chat_params_init_<format>) ---------------------------------------------- */

static void build_generic(gctx *g) {
    cJSON *schemas = cJSON_CreateArray();
    FOREACH_FUNCTION(g, fn) {
        cJSON *s = cJSON_CreateObject();
        cJSON_AddStringToObject(s, "type", "object");
        cJSON *props = cJSON_AddObjectToObject(s, "properties");
        cJSON_AddItemToObject(props, "name", str_const(name_of(fn)));
        cJSON_AddItemToObject(props, "arguments", cJSON_Duplicate(params_of(fn), true));
        cJSON *req = cJSON_AddArrayToObject(s, "required");
        cJSON_AddItemToArray(req, cJSON_CreateString("name"));
        cJSON_AddItemToArray(req, cJSON_CreateString("arguments"));
        const cJSON *desc = cJSON_GetObjectItemCaseSensitive(fn, "description");
        if (desc) {
            cJSON_AddItemToObject(s, "description", cJSON_Duplicate(desc, true));
        }
        if (g->parallel) {
            cJSON *id = cJSON_AddObjectToObject(props, "id");
            cJSON_AddStringToObject(id, "type", "string");
            cJSON_AddNumberToObject(id, "minLength", 4);
            cJSON_AddItemToArray(req, cJSON_CreateString("id"));
        }
        cJSON_AddItemToArray(schemas, s);
    }
    cJSON *items = NULL;
    if (cJSON_GetArraySize(schemas) == 1) {
        items = cJSON_DetachItemFromArray(schemas, 0);
        cJSON_Delete(schemas);
    } else {
        items = cJSON_CreateObject();
        cJSON_AddItemToObject(items, "anyOf", schemas);
    }
    const char *key = g->parallel ? "tool_calls" : "tool_call";
    cJSON *call = cJSON_CreateObject();
    cJSON_AddStringToObject(call, "type", "object");
    cJSON *props = cJSON_AddObjectToObject(call, "properties");
    if (g->parallel) {
        cJSON *arr = cJSON_AddObjectToObject(props, key);
        cJSON_AddStringToObject(arr, "type", "array");
        cJSON_AddItemToObject(arr, "items", items);
        cJSON_AddNumberToObject(arr, "minItems", 1);
    } else {
        cJSON_AddItemToObject(props, key, items);
    }
    cJSON_AddItemToObject(call, "required", required_list((const char *const[]){key, NULL}));
    cJSON *schema = call;
    if (!g->required) {
        schema = cJSON_CreateObject();
        cJSON *any = cJSON_AddArrayToObject(schema, "anyOf");
        cJSON_AddItemToArray(any, call);
        cJSON *resp = cJSON_CreateObject();
        cJSON_AddStringToObject(resp, "type", "object");
        cJSON *rp = cJSON_AddObjectToObject(resp, "properties");
        cJSON_AddStringToObject(cJSON_AddObjectToObject(rp, "response"), "type", "string");
        cJSON_AddItemToObject(resp, "required", required_list((const char *const[]){"response", NULL}));
        cJSON_AddItemToArray(any, resp);
    }
    g->lazy = false;
    schema_rule(g, "root", schema);
}

/* The later Mistral templates (Mistral Small 3.2, Devstral, Ministral 3) that write
 * [TOOL_CALLS]NAME[CALL_ID]ID[ARGS]{...} or [TOOL_CALLS]NAME[ARGS]{...}: each call so, its arguments
 * following the tool's schema, as llama.cpp's parser for them (common/chat-peg-parser.cpp) reads
 * them; [CALL_ID] with 9 alphanumerics where the template writes ids. */
static void build_mistral_args(gctx *g, bool think, bool call_id) {
    const char *rules = "";
    FOREACH_FUNCTION(g, fn) {
        const char *name = name_of(fn);
        const char *args = oxl_gbuild_schema(g->b, fmt(g, "%s-args", name), params_of(fn));
        rules =
            join(g, rules, " | ",
                 rule(g, fmt(g, "%s-call", name),
                      fmt(g, "\"%s\" %s\"[ARGS]\" %s", name, call_id ? "\"[CALL_ID]\" [a-zA-Z0-9]{9} " : "", args)));
    }
    const char *call = rule(g, "tool_call", fmt(g, "\"[TOOL_CALLS]\" ( %s )", rules));
    rule(g, "root", g->parallel ? fmt(g, "%s+", call) : call);
    trigger(g, TRIG_WORD, "[TOOL_CALLS]");
    if (think) {
        preserve(g, (const char *const[]){"[THINK]", "[/THINK]", NULL});
    }
    preserve(g, (const char *const[]){"[TOOL_CALLS]", "[ARGS]", NULL});
    if (call_id) {
        preserve(g, (const char *const[]){"[CALL_ID]", NULL});
    }
}

/* Mistral Nemo (and Magistral, the same grammar): [TOOL_CALLS] and a JSON array of {"name",
 * "arguments", "id": 9 alphanumerics} */
static void build_mistral(gctx *g, bool think) {
    cJSON *schemas = cJSON_CreateArray();
    FOREACH_FUNCTION(g, fn) {
        cJSON *s = cJSON_CreateObject();
        cJSON_AddStringToObject(s, "type", "object");
        cJSON *props = cJSON_AddObjectToObject(s, "properties");
        cJSON_AddItemToObject(props, "name", str_const(name_of(fn)));
        cJSON_AddItemToObject(props, "arguments", cJSON_Duplicate(params_of(fn), true));
        cJSON *id = cJSON_AddObjectToObject(props, "id");
        cJSON_AddStringToObject(id, "type", "string");
        cJSON_AddStringToObject(id, "pattern", "^[a-zA-Z0-9]{9}$");
        cJSON_AddItemToObject(s, "required", required_list((const char *const[]){"name", "arguments", "id", NULL}));
        cJSON_AddItemToArray(schemas, s);
    }
    rule(g, "root", fmt(g, "\"[TOOL_CALLS]\" %s", schema_rule(g, "tool_calls", array_of(g, schemas))));
    trigger(g, TRIG_WORD, "[TOOL_CALLS]");
    if (think) {
        preserve(g, (const char *const[]){"[THINK]", "[/THINK]", NULL});
    }
    preserve(g, (const char *const[]){"[TOOL_CALLS]", NULL});
}

static void build_command_r7b(gctx *g) {
    cJSON *schemas = cJSON_CreateArray();
    FOREACH_FUNCTION(g, fn) {
        cJSON *s = cJSON_CreateObject();
        cJSON_AddStringToObject(s, "type", "object");
        cJSON *props = cJSON_AddObjectToObject(s, "properties");
        cJSON *id = cJSON_AddObjectToObject(props, "tool_call_id");
        cJSON_AddStringToObject(id, "type", "string");
        cJSON_AddStringToObject(id, "pattern", "^[0-9]{1,10}$");
        cJSON_AddItemToObject(props, "tool_name", str_const(name_of(fn)));
        cJSON_AddItemToObject(props, "parameters", cJSON_Duplicate(params_of(fn), true));
        cJSON_AddItemToObject(s, "required",
                              required_list((const char *const[]){"tool_call_id", "tool_name", "parameters", NULL}));
        cJSON_AddItemToArray(schemas, s);
    }
    const char *calls = schema_rule(g, "tool_calls", array_of(g, schemas));
    rule(g, "root",
         fmt(g, "%s\"<|START_ACTION|>\" %s \"<|END_ACTION|>\"",
             g->forced_open ? "( \"<|END_THINKING|>\" space )? " : "", calls));
    trigger(g, TRIG_PATTERN_FULL,
            fmt(g, "%s(<\\|START_ACTION\\|>)[\\s\\S]*",
                g->forced_open ? "[\\s\\S]*?(<\\|END_THINKING\\|>\\s*)"
                               : "(?:<\\|START_THINKING\\|>[\\s\\S]*?<\\|END_THINKING\\|>\\s*)?"));
    preserve(g, (const char *const[]){"<|START_ACTION|>", "<|END_ACTION|>", "<|START_RESPONSE|>", "<|END_RESPONSE|>",
                                      "<|START_THINKING|>", "<|END_THINKING|>", NULL});
}

/* expect_tool_parameters: an object schema whose properties are exactly the expected one, required */
static bool expect_params(gctx *g, const char *name, const cJSON *p, const char *prop) {
    const cJSON *type = cJSON_GetObjectItemCaseSensitive(p, "type");
    const cJSON *props = cJSON_GetObjectItemCaseSensitive(p, "properties");
    const cJSON *req = cJSON_GetObjectItemCaseSensitive(p, "required");
    bool listed = false;
    for (const cJSON *r = cJSON_IsArray(req) ? req->child : NULL; r; r = r->next) {
        listed |= cJSON_IsString(r) && !strcmp(r->valuestring, prop);
    }
    if (!cJSON_IsString(type) || strcmp(type->valuestring, "object") || !cJSON_IsObject(props) || !listed ||
        !cJSON_GetObjectItemCaseSensitive(props, prop) || cJSON_GetArraySize(props) != 1) {
        snprintf(g->err, sizeof g->err,
                 "'tools': the parameters of the builtin tool '%.80s' must be an object with the one required "
                 "property '%s'",
                 name, prop);
        return false;
    }
    return true;
}

static void build_llama_3_x(gctx *g, bool builtin) {
    const char *rules = "";
    bool any_builtin = false;
    FOREACH_FUNCTION(g, fn) {
        const char *name = name_of(fn);
        const cJSON *params = params_of(fn);
        const char *prop =
            !strcmp(name, "wolfram_alpha") || !strcmp(name, "web_search") || !strcmp(name, "brave_search") ? "query"
            : !strcmp(name, "python") || !strcmp(name, "code_interpreter")                                 ? "code"
                                                                                                           : NULL;
        if (builtin && prop) {
            if (!expect_params(g, name, params, prop)) {
                return;
            }
            const cJSON *props = cJSON_GetObjectItemCaseSensitive(params, "properties");
            const char *kvs = "";
            for (const cJSON *kv = props->child; kv; kv = kv->next) {
                const char *arg = oxl_gbuild_schema(g->b, fmt(g, "%s-args-%s", name, kv->string), kv);
                kvs = join(g, kvs, " \", \" ", fmt(g, "\"%s=\" %s", kv->string, arg));
            }
            rules = join(g, rules, " | ",
                         rule(g, fmt(g, "%s-call", name), fmt(g, "\"<|python_tag|>%s.call(\" %s \")\"", name, kvs)));
            any_builtin = true;
        }
        const char *args = oxl_gbuild_schema(g->b, fmt(g, "%s-args", name), params);
        rules = join(g, rules, " | ",
                     rule(g, fmt(g, "%s-call", name),
                          fmt(g,
                              "\"{\" space ( \"\\\"type\\\"\"       space \":\" space \"\\\"function\\\"\"     space "
                              "\",\" space )?   \"\\\"name\\\"\"       space \":\" space \"\\\"%s\\\"\" space \",\" "
                              "space   \"\\\"parameters\\\"\" space \":\" space %s \"}\" space",
                              name, args)));
    }
    trigger(g, TRIG_PATTERN_FULL, "(\\{\\s*(?:\"type\"\\s*:\\s*\"function\"\\s*,\\s*)?\"name\"\\s*:\\s*\")[\\s\\S]*");
    if (any_builtin) {
        trigger(g, TRIG_WORD, "<|python_tag|>");
        preserve(g, (const char *const[]){"<|python_tag|>", NULL});
    }
    rule(g, "root", rules);
}

static void build_deepseek(gctx *g, bool v3_1) {
    const char *rules = "";
    FOREACH_FUNCTION(g, fn) {
        const char *name = name_of(fn);
        const char *args = oxl_gbuild_schema(g->b, fmt(g, "%s-args", name), params_of(fn));
        const char *body =
            v3_1 ? fmt(g, "( \"" DS_CALL_BEGIN "\" )? \"%s" DS_SEP "\" %s \"" DS_CALL_END "\"", name, args)
                 : fmt(g, "( \"" DS_CALL_BEGIN "\" )? \"function" DS_SEP "%s\\n```json\\n\" %s \"```" DS_CALL_END "\"",
                       name, args);
        rules = join(g, rules, " | ", rule(g, fmt(g, "%s-call", name), body));
    }
    rule(g, "root",
         fmt(g, "%s" DS_BEGIN_VARIANTS_GBNF "(%s)%s \"" DS_CALLS_END "\" space",
             g->forced_open ? "( \"</think>\" space )? " : "", rules, g->parallel ? "*" : ""));
    trigger(g, TRIG_PATTERN_FULL,
            fmt(g, "%s" DS_BEGIN_VARIANTS_RE,
                g->forced_open ? "[\\s\\S]*?(</think>\\s*)" : "(?:<think>[\\s\\S]*?</think>\\s*)?"));
    /* llama.cpp's lists, R1's last entry without its '>' as there */
    if (v3_1) {
        preserve(g, (const char *const[]){"<think>", "</think>", DS_CALLS_BEGIN, DS_CALL_BEGIN, DS_SEP, DS_CALL_END,
                                          DS_CALLS_END, NULL});
    } else {
        preserve(g, (const char *const[]){"<think>", "</think>", DS_CALLS_BEGIN, DS_CALL_BEGIN, DS_SEP, DS_CALL_END,
                                          "<\xef\xbd\x9ctool\xe2\x96\x81"
                                          "calls\xe2\x96\x81"
                                          "end\xef\xbd\x9c",
                                          NULL});
    }
}

static void build_firefunction(gctx *g) {
    cJSON *schemas = cJSON_CreateArray();
    FOREACH_FUNCTION(g, fn) {
        cJSON *s = cJSON_CreateObject();
        cJSON_AddStringToObject(s, "type", "object");
        cJSON *props = cJSON_AddObjectToObject(s, "properties");
        cJSON_AddItemToObject(props, "name", str_const(name_of(fn)));
        cJSON_AddItemToObject(props, "arguments", cJSON_Duplicate(params_of(fn), true));
        cJSON_AddItemToObject(s, "required", required_list((const char *const[]){"name", "arguments", "id", NULL}));
        cJSON_AddItemToArray(schemas, s);
    }
    rule(g, "root", fmt(g, "\" functools\"? %s", schema_rule(g, "tool_calls", array_of(g, schemas))));
    trigger(g, TRIG_WORD, " functools[");
    preserve(g, (const char *const[]){" functools[", NULL});
}

static void build_functionary_v3_2(gctx *g) {
    const char *first = "", *next = "";
    FOREACH_FUNCTION(g, fn) {
        const char *name = name_of(fn);
        const char *args = oxl_gbuild_schema(g->b, fmt(g, "%s-args", name), params_of(fn));
        const char *args_pattern = "[\\s\\S]*";
        if (!strcmp(name, "python")) {
            args = rule(g, fmt(g, "%s-maybe-raw-args", name), fmt(g, "%s | [^{] .*", args));
        } else {
            args_pattern = "\\{[\\s\\S]*";
        }
        const char *call = rule(g, fmt(g, "%s-call", name), fmt(g, "\"%s\\n\" %s", name, args));
        first = join(g, first, " | ", call);
        if (g->parallel) {
            next = join(g, next, " | ", rule(g, fmt(g, "%s-call2", name), fmt(g, "\">>>\" %s", call)));
        }
        trigger(g, TRIG_PATTERN_FULL, fmt(g, "((?:[\\s\\S]+?>>>)?%s\n)%s", regex_escape(g, name), args_pattern));
    }
    preserve(g, (const char *const[]){"<|end_header_id|>", NULL});
    const char *first_rule = first[0] ? fmt(g, "%s space", rule(g, "first_tool_call", first)) : "";
    if (g->parallel) {
        const char *next_rule = fmt(g, "%s space", rule(g, "subsequent_tool_call", next));
        rule(g, "root", fmt(g, "%s (%s)*", first_rule, next_rule));
    } else {
        rule(g, "root", first_rule);
    }
}

static void build_functionary_v3_1(gctx *g) {
    const char *rules = "";
    bool raw_python = false;
    FOREACH_FUNCTION(g, fn) {
        const char *name = name_of(fn);
        const cJSON *params = params_of(fn);
        if (!strcmp(name, "python") || !strcmp(name, "ipython")) {
            const cJSON *type = cJSON_GetObjectItemCaseSensitive(params, "type");
            raw_python = true;
            if (!cJSON_IsString(type)) {
                snprintf(g->err, sizeof g->err, "'tools': the python tool's parameters have no type");
                return;
            }
            if (!strcmp(type->valuestring, "object")) {
                int n_str = 0;
                const cJSON *props = cJSON_GetObjectItemCaseSensitive(params, "properties");
                for (const cJSON *p = cJSON_IsObject(props) ? props->child : NULL; p; p = p->next) {
                    n_str += cJSON_IsString(cJSON_GetObjectItemCaseSensitive(p, "type")) &&
                             !strcmp(cJSON_GetObjectItemCaseSensitive(p, "type")->valuestring, "string");
                }
                if (n_str != 1) {
                    snprintf(g->err, sizeof g->err, "'tools': the python tool needs exactly one string argument");
                    return;
                }
            } else if (strcmp(type->valuestring, "string")) {
                snprintf(g->err, sizeof g->err, "'tools': the python tool's type must be object or string");
                return;
            }
        }
        const char *args = oxl_gbuild_schema(g->b, fmt(g, "%s-args", name), params);
        rules =
            join(g, rules, " | ",
                 rule(g, fmt(g, "%s-call", name), fmt(g, "\"<function=%s>\" %s \"</function>\" space", name, args)));
    }
    if (raw_python) {
        rules = join(g, rules, " | ", rule(g, "python-call", "\"<|python_tag|>\" .*"));
        trigger(g, TRIG_WORD, "<|python_tag|>");
        preserve(g, (const char *const[]){"<|python_tag|>", NULL});
    }
    const char *call = fmt(g, "%s space", rule(g, "tool_call", rules));
    rule(g, "root", g->parallel ? fmt(g, "(%s)+", call) : call);
    trigger(g, TRIG_WORD, "<function=");
}

static void build_hermes(gctx *g) {
    const char *rules = "", *alts = "", *names = "";
    FOREACH_FUNCTION(g, fn) {
        const char *name = name_of(fn);
        const cJSON *params = params_of(fn);
        cJSON *call = cJSON_CreateObject();
        cJSON_AddStringToObject(call, "type", "object");
        cJSON *props = cJSON_AddObjectToObject(call, "properties");
        cJSON_AddStringToObject(cJSON_AddObjectToObject(props, "name"), "const", name);
        cJSON_AddItemToObject(props, "arguments", cJSON_Duplicate(params, true));
        cJSON_AddItemToObject(call, "required", required_list((const char *const[]){"name", "arguments", NULL}));
        rules = join(g, rules, " | ", schema_rule(g, fmt(g, "%s-call", name), call));
        const char *args = oxl_gbuild_schema(g->b, fmt(g, "%s-args", name), params);
        alts = join(g, alts, " | ",
                    rule(g, fmt(g, "%s-function-tag", name),
                         fmt(g,
                             "\"<function\" ( \"=%s\" | \" name=\\\"%s\\\"\" ) \">\" space %s \"</function>\" "
                             "space",
                             name, name, args)));
        trigger(g, TRIG_WORD, fmt(g, "<function=%s>", name));
        const char *esc = regex_escape(g, name);
        trigger(g, TRIG_PATTERN, fmt(g, "<function\\s+name\\s*=\\s*\"%s\"", esc));
        names = join(g, names, "|", esc);
    }
    const char *any = rule(g, "any_tool_call", fmt(g, "( %s ) space", rules));
    const char *wrappable = rule(
        g, "wrappable_tool_call",
        fmt(g,
            "( %s | \"<tool_call>\" space %s \"</tool_call>\" | \"<function_call>\" space %s \"</function_call>\" | "
            "\"<response>\"  space %s \"</response>\" | \"<tools>\"     space %s \"</tools>\" | \"<json>\"      "
            "space %s \"</json>\" | \"<xml>\"      space %s \"</xml>\" | \"<JSON>\"      space %s \"</JSON>\" ) space",
            any, any, any, any, any, any, any, any));
    alts = join(g, alts, " | ", wrappable);
    alts = join(g, alts, " | ",
                fmt(g, "( \"```\\n\" | \"```json\\n\" | \"```xml\\n\" ) space %s space \"```\" space ", wrappable));
    const char *call = rule(g, "tool_call", alts);
    rule(g, "root",
         fmt(g, "%s%s", g->forced_open ? "( \"</think>\" space )? " : "", g->parallel ? fmt(g, "(%s)+", call) : call));
    trigger(g, TRIG_PATTERN_FULL,
            fmt(g,
                "%s\\s*((?:<tool_call>|<function|(?:```(?:json|xml)?\n\\s*)?(?:<function_call>|<tools>|<xml><json>|"
                "<response>)?\\s*\\{\\s*\"name\"\\s*:\\s*\"(?:%s)\"))[\\s\\S]*",
                g->forced_open ? "[\\s\\S]*?(</think>\\s*)" : "(?:<think>[\\s\\S]*?</think>\\s*)?", names));
    preserve(g, (const char *const[]){"<think>", "</think>", "<tool_call>", "</tool_call>", "<function", "<tools>",
                                      "</tools>", "<response>", "</response>", "<function_call>", "</function_call>",
                                      "<json>", "</json>", "<JSON>", "</JSON>", "```", "```json", "```xml", NULL});
}

static void build_granite(gctx *g) {
    const char *rules = "";
    FOREACH_FUNCTION(g, fn) {
        const char *name = name_of(fn);
        cJSON *call = cJSON_CreateObject();
        cJSON_AddStringToObject(call, "type", "object");
        cJSON *props = cJSON_AddObjectToObject(call, "properties");
        cJSON_AddStringToObject(cJSON_AddObjectToObject(props, "name"), "const", name);
        cJSON_AddItemToObject(props, "arguments", cJSON_Duplicate(params_of(fn), true));
        cJSON_AddItemToObject(call, "required", required_list((const char *const[]){"name", "arguments", NULL}));
        rules = join(g, rules, " | ", rule(g, fmt(g, "%s-call", name), schema_rule(g, fmt(g, "%s-args", name), call)));
    }
    const char *call = rule(g, "tool_call", rules);
    const char *list = rule(g, "tool_list", fmt(g, "\"[\" space %s (\",\" space %s)* space \"]\"", call, call));
    rule(g, "root",
         g->forced_open
             ? fmt(g, "\"</think>\" space \"<response>\" space [^<]* \"</response>\" space \"<|tool_call|>\" space %s",
                   list)
             : fmt(g, "\"<|tool_call|>\" space %s", list));
    trigger(g, TRIG_WORD, "<|tool_call|>");
    preserve(g, (const char *const[]){"<think>", "</think>", "<response>", "</response>", "<|tool_call|>", NULL});
}

static void build_gpt_oss(gctx *g) {
    preserve(g, (const char *const[]){"<|channel|>", "<|constrain|>", "<|message|>", "<|start|>", "<|end|>", NULL});
    const char *channel = rule(g, "channel", "\"<|channel|>\" ( \"commentary\" | \"analysis\" )");
    const char *in_role = "", *in_channel = "";
    FOREACH_FUNCTION(g, fn) {
        const char *name = name_of(fn);
        const char *args = oxl_gbuild_schema(g->b, fmt(g, "%s-args", name), params_of(fn));
        in_role = join(g, in_role, " | ",
                       rule(g, fmt(g, "%s-call", name),
                            fmt(g, "\"%s\"%s \" <|constrain|>json\"? \"<|message|>\" %s", name, channel, args)));
        args = oxl_gbuild_schema(g->b, fmt(g, "%s-args", name), params_of(fn));
        in_channel = join(
            g, in_channel, " | ",
            rule(g, fmt(g, "%s-call", name), fmt(g, "\"%s\" \" <|constrain|>json\"? \"<|message|>\" %s", name, args)));
    }
    const char *recipient_in_channel =
        rule(g, "recipient_in_channel", fmt(g, "%s \" to=functions.\" ( %s )", channel, in_channel));
    if (g->lazy) {
        const char *r =
            rule(g, "recipient_in_role", fmt(g, "\"<|start|>assistant\"? \" to=functions.\" ( %s )", in_role));
        rule(g, "root", fmt(g, "%s | %s", r, recipient_in_channel));
    } else {
        const char *not_end = rule(g, "not-end",
                                   "[^<] | \"<\" [^|] | \"<|\" [^e] | \"<|e\" [^n] | \"<|en\" [^d] | \"<|end\" [^|] | "
                                   "\"<|end|\" [^>]");
        const char *analysis =
            rule(g, "analysis", fmt(g, "\"<|channel|>analysis<|message|>\" ( %s )* \"<|end|>\"", not_end));
        const char *commentary =
            rule(g, "commentary", fmt(g, "\"<|channel|>commentary<|message|>\" ( %s )* \"<|end|>\"", not_end));
        const char *r = rule(g, "recipient_in_role", fmt(g, "\" to=functions.\" ( %s )", in_role));
        rule(g, "root",
             fmt(g, "( %s \"<|start|>assistant\" )? ( %s \"<|start|>assistant\" )? ( %s | %s )", analysis, commentary,
                 r, recipient_in_channel));
    }
    trigger(g, TRIG_PATTERN, "<\\|channel\\|>(commentary|analysis) to");
    trigger(g, TRIG_PATTERN_FULL, "^ to");
    trigger(g, TRIG_PATTERN, "<\\|start\\|>assistant to");
}

/* make_gbnf_excluding (common/chat-parser-xml-toolcall.cpp) for one forbidden text: any text that
 * does not contain it, as "( [^c0] | "c0" ( [^c1] | "c1" ( ... ) ) )*" */
static const char *excluding(gctx *g, const char *forbid) {
    const char *expr = "";
    for (size_t d = strlen(forbid); d-- > 0;) {
        unsigned char ch = (unsigned char)forbid[d];
        char cls[8], lit[8];
        if (ch == '\\' || ch == ']' || ch == '^' || ch == '-') {
            snprintf(cls, sizeof cls, "\\%c", ch);
        } else if (ch >= 0x20 && ch < 0x7f) {
            snprintf(cls, sizeof cls, "%c", ch);
        } else {
            snprintf(cls, sizeof cls, "\\x%02X", ch);
        }
        if (ch == '\\' || ch == '"') {
            snprintf(lit, sizeof lit, "\\%c", ch);
        } else if (ch >= 0x20 && ch < 0x7f) {
            snprintf(lit, sizeof lit, "%c", ch);
        } else {
            snprintf(lit, sizeof lit, "\\x%02X", ch);
        }
        expr = expr[0] ? fmt(g, "( [^%s] | \"%s\" %s )", cls, lit, expr) : fmt(g, "( [^%s] )", cls);
    }
    return fmt(g, "%s*", expr);
}

/* Qwen3-Coder's XML calls (common_chat_params_init_qwen3_coder_xml with
 * build_grammar_xml_tool_call): <tool_call>\n<function=NAME>\n<parameter=KEY>\nVALUE\n</parameter>\n
 * ... </function>\n</tool_call>, a string parameter's value raw text (without the closing tag) or
 * JSON, the others JSON following their schema; required parameters in the schema's order. */
static void build_qwen3_coder(gctx *g) {
    static const char scope_start[] = "<tool_call>\n", tool_start[] = "<function=", tool_sep[] = ">\n",
                      key_start[] = "<parameter=", key_val_sep[] = ">\n", val_end[] = "\n</parameter>\n",
                      tool_end[] = "</function>\n", scope_end[] = "</tool_call>";
    preserve(g, (const char *const[]){"<tool_call>", "</tool_call>", "<function=", "</function>",
                                      "<parameter=", "</parameter>", NULL});
    const char *raw = rule(g, "string-arg-val", excluding(g, val_end));
    const char *rules = "";
    FOREACH_FUNCTION(g, fn) {
        const char *name = name_of(fn);
        const cJSON *params = cJSON_GetObjectItemCaseSensitive(fn, "parameters");
        const cJSON *props = cJSON_GetObjectItemCaseSensitive(params, "properties");
        if (!cJSON_IsObject(params) || !cJSON_IsObject(props)) {
            continue; /* llama.cpp skips such a tool */
        }
        const cJSON *req = cJSON_GetObjectItemCaseSensitive(params, "required");
        int n = cJSON_GetArraySize(props), i = 0;
        const char **kv = calloc((size_t)n + 1, sizeof *kv);
        bool *required = calloc((size_t)n + 1, sizeof *required);
        if (!kv || !required) {
            free(kv);
            free(required);
            g->oom = true;
            return;
        }
        for (const cJSON *p = props->child; p; p = p->next, i++) {
            for (const cJSON *r = cJSON_IsArray(req) ? req->child : NULL; r; r = r->next) {
                required[i] |= cJSON_IsString(r) && !strcmp(r->valuestring, p->string);
            }
            const cJSON *type = cJSON_GetObjectItemCaseSensitive(p, "type");
            const char *val = oxl_gbuild_schema(g->b, fmt(g, "%s-arg-%s", name, p->string), p);
            if (cJSON_IsString(type) && !strcmp(type->valuestring, "string")) {
                val = fmt(g, "( %s | %s )", raw, val);
            }
            kv[i] = rule(g, fmt(g, "func-%s-kv-%s", name, p->string),
                         fmt(g, "%s %s %s %s", oxl_gbuild_literal(g->b, key_start), oxl_gbuild_literal(g->b, p->string),
                             oxl_gbuild_literal(g->b, key_val_sep), val));
        }
        const char *next_sep = rule(g, fmt(g, "%s-last-arg-end", name), oxl_gbuild_literal(g->b, val_end));
        const char *next = "\"\"";
        for (i = n - 1; i >= 0; i--) {
            const char *with = fmt(g, "%s %s", kv[i], next_sep);
            next = rule(g, fmt(g, "%s-arg-after-%d", name, i), required[i] ? with : fmt(g, "( %s ) | %s", with, next));
            with = fmt(g, "%s %s", oxl_gbuild_literal(g->b, val_end), with);
            next_sep = rule(g, fmt(g, "%s-arg-after-%d-with-sep", name, i),
                            required[i] ? with : fmt(g, "( %s ) | %s", with, next_sep));
        }
        free(kv);
        free(required);
        rules = join(g, rules, " | ",
                     rule(g, fmt(g, "%s-call", name),
                          fmt(g, "%s %s %s %s", oxl_gbuild_literal(g->b, tool_start), oxl_gbuild_literal(g->b, name),
                              oxl_gbuild_literal(g->b, tool_sep), next)));
    }
    const char *once = rule(g, "root-tool-call-once", rules);
    const char *more = rule(g, "root-tool-call-more", fmt(g, "%s %s", oxl_gbuild_literal(g->b, tool_end), once));
    const char *end = rule(g, "root-call-end", oxl_gbuild_literal(g->b, tool_end));
    const char *multi = rule(g, "root-tool-call-multiple-with-end", fmt(g, "%s %s* %s", once, more, end));
    const char *block =
        fmt(g, "%s %s? %s", oxl_gbuild_literal(g->b, scope_start), multi, oxl_gbuild_literal(g->b, scope_end));
    /* parallel calls also as blocks of their own, one a line, as llama.cpp's parser reads them
     * (tests/test-chat.cpp) */
    rule(g, "root", g->parallel ? fmt(g, "%s ( \"\\n\" %s )*", block, block) : block);
    trigger(g, TRIG_WORD, fmt(g, "%s%s", scope_start, tool_start));
}

/* --- the entry point --------------------------------------------------------------------------- */

static bool ends_with(const char *s, const char *suffix) {
    size_t n = s ? strlen(s) : 0, k = strlen(suffix);
    return n >= k && !memcmp(s + n - k, suffix, k);
}

/* common_sampler_init's patterns and the server's token triggers: PATTERN_FULL values as they are;
 * each word that is one token of model's vocabulary (special text parsed) a token trigger, the
 * other words escaped and the PATTERN values joined into "^[\s\S]*?(a|b|...)[\s\S]*" last. */
static void sampler_triggers(gctx *g, const oxl_model *model, cJSON *out) {
    cJSON *pats = cJSON_AddArrayToObject(out, "trigger_patterns");
    cJSON *toks = cJSON_AddArrayToObject(out, "trigger_tokens");
    const char *anywhere = "";
    for (const cJSON *t = g->triggers->child; t; t = t->next) {
        const char *type = cJSON_GetObjectItemCaseSensitive(t, "type")->valuestring;
        const char *value = cJSON_GetObjectItemCaseSensitive(t, "value")->valuestring;
        if (!strcmp(type, "word")) {
            oxl_token tok[2];
            if (model && oxl_tokenize(model, value, strlen(value), tok, 2, false, true) == 1) {
                cJSON_AddItemToArray(toks, cJSON_CreateNumber(tok[0]));
                continue;
            }
            value = regex_escape(g, value);
        }
        if (!strcmp(type, "pattern_full")) {
            cJSON_AddItemToArray(pats, cJSON_CreateString(value));
        } else {
            anywhere = join(g, anywhere, "|", value);
        }
    }
    if (anywhere[0]) {
        cJSON_AddItemToArray(pats, cJSON_CreateString(fmt(g, "^[\\s\\S]*?(%s)[\\s\\S]*", anywhere)));
    }
    cJSON *pres = cJSON_AddArrayToObject(out, "preserved_token_ids");
    for (const cJSON *p = g->preserved->child; model && p; p = p->next) {
        oxl_token tok[2];
        if (oxl_tokenize(model, p->valuestring, strlen(p->valuestring), tok, 2, false, true) == 1) {
            cJSON_AddItemToArray(pres, cJSON_CreateNumber(tok[0]));
        }
    }
}

int oxl_chat_tool_grammar(const oxl_model *model, const char *tmpl, const char *tools_json, const char *opts_json,
                          char **out_json, oxl_error *err) {
    if (out_json) {
        *out_json = NULL;
    }
    if (!tools_json || !out_json) {
        return oxl_err_set(err, "tool grammar: tools_json and out_json are required");
    }
    cJSON *tools = cJSON_Parse(tools_json);
    cJSON *opts = opts_json ? cJSON_Parse(opts_json) : cJSON_CreateObject();
    const cJSON *choice = cJSON_GetObjectItemCaseSensitive(opts, "tool_choice");
    const cJSON *par = cJSON_GetObjectItemCaseSensitive(opts, "parallel_tool_calls");
    const cJSON *prompt = cJSON_GetObjectItemCaseSensitive(opts, "prompt");
    int rc = -1;
    if (!cJSON_IsArray(tools) || cJSON_GetArraySize(tools) == 0) {
        oxl_err_set(err, "tool grammar: tools_json is not a non-empty JSON array");
    } else if (!cJSON_IsObject(opts)) {
        oxl_err_set(err, "tool grammar: options: not a JSON object");
    } else if (choice && !(cJSON_IsString(choice) &&
                           (!strcmp(choice->valuestring, "auto") || !strcmp(choice->valuestring, "required")))) {
        oxl_err_set(err, "tool grammar: options: 'tool_choice' must be \"auto\" or \"required\"");
    } else if (par && !cJSON_IsBool(par)) {
        oxl_err_set(err, "tool grammar: options: 'parallel_tool_calls' must be true or false");
    } else if (prompt && !cJSON_IsString(prompt)) {
        oxl_err_set(err, "tool grammar: options: 'prompt' must be a string");
    } else {
        rc = 0;
    }
    for (const cJSON *t = rc == 0 ? tools->child : NULL; t && rc == 0; t = t->next) {
        if (!fn_of(t)) {
            rc = oxl_err_set(err, "tool grammar: a tool has no function with a name");
        }
    }
    if (rc != 0) {
        cJSON_Delete(tools);
        cJSON_Delete(opts);
        return -1;
    }
    const char *t = tmpl ? tmpl : model ? oxl_model_chat_template(model) : NULL;
    oxl_chat_syntax syn = oxl_chat_syntax_for(t, NULL, true, true);
    const char *p = cJSON_GetStringValue(prompt);
    gctx g = {.b = oxl_gbuild_new(),
              .tools = tools,
              .required = choice && !strcmp(choice->valuestring, "required"),
              .parallel = !par || cJSON_IsTrue(par),
              .triggers = cJSON_CreateArray(),
              .preserved = cJSON_CreateArray()};
    g.lazy = !g.required;
    bool built = true;
    switch (syn.format) {
    case OXL_CHAT_FMT_GENERIC: build_generic(&g); break;
    case OXL_CHAT_FMT_HERMES_2_PRO:
        g.forced_open = ends_with(p, "<think>\n");
        build_hermes(&g);
        break;
    case OXL_CHAT_FMT_LLAMA_3_X: build_llama_3_x(&g, false); break;
    case OXL_CHAT_FMT_LLAMA_3_X_BUILTIN: build_llama_3_x(&g, true); break;
    case OXL_CHAT_FMT_MISTRAL_NEMO:
        if (t && strstr(t, "[ARGS]")) {
            build_mistral_args(&g, syn.mistral_think, strstr(t, "[CALL_ID]") != NULL);
        } else {
            build_mistral(&g, syn.mistral_think);
        }
        break;
    case OXL_CHAT_FMT_DEEPSEEK_R1:
        g.forced_open = ends_with(p, "<think>\n");
        build_deepseek(&g, false);
        break;
    case OXL_CHAT_FMT_DEEPSEEK_V3_1:
        g.forced_open = ends_with(p, "<think>");
        build_deepseek(&g, true);
        break;
    case OXL_CHAT_FMT_FUNCTIONARY_V3_1: build_functionary_v3_1(&g); break;
    case OXL_CHAT_FMT_FUNCTIONARY_V3_2: build_functionary_v3_2(&g); break;
    case OXL_CHAT_FMT_FIREFUNCTION_V2: build_firefunction(&g); break;
    case OXL_CHAT_FMT_COMMAND_R7B:
        g.forced_open = ends_with(p, "<|START_THINKING|>");
        build_command_r7b(&g);
        break;
    case OXL_CHAT_FMT_GRANITE:
        g.forced_open = ends_with(p, "<think>\n") || ends_with(p, "<think>");
        build_granite(&g);
        break;
    case OXL_CHAT_FMT_GPT_OSS: build_gpt_oss(&g); break;
    case OXL_CHAT_FMT_QWEN3_CODER: build_qwen3_coder(&g); break;
    default: built = false; /* Command R+, content only: no grammar */
    }
    char *grammar = NULL;
    cJSON *out = NULL;
    if (!g.b || g.oom || !g.triggers || !g.preserved) {
        rc = oxl_err_set(err, "tool grammar: out of memory");
    } else if (g.err[0]) {
        rc = oxl_err_set(err, "%s", g.err);
    } else if (built && oxl_gbuild_finish(g.b, &grammar, err) != 0) {
        rc = -1;
    } else if (!(out = cJSON_CreateObject())) {
        rc = oxl_err_set(err, "tool grammar: out of memory");
    } else {
        cJSON_AddStringToObject(out, "format", oxl_chat_format_name(syn.format));
        cJSON_AddItemToObject(out, "grammar", grammar ? cJSON_CreateString(grammar) : cJSON_CreateNull());
        cJSON_AddBoolToObject(out, "lazy", built && g.lazy);
        cJSON_AddItemToObject(out, "triggers", cJSON_Duplicate(g.triggers, true));
        cJSON_AddItemToObject(out, "preserved_tokens", cJSON_Duplicate(g.preserved, true));
        sampler_triggers(&g, model, out);
        *out_json = g.oom ? NULL : cJSON_PrintUnformatted(out);
        rc = *out_json ? 0 : oxl_err_set(err, "tool grammar: out of memory");
    }
    cJSON_Delete(out);
    free(grammar);
    for (size_t i = 0; i < g.n_keep; i++) {
        free(g.keep[i]);
    }
    free(g.keep);
    cJSON_Delete(g.triggers);
    cJSON_Delete(g.preserved);
    oxl_gbuild_free(g.b);
    cJSON_Delete(tools);
    cJSON_Delete(opts);
    return rc;
}
