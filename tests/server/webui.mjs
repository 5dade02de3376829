// The web chat page of oxillama serve (GET /) in headless Chromium through puppeteer-core: the greedy
// reply typed and streamed through the page equals llama.cpp's (golden/run/once.expected, under
// webui.sh's template that renders the messages' contents back to back), the page loads nothing from
// elsewhere, model output's raw HTML stays text while Markdown and code blocks render, the
// conversation list survives a reload, a refused request shows the server's message, the stop
// button stops a long generation, and the image button stays hidden while /props says the model has
// no vision.
// usage: node webui.mjs BASE_URL GOLDEN_RUN_DIR SCREENSHOT.png CHROMIUM
import fs from 'node:fs';
import path from 'node:path';
import puppeteer from 'puppeteer-core';

const [base, goldenDir, shot, chromium] = process.argv.slice(2);
const prompt = fs.readFileSync(path.join(goldenDir, 'once.prompt'), 'utf8');
const expected = fs.readFileSync(path.join(goldenDir, 'once.expected'), 'utf8');
let failed = 0;
function check(name, ok, detail) {
  console.log(`${ok ? 'PASS' : 'FAIL'}  ${name}${ok ? '' : ': ' + detail}`);
  if (!ok) failed++;
}
const norm = s => s.replace(/\s+/g, ' ').trim();

