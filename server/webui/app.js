// oxillama's web chat page: conversations in localStorage, replies streamed from
// /v1/chat/completions (server-sent events read from fetch's ReadableStream), Markdown through
// marked with highlight.js for code, and raw HTML in model output shown as text. Plain JS, no build.
'use strict';

const STORE = 'oxillama.conversations';
const CURRENT = 'oxillama.current';
const SETTINGS = 'oxillama.settings';
const DEFAULTS = { system: '', temperature: 0.8, top_k: 40, top_p: 0.95, min_p: 0.05, max_tokens: '', seed: '', api_key: '' };
const $ = id => document.getElementById(id);

let conversations = load(STORE, []);
let currentId = localStorage.getItem(CURRENT);
let settings = { ...DEFAULTS, ...load(SETTINGS, {}) };
let controller = null; // the AbortController of the reply being streamed
let image = null; // a data: URI to send with the next message (models with a vision projector)

function load(key, fallback) {
  try {
    const v = JSON.parse(localStorage.getItem(key));
    return v ?? fallback;
  } catch {
    return fallback;
  }
}

function save() {
  localStorage.setItem(STORE, JSON.stringify(conversations));
  if (currentId) localStorage.setItem(CURRENT, currentId);
  else localStorage.removeItem(CURRENT);
}

