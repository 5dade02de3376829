/* JSON field readers and JSON text (json_read.h). */
#include "json_read.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A short rendering of a JSON value for messages. */
void oxl_json_brief(const cJSON *v, char *buf, size_t cap) {
    char *s = cJSON_PrintUnformatted(v);
    snprintf(buf, cap, "%.60s%s", s ? s : "?", s && strlen(s) > 60 ? "..." : "");
    free(s);
}

/* The length of the valid UTF-8 sequence at s (1..4), or 0 if invalid or cut short. */
int oxl_utf8_seq(const unsigned char *s, size_t n) {
    unsigned c = s[0];
    if (c < 0x80) {
        return 1;
    }
    int len = c >= 0xC2 && c <= 0xDF ? 2 : c >= 0xE0 && c <= 0xEF ? 3 : c >= 0xF0 && c <= 0xF4 ? 4 : 0;
    if (len == 0 || (size_t)len > n) {
        return 0;
    }
    for (int i = 1; i < len; i++) {
        if ((s[i] & 0xC0) != 0x80) {
            return 0;
        }
    }
    if ((c == 0xE0 && s[1] < 0xA0) || (c == 0xED && s[1] > 0x9F) || (c == 0xF0 && s[1] < 0x90) ||
        (c == 0xF4 && s[1] > 0x8F)) {
        return 0;
    }
    return len;
}

/* The bytes of the ill-formed sequence at s (n > 0) that one U+FFFD replaces: the lead byte and the
 * continuation bytes that a valid sequence beginning with it could have next (1 for a NUL, a stray
 * continuation byte or an invalid lead byte). */
static size_t subpart_len(const unsigned char *s, size_t n) {
    unsigned c = s[0];
    int len = c >= 0xC2 && c <= 0xDF ? 2 : c >= 0xE0 && c <= 0xEF ? 3 : c >= 0xF0 && c <= 0xF4 ? 4 : 0;
    size_t k = 1;
    while (len && k < (size_t)len && k < n) {
        unsigned lo = 0x80, hi = 0xBF;
        if (k == 1) {
            lo = c == 0xE0 ? 0xA0 : c == 0xF0 ? 0x90 : 0x80;
            hi = c == 0xED ? 0x9F : c == 0xF4 ? 0x8F : 0xBF;
        }
        if (s[k] < lo || s[k] > hi) {
            break;
        }
        k++;
    }
    return k;
}

/* A JSON string of n bytes with invalid UTF-8 (and NULs) replaced by U+FFFD. */
cJSON *oxl_json_text(const char *s, size_t n) {
    char *buf = malloc(n * 3 + 1);
    if (!buf) {
        return cJSON_CreateString("");
    }
    size_t o = 0;
    for (size_t i = 0; i < n;) {
        int k = s[i] ? oxl_utf8_seq((const unsigned char *)s + i, n - i) : 0;
        if (k == 0) {
            /* one U+FFFD per maximal subpart of an ill-formed sequence (a lead byte and the
             * continuation bytes that could still follow it), as llama-server's JSON writer
             * (nlohmann's dump with error_handler_t::replace) and Unicode's recommendation */
            memcpy(buf + o, "\xEF\xBF\xBD", 3);
            o += 3;
            i += subpart_len((const unsigned char *)s + i, n - i);
        } else {
            memcpy(buf + o, s + i, (size_t)k);
            o += (size_t)k;
            i += (size_t)k;
        }
    }
    buf[o] = 0;
    cJSON *j = cJSON_CreateString(buf);
    free(buf);
    return j;
}

const cJSON *oxl_json_field(const cJSON *o, const char *name) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, name);
    return v && !cJSON_IsNull(v) ? v : NULL;
}

int oxl_json_num(const cJSON *o, const char *name, double lo, double hi, double *out, oxl_api_error *e) {
    const cJSON *v = oxl_json_field(o, name);
    if (!v) {
        return 0;
    }
    char b[80];
    oxl_json_brief(v, b, sizeof b);
    if (!cJSON_IsNumber(v)) {
        return BAD_TYPE(e, name, "'%s': expected a number, got %s", name, b);
    }
    if (!(v->valuedouble >= lo && v->valuedouble <= hi)) {
        return BAD(e, name, "'%s': %s is outside [%g, %g]", name, b, lo, hi);
    }
    *out = v->valuedouble;
    return 1;
}

int oxl_json_int(const cJSON *o, const char *name, double lo, double hi, long long *out, oxl_api_error *e) {
    const cJSON *v = oxl_json_field(o, name);
    if (!v) {
        return 0;
    }
    char b[80];
    oxl_json_brief(v, b, sizeof b);
    if (!cJSON_IsNumber(v) || v->valuedouble != floor(v->valuedouble)) {
        return BAD_TYPE(e, name, "'%s': expected an integer, got %s", name, b);
    }
    if (!(v->valuedouble >= lo && v->valuedouble <= hi)) {
        return BAD(e, name, "'%s': %s is outside [%.0f, %.0f]", name, b, lo, hi);
    }
    *out = (long long)v->valuedouble;
    return 1;
}

int oxl_json_bool(const cJSON *o, const char *name, bool *out, oxl_api_error *e) {
    const cJSON *v = oxl_json_field(o, name);
    if (!v) {
        return 0;
    }
    if (!cJSON_IsBool(v)) {
        char b[80];
        oxl_json_brief(v, b, sizeof b);
        return BAD_TYPE(e, name, "'%s': expected a boolean, got %s", name, b);
    }
    *out = cJSON_IsTrue(v);
    return 1;
}

int oxl_json_str(const cJSON *o, const char *name, const char **out, oxl_api_error *e) {
    const cJSON *v = oxl_json_field(o, name);
    if (!v) {
        return 0;
    }
    if (!cJSON_IsString(v)) {
        char b[80];
        oxl_json_brief(v, b, sizeof b);
        return BAD_TYPE(e, name, "'%s': expected a string, got %s", name, b);
    }
    *out = v->valuestring;
    return 1;
}

cJSON *oxl_json_bytes(const char *p, int n) {
    cJSON *a = cJSON_CreateArray();
    for (int i = 0; i < n; i++) {
        cJSON_AddItemToArray(a, cJSON_CreateNumber((unsigned char)p[i]));
    }
    return a;
}
