/* Server-sent event frames and the client check (sse.h). */
#include "sse.h"

#include "models.h"

#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

void oxl_stream_put(oxl_stream *st, const char *s, size_t n) {
    if (st->len + n > st->cap) {
        size_t cap = st->cap ? st->cap : 4096;
        while (cap < st->len + n) {
            cap *= 2;
        }
        char *o = realloc(st->out, cap);
        if (!o) {
            return;
        }
        st->out = o;
        st->cap = cap;
    }
    memcpy(st->out + st->len, s, n);
    st->len += n;
}

size_t oxl_stream_fill(oxl_stream *st, int wait_ms) {
    oxl_sched_lock(st->srv->sched);
    size_t n = st->produce(st);
    if (n == 0 && !st->done) {
        /* wait for the first job still running (each signals its own condition) */
        oxl_job *w = st->jobs[0];
        for (int i = 0; i < st->n_jobs; i++) {
            if (st->jobs[i]->n_done < st->jobs[i]->n_choices) {
                w = st->jobs[i];
                break;
            }
        }
        oxl_sched_wait(st->srv->sched, w, wait_ms);
        n = st->produce(st);
    }
    oxl_sched_unlock(st->srv->sched);
    return n;
}

void oxl_stream_free(oxl_stream *st) {
    if (!st->done && !st->counted) {
        atomic_fetch_add(&st->srv->n_cancelled, 1);
    }
    oxl_sched_lock(st->srv->sched);
    oxl_req_log_jobs(st->log, st->jobs, st->n_jobs);
    oxl_sched_unlock(st->srv->sched);
    oxl_req_log_unref(st->log);
    for (int i = 0; i < st->n_jobs; i++) {
        oxl_job_cancel(st->srv->sched, st->jobs[i]);
        oxl_job_release(st->srv->sched, st->jobs[i]);
    }
    free(st->jobs);
    if (st->free_state) {
        st->free_state(st->state);
    }
    oxl_models_release(st->srv);
    free(st->out);
    free(st);
}

bool oxl_client_gone(int fd) {
    if (fd < 0) {
        return false;
    }
    struct pollfd p = {.fd = fd, .events = POLLIN | POLLRDHUP};
    if (poll(&p, 1, 0) <= 0) {
        return false;
    }
    if (p.revents & (POLLHUP | POLLERR | POLLRDHUP | POLLNVAL)) {
        return true;
    }
    char c;
    ssize_t n = recv(fd, &c, 1, MSG_PEEK | MSG_DONTWAIT);
    return n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR);
}

void oxl_sse_event(oxl_stream *st, const char *event, cJSON *data) {
    if (st->messages) {
        /* one line: cJSON escapes the newlines of strings */
        cJSON *m = cJSON_CreateObject();
        if (!m || !cJSON_AddStringToObject(m, "event", event ? event : "message")) {
            cJSON_Delete(m);
            cJSON_Delete(data);
            return;
        }
        cJSON_AddItemToObject(m, "data", data);
        char *s = cJSON_PrintUnformatted(m);
        cJSON_Delete(m);
        if (s) {
            oxl_stream_put(st, s, strlen(s));
            oxl_stream_put(st, "\n", 1);
            free(s);
        }
        return;
    }
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

void oxl_sse_done(oxl_stream *st) {
    if (!st->messages) {
        oxl_stream_put(st, "data: [DONE]\n\n", 14);
    }
}

void oxl_sse_error(oxl_stream *st, const oxl_api_error *e, bool responses, int seq) {
    cJSON *o = cJSON_CreateObject();
    if (responses) {
        cJSON_AddStringToObject(o, "type", "error");
        cJSON_AddStringToObject(o, "code", e->code ? e->code : "server_error");
        cJSON_AddStringToObject(o, "message", e->msg);
        cJSON_AddNullToObject(o, "param");
        cJSON_AddNumberToObject(o, "sequence_number", seq);
        oxl_sse_event(st, "error", o);
        return;
    }
    cJSON *err = cJSON_AddObjectToObject(o, "error");
    cJSON_AddStringToObject(err, "message", e->msg);
    cJSON_AddStringToObject(err, "type", e->type);
    cJSON_AddNullToObject(err, "param");
    cJSON_AddStringToObject(err, "code", e->code ? e->code : "server_error");
    oxl_sse_event(st, NULL, o);
}
