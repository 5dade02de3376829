/* The chat.completion.chunk and text_completion streams (generate.h), tool calls included. */
#include "generate.h"
#include "json_read.h"
#include "sse.h"
#include "toolcall.h"

#include <stdlib.h>
#include <string.h>

static cJSON *chunk_base(oxl_srv *srv, const api_req *r) {
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "id", r->id);
    cJSON_AddStringToObject(o, "object", r->kind == API_CHAT ? "chat.completion.chunk" : "text_completion");
    cJSON_AddNumberToObject(o, "created", (double)r->created);
    cJSON_AddStringToObject(o, "model", srv->model_id);
    cJSON_AddStringToObject(o, "system_fingerprint", "oxillama");
    return o;
}

/* One chunk of one choice: role first, then content deltas, then the finish reason. */
static void put_chunk(oxl_stream *st, stream_state *ss, int index, const char *role, const char *text, size_t len,
                      cJSON *logprobs, const char *finish) {
    const api_req *r = &ss->r;
    cJSON *o = chunk_base(st->srv, r);
    cJSON *choices = cJSON_AddArrayToObject(o, "choices");
    cJSON *ch = cJSON_CreateObject();
    cJSON_AddNumberToObject(ch, "index", index);
    if (r->kind == API_CHAT) {
        cJSON *delta = cJSON_AddObjectToObject(ch, "delta");
        if (role) {
            cJSON_AddStringToObject(delta, "role", role);
            cJSON_AddStringToObject(delta, "content", "");
            cJSON_AddNullToObject(delta, "refusal");
        } else if (text) {
            cJSON_AddItemToObject(delta, "content", oxl_json_text(text, len));
        }
        if (logprobs) {
            cJSON *lp = cJSON_AddObjectToObject(ch, "logprobs");
            cJSON_AddItemToObject(lp, "content", logprobs);
            cJSON_AddNullToObject(lp, "refusal");
        } else {
            cJSON_AddNullToObject(ch, "logprobs");
        }
    } else {
        cJSON_AddItemToObject(ch, "text", oxl_json_text(text ? text : "", text ? len : 0));
        if (logprobs) {
            cJSON_AddItemToObject(ch, "logprobs", logprobs);
        } else {
            cJSON_AddNullToObject(ch, "logprobs");
        }
    }
    if (finish) {
        cJSON_AddStringToObject(ch, "finish_reason", finish);
    } else {
        cJSON_AddNullToObject(ch, "finish_reason");
    }
    cJSON_AddItemToArray(choices, ch);
    if (r->include_usage) {
        cJSON_AddNullToObject(o, "usage");
    }
    oxl_sse_event(st, NULL, o);
}

static const char *str_or(const cJSON *v, const char *fallback) {
    const char *p = cJSON_GetStringValue(v);
    return p ? p : fallback;
}

/* The end of a streamed choice that may hold tool calls: the rest of the content, then the calls
 * (two deltas each). Returns the finish reason. */
