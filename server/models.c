/* Several models in one server (models.h): the table, loading on first use, least-recently-used
 * unloading, and /v1/models with each model's status. */
#include "models.h"

#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define LOAD_WAIT_S 300 /* how long a request waits for another request's load of its model */

struct oxl_models {
    pthread_mutex_t mu;
    pthread_cond_t loaded; /* broadcast when a load ends */
    oxl_model_entry *e;
    int n;
    int max;        /* --models-max (0: no limit) */
    uint64_t clock; /* counts requests: an entry's used is the clock at its last one */
    bool closed;    /* shutting down: no more loads */
};

bool oxl_models_wanted(const oxl_server_config *cfg) { return cfg->models_dir != NULL || cfg->n_models > 1; }

/* --- the table ----------------------------------------------------------------------------------- */

static int add_entry(oxl_srv *srv, const char *path, const char *id) {
    oxl_models *t = srv->models;
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    if (t->n >= OXL_SRV_MAX_MODELS) {
        fprintf(stderr, "oxillama serve: %s: more than %d models\n", path, OXL_SRV_MAX_MODELS);
        return -1;
    }
    if (strlen(id) >= sizeof t->e[0].view.model_id || strlen(base) >= sizeof t->e[0].view.model_file) {
        fprintf(stderr, "oxillama serve: %s: the model id or file name is longer than 255 bytes\n", path);
        return -1;
    }
    for (int i = 0; i < t->n; i++) {
        if (!strcmp(t->e[i].view.model_id, id)) {
            fprintf(stderr, "oxillama serve: two models have the id '%s': %s and %s (give one an --alias)\n", id,
                    t->e[i].path, path);
            return -1;
        }
    }
    oxl_model_entry *m = &t->e[t->n];
    memset(m, 0, sizeof *m);
    if (!(m->path = strdup(path))) {
        return -1;
    }
    m->server = srv;
    m->view.cfg = srv->cfg;
    m->view.entry = m;
    m->view.created = srv->created;
    snprintf(m->view.model_id, sizeof m->view.model_id, "%s", id);
    snprintf(m->view.model_file, sizeof m->view.model_file, "%s", base);
    t->n++;
    return 0;
}

/* The id of a file name: without ".gguf"; NULL for a split's later shard (or a name that is not a
 * model). Of "name-00001-of-00003.gguf" the id is "name". */
static char *file_id(const char *name) {
    size_t n = strlen(name);
    if (n <= 5 || strcmp(name + n - 5, ".gguf")) {
        return NULL;
    }
    n -= 5;
    unsigned k = 0, of = 0;
    int used = 0;
    if (n > 15 && sscanf(name + n - 15, "-%5u-of-%5u%n", &k, &of, &used) == 2 && used == 15) {
        if (k != 1) {
            return NULL;
        }
        n -= 15;
    }
    return strndup(name, n);
}

