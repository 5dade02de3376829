// Images in chat requests, through the official OpenAI Node client.
// usage: node vision.mjs BASE_URL MODE IMAGE_PNG TRUNCATED_PNG GREEDY_IDS [N_TOKENS]
//   vision: `serve --mmproj golden/mm/llava15.mmproj.gguf` with a template that outputs the message
//           unchanged: the image and "Describe:" give llama.cpp's 8 greedy tokens (GREEDY_IDS, from
//           llava15.golden.gguf, detokenized by /detokenize); a second identical request reuses the
//           cache through the image; the Responses API's input_image gives the same; http URLs, truncated PNGs, bad data: URIs are 400s; /props and
//           /v1/models say the model takes images
//   gemma3: `serve --mmproj golden/mm/gemma3.mmproj.gguf` on golden/arch/gemma3.gguf: the reply, the
//           stream and a second request give llama.cpp's 8 greedy tokens, the prompt has the golden's
//           N_TOKENS tokens (<start_of_image> and <end_of_image> included) and the second request
//           reuses all but the last
//   text:   the same server without --mmproj: an image part is a 400 naming --mmproj
// Prints PASS/FAIL lines; exits 1 on a failure.
import OpenAI from 'openai';
import fs from 'node:fs';

const [base, mode, imagePath, cutPath, greedyIds, nTokens] = process.argv.slice(2);
const client = new OpenAI({ baseURL: base + '/v1', apiKey: 'none', maxRetries: 0, timeout: 60000 });
let failed = 0;

function check(name, ok, detail) {
  console.log(`${ok ? 'PASS' : 'FAIL'}  vision ${mode}: ${name}${ok || detail === undefined ? '' : ': ' + detail}`);
  if (!ok) failed++;
}

async function expectError(name, status, needle, fn) {
  try {
    await fn();
    check(name, false, 'no error');
  } catch (e) {
    check(name, e instanceof OpenAI.APIError && e.status === status && e.message.includes(needle),
      `status ${e.status} ${e.message}`);
  }
}

const dataUri = (p) => 'data:image/png;base64,' + fs.readFileSync(p).toString('base64');
const chat = (url, extra = {}) => client.chat.completions.create({
  model: 'x', temperature: 0, max_tokens: 8, ...extra,
  messages: [{ role: 'user', content: [
    { type: 'image_url', image_url: { url } },
    { type: 'text', text: 'Describe:' },
  ] }],
});

async function expectedText() {
  const ids = greedyIds.split(',').map(Number);
  const dt = await (await fetch(base + '/detokenize', {
    method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify({ tokens: ids }),
  })).json();
  check('greedy ids read', ids.length === 8 && typeof dt.content === 'string', greedyIds);
  return dt.content;
}

if (mode === 'text') {
  await expectError('image part without --mmproj', 400, '--mmproj', () => chat(dataUri(imagePath)));
} else if (mode === 'gemma3') {
  const expected = await expectedText();
  const n = Number(nTokens);
  const r1 = await chat(dataUri(imagePath));
  check('reply = llama.cpp greedy', r1.choices[0].message.content === expected,
    JSON.stringify([r1.choices[0].message.content, expected]));
  check('prompt tokens = llama.cpp', r1.usage.prompt_tokens === n, JSON.stringify([r1.usage, n]));
  const r2 = await chat(dataUri(imagePath), { stream: false });
  check('second request = first', r2.choices[0].message.content === expected,
    JSON.stringify(r2.choices[0].message.content));
  const cached = r2.usage.prompt_tokens_details ? r2.usage.prompt_tokens_details.cached_tokens : -1;
  check('second request reuses the cache', cached === n - 1, JSON.stringify(r2.usage));
  const st = await chat(dataUri(imagePath), { stream: true });
  let text = '';
  for await (const ch of st) {
    if (ch.choices.length) text += ch.choices[0].delta.content ?? '';
  }
  check('stream = llama.cpp greedy', text === expected, JSON.stringify(text));
} else {
  const expected = await expectedText();

  const r1 = await chat(dataUri(imagePath));
  check('reply = llama.cpp greedy', r1.choices[0].message.content === expected,
    JSON.stringify([r1.choices[0].message.content, expected]));
  check('usage', r1.usage.completion_tokens === 8 && r1.choices[0].finish_reason === 'length',
    JSON.stringify(r1.usage));
  // BOS, 9 image rows, "\nDescribe:": llama.cpp's 19 prompt tokens
  check('prompt tokens = llama.cpp', r1.usage.prompt_tokens === 19, JSON.stringify(r1.usage));

  const r2 = await chat(dataUri(imagePath));
  check('second request = first', r2.choices[0].message.content === expected,
    JSON.stringify(r2.choices[0].message.content));
  const cached = r2.usage.prompt_tokens_details ? r2.usage.prompt_tokens_details.cached_tokens : -1;
  // the whole prompt but its last token comes from the cache: through the image
  check('second request reuses the cache', cached === 18, JSON.stringify(r2.usage));

  const st = await client.chat.completions.create({
    model: 'x', temperature: 0, max_tokens: 8, stream: true,
    messages: [{ role: 'user', content: [
      { type: 'image_url', image_url: { url: dataUri(imagePath) } }, { type: 'text', text: 'Describe:' }] }],
  });
  let text = '';
  for await (const ch of st) {
    if (ch.choices.length) text += ch.choices[0].delta.content ?? '';
  }
  check('stream = llama.cpp greedy', text === expected, JSON.stringify(text));

  // the Responses API's input_image part (image_url: a data: URI string)
  const rr = await client.responses.create({
    model: 'x', temperature: 0, max_output_tokens: 8,
    input: [{ role: 'user', content: [
      { type: 'input_image', image_url: dataUri(imagePath) }, { type: 'input_text', text: 'Describe:' }] }],
  });
  check('responses input_image = llama.cpp greedy', rr.output_text === expected, JSON.stringify(rr.output_text));

  await expectError('http URL', 400, 'not fetched', () => chat('http://example.com/a.png'));
  await expectError('https URL', 400, 'not fetched', () => chat('https://example.com/a.png'));
  await expectError('truncated PNG', 400, 'the image does not decode', () => chat(dataUri(cutPath)));
  await expectError('bad base64', 400, 'base64', () => chat('data:image/png;base64,@@@@'));
  await expectError('not a data: URI', 400, 'data: URI', () => chat('file:///etc/passwd'));

  const props = await (await fetch(base + '/props')).json();
  check('/props modalities', props.modalities && props.modalities.vision === true && props.modalities.audio === false,
    JSON.stringify(props.modalities));
  const models = await (await fetch(base + '/v1/models')).json();
  const arch = models.data[0].architecture;
  check('/v1/models input_modalities', arch && JSON.stringify(arch.input_modalities) === '["text","image"]',
    JSON.stringify(arch));
}
process.exit(failed ? 1 : 0);
