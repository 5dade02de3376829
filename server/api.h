/* What the route handlers share with the transport (http.c): the server state, a request, a reply
 * (a JSON body or a stream of server-sent events) and the helpers that fill a reply (reply.c). */
#ifndef OXL_SRV_API_H
#define OXL_SRV_API_H

#include "api_error.h"
#include "oxillama.h"
#include "scheduler.h"
#include "server.h"

#include <cjson/cJSON.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <time.h>

typedef struct oxl_models oxl_models;
typedef struct oxl_model_entry oxl_model_entry;

/* The server's state. With several models (server/models.h) the server's own oxl_srv holds the
 * table in models and no engine; each model has an oxl_srv of its own (entry set) with its engine,
 * id and per-model counters, and a request is handled on the one it selects. */
typedef struct oxl_srv {
    const oxl_server_config *cfg;
    oxl_models *models;     /* several models: their table (the server's own oxl_srv only), else NULL */
    oxl_model_entry *entry; /* a model's oxl_srv in that table: its entry, else NULL */
    char load_error[512];   /* why the last load failed */
    oxl_model *model;
    oxl_ctx *ctx;
    oxl_sched *sched;
    oxl_lora *lora[OXL_SRV_MAX_LORA]; /* --lora, --lora-scaled adapters, ids 0..n_lora-1 */
    int32_t n_lora;
    oxl_model *dmodel; /* -md: the draft model and its context (one sequence per slot), or NULL */
    oxl_ctx *dctx;
    /* --mmproj: the vision projector, and a one-sequence context of the model whose threads encode
     * images (request threads take turns under mm_mu); NULL without --mmproj */
    oxl_mmproj *mmproj;
    oxl_ctx *mm_ctx;
    pthread_mutex_t mm_mu;
    atomic_bool ready;    /* model loaded, scheduler running */
    atomic_bool stopping; /* SIGINT/SIGTERM seen */
    char model_id[256];   /* --alias, or the model file's name */
    char model_file[256];
    time_t created;
    bool thinking_template; /* the chat template reacts to enable_thinking (oxl_chat_supports_thinking) */
    /* counters for /metrics */
    atomic_ullong n_requests, n_rejected_queue, n_rate_limited, n_cancelled, n_unauthorized;
    atomic_ullong by_status[600];
    atomic_int in_flight; /* requests between their first byte and their completion */
} oxl_srv;

/* The request log (http.c): one line on stderr per request once it is answered, with its method,
 * route, status, token counts and duration. Reference-counted: the connection holds it, and a
 * stream until its last byte; the line is printed when both are done. */
typedef struct oxl_req_log oxl_req_log;
/* Adds the prompt tokens and generated tokens of jobs (finished or not) to the line; lg may be NULL. */
void oxl_req_log_jobs(oxl_req_log *lg, oxl_job *const *jobs, int n);
void oxl_req_log_ref(oxl_req_log *lg);
/* Drops a reference; the last prints the line and frees it. */
void oxl_req_log_unref(oxl_req_log *lg);

typedef struct oxl_request {
    oxl_req_log *log; /* this request's log line (NULL: none) */
    const char *method;
    const char *path;
    const cJSON *json; /* parsed body of POST routes (an object; an array for array_body routes), else NULL */
    int fd;            /* the client's socket: polled to notice a disconnect */
    const char *body;  /* the raw body of POST routes (body_len bytes), else NULL */
    size_t body_len;
    void *conn; /* the transport's connection (http.c), for oxl_request_arg */
} oxl_request;

/* http.c: the value of query argument name ("?name=value"), or NULL when absent. */
const char *oxl_request_arg(const oxl_request *rq, const char *name);
/* http.c: the value of request header name (case-insensitive), or NULL when absent. */
const char *oxl_request_header(const oxl_request *rq, const char *name);

/* A stream of server-sent events fed from jobs. produce() runs with the scheduler lock held,
 * appends frames to out (sse.h) and sets done after the last one; it returns the bytes it added. */
typedef struct oxl_stream oxl_stream;
struct oxl_stream {
    oxl_srv *srv;
    int fd;
    oxl_job **jobs;
    int n_jobs;
    char *out;
    size_t len, off, cap;
    bool done;
    bool counted;     /* counted in requests_cancelled_total */
    oxl_req_log *log; /* the request's log line: the stream holds a reference until it ends */
    size_t (*produce)(oxl_stream *st);
    void *state; /* the route's, released with free_state */
    void (*free_state)(void *state);
    bool messages; /* events as lines of {"event", "data"} for the WebSocket route (ws.c), else SSE frames */
    void *conn;    /* the SSE reply's libmicrohttpd connection (http.c), for its inactivity timer */
};

typedef struct oxl_reply {
    int status;
    char *body; /* malloc'd, owned */
    size_t len;
    const char *ctype;
    int retry_after;
    oxl_stream *stream; /* instead of body */
    /* further headers of a body reply: name, value, name, value, ... (static strings; a NULL name
     * ends the list early) */
    const char *headers[12];
    void *response; /* instead of body: a libmicrohttpd response the handler made (ws.c's upgrade) */
} oxl_reply;

typedef void (*oxl_handler)(oxl_srv *srv, const oxl_request *rq, oxl_reply *out);

/* reply.c: replies with obj printed (takes ownership of obj); replies with an error object (OpenAI's
 * shape, or Anthropic's for the Messages API routes). */
void oxl_reply_json(oxl_reply *r, int status, cJSON *obj);
void oxl_reply_error(oxl_reply *r, const oxl_api_error *e);
void oxl_reply_anthropic_error(oxl_reply *r, const oxl_api_error *e);
/* A random id: prefix followed by 24 hex digits (chatcmpl-..., msg_..., call_...). */
void oxl_random_id(const char *prefix, char *out, size_t cap);

#endif
