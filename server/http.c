/* The transport on libmicrohttpd: one thread per connection (a streaming reply blocks in its
 * content reader until the scheduler publishes text), dispatch through the route table
 * (routes.c), API keys, rate limits, CORS, request limits, and the server's life cycle. */
#include "api.h"
#include "models.h"
#include "routes.h"
#include "sse.h"

#include <arpa/inet.h>
#include <errno.h>
#include <math.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define CONN_MEMORY_LIMIT (64 * 1024) /* bytes per connection for headers and buffers */
#define STREAM_WAIT_MS 100

/* --- server-sent events ------------------------------------------------------------------------ */

/* libmicrohttpd's connection timeout counts the time stream_read spends waiting for the next tokens
 * as silence, so a stream queued behind other requests for longer than --idle-timeout was cut
 * after its first event. Setting the timeout again after setting it to 0 restarts its timer
 * (microhttpd.h, MHD_CONNECTION_OPTION_TIMEOUT), so the wait for the server is not counted; a
 * client that stops reading still is (no data leaves while it does not). */
static void stream_restart_timer(const oxl_stream *st) {
    if (st->conn) {
        MHD_set_connection_option(st->conn, MHD_CONNECTION_OPTION_TIMEOUT, 0u);
        MHD_set_connection_option(st->conn, MHD_CONNECTION_OPTION_TIMEOUT, (unsigned)st->srv->cfg->idle_timeout);
    }
}

static ssize_t stream_read(void *cls, uint64_t pos, char *buf, size_t max) {
    oxl_stream *st = cls;
    bool waited = false;
    for (;;) {
        if (st->off < st->len) {
            if (waited) {
                stream_restart_timer(st);
            }
            size_t n = st->len - st->off < max ? st->len - st->off : max;
            memcpy(buf, st->out + st->off, n);
            st->off += n;
            if (st->off == st->len) {
                st->off = st->len = 0;
            }
            return (ssize_t)n;
        }
        if (st->done) {
            return MHD_CONTENT_READER_END_OF_STREAM;
        }
        if (oxl_client_gone(st->fd)) {
            for (int i = 0; i < st->n_jobs; i++) {
                oxl_job_cancel(st->srv->sched, st->jobs[i]);
            }
            atomic_fetch_add(&st->srv->n_cancelled, 1);
            st->counted = true;
            return MHD_CONTENT_READER_END_WITH_ERROR;
        }
        oxl_stream_fill(st, STREAM_WAIT_MS);
        waited = true;
    }
}

/* A stream freed before its end lost its client: when a failed write ended it, stream_read has not
 * seen the client leave, and oxl_stream_free counts the cancellation. */
static void stream_free(void *cls) { oxl_stream_free(cls); }

/* --- the request log ---------------------------------------------------------------------------- */

struct oxl_req_log {
    atomic_int refs;
    bool json; /* --log-format json */
    char method[16];
    char *route;
    int status; /* 0 until a reply is queued */
    atomic_llong n_prompt, n_gen;
    double t_start; /* monotonic seconds at the request's first byte */
};

/* A line for a request (NULL when the log is off or memory is short). */
static oxl_req_log *req_log_new(const oxl_srv *srv, const char *method, const char *url) {
    if (srv->cfg->log_level < 1) {
        return NULL;
    }
    oxl_req_log *lg = calloc(1, sizeof *lg);
    if (!lg || !(lg->route = strdup(url ? url : ""))) {
        free(lg);
        return NULL;
    }
    atomic_init(&lg->refs, 1);
    lg->json = srv->cfg->log_json;
    snprintf(lg->method, sizeof lg->method, "%s", method ? method : "");
    lg->t_start = oxl_now();
    return lg;
}

void oxl_req_log_jobs(oxl_req_log *lg, oxl_job *const *jobs, int n) {
    for (int i = 0; lg && i < n; i++) {
        if (!jobs[i]) {
            continue;
        }
        atomic_fetch_add(&lg->n_prompt, jobs[i]->n_prompt);
        for (int c = 0; c < jobs[i]->n_choices && jobs[i]->n_inputs == 0; c++) {
            atomic_fetch_add(&lg->n_gen, jobs[i]->choice[c].n_gen);
        }
    }
}

void oxl_req_log_ref(oxl_req_log *lg) {
    if (lg) {
        atomic_fetch_add(&lg->refs, 1);
    }
}

