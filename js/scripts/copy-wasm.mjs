// npm pack's prepack step: copies the wasm32 build's oxillama-js.wasm (a build output, not kept in
// the repository) to js/oxillama.wasm, the file the package ships. The module is $OXILLAMA_WASM,
// else ../build-wasm/oxillama-js.wasm (what `./build.sh cross wasm32` builds).
import { copyFileSync, existsSync } from 'node:fs';
import path from 'node:path';
import process from 'node:process';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
const from = process.env.OXILLAMA_WASM || path.join(here, '../../build-wasm/oxillama-js.wasm');
const to = path.join(here, '../oxillama.wasm');
if (!existsSync(from)) {
    console.error(`${from}: no WebAssembly module: build it first (./build.sh cross wasm32, or the ` +
        'wasm32 build\'s target oxillama-js), or name it in OXILLAMA_WASM');
    process.exit(1);
}
copyFileSync(from, to);
console.error(`copied ${path.resolve(from)} to ${to}`);
