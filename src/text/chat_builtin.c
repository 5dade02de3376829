/* llama.cpp's named built-in chat formats (src/llama-chat.cpp, llm_chat_apply_template and
 * llm_chat_detect_template) as a table. Most formats are "a prefix and a suffix per role"; the few
 * that carry state across messages (turns of llama2 and mistral v1/v3, a system prompt merged into
 * the next user turn, ...) name a `style` that the renderer handles. No JSON and no template
 * engine: the subset build (OXL_SUBSET) has this file too, and src/chat/chat.c renders built-in
 * names through oxl_chat_builtin_render. */
#include "chat_builtin.h"

#include "oxillama.h"

#include <ctype.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* --- built-in formats -------------------------------------------------------------------------- */
typedef enum {
    STYLE_ROLES,     /* per-role prefix/suffix only */
    STYLE_LLAMA2,    /* [INST] turns; flags: SYS, BOS inside history, strip */
    STYLE_MISTRAL,   /* v1/v3/v3-tekken [INST] turns */
    STYLE_MERGE_SYS, /* system text held back and put in front of the next user turn */
    STYLE_RWKV,      /* "Assistant:" right after the last message when it is the user's */
} chat_style;

enum { TRIM_SYS = 1, TRIM_USER = 2, TRIM_ASSISTANT = 4, TRIM_OTHER = 8, TRIM_ALL = 15 };
enum { L2_SYS = 1, L2_BOS = 2, L2_STRIP = 4 };

typedef struct chat_role {
    const char *role;   /* "system", "user", "assistant", "tool", ... or "*" for any other role */
    const char *prefix; /* "%r" stands for the role name ("%R" upper-cased, "%C" capitalized) */
    const char *suffix;
} chat_role;

typedef struct chat_format {
    const char *name;
    chat_style style;
    const char *begin;        /* before everything */
    const char *begin_no_sys; /* before everything when the first message is not a system one */
    const char *first_sys;    /* when set: a leading system message renders as first_sys-prefix + content + this */
    const char *first_sys_pre;
    const char *first_prefix; /* when set: the prefix pattern of the very first message */
    chat_role roles[6];
    unsigned trim;      /* TRIM_* of contents, by role */
    const char *gen;    /* appended when add_generation_prompt */
    const char *no_gen; /* appended when not */
    unsigned flags;     /* STYLE_LLAMA2: L2_*; STYLE_MISTRAL: 1 v1, 3 v3, 4 v3-tekken;
                         * STYLE_MERGE_SYS: 1 = only a user turn takes the held system text */
} chat_format;

#define ROLE(r, p, s)                                                                                                  \
    { r, p, s }