static int cmp_names(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

/* The *.gguf files of --models-dir, by name. */
static int add_dir(oxl_srv *srv, const char *dir) {
    DIR *d = opendir(dir);
    if (!d) {
        fprintf(stderr, "oxillama serve: --models-dir '%s': %s\n", dir, strerror(errno));
        return -1;
    }
    char *names[OXL_SRV_MAX_MODELS + 1];
    int n = 0, rc = 0;
    for (struct dirent *de; (de = readdir(d)) != NULL && rc == 0;) {
        char *id = de->d_name[0] == '.' ? NULL : file_id(de->d_name);
        if (!id) {
            continue;
        }
        free(id);
        if (n > OXL_SRV_MAX_MODELS) {
            fprintf(stderr, "oxillama serve: --models-dir '%s': more than %d models\n", dir, OXL_SRV_MAX_MODELS);
            rc = -1;
        } else if (!(names[n++] = strdup(de->d_name))) {
            rc = -1;
        }
    }
    closedir(d);
    qsort(names, (size_t)n, sizeof names[0], cmp_names);
    for (int i = 0; i < n; i++) {
        if (rc == 0) {
            char *path = NULL, *id = file_id(names[i]);
            if (!id || asprintf(&path, "%s/%s", dir, names[i]) < 0) {
                path = NULL;
                rc = -1;
            }
            rc = rc == 0 ? add_entry(srv, path, id) : rc;
            free(path);
            free(id);
        }
        free(names[i]);
    }
    return rc;
}

int oxl_models_init(oxl_srv *srv) {
    const oxl_server_config *cfg = srv->cfg;
    const char *single = cfg->n_lora > 0       ? "--lora"
                         : cfg->model_draft    ? "--model-draft"
                         : cfg->spec_ngram     ? "--spec-type"
                         : cfg->setup_ctx      ? "--control-vector"
                         : cfg->slot_save_path ? "--slot-save-path"
                                               : NULL;
    if (single) {
        fprintf(stderr,
                "oxillama serve: %s is for one model; it cannot be combined with several models "
                "(--models-dir or repeated -m)\n",
                single);
        return -1;
    }
    oxl_models *t = calloc(1, sizeof *t);
    oxl_model_entry *e = calloc(OXL_SRV_MAX_MODELS, sizeof *e);
    if (!t || !e) {
        free(t);
        free(e);
        return -1;
    }
    pthread_mutex_init(&t->mu, NULL);
    pthread_cond_init(&t->loaded, NULL);
    t->e = e;
    t->max = cfg->models_max;
    srv->models = t;
    int rc = 0;
    for (int i = 0; i < cfg->n_models && rc == 0; i++) {
        const char *base = strrchr(cfg->models[i], '/');
        char *id = cfg->aliases[i] ? strdup(cfg->aliases[i]) : file_id(base ? base + 1 : cfg->models[i]);
        if (!id) {
            id = strdup(base ? base + 1 : cfg->models[i]); /* not named *.gguf: the whole file name */
        }
        rc = id ? add_entry(srv, cfg->models[i], id) : -1;
        free(id);
    }
    if (rc == 0 && cfg->models_dir) {
        rc = add_dir(srv, cfg->models_dir);
    }
    if (rc == 0 && t->n == 0) {
        fprintf(stderr, "oxillama serve: --models-dir '%s' holds no *.gguf file\n", cfg->models_dir);
        rc = -1;
    }
    if (rc != 0) {
        oxl_models_free(srv);
        return -1;
    }
    if (cfg->log_level >= 1) {
        fprintf(stderr, "oxillama serve: %d models, at most %d loaded at once:", t->n, t->max);
        for (int i = 0; i < t->n; i++) {
            fprintf(stderr, " %s", t->e[i].view.model_id);
        }
        fprintf(stderr, "\n");
    }
    return 0;
}

/* Frees a model's engine (its scheduler stopped or never started); the entry stays listed. */
static void unload(oxl_model_entry *m) {
    oxl_srv *v = &m->view;
    if (v->sched) {
        if (!m->stopped) {
            oxl_sched_stop(v->sched, 0);
        }
        oxl_sched_free(v->sched);
    }
    m->stopped = false;
    oxl_srv_free_engine(v);
    v->sched = NULL;
    v->model = v->dmodel = NULL;
    v->ctx = v->dctx = NULL;
    v->n_lora = 0;
    atomic_store(&v->ready, false);
    m->state = OXL_MODEL_UNLOADED;
}

void oxl_models_stop(oxl_srv *srv, double deadline) {
    oxl_models *t = srv->models;
    if (!t) {
        return;
    }
    pthread_mutex_lock(&t->mu);
    t->closed = true;
    for (int i = 0; i < t->n; i++) {
        atomic_store(&t->e[i].view.stopping, true);
    }
    /* a load under way ends before its scheduler can be stopped */
    for (int i = 0; i < t->n; i++) {
        while (t->e[i].state == OXL_MODEL_LOADING) {
            pthread_cond_wait(&t->loaded, &t->mu);
        }
    }
    pthread_mutex_unlock(&t->mu);
    for (int i = 0; i < t->n; i++) {
        if (t->e[i].view.sched) {
            oxl_sched_stop(t->e[i].view.sched, deadline);
            t->e[i].stopped = true;
        }
    }
}

void oxl_models_free(oxl_srv *srv) {
    oxl_models *t = srv->models;
    if (!t) {
        return;
    }
    for (int i = 0; i < t->n; i++) {
        unload(&t->e[i]);
        free(t->e[i].path);
    }
    pthread_cond_destroy(&t->loaded);
    pthread_mutex_destroy(&t->mu);
    free(t->e);
    free(t);
    srv->models = NULL;
}

/* --- selecting, loading, unloading ------------------------------------------------------------- */

/* Unloads the least recently used loaded models no request holds, other than keep, while more than
 * limit are loaded or loading; none once shutting down (oxl_models_stop owns the schedulers then).
 * Called with t->mu held. */
static void evict(oxl_models *t, const oxl_model_entry *keep, int limit) {
    while (!t->closed) {
        int n = 0;
        oxl_model_entry *lru = NULL;
        for (int i = 0; i < t->n; i++) {
            oxl_model_entry *m = &t->e[i];
            n += m->state != OXL_MODEL_UNLOADED;
            if (m != keep && m->state == OXL_MODEL_LOADED && m->busy == 0 && (!lru || m->used < lru->used)) {
                lru = m;
            }
        }
        if (n <= limit || !lru) {
            return;
        }
        if (lru->view.cfg->log_level >= 1) {
            fprintf(stderr, "oxillama serve: unloading '%s' (--models-max %d)\n", lru->view.model_id, t->max);
        }
        unload(lru);
    }
}

static oxl_model_entry *find(oxl_models *t, const char *name) {
    for (int i = 0; i < t->n; i++) {
        if (!strcmp(t->e[i].view.model_id, name)) {
            return &t->e[i];
        }
    }
    for (int i = 0; i < t->n; i++) {
        if (!strcmp(t->e[i].view.model_file, name)) {
            return &t->e[i];
        }
    }
    return NULL;
}

/* The model of a request without "model": the most recently used loaded one, else the first. */
static oxl_model_entry *default_entry(oxl_models *t) {
    oxl_model_entry *best = NULL;
    for (int i = 0; i < t->n; i++) {
        if (t->e[i].state == OXL_MODEL_LOADED && (!best || t->e[i].used > best->used)) {
            best = &t->e[i];
        }
    }
    return best ? best : &t->e[0];
}

static void not_found(oxl_models *t, const char *name, oxl_api_error *e) {
    char ids[480];
    size_t len = 0;
    ids[0] = 0;
    for (int i = 0; i < t->n && len < sizeof ids; i++) {
        int w = snprintf(ids + len, sizeof ids - len, "%s'%s'", i ? ", " : "", t->e[i].view.model_id);
        len += w > 0 ? (size_t)w : 0;
    }
    oxl_api_fail(e, OXL_E_MODEL_NOT_FOUND, "model", "The model '%.100s' does not exist; this server has %s", name, ids);
}

/* Whether route rt runs on a model's state: every route that needs the model, and /metrics. */
static bool wants_model(const oxl_route *rt) { return rt->needs_model || rt->fn == oxl_api_metrics; }

int oxl_models_acquire(oxl_srv *srv, const oxl_route *rt, const char *name, oxl_srv **out, oxl_api_error *e) {
    oxl_models *t = srv->models;
    *out = srv;
    if (!t || !wants_model(rt)) {
        return 0;
    }
    const bool load = rt->needs_model; /* /metrics shows a model's figures only once it is loaded */
    pthread_mutex_lock(&t->mu);
    oxl_model_entry *m = name ? find(t, name) : default_entry(t);
    if (!m) {
        pthread_mutex_unlock(&t->mu);
        not_found(t, name, e);
        return -1;
    }
    m->busy++;
    m->used = ++t->clock;
    if (load && m->state == OXL_MODEL_UNLOADED) {
        if (t->closed) {
            m->busy--;
            pthread_mutex_unlock(&t->mu);
            oxl_api_fail(e, OXL_E_SHUTTING_DOWN, NULL, "The server is shutting down");
            e->retry_after = 1;
            return -1;
        }
        m->state = OXL_MODEL_LOADING;
        if (t->max > 0) {
            evict(t, m, t->max);
        }
        pthread_mutex_unlock(&t->mu);
        m->view.load_error[0] = 0;
        int rc = oxl_srv_load_engine(&m->view, m->path);
        pthread_mutex_lock(&t->mu);
        if (rc != 0) {
            unload(m);
        } else {
            m->state = OXL_MODEL_LOADED;
        }
        m->failed = rc != 0;
        pthread_cond_broadcast(&t->loaded);
    } else if (load && m->state == OXL_MODEL_LOADING) {
        struct timespec until;
        clock_gettime(CLOCK_REALTIME, &until);
        until.tv_sec += LOAD_WAIT_S;
        while (m->state == OXL_MODEL_LOADING) {
            if (pthread_cond_timedwait(&t->loaded, &t->mu, &until) == ETIMEDOUT) {
                break;
            }
        }
        if (m->state == OXL_MODEL_LOADING) {
            m->busy--;
            pthread_mutex_unlock(&t->mu);
            oxl_api_fail(e, OXL_E_MODEL_LOADING, "model", "The model '%s' is still loading; retry later",
                         m->view.model_id);
            e->retry_after = 5;
            return -1;
        }
    }
    if (load && m->state != OXL_MODEL_LOADED) {
        m->busy--;
        pthread_mutex_unlock(&t->mu);
        oxl_api_fail(e, OXL_E_MODEL_LOAD_FAILED, "model", "The model '%s' could not be loaded from %.200s: %.300s",
                     m->view.model_id, m->path, m->view.load_error);
        return -1;
    }
    pthread_mutex_unlock(&t->mu);
    *out = &m->view;
    return 0;
}

void oxl_models_release(oxl_srv *view) {
    oxl_model_entry *m = view ? view->entry : NULL;
    if (!m) {
        return;
    }
    oxl_models *t = m->server->models;
    pthread_mutex_lock(&t->mu);
    m->busy--;
    if (t->max > 0) {
        evict(t, NULL, t->max);
    }
    pthread_mutex_unlock(&t->mu);
}

/* --- /v1/models ---------------------------------------------------------------------------------- */

static cJSON *model_json(oxl_model_entry *m, void (*meta)(oxl_srv *view, cJSON *m)) {
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "id", m->view.model_id);
    cJSON_AddStringToObject(o, "object", "model");
    cJSON_AddNumberToObject(o, "created", (double)m->view.created);
    cJSON_AddStringToObject(o, "owned_by", "oxillama");
    cJSON *st = cJSON_AddObjectToObject(o, "status");
    cJSON_AddStringToObject(st, "value",
                            m->state == OXL_MODEL_LOADED    ? "loaded"
                            : m->state == OXL_MODEL_LOADING ? "loading"
                                                            : "unloaded");
    if (m->failed) {
        cJSON_AddBoolToObject(st, "failed", true);
    }
    if (m->state == OXL_MODEL_LOADED) {
        meta(&m->view, o);
    }
    return o;
}

void oxl_models_list(oxl_srv *srv, const char *one, oxl_reply *out, void (*meta)(oxl_srv *view, cJSON *m)) {
    oxl_models *t = srv->models;
    pthread_mutex_lock(&t->mu);
    if (one) {
        oxl_model_entry *m = find(t, one);
        if (!m) {
            oxl_api_error e;
            not_found(t, one, &e);
            pthread_mutex_unlock(&t->mu);
            oxl_reply_error(out, &e);
            return;
        }
        cJSON *o = model_json(m, meta);
        pthread_mutex_unlock(&t->mu);
        oxl_reply_json(out, 200, o);
        return;
    }
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "object", "list");
    cJSON *data = cJSON_AddArrayToObject(o, "data");
    for (int i = 0; i < t->n; i++) {
        cJSON_AddItemToArray(data, model_json(&t->e[i], meta));
    }
    pthread_mutex_unlock(&t->mu);
    oxl_reply_json(out, 200, o);
}
