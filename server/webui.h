/* The web page's files (server/webui/ and Debian's marked and highlight.js), embedded by the build:
 * server/webui/embed.py writes the table into the build folder's webui_files.c. */
#ifndef OXL_SRV_WEBUI_H
#define OXL_SRV_WEBUI_H

#include <stddef.h>

typedef struct oxl_webui_file {
    const char *name;          /* the name under /webui/ ("app.js"); index.html is also GET / */
    const char *ctype;         /* Content-Type */
    const char *etag;          /* a strong ETag, quoted: the first 16 hex digits of the SHA-256 */
    const unsigned char *data; /* len bytes (followed by a NUL) */
    size_t len;
} oxl_webui_file;

extern const oxl_webui_file oxl_webui_files[];
extern const size_t oxl_webui_n_files;

#endif
