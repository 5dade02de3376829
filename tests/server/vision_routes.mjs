// Images on the routes beyond chat, the image cache, Qwen2-VL and the image token limits, through
// the official OpenAI and Anthropic Node clients and plain HTTP for llama-server's /completion.
// usage: node vision_routes.mjs BASE_URL MODE IMAGE_PNG OTHER_PNG GREEDY_IDS
//   llava15, qwen2vl: `serve --mmproj` of that golden pair with a template that outputs the message
//       unchanged, so an image part and "Describe:" are the golden prompt "<__media__>\nDescribe:":
//       the reply is llama.cpp's 8 greedy tokens (GREEDY_IDS of the pair's golden file, detokenized
//       by /detokenize) on the chat route, /completion (multimodal_data) and /v1/messages (an image
//       block); the prompt takes the golden's tokens; a repeated image reuses the cached prefix
//       through it, a different image (OTHER_PNG) only the text before it; refusals are 400s
//   llava15-min64: --image-min-tokens 64 on a fixed-size projector: ignored, as llama.cpp does
//   qwen2vl-min64, qwen2vl-max4: --image-min-tokens / --image-max-tokens: the prompt takes the
//       image rows of llama.cpp's calc_size_preserved_ratio (derived below)
//   text: no --mmproj: images on /completion and /v1/messages are 400s naming --mmproj
// Prints PASS/FAIL lines; exits 1 on a failure.
import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import fs from 'node:fs';

const [base, mode, imagePath, otherPath, greedyIds] = process.argv.slice(2);
const client = new OpenAI({ baseURL: base + '/v1', apiKey: 'none', maxRetries: 0, timeout: 60000 });
const anthropic = new Anthropic({ baseURL: base, apiKey: 'none', maxRetries: 0, timeout: 60000 });
let failed = 0;

function check(name, ok, detail) {
  console.log(`${ok ? 'PASS' : 'FAIL'}  vision ${mode}: ${name}${ok || detail === undefined ? '' : ': ' + detail}`);
  if (!ok) failed++;
}

const b64 = (p) => fs.readFileSync(p).toString('base64');
const dataUri = (p) => 'data:image/png;base64,' + b64(p);
const chat = (p) => client.chat.completions.create({
  model: 'x', temperature: 0, max_tokens: 8,
  messages: [{ role: 'user', content: [
    { type: 'image_url', image_url: { url: dataUri(p) } }, { type: 'text', text: 'Describe:' }] }],
});
const cachedOf = (r) => (r.usage.prompt_tokens_details ? r.usage.prompt_tokens_details.cached_tokens : -1);

async function post(route, body) {
  const r = await fetch(base + route, {
    method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify(body),
  });
  return { status: r.status, json: await r.json() };
}
const completion = (prompt, extra = {}) => post('/completion', { prompt, n_predict: 8, temperature: 0, ...extra });
const golden = (p) => ({ prompt_string: '<__media__>\nDescribe:', multimodal_data: [b64(p)] });

async function expect400(name, route, body, needle) {
  const r = await post(route, body);
  const msg = r.json.error ? r.json.error.message : JSON.stringify(r.json);
  check(name, r.status === 400 && msg.includes(needle), `${r.status} ${msg}`);
}

async function anthropicError(name, content, needle) {
  try {
    await anthropic.messages.create({ model: 'x', max_tokens: 8, temperature: 0,
      messages: [{ role: 'user', content }] });
    check(name, false, 'no error');
  } catch (e) {
    const msg = e.error?.error?.message ?? String(e);
    check(name, e instanceof Anthropic.BadRequestError && e.status === 400 && msg.includes(needle),
      `${e.status} ${msg}`);
  }
}
const imageBlock = (p, mediaType = 'image/png') =>
  ({ type: 'image', source: { type: 'base64', media_type: mediaType, data: b64(p) } });

