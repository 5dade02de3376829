/* The sampling fields of a generating request (llama-server's names, defaults and ranges: its
 * tools/server/server-schema.cpp, make_llama_cmpl_schema) and the check that every field of a
 * request body is one the route implements (generate.h). */
#include "generate.h"
#include "json_read.h"

#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* --- which fields a route takes ------------------------------------------------------------------ */

/* Fields of every generating route. */
static const char *const common_fields[] = {
    "model", "stream", "stream_options", "user", "n", "stop", "seed", "max_tokens", "max_completion_tokens",
    "n_predict", "response_format", "cache_prompt",
    /* sampling */
    "temperature", "top_p", "min_p", "top_k", "typical_p", "top_n_sigma", "xtc_probability", "xtc_threshold",
    "dynatemp_range", "dynatemp_exponent", "repeat_last_n", "repeat_penalty", "presence_penalty", "frequency_penalty",
    "dry_multiplier", "dry_base", "dry_allowed_length", "dry_penalty_last_n", "dry_sequence_breakers", "mirostat",
    "mirostat_tau", "mirostat_eta", "samplers", "logit_bias", "ignore_eos", "min_keep", "grammar", "json_schema",
    "top_a", "eta",
    /* llama-server's reasoning budget */
    "reasoning_budget_tokens", "reasoning_budget_start_tag", "reasoning_budget_end_tag", "reasoning_budget_message",
    "reasoning_budget_arm_immediately",
    /* adapters and speculative decoding */
    "lora", "speculative.n_max", "speculative.n_min", "speculative.p_min", NULL};
static const char *const chat_fields[] = {"messages",
                                          "logprobs",
                                          "top_logprobs",
                                          "n_probs",
                                          "tools",
                                          "tool_choice",
                                          "parallel_tool_calls",
                                          "reasoning_format",
                                          "chat_template_kwargs",
                                          NULL};
static const char *const completion_fields[] = {"prompt", "echo", "logprobs", "n_probs", "suffix", NULL};
static const char *const responses_fields[] = {"input", "instructions", "max_output_tokens", NULL};

/* llama-server's fields (and OpenAI's) that this server does not implement; named in the 400 as such
 * rather than as unknown. */
static const char *const unimplemented_fields[] = {"grammar_lazy",
                                                   "grammar_triggers",
                                                   "preserved_tokens",
                                                   "n_indent",
                                                   "n_keep",
                                                   "n_discard",
                                                   "n_cache_reuse",
                                                   "t_max_predict_ms",
                                                   "response_fields",
                                                   "timings_per_token",
                                                   "return_tokens",
                                                   "return_progress",
                                                   "post_sampling_probs",
                                                   "id_slot",
                                                   "chat_format",
                                                   "parse_tool_calls",
                                                   "chat_parser",
                                                   "continue_final_message",
                                                   "generation_prompt",
                                                   "adaptive_target",
                                                   "adaptive_decay",
                                                   "backend_sampling",
                                                   "reasoning_budget_end_tags",
                                                   "reasoning_control",
                                                   "reasoning_effort",
                                                   "verbose",
                                                   "sse_ping_interval",
                                                   "n_cmpl",
                                                   "best_of",
                                                   "store",
                                                   "metadata",
                                                   "service_tier",
                                                   "modalities",
                                                   "audio",
                                                   "prediction",
                                                   "web_search_options",
                                                   "functions",
                                                   "function_call",
                                                   "input_extra",
                                                   "input_prefix",
                                                   "input_suffix",
                                                   "image_data",
                                                   "multimodal_data",
                                                   "add_generation_prompt",
                                                   "enable_thinking",
                                                   "reasoning",
                                                   "text",
                                                   "truncation",
                                                   "previous_response_id",
                                                   "include",
                                                   "background",
                                                   "max_tool_calls",
                                                   "prompt_cache_key",
                                                   "safety_identifier",
                                                   "top_logprobs_by_token",
                                                   NULL};

static bool listed(const char *const *list, const char *name) {
    for (; *list; list++) {
        if (!strcmp(*list, name)) {
            return true;
        }
    }
    return false;
}