void oxl_req_log_unref(oxl_req_log *lg) {
    if (!lg || atomic_fetch_sub(&lg->refs, 1) != 1) {
        return;
    }
    const double ms = (oxl_now() - lg->t_start) * 1e3;
    char *line = NULL;
    if (lg->json) {
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "method", lg->method);
        cJSON_AddStringToObject(o, "route", lg->route);
        cJSON_AddNumberToObject(o, "status", lg->status);
        cJSON_AddNumberToObject(o, "prompt_tokens", (double)atomic_load(&lg->n_prompt));
        cJSON_AddNumberToObject(o, "generated_tokens", (double)atomic_load(&lg->n_gen));
        cJSON_AddNumberToObject(o, "duration_ms", round(ms * 1e3) / 1e3);
        char *text = o ? cJSON_PrintUnformatted(o) : NULL;
        cJSON_Delete(o);
        if (text && asprintf(&line, "%s\n", text) < 0) {
            line = NULL;
        }
        free(text);
    } else if (asprintf(&line, "request: %s %s %d prompt_tokens=%lld generated_tokens=%lld duration_ms=%.3f\n",
                        lg->method, lg->route, lg->status, (long long)atomic_load(&lg->n_prompt),
                        (long long)atomic_load(&lg->n_gen), ms) < 0) {
        line = NULL;
    }
    if (line) {
        /* one write: lines of concurrent requests do not interleave */
        ssize_t w = write(STDERR_FILENO, line, strlen(line));
        (void)w;
        free(line);
    }
    free(lg->route);
    free(lg);
}

/* --- API keys and rate limits ------------------------------------------------------------------ */

/* The index of the matching key or -1, in time independent of the key's content: every key is
 * compared over OXL_SRV_KEY_MAX bytes with no early exit. */
static int match_key(const oxl_server_config *cfg, const char *given) {
    size_t gl = strlen(given);
    int found = -1;
    for (int k = 0; k < cfg->n_keys; k++) {
        const char *key = cfg->keys[k];
        size_t kl = strlen(key);
        unsigned diff = (unsigned)(gl != kl) | (unsigned)(gl > OXL_SRV_KEY_MAX);
        for (size_t i = 0; i < OXL_SRV_KEY_MAX; i++) {
            unsigned char a = i < kl ? (unsigned char)key[i] : 0;
            unsigned char b = i < gl ? (unsigned char)given[i] : 0;
            diff |= (unsigned)(a ^ b);
        }
        int hit = -(int)(diff == 0); /* all ones on a match */
        found = (found & ~hit) | (k & hit);
    }
    return found;
}

typedef struct bucket {
    double tokens;
    double t; /* monotonic seconds of the last refill */
    bool init;
} bucket;

static pthread_mutex_t rl_mu = PTHREAD_MUTEX_INITIALIZER;
static bucket buckets[OXL_SRV_MAX_KEYS + 1]; /* one per key, the last for requests without keys */

/* Takes a token from the key's bucket: 0, or the seconds until one is available. */
static int rate_take(const oxl_server_config *cfg, int key) {
    if (cfg->rate_limit <= 0) {
        return 0;
    }
    double rate = cfg->rate_limit / 60.0;
    double burst = cfg->rate_burst > 0 ? cfg->rate_burst : fmax(1.0, floor(cfg->rate_limit));
    pthread_mutex_lock(&rl_mu);
    bucket *b = &buckets[key < 0 ? OXL_SRV_MAX_KEYS : key];
    double now = oxl_now();
    if (!b->init) {
        b->init = true;
        b->tokens = burst;
    } else {
        b->tokens = fmin(burst, b->tokens + (now - b->t) * rate);
    }
    b->t = now;
    int wait = 0;
    if (b->tokens >= 1) {
        b->tokens -= 1;
    } else {
        wait = (int)fmax(1.0, ceil((1 - b->tokens) / rate));
    }
    pthread_mutex_unlock(&rl_mu);
    return wait;
}

/* --- requests ---------------------------------------------------------------------------------- */

/* --- request deadline ----------------------------------------------------------------------------
 * libmicrohttpd's connection timeout (--idle-timeout) counts silence only, so a client sending its
 * request line, headers or body one byte at a time would hold a connection and its thread for
 * ever. Every connection is watched from its start and again from the end of each reply: a request
 * not wholly received --idle-timeout seconds later gets its socket shut down, and the connection's
 * thread, seeing the end of the stream, closes it. libmicrohttpd sends the close notification,
 * which takes watch_mu, before it closes the socket, so a shutdown never reaches a reused
 * descriptor. */
typedef struct conn_watch {
    int fd;
    double since;   /* monotonic seconds: the connection's start or the end of its last reply */
    bool receiving; /* a request is on its way (not yet handed to its route) */
    struct conn_watch *prev, *next;
} conn_watch;

static pthread_mutex_t watch_mu = PTHREAD_MUTEX_INITIALIZER;
static conn_watch *watch_head;
static atomic_bool watch_stop;

static void on_connection(void *cls, struct MHD_Connection *c, void **socket_context,
                          enum MHD_ConnectionNotificationCode code) {
    (void)cls;
    pthread_mutex_lock(&watch_mu);
    conn_watch *w = *socket_context;
    if (code == MHD_CONNECTION_NOTIFY_STARTED) {
        const union MHD_ConnectionInfo *ci = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
        w = ci ? calloc(1, sizeof *w) : NULL;
        if (w) {
            w->fd = ci->connect_fd;
            w->since = oxl_now();
            w->receiving = true;
            w->next = watch_head;
            if (watch_head) {
                watch_head->prev = w;
            }
            watch_head = w;
        }
        *socket_context = w;
    } else if (w) {
        if (w->prev) {
            w->prev->next = w->next;
        } else {
            watch_head = w->next;
        }
        if (w->next) {
            w->next->prev = w->prev;
        }
        free(w);
        *socket_context = NULL;
    }
    pthread_mutex_unlock(&watch_mu);
}