static const chat_format formats[] = {
    {.name = "chatml", .roles = {ROLE("*", "<|im_start|>%r\n", "<|im_end|>\n")}, .gen = "<|im_start|>assistant\n"},
    {.name = "llama2", .style = STYLE_LLAMA2, .flags = 0},
    {.name = "llama2-sys", .style = STYLE_LLAMA2, .flags = L2_SYS},
    {.name = "llama2-sys-bos", .style = STYLE_LLAMA2, .flags = L2_SYS | L2_BOS},
    {.name = "llama2-sys-strip", .style = STYLE_LLAMA2, .flags = L2_SYS | L2_STRIP},
    {.name = "mistral-v1", .style = STYLE_MISTRAL, .flags = 1},
    {.name = "mistral-v3", .style = STYLE_MISTRAL, .flags = 3},
    {.name = "mistral-v3-tekken", .style = STYLE_MISTRAL, .flags = 4},
    {.name = "mistral-v7",
     .roles = {ROLE("system", "[SYSTEM_PROMPT] ", "[/SYSTEM_PROMPT]"), ROLE("user", "[INST] ", "[/INST]"),
               ROLE("*", " ", "</s>")}},
    {.name = "mistral-v7-tekken",
     .roles = {ROLE("system", "[SYSTEM_PROMPT]", "[/SYSTEM_PROMPT]"), ROLE("user", "[INST]", "[/INST]"),
               ROLE("*", "", "</s>")}},
    {.name = "phi3", .roles = {ROLE("*", "<|%r|>\n", "<|end|>\n")}, .gen = "<|assistant|>\n"},
    {.name = "phi4",
     .roles = {ROLE("*", "<|im_start|>%r<|im_sep|>", "<|im_end|>")},
     .gen = "<|im_start|>assistant<|im_sep|>"},
    {.name = "falcon3", .roles = {ROLE("*", "<|%r|>\n", "\n")}, .gen = "<|assistant|>\n"},
    {.name = "zephyr", .roles = {ROLE("*", "<|%r|>\n", "<|endoftext|>\n")}, .gen = "<|assistant|>\n"},
    {.name = "monarch", .first_prefix = "%r\n", .roles = {ROLE("*", "<s>%r\n", "</s>\n")}, .gen = "<s>assistant\n"},
    {.name = "gemma",
     .style = STYLE_MERGE_SYS,
     .trim = TRIM_ALL,
     .roles = {ROLE("assistant", "<start_of_turn>model\n", "<end_of_turn>\n"),
               ROLE("*", "<start_of_turn>%r\n", "<end_of_turn>\n")},
     .gen = "<start_of_turn>model\n"},
    {.name = "orion",
     .style = STYLE_MERGE_SYS,
     .flags = 1,
     .roles = {ROLE("user", "Human: ", "\n\nAssistant: </s>"), ROLE("*", "", "</s>")}},
    {.name = "openchat",
     .roles = {ROLE("system", "", "<|end_of_turn|>"), ROLE("*", "GPT4 Correct %C: ", "<|end_of_turn|>")},
     .gen = "GPT4 Correct Assistant:"},
    {.name = "vicuna",
     .roles = {ROLE("system", "", "\n\n"), ROLE("user", "USER: ", "\n"), ROLE("assistant", "ASSISTANT: ", "</s>\n")},
     .gen = "ASSISTANT:"},
    {.name = "vicuna-orca",
     .roles = {ROLE("system", "SYSTEM: ", "\n"), ROLE("user", "USER: ", "\n"),
               ROLE("assistant", "ASSISTANT: ", "</s>\n")},
     .gen = "ASSISTANT:"},
    {.name = "deepseek",
     .roles = {ROLE("system", "", ""), ROLE("user", "### Instruction:\n", "\n"),
               ROLE("assistant", "### Response:\n", "\n<|EOT|>\n")},
     .gen = "### Response:\n"},
    {.name = "deepseek2",
     .roles = {ROLE("system", "", "\n\n"), ROLE("user", "User: ", "\n\n"),
               ROLE("assistant", "Assistant: ", "<｜end▁of▁sentence｜>")},
     .gen = "Assistant:"},
    {.name = "deepseek3",
     .roles = {ROLE("system", "", "\n\n"), ROLE("user", "<｜User｜>", ""),
               ROLE("assistant", "<｜Assistant｜>", "<｜end▁of▁sentence｜>")},
     .gen = "<｜Assistant｜>"},
    {.name = "deepseek-ocr", .roles = {ROLE("*", "", "")}},
    {.name = "command-r",
     .trim = TRIM_ALL,
     .roles = {ROLE("system", "<|START_OF_TURN_TOKEN|><|SYSTEM_TOKEN|>", "<|END_OF_TURN_TOKEN|>"),
               ROLE("user", "<|START_OF_TURN_TOKEN|><|USER_TOKEN|>", "<|END_OF_TURN_TOKEN|>"),
               ROLE("assistant", "<|START_OF_TURN_TOKEN|><|CHATBOT_TOKEN|>", "<|END_OF_TURN_TOKEN|>")},
     .gen = "<|START_OF_TURN_TOKEN|><|CHATBOT_TOKEN|>"},
    {.name = "llama3",
     .trim = TRIM_ALL,
     .roles = {ROLE("*", "<|start_header_id|>%r<|end_header_id|>\n\n", "<|eot_id|>")},
     .gen = "<|start_header_id|>assistant<|end_header_id|>\n\n"},
    {.name = "chatglm3", .begin = "[gMASK]sop", .roles = {ROLE("*", "<|%r|>\n ", "")}, .gen = "<|assistant|>"},
    {.name = "chatglm4", .begin = "[gMASK]<sop>", .roles = {ROLE("*", "<|%r|>\n", "")}, .gen = "<|assistant|>\n"},
    {.name = "glmedge", .roles = {ROLE("*", "<|%r|>\n", "")}, .gen = "<|assistant|>"},
    {.name = "minicpm", .trim = TRIM_ALL, .roles = {ROLE("user", "<用户>", "<AI>"), ROLE("*", "", "")}},
    {.name = "exaone3",
     .trim = TRIM_ALL,
     .roles = {ROLE("system", "[|system|]", "[|endofturn|]\n"), ROLE("user", "[|user|]", "\n"),
               ROLE("assistant", "[|assistant|]", "[|endofturn|]\n")},
     .gen = "[|assistant|]"},
    {.name = "exaone4",
     .trim = TRIM_ALL,
     .roles = {ROLE("system", "[|system|]", "[|endofturn|]\n"), ROLE("user", "[|user|]", "\n"),
               ROLE("assistant", "[|assistant|]", "[|endofturn|]\n"), ROLE("tool", "[|tool|]", "[|endofturn|]\n")},
     .gen = "[|assistant|]"},
    {.name = "exaone-moe",
     .trim = TRIM_ALL,
     .roles = {ROLE("system", "<|system|>\n", "<|endofturn|>\n"), ROLE("user", "<|user|>\n", "<|endofturn|>\n"),
               ROLE("assistant", "<|assistant|>\n", "<|endofturn|>\n"), ROLE("tool", "<|tool|>\n", "<|endofturn|>\n")},
     .gen = "<|assistant|>\n"},
    {.name = "rwkv-world",
     .style = STYLE_RWKV,
     .trim = TRIM_ALL,
     .roles = {ROLE("system", "System: ", "\n\n"), ROLE("user", "User: ", "\n\n"),
               ROLE("assistant", "Assistant: ", "\n\n")}},
    {.name = "granite",
     .roles = {ROLE("assistant_tool_call", "<|start_of_role|>assistant_tool_call<|end_of_role|><|tool_call|>",
                    "<|end_of_text|>\n"),
               ROLE("*", "<|start_of_role|>%r<|end_of_role|>", "<|end_of_text|>\n")},
     .gen = "<|start_of_role|>assistant<|end_of_role|>"},
    {.name = "granite-4.0",
     .roles = {ROLE("assistant_tool_call", "<|start_of_role|>assistant<|end_of_role|><|tool_call|>",
                    "<|end_of_text|>\n"),
               ROLE("*", "<|start_of_role|>%r<|end_of_role|>", "<|end_of_text|>\n")},
     .gen = "<|start_of_role|>assistant<|end_of_role|>"},
    {.name = "granite-4.1",
     .roles = {ROLE("assistant_tool_call", "<|start_of_role|>assistant<|end_of_role|><|tool_call|>",
                    "<|end_of_text|>\n"),
               ROLE("*", "<|start_of_role|>%r<|end_of_role|>", "<|end_of_text|>\n")},
     .gen = "<|start_of_role|>assistant<|end_of_role|>"},
    {.name = "gigachat",
     .begin = "<s>",
     .first_sys_pre = "",
     .first_sys = "<|message_sep|>",
     .roles = {ROLE("user", "user<|role_sep|>", "<|message_sep|>available functions<|role_sep|>[]<|message_sep|>"),
               ROLE("assistant", "assistant<|role_sep|>", "<|message_sep|>")},
     .gen = "assistant<|role_sep|>"},
    {.name = "megrez",
     .roles = {ROLE("*", "<|role_start|>%r<|role_end|>", "<|turn_end|>")},
     .gen = "<|role_start|>assistant<|role_end|>"},
    {.name = "yandex",
     .roles = {ROLE("user", " Пользователь: ", "\n\n"), ROLE("assistant", " Ассистент: ", "\n\n")},
     .gen = " Ассистент:[SEP]"},
    {.name = "bailing",
     .roles = {ROLE("user", "<role>HUMAN</role>", ""), ROLE("*", "<role>%R</role>", "")},
     .gen = "<role>ASSISTANT</role>"},
    {.name = "bailing-think",
     .roles = {ROLE("user", "<role>HUMAN</role>", ""), ROLE("*", "<role>%R</role>", "")},
     .gen = "<role>ASSISTANT</role><think>"},
    {.name = "bailing2",
     .begin_no_sys = "<role>SYSTEM</role>detailed thinking off<|role_end|>",
     .roles = {ROLE("user", "<role>HUMAN</role>", "<|role_end|>"), ROLE("*", "<role>%R</role>", "<|role_end|>")},
     .gen = "<role>ASSISTANT</role>"},
    {.name = "llama4",
     .trim = TRIM_ALL,
     .roles = {ROLE("*", "<|header_start|>%r<|header_end|>\n\n", "<|eot|>")},
     .gen = "<|header_start|>assistant<|header_end|>\n\n"},
    {.name = "smolvlm",
     .begin = "<|im_start|>",
     .roles = {ROLE("system", "", "\n\n"), ROLE("user", "User: ", "<end_of_utterance>\n"),
               ROLE("*", "Assistant: ", "<end_of_utterance>\n")},
     .gen = "Assistant:"},
    {.name = "dots1",
     .roles = {ROLE("system", "<|system|>", "<|endofsystem|>"), ROLE("user", "<|userprompt|>", "<|endofuserprompt|>"),
               ROLE("*", "<|response|>", "<|endofresponse|>")},
     .gen = "<|response|>"},
    {.name = "hunyuan-moe",
     .roles = {ROLE("system", "<|startoftext|>", "<|extra_4|>"), ROLE("assistant", "", "<|eos|>"),
               ROLE("*", "<|startoftext|>", "<|extra_0|>")}},
    {.name = "gpt-oss",
     .roles = {ROLE("assistant", "<|start|>assistant<|message|>", "<|return|>"),
               ROLE("*", "<|start|>%r<|message|>", "<|end|>")},
     .gen = "<|start|>assistant"},
    {.name = "hunyuan-dense",
     .first_sys_pre = "",
     .first_sys = "<｜hy_place▁holder▁no▁3｜>",
     .roles = {ROLE("assistant", "<｜hy_Assistant｜>", "<｜hy_place▁holder▁no▁2｜>"),
               ROLE("user", "<｜hy_User｜>", "<｜hy_Assistant｜>")}},
    {.name = "hunyuan-vl",
     .begin = "<｜hy_begin▁of▁sentence｜>",
     .first_sys_pre = "",
     .first_sys = "<｜hy_place▁holder▁no▁3｜>",
     .roles = {ROLE("user", "", "<｜hy_User｜>"), ROLE("assistant", "", "<｜hy_Assistant｜>")}},
    {.name = "kimi-k2",
     .roles = {ROLE("system", "<|im_system|>system<|im_middle|>", "<|im_end|>"),
               ROLE("user", "<|im_user|>user<|im_middle|>", "<|im_end|>"),
               ROLE("assistant", "<|im_assistant|>assistant<|im_middle|>", "<|im_end|>"),
               ROLE("tool", "<|im_system|>tool<|im_middle|>", "<|im_end|>"), ROLE("*", "", "<|im_end|>")},
     .gen = "<|im_assistant|>assistant<|im_middle|>"},
    {.name = "seed_oss",
     .trim = TRIM_ASSISTANT,
     .roles = {ROLE("*", "<seed:bos>%r\n", "<seed:eos>")},
     .gen = "<seed:bos>assistant\n"},
    {.name = "grok-2",
     .trim = TRIM_SYS | TRIM_USER,
     .roles = {ROLE("system", "System: ", "<|separator|>\n\n"), ROLE("user", "Human: ", "<|separator|>\n\n"),
               ROLE("assistant", "Assistant: ", "<|separator|>\n\n")},
     .gen = "Assistant:"},
    {.name = "pangu-embedded",
     .begin_no_sys = "[unused9]系统：[unused10]",
     .roles = {ROLE("system", "[unused9]系统：", "[unused10]"), ROLE("user", "[unused9]用户：", "[unused10]"),
               ROLE("assistant", "[unused9]助手：", "[unused10]"), ROLE("tool", "[unused9]工具：", "[unused10]"),
               ROLE("function", "[unused9]方法：", "[unused10]")},
     .gen = "[unused9]助手："},
    {.name = "solar-open", .roles = {ROLE("*", "<|begin|>%r<|content|>", "<|end|>")}, .gen = "<|begin|>assistant"},
};

