// Runs a wasm32-wasi program of this project (oxillama.wasm, oxl-kernel-tests.wasm) under Node's
// WASI: node tools/wasi-run.mjs PROGRAM.wasm [ARGS...]. The host file system is visible at the
// same absolute paths (each directory of "/" is preopened) except /proc, /sys and /dev: the host's
// processor count says nothing about the program's one thread. The environment is passed through
// (OXILLAMA_ISA, ...). Exits with the program's status.
//
// WASI preview 1 has no current directory (the C library resolves relative paths against "/"), so
// an argument that looks like a path (it has a "/" or a ".") and names an existing file or
// directory relative to this process's directory is passed as its absolute path:
// `oxillama.wasm run -m models/x.gguf` opens ./models/x.gguf.
import { existsSync, readdirSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import process from 'node:process';
import { WASI } from 'node:wasi';

const [program, ...args] = process.argv.slice(2);
if (!program) {
    process.stderr.write('usage: node tools/wasi-run.mjs PROGRAM.wasm [ARGS...]\n');
    process.exit(2);
}
const pathLike = (a) => /[/.]/.test(a) && !path.isAbsolute(a) && existsSync(a);
const hostArgs = args.map((a) => (pathLike(a) ? path.resolve(a) : a));
const wasi = new WASI({
    version: 'preview1',
    args: [program, ...hostArgs],
    env: process.env,
    preopens: Object.fromEntries(
        readdirSync('/', { withFileTypes: true })
            .filter((d) => d.isDirectory() && !['proc', 'sys', 'dev'].includes(d.name))
            .map((d) => [`/${d.name}`, `/${d.name}`]),
    ),
    returnOnExit: true,
});
const module = await WebAssembly.compile(await readFile(program));
const instance = await WebAssembly.instantiate(module, wasi.getImportObject());
process.exitCode = wasi.start(instance);
