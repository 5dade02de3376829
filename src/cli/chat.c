/* oxillama run -cnv: an interactive chat, as llama.cpp's llama-cli conversation mode
 * (tools/main/main.cpp chat_add_and_format): each user line joins the conversation, the whole
 * conversation is rendered with the chat template, and only the text past what was already
 * evaluated is tokenized and decoded; the reply streams to stdout until an end-of-generation token.
 * `/exit` (or end of input) ends the chat. With --mmproj, `/image PATH` (llama-mtmd-cli's chat
 * command, tools/mtmd/mtmd-cli.cpp) loads an image for the next message: its text gets one media
 * marker per image in front, and the rendered turn goes through oxl_mm_eval. */
#include "args.h"
#include "chat.h"
#include "cli.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Renders the conversation; *out is malloc'd. kwargs (may be NULL): the template's extra variables. */
static int render(const oxl_model *m, const char *tmpl, const cJSON *msgs, const cJSON *kwargs, bool add_gen,
                  char **out) {
    oxl_error err = {0};
    if (oxl_chat_render_for_model_kw(m, tmpl, msgs, NULL, add_gen, kwargs, out, &err) != 0) {
        fprintf(stderr, "error: chat template: %s\n", err.msg);
        return -1;
    }
    return 0;
}

/* Tokenizes text (special tokens parsed, BOS only on the first turn), decodes it and hands its
 * tokens to the sampler's penalties (as llama.cpp's conversation mode accepts its input). */
static int feed(oxl_ctx *ctx, const oxl_model *m, oxl_sampler *smpl, const char *text, bool first, bool verbose) {
    const size_t len = strlen(text);
    int32_t n = oxl_tokenize(m, text, len, NULL, 0, first, true);
    n = n < 0 ? -n : n;
    if (n == 0) {
        return 0;
    }
    oxl_token *toks = malloc(sizeof(oxl_token) * (size_t)n);
    oxl_error err = {0};
    int rc = -1;
    if (!toks || oxl_tokenize(m, text, len, toks, n, first, true) != n) {
        fprintf(stderr, "error: cannot tokenize the conversation\n");
        free(toks);
        return -1;
    }
    if (verbose) {
        oxl_print_verbose_prompt(m, text, len, toks, n);
    }
    if (oxl_ctx_n_past(ctx) + n >= oxl_ctx_n_ctx(ctx)) {
        fprintf(stderr, "error: the conversation no longer fits the context of %d tokens (-c)\n", oxl_ctx_n_ctx(ctx));
    } else if (oxl_decode(ctx, toks, n, false, &err) != 0) {
        fprintf(stderr, "error: %s\n", err.msg);
    } else {
        for (int32_t i = 0; i < n; i++) {
            oxl_sampler_accept(smpl, toks[i]);
        }
        rc = 0;
    }
    free(toks);
    return rc;
}

/* The conversation's images, in order: run's --image files (not owned) and then those /image loaded. */
typedef struct chat_images {
    oxl_image **all;
    int n, cap, n_borrowed;
    int n_pending; /* images loaded for the message being written (the last of all) */
} chat_images;

static int chat_images_add(chat_images *ci, oxl_image *im) {
    if (ci->n == ci->cap) {
        const int cap = ci->cap ? 2 * ci->cap : 8;
        oxl_image **grown = realloc(ci->all, sizeof(oxl_image *) * (size_t)cap);
        if (!grown) {
            return -1;
        }
        ci->all = grown;
        ci->cap = cap;
    }
    ci->all[ci->n++] = im;
    return 0;
}

/* feed() for a text with media markers: the markers take the conversation's last images in order
 * (a turn's new text holds the markers of its own images; a text rendered again from the start holds
 * all of them). The penalties see the generated tokens only, as llama-mtmd-cli's. */
static int feed_mm(oxl_ctx *ctx, const oxl_mmproj *mm, const chat_images *ci, const char *text, bool first,
                   bool verbose) {
    int k = 0;
    for (const char *p = strstr(text, OXL_MEDIA_MARKER); p; p = strstr(p + 1, OXL_MEDIA_MARKER)) {
        k++;
    }
    if (k > ci->n) {
        fprintf(stderr, "error: the message has %d media markers (%s) and the conversation %d images\n", k,
                OXL_MEDIA_MARKER, ci->n);
        return -1;
    }
    if (verbose) {
        fprintf(stderr, "prompt: '%s'\nimages in prompt = %d\n\n", text, k);
    }
    oxl_error err = {0};
    if (oxl_mm_eval(ctx, mm, 0, text, (const oxl_image *const *)(ci->all + ci->n - k), k, first, &err) != 0) {
        fprintf(stderr, "error: %s\n", err.msg);
        return -1;
    }
    return 0;
}

