/* GET /v1/models, POST /tokenize and /detokenize. */
#include "generate.h"
#include "json_read.h"
#include "models.h"
#include "routes.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* llama.cpp's enum llama_vocab_type of the tokenizer.ggml.model value (0: none or unknown). */
static int vocab_type(const oxl_model *m) {
    static const char *const names[] = {"llama", "gpt2", "bert", "t5", "rwkv", "plamo2"};
    char v[32];
    if (oxl_model_meta_val_str(m, "tokenizer.ggml.model", v, sizeof v) < 0) {
        return 0;
    }
    for (int i = 0; i < 6; i++) {
        if (!strcmp(v, names[i])) {
            return i + 1;
        }
    }
    return 0;
}

/* m's "meta": the loaded model's figures. */
static void add_meta(oxl_srv *srv, cJSON *m) {
    cJSON *meta = cJSON_AddObjectToObject(m, "meta");
    cJSON_AddStringToObject(meta, "description", oxl_model_desc(srv->model));
    cJSON_AddNumberToObject(meta, "n_vocab", oxl_model_n_vocab(srv->model));
    cJSON_AddNumberToObject(meta, "n_ctx_train", oxl_model_n_ctx_train(srv->model));
    cJSON_AddNumberToObject(meta, "n_ctx_slot", oxl_sched_n_ctx_slot(srv->sched));
    cJSON_AddNumberToObject(meta, "n_slots", oxl_ctx_n_seq_max(srv->ctx));
    cJSON_AddStringToObject(meta, "chat_template", oxl_model_chat_template(srv->model) ? "model" : "chatml");
    /* llama-server's meta fields (server-context.cpp, model_meta) */
    cJSON_AddNumberToObject(meta, "vocab_type", vocab_type(srv->model));
    cJSON_AddNumberToObject(meta, "n_ctx", oxl_sched_n_ctx_slot(srv->sched));
    cJSON_AddNumberToObject(meta, "n_embd", oxl_model_n_embd(srv->model));
    cJSON_AddNumberToObject(meta, "n_params", (double)oxl_model_n_params(srv->model));
    cJSON_AddNumberToObject(meta, "size", (double)oxl_model_size(srv->model));
}

static cJSON *model_json(oxl_srv *srv) {
    cJSON *m = cJSON_CreateObject();
    cJSON_AddStringToObject(m, "id", srv->model_id);
    cJSON_AddStringToObject(m, "object", "model");
    cJSON_AddNumberToObject(m, "created", (double)srv->created);
    cJSON_AddStringToObject(m, "owned_by", "oxillama");
    if (atomic_load(&srv->ready)) {
        add_meta(srv, m);
        /* llama-server's modalities of a model (architecture.input_modalities, llama.cpp PR 22952):
         * images with --mmproj */
        cJSON *arch = cJSON_AddObjectToObject(m, "architecture");
        cJSON *in = cJSON_AddArrayToObject(arch, "input_modalities");
        cJSON_AddItemToArray(in, cJSON_CreateString("text"));
        if (srv->mmproj) {
            cJSON_AddItemToArray(in, cJSON_CreateString("image"));
        }
        cJSON_AddItemToArray(cJSON_AddArrayToObject(arch, "output_modalities"), cJSON_CreateString("text"));
    }
    return m;
}

void oxl_api_models(oxl_srv *srv, const oxl_request *rq, oxl_reply *out) {
    const char *one = rq->path + strlen(strncmp(rq->path, "/v1/", 4) ? "/models" : "/v1/models");
    if (srv->models) {
        oxl_models_list(srv, *one == '/' ? one + 1 : NULL, out, add_meta);
        return;
    }
    if (*one == '/') {
        one++;
        if (strcmp(one, srv->model_id) && strcmp(one, srv->model_file)) {
            oxl_api_error e;
            oxl_api_fail(&e, OXL_E_MODEL_NOT_FOUND, "model", "The model '%.200s' does not exist; this server has '%s'",
                         one, srv->model_id);
            oxl_reply_error(out, &e);
            return;
        }
        oxl_reply_json(out, 200, model_json(srv));
        return;
    }
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "object", "list");
    cJSON *data = cJSON_AddArrayToObject(o, "data");
    cJSON_AddItemToArray(data, model_json(srv));
    oxl_reply_json(out, 200, o);
}

