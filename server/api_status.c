/* GET /health, /ready, /metrics (Prometheus text) and /slots. */
#include "models.h"
#include "routes.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

void oxl_api_health(oxl_srv *srv, const oxl_request *rq, oxl_reply *out) {
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "status", atomic_load(&srv->ready) ? "ok" : "loading model");
    oxl_reply_json(out, 200, o);
}

void oxl_api_ready(oxl_srv *srv, const oxl_request *rq, oxl_reply *out) {
    if (!atomic_load(&srv->ready) || atomic_load(&srv->stopping)) {
        oxl_api_error e;
        const bool down = atomic_load(&srv->stopping);
        oxl_api_fail(&e, down ? OXL_E_NOT_READY_SHUTTING : OXL_E_MODEL_LOADING, NULL, "%s",
                     down ? "The server is shutting down" : "The model is loading");
        e.retry_after = 1;
        oxl_reply_error(out, &e);
        return;
    }
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "status", "ready");
    oxl_reply_json(out, 200, o);
}

typedef struct metrics_buf {
    char *s;
    size_t len, cap;
} metrics_buf;

static void mput(metrics_buf *m, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void mput(metrics_buf *m, const char *fmt, ...) {
    for (int attempt = 0; attempt < 2; attempt++) {
        va_list ap;
        va_start(ap, fmt);
        int n = vsnprintf(m->s ? m->s + m->len : NULL, m->s ? m->cap - m->len : 0, fmt, ap);
        va_end(ap);
        if (n < 0) {
            return;
        }
        if (m->s && m->len + (size_t)n < m->cap) {
            m->len += (size_t)n;
            return;
        }
        size_t cap = m->cap ? m->cap : 4096;
        while (cap <= m->len + (size_t)n) {
            cap *= 2;
        }
        char *s = realloc(m->s, cap);
        if (!s) {
            return;
        }
        m->s = s;
        m->cap = cap;
    }
}

static void metric(metrics_buf *m, const char *name, const char *type, const char *help, double v) {
    mput(m, "# HELP oxillama_%s %s\n# TYPE oxillama_%s %s\noxillama_%s %.17g\n", name, help, name, type, name, v);
}

/* Prometheus text exposition format 0.0.4. With several models, srv is the selected model's state:
 * the counters of statuses, rate limits, keys and requests in flight are the server's (g), the
 * others that model's. */
void oxl_api_metrics(oxl_srv *srv, const oxl_request *rq, oxl_reply *out) {
    const oxl_srv *g = srv->entry ? srv->entry->server : srv;
    metrics_buf m = {0};
    mput(&m, "# HELP oxillama_requests_total HTTP requests answered, by status code.\n"
             "# TYPE oxillama_requests_total counter\n");
    for (int s = 100; s < 600; s++) {
        unsigned long long n = atomic_load(&g->by_status[s]);
        if (n) {
            mput(&m, "oxillama_requests_total{code=\"%d\"} %llu\n", s, n);
        }
    }
    metric(&m, "requests_rejected_queue_full_total", "counter", "Requests refused with 503 because the queue was full.",
           (double)atomic_load(&srv->n_rejected_queue));
    metric(&m, "requests_rate_limited_total", "counter", "Requests refused with 429.",
           (double)atomic_load(&g->n_rate_limited));
    metric(&m, "requests_unauthorized_total", "counter", "Requests refused with 401.",
           (double)atomic_load(&g->n_unauthorized));
    metric(&m, "requests_cancelled_total", "counter", "Requests whose client disconnected before the end.",
           (double)atomic_load(&srv->n_cancelled));
    if (atomic_load(&srv->ready)) {
        oxl_sched_stats st;
        oxl_sched_stats_get(srv->sched, &st);
        metric(&m, "prompt_tokens_total", "counter", "Prompt tokens of admitted requests.", (double)st.prompt_tokens);
        metric(&m, "prompt_tokens_cached_total", "counter",
               "Prompt tokens found in a slot's KV cache (not recomputed).", (double)st.prompt_tokens_cached);
        metric(&m, "generated_tokens_total", "counter", "Tokens generated.", (double)st.gen_tokens);
        metric(&m, "decode_steps_total", "counter", "Batched decode steps.", (double)st.decode_steps);
        metric(&m, "decode_seconds_total", "counter", "Wall time spent decoding batches.", st.decode_seconds);
        metric(&m, "seconds_per_token", "gauge", "Mean wall time of the decode step that produced a generated token.",
               st.gen_tokens ? st.gen_token_seconds / (double)st.gen_tokens : 0);
        metric(&m, "queue_depth", "gauge", "Requests waiting for a slot.", st.queue_depth);
        metric(&m, "slots_busy", "gauge", "Slots working on a request.", st.slots_busy);
        metric(&m, "slots_total", "gauge", "Slots (-np).", st.n_slots);
        /* speculative decoding under llama-server's names (server_task_result_metrics::to_metrics) */
        static const char *const spec[][2] = {
            {"spec_decode_num_draft_tokens_total", "Speculative: Total draft tokens generated"},
            {"spec_decode_num_accepted_tokens_total", "Speculative: Total draft tokens accepted by the target model"},
            {"spec_decode_num_drafts_total", "Speculative: Total speculative decoding verification steps"}};
        const uint64_t spec_v[] = {st.draft_tokens, st.draft_accepted, st.draft_steps};
        for (int i = 0; i < 3; i++) {
            mput(&m, "# HELP llamacpp:%s %s\n# TYPE llamacpp:%s counter\nllamacpp:%s %llu\n", spec[i][0], spec[i][1],
                 spec[i][0], spec[i][0], (unsigned long long)spec_v[i]);
        }
    }
    metric(&m, "requests_in_flight", "gauge", "Requests being received or answered.", atomic_load(&g->in_flight));
    out->status = 200;
    out->body = m.s;
    out->len = m.len;
    out->ctype = "text/plain; version=0.0.4; charset=utf-8";
}

void oxl_api_slots(oxl_srv *srv, const oxl_request *rq, oxl_reply *out) {
    oxl_slot_info info[256];
    int32_t n = oxl_sched_slots(srv->sched, info, 256);
    cJSON *a = cJSON_CreateArray();
    for (int32_t i = 0; i < n; i++) {
        cJSON *o = cJSON_CreateObject();
        cJSON_AddNumberToObject(o, "id", info[i].id);
        cJSON_AddBoolToObject(o, "is_processing", info[i].busy);
        cJSON_AddNumberToObject(o, "n_ctx", oxl_sched_n_ctx_slot(srv->sched));
        cJSON_AddNumberToObject(o, "n_past", info[i].n_cache);
        cJSON_AddNumberToObject(o, "n_prompt_tokens", info[i].n_prompt);
        cJSON_AddNumberToObject(o, "n_decoded", info[i].n_gen);
        cJSON_AddItemToArray(a, o);
    }
    oxl_reply_json(out, 200, a);
}