/* Prints w bytes of the reply and appends them to *reply (len bytes used of cap); frees it and
 * returns -1 when memory is short. */
static int reply_put(char **reply, size_t *len, size_t *cap, const char *bytes, size_t w) {
    fwrite(bytes, 1, w, stdout);
    fflush(stdout);
    if (*len + w + 1 > *cap) {
        *cap = 2 * (*len + w + 1);
        char *grown = realloc(*reply, *cap);
        if (!grown) {
            free(*reply);
            *reply = NULL;
            return -1;
        }
        *reply = grown;
    }
    memcpy(*reply + *len, bytes, w);
    *len += w;
    return 0;
}

/* Generates the reply into a malloc'd string, streaming it to stdout. */
static char *generate(oxl_ctx *ctx, const oxl_model *m, oxl_sampler *smpl, int n_predict) {
    size_t cap = 256, len = 0;
    char *reply = malloc(cap);
    oxl_detok detok = {0};
    char piece[4096];
    oxl_error err = {0};
    for (int i = 0; reply && (n_predict < 0 || i < n_predict); i++) {
        oxl_token t = oxl_sampler_sample(smpl, oxl_get_logits(ctx, -1), oxl_model_n_vocab(m));
        if (t < 0) { /* a grammar that allows no token, or memory */
            fprintf(stderr, "\nerror: no token can be sampled\n");
            break;
        }
        oxl_sampler_accept(smpl, t);
        if (oxl_token_is_eog(m, t)) {
            break;
        }
        int32_t w = oxl_detok_push(&detok, m, t, piece, (int32_t)sizeof piece);
        if (w > 0 && reply_put(&reply, &len, &cap, piece, (size_t)w) != 0) {
            return NULL;
        }
        if (oxl_ctx_n_past(ctx) + 1 >= oxl_ctx_n_ctx(ctx) || oxl_decode(ctx, &t, 1, false, &err) != 0) {
            fprintf(stderr, "\nerror: %s\n", err.msg[0] ? err.msg : "the context is full (-c)");
            break;
        }
    }
    /* the bytes of a character the reply ended inside of (a lone lead byte), as run prints them */
    char tail[4];
    int32_t nt = oxl_detok_flush(&detok, tail, (int32_t)sizeof tail);
    if (reply && nt > 0 && reply_put(&reply, &len, &cap, tail, (size_t)nt) != 0) {
        return NULL;
    }
    if (reply) {
        reply[len] = '\0';
    }
    fputc('\n', stdout);
    return reply;
}

static void add_message(cJSON *msgs, const char *role, const char *content) {
    cJSON *msg = cJSON_CreateObject();
    cJSON_AddStringToObject(msg, "role", role);
    cJSON_AddStringToObject(msg, "content", content);
    cJSON_AddItemToArray(msgs, msg);
}

/* The reply joins the conversation as llama-server returns it: with --reasoning-format deepseek
 * (the default) its thought goes to reasoning_content, which templates may drop from later turns. */
static void add_reply(cJSON *msgs, const oxl_model *m, const char *tmpl, const char *prompt, const char *reply,
                      const char *reasoning_format) {
    cJSON *opts = cJSON_CreateObject();
    cJSON_AddBoolToObject(opts, "tools", false);
    cJSON_AddStringToObject(opts, "reasoning_format", reasoning_format ? reasoning_format : "deepseek");
    cJSON_AddStringToObject(opts, "prompt", prompt);
    char *oj = cJSON_PrintUnformatted(opts), *out = NULL;
    cJSON_Delete(opts);
    cJSON *msg = oj && oxl_chat_parse(m, tmpl, reply, oj, &out, NULL) == 0 ? cJSON_Parse(out) : NULL;
    free(oj);
    free(out);
    if (cJSON_IsObject(msg) && cJSON_GetObjectItemCaseSensitive(msg, "reasoning_content")) {
        cJSON_AddItemToArray(msgs, msg);
        return;
    }
    cJSON_Delete(msg);
    add_message(msgs, "assistant", reply);
}

