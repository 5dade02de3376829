/* The scheduler thread: slots, the bounded queue and continuous batching (see sched.h). */
#include "scheduler.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* Fills err (may be NULL) like the library does; returns -1. */
__attribute__((format(printf, 2, 3))) static int set_err(oxl_error *err, const char *fmt, ...) {
    if (err) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err->msg, sizeof err->msg, fmt, ap);
        va_end(ap);
    }
    return -1;
}

typedef enum slot_state { SLOT_IDLE, SLOT_PROMPT, SLOT_GEN } slot_state;

typedef struct slot {
    int32_t id; /* the sequence id */
    slot_state state;
    oxl_job *job;
    int32_t ci;       /* choice index in job */
    oxl_token *cache; /* the tokens in this sequence's KV cache, n_ctx_slot long */
    int32_t n_cache;
    /* the images of the job that last filled the cache: their first rows and keys (rows of cache
     * below n_cache that hold an image's placeholder id are that image's) */
    int32_t n_img;
    int32_t img_at[OXL_SRV_MAX_IMAGES];
    oxl_img_key img_key[OXL_SRV_MAX_IMAGES];
    oxl_token pending; /* sampled, decoded next step */
    oxl_sampler *smpl;
    oxl_detok detok;
    char *raw; /* generated text, including what a stop string may still claim */
    size_t raw_len, raw_cap, published;
    float *work; /* n_vocab logits after logit_bias */
    int32_t n_gen, n_prompt;
    int32_t batch_idx; /* index of this slot's logits in the step's batch, -1 if none */
    int32_t n_step;    /* tokens this slot put in the step's batch */
    uint64_t last_used;
    float lora[OXL_SRV_MAX_LORA]; /* the LoRA scales of the tokens in its KV cache */
    /* speculative decoding: the draft that follows `pending` (made once per pending token), how
     * much of it the step's batch verifies (after batch_idx), and the tokens this slot's sequence
     * holds in the draft model's context (oxl_draft_propose's mirror) */
    oxl_token *draft;
    int32_t n_draft, n_draft_step;
    bool drafted;
    oxl_token *dheld;
} slot;

struct oxl_sched {
    const oxl_model *model;
    oxl_ctx *ctx;
    int32_t n_vocab, n_ctx_slot, n_slots, n_batch;
    bool ctx_shift, shift_verbose, add_bos;
    int32_t n_keep; /* --keep (-1: the prompt) */
    slot *slots;
    pthread_t thread;
    pthread_mutex_t mu;
    pthread_cond_t wake; /* new job, cancellation or stop */
    oxl_job **queue;     /* ring */
    int32_t q_cap, q_head, q_len;
    bool stopping;
    double deadline;
    uint64_t use_counter;
    oxl_sched_stats st;
    /* the step's batch */
    oxl_token *b_tok;
    int32_t *b_pos, *b_seq;
    int8_t *b_logits;
    /* embeddings: the second context (NULL until the first embedding job) and its jobs, FIFO */
    oxl_ctx_params embd_params;
    oxl_ctx *ectx;
    int32_t n_embd;
    oxl_job *ejobs[OXL_SRV_EMBD_JOBS];
    int32_t n_ejobs;
    oxl_token *e_tok; /* the embedding batch, max(n_batch, n_ctx_slot) tokens */
    int32_t *e_pos, *e_seq;
    int8_t *e_keep;                   /* all 0: no logits are needed */
    oxl_job *e_job[OXL_SRV_EMBD_SEQ]; /* the job and input index decoded in sequence k */
    int32_t e_input[OXL_SRV_EMBD_SEQ];
    /* LoRA adapters and drafting (ex's pointers are the caller's) */
    oxl_sched_extras ex;
    float lora_global[OXL_SRV_MAX_LORA]; /* POST /lora-adapters */
    float step_lora[OXL_SRV_MAX_LORA];   /* the scales of the step's slots */
    float ctx_lora[OXL_SRV_MAX_LORA];    /* the scales set on ctx (valid when ctx_lora_set) */
    bool ctx_lora_set;
    int32_t rr; /* the slot whose scales the next step takes first */
};

double oxl_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

int oxl_job_set_grammar(oxl_sampler *smpl, const oxl_model *model, const oxl_gen_params *g) {
    if (!g->grammar_lazy) {
        return oxl_sampler_set_grammar(smpl, model, g->grammar, NULL, NULL, 0);
    }
    const char *pats[OXL_SRV_MAX_TRIGGER_PATTERNS];
    const char *p = g->trigger_patterns;
    for (int32_t i = 0; i < g->n_trigger_patterns; i++, p += strlen(p) + 1) {
        pats[i] = p;
    }
    return oxl_sampler_set_grammar_lazy(smpl, model, g->grammar, NULL, NULL, 0, pats, g->n_trigger_patterns,
                                        g->trigger_tokens, g->n_trigger_tokens, NULL, 0);
}

void oxl_gen_params_free(oxl_gen_params *g) {
    free(g->bias_tok);
    free(g->bias_val);
    for (int i = 0; i < g->n_stop; i++) {
        free(g->stop[i]);
    }
    for (int i = 0; i < g->n_breakers; i++) {
        free(g->breakers[i]);
    }
    free(g->grammar);
    free(g->trigger_patterns);
    free(g->trigger_tokens);
    free(g->preserved);
    memset(g, 0, sizeof *g);
}

static void job_free(oxl_job *j);

oxl_job *oxl_job_new(oxl_token *prompt, int32_t n_prompt, int32_t n_choices, const oxl_gen_params *gen) {
    oxl_job *j = calloc(1, sizeof *j);
    if (!j) {
        return NULL;
    }
    j->prompt = prompt;
    j->n_prompt = n_prompt;
    j->n_choices = n_choices < 1 ? 1 : n_choices > OXL_SRV_MAX_CHOICES ? OXL_SRV_MAX_CHOICES : n_choices;
    j->gen = *gen;
    j->refs = 1;
    atomic_init(&j->cancelled, false);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&j->cv, &ca);
    pthread_condattr_destroy(&ca);
    return j;
}

oxl_job *oxl_embd_job_new(oxl_token *tokens, int32_t *input_len, int32_t n_inputs, int32_t n_embd) {
    int32_t n = 0;
    for (int32_t i = 0; i < n_inputs; i++) {
        n += input_len[i];
    }
    oxl_job *j = oxl_job_new(tokens, n, 1, &(oxl_gen_params){.max_tokens = 0, .top_logprobs = -1});
    float *embd = malloc(sizeof(float) * (size_t)n_embd * (size_t)n_inputs);
    if (!j || !embd) {
        if (j) {
            j->prompt = NULL;
            job_free(j);
        }
        free(embd);
        free(tokens);
        free(input_len);
        return NULL;
    }
    j->n_inputs = n_inputs;
    j->input_len = input_len;
    j->embd = embd;
    return j;
}

static void job_free(oxl_job *j) {
    for (int i = 0; i < j->n_choices; i++) {
        free(j->choice[i].text);
        free(j->choice[i].lp);
        free(j->choice[i].marks);
    }
    oxl_gen_params_free(&j->gen);
    for (int32_t i = 0; i < j->n_img; i++) {
        oxl_image_embd_free(j->img[i]);
    }
    free(j->prompt);
    free(j->input_len);
    free(j->embd);
    pthread_cond_destroy(&j->cv);
    free(j);
}

/* Drops one reference; call with the mutex held. */
static void job_unref(oxl_job *j) {
    if (--j->refs == 0) {
        job_free(j);
    }
}

