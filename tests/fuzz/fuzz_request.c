/* libFuzzer harness for the server's request parsing (server/api_*.c, server/generate.c): a JSON
 * body through the route handlers of /v1/chat/completions, /v1/completions, /v1/responses, /v1/embeddings,
 * /tokenize, /detokenize, /v1/models/<id>, /v1/rerank (the server configured with --rerank), and
 * llama-server's /completion, /apply-template, POST /props and /infill (a refusal: stories260K has no
 * fill-in-the-middle tokens), and Anthropic's /v1/messages and /v1/messages/count_tokens, and the
 * messages of the WebSocket route GET /v1/ws (server/ws_message.c: the {"route", "body"} envelope
 * and its dispatch to the handlers above), and GET /webui/<name> (the web page's files), with no HTTP
 * server and no generation.
 *
 * Set-up (once): models/stories260K.gguf loaded, a context of 4 slots, golden/mm's LLaVA-1.5
 * projector as --mmproj (chat image_url and Responses input_image parts: data: URIs, /completion's
 * prompt objects with multimodal_data, the Messages API's image blocks: nettle's base64 and SHA-256,
 * the image decoders and the vision tower run; stories260K has the projector's n_embd 64), and a
 * scheduler that is started and at once stopped. A handler therefore runs everything a request does before its job
 * is queued (field checks, stop strings, logit_bias, message normalization, the chat template,
 * tokenization, token-id prompts, context checks) and then gets the 503 a stopping server gives,
 * freeing all it built; LeakSanitizer sees anything it loses.
 *
 * The same bodies and model ids also go through the model selection of a server with several
 * models (server/models.c: two ids for stories260K, none loaded): the body's "model" selects one
 * (or the default), an unknown name gets a 404 naming the ids, and /v1/models/<id> lists one
 * model's status. Selection is checked without loading (the /metrics route's), so no generation
 * can start.
 *
 * Input layout: one route byte (mod 16), then the body. As in server/http.c, the body must parse
 * as a JSON object (cJSON) to reach a handler; the models route takes it as the path's id instead,
 * the WebSocket route (14) as a whole client message, any bytes, and the web page's route (15) as
 * the name of a file under /webui/ (200 with the file, or a 404 error object).
 * Contracts checked: the reply is a JSON body (never a stream here) with a status of 200, 400, 404,
 * 413, 501 or 503 (a WebSocket message: never 200), and every non-200 body is an error object with a message: OpenAI's,
 * or Anthropic's
 * ({"type": "error", "error": {"type", "message"}}) on the Messages API routes. */
