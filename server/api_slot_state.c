/* POST /slots/{id}?action=save|restore|erase, as llama-server's (tools/server/server-context.cpp
 * post_slots, handle_slots_save / _restore / _erase): the slot's sequence state (docs/state-format.md)
 * saved to or restored from {"filename": NAME} in the --slot-save-path folder, or the slot's cache
 * erased. Without --slot-save-path the route answers 501 with llama-server's message. File names
 * follow common.cpp's fs_validate_filename: no path separators, "..", control characters, NUL or
 * the characters Windows forbids, so a name never leaves the folder. Replies: {"id_slot",
 * "filename", "n_saved", "n_written", "timings": {"save_ms"}}, {"id_slot", "filename",
 * "n_restored", "n_read", "timings": {"restore_ms"}}, {"id_slot", "n_erased"}. */
#include "api.h"
#include "routes.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* fs_validate_filename without subfolders, on bytes: the body is valid UTF-8 already (http.c). */
static bool valid_filename(const char *f) {
    const size_t n = strlen(f);
    if (n == 0 || n > 255 || f[0] == ' ' || f[n - 1] == ' ' || f[n - 1] == '.' || strstr(f, "..")) {
        return false;
    }
    for (const unsigned char *p = (const unsigned char *)f; *p; p++) {
        if (*p <= 0x1f || *p == 0x7f || strchr("/\\:*?\"<>|", *p)) {
            return false;
        }
        /* U+0080..U+009F (C1 controls), U+2215 / U+2216 (slash look-alikes), U+FF0E (full stop),
         * U+FFFD, U+FEFF */
        if ((p[0] == 0xc2 && p[1] >= 0x80 && p[1] <= 0x9f) ||
            (p[0] == 0xe2 && p[1] == 0x88 && (p[2] == 0x95 || p[2] == 0x96)) ||
            (p[0] == 0xef && p[1] == 0xbc && p[2] == 0x8e) || (p[0] == 0xef && p[1] == 0xbf && p[2] == 0xbd) ||
            (p[0] == 0xef && p[1] == 0xbb && p[2] == 0xbf)) {
            return false;
        }
    }
    return true;
}

/* A JSON "\u0000" in the body: cJSON ends its string there, so the name it gives would not be the
 * one sent. Refused rather than cut. */
static bool body_has_nul_escape(const oxl_request *rq) {
    for (size_t i = 0; rq->body && i + 6 <= rq->body_len; i++) {
        if (rq->body[i] == '\\' && rq->body[i + 1] == 'u' && !strncmp(rq->body + i + 2, "0000", 4)) {
            return true;
        }
    }
    return false;
}

void oxl_api_slot_action(oxl_srv *srv, const oxl_request *rq, oxl_reply *out) {
    oxl_api_error e = {0};
    const char *dir = srv->cfg->slot_save_path;
    if (!dir) {
        oxl_api_fail(&e, OXL_E_NOT_SUPPORTED, NULL,
                     "This server does not support slots action. Start it with `--slot-save-path`");
        oxl_reply_error(out, &e);
        return;
    }
    const char *ids = rq->path + strlen("/slots");
    char *end = NULL;
    const long id = *ids == '/' && ids[1] ? strtol(ids + 1, &end, 10) : -1;
    if (!end || *end || id < 0 || id > 1 << 20) {
        BAD(&e, NULL, "Invalid slot ID");
        oxl_reply_error(out, &e);
        return;
    }
    const char *action = oxl_request_arg(rq, "action");
    oxl_slot_action act;
    if (action && !strcmp(action, "save")) {
        act = OXL_SLOT_SAVE;
    } else if (action && !strcmp(action, "restore")) {
        act = OXL_SLOT_RESTORE;
    } else if (action && !strcmp(action, "erase")) {
        act = OXL_SLOT_ERASE;
    } else {
        BAD(&e, "action", "Invalid action");
        oxl_reply_error(out, &e);
        return;
    }
    char *path = NULL;
    const char *filename = NULL;
    if (act != OXL_SLOT_ERASE) {
        const cJSON *f = cJSON_GetObjectItemCaseSensitive(rq->json, "filename");
        if (!cJSON_IsString(f)) {
            BAD_TYPE(&e, "filename", "\"filename\" must be a string");
            oxl_reply_error(out, &e);
            return;
        }
        filename = f->valuestring;
        if (body_has_nul_escape(rq) || !valid_filename(filename)) {
            BAD(&e, "filename", "Invalid filename");
            oxl_reply_error(out, &e);
            return;
        }
        const size_t n = strlen(dir) + strlen(filename) + 2;
        path = malloc(n);
        if (!path) {
            oxl_api_fail(&e, OXL_E_OUT_OF_MEMORY, NULL, "out of memory");
            oxl_reply_error(out, &e);
            return;
        }
        snprintf(path, n, "%s%s%s", dir, dir[0] && dir[strlen(dir) - 1] == '/' ? "" : "/", filename);
    }
    int32_t n_tokens = 0;
    size_t n_bytes = 0;
    char msg[600];
    const double t0 = oxl_now();
    const int rc = oxl_sched_slot_action(srv->sched, (int32_t)id, act, path, &n_tokens, &n_bytes, msg, sizeof msg);
    const double ms = (oxl_now() - t0) * 1e3;
    free(path);
    if (rc != 0) {
        if (rc == -2) {
            oxl_api_fail(&e, OXL_E_SHUTTING_DOWN, NULL, "%s", msg);
        } else if (act == OXL_SLOT_SAVE && strncmp(msg, "Invalid slot ID", 15) != 0) {
            oxl_api_fail(&e, OXL_E_GENERATION_FAILED, NULL, "Unable to save slot: %s", msg);
        } else if (act == OXL_SLOT_RESTORE && strncmp(msg, "Invalid slot ID", 15) != 0) {
            BAD(&e, "filename", "Unable to restore slot: %s", msg);
        } else {
            BAD(&e, NULL, "%s", msg);
        }
        oxl_reply_error(out, &e);
        return;
    }
    cJSON *o = cJSON_CreateObject();
    cJSON_AddNumberToObject(o, "id_slot", (double)id);
    if (act == OXL_SLOT_ERASE) {
        cJSON_AddNumberToObject(o, "n_erased", n_tokens);
    } else {
        cJSON_AddStringToObject(o, "filename", filename);
        cJSON_AddNumberToObject(o, act == OXL_SLOT_SAVE ? "n_saved" : "n_restored", n_tokens);
        cJSON_AddNumberToObject(o, act == OXL_SLOT_SAVE ? "n_written" : "n_read", (double)n_bytes);
        cJSON *t = cJSON_AddObjectToObject(o, "timings");
        cJSON_AddNumberToObject(t, act == OXL_SLOT_SAVE ? "save_ms" : "restore_ms", ms);
    }
    oxl_reply_json(out, 200, o);
}