int oxl_req_check_field_list(const cJSON *b, const char *route, const char *const *fields, oxl_api_error *e) {
    for (const cJSON *f = b->child; f; f = f->next) {
        if (f->string && !listed(fields, f->string)) {
            return oxl_api_fail(e, OXL_E_INVALID_VALUE, f->string,
                                "'%.60s' is not a field of %s (or not supported by this server); remove it from the "
                                "request",
                                f->string, route);
        }
    }
    return 0;
}

int oxl_req_check_fields(const cJSON *b, api_kind kind, oxl_api_error *e) {
    const char *const *own = kind == API_CHAT         ? chat_fields
                             : kind == API_COMPLETION ? completion_fields
                                                      : responses_fields;
    const char *route = kind == API_CHAT         ? "/v1/chat/completions"
                        : kind == API_COMPLETION ? "/v1/completions"
                                                 : "/v1/responses";
    for (const cJSON *f = b->child; f; f = f->next) {
        if (!f->string || listed(own, f->string) || listed(common_fields, f->string)) {
            continue;
        }
        if (kind == API_RESPONSES && (!strcmp(f->string, "max_tokens") || !strcmp(f->string, "n"))) {
            continue; /* refused with their own message by the route */
        }
        if (listed(unimplemented_fields, f->string) || listed(chat_fields, f->string) ||
            listed(completion_fields, f->string) || listed(responses_fields, f->string)) {
            return oxl_api_fail(e, OXL_E_INVALID_VALUE, f->string,
                                "'%.60s' is not supported by %s of this server; remove it from the request", f->string,
                                route);
        }
        return oxl_api_fail(e, OXL_E_INVALID_VALUE, f->string,
                            "'%.60s' is not a field of %s; remove it from the request", f->string, route);
    }
    return 0;
}

/* Anthropic's Messages API (POST /v1/messages; count_tokens takes the prompt's fields only). */
static const char *const messages_fields[] = {"model",       "messages", "system",   "max_tokens", "stop_sequences",
                                              "temperature", "top_p",    "top_k",    "stream",     "tools",
                                              "tool_choice", "metadata", "thinking", NULL};
static const char *const count_tokens_fields[] = {"model",       "messages", "system", "tools",
                                                  "tool_choice", "thinking", NULL};
/* Anthropic's fields (and llama-server's chat_template_kwargs) that this server does not implement. */
static const char *const messages_unimplemented[] = {
    "service_tier", "container", "mcp_servers", "context_management", "output_format", "chat_template_kwargs", NULL};

int oxl_req_check_anthropic_fields(const cJSON *b, bool count_tokens, oxl_api_error *e) {
    const char *route = count_tokens ? "/v1/messages/count_tokens" : "/v1/messages";
    for (const cJSON *f = b->child; f; f = f->next) {
        if (!f->string || listed(count_tokens ? count_tokens_fields : messages_fields, f->string)) {
            continue;
        }
        if (listed(messages_unimplemented, f->string)) {
            return oxl_api_fail(e, OXL_E_INVALID_VALUE, f->string,
                                "'%.60s' is not supported by %s of this server; remove it from the request", f->string,
                                route);
        }
        return oxl_api_fail(e, OXL_E_INVALID_VALUE, f->string,
                            "'%.60s' is not a field of %s; remove it from the request", f->string, route);
    }
    return 0;
}

/* --- sampling ------------------------------------------------------------------------------------ */

/* llama-server's sampler names (common_sampler_types_from_names: the canonical names, their
 * kebab-case and no-dash forms, and nucleus/temp/typ; case-insensitive) as the library's letters. */
static char sampler_letter(const char *name) {
    static const struct {
        const char *name;
        char letter;
    } names[] = {{"dry", 'd'},       {"top_k", 'k'},     {"top-k", 'k'},   {"topk", 'k'},        {"top_p", 'p'},
                 {"top-p", 'p'},     {"topp", 'p'},      {"nucleus", 'p'}, {"top_n_sigma", 's'}, {"top-n-sigma", 's'},
                 {"topnsigma", 's'}, {"typ_p", 'y'},     {"typ-p", 'y'},   {"typp", 'y'},        {"typ", 'y'},
                 {"min_p", 'm'},     {"min-p", 'm'},     {"minp", 'm'},    {"temperature", 't'}, {"temp", 't'},
                 {"xtc", 'x'},       {"penalties", 'e'}, {"top_a", 'A'},   {"top-a", 'A'},       {"topa", 'A'},
                 {"eta", 'H'}};
    char low[32];
    size_t n = strlen(name);
    if (n >= sizeof low) {
        return 0;
    }
    for (size_t i = 0; i <= n; i++) {
        low[i] = (char)tolower((unsigned char)name[i]);
    }
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        if (!strcmp(names[i].name, low)) {
            return names[i].letter;
        }
    }
    return 0;
}

