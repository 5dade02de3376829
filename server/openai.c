/* The OpenAI routes: request fields -> jobs, job output -> response objects and stream chunks, in
 * the shapes of the OpenAI REST API reference (chat.completion, chat.completion.chunk,
 * text_completion, response + its streaming events, list/model, error). */
#include "chat.h"
#include "http.h"
#include "model.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#define WAIT_MS 50

/* --- small helpers ----------------------------------------------------------------------------- */

int oxl_api_err(oxl_api_error *e, int status, const char *type, const char *code, const char *param, const char *fmt, ...) {
    e->status = status;
    e->type = type;
    e->code = code;
    snprintf(e->param, sizeof e->param, "%s", param ? param : "");
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(e->msg, sizeof e->msg, fmt, ap);
    va_end(ap);
    return -1;
}

#define BAD(e, param, ...) oxl_api_err(e, 400, "invalid_request_error", "invalid_value", param, __VA_ARGS__)
#define BAD_TYPE(e, param, ...) oxl_api_err(e, 400, "invalid_request_error", "invalid_type", param, __VA_ARGS__)

/* A short rendering of a JSON value for messages. */
static void json_brief(const cJSON *v, char *buf, size_t cap) {
    char *s = cJSON_PrintUnformatted(v);
    snprintf(buf, cap, "%.60s%s", s ? s : "?", s && strlen(s) > 60 ? "..." : "");
    free(s);
}

static void random_id(const char *prefix, char *out, size_t cap) {
    unsigned char r[12];
    if (getrandom(r, sizeof r, 0) != (ssize_t)sizeof r) {
        memset(r, 0, sizeof r);
        snprintf((char *)r, sizeof r, "%lx", (unsigned long)time(NULL));
    }
    size_t n = (size_t)snprintf(out, cap, "%s", prefix);
    for (size_t i = 0; i < sizeof r && n + 2 < cap; i++) {
        n += (size_t)snprintf(out + n, cap - n, "%02x", r[i]);
    }
}

/* The length of the valid UTF-8 sequence at s (1..4), or 0 if invalid or cut short. */
static int utf8_seq(const unsigned char *s, size_t n) {
    unsigned c = s[0];
    if (c < 0x80) {
        return 1;
    }
    int len = c >= 0xC2 && c <= 0xDF ? 2 : c >= 0xE0 && c <= 0xEF ? 3 : c >= 0xF0 && c <= 0xF4 ? 4 : 0;
    if (len == 0 || (size_t)len > n) {
        return 0;
    }
    for (int i = 1; i < len; i++) {
        if ((s[i] & 0xC0) != 0x80) {
            return 0;
        }
    }
    if ((c == 0xE0 && s[1] < 0xA0) || (c == 0xED && s[1] > 0x9F) || (c == 0xF0 && s[1] < 0x90) ||
        (c == 0xF4 && s[1] > 0x8F)) {
        return 0;
    }
    return len;
}

/* A JSON string of n bytes with invalid UTF-8 (and NULs) replaced by U+FFFD. */
static cJSON *json_text(const char *s, size_t n) {
    char *buf = malloc(n * 3 + 1);
    if (!buf) {
        return cJSON_CreateString("");
    }
    size_t o = 0;
    for (size_t i = 0; i < n;) {
        int k = s[i] ? utf8_seq((const unsigned char *)s + i, n - i) : 0;
        if (k == 0) {
            memcpy(buf + o, "\xEF\xBF\xBD", 3);
            o += 3;
            i++;
        } else {
            memcpy(buf + o, s + i, (size_t)k);
            o += (size_t)k;
            i += (size_t)k;
        }
    }
    buf[o] = 0;
    cJSON *j = cJSON_CreateString(buf);
    free(buf);
    return j;
}

static int piece(const oxl_model *m, oxl_token t, char *buf, int cap) {
    int n = oxl_token_to_piece(m, t, buf, cap, true);
    return n < 0 ? 0 : n;
}

/* --- field readers: 0 absent (or null), 1 read, -1 error naming the field ----------------------- */

static const cJSON *field(const cJSON *o, const char *name) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, name);
    return v && !cJSON_IsNull(v) ? v : NULL;
}

static int get_num(const cJSON *o, const char *name, double lo, double hi, double *out, oxl_api_error *e) {
    const cJSON *v = field(o, name);
    if (!v) {
        return 0;
    }
    char b[80];
    json_brief(v, b, sizeof b);
    if (!cJSON_IsNumber(v)) {
        return BAD_TYPE(e, name, "'%s': expected a number, got %s", name, b);
    }
    if (!(v->valuedouble >= lo && v->valuedouble <= hi)) {
        return BAD(e, name, "'%s': %s is outside [%g, %g]", name, b, lo, hi);
    }
    *out = v->valuedouble;
    return 1;
}

static int get_int(const cJSON *o, const char *name, double lo, double hi, long long *out, oxl_api_error *e) {
    const cJSON *v = field(o, name);
    if (!v) {
        return 0;
    }
    char b[80];
    json_brief(v, b, sizeof b);
    if (!cJSON_IsNumber(v) || v->valuedouble != floor(v->valuedouble)) {
        return BAD_TYPE(e, name, "'%s': expected an integer, got %s", name, b);
    }
    if (!(v->valuedouble >= lo && v->valuedouble <= hi)) {
        return BAD(e, name, "'%s': %s is outside [%.0f, %.0f]", name, b, lo, hi);
    }
    *out = (long long)v->valuedouble;
    return 1;
}

static int get_bool(const cJSON *o, const char *name, bool *out, oxl_api_error *e) {
    const cJSON *v = field(o, name);
    if (!v) {
        return 0;
    }
    if (!cJSON_IsBool(v)) {
        char b[80];
        json_brief(v, b, sizeof b);
        return BAD_TYPE(e, name, "'%s': expected a boolean, got %s", name, b);
    }
    *out = cJSON_IsTrue(v);
    return 1;
}

static int get_str(const cJSON *o, const char *name, const char **out, oxl_api_error *e) {
    const cJSON *v = field(o, name);
    if (!v) {
        return 0;
    }
    if (!cJSON_IsString(v)) {
        char b[80];
        json_brief(v, b, sizeof b);
        return BAD_TYPE(e, name, "'%s': expected a string, got %s", name, b);
    }
    *out = v->valuestring;
    return 1;
}

/* --- request -> generation parameters ---------------------------------------------------------- */

typedef enum api_kind { API_CHAT, API_COMPLETION, API_RESPONSES } api_kind;

typedef struct api_req {
    api_kind kind;
    oxl_gen_params gen;
    int n;               /* choices per prompt */
    bool stream, include_usage, echo;
    bool logprobs;       /* chat: logprobs; completions: logprobs given */
    const cJSON *tools;  /* valid while the request is handled */
    bool has_tools;      /* tools were given: replies may hold tool calls */
    char id[64];
    time_t created;
} api_req;

static int check_model(oxl_srv *srv, const cJSON *b, oxl_api_error *e) {
    const char *m = NULL;
    if (get_str(b, "model", &m, e) < 0) {
        return -1;
    }
    if (m && strcmp(m, srv->model_id) && strcmp(m, srv->model_file)) {
        return oxl_api_err(e, 404, "invalid_request_error", "model_not_found", "model",
                           "The model '%.200s' does not exist; this server has '%s'", m, srv->model_id);
    }
    return 0;
}

static int parse_stop(const cJSON *b, oxl_gen_params *g, oxl_api_error *e) {
    const cJSON *v = field(b, "stop");
    if (!v) {
        return 0;
    }
    if (cJSON_IsString(v)) {
        g->stop[g->n_stop++] = strdup(v->valuestring);
        return 0;
    }
    if (!cJSON_IsArray(v)) {
        return BAD_TYPE(e, "stop", "'stop': expected a string or a list of strings");
    }
    if (cJSON_GetArraySize(v) > OXL_SRV_MAX_STOP) {
        return BAD(e, "stop", "'stop': at most %d sequences", OXL_SRV_MAX_STOP);
    }
    int i = 0;
    for (const cJSON *s = v->child; s; s = s->next, i++) {
        if (!cJSON_IsString(s)) {
            return BAD_TYPE(e, "stop", "'stop[%d]': expected a string", i);
        }
        if (s->valuestring[0]) {
            g->stop[g->n_stop++] = strdup(s->valuestring);
        }
    }
    return 0;
}

static int parse_logit_bias(oxl_srv *srv, const cJSON *b, oxl_gen_params *g, oxl_api_error *e) {
    const cJSON *v = field(b, "logit_bias");
    if (!v) {
        return 0;
    }
    if (!cJSON_IsObject(v)) {
        return BAD_TYPE(e, "logit_bias", "'logit_bias': expected an object mapping token ids to numbers");
    }
    int n = cJSON_GetArraySize(v);
    g->bias_tok = malloc(sizeof(oxl_token) * (size_t)(n + 1));
    g->bias_val = malloc(sizeof(float) * (size_t)(n + 1));
    if (!g->bias_tok || !g->bias_val) {
        return oxl_api_err(e, 500, "server_error", NULL, NULL, "out of memory");
    }
    int32_t n_vocab = oxl_model_n_vocab(srv->model);
    for (const cJSON *x = v->child; x; x = x->next) {
        char *end = NULL;
        long t = strtol(x->string, &end, 10);
        if (end == x->string || *end || t < 0 || t >= n_vocab) {
            return BAD(e, "logit_bias", "'logit_bias': key '%.40s' is not a token id in [0, %d)", x->string, n_vocab);
        }
        if (!cJSON_IsNumber(x) || !(x->valuedouble >= -100 && x->valuedouble <= 100)) {
            return BAD(e, "logit_bias", "'logit_bias[\"%s\"]': expected a number in [-100, 100]", x->string);
        }
        g->bias_tok[g->n_bias] = (oxl_token)t;
        g->bias_val[g->n_bias++] = (float)x->valuedouble;
    }
    return 0;
}

