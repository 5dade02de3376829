// Drives a running `oxillama serve` with the official OpenAI Node client.
// usage: node client.mjs BASE_URL API_KEY MODEL_ID GOLDEN_DIR SERVER_PID
// Checks against llama.cpp's greedy continuation of golden/run/once.prompt (64 tokens); the last
// step sends SIGTERM to SERVER_PID during 4 streams. Prints PASS/FAIL lines; exits 1 on a failure.
import OpenAI from 'openai';
import fs from 'node:fs';
import path from 'node:path';

const [base, key, modelId, goldenDir, serverPid] = process.argv.slice(2);
const client = new OpenAI({ baseURL: base + '/v1', apiKey: key, maxRetries: 0, timeout: 60000 });
const prompt = fs.readFileSync(path.join(goldenDir, 'once.prompt'), 'utf8');
const expected = fs.readFileSync(path.join(goldenDir, 'once.expected'), 'utf8');
let failed = 0;

function check(name, ok, detail) {
  console.log(`${ok ? 'PASS' : 'FAIL'}  node ${name}${ok || detail === undefined ? '' : ': ' + detail}`);
  if (!ok) failed++;
}

async function expectError(name, status, code, fn) {
  try {
    await fn();
    check(name, false, 'no error');
  } catch (e) {
    check(name, e instanceof OpenAI.APIError && e.status === status && (!code || e.code === code),
      `status ${e.status} code ${e.code} ${e.message}`);
  }
}

const greedy = { model: modelId, prompt, max_tokens: 64, temperature: 0 };

// Streams one completion; returns its text, its token count and the chunks' finish reason.
async function streamCompletion(body) {
  const stream = await client.completions.create({ ...body, stream: true, stream_options: { include_usage: true } });
  let text = '', finish = null, usage = null;
  for await (const chunk of stream) {
    if (chunk.choices.length) {
      text += chunk.choices[0].text;
      finish = chunk.choices[0].finish_reason ?? finish;
    }
    if (chunk.usage) usage = chunk.usage;
  }
  return { text, finish, tokens: usage ? usage.completion_tokens : -1 };
}

// --- models
const models = await client.models.list();
check('models.list', models.data.length === 1 && models.data[0].id === modelId, JSON.stringify(models.data));

// --- completions: llama.cpp's greedy continuation
const c = await client.completions.create(greedy);
check('completions greedy = llama.cpp', c.choices[0].text === expected && c.object === 'text_completion',
  JSON.stringify(c.choices[0].text));
check('completions usage', c.usage.completion_tokens === 64 && c.choices[0].finish_reason === 'length',
  JSON.stringify(c.usage));
const cs = await streamCompletion(greedy);
check('completions stream = non-stream', cs.text === expected && cs.finish === 'length' && cs.tokens === 64,
  JSON.stringify(cs));

// --- chat: non-streaming and streaming give the same greedy text
const chatBody = { model: modelId, messages: [{ role: 'user', content: 'Tell me a story.' }], max_tokens: 24, temperature: 0 };
const chat = await client.chat.completions.create(chatBody);
const msg = chat.choices[0].message;
check('chat.completions', chat.object === 'chat.completion' && msg.role === 'assistant' &&
  typeof msg.content === 'string' && msg.content.length > 0 && chat.usage.completion_tokens === 24,
  JSON.stringify(chat));
const chatStream = await client.chat.completions.create({ ...chatBody, stream: true, stream_options: { include_usage: true } });
let streamed = '', roles = [], finish = null, usage = null, nChunks = 0;
for await (const chunk of chatStream) {
  nChunks++;
  if (chunk.object !== 'chat.completion.chunk') check('chat chunk object', false, chunk.object);
  if (chunk.choices.length) {
    const d = chunk.choices[0].delta;
    if (d.role) roles.push(d.role);
    if (d.content) streamed += d.content;
    finish = chunk.choices[0].finish_reason ?? finish;
  }
  if (chunk.usage) usage = chunk.usage;
}
check('chat stream = non-stream', streamed === msg.content, JSON.stringify([streamed, msg.content]));
check('chat stream shape', roles.length === 1 && roles[0] === 'assistant' && finish === 'length' &&
  usage && usage.completion_tokens === 24 && nChunks >= 3, JSON.stringify({ roles, finish, usage, nChunks }));