/* 'samplers': a list of names or a string of letters (llama.cpp's --sampling-seq letters). */
static int parse_samplers(const cJSON *b, oxl_sampler_params *sp, oxl_api_error *e) {
    const cJSON *v = oxl_json_field(b, "samplers");
    if (!v) {
        return 0;
    }
    size_t n = 0;
    const size_t cap = sizeof sp->samplers - 1;
    if (cJSON_IsString(v)) {
        for (const char *c = v->valuestring; *c; c++) {
            if (!strchr("edskypmxtAH", *c)) {
                return BAD(e, "samplers", "'samplers': '%c' is not a sampler letter (one of e d s k y p m x t A H)",
                           *c);
            }
            if (n == cap) {
                return BAD(e, "samplers", "'samplers': at most %zu samplers", cap);
            }
            sp->samplers[n++] = *c;
        }
    } else if (cJSON_IsArray(v)) {
        int i = 0;
        for (const cJSON *s = v->child; s; s = s->next, i++) {
            char c = cJSON_IsString(s) ? sampler_letter(s->valuestring) : 0;
            if (!c) {
                char bb[80];
                oxl_json_brief(s, bb, sizeof bb);
                return BAD(
                    e, "samplers",
                    "'samplers[%d]': %s is not a sampler name (penalties, dry, top_n_sigma, top_k, typ_p, top_p, "
                    "min_p, xtc, temperature)",
                    i, bb);
            }
            if (n == cap) {
                return BAD(e, "samplers", "'samplers': at most %zu samplers", cap);
            }
            sp->samplers[n++] = c;
        }
    } else {
        return BAD_TYPE(e, "samplers", "'samplers': expected a list of sampler names or a string of sampler letters");
    }
    if (n == 0) {
        return BAD(e, "samplers", "'samplers': the list is empty");
    }
    sp->samplers[n] = '\0';
    return 0;
}

/* 'dry_sequence_breakers': a non-empty list of strings (llama-server refuses an empty one). */
static int parse_breakers(const cJSON *b, oxl_gen_params *g, oxl_api_error *e) {
    const cJSON *v = oxl_json_field(b, "dry_sequence_breakers");
    if (!v) {
        return 0;
    }
    if (!cJSON_IsArray(v) || cJSON_GetArraySize(v) == 0) {
        return BAD_TYPE(e, "dry_sequence_breakers", "'dry_sequence_breakers': expected a non-empty list of strings");
    }
    if (cJSON_GetArraySize(v) > OXL_SRV_MAX_BREAKERS) {
        return BAD(e, "dry_sequence_breakers", "'dry_sequence_breakers': at most %d strings", OXL_SRV_MAX_BREAKERS);
    }
    int i = 0;
    for (const cJSON *s = v->child; s; s = s->next, i++) {
        if (!cJSON_IsString(s)) {
            return BAD_TYPE(e, "dry_sequence_breakers", "'dry_sequence_breakers[%d]': expected a string", i);
        }
        if (!(g->breakers[g->n_breakers++] = strdup(s->valuestring))) {
            return oxl_api_fail(e, OXL_E_OUT_OF_MEMORY, NULL, "out of memory");
        }
    }
    g->breakers_set = true;
    return 0;
}