#define N_FORMATS (sizeof formats / sizeof formats[0])

const char *oxl_chat_builtin_name(size_t i) { return i < N_FORMATS ? formats[i].name : NULL; }

static const chat_format *find_format(const char *name) {
    for (size_t i = 0; name && i < N_FORMATS; i++) {
        if (!strcmp(formats[i].name, name)) {
            return &formats[i];
        }
    }
    return NULL;
}

bool oxl_chat_is_builtin(const char *name) { return find_format(name) != NULL; }

/* --- output buffer --------------------------------------------------------------------------- */
typedef struct sbuf {
    char *s;
    size_t n, cap;
    bool oom;
} sbuf;

static void put(sbuf *b, const char *s, size_t n) {
    if (b->oom) {
        return;
    }
    if (b->n + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap * 2 : 1024;
        while (cap < b->n + n + 1) {
            cap *= 2;
        }
        char *p = realloc(b->s, cap);
        if (!p) {
            b->oom = true;
            return;
        }
        b->s = p;
        b->cap = cap;
    }
    memcpy(b->s + b->n, s, n);
    b->n += n;
    b->s[b->n] = 0;
}

static void puts_(sbuf *b, const char *s) { put(b, s, strlen(s)); }

/* llama.cpp's trim(): ASCII isspace at both ends */
static void put_trimmed(sbuf *b, const char *s, bool trim) {
    size_t st = 0, e = strlen(s);
    while (trim && st < e && isspace((unsigned char)s[st])) {
        st++;
    }
    while (trim && e > st && isspace((unsigned char)s[e - 1])) {
        e--;
    }
    put(b, s + st, e - st);
}

