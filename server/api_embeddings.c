/* POST /v1/embeddings. */
#include "generate.h"
#include "json_read.h"
#include "routes.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define EMBD_MAX_INPUTS 2048 /* the OpenAI API's limit of inputs per request */

/* llama.cpp's common_embd_normalize: -1 none, 0 max-abs scaled to the int16 range, 2 Euclidean
 * (the server's default), other p > 0 the p-norm; the sum is kept in double, the factor in float. */
static void embd_normalize(const float *in, float *out, int32_t n, int p) {
    double sum = 0.0;
    if (p == -1) {
        sum = 1.0;
    } else if (p == 0) {
        for (int32_t i = 0; i < n; i++) {
            sum = sum < fabs(in[i]) ? fabs(in[i]) : sum;
        }
        sum /= 32760.0;
    } else if (p == 2) {
        for (int32_t i = 0; i < n; i++) {
            sum += in[i] * in[i];
        }
        sum = sqrt(sum);
    } else {
        for (int32_t i = 0; i < n; i++) {
            sum += pow(fabs(in[i]), p);
        }
        sum = pow(sum, 1.0 / p);
    }
    const float norm = sum > 0.0 ? (float)(1.0 / sum) : 0.0f;
    for (int32_t i = 0; i < n; i++) {
        out[i] = in[i] * norm;
    }
}

/* Standard base64 (RFC 4648, padded) of n float32 values as little-endian bytes, the layout the
 * OpenAI API and its clients decode. Returns a malloc'd NUL-terminated string or NULL. */
