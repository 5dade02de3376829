/* What the generating routes (chat completions, completions, responses) and embeddings share:
 * the parsed request, prompts and the chat template, jobs on the scheduler, usage and logprobs,
 * and running a request as one job per prompt. Each dialect gives run its reply object and its
 * stream producer. */
#ifndef OXL_SRV_GENERATE_H
#define OXL_SRV_GENERATE_H

#include "api.h"
#include "media.h"

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

typedef enum api_kind { API_CHAT, API_COMPLETION, API_RESPONSES } api_kind;

typedef struct api_req api_req;
struct api_req {
    api_kind kind;
    oxl_gen_params gen;
    int n; /* choices per prompt */
    bool stream, include_usage, echo;
    bool logprobs;        /* chat: logprobs; completions: logprobs given */
    const cJSON *tools;   /* valid while the request is handled */
    bool has_tools;       /* tools were given: replies may hold tool calls */
    bool reasoning_none;  /* chat: reasoning_format none (thoughts stay in content) */
    char prompt_tail[64]; /* chat: the end of the rendered prompt (does it open a thought?) */
    oxl_media *media;     /* chat: the request's images (NULL: none allowed; the handler owns it) */
    char *tools_json;     /* chat: the offered tools' JSON text for the reply parser (owned; a stream takes it) */
    bool return_tokens;   /* /completion: the reply lists the generated token ids */
    char id[64];
    time_t created;
    /* the dialect: the finished reply object (msg_id: a fresh message id), and the producer of
     * its stream (whose state is a stream_state) */
    cJSON *(*object)(oxl_srv *srv, const api_req *r, oxl_job **jobs, int n_jobs, char **prompts, const char *msg_id);
    size_t (*produce)(oxl_stream *st);
    void (*reply_error)(oxl_reply *out, const oxl_api_error *e); /* the dialect's error reply; NULL: OpenAI's */
};

typedef struct choice_progress {
    size_t sent;                         /* text bytes sent */
    int32_t lp_sent;                     /* logprob records sent */
    size_t content_sent, reasoning_sent; /* chat: bytes of the parsed content and reasoning sent */
    cJSON *calls;       /* chat: the tool calls sent, [{id, name, arguments: the text sent}] (NULL: none) */
    int32_t marks_seen; /* chat: publications of the text (oxl_choice_out.marks) already parsed */
    bool started, finished;
} choice_progress;

typedef struct stream_state {
    api_req r;
    char **prompts; /* completions with echo: each prompt's text */
    int n_prompts;
    choice_progress *cp; /* one per choice over all jobs */
    int n_cp;
    bool usage_sent;
    int seq; /* responses: sequence_number */
    char msg_id[64];
    int phase; /* responses: 0 = nothing sent, 1 = deltas, 2 = completed; messages: 0 = nothing sent, 1 = started */
    /* messages: content blocks started, the open one's kind (0 none, 1 thinking, 2 text, 3 tool_use), ping
     * sent */
    int n_blocks, open_block;
    bool pinged;
} stream_state;

/* The text of token t with special tokens rendered (0 bytes when it does not fit). */
int oxl_tok_piece(const oxl_model *m, oxl_token t, char *buf, int cap);

/* Request fields; each returns 0, or -1 with e naming the field. */
/* 'model', when given, must be a string; any name is accepted (one model per server, as llama-server). */
int oxl_req_check_model(oxl_srv *srv, const cJSON *b, oxl_api_error *e);
/* The fields common to the generating routes, into r (first checking every field with
 * oxl_req_check_fields). */
int oxl_req_parse_common(oxl_srv *srv, const cJSON *b, api_req *r, oxl_api_error *e);
/* request_fields.c: 400 naming the first field of b that the route of kind does not take: llama-server's
 * and OpenAI's fields this server does not implement ("... is not supported") and unknown ones ("... is
 * not a field of"); none is ignored. */
int oxl_req_check_fields(const cJSON *b, api_kind kind, oxl_api_error *e);
/* The same for Anthropic's POST /v1/messages (count_tokens: /v1/messages/count_tokens, the prompt's
 * fields only). */