#include "models.h"
#include "routes.h"
#include "ws.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CHECK(cond)                                                                                                    \
    do {                                                                                                               \
        if (!(cond)) {                                                                                                 \
            fprintf(stderr, "%s:%d: invariant failed: %s\n", __FILE__, __LINE__, #cond);                               \
            __builtin_trap();                                                                                          \
        }                                                                                                              \
    } while (0)

static oxl_server_config g_cfg;
static oxl_srv g_srv;
static oxl_server_config g_multi_cfg;
static oxl_srv g_multi; /* several models: the table only */
static const oxl_route *g_metrics_route;

/* Model selection on g_multi for the request's "model" (a string, else none). */
static void check_select(const cJSON *json) {
    const cJSON *mj = cJSON_GetObjectItemCaseSensitive(json, "model");
    oxl_srv *view = NULL;
    oxl_api_error e = {0};
    if (oxl_models_acquire(&g_multi, g_metrics_route, cJSON_IsString(mj) ? mj->valuestring : NULL, &view, &e) == 0) {
        CHECK(view != NULL && view->entry != NULL && !atomic_load(&view->ready));
        oxl_models_release(view);
    } else {
        CHECK(e.status == 404 && e.msg[0] != '\0' && strstr(e.msg, "'alpha'") && strstr(e.msg, "'beta'"));
    }
}

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void)argc;
    (void)argv;
    g_cfg.model = OXL_SOURCE_DIR "/models/stories260K.gguf";
    g_cfg.n_ctx = 1024;
    g_cfg.n_parallel = 4;
    g_cfg.n_threads = 1;
    g_cfg.n_batch = 512;
    g_cfg.queue_size = 64;
    g_cfg.rerank = true;
    g_srv.cfg = &g_cfg;
    oxl_error err = {0};
    oxl_model_params mp = oxl_model_default_params();
    g_srv.model = oxl_model_load(g_cfg.model, &mp, &err);
    oxl_ctx_params cp = oxl_ctx_default_params();
    cp.n_ctx = g_cfg.n_ctx;
    cp.n_seq_max = g_cfg.n_parallel;
    cp.n_threads = g_cfg.n_threads;
    cp.n_batch = g_cfg.n_batch;
    g_srv.ctx = g_srv.model ? oxl_ctx_new(g_srv.model, &cp, &err) : NULL;
    g_srv.sched =
        g_srv.ctx ? oxl_sched_start(g_srv.model, g_srv.ctx, g_cfg.queue_size, g_cfg.n_batch, &cp, NULL, &err) : NULL;
    if (!g_srv.sched) {
        fprintf(stderr, "fuzz_request: %s\n", err.msg);
        return 1;
    }
    oxl_sched_stop(g_srv.sched, 0); /* refuses every job from now on */
    g_cfg.mmproj = OXL_SOURCE_DIR "/golden/mm/llava15.mmproj.gguf";
    g_srv.mmproj = oxl_mmproj_load(g_cfg.mmproj, g_srv.model, &err);
    oxl_ctx_params mcp = oxl_ctx_default_params();
    mcp.n_ctx = 64;
    mcp.n_seq_max = 1;
    mcp.n_threads = 1;
    g_srv.mm_ctx = g_srv.mmproj ? oxl_ctx_new(g_srv.model, &mcp, &err) : NULL;
    if (!g_srv.mm_ctx) {
        fprintf(stderr, "fuzz_request: --mmproj: %s\n", err.msg);
        return 1;
    }
    pthread_mutex_init(&g_srv.mm_mu, NULL);
    atomic_store(&g_srv.ready, true);
    atomic_store(&g_srv.stopping, true);
    snprintf(g_srv.model_file, sizeof g_srv.model_file, "stories260K.gguf");
    snprintf(g_srv.model_id, sizeof g_srv.model_id, "stories260K.gguf");
    static char *paths[] = {OXL_SOURCE_DIR "/models/stories260K.gguf", OXL_SOURCE_DIR "/models/stories260K.gguf"};
    static char *ids[] = {"alpha", "beta"};
    g_multi_cfg = g_cfg;
    g_multi_cfg.models[0] = paths[0];
    g_multi_cfg.models[1] = paths[1];
    g_multi_cfg.aliases[0] = ids[0];
    g_multi_cfg.aliases[1] = ids[1];
    g_multi_cfg.n_models = 2;
    g_multi_cfg.models_max = 1;
    g_multi_cfg.log_level = 0;
    g_multi.cfg = &g_multi_cfg;
    for (size_t i = 0; i < oxl_n_routes; i++) {
        if (oxl_routes[i].fn == oxl_api_metrics) {
            g_metrics_route = &oxl_routes[i];
        }
    }
    if (!g_metrics_route || oxl_models_init(&g_multi) != 0) {
        fprintf(stderr, "fuzz_request: cannot build the model table\n");
        return 1;
    }
    return 0;
}