/* prefix/suffix with %r (role), %R (upper-cased), %C (first letter upper-cased) */
static void put_pattern(sbuf *b, const char *pat, const char *role) {
    for (const char *p = pat; *p; p++) {
        if (p[0] == '%' && (p[1] == 'r' || p[1] == 'R' || p[1] == 'C')) {
            for (size_t i = 0; role[i]; i++) {
                char ch = role[i];
                if (p[1] == 'R' || (p[1] == 'C' && i == 0)) {
                    ch = (char)toupper((unsigned char)ch);
                }
                put(b, &ch, 1);
            }
            p++;
        } else {
            put(b, p, 1);
        }
    }
}

static const chat_role *role_fmt(const chat_format *f, const char *role) {
    const chat_role *any = NULL;
    for (size_t i = 0; i < sizeof f->roles / sizeof f->roles[0] && f->roles[i].role; i++) {
        if (!strcmp(f->roles[i].role, role)) {
            return &f->roles[i];
        }
        if (!strcmp(f->roles[i].role, "*")) {
            any = &f->roles[i];
        }
    }
    return any;
}

static bool trims(const chat_format *f, const char *role) {
    unsigned bit = !strcmp(role, "system")      ? TRIM_SYS
                   : !strcmp(role, "user")      ? TRIM_USER
                   : !strcmp(role, "assistant") ? TRIM_ASSISTANT
                                                : TRIM_OTHER;
    return (f->trim & bit) != 0;
}

