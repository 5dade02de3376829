/* The table of error kinds (api_error.h). */
#include "api_error.h"

#include <stdarg.h>
#include <stdio.h>

static const struct {
    int status;
    const char *type;
    const char *code; /* NULL renders as null */
} kinds[OXL_E_COUNT] = {
    [OXL_E_INVALID_VALUE] = {400, "invalid_request_error", "invalid_value"},
    [OXL_E_INVALID_TYPE] = {400, "invalid_request_error", "invalid_type"},
    [OXL_E_INVALID_JSON] = {400, "invalid_request_error", "invalid_json"},
    [OXL_E_INVALID_UTF8] = {400, "invalid_request_error", "invalid_utf8"},
    [OXL_E_CONTEXT_EXCEEDED] = {400, "invalid_request_error", "context_length_exceeded"},
    [OXL_E_MODEL_NOT_SUPPORTED] = {400, "invalid_request_error", "model_not_supported"},
    [OXL_E_INVALID_API_KEY] = {401, "invalid_request_error", "invalid_api_key"},
    [OXL_E_MODEL_NOT_FOUND] = {404, "invalid_request_error", "model_not_found"},
    [OXL_E_UNKNOWN_URL] = {404, "invalid_request_error", "unknown_url"},
    [OXL_E_METHOD_NOT_ALLOWED] = {405, "invalid_request_error", "method_not_allowed"},
    [OXL_E_REQUEST_RUNNING] = {409, "invalid_request_error", "request_in_progress"},
    [OXL_E_REQUEST_TOO_LARGE] = {413, "invalid_request_error", "request_too_large"},
    [OXL_E_UPGRADE_REQUIRED] = {426, "invalid_request_error", "upgrade_required"},
    [OXL_E_RATE_LIMITED] = {429, "rate_limit_error", "rate_limit_exceeded"},
    [OXL_E_TOO_MANY_HEADERS] = {431, "invalid_request_error", "too_many_headers"},
    [OXL_E_CLIENT_CLOSED] = {499, "invalid_request_error", "client_closed_request"},
    [OXL_E_OUT_OF_MEMORY] = {500, "server_error", NULL},
    [OXL_E_GENERATION_FAILED] = {500, "server_error", "generation_failed"},
    [OXL_E_MODEL_LOAD_FAILED] = {500, "server_error", "model_load_failed"},
    [OXL_E_OVERLOADED] = {503, "server_error", "server_overloaded"},
    [OXL_E_SHUTTING_DOWN] = {503, "server_error", "server_shutting_down"},
    [OXL_E_MODEL_LOADING] = {503, "unavailable_error", "model_loading"},
    [OXL_E_NOT_READY_SHUTTING] = {503, "unavailable_error", "server_shutting_down"},
    [OXL_E_NOT_SUPPORTED] = {501, "not_supported_error", "not_supported"},
};

int oxl_api_fail(oxl_api_error *e, oxl_err_kind kind, const char *param, const char *fmt, ...) {
    const int k = kind >= 0 && kind < OXL_E_COUNT ? (int)kind : (int)OXL_E_OUT_OF_MEMORY;
    e->status = kinds[k].status;
    e->type = kinds[k].type;
    e->code = kinds[k].code;
    e->retry_after = 0;
    if (kind != OXL_E_CONTEXT_EXCEEDED) {
        e->n_prompt_tokens = e->n_ctx = 0;
    }
    snprintf(e->param, sizeof e->param, "%s", param ? param : "");
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(e->msg, sizeof e->msg, fmt, ap);
    va_end(ap);
    return -1;
}

cJSON *oxl_api_error_json(const oxl_api_error *e) {
    cJSON *o = cJSON_CreateObject();
    cJSON *err = cJSON_AddObjectToObject(o, "error");
    cJSON_AddStringToObject(err, "message", e->msg);
    cJSON_AddStringToObject(err, "type", e->type ? e->type : "server_error");
    if (e->param[0]) {
        cJSON_AddStringToObject(err, "param", e->param);
    } else {
        cJSON_AddNullToObject(err, "param");
    }
    if (e->code) {
        cJSON_AddStringToObject(err, "code", e->code);
    } else {
        cJSON_AddNullToObject(err, "code");
    }
    if (e->n_prompt_tokens > 0) {
        cJSON_AddNumberToObject(err, "n_prompt_tokens", e->n_prompt_tokens);
        cJSON_AddNumberToObject(err, "n_ctx", e->n_ctx);
    }
    return o;
}

cJSON *oxl_api_error_anthropic_json(const oxl_api_error *e) {
    static const struct {
        int status;
        const char *type;
    } types[] = {{400, "invalid_request_error"}, {401, "authentication_error"},
                 {403, "permission_error"},      {404, "not_found_error"},
                 {405, "invalid_request_error"}, {413, "request_too_large"},
                 {429, "rate_limit_error"},      {431, "invalid_request_error"},
                 {499, "invalid_request_error"}, {501, "api_error"},
                 {503, "overloaded_error"}};
    const char *type = "api_error";
    for (size_t i = 0; i < sizeof types / sizeof types[0]; i++) {
        if (types[i].status == e->status) {
            type = types[i].type;
        }
    }
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "type", "error");
    cJSON *err = cJSON_AddObjectToObject(o, "error");
    cJSON_AddStringToObject(err, "type", type);
    cJSON_AddStringToObject(err, "message", e->msg);
    return o;
}