void oxl_job_release(oxl_sched *s, oxl_job *job) {
    if (!job) {
        return;
    }
    if (!s) {
        job_free(job);
        return;
    }
    pthread_mutex_lock(&s->mu);
    job_unref(job);
    pthread_mutex_unlock(&s->mu);
}

void oxl_job_cancel(oxl_sched *s, oxl_job *job) {
    atomic_store(&job->cancelled, true);
    pthread_mutex_lock(&s->mu);
    pthread_cond_signal(&s->wake);
    pthread_mutex_unlock(&s->mu);
}

void oxl_sched_lock(oxl_sched *s) { pthread_mutex_lock(&s->mu); }
void oxl_sched_unlock(oxl_sched *s) { pthread_mutex_unlock(&s->mu); }

void oxl_sched_wait(oxl_sched *s, oxl_job *job, int ms) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    ts.tv_nsec += (long)ms * 1000000L;
    ts.tv_sec += ts.tv_nsec / 1000000000L;
    ts.tv_nsec %= 1000000000L;
    pthread_cond_timedwait(&job->cv, &s->mu, &ts);
}

int oxl_sched_submit(oxl_sched *s, oxl_job *job) {
    pthread_mutex_lock(&s->mu);
    if (s->stopping || s->q_len >= s->q_cap) {
        pthread_mutex_unlock(&s->mu);
        return -1;
    }
    job->t_submit = oxl_now();
    if (!job->gen.lora_set) {
        memcpy(job->gen.lora, s->lora_global, sizeof s->lora_global);
        job->gen.lora_set = true;
    }
    job->refs++; /* the scheduler's */
    s->queue[(s->q_head + s->q_len++) % s->q_cap] = job;
    pthread_cond_signal(&s->wake);
    pthread_mutex_unlock(&s->mu);
    return 0;
}

/* --- output of one choice (mutex held) ---------------------------------------------------------- */

static int append_text(oxl_choice_out *c, const char *p, size_t n) {
    if (c->len + n + 1 > c->cap) {
        size_t cap = c->cap ? c->cap : 256;
        while (cap < c->len + n + 1) {
            cap *= 2;
        }
        char *t = realloc(c->text, cap);
        if (!t) {
            return -1;
        }
        c->text = t;
        c->cap = cap;
    }
    memcpy(c->text + c->len, p, n);
    c->len += n;
    c->text[c->len] = 0;
    /* where a stream re-parses a chat reply, as llama-server does after each token (a mark that
     * does not fit is left out: the reply is then parsed less often) */
    if (c->n_marks == c->cap_marks) {
        int32_t cap = c->cap_marks ? c->cap_marks * 2 : 64;
        size_t *m = realloc(c->marks, (size_t)cap * sizeof *m);
        if (m) {
            c->marks = m;
            c->cap_marks = cap;
        }
    }
    if (c->n_marks < c->cap_marks) {
        c->marks[c->n_marks++] = c->len;
    }
    return 0;
}

static void publish(slot *sl, size_t upto) {
    oxl_choice_out *c = &sl->job->choice[sl->ci];
    if (upto > sl->published && append_text(c, sl->raw + sl->published, upto - sl->published) == 0) {
        sl->published = upto;
    }
}

/* Ends the slot's choice; the slot keeps its KV cache for prefix reuse. */
static void slot_finish(oxl_sched *s, slot *sl, const char *reason) {
    oxl_job *j = sl->job;
    j->choice[sl->ci].finish = reason;
    j->choice[sl->ci].n_gen = sl->n_gen;
    oxl_sampler_free(sl->smpl);
    sl->smpl = NULL;
    sl->job = NULL;
    sl->state = SLOT_IDLE;
    if (++j->n_done == j->n_choices) {
        j->t_end = oxl_now();
        pthread_cond_broadcast(&j->cv);
        job_unref(j);
    } else {
        pthread_cond_broadcast(&j->cv);
    }
}

/* Ends every choice of a running job with an error message. */
static void job_fail_running(oxl_sched *s, oxl_job *j, const char *msg) {
    if (!j->error[0]) {
        snprintf(j->error, sizeof j->error, "%s", msg);
    }
    for (int32_t i = 0; i < s->n_slots; i++) {
        if (s->slots[i].job == j) {
            slot_finish(s, &s->slots[i], "error");
        }
    }
}

/* Ends embedding job k of the list (done, failed with msg, or cancelled) and drops it from the list. */
static void embd_job_end(oxl_sched *s, int32_t k, const char *msg) {
    oxl_job *j = s->ejobs[k];
    if (msg && !j->error[0]) {
        snprintf(j->error, sizeof j->error, "%s", msg);
    }
    j->n_done = 1;
    j->t_end = oxl_now();
    pthread_cond_broadcast(&j->cv);
    job_unref(j);
    memmove(&s->ejobs[k], &s->ejobs[k + 1], sizeof(oxl_job *) * (size_t)(s->n_ejobs - k - 1));
    s->n_ejobs--;
}

static void fail_all(oxl_sched *s, const char *msg) {
    while (s->n_ejobs > 0) {
        embd_job_end(s, 0, msg);
    }
    for (int32_t i = 0; i < s->n_slots; i++) {
        if (s->slots[i].job) {
            job_fail_running(s, s->slots[i].job, msg);
        }
    }
    while (s->q_len > 0) {
        oxl_job *j = s->queue[s->q_head];
        s->q_head = (s->q_head + 1) % s->q_cap;
        s->q_len--;
        snprintf(j->error, sizeof j->error, "%s", msg);
        j->n_done = j->n_choices;
        j->t_end = oxl_now();
        pthread_cond_broadcast(&j->cv);
        job_unref(j);
    }
}

/* --- admission: a queued job takes n_choices free slots, each the one whose cache shares the
 * longest prefix with the prompt (llama.cpp's slot selection by prompt similarity) ------------------ */

/* Whether two sets of LoRA scales are the same (llama-server's are_lora_equal). */
static bool lora_eq(const oxl_sched *s, const float *a, const float *b) {
    for (int32_t i = 0; i < s->ex.n_lora; i++) {
        if (a[i] != b[i]) {
            return false;
        }
    }
    return true;
}

/* The key of the image whose first row is `row`, NULL when none starts there. */
static const oxl_img_key *image_at(const int32_t *at, const oxl_img_key *key, int32_t n_img, int32_t row) {
    for (int32_t i = 0; i < n_img; i++) {
        if (at[i] == row) {
            return &key[i];
        }
    }
    return NULL;
}

/* The rows of the slot's cache that the job's prompt can reuse: equal tokens, and through an image
 * only when an image of the same bytes (SHA-256 and length) starts at the same row in both, so two
 * images whose placeholder ids agree never share rows. */
static int32_t common_prefix(const slot *sl, const oxl_job *j) {
    const oxl_token *a = sl->cache, *b = j->prompt;
    const int32_t na = sl->n_cache, nb = j->n_prompt;
    int32_t n = 0;
    while (n < na && n < nb && a[n] == b[n]) {
        if (a[n] < 0) {
            const oxl_img_key *ka = image_at(sl->img_at, sl->img_key, sl->n_img, n);
            const oxl_img_key *kb = image_at(j->img_at, j->img_key, j->n_img, n);
            if (!ka != !kb || (ka && memcmp(ka, kb, sizeof *ka))) {
                break;
            }
        }
        n++;
    }
    /* an image is reused whole or not at all: back to the start of one cut short */
    while (n > 0 && n < nb && b[n] < 0 && b[n - 1] == b[n]) {
        n--;
    }
    return n;
}

