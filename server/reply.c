/* Filling a reply: a JSON body, an OpenAI or Anthropic error object, ids (api.h). */
#include "api.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

void oxl_reply_json(oxl_reply *r, int status, cJSON *obj) {
    r->status = status;
    r->body = cJSON_PrintUnformatted(obj);
    r->len = r->body ? strlen(r->body) : 0;
    r->ctype = "application/json";
    cJSON_Delete(obj);
}

void oxl_reply_error(oxl_reply *r, const oxl_api_error *e) {
    oxl_reply_json(r, e->status, oxl_api_error_json(e));
    r->retry_after = e->retry_after;
}

void oxl_reply_anthropic_error(oxl_reply *r, const oxl_api_error *e) {
    oxl_reply_json(r, e->status, oxl_api_error_anthropic_json(e));
    r->retry_after = e->retry_after;
}

void oxl_random_id(const char *prefix, char *out, size_t cap) {
    unsigned char r[12];
    if (getrandom(r, sizeof r, 0) != (ssize_t)sizeof r) {
        memset(r, 0, sizeof r);
        snprintf((char *)r, sizeof r, "%lx", (unsigned long)time(NULL));
    }
    size_t n = (size_t)snprintf(out, cap, "%s", prefix);
    for (size_t i = 0; i < sizeof r && n + 2 < cap; i++) {
        n += (size_t)snprintf(out + n, cap - n, "%02x", r[i]);
    }
}
