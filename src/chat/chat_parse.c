/* Chat reply parsing (chat_parse.h). The format names, the template markers that pick them and the
 * reply shapes follow llama.cpp's common/chat.cpp (its named formats and specialised templates)
 * and the expectations of its tests/test-chat.cpp. */
#include "chat_parse.h"
#include "errors.h"
#include "json_partial.h"

#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static const char *const fmt_names[OXL_CHAT_FMT_COUNT] = {
    "Content-only",
    "Generic",
    "Hermes 2 Pro",
    "Llama 3.x",
    "Llama 3.x with builtin tools",
    "Mistral Nemo",
    "DeepSeek R1",
    "DeepSeek V3.1",
    "Functionary v3.1 Llama 3.1",
    "Functionary v3.2",
    "FireFunction v2",
    "Command R7B",
    "Granite",
    "GPT-OSS",
    "Qwen3 Coder",
    "Command R+",
};

const char *oxl_chat_format_name(oxl_chat_fmt f) { return (unsigned)f < OXL_CHAT_FMT_COUNT ? fmt_names[f] : "unknown"; }

static bool has(const char *s, const char *needle) { return s && strstr(s, needle) != NULL; }

oxl_chat_fmt oxl_chat_format_detect(const char *t) {
    if (!t) {
        return OXL_CHAT_FMT_GENERIC;
    }
    if (has(t, "<|channel|>")) {
        return OXL_CHAT_FMT_GPT_OSS;
    }
    if (has(t, ">>>all")) {
        return OXL_CHAT_FMT_FUNCTIONARY_V3_2;
    }
    if (has(t, "<|START_ACTION|>") || has(t, "<|START_THINKING|>")) {
        return OXL_CHAT_FMT_COMMAND_R7B;
    }
    if (has(t, "<|CHATBOT_TOKEN|>") && has(t, "Action:")) {
        return OXL_CHAT_FMT_COMMAND_R_PLUS;
    }
    if (has(t, DS_CALLS_BEGIN)) {
        /* V3.1 names the function between call-begin and the separator; R1 writes its type there */
        return has(t, "'<\xef\xbd\x9ctool\xe2\x96\x81"
                      "call\xe2\x96\x81"
                      "begin\xef\xbd\x9c>' + tool['type']") ||
                       has(t, "```json")
                   ? OXL_CHAT_FMT_DEEPSEEK_R1
                   : OXL_CHAT_FMT_DEEPSEEK_V3_1;
    }
    if (has(t, "[TOOL_CALLS]")) {
        return OXL_CHAT_FMT_MISTRAL_NEMO;
    }
    if (has(t, " functools[")) {
        return OXL_CHAT_FMT_FIREFUNCTION_V2;
    }
    if (has(t, "<function=") && has(t, "<|start_header_id|>")) {
        return OXL_CHAT_FMT_FUNCTIONARY_V3_1;
    }
    if (has(t, "<|tool_call|>")) {
        return OXL_CHAT_FMT_GRANITE;
    }
    if (has(t, "<tool_call>") && has(t, "<function=") && has(t, "<parameter=")) {
        return OXL_CHAT_FMT_QWEN3_CODER; /* also Qwen3.5, Nemotron 3 Nano, StepFun 3.5 */
    }
    if (has(t, "<tool_call>")) {
        return OXL_CHAT_FMT_HERMES_2_PRO;
    }
    if (has(t, "<|start_header_id|>ipython<|end_header_id|>")) {
        return has(t, "<|python_tag|>") || has(t, "builtin_tools") ? OXL_CHAT_FMT_LLAMA_3_X_BUILTIN
                                                                   : OXL_CHAT_FMT_LLAMA_3_X;
    }
    return OXL_CHAT_FMT_GENERIC;
}

/* The thought markers: Command R7B's, Magistral / Ministral 3's [THINK] (a Mistral template that
 * knows them), else <think>. */
static const char *think_open_tag(const oxl_chat_syntax *s) {
    return s->format == OXL_CHAT_FMT_COMMAND_R7B ? "<|START_THINKING|>" : s->mistral_think ? "[THINK]" : "<think>";
}
static const char *think_close_tag(const oxl_chat_syntax *s) {
    return s->format == OXL_CHAT_FMT_COMMAND_R7B ? "<|END_THINKING|>" : s->mistral_think ? "[/THINK]" : "</think>";
}

static bool is_ws(char c) { return c == ' ' || c == '\n' || c == '\t' || c == '\r'; }

oxl_chat_syntax oxl_chat_syntax_for(const char *tmpl, const char *prompt, bool reasoning, bool tools) {
    oxl_chat_syntax s = {
        .format = oxl_chat_format_detect(tmpl), .reasoning = reasoning, .tools = tools, .generate_ids = true};
    s.think_tags = s.format == OXL_CHAT_FMT_COMMAND_R7B || s.format == OXL_CHAT_FMT_DEEPSEEK_R1 ||
                   s.format == OXL_CHAT_FMT_DEEPSEEK_V3_1 || has(tmpl, "<think>");
    if (s.format == OXL_CHAT_FMT_MISTRAL_NEMO && has(tmpl, "[THINK]")) {
        s.think_tags = s.mistral_think = true;
    }
    if (s.think_tags && prompt) {
        /* the prompt ends with an opener (and whitespace): the reply starts inside the thought */
        const char *open = think_open_tag(&s);
        size_t n = strlen(prompt), k = strlen(open);
        while (n > 0 && is_ws(prompt[n - 1])) {
            n--;
        }
        if (n >= k && !memcmp(prompt + n - k, open, k)) {
            s.think_open = prompt + n - k;
        }
    }
    return s;
}

/* llama.cpp's common/chat.cpp, for a prompt rendered with enable_thinking false: where the template
 * opened a thought regardless (DeepSeek R1's "<think>\n", V3.1's "<think>", Command R7B's
 * START_THINKING), the format's handler appends the closer so that the reply starts after the
 * thought; Command R7B's generation prompt without a thought gets an empty one. */
const char *oxl_chat_thought_closer(const char *tmpl, const char *prompt) {
    oxl_chat_syntax s = oxl_chat_syntax_for(tmpl, prompt, true, false);
    if (s.think_open) {
        return think_close_tag(&s);
    }
    const size_t n = prompt ? strlen(prompt) : 0, k = strlen("<|CHATBOT_TOKEN|>");
    if (s.format == OXL_CHAT_FMT_COMMAND_R7B && n >= k && !strcmp(prompt + n - k, "<|CHATBOT_TOKEN|>")) {
        return "<|START_THINKING|><|END_THINKING|>";
    }
    return NULL;
}