static int add_bias(oxl_gen_params *g, oxl_token t, float bias, oxl_api_error *e) {
    if (g->n_bias == g->cap_bias) {
        int32_t cap = g->cap_bias ? g->cap_bias * 2 : 16;
        oxl_token *tt = realloc(g->bias_tok, sizeof *tt * (size_t)cap);
        if (tt) {
            g->bias_tok = tt;
        }
        float *vv = realloc(g->bias_val, sizeof *vv * (size_t)cap);
        if (vv) {
            g->bias_val = vv;
        }
        if (!tt || !vv) {
            return oxl_api_fail(e, OXL_E_OUT_OF_MEMORY, NULL, "out of memory");
        }
        g->cap_bias = cap;
    }
    g->bias_tok[g->n_bias] = t;
    g->bias_val[g->n_bias++] = bias;
    return 0;
}

/* One logit_bias entry: key a token id (number or decimal string) or, as llama-server, a text whose
 * tokens (no BOS, no special tokens) all get the bias; value a number or false (the token banned). */
static int bias_entry(oxl_srv *srv, const cJSON *key, const char *key_text, const cJSON *val, const char *where,
                      oxl_gen_params *g, oxl_api_error *e) {
    float bias;
    if (cJSON_IsNumber(val) && isfinite(val->valuedouble) && fabs(val->valuedouble) <= 1e30) {
        bias = (float)val->valuedouble;
    } else if (cJSON_IsFalse(val)) {
        bias = -INFINITY;
    } else {
        return BAD(e, "logit_bias", "'%s': expected a number or false", where);
    }
    const int32_t n_vocab = oxl_model_n_vocab(srv->model);
    if (key && cJSON_IsNumber(key)) {
        double d = key->valuedouble;
        if (!(d >= 0 && d < n_vocab) || d != floor(d)) {
            return BAD(e, "logit_bias", "'%s': token id %g is not in [0, %d)", where, d, n_vocab);
        }
        return add_bias(g, (oxl_token)d, bias, e);
    }
    char *end = NULL;
    long t = strtol(key_text, &end, 10);
    if (*key_text && end != key_text && !*end) {
        if (t < 0 || t >= n_vocab) {
            return BAD(e, "logit_bias", "'%s': token id %ld is not in [0, %d)", where, t, n_vocab);
        }
        return add_bias(g, (oxl_token)t, bias, e);
    }
    size_t len = strlen(key_text);
    int32_t need = oxl_tokenize(srv->model, key_text, len, NULL, 0, false, false);
    need = need < 0 && need != INT32_MIN ? -need : need;
    if (need == INT32_MIN || need > 4096) {
        return BAD(e, "logit_bias", "'%s': the text cannot be tokenized", where);
    }
    oxl_token *toks = malloc(sizeof *toks * (size_t)(need + 1));
    if (!toks) {
        return oxl_api_fail(e, OXL_E_OUT_OF_MEMORY, NULL, "out of memory");
    }
    int32_t n = oxl_tokenize(srv->model, key_text, len, toks, need, false, false);
    int rc = 0;
    for (int32_t i = 0; i < n && rc == 0; i++) {
        rc = add_bias(g, toks[i], bias, e);
    }
    free(toks);
    return rc;
}

/* 'logit_bias': OpenAI's object of token id -> bias, or llama-server's forms: object keys that are
 * texts, a list of [token id or text, bias] pairs, false for a ban. */
static int parse_logit_bias(oxl_srv *srv, const cJSON *b, oxl_gen_params *g, oxl_api_error *e) {
    const cJSON *v = oxl_json_field(b, "logit_bias");
    if (!v) {
        return 0;
    }
    char where[96];
    if (cJSON_IsObject(v)) {
        for (const cJSON *x = v->child; x; x = x->next) {
            snprintf(where, sizeof where, "logit_bias[\"%.40s\"]", x->string);
            if (bias_entry(srv, NULL, x->string, x, where, g, e) < 0) {
                return -1;
            }
        }
        return 0;
    }
    if (!cJSON_IsArray(v)) {
        return BAD_TYPE(
            e, "logit_bias",
            "'logit_bias': expected an object mapping token ids to numbers or a list of [token, bias] pairs");
    }
    int i = 0;
    for (const cJSON *p = v->child; p; p = p->next, i++) {
        snprintf(where, sizeof where, "logit_bias[%d]", i);
        if (!cJSON_IsArray(p) || cJSON_GetArraySize(p) != 2 ||
            !(cJSON_IsNumber(p->child) || cJSON_IsString(p->child))) {
            return BAD_TYPE(e, "logit_bias", "'%s': expected a [token id or text, bias] pair", where);
        }
        const cJSON *k = p->child;
        if (bias_entry(srv, cJSON_IsNumber(k) ? k : NULL, cJSON_IsString(k) ? k->valuestring : "", k->next, where, g,
                       e) < 0) {
            return -1;
        }
    }
    return 0;
}

