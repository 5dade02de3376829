// Streamed tool calls with the OpenAI Node client, as llama-server streams them: the reply is
// re-parsed after each token and what its call gained is sent (llama.cpp's common_chat_msg_diff):
// the first delta of a call carries index, id, type, name and the arguments so far, later ones the
// index and more arguments. The model (make_toolcall_model.py) answers "Let me check." then
// <tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris", "unit": "celsius"}}\n</tool_call>
// in tokens that end after `"get_weather", `, after `{"city": ` and after `"celsius"}}`. By llama.cpp's
// rules (tests/test-chat-parser.cpp test_json_with_dumped_args: a call is sent once its name is
// whole, with "" before its arguments begin; "broken before object value (space)" gives
// `{"arg1":`) and nlohmann's compact dump of the finished arguments, the argument deltas are
// "", `{"city":` and `"Paris","unit":"celsius"}`.
// usage: node toolstream.mjs BASE_URL. Prints PASS/FAIL lines; exits 1 on a failure.
import OpenAI from 'openai';

const client = new OpenAI({ baseURL: process.argv[2] + '/v1', apiKey: 'none', maxRetries: 0, timeout: 60000 });
const tools = [{ type: 'function', function: { name: 'get_weather', parameters: { type: 'object',
  properties: { city: { type: 'string' }, unit: { type: 'string' } } } } }];
const body = { model: 'toolcall', messages: [{ role: 'user', content: 'What is the weather in Paris?' }], tools, temperature: 0 };
let failed = 0;
const check = (name, ok, detail) => {
  console.log(`${ok ? 'PASS' : 'FAIL'}  node tool stream: ${name}${ok ? '' : ': ' + detail}`);
  if (!ok) failed++;
};

const plain = await client.chat.completions.create(body);
const pcall = (plain.choices[0].message.tool_calls || [])[0];
check('non-stream: one call, arguments as llama.cpp dumps them', plain.choices[0].message.tool_calls?.length === 1 &&
  pcall.function.name === 'get_weather' && pcall.function.arguments === '{"city":"Paris","unit":"celsius"}',
  JSON.stringify(plain.choices[0].message));

const s = await client.chat.completions.create({ ...body, stream: true });
const pieces = [], order = [];
let content = '', fin = null;
for await (const ch of s) {
  const c = ch.choices[0];
  if (!c) continue;
  if (c.delta.content) { content += c.delta.content; order.push('c'); }
  for (const tc of c.delta.tool_calls || []) { pieces.push(tc); order.push('t'); }
  if (c.finish_reason) fin = c.finish_reason;
}
const first = pieces[0] || {};
check('first call delta: index, id, type, name', first.index === 0 && typeof first.id === 'string' &&
  first.id.length > 0 && first.type === 'function' && first.function?.name === 'get_weather',
  JSON.stringify(first));
check('later deltas: index and arguments only', pieces.length > 1 && pieces.slice(1).every(p => p.index === 0 &&
  p.id === undefined && p.type === undefined && p.function?.name === undefined &&
  Object.keys(p).sort().join() === 'function,index' && typeof p.function.arguments === 'string'), JSON.stringify(pieces));
const args = pieces.map(p => p.function?.arguments ?? '');
check('arguments arrive in more than one delta', args.filter(a => a.length > 0).length > 1, JSON.stringify(args));
check('argument deltas as llama-server cuts them', JSON.stringify(args) ===
  JSON.stringify(['', '{"city":', '"Paris","unit":"celsius"}']), JSON.stringify(args));
check('concatenated deltas = non-stream arguments', args.join('') === pcall?.function.arguments,
  JSON.stringify({ streamed: args.join(''), plain: pcall?.function.arguments }));
check('content before the call, finish tool_calls', content === 'Let me check.' && fin === 'tool_calls' &&
  order.lastIndexOf('c') < order.indexOf('t'), JSON.stringify({ content, fin, order }));

// the client's own accumulator rebuilds the same call from the deltas
const runner = client.beta.chat.completions.stream(body);
const final = await runner.finalChatCompletion();
const acall = (final.choices[0].message.tool_calls || [])[0];
check('client accumulator = non-stream call', final.choices[0].message.tool_calls?.length === 1 &&
  acall.function.name === 'get_weather' && acall.function.arguments === pcall?.function.arguments &&
  acall.id === acall.id.trim() && acall.id.length > 0, JSON.stringify(final.choices[0].message));

process.exit(failed ? 1 : 0);