/* The format's thought tags and whether prompt ends inside a thought (see oxillama.h). */
int oxl_chat_thinking_tags(const oxl_model *model, const char *tmpl, const char *prompt, const char **start,
                           const char **end, bool *open) {
    if (open) {
        *open = false;
    }
    if (!start || !end) {
        return -1;
    }
    *start = *end = NULL;
    const char *t = tmpl ? tmpl : model ? oxl_model_chat_template(model) : NULL;
    oxl_chat_syntax s = oxl_chat_syntax_for(t, prompt, true, false);
    if (!s.think_tags) {
        return 0;
    }
    *start = think_open_tag(&s);
    *end = think_close_tag(&s);
    if (open) {
        *open = s.think_open != NULL;
    }
    return 1;
}

/* --- growing strings ------------------------------------------------------------------------- */

typedef struct sbuf {
    char *p;
    size_t n, cap;
    bool oom;
} sbuf;

static void put(sbuf *b, const char *s, size_t n) {
    if (b->oom || n == 0) {
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
    memcpy(b->p + b->n, s, n);
    b->n += n;
    b->p[b->n] = 0;
}
static void puts_(sbuf *b, const char *s) { put(b, s, strlen(s)); }

/* --- scanning helpers ------------------------------------------------------------------------ */

static const char *find(const char *p, const char *end, const char *needle) {
    size_t k = strlen(needle);
    if (k == 0 || p >= end || (size_t)(end - p) < k) {
        return NULL;
    }
    for (const char *q = p; q + k <= end; q++) {
        if (*q == *needle && !memcmp(q, needle, k)) {
            return q;
        }
    }
    return NULL;
}
static bool starts(const char *p, const char *end, const char *s) {
    size_t k = strlen(s);
    return p <= end && (size_t)(end - p) >= k && !memcmp(p, s, k);
}
static const char *skip_ws(const char *p, const char *end) {
    while (p < end && is_ws(*p)) {
        p++;
    }
    return p;
}
/* Bytes at the end of [p, end) that begin one of the markers without completing it. */
static size_t partial_tail(const char *p, const char *end, const char *const *markers) {
    size_t best = 0, n = (size_t)(end - p);
    for (int m = 0; markers[m]; m++) {
        size_t k = strlen(markers[m]);
        for (size_t h = k - 1; h > best; h--) {
            if (h <= n && !memcmp(end - h, markers[m], h)) {
                best = h;
                break;
            }
        }
    }
    return best;
}

/* A JSON value starting at p (after whitespace); *after is set past it. NULL when none. Numbers
 * keep nlohmann's spelling, so that arguments dump as llama.cpp dumps them. */
static cJSON *json_at(const char *p, const char *end, const char **after) {
    p = skip_ws(p, end);
    if (p >= end || (*p != '{' && *p != '[' && *p != '"')) {
        return NULL;
    }
    oxl_json_heal h;
    if (!oxl_json_heal_parse(p, end, NULL, &h)) {
        return NULL;
    }
    if (after) {
        *after = h.after;
    }
    return h.json;
}

/* --- tool calls ------------------------------------------------------------------------------- */

typedef struct parsed {
    sbuf content, reasoning;
    cJSON *calls;
    const oxl_chat_syntax *s;
    bool partial;
    bool stop;       /* partial: a call was cut by the end of the reply; nothing follows it */
    char marker[32]; /* partial: the healing marker, a text the reply does not hold */
} parsed;

static void new_id(char *buf, size_t cap) {
    static _Atomic uint64_t counter;
    uint64_t x = (uint64_t)time(NULL) * 0x9E3779B97F4A7C15ull ^ (uint64_t)(uintptr_t)buf ^
                 (atomic_fetch_add(&counter, 1) + 1) * 0xBF58476D1CE4E5B9ull;
    static const char al[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
    size_t i = snprintf(buf, cap, "call_");
    for (; i + 1 < cap && i < 29; i++) {
        x ^= x >> 31;
        x *= 0x94D049BB133111EBull;
        x ^= x >> 29;
        buf[i] = al[x % 62];
    }
    buf[i] = 0;
}

/* Adds a call; args is a JSON value (an object, or a string kept as the arguments text). */
static bool add_call(parsed *o, const char *name, size_t name_len, const cJSON *args, const char *id) {
    if (!name || name_len == 0) {
        return false;
    }
    cJSON *call = cJSON_CreateObject();
    char gen[48];
    if ((!id || !*id) && o->s->generate_ids) {
        new_id(gen, sizeof gen);
        id = gen;
    }
    if (id && *id) {
        cJSON_AddStringToObject(call, "id", id);
    }
    cJSON_AddStringToObject(call, "type", "function");
    cJSON *fn = cJSON_AddObjectToObject(call, "function");
    char *nm = strndup(name, name_len);
    cJSON_AddStringToObject(fn, "name", nm ? nm : "");
    free(nm);
    /* llama.cpp dumps arguments with nlohmann's dump(-1, ' ', ensure_ascii = true); a call cut
     * short has none yet ("") */
    char *a = !args                  ? strdup(o->partial ? "" : "{}")
              : cJSON_IsString(args) ? strdup(args->valuestring)
                                     : oxl_json_dump(args, true);
    cJSON_AddStringToObject(fn, "arguments", a ? a : "{}");
    free(a);
    cJSON_AddItemToArray(o->calls, call);
    return true;
}

/* {"name", "arguments" | "parameters", "id"?} (and Command R7B's tool_name / tool_call_id). */
static bool add_json_call(parsed *o, const cJSON *c) {
    const cJSON *name = cJSON_GetObjectItemCaseSensitive(c, "name");
    if (!cJSON_IsString(name)) {
        name = cJSON_GetObjectItemCaseSensitive(c, "tool_name");
    }
    const cJSON *fn = cJSON_GetObjectItemCaseSensitive(c, "function");
    if (!cJSON_IsString(name) && cJSON_IsObject(fn)) {
        c = fn;
        name = cJSON_GetObjectItemCaseSensitive(c, "name");
    }
    if (!cJSON_IsString(name)) {
        return false;
    }
    const cJSON *args = cJSON_GetObjectItemCaseSensitive(c, "arguments");
    if (!args) {
        args = cJSON_GetObjectItemCaseSensitive(c, "parameters");
    }
    const cJSON *id = cJSON_GetObjectItemCaseSensitive(c, "id");
    if (!cJSON_IsString(id)) {
        id = cJSON_GetObjectItemCaseSensitive(c, "tool_call_id");
    }
    return add_call(o, name->valuestring, strlen(name->valuestring), args, cJSON_IsString(id) ? id->valuestring : NULL);
}

static bool add_json_calls(parsed *o, const cJSON *v) {
    if (cJSON_IsArray(v)) {
        bool any = false;
        for (const cJSON *c = v->child; c; c = c->next) {
            any |= add_json_call(o, c);
        }
        return any;
    }
    return add_json_call(o, v);
}

/* --- calls cut by the end of a reply still being generated ------------------------------------ */

/* The value at p, healed when the end of the reply cuts it, with its arguments dumped (NULL when
 * there is no value yet). Partial replies only. */
static cJSON *heal_value(parsed *o, const char *p, const char *end, const oxl_json_paths *paths) {
    p = skip_ws(p, end);
    return p < end ? oxl_json_with_dumped_args(p, end, o->marker, paths, NULL, NULL) : NULL;
}

static const char *const call_arg_keys[][2] = {{"arguments", NULL}, {"parameters", NULL}};
static const oxl_json_paths call_paths = {call_arg_keys, 2, NULL, 0};
static const char *const root_key[][2] = {{NULL, NULL}};
static const oxl_json_paths root_paths = {root_key, 1, NULL, 0};

/* Partial: the calls (an object or a list of them) at p, the last cut by the end of the reply;
 * parsing stops there. Returns end. */
static const char *heal_calls(parsed *o, const char *p, const char *end) {
    o->stop = true;
    cJSON *v = heal_value(o, p, end, &call_paths);
    if (v) {
        add_json_calls(o, v);
    }
    cJSON_Delete(v);
    return end;
}

/* Partial: a call whose name is known and whose arguments (the JSON value at p) the end of the reply
 * cuts; parsing stops there. Returns end. */
static const char *heal_args(parsed *o, const char *name, size_t name_len, const char *p, const char *end,
                             const char *id) {
    o->stop = true;
    cJSON *v = heal_value(o, p, end, &root_paths);
    if (v) {
        add_call(o, name, name_len, v, id);
    }
    cJSON_Delete(v);
    return end;
}

/* The call section of each format: where it starts in [p, end) (NULL when none), and its parser,
 * which reads calls from there and returns the end of what it read (NULL on a malformed call). */
typedef struct call_fmt {
    const char *const *starts; /* markers that open calls */
    bool json_reply;           /* a reply that is a bare JSON object is a call */
} call_fmt;

static const char *const m_hermes[] = {"<tool_call>", "<function=", NULL};
static const char *const m_generic[] = {"<tool_call>", NULL};
static const char *const m_llama[] = {"<|python_tag|>", NULL};
static const char *const m_mistral[] = {"[TOOL_CALLS]", NULL};
static const char *const m_deepseek[] = {DS_CALLS_BEGIN, DS_CALL_BEGIN, NULL};
static const char *const m_func31[] = {"<function=", "<|python_tag|>", NULL};
static const char *const m_fire[] = {" functools[", "functools[", NULL};
static const char *const m_r7b[] = {"<|START_ACTION|>", NULL};
static const char *const m_granite[] = {"<|tool_call|>", "<tool_call>", NULL};
static const char *const m_rplus[] = {"Action:", NULL};
static const char *const m_none[] = {NULL};

static call_fmt call_fmt_of(oxl_chat_fmt f) {
    switch (f) {
    case OXL_CHAT_FMT_GENERIC: return (call_fmt){m_generic, true};
    case OXL_CHAT_FMT_HERMES_2_PRO:
    case OXL_CHAT_FMT_QWEN3_CODER: return (call_fmt){m_hermes, false};
    case OXL_CHAT_FMT_LLAMA_3_X:
    case OXL_CHAT_FMT_LLAMA_3_X_BUILTIN: return (call_fmt){m_llama, true};
    case OXL_CHAT_FMT_MISTRAL_NEMO: return (call_fmt){m_mistral, false};
    case OXL_CHAT_FMT_DEEPSEEK_R1:
    case OXL_CHAT_FMT_DEEPSEEK_V3_1: return (call_fmt){m_deepseek, false};
    case OXL_CHAT_FMT_FUNCTIONARY_V3_1: return (call_fmt){m_func31, false};
    case OXL_CHAT_FMT_FIREFUNCTION_V2: return (call_fmt){m_fire, false};
    case OXL_CHAT_FMT_COMMAND_R7B: return (call_fmt){m_r7b, false};
    case OXL_CHAT_FMT_GRANITE: return (call_fmt){m_granite, false};
    case OXL_CHAT_FMT_COMMAND_R_PLUS: return (call_fmt){m_rplus, false};
    default: return (call_fmt){m_none, false};
    }
}

static const char *first_marker(const char *p, const char *end, const char *const *m, const char **which) {
    const char *best = NULL;
    for (int i = 0; m[i]; i++) {
        const char *q = find(p, end, m[i]);
        if (q && (!best || q < best)) {
            best = q;
            *which = m[i];
        }
    }
    return best;
}

/* Where the calls begin in [p, end), or NULL. */
static const char *calls_start(const oxl_chat_syntax *s, const char *p, const char *end) {
    call_fmt cf = call_fmt_of(s->format);
    const char *which = NULL;
    const char *q = first_marker(p, end, cf.starts, &which);
    if (cf.json_reply) {
        const char *b = skip_ws(p, end);
        if (b < end && *b == '{' && (!q || b < q)) {
            return b;
        }
    }
    return q;
}

/* <tool_call>{json}</tool_call>, repeated; also <function=NAME>{json}</function>. */
static const char *parse_tagged(parsed *o, const char *p, const char *end, const char *open, const char *close) {
    size_t ko = strlen(open);
    if (!starts(p, end, open)) {
        return NULL;
    }
    const char *after = NULL;
    cJSON *v = json_at(p + ko, end, &after);
    if (!v && o->partial) {
        return heal_calls(o, p + ko, end);
    }
    bool ok = v && add_json_calls(o, v);
    cJSON_Delete(v);
    if (!ok) {
        return NULL;
    }
    after = skip_ws(after, end);
    if (starts(after, end, close)) {
        after += strlen(close);
    }
    return after;
}

static const char *parse_function_tag(parsed *o, const char *p, const char *end) {
    /* <function=NAME>{json}</function> (Functionary v3.1 on Llama 3.1) */
    const char *name = p + strlen("<function=");
    const char *gt = find(name, end, ">");
    if (!gt) {
        return o->partial ? (o->stop = true, end) : NULL;
    }
    const char *after = NULL;
    cJSON *v = json_at(gt + 1, end, &after);
    if (!v && o->partial) {
        return heal_args(o, name, (size_t)(gt - name), gt + 1, end, NULL);
    }
    bool ok = cJSON_IsObject(v) && add_call(o, name, (size_t)(gt - name), v, NULL);
    cJSON_Delete(v);
    if (!ok) {
        return NULL;
    }
    after = skip_ws(after, end);
    if (starts(after, end, "</function>")) {
        after += strlen("</function>");
    }
    return after;
}

/* <|python_tag|>: a JSON call, NAME.call(key="value", ...) (Llama 3.x builtin tools), or code. */
static const char *parse_python_tag(parsed *o, const char *p, const char *end) {
    p += strlen("<|python_tag|>");
    const char *b = skip_ws(p, end);
    const char *after = NULL;
    if (b < end && *b == '{') {
        cJSON *v = json_at(b, end, &after);
        if (!v && o->partial) {
            return heal_calls(o, b, end);
        }
        bool ok = v && add_json_calls(o, v);
        cJSON_Delete(v);
        return ok ? after : NULL;
    }
    if (o->partial) {
        /* NAME.call(...) or code: not known to be either before the reply ends */
        o->stop = true;
        return end;
    }
    const char *dot = find(b, end, ".call(");
    bool ident = dot != NULL && dot > b;
    for (const char *q = b; ident && q < dot; q++) {
        ident = (*q >= 'a' && *q <= 'z') || (*q >= 'A' && *q <= 'Z') || (*q >= '0' && *q <= '9') || *q == '_';
    }
    if (ident) {
        cJSON *args = cJSON_CreateObject();
        const char *q = dot + strlen(".call(");
        bool ok = true;
        while (ok) {
            q = skip_ws(q, end);
            if (q < end && *q == ')') {
                q++;
                break;
            }
            const char *k = q;
            while (q < end && *q != '=' && *q != ')' && !is_ws(*q)) {
                q++;
            }
            size_t kl = (size_t)(q - k);
            q = skip_ws(q, end);
            if (kl == 0 || q >= end || *q != '=') {
                ok = false;
                break;
            }
            cJSON *v = json_at(q + 1, end, &q);
            if (!v) {
                ok = false;
                break;
            }
            char *key = strndup(k, kl);
            if (key) {
                cJSON_AddItemToObject(args, key, v);
            } else {
                cJSON_Delete(v);
            }
            free(key);
            q = skip_ws(q, end);
            if (q < end && *q == ',') {
                q++;
            }
        }
        ok = ok && add_call(o, b, (size_t)(dot - b), args, NULL);
        cJSON_Delete(args);
        if (ok) {
            return q;
        }
    }
    /* code for the python tool */
    const char *stop = find(b, end, "<|eom_id|>");
    stop = stop ? stop : end;
    cJSON *args = cJSON_CreateObject();
    char *code = strndup(b, (size_t)(stop - b));
    cJSON_AddStringToObject(args, "code", code ? code : "");
    free(code);
    add_call(o, "python", 6, args, NULL);
    cJSON_Delete(args);
    return stop;
}

static const char *parse_mistral(parsed *o, const char *p, const char *end) {
    p += strlen("[TOOL_CALLS]");
    const char *b = skip_ws(p, end);
    if (b < end && *b == '[') {
        const char *after = NULL;
        cJSON *v = json_at(b, end, &after);
        if (!v && o->partial) {
            return heal_calls(o, b, end);
        }
        bool ok = cJSON_IsArray(v) && add_json_calls(o, v);
        cJSON_Delete(v);
        return ok ? after : NULL;
    }
    /* NAME[CALL_ID]ID[ARGS]{json} (Mistral Small 3.2) or NAME[ARGS]{json} (Devstral) */
    const char *args = find(b, end, "[ARGS]");
    if (!args) {
        return o->partial ? (o->stop = true, end) : NULL;
    }
    const char *cid = find(b, args, "[CALL_ID]");
    const char *name_end = cid ? cid : args;
    char *id = cid ? strndup(cid + 9, (size_t)(args - cid - 9)) : NULL;
    const char *after = NULL;
    cJSON *v = json_at(args + 6, end, &after);
    if (!v && o->partial) {
        heal_args(o, b, (size_t)(name_end - b), args + 6, end, id);
        free(id);
        return end;
    }
    bool ok = cJSON_IsObject(v) && add_call(o, b, (size_t)(name_end - b), v, id);
    cJSON_Delete(v);
    free(id);
    return ok ? after : NULL;
}

static const char *parse_deepseek(parsed *o, const char *p, const char *end) {
    if (starts(p, end, DS_CALLS_BEGIN)) {
        p += strlen(DS_CALLS_BEGIN);
    }
    bool any = false;
    for (;;) {
        p = skip_ws(p, end);
        if (starts(p, end, DS_CALLS_END)) {
            return any ? p + strlen(DS_CALLS_END) : NULL;
        }
        if (!starts(p, end, DS_CALL_BEGIN)) {
            return any ? p : NULL;
        }
        p += strlen(DS_CALL_BEGIN);
        const char *sep = find(p, end, DS_SEP);
        if (!sep) {
            return o->partial ? (o->stop = true, end) : NULL;
        }
        const char *name = p, *name_end = sep, *q = sep + strlen(DS_SEP);
        if (sep - p == 8 && !memcmp(p, "function", 8)) {
            /* R1: function<sep>NAME\n```json\n{json}``` */
            name = q;
            const char *nl = find(q, end, "\n");
            if (!nl) {
                return o->partial ? (o->stop = true, end) : NULL;
            }
            name_end = nl;
            q = skip_ws(nl, end);
            if (starts(q, end, "```json")) {
                q += 7;
            }
        }
        while (name < name_end && is_ws(*name)) {
            name++;
        }
        while (name_end > name && is_ws(name_end[-1])) {
            name_end--;
        }
        const char *after = NULL;
        cJSON *v = json_at(q, end, &after);
        if (!v && o->partial) {
            return heal_args(o, name, (size_t)(name_end - name), q, end, NULL);
        }
        bool ok = cJSON_IsObject(v) && add_call(o, name, (size_t)(name_end - name), v, NULL);
        cJSON_Delete(v);
        if (!ok) {
            return NULL;
        }
        any = true;
        p = skip_ws(after, end);
        if (starts(p, end, "```")) {
            p += 3;
        }
        p = skip_ws(p, end);
        if (starts(p, end, DS_CALL_END)) {
            p += strlen(DS_CALL_END);
        }
    }
}

/* An XML parameter value: a string where the offered tool's schema types the parameter as one,
 * else the JSON value it spells, else the text. */
static cJSON *xml_value(const parsed *o, const char *fn, size_t fn_len, const char *key, const char *v, size_t n) {
    bool is_string = false;
    for (const cJSON *t = o->s->tool_defs ? o->s->tool_defs->child : NULL; t; t = t->next) {
        const cJSON *f = cJSON_GetObjectItemCaseSensitive(t, "function");
        const cJSON *d = f ? f : t;
        const char *name = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(d, "name"));
        if (name && strlen(name) == fn_len && !memcmp(name, fn, fn_len)) {
            const cJSON *props =
                cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(d, "parameters"), "properties");
            const cJSON *type = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(props, key), "type");
            is_string = cJSON_IsString(type) && !strcmp(type->valuestring, "string");
            break;
        }
    }
    char *raw = strndup(v, n);
    if (!raw) {
        return cJSON_CreateString("");
    }
    cJSON *val = NULL;
    if (!is_string) {
        val = oxl_json_parse_strict(raw, raw + n);
    }
    if (!val) {
        val = cJSON_CreateString(raw);
    }
    free(raw);
    return val;
}

