/* The scheduler: one thread owns the context and its -np slots (sequences). Each step it admits
 * queued requests into free slots (reusing the longest cached prompt prefix of a slot), gathers one
 * token per generating slot plus chunks of prompt tokens into ONE oxl_batch, decodes it, samples,
 * and publishes text to the waiting HTTP threads. Requests join and leave between steps
 * (continuous batching, as llama.cpp's server_context::update_slots).
 *
 * Embedding jobs go through the same queue but not through the slots: the thread owns a second
 * context, created at the first embedding job with embeddings on and OXL_SRV_EMBD_SEQ sequences of
 * the slots' length, pooling as the model's `<arch>.pooling_type` says or, when the model has none
 * (every decoder-only model), mean pooling. Each step, before the generation batch, it decodes
 * whole inputs (up to OXL_SRV_EMBD_SEQ of them and n_batch tokens, or one longer input) each from
 * position 0 of its own sequence, and stores their pooled vectors. */
#ifndef OXL_SRV_SCHEDULER_H
#define OXL_SRV_SCHEDULER_H

#include "oxillama.h"
#include "server.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define OXL_SRV_MAX_STOP 8
#define OXL_SRV_MAX_TRIGGER_PATTERNS 8 /* llama.cpp's formats write at most 2 */
#define OXL_SRV_MAX_TOP_LOGPROBS 20
#define OXL_SRV_MAX_CHOICES 16
#define OXL_SRV_MAX_BREAKERS 16         /* dry_sequence_breakers strings */
#define OXL_SRV_MAX_TAG 64              /* reasoning_budget_start_tag / _end_tag bytes, NUL included */
#define OXL_SRV_MAX_BUDGET_MESSAGE 1024 /* reasoning_budget_message bytes, NUL included */
#define OXL_SRV_MAX_IMAGES 16           /* images in one request's prompt */
#define OXL_SRV_EMBD_SEQ 4              /* inputs the embedding context decodes together */
#define OXL_SRV_EMBD_JOBS 16            /* embedding jobs taken from the queue at once */

/* What one request asks of generation; immutable once submitted. */
typedef struct oxl_gen_params {
    /* the library's sampler chain (penalties, DRY, top-n-sigma, top-k, typical, top-p, min-p, XTC,
     * temperature, mirostat; llama-server's fields): it sees every prompt token and every sampled
     * token (oxl_sampler_accept), as llama-server's sampler does. Seed per request; choice i uses
     * seed + i. */
    oxl_sampler_params sampling;
    int32_t max_tokens; /* -1: until end of generation or the slot's context is full */
    int32_t n_breakers; /* dry_sequence_breakers; llama-server's "\n" ":" "\"" "*" when not set */
    bool breakers_set;
    char *breakers[OXL_SRV_MAX_BREAKERS];
    char *grammar; /* GBNF text (grammar, json_schema, response_format): the output follows it; NULL: none */
    /* a lazy tool-call grammar (oxl_sampler_set_grammar_lazy): it applies from the first trigger on */
    bool grammar_lazy;
    char *trigger_patterns; /* n_trigger_patterns NUL-separated full-match patterns */
    int32_t n_trigger_patterns, n_trigger_tokens;
    oxl_token *trigger_tokens;
    /* the reply format's preserved tokens (llama-server's preserved_tokens): written with their text
     * even when they are control tokens, so that the reply parser sees the markup */
    int32_t n_preserved;
    oxl_token *preserved;
    int32_t n_bias, cap_bias;
    oxl_token *bias_tok; /* logit_bias (and ignore_eos): added to these tokens' logits first */
    float *bias_val;
    int32_t n_stop;
    char *stop[OXL_SRV_MAX_STOP]; /* never emitted; matched across token boundaries */
    int32_t top_logprobs;         /* -1: no logprobs; else alternatives per token (0..20) */
    /* LoRA scales of the server's adapters for this request (llama-server's "lora" field: the listed
     * ids' scales, the others 0; without it the global scales of POST /lora-adapters when the
     * request was read); lora_set false: the global scales at submission */
    bool lora_set;
    float lora[OXL_SRV_MAX_LORA];
    /* speculative decoding (llama-server's speculative.n_max / n_min / p_min; the server's --draft-max,
     * --draft-min, --draft-p-min by default): most tokens drafted per step (0: none), fewest worth
     * verifying, least probability of a draft-model token to go on drafting */
    int32_t spec_n_max, spec_n_min;
    float spec_p_min;
    /* the reasoning budget (oxl_sampler_set_reasoning_budget; llama-server's reasoning_budget_tokens,
     * reasoning_budget_start_tag, reasoning_budget_end_tag, reasoning_budget_message,
     * reasoning_budget_arm_immediately; the chat route fills the ones not given from the template's
     * thought tags and --reasoning-budget / --reasoning-budget-message): rb_tokens -1 none; without
     * an end tag the budget does nothing, as llama-server */
    int32_t rb_tokens;
    bool rb_arm;
    char rb_start[OXL_SRV_MAX_TAG], rb_end[OXL_SRV_MAX_TAG];
    char rb_message[OXL_SRV_MAX_BUDGET_MESSAGE];
} oxl_gen_params;

