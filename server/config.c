/* oxillama serve's configuration: one table of options, each settable as a flag, an OXILLAMA_*
 * environment variable and a member of a JSON config file, resolved as
 * defaults < config file < environment < flags. */
#include "server.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <limits.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef enum opt_kind { OPT_STR, OPT_INT, OPT_SIZE, OPT_DOUBLE, OPT_KEY } opt_kind;

typedef struct opt {
    const char *flag; /* long flag */
    const char *alt;  /* short flag or NULL */
    const char *name; /* JSON member; the variable is OXILLAMA_ + its upper case */
    opt_kind kind;
    size_t offset; /* into oxl_server_config (unused by OPT_KEY) */
    long long min, max;
    const char *help;
} opt;

#define OFF(f) offsetof(oxl_server_config, f)
static const opt opts[] = {
    {"--model", "-m", "model", OPT_STR, OFF(model), 0, 0, "GGUF model file; repeat to serve several"},
    {"--alias", NULL, "alias", OPT_STR, OFF(alias), 0, 0,
     "model id of the -m before it, shown by /v1/models (default: file name)"},
    {"--models-dir", NULL, "models_dir", OPT_STR, OFF(models_dir), 0, 0,
     "serve every *.gguf of this folder, each loaded on first use"},
    {"--models-max", NULL, "models_max", OPT_INT, OFF(models_max), 0, OXL_SRV_MAX_MODELS,
     "models loaded at once with several models (default 4; 0 = no limit)"},
    {"--mmproj", NULL, "mmproj", OPT_STR, OFF(mmproj), 0, 0,
     "vision projector GGUF of the model: chat messages may hold images (one model only)"},
    {"--image-min-tokens", NULL, "image_min_tokens", OPT_INT, OFF(image_min_tokens), 0, 1 << 20,
     "fewest tokens an image takes, dynamic-resolution projectors only (Qwen-VL; 0 = the projector's, 8)"},
    {"--image-max-tokens", NULL, "image_max_tokens", OPT_INT, OFF(image_max_tokens), 0, 1 << 20,
     "most tokens an image takes, dynamic-resolution projectors only (Qwen-VL; 0 = the projector's, 4096)"},
    {"--host", NULL, "host", OPT_STR, OFF(host), 0, 0, "address to bind (default 127.0.0.1)"},
    {"--port", NULL, "port", OPT_INT, OFF(port), 0, 65535, "TCP port (default 8080; 0 = any free port)"},
    {"--ctx-size", "-c", "ctx_size", OPT_INT, OFF(n_ctx), 0, INT_MAX,
     "KV cache tokens for all slots (0 = training context per slot)"},
    {"--parallel", "-np", "parallel", OPT_INT, OFF(n_parallel), 1, 256, "slots decoded together (default 4)"},
    {"--threads", "-t", "threads", OPT_INT, OFF(n_threads), 0, 1024, "compute threads (0 = physical cores)"},
    {"--batch-size", "-b", "batch_size", OPT_INT, OFF(n_batch), 1, 1 << 20,
     "most tokens per forward pass (default 512)"},
    {"--queue-size", NULL, "queue_size", OPT_INT, OFF(queue_size), 1, 1 << 20,
     "requests waiting for a slot before 503 (default 64)"},
    {"--max-connections", NULL, "max_connections", OPT_INT, OFF(max_connections), 1, 1 << 16,
     "open connections (default 128)"},
    {"--max-body", NULL, "max_body", OPT_SIZE, OFF(max_body), 1, 1LL << 40,
     "request body bytes before 413 (default 1048576)"},
    {"--max-headers", NULL, "max_headers", OPT_INT, OFF(max_headers), 1, 10000,
     "request headers before 431 (default 64)"},
    {"--idle-timeout", NULL, "idle_timeout", OPT_INT, OFF(idle_timeout), 1, 86400,
     "seconds a silent connection is kept, and a request may take to arrive (default 60)"},
    {"--shutdown-timeout", NULL, "shutdown_timeout", OPT_INT, OFF(shutdown_timeout), 0, 86400,
     "seconds in-flight requests get after SIGTERM (default 10)"},
    {"--rate-limit", NULL, "rate_limit", OPT_DOUBLE, OFF(rate_limit), 0, 1000000,
     "requests per minute per API key (0 = off)"},
    {"--rate-burst", NULL, "rate_burst", OPT_INT, OFF(rate_burst), 0, 1000000,
     "token bucket size (0 = one minute's worth)"},
    {"--cors-origin", NULL, "cors_origin", OPT_STR, OFF(cors_origin), 0, 0, "allowed CORS origin (default: CORS off)"},
    {"--api-key", NULL, "api_key", OPT_KEY, 0, 0, 0, "API key; repeat for several (JSON: a string or a list)"},
    {"--api-key-file", NULL, "api_key_file", OPT_STR, OFF(api_key_file), 0, 0, "file of API keys, one per line"},
    {"--slot-save-path", NULL, "slot_save_path", OPT_STR, OFF(slot_save_path), 0, 0,
     "folder of slot state files for POST /slots/{id}?action=save|restore (default: off)"},
};
#undef OFF
#define N_OPTS (sizeof opts / sizeof opts[0])

