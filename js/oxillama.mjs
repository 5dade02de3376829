// oxillama for JavaScript: the library (include/oxillama.h) compiled to WebAssembly (oxillama.wasm,
// a WASI reactor) behind a small API. Runs in Node (18+) and in browsers; the browser path imports
// nothing from Node. See README.md "Use it from JavaScript".
//
//   import { load } from 'oxillama';
//   const model = await load('stories260K.gguf', { n_ctx: 256, seed: 42 });
//   model.complete('Once upon a time', { max_tokens: 32, temperature: 0 });
//   for await (const piece of model.stream('Once upon a time')) ...
//   model.chat([{ role: 'user', content: 'Hello' }], { template: 'chatml', max_tokens: 32 });
//   model.free();
//
// Every model has its own WebAssembly instance (its own memory); the module runs on one thread.
import { Wasi, WasiExit } from './wasi.mjs';

const isNode = typeof process !== 'undefined' && !!process.versions?.node;
const OXL_SEED_RANDOM = 0xffffffff;
const ERROR_SIZE = 512; // OXL_ERROR_MSG_MAX

// struct layouts on wasm32 (include/oxillama.h; bool 1 byte, enums and int32_t 4)
const CTX_PARAMS_SIZE = 40; // oxl_ctx_params
const CTX_N_CTX = 0;
const CTX_N_THREADS = 12;
// oxl_sampler_params: temp, top_k, top_p, min_p, seed, then the further steps at llama.cpp's
// defaults (off), written below field by field (layout checked by the sampler's unit test)
const SAMPLER_PARAMS_SIZE = 112; // top_a at 104 and eta at 108 stay 0 (off)
const DETOK_SIZE = 12; // oxl_detok: char pending[8]; int32_t n_pending

const encoder = new TextEncoder();
const decoder = new TextDecoder();

let defaultModule = null; // the compiled oxillama.wasm beside this file

async function compileWasm(wasm) {
    if (wasm instanceof WebAssembly.Module) {
        return wasm;
    }
    if (wasm instanceof ArrayBuffer || ArrayBuffer.isView(wasm)) {
        return WebAssembly.compile(wasm);
    }
    let url = wasm === undefined ? new URL('./oxillama.wasm', import.meta.url) : wasm;
    if (typeof url === 'string' && /^[a-z][a-z0-9+.-]+:\/\//i.test(url)) {
        url = new URL(url); // a URL, not a path
    }
    if (isNode && (typeof url === 'string' || url.protocol === 'file:')) {
        const { readFile } = await import('node:fs/promises');
        return WebAssembly.compile(await readFile(url));
    }
    const response = await fetch(url);
    if (!response.ok) {
        throw new Error(`oxillama: ${url}: HTTP ${response.status}`);
    }
    return WebAssembly.compileStreaming ? WebAssembly.compileStreaming(response) :
        WebAssembly.compile(await response.arrayBuffer());
}

