// The OpenAI Node client over oxillama's tool calls (the model of make_toolcall_model.py, which
// answers "Let me check." and one get_weather call; a logit_bias of -100 on token 259 drops
// "Let me check.").
// usage: node toolcalls.mjs BASE_URL MODEL_ID [think]. Prints PASS/FAIL lines; exits 1 on a failure.
// Without "think" the server renders ChatML: the reply is content "Let me check." and the call.
// With "think" the server runs a template whose prompt opens a <think> block (Qwen QwQ's), so by
// llama-server's reasoning format deepseek the text before the call is reasoning_content: OpenAI's
// message shape plus llama-server's reasoning_content field (a separate delta when streamed).
import OpenAI from 'openai';

const client = new OpenAI({ baseURL: process.argv[2] + '/v1', apiKey: 'none', maxRetries: 0, timeout: 60000 });
const tools = [{ type: 'function', function: { name: 'get_weather', parameters: { type: 'object',
  properties: { city: { type: 'string' }, unit: { type: 'string' } } } } }];
const body = { model: process.argv[3], messages: [{ role: 'user', content: 'What is the weather in Paris?' }], tools, temperature: 0 };
let failed = 0;
const check = (name, ok, detail) => {
  console.log(`${ok ? 'PASS' : 'FAIL'}  node tool calls: ${name}${ok ? '' : ': ' + detail}`);
  if (!ok) failed++;
};

const think = process.argv[4] === 'think';
const wantContent = think ? null : 'Let me check.', wantReasoning = think ? 'Let me check.' : undefined;
const validArgs = c => { try { const a = JSON.parse(c.function.arguments); return a.city === 'Paris' && a.unit === 'celsius' && Object.keys(a).length === 2; } catch { return false; } };

// the client's accumulator rebuilds the message from the deltas, as an application would
const runner = client.beta.chat.completions.stream(body);
const deltas = [];
runner.on('chunk', c => deltas.push(c));
const final = await runner.finalChatCompletion();
const m = final.choices[0].message, call = (m.tool_calls || [])[0];
let args = null;
try { args = JSON.parse(call.function.arguments); } catch { /* checked below */ }
check('stream accumulated = one call', (m.content || null) === wantContent && m.tool_calls.length === 1 &&
  call.type === 'function' && call.id && call.function.name === 'get_weather' && args && args.city === 'Paris' &&
  args.unit === 'celsius' && Object.keys(args).length === 2 && final.choices[0].finish_reason === 'tool_calls',
  JSON.stringify(final.choices[0]) + ' ' + deltas.length + ' chunks');

// not streamed: arguments are a JSON string; content and reasoning as above
const plain = await client.chat.completions.create(body);
const pm = plain.choices[0].message;
check('non-stream: string arguments, finish tool_calls', pm.tool_calls.length === 1 &&
  typeof pm.tool_calls[0].function.arguments === 'string' && validArgs(pm.tool_calls[0]) &&
  pm.tool_calls[0].id && pm.content === wantContent && pm.reasoning_content === wantReasoning &&
  plain.choices[0].finish_reason === 'tool_calls', JSON.stringify(plain.choices[0]));
const alone = await client.chat.completions.create({ ...body, logit_bias: { 259: -100 } });
const am = alone.choices[0].message;
check('non-stream, call alone: content null', am.content === null && am.tool_calls.length === 1 &&
  validArgs(am.tool_calls[0]) && am.reasoning_content === undefined && alone.choices[0].finish_reason === 'tool_calls',
  JSON.stringify(alone.choices[0]));

