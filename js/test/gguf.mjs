// Reads the reference set's GGUF golden files (golden/models/*.gguf: metadata and small tensors)
// for the tests: string metadata and the i32 tensors (`tokens`, `greedy`), little endian, as
// ggml's docs/gguf.md lays them out; and writes a copy of a model with one more string key.
import { readFileSync } from 'node:fs';

const SCALAR_SIZE = { 0: 1, 1: 1, 2: 2, 3: 2, 4: 4, 5: 4, 6: 4, 7: 1, 10: 8, 11: 8, 12: 8 };
const GGML_TYPE_I32 = 26;

export function readGguf(file) {
    const buf = readFileSync(file);
    const v = new DataView(buf.buffer, buf.byteOffset, buf.byteLength);
    let off = 0;
    const u32 = () => ((off += 4), v.getUint32(off - 4, true));
    const u64 = () => ((off += 8), Number(v.getBigUint64(off - 8, true)));
    const str = () => {
        const n = u64();
        off += n;
        return buf.toString('utf8', off - n, off);
    };
    const value = (type) => {
        if (type === 8) {
            return str();
        }
        if (type === 9) {
            const t = u32();
            const n = u64();
            return Array.from({ length: n }, () => value(t));
        }
        const size = SCALAR_SIZE[type];
        if (size === undefined) {
            throw new Error(`${file}: GGUF value type ${type} unknown`);
        }
        off += size;
        return type === 4 ? v.getUint32(off - 4, true) : type === 5 ? v.getInt32(off - 4, true) : null;
    };
    if (buf.toString('latin1', 0, 4) !== 'GGUF') {
        throw new Error(`${file}: not a GGUF file`);
    }
    off = 8;
    const nTensors = u64();
    const nKv = u64();
    const kv = {};
    for (let i = 0; i < nKv; i++) {
        const key = str();
        kv[key] = value(u32());
    }
    const kvEnd = off;
    const infos = [];
    for (let i = 0; i < nTensors; i++) {
        const name = str();
        const dims = Array.from({ length: u32() }, () => u64());
        infos.push({ name, dims, type: u32(), offset: u64() });
    }
    const infosEnd = off;
    const align = kv['general.alignment'] ?? 32;
    const data = Math.ceil(off / align) * align;
    const tensors = {};
    for (const t of infos) {
        if (t.type === GGML_TYPE_I32) {
            const n = t.dims.reduce((a, b) => a * b, 1);
            tensors[t.name] = Array.from({ length: n }, (_, i) => v.getInt32(data + t.offset + 4 * i, true));
        }
    }
    return { kv, tensors, layout: { buf, nKv, kvEnd, infosEnd, align, data } };
}

// The bytes of a GGUF file with one more string key (e.g. tokenizer.chat_template), the rest
// unchanged: header with n_kv + 1, the key/value records and the new one, the tensor infos (their
// offsets are relative to the data section), padding to the alignment, the tensor data.
export function withStringKv(file, key, text) {
    const { kv, layout } = readGguf(file);
    if (key in kv) {
        throw new Error(`${file}: already has ${key}`);
    }
    const { buf, nKv, kvEnd, infosEnd, align, data } = layout;
    const enc = (s) => Buffer.from(s, 'utf8');
    const u64 = (n) => {
        const b = Buffer.alloc(8);
        b.writeBigUInt64LE(BigInt(n));
        return b;
    };
    const u32 = (n) => {
        const b = Buffer.alloc(4);
        b.writeUInt32LE(n);
        return b;
    };
    const record = Buffer.concat([u64(enc(key).length), enc(key), u32(8), u64(enc(text).length), enc(text)]);
    const head = Buffer.concat([buf.subarray(0, 16), u64(nKv + 1), buf.subarray(24, kvEnd), record]);
    const infos = buf.subarray(kvEnd, infosEnd);
    const end = head.length + infos.length;
    const pad = Buffer.alloc(Math.ceil(end / align) * align - end);
    return new Uint8Array(Buffer.concat([head, infos, pad, buf.subarray(data)]));
}