/* Fields common to the generating routes. Unspecified sampling uses llama.cpp's server defaults. */
static int parse_common(oxl_srv *srv, const cJSON *b, api_req *r, oxl_api_error *e) {
    oxl_gen_params *g = &r->gen;
    g->sampling = oxl_sampler_default_params();
    g->max_tokens = -1;
    g->top_logprobs = -1;
    r->n = 1;
    random_id(r->kind == API_CHAT ? "chatcmpl-" : r->kind == API_COMPLETION ? "cmpl-" : "resp_", r->id, sizeof r->id);
    r->created = time(NULL);
    double x;
    long long k;
    int rc;
    if (check_model(srv, b, e) < 0) {
        return -1;
    }
    if (!oxl_model_has_decoder(srv->model)) {
        return oxl_api_err(e, 400, "invalid_request_error", "model_not_supported", "model",
                           "'%s' is an embedding model (no output head): it serves /v1/embeddings only, not "
                           "text generation", srv->model_id);
    }
    if ((rc = get_num(b, "temperature", 0, 2, &x, e)) < 0) {
        return -1;
    }
    if (rc) {
        g->sampling.temp = (float)x;
    }
    if ((rc = get_num(b, "top_p", 0, 1, &x, e)) < 0) {
        return -1;
    }
    if (rc) {
        g->sampling.top_p = (float)x;
    }
    if ((rc = get_num(b, "min_p", 0, 1, &x, e)) < 0) {
        return -1;
    }
    if (rc) {
        g->sampling.min_p = (float)x;
    }
    if ((rc = get_int(b, "top_k", 0, 1e9, &k, e)) < 0) {
        return -1;
    }
    if (rc) {
        g->sampling.top_k = (int32_t)k;
    }
    if ((rc = get_int(b, "seed", -9.2e18, 9.2e18, &k, e)) < 0) {
        return -1;
    }
    if (rc) {
        g->sampling.seed = (uint32_t)k;
    }
    if (get_num(b, "presence_penalty", -2, 2, &x, e) < 0) {
        return -1;
    }
    g->presence_penalty = field(b, "presence_penalty") ? (float)x : 0;
    if (get_num(b, "frequency_penalty", -2, 2, &x, e) < 0) {
        return -1;
    }
    g->frequency_penalty = field(b, "frequency_penalty") ? (float)x : 0;
    g->penalty_last_n = 64; /* llama-server's repeat_last_n */
    if ((rc = get_int(b, "repeat_last_n", 0, 1e9, &k, e)) < 0) {
        return -1;
    }
    if (rc) {
        g->penalty_last_n = (int32_t)k;
    }
    const char *max_names[] = {"max_tokens", "max_completion_tokens", "max_output_tokens"};
    for (int i = 0; i < 3; i++) {
        if ((rc = get_int(b, max_names[i], 1, 1e9, &k, e)) < 0) {
            return -1;
        }
        if (rc) {
            g->max_tokens = (int32_t)k;
        }
    }
    if ((rc = get_int(b, "n", 1, OXL_SRV_MAX_CHOICES, &k, e)) < 0) {
        return -1;
    }
    if (rc) {
        if (k > oxl_ctx_n_seq_max(srv->ctx)) {
            return BAD(e, "n", "'n': %lld choices need %lld slots; this server has %d (-np)", k, k,
                       oxl_ctx_n_seq_max(srv->ctx));
        }
        r->n = (int)k;
    }
    if (get_bool(b, "stream", &r->stream, e) < 0) {
        return -1;
    }
    const cJSON *so = field(b, "stream_options");
    if (so) {
        if (!r->stream) {
            return BAD(e, "stream_options", "'stream_options' is only allowed when 'stream' is true");
        }
        if (!cJSON_IsObject(so)) {
            return BAD_TYPE(e, "stream_options", "'stream_options': expected an object");
        }
        if (get_bool(so, "include_usage", &r->include_usage, e) < 0) {
            snprintf(e->param, sizeof e->param, "stream_options.include_usage");
            return -1;
        }
    }
    const char *user = NULL;
    if (get_str(b, "user", &user, e) < 0 || parse_stop(b, g, e) < 0 || parse_logit_bias(srv, b, g, e) < 0) {
        return -1;
    }
    const cJSON *rf = field(b, "response_format");
    if (rf) {
        const char *type = NULL;
        if (!cJSON_IsObject(rf) || get_str(rf, "type", &type, e) < 0 || !type) {
            return BAD_TYPE(e, "response_format", "'response_format': expected an object with a string 'type'");
        }
        if (strcmp(type, "text")) {
            return BAD(e, "response_format",
                       "'response_format': type '%.40s' is not supported: this server has no grammar-constrained "
                       "sampling yet, so it cannot guarantee JSON output; use 'text'",
                       type);
        }
    }
    return 0;
}

/* --- prompts ----------------------------------------------------------------------------------- */

static int tokenize_text(oxl_srv *srv, const char *text, size_t len, oxl_token **out, int32_t *n, const char *param,
                         oxl_api_error *e) {
    int32_t need = oxl_tokenize(srv->model, text, len, NULL, 0, true, true);
    if (need == INT32_MIN) {
        return BAD(e, param, "'%s': cannot be tokenized", param);
    }
    need = need < 0 ? -need : need;
    *out = malloc(sizeof(oxl_token) * (size_t)(need + 1));
    if (!*out) {
        return oxl_api_err(e, 500, "server_error", NULL, NULL, "out of memory");
    }
    *n = oxl_tokenize(srv->model, text, len, *out, need, true, true);
    if (*n != need) {
        return BAD(e, param, "'%s': cannot be tokenized", param);
    }
    return 0;
}

static int check_context(oxl_srv *srv, int32_t n_prompt, const char *param, oxl_api_error *e) {
    int32_t n_ctx = oxl_sched_n_ctx_slot(srv->sched);
    if (n_prompt == 0) {
        return BAD(e, param, "'%s': the prompt is empty and the model adds no BOS token", param);
    }
    if (n_prompt >= n_ctx) {
        return oxl_api_err(e, 400, "invalid_request_error", "context_length_exceeded", param,
                           "This model's maximum context length is %d tokens per slot (-c %d over -np %d slots), "
                           "and at least 1 must remain for the completion. However, your %s resulted in %d tokens.",
                           n_ctx, srv->cfg->n_ctx ? srv->cfg->n_ctx : n_ctx * oxl_ctx_n_seq_max(srv->ctx),
                           oxl_ctx_n_seq_max(srv->ctx), strcmp(param, "messages") ? "prompt" : "messages", n_prompt);
    }
    return 0;
}

/* Turns chat messages into the template's input: content parts joined into one string. */
static cJSON *normalize_messages(const cJSON *msgs, const char *param, oxl_api_error *e) {
    if (!cJSON_IsArray(msgs) || cJSON_GetArraySize(msgs) == 0) {
        BAD_TYPE(e, param, "'%s': expected a non-empty list of messages", param);
        return NULL;
    }
    static const char *roles[] = {"system", "developer", "user", "assistant", "tool"};
    cJSON *out = cJSON_CreateArray();
    int i = 0;
    for (const cJSON *m = msgs->child; m; m = m->next, i++) {
        char where[64];
        snprintf(where, sizeof where, "%s[%d]", param, i);
        const char *role = NULL;
        if (!cJSON_IsObject(m) || get_str(m, "role", &role, e) < 0 || !role) {
            BAD_TYPE(e, where, "'%s': expected an object with a string 'role'", where);
            cJSON_Delete(out);
            return NULL;
        }
        bool known = false;
        for (size_t r = 0; r < sizeof roles / sizeof roles[0]; r++) {
            known |= !strcmp(role, roles[r]);
        }
        if (!known) {
            BAD(e, where, "'%s.role': '%.40s' is not one of system, developer, user, assistant, tool", where, role);
            cJSON_Delete(out);
            return NULL;
        }
        cJSON *nm = cJSON_Duplicate(m, true);
        const cJSON *c = field(m, "content");
        if (c && cJSON_IsArray(c)) {
            size_t cap = 1, len = 0;
            for (const cJSON *p = c->child; p; p = p->next) {
                const cJSON *t = cJSON_GetObjectItemCaseSensitive(p, "text");
                cap += cJSON_IsString(t) ? strlen(t->valuestring) : 0;
            }
            char *text = malloc(cap);
            int pi = 0;
            for (const cJSON *p = c->child; p && text; p = p->next, pi++) {
                const char *type = NULL, *t = NULL;
                oxl_api_error ign;
                get_str(p, "type", &type, &ign);
                get_str(p, "text", &t, &ign);
                if (!type || (strcmp(type, "text") && strcmp(type, "input_text") && strcmp(type, "output_text")) || !t) {
                    char w2[96];
                    snprintf(w2, sizeof w2, "%s.content[%d]", where, pi);
                    BAD(e, w2, "'%s': only text parts ({\"type\": \"text\", \"text\": ...}) are supported; got type '%.40s'",
                        w2, type ? type : "?");
                    free(text);
                    cJSON_Delete(nm);
                    cJSON_Delete(out);
                    return NULL;
                }
                memcpy(text + len, t, strlen(t));
                len += strlen(t);
            }
            if (!text) {
                cJSON_Delete(nm);
                cJSON_Delete(out);
                oxl_api_err(e, 500, "server_error", NULL, NULL, "out of memory");
                return NULL;
            }
            text[len] = 0;
            cJSON_ReplaceItemInObjectCaseSensitive(nm, "content", cJSON_CreateString(text));
            free(text);
        } else if (c && !cJSON_IsString(c)) {
            BAD_TYPE(e, where, "'%s.content': expected a string or a list of content parts", where);
            cJSON_Delete(nm);
            cJSON_Delete(out);
            return NULL;
        } else if (!c) {
            cJSON_DeleteItemFromObjectCaseSensitive(nm, "content");
            cJSON_AddStringToObject(nm, "content", "");
        }
        cJSON_AddItemToArray(out, nm);
    }
    return out;
}

static int chat_prompt(oxl_srv *srv, const cJSON *msgs, const cJSON *tools, oxl_token **toks, int32_t *n,
                       const char *param, oxl_api_error *e) {
    char *text = NULL;
    oxl_error err = {0};
    if (oxl_chat_render_for_model(srv->model, NULL, msgs, tools, true, &text, &err) != 0) {
        return BAD(e, param, "'%s': the chat template failed: %s", param, err.msg);
    }
    int rc = tokenize_text(srv, text, strlen(text), toks, n, param, e);
    free(text);
    return rc;
}

/* --- jobs -------------------------------------------------------------------------------------- */

