// Streams over oxillama serve's WebSocket route (GET /v1/ws, protocol in server/ws.h) with npm's
// `ws` client, against the server-sent events of the same HTTP routes (the official OpenAI client
// for /v1/chat/completions and /v1/responses, fetch for /completion and /v1/messages) and
// llama.cpp's greedy continuation of golden/run/once.prompt (64 tokens).
// usage: node ws.mjs BASE_URL API_KEY MODEL_ID GOLDEN_DIR
// Prints PASS/FAIL lines; exits 1 on a failure. Every wait is bounded.
import OpenAI from 'openai';
import WebSocket from 'ws';
import fs from 'node:fs';
import path from 'node:path';

const [base, key, modelId, goldenDir] = process.argv.slice(2);
const wsUrl = base.replace(/^http/, 'ws') + '/v1/ws';
const client = new OpenAI({ baseURL: base + '/v1', apiKey: key, maxRetries: 0, timeout: 60000 });
const auth = { Authorization: `Bearer ${key}` };
const prompt = fs.readFileSync(path.join(goldenDir, 'once.prompt'), 'utf8');
const expected = fs.readFileSync(path.join(goldenDir, 'once.expected'), 'utf8');
let failed = 0;

function check(name, ok, detail) {
  console.log(`${ok ? 'PASS' : 'FAIL'}  ws ${name}${ok || detail === undefined ? '' : ': ' + detail}`);
  if (!ok) failed++;
}

// A socket whose messages queue up for next(); closed() resolves with the close code.
function open(headers = auth) {
  const ws = new WebSocket(wsUrl, { headers });
  const queue = [], waiters = [];
  let closeCode = null;
  const closeWaiters = [];
  ws.on('message', (data, isBinary) => {
    const m = { text: data.toString('utf8'), isBinary };
    if (waiters.length) waiters.shift()(m); else queue.push(m);
  });
  ws.on('close', (code) => {
    closeCode = code;
    closeWaiters.splice(0).forEach((f) => f(code));
    waiters.splice(0).forEach((f) => f(null));
  });
  const ready = new Promise((resolve, reject) => {
    ws.once('open', resolve);
    ws.once('unexpected-response', (req, res) => {
      res.resume();
      reject(Object.assign(new Error('http ' + res.statusCode), { status: res.statusCode }));
    });
    ws.once('error', reject);
  });
  const next = (ms = 30000) => new Promise((resolve, reject) => {
    if (queue.length) return resolve(queue.shift());
    if (closeCode !== null) return resolve(null);
    const t = setTimeout(() => reject(new Error('no message in time')), ms);
    waiters.push((m) => { clearTimeout(t); resolve(m); });
  });
  const closed = (ms = 10000) => new Promise((resolve, reject) => {
    if (closeCode !== null) return resolve(closeCode);
    const t = setTimeout(() => reject(new Error('not closed in time')), ms);
    closeWaiters.push((c) => { clearTimeout(t); resolve(c); });
  });
  return { ws, ready, next, closed };
}

// Sends one request; returns its messages (parsed) up to {"done": true}, or the one error message.
async function request(s, route, body) {
  s.ws.send(JSON.stringify({ route, body }));
  const out = [];
  for (;;) {
    const m = await s.next();
    if (!m) throw new Error('socket closed mid-request');
    const j = JSON.parse(m.text);
    if (j.done === true) return { events: out, done: true };
    if (j.error && !('event' in j)) return { error: j };
    out.push(j);
  }
}

// The data: payloads (and event: names) of an HTTP server-sent event stream.
async function sse(route, body) {
  const r = await fetch(base + route, { method: 'POST', headers: { ...auth, 'Content-Type': 'application/json' },
    body: JSON.stringify({ ...body, stream: true }) });
  const text = await r.text();
  const events = [];
  for (const block of text.split('\n\n')) {
    let event = 'message', data = null;
    for (const line of block.split('\n')) {
      if (line.startsWith('event: ')) event = line.slice(7);
      else if (line.startsWith('data: ')) data = line.slice(6);
    }
    if (data !== null) events.push({ event, data: data === '[DONE]' ? data : JSON.parse(data) });
  }
  return events;
}

// A sequence with each run of equal neighbours kept once.
const runs = (xs) => xs.filter((x, i) => i === 0 || x !== xs[i - 1]);

const metric = async (name) => {
  const t = await (await fetch(base + '/metrics', { headers: auth })).text();
  const m = t.match(new RegExp(`^\\S*${name} (\\S+)$`, 'm'));
  return m ? Number(m[1]) : NaN;
};

// --- the handshake: API key, plain HTTP
try {
  await open({}).ready;
  check('upgrade without a key is refused', false, 'opened');
} catch (e) {
  check('upgrade without a key is refused', e.status === 401, e.message);
}
{
  const r = await fetch(base + '/v1/ws', { headers: auth });
  const j = await r.json();
  check('plain GET /v1/ws is a 426', r.status === 426 && r.headers.get('upgrade') === 'websocket' &&
    j.error && j.error.code === 'upgrade_required', `${r.status} ${JSON.stringify(j)}`);
}