// streamed by hand: reasoning_content and content deltas, then the call's deltas
const s = await client.chat.completions.create({ ...body, stream: true });
let sc = '', sr = '', sargs = '', sname = null, sid = null, fin = null, order = [];
for await (const ch of s) {
  const c = ch.choices[0];
  if (!c) continue;
  const d = c.delta;
  if (d.reasoning_content) { sr += d.reasoning_content; order.push('r'); }
  if (d.content) { sc += d.content; order.push('c'); }
  for (const tc of d.tool_calls || []) {
    order.push('t');
    if (tc.id) { sid = tc.id; sname = tc.function.name; }
    sargs += tc.function.arguments || '';
  }
  if (c.finish_reason) fin = c.finish_reason;
}
check('stream: deltas rebuild the message', sc === (wantContent || '') && sr === (wantReasoning || '') && sid &&
  sname === 'get_weather' && validArgs({ function: { arguments: sargs } }) && fin === 'tool_calls' &&
  order.includes('t') && order.lastIndexOf('r') < order.indexOf('t') && order.lastIndexOf('c') < order.indexOf('t'),
  JSON.stringify({ sc, sr, sargs, sname, fin, order }));
if (think) {
  const none = await client.chat.completions.create({ ...body, reasoning_format: 'none' });
  const nm = none.choices[0].message;
  check("reasoning_format 'none': the thought stays in content", nm.content === '<think>\nLet me check.' &&
    nm.reasoning_content === undefined && nm.tool_calls.length === 1, JSON.stringify(none.choices[0]));
}
check('stream accumulated = non-stream', JSON.stringify(plain.choices[0].message.tool_calls.map(c => [c.type, c.function])) ===
  JSON.stringify(m.tool_calls.map(c => [c.type, c.function])), JSON.stringify(plain.choices[0].message));
// tool_choice "required" and a named function: a grammar admits only calls, so every seed at
// temperature 1 gives a call (content null) whose arguments follow the tool's parameters. Run under
// the think template (Qwen QwQ's: the Hermes 2 Pro format, whose <tool_call> blocks are what this
// model writes); ChatML's generic format gets llama.cpp's JSON grammar ({"tool_calls": [...]}),
// whose strings this bigram model, made for <tool_call> blocks, does not close at temperature 1.
if (think) {
  const tools2 = [...tools, { type: 'function', function: { name: 'add', parameters: { type: 'object',
    properties: { a: { type: 'integer' }, b: { type: 'integer' } }, required: ['a', 'b'] } } }];
  const okArgs = (c) => {
    let a;
    try { a = JSON.parse(c.function.arguments); } catch { return false; }
    if (c.function.name === 'add') return Number.isInteger(a.a) && Number.isInteger(a.b) && Object.keys(a).length === 2;
    return c.function.name === 'get_weather' && typeof a === 'object' && a !== null &&
      Object.entries(a).every(([k, v]) => ['city', 'unit'].includes(k) && typeof v === 'string');
  };
  let calls = 0;
  const n = 12;
  for (let seed = 1; seed <= n; seed++) {
    const r = await client.chat.completions.create({ ...body, tools: tools2, tool_choice: 'required', temperature: 1.0,
      seed, max_tokens: 300 });
    const mm = r.choices[0].message;
    calls += mm.content === null && mm.tool_calls?.length >= 1 && mm.tool_calls.every(okArgs) &&
      r.choices[0].finish_reason === 'tool_calls';
  }
  check(`tool_choice required: ${n} seeds at temperature 1 give calls`, calls === n, `${calls}/${n}`);
  let named = 0;
  for (let seed = 1; seed <= 6; seed++) {
    const r = await client.chat.completions.create({ ...body, tools: tools2, temperature: 1.0, seed, max_tokens: 300,
      tool_choice: { type: 'function', function: { name: 'add' } } });
    const mm = r.choices[0].message;
    named += mm.tool_calls?.length >= 1 && mm.tool_calls.every(c => c.function.name === 'add' && okArgs(c));
  }
  check('tool_choice naming add: only add is called', named === 6, `${named}/6`);
  try {
    await client.chat.completions.create({ ...body, tools: tools2, tool_choice: { type: 'function', function: { name: 'nope' } } });
    check('tool_choice naming an unknown tool -> 400', false, 'no error');
  } catch (err) {
    check('tool_choice naming an unknown tool -> 400', err.status === 400 && /no tool named 'nope'/.test(err.message), err.message);
  }
}

process.exit(failed ? 1 : 0);