int oxl_chat_loop(const oxl_model *m, oxl_ctx *ctx, oxl_sampler *smpl, const oxl_opts *o, const oxl_mmproj *mm,
                  oxl_image *const *images) {
    char *tmpl_file = NULL;
    size_t tmpl_len = 0;
    if (o->chat_template_file && !(tmpl_file = oxl_read_text_file(o->chat_template_file, &tmpl_len))) {
        return 1;
    }
    const char *tmpl = tmpl_file ? tmpl_file : o->chat_template;
    cJSON *msgs = cJSON_CreateArray();
    /* llama.cpp's chat: enable_thinking = --reasoning-budget != 0 && the template reacts to it */
    cJSON *kwargs = cJSON_CreateObject();
    cJSON_AddBoolToObject(kwargs, "enable_thinking", o->reasoning_budget != 0 && oxl_chat_supports_thinking(m, tmpl));
    if (o->system_prompt) {
        add_message(msgs, "system", o->system_prompt);
    }
    char *evaluated = strdup(""); /* the rendered conversation already in the KV cache */
    int status = 0;
    chat_images ci = {0};
    for (int i = 0; i < o->n_images; i++) {
        if (chat_images_add(&ci, images[i]) != 0) {
            status = 1;
        }
    }
    ci.n_borrowed = ci.n_pending = ci.n;
    char line[16384];
    char *content = NULL; /* the user message: a marker per pending image, then the line */
    for (bool first = true; status == 0;) {
        fputs("\n> ", stdout);
        fflush(stdout);
        if (!fgets(line, sizeof line, stdin)) {
            break;
        }
        line[strcspn(line, "\n")] = '\0';
        if (!strcmp(line, "/exit")) {
            break;
        }
        if (!strncmp(line, "/image ", 7)) {
            oxl_error err = {0};
            oxl_image *im = NULL;
            if (!mm) {
                fprintf(stderr, "error: /image needs --mmproj FILE (the vision projector that encodes it)\n");
            } else if (!(im = oxl_image_load_file(line + 7, &err))) {
                fprintf(stderr, "error: /image: %s\n", err.msg);
            } else if (chat_images_add(&ci, im) != 0) {
                oxl_image_free(im);
                status = 1;
            } else {
                ci.n_pending++;
                printf("%s image loaded\n", line + 7);
            }
            continue;
        }
        const size_t marker_len = strlen(OXL_MEDIA_MARKER), line_len = strlen(line);
        free(content);
        content = malloc((size_t)ci.n_pending * marker_len + line_len + 1);
        if (!content) {
            status = 1;
            break;
        }
        for (int i = 0; i < ci.n_pending; i++) {
            memcpy(content + (size_t)i * marker_len, OXL_MEDIA_MARKER, marker_len);
        }
        memcpy(content + (size_t)ci.n_pending * marker_len, line, line_len + 1);
        ci.n_pending = 0;
        add_message(msgs, "user", content);
        char *with_prompt = NULL;
        if (render(m, tmpl, msgs, kwargs, true, &with_prompt) != 0) {
            status = 1;
            break;
        }
        /* only the new text: the rendering of the earlier turns is a prefix of this one */
        const size_t done = strncmp(with_prompt, evaluated, strlen(evaluated)) == 0 ? strlen(evaluated) : 0;
        if (done == 0 && !first) {
            oxl_ctx_truncate(ctx, 0);
        }
        int rc = mm ? feed_mm(ctx, mm, &ci, with_prompt + done, first || done == 0, o->verbose_prompt)
                    : feed(ctx, m, smpl, with_prompt + done, first || done == 0, o->verbose_prompt);
        if (rc != 0) {
            free(with_prompt);
            status = 1;
            break;
        }
        first = false;
        /* --reasoning-budget N >= 0 with a template that writes thoughts: llama.cpp's budget sampler
         * with the template's tags, armed when this prompt ends inside an opened thought */
        const char *think_start = NULL, *think_end = NULL;
        bool think_open = false;
        if (o->reasoning_budget >= 0 &&
            oxl_chat_thinking_tags(m, tmpl, with_prompt, &think_start, &think_end, &think_open) == 1 &&
            oxl_sampler_set_reasoning_budget(smpl, m, think_start, think_end, o->reasoning_budget_message,
                                             o->reasoning_budget, think_open) != 0) {
            fprintf(stderr, "error: --reasoning-budget: the thought tags %s %s do not tokenize\n", think_start,
                    think_end);
            free(with_prompt);
            status = 1;
            break;
        }
        char *reply = generate(ctx, m, smpl, o->n_predict);
        if (!reply) {
            free(with_prompt);
            status = 1;
            break;
        }
        add_reply(msgs, m, tmpl, with_prompt, reply, o->reasoning_format);
        /* the cache now holds the prompt and the reply; the template's end-of-turn text after the
         * reply is not evaluated yet and starts the next turn's new text */
        char *held = malloc(strlen(with_prompt) + strlen(reply) + 1);
        if (!held) {
            free(with_prompt);
            free(reply);
            status = 1;
            break;
        }
        strcpy(held, with_prompt);
        strcat(held, reply);
        free(with_prompt);
        free(reply);
        free(evaluated);
        evaluated = held;
    }
    for (int i = ci.n_borrowed; i < ci.n; i++) {
        oxl_image_free(ci.all[i]);
    }
    free(ci.all);
    free(content);
    free(evaluated);
    free(tmpl_file);
    cJSON_Delete(kwargs);
    cJSON_Delete(msgs);
    return status;
}
