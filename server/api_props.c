/* llama-server's GET /props, POST /props, POST /apply-template and GET /models (its
 * tools/server/server-context.cpp: get_props, post_props, post_apply_template, get_models). */
#include "api_native.h"
#include "generate.h"
#include "json_read.h"
#include "routes.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The template llama-server reports (and both servers render) for a model without one: ChatML. */
static const char chatml_jinja[] = "{%- for message in messages -%}\n"
                                   "  {{- '<|im_start|>' + message.role + '\n' + message.content + '<|im_end|>\n' -}}\n"
                                   "{%- endfor -%}\n"
                                   "{%- if add_generation_prompt -%}\n"
                                   "  {{- '<|im_start|>assistant\n' -}}\n"
                                   "{%- endif -%}";

static cJSON *token_text(oxl_srv *srv, oxl_token t) {
    char buf[256];
    int n = t >= 0 ? oxl_tok_piece(srv->model, t, buf, sizeof buf) : 0;
    return oxl_json_text(buf, (size_t)n);
}

void oxl_api_props(oxl_srv *srv, const oxl_request *rq, oxl_reply *out) {
    if (!strcmp(rq->method, "POST")) {
        /* llama-server without --props: changing properties is refused with 501 */
        cJSON *o = cJSON_CreateObject();
        cJSON *err = cJSON_AddObjectToObject(o, "error");
        cJSON_AddNumberToObject(err, "code", 501);
        cJSON_AddStringToObject(err, "message", "This server does not support changing global properties");
        cJSON_AddStringToObject(err, "type", "not_supported_error");
        oxl_reply_json(out, 501, o);
        return;
    }
    cJSON *o = cJSON_CreateObject();
    cJSON *dgs = cJSON_AddObjectToObject(o, "default_generation_settings");
    /* a request with no field: the defaults of every generating route */
    cJSON *empty = cJSON_CreateObject();
    api_req r = {.kind = API_COMPLETION};
    oxl_api_error e = {0};
    if (oxl_req_parse_common(srv, empty, &r, &e) == 0) {
        cJSON_AddItemToObject(dgs, "params", oxl_native_generation_settings(srv, &r));
    }
    oxl_gen_params_free(&r.gen);
    cJSON_Delete(empty);
    cJSON_AddNumberToObject(dgs, "n_ctx", oxl_sched_n_ctx_slot(srv->sched));
    cJSON_AddNumberToObject(o, "total_slots", oxl_ctx_n_seq_max(srv->ctx));
    cJSON_AddStringToObject(o, "model_alias", srv->model_id);
    cJSON_AddStringToObject(o, "model_path", srv->cfg->model ? srv->cfg->model : srv->model_file);
    cJSON *mod = cJSON_AddObjectToObject(o, "modalities");
    cJSON_AddBoolToObject(mod, "vision", srv->mmproj != NULL);
    cJSON_AddBoolToObject(mod, "video", false);
    cJSON_AddBoolToObject(mod, "audio", false);
    cJSON_AddBoolToObject(o, "endpoint_slots", true);
    cJSON_AddBoolToObject(o, "endpoint_props", false);
    cJSON_AddBoolToObject(o, "endpoint_metrics", true);
    const char *tmpl = srv->cfg->chat_template ? srv->cfg->chat_template : oxl_model_chat_template(srv->model);
    cJSON_AddStringToObject(o, "chat_template", tmpl ? tmpl : chatml_jinja);
    cJSON_AddItemToObject(o, "bos_token", token_text(srv, oxl_token_bos(srv->model)));
    cJSON_AddItemToObject(o, "eos_token", token_text(srv, oxl_token_eos(srv->model)));
    char build[96];
    snprintf(build, sizeof build, "oxillama %s", oxl_version());
    cJSON_AddStringToObject(o, "build_info", build);
    cJSON_AddBoolToObject(o, "is_sleeping", false);
    oxl_reply_json(out, 200, o);
}

/* {messages} -> {prompt}: the messages through the chat template, with the generation prompt. */
void oxl_api_apply_template(oxl_srv *srv, const oxl_request *rq, oxl_reply *out) {
    oxl_api_error e = {0};
    static const char *const fields[] = {"messages", "model", "chat_template_kwargs", NULL};
    if (oxl_req_check_field_list(rq->json, "/apply-template", fields, &e) < 0) {
        oxl_reply_error(out, &e);
        return;
    }
    const cJSON *m = oxl_json_field(rq->json, "messages");
    if (!m) {
        BAD(&e, "messages", "'messages' is required");
        oxl_reply_error(out, &e);
        return;
    }
    cJSON *msgs = oxl_req_normalize_messages(m, "messages", NULL, &e);
    char *json = msgs ? cJSON_PrintUnformatted(msgs) : NULL;
    cJSON_Delete(msgs);
    if (!json) {
        if (!e.status) {
            oxl_api_fail(&e, OXL_E_OUT_OF_MEMORY, NULL, "out of memory");
        }
        oxl_reply_error(out, &e);
        return;
    }
    char *text = NULL, *kwargs = NULL;
    oxl_error err = {0};
    if (oxl_req_template_kwargs(srv, rq->json, &kwargs, &e) < 0) {
        free(json);
        oxl_reply_error(out, &e);
        return;
    }
    int rc = oxl_chat_apply_template_kw(srv->model, srv->cfg->chat_template, json, NULL, true, kwargs, &text, &err);
    free(json);
    free(kwargs);
    if (rc != 0) {
        BAD(&e, "messages", "'messages': the chat template failed: %s", err.msg);
        oxl_reply_error(out, &e);
        return;
    }
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "prompt", text);
    free(text);
    oxl_reply_json(out, 200, o);
}