/* Keys gathered per source; the highest source that names any key wins (as for every option). */
typedef struct key_layer {
    char *keys[OXL_SRV_MAX_KEYS];
    int n;
} key_layer;

static int add_key(key_layer *kl, const char *k, const char *where) {
    if (!*k) {
        fprintf(stderr, "oxillama serve: %s: an API key is empty\n", where);
        return -1;
    }
    if (strlen(k) > OXL_SRV_KEY_MAX) {
        fprintf(stderr, "oxillama serve: %s: an API key is longer than %d bytes\n", where, OXL_SRV_KEY_MAX);
        return -1;
    }
    if (kl->n >= OXL_SRV_MAX_KEYS) {
        fprintf(stderr, "oxillama serve: %s: more than %d API keys\n", where, OXL_SRV_MAX_KEYS);
        return -1;
    }
    kl->keys[kl->n] = strdup(k);
    return kl->keys[kl->n++] ? 0 : -1;
}

static void free_keys(key_layer *kl) {
    for (int i = 0; i < kl->n; i++) {
        free(kl->keys[i]);
    }
    kl->n = 0;
}

/* Sets option o from text; `where` names the source for messages. */
static int set_opt(oxl_server_config *cfg, key_layer *kl, const opt *o, const char *v, const char *where) {
    char *base = (char *)cfg + o->offset;
    char *end = NULL;
    errno = 0;
    switch (o->kind) {
    case OPT_STR: {
        char *s = strdup(v);
        if (!s) {
            return -1;
        }
        free(*(char **)base);
        *(char **)base = s;
        return 0;
    }
    case OPT_KEY: return add_key(kl, v, where);
    case OPT_INT:
    case OPT_SIZE: {
        long long x = strtoll(v, &end, 10);
        if (errno || end == v || *end || x < o->min || x > o->max) {
            fprintf(stderr, "oxillama serve: %s: '%s' is not an integer in [%lld, %lld]\n", where, v, o->min, o->max);
            return -1;
        }
        if (o->kind == OPT_INT) {
            *(int *)base = (int)x;
        } else {
            *(size_t *)base = (size_t)x;
        }
        return 0;
    }
    case OPT_DOUBLE: {
        double x = strtod(v, &end);
        if (errno || end == v || *end || !(x >= (double)o->min && x <= (double)o->max)) {
            fprintf(stderr, "oxillama serve: %s: '%s' is not a number in [%lld, %lld]\n", where, v, o->min, o->max);
            return -1;
        }
        *(double *)base = x;
        return 0;
    }
    }
    return -1;
}

static const opt *find_flag(const char *a) {
    for (size_t i = 0; i < N_OPTS; i++) {
        if (!strcmp(a, opts[i].flag) || (opts[i].alt && !strcmp(a, opts[i].alt))) {
            return &opts[i];
        }
    }
    return NULL;
}

static void env_name(const opt *o, char *buf, size_t cap) {
    snprintf(buf, cap, "OXILLAMA_%s", o->name);
    for (char *p = buf; *p; p++) {
        if (*p >= 'a' && *p <= 'z') {
            *p = (char)(*p - 'a' + 'A');
        }
    }
}

