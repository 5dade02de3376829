// Three `oxillama serve` replicas behind HAProxy (docs/deploy/haproxy.cfg, unchanged) on loopback,
// driven by the official OpenAI Node client: a bounded load of multi-turn conversations, each with
// its X-Session-Id, while one replica is sent SIGTERM during a stream and restarted.
// usage: node deploy.mjs OXILLAMA MODEL HAPROXY_CFG GOLDEN_RUN_DIR WORK_DIR
// Checks: greedy text through every replica = llama.cpp's (golden/run/once.*); the stream in flight
// on the stopped replica ends whole; no failed request other than ones in flight on the stopped
// replica; >= 90 % of follow-ups on their conversation's replica (those that lived through the
// outage of the stopped replica excepted); every reply HAProxy forwarded is in a replica's request
// log. Prints the numbers and PASS/FAIL lines; exits 1 on a failure.
import { spawn, spawnSync } from 'node:child_process';
import { createRequire } from 'node:module';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const [bin, model, cfgPath, goldenDir, work] = process.argv.slice(2);
const here = path.dirname(fileURLToPath(import.meta.url));
const { OpenAI } = createRequire(path.join(here, '../server/package.json'))('openai');

const KEY = 'sk-deploy-test';
const N_CONV = 20, TURNS = 4, CONCURRENCY = 6, THINK_MS = 100, MAX_TOKENS = 8;
const t0 = Date.now();
const now = () => Date.now() - t0;
let failed = 0;
const children = new Set();

function check(name, ok, detail) {
  console.log(`${ok ? 'PASS' : 'FAIL'}  deploy ${name}${ok || detail === undefined ? '' : ': ' + detail}`);
  if (!ok) failed++;
}

function bail(msg) {
  check(msg, false, '');
  process.exit(1);
}
// No replica or HAProxy outlives the test, whatever ends it.
process.on('exit', () => { for (const c of children) c.kill('SIGKILL'); });
process.on('SIGTERM', () => bail('stopped by SIGTERM (timeout)'));
process.on('unhandledRejection', e => bail(`error: ${e?.stack ?? e}`));

// A child whose output lines are kept with the time they arrived.
function start(cmd, args, env, logName) {
  const c = spawn(cmd, args, { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  c.lines = [];
  c.exited = new Promise(resolve => c.on('exit', (code, sig) => {
    c.exitTime = now();
    children.delete(c);
    resolve({ code, sig });
  }));
  const log = fs.createWriteStream(path.join(work, logName), { flags: 'a' });
  for (const s of [c.stdout, c.stderr]) {
    let rest = '';
    s.on('data', d => {
      log.write(d);
      const parts = (rest + d).split('\n');
      rest = parts.pop();
      for (const line of parts) c.lines.push({ t: now(), line });
      c.emit('lines');
    });
  }
  children.add(c);
  return c;
}

// Resolves with the first line matching re, or null when the child exits or ms pass.
function waitLine(c, re, ms) {
  return new Promise(resolve => {
    const look = () => c.lines.find(l => re.test(l.line));
    const done = v => { clearTimeout(timer); c.off('lines', on); resolve(v); };
    const on = () => { const l = look(); if (l) done(l); };
    const timer = setTimeout(() => done(look() ?? null), ms);
    c.on('lines', on);
    c.exited.then(() => done(look() ?? null));
    on();
  });
}

const sleep = ms => new Promise(r => setTimeout(r, ms));

// --- replicas -------------------------------------------------------------------------------------
const names = ['r1', 'r2', 'r3'];
const replicas = {};
const lives = []; /* every replica process started, the victim's two lives included */
async function startReplica(name, port) {
  const args = ['serve', '-m', model, '--port', String(port), '-np', '4', '-t', '1', '--api-key', KEY,
    '--log-format', 'json', '--shutdown-timeout', '10'];
  const c = start(bin, args, {}, `${name}.log`);
  const l = await waitLine(c, /listening on http:\/\/127\.0\.0\.1:(\d+)/, 10000);
  if (!l || !(await waitLine(c, /loaded in/, 10000))) bail(`${name} start (see ${work}/${name}.log)`);
  c.port = Number(/:(\d+)$/.exec(l.line)[1]);
  c.name = name;
  replicas[name] = c;
  lives.push(c);
  return c;
}
for (const n of names) await startReplica(n, 0);

// --- HAProxy: the configuration is checked, then run in the foreground on a free port ------------
function freePort() {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => { const p = s.address().port; s.close(() => resolve(p)); });
  });
}
const env = Object.fromEntries(names.map(n => [`OXL_${n.toUpperCase()}`, `127.0.0.1:${replicas[n].port}`]));
let haproxy = null, base = null;
for (let attempt = 0; attempt < 5 && !haproxy; attempt++) {
  env.OXL_FRONTEND = `127.0.0.1:${await freePort()}`;
  const chk = spawnSync('haproxy', ['-c', '-f', cfgPath], { env: { ...process.env, ...env }, encoding: 'utf8' });
  if (attempt === 0) check('haproxy -c accepts docs/deploy/haproxy.cfg', chk.status === 0, chk.stdout + chk.stderr);
  const h = start('haproxy', ['-db', '-f', cfgPath], env, 'haproxy.log');
  const ok = await Promise.race([h.exited.then(() => false), (async () => {
    for (let i = 0; i < 100; i++) {
      try {
        if ((await fetch(`http://${env.OXL_FRONTEND}/ready`)).status === 200) return true;
      } catch { /* not listening yet */ }
      await sleep(50);
    }
    return false;
  })()]);
  if (ok) {
    haproxy = h;
    base = `http://${env.OXL_FRONTEND}`;
  } else {
    h.kill('SIGKILL');
    await h.exited;
  }
}
if (!haproxy) bail(`haproxy start (see ${work}/haproxy.log)`);