// The model file: bytes in memory (any environment), a host path (Node) or a URL (fetched).
async function modelSource(source, name) {
    if (source instanceof ArrayBuffer) {
        return { files: { [`/${name}`]: new Uint8Array(source) }, path: `/${name}` };
    }
    if (ArrayBuffer.isView(source)) {
        const bytes = new Uint8Array(source.buffer, source.byteOffset, source.byteLength);
        return { files: { [`/${name}`]: bytes }, path: `/${name}` };
    }
    if (typeof source === 'string' && isNode && /^[a-z][a-z0-9+.-]+:\/\//i.test(source)) {
        source = new URL(source); // a URL, not a path
    }
    if (isNode && (typeof source === 'string' || (source instanceof URL && source.protocol === 'file:'))) {
        const [fs, path, url] = await Promise.all([import('node:fs'), import('node:path'), import('node:url')]);
        const file = source instanceof URL ? url.fileURLToPath(source) : path.resolve(source);
        return { files: {}, hostFs: fs, path: file };
    }
    if (typeof source === 'string' || source instanceof URL) {
        const response = await fetch(source);
        if (!response.ok) {
            throw new Error(`oxillama: ${source}: HTTP ${response.status}`);
        }
        const base = String(source).split(/[?#]/)[0].split('/').pop() || name;
        return { files: { [`/${base}`]: new Uint8Array(await response.arrayBuffer()) }, path: `/${base}` };
    }
    throw new TypeError('oxillama: load() takes the model as bytes (Uint8Array, ArrayBuffer), a path or a URL');
}

// The longest suffix of text that begins some stop string (held back while streaming).
function heldBack(text, stops) {
    let hold = 0;
    for (const s of stops) {
        for (let n = Math.min(s.length - 1, text.length); n > hold; n--) {
            if (s.startsWith(text.slice(text.length - n))) {
                hold = n;
                break;
            }
        }
    }
    return hold;
}

// The options each call takes: another key is an error naming it (a misspelt option would
// otherwise be ignored).
const GENERATION_OPTIONS = ['max_tokens', 'temperature', 'top_k', 'top_p', 'min_p', 'seed', 'stop'];
const TEMPLATE_OPTIONS = ['template', 'add_assistant'];

function checkOptions(fn, opts, known) {
    for (const key of Object.keys(opts ?? {})) {
        if (!known.includes(key)) {
            throw new TypeError(`oxillama: ${fn}: unknown option '${key}' (the options: ${known.join(', ')})`);
        }
    }
}

class Model {
    #x; // the instance's exports
    #model = 0;
    #ctx = 0;
    #seed;
    #busy = false;

    constructor(exports, model, ctx, seed) {
        this.#x = exports;
        this.#model = model;
        this.#ctx = ctx;
        this.#seed = seed;
    }

    #live() {
        if (!this.#model) {
            throw new Error('oxillama: the model was freed');
        }
        return this.#x;
    }

    #alloc(n) {
        const p = this.#x.malloc(Math.max(n, 1));
        if (!p) {
            throw new Error(`oxillama: out of WebAssembly memory (${n} bytes)`);
        }
        return p;
    }

    #bytes(ptr, len) {
        return new Uint8Array(this.#x.memory.buffer, ptr, len);
    }

    #cstring(text) {
        const b = encoder.encode(text);
        const p = this.#alloc(b.length + 1);
        this.#bytes(p, b.length).set(b);
        this.#bytes(p + b.length, 1)[0] = 0;
        return [p, b.length];
    }

    #readCString(p) {
        const mem = new Uint8Array(this.#x.memory.buffer);
        let end = p;
        while (mem[end] !== 0) {
            end++;
        }
        return decoder.decode(mem.subarray(p, end));
    }

    get n_vocab() {
        return this.#live().oxl_model_n_vocab(this.#model);
    }

    get n_ctx() {
        return this.#live().oxl_ctx_n_ctx(this.#ctx);
    }

    // "llama 0.29M all F32" and so on (oxl_model_desc)
    get description() {
        return this.#readCString(this.#live().oxl_model_desc(this.#model));
    }

    // The model's tokenizer.chat_template, or null.
    get chatTemplate() {
        const p = this.#live().oxl_model_chat_template(this.#model);
        return p ? this.#readCString(p) : null;
    }

    // Token ids of text; add_special adds BOS/EOS as the vocabulary asks, parse_special turns the
    // text of control tokens into those tokens.
    tokenize(text, { add_special = true, parse_special = false } = {}) {
        const x = this.#live();
        const [p, len] = this.#cstring(text);
        try {
            let cap = len + 8;
            for (;;) {
                const out = this.#alloc(4 * cap);
                try {
                    const n = x.oxl_tokenize(this.#model, p, len, out, cap, add_special, parse_special);
                    if (n >= 0) {
                        return Array.from(new Int32Array(x.memory.buffer, out, n));
                    }
                    if (n === -2147483648) {
                        throw new Error('oxillama: tokenize: invalid arguments');
                    }
                    cap = -n;
                } finally {
                    x.free(out);
                }
            }
        } finally {
            x.free(p);
        }
    }

    // The text of token ids (the streaming detokenizer: pieces joined, then what it holds back).
    detokenize(ids) {
        const x = this.#live();
        const d = this.#alloc(DETOK_SIZE);
        this.#bytes(d, DETOK_SIZE).fill(0);
        const parts = [];
        try {
            for (const id of ids) {
                parts.push(this.#detokPush(d, id));
            }
            parts.push(this.#detokFlush(d));
        } finally {
            x.free(d);
        }
        return parts.join('');
    }

    #detokCall(fn) {
        let cap = 64;
        for (;;) {
            const buf = this.#alloc(cap);
            try {
                const n = fn(buf, cap);
                if (n >= 0) {
                    return decoder.decode(this.#bytes(buf, n));
                }
                cap = -n;
            } finally {
                this.#x.free(buf);
            }
        }
    }

    #detokPush(d, id) {
        if (!Number.isInteger(id) || id < 0 || id >= this.n_vocab) {
            throw new RangeError(`oxillama: token id ${id} out of range [0, ${this.n_vocab})`);
        }
        return this.#detokCall((buf, cap) => this.#x.oxl_detok_push(d, this.#model, id, buf, cap));
    }

    #detokFlush(d) {
        return this.#detokCall((buf, cap) => this.#x.oxl_detok_flush(d, buf, cap));
    }

    #error(err) {
        return new Error(this.#readCString(err));
    }

    // The generated text piece by piece (synchronous): each yielded string is whole characters,
    // with a stop string and what follows it cut off.
    *#generate(prompt, opts = {}) {
        const x = this.#live();
        if (this.#busy) {
            throw new Error('oxillama: this model is already generating');
        }
        const {
            max_tokens = 128,
            temperature = 0.8,
            top_k = 40,
            top_p = 0.95,
            min_p = 0.05,
            seed = this.#seed,
            stop = [],
        } = opts;
        const stops = (Array.isArray(stop) ? stop : [stop]).filter((s) => s.length > 0);
        const ids = this.tokenize(prompt, { add_special: true, parse_special: true });
        this.#busy = true;
        const sp = this.#alloc(SAMPLER_PARAMS_SIZE);
        const v = new DataView(x.memory.buffer, sp, SAMPLER_PARAMS_SIZE);
        v.setFloat32(0, temperature, true);
        v.setInt32(4, top_k, true);
        v.setFloat32(8, top_p, true);
        v.setFloat32(12, min_p, true);
        v.setUint32(16, seed === undefined || seed === null || seed < 0 ? OXL_SEED_RANDOM : seed >>> 0, true);
        this.#bytes(sp + 20, SAMPLER_PARAMS_SIZE - 20).fill(0); // samplers "" = the default order
        v.setInt32(20, 64, true); // penalty_last_n
        v.setFloat32(24, 1.0, true); // penalty_repeat (off)
        v.setFloat32(36, 1.0, true); // typ_p (off)
        v.setFloat32(40, -1.0, true); // top_n_sigma (off)
        v.setFloat32(48, 0.1, true); // xtc_threshold
        v.setFloat32(56, 1.0, true); // dynatemp_exponent
        v.setFloat32(64, 5.0, true); // mirostat_tau
        v.setFloat32(68, 0.1, true); // mirostat_eta
        v.setFloat32(76, 1.75, true); // dry_base
        v.setInt32(80, 2, true); // dry_allowed_length
        v.setInt32(84, 64, true); // dry_penalty_last_n
        const sampler = x.oxl_sampler_new(sp);
        x.free(sp);
        const err = this.#alloc(ERROR_SIZE);
        const tok = this.#alloc(4 * Math.max(ids.length, 1));
        const d = this.#alloc(DETOK_SIZE);
        this.#bytes(d, DETOK_SIZE).fill(0);
        try {
            x.oxl_ctx_truncate(this.#ctx, 0); // each call starts from an empty cache
            new Int32Array(x.memory.buffer, tok, ids.length).set(ids);
            let text = '';
            let emitted = 0;
            let n = ids.length;
            const n_vocab = x.oxl_model_n_vocab(this.#model);
            const n_ctx = x.oxl_ctx_n_ctx(this.#ctx);
            // returns the next piece to yield and whether a stop string ended the text
            const advance = (piece, last) => {
                text += piece;
                for (const s of stops) {
                    const at = text.indexOf(s, Math.max(0, emitted - s.length + 1));
                    if (at >= 0) {
                        const out = text.slice(emitted, at);
                        emitted = at;
                        return [out, true];
                    }
                }
                const end = last ? text.length : text.length - heldBack(text.slice(emitted), stops);
                const out = text.slice(emitted, end);
                emitted = end;
                return [out, false];
            };
            // the prompt always goes to the library (which refuses one longer than the context)
            for (let i = 0; i < max_tokens && (i === 0 || x.oxl_ctx_n_past(this.#ctx) + n <= n_ctx); i++) {
                if (x.oxl_decode(this.#ctx, tok, n, false, err) !== 0) {
                    throw this.#error(err);
                }
                const id = x.oxl_sampler_sample(sampler, x.oxl_get_logits(this.#ctx, -1), n_vocab);
                if (x.oxl_token_is_eog(this.#model, id)) {
                    break;
                }
                const [out, stopped] = advance(this.#detokPush(d, id), false);
                if (out) {
                    yield out;
                }
                if (stopped) {
                    return;
                }
                new Int32Array(x.memory.buffer, tok, 1)[0] = id;
                n = 1;
            }
            const [out] = advance(this.#detokFlush(d), true);
            if (out) {
                yield out;
            }
        } finally {
            x.free(d);
            x.free(tok);
            x.free(err);
            x.oxl_sampler_free(sampler);
            this.#busy = false;
        }
    }

    // The continuation of prompt as one string. Options: max_tokens (128), temperature (0.8; 0 is
    // greedy), top_k (40), top_p (0.95), min_p (0.05), seed (load's seed; none: random), stop
    // (a string or strings: the text ends before the first one).
    complete(prompt, opts) {
        return [...this.#generate(prompt, opts)].join('');
    }

    // The same text as complete() as an async iterator of pieces.
    async *stream(prompt, opts) {
        for (const piece of this.#generate(prompt, opts)) {
            yield piece;
            await null; // let the caller's other work run between tokens
        }
    }

    // llama.cpp's built-in chat format names (oxl_chat_builtin_templates): "chatml", "llama2", ...
    get chatFormats() {
        const x = this.#live();
        const n = x.oxl_chat_builtin_templates(0, 0);
        const out = this.#alloc(4 * n);
        try {
            x.oxl_chat_builtin_templates(out, n);
            return Array.from(new Uint32Array(x.memory.buffer, out, n), (p) => this.#readCString(p));
        } finally {
            x.free(out);
        }
    }

    // The prompt of a conversation ([{ role, content }, ...]; content a string, or null/undefined for
    // "") in one of llama.cpp's built-in chat formats, as llama.cpp's llama_chat_apply_template
    // renders it (the library's oxl_chat_builtin_apply: this WebAssembly build has no Jinja engine).
    // Options: template (a built-in format name, see chatFormats, or a chat template text whose
    // format is recognised by its markers; default the model's tokenizer.chat_template, or ChatML
    // when the model has none), add_assistant (true: end with the opening of the assistant's turn).
    // Throws when the format cannot be told (a template matching none of the built-in formats).
    applyTemplate(messages, opts = {}) {
        checkOptions('applyTemplate', opts, TEMPLATE_OPTIONS);
        const { template, add_assistant = true } = opts;
        const x = this.#live();
        if (!Array.isArray(messages)) {
            throw new TypeError('oxillama: applyTemplate: messages must be an array of { role, content }');
        }
        messages.forEach((m, i) => {
            if (typeof m?.role !== 'string' || !(typeof m.content === 'string' || m.content == null)) {
                throw new TypeError(
                    `oxillama: applyTemplate: message ${i} needs a string role and a string content ` +
                        '(the built-in chat formats render text only)',
                );
            }
        });
        if (template !== undefined && typeof template !== 'string') {
            throw new TypeError('oxillama: applyTemplate: template must be a string (a format name or a template)');
        }
        const tmplText = template ?? this.chatTemplate; // null: no template, ChatML (as llama.cpp)
        const n = messages.length;
        const strings = []; // every string allocated, freed at the end
        const cstr = (text) => {
            const [p] = this.#cstring(text);
            strings.push(p);
            return p;
        };
        const roles = this.#alloc(8 * Math.max(n, 1)); // const char *roles[n], then contents[n]
        const contents = roles + 4 * n;
        try {
            const tmpl = tmplText === null ? 0 : cstr(tmplText);
            const table = [...messages.map((m) => cstr(m.role)), ...messages.map((m) => cstr(m.content ?? ''))];
            new Uint32Array(x.memory.buffer, roles, 2 * n).set(table); // after the allocations (memory may grow)
            const ass = add_assistant ? 1 : 0;
            const len = x.oxl_chat_builtin_apply(tmpl, roles, contents, n, ass, 0, 0);
            if (len === -1) {
                throw new Error(this.#unknownFormat(template));
            }
            if (len < 0) {
                const what = len === -3 ? 'out of WebAssembly memory' : 'invalid arguments';
                throw new Error(`oxillama: applyTemplate: ${what}`);
            }
            const buf = this.#alloc(len + 1);
            try {
                x.oxl_chat_builtin_apply(tmpl, roles, contents, n, ass, buf, len + 1);
                return decoder.decode(this.#bytes(buf, len));
            } finally {
                x.free(buf);
            }
        } finally {
            for (const p of strings) {
                x.free(p);
            }
            x.free(roles);
        }
    }

    // The assistant's reply to a conversation as one string: complete() on applyTemplate's prompt.
    // Options: applyTemplate's (template, add_assistant) and complete's.
    chat(messages, opts = {}) {
        const [prompt, gen] = this.#chatPrompt('chat', messages, opts);
        return this.complete(prompt, gen);
    }

    // The same reply as chat() as an async iterator of pieces: stream() on applyTemplate's prompt
    // (the conversation is rendered at the call, so a template error throws here).
    chatStream(messages, opts = {}) {
        const [prompt, gen] = this.#chatPrompt('chatStream', messages, opts);
        return this.stream(prompt, gen);
    }

    // The message of oxl_chat_builtin_apply's -1: the format of the template cannot be told.
    #unknownFormat(template) {
        const names = this.chatFormats.join(', ');
        if (template === undefined) {
            return (
                "oxillama: the model's chat template (tokenizer.chat_template) matches none of llama.cpp's " +
                'built-in chat formats, and this build has no Jinja engine: name a format in opts.template ' +
                `(one of: ${names})`
            );
        }
        const shown = JSON.stringify(template.length > 40 ? `${template.slice(0, 40)}...` : template);
        return (
            `oxillama: chat template ${shown} is neither a built-in chat format name nor a template whose ` +
            `format llama.cpp's detection recognises (the formats: ${names})`
        );
    }

    #chatPrompt(fn, messages, opts) {
        checkOptions(fn, opts, [...TEMPLATE_OPTIONS, ...GENERATION_OPTIONS]);
        const { template, add_assistant, ...gen } = opts;
        return [this.applyTemplate(messages, { template, add_assistant }), gen];
    }

    // Releases the model, its context and its WebAssembly instance.
    free() {
        if (this.#model) {
            this.#x.oxl_ctx_free(this.#ctx);
            this.#x.oxl_model_free(this.#model);
            this.#model = 0;
            this.#ctx = 0;
            this.#x = null;
        }
    }
}

// Loads a GGUF model. source: its bytes (Uint8Array, ArrayBuffer), or a path (Node: read from the
// host as the library reads a file) or URL (fetched). Options: n_ctx (KV cache length; 0: the
// model's training context; default 0), seed (the default seed of sampling; none: random), name
// (the file name bytes are given under, in messages; default "model.gguf"), wasm (oxillama.wasm
// elsewhere: a URL, path, bytes or WebAssembly.Module), env (environment variables of the module,
// e.g. { OXILLAMA_ISA: 'scalar' }), stderr (a function given each line the library writes to
// stderr; default console.error). Rejects with the library's message when the file is bad.
export async function load(source, opts = {}) {
    const { n_ctx = 0, seed, name = 'model.gguf', wasm, env = {}, stderr = console.error } = opts;
    let module;
    if (wasm === undefined) {
        defaultModule ??= compileWasm();
        module = await defaultModule;
    } else {
        module = await compileWasm(wasm);
    }
    const src = await modelSource(source, name);
    const wasi = new Wasi({ files: src.files, hostFs: src.hostFs, env, stdout: stderr, stderr });
    const instance = await WebAssembly.instantiate(module, wasi.imports);
    wasi.initialize(instance);
    const x = instance.exports;
    const mem = () => new Uint8Array(x.memory.buffer);
    const cstring = (s) => {
        const b = encoder.encode(s);
        const p = x.malloc(b.length + 1);
        mem().set(b, p);
        mem()[p + b.length] = 0;
        return p;
    };
    const readError = (p) => {
        const m = mem();
        let end = p;
        while (m[end] !== 0) {
            end++;
        }
        return decoder.decode(m.subarray(p, end));
    };
    const err = x.malloc(ERROR_SIZE);
    const path = cstring(src.path);
    const params = x.malloc(CTX_PARAMS_SIZE);
    try {
        mem()[err] = 0;
        let model;
        try {
            model = x.oxl_model_load(path, 0, err);
        } catch (e) {
            throw e instanceof WasiExit ? new Error(`oxillama: ${e.message}`) : e;
        }
        if (!model) {
            throw new Error(readError(err));
        }
        x.oxl_ctx_default_params(params); // a struct returned through a pointer (wasm32 C ABI)
        const v = new DataView(x.memory.buffer, params, CTX_PARAMS_SIZE);
        v.setInt32(CTX_N_CTX, n_ctx, true);
        v.setInt32(CTX_N_THREADS, 1, true);
        const ctx = x.oxl_ctx_new(model, params, err);
        if (!ctx) {
            const msg = readError(err);
            x.oxl_model_free(model);
            throw new Error(msg);
        }
        return new Model(x, model, ctx, seed);
    } finally {
        x.free(params);
        x.free(path);
        x.free(err);
    }
}

// The library's version ("MAJOR.MINOR.PATCH").
export async function version(opts = {}) {
    const module = await (opts.wasm === undefined ? (defaultModule ??= compileWasm()) : compileWasm(opts.wasm));
    const wasi = new Wasi({});
    const instance = await WebAssembly.instantiate(module, wasi.imports);
    wasi.initialize(instance);
    const x = instance.exports;
    const p = x.oxl_version();
    const m = new Uint8Array(x.memory.buffer);
    let end = p;
    while (m[end] !== 0) {
        end++;
    }
    return decoder.decode(m.subarray(p, end));
}
