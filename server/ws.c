/* GET /v1/ws: streaming over a WebSocket (the protocol is in ws.h). libmicrohttpd answers the
 * handshake with a 101 and hands over the socket (MHD_create_response_for_upgrade, MHD_ALLOW_UPGRADE);
 * wslay (RFC 6455, Debian libwslay-dev) frames the messages, answers pings and closes; nettle
 * (nettle-dev) computes Sec-WebSocket-Accept. Each request runs the HTTP route's handler and its
 * stream (sse.c, st->messages) in this connection's thread, which also reads the client's frames
 * between pieces of output, so that a close frame cancels the generation. */
#include "sse.h"
#include "ws.h"

#include <errno.h>
#include <microhttpd.h>
#include <nettle/base64.h>
#include <nettle/sha1.h>
#include <poll.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <wslay/wslay.h>

#define WS_GUID "258EAFA5-E914-47DA-95CA-C5AB0DC85B11" /* RFC 6455 section 1.3 */
#define WS_IDLE_MS 250                                 /* poll period with no request running */
#define WS_WAIT_MS 20                                  /* wait for new output of a running request */
#define WS_QUEUE_MAX (1u << 20) /* bytes queued for a slow client before output is left to wait */
#define WS_CLOSE_S 5.0          /* seconds the client has to answer our close frame */
#define WS_LINGER_MS 500        /* reading what the client still sends after the close, before the socket closes */

/* --- the handshake ----------------------------------------------------------------------------- */

/* True when the comma-separated header value list holds token (case-insensitive). */
static bool has_token(const char *list, const char *token) {
    size_t n = strlen(token);
    for (const char *p = list; p && *p;) {
        while (*p == ' ' || *p == '\t' || *p == ',') {
            p++;
        }
        const char *e = p;
        while (*e && *e != ',') {
            e++;
        }
        const char *t = e;
        while (t > p && (t[-1] == ' ' || t[-1] == '\t')) {
            t--;
        }
        if ((size_t)(t - p) == n && !strncasecmp(p, token, n)) {
            return true;
        }
        p = e;
    }
    return false;
}

/* A Sec-WebSocket-Key is the base64 of 16 bytes (RFC 6455 section 4.2.1). */
static bool key_valid(const char *key) {
    if (!key || strlen(key) != 24) {
        return false;
    }
    struct base64_decode_ctx d;
    uint8_t raw[BASE64_DECODE_LENGTH(24)];
    size_t n = 0;
    base64_decode_init(&d);
    return base64_decode_update(&d, &n, raw, 24, key) && base64_decode_final(&d) && n == 16;
}

/* 426 with an OpenAI error and the Upgrade header RFC 9110 asks of it. */
static void upgrade_required(oxl_reply *out, const char *why) {
    oxl_api_error e = {0};
    oxl_api_fail(&e, OXL_E_UPGRADE_REQUIRED, NULL, "/v1/ws takes a WebSocket handshake (RFC 6455): %s", why);
    oxl_reply_error(out, &e);
    struct MHD_Response *r =
        out->body ? MHD_create_response_from_buffer(out->len, out->body, MHD_RESPMEM_MUST_FREE) : NULL;
    if (!r) {
        return; /* send_reply answers with the body, or out of memory */
    }
    out->body = NULL;
    out->len = 0;
    MHD_add_response_header(r, "Content-Type", "application/json");
    MHD_add_response_header(r, "Upgrade", "websocket");
    MHD_add_response_header(r, "Sec-WebSocket-Version", "13");
    out->response = r;
}

static void ws_session(void *cls, struct MHD_Connection *c, void *con_cls, const char *extra, size_t n_extra,
                       MHD_socket sock, struct MHD_UpgradeResponseHandle *urh);

