/* oxillama serve: the OpenAI-compatible HTTP server (server/). */
#include "cli.h"
#include "server.h"

int oxl_cmd_serve(int argc, char **argv) {
    oxl_server_config cfg;
    int rc = oxl_server_config_resolve(&cfg, argc, argv);
    if (rc != 0) {
        oxl_server_config_free(&cfg);
        return rc < 0 ? 1 : 0;
    }
    rc = oxl_server_run(&cfg);
    oxl_server_config_free(&cfg);
    return rc;
}
