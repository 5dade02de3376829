/* JSON field readers for request bodies, and JSON text out of model bytes.
 * The readers return 0 when the field is absent (or null), 1 when read, -1 with e naming the
 * field when it has the wrong type or is out of [lo, hi]. */
#ifndef OXL_SRV_JSON_READ_H
#define OXL_SRV_JSON_READ_H

#include "api_error.h"

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stddef.h>

/* The member name of o, NULL when absent or null. */
const cJSON *oxl_json_field(const cJSON *o, const char *name);
int oxl_json_num(const cJSON *o, const char *name, double lo, double hi, double *out, oxl_api_error *e);
int oxl_json_int(const cJSON *o, const char *name, double lo, double hi, long long *out, oxl_api_error *e);
int oxl_json_bool(const cJSON *o, const char *name, bool *out, oxl_api_error *e);
int oxl_json_str(const cJSON *o, const char *name, const char **out, oxl_api_error *e);
/* A short rendering of a JSON value for messages (at most 60 bytes and "..."). */
void oxl_json_brief(const cJSON *v, char *buf, size_t cap);
/* The length of the valid UTF-8 sequence at s (1..4), or 0 if invalid or cut short. */
int oxl_utf8_seq(const unsigned char *s, size_t n);
/* A JSON string of n bytes with invalid UTF-8 (and NULs) replaced by U+FFFD. */
cJSON *oxl_json_text(const char *s, size_t n);
/* A JSON array of the n byte values at p (logprobs' bytes, /tokenize pieces). */
cJSON *oxl_json_bytes(const char *p, int n);

#endif