static void admit(oxl_sched *s) {
    while (s->q_len > 0) {
        oxl_job *j = s->queue[s->q_head];
        if (j->n_choices > s->n_slots) {
            s->q_head = (s->q_head + 1) % s->q_cap;
            s->q_len--;
            snprintf(j->error, sizeof j->error, "n = %d choices need more than the server's %d slots", j->n_choices,
                     s->n_slots);
            j->n_done = j->n_choices;
            pthread_cond_broadcast(&j->cv);
            job_unref(j);
            continue;
        }
        if (atomic_load(&j->cancelled)) {
            s->q_head = (s->q_head + 1) % s->q_cap;
            s->q_len--;
            j->n_done = j->n_choices;
            pthread_cond_broadcast(&j->cv);
            job_unref(j);
            continue;
        }
        if (j->n_inputs > 0) {
            /* an embedding job joins the embedding list, in order, while it has room */
            if (s->n_ejobs == OXL_SRV_EMBD_JOBS) {
                return;
            }
            s->q_head = (s->q_head + 1) % s->q_cap;
            s->q_len--;
            j->t_start = oxl_now();
            s->ejobs[s->n_ejobs++] = j;
            continue;
        }
        int32_t n_free = 0;
        for (int32_t i = 0; i < s->n_slots; i++) {
            n_free += s->slots[i].state == SLOT_IDLE;
        }
        if (n_free < j->n_choices) {
            return;
        }
        s->q_head = (s->q_head + 1) % s->q_cap;
        s->q_len--;
        j->t_start = oxl_now();
        for (int32_t ci = 0; ci < j->n_choices; ci++) {
            slot *best = NULL;
            int32_t best_n = -1;
            for (int32_t i = 0; i < s->n_slots; i++) {
                slot *sl = &s->slots[i];
                if (sl->state != SLOT_IDLE) {
                    continue;
                }
                /* a cache made with other LoRA scales holds nothing this request can reuse */
                int32_t n = lora_eq(s, sl->lora, j->gen.lora) ? common_prefix(sl, j) : 0;
                if (n > best_n || (n == best_n && sl->last_used < best->last_used)) {
                    best = sl;
                    best_n = n;
                }
            }
            /* Keep at least the last prompt token to evaluate: its logits give the first token. */
            int32_t keep = best_n < j->n_prompt ? best_n : j->n_prompt - 1;
            oxl_seq_truncate(s->ctx, best->id, keep);
            if (oxl_seq_n_past(s->ctx, best->id) != keep) {
                /* a recurrent model cannot rewind its state to a prefix: start the slot over */
                oxl_seq_truncate(s->ctx, best->id, 0);
                keep = 0;
            }
            best->n_cache = keep;
            /* the kept rows' images are the job's own (common_prefix): the job's keys describe them */
            best->n_img = j->n_img;
            memcpy(best->img_at, j->img_at, sizeof best->img_at);
            memcpy(best->img_key, j->img_key, sizeof best->img_key);
            memcpy(best->lora, j->gen.lora, sizeof best->lora);
            best->drafted = false;
            best->n_draft = 0;
            best->job = j;
            best->ci = ci;
            j->choice[ci].id_slot = best->id;
            best->state = SLOT_PROMPT;
            oxl_sampler_params sp = j->gen.sampling;
            if (sp.seed != OXL_SEED_RANDOM) {
                sp.seed += (uint32_t)ci;
            }
            best->smpl = oxl_sampler_new(&sp);
            if (best->smpl && sp.dry_multiplier > 0) {
                static const char *const dflt[] = {"\n", ":", "\"", "*"};
                const oxl_gen_params *g = &j->gen;
                if (oxl_sampler_dry_breakers(best->smpl, s->model,
                                             g->breakers_set ? (const char *const *)g->breakers : dflt,
                                             g->breakers_set ? g->n_breakers : 4) < 0) {
                    oxl_sampler_free(best->smpl);
                    best->smpl = NULL;
                }
            }
            if (best->smpl && j->gen.grammar && oxl_job_set_grammar(best->smpl, s->model, &j->gen) != 0) {
                oxl_sampler_free(best->smpl); /* checked when the request was read: memory */
                best->smpl = NULL;
            }
            const oxl_gen_params *gp = &j->gen;
            if (best->smpl && gp->rb_tokens >= 0 && gp->rb_end[0] &&
                oxl_sampler_set_reasoning_budget(best->smpl, s->model, gp->rb_start, gp->rb_end, gp->rb_message,
                                                 gp->rb_tokens, gp->rb_arm) != 0) {
                oxl_sampler_free(best->smpl); /* the tags tokenize (checked when read): memory */
                best->smpl = NULL;
            }
            /* the penalties' window starts with the prompt, as llama-server's does */
            for (int32_t i = 0; best->smpl && i < j->n_prompt; i++) {
                if (j->prompt[i] < 0) {
                    continue; /* an image's rows */
                }
                oxl_sampler_accept(best->smpl, j->prompt[i]);
            }
            memset(&best->detok, 0, sizeof best->detok);
            best->raw_len = best->published = 0;
            best->n_gen = 0;
            best->n_prompt = j->n_prompt;
            best->last_used = ++s->use_counter;
            if (ci == 0) {
                j->n_cached = keep;
            }
            s->st.prompt_tokens += (uint64_t)j->n_prompt;
            s->st.prompt_tokens_cached += (uint64_t)keep;
            if (!best->smpl) {
                job_fail_running(s, j, "out of memory creating a sampler");
                break;
            }
        }
    }
}

/* --- sampling ---------------------------------------------------------------------------------- */

static int raw_append(slot *sl, const char *p, size_t n) {
    if (sl->raw_len + n > sl->raw_cap) {
        size_t cap = sl->raw_cap ? sl->raw_cap : 256;
        while (cap < sl->raw_len + n) {
            cap *= 2;
        }
        char *r = realloc(sl->raw, cap);
        if (!r) {
            return -1;
        }
        sl->raw = r;
        sl->raw_cap = cap;
    }
    memcpy(sl->raw + sl->raw_len, p, n);
    sl->raw_len += n;
    return 0;
}

/* Log-probabilities of the sampled token and the top alternatives, from the logits sampled from. */
static void record_logprobs(oxl_choice_out *c, const float *lg, int32_t n_vocab, oxl_token tok, int32_t n_top) {
    if (c->n_lp == c->cap_lp) {
        int32_t cap = c->cap_lp ? c->cap_lp * 2 : 64;
        oxl_tok_logprob *lp = realloc(c->lp, sizeof *lp * (size_t)cap);
        if (!lp) {
            return;
        }
        c->lp = lp;
        c->cap_lp = cap;
    }
    float mx = -INFINITY;
    for (int32_t i = 0; i < n_vocab; i++) {
        mx = lg[i] > mx ? lg[i] : mx;
    }
    double sum = 0;
    for (int32_t i = 0; i < n_vocab; i++) {
        sum += exp((double)(lg[i] - mx));
    }
    float lse = mx + (float)log(sum);
    oxl_tok_logprob *r = &c->lp[c->n_lp++];
    r->tok = tok;
    r->logprob = lg[tok] - lse;
    r->n_top = 0;
    for (int32_t i = 0; i < n_vocab; i++) {
        /* insertion into the sorted top list */
        int32_t k = r->n_top;
        if (k == n_top && (k == 0 || lg[i] - lse <= r->top_lp[k - 1])) {
            continue;
        }
        if (k < n_top) {
            r->n_top++;
        } else {
            k--;
        }
        while (k > 0 && r->top_lp[k - 1] < lg[i] - lse) {
            r->top_lp[k] = r->top_lp[k - 1];
            r->top_tok[k] = r->top_tok[k - 1];
            k--;
        }
        r->top_lp[k] = lg[i] - lse;
        r->top_tok[k] = i;
    }
}

