/* POST /v1/responses: the Responses API object and its streaming events. */
#include "generate.h"
#include "json_read.h"
#include "routes.h"
#include "sse.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static cJSON *response_part(const char *text, size_t len) {
    cJSON *part = cJSON_CreateObject();
    cJSON_AddStringToObject(part, "type", "output_text");
    cJSON_AddItemToObject(part, "text", oxl_json_text(text, len));
    cJSON_AddArrayToObject(part, "annotations");
    return part;
}

static cJSON *response_item(const char *msg_id, const char *status, const oxl_choice_out *c) {
    cJSON *it = cJSON_CreateObject();
    cJSON_AddStringToObject(it, "id", msg_id);
    cJSON_AddStringToObject(it, "type", "message");
    cJSON_AddStringToObject(it, "status", status);
    cJSON_AddStringToObject(it, "role", "assistant");
    cJSON *content = cJSON_AddArrayToObject(it, "content");
    if (c) {
        cJSON_AddItemToArray(content, response_part(c->text ? c->text : "", c->len));
    }
    return it;
}

/* The response object; j == NULL while in progress. */
static cJSON *response_object(oxl_srv *srv, const api_req *r, const char *msg_id, oxl_job *j) {
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "id", r->id);
    cJSON_AddStringToObject(o, "object", "response");
    cJSON_AddNumberToObject(o, "created_at", (double)r->created);
    bool incomplete = j && j->choice[0].finish && !strcmp(j->choice[0].finish, "length");
    cJSON_AddStringToObject(o, "status", !j ? "in_progress" : incomplete ? "incomplete" : "completed");
    cJSON_AddNullToObject(o, "error");
    if (incomplete) {
        cJSON *d = cJSON_AddObjectToObject(o, "incomplete_details");
        cJSON_AddStringToObject(d, "reason", "max_output_tokens");
    } else {
        cJSON_AddNullToObject(o, "incomplete_details");
    }
    cJSON_AddStringToObject(o, "model", srv->model_id);
    cJSON *out = cJSON_AddArrayToObject(o, "output");
    if (j) {
        cJSON_AddItemToArray(out, response_item(msg_id, "completed", &j->choice[0]));
    }
    cJSON_AddBoolToObject(o, "parallel_tool_calls", true);
    cJSON_AddNumberToObject(o, "temperature", r->gen.sampling.temp);
    cJSON_AddNumberToObject(o, "top_p", r->gen.sampling.top_p);
    if (r->gen.max_tokens >= 0) {
        cJSON_AddNumberToObject(o, "max_output_tokens", r->gen.max_tokens);
    } else {
        cJSON_AddNullToObject(o, "max_output_tokens");
    }
    cJSON_AddArrayToObject(o, "tools");
    cJSON_AddStringToObject(o, "tool_choice", "auto");
    if (j) {
        cJSON_AddItemToObject(o, "usage", oxl_req_usage(&j, 1, API_RESPONSES));
    } else {
        cJSON_AddNullToObject(o, "usage");
    }
    return o;
}

static void put_resp_event(oxl_stream *st, stream_state *ss, const char *type, cJSON *o) {
    cJSON *head = cJSON_CreateObject();
    cJSON_AddStringToObject(head, "type", type);
    cJSON_AddNumberToObject(head, "sequence_number", ss->seq++);
    for (cJSON *m = o->child; m;) {
        cJSON *next = m->next;
        cJSON_AddItemToObject(head, m->string, cJSON_DetachItemViaPointer(o, m));
        m = next;
    }
    cJSON_Delete(o);
    oxl_sse_event(st, type, head);
}

static cJSON *resp_ref(const stream_state *ss) {
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "item_id", ss->msg_id);
    cJSON_AddNumberToObject(o, "output_index", 0);
    cJSON_AddNumberToObject(o, "content_index", 0);
    return o;
}

static cJSON *response_body(oxl_srv *srv, const api_req *r, oxl_job **jobs, int n_jobs, char **prompts,
                            const char *msg_id) {
    return response_object(srv, r, msg_id, jobs[0]);
}

/* The Responses API event sequence: created, in_progress, output_item.added, content_part.added,
 * output_text.delta..., output_text.done, content_part.done, output_item.done, completed. */
