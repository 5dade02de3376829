// The JavaScript package against llama.cpp's goldens for the bundled stories260K model:
// node --test js/test/*.test.mjs (ctest js-module: tests/jsmod_tests.cmake). The module is
// $OXILLAMA_WASM (the build's oxillama-js.wasm), else js/oxillama.wasm (the packed copy).
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { spawnSync } from 'node:child_process';
import { createServer } from 'node:http';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';

import { load, version } from '../oxillama.mjs';
import { readGguf, withStringKv } from './gguf.mjs';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const wasm = process.env.OXILLAMA_WASM || path.join(root, 'js/oxillama.wasm');
if (!existsSync(wasm)) {
    throw new Error(`${wasm}: no WebAssembly module (build the wasm32 target oxillama-js, set OXILLAMA_WASM)`);
}
const modelPath = path.join(root, 'models/stories260K.gguf');
const golden = (...p) => path.join(root, 'golden', ...p);
const onceGolden = readGguf(golden('models/stories260K.once.gguf'));
// llama-simple's greedy continuation (-n 64, temperature 0) of once.prompt
const prompt = readFileSync(golden('run/once.prompt'), 'utf8');
const expected = readFileSync(golden('run/once.expected'), 'utf8');

describe('stories260K', () => {
    let model;
    before(async () => {
        model = await load(modelPath, { wasm, n_ctx: 256 });
    });
    after(() => model?.free());

    test('greedy text is llama.cpp golden text', () => {
        assert.equal(prompt, 'Once upon a time');
        assert.equal(model.complete(prompt, { max_tokens: 64, temperature: 0 }), expected);
    });

    test('streamed pieces joined are the non-streamed text, one piece a token', async () => {
        const pieces = [];
        for await (const piece of model.stream(prompt, { max_tokens: 64, temperature: 0 })) {
            pieces.push(piece);
        }
        assert.equal(pieces.join(''), model.complete(prompt, { max_tokens: 64, temperature: 0 }));
        assert.equal(pieces.join(''), expected);
        assert.equal(pieces.length, 64); // no token of this text is a part of a character
    });

    test('tokenize is llama.cpp tokenization of the golden prompts', () => {
        for (const name of ['once', 'lily', 'dog']) {
            const g = readGguf(golden(`models/stories260K.${name}.gguf`));
            assert.equal(g.kv['golden.model'], 'stories260K.gguf');
            assert.deepEqual(model.tokenize(g.kv['golden.prompt']), g.tensors.tokens, name);
        }
        assert.deepEqual(onceGolden.tensors.tokens, [1, 403, 407, 261, 378]);
        assert.deepEqual(model.tokenize('Once upon a time', { add_special: false }), [403, 407, 261, 378]);
    });

    test('detokenize of the golden greedy tokens is the golden text', () => {
        const greedy = onceGolden.tensors.greedy;
        assert.equal(greedy.length, 64);
        assert.equal(model.detokenize(greedy), expected);
    });

    test('a stop string ends the text before it, streamed or not', async () => {
        const at = expected.indexOf('Lily');
        assert.ok(at > 0);
        const opts = { max_tokens: 64, temperature: 0, stop: ['Lily'] };
        assert.equal(model.complete(prompt, opts), expected.slice(0, at));
        const pieces = [];
        for await (const piece of model.stream(prompt, opts)) {
            pieces.push(piece);
        }
        assert.equal(pieces.join(''), expected.slice(0, at));
        // a stop string over several tokens (" g", "ir", "l", " named"): held back, then dropped
        const at2 = expected.indexOf('girl named');
        const tokenPieces = onceGolden.tensors.greedy.map((id) => model.detokenize([id]));
        assert.ok(at2 > 0 && !tokenPieces.some((p) => p.includes('girl named')));
        const held = [];
        for await (const piece of model.stream(prompt, { ...opts, stop: 'girl named' })) {
            held.push(piece);
        }
        assert.equal(held.join(''), expected.slice(0, at2));
        assert.equal(model.complete(prompt, { ...opts, stop: ['girl named', 'red ball'] }), expected.slice(0, at2));
        // a stop string that never comes: the whole text, pieces held back while they might start it
        assert.equal(model.complete(prompt, { ...opts, stop: 'Lily went' }), expected);
    });

    test('max_tokens bounds the continuation', () => {
        assert.equal(model.complete(prompt, { max_tokens: 4, temperature: 0 }), model.detokenize(onceGolden.tensors.greedy.slice(0, 4)));
    });

    test('seeded sampling is llama.cpp text (golden/sampling, stories260K f32)', () => {
        const cases = readFileSync(golden('sampling/cases.tsv'), 'utf8')
            .split('\n')
            .filter((l) => l && !l.startsWith('#'))
            .map((l) => l.split('\t'))
            .filter(([, file]) => file === 'stories260K.gguf');
        assert.equal(cases.length, 26);
        for (const [name, , seed, temp, topK, topP, minP, n, p] of cases) {
            const text = model.complete(p, {
                seed: Number(seed),
                temperature: Number(temp),
                top_k: Number(topK),
                top_p: Number(topP),
                min_p: Number(minP),
                max_tokens: Number(n),
            });
            assert.equal(text, readFileSync(golden(`sampling/${name}.expected`), 'utf8'), name);
        }
    });
});