// with tools the reply goes through the tool-call parser; a reply without calls is plain content,
// streamed or not
const tools = [{ type: 'function', function: { name: 'get_weather', parameters: { type: 'object', properties: {} } } }];
const withTools = await client.chat.completions.create({ ...chatBody, tools });
let toolStreamed = '', toolFinish = null;
for await (const chunk of await client.chat.completions.create({ ...chatBody, tools, stream: true })) {
  if (chunk.choices.length) {
    toolStreamed += chunk.choices[0].delta.content ?? '';
    toolFinish = chunk.choices[0].finish_reason ?? toolFinish;
  }
}
check('chat with tools, stream = non-stream', toolStreamed === withTools.choices[0].message.content &&
  toolFinish === withTools.choices[0].finish_reason, JSON.stringify([toolStreamed, withTools.choices[0]]));

// stop strings are matched across tokens and never emitted
const stopped = await client.completions.create({ ...greedy, stop: ['girl named'] });
check('stop string', stopped.choices[0].text === ', there was a little ' && stopped.choices[0].finish_reason === 'stop',
  JSON.stringify(stopped.choices[0]));

// n choices with temperature 0 are identical
const multi = await client.completions.create({ ...greedy, max_tokens: 16, n: 3 });
check('n = 3', multi.choices.length === 3 && multi.choices.every((ch, i) => ch.index === i &&
  ch.text === multi.choices[0].text) && expected.startsWith(multi.choices[0].text), JSON.stringify(multi.choices));

// logprobs: the greedy token is the most likely one, the alternatives are sorted and their
// probabilities sum to at most 1 (the values themselves: check_logprobs.py, against llama.cpp)
const lp = await client.chat.completions.create({ ...chatBody, max_tokens: 4, logprobs: true, top_logprobs: 3 });
const lpc = lp.choices[0].logprobs.content;
check('logprobs', lpc.length === 4 && lpc.every(t => t.top_logprobs.length === 3 && t.logprob <= 0 &&
  Math.abs(t.top_logprobs[0].logprob - t.logprob) < 1e-6 && t.top_logprobs[0].token === t.token &&
  t.top_logprobs.every((a, i) => i === 0 || a.logprob <= t.top_logprobs[i - 1].logprob) &&
  t.top_logprobs.reduce((s, a) => s + Math.exp(a.logprob), 0) <= 1 + 1e-6), JSON.stringify(lpc[0]));

// --- responses API
const resp = await client.responses.create({ model: modelId, input: prompt, max_output_tokens: 16, temperature: 0 });
check('responses', resp.object === 'response' && typeof resp.output_text === 'string' && resp.output_text.length > 0,
  JSON.stringify(resp));
const rstream = await client.responses.create({ model: modelId, input: prompt, max_output_tokens: 16, temperature: 0, stream: true });
let rtext = '', rtypes = [];
for await (const ev of rstream) {
  rtypes.push(ev.type);
  if (ev.type === 'response.output_text.delta') rtext += ev.delta;
}
check('responses stream', rtext === resp.output_text && rtypes[0] === 'response.created' &&
  rtypes[rtypes.length - 1] === 'response.completed', JSON.stringify({ rtext, rtypes: [...new Set(rtypes)] }));

// --- errors as the client sees them
// one model per server: any model name is served by it, as llama-server does
const anyModel = await client.chat.completions.create({ ...chatBody, model: 'gpt-nonexistent', max_tokens: 2 });
check('any model name -> the server\'s model', anyModel.model === modelId && anyModel.choices.length === 1,
  JSON.stringify(anyModel));
await expectError('bad field -> 400', 400, 'invalid_type',
  () => client.chat.completions.create({ ...chatBody, temperature: 'warm' }));
await expectError('response_format type xml -> 400', 400, null,
  () => client.chat.completions.create({ ...chatBody, response_format: { type: 'xml' } }));
await expectError('wrong key -> 401', 401, 'invalid_api_key',
  () => new OpenAI({ baseURL: base + '/v1', apiKey: 'wrong', maxRetries: 0 }).models.list());

// --- embeddings: vectors of n_embd floats, L2-normalised, deterministic, base64 = float
const nEmbd = 64; // stories260K's llama.embedding_length
const norm = v => Math.sqrt(v.reduce((s, x) => s + x * x, 0));
const sameVec = (a, b) => a.length === b.length && a.every((x, i) => x === b[i]);
// JSON carries the shortest decimal of each float32: Math.fround gives the float32 back
const sameF32 = (a, b) => a.length === b.length && a.every((x, i) => Math.fround(x) === Math.fround(b[i]));
const e1 = await client.embeddings.create({ model: modelId, input: ['Once upon a time', 'The cat sat', 'Once upon a time'],
  encoding_format: 'float' });
