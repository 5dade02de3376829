/* oxillama serve: an OpenAI-compatible HTTP server over the library API (include/oxillama.h).
 *
 * Files by role (headers include downwards only: api_error.h < api.h < json_read.h, sse.h,
 * toolcall.h, generate.h, routes.h; none includes http.c's or a handler's):
 *   config.c        the option table: defaults < JSON config file < OXILLAMA_* environment < flags
 *   http.c          transport: libmicrohttpd daemon, API keys, CORS, limits, rate limits, life cycle
 *   routes.c        the route table: URL, method, handler, auth, whether the model is needed
 *   api_error.c     the one table of error kinds (status, type, code) and the OpenAI error object
 *   reply.c         JSON replies, error replies, ids
 *   sse.c           server-sent event frames (or, for ws.c, one JSON line per event); filling and
 *                   freeing a stream; noticing a client that went away
 *   ws.c            GET /v1/ws: the WebSocket handshake (libmicrohttpd's upgrade, nettle) and the
 *                   session (wslay frames); ws_message.c: its {"route", "body"} messages (ws.h)
 *   json_read.c     request field readers; JSON text from model bytes
 *   toolcall.c      tool calls in generated text
 *   generate.c      what generating routes share: fields, prompts (chat template through the
 *                   public oxl_chat_apply_template), jobs, usage, logprobs, run
 *   stream_chunks.c chat.completion.chunk and text_completion streams
 *   api_chat.c, api_completions.c, api_responses.c, api_embeddings.c: one API family each
 *   api_info.c      /v1/models, /tokenize, /detokenize; api_status.c: /health /ready /metrics /slots
 *   api_webui.c     the web chat page at / from server/webui/, embedded by the build (webui.h)
 *   scheduler.c     one scheduler thread: slots, bounded queue, continuous batching, prefix reuse
 *   models.c        several models: each its own engine, loaded on first use, least recently used
 *                   unloaded beyond --models-max; the request's "model" selects one
 * The server uses the library through include/oxillama.h only.
 * Behaviour follows llama.cpp's tools/server (slots, /slots, /health, /tokenize, /detokenize) and
 * the OpenAI REST API reference for the /v1 routes. */
#ifndef OXL_SERVER_H
#define OXL_SERVER_H

#include "oxillama.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define OXL_SRV_MAX_KEYS 64
#define OXL_SRV_KEY_MAX 256 /* bytes of one API key */
#define OXL_SRV_MAX_LORA 16 /* LoRA adapters (--lora, --lora-scaled) */

#define OXL_SRV_MAX_MODELS 64 /* models served at once: repeated -m, --models-dir */