/* Appends the stream's held-back bytes, replacing an unfinished UTF-8 sequence with U+FFFD so that
 * the text stays valid UTF-8. */
static void flush_detok(slot *sl) {
    char tail[16];
    int32_t n = oxl_detok_flush(&sl->detok, tail, (int32_t)sizeof tail);
    if (n > 0) {
        raw_append(sl, "\xEF\xBF\xBD", 3);
    }
}

/* Checks the stop strings against the unpublished text: a match truncates the text and ends the
 * choice; otherwise everything is published except a tail that could begin a stop string. */
static bool check_stop(oxl_job *j, slot *sl) {
    const oxl_gen_params *g = &j->gen;
    size_t hit = SIZE_MAX;
    const char *word = NULL;
    for (int32_t k = 0; k < g->n_stop; k++) {
        size_t sn = strlen(g->stop[k]);
        if (sn == 0 || sl->raw_len - sl->published < sn) {
            continue;
        }
        const char *m = memmem(sl->raw + sl->published, sl->raw_len - sl->published, g->stop[k], sn);
        if (m && (size_t)(m - sl->raw) < hit) {
            hit = (size_t)(m - sl->raw);
            word = g->stop[k];
        }
    }
    if (hit != SIZE_MAX) {
        j->choice[sl->ci].stop_word = word;
        sl->raw_len = hit;
        publish(sl, hit);
        return true;
    }
    size_t hold = 0;
    for (int32_t k = 0; k < g->n_stop; k++) {
        size_t sn = strlen(g->stop[k]);
        for (size_t h = sn - 1; h > hold && sn > 0; h--) {
            if (h <= sl->raw_len - sl->published && !memcmp(sl->raw + sl->raw_len - h, g->stop[k], h)) {
                hold = h;
                break;
            }
        }
    }
    publish(sl, sl->raw_len - hold);
    return false;
}

static void sample_slot(oxl_sched *s, slot *sl, double step_seconds) {
    oxl_job *j = sl->job;
    const oxl_gen_params *g = &j->gen;
    const float *lg = oxl_get_logits(s->ctx, sl->batch_idx);
    if (!lg) {
        job_fail_running(s, j, "internal error: the decoder kept no logits");
        return;
    }
    if (g->n_bias > 0) {
        memcpy(sl->work, lg, sizeof(float) * (size_t)s->n_vocab);
        for (int32_t i = 0; i < g->n_bias; i++) {
            sl->work[g->bias_tok[i]] += g->bias_val[i];
        }
        lg = sl->work;
    }
    oxl_token tok = oxl_sampler_sample(sl->smpl, lg, s->n_vocab);
    if (tok >= 0 && tok < s->n_vocab) {
        oxl_sampler_accept(sl->smpl, tok);
    }
    oxl_choice_out *c = &j->choice[sl->ci];
    if (!j->t_first) {
        j->t_first = oxl_now();
    }
    if (tok < 0 || tok >= s->n_vocab || oxl_token_is_eog(s->model, tok)) {
        flush_detok(sl);
        check_stop(j, sl);
        publish(sl, sl->raw_len);
        slot_finish(s, sl, "stop");
        return;
    }
    if (g->top_logprobs >= 0) {
        record_logprobs(c, lg, s->n_vocab, tok, g->top_logprobs);
    }
    s->st.gen_tokens++;
    s->st.gen_token_seconds += step_seconds;
    sl->n_gen++;
    c->n_gen = sl->n_gen;
    char piece[256];
    bool preserved = false;
    for (int32_t i = 0; i < g->n_preserved; i++) {
        preserved |= g->preserved[i] == tok;
    }
    if (preserved) { /* its text with special tokens rendered, after what the detokenizer holds */
        flush_detok(sl);
    }
    int32_t w = preserved ? oxl_token_to_piece(s->model, tok, piece, (int32_t)sizeof piece, true)
                          : oxl_detok_push(&sl->detok, s->model, tok, piece, (int32_t)sizeof piece);
    if (w < 0) {
        char *big = malloc((size_t)-w);
        w = !big        ? 0
            : preserved ? oxl_token_to_piece(s->model, tok, big, -w, true)
                        : oxl_detok_push(&sl->detok, s->model, tok, big, -w);
        if (w > 0) {
            raw_append(sl, big, (size_t)w);
        }
        free(big);
    } else if (w > 0) {
        raw_append(sl, piece, (size_t)w);
    }
    if (check_stop(j, sl)) {
        slot_finish(s, sl, "stop");
        return;
    }
    bool at_max = g->max_tokens >= 0 && sl->n_gen >= g->max_tokens;
    /* llama-server's process_token: without context shift, stop when the next token would fill the
     * context */
    bool ctx_full = !s->ctx_shift && sl->n_cache + 1 >= s->n_ctx_slot;
    if (ctx_full) {
        c->truncated = true;
    }
    if (at_max || ctx_full) {
        flush_detok(sl);
        if (check_stop(j, sl)) {
            slot_finish(s, sl, "stop");
            return;
        }
        publish(sl, sl->raw_len);
        slot_finish(s, sl, "length");
        return;
    }
    sl->pending = tok;
    sl->state = SLOT_GEN;
    pthread_cond_broadcast(&j->cv);
}

/* Context shift of a generating slot whose next token would fill its context (llama-server's
 * update_slots): keep n_keep tokens, drop half of the rest after them, move the cache mirror along.
 * false when the job failed (its slot is then free). */
static bool context_shift(oxl_sched *s, slot *sl) {
    oxl_job *j = sl->job;
    int32_t n_keep = s->n_keep < 0 ? j->n_prompt : s->n_keep;
    if (s->add_bos) {
        n_keep += 1;
    }
    n_keep = n_keep < s->n_ctx_slot - 4 ? n_keep : s->n_ctx_slot - 4;
    const int32_t n_left = sl->n_cache - n_keep, n_discard = n_left / 2;
    oxl_error err = {0};
    if (n_keep < 0 || n_discard <= 0 || oxl_seq_add(s->ctx, sl->id, n_keep + n_discard, -1, -n_discard, &err) != 0) {
        char msg[256];
        snprintf(msg, sizeof msg, "context shift failed (n_keep %d, n_discard %d): %.160s", n_keep, n_discard,
                 err.msg[0] ? err.msg : "nothing to discard");
        job_fail_running(s, j, msg);
        return false;
    }
    if (s->shift_verbose) {
        fprintf(stderr, "oxillama serve: slot %d context shift, n_keep = %d, n_left = %d, n_discard = %d\n", sl->id,
                n_keep, n_left, n_discard);
    }
    memmove(sl->cache + n_keep, sl->cache + n_keep + n_discard,
            sizeof(oxl_token) * (size_t)(sl->n_cache - n_keep - n_discard));
    sl->n_cache -= n_discard;
    j->choice[sl->ci].truncated = true;
    return true;
}

/* --- embeddings ------------------------------------------------------------------------------- */