/* Qwen3-Coder's XML call: [<tool_call>]<function=NAME><parameter=KEY>\nVALUE\n</parameter>...
 * </function>[</tool_call>] (the first call may come without its <tool_call>). */
static const char *parse_xml_call(parsed *o, const char *p, const char *end) {
    const char *q = p;
    if (starts(q, end, "<tool_call>")) {
        q = skip_ws(q + 11, end);
    }
    if (!starts(q, end, "<function=")) {
        return NULL;
    }
    const char *name = q + 10, *gt = find(name, end, ">");
    if (!gt || gt == name || find(name, gt, "\n") || find(name, gt, "<")) {
        return NULL;
    }
    cJSON *args = cJSON_CreateObject();
    q = gt + 1;
    bool ok = false;
    for (;;) {
        q = skip_ws(q, end);
        if (starts(q, end, "</function>")) {
            q += 11;
            ok = true;
            break;
        }
        if (!starts(q, end, "<parameter=")) {
            break;
        }
        const char *k = q + 11, *kg = find(k, end, ">");
        const char *ve = kg ? find(kg + 1, end, "</parameter>") : NULL;
        if (!ve || kg == k) {
            break;
        }
        const char *vb = kg + 1, *vz = ve;
        if (vb < vz && *vb == '\n') {
            vb++;
        }
        if (vz > vb && vz[-1] == '\n') {
            vz--;
        }
        char *key = strndup(k, (size_t)(kg - k));
        if (key) {
            cJSON_AddItemToObject(args, key, xml_value(o, name, (size_t)(gt - name), key, vb, (size_t)(vz - vb)));
        }
        free(key);
        q = ve + 12;
    }
    ok = ok && add_call(o, name, (size_t)(gt - name), args, NULL);
    cJSON_Delete(args);
    if (!ok) {
        return NULL;
    }
    const char *r = skip_ws(q, end);
    return starts(r, end, "</tool_call>") ? r + 12 : q;
}