int oxl_req_check_anthropic_fields(const cJSON *b, bool count_tokens, oxl_api_error *e);
/* The same for the other routes: 400 naming the first field of b not in fields (NULL-terminated). */
int oxl_req_check_field_list(const cJSON *b, const char *route, const char *const *fields, oxl_api_error *e);
/* The sampling fields (llama-server's names: temperature, top_k, top_p, min_p, typical_p, top_n_sigma,
 * xtc_*, dynatemp_*, repeat_last_n, repeat_penalty, presence/frequency_penalty, dry_*, mirostat*,
 * samplers, seed, logit_bias, ignore_eos, min_keep 0) into g; out-of-range values are errors. */
int oxl_req_parse_sampling(oxl_srv *srv, const cJSON *b, oxl_gen_params *g, oxl_api_error *e);
/* Structured output into g->grammar: llama-server's grammar (GBNF text) or json_schema (an object,
 * converted as llama.cpp converts it; grammar wins when both are given, as there), or OpenAI's
 * response_format: text (none), json_object (its optional schema, else any JSON object: enforced),
 * json_schema ({name, schema, strict}). A grammar that does not parse is a 400 naming the field with
 * the line:column of the fault. */
int oxl_req_parse_structured(oxl_srv *srv, const cJSON *b, oxl_gen_params *g, oxl_api_error *e);
/* llama-server's "lora" field into g->lora (see oxl_req_lora_list; without it, the global scales
 * now) and its speculative.n_max,
 * speculative.n_min and speculative.p_min fields (the server's --draft-max, --draft-min, --draft-p-min
 * when absent; n_max and n_min clamped to 0 and n_min to n_max as llama-server does; p_min in [0, 1]). */
int oxl_req_parse_adapters(oxl_srv *srv, const cJSON *b, oxl_gen_params *g, oxl_api_error *e);
/* A list of LoRA scales [{"id": ID, "scale": S}, ...] (field param) into out[0..n_lora): the listed
 * ids get their scale (0 when absent), the others 0, as llama-server's parse_lora_request; 400 naming
 * the entry for a list that is not one, an id the server does not have, an entry member other than
 * id and scale. */
int oxl_req_lora_list(oxl_srv *srv, const cJSON *a, const char *param, float *out, oxl_api_error *e);
/* 400 on param unless gbnf parses as a grammar for the server's model (line:column in the message). */
int oxl_req_check_grammar(oxl_srv *srv, const char *gbnf, const char *param, oxl_api_error *e);

/* Prompts: *out is malloc'd (the caller's); param names the field in errors. */
int oxl_req_tokenize(oxl_srv *srv, const char *text, size_t len, oxl_token **out, int32_t *n, const char *param,
                     oxl_api_error *e);
/* A prompt given as token ids (JSON array a of field param): *out malloc'd, ids checked. */
int oxl_req_token_list(oxl_srv *srv, const cJSON *a, const char *param, oxl_token **out, int32_t *n, oxl_api_error *e);
/* 400 context_length_exceeded when n_prompt tokens leave no room in a slot. */
int oxl_req_check_context(oxl_srv *srv, int32_t n_prompt, const char *param, oxl_api_error *e);
/* Chat messages as the template's input: content parts joined into text (a copy the caller frees).
 * Image parts ({"type": "image_url", "image_url": {"url": ...}} and the Responses API's
 * {"type": "input_image", "image_url": ...}) become OXL_MEDIA_MARKER in the text and their images
 * go to media, in order; media NULL (no --mmproj): an image part is a 400 naming --mmproj. */
cJSON *oxl_req_normalize_messages(const cJSON *msgs, const char *param, oxl_media *media, oxl_api_error *e);
/* The chat template's extra variables for request body b (may be NULL), as llama-server's
 * oaicompat_chat_params_parse merges them (tools/server/server-common.cpp): the request's
 * chat_template_kwargs, and enable_thinking: the request's boolean, else true when
 * --reasoning-budget is not 0 and the template reacts to it (srv->thinking_template), else false; a
 * string enable_thinking is a 400 as there. *out is a malloc'd JSON text. */
