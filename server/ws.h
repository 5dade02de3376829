/* WebSocket streaming: GET /v1/ws (ws.c) and the messages it carries (ws_message.c).
 *
 * The protocol, one request at a time on a socket:
 *   client: a text message {"route": R, "body": B}, R one of /v1/chat/completions,
 *           /v1/completions, /completion, /v1/responses, /v1/messages and B the JSON body that
 *           route takes over HTTP. "stream" is implied: absent or true (false is an error).
 *   server: one text message {"event": NAME, "data": D} per server-sent event the HTTP route
 *           sends with "stream": true, in the same order: D is the event's data JSON, NAME its
 *           "event:" name (the Responses and Messages APIs) or "message" (SSE's default type)
 *           for unnamed events; then {"done": true}, which stands for OpenAI's "data: [DONE]" and
 *           ends every stream, the routes without [DONE] included.
 *   A request that fails before its stream starts (bad JSON, an unknown route or field, a full
 *   queue) is answered by one message, the error body the HTTP route answers with: OpenAI's
 *   {"error": {"message", "type", "param", "code"}}, or Anthropic's {"type": "error", "error":
 *   {...}} for /v1/messages; no {"done": true} follows. A failure inside a stream is the route's
 *   own error event. The socket stays open after an error. A message while a request runs is a
 *   409 error (code request_in_progress); the running request goes on. A close frame stops the
 *   running generation, as a dropped SSE connection does.
 * API keys (--api-key) and the rate limit apply to the upgrade request, as to any other route;
 * a message may hold at most --max-body bytes (larger ones close the socket with status 1009);
 * pings are answered by wslay. */
#ifndef OXL_SRV_WS_H
#define OXL_SRV_WS_H

#include "api.h"
#include "routes.h"

#include <stddef.h>

/* One client message of len bytes (not NUL-terminated): checks the envelope (UTF-8, a JSON object
 * with exactly "route" and "body"), and runs the route's handler on the body with "stream" true,
 * fd the client's socket. out gets the handler's reply (a stream, or an error body) or an error
 * reply of its own; returns the route, or NULL when the envelope named none (an OpenAI error). */
const oxl_route *oxl_ws_request(oxl_srv *srv, const char *msg, size_t len, int fd, oxl_reply *out);

#endif