/* Reads the calls that start at p; returns the end of the call section, or NULL when the text there
 * is not a well-formed call. */
static const char *parse_calls(parsed *o, const char *p, const char *end) {
    const oxl_chat_syntax *s = o->s;
    const char *q = p, *last = NULL;
    switch (s->format) {
    case OXL_CHAT_FMT_MISTRAL_NEMO:
        while (starts(q, end, "[TOOL_CALLS]") && (q = parse_mistral(o, q, end))) {
            last = q;
            q = skip_ws(q, end);
        }
        return last;
    case OXL_CHAT_FMT_DEEPSEEK_R1:
    case OXL_CHAT_FMT_DEEPSEEK_V3_1: return parse_deepseek(o, q, end);
    case OXL_CHAT_FMT_FIREFUNCTION_V2: {
        q = find(q, end, "functools[") + strlen("functools");
        const char *after = NULL;
        cJSON *v = json_at(q, end, &after);
        if (!v && o->partial) {
            return heal_calls(o, q, end);
        }
        bool ok = cJSON_IsArray(v) && add_json_calls(o, v);
        cJSON_Delete(v);
        return ok ? after : NULL;
    }
    case OXL_CHAT_FMT_COMMAND_R7B: {
        const char *after = NULL;
        cJSON *v = json_at(q + strlen("<|START_ACTION|>"), end, &after);
        if (!v && o->partial) {
            return heal_calls(o, q + strlen("<|START_ACTION|>"), end);
        }
        bool ok = cJSON_IsArray(v) && add_json_calls(o, v);
        cJSON_Delete(v);
        if (!ok) {
            return NULL;
        }
        after = skip_ws(after, end);
        return starts(after, end, "<|END_ACTION|>") ? after + strlen("<|END_ACTION|>") : after;
    }
    case OXL_CHAT_FMT_COMMAND_R_PLUS: {
        /* Action:\n```json\n[{"tool_name", "parameters"}]\n``` */
        q = skip_ws(q + strlen("Action:"), end);
        if (starts(q, end, "```json")) {
            q += 7;
        }
        const char *after = NULL;
        cJSON *v = json_at(q, end, &after);
        if (!v && o->partial) {
            return heal_calls(o, q, end);
        }
        bool ok = cJSON_IsArray(v) && add_json_calls(o, v);
        cJSON_Delete(v);
        if (!ok) {
            return NULL;
        }
        after = skip_ws(after, end);
        return starts(after, end, "```") ? after + 3 : after;
    }
    case OXL_CHAT_FMT_GRANITE:
        if (starts(q, end, "<|tool_call|>")) {
            const char *after = NULL;
            cJSON *v = json_at(q + strlen("<|tool_call|>"), end, &after);
            if (!v && o->partial) {
                return heal_calls(o, q + strlen("<|tool_call|>"), end);
            }
            bool ok = v && add_json_calls(o, v);
            cJSON_Delete(v);
            return ok ? after : NULL;
        }
        break;
    default: break;
    }
    /* formats whose calls follow one another: <tool_call>, <function=, <|python_tag|>, bare JSON */
    for (;;) {
        q = skip_ws(q, end);
        const char *r = NULL;
        if (s->format == OXL_CHAT_FMT_QWEN3_CODER && (starts(q, end, "<tool_call>") || starts(q, end, "<function="))) {
            r = parse_xml_call(o, q, end);
        } else if (starts(q, end, "<tool_call>")) {
            r = parse_tagged(o, q, end, "<tool_call>", "</tool_call>");
        } else if (starts(q, end, "<function=")) {
            r = parse_function_tag(o, q, end);
        } else if (starts(q, end, "<|python_tag|>")) {
            r = parse_python_tag(o, q, end);
        } else if (q < end && *q == '{' && call_fmt_of(s->format).json_reply) {
            const char *after = NULL;
            cJSON *v = json_at(q, end, &after);
            if (!v && o->partial) {
                /* llama.cpp's generic format dumps tool_call(s).arguments; Llama 3.x's parameters */
                static const char *const keys[][2] = {
                    {"tool_calls", "arguments"}, {"tool_call", "arguments"}, {"arguments", NULL}, {"parameters", NULL}};
                static const oxl_json_paths paths = {keys, 4, NULL, 0};
                o->stop = true;
                v = heal_value(o, q, end, &paths);
                after = end;
            }
            bool ok = false;
            if (s->format == OXL_CHAT_FMT_GENERIC && cJSON_IsObject(v)) {
                /* llama.cpp's generic shape: {"tool_calls": [...]} or {"tool_call": {...}} */
                const cJSON *tcs = cJSON_GetObjectItemCaseSensitive(v, "tool_calls");
                const cJSON *tc = cJSON_GetObjectItemCaseSensitive(v, "tool_call");
                ok = tcs ? add_json_calls(o, tcs) : tc ? add_json_calls(o, tc) : add_json_call(o, v);
            } else if (cJSON_IsObject(v)) {
                ok = add_json_call(o, v);
            }
            cJSON_Delete(v);
            r = ok ? after : NULL;
            if (r) {
                r = skip_ws(r, end);
                if (r < end && *r == ';') {
                    r++;
                }
            }
        }
        if (!r) {
            return last;
        }
        if (o->stop) {
            return end;
        }
        last = q = r;
    }
}