void oxl_api_ws(oxl_srv *srv, const oxl_request *rq, oxl_reply *out) {
    struct MHD_Connection *c = rq->conn;
    const char *upgrade = c ? MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Upgrade") : NULL;
    const char *conn = c ? MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Connection") : NULL;
    const char *version = c ? MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Sec-WebSocket-Version") : NULL;
    const char *key = c ? MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Sec-WebSocket-Key") : NULL;
    if (!has_token(upgrade, "websocket") || !has_token(conn, "upgrade")) {
        upgrade_required(out, "send 'Upgrade: websocket' and 'Connection: Upgrade'");
        return;
    }
    if (!version || strcmp(version, "13")) {
        upgrade_required(out, "Sec-WebSocket-Version must be 13");
        return;
    }
    if (!key_valid(key)) {
        upgrade_required(out, "Sec-WebSocket-Key must be the base64 of 16 bytes");
        return;
    }
    /* Sec-WebSocket-Accept: base64(SHA-1(key + GUID)), RFC 6455 section 4.2.2 */
    struct sha1_ctx h;
    uint8_t digest[SHA1_DIGEST_SIZE];
    char accept[BASE64_ENCODE_RAW_LENGTH(SHA1_DIGEST_SIZE) + 1];
    sha1_init(&h);
    sha1_update(&h, strlen(key), (const uint8_t *)key);
    sha1_update(&h, sizeof WS_GUID - 1, (const uint8_t *)WS_GUID);
    sha1_digest(&h, sizeof digest, digest);
    base64_encode_raw(accept, sizeof digest, digest);
    accept[sizeof accept - 1] = 0;
    struct MHD_Response *r = MHD_create_response_for_upgrade(ws_session, srv);
    if (!r) {
        oxl_api_error e = {0};
        oxl_api_fail(&e, OXL_E_OUT_OF_MEMORY, NULL, "out of memory");
        oxl_reply_error(out, &e);
        return;
    }
    MHD_add_response_header(r, "Upgrade", "websocket");
    MHD_add_response_header(r, "Sec-WebSocket-Accept", accept);
    out->status = MHD_HTTP_SWITCHING_PROTOCOLS;
    out->response = r;
}

/* --- the session ------------------------------------------------------------------------------- */

typedef struct ws_conn {
    oxl_srv *srv;
    int fd;
    const char *extra; /* bytes libmicrohttpd read past the handshake: read before the socket */
    size_t n_extra;
    wslay_event_context_ptr ctx;
    oxl_stream *st; /* the running request's stream, or NULL */
    bool closing;   /* a close frame was sent or received */
    double close_by;
} ws_conn;

static ssize_t ws_recv(wslay_event_context_ptr ctx, uint8_t *buf, size_t len, int flags, void *user) {
    (void)flags;
    ws_conn *w = user;
    if (w->n_extra) {
        size_t n = w->n_extra < len ? w->n_extra : len;
        memcpy(buf, w->extra, n);
        w->extra += n;
        w->n_extra -= n;
        return (ssize_t)n;
    }
    ssize_t n = recv(w->fd, buf, len, MSG_DONTWAIT);
    if (n > 0) {
        return n;
    }
    bool again = n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR);
    wslay_event_set_error(ctx, again ? WSLAY_ERR_WOULDBLOCK : WSLAY_ERR_CALLBACK_FAILURE);
    return -1;
}

static ssize_t ws_send(wslay_event_context_ptr ctx, const uint8_t *data, size_t len, int flags, void *user) {
    ws_conn *w = user;
    ssize_t n = send(w->fd, data, len, MSG_DONTWAIT | MSG_NOSIGNAL | (flags & WSLAY_MSG_MORE ? MSG_MORE : 0));
    if (n >= 0) {
        return n;
    }
    bool again = errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR;
    wslay_event_set_error(ctx, again ? WSLAY_ERR_WOULDBLOCK : WSLAY_ERR_CALLBACK_FAILURE);
    return -1;
}

static void queue_text(ws_conn *w, const char *s, size_t n) {
    struct wslay_event_msg m = {.opcode = WSLAY_TEXT_FRAME, .msg = (const uint8_t *)s, .msg_length = n};
    wslay_event_queue_msg(w->ctx, &m);
}

/* Sends a reply that is not a stream (an error body) as one message and frees it. */
static void queue_reply(ws_conn *w, oxl_reply *rp) {
    if (rp->body) {
        queue_text(w, rp->body, rp->len);
    } else {
        static const char oom[] =
            "{\"error\":{\"message\":\"out of memory\",\"type\":\"server_error\",\"param\":null,\"code\":null}}";
        queue_text(w, oom, sizeof oom - 1);
    }
    free(rp->body);
}

/* Ends the running request: its jobs are cancelled unless it is done. */
static void end_stream(ws_conn *w) {
    if (w->st) {
        oxl_stream_free(w->st);
        w->st = NULL;
    }
}

static void ws_on_msg(wslay_event_context_ptr ctx, const struct wslay_event_on_msg_recv_arg *arg, void *user) {
    (void)ctx;
    ws_conn *w = user;
    if (arg->opcode == WSLAY_CONNECTION_CLOSE) {
        /* wslay answers the close; a generation still running stops here */
        w->closing = true;
        w->close_by = oxl_now() + WS_CLOSE_S;
        end_stream(w);
        return;
    }
    if (arg->opcode != WSLAY_TEXT_FRAME && arg->opcode != WSLAY_BINARY_FRAME) {
        return;
    }
    oxl_reply rp = {0};
    oxl_api_error e = {0};
    if (w->closing) {
        return;
    }
    if (w->st) {
        oxl_api_fail(&e, OXL_E_REQUEST_RUNNING, NULL,
                     "A request is running on this socket; send the next one after its {\"done\": true}");
        oxl_reply_error(&rp, &e);
    } else if (arg->opcode == WSLAY_BINARY_FRAME) {
        oxl_api_fail(&e, OXL_E_INVALID_JSON, NULL,
                     "Binary messages are not taken; send {\"route\": ..., \"body\": {...}} as a text message");
        oxl_reply_error(&rp, &e);
    } else {
        oxl_ws_request(w->srv, (const char *)arg->msg, arg->msg_length, w->fd, &rp);
        if (rp.stream) {
            rp.stream->messages = true;
            w->st = rp.stream;
            return;
        }
    }
    queue_reply(w, &rp);
}