static size_t produce_response_events(oxl_stream *st) {
    stream_state *ss = st->state;
    size_t before = st->len;
    oxl_job *j = st->jobs[0];
    const oxl_choice_out *c = &j->choice[0];
    choice_progress *cp = &ss->cp[0];
    oxl_api_error e;
    if (ss->phase == 0) {
        cJSON *o = cJSON_CreateObject();
        cJSON_AddItemToObject(o, "response", response_object(st->srv, &ss->r, ss->msg_id, NULL));
        put_resp_event(st, ss, "response.created", o);
        o = cJSON_CreateObject();
        cJSON_AddItemToObject(o, "response", response_object(st->srv, &ss->r, ss->msg_id, NULL));
        put_resp_event(st, ss, "response.in_progress", o);
        o = cJSON_CreateObject();
        cJSON_AddNumberToObject(o, "output_index", 0);
        cJSON_AddItemToObject(o, "item", response_item(ss->msg_id, "in_progress", NULL));
        put_resp_event(st, ss, "response.output_item.added", o);
        o = resp_ref(ss);
        cJSON_AddItemToObject(o, "part", response_part("", 0));
        put_resp_event(st, ss, "response.content_part.added", o);
        ss->phase = 1;
    }
    if (oxl_req_job_error(st->jobs, 1, &e)) {
        oxl_sse_error(st, &e, true, ss->seq++);
        st->done = true;
        return st->len - before;
    }
    if (c->len > cp->sent) {
        cJSON *o = resp_ref(ss);
        cJSON_AddItemToObject(o, "delta", oxl_json_text(c->text + cp->sent, c->len - cp->sent));
        put_resp_event(st, ss, "response.output_text.delta", o);
        cp->sent = c->len;
    }
    if (oxl_req_job_done(j)) {
        cJSON *o = resp_ref(ss);
        cJSON_AddItemToObject(o, "text", oxl_json_text(c->text ? c->text : "", c->len));
        put_resp_event(st, ss, "response.output_text.done", o);
        o = resp_ref(ss);
        cJSON_AddItemToObject(o, "part", response_part(c->text ? c->text : "", c->len));
        put_resp_event(st, ss, "response.content_part.done", o);
        o = cJSON_CreateObject();
        cJSON_AddNumberToObject(o, "output_index", 0);
        cJSON_AddItemToObject(o, "item", response_item(ss->msg_id, "completed", c));
        put_resp_event(st, ss, "response.output_item.done", o);
        o = cJSON_CreateObject();
        cJSON_AddItemToObject(o, "response", response_object(st->srv, &ss->r, ss->msg_id, j));
        put_resp_event(st, ss, "response.completed", o);
        st->done = true;
    }
    return st->len - before;
}

void oxl_api_responses(oxl_srv *srv, const oxl_request *rq, oxl_reply *out) {
    oxl_media media = {0};
    api_req r = {.kind = API_RESPONSES, .object = response_body, .produce = produce_response_events};
    r.media = srv->mmproj ? &media : NULL;
    oxl_api_error e = {0};
    const cJSON *b = rq->json;
    cJSON *msgs = NULL, *norm = NULL;
    char *kwargs = NULL; /* --reasoning-budget 0: enable_thinking false */
    oxl_token *toks = NULL;
    int32_t n_toks = 0;
    if (oxl_req_parse_common(srv, b, &r, &e) < 0) {
        goto fail;
    }
    if (r.n != 1) {
        BAD(&e, "n", "'n' is not a field of the Responses API");
        goto fail;
    }
    const char *instructions = NULL;
    if (oxl_json_str(b, "instructions", &instructions, &e) < 0) {
        goto fail;
    }
    const cJSON *in = oxl_json_field(b, "input");
    if (!in || (!cJSON_IsString(in) && !cJSON_IsArray(in))) {
        BAD_TYPE(&e, "input", "'input': expected a string or a list of input messages");
        goto fail;
    }
    msgs = cJSON_CreateArray();
    if (instructions) {
        cJSON *m = cJSON_CreateObject();
        cJSON_AddStringToObject(m, "role", "system");
        cJSON_AddStringToObject(m, "content", instructions);
        cJSON_AddItemToArray(msgs, m);
    }
    if (cJSON_IsString(in)) {
        cJSON *m = cJSON_CreateObject();
        cJSON_AddStringToObject(m, "role", "user");
        cJSON_AddStringToObject(m, "content", in->valuestring);
        cJSON_AddItemToArray(msgs, m);
    } else {
        for (const cJSON *m = in->child; m; m = m->next) {
            cJSON *d = cJSON_Duplicate(m, true);
            cJSON_DeleteItemFromObjectCaseSensitive(d, "type");
            cJSON_AddItemToArray(msgs, d);
        }
    }
    if (!(norm = oxl_req_normalize_messages(msgs, "input", r.media, &e)) ||
        oxl_req_template_kwargs(srv, NULL, &kwargs, &e) < 0 ||
        oxl_req_chat_prompt(srv, norm, NULL, kwargs, b, &r.gen, r.media, &toks, &n_toks, "input", &e) < 0 ||
        oxl_req_check_context(srv, n_toks, "input", &e) < 0) {
        goto fail;
    }
    cJSON_Delete(msgs);
    cJSON_Delete(norm);
    free(kwargs);
    oxl_req_run(srv, rq, &r, &toks, &n_toks, NULL, 1, out);
    free(toks);
    oxl_gen_params_free(&r.gen);
    oxl_media_free(&media);
    return;
fail:
    cJSON_Delete(msgs);
    cJSON_Delete(norm);
    free(kwargs);
    free(toks);
    oxl_gen_params_free(&r.gen);
    oxl_media_free(&media);
    oxl_reply_error(out, &e);
}