const s = open();
await s.ready;

// --- /v1/completions: llama.cpp's greedy text
{
  const r = await request(s, '/v1/completions', { model: modelId, prompt, max_tokens: 64, temperature: 0 });
  const text = r.events.map((e) => e.data.choices[0].text).join('');
  const finish = r.events.map((e) => e.data.choices[0].finish_reason).filter((f) => f).pop();
  check('/v1/completions = llama.cpp greedy', r.done && text === expected && finish === 'length' &&
    r.events.every((e) => e.event === 'message' && e.data.object === 'text_completion'),
    JSON.stringify({ text, finish }));
}

// --- chat: the same chunks as the OpenAI client reads from the SSE route (same socket)
{
  const body = { model: modelId, messages: [{ role: 'user', content: 'Tell me a story.' }], max_tokens: 24,
    temperature: 0, stream_options: { include_usage: true } };
  // How many tokens one chunk carries depends on timing (the text ready when the stream is read), so
  // runs of content chunks are compared as one; every other chunk (role, finish, usage) as it is,
  // but for the cached prompt tokens, which depend on what the slot held before.
  const usage = (u) => u && [u.prompt_tokens, u.completion_tokens, u.total_tokens];
  const shape = (c) => JSON.stringify([c.object, c.model, c.choices.map((ch) => [ch.index,
    Object.keys(ch.delta).length === 1 && ch.delta.content ? 'content' : ch.delta, ch.finish_reason]), usage(c.usage)]);
  const viaSse = [];
  for await (const c of await client.chat.completions.create({ ...body, stream: true })) viaSse.push(c);
  const r = await request(s, '/v1/chat/completions', body);
  const viaWs = r.events.map((e) => e.data);
  const text = (cs) => cs.map((c) => c.choices[0]?.delta?.content ?? '').join('');
  const finish = (cs) => cs.map((c) => c.choices[0]?.finish_reason).filter((f) => f).pop();
  check('chat text and finish_reason = SSE', r.done && text(viaWs) === text(viaSse) && text(viaWs).length > 0 &&
    finish(viaWs) === finish(viaSse) && finish(viaWs) === 'length',
    JSON.stringify({ ws: text(viaWs), sse: text(viaSse), fw: finish(viaWs), fs: finish(viaSse) }));
  check('chat event sequence = SSE', JSON.stringify(runs(viaWs.map(shape))) === JSON.stringify(runs(viaSse.map(shape))) &&
    r.events.every((e) => e.event === 'message'),
    JSON.stringify({ ws: runs(viaWs.map(shape)), sse: runs(viaSse.map(shape)) }));
}

// --- /completion (llama-server's stream, no [DONE]) = the HTTP stream's content
{
  const body = { prompt, n_predict: 32, temperature: 0 };
  const http = await sse('/completion', body);
  const r = await request(s, '/completion', body);
  // the text, and the events as runs of partial results then the final one (how many tokens a
  // partial result carries depends on timing)
  const text = (evs) => evs.map((e) => e.data.content).join('');
  const kinds = (evs) => JSON.stringify(runs(evs.map((e) => JSON.stringify([e.event, e.data.stop,
    e.data.stop ? [e.data.tokens_predicted, e.data.stop_type, e.data.content] : null]))));
  check('/completion = HTTP stream', r.done && http.length > 1 && text(r.events) === text(http) &&
    text(http) === expected.slice(0, text(http).length) && text(http).length > 0 && kinds(r.events) === kinds(http),
    JSON.stringify({ ws: text(r.events), http: text(http), kw: kinds(r.events), kh: kinds(http) }));
}

// --- named events: the Responses and Messages APIs
{
  const body = { model: modelId, input: prompt, max_output_tokens: 16, temperature: 0 };
  const types = [];
  let sseText = '';
  for await (const ev of await client.responses.create({ ...body, stream: true })) {
    types.push(ev.type);
    if (ev.type === 'response.output_text.delta') sseText += ev.delta;
  }
  const r = await request(s, '/v1/responses', body);
  const wsText = r.events.filter((e) => e.event === 'response.output_text.delta').map((e) => e.data.delta).join('');
  check('/v1/responses events = SSE', r.done && JSON.stringify(runs(r.events.map((e) => e.event))) === JSON.stringify(runs(types)) &&
    r.events.every((e) => e.data.type === e.event) && wsText === sseText && wsText.length > 0,
    JSON.stringify({ ws: r.events.map((e) => e.event), sse: types }));
}
{
  const body = { model: modelId, max_tokens: 16, temperature: 0, messages: [{ role: 'user', content: 'Tell me a story.' }] };
  const http = await sse('/v1/messages', body);
  const r = await request(s, '/v1/messages', body);
  const text = (evs) => evs.filter((e) => e.event === 'content_block_delta').map((e) => e.data.delta.text ?? '').join('');
  check('/v1/messages events = SSE', r.done && JSON.stringify(runs(r.events.map((e) => e.event))) ===
    JSON.stringify(runs(http.map((e) => e.event))) && text(r.events) === text(http) && text(http).length > 0,
    JSON.stringify({ ws: r.events.map((e) => e.event), http: http.map((e) => e.event) }));
}

