/* What the route handlers (openai.c) share with the HTTP layer (http.c): the server state, a
 * request, a reply (a JSON body or a stream of server-sent events) and OpenAI-shaped errors. */
#ifndef OXL_SRV_HTTP_H
#define OXL_SRV_HTTP_H

#include "oxillama.h"
#include "scheduler.h"
#include "server.h"

#include <cjson/cJSON.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <time.h>

typedef struct oxl_srv {
    const oxl_server_config *cfg;
    oxl_model *model;
    oxl_ctx *ctx;
    oxl_sched *sched;
    atomic_bool ready;    /* model loaded, scheduler running */
    atomic_bool stopping; /* SIGINT/SIGTERM seen */
    char model_id[256];   /* --alias, or the model file's name */
    char model_file[256];
    time_t created;
    /* counters for /metrics */
    atomic_ullong n_requests, n_rejected_queue, n_rate_limited, n_cancelled, n_unauthorized;
    atomic_ullong by_status[600];
    atomic_int in_flight; /* requests between their first byte and their completion */
} oxl_srv;

/* An OpenAI error object: {"error": {"message", "type", "param", "code"}}. */
typedef struct oxl_api_error {
    int status;
    const char *type; /* invalid_request_error, authentication_error, ... */
    const char *code; /* NULL renders as null */
    char param[96];   /* empty renders as null */
    char msg[640];
    int retry_after;  /* seconds; > 0 adds Retry-After */
} oxl_api_error;

/* Sets e and returns -1. param may be NULL. */
int oxl_api_err(oxl_api_error *e, int status, const char *type, const char *code, const char *param, const char *fmt, ...)
    __attribute__((format(printf, 6, 7)));

typedef struct oxl_request {
    const char *method;
    const char *path;
    const cJSON *json; /* parsed body of POST routes (an object), else NULL */
    int fd;            /* the client's socket: polled to notice a disconnect */
} oxl_request;

/* A stream of server-sent events fed from jobs. produce() runs with the scheduler lock held,
 * appends frames to out and sets done after the last one; it returns the bytes it added. */
typedef struct oxl_stream oxl_stream;
struct oxl_stream {
    oxl_srv *srv;
    int fd;
    oxl_job **jobs;
    int n_jobs;
    char *out;
    size_t len, off, cap;
    bool done;
    bool counted; /* counted in requests_cancelled_total */
    size_t (*produce)(oxl_stream *st);
    void *state; /* the route's, released with free_state */
    void (*free_state)(void *state);
};

typedef struct oxl_reply {
    int status;
    char *body; /* malloc'd, owned */
    size_t len;
    const char *ctype;
    int retry_after;
    oxl_stream *stream; /* instead of body */
} oxl_reply;

/* Replies with obj printed (takes ownership of obj). */
void oxl_reply_json(oxl_reply *r, int status, cJSON *obj);
void oxl_reply_error(oxl_reply *r, const oxl_api_error *e);
/* Appends bytes to a stream's output. */
void oxl_stream_put(oxl_stream *st, const char *s, size_t n);
/* True when the peer closed the connection. */
bool oxl_client_gone(int fd);

typedef void (*oxl_handler)(oxl_srv *srv, const oxl_request *rq, oxl_reply *out);

/* The routes of openai.c. */
void oxl_api_chat(oxl_srv *srv, const oxl_request *rq, oxl_reply *out);
void oxl_api_completions(oxl_srv *srv, const oxl_request *rq, oxl_reply *out);
void oxl_api_responses(oxl_srv *srv, const oxl_request *rq, oxl_reply *out);
void oxl_api_embeddings(oxl_srv *srv, const oxl_request *rq, oxl_reply *out);
void oxl_api_models(oxl_srv *srv, const oxl_request *rq, oxl_reply *out);
void oxl_api_tokenize(oxl_srv *srv, const oxl_request *rq, oxl_reply *out);
void oxl_api_detokenize(oxl_srv *srv, const oxl_request *rq, oxl_reply *out);

#endif
