/* GET and POST /lora-adapters, as llama-server's (tools/server/server-context.cpp, get_lora_adapters
 * and post_lora_adapters; README "GET /lora-adapters"): the adapters of --lora / --lora-scaled with
 * their ids (the order on the command line), files and global scales, and the global scales set
 * from [{"id": ID, "scale": S}, ...] (the adapters not listed get 0). A request's own "lora" field
 * replaces the global scales for that request alone. */
#include "api.h"
#include "generate.h"
#include "routes.h"

void oxl_api_lora_list(oxl_srv *srv, const oxl_request *rq, oxl_reply *out) {
    (void)rq;
    float scale[OXL_SRV_MAX_LORA];
    oxl_sched_lora_get(srv->sched, scale);
    cJSON *a = cJSON_CreateArray();
    for (int32_t i = 0; i < srv->n_lora; i++) {
        cJSON *o = cJSON_CreateObject();
        cJSON_AddNumberToObject(o, "id", i);
        cJSON_AddStringToObject(o, "path", srv->cfg->lora_path[i]);
        cJSON_AddNumberToObject(o, "scale", (double)scale[i]);
        cJSON_AddItemToArray(a, o);
    }
    oxl_reply_json(out, 200, a);
}

void oxl_api_lora_set(oxl_srv *srv, const oxl_request *rq, oxl_reply *out) {
    float scale[OXL_SRV_MAX_LORA];
    oxl_api_error e;
    if (oxl_req_lora_list(srv, rq->json, "body", scale, &e) < 0) {
        oxl_reply_error(out, &e);
        return;
    }
    oxl_sched_lora_set(srv->sched, scale);
    cJSON *o = cJSON_CreateObject();
    cJSON_AddBoolToObject(o, "success", true);
    oxl_reply_json(out, 200, o);
}