static int submit(oxl_srv *srv, oxl_job *j, oxl_api_error *e) {
    if (oxl_sched_submit(srv->sched, j) != 0) {
        atomic_fetch_add(&srv->n_rejected_queue, 1);
        oxl_api_err(e, 503, "server_error", atomic_load(&srv->stopping) ? "server_shutting_down" : "server_overloaded",
                    NULL, atomic_load(&srv->stopping) ? "The server is shutting down" :
                                                         "The server is overloaded: the request queue is full; retry later");
        e->retry_after = 1;
        return -1;
    }
    return 0;
}

static bool job_done(const oxl_job *j) { return j->n_done == j->n_choices; }

/* Blocks until every job is done; -1 (jobs cancelled) when the client disconnects first. */
static int wait_jobs(oxl_srv *srv, oxl_job **jobs, int n, int fd) {
    oxl_sched_lock(srv->sched);
    for (;;) {
        int i = 0;
        while (i < n && job_done(jobs[i])) {
            i++;
        }
        if (i == n) {
            break;
        }
        oxl_sched_wait(srv->sched, jobs[i], WAIT_MS);
        if (oxl_client_gone(fd)) {
            oxl_sched_unlock(srv->sched);
            for (int k = 0; k < n; k++) {
                oxl_job_cancel(srv->sched, jobs[k]);
            }
            atomic_fetch_add(&srv->n_cancelled, 1);
            return -1;
        }
    }
    oxl_sched_unlock(srv->sched);
    return 0;
}

static void release_jobs(oxl_srv *srv, oxl_job **jobs, int n) {
    for (int i = 0; i < n; i++) {
        if (jobs[i]) {
            oxl_job_release(srv->sched, jobs[i]);
        }
    }
    free(jobs);
}

static cJSON *usage_json(oxl_job **jobs, int n_jobs, api_kind kind) {
    long long in = 0, out = 0, cached = 0;
    for (int i = 0; i < n_jobs; i++) {
        in += jobs[i]->n_prompt;
        cached += jobs[i]->n_cached;
        for (int c = 0; c < jobs[i]->n_choices; c++) {
            out += jobs[i]->choice[c].n_gen;
        }
    }
    cJSON *u = cJSON_CreateObject();
    cJSON_AddNumberToObject(u, kind == API_RESPONSES ? "input_tokens" : "prompt_tokens", (double)in);
    cJSON_AddNumberToObject(u, kind == API_RESPONSES ? "output_tokens" : "completion_tokens", (double)out);
    cJSON_AddNumberToObject(u, "total_tokens", (double)(in + out));
    cJSON *d = cJSON_AddObjectToObject(u, kind == API_RESPONSES ? "input_tokens_details" : "prompt_tokens_details");
    cJSON_AddNumberToObject(d, "cached_tokens", (double)cached);
    return u;
}

/* The first job error, as an API error (503 for shutdown, 500 otherwise). */
static bool job_error(oxl_job **jobs, int n, oxl_api_error *e) {
    for (int i = 0; i < n; i++) {
        if (jobs[i]->error[0]) {
            bool down = strstr(jobs[i]->error, "shutting down") != NULL;
            oxl_api_err(e, down ? 503 : 500, "server_error", down ? "server_shutting_down" : "generation_failed", NULL,
                        "%s", jobs[i]->error);
            return true;
        }
    }
    return false;
}

/* --- logprobs ---------------------------------------------------------------------------------- */

static cJSON *bytes_json(const char *p, int n) {
    cJSON *a = cJSON_CreateArray();
    for (int i = 0; i < n; i++) {
        cJSON_AddItemToArray(a, cJSON_CreateNumber((unsigned char)p[i]));
    }
    return a;
}

/* Chat shape: [{token, logprob, bytes, top_logprobs: [{token, logprob, bytes}]}]. */
static cJSON *chat_logprobs(oxl_srv *srv, const oxl_choice_out *c, int32_t from, int32_t to) {
    cJSON *arr = cJSON_CreateArray();
    char buf[256];
    for (int32_t i = from; i < to; i++) {
        const oxl_tok_logprob *r = &c->lp[i];
        cJSON *o = cJSON_CreateObject();
        int n = piece(srv->model, r->tok, buf, sizeof buf);
        cJSON_AddItemToObject(o, "token", json_text(buf, (size_t)n));
        cJSON_AddNumberToObject(o, "logprob", r->logprob);
        cJSON_AddItemToObject(o, "bytes", bytes_json(buf, n));
        cJSON *top = cJSON_AddArrayToObject(o, "top_logprobs");
        for (int k = 0; k < r->n_top; k++) {
            cJSON *t = cJSON_CreateObject();
            n = piece(srv->model, r->top_tok[k], buf, sizeof buf);
            cJSON_AddItemToObject(t, "token", json_text(buf, (size_t)n));
            cJSON_AddNumberToObject(t, "logprob", r->top_lp[k]);
            cJSON_AddItemToObject(t, "bytes", bytes_json(buf, n));
            cJSON_AddItemToArray(top, t);
        }
        cJSON_AddItemToArray(arr, o);
    }
    return arr;
}

/* Completions shape: {tokens, token_logprobs, top_logprobs: [{piece: logprob}], text_offset}. */
static cJSON *completion_logprobs(oxl_srv *srv, const oxl_choice_out *c, int32_t from, int32_t to, size_t offset) {
    cJSON *o = cJSON_CreateObject();
    cJSON *toks = cJSON_AddArrayToObject(o, "tokens");
    cJSON *lps = cJSON_AddArrayToObject(o, "token_logprobs");
    cJSON *tops = cJSON_AddArrayToObject(o, "top_logprobs");
    cJSON *offs = cJSON_AddArrayToObject(o, "text_offset");
    char buf[256];
    for (int32_t i = from; i < to; i++) {
        const oxl_tok_logprob *r = &c->lp[i];
        int n = piece(srv->model, r->tok, buf, sizeof buf);
        cJSON_AddItemToArray(toks, json_text(buf, (size_t)n));
        cJSON_AddItemToArray(lps, cJSON_CreateNumber(r->logprob));
        cJSON_AddItemToArray(offs, cJSON_CreateNumber((double)offset));
        offset += (size_t)n;
        cJSON *t = cJSON_CreateObject();
        for (int k = 0; k < r->n_top; k++) {
            n = piece(srv->model, r->top_tok[k], buf, sizeof buf);
            buf[n] = 0;
            if (!cJSON_GetObjectItemCaseSensitive(t, buf)) {
                cJSON_AddNumberToObject(t, buf, r->top_lp[k]);
            }
        }
        cJSON_AddItemToArray(tops, t);
    }
    return o;
}

/* --- tool calls: the Hermes/Qwen <tool_call>{json}</tool_call> form, or a bare JSON call -------- */

static cJSON *parse_tool_calls(const char *text, size_t *content_len) {
    cJSON *calls = cJSON_CreateArray();
    const char *p = strstr(text, "<tool_call>");
    *content_len = p ? (size_t)(p - text) : strlen(text);
    const char *q = p ? p : text;
    while (q && *q) {
        const char *start = p ? q + strlen("<tool_call>") : q;
        const char *end = p ? strstr(start, "</tool_call>") : start + strlen(start);
        if (!end) {
            end = start + strlen(start);
        }
        char *js = strndup(start, (size_t)(end - start));
        cJSON *c = js ? cJSON_Parse(js) : NULL;
        free(js);
        const cJSON *name = cJSON_GetObjectItemCaseSensitive(c, "name");
        const cJSON *args = cJSON_GetObjectItemCaseSensitive(c, "arguments");
        if (!args) {
            args = cJSON_GetObjectItemCaseSensitive(c, "parameters");
        }
        if (cJSON_IsString(name)) {
            cJSON *call = cJSON_CreateObject();
            char id[48];
            random_id("call_", id, sizeof id);
            cJSON_AddStringToObject(call, "id", id);
            cJSON_AddStringToObject(call, "type", "function");
            cJSON *fn = cJSON_AddObjectToObject(call, "function");
            cJSON_AddStringToObject(fn, "name", name->valuestring);
            char *a = args ? (cJSON_IsString(args) ? strdup(args->valuestring) : cJSON_PrintUnformatted(args)) : strdup("{}");
            cJSON_AddStringToObject(fn, "arguments", a ? a : "{}");
            free(a);
            cJSON_AddItemToArray(calls, call);
        }
        cJSON_Delete(c);
        if (!p) {
            break;
        }
        q = *end ? strstr(end, "<tool_call>") : NULL;
    }
    if (cJSON_GetArraySize(calls) == 0) {
        cJSON_Delete(calls);
        return NULL;
    }
    return calls;
}

/* --- non-streaming responses ------------------------------------------------------------------- */

static cJSON *chat_object(oxl_srv *srv, const api_req *r, oxl_job *j) {
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "id", r->id);
    cJSON_AddStringToObject(o, "object", "chat.completion");
    cJSON_AddNumberToObject(o, "created", (double)r->created);
    cJSON_AddStringToObject(o, "model", srv->model_id);
    cJSON *choices = cJSON_AddArrayToObject(o, "choices");
    for (int i = 0; i < j->n_choices; i++) {
        const oxl_choice_out *c = &j->choice[i];
        const char *text = c->text ? c->text : "";
        cJSON *ch = cJSON_CreateObject();
        cJSON_AddNumberToObject(ch, "index", i);
        cJSON *msg = cJSON_AddObjectToObject(ch, "message");
        cJSON_AddStringToObject(msg, "role", "assistant");
        size_t content_len = c->len;
        cJSON *calls = r->has_tools ? parse_tool_calls(text, &content_len) : NULL;
        if (calls && content_len == 0) {
            cJSON_AddNullToObject(msg, "content");
        } else {
            cJSON_AddItemToObject(msg, "content", json_text(text, content_len));
        }
        cJSON_AddNullToObject(msg, "refusal");
        if (calls) {
            cJSON_AddItemToObject(msg, "tool_calls", calls);
        }
        if (r->logprobs) {
            cJSON *lp = cJSON_AddObjectToObject(ch, "logprobs");
            cJSON_AddItemToObject(lp, "content", chat_logprobs(srv, c, 0, c->n_lp));
            cJSON_AddNullToObject(lp, "refusal");
        } else {
            cJSON_AddNullToObject(ch, "logprobs");
        }
        cJSON_AddStringToObject(ch, "finish_reason", calls ? "tool_calls" : c->finish ? c->finish : "stop");
        cJSON_AddItemToArray(choices, ch);
    }
    cJSON_AddItemToObject(o, "usage", usage_json(&j, 1, API_CHAT));
    cJSON_AddStringToObject(o, "system_fingerprint", "oxillama");
    return o;
}