const client = new OpenAI({ baseURL: base + '/v1', apiKey: KEY, maxRetries: 0, timeout: 30000 });
let nextId = 0;
const requests = []; /* every request of the run: {id, session, conv, turn, start, end, ok, replica, error} */

async function send(session, kind, body, conv = -1, turn = -1) {
  const r = { id: `req-${nextId++}`, session, conv, turn, kind, start: now(), ok: false };
  requests.push(r);
  const opts = { headers: { 'X-Session-Id': session, 'X-Request-Id': r.id } };
  try {
    const api = kind === 'chat' ? client.chat.completions : client.completions;
    const { data, response } = await api.create(body, opts).withResponse();
    r.replica = response.headers.get('x-served-by');
    if (body.stream) {
      let text = '', finish = null, n = 0;
      for await (const chunk of data) {
        if (n++ === 0 && r.onFirstChunk) r.onFirstChunk();
        const ch = chunk.choices[0];
        if (!ch) continue;
        text += kind === 'chat' ? (ch.delta.content ?? '') : ch.text;
        finish = ch.finish_reason ?? finish;
      }
      r.text = text;
      r.finish = finish;
    } else {
      r.text = kind === 'chat' ? data.choices[0].message.content : data.choices[0].text;
      r.finish = data.choices[0].finish_reason;
      r.tokens = data.usage.completion_tokens;
    }
    r.ok = typeof r.text === 'string' && r.text.length > 0 && (r.finish === 'length' || r.finish === 'stop');
    if (!r.ok) r.error = `finish ${r.finish}, text ${JSON.stringify(r.text)}`;
  } catch (e) {
    r.error = `${e.status ?? ''} ${e.message}`;
  }
  r.end = now();
  return r;
}

// --- greedy text through every replica = llama.cpp's ---------------------------------------------
const prompt = fs.readFileSync(path.join(goldenDir, 'once.prompt'), 'utf8');
const expected = fs.readFileSync(path.join(goldenDir, 'once.expected'), 'utf8');
const sessionOf = {}; /* a session id that HAProxy's hash sends to each replica */
for (let i = 0; i < 40 && Object.keys(sessionOf).length < names.length; i++) {
  const r = await send(`probe-${i}`, 'completions', { model: 'x', prompt, max_tokens: 64, temperature: 0 });
  if (r.replica && !sessionOf[r.replica]) {
    sessionOf[r.replica] = `probe-${i}`;
    check(`greedy through ${r.replica} = llama.cpp`, r.text === expected && r.tokens === 64,
      `${r.error ?? ''} ${JSON.stringify(r.text)}`);
  }
}
if (Object.keys(sessionOf).length !== names.length) bail(`the session hash reaches every replica: ${JSON.stringify(sessionOf)}`);
const probeCount = requests.length;