/* Creates the embedding context (mutex held): rank pooling with --rerank, else the model's pooling,
 * or mean when the model has none (pooling none gives no vector per input; llama.cpp's server
 * refuses it on this route). */
static int embd_ctx_new(oxl_sched *s, oxl_error *err) {
    oxl_ctx_params p = s->embd_params;
    p.embeddings = true;
    p.pooling = s->embd_params.pooling == OXL_POOLING_RANK ? OXL_POOLING_RANK : OXL_POOLING_UNSPECIFIED;
    p.n_seq_max = OXL_SRV_EMBD_SEQ;
    p.n_ctx = s->n_ctx_slot * OXL_SRV_EMBD_SEQ;
    s->ectx = oxl_ctx_new(s->model, &p, err);
    if (s->ectx && oxl_ctx_pooling(s->ectx) == OXL_POOLING_NONE) {
        oxl_ctx_free(s->ectx);
        p.pooling = OXL_POOLING_MEAN;
        s->ectx = oxl_ctx_new(s->model, &p, err);
    }
    if (!s->ectx) {
        return -1;
    }
    static const char *const names[] = {"none", "mean", "cls", "last", "rank"};
    fprintf(stderr, "oxillama serve: embeddings: %d sequences of %d tokens, %s pooling%s\n", OXL_SRV_EMBD_SEQ,
            s->n_ctx_slot, names[oxl_ctx_pooling(s->ectx)],
            p.pooling == OXL_POOLING_MEAN   ? " (the model has no pooling_type)"
            : p.pooling == OXL_POOLING_RANK ? " (--rerank)"
                                            : " (the model's pooling_type)");
    const size_t cap = (size_t)(s->n_batch > s->n_ctx_slot ? s->n_batch : s->n_ctx_slot);
    s->e_tok = malloc(sizeof *s->e_tok * cap);
    s->e_pos = malloc(sizeof *s->e_pos * cap);
    s->e_seq = malloc(sizeof *s->e_seq * cap);
    s->e_keep = calloc(cap, sizeof *s->e_keep);
    if (!s->e_tok || !s->e_pos || !s->e_seq || !s->e_keep) {
        return set_err(err, "out of memory for the embedding batch");
    }
    return 0;
}

/* One embedding decode (mutex held; released during the decode): whole inputs of the listed jobs
 * in order, each in its own sequence from position 0, up to OXL_SRV_EMBD_SEQ inputs and n_batch
 * tokens (a longer first input alone); then each input's pooled vector goes to its job. */
static void embd_step(oxl_sched *s) {
    for (int32_t k = s->n_ejobs - 1; k >= 0; k--) {
        if (atomic_load(&s->ejobs[k]->cancelled)) {
            embd_job_end(s, k, NULL);
        }
    }
    if (s->n_ejobs == 0) {
        return;
    }
    oxl_error err = {0};
    if (!s->ectx && embd_ctx_new(s, &err) != 0) {
        /* nothing half made stays: the next embedding job tries again */
        char msg[256];
        snprintf(msg, sizeof msg, "cannot create the embedding context: %.200s", err.msg);
        fprintf(stderr, "oxillama serve: %s\n", msg);
        oxl_ctx_free(s->ectx);
        s->ectx = NULL;
        free(s->e_tok);
        free(s->e_pos);
        free(s->e_seq);
        free(s->e_keep);
        s->e_tok = NULL;
        s->e_pos = NULL;
        s->e_seq = NULL;
        s->e_keep = NULL;
        while (s->n_ejobs > 0) {
            embd_job_end(s, 0, msg);
        }
        return;
    }
    int32_t n = 0, n_seq = 0;
    for (int32_t k = 0; k < s->n_ejobs && n_seq < OXL_SRV_EMBD_SEQ; k++) {
        oxl_job *j = s->ejobs[k];
        while (j->n_started < j->n_inputs && n_seq < OXL_SRV_EMBD_SEQ) {
            const int32_t len = j->input_len[j->n_started];
            if (n > 0 && n + len > s->n_batch) {
                break;
            }
            int32_t off = 0;
            for (int32_t i = 0; i < j->n_started; i++) {
                off += j->input_len[i];
            }
            for (int32_t t = 0; t < len; t++) {
                s->e_tok[n + t] = j->prompt[off + t];
                s->e_pos[n + t] = t;
                s->e_seq[n + t] = n_seq;
            }
            s->e_job[n_seq] = j;
            s->e_input[n_seq++] = j->n_started++;
            n += len;
        }
        if (j->n_started < j->n_inputs) {
            break; /* the next input did not fit: inputs keep their order */
        }
    }
    pthread_mutex_unlock(&s->mu);
    for (int32_t k = 0; k < n_seq; k++) {
        oxl_seq_truncate(s->ectx, k, 0);
    }
    oxl_batch b = {n, s->e_tok, s->e_pos, s->e_seq, s->e_keep, NULL};
    double t0 = oxl_now();
    int rc = oxl_decode_batch(s->ectx, &b, &err);
    double dt = oxl_now() - t0;
    pthread_mutex_lock(&s->mu);
    s->st.decode_steps++;
    s->st.decode_seconds += dt;
    s->st.prompt_tokens += (uint64_t)n;
    if (rc != 0) {
        fprintf(stderr, "oxillama serve: embedding decode failed: %s\n", err.msg);
    }
    for (int32_t k = 0; k < n_seq; k++) {
        oxl_job *j = s->e_job[k];
        const float *v = rc == 0 ? oxl_get_embeddings_seq(s->ectx, k) : NULL;
        if (rc != 0) {
            if (!j->error[0]) {
                snprintf(j->error, sizeof j->error, "decode failed: %.200s", err.msg);
            }
        } else if (!v) {
            snprintf(j->error, sizeof j->error, "internal error: no pooled embedding for sequence %d", k);
        } else {
            memcpy(j->embd + (size_t)s->e_input[k] * (size_t)s->n_embd, v, sizeof(float) * (size_t)s->n_embd);
        }
        j->n_embedded++;
    }
    /* jobs with every input done, or failed with nothing of theirs still in a decode, end */
    for (int32_t k = s->n_ejobs - 1; k >= 0; k--) {
        oxl_job *j = s->ejobs[k];
        if (j->n_embedded == j->n_inputs || (j->error[0] && j->n_embedded == j->n_started)) {
            embd_job_end(s, k, NULL);
        }
    }
}

/* --- the step loop ----------------------------------------------------------------------------- */

/* Decodes the image that comes next in the prompt of each slot taking its prompt (as
 * mtmd_helper_eval_chunks: text chunks through the step's batch, images here, in order). */
static void decode_images(oxl_sched *s) {
    for (int32_t i = 0; i < s->n_slots; i++) {
        slot *sl = &s->slots[i];
        /* images back to back go in one after the other */
        while (sl->state == SLOT_PROMPT && sl->job && sl->n_cache < sl->job->n_prompt &&
               sl->job->prompt[sl->n_cache] < 0) {
            oxl_job *j = sl->job;
            const oxl_image_embd *e = NULL;
            for (int32_t k = 0; k < j->n_img && !e; k++) {
                e = j->img_at[k] == sl->n_cache ? j->img[k] : NULL;
            }
            oxl_error err = {0};
            int32_t nt = oxl_image_embd_n_tokens(e);
            if (!e || sl->n_cache + nt > j->n_prompt) {
                job_fail_running(s, j, "the prompt's image rows do not match its images");
                break;
            }
            if (oxl_image_embd_decode(s->ctx, sl->id, e, &err) != 0) {
                char msg[256];
                snprintf(msg, sizeof msg, "image decode failed: %.200s", err.msg);
                /* no part of an image stays in the cache */
                oxl_seq_truncate(s->ctx, sl->id, sl->n_cache);
                sl->n_cache = oxl_seq_n_past(s->ctx, sl->id);
                job_fail_running(s, j, msg);
                break;
            }
            for (int32_t t = 0; t < nt; t++, sl->n_cache++) {
                sl->cache[sl->n_cache] = j->prompt[sl->n_cache];
            }
        }
    }
}