static char *read_file(const char *path, const char *what) {
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "oxillama serve: %s '%s': %s\n", what, path, strerror(errno));
        return NULL;
    }
    size_t cap = 4096, len = 0;
    char *buf = malloc(cap);
    while (buf) {
        size_t n = fread(buf + len, 1, cap - len - 1, f);
        len += n;
        if (n == 0) {
            break;
        }
        if (len + 1 == cap) {
            if (cap >= ((size_t)16 << 20)) {
                fprintf(stderr, "oxillama serve: %s '%s' is larger than 16 MiB\n", what, path);
                free(buf);
                buf = NULL;
                break;
            }
            char *nb = realloc(buf, cap * 2);
            if (!nb) {
                free(buf);
                buf = NULL;
                break;
            }
            buf = nb;
            cap *= 2;
        }
    }
    fclose(f);
    if (buf) {
        buf[len] = 0;
    }
    return buf;
}

/* A JSON config file: an object whose members are the option names of the table. */
static int apply_config_file(oxl_server_config *cfg, key_layer *kl, const char *path) {
    char *text = read_file(path, "config file");
    if (!text) {
        return -1;
    }
    cJSON *root = cJSON_Parse(text);
    free(text);
    if (!cJSON_IsObject(root)) {
        fprintf(stderr, "oxillama serve: config file '%s' is not a JSON object\n", path);
        cJSON_Delete(root);
        return -1;
    }
    int rc = 0;
    for (cJSON *m = root->child; m && rc == 0; m = m->next) {
        const opt *o = NULL;
        for (size_t i = 0; i < N_OPTS; i++) {
            if (!strcmp(m->string, opts[i].name)) {
                o = &opts[i];
            }
        }
        char where[512];
        snprintf(where, sizeof where, "config file '%s', field '%s'", path, m->string);
        if (!o) {
            fprintf(stderr, "oxillama serve: %s: unknown option\n", where);
            rc = -1;
        } else if (o->kind == OPT_KEY && cJSON_IsArray(m)) {
            for (cJSON *k = m->child; k && rc == 0; k = k->next) {
                rc = cJSON_IsString(k) ? add_key(kl, k->valuestring, where) : -1;
                if (!cJSON_IsString(k)) {
                    fprintf(stderr, "oxillama serve: %s: keys must be strings\n", where);
                }
            }
        } else if (cJSON_IsString(m)) {
            rc = set_opt(cfg, kl, o, m->valuestring, where);
        } else if (cJSON_IsNumber(m) && o->kind != OPT_STR && o->kind != OPT_KEY) {
            char num[64];
            if (o->kind == OPT_DOUBLE) {
                snprintf(num, sizeof num, "%.17g", m->valuedouble);
            } else if (m->valuedouble == (double)(long long)m->valuedouble) {
                snprintf(num, sizeof num, "%lld", (long long)m->valuedouble);
            } else {
                snprintf(num, sizeof num, "%g", m->valuedouble);
            }
            rc = set_opt(cfg, kl, o, num, where);
        } else {
            fprintf(stderr, "oxillama serve: %s: expected a %s\n", where,
                    o->kind == OPT_STR   ? "string"
                    : o->kind == OPT_KEY ? "string or a list of strings"
                                         : "number");
            rc = -1;
        }
    }
    cJSON_Delete(root);
    return rc;
}

static int apply_env(oxl_server_config *cfg, key_layer *kl) {
    for (size_t i = 0; i < N_OPTS; i++) {
        char name[64];
        env_name(&opts[i], name, sizeof name);
        const char *v = getenv(name);
        if (!v) {
            continue;
        }
        if (opts[i].kind == OPT_KEY) {
            /* OXILLAMA_API_KEY holds one key or several separated by commas. */
            char *copy = strdup(v), *save = NULL;
            int rc = copy ? 0 : -1;
            for (char *k = copy ? strtok_r(copy, ",", &save) : NULL; k && rc == 0; k = strtok_r(NULL, ",", &save)) {
                rc = add_key(kl, k, name);
            }
            free(copy);
            if (rc) {
                return -1;
            }
        } else if (set_opt(cfg, kl, &opts[i], v, name) != 0) {
            return -1;
        }
    }
    return 0;
}

/* -m FILE on the command line: one more model (the flags' list replaces the environment's and the
 * config file's "model"). */
