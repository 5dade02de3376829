/* The server's error kinds: one table of (HTTP status, OpenAI error type, code), referenced by
 * name at every place a request fails, and the OpenAI error object a failure becomes. */
#ifndef OXL_SRV_API_ERROR_H
#define OXL_SRV_API_ERROR_H

#include <cjson/cJSON.h>

typedef enum oxl_err_kind {
    OXL_E_INVALID_VALUE,       /* 400 a field's value is out of range or malformed */
    OXL_E_INVALID_TYPE,        /* 400 a field has the wrong JSON type */
    OXL_E_INVALID_JSON,        /* 400 the body is not a JSON object */
    OXL_E_INVALID_UTF8,        /* 400 the body is not UTF-8 */
    OXL_E_CONTEXT_EXCEEDED,    /* 400 the prompt does not fit a slot's context */
    OXL_E_MODEL_NOT_SUPPORTED, /* 400 the route needs what the model lacks (a decoder) */
    OXL_E_INVALID_API_KEY,     /* 401 */
    OXL_E_MODEL_NOT_FOUND,     /* 404 the request names another model */
    OXL_E_UNKNOWN_URL,         /* 404 */
    OXL_E_METHOD_NOT_ALLOWED,  /* 405 */
    OXL_E_REQUEST_RUNNING,     /* 409 a WebSocket request while the socket's previous one runs */
    OXL_E_REQUEST_TOO_LARGE,   /* 413 --max-body */
    OXL_E_UPGRADE_REQUIRED,    /* 426 GET /v1/ws without a WebSocket handshake */
    OXL_E_RATE_LIMITED,        /* 429 --rate-limit */
    OXL_E_TOO_MANY_HEADERS,    /* 431 --max-headers */
    OXL_E_CLIENT_CLOSED,       /* 499 the client went away before the reply */
    OXL_E_OUT_OF_MEMORY,       /* 500 */
    OXL_E_GENERATION_FAILED,   /* 500 the scheduler reported a failure */
    OXL_E_MODEL_LOAD_FAILED,   /* 500 the requested model could not be loaded (several models) */
    OXL_E_OVERLOADED,          /* 503 the request queue is full */
    OXL_E_SHUTTING_DOWN,       /* 503 SIGTERM seen: no new work */
    OXL_E_MODEL_LOADING,       /* 503 the model is not loaded yet */
    OXL_E_NOT_READY_SHUTTING,  /* 503 /ready while shutting down */
    OXL_E_NOT_SUPPORTED,       /* 501 the server was not started with what the route needs */
    OXL_E_COUNT
} oxl_err_kind;

/* An OpenAI error object: {"error": {"message", "type", "param", "code"}}. */
typedef struct oxl_api_error {
    int status;
    const char *type; /* invalid_request_error, authentication_error, ... */
    const char *code; /* NULL renders as null */
    char param[96];   /* empty renders as null */
    char msg[640];
    int retry_after; /* seconds; > 0 adds Retry-After */
    /* a context overflow (OXL_E_CONTEXT_EXCEEDED) also carries llama-server's n_prompt_tokens and
     * n_ctx in the error object (0: absent) */
    int n_prompt_tokens, n_ctx;
} oxl_api_error;

/* Fills e with kind's status, type and code, param (may be NULL) and the printf-style message;
 * returns -1 so that callers can `return oxl_api_fail(...)`. */
int oxl_api_fail(oxl_api_error *e, oxl_err_kind kind, const char *param, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* Shorthands for the two most common kinds. */
#define BAD(e, param, ...) oxl_api_fail(e, OXL_E_INVALID_VALUE, param, __VA_ARGS__)
#define BAD_TYPE(e, param, ...) oxl_api_fail(e, OXL_E_INVALID_TYPE, param, __VA_ARGS__)

/* {"error": {"message", "type", "param", "code"}} for e (the caller owns the result). */
cJSON *oxl_api_error_json(const oxl_api_error *e);
/* Anthropic's error object for e: {"type": "error", "error": {"type", "message"}}, the type by HTTP
 * status as Anthropic names its errors (invalid_request_error, authentication_error, not_found_error,
 * request_too_large, rate_limit_error, api_error, overloaded_error); the caller owns the result. */
cJSON *oxl_api_error_anthropic_json(const oxl_api_error *e);

#endif