// The prompt's tokens for the golden image, and the tokens in front of the image:
//   llava15: BOS, 9 image rows, "\nDescribe:" (9 tokens) = 19; 1 in front (golden/mm/README.md)
//   qwen2vl: BOS + "<|vision_start|>" (14 tokens), 12 image rows, "<|vision_end|>\nDescribe:" (20)
//       = 46; 14 in front
//   qwen2vl-min64: llama.cpp's calc_size_preserved_ratio for the 44x30 image with align
//       28 = patch 14 x merge 2, min_pixels = 64 x 28 x 28 = 50176, max_pixels = 4096 x 784:
//       h = max(28, round(30/28) x 28) = 28, w = max(28, round(44/28) x 28) = 56; 28 x 56 = 1568 <
//       50176, so beta = sqrt(50176 / (30 x 44)) = sqrt(38.0121) = 6.16540, h = ceil(30 x 6.16540 / 28)
//       x 28 = ceil(6.6058) x 28 = 196, w = ceil(44 x 6.16540 / 28) x 28 = ceil(9.6885) x 28 = 280:
//       a 280x196 image, a 10 x 7 grid of merged tokens = 70 rows: 14 + 70 + 20 = 104
//   qwen2vl-max4: min_pixels = 2 x 784 = 1568, max_pixels = 4 x 784 = 3136: h = 28, w = 56 as
//       above, 1568 is neither above 3136 nor below 1568: a 56x28 image, 2 x 1 = 2 rows: 14 + 2 + 20
//       = 36
//   llava15-min64: the mlp projector's fixed 42x42 image ignores the limits: 19
const layout = {
  llava15: [19, 1], qwen2vl: [46, 14], 'llava15-min64': [19, 1], 'qwen2vl-min64': [104, 14], 'qwen2vl-max4': [36, 14],
};

if (mode === 'text') {
  await expect400('/completion multimodal_data without --mmproj', '/completion',
    { prompt: golden(imagePath), n_predict: 1 }, '--mmproj');
  await anthropicError('/v1/messages image block without --mmproj', [imageBlock(imagePath),
    { type: 'text', text: 'Describe:' }], '--mmproj');
  // a prompt object without multimodal_data is its prompt string
  const r = await completion({ prompt_string: 'Once upon' }, { n_predict: 2 });
  const s = await completion('Once upon', { n_predict: 2 });
  check('/completion prompt_string alone = the string', r.status === 200 && r.json.content === s.json.content &&
    r.json.tokens_evaluated === s.json.tokens_evaluated, JSON.stringify([r.json, s.json.content]));
} else {
  const [nPrompt, nFront] = layout[mode];
  const ids = greedyIds.split(',').map(Number);
  const expected = (await post('/detokenize', { tokens: ids })).json.content;
  const goldenReply = !mode.includes('-') || mode === 'llava15-min64';
  check('greedy ids read', ids.length === 8 && typeof expected === 'string', greedyIds);

  const r1 = await chat(imagePath);
  check(`prompt tokens = ${nPrompt}`, r1.usage.prompt_tokens === nPrompt, JSON.stringify(r1.usage));
  if (goldenReply) {
    check('chat reply = llama.cpp greedy', r1.choices[0].message.content === expected,
      JSON.stringify([r1.choices[0].message.content, expected]));
  }
  const c1 = await completion(golden(imagePath));
  check(`/completion tokens_evaluated = ${nPrompt}`, c1.status === 200 && c1.json.tokens_evaluated === nPrompt,
    JSON.stringify(c1.json.tokens_evaluated ?? c1.json));
  if (goldenReply) {
    check('/completion multimodal_data = llama.cpp greedy', c1.json.content === expected,
      JSON.stringify([c1.json.content, expected]));
    // the prompt text has no image rows (llama-server's server_tokens::detokenize)
    check('/completion prompt text', typeof c1.json.prompt === 'string' && c1.json.prompt.endsWith('\nDescribe:'),
      JSON.stringify(c1.json.prompt));
  }
}