/* llama.cpp's /tokenize: {content, add_special = false, parse_special = true, with_pieces = false}. */
void oxl_api_tokenize(oxl_srv *srv, const oxl_request *rq, oxl_reply *out) {
    oxl_api_error e = {0};
    const cJSON *b = rq->json;
    const char *content = NULL;
    bool add_special = false, parse_special = true, with_pieces = false;
    static const char *const fields[] = {"content", "add_special", "parse_special", "with_pieces", NULL};
    if (oxl_req_check_field_list(b, "/tokenize", fields, &e) < 0 || oxl_json_str(b, "content", &content, &e) < 0 ||
        oxl_json_bool(b, "add_special", &add_special, &e) < 0 ||
        oxl_json_bool(b, "parse_special", &parse_special, &e) < 0 ||
        oxl_json_bool(b, "with_pieces", &with_pieces, &e) < 0) {
        oxl_reply_error(out, &e);
        return;
    }
    if (!content) {
        BAD(&e, "content", "'content' is required");
        oxl_reply_error(out, &e);
        return;
    }
    size_t len = strlen(content);
    int32_t need = oxl_tokenize(srv->model, content, len, NULL, 0, add_special, parse_special);
    need = need == INT32_MIN ? 0 : need < 0 ? -need : need;
    oxl_token *t = malloc(sizeof(oxl_token) * (size_t)(need + 1));
    int32_t n = t ? oxl_tokenize(srv->model, content, len, t, need, add_special, parse_special) : -1;
    if (n < 0) {
        free(t);
        BAD(&e, "content", "'content' cannot be tokenized");
        oxl_reply_error(out, &e);
        return;
    }
    cJSON *o = cJSON_CreateObject();
    cJSON *arr = cJSON_AddArrayToObject(o, "tokens");
    char buf[256];
    for (int32_t i = 0; i < n; i++) {
        if (!with_pieces) {
            cJSON_AddItemToArray(arr, cJSON_CreateNumber(t[i]));
            continue;
        }
        cJSON *x = cJSON_CreateObject();
        cJSON_AddNumberToObject(x, "id", t[i]);
        int k = oxl_tok_piece(srv->model, t[i], buf, sizeof buf);
        bool valid = true;
        for (int q = 0; q < k && valid;) {
            int s = buf[q] ? oxl_utf8_seq((const unsigned char *)buf + q, (size_t)(k - q)) : 0;
            valid = s > 0;
            q += s;
        }
        cJSON_AddItemToObject(x, "piece", valid ? oxl_json_text(buf, (size_t)k) : oxl_json_bytes(buf, k));
        cJSON_AddItemToArray(arr, x);
    }
    free(t);
    oxl_reply_json(out, 200, o);
}

void oxl_api_detokenize(oxl_srv *srv, const oxl_request *rq, oxl_reply *out) {
    oxl_api_error e = {0};
    const cJSON *a = oxl_json_field(rq->json, "tokens");
    oxl_token *t = NULL;
    int32_t n = 0;
    static const char *const fields[] = {"tokens", NULL};
    if (oxl_req_check_field_list(rq->json, "/detokenize", fields, &e) < 0) {
        oxl_reply_error(out, &e);
        return;
    }
    if (!a || !cJSON_IsArray(a)) {
        BAD_TYPE(&e, "tokens", "'tokens': expected a list of token ids");
        oxl_reply_error(out, &e);
        return;
    }
    if (oxl_req_token_list(srv, a, "tokens", &t, &n, &e) < 0) {
        free(t);
        oxl_reply_error(out, &e);
        return;
    }
    size_t cap = 1, len = 0;
    char buf[256];
    for (int32_t i = 0; i < n; i++) {
        cap += (size_t)oxl_tok_piece(srv->model, t[i], buf, sizeof buf);
    }
    char *s = malloc(cap);
    for (int32_t i = 0; s && i < n; i++) {
        int k = oxl_token_to_piece(srv->model, t[i], buf, sizeof buf, false);
        k = k < 0 ? 0 : k;
        memcpy(s + len, buf, (size_t)k);
        len += (size_t)k;
    }
    free(t);
    cJSON *o = cJSON_CreateObject();
    cJSON_AddItemToObject(o, "content", oxl_json_text(s ? s : "", s ? len : 0));
    free(s);
    oxl_reply_json(out, 200, o);
}