/* Gathers the step's batch from the slots whose LoRA scales are those of the first busy slot (the
 * first looked at moves on each step, so no set of scales waits for long): one token per
 * generating slot followed by its draft while the step has room for drafts, then prompt chunks
 * while it has room. */
static int32_t build_batch(oxl_sched *s) {
    const slot *first = NULL;
    for (int32_t k = 0; k < s->n_slots && !first; k++) {
        const slot *sl = &s->slots[(s->rr + k) % s->n_slots];
        first = sl->state != SLOT_IDLE ? sl : NULL;
    }
    s->rr = (s->rr + 1) % s->n_slots;
    if (first) {
        memcpy(s->step_lora, first->lora, sizeof s->step_lora);
    }
    int32_t n_gen = 0;
    for (int32_t i = 0; i < s->n_slots; i++) {
        n_gen += s->slots[i].state == SLOT_GEN && lora_eq(s, s->slots[i].lora, s->step_lora);
    }
    int32_t room_draft = s->n_batch - n_gen;
    int32_t n = 0;
    for (int32_t i = 0; i < s->n_slots; i++) {
        slot *sl = &s->slots[i];
        sl->batch_idx = -1;
        sl->n_step = 0;
        sl->n_draft_step = 0;
        if (sl->state == SLOT_GEN && lora_eq(s, sl->lora, s->step_lora)) {
            /* a full slot shifts first; its draft is empty then (slot_draft caps it by the room left) */
            if (s->ctx_shift && sl->n_cache + 1 >= s->n_ctx_slot && !context_shift(s, sl)) {
                continue;
            }
            int32_t nd = sl->drafted ? sl->n_draft : 0;
            if (nd > room_draft) {
                nd = room_draft > 0 ? room_draft : 0;
            }
            for (int32_t t = 0; t <= nd; t++) {
                s->b_tok[n + t] = t == 0 ? sl->pending : sl->draft[t - 1];
                s->b_pos[n + t] = sl->n_cache + t;
                s->b_seq[n + t] = sl->id;
                s->b_logits[n + t] = 1;
            }
            sl->batch_idx = n;
            sl->n_step = 1 + nd;
            sl->n_draft_step = nd;
            sl->drafted = false;
            room_draft -= nd;
            n += 1 + nd;
        }
    }
    int32_t room = s->n_batch - n;
    for (int32_t i = 0; i < s->n_slots && room > 0; i++) {
        slot *sl = &s->slots[i];
        if (sl->state != SLOT_PROMPT || !lora_eq(s, sl->lora, s->step_lora)) {
            continue;
        }
        int32_t left = sl->job->n_prompt - sl->n_cache;
        int32_t k = left < room ? left : room;
        /* text up to the next image (decode_images puts the image in) */
        for (int32_t t = 0; t < k; t++) {
            if (sl->job->prompt[sl->n_cache + t] < 0) {
                k = t;
            }
        }
        for (int32_t t = 0; t < k; t++) {
            s->b_tok[n] = sl->job->prompt[sl->n_cache + t];
            s->b_pos[n] = sl->n_cache + t;
            s->b_seq[n] = sl->id;
            s->b_logits[n] = t == left - 1;
            if (t == left - 1) {
                sl->batch_idx = n;
            }
            n++;
        }
        sl->n_step = k;
        room -= k;
    }
    return n;
}

/* Sets the step's LoRA scales on the context when they are not those it has: the adapters with a
 * scale other than 0, in their order (llama-server's construct_lora_list). Called without the
 * mutex; 0, or -1 with err set. */
static int apply_lora(oxl_sched *s, oxl_error *err) {
    if (s->ex.n_lora == 0 || (s->ctx_lora_set && lora_eq(s, s->ctx_lora, s->step_lora))) {
        return 0;
    }
    oxl_lora *use[OXL_SRV_MAX_LORA];
    float scale[OXL_SRV_MAX_LORA];
    int32_t m = 0;
    for (int32_t i = 0; i < s->ex.n_lora; i++) {
        if (s->step_lora[i] != 0.0f) {
            use[m] = s->ex.loras[i];
            scale[m++] = s->step_lora[i];
        }
    }
    if (oxl_ctx_set_loras(s->ctx, use, scale, m, err) != 0) {
        s->ctx_lora_set = false;
        return -1;
    }
    memcpy(s->ctx_lora, s->step_lora, sizeof s->ctx_lora);
    s->ctx_lora_set = true;
    return 0;
}

/* Samples a generating slot after a decode. Without a draft, one token. With one, position after
 * position while the pick equals the draft (llama.cpp's common_sampler_sample_and_accept_n), each
 * pick handled as one-token-at-a-time decoding would handle it (stop strings, logprobs, limits),
 * then the rejected draft tokens leave the cache. Mutex held. */
static void sample_step(oxl_sched *s, slot *sl, double step_seconds) {
    const int32_t nd = sl->n_draft_step;
    if (nd == 0) {
        sample_slot(s, sl, step_seconds);
        return;
    }
    const int32_t base = sl->n_cache - 1 - nd; /* the tokens before this step's pending one */
    const int32_t idx0 = sl->batch_idx;
    oxl_choice_out *c = &sl->job->choice[sl->ci];
    c->n_drafted += nd; /* before sampling: the last pick may end the job and release it */
    s->st.draft_tokens += (uint64_t)nd;
    s->st.draft_steps++;
    int32_t acc = 0;
    for (int32_t i = 0; i <= nd; i++) {
        sl->n_cache = base + 1 + i; /* the cache as one-token-at-a-time decoding would have it */
        sl->batch_idx = idx0 + i;
        sample_slot(s, sl, step_seconds);
        if (sl->state != SLOT_GEN || i == nd || sl->pending != sl->draft[i]) {
            break;
        }
        acc++;
        c->n_accepted++;
    }
    s->st.draft_accepted += (uint64_t)acc;
    sl->n_cache = base + 1 + acc;
    oxl_seq_truncate(s->ctx, sl->id, sl->n_cache);
    if (oxl_seq_n_past(s->ctx, sl->id) != sl->n_cache && sl->job) {
        job_fail_running(s, sl->job, "internal error: the cache could not drop the rejected draft tokens");
    }
}

/* The draft after a slot's pending token: n-grams of its text first, then the draft model, up to
 * speculative.n_max tokens within the slot's context and max_tokens; fewer than n_min count as
 * none (llama-server's get_n_draft_max and its small-draft check). Runs without the mutex: the
 * fields it reads are the scheduler thread's, and the job's parameters do not change. */