static cJSON *completion_object(oxl_srv *srv, const api_req *r, oxl_job **jobs, int n_jobs, char **prompts) {
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "id", r->id);
    cJSON_AddStringToObject(o, "object", "text_completion");
    cJSON_AddNumberToObject(o, "created", (double)r->created);
    cJSON_AddStringToObject(o, "model", srv->model_id);
    cJSON *choices = cJSON_AddArrayToObject(o, "choices");
    for (int p = 0; p < n_jobs; p++) {
        for (int i = 0; i < jobs[p]->n_choices; i++) {
            const oxl_choice_out *c = &jobs[p]->choice[i];
            size_t plen = r->echo && prompts[p] ? strlen(prompts[p]) : 0;
            char *text = malloc(plen + c->len + 1);
            if (text) {
                memcpy(text, prompts[p] ? prompts[p] : "", plen);
                memcpy(text + plen, c->text ? c->text : "", c->len);
            }
            cJSON *ch = cJSON_CreateObject();
            cJSON_AddItemToObject(ch, "text", json_text(text ? text : "", text ? plen + c->len : 0));
            free(text);
            cJSON_AddNumberToObject(ch, "index", p * r->n + i);
            if (r->logprobs) {
                cJSON_AddItemToObject(ch, "logprobs", completion_logprobs(srv, c, 0, c->n_lp, plen));
            } else {
                cJSON_AddNullToObject(ch, "logprobs");
            }
            cJSON_AddStringToObject(ch, "finish_reason", c->finish ? c->finish : "stop");
            cJSON_AddItemToArray(choices, ch);
        }
    }
    cJSON_AddItemToObject(o, "usage", usage_json(jobs, n_jobs, API_COMPLETION));
    cJSON_AddStringToObject(o, "system_fingerprint", "oxillama");
    return o;
}

typedef struct resp_ids {
    char msg_id[64];
} resp_ids;

static cJSON *response_part(const char *text, size_t len) {
    cJSON *part = cJSON_CreateObject();
    cJSON_AddStringToObject(part, "type", "output_text");
    cJSON_AddItemToObject(part, "text", json_text(text, len));
    cJSON_AddArrayToObject(part, "annotations");
    return part;
}

static cJSON *response_item(const char *msg_id, const char *status, const oxl_choice_out *c) {
    cJSON *it = cJSON_CreateObject();
    cJSON_AddStringToObject(it, "id", msg_id);
    cJSON_AddStringToObject(it, "type", "message");
    cJSON_AddStringToObject(it, "status", status);
    cJSON_AddStringToObject(it, "role", "assistant");
    cJSON *content = cJSON_AddArrayToObject(it, "content");
    if (c) {
        cJSON_AddItemToArray(content, response_part(c->text ? c->text : "", c->len));
    }
    return it;
}

/* The response object; j == NULL while in progress. */
static cJSON *response_object(oxl_srv *srv, const api_req *r, const char *msg_id, oxl_job *j) {
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "id", r->id);
    cJSON_AddStringToObject(o, "object", "response");
    cJSON_AddNumberToObject(o, "created_at", (double)r->created);
    bool incomplete = j && j->choice[0].finish && !strcmp(j->choice[0].finish, "length");
    cJSON_AddStringToObject(o, "status", !j ? "in_progress" : incomplete ? "incomplete" : "completed");
    cJSON_AddNullToObject(o, "error");
    if (incomplete) {
        cJSON *d = cJSON_AddObjectToObject(o, "incomplete_details");
        cJSON_AddStringToObject(d, "reason", "max_output_tokens");
    } else {
        cJSON_AddNullToObject(o, "incomplete_details");
    }
    cJSON_AddStringToObject(o, "model", srv->model_id);
    cJSON *out = cJSON_AddArrayToObject(o, "output");
    if (j) {
        cJSON_AddItemToArray(out, response_item(msg_id, "completed", &j->choice[0]));
    }
    cJSON_AddBoolToObject(o, "parallel_tool_calls", true);
    cJSON_AddNumberToObject(o, "temperature", r->gen.sampling.temp);
    cJSON_AddNumberToObject(o, "top_p", r->gen.sampling.top_p);
    if (r->gen.max_tokens >= 0) {
        cJSON_AddNumberToObject(o, "max_output_tokens", r->gen.max_tokens);
    } else {
        cJSON_AddNullToObject(o, "max_output_tokens");
    }
    cJSON_AddArrayToObject(o, "tools");
    cJSON_AddStringToObject(o, "tool_choice", "auto");
    if (j) {
        cJSON_AddItemToObject(o, "usage", usage_json(&j, 1, API_RESPONSES));
    } else {
        cJSON_AddNullToObject(o, "usage");
    }
    return o;
}

/* --- streams ----------------------------------------------------------------------------------- */

typedef struct choice_progress {
    size_t sent;       /* text bytes sent */
    int32_t lp_sent;   /* logprob records sent */
    bool started, finished;
} choice_progress;

typedef struct stream_state {
    api_req r;
    char **prompts;    /* completions with echo: each prompt's text */
    int n_prompts;
    choice_progress *cp; /* one per choice over all jobs */
    bool usage_sent;
    int seq;           /* responses: sequence_number */
    char msg_id[64];
    int phase;         /* responses: 0 = nothing sent, 1 = deltas, 2 = completed */
} stream_state;

static void put_event(oxl_stream *st, const char *event, cJSON *data) {
    char *s = cJSON_PrintUnformatted(data);
    cJSON_Delete(data);
    if (!s) {
        return;
    }
    if (event) {
        oxl_stream_put(st, "event: ", 7);
        oxl_stream_put(st, event, strlen(event));
        oxl_stream_put(st, "\n", 1);
    }
    oxl_stream_put(st, "data: ", 6);
    oxl_stream_put(st, s, strlen(s));
    oxl_stream_put(st, "\n\n", 2);
    free(s);
}

static void put_stream_error(oxl_stream *st, const oxl_api_error *e, bool responses, int seq) {
    cJSON *o = cJSON_CreateObject();
    if (responses) {
        cJSON_AddStringToObject(o, "type", "error");
        cJSON_AddStringToObject(o, "code", e->code ? e->code : "server_error");
        cJSON_AddStringToObject(o, "message", e->msg);
        cJSON_AddNullToObject(o, "param");
        cJSON_AddNumberToObject(o, "sequence_number", seq);
        put_event(st, "error", o);
        return;
    }
    cJSON *err = cJSON_AddObjectToObject(o, "error");
    cJSON_AddStringToObject(err, "message", e->msg);
    cJSON_AddStringToObject(err, "type", e->type);
    cJSON_AddNullToObject(err, "param");
    cJSON_AddStringToObject(err, "code", e->code ? e->code : "server_error");
    put_event(st, NULL, o);
}

static cJSON *chunk_base(oxl_srv *srv, const api_req *r) {
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "id", r->id);
    cJSON_AddStringToObject(o, "object", r->kind == API_CHAT ? "chat.completion.chunk" : "text_completion");
    cJSON_AddNumberToObject(o, "created", (double)r->created);
    cJSON_AddStringToObject(o, "model", srv->model_id);
    cJSON_AddStringToObject(o, "system_fingerprint", "oxillama");
    return o;
}

/* One chunk of one choice: role first, then content deltas, then the finish reason. */
static void put_chunk(oxl_stream *st, stream_state *ss, int index, const char *role, const char *text, size_t len,
                      cJSON *logprobs, const char *finish) {
    const api_req *r = &ss->r;
    cJSON *o = chunk_base(st->srv, r);
    cJSON *choices = cJSON_AddArrayToObject(o, "choices");
    cJSON *ch = cJSON_CreateObject();
    cJSON_AddNumberToObject(ch, "index", index);
    if (r->kind == API_CHAT) {
        cJSON *delta = cJSON_AddObjectToObject(ch, "delta");
        if (role) {
            cJSON_AddStringToObject(delta, "role", role);
            cJSON_AddStringToObject(delta, "content", "");
            cJSON_AddNullToObject(delta, "refusal");
        } else if (text) {
            cJSON_AddItemToObject(delta, "content", json_text(text, len));
        }
        if (logprobs) {
            cJSON *lp = cJSON_AddObjectToObject(ch, "logprobs");
            cJSON_AddItemToObject(lp, "content", logprobs);
            cJSON_AddNullToObject(lp, "refusal");
        } else {
            cJSON_AddNullToObject(ch, "logprobs");
        }
    } else {
        cJSON_AddItemToObject(ch, "text", json_text(text ? text : "", text ? len : 0));
        if (logprobs) {
            cJSON_AddItemToObject(ch, "logprobs", logprobs);
        } else {
            cJSON_AddNullToObject(ch, "logprobs");
        }
    }
    if (finish) {
        cJSON_AddStringToObject(ch, "finish_reason", finish);
    } else {
        cJSON_AddNullToObject(ch, "finish_reason");
    }
    cJSON_AddItemToArray(choices, ch);
    if (r->include_usage) {
        cJSON_AddNullToObject(o, "usage");
    }
    put_event(st, NULL, o);
}

/* With tools, streamed content stops where a tool call may begin: at "<tool_call>", at a reply
 * that opens with "{" (a bare JSON call), or before a tail that could begin "<tool_call>". */
static size_t tool_safe_len(const char *text, size_t len) {
    static const char tag[] = "<tool_call>";
    if (len == 0) {
        return 0;
    }
    const char *hit = memmem(text, len, tag, sizeof tag - 1);
    if (hit) {
        return (size_t)(hit - text);
    }
    size_t i = 0;
    while (i < len && (text[i] == ' ' || text[i] == '\n' || text[i] == '\t' || text[i] == '\r')) {
        i++;
    }
    if (i < len && text[i] == '{') {
        return 0;
    }
    for (size_t h = sizeof tag - 2; h > 0; h--) {
        if (h <= len && !memcmp(text + len - h, tag, h)) {
            return len - h;
        }
    }
    return len;
}

static const char *str_or(const cJSON *v, const char *fallback) {
    const char *p = cJSON_GetStringValue(v);
    return p ? p : fallback;
}

