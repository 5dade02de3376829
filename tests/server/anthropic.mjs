// Drives a running `oxillama serve` with Anthropic's official Node SDK (POST /v1/messages and
// /v1/messages/count_tokens). Prints PASS/FAIL lines; exits 1 on a failure.
// usage: node anthropic.mjs BASE_URL API_KEY MODE GOLDEN_RUN_DIR
//   plain:  the server renders messages' contents back to back (anthropic.sh's template), so a user
//           message "Once upon a time" is golden/run/once.prompt: the reply is llama.cpp's greedy
//           continuation golden/run/once.expected, streamed or not, and a stop sequence ends it
//   chatml: stories260K under ChatML: count_tokens of "Hi" is llama-server's 42 tokens (the count
//           run.sh checks for the chat route), and a reply equals the chat route's for that chat
//   tools:  make_toolcall_model.py's model: a tool_use block with an input object, and a round trip
//   think:  that model under Qwen QwQ's template: a thinking block before the call; tool_choice any
//           and a named tool give the call alone
import Anthropic from '@anthropic-ai/sdk';
import fs from 'node:fs';
import path from 'node:path';

const [base, key, mode, goldenDir] = process.argv.slice(2);
const client = new Anthropic({ baseURL: base, apiKey: key, maxRetries: 0, timeout: 60000 });
let failed = 0;

function check(name, ok, detail) {
  console.log(`${ok ? 'PASS' : 'FAIL'}  anthropic ${mode}: ${name}${ok || detail === undefined ? '' : ': ' + detail}`);
  if (!ok) failed++;
}

// The same request on the chat completions route, through plain HTTP.
async function chatRoute(body) {
  const r = await fetch(base + '/v1/chat/completions', {
    method: 'POST', headers: { 'Content-Type': 'application/json', Authorization: 'Bearer ' + key },
    body: JSON.stringify(body),
  });
  return r.json();
}

// A request the SDK sends unchanged; the error must be a 400 in Anthropic's shape naming what is wrong.
async function expectBadRequest(name, body, pattern) {
  try {
    await client.messages.create(body);
    check(name, false, 'no error');
  } catch (e) {
    check(name, e instanceof Anthropic.BadRequestError && e.status === 400 && e.error?.type === 'error' &&
      e.error?.error?.type === 'invalid_request_error' && pattern.test(e.error?.error?.message),
      `${e.status} ${JSON.stringify(e.error)}`);
  }
}

// Streams a request by hand: the event types in order, the text of the text deltas, the last
// message_delta.
async function streamEvents(body) {
  const types = [];
  let text = '', delta = null, start = null;
  for await (const ev of await client.messages.create({ ...body, stream: true })) {
    types.push(ev.type);
    if (ev.type === 'message_start') start = ev.message;
    if (ev.type === 'content_block_delta' && ev.delta.type === 'text_delta') text += ev.delta.text;
    if (ev.type === 'message_delta') delta = ev;
  }
  return { types, text, delta, start };
}

const textOf = m => m.content.filter(b => b.type === 'text').map(b => b.text).join('');