/* --- the message --------------------------------------------------------------------------- */

/* Functionary v3.2: >>>RECIPIENT\nVALUE segments ("all" is content; the prompt ends with ">>>"). */
static void parse_functionary_v3_2(parsed *o, const char *p, const char *end, bool partial) {
    bool first = true;
    while (p < end) {
        if (starts(p, end, ">>>")) {
            p += 3;
        } else if (!first) {
            break;
        }
        first = false;
        const char *nl = find(p, end, "\n");
        if (!nl) {
            return; /* the recipient is not complete */
        }
        const char *v = nl + 1, *next = find(v, end, "\n>>>");
        const char *vend = next ? next : end;
        if (partial && !next) {
            static const char *const m[] = {"\n>>>", NULL};
            vend -= partial_tail(v, end, m);
        }
        if (nl - p == 3 && !memcmp(p, "all", 3)) {
            put(&o->content, v, (size_t)(vend - v));
        } else if (!partial && o->s->tools) {
            const char *after = NULL;
            cJSON *a = json_at(v, vend, &after);
            bool ok = cJSON_IsObject(a) && add_call(o, p, (size_t)(nl - p), a, NULL);
            cJSON_Delete(a);
            if (!ok && nl - p == 6 && !memcmp(p, "python", 6)) {
                cJSON *args = cJSON_CreateObject();
                char *code = strndup(v, (size_t)(vend - v));
                cJSON_AddStringToObject(args, "code", code ? code : "");
                free(code);
                ok = add_call(o, "python", 6, args, NULL);
                cJSON_Delete(args);
            }
            if (!ok) {
                put(&o->content, v, (size_t)(vend - v));
            }
        } else if (!partial) {
            put(&o->content, v, (size_t)(vend - v));
        } else {
            return;
        }
        if (!next) {
            return;
        }
        p = next + 1;
    }
}

