/* The messages of the WebSocket route (ws.h): the envelope {"route", "body"} and its dispatch to
 * the HTTP route's handler. */
#include "json_read.h"
#include "ws.h"
#include "models.h"

#include <stdatomic.h>
#include <string.h>

/* The routes a message may name: those that stream. */
static const char *const ws_routes[] = {"/v1/chat/completions", "/v1/completions", "/completion", "/v1/responses",
                                        "/v1/messages"};

static const oxl_route *find_route(const char *path) {
    for (size_t i = 0; i < sizeof ws_routes / sizeof ws_routes[0]; i++) {
        if (strcmp(path, ws_routes[i])) {
            continue;
        }
        for (size_t k = 0; k < oxl_n_routes; k++) {
            if (!strcmp(oxl_routes[k].method, "POST") && !strcmp(oxl_routes[k].path, path)) {
                return &oxl_routes[k];
            }
        }
    }
    return NULL;
}

static const oxl_route *fail(oxl_srv *srv, const oxl_route *rt, oxl_reply *out, const oxl_api_error *e) {
    if (rt && rt->anthropic) {
        oxl_reply_anthropic_error(out, e);
    } else {
        oxl_reply_error(out, e);
    }
    if (e->status >= 100 && e->status < 600) {
        atomic_fetch_add(&srv->by_status[e->status], 1);
    }
    return rt;
}

const oxl_route *oxl_ws_request(oxl_srv *srv, const char *msg, size_t len, int fd, oxl_reply *out) {
    oxl_api_error e = {0};
    atomic_fetch_add(&srv->n_requests, 1);
    if (len == 0) {
        oxl_api_fail(&e, OXL_E_INVALID_JSON, NULL, "The message is empty; expected {\"route\": ..., \"body\": {...}}");
        return fail(srv, NULL, out, &e);
    }
    for (size_t i = 0; i < len;) {
        int n = msg[i] ? oxl_utf8_seq((const unsigned char *)msg + i, len - i) : 0;
        if (n == 0) {
            oxl_api_fail(&e, OXL_E_INVALID_UTF8, NULL, "The message is not valid UTF-8: byte 0x%02x at offset %zu",
                         (unsigned char)msg[i], i);
            return fail(srv, NULL, out, &e);
        }
        i += (size_t)n;
    }
    const char *end = NULL;
    cJSON *env = cJSON_ParseWithLengthOpts(msg, len, &end, false);
    if (!cJSON_IsObject(env)) {
        size_t off = end && end >= msg && end <= msg + len ? (size_t)(end - msg) : 0;
        if (env) {
            oxl_api_fail(&e, OXL_E_INVALID_JSON, NULL, "The message must be a JSON object {\"route\", \"body\"}");
        } else {
            oxl_api_fail(&e, OXL_E_INVALID_JSON, NULL,
                         "We could not parse the message: syntax error at byte offset %zu", off);
        }
        cJSON_Delete(env);
        return fail(srv, NULL, out, &e);
    }
    const oxl_route *rt = NULL;
    const cJSON *f;
    cJSON_ArrayForEach(f, env) {
        if (!f->string || (strcmp(f->string, "route") && strcmp(f->string, "body"))) {
            oxl_api_fail(&e, OXL_E_INVALID_VALUE, f->string,
                         "Unknown field '%.64s' in the message; it takes \"route\" and \"body\"",
                         f->string ? f->string : "");
            goto out;
        }
    }
    const cJSON *route = cJSON_GetObjectItemCaseSensitive(env, "route");
    cJSON *body = cJSON_GetObjectItemCaseSensitive(env, "body");
    if (!cJSON_IsString(route)) {
        oxl_api_fail(&e, route ? OXL_E_INVALID_TYPE : OXL_E_INVALID_VALUE, "route",
                     route ? "\"route\" must be a string" : "The message has no \"route\"");
        goto out;
    }
    if (!(rt = find_route(route->valuestring))) {
        oxl_api_fail(&e, OXL_E_UNKNOWN_URL, "route",
                     "Unknown route '%.200s' over /v1/ws; one of /v1/chat/completions, /v1/completions, /completion, "
                     "/v1/responses, /v1/messages",
                     route->valuestring);
        goto out;
    }
    if (!cJSON_IsObject(body)) {
        oxl_api_fail(&e, body ? OXL_E_INVALID_TYPE : OXL_E_INVALID_VALUE, "body",
                     body ? "\"body\" must be a JSON object" : "The message has no \"body\"");
        goto out;
    }
    const cJSON *stream = cJSON_GetObjectItemCaseSensitive(body, "stream");
    if (stream && !cJSON_IsTrue(stream)) {
        oxl_api_fail(&e, OXL_E_INVALID_VALUE, "stream", "\"stream\" must be true or absent over /v1/ws: it streams");
        goto out;
    }
    if (!stream && !cJSON_AddTrueToObject(body, "stream")) {
        oxl_api_fail(&e, OXL_E_OUT_OF_MEMORY, NULL, "out of memory");
        goto out;
    }
    /* several models: each message's body "model" selects the state it runs on, as an HTTP request's
     * does (http.c); the socket's own state is the server's, whichever model the upgrade named */
    oxl_srv *root = srv->entry ? srv->entry->server : srv, *on = root;
    if (root->models) {
        const cJSON *mj = cJSON_GetObjectItemCaseSensitive(body, "model");
        if (oxl_models_acquire(root, rt, cJSON_IsString(mj) ? mj->valuestring : NULL, &on, &e) != 0) {
            goto out;
        }
        if (on != root && cJSON_IsString(mj)) {
            cJSON_DeleteItemFromObjectCaseSensitive(body, "model");
        }
    }
    oxl_request rq = {.method = "POST", .path = rt->path, .json = body, .fd = fd};
    rt->fn(on, &rq, out);
    if (!out->stream) {
        oxl_models_release(on); /* a stream holds its model until oxl_stream_free */
    }
    if (!out->stream && out->status >= 100 && out->status < 600) {
        atomic_fetch_add(&srv->by_status[out->status], 1);
    }
    cJSON_Delete(env);
    return rt;
out:
    cJSON_Delete(env);
    return fail(srv, rt, out, &e);
}