/* Sets g's grammar (lazy or not) on smpl; 0, or -1 (memory, or a grammar that does not parse). */
int oxl_job_set_grammar(oxl_sampler *smpl, const oxl_model *model, const oxl_gen_params *g);

/* One sampled token with its log-probability and the most likely alternatives. */
typedef struct oxl_tok_logprob {
    oxl_token tok;
    float logprob;
    int32_t n_top;
    oxl_token top_tok[OXL_SRV_MAX_TOP_LOGPROBS];
    float top_lp[OXL_SRV_MAX_TOP_LOGPROBS];
} oxl_tok_logprob;

/* The output of one choice, written by the scheduler and read by the request's thread, both under
 * the scheduler's mutex. text only grows; `finish` is set once. */
typedef struct oxl_choice_out {
    char *text;
    size_t len, cap;
    oxl_tok_logprob *lp;
    int32_t n_lp, cap_lp;
    int32_t n_gen;      /* tokens generated */
    int32_t n_drafted;  /* draft tokens verified (llama-server's timings.draft_n) */
    int32_t n_accepted; /* of those, the ones the target kept (draft_n_accepted) */
    size_t *marks;      /* len after each publication (each token's text, or held-back text with the next) */
    int32_t n_marks, cap_marks;
    const char *finish;    /* NULL while running, then "stop" or "length" */
    const char *stop_word; /* the stop string (one of gen.stop) that ended it, NULL when none did */
    int32_t id_slot;       /* the slot that generates it, once admitted */
    bool truncated;        /* the context filled: a context shift dropped tokens, or it ended "length" */
} oxl_choice_out;

/* What tells two images apart: the SHA-256 and length of their file bytes. */
typedef struct oxl_img_key {
    uint8_t sha256[32];
    uint64_t n_bytes;
} oxl_img_key;

typedef struct oxl_job {
    /* set by the submitter */
    oxl_token *prompt;
    int32_t n_prompt;
    int32_t n_choices;
    /* images of the prompt (owned by the job): image i takes the prompt's rows img_at[i] ..
     * img_at[i] + its n_tokens - 1, which hold one negative placeholder id made from a hash of the
     * image's bytes; a cached prefix is reused through an image only when its key is img_key[i] */
    int32_t n_img;
    oxl_image_embd *img[OXL_SRV_MAX_IMAGES];
    int32_t img_at[OXL_SRV_MAX_IMAGES];
    oxl_img_key img_key[OXL_SRV_MAX_IMAGES];
    oxl_gen_params gen;
    /* shared, under the scheduler's mutex */
    pthread_cond_t cv; /* signalled when output grows or the job ends */
    oxl_choice_out choice[OXL_SRV_MAX_CHOICES];
    int32_t n_done;        /* choices finished */
    int32_t n_cached;      /* prompt tokens found in a slot's cache (first choice) */
    char error[256];       /* set when the scheduler ends the job early (shutdown, decode failure) */
    int refs;              /* 2 while queued or running (submitter + scheduler) */
    atomic_bool cancelled; /* the client went away */
    /* embedding jobs (oxl_embd_job_new, n_inputs > 0): prompt holds the inputs back to back */
    int32_t n_inputs;
    int32_t *input_len; /* [n_inputs] tokens of each input */
    float *embd;        /* (n_embd, n_inputs) pooled embeddings as the library returns them */
    int32_t n_started;  /* inputs given to a decode (scheduler thread only) */
    int32_t n_embedded; /* inputs whose vector is in embd; the job is done (n_done 1) at n_inputs */
    double t_submit, t_start, t_first, t_end; /* seconds, monotonic */
} oxl_job;

typedef struct oxl_sched oxl_sched;

/* Counters for /metrics and /slots, read under the mutex with oxl_sched_stats. */
typedef struct oxl_sched_stats {
    uint64_t prompt_tokens, prompt_tokens_cached, gen_tokens, decode_steps;
    double decode_seconds;    /* wall time in oxl_decode_batch */
    double gen_token_seconds; /* sum over generated tokens of the step time that produced them */
    /* speculative decoding: draft tokens verified, those accepted, verification steps with a draft
     * (llama-server's n_draft_tokens, n_draft_accepted, n_draft_verif_steps) */
    uint64_t draft_tokens, draft_accepted, draft_steps;
    int32_t queue_depth, slots_busy, n_slots, n_ctx_slot;
} oxl_sched_stats;

typedef struct oxl_slot_info {
    int32_t id;
    bool busy;
    int32_t n_cache;  /* tokens in the slot's KV cache */
    int32_t n_prompt; /* of the current or last request */
    int32_t n_gen;
} oxl_slot_info;

/* LoRA adapters and speculative decoding of the slots (all pointers stay the caller's and must
 * outlive the scheduler). */