/* Marks the connection's request as received (receiving false) or restarts its clock (true). */
static void watch_mark(struct MHD_Connection *c, bool receiving) {
    const union MHD_ConnectionInfo *ci = MHD_get_connection_info(c, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
    pthread_mutex_lock(&watch_mu);
    conn_watch *w = ci ? ci->socket_context : NULL;
    if (w) {
        w->receiving = receiving;
        w->since = oxl_now();
    }
    pthread_mutex_unlock(&watch_mu);
}

/* The watchdog thread: every 250 ms, shuts down connections whose request is overdue. */
static void *watch_main(void *arg) {
    const oxl_srv *srv = arg;
    double limit = srv->cfg->idle_timeout;
    while (!atomic_load(&watch_stop)) {
        usleep(250000);
        double now = oxl_now();
        pthread_mutex_lock(&watch_mu);
        for (conn_watch *w = watch_head; w; w = w->next) {
            if (w->receiving && now - w->since > limit) {
                shutdown(w->fd, SHUT_RDWR);
                w->receiving = false;
            }
        }
        pthread_mutex_unlock(&watch_mu);
    }
    return NULL;
}

typedef struct conn_req {
    oxl_req_log *log;
    const oxl_route *rt;
    char *body;
    size_t len, cap;
    bool too_big;
} conn_req;

static void add_cors(oxl_srv *srv, struct MHD_Connection *c, struct MHD_Response *resp) {
    const char *allow = srv->cfg->cors_origin;
    if (!allow) {
        return;
    }
    const char *origin = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Origin");
    if (!strcmp(allow, "*")) {
        MHD_add_response_header(resp, "Access-Control-Allow-Origin", "*");
    } else if (origin && !strcmp(origin, allow)) {
        MHD_add_response_header(resp, "Access-Control-Allow-Origin", allow);
        MHD_add_response_header(resp, "Vary", "Origin");
    }
}

static enum MHD_Result send_reply(oxl_srv *srv, struct MHD_Connection *c, oxl_reply *rp, oxl_req_log *lg) {
    struct MHD_Response *resp;
    if (lg) {
        lg->status = rp->status;
    }
    if (rp->response) {
        resp = rp->response;
    } else if (rp->stream) {
        rp->stream->conn = c;
        resp = MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 16 * 1024, stream_read, rp->stream, stream_free);
        if (!resp) {
            stream_free(rp->stream);
            return MHD_NO;
        }
        MHD_add_response_header(resp, "Content-Type", "text/event-stream; charset=utf-8");
        MHD_add_response_header(resp, "Cache-Control", "no-cache");
        MHD_add_response_header(resp, "X-Accel-Buffering", "no");
    } else {
        if (!rp->body) {
            rp->body = strdup(
                "{\"error\":{\"message\":\"out of memory\",\"type\":\"server_error\",\"param\":null,\"code\":null}}");
            rp->len = rp->body ? strlen(rp->body) : 0;
            rp->status = 500;
            rp->ctype = "application/json";
        }
        resp = MHD_create_response_from_buffer(rp->len, rp->body, MHD_RESPMEM_MUST_FREE);
        if (!resp) {
            free(rp->body);
            return MHD_NO;
        }
        MHD_add_response_header(resp, "Content-Type", rp->ctype ? rp->ctype : "application/json");
        for (size_t i = 0; i + 1 < sizeof rp->headers / sizeof rp->headers[0] && rp->headers[i]; i += 2) {
            MHD_add_response_header(resp, rp->headers[i], rp->headers[i + 1]);
        }
    }
    if (rp->retry_after > 0) {
        char ra[16];
        snprintf(ra, sizeof ra, "%d", rp->retry_after);
        MHD_add_response_header(resp, "Retry-After", ra);
    }
    add_cors(srv, c, resp);
    if (atomic_load(&srv->stopping)) {
        MHD_add_response_header(resp, "Connection", "close");
    }
    if (rp->status >= 100 && rp->status < 600) {
        atomic_fetch_add(&srv->by_status[rp->status], 1);
    }
    enum MHD_Result r = MHD_queue_response(c, (unsigned)rp->status, resp);
    MHD_destroy_response(resp);
    return r;
}

/* e in the error shape of route rt (OpenAI's when no route matched). */
static enum MHD_Result send_error(oxl_srv *srv, struct MHD_Connection *c, const oxl_route *rt, const oxl_api_error *e,
                                  oxl_req_log *lg) {
    oxl_reply rp = {0};
    if (rt && rt->anthropic) {
        oxl_reply_anthropic_error(&rp, e);
    } else {
        oxl_reply_error(&rp, e);
    }
    return send_reply(srv, c, &rp, lg);
}