typedef struct msg {
    const char *role;
    const char *content;
} msg;

/* llama2 and mistral v1/v3: [INST] turns that close on an assistant message */
static void render_turns(const chat_format *f, const msg *m, size_t n, sbuf *b) {
    if (f->style == STYLE_LLAMA2) {
        bool inside = true;
        puts_(b, "[INST] ");
        for (size_t i = 0; i < n; i++) {
            bool strip = f->flags & L2_STRIP;
            if (!inside) {
                inside = true;
                puts_(b, (f->flags & L2_BOS) ? "<s>[INST] " : "[INST] ");
            }
            if (!strcmp(m[i].role, "system")) {
                if (f->flags & L2_SYS) {
                    puts_(b, "<<SYS>>\n");
                    put_trimmed(b, m[i].content, strip);
                    puts_(b, "\n<</SYS>>\n\n");
                } else {
                    put_trimmed(b, m[i].content, strip);
                    puts_(b, "\n");
                }
            } else if (!strcmp(m[i].role, "user")) {
                put_trimmed(b, m[i].content, strip);
                puts_(b, " [/INST]");
            } else {
                put_trimmed(b, m[i].content, strip);
                puts_(b, "</s>");
                inside = false;
            }
        }
        return;
    }
    const char *lead = f->flags == 1 ? " " : "", *trail = f->flags == 4 ? "" : " ";
    bool inside = false;
    for (size_t i = 0; i < n; i++) {
        if (!inside) {
            puts_(b, lead);
            puts_(b, "[INST]");
            puts_(b, trail);
            inside = true;
        }
        if (!strcmp(m[i].role, "system")) {
            puts_(b, m[i].content);
            puts_(b, "\n\n");
        } else if (!strcmp(m[i].role, "user")) {
            puts_(b, m[i].content);
            puts_(b, lead);
            puts_(b, "[/INST]");
        } else {
            puts_(b, trail);
            put_trimmed(b, m[i].content, f->flags == 3);
            puts_(b, "</s>");
            inside = false;
        }
    }
}