/* The end of a streamed choice that may hold tool calls: the rest of the content, then the calls
 * (two deltas each). Returns the finish reason. */
static const char *finish_tool_stream(oxl_stream *st, stream_state *ss, int index, const oxl_choice_out *c,
                                      choice_progress *cp) {
    size_t content_len = c->len;
    cJSON *calls = parse_tool_calls(c->text ? c->text : "", &content_len);
    if (!calls) {
        content_len = c->len;
    }
    if (content_len > cp->sent) {
        put_chunk(st, ss, index, NULL, c->text + cp->sent, content_len - cp->sent, NULL, NULL);
    }
    cp->sent = c->len;
    if (!calls) {
        return c->finish;
    }
    /* OpenAI's chunks: each call opens with its index, id, type, name and empty arguments; the
     * arguments follow in a delta of their own that names the index alone */
    int k = 0;
    for (cJSON *call = calls->child; call; call = call->next, k++) {
        cJSON *fn = cJSON_GetObjectItemCaseSensitive(call, "function");
        for (int part = 0; part < 2; part++) {
            cJSON *tc = cJSON_CreateObject();
            cJSON_AddNumberToObject(tc, "index", k);
            if (part == 0) {
                cJSON_AddStringToObject(tc, "id", str_or(cJSON_GetObjectItemCaseSensitive(call, "id"), ""));
                cJSON_AddStringToObject(tc, "type", "function");
            }
            cJSON *f = cJSON_AddObjectToObject(tc, "function");
            if (part == 0) {
                cJSON_AddStringToObject(f, "name", str_or(cJSON_GetObjectItemCaseSensitive(fn, "name"), ""));
            }
            cJSON_AddStringToObject(f, "arguments",
                                    part == 0 ? "" : str_or(cJSON_GetObjectItemCaseSensitive(fn, "arguments"), "{}"));
            cJSON *o = chunk_base(st->srv, &ss->r);
            cJSON *ch = cJSON_CreateObject();
            cJSON_AddNumberToObject(ch, "index", index);
            cJSON *delta = cJSON_AddObjectToObject(ch, "delta");
            cJSON_AddItemToArray(cJSON_AddArrayToObject(delta, "tool_calls"), tc);
            cJSON_AddNullToObject(ch, "logprobs");
            cJSON_AddNullToObject(ch, "finish_reason");
            cJSON_AddItemToArray(cJSON_AddArrayToObject(o, "choices"), ch);
            if (ss->r.include_usage) {
                cJSON_AddNullToObject(o, "usage");
            }
            put_event(st, NULL, o);
        }
    }
    cJSON_Delete(calls);
    return "tool_calls";
}

/* chat.completion.chunk and text_completion streams. */
static size_t produce_chunks(oxl_stream *st) {
    stream_state *ss = st->state;
    size_t before = st->len;
    oxl_api_error e;
    if (job_error(st->jobs, st->n_jobs, &e)) {
        put_stream_error(st, &e, false, 0);
        st->done = true;
        return st->len - before;
    }
    bool all = true;
    for (int p = 0; p < st->n_jobs; p++) {
        oxl_job *j = st->jobs[p];
        for (int i = 0; i < j->n_choices; i++) {
            const oxl_choice_out *c = &j->choice[i];
            choice_progress *cp = &ss->cp[p * ss->r.n + i];
            int index = p * ss->r.n + i;
            if (!cp->started) {
                cp->started = true;
                if (ss->r.kind == API_CHAT) {
                    put_chunk(st, ss, index, "assistant", NULL, 0, NULL, NULL);
                } else if (ss->r.echo && ss->prompts[p]) {
                    put_chunk(st, ss, index, NULL, ss->prompts[p], strlen(ss->prompts[p]), NULL, NULL);
                }
            }
            size_t avail = ss->r.has_tools && !c->finish ? tool_safe_len(c->text, c->len) : c->len;
            if (ss->r.has_tools && c->finish && !cp->finished) {
                avail = cp->sent; /* finish_tool_stream sends the rest */
            }
            if (avail > cp->sent || (ss->r.logprobs && c->n_lp > cp->lp_sent && c->finish)) {
                cJSON *lp = NULL;
                if (ss->r.logprobs) {
                    lp = ss->r.kind == API_CHAT ? chat_logprobs(st->srv, c, cp->lp_sent, c->n_lp)
                                                : completion_logprobs(st->srv, c, cp->lp_sent, c->n_lp, cp->sent);
                    cp->lp_sent = c->n_lp;
                }
                put_chunk(st, ss, index, NULL, c->text + cp->sent, avail - cp->sent, lp, NULL);
                cp->sent = avail;
            }
            if (c->finish && !cp->finished) {
                cp->finished = true;
                const char *reason = ss->r.has_tools ? finish_tool_stream(st, ss, index, c, cp) : c->finish;
                put_chunk(st, ss, index, NULL, NULL, 0, NULL, reason);
            }
            all &= cp->finished;
        }
    }
    if (all) {
        if (ss->r.include_usage && !ss->usage_sent) {
            cJSON *o = chunk_base(st->srv, &ss->r);
            cJSON_AddArrayToObject(o, "choices");
            cJSON_AddItemToObject(o, "usage", usage_json(st->jobs, st->n_jobs, ss->r.kind));
            put_event(st, NULL, o);
            ss->usage_sent = true;
        }
        oxl_stream_put(st, "data: [DONE]\n\n", 14);
        st->done = true;
    }
    return st->len - before;
}

static void put_resp_event(oxl_stream *st, stream_state *ss, const char *type, cJSON *o) {
    cJSON *head = cJSON_CreateObject();
    cJSON_AddStringToObject(head, "type", type);
    cJSON_AddNumberToObject(head, "sequence_number", ss->seq++);
    for (cJSON *m = o->child; m;) {
        cJSON *next = m->next;
        cJSON_AddItemToObject(head, m->string, cJSON_DetachItemViaPointer(o, m));
        m = next;
    }
    cJSON_Delete(o);
    put_event(st, type, head);
}

static cJSON *resp_ref(const stream_state *ss) {
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "item_id", ss->msg_id);
    cJSON_AddNumberToObject(o, "output_index", 0);
    cJSON_AddNumberToObject(o, "content_index", 0);
    return o;
}

/* The Responses API event sequence: created, in_progress, output_item.added, content_part.added,
 * output_text.delta..., output_text.done, content_part.done, output_item.done, completed. */
static size_t produce_response_events(oxl_stream *st) {
    stream_state *ss = st->state;
    size_t before = st->len;
    oxl_job *j = st->jobs[0];
    const oxl_choice_out *c = &j->choice[0];
    choice_progress *cp = &ss->cp[0];
    oxl_api_error e;
    if (ss->phase == 0) {
        cJSON *o = cJSON_CreateObject();
        cJSON_AddItemToObject(o, "response", response_object(st->srv, &ss->r, ss->msg_id, NULL));
        put_resp_event(st, ss, "response.created", o);
        o = cJSON_CreateObject();
        cJSON_AddItemToObject(o, "response", response_object(st->srv, &ss->r, ss->msg_id, NULL));
        put_resp_event(st, ss, "response.in_progress", o);
        o = cJSON_CreateObject();
        cJSON_AddNumberToObject(o, "output_index", 0);
        cJSON_AddItemToObject(o, "item", response_item(ss->msg_id, "in_progress", NULL));
        put_resp_event(st, ss, "response.output_item.added", o);
        o = resp_ref(ss);
        cJSON_AddItemToObject(o, "part", response_part("", 0));
        put_resp_event(st, ss, "response.content_part.added", o);
        ss->phase = 1;
    }
    if (job_error(st->jobs, 1, &e)) {
        put_stream_error(st, &e, true, ss->seq++);
        st->done = true;
        return st->len - before;
    }
    if (c->len > cp->sent) {
        cJSON *o = resp_ref(ss);
        cJSON_AddItemToObject(o, "delta", json_text(c->text + cp->sent, c->len - cp->sent));
        put_resp_event(st, ss, "response.output_text.delta", o);
        cp->sent = c->len;
    }
    if (job_done(j)) {
        cJSON *o = resp_ref(ss);
        cJSON_AddItemToObject(o, "text", json_text(c->text ? c->text : "", c->len));
        put_resp_event(st, ss, "response.output_text.done", o);
        o = resp_ref(ss);
        cJSON_AddItemToObject(o, "part", response_part(c->text ? c->text : "", c->len));
        put_resp_event(st, ss, "response.content_part.done", o);
        o = cJSON_CreateObject();
        cJSON_AddNumberToObject(o, "output_index", 0);
        cJSON_AddItemToObject(o, "item", response_item(ss->msg_id, "completed", c));
        put_resp_event(st, ss, "response.output_item.done", o);
        o = cJSON_CreateObject();
        cJSON_AddItemToObject(o, "response", response_object(st->srv, &ss->r, ss->msg_id, j));
        put_resp_event(st, ss, "response.completed", o);
        st->done = true;
    }
    return st->len - before;
}

static void stream_state_free(stream_state *ss) {
    if (!ss) {
        return;
    }
    for (int i = 0; i < ss->n_prompts; i++) {
        free(ss->prompts[i]);
    }
    free(ss->prompts);
    free(ss->cp);
    oxl_gen_params_free(&ss->r.gen);
    free(ss);
}

/* --- running a request: one job per prompt, then a stream or a body ----------------------------- */

static void stream_state_release(void *state);

static void free_prompts(char **prompts, int n) {
    for (int p = 0; prompts && p < n; p++) {
        free(prompts[p]);
    }
    free(prompts);
}

/* Submits one job per prompt (taking the token arrays and prompts); the reply is a stream (which
 * takes r's parameters) or the finished object. */