static const char *const harmony_marks[] = {"<|start|>", "<|channel|>", "<|message|>",   "<|end|>",
                                            "<|call|>",  "<|return|>",  "<|constrain|>", NULL};

/* gpt-oss harmony: [<|start|>assistant][ to=R]<|channel|>C[ to=R][ <|constrain|>T]<|message|>BODY
 * ending with <|end|>, <|call|>, <|return|> or the next <|start|>. */
static void parse_harmony(parsed *o, const char *p, const char *end, bool partial) {
    if (partial) {
        end -= partial_tail(p, end, harmony_marks);
    }
    while (p < end) {
        if (starts(p, end, "<|start|>")) {
            p += 9;
        }
        const char *msg = find(p, end, "<|message|>");
        if (!msg) {
            if (!partial && p < end && !find(p, end, "<|channel|>")) {
                put(&o->content, p, (size_t)(end - p)); /* plain text */
            }
            return;
        }
        /* the header: the last channel, a recipient anywhere in it */
        const char *ch = NULL, *recip = NULL;
        size_t ch_len = 0, recip_len = 0;
        for (const char *h = p; h < msg;) {
            if (starts(h, msg, "<|channel|>")) {
                ch = h += 11;
                while (h < msg && *h != ' ' && *h != '<') {
                    h++;
                }
                ch_len = (size_t)(h - ch);
            } else if (starts(h, msg, "to=")) {
                recip = h += 3;
                while (h < msg && *h != ' ' && *h != '<') {
                    h++;
                }
                recip_len = (size_t)(h - recip);
            } else {
                h++;
            }
        }
        const char *body = msg + 11;
        const char *bend = end;
        static const char *const stops[] = {"<|end|>", "<|call|>", "<|return|>", "<|start|>", NULL};
        const char *which = NULL;
        const char *st = first_marker(body, end, stops, &which);
        bool closed = st != NULL;
        if (st) {
            bend = st;
        }
        bool to_assistant = recip && recip_len == 9 && !memcmp(recip, "assistant", 9);
        if (recip && !to_assistant) {
            if (recip_len > 10 && !memcmp(recip, "functions.", 10)) {
                if (partial && !closed && o->s->tools) {
                    heal_args(o, recip + 10, recip_len - 10, body, bend, NULL);
                    return;
                }
                if (o->s->tools) {
                    cJSON *a = json_at(body, bend, NULL);
                    if (!a) {
                        char *raw = strndup(body, (size_t)(bend - body));
                        a = cJSON_CreateString(raw ? raw : "");
                        free(raw);
                    }
                    add_call(o, recip + 10, recip_len - 10, a, NULL);
                    cJSON_Delete(a);
                }
            } /* other recipients (builtin tools the request did not offer) are dropped */
        } else if (ch && ch_len == 8 && !memcmp(ch, "analysis", 8)) {
            if (o->s->reasoning) {
                put(&o->reasoning, body, (size_t)(bend - body));
            } else {
                put(&o->content, p, (size_t)(bend - p));
                if (closed) {
                    puts_(&o->content, "<|end|>");
                }
            }
        } else {
            put(&o->content, body, (size_t)(bend - body));
        }
        if (!st) {
            return;
        }
        p = st;
        if (!starts(p, end, "<|start|>")) {
            p += strlen(which);
        }
    }
}