/* A number field into *out when present (0 absent, 1 read, -1 error). */
static int num_field(const cJSON *b, const char *name, double lo, double hi, float *out, oxl_api_error *e) {
    double x;
    int rc = oxl_json_num(b, name, lo, hi, &x, e);
    if (rc == 1) {
        *out = (float)x;
    }
    return rc;
}

static int int_field(const cJSON *b, const char *name, double lo, double hi, int32_t *out, oxl_api_error *e) {
    long long k;
    int rc = oxl_json_int(b, name, lo, hi, &k, e);
    if (rc == 1) {
        *out = (int32_t)k;
    }
    return rc;
}

/* A string field into a fixed buffer: 0 absent, 1 set, -1 a 400 (not a string, too long). */
static int tag_field(const cJSON *b, const char *name, char *out, size_t cap, oxl_api_error *e) {
    const char *v = NULL;
    int rc = oxl_json_str(b, name, &v, e);
    if (rc <= 0 || !v) {
        return rc < 0 ? -1 : 0;
    }
    if (strlen(v) >= cap) {
        return BAD(e, name, "'%s': at most %zu bytes", name, cap - 1);
    }
    memcpy(out, v, strlen(v) + 1);
    return 1;
}

/* llama-server's reasoning budget fields (tools/server/server-task.cpp, params_from_json_cmpl):
 * reasoning_budget_tokens (-1 none, the default), the start and end tags, the message forced before
 * the end tag, reasoning_budget_arm_immediately (false). */
static int parse_reasoning_budget(oxl_srv *srv, const cJSON *b, oxl_gen_params *g, oxl_api_error *e) {
    if (int_field(b, "reasoning_budget_tokens", -1, 1e9, &g->rb_tokens, e) < 0 ||
        tag_field(b, "reasoning_budget_start_tag", g->rb_start, sizeof g->rb_start, e) < 0 ||
        tag_field(b, "reasoning_budget_end_tag", g->rb_end, sizeof g->rb_end, e) < 0 ||
        tag_field(b, "reasoning_budget_message", g->rb_message, sizeof g->rb_message, e) < 0 ||
        oxl_json_bool(b, "reasoning_budget_arm_immediately", &g->rb_arm, e) < 0) {
        return -1;
    }
    if (g->rb_end[0]) { /* the tags must tokenize for the sampler (a throwaway one checks it) */
        oxl_sampler_params sp = oxl_sampler_default_params();
        sp.seed = 0;
        oxl_sampler *s = oxl_sampler_new(&sp);
        int rc =
            s ? oxl_sampler_set_reasoning_budget(s, srv->model, g->rb_start, g->rb_end, g->rb_message, 0, false) : -1;
        oxl_sampler_free(s);
        if (rc != 0) {
            return BAD(e, "reasoning_budget_end_tag",
                       "'reasoning_budget_end_tag': the tags and message cannot be tokenized");
        }
    }
    return 0;
}