typedef struct oxl_server_config {
    char *model;                  /* -m: GGUF file */
    char *mmproj;                 /* --mmproj: the model's vision projector GGUF (NULL: no images) */
    int image_min_tokens;         /* --image-min-tokens / --image-max-tokens: oxl_mmproj_params (0: the */
    int image_max_tokens;         /* projector's defaults) */
    char *alias;                  /* --alias: the model id of /v1/models (default: the file name) */
    char *host;                   /* --host: address to bind (default 127.0.0.1) */
    int port;                     /* --port (default 8080; 0 = any free port, printed on stderr) */
    int n_ctx;                    /* -c: KV cache tokens for all slots together (0 = training context per slot) */
    int n_parallel;               /* -np: slots decoded together (default 4) */
    int n_threads;                /* -t: compute threads (0 = physical cores) */
    int n_batch;                  /* -b: most tokens per forward pass (default 512) */
    int queue_size;               /* --queue-size: requests waiting for a slot before 503 (default 64) */
    int max_connections;          /* --max-connections: open HTTP connections (default 128) */
    size_t max_body;              /* --max-body: request body bytes before 413 (default 1 MiB) */
    int max_headers;              /* --max-headers: request headers before 431 (default 64) */
    int idle_timeout;             /* --idle-timeout: seconds a connection may stay silent, and a request (line, headers,
                                     body) may take to arrive (default 60) */
    int shutdown_timeout;         /* --shutdown-timeout: seconds in-flight requests get after SIGTERM (default 10) */
    double rate_limit;            /* --rate-limit: requests per minute per API key (0 = off) */
    int rate_burst;               /* --rate-burst: token bucket size (default: one minute's worth, at least 1) */
    char *cors_origin;            /* --cors-origin: Access-Control-Allow-Origin value (default: no CORS) */
    char *api_key_file;           /* --api-key-file: one key per line */
    char *slot_save_path;         /* --slot-save-path: folder of slot state files (NULL: slot actions off) */
    char *keys[OXL_SRV_MAX_KEYS]; /* --api-key (repeatable) plus the keys of api_key_file */
    int n_keys;
    /* set by the CLI (src/cli/serve.c) from the options serve shares with run; the defaults are
     * oxl_model_default_params and oxl_ctx_default_params */
    oxl_kv_type type_k, type_v; /* -ctk, -ctv */
    oxl_flash_attn flash_attn;  /* -fa */
    bool no_mmap, mlock, no_repack;
    int n_gpu_layers, main_gpu; /* -ngl, --device (oxl_model_params) */
    char *chat_template;        /* --chat-template, or the text of --chat-template-file (NULL: the model's) */
    bool reasoning_none;        /* --reasoning-format none: thoughts stay in content (default deepseek) */
    int log_level;              /* 0 --log-disable: errors only (no request log); 1 default; 2 -v */
    bool log_json;              /* --log-format json: the request log as one JSON object per line */
    bool ctx_shift;             /* --context-shift (default off, as llama-server) */
    int n_keep;                 /* --keep: tokens a context shift keeps (-1: the prompt; BOS added) */
    bool help;
    bool rerank;   /* --rerank, --reranking: /v1/rerank with the model's classifier head (rank pooling) */
    bool no_webui; /* --no-webui: no web page at / (404), as llama-server */

    int reasoning_budget; /* --reasoning-budget: -1 unrestricted (default), 0 no thinking, N > 0 tokens */
    const char *reasoning_budget_message; /* --reasoning-budget-message (borrowed; NULL: none) */
    /* called on the server's context once it is made (run's --lora and --control-vector options,
     * src/cli/serve.c); non-zero: the server does not start. NULL: none */
    int (*setup_ctx)(void *user, const oxl_model *model, oxl_ctx *ctx);
    void *setup_user;
    /* LoRA adapters (--lora, --lora-scaled; set by src/cli/serve.c, the strings are not owned):
     * loaded by the server as ids 0..n_lora-1 with these global scales, or scale 0 each with
     * lora_init_without_apply (--lora-init-without-apply), as llama-server */
    const char *lora_path[OXL_SRV_MAX_LORA];
    float lora_scale[OXL_SRV_MAX_LORA];
    int n_lora;
    bool lora_init_without_apply;
    /* speculative decoding (run's options, set by src/cli/serve.c; model_draft not owned): a draft
     * model (-md) and/or n-gram drafting (--spec-type ngram-simple, --spec-ngram-simple-size-n/-m),
     * and the per-request defaults of speculative.n_max / n_min / p_min (--draft-max, --draft-min,
     * --draft-p-min) */
    const char *model_draft;
    bool spec_ngram;
    int ngram_size_n, ngram_size_m;
    int draft_max, draft_min;
    float draft_p_min;
    /* several models (server/models.h): every -m FILE in order, each with the --alias that follows
     * it (NULL: the file name without .gguf); model and alias above are the first of them */
    char *models[OXL_SRV_MAX_MODELS];
    char *aliases[OXL_SRV_MAX_MODELS];
    int n_models;
    char *models_dir; /* --models-dir: serve every *.gguf there (NULL: none) */
    int models_max;   /* --models-max: models loaded at once, the least recently used unloaded first
                       * (default 4; 0 = no limit) */
} oxl_server_config;

/* Resolves the configuration in the order defaults < config file (--config or OXILLAMA_CONFIG) <
 * environment (OXILLAMA_*) < command-line flags. argv[0] is the verb. Returns 0, 1 when --help was
 * asked (usage printed), or -1 after printing a message that names the flag, variable or JSON
 * field at fault. Release with oxl_server_config_free. */
int oxl_server_config_resolve(oxl_server_config *cfg, int argc, char **argv);
void oxl_server_config_free(oxl_server_config *cfg);
void oxl_server_config_usage(void);

/* Runs the server until SIGINT or SIGTERM: binds, loads the model (/ready answers 503 until then),
 * serves, then stops accepting, lets in-flight requests finish up to shutdown_timeout and returns
 * 0; returns 1 when the socket cannot be bound or the model cannot be loaded. */
int oxl_server_run(const oxl_server_config *cfg);

#endif
