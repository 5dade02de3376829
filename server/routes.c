/* The route table (routes.h). */
#include "routes.h"

#include <string.h>

const oxl_route oxl_routes[] = {
    {"POST", "/v1/chat/completions", false, oxl_api_chat, AUTH_KEY, true, false, false},
    {"POST", "/v1/completions", false, oxl_api_completions, AUTH_KEY, true, false, false},
    {"POST", "/v1/responses", false, oxl_api_responses, AUTH_KEY, true, false, false},
    {"POST", "/v1/messages", false, oxl_api_messages, AUTH_KEY, true, false, true},
    {"POST", "/v1/messages/count_tokens", false, oxl_api_count_tokens, AUTH_KEY, true, false, true},
    {"POST", "/v1/embeddings", false, oxl_api_embeddings, AUTH_KEY, true, false, false},
    {"POST", "/v1/rerank", false, oxl_api_rerank, AUTH_KEY, true, false, false},
    {"POST", "/v1/reranking", false, oxl_api_rerank, AUTH_KEY, true, false, false},
    {"POST", "/rerank", false, oxl_api_rerank, AUTH_KEY, true, false, false},
    {"POST", "/reranking", false, oxl_api_rerank, AUTH_KEY, true, false, false},
    {"GET", "/v1/models", true, oxl_api_models, AUTH_KEY, false, false, false},
    {"POST", "/completion", false, oxl_api_native_completion, AUTH_KEY, true, false, false},
    {"POST", "/completions", false, oxl_api_native_completion, AUTH_KEY, true, false, false},
    {"POST", "/infill", false, oxl_api_infill, AUTH_KEY, true, false, false},
    {"GET", "/props", false, oxl_api_props, AUTH_KEY, true, false, false},
    {"POST", "/props", false, oxl_api_props, AUTH_KEY, true, false, false},
    {"POST", "/apply-template", false, oxl_api_apply_template, AUTH_KEY, true, false, false},
    {"GET", "/models", false, oxl_api_models, AUTH_KEY, false, false, false},
    {"POST", "/tokenize", false, oxl_api_tokenize, AUTH_KEY, true, false, false},
    {"POST", "/detokenize", false, oxl_api_detokenize, AUTH_KEY, true, false, false},
    {"GET", "/health", false, oxl_api_health, AUTH_NONE, false, false, false},
    {"GET", "/ready", false, oxl_api_ready, AUTH_NONE, false, false, false},
    {"GET", "/metrics", false, oxl_api_metrics, AUTH_ADMIN, false, false, false},
    {"GET", "/slots", false, oxl_api_slots, AUTH_ADMIN, true, false, false},
    {"POST", "/slots", true, oxl_api_slot_action, AUTH_ADMIN, true, false, false},
    {"GET", "/lora-adapters", false, oxl_api_lora_list, AUTH_ADMIN, true, false, false},
    {"POST", "/lora-adapters", false, oxl_api_lora_set, AUTH_ADMIN, true, true, false},
    {"GET", "/", false, oxl_api_webui_index, AUTH_NONE, false, false, false},
    {"GET", "/webui", true, oxl_api_webui_file, AUTH_NONE, false, false, false},
    {"GET", "/v1/ws", false, oxl_api_ws, AUTH_KEY, true, false, false},
};
const size_t oxl_n_routes = sizeof oxl_routes / sizeof oxl_routes[0];

bool oxl_route_matches(const oxl_route *r, const char *url) {
    size_t n = strlen(r->path);
    return !strncmp(url, r->path, n) && (url[n] == 0 || (r->prefix && url[n] == '/'));
}