if (mode === 'llava15' || mode === 'qwen2vl') {
  const [nPrompt, nFront] = layout[mode];
  const expected = (await post('/detokenize', { tokens: greedyIds.split(',').map(Number) })).json.content;
  // the image cache: a request takes the slot whose cache shares the longest prefix with it
  const r2 = await chat(imagePath);
  check('same image: reply', r2.choices[0].message.content === expected, JSON.stringify(r2.choices[0].message));
  check('same image: the prompt but its last token cached, through the image', cachedOf(r2) === nPrompt - 1,
    JSON.stringify(r2.usage));
  const r3 = await chat(otherPath);
  check('other image: only the tokens before the image cached', cachedOf(r3) === nFront, JSON.stringify(r3.usage));
  check('other image: another reply', r3.choices[0].message.content !== expected,
    JSON.stringify(r3.choices[0].message.content));
  const r4 = await chat(otherPath);
  check('other image again: cached through it', cachedOf(r4) === nPrompt - 1, JSON.stringify(r4.usage));
  check('other image again: same reply', r4.choices[0].message.content === r3.choices[0].message.content,
    JSON.stringify([r3.choices[0].message.content, r4.choices[0].message.content]));
  const r5 = await chat(imagePath);
  check('golden image after the other: not through the image, reply', cachedOf(r5) === nFront &&
    r5.choices[0].message.content === expected, JSON.stringify([r5.usage, r5.choices[0].message.content]));
  const c2 = await completion(golden(otherPath));
  check('/completion other image: timings.cache_n not through the image, reply', c2.status === 200 &&
    c2.json.timings.cache_n === nFront && c2.json.content === r3.choices[0].message.content,
    JSON.stringify([c2.json.timings, c2.json.content]));
  const c3 = await completion(golden(otherPath));
  check('/completion other image again: timings.cache_n through it', c3.status === 200 &&
    c3.json.timings.cache_n === nPrompt - 1 && c3.json.content === r3.choices[0].message.content,
    JSON.stringify([c3.json.timings, c3.json.content]));

  // /v1/messages: an image block (Anthropic's base64 source)
  const m = await anthropic.messages.create({ model: 'x', max_tokens: 8, temperature: 0,
    messages: [{ role: 'user', content: [imageBlock(imagePath), { type: 'text', text: 'Describe:' }] }] });
  const mt = m.content.filter((b) => b.type === 'text').map((b) => b.text).join('');
  check('/v1/messages image block = llama.cpp greedy', mt === expected, JSON.stringify([mt, expected]));
  check('/v1/messages usage', m.usage.input_tokens + m.usage.cache_read_input_tokens === nPrompt &&
    m.usage.output_tokens === 8, JSON.stringify(m.usage));
  let st = '';
  for await (const ev of await anthropic.messages.create({ model: 'x', max_tokens: 8, temperature: 0, stream: true,
    messages: [{ role: 'user', content: [imageBlock(imagePath), { type: 'text', text: 'Describe:' }] }] })) {
    if (ev.type === 'content_block_delta' && ev.delta.type === 'text_delta') st += ev.delta.text;
  }
  check('/v1/messages stream = llama.cpp greedy', st === expected, JSON.stringify(st));
  const ct = await anthropic.messages.countTokens({ model: 'x',
    messages: [{ role: 'user', content: [imageBlock(imagePath), { type: 'text', text: 'Describe:' }] }] });
  check(`/v1/messages/count_tokens = ${nPrompt}`, ct.input_tokens === nPrompt, JSON.stringify(ct));

  // refusals
  await anthropicError('/v1/messages url source', [{ type: 'image', source: { type: 'url',
    url: 'https://example.com/a.png' } }, { type: 'text', text: 'x' }], 'not fetched');
  await anthropicError('/v1/messages gif media type', [imageBlock(imagePath, 'image/gif'),
    { type: 'text', text: 'x' }], "messages[0].content[0].source.media_type': 'image/gif'");
  await anthropicError('/v1/messages bad base64', [{ type: 'image', source: { type: 'base64',
    media_type: 'image/png', data: '@@@@' } }], 'messages[0].content[0].source.data');
  await expect400('/completion more markers than images', '/completion',
    { prompt: { prompt_string: '<__media__><__media__>x', multimodal_data: [b64(imagePath)] } }, 'markers');
  await expect400('/completion fewer markers than images', '/completion',
    { prompt: { prompt_string: '<__media__>x', multimodal_data: [b64(imagePath), b64(imagePath)] } }, 'markers');
  await expect400('/completion bad base64', '/completion',
    { prompt: { prompt_string: '<__media__>x', multimodal_data: ['@@@@'] } }, "prompt.multimodal_data[0]");
  await expect400('/completion not an image', '/completion',
    { prompt: { prompt_string: '<__media__>x', multimodal_data: [Buffer.from('hello').toString('base64')] } },
    'does not decode');
  await expect400('/completion multimodal_data not a list', '/completion',
    { prompt: { prompt_string: '<__media__>x', multimodal_data: b64(imagePath) } }, 'prompt.multimodal_data');
  await expect400('/completion images in a list of prompts', '/completion',
    { prompt: ['a', golden(imagePath)] }, 'one prompt');
  await expect400('/completion unknown prompt field', '/completion',
    { prompt: { prompt_string: 'x', images: [] } }, "prompt.images");
  await expect400('/completion prompt object without prompt_string', '/completion',
    { prompt: { multimodal_data: [b64(imagePath)] } }, 'prompt.prompt_string');
}
process.exit(failed ? 1 : 0);