int oxl_req_parse_sampling(oxl_srv *srv, const cJSON *b, oxl_gen_params *g, oxl_api_error *e) {
    oxl_sampler_params *sp = &g->sampling;
    const double big = 1e9;
    long long k;
    int rc;
    if (num_field(b, "temperature", 0, 2, &sp->temp, e) < 0 || num_field(b, "top_p", 0, 1, &sp->top_p, e) < 0 ||
        num_field(b, "min_p", 0, 1, &sp->min_p, e) < 0 || int_field(b, "top_k", 0, big, &sp->top_k, e) < 0 ||
        num_field(b, "typical_p", 0, 1, &sp->typ_p, e) < 0 ||
        num_field(b, "top_n_sigma", -big, big, &sp->top_n_sigma, e) < 0 ||
        num_field(b, "xtc_probability", 0, 1, &sp->xtc_probability, e) < 0 ||
        num_field(b, "xtc_threshold", 0, 1, &sp->xtc_threshold, e) < 0 ||
        num_field(b, "dynatemp_range", 0, big, &sp->dynatemp_range, e) < 0 ||
        num_field(b, "dynatemp_exponent", -big, big, &sp->dynatemp_exponent, e) < 0 ||
        int_field(b, "repeat_last_n", 0, 65536, &sp->penalty_last_n, e) < 0 ||
        num_field(b, "repeat_penalty", 0, big, &sp->penalty_repeat, e) < 0 ||
        num_field(b, "presence_penalty", -2, 2, &sp->penalty_present, e) < 0 ||
        num_field(b, "frequency_penalty", -2, 2, &sp->penalty_freq, e) < 0 ||
        num_field(b, "dry_multiplier", 0, big, &sp->dry_multiplier, e) < 0 ||
        int_field(b, "dry_allowed_length", 0, big, &sp->dry_allowed_length, e) < 0 ||
        int_field(b, "dry_penalty_last_n", 0, 65536, &sp->dry_penalty_last_n, e) < 0 ||
        int_field(b, "mirostat", 0, 2, &sp->mirostat, e) < 0 ||
        num_field(b, "mirostat_tau", 0, big, &sp->mirostat_tau, e) < 0 ||
        num_field(b, "mirostat_eta", 0, big, &sp->mirostat_eta, e) < 0 ||
        num_field(b, "top_a", 0, big, &sp->top_a, e) < 0 || num_field(b, "eta", 0, 1, &sp->eta, e) < 0) {
        return -1;
    }
    float base = 0;
    if ((rc = num_field(b, "dry_base", -big, big, &base, e)) < 0) {
        return -1;
    }
    if (rc) {
        /* llama-server: a base below 1 means its default */
        sp->dry_base = base < 1 ? oxl_sampler_default_params().dry_base : base;
    }
    if ((rc = oxl_json_int(b, "seed", -9.2e18, 9.2e18, &k, e)) < 0) {
        return -1;
    }
    if (rc) {
        sp->seed = (uint32_t)k;
    }
    if ((rc = oxl_json_int(b, "min_keep", 0, big, &k, e)) < 0) {
        return -1;
    }
    if (rc && k != 0) {
        return BAD(e, "min_keep", "'min_keep' is not supported by this server (only 0, the default)");
    }
    bool ignore_eos = false;
    if (oxl_json_bool(b, "ignore_eos", &ignore_eos, e) < 0 || parse_samplers(b, sp, e) < 0 ||
        parse_breakers(b, g, e) < 0 || parse_logit_bias(srv, b, g, e) < 0) {
        return -1;
    }
    if (ignore_eos) {
        /* llama-server: every end-of-generation token biased to -inf */
        const int32_t n_vocab = oxl_model_n_vocab(srv->model);
        for (oxl_token t = 0; t < n_vocab; t++) {
            if (oxl_token_is_eog(srv->model, t) && add_bias(g, t, -INFINITY, e) < 0) {
                return -1;
            }
        }
    }
    bool cache_prompt = true;
    return oxl_json_bool(b, "cache_prompt", &cache_prompt, e) < 0 || parse_reasoning_budget(srv, b, g, e) < 0 ? -1 : 0;
}

/* --- structured output --------------------------------------------------------------------------- */

/* Checks that gbnf parses for the model (a throwaway sampler), else a 400 on param. */
int oxl_req_check_grammar(oxl_srv *srv, const char *gbnf, const char *param, oxl_api_error *e) {
    oxl_sampler_params sp = oxl_sampler_default_params();
    sp.seed = 0;
    oxl_sampler *s = oxl_sampler_new(&sp);
    if (!s) {
        return oxl_api_fail(e, OXL_E_OUT_OF_MEMORY, NULL, "out of memory");
    }
    char msg[256] = "";
    int rc = oxl_sampler_set_grammar(s, srv->model, gbnf, NULL, msg, sizeof msg);
    oxl_sampler_free(s);
    if (rc != 0) {
        return BAD(e, param, "'%s': the grammar does not parse: %s", param, msg);
    }
    return 0;
}