/* Content that a format wraps: Command R7B's <|START_RESPONSE|> / <|START_TEXT|>, Granite's
 * <response>. */
static void put_content(parsed *o, const char *p, const char *end) {
    static const char *const wraps[][2] = {{"<|START_RESPONSE|>", "<|END_RESPONSE|>"},
                                           {"<|START_TEXT|>", "<|END_TEXT|>"},
                                           {"<response>", "</response>"},
                                           {"<|CHATBOT_TOKEN|>", "<|END_OF_TURN_TOKEN|>"}};
    const oxl_chat_fmt f = o->s->format;
    int from = f == OXL_CHAT_FMT_COMMAND_R7B      ? 0
               : f == OXL_CHAT_FMT_GRANITE        ? 2
               : f == OXL_CHAT_FMT_COMMAND_R_PLUS ? 3
                                                  : 4;
    int to = f == OXL_CHAT_FMT_COMMAND_R7B ? 2 : f == OXL_CHAT_FMT_GRANITE ? 3 : 4;
    for (int w = from; w < to; w++) {
        const char *b = skip_ws(p, end);
        if (o->partial) {
            const char *const m[] = {wraps[w][0], wraps[w][1], NULL};
            end -= partial_tail(p, end, m);
            if (b < end && (size_t)(end - b) < strlen(wraps[w][0]) && !memcmp(b, wraps[w][0], (size_t)(end - b))) {
                return; /* maybe an opener */
            }
        }
        if (starts(b, end, wraps[w][0])) {
            p = b + strlen(wraps[w][0]);
            const char *e = find(p, end, wraps[w][1]);
            if (e) {
                put(&o->content, p, (size_t)(e - p));
                p = e + strlen(wraps[w][1]);
                if (skip_ws(p, end) < end) {
                    put(&o->content, p, (size_t)(end - p));
                }
                return;
            }
            if (o->partial) {
                p = b + strlen(wraps[w][0]);
            }
            break;
        }
    }
    put(&o->content, p, (size_t)(end - p));
}

static void rtrim(sbuf *b) {
    while (b->n > 0 && is_ws(b->p[b->n - 1])) {
        b->p[--b->n] = 0;
    }
}

static void parse_body(parsed *o, const char *p, const char *end, bool partial) {
    const oxl_chat_syntax *s = o->s;
    if (s->format == OXL_CHAT_FMT_FUNCTIONARY_V3_2) {
        parse_functionary_v3_2(o, p, end, partial);
        return;
    }
    if (!s->tools) {
        put_content(o, p, end);
        return;
    }
    const char *c = calls_start(s, p, end);
    if (partial) {
        /* content stops where calls may begin; the calls so far follow, the last one maybe cut short
         * (its arguments as far as the reply fixes them); text after calls waits for the end */
        const char *stop = c ? c : end - partial_tail(p, end, call_fmt_of(s->format).starts);
        put_content(o, p, stop);
        rtrim(&o->content); /* a call that follows trims it */
        if (c) {
            parse_calls(o, c, end);
        }
        return;
    }
    while (c) {
        int before = cJSON_GetArraySize(o->calls);
        const char *r = parse_calls(o, c, end);
        if (!r || cJSON_GetArraySize(o->calls) == before) {
            /* not a call after all: text up to the next candidate is content */
            const char *which = NULL;
            const char *n = first_marker(c + 1, end, call_fmt_of(s->format).starts, &which);
            put_content(o, p, n ? n : end);
            p = n ? n : end;
            c = n;
            continue;
        }
        put_content(o, p, c);
        p = r;
        c = calls_start(s, p, end);
        if (c && call_fmt_of(s->format).json_reply && *c == '{' && skip_ws(p, end) != c) {
            c = NULL; /* a JSON object inside later text is not a call */
        }
    }
    if (skip_ws(p, end) < end) {
        put_content(o, p, end);
    }
    if (cJSON_GetArraySize(o->calls) > 0) {
        rtrim(&o->content);
    }
}