/* The first byte that makes s invalid UTF-8, or len when it is valid. */
static size_t utf8_invalid_at(const unsigned char *s, size_t len) {
    for (size_t i = 0; i < len;) {
        unsigned c = s[i];
        int n = c < 0x80 ? 1 : c >= 0xC2 && c <= 0xDF ? 2 : c >= 0xE0 && c <= 0xEF ? 3 : c >= 0xF0 && c <= 0xF4 ? 4 : 0;
        if (n == 0 || i + (size_t)n > len) {
            return i;
        }
        for (int k = 1; k < n; k++) {
            if ((s[i + k] & 0xC0) != 0x80) {
                return i;
            }
        }
        if ((c == 0xE0 && s[i + 1] < 0xA0) || (c == 0xED && s[i + 1] > 0x9F) || (c == 0xF0 && s[i + 1] < 0x90) ||
            (c == 0xF4 && s[i + 1] > 0x8F)) {
            return i;
        }
        i += (size_t)n;
    }
    return len;
}

/* Checks that need only the request line and headers; 0 to go on, -1 with e set. */
static int precheck(oxl_srv *srv, struct MHD_Connection *c, const char *url, const char *method, conn_req *cr,
                    oxl_api_error *e) {
    const oxl_server_config *cfg = srv->cfg;
    int n_headers = MHD_get_connection_values(c, MHD_HEADER_KIND, NULL, NULL);
    if (n_headers > cfg->max_headers) {
        return oxl_api_fail(e, OXL_E_TOO_MANY_HEADERS, NULL,
                            "The request has %d headers; at most %d are accepted (--max-headers)", n_headers,
                            cfg->max_headers);
    }
    const oxl_route *path_hit = NULL;
    for (size_t i = 0; i < oxl_n_routes; i++) {
        if (oxl_route_matches(&oxl_routes[i], url)) {
            path_hit = &oxl_routes[i];
            if (!strcmp(method, oxl_routes[i].method)) {
                cr->rt = &oxl_routes[i];
                break;
            }
        }
    }
    if (!cr->rt) {
        if (path_hit) {
            return oxl_api_fail(e, OXL_E_METHOD_NOT_ALLOWED, NULL, "%.16s is not allowed on %.200s; use %s", method,
                                url, path_hit->method);
        }
        return oxl_api_fail(e, OXL_E_UNKNOWN_URL, NULL, "Unknown request URL: %.16s %.200s", method, url);
    }
    if (cr->rt->auth != AUTH_NONE && cfg->n_keys > 0) {
        const char *h = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Authorization");
        const char *key = NULL;
        if (h && !strncasecmp(h, "Bearer ", 7)) {
            key = h + 7;
        } else {
            key = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "X-Api-Key");
        }
        int idx = key ? match_key(cfg, key) : -1;
        if (idx < 0) {
            atomic_fetch_add(&srv->n_unauthorized, 1);
            return oxl_api_fail(e, OXL_E_INVALID_API_KEY, NULL,
                                key ? "Incorrect API key provided"
                                    : "You didn't provide an API key: send 'Authorization: Bearer YOUR_KEY'");
        }
        if (cr->rt->auth == AUTH_KEY) {
            int wait = rate_take(cfg, idx);
            if (wait > 0) {
                atomic_fetch_add(&srv->n_rate_limited, 1);
                oxl_api_fail(e, OXL_E_RATE_LIMITED, NULL,
                             "Rate limit reached for this API key: %g requests per minute; retry in %d s",
                             cfg->rate_limit, wait);
                e->retry_after = wait;
                return -1;
            }
        }
    } else if (cr->rt->auth == AUTH_KEY) {
        int wait = rate_take(cfg, -1);
        if (wait > 0) {
            atomic_fetch_add(&srv->n_rate_limited, 1);
            oxl_api_fail(e, OXL_E_RATE_LIMITED, NULL, "Rate limit reached: %g requests per minute; retry in %d s",
                         cfg->rate_limit, wait);
            e->retry_after = wait;
            return -1;
        }
    }
    if (atomic_load(&srv->stopping) && cr->rt->auth != AUTH_NONE) {
        oxl_api_fail(e, OXL_E_SHUTTING_DOWN, NULL, "The server is shutting down");
        e->retry_after = 1;
        return -1;
    }
    if (cr->rt->needs_model && !atomic_load(&srv->ready)) {
        oxl_api_fail(e, OXL_E_MODEL_LOADING, NULL, "The model is loading; retry when /ready answers 200");
        e->retry_after = 1;
        return -1;
    }
    const char *cl = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Content-Length");
    if (cl && strtoull(cl, NULL, 10) > cfg->max_body) {
        return oxl_api_fail(e, OXL_E_REQUEST_TOO_LARGE, NULL,
                            "The request body is %.20s bytes; at most %zu are accepted (--max-body)", cl,
                            cfg->max_body);
    }
    return 0;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url, const char *method,
                                  const char *version, const char *upload, size_t *upload_size, void **con_cls) {
    oxl_srv *srv = cls;
    conn_req *cr = *con_cls;
    if (!cr) {
        cr = calloc(1, sizeof *cr);
        if (!cr) {
            return MHD_NO;
        }
        *con_cls = cr;
        cr->log = req_log_new(srv, method, url);
        atomic_fetch_add(&srv->in_flight, 1);
        atomic_fetch_add(&srv->n_requests, 1);
        if (!strcmp(method, "OPTIONS") && srv->cfg->cors_origin) {
            /* CORS preflight */
            struct MHD_Response *resp = MHD_create_response_from_buffer(0, NULL, MHD_RESPMEM_PERSISTENT);
            add_cors(srv, c, resp);
            MHD_add_response_header(resp, "Access-Control-Allow-Methods", "GET, POST, OPTIONS");
            MHD_add_response_header(resp, "Access-Control-Allow-Headers",
                                    "Authorization, Content-Type, X-Api-Key, Anthropic-Version, Anthropic-Beta");
            MHD_add_response_header(resp, "Access-Control-Max-Age", "600");
            atomic_fetch_add(&srv->by_status[204], 1);
            if (cr->log) {
                cr->log->status = 204;
            }
            enum MHD_Result r = MHD_queue_response(c, 204, resp);
            MHD_destroy_response(resp);
            return r;
        }
        oxl_api_error e = {0};
        if (precheck(srv, c, url, method, cr, &e) != 0) {
            const oxl_route *rt = cr->rt;
            cr->rt = NULL;
            return send_error(srv, c, rt, &e, cr->log);
        }
        return MHD_YES;
    }
    if (!cr->rt) {
        *upload_size = 0; /* answered already; the body is dropped */
        return MHD_YES;
    }
    if (*upload_size > 0) {
        if (!cr->too_big && cr->len + *upload_size > srv->cfg->max_body) {
            cr->too_big = true;
        }
        if (!cr->too_big) {
            if (cr->len + *upload_size + 1 > cr->cap) {
                size_t cap = cr->cap ? cr->cap : 4096;
                while (cap < cr->len + *upload_size + 1) {
                    cap *= 2;
                }
                char *b = realloc(cr->body, cap);
                if (!b) {
                    return MHD_NO;
                }
                cr->body = b;
                cr->cap = cap;
            }
            memcpy(cr->body + cr->len, upload, *upload_size);
            cr->len += *upload_size;
        }
        *upload_size = 0;
        return MHD_YES;
    }
    /* the whole request is here */
    watch_mark(c, false);
    oxl_api_error e = {0};
    cJSON *json = NULL;
    if (cr->too_big) {
        oxl_api_fail(&e, OXL_E_REQUEST_TOO_LARGE, NULL, "The request body is larger than %zu bytes (--max-body)",
                     srv->cfg->max_body);
        return send_error(srv, c, cr->rt, &e, cr->log);
    }
    if (!strcmp(cr->rt->method, "POST")) {
        size_t bad = utf8_invalid_at((const unsigned char *)cr->body, cr->len);
        if (cr->len == 0) {
            oxl_api_fail(&e, OXL_E_INVALID_JSON, NULL, "The request body is empty; expected a JSON object");
            return send_error(srv, c, cr->rt, &e, cr->log);
        }
        if (bad < cr->len) {
            oxl_api_fail(&e, OXL_E_INVALID_UTF8, NULL, "The request body is not valid UTF-8: byte 0x%02x at offset %zu",
                         (unsigned char)cr->body[bad], bad);
            return send_error(srv, c, cr->rt, &e, cr->log);
        }
        cr->body[cr->len] = 0;
        const char *end = NULL;
        json = cJSON_ParseWithLengthOpts(cr->body, cr->len, &end, false);
        if (!json) {
            size_t off = end && end >= cr->body && end <= cr->body + cr->len ? (size_t)(end - cr->body) : 0;
            oxl_api_fail(&e, OXL_E_INVALID_JSON, NULL,
                         "We could not parse the JSON body of your request: syntax error at byte offset %zu", off);
            return send_error(srv, c, cr->rt, &e, cr->log);
        }
        if (cr->rt->array_body ? !cJSON_IsArray(json) : !cJSON_IsObject(json)) {
            cJSON_Delete(json);
            oxl_api_fail(&e, OXL_E_INVALID_JSON, NULL, "The request body must be a JSON %s",
                         cr->rt->array_body ? "array" : "object");
            return send_error(srv, c, cr->rt, &e, cr->log);
        }
    }
    const union MHD_ConnectionInfo *ci = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
    oxl_request rq = {.log = cr->log,
                      .method = method,
                      .path = url,
                      .json = json,
                      .fd = ci ? ci->connect_fd : -1,
                      .body = json ? cr->body : NULL,
                      .body_len = json ? cr->len : 0,
                      .conn = c};
    /* several models: the request's "model" (the body's, else ?model=) selects the state it runs on */
    oxl_srv *on = srv;
    if (srv->models) {
        const cJSON *mj = cJSON_IsObject(json) ? cJSON_GetObjectItemCaseSensitive(json, "model") : NULL;
        const char *name = cJSON_IsString(mj) ? mj->valuestring : oxl_request_arg(&rq, "model");
        if (oxl_models_acquire(srv, cr->rt, name, &on, &e) != 0) {
            cJSON_Delete(json);
            return send_error(srv, c, cr->rt, &e, cr->log);
        }
        if (on != srv && cJSON_IsString(mj)) {
            cJSON_DeleteItemFromObjectCaseSensitive(json, "model"); /* resolved: routes without the field accept it */
        }
    }
    oxl_reply rp = {0};
    cr->rt->fn(on, &rq, &rp);
    cJSON_Delete(json);
    if (!rp.stream) {
        oxl_models_release(on); /* a stream holds its model until stream_free */
    }
    return send_reply(srv, c, &rp, cr->log);
}