// --- the load: N_CONV conversations of TURNS turns, CONCURRENCY at a time ------------------------
const victim = 'r2';
const outage = { sigterm: null, back: null };
const userTurns = ['Tell me a story about a cat.', 'What did the cat do next?', 'Who did the cat meet?',
  'How did it end?'];
const firstTurnTexts = new Set();

async function conversation(c) {
  const session = `conv-${c}`;
  const messages = [{ role: 'system', content: 'You are a storyteller.' }];
  for (let t = 0; t < TURNS; t++) {
    messages.push({ role: 'user', content: userTurns[t] });
    const stream = t % 2 === 1;
    const r = await send(session, 'chat', { model: 'x', messages, max_tokens: MAX_TOKENS, temperature: 0,
      ...(stream ? { stream: true } : {}) }, c, t);
    if (!r.ok) return;
    if (t === 0) firstTurnTexts.add(r.text);
    messages.push({ role: 'assistant', content: r.text });
    await sleep(THINK_MS);
  }
}

let nextConv = 0, loadDone = false;
const workers = Promise.all(Array.from({ length: CONCURRENCY }, async () => {
  while (nextConv < N_CONV) await conversation(nextConv++);
})).then(() => { loadDone = true; });

// Mid-run: a long stream on the victim; once its first chunk is out, SIGTERM the victim, wait for
// it to exit (its drain finishes the stream) and start it again on the same port.
const restart = (async () => {
  while (requests.length - probeCount < (N_CONV * TURNS) / 4 && !loadDone) await sleep(20);
  let firstChunk;
  const gotChunk = new Promise(r => { firstChunk = r; });
  const longReq = send(sessionOf[victim], 'completions', { model: 'x', prompt, max_tokens: 64,
    temperature: 0, stream: true });
  requests[requests.length - 1].onFirstChunk = firstChunk;
  requests[requests.length - 1].long = true;
  await Promise.race([gotChunk, longReq]);
  const old = replicas[victim];
  outage.sigterm = now();
  old.kill('SIGTERM');
  const { code } = await old.exited;
  outage.exit = old.exitTime;
  check(`${victim} exits with status 0 after SIGTERM`, code === 0, `status ${code}`);
  await startReplica(victim, old.port);
  outage.ready = now();
  const long = await longReq;
  check('the stream in flight on the stopped replica ends whole (= llama.cpp)', long.ok && long.text === expected &&
    long.finish === 'length' && long.replica === victim,
    `${long.error ?? ''} replica ${long.replica} finish ${long.finish} text ${JSON.stringify(long.text)}`);
})();

await Promise.all([workers, restart]);

// HAProxy's view of the victim: DOWN and UP lines (none when the restart beat the health checks).
const downLine = haproxy.lines.find(l => l.t >= outage.sigterm && new RegExp(`replicas/${victim} is DOWN`).test(l.line));
const upLine = downLine && haproxy.lines.find(l => l.t >= downLine.t && new RegExp(`replicas/${victim} is UP`).test(l.line));
if (downLine && !upLine) {
  /* wait for the rise checks, so that the end of the outage is known */
  await waitLine(haproxy, new RegExp(`replicas/${victim} is UP`), 10000);
}
const up = downLine && haproxy.lines.find(l => l.t >= downLine.t && new RegExp(`replicas/${victim} is UP`).test(l.line));
outage.back = Math.max(outage.ready, up ? up.t : 0);

// Prometheus scrapes each replica's /metrics directly (docs/deploy/prometheus.yml), with an API key.
for (const n of names) {
  const url = `http://127.0.0.1:${replicas[n].port}/metrics`;
  const withKey = await fetch(url, { headers: { Authorization: `Bearer ${KEY}` } });
  const text = await withKey.text();
  check(`${n} /metrics with the key`, withKey.status === 200 && /^oxillama_requests_total\{code="200"\} \d+$/m.test(text) &&
    /^oxillama_slots_total 4$/m.test(text), `status ${withKey.status}`);
  const without = await fetch(url);
  check(`${n} /metrics without a key -> 401`, without.status === 401, `status ${without.status}`);
}