const [va, vb, va2] = e1.data.map(d => d.embedding);
check('embeddings shape', e1.object === 'list' && e1.data.length === 3 && e1.data.every((d, i) => d.index === i &&
  d.object === 'embedding' && d.embedding.length === nEmbd) && e1.model === modelId,
  JSON.stringify({ ...e1, data: e1.data.map(d => d.embedding.length) }));
check('embeddings L2 norm 1', [va, vb].every(v => Math.abs(norm(v) - 1) < 1e-5), [va, vb].map(norm).join(' '));
check('embeddings identical input -> identical vector', sameVec(va, va2));
check('embeddings different inputs -> different vectors', !sameVec(va, vb) &&
  va.reduce((s, x, i) => s + x * vb[i], 0) < 0.9999, String(va.reduce((s, x, i) => s + x * vb[i], 0)));
check('embeddings usage', e1.usage.prompt_tokens > 6 && e1.usage.total_tokens === e1.usage.prompt_tokens,
  JSON.stringify(e1.usage));
// the client's default asks for base64 and decodes it itself
const e2 = await client.embeddings.create({ model: modelId, input: 'Once upon a time' });
check('embeddings base64 (client-decoded) = float', sameF32(Array.from(e2.data[0].embedding), va));
const e3 = await client.embeddings.create({ model: modelId, input: 'Once upon a time', encoding_format: 'base64' });
const raw = Buffer.from(e3.data[0].embedding, 'base64');
const f32 = Array.from({ length: raw.length / 4 }, (_, i) => raw.readFloatLE(4 * i));
check('embeddings base64 decodes to the same floats', typeof e3.data[0].embedding === 'string' && sameF32(f32, va),
  `${raw.length} bytes`);
await expectError('embeddings dimensions != n_embd -> 400', 400, 'invalid_value',
  () => client.embeddings.create({ model: modelId, input: 'hello', dimensions: 32, encoding_format: 'float' }));
// embeddings while a completion streams: neither disturbs the other
const [sGen, ...eMany] = await Promise.all([streamCompletion(greedy), ...Array.from({ length: 6 }, () =>
  client.embeddings.create({ model: modelId, input: ['The cat sat', 'Once upon a time'], encoding_format: 'float' }))]);
check('embeddings during generation', sGen.text === expected && eMany.every(r => sameVec(r.data[0].embedding, vb) &&
  sameVec(r.data[1].embedding, va)), JSON.stringify(sGen.text));