typedef struct oxl_sched_extras {
    oxl_lora *const *loras; /* n_lora adapters loaded for the model (at most OXL_SRV_MAX_LORA) */
    int32_t n_lora;
    const float *lora_scale; /* their initial global scales */
    /* a context of the draft model with one sequence per slot of the slots' length (NULL: no
     * draft model); ngram: draft-free n-gram drafting (size_n, size_m), tried before the model */
    oxl_ctx *dctx;
    bool ngram;
    int32_t ngram_size_n, ngram_size_m;
} oxl_sched_extras;

/* Takes the model and context (not owned); one slot per context sequence; queue_size jobs may wait;
 * a step decodes at most n_batch prompt tokens besides one token per generating slot (and its
 * drafts while the step has room). embd_params (copied) gives the threads, batch and cache types
 * of the embedding context; the scheduler sets its embeddings, pooling, sequences and length. ex
 * (copied; NULL: none) gives the adapters and drafting. A step decodes only slots with the same
 * LoRA scales (llama-server batches no two requests whose adapters differ) and sets those on ctx.
 * Starts the thread. NULL on failure with err set. */
oxl_sched *oxl_sched_start(const oxl_model *model, oxl_ctx *ctx, int32_t queue_size, int32_t n_batch,
                           const oxl_ctx_params *embd_params, const oxl_sched_extras *ex, oxl_error *err);
/* Context shift, as llama-server's --context-shift / --keep (tools/server/server-context.cpp): on,
 * a generating slot whose next token would fill its context (n_cache + 1 >= n_ctx_slot) keeps
 * n_keep = min(n_ctx_slot - 4, (n_keep < 0 ? the prompt's tokens : n_keep) + BOS) tokens, drops
 * (n_cache - n_keep) / 2 after them (oxl_seq_add) and goes on; off (the default), the choice ends
 * there with "length". verbose: one line on stderr per shift. Call before the first job. */
void oxl_sched_set_context_shift(oxl_sched *s, bool on, int32_t n_keep, bool verbose);

/* The global LoRA scales (n_lora of them, into scales); GET /lora-adapters. */
void oxl_sched_lora_get(oxl_sched *s, float *scales);
/* Replaces the global LoRA scales; requests submitted afterwards without a "lora" field use them. */
void oxl_sched_lora_set(oxl_sched *s, const float *scales);
/* Refuses new jobs, finishes the queued and running ones until deadline (monotonic seconds), ends
 * the rest with an error and joins the thread. Jobs stay valid until released. */
void oxl_sched_stop(oxl_sched *s, double deadline);
/* Frees a stopped scheduler, once no request thread uses it. */
void oxl_sched_free(oxl_sched *s);

/* Creates a job owning prompt (malloc'd) and gen's arrays; NULL when out of memory. */
oxl_job *oxl_job_new(oxl_token *prompt, int32_t n_prompt, int32_t n_choices, const oxl_gen_params *gen);
/* Creates an embedding job owning tokens (n_inputs inputs back to back, malloc'd) and input_len
 * (malloc'd, [n_inputs]); its embd has room for n_embd floats per input. NULL when out of memory
 * (tokens and input_len are then freed too). */
oxl_job *oxl_embd_job_new(oxl_token *tokens, int32_t *input_len, int32_t n_inputs, int32_t n_embd);
/* Queues the job: 0, or -1 when the queue is full or the server is stopping (job unchanged, caller
 * still owns it and frees it with oxl_job_release). */
int oxl_sched_submit(oxl_sched *s, oxl_job *job);
/* Drops the caller's reference (frees the job when the scheduler is done with it too). */
void oxl_job_release(oxl_sched *s, oxl_job *job);
/* Marks the job cancelled; its slots are freed at the next step. */
void oxl_job_cancel(oxl_sched *s, oxl_job *job);

/* The mutex guarding job outputs; wait on job->cv with it. */
void oxl_sched_lock(oxl_sched *s);
void oxl_sched_unlock(oxl_sched *s);
/* Waits on job->cv up to ms milliseconds; call with the lock held. */
void oxl_sched_wait(oxl_sched *s, oxl_job *job, int ms);

void oxl_sched_stats_get(oxl_sched *s, oxl_sched_stats *st);
/* Fills up to cap slots; returns their number. */
int32_t oxl_sched_slots(oxl_sched *s, oxl_slot_info *out, int32_t cap);
int32_t oxl_sched_n_ctx_slot(const oxl_sched *s);

/* POST /slots/{id}?action=...: saves slot id's sequence state to path, restores it from path, or
 * erases it (path unused), once the slot is idle (the request waits while it works, as llama-server
 * defers the task). *n_tokens: tokens saved, restored or erased; *n_bytes: bytes written or read.
 * Returns 0; -1 with msg for a bad slot id or a failed save / restore (the slot is then unchanged);
 * -2 when the server stops first. */
typedef enum oxl_slot_action { OXL_SLOT_SAVE, OXL_SLOT_RESTORE, OXL_SLOT_ERASE } oxl_slot_action;
int oxl_sched_slot_action(oxl_sched *s, int32_t id, oxl_slot_action action, const char *path, int32_t *n_tokens,
                          size_t *n_bytes, char *msg, size_t msg_cap);

void oxl_gen_params_free(oxl_gen_params *g);
double oxl_now(void);

#endif