static int add_model(oxl_server_config *cfg, const char *path) {
    if (cfg->n_models >= OXL_SRV_MAX_MODELS) {
        fprintf(stderr, "oxillama serve: -m: more than %d models\n", OXL_SRV_MAX_MODELS);
        return -1;
    }
    cfg->models[cfg->n_models] = strdup(path);
    return cfg->models[cfg->n_models++] ? 0 : -1;
}

/* --alias NAME after a -m: the id of the last -m. */
static int set_alias(oxl_server_config *cfg, const char *name) {
    const int k = cfg->n_models - 1;
    if (cfg->aliases[k]) {
        fprintf(stderr, "oxillama serve: --alias '%s': -m %s has the alias '%s' already\n", name, cfg->models[k],
                cfg->aliases[k]);
        return -1;
    }
    if (!*name) {
        fprintf(stderr, "oxillama serve: --alias for -m %s is empty\n", cfg->models[k]);
        return -1;
    }
    cfg->aliases[k] = strdup(name);
    return cfg->aliases[k] ? 0 : -1;
}

/* The model list once every source is read: the flags' -m list, or the environment's or config
 * file's one model; model and alias become the first entry's. An --alias given before any -m names
 * the first model. */
static int settle_models(oxl_server_config *cfg) {
    if (cfg->n_models == 0 && cfg->model) {
        cfg->models[0] = strdup(cfg->model);
        cfg->aliases[0] = cfg->alias ? strdup(cfg->alias) : NULL;
        cfg->n_models = 1;
        return cfg->models[0] && (cfg->aliases[0] || !cfg->alias) ? 0 : -1;
    }
    if (cfg->n_models == 0) {
        return 0;
    }
    if (!cfg->aliases[0] && cfg->alias && !(cfg->aliases[0] = strdup(cfg->alias))) {
        return -1;
    }
    free(cfg->model);
    free(cfg->alias);
    cfg->model = strdup(cfg->models[0]);
    cfg->alias = cfg->aliases[0] ? strdup(cfg->aliases[0]) : NULL;
    return cfg->model && (cfg->alias || !cfg->aliases[0]) ? 0 : -1;
}

static int apply_flags(oxl_server_config *cfg, key_layer *kl, int argc, char **argv) {
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            cfg->help = true;
            continue;
        }
        if (!strcmp(a, "--config")) {
            i++; /* read before the other layers */
            continue;
        }
        if (!strcmp(a, "--rerank") || !strcmp(a, "--reranking")) {
            cfg->rerank = true; /* a flag only (llama-server's) */
            continue;
        }
        if (!strcmp(a, "--no-webui")) {
            cfg->no_webui = true; /* a flag only (llama-server's) */
            continue;
        }
        const opt *o = find_flag(a);
        if (!o) {
            fprintf(stderr, "oxillama serve: unknown option '%s' (see --help)\n", a);
            return -1;
        }
        if (i + 1 >= argc) {
            fprintf(stderr, "oxillama serve: %s needs a value\n", a);
            return -1;
        }
        if (o->offset == offsetof(oxl_server_config, model) && o->kind == OPT_STR) {
            if (add_model(cfg, argv[++i]) != 0) {
                return -1;
            }
            continue;
        }
        if (o->offset == offsetof(oxl_server_config, alias) && o->kind == OPT_STR && cfg->n_models > 0) {
            if (set_alias(cfg, argv[++i]) != 0) {
                return -1;
            }
            continue;
        }
        if (set_opt(cfg, kl, o, argv[++i], a) != 0) {
            return -1;
        }
    }
    return 0;
}

static int read_key_file(key_layer *kl, const char *path) {
    char *text = read_file(path, "API key file");
    if (!text) {
        return -1;
    }
    int rc = 0;
    char *save = NULL;
    for (char *line = strtok_r(text, "\r\n", &save); line && rc == 0; line = strtok_r(NULL, "\r\n", &save)) {
        while (*line == ' ' || *line == '\t') {
            line++;
        }
        size_t n = strlen(line);
        while (n > 0 && (line[n - 1] == ' ' || line[n - 1] == '\t')) {
            line[--n] = 0;
        }
        if (n > 0 && line[0] != '#') {
            rc = add_key(kl, line, path);
        }
    }
    free(text);
    return rc;
}