static void slot_draft(oxl_sched *s, slot *sl) {
    const oxl_gen_params *g = &sl->job->gen;
    sl->drafted = true;
    sl->n_draft = 0;
    int32_t cap = g->spec_n_max;
    if (s->n_ctx_slot - sl->n_cache - 1 < cap) {
        cap = s->n_ctx_slot - sl->n_cache - 1;
    }
    if (g->max_tokens >= 0 && g->max_tokens - sl->n_gen - 1 < cap) {
        cap = g->max_tokens - sl->n_gen - 1;
    }
    /* a prompt with images has rows of no token: neither the n-grams nor the draft model see them */
    if (cap <= 0 || cap < g->spec_n_min || sl->job->n_img > 0) {
        return;
    }
    int32_t nd = 0;
    if (s->ex.ngram) {
        nd = oxl_ngram_draft(sl->cache, sl->n_cache, sl->pending, s->ex.ngram_size_n, s->ex.ngram_size_m, sl->draft,
                             cap);
    }
    if (nd == 0 && s->ex.dctx) {
        oxl_error err = {0};
        nd = oxl_draft_propose(s->ex.dctx, sl->id, sl->dheld, sl->cache, sl->n_cache, sl->pending, g->spec_p_min,
                               g->spec_n_min, cap, sl->draft, &err);
        if (nd < 0) {
            /* the output does not depend on drafts: the slot goes on without one */
            fprintf(stderr, "oxillama serve: slot %d: draft model: %s\n", sl->id, err.msg);
            nd = 0;
        }
    }
    sl->n_draft = nd < g->spec_n_min ? 0 : nd;
}

/* Drafts for the generating slots that have none for their pending token yet (mutex held;
 * released while drafting). */
static void draft_slots(oxl_sched *s) {
    bool any = false;
    for (int32_t i = 0; i < s->n_slots && !any; i++) {
        const slot *sl = &s->slots[i];
        any = sl->state == SLOT_GEN && !sl->drafted && sl->job->gen.spec_n_max > 0;
    }
    if (!any) {
        return;
    }
    pthread_mutex_unlock(&s->mu);
    for (int32_t i = 0; i < s->n_slots; i++) {
        slot *sl = &s->slots[i];
        if (sl->state == SLOT_GEN && !sl->drafted && sl->job->gen.spec_n_max > 0) {
            slot_draft(s, sl);
        }
    }
    pthread_mutex_lock(&s->mu);
}

static void *sched_main(void *arg) {
    oxl_sched *s = arg;
    pthread_mutex_lock(&s->mu);
    for (;;) {
        int32_t busy = 0;
        for (int32_t i = 0; i < s->n_slots; i++) {
            busy += s->slots[i].state != SLOT_IDLE;
        }
        if (busy == 0 && s->q_len == 0 && s->n_ejobs == 0) {
            if (s->stopping) {
                break;
            }
            pthread_cond_wait(&s->wake, &s->mu);
            continue;
        }
        if (s->stopping && oxl_now() >= s->deadline) {
            fail_all(s, "the server is shutting down");
            continue;
        }
        for (int32_t i = 0; i < s->n_slots; i++) {
            slot *sl = &s->slots[i];
            if (sl->job && atomic_load(&sl->job->cancelled)) {
                slot_finish(s, sl, "cancelled");
            }
        }
        admit(s);
        if (s->n_ejobs > 0) {
            embd_step(s);
        }
        decode_images(s);
        int32_t n = build_batch(s);
        /* the embedding decode released the mutex: jobs queued meanwhile signalled no one waiting,
         * and are admitted at the top of the loop */
        if (n == 0 && (s->n_ejobs > 0 || s->q_len > 0)) {
            continue;
        }
        if (n == 0) {
            /* nothing to decode until a job arrives, is cancelled, or the server stops. Once
             * stopping, nothing signals again (a job cancelled after oxl_sched_stop leaves its slot
             * idle here): back to the top, which ends the loop when all is idle and fails what is
             * left at the deadline; the short timed wait keeps that from spinning */
            if (s->stopping) {
                struct timespec ts;
                clock_gettime(CLOCK_REALTIME, &ts);
                ts.tv_nsec += 10000000L;
                ts.tv_sec += ts.tv_nsec / 1000000000L;
                ts.tv_nsec %= 1000000000L;
                pthread_cond_timedwait(&s->wake, &s->mu, &ts);
            } else {
                pthread_cond_wait(&s->wake, &s->mu);
            }
            continue;
        }
        pthread_mutex_unlock(&s->mu);
        oxl_batch b = {n, s->b_tok, s->b_pos, s->b_seq, s->b_logits, NULL};
        oxl_error err = {0};
        double t0 = oxl_now();
        /* a step that verifies drafts scores each drafted position as a single-token step would */
        bool drafts = false;
        for (int32_t i = 0; i < s->n_slots; i++) {
            drafts |= s->slots[i].n_draft_step > 0;
        }
        oxl_ctx_set_exact_batch(s->ctx, drafts);
        int rc = apply_lora(s, &err) == 0 ? oxl_decode_batch(s->ctx, &b, &err) : -1;
        double dt = oxl_now() - t0;
        pthread_mutex_lock(&s->mu);
        s->st.decode_steps++;
        s->st.decode_seconds += dt;
        if (rc != 0) {
            fprintf(stderr, "oxillama serve: decode failed: %s\n", err.msg);
            char msg[256];
            snprintf(msg, sizeof msg, "decode failed: %.200s", err.msg);
            for (int32_t i = 0; i < s->n_slots; i++) {
                slot *sl = &s->slots[i];
                if (sl->job) {
                    job_fail_running(s, sl->job, msg);
                }
                sl->n_cache = oxl_seq_n_past(s->ctx, sl->id);
            }
            continue;
        }
        for (int32_t i = 0; i < s->n_slots; i++) {
            slot *sl = &s->slots[i];
            if (sl->n_step == 0) {
                continue;
            }
            /* The cache mirror follows the KV cache: the slot's batch tokens are now in it. */
            for (int32_t t = 0; t < n; t++) {
                if (s->b_seq[t] == sl->id) {
                    sl->cache[sl->n_cache++] = s->b_tok[t];
                }
            }
            if (sl->job && sl->batch_idx >= 0) {
                sample_step(s, sl, dt);
            }
        }
        if (s->ex.dctx || s->ex.ngram) {
            draft_slots(s);
        }
    }
    pthread_mutex_unlock(&s->mu);
    return NULL;
}

/* --- life cycle -------------------------------------------------------------------------------- */

static void sched_free(oxl_sched *s) {
    if (!s) {
        return;
    }
    for (int32_t i = 0; s->slots && i < s->n_slots; i++) {
        slot *sl = &s->slots[i];
        free(sl->cache);
        free(sl->raw);
        free(sl->work);
        free(sl->draft);
        free(sl->dheld);
        oxl_sampler_free(sl->smpl);
    }
    free(s->slots);
    free(s->queue);
    free(s->b_tok);
    free(s->b_pos);
    free(s->b_seq);
    free(s->b_logits);
    oxl_ctx_free(s->ectx);
    free(s->e_tok);
    free(s->e_pos);
    free(s->e_seq);
    free(s->e_keep);
    pthread_mutex_destroy(&s->mu);
    pthread_cond_destroy(&s->wake);
    free(s);
}

