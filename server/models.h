/* Several models in one server (llama-server's router mode, tools/server/server-models.cpp, in one
 * process): the models of repeated -m (each with the --alias after it) and of --models-dir, each
 * with its own engine (model, context, scheduler and slots, LoRA adapters) loaded on first use; beyond
 * --models-max loaded, the least recently used with no request in flight is unloaded. A request's
 * "model" (the body's, else ?model=) selects one; without it the most recently used loaded model
 * serves it, or the first listed when none is loaded. With one -m and no --models-dir the server
 * keeps its one engine and accepts any model name (single-model mode, as llama-server). */
#ifndef OXL_SRV_MODELS_H
#define OXL_SRV_MODELS_H

#include "api.h"
#include "routes.h"

typedef enum oxl_model_state {
    OXL_MODEL_UNLOADED,
    OXL_MODEL_LOADING,
    OXL_MODEL_LOADED,
} oxl_model_state;

struct oxl_model_entry {
    oxl_srv *server; /* the server's own state, which holds the table */
    oxl_srv view;    /* the model's server state: its engine, id and file name, per-model counters */
    char *path;      /* the GGUF file (the first shard of a split) */
    oxl_model_state state;
    bool failed;   /* the last load failed (view.load_error says why) */
    bool stopped;  /* its scheduler is stopped (shutting down) */
    int busy;      /* requests holding the model: it is not unloaded while > 0 */
    uint64_t used; /* the table's clock at its last request (0: never used) */
};

/* http.c: loads srv's engine from the GGUF file path with srv->cfg's settings (model, context,
 * LoRA adapters, draft model, scheduler); 0, or -1 with srv->load_error set and printed (what was
 * made stays in srv for oxl_srv_free_engine). oxl_srv_free_engine frees the contexts, adapters and
 * models once the scheduler is freed. */
int oxl_srv_load_engine(oxl_srv *srv, const char *path);
void oxl_srv_free_engine(oxl_srv *srv);

/* Whether cfg asks for several models (--models-dir, or more than one -m). */
bool oxl_models_wanted(const oxl_server_config *cfg);

/* Builds the table of srv->cfg's models into srv->models (nothing is loaded): the -m files in order,
 * then the *.gguf files of --models-dir by name (of a split, the first shard "-00001-of-NNNNN.gguf"
 * only; its id drops that suffix); ids are --alias, else the file name without .gguf. Returns 0, or
 * -1 after printing a message naming the folder, file or id at fault (an unreadable folder, two
 * models with one id, no model at all, options that need one model: LoRA adapters, a draft model,
 * control vectors). */
int oxl_models_init(oxl_srv *srv);
/* Stops every loaded model's scheduler (finishing requests until deadline, monotonic seconds),
 * then frees the engines and the table. */
void oxl_models_stop(oxl_srv *srv, double deadline);
void oxl_models_free(oxl_srv *srv);

/* The state a request of route rt is handled on: srv itself when rt needs no model, else the
 * selected model's (loaded first when it is not: the request waits while another request loads
 * it). *out is held until oxl_models_release. name: the request's "model" (NULL: none). Returns 0,
 * or -1 with e set: model_not_found (404) listing the ids, the load's failure naming the file (500),
 * a load not done in time or the server stopping (503). */
int oxl_models_acquire(oxl_srv *srv, const oxl_route *rt, const char *name, oxl_srv **out, oxl_api_error *e);
/* Drops a request's hold on a model's state (nothing for srv itself); models beyond --models-max
 * that no request holds are unloaded, least recently used first. */
void oxl_models_release(oxl_srv *view);

/* GET /v1/models and /models with several models: every model with its status ({"value":
 * "loaded" | "loading" | "unloaded", "failed": true after a failed load}) and, when loaded, meta
 * (filled by meta()); /v1/models/{id} one of them, 404 for another id. */
void oxl_models_list(oxl_srv *srv, const char *one, oxl_reply *out, void (*meta)(oxl_srv *view, cJSON *m));

#endif