void oxl_server_config_usage(void) {
    printf("usage: oxillama serve -m FILE [--alias NAME] [-m FILE [--alias NAME] ...] [options]\n"
           "       oxillama serve --models-dir DIR [options]\n\n"
           "Every option can also be given as an environment variable OXILLAMA_<NAME> or as a member\n"
           "\"<name>\" of a JSON object in the --config file (OXILLAMA_CONFIG); precedence is\n"
           "flags > environment > config file > defaults.\n\n");
    for (size_t i = 0; i < N_OPTS; i++) {
        char env[64], flags[64];
        env_name(&opts[i], env, sizeof env);
        snprintf(flags, sizeof flags, "%s%s%s", opts[i].alt ? opts[i].alt : "", opts[i].alt ? ", " : "", opts[i].flag);
        printf("  %-24s %-26s %s\n", flags, env, opts[i].help);
    }
    printf("  %-24s %-26s %s\n", "--config FILE", "OXILLAMA_CONFIG", "JSON config file");
    printf("  %-24s %-26s %s\n", "--rerank, --reranking", "", "serve /v1/rerank with the model's classifier head");
    printf("  %-24s %-26s %s\n", "--no-webui", "", "no web chat page at / (404)");
}

int oxl_server_config_resolve(oxl_server_config *cfg, int argc, char **argv) {
    memset(cfg, 0, sizeof *cfg);
    cfg->port = 8080;
    cfg->n_parallel = 4;
    cfg->reasoning_budget = -1;
    cfg->n_batch = 512;
    cfg->queue_size = 64;
    cfg->max_connections = 128;
    cfg->max_body = (size_t)1 << 20;
    cfg->max_headers = 64;
    cfg->idle_timeout = 60;
    cfg->shutdown_timeout = 10;
    cfg->host = strdup("127.0.0.1");
    const oxl_ctx_params cp = oxl_ctx_default_params();
    cfg->type_k = cp.type_k;
    cfg->type_v = cp.type_v;
    cfg->flash_attn = cp.flash_attn;
    cfg->log_level = 1;
    cfg->models_max = 4; /* llama-server's --models-max */

    const char *config_path = getenv("OXILLAMA_CONFIG");
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--config")) {
            if (i + 1 >= argc) {
                fprintf(stderr, "oxillama serve: --config needs a value\n");
                return -1;
            }
            config_path = argv[++i];
        }
    }
    key_layer layers[3] = {0}; /* config file, environment, flags */
    int rc = 0;
    if (config_path && *config_path) {
        rc = apply_config_file(cfg, &layers[0], config_path);
    }
    if (rc == 0) {
        rc = apply_env(cfg, &layers[1]);
    }
    if (rc == 0) {
        rc = apply_flags(cfg, &layers[2], argc, argv);
    }
    key_layer *win = layers[2].n ? &layers[2] : layers[1].n ? &layers[1] : &layers[0];
    if (rc == 0 && cfg->api_key_file) {
        rc = read_key_file(win, cfg->api_key_file);
    }
    for (int i = 0; i < win->n; i++) {
        cfg->keys[cfg->n_keys++] = win->keys[i];
    }
    win->n = 0;
    for (int l = 0; l < 3; l++) {
        free_keys(&layers[l]);
    }
    if (rc != 0) {
        return -1;
    }
    if (cfg->help) {
        oxl_server_config_usage();
        return 1;
    }
    if (settle_models(cfg) != 0) {
        return -1;
    }
    if (!cfg->model && !cfg->models_dir) {
        fprintf(stderr, "oxillama serve: no model: give -m FILE, --models-dir DIR, OXILLAMA_MODEL or \"model\" in "
                        "the config file\n");
        return -1;
    }
    return 0;
}

void oxl_server_config_free(oxl_server_config *cfg) {
    free(cfg->model);
    free(cfg->alias);
    free(cfg->mmproj);
    for (int i = 0; i < cfg->n_models; i++) {
        free(cfg->models[i]);
        free(cfg->aliases[i]);
    }
    free(cfg->models_dir);
    free(cfg->host);
    free(cfg->cors_origin);
    free(cfg->api_key_file);
    free(cfg->slot_save_path);
    free(cfg->chat_template);
    for (int i = 0; i < cfg->n_keys; i++) {
        free(cfg->keys[i]);
    }
    memset(cfg, 0, sizeof *cfg);
}