int oxl_req_template_kwargs(oxl_srv *srv, const cJSON *b, char **out, oxl_api_error *e);
/* The reasoning budget of a chat-rendered prompt, as llama-server's oaicompat_chat_params_parse
 * (tools/server/server-common.cpp): for a template with thought tags (oxl_chat_thinking_tags), the
 * fields body (may be NULL) does not set take the template's start and end tags,
 * --reasoning-budget, --reasoning-budget-message, and arm_immediately when prompt ends inside an
 * opened thought. */
void oxl_req_budget_defaults(oxl_srv *srv, const cJSON *body, const char *prompt, oxl_gen_params *g);
/* msgs (and tools) through the model's chat template (oxl_chat_apply_template_kw, kwargs from
 * oxl_req_template_kwargs, may be NULL), then tokenized; g (may be NULL) gets the reasoning
 * budget's defaults (oxl_req_budget_defaults with body). */
int oxl_req_chat_prompt(oxl_srv *srv, const cJSON *msgs, const cJSON *tools, const char *kwargs, const cJSON *body,
                        oxl_gen_params *g, oxl_media *media, oxl_token **toks, int32_t *n, const char *param,
                        oxl_api_error *e);

/* Jobs: submits j (503 when the queue is full or the server stops); waits for every job (-1, jobs
 * cancelled, when the client disconnects first); releases the jobs and the array. */
int oxl_req_submit(oxl_srv *srv, oxl_job *j, oxl_api_error *e);
bool oxl_req_job_done(const oxl_job *j);
int oxl_req_wait(oxl_srv *srv, oxl_job **jobs, int n, int fd);
void oxl_req_release(oxl_srv *srv, oxl_job **jobs, int n);
/* Runs n token lists (toks[i] of lens[i] tokens, total tokens in all) as one embedding job of
 * n_embd floats per input: the inputs are copied back to back, the job submitted and waited for.
 * Returns the finished job (the caller reads j->embd and releases it with
 * oxl_job_release(srv->sched, j)), or NULL with e set (queue full, client gone, job error, memory). */
oxl_job *oxl_req_run_embd(oxl_srv *srv, const oxl_request *rq, oxl_token *const *toks, const int32_t *lens, int32_t n,
                          size_t total, int32_t n_embd, oxl_api_error *e);
/* The usage object of the jobs, in the naming of kind. */
cJSON *oxl_req_usage(oxl_job **jobs, int n_jobs, api_kind kind);
/* The first job error as an API error (503 for shutdown, 500 otherwise); false when none. */
bool oxl_req_job_error(oxl_job **jobs, int n, oxl_api_error *e);

/* Logprob records from..to of a choice: chat shape [{token, logprob, bytes, top_logprobs}]; the
 * completions shape {tokens, token_logprobs, top_logprobs, text_offset} from text offset. */
cJSON *oxl_chat_logprobs(oxl_srv *srv, const oxl_choice_out *c, int32_t from, int32_t to);
cJSON *oxl_completion_logprobs(oxl_srv *srv, const oxl_choice_out *c, int32_t from, int32_t to, size_t offset);

/* Submits one job per prompt (taking the token arrays and prompts); the reply is r->produce's
 * stream (which takes r's parameters) or r->object's finished object. */
void oxl_req_run(oxl_srv *srv, const oxl_request *rq, api_req *r, oxl_token **toks, int32_t *n_toks, char **prompts,
                 int n_prompts, oxl_reply *out);

/* api_chat.c: an OpenAI chat completions body b (messages, tools, tool_choice, reasoning_format,
 * logprobs and the common fields) into r and the prompt: the messages through the chat template,
 * tokenized into *toks (malloc'd, the caller's, also on failure) of *n_toks tokens. r->kind is
 * API_CHAT; the caller sets r's dialect, checks the context (oxl_req_check_context) and frees
 * r->tools_json and r->gen. Returns 0, or -1 with e naming the field. */
int oxl_chat_request(oxl_srv *srv, const cJSON *b, api_req *r, oxl_token **toks, int32_t *n_toks, oxl_api_error *e);

/* stream_chunks.c: the chat.completion.chunk and text_completion streams. */
size_t oxl_produce_chunks(oxl_stream *st);

#endif