// --- bad messages: an error each, and the socket stays open
async function expectError(name, send, status, code, shape = 'openai') {
  s.ws.send(send);
  const m = await s.next();
  const j = m && JSON.parse(m.text);
  const ok = shape === 'anthropic' ? j && j.type === 'error' && j.error && typeof j.error.message === 'string'
    : j && j.error && (!code || j.error.code === code) && typeof j.error.message === 'string' && j.error.message.length > 0;
  check(`error: ${name}`, ok && s.ws.readyState === WebSocket.OPEN, JSON.stringify(j));
  return j;
}
await expectError('not JSON', '{"route": ', 400, 'invalid_json');
await expectError('not an object', '[1, 2]', 400, 'invalid_json');
const unk = await expectError('unknown route', JSON.stringify({ route: '/v1/embeddings', body: {} }), 404, 'unknown_url');
check('unknown route named', unk.error.message.includes('/v1/embeddings'), unk.error.message);
const extra = await expectError('unknown envelope field', JSON.stringify({ route: '/v1/completions', body: {}, id: 7 }), 400, 'invalid_value');
check('unknown envelope field named', extra.error.message.includes("'id'"), extra.error.message);
const bogus = await expectError('unknown body field', JSON.stringify({ route: '/v1/completions', body: { prompt: 'x', bogus: 1 } }), 400, null);
check('unknown body field named', bogus.error && bogus.error.message.includes('bogus'), JSON.stringify(bogus));
await expectError('stream false', JSON.stringify({ route: '/v1/completions', body: { prompt: 'x', stream: false } }), 400, 'invalid_value');
await expectError('no body', JSON.stringify({ route: '/v1/completions' }), 400, 'invalid_value');
await expectError('Anthropic shape', JSON.stringify({ route: '/v1/messages', body: { messages: [] } }), 400, null, 'anthropic');
{
  s.ws.send(Buffer.from('{"route": "/completion"}'), { binary: true });
  const j = JSON.parse((await s.next()).text);
  check('error: binary message', j.error && j.error.code === 'invalid_json', JSON.stringify(j));
}

// --- a request while one runs: a 409 error; the running one goes on to its end
{
  s.ws.send(JSON.stringify({ route: '/v1/completions', body: { model: modelId, prompt, max_tokens: 64, temperature: 0 } }));
  s.ws.send(JSON.stringify({ route: '/v1/completions', body: { prompt: 'x' } }));
  let busy = null, text = '', done = false;
  for (let i = 0; i < 1000 && !done; i++) {
    const j = JSON.parse((await s.next()).text);
    if (j.done) done = true;
    else if (j.error) busy = j;
    else text += j.data.choices[0].text;
  }
  check('request while one runs', busy && busy.error.code === 'request_in_progress' && done && text === expected,
    JSON.stringify({ busy, text }));
}

// --- ping
{
  const pong = new Promise((resolve) => s.ws.once('pong', (d) => resolve(d.toString())));
  s.ws.ping('hello');
  check('ping answered', (await Promise.race([pong, new Promise((r) => setTimeout(() => r(null), 5000))])) === 'hello');
}
s.ws.close(1000);
check('closed by the client', (await s.closed()) === 1000);

// --- a close mid-generation cancels it; a new socket works
{
  const before = await metric('requests_cancelled_total');
  const c = open();
  await c.ready;
  c.ws.send(JSON.stringify({ route: '/v1/completions', body: { model: modelId, prompt, max_tokens: 3000, temperature: 0, ignore_eos: true } }));
  const first = await c.next();
  c.ws.close(1000);
  await c.closed();
  let after = before;
  for (let i = 0; i < 50 && after === before; i++) {
    await new Promise((r) => setTimeout(r, 100));
    after = await metric('requests_cancelled_total');
  }
  check('close mid-generation cancels', first && JSON.parse(first.text).event === 'message' && after === before + 1,
    JSON.stringify({ before, after }));
  const d = open();
  await d.ready;
  const r = await request(d, '/v1/completions', { model: modelId, prompt, max_tokens: 64, temperature: 0 });
  check('new socket after a close', r.done && r.events.map((e) => e.data.choices[0].text).join('') === expected);

  // --- a message over --max-body closes the socket with 1009
  d.ws.send('x'.repeat(1024 * 1024 + 1));
  check('message over --max-body: close 1009', (await d.closed()) === 1009);
}

process.exit(failed ? 1 : 0);