// --- structured output: response_format json_schema / json_object and llama-server's grammar field
{
  const schemaDir = path.join(goldenDir, '..', 'json_schema', 'schemas');
  const record = JSON.parse(fs.readFileSync(path.join(schemaDir, 'record.json'), 'utf8'));
  // The record schema's rules, checked by hand (golden/json_schema/schemas/record.json).
  const validRecord = (text) => {
    let o;
    try { o = JSON.parse(text); } catch { return false; }
    if (o === null || typeof o !== 'object' || Array.isArray(o)) return false;
    const keys = Object.keys(o);
    if (!keys.every(k => ['color', 'n', 'ok', 'tags', 'when'].includes(k))) return false;
    if (!['red', 'green', 'blue'].includes(o.color)) return false;
    if (!Number.isInteger(o.n) || o.n < -5 || o.n > 99) return false;
    if ('ok' in o && typeof o.ok !== 'boolean') return false;
    if ('tags' in o && !(Array.isArray(o.tags) && o.tags.length <= 2 &&
      o.tags.every(t => typeof t === 'string' && [...t].length <= 6))) return false;
    if ('when' in o && !/^\d{4}-(0[1-9]|1[0-2])-(0[1-9]|[12]\d|3[01])$/.test(o.when)) return false;
    return true;
  };
  const rf = { type: 'json_schema', json_schema: { name: 'record', schema: record, strict: true } };
  let valid = 0;
  const n = 20;
  for (let seed = 1; seed <= n; seed++) {
    const r = await client.chat.completions.create({ model: modelId, messages: [{ role: 'user', content: 'Tell me a story.' }],
      response_format: rf, seed, temperature: 1.0, max_tokens: 400 });
    valid += validRecord(r.choices[0].message.content) && r.choices[0].finish_reason === 'stop';
  }
  check(`response_format json_schema: ${n} seeds give schema-valid JSON`, valid === n, `${valid}/${n}`);
  const body = { model: modelId, messages: [{ role: 'user', content: 'Hi' }], response_format: rf, seed: 7,
    temperature: 0.8, max_tokens: 400 };
  const whole = await client.chat.completions.create(body);
  const stream = await client.chat.completions.create({ ...body, stream: true });
  let streamed = '';
  for await (const ch of stream) streamed += ch.choices[0]?.delta?.content ?? '';
  check('response_format json_schema: stream = non-stream', streamed === whole.choices[0].message.content &&
    validRecord(streamed), JSON.stringify([streamed, whole.choices[0].message.content]));
  // the same request as llama-completion -jf record.json (golden/sampling/grammar/js.record.s1.expected)
  const want = fs.readFileSync(path.join(goldenDir, '..', 'sampling', 'grammar', 'js.record.s1.expected'), 'utf8');
  const c = await client.completions.create({ model: modelId, prompt: 'Once upon a time', max_tokens: 96, seed: 1,
    temperature: 0.8, response_format: rf });
  check('completions + json_schema = llama-completion -jf', c.choices[0].text === want,
    JSON.stringify([c.choices[0].text, want]));
  const obj = await client.chat.completions.create({ model: modelId, messages: [{ role: 'user', content: 'Hi' }],
    response_format: { type: 'json_object' }, seed: 3, temperature: 0.8, max_tokens: 400 });
  let isObj = false;
  try { const v = JSON.parse(obj.choices[0].message.content); isObj = v !== null && typeof v === 'object' && !Array.isArray(v); } catch { }
  check('response_format json_object: a JSON object', isObj, obj.choices[0].message.content);
  const g = await client.completions.create({ model: modelId, prompt: 'Once upon a time', max_tokens: 32, seed: 2,
    temperature: 0.8, grammar: 'root ::= (" yes" | " no") "."' });
  check('grammar field constrains the text', g.choices[0].text === ' yes.' || g.choices[0].text === ' no.',
    JSON.stringify(g.choices[0].text));
  await expectError('bad grammar -> 400', 400, 'invalid_value', () => client.completions.create({ model: modelId,
    prompt: 'a', max_tokens: 4, grammar: 'root ::= foo' }));
}

// --- 16 parallel streams: each equals the same request alone (temperature 0)
const t0 = performance.now();
const alone = await streamCompletion(greedy);
const tAlone = (performance.now() - t0) / 1000;
const t1 = performance.now();
const par = await Promise.all(Array.from({ length: 16 }, () => streamCompletion(greedy)));
const tPar = (performance.now() - t1) / 1000;
const same = par.filter(r => r.text === alone.text && r.tokens === alone.tokens).length;
check('16 parallel streams = alone', same === 16 && alone.text === expected, `${same}/16 equal`);
const tpsAlone = alone.tokens / tAlone, tpsPar = par.reduce((s, r) => s + r.tokens, 0) / tPar;
console.log(`INFO  node throughput: one stream ${tpsAlone.toFixed(0)} tokens/s; 16 streams ${tpsPar.toFixed(0)} tokens/s aggregate (${(tpsPar / tpsAlone).toFixed(2)}x)`);

// --- SIGTERM during 4 active streams: each finishes or ends with an error event
if (serverPid) {
  const long = { model: modelId, prompt, max_tokens: 1500, temperature: 0 };
  let started = 0;
  const runs = Array.from({ length: 4 }, async () => {
    let n = 0;
    try {
      const s = await client.completions.create({ ...long, stream: true });
      for await (const chunk of s) {
        if (++n === 2) started++;
        if (chunk.choices.length && chunk.choices[0].finish_reason) return 'finished';
      }
      return 'ended without finish_reason';
    } catch (e) {
      return e instanceof OpenAI.APIError ? 'error event' : 'transport error: ' + e.message;
    }
  });
  // a bounded wait (60 s) for the 4 streams to be under way, however slow the machine
  for (let i = 0; i < 6000 && started < 4; i++) await new Promise(r => setTimeout(r, 10));
  process.kill(Number(serverPid), 'SIGTERM');
  const outcomes = await Promise.all(runs);
  console.log(`INFO  node SIGTERM outcomes: ${outcomes.join(', ')}`);
  check('SIGTERM during 4 streams', started === 4 && outcomes.every(o => o === 'finished' || o === 'error event'),
    JSON.stringify({ started, outcomes }));
}

process.exit(failed ? 1 : 0);