static void on_completed(void *cls, struct MHD_Connection *c, void **con_cls, enum MHD_RequestTerminationCode toe) {
    oxl_srv *srv = cls;
    conn_req *cr = *con_cls;
    watch_mark(c, true); /* the next request's clock starts now */
    if (cr) {
        oxl_req_log_unref(cr->log);
        free(cr->body);
        free(cr);
        *con_cls = NULL;
        atomic_fetch_sub(&srv->in_flight, 1);
    }
}

/* --- life cycle -------------------------------------------------------------------------------- */

static struct MHD_Daemon *start_daemon(oxl_srv *srv, unsigned *port) {
    const oxl_server_config *cfg = srv->cfg;
    struct sockaddr_storage ss;
    memset(&ss, 0, sizeof ss);
    unsigned flags = MHD_USE_THREAD_PER_CONNECTION | MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_ITC | MHD_USE_POLL |
                     MHD_ALLOW_UPGRADE; /* GET /v1/ws (ws.c) */
    if (strchr(cfg->host, ':')) {
        struct sockaddr_in6 *a = (struct sockaddr_in6 *)&ss;
        a->sin6_family = AF_INET6;
        a->sin6_port = htons((uint16_t)cfg->port);
        if (inet_pton(AF_INET6, cfg->host, &a->sin6_addr) != 1) {
            fprintf(stderr, "oxillama serve: --host '%s' is not an IPv6 address\n", cfg->host);
            return NULL;
        }
        flags |= MHD_USE_IPv6;
    } else {
        struct sockaddr_in *a = (struct sockaddr_in *)&ss;
        a->sin_family = AF_INET;
        a->sin_port = htons((uint16_t)cfg->port);
        if (inet_pton(AF_INET, cfg->host, &a->sin_addr) != 1) {
            fprintf(stderr, "oxillama serve: --host '%s' is not an IPv4 address\n", cfg->host);
            return NULL;
        }
    }
    struct MHD_Daemon *d =
        MHD_start_daemon(flags, (uint16_t)cfg->port, NULL, NULL, on_request, srv, MHD_OPTION_SOCK_ADDR,
                         (struct sockaddr *)&ss, MHD_OPTION_CONNECTION_LIMIT, (unsigned)cfg->max_connections,
                         MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)cfg->idle_timeout, MHD_OPTION_CONNECTION_MEMORY_LIMIT,
                         (size_t)CONN_MEMORY_LIMIT, MHD_OPTION_NOTIFY_COMPLETED, on_completed, srv,
                         MHD_OPTION_NOTIFY_CONNECTION, on_connection, srv, MHD_OPTION_END);
    if (!d) {
        fprintf(stderr, "oxillama serve: cannot listen on %s:%d: %s\n", cfg->host, cfg->port, strerror(errno));
        return NULL;
    }
    const union MHD_DaemonInfo *di = MHD_get_daemon_info(d, MHD_DAEMON_INFO_BIND_PORT);
    *port = di ? di->port : (unsigned)cfg->port;
    return d;
}