/* Moves the running request's new events into messages; after its last, {"done": true}. */
static void pump(ws_conn *w) {
    oxl_stream *st = w->st;
    if (st->len == 0 && !st->done && wslay_event_get_queued_msg_length(w->ctx) < WS_QUEUE_MAX) {
        oxl_stream_fill(st, WS_WAIT_MS);
    }
    size_t a = 0;
    for (size_t i = 0; i < st->len; i++) {
        if (st->out[i] == '\n') {
            queue_text(w, st->out + a, i - a);
            a = i + 1;
        }
    }
    if (a > 0) {
        memmove(st->out, st->out + a, st->len - a);
        st->len -= a;
    }
    if (st->done && st->len == 0) {
        static const char done[] = "{\"done\":true}";
        queue_text(w, done, sizeof done - 1);
        end_stream(w);
    }
}

static void ws_loop(ws_conn *w) {
    wslay_event_context_ptr ctx = w->ctx;
    while (wslay_event_want_read(ctx) || wslay_event_want_write(ctx)) {
        if (w->closing && oxl_now() > w->close_by) {
            break;
        }
        if (!w->st && !w->closing && atomic_load(&w->srv->stopping)) {
            static const char why[] = "the server is shutting down";
            wslay_event_queue_close(ctx, WSLAY_CODE_GOING_AWAY, (const uint8_t *)why, sizeof why - 1);
            w->closing = true;
            w->close_by = oxl_now() + WS_CLOSE_S;
        }
        struct pollfd p = {
            .fd = w->fd,
            .events = (short)((wslay_event_want_read(ctx) ? POLLIN : 0) | (wslay_event_want_write(ctx) ? POLLOUT : 0))};
        /* no waiting here while a request runs: pump() waits for its output */
        bool output = w->st && wslay_event_get_queued_msg_length(ctx) < WS_QUEUE_MAX;
        int r = w->n_extra ? 0 : poll(&p, 1, output ? 0 : WS_IDLE_MS);
        if (r < 0 && errno != EINTR) {
            break;
        }
        if ((w->n_extra || (p.revents & (POLLIN | POLLHUP | POLLERR))) && wslay_event_recv(ctx) != 0) {
            break;
        }
        if (w->st) {
            pump(w);
        }
        if (wslay_event_send(ctx) != 0) {
            break;
        }
    }
}

static void ws_session(void *cls, struct MHD_Connection *c, void *con_cls, const char *extra, size_t n_extra,
                       MHD_socket sock, struct MHD_UpgradeResponseHandle *urh) {
    (void)c;
    (void)con_cls;
    ws_conn w = {.srv = cls, .fd = sock, .extra = extra, .n_extra = n_extra};
    const struct wslay_event_callbacks cb = {
        .recv_callback = ws_recv, .send_callback = ws_send, .on_msg_recv_callback = ws_on_msg};
    if (wslay_event_context_server_init(&w.ctx, &cb, &w) == 0) {
        wslay_event_config_set_max_recv_msg_length(w.ctx, w.srv->cfg->max_body);
        ws_loop(&w);
        wslay_event_context_free(w.ctx);
    }
    /* A lingering close: what the client still sends (the rest of a message over --max-body) is
     * read and dropped for a while, so that closing the socket does not reset the connection
     * before the client has read our close frame. */
    shutdown(sock, SHUT_WR);
    char sink[4096];
    for (double until = oxl_now() + WS_LINGER_MS / 1e3; oxl_now() < until;) {
        struct pollfd p = {.fd = sock, .events = POLLIN};
        if (poll(&p, 1, 50) < 0 && errno != EINTR) {
            break;
        }
        ssize_t n = p.revents ? recv(sock, sink, sizeof sink, MSG_DONTWAIT) : -1;
        if (n == 0 || (n < 0 && p.revents && errno != EAGAIN && errno != EINTR)) {
            break;
        }
    }
    end_stream(&w);
    MHD_upgrade_action(urh, MHD_UPGRADE_ACTION_CLOSE);
}