if (mode === 'plain') {
  const prompt = fs.readFileSync(path.join(goldenDir, 'once.prompt'), 'utf8');
  const expected = fs.readFileSync(path.join(goldenDir, 'once.expected'), 'utf8');
  const greedy = { model: 'any', max_tokens: 64, temperature: 0, messages: [{ role: 'user', content: prompt }] };

  const m = await client.messages.create(greedy);
  check('message = llama.cpp greedy text', m.type === 'message' && m.role === 'assistant' && m.id.startsWith('msg_') &&
    m.content.length === 1 && m.content[0].type === 'text' && m.content[0].text === expected,
  JSON.stringify(m.content));
  check('max_tokens: stop_reason, usage', m.stop_reason === 'max_tokens' && m.stop_sequence === null &&
    m.usage.output_tokens === 64 && m.usage.input_tokens + m.usage.cache_read_input_tokens > 0, JSON.stringify(m));

  const s = await streamEvents(greedy);
  const order = ['message_start', 'content_block_start', 'content_block_delta'];
  check('stream text = llama.cpp greedy text', s.text === expected, JSON.stringify(s.text));
  check('stream events', order.every((t, i) => s.types[i] === t) && s.types.at(-1) === 'message_stop' &&
    s.types.at(-2) === 'message_delta' && s.types.at(-3) === 'content_block_stop' &&
    s.start.content.length === 0 && s.start.stop_reason === null && s.delta.delta.stop_reason === 'max_tokens' &&
    s.delta.usage.output_tokens === 64, JSON.stringify({ types: [...new Set(s.types)], delta: s.delta }));
  // the wire: each event's name is its data's type; the SDK hides the ping that follows the first
  // content_block_start
  const raw = await (await fetch(base + '/v1/messages', {
    method: 'POST', headers: { 'Content-Type': 'application/json', 'x-api-key': key, 'anthropic-version': '2023-06-01' },
    body: JSON.stringify({ ...greedy, stream: true }),
  })).text();
  const frames = raw.split('\n\n').filter(f => f.length).map(f => f.split('\n'));
  check('stream wire: event names, ping', frames.every(f => f.length === 2 && f[0].startsWith('event: ') &&
    f[1].startsWith('data: ') && JSON.parse(f[1].slice(6)).type === f[0].slice(7)) &&
    frames.slice(0, 4).map(f => f[0].slice(7)).join() === 'message_start,content_block_start,ping,content_block_delta' &&
    frames.filter(f => f[0] === 'event: ping').length === 1, raw.slice(0, 600));
  const acc = await client.messages.stream(greedy).finalMessage();
  check('SDK stream accumulator = llama.cpp greedy text', textOf(acc) === expected && acc.stop_reason === 'max_tokens',
    JSON.stringify(acc.content));

  // the system prompt as text blocks joined without a separator (llama-server's conversion) renders
  // the same prompt; metadata changes nothing
  const sys = await client.messages.create({ ...greedy, system: [{ type: 'text', text: 'Once upon' },
    { type: 'text', text: ' a time', cache_control: { type: 'ephemeral' } }], messages: [{ role: 'user', content: '' }],
  metadata: { user_id: 'u-1' } });
  check('system text blocks + metadata', textOf(sys) === expected, JSON.stringify(sys.content));

  // a stop sequence is matched across tokens, not emitted, and named
  const stopped = await client.messages.create({ ...greedy, stop_sequences: ['girl named'] });
  check('stop_sequences', textOf(stopped) === ', there was a little ' && stopped.stop_reason === 'stop_sequence' &&
    stopped.stop_sequence === 'girl named', JSON.stringify(stopped));
  const ss = await streamEvents({ ...greedy, stop_sequences: ['nothing like this', 'girl named'] });
  check('stop_sequences streamed', ss.text === ', there was a little ' && ss.delta.delta.stop_reason === 'stop_sequence' &&
    ss.delta.delta.stop_sequence === 'girl named', JSON.stringify({ text: ss.text, delta: ss.delta }));

  // count_tokens = the prompt tokens the OpenAI routes report for the same conversation and text
  const count = await client.messages.countTokens({ model: 'any', messages: greedy.messages });
  const chat = await chatRoute({ messages: [{ role: 'user', content: prompt }], max_tokens: 1 });
  const cmpl = await (await fetch(base + '/v1/completions', {
    method: 'POST', headers: { 'Content-Type': 'application/json', Authorization: 'Bearer ' + key },
    body: JSON.stringify({ prompt, max_tokens: 1 }),
  })).json();
  check('count_tokens = chat and completions prompt_tokens', count.input_tokens === chat.usage.prompt_tokens &&
    count.input_tokens === cmpl.usage.prompt_tokens && count.input_tokens > 1,
  JSON.stringify([count, chat.usage, cmpl.usage]));

  // errors in Anthropic's shape, naming the field
  await expectBadRequest('unknown field -> 400', { ...greedy, top_a: 1 }, /'top_a' is not a field of \/v1\/messages/);
  await expectBadRequest('service_tier -> 400 not supported', { ...greedy, service_tier: 'auto' },
    /'service_tier' is not supported/);
  const { max_tokens: _, ...noMax } = greedy;
  await expectBadRequest('max_tokens missing -> 400', noMax, /'max_tokens' is required/);
  await expectBadRequest('image block -> 400', { ...greedy, messages: [{ role: 'user', content: [
    { type: 'text', text: 'What is this?' },
    { type: 'image', source: { type: 'base64', media_type: 'image/png', data: 'iVBORw0KGgo=' } }] }] },
  /'messages\[0\]\.content\[1\]': image blocks need the model's vision projector/);
  await expectBadRequest('system role in messages -> 400', { ...greedy, messages: [{ role: 'system', content: 'x' }] },
    /'messages\[0\]\.role': 'system' is not one of user, assistant/);
  await expectBadRequest('thinking budget -> 400', { ...greedy, thinking: { type: 'enabled', budget_tokens: 1024 } },
    /'thinking': type 'enabled'/);
  await expectBadRequest('temperature type -> 400', { ...greedy, temperature: 'hot' }, /'temperature'/);
  await expectBadRequest('server tool -> 400', { ...greedy, tools: [{ type: 'web_search_20250305', name: 'web_search' }] },
    /'tools\[0\]\.type': "web_search_20250305" is not supported/);
} else if (mode === 'chatml') {
  const hi = [{ role: 'user', content: 'Hi' }];
  const count = await client.messages.countTokens({ model: 'any', messages: hi });
  check("count_tokens = llama-server's 42 prompt tokens", count.input_tokens === 42, JSON.stringify(count));
  const story = [{ role: 'user', content: 'Tell me a story.' }];
  const m = await client.messages.create({ model: 'any', max_tokens: 24, temperature: 0, messages: story });
  const chat = await chatRoute({ messages: story, max_tokens: 24, temperature: 0 });
  check('message text = chat route content', m.content.length === 1 && m.content[0].text === chat.choices[0].message.content &&
    m.usage.output_tokens === chat.usage.completion_tokens, JSON.stringify([m.content, chat.choices[0].message]));
  const s = await streamEvents({ model: 'any', max_tokens: 24, temperature: 0, messages: story });
  check('stream text = chat route content', s.text === chat.choices[0].message.content, JSON.stringify(s.text));
  // content blocks join with newlines, as the chat route joins text parts
  const parts = await client.messages.countTokens({ model: 'any', messages: [{ role: 'user', content: [
    { type: 'text', text: 'Tell me' }, { type: 'text', text: 'a story.' }] }] });
  const chatParts = await chatRoute({ messages: [{ role: 'user', content: 'Tell me\na story.' }], max_tokens: 1 });
  check('text blocks = chat route text parts', parts.input_tokens === chatParts.usage.prompt_tokens,
    JSON.stringify([parts, chatParts.usage]));
  try {
    await new Anthropic({ baseURL: base, apiKey: 'wrong', maxRetries: 0 }).messages.create(
      { model: 'any', max_tokens: 1, messages: hi });
    check('wrong key -> 401', false, 'no error');
  } catch (e) {
    check('wrong key -> 401', e instanceof Anthropic.AuthenticationError && e.error?.error?.type === 'authentication_error',
      `${e.status} ${JSON.stringify(e.error)}`);
  }
} else if (mode === 'think') {
  // a template whose prompt opens <think> (Qwen QwQ's): by llama-server's reasoning format the text
  // before the call is a thinking block, first in the content, its deltas closed by a signature
  const body = { model: 'any', max_tokens: 64, temperature: 0, messages: [{ role: 'user', content: 'Weather in Paris?' }],
    tools: [{ name: 'get_weather', input_schema: { type: 'object', properties: { city: { type: 'string' } } } }] };
  const m = await client.messages.create(body);
  check('thinking block, then tool_use', m.content.length === 2 && m.content[0].type === 'thinking' &&
    m.content[0].thinking === 'Let me check.' && m.content[0].signature === '' && m.content[1].type === 'tool_use' &&
    m.content[1].input.city === 'Paris' && m.stop_reason === 'tool_use', JSON.stringify(m.content));
  const types = [];
  let thought = '';
  for await (const ev of await client.messages.create({ ...body, stream: true })) {
    types.push(ev.type + (ev.content_block ? ':' + ev.content_block.type : '') + (ev.delta?.type ? ':' + ev.delta.type : ''));
    if (ev.delta?.type === 'thinking_delta') thought += ev.delta.thinking;
  }
  const at = t => types.indexOf(t);
  check('stream: thinking deltas, signature, then the call', thought === 'Let me check.' &&
    at('content_block_start:thinking') < at('content_block_delta:thinking_delta') &&
    at('content_block_delta:thinking_delta') < at('content_block_delta:signature_delta') &&
    at('content_block_delta:signature_delta') < at('content_block_start:tool_use') && !types.includes('content_block_start:text'),
  JSON.stringify(types));
  // tool_choice any (the chat route's required) and a named tool: a grammar from the first token
  // admits calls only
  const props = { type: 'object', properties: { city: { type: 'string' }, unit: { type: 'string' } } };
  for (const tc of [{ type: 'any' }, { type: 'tool', name: 'get_weather' }]) {
    const r = await client.messages.create({ ...body, tools: [{ name: 'get_weather', input_schema: props }],
      tool_choice: tc });
    const uses = r.content.filter(b => b.type === 'tool_use');
    check(`tool_choice ${tc.type}: the call alone`, uses.length === 1 && uses[0].name === 'get_weather' &&
      uses[0].input.city === 'Paris' && !r.content.some(b => b.type === 'text') && r.stop_reason === 'tool_use',
    JSON.stringify(r));
  }
  const acc = await client.messages.stream(body).finalMessage();
  check('SDK accumulator = non-stream', JSON.stringify(acc.content.map(b => b.type === 'tool_use' ? [b.name, b.input] : b)) ===
    JSON.stringify(m.content.map(b => b.type === 'tool_use' ? [b.name, b.input] : b)), JSON.stringify(acc.content));
  // the thinking block sent back is the assistant turn's reasoning_content: the same prompt as the
  // chat route's twin
  const turn = [...body.messages, { role: 'assistant', content: m.content },
    { role: 'user', content: [{ type: 'tool_result', tool_use_id: m.content[1].id, content: 'sunny' }] }];
  const count = await client.messages.countTokens({ model: 'any', tools: body.tools, messages: turn });
  const chat = await chatRoute({ max_tokens: 1, tools: [{ type: 'function', function: { name: 'get_weather',
    description: '', parameters: body.tools[0].input_schema } }], messages: [...body.messages,
    { role: 'assistant', content: '', reasoning_content: 'Let me check.', tool_calls: [{ id: m.content[1].id,
      type: 'function', function: { name: 'get_weather', arguments: JSON.stringify(m.content[1].input) } }] },
    { role: 'tool', tool_call_id: m.content[1].id, content: 'sunny' }] });
  check('thinking input: count_tokens = chat route prompt_tokens', count.input_tokens === chat.usage.prompt_tokens,
    JSON.stringify([count, chat.usage]));
} else if (mode === 'tools') {
  const tools = [{ name: 'get_weather', description: 'The weather in a city', input_schema: { type: 'object',
    properties: { city: { type: 'string' }, unit: { type: 'string' } } } }];
  const ask = [{ role: 'user', content: 'What is the weather in Paris?' }];
  const body = { model: 'any', max_tokens: 64, temperature: 0, tools, messages: ask };
  const wantInput = i => i && i.city === 'Paris' && i.unit === 'celsius' && Object.keys(i).length === 2;

  const m = await client.messages.create(body);
  const use = m.content.find(b => b.type === 'tool_use');
  check('tool_use block with an input object', m.content.length === 2 && m.content[0].type === 'text' &&
    m.content[0].text === 'Let me check.' && use && use.name === 'get_weather' && typeof use.id === 'string' &&
    use.id.length > 0 && wantInput(use.input) && m.stop_reason === 'tool_use', JSON.stringify(m));

  const acc = await client.messages.stream(body).finalMessage();
  const ause = acc.content.find(b => b.type === 'tool_use');
  check('stream accumulated = non-stream', textOf(acc) === 'Let me check.' && ause && ause.name === 'get_weather' &&
    wantInput(ause.input) && acc.stop_reason === 'tool_use', JSON.stringify(acc.content));
  const types = [];
  let partial = '';
  for await (const ev of await client.messages.create({ ...body, stream: true })) {
    types.push(ev.type + (ev.content_block ? ':' + ev.content_block.type : '') + (ev.delta?.type ? ':' + ev.delta.type : ''));
    if (ev.delta?.type === 'input_json_delta') partial += ev.delta.partial_json;
  }
  // the arguments arrive in two tokens: the input grows in two input_json_deltas, as llama-server
  // streams them
  check('stream: text block, then tool_use with input_json_delta', types.indexOf('content_block_start:text') <
    types.indexOf('content_block_start:tool_use') &&
    types.filter(t => t === 'content_block_delta:input_json_delta').length === 2 &&
    wantInput(JSON.parse(partial || 'null')) && types.includes('message_delta:') === false &&
    types.at(-1) === 'message_stop', JSON.stringify(types));

  // the round trip: the reply's blocks as the assistant turn, the result as a tool_result; its
  // prompt is the chat route's for the same conversation in OpenAI's shape
  const round = [...ask, { role: 'assistant', content: m.content },
    { role: 'user', content: [{ type: 'tool_result', tool_use_id: use.id, content: [{ type: 'text', text: '18 C' }] }] }];
  const again = await client.messages.create({ ...body, messages: round });
  check('round trip: tool_result accepted', again.stop_reason === 'tool_use' &&
    wantInput(again.content.find(b => b.type === 'tool_use')?.input), JSON.stringify(again));
  const count = await client.messages.countTokens({ model: 'any', tools, messages: round });
  const chat = await chatRoute({ max_tokens: 1, tools: [{ type: 'function', function: { name: 'get_weather',
    description: 'The weather in a city', parameters: tools[0].input_schema } }], messages: [...ask,
    { role: 'assistant', content: 'Let me check.', tool_calls: [{ id: use.id, type: 'function',
      function: { name: 'get_weather', arguments: JSON.stringify(use.input) } }] },
    { role: 'tool', tool_call_id: use.id, content: '18 C' }] });
  check('round trip: count_tokens = chat route prompt_tokens', count.input_tokens === chat.usage.prompt_tokens &&
    count.input_tokens > 42, JSON.stringify([count, chat.usage]));

  // tool_choice none drops the tools (any and a named tool: the think mode, whose template has the
  // Hermes 2 Pro format this model writes; ChatML's generic format gets llama.cpp's JSON grammar)
  const none = await client.messages.create({ ...body, tool_choice: { type: 'none' } });
  check('tool_choice none: text only', none.content.every(b => b.type === 'text') && none.stop_reason === 'end_turn' &&
    textOf(none).startsWith('Let me check.<tool_call>'), JSON.stringify(none));
  await expectBadRequest('tool_choice unknown tool -> 400', { ...body, tool_choice: { type: 'tool', name: 'nope' } },
    /no tool named 'nope'/);
  await expectBadRequest('tool_result in an assistant turn -> 400', { ...body, messages: [...ask,
    { role: 'assistant', content: [{ type: 'tool_result', tool_use_id: 'x', content: 'y' }] }] },
  /'messages\[1\]\.content\[0\]': a tool_result block belongs in a user message/);
}
process.exit(failed ? 1 : 0);
