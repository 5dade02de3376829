/* The chat.completion.chunk and text_completion streams (generate.h), reasoning and tool calls included. */
#include "generate.h"
#include "json_read.h"
#include "sse.h"
#include "toolcall.h"

#include <stdio.h>
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
static void put_field(oxl_stream *st, stream_state *ss, int index, const char *role, const char *field,
                      const char *text, size_t len, cJSON *logprobs, const char *finish) {
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
            cJSON_AddItemToObject(delta, field, oxl_json_text(text, len));
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

static void put_chunk(oxl_stream *st, stream_state *ss, int index, const char *role, const char *text, size_t len,
                      cJSON *logprobs, const char *finish) {
    put_field(st, ss, index, role, "content", text, len, logprobs, finish);
}

static const char *str_or(const cJSON *v, const char *fallback) {
    const char *p = cJSON_GetStringValue(v);
    return p ? p : fallback;
}

/* One chunk whose delta holds one piece of tool call k: the first piece of a call names its index,
 * id, type, name and the arguments so far; later ones the index and more arguments (llama.cpp's
 * common_chat_msg_diff_to_json_oaicompat). */
static void put_call_delta(oxl_stream *st, stream_state *ss, int index, int k, const char *id, const char *name,
                           const char *args, size_t args_len) {
    cJSON *tc = cJSON_CreateObject();
    cJSON_AddNumberToObject(tc, "index", k);
    if (id) {
        cJSON_AddStringToObject(tc, "id", id);
        cJSON_AddStringToObject(tc, "type", "function");
    }
    cJSON *f = cJSON_AddObjectToObject(tc, "function");
    if (name) {
        cJSON_AddStringToObject(f, "name", name);
    }
    cJSON_AddItemToObject(f, "arguments", oxl_json_text(args, args_len));
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

/* What the reply's calls gained since the last parse, as llama.cpp's compute_diffs finds it: the
 * arguments the last call sent gained, then each new call whole as far as it goes. Calls sent keep
 * the id they were sent with. Text that does not extend what was sent (a reply that turned out
 * not to be a call) is not sent: a stream never takes a piece back. */
static void calls_progress(oxl_stream *st, stream_state *ss, int index, choice_progress *cp, const cJSON *calls) {
    int n_new = cJSON_GetArraySize(calls);
    if (n_new == 0 || (!cp->calls && !(cp->calls = cJSON_CreateArray()))) {
        return;
    }
    int n_sent = cJSON_GetArraySize(cp->calls);
    if (n_sent > 0 && n_new >= n_sent) {
        cJSON *sent = cJSON_GetArrayItem(cp->calls, n_sent - 1);
        const cJSON *fn = cJSON_GetObjectItemCaseSensitive(cJSON_GetArrayItem(calls, n_sent - 1), "function");
        const char *args = str_or(cJSON_GetObjectItemCaseSensitive(fn, "arguments"), "");
        const char *had = str_or(cJSON_GetObjectItemCaseSensitive(sent, "arguments"), "");
        size_t hl = strlen(had), al = strlen(args);
        if (!strcmp(str_or(cJSON_GetObjectItemCaseSensitive(fn, "name"), ""),
                    str_or(cJSON_GetObjectItemCaseSensitive(sent, "name"), "")) &&
            al > hl && !strncmp(args, had, hl)) {
            put_call_delta(st, ss, index, n_sent - 1, NULL, NULL, args + hl, al - hl);
            cJSON_ReplaceItemInObjectCaseSensitive(sent, "arguments", cJSON_CreateString(args));
        }
    }
    for (int k = n_sent; k < n_new; k++) {
        const cJSON *call = cJSON_GetArrayItem(calls, k);
        const cJSON *fn = cJSON_GetObjectItemCaseSensitive(call, "function");
        const char *name = str_or(cJSON_GetObjectItemCaseSensitive(fn, "name"), "");
        const char *args = str_or(cJSON_GetObjectItemCaseSensitive(fn, "arguments"), "");
        char id[64];
        const char *given = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(call, "id"));
        if (given && *given) {
            snprintf(id, sizeof id, "%s", given);
        } else {
            oxl_random_id("call_", id, sizeof id);
        }
        put_call_delta(st, ss, index, k, id, name, args, strlen(args));
        cJSON *rec = cJSON_CreateObject();
        cJSON_AddStringToObject(rec, "id", id);
        cJSON_AddStringToObject(rec, "name", name);
        cJSON_AddStringToObject(rec, "arguments", args);
        cJSON_AddItemToArray(cp->calls, rec);
    }
}

/* The deltas of the reply's first len bytes: they go through the parser (partially until the reply
 * is finished); what reasoning_content and content gained is sent as deltas of those fields, then
 * what the tool calls gained (calls_progress). */
static void chat_step(oxl_stream *st, stream_state *ss, int index, const oxl_choice_out *c, choice_progress *cp,
                      size_t len, bool fin) {
    cJSON *msg = oxl_chat_reply_stream(st->srv, &ss->r, c->text, len, !fin);
    cp->sent = len;
    const char *rs = str_or(cJSON_GetObjectItemCaseSensitive(msg, "reasoning_content"), "");
    const char *cs = str_or(cJSON_GetObjectItemCaseSensitive(msg, "content"), "");
    const size_t rl = strlen(rs), cl = strlen(cs);
    cJSON *lp = NULL;
    const bool grew = rl > cp->reasoning_sent || cl > cp->content_sent;
    if (ss->r.logprobs && (grew || fin) && c->n_lp > cp->lp_sent) {
        lp = oxl_chat_logprobs(st->srv, c, cp->lp_sent, c->n_lp);
        cp->lp_sent = c->n_lp;
    }
    if (rl > cp->reasoning_sent) {
        put_field(st, ss, index, NULL, "reasoning_content", rs + cp->reasoning_sent, rl - cp->reasoning_sent,
                  cl > cp->content_sent ? NULL : lp, NULL);
        lp = cl > cp->content_sent ? lp : NULL;
        cp->reasoning_sent = rl;
    }
    if (cl > cp->content_sent || lp) {
        size_t from = cl > cp->content_sent ? cp->content_sent : cl;
        put_chunk(st, ss, index, NULL, cs + from, cl - from, lp, NULL);
        cp->content_sent = cl > cp->content_sent ? cl : cp->content_sent;
    }
    calls_progress(st, ss, index, cp, cJSON_GetObjectItemCaseSensitive(msg, "tool_calls"));
    cJSON_Delete(msg);
}

/* A chat choice's new deltas. As llama-server re-parses the reply after each token, the reply is
 * parsed at each publication of its text since the last call (so deltas do not depend on how fast
 * the client reads), then as it stands; once finished, the finish reason follows (tool_calls when
 * calls were sent). */
static void chat_progress(oxl_stream *st, stream_state *ss, int index, const oxl_choice_out *c, choice_progress *cp) {
    const bool fin = c->finish != NULL;
    if (cp->finished || (!fin && c->len == cp->sent)) {
        return;
    }
    for (int32_t m = cp->marks_seen; m < c->n_marks; m++) {
        if (c->marks[m] > cp->sent && c->marks[m] < c->len) {
            chat_step(st, ss, index, c, cp, c->marks[m], false);
        }
    }
    cp->marks_seen = c->n_marks;
    chat_step(st, ss, index, c, cp, c->len, fin);
    if (fin) {
        cp->finished = true;
        put_chunk(st, ss, index, NULL, NULL, 0, NULL, cJSON_GetArraySize(cp->calls) > 0 ? "tool_calls" : c->finish);
    }
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
            if (ss->r.kind == API_CHAT) {
                chat_progress(st, ss, index, c, cp);
                all &= cp->finished;
                continue;
            }
            size_t avail = c->len;
            if (avail > cp->sent || (ss->r.logprobs && c->n_lp > cp->lp_sent && c->finish)) {
                cJSON *lp = NULL;
                if (ss->r.logprobs) {
                    lp = oxl_completion_logprobs(st->srv, c, cp->lp_sent, c->n_lp, cp->sent);
                    cp->lp_sent = c->n_lp;
                }
                put_chunk(st, ss, index, NULL, c->text + cp->sent, avail - cp->sent, lp, NULL);
                cp->sent = avail;
            }
            if (c->finish && !cp->finished) {
                cp->finished = true;
                put_chunk(st, ss, index, NULL, NULL, 0, NULL, c->finish);
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
        oxl_sse_done(st);
        st->done = true;
    }
    return st->len - before;
}
