/* The route table (routes.h). */
#include "routes.h"

#include <string.h>

const oxl_route oxl_routes[] = {
    {"POST", "/v1/chat/completions", false, oxl_api_chat, AUTH_KEY, true},
    {"POST", "/v1/completions", false, oxl_api_completions, AUTH_KEY, true},
    {"POST", "/v1/responses", false, oxl_api_responses, AUTH_KEY, true},
    {"POST", "/v1/embeddings", false, oxl_api_embeddings, AUTH_KEY, true},
    {"POST", "/v1/rerank", false, oxl_api_rerank, AUTH_KEY, true},
    {"POST", "/v1/reranking", false, oxl_api_rerank, AUTH_KEY, true},
    {"POST", "/rerank", false, oxl_api_rerank, AUTH_KEY, true},
    {"POST", "/reranking", false, oxl_api_rerank, AUTH_KEY, true},
    {"GET", "/v1/models", true, oxl_api_models, AUTH_KEY, false},
    {"POST", "/completion", false, oxl_api_native_completion, AUTH_KEY, true},
    {"POST", "/completions", false, oxl_api_native_completion, AUTH_KEY, true},
    {"POST", "/infill", false, oxl_api_infill, AUTH_KEY, true},
    {"GET", "/props", false, oxl_api_props, AUTH_KEY, true},
    {"POST", "/props", false, oxl_api_props, AUTH_KEY, true},
    {"POST", "/apply-template", false, oxl_api_apply_template, AUTH_KEY, true},
    {"GET", "/models", false, oxl_api_models, AUTH_KEY, false},
    {"POST", "/tokenize", false, oxl_api_tokenize, AUTH_KEY, true},
    {"POST", "/detokenize", false, oxl_api_detokenize, AUTH_KEY, true},
    {"GET", "/health", false, oxl_api_health, AUTH_NONE, false},
    {"GET", "/ready", false, oxl_api_ready, AUTH_NONE, false},
    {"GET", "/metrics", false, oxl_api_metrics, AUTH_ADMIN, false},
    {"GET", "/slots", false, oxl_api_slots, AUTH_ADMIN, true},
    {"POST", "/slots", true, oxl_api_slot_action, AUTH_ADMIN, true},
};
const size_t oxl_n_routes = sizeof oxl_routes / sizeof oxl_routes[0];

bool oxl_route_matches(const oxl_route *r, const char *url) {
    size_t n = strlen(r->path);
    return !strncmp(url, r->path, n) && (url[n] == 0 || (r->prefix && url[n] == '/'));
}
