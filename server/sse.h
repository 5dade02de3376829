/* Server-sent events: the frames a stream's produce() appends, and the check that the client is
 * still there. */
#ifndef OXL_SRV_SSE_H
#define OXL_SRV_SSE_H

#include "api.h"

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stddef.h>

/* Appends bytes to a stream's output. */
void oxl_stream_put(oxl_stream *st, const char *s, size_t n);
/* Appends one event: "event: NAME\n" when event is not NULL, then "data: JSON\n\n". Takes data. */
void oxl_sse_event(oxl_stream *st, const char *event, cJSON *data);
/* Appends an error event: the Responses API's {"type": "error", ...} (event "error", sequence
 * number seq) when responses, else a data frame holding an OpenAI error object. */
void oxl_sse_error(oxl_stream *st, const oxl_api_error *e, bool responses, int seq);
/* True when the peer closed the connection (fd < 0: never). */
bool oxl_client_gone(int fd);

#endif
