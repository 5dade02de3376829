/* The route table: every URL the server answers, its handler, who may call it and whether it
 * needs the model; and the handlers, one file per API family. */
#ifndef OXL_SRV_ROUTES_H
#define OXL_SRV_ROUTES_H

#include "api.h"

#include <stdbool.h>
#include <stddef.h>

typedef enum auth_kind {
    AUTH_NONE,  /* probes: /health, /ready */
    AUTH_KEY,   /* an API key when keys are configured; rate limited */
    AUTH_ADMIN, /* an API key when keys are configured; not rate limited */
} auth_kind;

typedef struct oxl_route {
    const char *method;
    const char *path;
    bool prefix; /* path followed by "/..." matches too */
    oxl_handler fn;
    auth_kind auth;
    bool needs_model; /* 503 until the model is loaded */
    bool array_body;  /* POST: the body is a JSON array rather than an object (POST /lora-adapters) */
    bool anthropic;   /* errors in Anthropic's shape (the Messages API), else OpenAI's */
} oxl_route;

extern const oxl_route oxl_routes[];
extern const size_t oxl_n_routes;

/* True when url is r's path (or, for a prefix route, below it). */
bool oxl_route_matches(const oxl_route *r, const char *url);

void oxl_api_chat(oxl_srv *srv, const oxl_request *rq, oxl_reply *out);              /* api_chat.c */
void oxl_api_completions(oxl_srv *srv, const oxl_request *rq, oxl_reply *out);       /* api_completions.c */
void oxl_api_responses(oxl_srv *srv, const oxl_request *rq, oxl_reply *out);         /* api_responses.c */
void oxl_api_embeddings(oxl_srv *srv, const oxl_request *rq, oxl_reply *out);        /* api_embeddings.c */
void oxl_api_rerank(oxl_srv *srv, const oxl_request *rq, oxl_reply *out);            /* api_rerank.c */
void oxl_api_native_completion(oxl_srv *srv, const oxl_request *rq, oxl_reply *out); /* api_native.c */
void oxl_api_infill(oxl_srv *srv, const oxl_request *rq, oxl_reply *out);            /* api_native.c */
void oxl_api_props(oxl_srv *srv, const oxl_request *rq, oxl_reply *out);             /* api_props.c */
void oxl_api_apply_template(oxl_srv *srv, const oxl_request *rq, oxl_reply *out);    /* api_props.c */
/* api_anthropic.c: Anthropic's Messages API */
void oxl_api_messages(oxl_srv *srv, const oxl_request *rq, oxl_reply *out);
void oxl_api_count_tokens(oxl_srv *srv, const oxl_request *rq, oxl_reply *out);
/* api_info.c */
void oxl_api_models(oxl_srv *srv, const oxl_request *rq, oxl_reply *out);
void oxl_api_tokenize(oxl_srv *srv, const oxl_request *rq, oxl_reply *out);
void oxl_api_detokenize(oxl_srv *srv, const oxl_request *rq, oxl_reply *out);
/* api_status.c */
void oxl_api_health(oxl_srv *srv, const oxl_request *rq, oxl_reply *out);
void oxl_api_ready(oxl_srv *srv, const oxl_request *rq, oxl_reply *out);
void oxl_api_metrics(oxl_srv *srv, const oxl_request *rq, oxl_reply *out);
void oxl_api_slots(oxl_srv *srv, const oxl_request *rq, oxl_reply *out);
/* api_slot_state.c: POST /slots/{id}?action=save|restore|erase (--slot-save-path) */
void oxl_api_slot_action(oxl_srv *srv, const oxl_request *rq, oxl_reply *out);
/* api_lora.c: GET /lora-adapters (id, path, scale of each), POST /lora-adapters (global scales) */
void oxl_api_lora_list(oxl_srv *srv, const oxl_request *rq, oxl_reply *out);
void oxl_api_lora_set(oxl_srv *srv, const oxl_request *rq, oxl_reply *out);
/* api_webui.c: the web chat page, GET / and GET /webui/NAME (404 with --no-webui) */
void oxl_api_webui_index(oxl_srv *srv, const oxl_request *rq, oxl_reply *out);
void oxl_api_webui_file(oxl_srv *srv, const oxl_request *rq, oxl_reply *out);
/* ws.c: GET /v1/ws, the WebSocket upgrade (protocol in ws.h) */
void oxl_api_ws(oxl_srv *srv, const oxl_request *rq, oxl_reply *out);

#endif