// --- stop everything, then read the logs ----------------------------------------------------------
haproxy.kill('SIGTERM');
await haproxy.exited;
for (const n of names) {
  replicas[n].kill('SIGTERM');
  const { code } = await replicas[n].exited;
  check(`${n} exits with status 0 at the end`, code === 0, `status ${code}`);
}

// HAProxy's httplog: ... backend/server Tq/Tw/Tc/Tr/Ta status ... retries sq/bq {session|id} "request"
const haLog = {};
for (const { line } of haproxy.lines) {
  const m = / replicas\/(\S+) \S+ (-?\d+) .*\/(\+?\d+) \d+\/\d+ \{([^|}]*)\|([^}]*)\} "/.exec(line);
  if (m) haLog[m[5]] = { server: m[1], status: Number(m[2]), retries: m[3] };
}
// The replicas' request logs (--log-format json), over both lives of the victim.
const served = {};
for (const n of names) {
  served[n] = 0;
  for (const { line } of lives.filter(c => c.name === n).flatMap(c => c.lines)) {
    if (!line.startsWith('{')) continue;
    const o = JSON.parse(line);
    if (o.method === 'POST' && o.status === 200) served[n]++;
  }
}

const load = requests.slice(probeCount);
const failures = load.filter(r => !r.ok);
// A failure is excused only when it was in flight on the victim when it got SIGTERM.
const excused = failures.filter(r => (haLog[r.id]?.server ?? r.replica) === victim && r.start <= outage.sigterm &&
  r.end >= outage.sigterm);
for (const r of failures) {
  console.log(`  failed ${r.id} ${r.session} turn ${r.turn} [${r.start}, ${r.end}] ms via ${haLog[r.id]?.server}: ${r.error}`);
}
check('no failed request other than ones in flight on the stopped replica', failures.length === excused.length,
  `${failures.length - excused.length} other failures`);

// Affinity: a follow-up on the replica of its conversation's first turn. Follow-ups of
// conversations that lived through the victim's outage and touched the victim are excepted.
const firstOf = {};
for (const r of load) if (r.conv >= 0 && r.turn === 0 && r.ok) firstOf[r.conv] = r;
let kept = 0, counted = 0, excepted = 0;
for (const r of load) {
  if (r.conv < 0 || r.turn === 0 || !r.ok || !firstOf[r.conv]) continue;
  const f = firstOf[r.conv];
  if ((f.replica === victim || r.replica === victim) && f.start <= outage.back && r.end >= outage.sigterm) {
    excepted++;
    continue;
  }
  counted++;
  if (r.replica === f.replica) kept++;
}
const affinity = counted ? kept / counted : 0;
check('affinity >= 90 % of follow-ups', counted > 0 && affinity >= 0.9, `${kept}/${counted}`);
check('every conversation starts with the same greedy text on any replica', firstTurnTexts.size === 1,
  JSON.stringify([...firstTurnTexts]));

// Every reply that reached the client came from a replica whose request log has it.
const okBy = Object.fromEntries(names.map(n => [n, 0]));
for (const r of requests) if (r.ok && okBy[r.replica] !== undefined) okBy[r.replica]++;
check('replies per replica = the replicas\' request logs', names.every(n => okBy[n] === served[n]),
  `client ${JSON.stringify(okBy)} logs ${JSON.stringify(served)}`);
check('HAProxy logged every request', requests.every(r => haLog[r.id]), `${requests.filter(r => !haLog[r.id]).length} missing`);

const retried = Object.values(haLog).filter(l => l.retries !== '0').length;
console.log(`deploy numbers: ${load.length} requests (${N_CONV} conversations x ${TURNS} turns + 1 long stream, ` +
  `concurrency ${CONCURRENCY}), ${failures.length} failed (${excused.length} in flight on ${victim}), ` +
  `${retried} retried by HAProxy, affinity ${(100 * affinity).toFixed(1)} % (${kept}/${counted}, ` +
  `${excepted} excepted around the outage), drain ${outage.exit - outage.sigterm} ms (SIGTERM to exit), ` +
  `${victim} back in ${outage.back - outage.sigterm} ms, HAProxy marked it down: ${downLine ? 'yes' : 'no'}; ` +
  `served ${JSON.stringify(okBy)}`);
process.exit(failed ? 1 : 0);