function escapeHtml(s) {
  return String(s).replace(/[&<>"']/g, c => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' }[c]));
}

// --- Markdown: model output is untrusted, so its raw HTML is escaped, links keep only safe
// schemes and images become their alt text (the page loads nothing remote)
const renderer = new marked.Renderer();
renderer.html = html => escapeHtml(html);
renderer.link = (href, title, text) => {
  if (!href || !/^(https?:|mailto:|#|\/(?!\/))/i.test(href)) return text;
  const t = title ? ` title="${escapeHtml(title)}"` : '';
  return `<a href="${escapeHtml(href)}"${t} rel="noopener noreferrer" target="_blank">${text}</a>`;
};
renderer.image = (href, title, text) => escapeHtml(text || '');
marked.setOptions({
  renderer,
  headerIds: false,
  mangle: false,
  langPrefix: 'hljs language-',
  highlight(code, lang) {
    try {
      if (lang && hljs.getLanguage(lang)) return hljs.highlight(lang, code, true).value;
      return hljs.highlightAuto(code).value;
    } catch {
      return null;
    }
  },
});

function renderMarkdown(el, text) {
  el.innerHTML = marked.parse(text);
}

// --- conversations
function current() {
  return conversations.find(c => c.id === currentId) || null;
}

function newConversation() {
  const c = { id: Date.now().toString(36) + Math.random().toString(36).slice(2, 8), title: 'New chat', messages: [], updated: Date.now() };
  conversations.unshift(c);
  currentId = c.id;
  save();
  return c;
}

function textOf(content) {
  if (typeof content === 'string') return content;
  return content.filter(p => p.type === 'text').map(p => p.text).join('');
}

function renderList() {
  const ul = $('conversations');
  ul.replaceChildren();
  for (const c of conversations) {
    const li = document.createElement('li');
    li.className = c.id === currentId ? 'current' : '';
    li.dataset.id = c.id;
    const title = document.createElement('span');
    title.className = 'conv-title';
    title.textContent = c.title;
    title.title = c.title;
    const del = document.createElement('button');
    del.type = 'button';
    del.className = 'conv-delete';
    del.textContent = '\u00d7';
    del.title = 'Delete this chat';
    del.addEventListener('click', ev => {
      ev.stopPropagation();
      if (controller) return;
      conversations = conversations.filter(x => x.id !== c.id);
      if (currentId === c.id) currentId = conversations.length ? conversations[0].id : null;
      save();
      renderAll();
    });
    li.append(title, del);
    li.addEventListener('click', () => {
      if (controller) return;
      currentId = c.id;
      save();
      renderAll();
    });
    ul.append(li);
  }
}

function messageElement(m) {
  const div = document.createElement('div');
  div.className = 'msg ' + m.role + (m.error ? ' error' : '');
  if (m.role === 'user') {
    div.textContent = textOf(m.content);
    if (Array.isArray(m.content)) {
      for (const p of m.content) {
        if (p.type === 'image_url') {
          const img = document.createElement('img');
          img.src = p.image_url.url;
          img.alt = 'attached image';
          div.append(img);
        }
      }
    }
  } else {
    const body = document.createElement('div');
    body.className = 'content';
    renderMarkdown(body, m.content);
    div.append(body);
    if (m.note) {
      const note = document.createElement('span');
      note.className = 'note';
      note.textContent = m.note;
      div.append(note);
    }
  }
  return div;
}

function renderMessages() {
  const box = $('messages');
  box.replaceChildren();
  const c = current();
  if (c) for (const m of c.messages) box.append(messageElement(m));
  box.scrollTop = box.scrollHeight;
}

function renderAll() {
  renderList();
  renderMessages();
}

// --- settings
const FIELDS = ['system', 'temperature', 'top_k', 'top_p', 'min_p', 'max_tokens', 'seed', 'api_key'];

function showSettings() {
  for (const f of FIELDS) $('s-' + f).value = settings[f];
}

function readSettings() {
  for (const f of FIELDS) settings[f] = $('s-' + f).value;
  localStorage.setItem(SETTINGS, JSON.stringify(settings));
}

function headers() {
  const h = { 'Content-Type': 'application/json' };
  if (settings.api_key) h.Authorization = 'Bearer ' + settings.api_key;
  return h;
}

function requestBody(c) {
  const messages = [];
  if (settings.system.trim()) messages.push({ role: 'system', content: settings.system });
  for (const m of c.messages) if (m.role === 'user' || m.role === 'assistant') messages.push({ role: m.role, content: m.content });
  const body = { messages, stream: true, stream_options: { include_usage: true } };
  for (const f of ['temperature', 'top_k', 'top_p', 'min_p', 'max_tokens', 'seed']) {
    const v = String(settings[f]).trim();
    if (v !== '' && Number.isFinite(Number(v))) body[f] = Number(v);
  }
  return body;
}

// --- sending and streaming
function setBusy(busy) {
  $('send').disabled = busy;
  $('stop').hidden = !busy;
  document.body.dataset.state = busy ? 'streaming' : 'idle';
}

function speedText(s) {
  if (s.timings && s.timings.predicted_per_second) {
    return `${s.timings.predicted_per_second.toFixed(1)} tokens/s (server timings)`;
  }
  if (s.tokens > 1 && s.last > s.first) {
    return `${((s.tokens - 1) / ((s.last - s.first) / 1000)).toFixed(1)} tokens/s (measured in the browser)`;
  }
  return '';
}

async function send() {
  const text = $('prompt').value;
  if (controller || (!text.trim() && !image)) return;
  readSettings();
  const c = current() || newConversation();
  const content = image ? [{ type: 'text', text }, { type: 'image_url', image_url: { url: image } }] : text;
  c.messages.push({ role: 'user', content });
  if (c.title === 'New chat') c.title = (text.trim() || 'Image').slice(0, 40);
  const reply = { role: 'assistant', content: '' };
  const body = requestBody(c);
  c.messages.push(reply);
  c.updated = Date.now();
  $('prompt').value = '';
  setImage(null);
  save();
  renderAll();
  const el = $('messages').lastElementChild;
  const target = el.querySelector('.content');
  const stats = { tokens: 0, first: 0, last: 0, timings: null, usage: null };
  let pending = false;
  const paint = () => {
    pending = false;
    renderMarkdown(target, reply.content);
    $('messages').scrollTop = $('messages').scrollHeight;
  };
  controller = new AbortController();
  setBusy(true);
  $('speed').textContent = '';
  let finish = null;
  try {
    const res = await fetch('/v1/chat/completions', { method: 'POST', headers: headers(), body: JSON.stringify(body), signal: controller.signal });
    if (!res.ok) {
      let msg = `HTTP ${res.status}`;
      try {
        const j = await res.json();
        if (j.error && j.error.message) msg += ': ' + j.error.message;
      } catch { /* not JSON */ }
      throw new Error(msg);
    }
    const reader = res.body.getReader();
    const decoder = new TextDecoder();
    let buf = '';
    let done = false;
    while (!done) {
      const r = await reader.read();
      if (r.done) break;
      buf += decoder.decode(r.value, { stream: true });
      let cut;
      while ((cut = buf.indexOf('\n\n')) >= 0) {
        const frame = buf.slice(0, cut);
        buf = buf.slice(cut + 2);
        for (const line of frame.split('\n')) {
          if (!line.startsWith('data:')) continue;
          const data = line.slice(5).trim();
          if (data === '[DONE]') {
            done = true;
            break;
          }
          const chunk = JSON.parse(data);
          if (chunk.error) throw new Error(chunk.error.message || JSON.stringify(chunk.error));
          if (chunk.timings) stats.timings = chunk.timings;
          if (chunk.usage) stats.usage = chunk.usage;
          const choice = chunk.choices && chunk.choices[0];
          if (!choice) continue;
          if (choice.finish_reason) finish = choice.finish_reason;
          const piece = choice.delta && choice.delta.content;
          if (piece) {
            const now = performance.now();
            if (!stats.first) stats.first = now;
            stats.last = now;
            stats.tokens++;
            reply.content += piece;
            if (!pending) {
              pending = true;
              requestAnimationFrame(paint);
            }
          }
        }
      }
    }
    if (stats.usage && stats.usage.completion_tokens) stats.tokens = stats.usage.completion_tokens;
    reply.note = finish === 'length' ? 'stopped at the token limit' : '';
  } catch (err) {
    if (err.name === 'AbortError') {
      reply.note = 'stopped';
    } else {
      reply.note = 'error: ' + err.message;
      reply.error = true;
    }
  } finally {
    controller = null;
    const speed = speedText(stats);
    $('speed').textContent = speed;
    if (speed) reply.speed = speed;
    c.updated = Date.now();
    save();
    renderMessages();
    setBusy(false);
  }
}

function stop() {
  if (controller) controller.abort();
}

// --- image upload (shown only when /props says the model has vision)
function setImage(uri) {
  image = uri;
  $('attachment').hidden = !uri;
  if (uri) $('attachment-img').src = uri;
  else $('attachment-img').removeAttribute('src');
  $('upload').value = '';
}

async function loadProps() {
  try {
    const res = await fetch('/props', { headers: headers() });
    if (!res.ok) return;
    const p = await res.json();
    $('upload-label').hidden = !(p.modalities && p.modalities.vision);
    const info = [p.model_alias, p.default_generation_settings && `context ${p.default_generation_settings.n_ctx}`, p.build_info];
    $('model-info').textContent = info.filter(Boolean).join(' \u00b7 ');
  } catch { /* the page still works without /props */ }
}

// --- wiring
$('composer').addEventListener('submit', ev => {
  ev.preventDefault();
  send();
});
$('prompt').addEventListener('keydown', ev => {
  if (ev.key === 'Enter' && !ev.shiftKey && !ev.isComposing) {
    ev.preventDefault();
    send();
  }
});
$('stop').addEventListener('click', stop);
$('new-chat').addEventListener('click', () => {
  if (controller) return;
  newConversation();
  renderAll();
  $('prompt').focus();
});
$('settings-toggle').addEventListener('click', () => {
  const s = $('settings');
  s.hidden = !s.hidden;
  $('settings-toggle').setAttribute('aria-expanded', String(!s.hidden));
});
$('settings').addEventListener('input', ev => {
  readSettings();
  if (ev.target.id === 's-api_key') loadProps();
});
$('settings').addEventListener('submit', ev => ev.preventDefault());
$('upload').addEventListener('change', () => {
  const f = $('upload').files[0];
  if (!f) return;
  const r = new FileReader();
  r.onload = () => setImage(r.result);
  r.readAsDataURL(f);
});
$('attachment-remove').addEventListener('click', () => setImage(null));

if (!current()) currentId = conversations.length ? conversations[0].id : null;
showSettings();
renderAll();
setBusy(false);
loadProps();