static void run(oxl_srv *srv, const oxl_request *rq, api_req *r, oxl_token **toks, int32_t *n_toks, char **prompts,
                int n_prompts, oxl_reply *out) {
    oxl_api_error e = {0};
    oxl_job **jobs = calloc((size_t)n_prompts, sizeof *jobs);
    int n_jobs = 0;
    bool ok = jobs != NULL;
    for (int p = 0; ok && p < n_prompts; p++) {
        oxl_gen_params g = r->gen;
        /* each job owns a copy of the parameters' arrays */
        memset(g.stop, 0, sizeof g.stop);
        for (int k = 0; k < g.n_stop; k++) {
            g.stop[k] = strdup(r->gen.stop[k]);
        }
        g.bias_tok = g.n_bias ? malloc(sizeof(oxl_token) * (size_t)g.n_bias) : NULL;
        g.bias_val = g.n_bias ? malloc(sizeof(float) * (size_t)g.n_bias) : NULL;
        if (g.n_bias && g.bias_tok && g.bias_val) {
            memcpy(g.bias_tok, r->gen.bias_tok, sizeof(oxl_token) * (size_t)g.n_bias);
            memcpy(g.bias_val, r->gen.bias_val, sizeof(float) * (size_t)g.n_bias);
        }
        oxl_job *j = oxl_job_new(toks[p], n_toks[p], r->n, &g);
        if (!j) {
            oxl_gen_params_free(&g);
            ok = false;
            oxl_api_err(&e, 500, "server_error", NULL, NULL, "out of memory");
            break;
        }
        toks[p] = NULL;
        if (submit(srv, j, &e) != 0) {
            oxl_job_release(NULL, j);
            ok = false;
            break;
        }
        jobs[n_jobs++] = j;
    }
    if (!ok) {
        for (int p = 0; p < n_jobs; p++) {
            oxl_job_cancel(srv->sched, jobs[p]);
        }
        release_jobs(srv, jobs, n_jobs);
        free_prompts(prompts, n_prompts);
        oxl_reply_error(out, &e);
        return;
    }
    if (r->stream) {
        oxl_stream *st = calloc(1, sizeof *st);
        stream_state *ss = calloc(1, sizeof *ss);
        choice_progress *cp = calloc((size_t)(n_prompts * r->n), sizeof *cp);
        if (!st || !ss || !cp) {
            free(st);
            free(ss);
            free(cp);
            for (int p = 0; p < n_jobs; p++) {
                oxl_job_cancel(srv->sched, jobs[p]);
            }
            release_jobs(srv, jobs, n_jobs);
            free_prompts(prompts, n_prompts);
            oxl_api_err(&e, 500, "server_error", NULL, NULL, "out of memory");
            oxl_reply_error(out, &e);
            return;
        }
        ss->r = *r;
        memset(&r->gen, 0, sizeof r->gen);
        ss->prompts = prompts;
        ss->n_prompts = prompts ? n_prompts : 0;
        ss->cp = cp;
        random_id("msg_", ss->msg_id, sizeof ss->msg_id);
        st->srv = srv;
        st->fd = rq->fd;
        st->jobs = jobs;
        st->n_jobs = n_jobs;
        st->state = ss;
        st->free_state = stream_state_release;
        st->produce = r->kind == API_RESPONSES ? produce_response_events : produce_chunks;
        out->status = 200;
        out->stream = st;
        return;
    }
    if (wait_jobs(srv, jobs, n_jobs, rq->fd) != 0) {
        release_jobs(srv, jobs, n_jobs);
        oxl_api_err(&e, 499, "invalid_request_error", "client_closed_request", NULL, "client closed the request");
        oxl_reply_error(out, &e);
    } else if (job_error(jobs, n_jobs, &e)) {
        release_jobs(srv, jobs, n_jobs);
        oxl_reply_error(out, &e);
    } else {
        char msg_id[64];
        random_id("msg_", msg_id, sizeof msg_id);
        cJSON *o = r->kind == API_CHAT         ? chat_object(srv, r, jobs[0])
                   : r->kind == API_RESPONSES ? response_object(srv, r, msg_id, jobs[0])
                                               : completion_object(srv, r, jobs, n_jobs, prompts);
        release_jobs(srv, jobs, n_jobs);
        oxl_reply_json(out, 200, o);
    }
    free_prompts(prompts, n_prompts);
}

static void stream_state_release(void *state) { stream_state_free(state); }

/* --- routes ------------------------------------------------------------------------------------ */

void oxl_api_chat(oxl_srv *srv, const oxl_request *rq, oxl_reply *out) {
    api_req r = {.kind = API_CHAT};
    oxl_api_error e = {0};
    const cJSON *b = rq->json;
    oxl_token *toks = NULL;
    int32_t n_toks = 0;
    cJSON *msgs = NULL;
    if (parse_common(srv, b, &r, &e) < 0 || get_bool(b, "logprobs", &r.logprobs, &e) < 0) {
        goto fail;
    }
    long long k = 0;
    int rc = get_int(b, "top_logprobs", 0, OXL_SRV_MAX_TOP_LOGPROBS, &k, &e);
    if (rc < 0) {
        goto fail;
    }
    if (rc && !r.logprobs) {
        BAD(&e, "top_logprobs", "'top_logprobs' requires 'logprobs': true");
        goto fail;
    }
    r.gen.top_logprobs = r.logprobs ? (int32_t)k : -1;
    const cJSON *tools = field(b, "tools");
    if (tools && !cJSON_IsArray(tools)) {
        BAD_TYPE(&e, "tools", "'tools': expected a list of tool definitions");
        goto fail;
    }
    const cJSON *tc = field(b, "tool_choice");
    if (tc && !cJSON_IsString(tc) && !cJSON_IsObject(tc)) {
        BAD_TYPE(&e, "tool_choice", "'tool_choice': expected a string or an object");
        goto fail;
    }
    if (tc && cJSON_IsString(tc) && !strcmp(tc->valuestring, "none")) {
        tools = NULL;
    }
    r.tools = tools && cJSON_GetArraySize(tools) > 0 ? tools : NULL;
    r.has_tools = r.tools != NULL;
    const cJSON *m = cJSON_GetObjectItemCaseSensitive(b, "messages");
    if (!m) {
        BAD(&e, "messages", "'messages' is required");
        goto fail;
    }
    if (!(msgs = normalize_messages(m, "messages", &e)) ||
        chat_prompt(srv, msgs, r.tools, &toks, &n_toks, "messages", &e) < 0 ||
        check_context(srv, n_toks, "messages", &e) < 0) {
        goto fail;
    }
    cJSON_Delete(msgs);
    run(srv, rq, &r, &toks, &n_toks, NULL, 1, out);
    free(toks);
    oxl_gen_params_free(&r.gen);
    return;
fail:
    cJSON_Delete(msgs);
    free(toks);
    oxl_gen_params_free(&r.gen);
    oxl_reply_error(out, &e);
}

/* A prompt given as token ids. */
static int token_list(oxl_srv *srv, const cJSON *a, const char *param, oxl_token **out, int32_t *n, oxl_api_error *e) {
    int32_t cnt = cJSON_GetArraySize(a), n_vocab = oxl_model_n_vocab(srv->model);
    *out = malloc(sizeof(oxl_token) * (size_t)(cnt + 1));
    if (!*out) {
        return oxl_api_err(e, 500, "server_error", NULL, NULL, "out of memory");
    }
    int32_t i = 0;
    for (const cJSON *t = a->child; t; t = t->next, i++) {
        if (!cJSON_IsNumber(t) || t->valuedouble != floor(t->valuedouble) || t->valuedouble < 0 ||
            t->valuedouble >= n_vocab) {
            return BAD(e, param, "'%s[%d]': expected a token id in [0, %d)", param, i, n_vocab);
        }
        (*out)[i] = (oxl_token)t->valuedouble;
    }
    *n = cnt;
    return 0;
}

void oxl_api_completions(oxl_srv *srv, const oxl_request *rq, oxl_reply *out) {
    api_req r = {.kind = API_COMPLETION};
    oxl_api_error e = {0};
    const cJSON *b = rq->json;
    int n_prompts = 0;
    oxl_token **toks = NULL;
    int32_t *n_toks = NULL;
    char **prompts = NULL;
    if (parse_common(srv, b, &r, &e) < 0 || get_bool(b, "echo", &r.echo, &e) < 0) {
        goto fail;
    }
    if (!field(b, "max_tokens")) {
        r.gen.max_tokens = 16; /* the OpenAI default of this route */
    }
    long long k = 0;
    int rc = get_int(b, "logprobs", 0, 5, &k, &e);
    if (rc < 0) {
        goto fail;
    }
    r.logprobs = rc == 1;
    r.gen.top_logprobs = rc ? (int32_t)k : -1;
    const char *suffix = NULL;
    if (get_str(b, "suffix", &suffix, &e) < 0) {
        goto fail;
    }
    if (suffix && *suffix) {
        if (oxl_gguf_find_key(srv->model->gguf, "tokenizer.ggml.fim_pre_token_id") < 0) {
            BAD(&e, "suffix", "'suffix': model '%s' has no fill-in-the-middle tokens (tokenizer.ggml.fim_pre_token_id)",
                srv->model_id);
        } else {
            BAD(&e, "suffix", "'suffix': fill-in-the-middle prompts are not implemented by this server yet");
        }
        goto fail;
    }
    const cJSON *p = field(b, "prompt");
    if (!p) {
        BAD(&e, "prompt", "'prompt' is required");
        goto fail;
    }
    /* a string, a list of strings, a list of token ids, or a list of such lists */
    bool single = cJSON_IsString(p) || (cJSON_IsArray(p) && p->child && cJSON_IsNumber(p->child));
    if (!single && !cJSON_IsArray(p)) {
        BAD_TYPE(&e, "prompt", "'prompt': expected a string, a list of strings or a list of token ids");
        goto fail;
    }
    n_prompts = single ? 1 : cJSON_GetArraySize(p);
    if (n_prompts == 0 || n_prompts > srv->cfg->queue_size) {
        BAD(&e, "prompt", "'prompt': %d prompts; between 1 and %d are accepted (--queue-size)", n_prompts,
            srv->cfg->queue_size);
        n_prompts = 0;
        goto fail;
    }
    toks = calloc((size_t)n_prompts, sizeof *toks);
    n_toks = calloc((size_t)n_prompts, sizeof *n_toks);
    prompts = calloc((size_t)n_prompts, sizeof *prompts);
    if (!toks || !n_toks || !prompts) {
        oxl_api_err(&e, 500, "server_error", NULL, NULL, "out of memory");
        goto fail;
    }
    const cJSON *item = single ? p : p->child;
    for (int i = 0; i < n_prompts; i++, item = item->next) {
        char param[32];
        snprintf(param, sizeof param, single ? "prompt" : "prompt[%d]", i);
        if (cJSON_IsString(item)) {
            prompts[i] = strdup(item->valuestring);
            if (tokenize_text(srv, item->valuestring, strlen(item->valuestring), &toks[i], &n_toks[i], param, &e) < 0) {
                goto fail;
            }
        } else if (cJSON_IsArray(item)) {
            if (token_list(srv, item, param, &toks[i], &n_toks[i], &e) < 0) {
                goto fail;
            }
            size_t cap = 1, len = 0;
            char buf[256];
            for (int32_t t = 0; t < n_toks[i]; t++) {
                cap += (size_t)piece(srv->model, toks[i][t], buf, sizeof buf);
            }
            prompts[i] = malloc(cap);
            for (int32_t t = 0; prompts[i] && t < n_toks[i]; t++) {
                int n = piece(srv->model, toks[i][t], buf, sizeof buf);
                memcpy(prompts[i] + len, buf, (size_t)n);
                len += (size_t)n;
            }
            if (prompts[i]) {
                prompts[i][len] = 0;
            }
        } else {
            BAD_TYPE(&e, param, "'%s': expected a string or a list of token ids", param);
            goto fail;
        }
        if (check_context(srv, n_toks[i], param, &e) < 0) {
            goto fail;
        }
    }
    run(srv, rq, &r, toks, n_toks, prompts, n_prompts, out);
    prompts = NULL;
    goto done;
fail:
    oxl_reply_error(out, &e);
done:
    for (int i = 0; i < n_prompts; i++) {
        free(toks ? toks[i] : NULL);
        free(prompts ? prompts[i] : NULL);
    }
    free(toks);
    free(n_toks);
    free(prompts);
    oxl_gen_params_free(&r.gen);
}

