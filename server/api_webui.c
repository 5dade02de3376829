/* The web chat page: GET / (index.html) and GET /webui/NAME, from the files embedded at build time
 * (webui.h), as llama-server serves its web UI at / and turns it off with --no-webui. Each reply has
 * its Content-Type, a strong ETag (If-None-Match gives 304), Cache-Control: no-cache (the browser
 * revalidates, so a new binary's page is never stale) and a Content-Security-Policy that lets the
 * page load nothing but this server's own files and talk to nothing but this server. */
#include "routes.h"
#include "webui.h"

#include <stdlib.h>
#include <string.h>

/* 'self' only: no remote scripts, styles, images, fonts or connections; no inline script; images
 * also from data: and blob: URIs (an uploaded picture's preview) */
static const char webui_csp[] = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data: blob:; "
                                "connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

static const oxl_webui_file *find_file(const char *name) {
    for (size_t i = 0; i < oxl_webui_n_files; i++) {
        if (!strcmp(oxl_webui_files[i].name, name)) {
            return &oxl_webui_files[i];
        }
    }
    return NULL;
}

/* True when the If-None-Match header names etag (or is "*"). */
static bool etag_matches(const char *inm, const char *etag) {
    return inm && (!strcmp(inm, "*") || strstr(inm, etag) != NULL);
}

static void serve_file(oxl_srv *srv, const oxl_request *rq, oxl_reply *out, const char *name) {
    oxl_api_error e = {0};
    if (srv->cfg->no_webui) {
        oxl_api_fail(&e, OXL_E_UNKNOWN_URL, NULL, "Unknown request URL: GET %.200s (the web page is off: --no-webui)",
                     rq->path);
        oxl_reply_error(out, &e);
        return;
    }
    const oxl_webui_file *f = find_file(name);
    if (!f) {
        oxl_api_fail(&e, OXL_E_UNKNOWN_URL, NULL, "Unknown request URL: GET %.200s", rq->path);
        oxl_reply_error(out, &e);
        return;
    }
    const char *h[] = {"ETag",
                       f->etag,
                       "Cache-Control",
                       "no-cache",
                       "Content-Security-Policy",
                       webui_csp,
                       "X-Content-Type-Options",
                       "nosniff",
                       "Referrer-Policy",
                       "no-referrer"};
    memcpy(out->headers, h, sizeof h);
    out->ctype = f->ctype;
    if (etag_matches(oxl_request_header(rq, "If-None-Match"), f->etag)) {
        out->status = 304;
        out->body = malloc(1);
        out->len = 0;
        return;
    }
    out->body = malloc(f->len + 1);
    if (!out->body) {
        return; /* the transport answers 500 out of memory */
    }
    memcpy(out->body, f->data, f->len);
    out->len = f->len;
    out->status = 200;
}

void oxl_api_webui_index(oxl_srv *srv, const oxl_request *rq, oxl_reply *out) {
    serve_file(srv, rq, out, "index.html");
}

void oxl_api_webui_file(oxl_srv *srv, const oxl_request *rq, oxl_reply *out) {
    const char *name = rq->path + strlen("/webui");
    name += *name == '/';
    serve_file(srv, rq, out, name);
}
