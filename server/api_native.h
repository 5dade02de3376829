/* What llama-server's own routes share (api_native.c, api_props.c). */
#ifndef OXL_SRV_API_NATIVE_H
#define OXL_SRV_API_NATIVE_H

#include "generate.h"

/* llama-server's generation_settings object of the parsed request r (task_params::to_json). */
cJSON *oxl_native_generation_settings(oxl_srv *srv, const api_req *r);

#endif