oxl_sched *oxl_sched_start(const oxl_model *model, oxl_ctx *ctx, int32_t queue_size, int32_t n_batch,
                           const oxl_ctx_params *embd_params, const oxl_sched_extras *ex, oxl_error *err) {
    oxl_sched *s = calloc(1, sizeof *s);
    if (!s) {
        set_err(err, "out of memory");
        return NULL;
    }
    pthread_mutex_init(&s->mu, NULL);
    pthread_cond_init(&s->wake, NULL);
    s->model = model;
    s->ctx = ctx;
    s->n_vocab = oxl_model_n_vocab(model);
    s->n_ctx_slot = oxl_ctx_n_ctx(ctx);
    s->add_bos = oxl_vocab_add_bos(model);
    s->n_slots = oxl_ctx_n_seq_max(ctx);
    s->n_batch = n_batch;
    s->embd_params = *embd_params;
    s->n_embd = oxl_model_n_embd(model);
    s->q_cap = queue_size;
    if (ex) {
        s->ex = *ex;
    }
    if (s->ex.n_lora > OXL_SRV_MAX_LORA) {
        set_err(err, "%d LoRA adapters; the server takes at most %d", s->ex.n_lora, OXL_SRV_MAX_LORA);
        sched_free(s);
        return NULL;
    }
    for (int32_t i = 0; i < s->ex.n_lora; i++) {
        s->lora_global[i] = s->ex.lora_scale[i];
    }
    s->slots = calloc((size_t)s->n_slots, sizeof *s->slots);
    s->queue = calloc((size_t)queue_size, sizeof *s->queue);
    size_t cap = (size_t)s->n_batch + (size_t)s->n_slots;
    s->b_tok = malloc(sizeof *s->b_tok * cap);
    s->b_pos = malloc(sizeof *s->b_pos * cap);
    s->b_seq = malloc(sizeof *s->b_seq * cap);
    s->b_logits = malloc(sizeof *s->b_logits * cap);
    bool ok = s->slots && s->queue && s->b_tok && s->b_pos && s->b_seq && s->b_logits;
    for (int32_t i = 0; ok && i < s->n_slots; i++) {
        slot *sl = &s->slots[i];
        sl->id = i;
        sl->cache = malloc(sizeof(oxl_token) * (size_t)s->n_ctx_slot);
        sl->work = malloc(sizeof(float) * (size_t)s->n_vocab);
        ok = sl->cache && sl->work;
        if (ok && (s->ex.dctx || s->ex.ngram)) {
            sl->draft = malloc(sizeof(oxl_token) * (size_t)s->n_ctx_slot);
            ok = sl->draft != NULL;
        }
        if (ok && s->ex.dctx) {
            sl->dheld = calloc((size_t)oxl_ctx_n_ctx(s->ex.dctx) + 1, sizeof(oxl_token));
            ok = sl->dheld != NULL;
        }
    }
    s->st.n_slots = s->n_slots;
    s->st.n_ctx_slot = s->n_ctx_slot;
    if (!ok) {
        set_err(err, "out of memory allocating %d slots", s->n_slots);
        sched_free(s);
        return NULL;
    }
    if (pthread_create(&s->thread, NULL, sched_main, s) != 0) {
        set_err(err, "cannot start the scheduler thread");
        sched_free(s);
        return NULL;
    }
    return s;
}

void oxl_sched_set_context_shift(oxl_sched *s, bool on, int32_t n_keep, bool verbose) {
    pthread_mutex_lock(&s->mu);
    s->ctx_shift = on;
    s->n_keep = n_keep;
    s->shift_verbose = verbose;
    pthread_mutex_unlock(&s->mu);
}

void oxl_sched_stop(oxl_sched *s, double deadline) {
    pthread_mutex_lock(&s->mu);
    s->stopping = true;
    s->deadline = deadline;
    pthread_cond_signal(&s->wake);
    pthread_mutex_unlock(&s->mu);
    pthread_join(s->thread, NULL);
}

void oxl_sched_free(oxl_sched *s) { sched_free(s); }

void oxl_sched_stats_get(oxl_sched *s, oxl_sched_stats *st) {
    pthread_mutex_lock(&s->mu);
    *st = s->st;
    st->queue_depth = s->q_len;
    st->slots_busy = 0;
    for (int32_t i = 0; i < s->n_slots; i++) {
        st->slots_busy += s->slots[i].state != SLOT_IDLE;
    }
    pthread_mutex_unlock(&s->mu);
}

int32_t oxl_sched_slots(oxl_sched *s, oxl_slot_info *out, int32_t cap) {
    pthread_mutex_lock(&s->mu);
    int32_t n = s->n_slots < cap ? s->n_slots : cap;
    for (int32_t i = 0; i < n; i++) {
        slot *sl = &s->slots[i];
        out[i] = (oxl_slot_info){sl->id, sl->state != SLOT_IDLE, sl->n_cache, sl->n_prompt, sl->n_gen};
    }
    pthread_mutex_unlock(&s->mu);
    return n;
}

int32_t oxl_sched_n_ctx_slot(const oxl_sched *s) { return s->n_ctx_slot; }

void oxl_sched_lora_get(oxl_sched *s, float *scales) {
    pthread_mutex_lock(&s->mu);
    memcpy(scales, s->lora_global, sizeof(float) * (size_t)s->ex.n_lora);
    pthread_mutex_unlock(&s->mu);
}

void oxl_sched_lora_set(oxl_sched *s, const float *scales) {
    pthread_mutex_lock(&s->mu);
    memcpy(s->lora_global, scales, sizeof(float) * (size_t)s->ex.n_lora);
    pthread_mutex_unlock(&s->mu);
}

int oxl_sched_slot_action(oxl_sched *s, int32_t id, oxl_slot_action action, const char *path, int32_t *n_tokens,
                          size_t *n_bytes, char *msg, size_t msg_cap) {
    *n_tokens = 0;
    *n_bytes = 0;
    if (id < 0 || id >= s->n_slots) {
        snprintf(msg, msg_cap, "Invalid slot ID: %d; the server has %d slots (-np)", id, s->n_slots);
        return -1;
    }
    pthread_mutex_lock(&s->mu);
    slot *sl = &s->slots[id];
    /* an idle slot's sequence is in no batch, and admit() needs the mutex held here: the decode
     * running meanwhile touches only the other sequences */
    while (sl->state != SLOT_IDLE && !s->stopping) {
        pthread_mutex_unlock(&s->mu);
        nanosleep(&(struct timespec){0, 10000000L}, NULL);
        pthread_mutex_lock(&s->mu);
    }
    if (s->stopping) {
        pthread_mutex_unlock(&s->mu);
        snprintf(msg, msg_cap, "the server is shutting down");
        return -2;
    }
    oxl_error err = {0};
    int rc = 0;
    if (action == OXL_SLOT_SAVE) {
        *n_tokens = sl->n_cache;
        *n_bytes = oxl_state_seq_size(s->ctx, sl->id);
        rc = oxl_state_seq_save(s->ctx, sl->id, sl->cache, sl->n_cache, path, &err);
    } else if (action == OXL_SLOT_RESTORE) {
        const int32_t n = oxl_state_seq_load(s->ctx, sl->id, path, sl->cache, s->n_ctx_slot, &err);
        rc = n < 0 ? -1 : 0;
        sl->n_img = 0; /* a file's image rows are matched by no request (their keys are not kept) */
        if (n >= 0) {
            sl->n_cache = n;
            sl->last_used = ++s->use_counter;
            *n_tokens = n;
            *n_bytes = oxl_state_seq_size(s->ctx, sl->id);
        }
    } else {
        *n_tokens = sl->n_cache;
        oxl_seq_truncate(s->ctx, sl->id, 0);
        sl->n_cache = 0;
        sl->n_img = 0;
    }
    pthread_mutex_unlock(&s->mu);
    if (rc != 0) {
        snprintf(msg, msg_cap, "%s", err.msg);
    }
    return rc;
}