static void render_builtin(const chat_format *f, const msg *m, size_t n, bool add_gen, sbuf *b) {
    if (f->style == STYLE_LLAMA2 || f->style == STYLE_MISTRAL) {
        render_turns(f, m, n, b);
        return;
    }
    bool has_sys = n > 0 && !strcmp(m[0].role, "system");
    if (f->begin) {
        puts_(b, f->begin);
    }
    if (f->begin_no_sys && !has_sys) {
        puts_(b, f->begin_no_sys);
    }
    sbuf held = {0}; /* STYLE_MERGE_SYS: system text waiting for the next user turn */
    for (size_t i = 0; i < n; i++) {
        const char *role = m[i].role;
        bool trim = trims(f, role);
        if (i == 0 && has_sys && f->first_sys) {
            puts_(b, f->first_sys_pre);
            puts_(b, m[i].content);
            puts_(b, f->first_sys);
            continue;
        }
        if (f->style == STYLE_MERGE_SYS && !strcmp(role, "system")) {
            put_trimmed(&held, m[i].content, trim);
            continue;
        }
        const chat_role *rf = role_fmt(f, role);
        if (!rf) {
            continue;
        }
        put_pattern(b, i == 0 && f->first_prefix ? f->first_prefix : rf->prefix, role);
        bool takes_sys = f->flags == 1 ? !strcmp(role, "user") : strcmp(role, "assistant") != 0;
        if (f->style == STYLE_MERGE_SYS && held.n && takes_sys) {
            put(b, held.s, held.n);
            puts_(b, "\n\n");
            held.n = 0;
        }
        put_trimmed(b, m[i].content, trim);
        put_pattern(b, rf->suffix, role);
        if (f->style == STYLE_RWKV && i + 1 == n && !strcmp(role, "user")) {
            puts_(b, "Assistant:");
        }
    }
    free(held.s);
    b->oom |= held.oom;
    if (add_gen && f->gen) {
        puts_(b, f->gen);
    }
}

/* --- detection (llm_chat_detect_template) ---------------------------------------------------- */
typedef struct detect_rule {
    const char *all[3]; /* every one must occur */
    const char *format;
} detect_rule;