/* Prints a load failure and keeps it in srv->load_error (without the newline). */
static void load_fail(oxl_srv *srv, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void load_fail(oxl_srv *srv, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(srv->load_error, sizeof srv->load_error, fmt, ap);
    va_end(ap);
    size_t n = strlen(srv->load_error);
    if (n > 0 && srv->load_error[n - 1] == '\n') {
        srv->load_error[n - 1] = 0;
    }
    fprintf(stderr, "oxillama serve: %s\n", srv->load_error);
}

int oxl_srv_load_engine(oxl_srv *srv, const char *path) {
    const oxl_server_config *cfg = srv->cfg;
    oxl_error err = {0};
    double t0 = oxl_now();
    oxl_model_params mp = oxl_model_default_params();
    mp.repack = !cfg->no_repack;
    mp.n_gpu_layers = cfg->n_gpu_layers;
    mp.main_gpu = cfg->main_gpu;
    mp.use_mmap = !cfg->no_mmap;
    mp.use_mlock = cfg->mlock;
    srv->model = oxl_model_load(path, &mp, &err);
    if (!srv->model) {
        load_fail(srv, "%s\n", err.msg);
        return -1;
    }
    srv->thinking_template = oxl_chat_supports_thinking(srv->model, cfg->chat_template);
    oxl_ctx_params cp = oxl_ctx_default_params();
    cp.n_ctx = cfg->n_ctx;
    cp.n_seq_max = cfg->n_parallel;
    cp.n_threads = cfg->n_threads;
    cp.n_batch = cfg->n_batch;
    cp.type_k = cfg->type_k;
    cp.type_v = cfg->type_v;
    cp.flash_attn = cfg->flash_attn;
    cp.pooling = cfg->rerank ? OXL_POOLING_RANK : OXL_POOLING_UNSPECIFIED; /* the embedding context's */
    srv->ctx = oxl_ctx_new(srv->model, &cp, &err);
    if (!srv->ctx) {
        load_fail(srv, "%s\n", err.msg);
        return -1;
    }
    if (cfg->setup_ctx && cfg->setup_ctx(cfg->setup_user, srv->model, srv->ctx) != 0) {
        return -1;
    }
    /* --mmproj: the projector, and a small context of the model for encoding images (its threads) */
    if (cfg->mmproj) {
        const oxl_mmproj_params mmp = {cfg->image_min_tokens, cfg->image_max_tokens};
        srv->mmproj = oxl_mmproj_load_params(cfg->mmproj, srv->model, &mmp, &err);
        oxl_ctx_params mcp = oxl_ctx_default_params();
        mcp.n_ctx = 64;
        mcp.n_seq_max = 1;
        mcp.n_threads = cfg->n_threads;
        mcp.type_k = mcp.type_v = OXL_KV_F16;
        srv->mm_ctx = srv->mmproj ? oxl_ctx_new(srv->model, &mcp, &err) : NULL;
        if (!srv->mm_ctx) {
            load_fail(srv, "--mmproj: %s\n", err.msg);
            return -1;
        }
        pthread_mutex_init(&srv->mm_mu, NULL);
    }
    /* LoRA adapters: loaded here, set on the context per step by the scheduler */
    float lora_scale[OXL_SRV_MAX_LORA];
    for (int i = 0; i < cfg->n_lora && i < OXL_SRV_MAX_LORA; i++) {
        srv->lora[i] = oxl_lora_load(srv->model, cfg->lora_path[i], &err);
        if (!srv->lora[i]) {
            load_fail(srv, "%s\n", err.msg);
            return -1;
        }
        srv->n_lora = i + 1;
        lora_scale[i] = cfg->lora_init_without_apply ? 0.0f : cfg->lora_scale[i];
    }
    /* speculative decoding: the draft model gets a context of the same slots and length */
    if (cfg->model_draft || cfg->spec_ngram) {
        if (oxl_model_is_recurrent(srv->model)) {
            char arch[64] = "?";
            oxl_model_meta_val_str(srv->model, "general.architecture", arch, sizeof arch);
            load_fail(srv, "speculative decoding needs a model whose cache can rewind: %s\n", arch);
            return -1;
        }
    }
    if (cfg->model_draft) {
        srv->dmodel = oxl_model_load(cfg->model_draft, &mp, &err);
        if (!srv->dmodel) {
            load_fail(srv, "draft model: %s\n", err.msg);
            return -1;
        }
        if (oxl_model_draft_compatible(srv->model, srv->dmodel, &err) != 0) {
            load_fail(srv, "%s: %s\n", cfg->model_draft, err.msg);
            return -1;
        }
        if (oxl_model_is_recurrent(srv->dmodel)) {
            char arch[64] = "?";
            oxl_model_meta_val_str(srv->dmodel, "general.architecture", arch, sizeof arch);
            fprintf(stderr,
                    "oxillama serve: speculative decoding needs a model whose cache can rewind: %s (the draft "
                    "model)\n",
                    arch);
            return -1;
        }
        oxl_ctx_params dp = cp;
        dp.n_ctx = oxl_ctx_n_ctx(srv->ctx) * oxl_ctx_n_seq_max(srv->ctx);
        srv->dctx = oxl_ctx_new(srv->dmodel, &dp, &err);
        /* the scheduler's thread drives both contexts, one decode at a time */
        if (!srv->dctx || oxl_ctx_share_threads(srv->dctx, srv->ctx, &err) != 0) {
            load_fail(srv, "draft model: %s\n", err.msg);
            return -1;
        }
    }
    const oxl_sched_extras ex = {.loras = srv->lora,
                                 .n_lora = srv->n_lora,
                                 .lora_scale = lora_scale,
                                 .dctx = srv->dctx,
                                 .ngram = cfg->spec_ngram,
                                 .ngram_size_n = cfg->ngram_size_n,
                                 .ngram_size_m = cfg->ngram_size_m};
    srv->sched = oxl_sched_start(srv->model, srv->ctx, cfg->queue_size, cfg->n_batch, &cp, &ex, &err);
    if (!srv->sched) {
        load_fail(srv, "%s\n", err.msg);
        return -1;
    }
    bool shift = cfg->ctx_shift;
    if (shift && oxl_ctx_can_shift(srv->ctx, &err) != 0) {
        /* llama-server: "ctx_shift is not supported by this context, it will be disabled" */
        fprintf(stderr,
                "oxillama serve: warning: --context-shift is not supported by this model, it is disabled (%s)\n",
                err.msg);
        shift = false;
    }
    if (shift && srv->mmproj) {
        /* llama-server: "ctx_shift is not supported by multimodal, it will be disabled" (an image's
         * rows cannot be cut) */
        fprintf(stderr, "oxillama serve: warning: --context-shift is not supported with --mmproj, it is disabled\n");
        shift = false;
    }
    oxl_sched_set_context_shift(srv->sched, shift, cfg->n_keep, cfg->log_level >= 2);
    if (cfg->log_level >= 1 && srv->dmodel)
        fprintf(stderr, "oxillama serve: draft model %s\n", oxl_model_desc(srv->dmodel));
    if (cfg->log_level >= 1)
        fprintf(stderr, "oxillama serve: %s loaded in %.0f ms as '%s'; %d slots of %d tokens\n",
                oxl_model_desc(srv->model), (oxl_now() - t0) * 1e3, srv->model_id, oxl_ctx_n_seq_max(srv->ctx),
                oxl_ctx_n_ctx(srv->ctx));
    atomic_store(&srv->ready, true);
    return 0;
}

void oxl_srv_free_engine(oxl_srv *srv) {
    if (srv->mm_ctx) {
        pthread_mutex_destroy(&srv->mm_mu);
    }
    oxl_ctx_free(srv->mm_ctx);
    oxl_mmproj_free(srv->mmproj);
    srv->mm_ctx = NULL;
    srv->mmproj = NULL;
    oxl_ctx_free(srv->dctx);
    oxl_model_free(srv->dmodel);
    oxl_ctx_free(srv->ctx);
    for (int32_t i = 0; i < srv->n_lora; i++) {
        oxl_lora_free(srv->lora[i]);
    }
    oxl_model_free(srv->model);
}

int oxl_server_run(const oxl_server_config *cfg) {
    static oxl_srv srv_storage;
    oxl_srv *srv = &srv_storage;
    srv->cfg = cfg;
    srv->created = time(NULL);
    if (oxl_models_wanted(cfg) && cfg->mmproj) {
        fprintf(stderr, "oxillama serve: --mmproj belongs to one model; it cannot be used with several models "
                        "(repeated -m or --models-dir)\n");
        return 1;
    }
    if (oxl_models_wanted(cfg)) {
        if (oxl_models_init(srv) != 0) {
            return 1;
        }
    } else {
        const char *base = strrchr(cfg->model, '/');
        snprintf(srv->model_file, sizeof srv->model_file, "%.255s", base ? base + 1 : cfg->model);
        snprintf(srv->model_id, sizeof srv->model_id, "%.255s", cfg->alias ? cfg->alias : srv->model_file);
    }

    /* Signals are taken by sigwait below; every thread started from here inherits the mask. */
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &set, NULL);
    signal(SIGPIPE, SIG_IGN);

    unsigned port = 0;
    struct MHD_Daemon *d = start_daemon(srv, &port);
    if (!d) {
        oxl_models_free(srv);
        return 1;
    }
    if (cfg->log_level >= 1)
        fprintf(stderr, "oxillama serve: listening on http://%s%s%s:%u\n", strchr(cfg->host, ':') ? "[" : "", cfg->host,
                strchr(cfg->host, ':') ? "]" : "", port);
    pthread_t watchdog;
    bool watching = cfg->idle_timeout > 0 && pthread_create(&watchdog, NULL, watch_main, srv) == 0;
    if (srv->models) {
        atomic_store(&srv->ready, true); /* each model loads on its first request */
    } else if (oxl_srv_load_engine(srv, cfg->model) != 0) {
        MHD_stop_daemon(d);
        if (watching) {
            atomic_store(&watch_stop, true);
            pthread_join(watchdog, NULL);
        }
        if (srv->sched) {
            oxl_sched_stop(srv->sched, 0);
            oxl_sched_free(srv->sched);
        }
        oxl_srv_free_engine(srv);
        return 1;
    }
    int sig = 0;
    sigwait(&set, &sig);
    if (cfg->log_level >= 1)
        fprintf(stderr, "oxillama serve: %s: no new connections; finishing requests in flight (up to %d s)\n",
                sig == SIGINT ? "SIGINT" : "SIGTERM", cfg->shutdown_timeout);
    atomic_store(&srv->stopping, true);
    MHD_socket lfd = MHD_quiesce_daemon(d);
    if (lfd != MHD_INVALID_SOCKET) {
        close(lfd);
    }
    if (srv->models) {
        oxl_models_stop(srv, oxl_now() + cfg->shutdown_timeout);
    } else {
        oxl_sched_stop(srv->sched, oxl_now() + cfg->shutdown_timeout);
    }
    /* Let the request threads send their last bytes (final chunks, error events). */
    for (int i = 0; i < 500 && atomic_load(&srv->in_flight) > 0; i++) {
        usleep(10000);
    }
    MHD_stop_daemon(d);
    if (watching) {
        atomic_store(&watch_stop, true);
        pthread_join(watchdog, NULL);
    }
    if (srv->models) {
        oxl_models_free(srv);
    } else {
        oxl_sched_free(srv->sched);
        oxl_srv_free_engine(srv);
    }
    if (cfg->log_level >= 1)
        fprintf(stderr, "oxillama serve: stopped\n");
    return 0;
}

const char *oxl_request_arg(const oxl_request *rq, const char *name) {
    return rq->conn ? MHD_lookup_connection_value(rq->conn, MHD_GET_ARGUMENT_KIND, name) : NULL;
}

const char *oxl_request_header(const oxl_request *rq, const char *name) {
    return rq->conn ? MHD_lookup_connection_value(rq->conn, MHD_HEADER_KIND, name) : NULL;
}
