// The JavaScript package against llama.cpp's goldens for the bundled stories260K model:
// node --test js/test/*.test.mjs (ctest js-module: tests/jsmod_tests.cmake). The module is
// $OXILLAMA_WASM (the build's oxillama-js.wasm), else js/oxillama.wasm (the packed copy).
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';

import { load, version } from '../oxillama.mjs';
import { readGguf } from './gguf.mjs';

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

    test('chat goes through the library chat template, or says this build has none', () => {
        const messages = [{ role: 'user', content: 'Tell me a story' }];
        let rendered;
        try {
            rendered = model.applyTemplate(messages);
        } catch (e) {
            // the cross-build subset has no src/chat: the module does not export it
            assert.match(e.message, /^oxillama: chat templates are not in this WebAssembly build/);
            assert.throws(() => model.chat(messages, { max_tokens: 4 }), { message: e.message });
            return;
        }
        // stories260K has no template: ChatML, as llama.cpp's
        assert.equal(rendered, '<|im_start|>user\nTell me a story<|im_end|>\n<|im_start|>assistant\n');
        assert.equal(typeof model.chat(messages, { max_tokens: 4, temperature: 0 }), 'string');
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