static char *base64_f32(const float *v, int32_t n) {
    static const char tab[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    const size_t nb = (size_t)n * 4;
    unsigned char *bytes = malloc(nb + 1);
    char *out = malloc((nb + 2) / 3 * 4 + 1);
    if (!bytes || !out) {
        free(bytes);
        free(out);
        return NULL;
    }
    for (int32_t i = 0; i < n; i++) {
        uint32_t u;
        memcpy(&u, &v[i], 4);
        for (int k = 0; k < 4; k++) {
            bytes[(size_t)i * 4 + (size_t)k] = (unsigned char)(u >> (8 * k));
        }
    }
    size_t o = 0;
    for (size_t i = 0; i < nb; i += 3) {
        const uint32_t t =
            (uint32_t)bytes[i] << 16 | (i + 1 < nb ? (uint32_t)bytes[i + 1] << 8 : 0) | (i + 2 < nb ? bytes[i + 2] : 0);
        out[o++] = tab[t >> 18 & 63];
        out[o++] = tab[t >> 12 & 63];
        out[o++] = i + 1 < nb ? tab[t >> 6 & 63] : '=';
        out[o++] = i + 2 < nb ? tab[t & 63] : '=';
    }
    out[o] = 0;
    free(bytes);
    return out;
}

/* A JSON array of n floats, each in the fewest digits that read back as the same float (as
 * llama.cpp's JSON library writes floats); a non-finite value as null. NULL when out of memory. */
static cJSON *float_array(const float *v, int32_t n) {
    char *buf = malloc((size_t)n * 17 + 3);
    if (!buf) {
        return NULL;
    }
    size_t o = 0;
    buf[o++] = '[';
    for (int32_t i = 0; i < n; i++) {
        if (i > 0) {
            buf[o++] = ',';
        }
        if (!isfinite(v[i])) {
            memcpy(buf + o, "null", 4);
            o += 4;
            continue;
        }
        char num[32];
        int len = 0;
        for (int prec = 6; prec <= 9; prec++) {
            len = snprintf(num, sizeof num, "%.*g", prec, (double)v[i]);
            if (strtof(num, NULL) == v[i]) {
                break;
            }
        }
        memcpy(buf + o, num, (size_t)len);
        o += (size_t)len;
    }
    buf[o++] = ']';
    buf[o] = 0;
    cJSON *a = cJSON_CreateRaw(buf);
    free(buf);
    return a;
}

/* POST /v1/embeddings, as llama.cpp's server (handle_embeddings_impl with the OpenAI response shape,
 * format_embeddings_response_oaicompat): input is a string, a list of token ids, or a list of
 * strings and token lists; each input is tokenized with BOS/EOS as the vocabulary asks, pooled by
 * the scheduler's embedding context and normalised with embd_normalize (default 2 = L2). */
void oxl_api_embeddings(oxl_srv *srv, const oxl_request *rq, oxl_reply *out) {
    oxl_api_error e = {0};
    const cJSON *b = rq->json;
    const cJSON *in = oxl_json_field(b, "input");
    const char *fmt = NULL, *model = NULL;
    const int32_t n_embd = oxl_model_n_embd(srv->model), n_ctx = oxl_sched_n_ctx_slot(srv->sched);
    long long dims = n_embd, norm = 2;
    oxl_token **toks = NULL;
    int32_t *lens = NULL, n_in = 0;
    static const char *const fields[] = {"input", "model", "encoding_format", "dimensions", "embd_normalize",
                                         "user",  NULL};
    if (oxl_req_check_field_list(b, "/v1/embeddings", fields, &e) < 0 || oxl_req_check_model(srv, b, &e) < 0 ||
        oxl_json_str(b, "model", &model, &e) < 0 || oxl_json_str(b, "encoding_format", &fmt, &e) < 0 ||
        oxl_json_int(b, "dimensions", 1, 1e9, &dims, &e) < 0 ||
        oxl_json_int(b, "embd_normalize", -1, 64, &norm, &e) < 0) {
        goto fail;
    }
    if (fmt && strcmp(fmt, "float") && strcmp(fmt, "base64")) {
        BAD(&e, "encoding_format", "'encoding_format': '%.40s' is not 'float' or 'base64'", fmt);
        goto fail;
    }
    if (dims != n_embd) {
        BAD(&e, "dimensions", "'dimensions': %lld; model '%s' gives embeddings of %d dimensions only", dims,
            srv->model_id, n_embd);
        goto fail;
    }
    if (!in) {
        BAD(&e, "input", "'input' is required");
        goto fail;
    }
    const bool single = cJSON_IsString(in) || (cJSON_IsArray(in) && in->child && cJSON_IsNumber(in->child));
    if (!single && !cJSON_IsArray(in)) {
        BAD_TYPE(&e, "input", "'input': expected a string, a list of strings or a list of token ids");
        goto fail;
    }
    n_in = single ? 1 : cJSON_GetArraySize(in);
    if (n_in <= 0 || n_in > EMBD_MAX_INPUTS) {
        BAD(&e, "input", "'input': %d inputs; between 1 and %d are accepted", n_in, EMBD_MAX_INPUTS);
        n_in = 0;
        goto fail;
    }
    toks = calloc((size_t)n_in, sizeof *toks);
    lens = calloc((size_t)n_in, sizeof *lens);
    if (!toks || !lens) {
        oxl_api_fail(&e, OXL_E_OUT_OF_MEMORY, NULL, "out of memory");
        goto fail;
    }
    size_t total = 0;
    const cJSON *item = single ? in : in->child;
    for (int32_t i = 0; i < n_in; i++, item = item->next) {
        char param[32];
        snprintf(param, sizeof param, single ? "input" : "input[%d]", i);
        if (cJSON_IsString(item)) {
            if (oxl_req_tokenize(srv, item->valuestring, strlen(item->valuestring), &toks[i], &lens[i], param, &e) <
                0) {
                goto fail;
            }
        } else if (cJSON_IsArray(item)) {
            if (oxl_req_token_list(srv, item, param, &toks[i], &lens[i], &e) < 0) {
                goto fail;
            }
        } else {
            BAD_TYPE(&e, param, "'%s': expected a string or a list of token ids", param);
            goto fail;
        }
        if (lens[i] == 0) {
            BAD(&e, param, "'%s': input content cannot be empty (the model adds no BOS token)", param);
            goto fail;
        }
        if (lens[i] > n_ctx) {
            oxl_api_fail(&e, OXL_E_CONTEXT_EXCEEDED, param,
                         "This model's maximum context length is %d tokens per slot, however '%s' resulted in %d "
                         "tokens",
                         n_ctx, param, lens[i]);
            goto fail;
        }
        total += (size_t)lens[i];
    }
    oxl_job *j = oxl_req_run_embd(srv, rq, toks, lens, n_in, total, n_embd, &e);
    if (!j) {
        goto fail;
    }
    const bool b64 = fmt && !strcmp(fmt, "base64");
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "object", "list");
    cJSON *data = cJSON_AddArrayToObject(o, "data");
    float *v = malloc(sizeof(float) * (size_t)n_embd);
    bool ok = v != NULL;
    for (int32_t i = 0; ok && i < n_in; i++) {
        embd_normalize(j->embd + (size_t)i * (size_t)n_embd, v, n_embd, (int)norm);
        cJSON *d = cJSON_CreateObject();
        cJSON_AddStringToObject(d, "object", "embedding");
        cJSON_AddNumberToObject(d, "index", i);
        if (b64) {
            char *s64 = base64_f32(v, n_embd);
            ok = s64 != NULL;
            cJSON_AddStringToObject(d, "embedding", s64 ? s64 : "");
            cJSON_AddStringToObject(d, "encoding_format", "base64");
            free(s64);
        } else {
            cJSON *a = float_array(v, n_embd);
            ok = a != NULL;
            cJSON_AddItemToObject(d, "embedding", a ? a : cJSON_CreateArray());
        }
        cJSON_AddItemToArray(data, d);
    }
    free(v);
    cJSON_AddStringToObject(o, "model", model ? model : srv->model_id);
    cJSON *u = cJSON_AddObjectToObject(o, "usage");
    cJSON_AddNumberToObject(u, "prompt_tokens", (double)total);
    cJSON_AddNumberToObject(u, "total_tokens", (double)total);
    oxl_job_release(srv->sched, j);
    if (!ok) {
        cJSON_Delete(o);
        oxl_api_fail(&e, OXL_E_OUT_OF_MEMORY, NULL, "out of memory");
        goto fail;
    }
    oxl_reply_json(out, 200, o);
    goto done;
fail:
    oxl_reply_error(out, &e);
done:
    for (int32_t i = 0; toks && i < n_in; i++) {
        free(toks[i]);
    }
    free(toks);
    free(lens);
}