static const char *finish_tool_stream(oxl_stream *st, stream_state *ss, int index, const oxl_choice_out *c,
                                      choice_progress *cp) {
    size_t content_len = c->len;
    cJSON *calls = oxl_tool_calls_parse(c->text ? c->text : "", &content_len);
    if (!calls) {
        content_len = c->len;
    }
    if (content_len > cp->sent) {
        put_chunk(st, ss, index, NULL, c->text + cp->sent, content_len - cp->sent, NULL, NULL);
    }
    cp->sent = c->len;
    if (!calls) {
        return c->finish;
    }
    /* OpenAI's chunks: each call opens with its index, id, type, name and empty arguments; the
     * arguments follow in a delta of their own that names the index alone */
    int k = 0;
    for (cJSON *call = calls->child; call; call = call->next, k++) {
        cJSON *fn = cJSON_GetObjectItemCaseSensitive(call, "function");
        for (int part = 0; part < 2; part++) {
            cJSON *tc = cJSON_CreateObject();
            cJSON_AddNumberToObject(tc, "index", k);
            if (part == 0) {
                cJSON_AddStringToObject(tc, "id", str_or(cJSON_GetObjectItemCaseSensitive(call, "id"), ""));
                cJSON_AddStringToObject(tc, "type", "function");
            }
            cJSON *f = cJSON_AddObjectToObject(tc, "function");
            if (part == 0) {
                cJSON_AddStringToObject(f, "name", str_or(cJSON_GetObjectItemCaseSensitive(fn, "name"), ""));
            }
            cJSON_AddStringToObject(f, "arguments",
                                    part == 0 ? "" : str_or(cJSON_GetObjectItemCaseSensitive(fn, "arguments"), "{}"));
            cJSON *o = chunk_base(st->srv, &ss->r);
            cJSON *ch = cJSON_CreateObject();
            cJSON_AddNumberToObject(ch, "index", index);
            cJSON *delta = cJSON_AddObjectToObject(ch, "delta");
            cJSON_AddItemToArray(cJSON_AddArrayToObject(delta, "tool_calls"), tc);
            cJSON_AddNullToObject(ch, "logprobs");
            cJSON_AddNullToObject(ch, "finish_reason");
            cJSON_AddItemToArray(cJSON_AddArrayToObject(o, "choices"), ch);
            if (ss->r.include_usage) {
                cJSON_AddNullToObject(o, "usage");
            }
            oxl_sse_event(st, NULL, o);
        }
    }
    cJSON_Delete(calls);
    return "tool_calls";
}

/* chat.completion.chunk and text_completion streams. */
size_t oxl_produce_chunks(oxl_stream *st) {
    stream_state *ss = st->state;
    size_t before = st->len;
    oxl_api_error e;
    if (oxl_req_job_error(st->jobs, st->n_jobs, &e)) {
        oxl_sse_error(st, &e, false, 0);
        st->done = true;
        return st->len - before;
    }
    bool all = true;
    for (int p = 0; p < st->n_jobs; p++) {
        oxl_job *j = st->jobs[p];
        for (int i = 0; i < j->n_choices; i++) {
            const oxl_choice_out *c = &j->choice[i];
            choice_progress *cp = &ss->cp[p * ss->r.n + i];
            int index = p * ss->r.n + i;
            if (!cp->started) {
                cp->started = true;
                if (ss->r.kind == API_CHAT) {
                    put_chunk(st, ss, index, "assistant", NULL, 0, NULL, NULL);
                } else if (ss->r.echo && ss->prompts[p]) {
                    put_chunk(st, ss, index, NULL, ss->prompts[p], strlen(ss->prompts[p]), NULL, NULL);
                }
            }
            size_t avail = ss->r.has_tools && !c->finish ? oxl_tool_safe_len(c->text, c->len) : c->len;
            if (ss->r.has_tools && c->finish && !cp->finished) {
                avail = cp->sent; /* finish_tool_stream sends the rest */
            }
            if (avail > cp->sent || (ss->r.logprobs && c->n_lp > cp->lp_sent && c->finish)) {
                cJSON *lp = NULL;
                if (ss->r.logprobs) {
                    lp = ss->r.kind == API_CHAT ? oxl_chat_logprobs(st->srv, c, cp->lp_sent, c->n_lp)
                                                : oxl_completion_logprobs(st->srv, c, cp->lp_sent, c->n_lp, cp->sent);
                    cp->lp_sent = c->n_lp;
                }
                put_chunk(st, ss, index, NULL, c->text + cp->sent, avail - cp->sent, lp, NULL);
                cp->sent = avail;
            }
            if (c->finish && !cp->finished) {
                cp->finished = true;
                const char *reason = ss->r.has_tools ? finish_tool_stream(st, ss, index, c, cp) : c->finish;
                put_chunk(st, ss, index, NULL, NULL, 0, NULL, reason);
            }
            all &= cp->finished;
        }
    }
    if (all) {
        if (ss->r.include_usage && !ss->usage_sent) {
            cJSON *o = chunk_base(st->srv, &ss->r);
            cJSON_AddArrayToObject(o, "choices");
            cJSON_AddItemToObject(o, "usage", oxl_req_usage(st->jobs, st->n_jobs, ss->r.kind));
            oxl_sse_event(st, NULL, o);
            ss->usage_sent = true;
        }
        oxl_stream_put(st, "data: [DONE]\n\n", 14);
        st->done = true;
    }
    return st->len - before;
}
