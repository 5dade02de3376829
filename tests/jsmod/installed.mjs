// Run inside a project where the packed oxillama was installed (tests/jsmod/check_js.sh): the
// package's own oxillama.wasm, imported by name, gives llama.cpp's greedy text.
// usage: node installed.mjs MODEL.gguf PROMPT_FILE EXPECTED_FILE
import { readFileSync } from 'node:fs';
import { load } from 'oxillama';

const [model, promptFile, expectedFile] = process.argv.slice(2);
const m = await load(model, { n_ctx: 256 });
const got = m.complete(readFileSync(promptFile, 'utf8'), { max_tokens: 64, temperature: 0 });
m.free();
if (got !== readFileSync(expectedFile, 'utf8')) {
    console.error(`installed package: greedy text differs from ${expectedFile}:\n${got}`);
    process.exit(1);
}
console.log('installed package: greedy text as golden');