cJSON *oxl_chat_parse_msg(const oxl_chat_syntax *s, const char *text, size_t len, bool partial) {
    parsed o = {.s = s, .calls = cJSON_CreateArray(), .partial = partial};
    if (!o.calls) {
        return NULL;
    }
    const char *p = text ? text : "", *end = p + (text ? len : 0);
    /* llama.cpp heals with a number the reply does not contain (common_chat_msg_parser) */
    for (unsigned k = 0;; k++) {
        snprintf(o.marker, sizeof o.marker, "%u", 1804289383u + k * 7919u);
        if (!find(p, end, o.marker)) {
            break;
        }
    }
    if (s->format == OXL_CHAT_FMT_GPT_OSS) {
        parse_harmony(&o, p, end, partial);
    } else if (s->think_tags) {
        const char *open = think_open_tag(s), *close = think_close_tag(s);
        const char *b = skip_ws(p, end);
        const char *r = NULL; /* the thought starts here */
        if (s->think_open) {
            r = p;
        } else if (starts(b, end, open)) {
            r = b + strlen(open);
        } else if (partial && b < end && (size_t)(end - b) < strlen(open) && !memcmp(b, open, (size_t)(end - b))) {
            goto done; /* maybe an opener */
        }
        const char *cl = find(r ? r : p, end, close);
        if (r) {
            /* a call also ends a thought that the model did not close */
            const char *call = s->tools && !cl ? calls_start(s, r, end) : NULL;
            if (call && call_fmt_of(s->format).json_reply && *call == '{') {
                call = NULL;
            }
            const char *rend = cl ? cl : call ? call : end;
            if (partial && !cl && !call) {
                static const char *m[2];
                m[0] = close;
                rend = end - partial_tail(r, end, m);
            }
            const char *rest = cl ? cl + strlen(close) : rend;
            if (s->reasoning) {
                const char *rb = skip_ws(r, rend);
                put(&o.reasoning, rb, (size_t)(rend - rb));
                if (partial || cl || call) {
                    rtrim(&o.reasoning);
                }
                p = skip_ws(rest, end);
            } else {
                if (s->think_open) {
                    puts_(&o.content, s->think_open);
                }
                put(&o.content, p, (size_t)(rest - p));
                p = rest;
            }
            if (!cl && !call) {
                goto done;
            }
        }
        parse_body(&o, p, end, partial);
    } else {
        parse_body(&o, p, end, partial);
    }
done:;
    cJSON *msg = cJSON_CreateObject();
    bool oom = o.content.oom || o.reasoning.oom || !msg;
    if (!oom) {
        cJSON_AddStringToObject(msg, "role", "assistant");
        int n_calls = cJSON_GetArraySize(o.calls);
        if (n_calls > 0 && o.content.n == 0) {
            cJSON_AddNullToObject(msg, "content");
        } else {
            cJSON_AddStringToObject(msg, "content", o.content.p ? o.content.p : "");
        }
        if (o.reasoning.n > 0) {
            cJSON_AddStringToObject(msg, "reasoning_content", o.reasoning.p);
        }
        if (n_calls > 0) {
            cJSON_AddItemToObject(msg, "tool_calls", o.calls);
            o.calls = NULL;
        }
    }
    cJSON_Delete(o.calls);
    free(o.content.p);
    free(o.reasoning.p);
    if (oom) {
        cJSON_Delete(msg);
        return NULL;
    }
    return msg;
}

/* --- the public function ------------------------------------------------------------------ */

static int opt_bool(const cJSON *o, const char *key, bool def, bool *out, oxl_error *err) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    if (!v || cJSON_IsNull(v)) {
        *out = def;
        return 0;
    }
    if (!cJSON_IsBool(v)) {
        return oxl_err_set(err, "chat parse: options: '%s' must be true or false%s", key,
                           strcmp(key, "tools") ? "" : " or a list of tool definitions");
    }
    *out = cJSON_IsTrue(v);
    return 0;
}

int oxl_chat_reasoning_format(const char *name) {
    if (!name || !strcmp(name, "deepseek") || !strcmp(name, "auto")) {
        return 1;
    }
    return !strcmp(name, "none") ? 0 : -1;
}

int oxl_chat_parse(const oxl_model *model, const char *tmpl, const char *text, const char *opts_json,
                   char **out_message_json, oxl_error *err) {
    if (out_message_json) {
        *out_message_json = NULL;
    }
    if (!text || !out_message_json) {
        return oxl_err_set(err, "chat parse: text and out_message_json are required");
    }
    cJSON *opts = opts_json ? cJSON_Parse(opts_json) : NULL;
    if (opts_json && !cJSON_IsObject(opts)) {
        cJSON_Delete(opts);
        return oxl_err_set(err, "chat parse: options: not a JSON object");
    }
    int rc = -1;
    bool tools = true, ids = true, partial = false, forced = false;
    const cJSON *rf = cJSON_GetObjectItemCaseSensitive(opts, "reasoning_format");
    const cJSON *prompt = cJSON_GetObjectItemCaseSensitive(opts, "prompt");
    const cJSON *fmt = cJSON_GetObjectItemCaseSensitive(opts, "format");
    int reasoning = rf && !cJSON_IsNull(rf) ? oxl_chat_reasoning_format(cJSON_GetStringValue(rf)) : 1;
    if (reasoning < 0 || (rf && !cJSON_IsNull(rf) && !cJSON_IsString(rf))) {
        oxl_err_set(err, "chat parse: options: 'reasoning_format' must be \"none\", \"deepseek\" or \"auto\"");
    } else if (prompt && !cJSON_IsNull(prompt) && !cJSON_IsString(prompt)) {
        oxl_err_set(err, "chat parse: options: 'prompt' must be a string");
    } else if (fmt && !cJSON_IsString(fmt)) {
        oxl_err_set(err, "chat parse: options: 'format' must be a string");
    } else if ((cJSON_IsArray(cJSON_GetObjectItemCaseSensitive(opts, "tools")) ||
                opt_bool(opts, "tools", true, &tools, err) == 0) &&
               opt_bool(opts, "generate_ids", true, &ids, err) == 0 &&
               opt_bool(opts, "partial", false, &partial, err) == 0 &&
               opt_bool(opts, "thinking_forced_open", false, &forced, err) == 0) {
        const char *t = tmpl ? tmpl : model ? oxl_model_chat_template(model) : NULL;
        oxl_chat_syntax s = oxl_chat_syntax_for(t, cJSON_GetStringValue(prompt), reasoning == 1, tools);
        s.generate_ids = ids;
        s.tool_defs = cJSON_IsArray(cJSON_GetObjectItemCaseSensitive(opts, "tools"))
                          ? cJSON_GetObjectItemCaseSensitive(opts, "tools")
                          : NULL;
        if (fmt) {
            int f = 0;
            while (f < OXL_CHAT_FMT_COUNT && strcmp(fmt_names[f], fmt->valuestring)) {
                f++;
            }
            if (f == OXL_CHAT_FMT_COUNT) {
                oxl_err_set(err, "chat parse: options: unknown format '%.60s'", fmt->valuestring);
                cJSON_Delete(opts);
                return -1;
            }
            s.format = (oxl_chat_fmt)f;
        }
        if (forced && !s.think_open) {
            s.think_tags = true;
            s.think_open = think_open_tag(&s);
        }
        cJSON *msg = oxl_chat_parse_msg(&s, text, strlen(text), partial);
        char *js = msg ? cJSON_PrintUnformatted(msg) : NULL;
        cJSON_Delete(msg);
        if (!js) {
            oxl_err_set(err, "chat parse: out of memory");
        } else {
            *out_message_json = js;
            rc = 0;
        }
    }
    cJSON_Delete(opts);
    return rc;
}

const char *oxl_chat_format(const oxl_model *model, const char *tmpl) {
    return fmt_names[oxl_chat_format_detect(tmpl ? tmpl : model ? oxl_model_chat_template(model) : NULL)];
}