/* A JSON schema (an object) into g->grammar. */
static int schema_grammar(oxl_srv *srv, const cJSON *schema, const char *param, oxl_gen_params *g, oxl_api_error *e) {
    if (!cJSON_IsObject(schema)) {
        return BAD_TYPE(e, param, "'%s': expected a JSON schema object", param);
    }
    char *text = cJSON_PrintUnformatted(schema);
    if (!text) {
        return oxl_api_fail(e, OXL_E_OUT_OF_MEMORY, NULL, "out of memory");
    }
    oxl_error err = {{0}};
    int rc = oxl_json_schema_to_grammar(text, &g->grammar, &err);
    free(text);
    if (rc != 0) {
        return BAD(e, param, "'%s': %s", param, err.msg);
    }
    return oxl_req_check_grammar(srv, g->grammar, param, e);
}

int oxl_req_parse_structured(oxl_srv *srv, const cJSON *b, oxl_gen_params *g, oxl_api_error *e) {
    const cJSON *gr = oxl_json_field(b, "grammar");
    const cJSON *js = oxl_json_field(b, "json_schema");
    const cJSON *rf = oxl_json_field(b, "response_format");
    const char *type = NULL;
    if (rf) {
        if (!cJSON_IsObject(rf) || oxl_json_str(rf, "type", &type, e) < 0 || !type) {
            return BAD_TYPE(e, "response_format", "'response_format': expected an object with a string 'type'");
        }
        if (strcmp(type, "text") && strcmp(type, "json_object") && strcmp(type, "json_schema")) {
            return BAD(e, "response_format",
                       "'response_format': type '%.40s' is not one of text, json_object, json_schema", type);
        }
        if (strcmp(type, "text") && (gr || js)) {
            return BAD(e, "response_format", "'response_format' cannot be combined with 'grammar' or 'json_schema'");
        }
    }
    if (gr) {
        if (!cJSON_IsString(gr)) {
            return BAD_TYPE(e, "grammar", "'grammar': expected a string of GBNF rules");
        }
        if (!gr->valuestring[0]) {
            return 0; /* llama-server: an empty grammar is none */
        }
        if (!(g->grammar = strdup(gr->valuestring))) {
            return oxl_api_fail(e, OXL_E_OUT_OF_MEMORY, NULL, "out of memory");
        }
        return oxl_req_check_grammar(srv, g->grammar, "grammar", e);
    }
    if (js) {
        return schema_grammar(srv, js, "json_schema", g, e);
    }
    if (!type || !strcmp(type, "text")) {
        return 0;
    }
    for (const cJSON *f = rf->child; f; f = f->next) {
        if (strcmp(f->string, "type") && strcmp(f->string, "json_schema") && strcmp(f->string, "schema")) {
            return BAD(e, "response_format", "'response_format.%.40s' is not a field of response_format", f->string);
        }
    }
    if (!strcmp(type, "json_object")) {
        /* any JSON object, or the schema llama-server also reads here; enforced */
        const cJSON *sc = oxl_json_field(rf, "schema");
        cJSON *any = sc ? NULL : cJSON_CreateObject();
        int rc = schema_grammar(srv, sc ? sc : any, "response_format", g, e);
        cJSON_Delete(any);
        return rc;
    }
    const cJSON *jw = oxl_json_field(rf, "json_schema");
    if (!cJSON_IsObject(jw)) {
        return BAD_TYPE(e, "response_format",
                        "'response_format.json_schema': expected an object {name, schema, strict}");
    }
    for (const cJSON *f = jw->child; f; f = f->next) {
        if (strcmp(f->string, "name") && strcmp(f->string, "schema") && strcmp(f->string, "strict") &&
            strcmp(f->string, "description")) {
            return BAD(e, "response_format", "'response_format.json_schema.%.40s' is not a field of json_schema",
                       f->string);
        }
    }
    const cJSON *sc = oxl_json_field(jw, "schema");
    if (!sc) {
        return BAD(e, "response_format", "'response_format.json_schema.schema' is required");
    }
    return schema_grammar(srv, sc, "response_format", g, e);
}