// llama.cpp's built-in chat formats: the template texts of llama.cpp's tests/test-chat-template.cpp
// and llama.cpp's renderings of its conversation with them (golden/chat-builtin/PROVENANCE.md)
const builtin = JSON.parse(readFileSync(golden('chat-builtin/llama-cpp-test-chat-template.json'), 'utf8'));
const builtinCase = (name) => builtin.cases.find((c) => c.name === name) ?? assert.fail(`no golden case ${name}`);
// the native command line (tests/jsmod/check_js.sh and build.sh pass the build's)
const cli = process.env.OXILLAMA_CLI || path.join(root, 'build/oxillama');

describe('chat', () => {
    let model;
    let dir;
    before(async () => {
        model = await load(modelPath, { wasm, n_ctx: 256 });
        dir = mkdtempSync(path.join(tmpdir(), 'oxillama-js-chat-'));
    });
    after(() => {
        model?.free();
        rmSync(dir, { recursive: true, force: true });
    });

    test("every template of llama.cpp's test vectors renders as llama.cpp's built-in format", () => {
        assert.equal(builtin.add_generation_prompt, true);
        assert.equal(builtin.cases.length, 36);
        for (const c of builtin.cases) {
            const messages = [...builtin.conversation, ...c.extra_conversation];
            assert.equal(model.applyTemplate(messages, { template: c.template }), c.expected_builtin, c.name);
        }
    });

    test('a format named renders as llama.cpp renders the template it detects as that format', () => {
        const byName = {
            chatml: 'teknium/OpenHermes-2.5-Mistral-7B',
            llama3: 'Llama-3',
            gemma: 'google/gemma-7b-it',
            phi3: 'Phi-3-mini',
            'mistral-v7': "mistralai/Mistral-Large-Instruct-2411 (mistralai 'v7' template)",
            llama2: 'mistralai/Mistral-7B-Instruct-v0.2 (NOTE: Old pre-v1 without a system prompt)',
        };
        for (const [name, c] of Object.entries(byName)) {
            const want = builtinCase(c).expected_builtin;
            assert.equal(model.applyTemplate(builtin.conversation, { template: name }), want, name);
        }
        assert.equal(model.chatFormats.length, 55);
        assert.deepEqual(model.chatFormats.slice(0, 3), ['chatml', 'llama2', 'llama2-sys']);
        for (const name of Object.keys(byName)) {
            assert.ok(model.chatFormats.includes(name), name);
        }
    });

    test('a model without a template gets ChatML; add_assistant false leaves out the generation prompt', () => {
        const chatml = builtinCase('teknium/OpenHermes-2.5-Mistral-7B').expected_builtin;
        assert.equal(model.chatTemplate, null);
        assert.equal(model.applyTemplate(builtin.conversation), chatml);
        const gen = '<|im_start|>assistant\n';
        assert.ok(chatml.endsWith(gen));
        assert.equal(model.applyTemplate(builtin.conversation, { add_assistant: false }), chatml.slice(0, -gen.length));
    });

    test("a model's own template picks its format", async () => {
        const c = builtinCase('Llama-3');
        const m = await load(withStringKv(modelPath, 'tokenizer.chat_template', c.template), { wasm, n_ctx: 256 });
        try {
            assert.equal(m.chatTemplate, c.template);
            assert.equal(m.applyTemplate(builtin.conversation), c.expected_builtin);
            // a template given overrides the model's
            const chatml = builtinCase('teknium/OpenHermes-2.5-Mistral-7B').expected_builtin;
            assert.equal(m.applyTemplate(builtin.conversation, { template: 'chatml' }), chatml);
        } finally {
            m.free();
        }
    });

    test("a greedy chat is the native command line's reply to the same messages", async (t) => {
        if (!existsSync(cli)) {
            t.skip(`no native oxillama at ${cli} (set OXILLAMA_CLI)`);
            return;
        }
        // the first two messages of llama.cpp's conversation, as tests/cli/check_chat_cli.py feeds them
        const [system, user] = builtin.conversation;
        assert.deepEqual([system.role, user.role], ['system', 'user']);
        const messages = [system, user];
        for (const name of ['teknium/OpenHermes-2.5-Mistral-7B', 'Llama-3']) {
            const c = builtinCase(name);
            const bytes = withStringKv(modelPath, 'tokenizer.chat_template', c.template);
            const file = path.join(dir, 'chat.gguf');
            writeFileSync(file, bytes);
            const args = ['run', '-m', file, '-cnv', '-sys', system.content, '-n', '48', '--temp', '0', '-c', '256'];
            const run = spawnSync(cli, [...args, '--verbose-prompt'], { input: `${user.content}\n/exit\n`, encoding: 'utf8' });
            assert.equal(run.status, 0, `${name}: ${run.stderr}`);
            // the prompt: llama.cpp's rendering up to where the assistant's "Hi there" starts
            const prompt = /^prompt: '([^']*)'\nnumber of tokens in prompt/m.exec(run.stderr)?.[1];
            assert.ok(prompt, run.stderr);
            assert.ok(c.expected_builtin.startsWith(`${prompt}Hi there`), name);
            // stdout: "\n> ", the reply, "\n", then the next "\n> "
            assert.ok(run.stdout.startsWith('\n> ') && run.stdout.endsWith('\n\n> '), JSON.stringify(run.stdout));
            const reply = run.stdout.slice(3, -4);
            assert.ok(reply.length > 20, name);
            const m = await load(bytes, { wasm, n_ctx: 256 });
            try {
                assert.equal(m.applyTemplate(messages), prompt, name);
                assert.equal(m.chat(messages, { max_tokens: 48, temperature: 0 }), reply, name);
                const pieces = [];
                for await (const piece of m.chatStream(messages, { max_tokens: 48, temperature: 0 })) {
                    pieces.push(piece);
                }
                assert.equal(pieces.join(''), reply, name);
                assert.ok(pieces.length > 1);
            } finally {
                m.free();
            }
        }
    });

    test('a model template no built-in format matches is an error naming that, unless a format is named', async () => {
        const m = await load(withStringKv(modelPath, 'tokenizer.chat_template', '{{ messages }}'), { wasm, n_ctx: 256 });
        const messages = [{ role: 'user', content: 'Hello' }];
        const unknown =
            /^oxillama: the model's chat template \(tokenizer\.chat_template\) matches none of llama\.cpp's built-in chat formats, and this build has no Jinja engine: name a format in opts\.template \(one of: chatml, llama2, .*, solar-open\)$/;
        try {
            assert.throws(() => m.applyTemplate(messages), { message: unknown });
            assert.throws(() => m.chat(messages, { max_tokens: 4 }), { message: unknown });
            assert.throws(() => m.chatStream(messages, { max_tokens: 4 }), { message: unknown });
            assert.equal(m.applyTemplate(messages, { template: 'chatml' }), '<|im_start|>user\nHello<|im_end|>\n<|im_start|>assistant\n');
            assert.equal(typeof m.chat(messages, { template: 'gemma', max_tokens: 4, temperature: 0 }), 'string');
        } finally {
            m.free();
        }
    });

    test('bad arguments are errors naming them', () => {
        const messages = [{ role: 'user', content: 'Hello' }];
        assert.throws(() => model.applyTemplate(messages, { template: 'chatml2' }), {
            message: /^oxillama: chat template "chatml2" is neither a built-in chat format name nor a template whose format llama\.cpp's detection recognises \(the formats: chatml, /,
        });
        assert.throws(() => model.applyTemplate(messages, { addAssistant: false }), {
            name: 'TypeError',
            message: "oxillama: applyTemplate: unknown option 'addAssistant' (the options: template, add_assistant)",
        });
        assert.throws(() => model.chat(messages, { max_token: 4 }), {
            message: /^oxillama: chat: unknown option 'max_token' \(the options: template, add_assistant, max_tokens, /,
        });
        assert.throws(() => model.applyTemplate([{ role: 'user', content: [{ type: 'text', text: 'Hello' }] }]), {
            message: 'oxillama: applyTemplate: message 0 needs a string role and a string content (the built-in chat formats render text only)',
        });
        assert.throws(() => model.applyTemplate({ role: 'user', content: 'Hello' }), {
            message: 'oxillama: applyTemplate: messages must be an array of { role, content }',
        });
        // a null content is "", as the library's built-in formats take it
        assert.equal(model.applyTemplate([{ role: 'user', content: null }], { add_assistant: false }), '<|im_start|>user\n<|im_end|>\n');
        assert.equal(model.applyTemplate([], { template: 'llama3' }), '<|start_header_id|>assistant<|end_header_id|>\n\n');
    });
});