/* In llama.cpp's order; the mistral/llama2 family is decided separately (see oxl_chat_detect). */
static const detect_rule rules[] = {
    {{"<|im_start|>", "<|im_sep|>"}, "phi4"},
    {{"<|im_start|>", "<end_of_utterance>"}, "smolvlm"},
    {{"<|im_start|>"}, "chatml"},
    {{"<|assistant|>", "<|end|>"}, "phi3"},
    {{"[gMASK]<sop>"}, "chatglm4"},
    {{"<|assistant|>", "<|user|>", "<|tool_declare|>"}, "exaone-moe"},
    {{"<|assistant|>", "<|user|>", "</s>"}, "falcon3"},
    {{"<|assistant|>", "<|user|>"}, "glmedge"},
    {{"<|{{ item['role'] }}|>", "<|begin_of_image|>"}, "glmedge"},
    {{"<|user|>", "<|endoftext|>"}, "zephyr"},
    {{"bos_token + message['role']"}, "monarch"},
    {{"<start_of_turn>"}, "gemma"},
    {{"'\\n\\nAssistant: ' + eos_token"}, "orion"},
    {{"GPT4 Correct "}, "openchat"},
    {{"USER: ", "ASSISTANT: ", "SYSTEM: "}, "vicuna-orca"},
    {{"USER: ", "ASSISTANT: "}, "vicuna"},
    {{"### Instruction:", "<|EOT|>"}, "deepseek"},
    {{"<|START_OF_TURN_TOKEN|>", "<|USER_TOKEN|>"}, "command-r"},
    {{"<|start_header_id|>", "<|end_header_id|>"}, "llama3"},
    {{"[gMASK]sop"}, "chatglm3"},
    {{"<用户>"}, "minicpm"},
    {{"'Assistant: ' + message['content'] + eos_token"}, "deepseek2"},
    {{"<｜Assistant｜>", "<｜User｜>", "<｜end▁of▁sentence｜>"}, "deepseek3"},
    {{"[|system|]", "[|assistant|]", "[|tool|]"}, "exaone4-check"},
    {{"[|system|]", "[|assistant|]", "[|endofturn|]"}, "exaone3"},
    {{"rwkv-world"}, "rwkv-world"},
    {{"{{- 'User: ' + message['content']|trim + '\\n\\n' -}}"}, "rwkv-world"},
    {{"<|start_of_role|>", "<tool_call>", "g4_default_system_message"}, "granite-4.0"},
    {{"<|start_of_role|>", "<tools>", "g4_default_system_message"}, "granite-4.0"},
    {{"<|start_of_role|>", "<tool_call>"}, "granite-4.1"},
    {{"<|start_of_role|>", "<tools>"}, "granite-4.1"},
    {{"<|start_of_role|>"}, "granite"},
    {{"message['role'] + additional_special_tokens[0] + message['content'] + additional_special_tokens[1]"},
     "gigachat"},
    {{"<|role_start|>"}, "megrez"},
    {{" Ассистент:"}, "yandex"},
    {{"<role>ASSISTANT</role>", "'HUMAN'"}, "bailing"},
    {{"<role>ASSISTANT</role>", "\"HUMAN\"", "<think>"}, "bailing-think"},
    {{"<role>ASSISTANT</role>", "<role>HUMAN</role>", "<|role_end|>"}, "bailing2"},
    {{"<|header_start|>", "<|header_end|>"}, "llama4"},
    {{"<|endofuserprompt|>"}, "dots1"},
    {{"<|extra_0|>", "<|extra_4|>"}, "hunyuan-moe"},
    {{"<|start|>", "<|channel|>"}, "gpt-oss"},
    {{"<｜hy_Assistant｜>", "<｜hy_begin▁of▁sentence｜>"}, "hunyuan-vl"},
    {{"<｜hy_Assistant｜>", "<｜hy_place▁holder▁no▁3｜>"}, "hunyuan-dense"},
    {{"<|im_assistant|>assistant<|im_middle|>"}, "kimi-k2"},
    {{"<seed:bos>"}, "seed_oss"},
    {{"'Assistant: '  + message['content'] + '<|separator|>"}, "grok-2"},
    {{"[unused9]系统：[unused10]"}, "pangu-embedded"},
    {{"<|begin|>", "<|end|>", "<|content|>"}, "solar-open"},
};