static void check_reply(oxl_reply *rp, bool anthropic) {
    CHECK(rp->stream == NULL);
    CHECK(rp->status == 200 || rp->status == 400 || rp->status == 404 || rp->status == 413 || rp->status == 501 ||
          rp->status == 503);
    CHECK(rp->body != NULL);
    cJSON *j = cJSON_ParseWithLength(rp->body, rp->len);
    CHECK(cJSON_IsObject(j));
    if (rp->status != 200) {
        const cJSON *e = cJSON_GetObjectItemCaseSensitive(j, "error");
        const cJSON *m = cJSON_GetObjectItemCaseSensitive(e, "message");
        CHECK(cJSON_IsString(m) && m->valuestring[0] != '\0');
        const cJSON *t = cJSON_GetObjectItemCaseSensitive(anthropic ? j : e, "type");
        CHECK(cJSON_IsString(t) && (!anthropic || !strcmp(t->valuestring, "error")));
    }
    cJSON_Delete(j);
    free(rp->body);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    static const struct {
        const char *path;
        oxl_handler fn;
    } routes[] = {
        {"/v1/chat/completions", oxl_api_chat},
        {"/v1/completions", oxl_api_completions},
        {"/v1/responses", oxl_api_responses},
        {"/v1/embeddings", oxl_api_embeddings},
        {"/tokenize", oxl_api_tokenize},
        {"/detokenize", oxl_api_detokenize},
        {"/v1/models", oxl_api_models},
        {"/v1/rerank", oxl_api_rerank},
        {"/completion", oxl_api_native_completion},
        {"/apply-template", oxl_api_apply_template},
        {"/props", oxl_api_props},
        {"/infill", oxl_api_infill},
        {"/v1/messages", oxl_api_messages},
        {"/v1/messages/count_tokens", oxl_api_count_tokens},
        {"/v1/ws", NULL},               /* a WebSocket message */
        {"/webui", oxl_api_webui_file}, /* the web page's files: the body is the file name */
    };
    if (size < 1)
        return 0;
    size_t route = data[0] % (sizeof routes / sizeof routes[0]);
    size_t len = size - 1;
    char *body = malloc(len + 1);
    CHECK(body != NULL);
    memcpy(body, data + 1, len);
    body[len] = '\0';
    oxl_reply rp = {0};
    if (!routes[route].fn) {
        const oxl_route *rt = oxl_ws_request(&g_srv, body, len, -1, &rp);
        CHECK(rp.status != 200);
        check_reply(&rp, rt && rt->anthropic);
    } else if (routes[route].fn == oxl_api_webui_file) {
        char *path = malloc(len + sizeof "/webui/");
        CHECK(path != NULL);
        memcpy(path, "/webui/", sizeof "/webui/" - 1);
        memcpy(path + sizeof "/webui/" - 1, body, len + 1);
        oxl_request rq = {.method = "GET", .path = path, .json = NULL, .fd = -1};
        oxl_api_webui_file(&g_srv, &rq, &rp);
        CHECK(rp.status == 200 || rp.status == 404);
        if (rp.status == 200) {
            CHECK(rp.body != NULL && rp.len > 0 && rp.ctype != NULL);
            free(rp.body);
        } else {
            check_reply(&rp, false);
        }
        free(path);
    } else if (routes[route].fn == oxl_api_models) {
        char *path = malloc(len + sizeof "/v1/models/");
        CHECK(path != NULL);
        memcpy(path, "/v1/models/", sizeof "/v1/models/" - 1);
        memcpy(path + sizeof "/v1/models/" - 1, body, len + 1);
        oxl_request rq = {.method = "GET", .path = path, .json = NULL, .fd = -1};
        oxl_api_models(&g_srv, &rq, &rp);
        check_reply(&rp, false);
        memset(&rp, 0, sizeof rp);
        oxl_api_models(&g_multi, &rq, &rp);
        check_reply(&rp, false);
        free(path);
    } else {
        cJSON *json = cJSON_ParseWithLengthOpts(body, len, NULL, false);
        if (cJSON_IsObject(json)) {
            check_select(json);
            oxl_request rq = {.method = "POST", .path = routes[route].path, .json = json, .fd = -1};
            routes[route].fn(&g_srv, &rq, &rp);
            check_reply(&rp, routes[route].fn == oxl_api_messages || routes[route].fn == oxl_api_count_tokens);
        }
        cJSON_Delete(json);
    }
    free(body);
    return 0;
}