void oxl_api_responses(oxl_srv *srv, const oxl_request *rq, oxl_reply *out) {
    api_req r = {.kind = API_RESPONSES};
    oxl_api_error e = {0};
    const cJSON *b = rq->json;
    cJSON *msgs = NULL, *norm = NULL;
    oxl_token *toks = NULL;
    int32_t n_toks = 0;
    if (parse_common(srv, b, &r, &e) < 0) {
        goto fail;
    }
    if (r.n != 1) {
        BAD(&e, "n", "'n' is not a field of the Responses API");
        goto fail;
    }
    const char *instructions = NULL;
    if (get_str(b, "instructions", &instructions, &e) < 0) {
        goto fail;
    }
    const cJSON *in = field(b, "input");
    if (!in || (!cJSON_IsString(in) && !cJSON_IsArray(in))) {
        BAD_TYPE(&e, "input", "'input': expected a string or a list of input messages");
        goto fail;
    }
    msgs = cJSON_CreateArray();
    if (instructions) {
        cJSON *m = cJSON_CreateObject();
        cJSON_AddStringToObject(m, "role", "system");
        cJSON_AddStringToObject(m, "content", instructions);
        cJSON_AddItemToArray(msgs, m);
    }
    if (cJSON_IsString(in)) {
        cJSON *m = cJSON_CreateObject();
        cJSON_AddStringToObject(m, "role", "user");
        cJSON_AddStringToObject(m, "content", in->valuestring);
        cJSON_AddItemToArray(msgs, m);
    } else {
        for (const cJSON *m = in->child; m; m = m->next) {
            cJSON *d = cJSON_Duplicate(m, true);
            cJSON_DeleteItemFromObjectCaseSensitive(d, "type");
            cJSON_AddItemToArray(msgs, d);
        }
    }
    if (!(norm = normalize_messages(msgs, "input", &e)) || chat_prompt(srv, norm, NULL, &toks, &n_toks, "input", &e) < 0 ||
        check_context(srv, n_toks, "input", &e) < 0) {
        goto fail;
    }
    cJSON_Delete(msgs);
    cJSON_Delete(norm);
    run(srv, rq, &r, &toks, &n_toks, NULL, 1, out);
    free(toks);
    oxl_gen_params_free(&r.gen);
    return;
fail:
    cJSON_Delete(msgs);
    cJSON_Delete(norm);
    free(toks);
    oxl_gen_params_free(&r.gen);
    oxl_reply_error(out, &e);
}

/* --- embeddings -------------------------------------------------------------------------------- */

#define EMBD_MAX_INPUTS 2048 /* the OpenAI API's limit of inputs per request */

/* llama.cpp's common_embd_normalize: -1 none, 0 max-abs scaled to the int16 range, 2 Euclidean
 * (the server's default), other p > 0 the p-norm; the sum is kept in double, the factor in float. */
static void embd_normalize(const float *in, float *out, int32_t n, int p) {
    double sum = 0.0;
    if (p == -1) {
        sum = 1.0;
    } else if (p == 0) {
        for (int32_t i = 0; i < n; i++) {
            sum = sum < fabs(in[i]) ? fabs(in[i]) : sum;
        }
        sum /= 32760.0;
    } else if (p == 2) {
        for (int32_t i = 0; i < n; i++) {
            sum += in[i] * in[i];
        }
        sum = sqrt(sum);
    } else {
        for (int32_t i = 0; i < n; i++) {
            sum += pow(fabs(in[i]), p);
        }
        sum = pow(sum, 1.0 / p);
    }
    const float norm = sum > 0.0 ? (float)(1.0 / sum) : 0.0f;
    for (int32_t i = 0; i < n; i++) {
        out[i] = in[i] * norm;
    }
}

/* Standard base64 (RFC 4648, padded) of n float32 values as little-endian bytes, the layout the
 * OpenAI API and its clients decode. Returns a malloc'd NUL-terminated string or NULL. */
static char *base64_f32(const float *v, int32_t n) {
    static const char tab[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    const size_t nb = (size_t)n * 4;
    unsigned char *bytes = malloc(nb + 1);
    char *out = malloc((nb + 2) / 3 * 4 + 1);
    if (!bytes || !out) {
        free(bytes);
        free(out);
        return NULL;
    }
    for (int32_t i = 0; i < n; i++) {
        uint32_t u;
        memcpy(&u, &v[i], 4);
        for (int k = 0; k < 4; k++) {
            bytes[(size_t)i * 4 + (size_t)k] = (unsigned char)(u >> (8 * k));
        }
    }
    size_t o = 0;
    for (size_t i = 0; i < nb; i += 3) {
        const uint32_t t = (uint32_t)bytes[i] << 16 | (i + 1 < nb ? (uint32_t)bytes[i + 1] << 8 : 0) |
                           (i + 2 < nb ? bytes[i + 2] : 0);
        out[o++] = tab[t >> 18 & 63];
        out[o++] = tab[t >> 12 & 63];
        out[o++] = i + 1 < nb ? tab[t >> 6 & 63] : '=';
        out[o++] = i + 2 < nb ? tab[t & 63] : '=';
    }
    out[o] = 0;
    free(bytes);
    return out;
}

/* A JSON array of n floats, each in the fewest digits that read back as the same float (as
 * llama.cpp's JSON library writes floats); a non-finite value as null. NULL when out of memory. */
static cJSON *float_array(const float *v, int32_t n) {
    char *buf = malloc((size_t)n * 17 + 3);
    if (!buf) {
        return NULL;
    }
    size_t o = 0;
    buf[o++] = '[';
    for (int32_t i = 0; i < n; i++) {
        if (i > 0) {
            buf[o++] = ',';
        }
        if (!isfinite(v[i])) {
            memcpy(buf + o, "null", 4);
            o += 4;
            continue;
        }
        char num[32];
        int len = 0;
        for (int prec = 6; prec <= 9; prec++) {
            len = snprintf(num, sizeof num, "%.*g", prec, (double)v[i]);
            if (strtof(num, NULL) == v[i]) {
                break;
            }
        }
        memcpy(buf + o, num, (size_t)len);
        o += (size_t)len;
    }
    buf[o++] = ']';
    buf[o] = 0;
    cJSON *a = cJSON_CreateRaw(buf);
    free(buf);
    return a;
}

/* POST /v1/embeddings, as llama.cpp's server (handle_embeddings_impl with the OpenAI response shape,
 * format_embeddings_response_oaicompat): input is a string, a list of token ids, or a list of
 * strings and token lists; each input is tokenized with BOS/EOS as the vocabulary asks, pooled by
 * the scheduler's embedding context and normalised with embd_normalize (default 2 = L2). */
void oxl_api_embeddings(oxl_srv *srv, const oxl_request *rq, oxl_reply *out) {
    oxl_api_error e = {0};
    const cJSON *b = rq->json;
    const cJSON *in = field(b, "input");
    const char *fmt = NULL, *model = NULL;
    const int32_t n_embd = oxl_model_n_embd(srv->model), n_ctx = oxl_sched_n_ctx_slot(srv->sched);
    long long dims = n_embd, norm = 2;
    oxl_token **toks = NULL;
    int32_t *lens = NULL, n_in = 0;
    if (check_model(srv, b, &e) < 0 || get_str(b, "model", &model, &e) < 0 ||
        get_str(b, "encoding_format", &fmt, &e) < 0 || get_int(b, "dimensions", 1, 1e9, &dims, &e) < 0 ||
        get_int(b, "embd_normalize", -1, 64, &norm, &e) < 0) {
        goto fail;
    }
    if (fmt && strcmp(fmt, "float") && strcmp(fmt, "base64")) {
        BAD(&e, "encoding_format", "'encoding_format': '%.40s' is not 'float' or 'base64'", fmt);
        goto fail;
    }
    if (dims != n_embd) {
        BAD(&e, "dimensions", "'dimensions': %lld; model '%s' gives embeddings of %d dimensions only", dims,
            srv->model_id, n_embd);
        goto fail;
    }
    if (!in) {
        BAD(&e, "input", "'input' is required");
        goto fail;
    }
    const bool single = cJSON_IsString(in) || (cJSON_IsArray(in) && in->child && cJSON_IsNumber(in->child));
    if (!single && !cJSON_IsArray(in)) {
        BAD_TYPE(&e, "input", "'input': expected a string, a list of strings or a list of token ids");
        goto fail;
    }
    n_in = single ? 1 : cJSON_GetArraySize(in);
    if (n_in <= 0 || n_in > EMBD_MAX_INPUTS) {
        BAD(&e, "input", "'input': %d inputs; between 1 and %d are accepted", n_in, EMBD_MAX_INPUTS);
        n_in = 0;
        goto fail;
    }
    toks = calloc((size_t)n_in, sizeof *toks);
    lens = calloc((size_t)n_in, sizeof *lens);
    if (!toks || !lens) {
        oxl_api_err(&e, 500, "server_error", NULL, NULL, "out of memory");
        goto fail;
    }
    size_t total = 0;
    const cJSON *item = single ? in : in->child;
    for (int32_t i = 0; i < n_in; i++, item = item->next) {
        char param[32];
        snprintf(param, sizeof param, single ? "input" : "input[%d]", i);
        if (cJSON_IsString(item)) {
            if (tokenize_text(srv, item->valuestring, strlen(item->valuestring), &toks[i], &lens[i], param, &e) < 0) {
                goto fail;
            }
        } else if (cJSON_IsArray(item)) {
            if (token_list(srv, item, param, &toks[i], &lens[i], &e) < 0) {
                goto fail;
            }
        } else {
            BAD_TYPE(&e, param, "'%s': expected a string or a list of token ids", param);
            goto fail;
        }
        if (lens[i] == 0) {
            BAD(&e, param, "'%s': input content cannot be empty (the model adds no BOS token)", param);
            goto fail;
        }
        if (lens[i] > n_ctx) {
            oxl_api_err(&e, 400, "invalid_request_error", "context_length_exceeded", param,
                        "This model's maximum context length is %d tokens per slot, however '%s' resulted in %d "
                        "tokens", n_ctx, param, lens[i]);
            goto fail;
        }
        total += (size_t)lens[i];
    }
    /* one job: the inputs back to back */
    oxl_token *all = malloc(sizeof(oxl_token) * total);
    int32_t *all_len = malloc(sizeof(int32_t) * (size_t)n_in);
    if (!all || !all_len) {
        free(all);
        free(all_len);
        oxl_api_err(&e, 500, "server_error", NULL, NULL, "out of memory");
        goto fail;
    }
    size_t off = 0;
    for (int32_t i = 0; i < n_in; i++) {
        memcpy(all + off, toks[i], sizeof(oxl_token) * (size_t)lens[i]);
        off += (size_t)lens[i];
        all_len[i] = lens[i];
    }
    oxl_job *j = oxl_embd_job_new(all, all_len, n_in, n_embd);
    if (!j) {
        oxl_api_err(&e, 500, "server_error", NULL, NULL, "out of memory");
        goto fail;
    }
    if (submit(srv, j, &e) != 0) {
        oxl_job_release(NULL, j);
        goto fail;
    }
    if (wait_jobs(srv, &j, 1, rq->fd) != 0) {
        oxl_job_release(srv->sched, j);
        oxl_api_err(&e, 499, "invalid_request_error", "client_closed_request", NULL, "client closed the request");
        goto fail;
    }
    if (job_error(&j, 1, &e)) {
        oxl_job_release(srv->sched, j);
        goto fail;
    }
    const bool b64 = fmt && !strcmp(fmt, "base64");
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "object", "list");
    cJSON *data = cJSON_AddArrayToObject(o, "data");
    float *v = malloc(sizeof(float) * (size_t)n_embd);
    bool ok = v != NULL;
    for (int32_t i = 0; ok && i < n_in; i++) {
        embd_normalize(j->embd + (size_t)i * (size_t)n_embd, v, n_embd, (int)norm);
        cJSON *d = cJSON_CreateObject();
        cJSON_AddStringToObject(d, "object", "embedding");
        cJSON_AddNumberToObject(d, "index", i);
        if (b64) {
            char *s64 = base64_f32(v, n_embd);
            ok = s64 != NULL;
            cJSON_AddStringToObject(d, "embedding", s64 ? s64 : "");
            cJSON_AddStringToObject(d, "encoding_format", "base64");
            free(s64);
        } else {
            cJSON *a = float_array(v, n_embd);
            ok = a != NULL;
            cJSON_AddItemToObject(d, "embedding", a ? a : cJSON_CreateArray());
        }
        cJSON_AddItemToArray(data, d);
    }
    free(v);
    cJSON_AddStringToObject(o, "model", model ? model : srv->model_id);
    cJSON *u = cJSON_AddObjectToObject(o, "usage");
    cJSON_AddNumberToObject(u, "prompt_tokens", (double)total);
    cJSON_AddNumberToObject(u, "total_tokens", (double)total);
    oxl_job_release(srv->sched, j);
    if (!ok) {
        cJSON_Delete(o);
        oxl_api_err(&e, 500, "server_error", NULL, NULL, "out of memory");
        goto fail;
    }
    oxl_reply_json(out, 200, o);
    goto done;
fail:
    oxl_reply_error(out, &e);
done:
    for (int32_t i = 0; toks && i < n_in; i++) {
        free(toks[i]);
    }
    free(toks);
    free(lens);
}

