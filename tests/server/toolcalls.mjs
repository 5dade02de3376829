// The OpenAI Node client's own stream accumulator over oxillama's streamed tool calls (the model
// of make_toolcall_model.py, which answers "Let me check." and one get_weather call).
// usage: node toolcalls.mjs BASE_URL MODEL_ID. Prints PASS/FAIL lines; exits 1 on a failure.
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

// the client's accumulator rebuilds the message from the deltas, as an application would
const runner = client.beta.chat.completions.stream(body);
const deltas = [];
runner.on('chunk', c => deltas.push(c));
const final = await runner.finalChatCompletion();
const m = final.choices[0].message, call = (m.tool_calls || [])[0];
let args = null;
try { args = JSON.parse(call.function.arguments); } catch { /* checked below */ }
check('stream accumulated = one call', m.content === 'Let me check.' && m.tool_calls.length === 1 &&
  call.type === 'function' && call.id && call.function.name === 'get_weather' && args && args.city === 'Paris' &&
  args.unit === 'celsius' && Object.keys(args).length === 2 && final.choices[0].finish_reason === 'tool_calls',
  JSON.stringify(final.choices[0]) + ' ' + deltas.length + ' chunks');
const plain = await client.chat.completions.create(body);
check('stream accumulated = non-stream', JSON.stringify(plain.choices[0].message.tool_calls.map(c => [c.type, c.function])) ===
  JSON.stringify(m.tool_calls.map(c => [c.type, c.function])), JSON.stringify(plain.choices[0].message));
process.exit(failed ? 1 : 0);
