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
/* Appends one event: "event: NAME\n" when event is not NULL, then "data: JSON\n\n". Takes data.
 * A stream of messages (st->messages, the WebSocket route) gets one line instead:
 * {"event": NAME, "data": JSON}, NAME "message" (SSE's default event type) when event is NULL. */
void oxl_sse_event(oxl_stream *st, const char *event, cJSON *data);
/* Appends OpenAI's last frame, "data: [DONE]"; nothing for a stream of messages (the WebSocket route
 * ends every stream with its own {"done": true}). */
void oxl_sse_done(oxl_stream *st);
/* Appends an error event: the Responses API's {"type": "error", ...} (event "error", sequence
 * number seq) when responses, else a data frame holding an OpenAI error object. */
void oxl_sse_error(oxl_stream *st, const oxl_api_error *e, bool responses, int seq);
/* Runs produce() under the scheduler lock; when it adds nothing and the stream is not done, waits up
 * to wait_ms for the first job still running and runs it again. Returns the bytes added. */
size_t oxl_stream_fill(oxl_stream *st, int wait_ms);
/* Ends a stream: cancels its jobs if they still run (counted in requests_cancelled_total unless
 * done or counted already), adds their tokens to the request log, releases them and frees st. */
void oxl_stream_free(oxl_stream *st);
/* True when the peer closed the connection (fd < 0: never). */
bool oxl_client_gone(int fd);

#endif