/* --- LoRA scales and speculative decoding ------------------------------------------------------- */

int oxl_req_lora_list(oxl_srv *srv, const cJSON *a, const char *param, float *out, oxl_api_error *e) {
    if (!cJSON_IsArray(a)) {
        return BAD_TYPE(e, param, "'%s' must be an array of objects with 'id' and 'scale' fields", param);
    }
    for (int32_t i = 0; i < srv->n_lora; i++) {
        out[i] = 0.0f; /* adapters not listed: scale 0, as llama-server's parse_lora_request */
    }
    int k = 0;
    for (const cJSON *it = a->child; it; it = it->next, k++) {
        if (!cJSON_IsObject(it)) {
            return BAD_TYPE(e, param, "'%s'[%d] must be an object with 'id' and 'scale' fields", param, k);
        }
        for (const cJSON *m = it->child; m; m = m->next) {
            if (m->string && strcmp(m->string, "id") && strcmp(m->string, "scale")) {
                return BAD(e, param, "'%s'[%d]: '%.60s' is not a field of an adapter entry (only 'id' and 'scale')",
                           param, k, m->string);
            }
        }
        const cJSON *id = cJSON_GetObjectItemCaseSensitive(it, "id");
        const cJSON *sc = cJSON_GetObjectItemCaseSensitive(it, "scale");
        if (!cJSON_IsNumber(id) || id->valuedouble != floor(id->valuedouble)) {
            return BAD_TYPE(e, param, "'%s'[%d].id must be an integer (an id of GET /lora-adapters)", param, k);
        }
        if (id->valuedouble < 0 || id->valuedouble >= srv->n_lora) {
            if (srv->n_lora == 0) {
                return BAD(e, param, "'%s'[%d]: invalid adapter id %.0f: this server has no LoRA adapters (--lora)",
                           param, k, id->valuedouble);
            }
            return BAD(e, param, "'%s'[%d]: invalid adapter id %.0f: this server's adapters are ids 0 to %d", param, k,
                       id->valuedouble, srv->n_lora - 1);
        }
        if (sc && !cJSON_IsNull(sc) && !cJSON_IsNumber(sc)) {
            return BAD_TYPE(e, param, "'%s'[%d].scale must be a number", param, k);
        }
        out[(int32_t)id->valuedouble] = cJSON_IsNumber(sc) ? (float)sc->valuedouble : 0.0f;
    }
    return 0;
}

int oxl_req_parse_adapters(oxl_srv *srv, const cJSON *b, oxl_gen_params *g, oxl_api_error *e) {
    const cJSON *lora = oxl_json_field(b, "lora");
    if (lora) {
        if (oxl_req_lora_list(srv, lora, "lora", g->lora, e) < 0) {
            return -1;
        }
    } else if (srv->sched) {
        oxl_sched_lora_get(srv->sched, g->lora); /* the global scales now, as llama-server takes them */
    }
    g->lora_set = true;
    /* speculative.*: the server's defaults, clamped as llama-server's params_from_json_cmpl */
    g->spec_n_max = srv->cfg->draft_max;
    g->spec_n_min = srv->cfg->draft_min;
    g->spec_p_min = srv->cfg->draft_p_min;
    long long k;
    double d;
    int rc;
    if ((rc = oxl_json_int(b, "speculative.n_max", -1e9, 1e9, &k, e)) < 0) {
        return -1;
    }
    if (rc) {
        g->spec_n_max = (int32_t)k;
    }
    if ((rc = oxl_json_int(b, "speculative.n_min", -1e9, 1e9, &k, e)) < 0) {
        return -1;
    }
    if (rc) {
        g->spec_n_min = (int32_t)k;
    }
    if ((rc = oxl_json_num(b, "speculative.p_min", 0, 1, &d, e)) < 0) {
        return -1;
    }
    if (rc) {
        g->spec_p_min = (float)d;
    }
    g->spec_n_min = g->spec_n_min < g->spec_n_max ? g->spec_n_min : g->spec_n_max;
    g->spec_n_min = g->spec_n_min > 0 ? g->spec_n_min : 0;
    g->spec_n_max = g->spec_n_max > 0 ? g->spec_n_max : 0;
    return 0;
}