const browser = await puppeteer.launch({
  executablePath: chromium,
  headless: true,
  args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage', '--no-first-run', '--lang=en-US'],
});
let exitCode = 1;
try {
  const page = await browser.newPage();
  await page.setViewport({ width: 1280, height: 800 });
  const foreign = [], problems = [];
  let streamType = null;
  page.on('request', r => {
    const u = r.url();
    if (!u.startsWith(base + '/') && !u.startsWith('data:') && !u.startsWith('blob:')) foreign.push(u);
  });
  page.on('response', r => {
    if (r.url() === base + '/v1/chat/completions') streamType = r.headers()['content-type'];
  });
  page.on('pageerror', e => problems.push('page error: ' + e.message));
  page.on('console', m => {
    if (m.type() === 'error') problems.push('console: ' + m.text());
  });

  // --- the page and its headers
  const res = await page.goto(base + '/', { waitUntil: 'load' });
  const h = res.headers();
  check('GET / is the page', res.status() === 200 && /^text\/html/.test(h['content-type']), `${res.status()} ${h['content-type']}`);
  check('Content-Security-Policy forbids remote loads',
    /default-src 'none'/.test(h['content-security-policy'] || '') && /script-src 'self'/.test(h['content-security-policy']) &&
    /connect-src 'self'/.test(h['content-security-policy']), h['content-security-policy']);
  check('ETag and Cache-Control', /^"[0-9a-f]{16}"$/.test(h.etag || '') && h['cache-control'] === 'no-cache', JSON.stringify(h));
  const again = await fetch(base + '/webui/app.js', { headers: { 'If-None-Match': (await fetch(base + '/webui/app.js')).headers.get('etag') } });
  check('If-None-Match -> 304', again.status === 304, again.status);
  await page.waitForSelector('body[data-state="idle"]', { timeout: 10000 });

  // --- greedy settings through the settings form, then a prompt typed and sent
  await page.click('#settings-toggle');
  const setField = async (id, v) => {
    await page.$eval(id, el => { el.value = ''; });
    await page.type(id, String(v));
  };
  await setField('#s-temperature', 0);
  await setField('#s-max_tokens', 64);
  await setField('#s-seed', 42);
  await page.click('#settings-toggle');
  const props = await (await fetch(base + '/props')).json();
  const uploadHidden = await page.$eval('#upload-label', el => el.hidden);
  const shownUpload = await page.$$eval('#upload-label, #attachment', els => els.map(e => getComputedStyle(e).display));
  check('image upload hidden without vision', props.modalities.vision === false && uploadHidden &&
    shownUpload.every(d => d === 'none'), JSON.stringify([props.modalities, uploadHidden, shownUpload]));

  await page.type('#prompt', prompt);
  await page.click('#send');
  // A short greedy reply can finish before a poll sees the streaming state: wait for the reply to
  // be stored (or the state to be streaming), then for the page to be idle again.
  await page.waitForFunction(() => document.body.dataset.state === 'streaming' ||
    ((JSON.parse(localStorage.getItem('oxillama.conversations') || '[]')[0] || {}).messages || [])
      .some(m => m.role === 'assistant'), { timeout: 10000 });
  await page.waitForSelector('body[data-state="idle"]', { timeout: 60000 });
  const stored = await page.evaluate(() => JSON.parse(localStorage.getItem('oxillama.conversations')));
  const conv = stored && stored[0];
  const reply = conv && conv.messages[conv.messages.length - 1];
  check('streamed reply = llama.cpp greedy (golden/run/once.expected)', reply && reply.role === 'assistant' && reply.content === expected,
    JSON.stringify([reply && reply.content, expected]));
  check('the reply came as server-sent events', /^text\/event-stream/.test(streamType || ''), streamType);
  const shown = await page.$eval('#messages .msg.assistant:last-child .content', el => el.innerText);
  check('the page shows the reply', norm(shown) === norm(expected), JSON.stringify([shown, expected]));
  const speed = await page.$eval('#speed', el => el.textContent);
  check('tokens/s shown', /^[0-9.]+ tokens\/s \((server timings|measured in the browser)\)$/.test(speed), speed);
  check('the chat is titled by its prompt', conv && conv.title === prompt.slice(0, 40), conv && conv.title);
  await page.screenshot({ path: shot });

  // --- Markdown, code blocks and raw HTML from the model (a stored reply), and the list after a reload
  await page.evaluate(() => {
    const all = JSON.parse(localStorage.getItem('oxillama.conversations'));
    all.push({ id: 'md', title: 'Markdown', updated: 0, messages: [
      { role: 'user', content: 'show me' },
      { role: 'assistant', content: '**bold** <img src="x" id="evil" onerror="window.pwned=1"> <script>window.pwned=2</script>\n\n' +
        '[ok](https://example.com) [bad](javascript:window.pwned=3)\n\n```c\nint main(void) { return 0; }\n```\n' },
    ] });
    localStorage.setItem('oxillama.conversations', JSON.stringify(all));
  });
  await page.reload({ waitUntil: 'load' });
  await page.waitForSelector('body[data-state="idle"]', { timeout: 10000 });
  const titles = await page.$$eval('#conversations li .conv-title', els => els.map(e => e.textContent));
  check('the conversation list keeps the chat after a reload', titles.length === 2 && titles[0] === prompt.slice(0, 40), JSON.stringify(titles));
  const kept = await page.$eval('#messages .msg.assistant:last-child .content', el => el.innerText);
  check('the reloaded chat shows the reply', norm(kept) === norm(expected), kept);
  await page.click('#conversations li[data-id="md"]');
  const md = await page.$eval('#messages .msg.assistant .content', el => ({
    strong: el.querySelector('strong')?.textContent, img: el.querySelectorAll('img').length, script: el.querySelectorAll('script').length,
    text: el.innerText, links: [...el.querySelectorAll('a')].map(a => a.getAttribute('href')),
    code: el.querySelector('pre code')?.className, spans: el.querySelectorAll('pre code span').length,
  }));
  const pwned = await page.evaluate(() => window.pwned);
  check('Markdown renders', md.strong === 'bold', JSON.stringify(md));
  check('raw HTML of the model stays text', md.img === 0 && md.script === 0 && md.text.includes('<img src="x"') && pwned === undefined,
    JSON.stringify([md, pwned]));
  check('only safe links', JSON.stringify(md.links) === '["https://example.com"]', JSON.stringify(md.links));
  check('code block highlighted', /hljs language-c/.test(md.code || '') && md.spans > 0, JSON.stringify(md));

  // --- a refused request shows the server's error message in the chat
  const nProblems = problems.length;
  await page.click('#new-chat');
  await page.click('#settings-toggle');
  await setField('#s-top_p', 2);
  await page.type('#prompt', 'hi');
  await page.click('#send');
  await page.waitForSelector('#messages .msg.assistant.error', { timeout: 10000 });
  await page.waitForSelector('body[data-state="idle"]', { timeout: 10000 });
  const err = await page.$eval('#messages .msg.assistant.error .note', el => el.textContent);
  check('a 400 shows its message', err === "error: HTTP 400: 'top_p': 2 is outside [0, 1]", err);
  // the browser logs the refused request itself; that one is expected
  const later = problems.splice(nProblems).filter(p => !/status of 400 \(Bad Request\)/.test(p));
  problems.push(...later);
  await setField('#s-top_p', 0.95);
  await page.click('#settings-toggle');

  // --- the stop button stops a long generation (webui.sh's server shifts its context, so the
  // reply would run for minutes)
  await page.click('#new-chat');
  await page.click('#settings-toggle');
  await setField('#s-max_tokens', 100000);
  await page.click('#settings-toggle');
  await page.type('#prompt', 'Tell me a long story.');
  await page.click('#send');
  await page.waitForFunction(() => (document.querySelector('#messages .msg.assistant:last-child .content')?.innerText || '').length > 40,
    { timeout: 30000 });
  const t0 = Date.now();
  await page.click('#stop');
  await page.waitForSelector('body[data-state="idle"]', { timeout: 5000 });
  const after = await page.evaluate(() => {
    const all = JSON.parse(localStorage.getItem('oxillama.conversations'));
    return all[0].messages[all[0].messages.length - 1];
  });
  check('stop ends the reply', after.note === 'stopped' && after.content.length > 40, JSON.stringify(after).slice(0, 300));
  // the server notices the closed connection and frees the slot
  let busy = true;
  for (let i = 0; i < 50 && busy; i++) {
    const slots = await (await fetch(base + '/slots')).json();
    busy = slots.some(s => s.is_processing);
    if (busy) await new Promise(r => setTimeout(r, 100));
  }
  check('the server stops generating', !busy, `slots still busy ${Date.now() - t0} ms after stop`);

  check('nothing loaded from elsewhere', foreign.length === 0, JSON.stringify(foreign));
  check('no page errors', problems.length === 0, JSON.stringify(problems));
  exitCode = failed ? 1 : 0;
} catch (e) {
  console.log('FAIL  ' + (e.stack || e));
} finally {
  await browser.close();
}
process.exit(exitCode);