static cJSON *model_json(oxl_srv *srv) {
    cJSON *m = cJSON_CreateObject();
    cJSON_AddStringToObject(m, "id", srv->model_id);
    cJSON_AddStringToObject(m, "object", "model");
    cJSON_AddNumberToObject(m, "created", (double)srv->created);
    cJSON_AddStringToObject(m, "owned_by", "oxillama");
    if (atomic_load(&srv->ready)) {
        cJSON *meta = cJSON_AddObjectToObject(m, "meta");
        cJSON_AddStringToObject(meta, "description", oxl_model_desc(srv->model));
        cJSON_AddNumberToObject(meta, "n_vocab", oxl_model_n_vocab(srv->model));
        cJSON_AddNumberToObject(meta, "n_ctx_train", oxl_model_n_ctx_train(srv->model));
        cJSON_AddNumberToObject(meta, "n_ctx_slot", oxl_sched_n_ctx_slot(srv->sched));
        cJSON_AddNumberToObject(meta, "n_slots", oxl_ctx_n_seq_max(srv->ctx));
        cJSON_AddStringToObject(meta, "chat_template", oxl_model_chat_template(srv->model) ? "model" : "chatml");
    }
    return m;
}

void oxl_api_models(oxl_srv *srv, const oxl_request *rq, oxl_reply *out) {
    const char *one = rq->path + strlen("/v1/models");
    if (*one == '/') {
        one++;
        if (strcmp(one, srv->model_id) && strcmp(one, srv->model_file)) {
            oxl_api_error e;
            oxl_api_err(&e, 404, "invalid_request_error", "model_not_found", "model",
                        "The model '%.200s' does not exist; this server has '%s'", one, srv->model_id);
            oxl_reply_error(out, &e);
            return;
        }
        oxl_reply_json(out, 200, model_json(srv));
        return;
    }
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "object", "list");
    cJSON *data = cJSON_AddArrayToObject(o, "data");
    cJSON_AddItemToArray(data, model_json(srv));
    oxl_reply_json(out, 200, o);
}

/* llama.cpp's /tokenize: {content, add_special = false, parse_special = true, with_pieces = false}. */
void oxl_api_tokenize(oxl_srv *srv, const oxl_request *rq, oxl_reply *out) {
    oxl_api_error e = {0};
    const cJSON *b = rq->json;
    const char *content = NULL;
    bool add_special = false, parse_special = true, with_pieces = false;
    if (get_str(b, "content", &content, &e) < 0 || get_bool(b, "add_special", &add_special, &e) < 0 ||
        get_bool(b, "parse_special", &parse_special, &e) < 0 || get_bool(b, "with_pieces", &with_pieces, &e) < 0) {
        oxl_reply_error(out, &e);
        return;
    }
    if (!content) {
        BAD(&e, "content", "'content' is required");
        oxl_reply_error(out, &e);
        return;
    }
    size_t len = strlen(content);
    int32_t need = oxl_tokenize(srv->model, content, len, NULL, 0, add_special, parse_special);
    need = need == INT32_MIN ? 0 : need < 0 ? -need : need;
    oxl_token *t = malloc(sizeof(oxl_token) * (size_t)(need + 1));
    int32_t n = t ? oxl_tokenize(srv->model, content, len, t, need, add_special, parse_special) : -1;
    if (n < 0) {
        free(t);
        BAD(&e, "content", "'content' cannot be tokenized");
        oxl_reply_error(out, &e);
        return;
    }
    cJSON *o = cJSON_CreateObject();
    cJSON *arr = cJSON_AddArrayToObject(o, "tokens");
    char buf[256];
    for (int32_t i = 0; i < n; i++) {
        if (!with_pieces) {
            cJSON_AddItemToArray(arr, cJSON_CreateNumber(t[i]));
            continue;
        }
        cJSON *x = cJSON_CreateObject();
        cJSON_AddNumberToObject(x, "id", t[i]);
        int k = piece(srv->model, t[i], buf, sizeof buf);
        bool valid = true;
        for (int q = 0; q < k && valid;) {
            int s = buf[q] ? utf8_seq((const unsigned char *)buf + q, (size_t)(k - q)) : 0;
            valid = s > 0;
            q += s;
        }
        cJSON_AddItemToObject(x, "piece", valid ? json_text(buf, (size_t)k) : bytes_json(buf, k));
        cJSON_AddItemToArray(arr, x);
    }
    free(t);
    oxl_reply_json(out, 200, o);
}

void oxl_api_detokenize(oxl_srv *srv, const oxl_request *rq, oxl_reply *out) {
    oxl_api_error e = {0};
    const cJSON *a = field(rq->json, "tokens");
    oxl_token *t = NULL;
    int32_t n = 0;
    if (!a || !cJSON_IsArray(a)) {
        BAD_TYPE(&e, "tokens", "'tokens': expected a list of token ids");
        oxl_reply_error(out, &e);
        return;
    }
    if (token_list(srv, a, "tokens", &t, &n, &e) < 0) {
        free(t);
        oxl_reply_error(out, &e);
        return;
    }
    size_t cap = 1, len = 0;
    char buf[256];
    for (int32_t i = 0; i < n; i++) {
        cap += (size_t)piece(srv->model, t[i], buf, sizeof buf);
    }
    char *s = malloc(cap);
    for (int32_t i = 0; s && i < n; i++) {
        int k = oxl_token_to_piece(srv->model, t[i], buf, sizeof buf, false);
        k = k < 0 ? 0 : k;
        memcpy(s + len, buf, (size_t)k);
        len += (size_t)k;
    }
    free(t);
    cJSON *o = cJSON_CreateObject();
    cJSON_AddItemToObject(o, "content", json_text(s ? s : "", s ? len : 0));
    free(s);
    oxl_reply_json(out, 200, o);
}
