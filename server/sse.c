/* Server-sent event frames and the client check (sse.h). */
#include "sse.h"

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