describe('loading', () => {
    let dir;
    before(() => {
        dir = mkdtempSync(path.join(tmpdir(), 'oxillama-js-'));
    });
    after(() => rmSync(dir, { recursive: true, force: true }));

    test('the model given as bytes gives the golden text', async () => {
        const m = await load(readFileSync(modelPath), { wasm, n_ctx: 128, seed: 42 });
        try {
            assert.equal(m.n_ctx, 128);
            assert.equal(m.complete(prompt, { max_tokens: 64, temperature: 0 }), expected);
            // load's seed is the sampling seed when a call names none (golden/sampling t07, seed 42)
            const t07 = { temperature: 0.7, top_k: 40, top_p: 0.9, min_p: 0.05, max_tokens: 48 };
            assert.equal(m.complete(prompt, t07), readFileSync(golden('sampling/stories260K.t07.s42.expected'), 'utf8'));
        } finally {
            m.free();
        }
        assert.throws(() => m.tokenize('x'), { message: 'oxillama: the model was freed' });
    });

    test('the context bounds the text; a prompt longer than it fails with the library message', async () => {
        const m = await load(modelPath, { wasm, n_ctx: 16 });
        try {
            // 5 prompt tokens (BOS included) and 11 generated ones fill the 16 positions; the 12th is
            // sampled from the logits of the last position
            const greedy12 = m.detokenize(onceGolden.tensors.greedy.slice(0, 12));
            assert.equal(m.complete(prompt, { max_tokens: 64, temperature: 0 }), greedy12);
            assert.throws(() => m.complete(`${prompt} there was a little girl named Lily who liked to play`), {
                message: /^decode: sequence 0 is full: its context holds 16 tokens/,
            });
            assert.equal(m.complete(prompt, { max_tokens: 64, temperature: 0 }), greedy12); // still usable
        } finally {
            m.free();
        }
    });

    test('a missing file rejects with the library message', async () => {
        const missing = path.join(dir, 'missing.gguf');
        await assert.rejects(load(missing, { wasm }), {
            message: `${missing}: cannot open: No such file or directory`,
        });
    });

    test('a corrupt file rejects with the library message', async () => {
        const bad = path.join(dir, 'bad.gguf');
        writeFileSync(bad, 'NOTGGUF0000000000000000000000000');
        await assert.rejects(load(bad, { wasm }), {
            message: `${bad}: magic 'NOTG' at byte 0: not a GGUF file (expected 'GGUF')`,
        });
        await assert.rejects(load(readFileSync(bad), { wasm, name: 'bad.gguf' }), {
            message: `/bad.gguf: magic 'NOTG' at byte 0: not a GGUF file (expected 'GGUF')`,
        });
        const truncated = path.join(dir, 'truncated.gguf');
        writeFileSync(truncated, readFileSync(modelPath).subarray(0, 1000));
        await assert.rejects(load(truncated, { wasm }), {
            message: `${truncated}: tensor count 48 at byte 8: larger than the file can hold (976 bytes remain, a tensor info needs at least 32)`,
        });
    });

    test('the version is the project version', async () => {
        const cmake = readFileSync(path.join(root, 'CMakeLists.txt'), 'utf8');
        const want = /project\(oxillama\s+VERSION\s+([0-9.]+)/.exec(cmake)?.[1];
        assert.ok(want);
        assert.equal(await version({ wasm }), want);
    });

    test('over HTTP as in a browser: fetched module and model', async () => {
        // the browser path: the model and oxillama.wasm fetched from URLs (served on loopback)
        const files = { '/stories260K.gguf': modelPath, '/oxillama.wasm': wasm };
        const server = createServer((req, res) => {
            const file = files[req.url];
            if (!file) {
                res.writeHead(404).end();
                return;
            }
            const type = req.url.endsWith('.wasm') ? 'application/wasm' : 'application/octet-stream';
            res.writeHead(200, { 'content-type': type }).end(readFileSync(file));
        });
        await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
        const base = `http://127.0.0.1:${server.address().port}`;
        try {
            const m = await load(new URL(`${base}/stories260K.gguf`), { wasm: new URL(`${base}/oxillama.wasm`) });
            try {
                assert.equal(m.complete(prompt, { max_tokens: 64, temperature: 0 }), expected);
            } finally {
                m.free();
            }
            await assert.rejects(load(`${base}/none.gguf`, { wasm: new URL(`${base}/oxillama.wasm`) }), {
                message: `oxillama: ${base}/none.gguf: HTTP 404`,
            });
        } finally {
            server.close();
        }
    });
});

test('the browser path imports nothing from Node', () => {
    const js = path.join(root, 'js');
    const wasi = readFileSync(path.join(js, 'wasi.mjs'), 'utf8').replace(/\/\/.*$/gm, ''); // code, not comments
    assert.doesNotMatch(wasi, /node:|\bprocess\b|require\(/);
    const main = readFileSync(path.join(js, 'oxillama.mjs'), 'utf8');
    // no static import of a Node module; node: modules only through import() on the Node path
    assert.deepEqual(main.match(/^import .*$/gm), ["import { Wasi, WasiExit } from './wasi.mjs';"]);
});

test('the package version is the project version', () => {
    const pkg = JSON.parse(readFileSync(path.join(root, 'js/package.json'), 'utf8'));
    const cmake = readFileSync(path.join(root, 'CMakeLists.txt'), 'utf8');
    assert.equal(pkg.version, /project\(oxillama\s+VERSION\s+([0-9.]+)/.exec(cmake)?.[1]);
    assert.equal(pkg.type, 'module');
    assert.ok(pkg.files.includes('oxillama.wasm'));
});