static bool has(const char *s, const char *needle) { return strstr(s, needle) != NULL; }

const char *oxl_chat_detect(const char *t) {
    if (!t) {
        return NULL;
    }
    const chat_format *named = find_format(t);
    if (named) {
        return named->name;
    }
    /* the mistral and llama2 family come second in llama.cpp, right after the <|im_start|> ones */
    bool im_start = has(t, "<|im_start|>");
    if (!im_start && (!strncmp(t, "mistral", 7) || has(t, "[INST]"))) {
        if (has(t, "[SYSTEM_PROMPT]")) {
            return "mistral-v7";
        }
        if (has(t, "' [INST] ' + system_message") || has(t, "[AVAILABLE_TOOLS]")) {
            return has(t, " [INST]") ? "mistral-v1" : has(t, "\"[INST]\"") ? "mistral-v3-tekken" : "mistral-v3";
        }
        return has(t, "content.strip()")       ? "llama2-sys-strip"
               : has(t, "bos_token + '[INST]") ? "llama2-sys-bos"
               : has(t, "<<SYS>>")             ? "llama2-sys"
                                               : "llama2";
    }
    for (size_t i = 0; i < sizeof rules / sizeof rules[0]; i++) {
        bool ok = true;
        for (size_t k = 0; k < 3 && rules[i].all[k] && ok; k++) {
            ok = has(t, rules[i].all[k]);
        }
        if (ok && !strcmp(rules[i].format, "exaone4-check")) {
            if (has(t, "[|endofturn|]")) {
                return "exaone4";
            }
            continue;
        }
        if (ok) {
            return rules[i].format;
        }
    }
    return NULL;
}

/* --- entry points ---------------------------------------------------------------------------- */
int oxl_chat_builtin_render(const char *name, const char *const *roles, const char *const *contents, size_t n,
                            bool add_generation_prompt, char **out, size_t *out_len) {
    *out = NULL;
    *out_len = 0;
    const chat_format *f = find_format(name);
    if (!f) {
        return -1;
    }
    msg *m = calloc(n + 1, sizeof(msg));
    if (!m) {
        return -2;
    }
    for (size_t i = 0; i < n; i++) {
        m[i].role = roles[i];
        m[i].content = contents[i] ? contents[i] : "";
    }
    sbuf b = {0};
    render_builtin(f, m, n, add_generation_prompt, &b);
    free(m);
    if (!b.oom && !b.s) {
        b.s = calloc(1, 1); /* an empty conversation in a format without a begin text */
        b.oom = !b.s;
    }
    if (b.oom) {
        free(b.s);
        return -2;
    }
    *out = b.s;
    *out_len = b.n;
    return 0;
}

int32_t oxl_chat_builtin_apply(const char *tmpl, const char *const *roles, const char *const *contents, int32_t n,
                               bool add_ass, char *buf, int32_t length) {
    if (n < 0 || (n > 0 && (!roles || !contents)) || length < 0 || (!buf && length > 0)) {
        return -2;
    }
    for (int32_t i = 0; i < n; i++) {
        if (!roles[i]) {
            return -2;
        }
    }
    const char *name = oxl_chat_detect(tmpl ? tmpl : "chatml");
    if (!name) {
        return -1;
    }
    char *text = NULL;
    size_t len = 0;
    if (oxl_chat_builtin_render(name, roles, contents, (size_t)n, add_ass, &text, &len) != 0) {
        return -3;
    }
    if (len > INT32_MAX) {
        free(text);
        return -3;
    }
    if (buf && length > 0) { /* as llama.cpp's strncpy: the NUL only when it fits */
        memcpy(buf, text, len < (size_t)length ? len + 1 : (size_t)length);
    }
    free(text);
    return (int32_t)len;
}

int32_t oxl_chat_builtin_templates(const char **output, size_t len) {
    for (size_t i = 0; output && i < len && i < N_FORMATS; i++) {
        output[i] = formats[i].name;
    }
    return (int32_t)N_FORMATS;
}
