// A minimal WASI preview 1 for oxillama.wasm (the library, a reactor): what the C library needs to
// open and read one model file, write to stdout/stderr, read clocks and random bytes. No Node import:
// it runs in browsers as in Node.
//
// Files: the preopened directory "/" (fd 3) holds the in-memory files given as `files`
// ({ "/name.gguf": Uint8Array }); in Node, oxillama.mjs also passes `hostFs` (Node's fs module), and a path
// that is not an in-memory file is opened on the host read-only at the same absolute path.
// Everything else answers ENOSYS or EBADF, as a system without it would.

const ESUCCESS = 0;
const EACCES = 2;
const EBADF = 8;
const EINVAL = 28;
const EIO = 29;
const EISDIR = 31;
const ENOENT = 44;
const ENOSYS = 52;
const ENOTDIR = 54;
const ESPIPE = 70;

const FILETYPE_CHAR = 2;
const FILETYPE_DIR = 3;
const FILETYPE_FILE = 4;

const OFLAGS_CREAT = 1;
const OFLAGS_DIRECTORY = 2;
const OFLAGS_TRUNC = 8;

const PREOPEN_FD = 3;

export class WasiExit extends Error {
    constructor(code) {
        super(`oxillama.wasm exited with status ${code}`);
        this.code = code;
    }
}

// A line-buffered writer for fd 1 and 2.
function lineWriter(sink) {
    const decoder = new TextDecoder();
    let pending = '';
    return {
        write(bytes) {
            pending += decoder.decode(bytes, { stream: true });
            let nl;
            while ((nl = pending.indexOf('\n')) >= 0) {
                sink(pending.slice(0, nl));
                pending = pending.slice(nl + 1);
            }
        },
    };
}

export class Wasi {
    // files: { "/abs/path": Uint8Array }; hostFs: Node's fs module or undefined; env: { NAME: value };
    // stdout, stderr: functions given each line.
    constructor({ files = {}, hostFs, env = {}, stdout = console.log, stderr = console.error } = {}) {
        this.files = new Map(Object.entries(files));
        this.hostFs = hostFs;
        this.env = Object.entries(env).map(([k, v]) => `${k}=${v}`);
        this.out = { 1: lineWriter(stdout), 2: lineWriter(stderr) };
        this.fds = new Map();
        this.nextFd = PREOPEN_FD + 1;
        this.memory = null;
        this.imports = { wasi_snapshot_preview1: this.#functions() };
    }

    // After instantiation: the instance's memory, then the reactor's initialiser.
    initialize(instance) {
        this.memory = instance.exports.memory;
        if (instance.exports._initialize) {
            instance.exports._initialize();
        }
    }

    #view() {
        return new DataView(this.memory.buffer);
    }

    #bytes(ptr, len) {
        return new Uint8Array(this.memory.buffer, ptr, len);
    }

    #string(ptr, len) {
        return new TextDecoder().decode(this.#bytes(ptr, len));
    }

    // iovecs: { buf u32, len u32 } × n
    #iovs(ptr, n) {
        const v = this.#view();
        const out = [];
        for (let i = 0; i < n; i++) {
            out.push([v.getUint32(ptr + 8 * i, true), v.getUint32(ptr + 8 * i + 4, true)]);
        }
        return out;
    }

    #open(path, oflags) {
        if (oflags & (OFLAGS_CREAT | OFLAGS_TRUNC)) {
            return { errno: EACCES };
        }
        if (path === '/' || path === '') {
            return { file: { dir: true } };
        }
        const mem = this.files.get(path);
        if (mem) {
            return oflags & OFLAGS_DIRECTORY ? { errno: ENOTDIR } : { file: { data: mem, pos: 0 } };
        }
        if (!this.hostFs) {
            return { errno: ENOENT };
        }
        try {
            const st = this.hostFs.statSync(path);
            if (st.isDirectory()) {
                return { file: { dir: true } };
            }
            if (oflags & OFLAGS_DIRECTORY) {
                return { errno: ENOTDIR };
            }
            const hfd = this.hostFs.openSync(path, 'r');
            return { file: { hfd, size: st.size, pos: 0 } };
        } catch (e) {
            return { errno: { ENOENT: ENOENT, EACCES: EACCES, EPERM: EACCES, ENOTDIR: ENOTDIR }[e.code] ?? EIO };
        }
    }

    #size(f) {
        return f.data ? f.data.length : f.size;
    }

    // reads up to len bytes at pos into memory at ptr; returns the count
    #readAt(f, ptr, len, pos) {
        const size = this.#size(f);
        const n = Math.max(0, Math.min(len, size - pos));
        if (n === 0) {
            return 0;
        }
        if (f.data) {
            this.#bytes(ptr, n).set(f.data.subarray(pos, pos + n));
            return n;
        }
        return this.hostFs.readSync(f.hfd, this.#bytes(ptr, n), 0, n, pos);
    }

    #functions() {
        const self = this;
        const fileOf = (fd) => self.fds.get(fd);
        const path = (dirfd, ptr, len) => {
            if (dirfd !== PREOPEN_FD) {
                return null;
            }
            return '/' + self.#string(ptr, len).replace(/^\/+/, '');
        };
        const writeFilestat = (ptr, f) => {
            const v = self.#view();
            for (let i = 0; i < 64; i += 8) {
                v.setBigUint64(ptr + i, 0n, true);
            }
            v.setUint8(ptr + 16, f.dir ? FILETYPE_DIR : FILETYPE_FILE);
            v.setBigUint64(ptr + 24, 1n, true);
            v.setBigUint64(ptr + 32, BigInt(f.dir ? 0 : self.#size(f)), true);
        };
        const fns = {
            args_sizes_get(argc, bufSize) {
                const v = self.#view();
                v.setUint32(argc, 0, true);
                v.setUint32(bufSize, 0, true);
                return ESUCCESS;
            },
            args_get() {
                return ESUCCESS;
            },
            environ_sizes_get(count, bufSize) {
                const v = self.#view();
                v.setUint32(count, self.env.length, true);
                const bytes = self.env.reduce((n, e) => n + new TextEncoder().encode(e).length + 1, 0);
                v.setUint32(bufSize, bytes, true);
                return ESUCCESS;
            },
            environ_get(environ, buf) {
                const v = self.#view();
                let p = buf;
                self.env.forEach((e, i) => {
                    const b = new TextEncoder().encode(e);
                    v.setUint32(environ + 4 * i, p, true);
                    self.#bytes(p, b.length).set(b);
                    v.setUint8(p + b.length, 0);
                    p += b.length + 1;
                });
                return ESUCCESS;
            },
            clock_res_get(id, res) {
                self.#view().setBigUint64(res, 1000n, true);
                return ESUCCESS;
            },
            clock_time_get(id, precision, time) {
                // 0 realtime; 1 monotonic, 2 process and 3 thread CPU time: elapsed time stands in
                const ns =
                    id === 0
                        ? BigInt(Date.now()) * 1000000n
                        : BigInt(Math.round((globalThis.performance?.now() ?? Date.now()) * 1e6));
                self.#view().setBigUint64(time, ns, true);
                return ESUCCESS;
            },
            random_get(buf, len) {
                for (let off = 0; off < len; off += 65536) {
                    const b = self.#bytes(buf + off, Math.min(65536, len - off));
                    if (globalThis.crypto?.getRandomValues) {
                        globalThis.crypto.getRandomValues(b);
                    } else {
                        b.forEach((_, i) => (b[i] = Math.floor(Math.random() * 256))); // Node 18 has no global crypto
                    }
                }
                return ESUCCESS;
            },
            sched_yield() {
                return ESUCCESS;
            },
            proc_exit(code) {
                throw new WasiExit(code);
            },
            fd_prestat_get(fd, ptr) {
                if (fd !== PREOPEN_FD) {
                    return EBADF;
                }
                const v = self.#view();
                v.setUint8(ptr, 0); // preopentype dir
                v.setUint32(ptr + 4, 1, true); // "/"
                return ESUCCESS;
            },
            fd_prestat_dir_name(fd, ptr, len) {
                if (fd !== PREOPEN_FD) {
                    return EBADF;
                }
                if (len < 1) {
                    return EINVAL;
                }
                self.#view().setUint8(ptr, 0x2f);
                return ESUCCESS;
            },
            fd_fdstat_get(fd, ptr) {
                const f = fileOf(fd);
                let type;
                if (fd <= 2) {
                    type = FILETYPE_CHAR;
                } else if (fd === PREOPEN_FD || f?.dir) {
                    type = FILETYPE_DIR;
                } else if (f) {
                    type = FILETYPE_FILE;
                } else {
                    return EBADF;
                }
                const v = self.#view();
                v.setUint8(ptr, type);
                v.setUint16(ptr + 2, 0, true);
                v.setBigUint64(ptr + 8, 0xffffffffffffffffn, true);
                v.setBigUint64(ptr + 16, 0xffffffffffffffffn, true);
                return ESUCCESS;
            },
            fd_fdstat_set_flags() {
                return ESUCCESS;
            },
            fd_filestat_get(fd, ptr) {
                const f = fileOf(fd);
                if (!f) {
                    return fd === PREOPEN_FD ? (writeFilestat(ptr, { dir: true }), ESUCCESS) : EBADF;
                }
                writeFilestat(ptr, f);
                return ESUCCESS;
            },
            path_filestat_get(dirfd, flags, pathPtr, pathLen, ptr) {
                const p = path(dirfd, pathPtr, pathLen);
                if (p === null) {
                    return EBADF;
                }
                const r = self.#open(p, 0);
                if (r.errno) {
                    return r.errno;
                }
                writeFilestat(ptr, r.file);
                if (r.file.hfd !== undefined) {
                    self.hostFs.closeSync(r.file.hfd);
                }
                return ESUCCESS;
            },
            path_open(dirfd, dirflags, pathPtr, pathLen, oflags, rightsBase, rightsInh, fdflags, fdPtr) {
                const p = path(dirfd, pathPtr, pathLen);
                if (p === null) {
                    return EBADF;
                }
                const r = self.#open(p, oflags);
                if (r.errno) {
                    return r.errno;
                }
                const fd = self.nextFd++;
                self.fds.set(fd, r.file);
                self.#view().setUint32(fdPtr, fd, true);
                return ESUCCESS;
            },
            fd_close(fd) {
                const f = fileOf(fd);
                if (!f) {
                    return EBADF;
                }
                if (f.hfd !== undefined) {
                    self.hostFs.closeSync(f.hfd);
                }
                self.fds.delete(fd);
                return ESUCCESS;
            },
            fd_read(fd, iovs, n, nread) {
                const f = fileOf(fd);
                if (!f) {
                    return fd <= 2 ? ((self.#view().setUint32(nread, 0, true), ESUCCESS)) : EBADF;
                }
                if (f.dir) {
                    return EISDIR;
                }
                let total = 0;
                for (const [buf, len] of self.#iovs(iovs, n)) {
                    const got = self.#readAt(f, buf, len, f.pos);
                    f.pos += got;
                    total += got;
                    if (got < len) {
                        break;
                    }
                }
                self.#view().setUint32(nread, total, true);
                return ESUCCESS;
            },
            fd_pread(fd, iovs, n, offset, nread) {
                const f = fileOf(fd);
                if (!f) {
                    return EBADF;
                }
                if (f.dir) {
                    return EISDIR;
                }
                let pos = Number(offset);
                let total = 0;
                for (const [buf, len] of self.#iovs(iovs, n)) {
                    const got = self.#readAt(f, buf, len, pos);
                    pos += got;
                    total += got;
                    if (got < len) {
                        break;
                    }
                }
                self.#view().setUint32(nread, total, true);
                return ESUCCESS;
            },
            fd_seek(fd, offset, whence, newOffset) {
                const f = fileOf(fd);
                if (!f) {
                    return fd <= 2 ? ESPIPE : EBADF;
                }
                const base = [0, f.pos, f.dir ? 0 : self.#size(f)][whence];
                if (base === undefined) {
                    return EINVAL;
                }
                const pos = base + Number(offset);
                if (pos < 0) {
                    return EINVAL;
                }
                f.pos = pos;
                self.#view().setBigUint64(newOffset, BigInt(pos), true);
                return ESUCCESS;
            },
            fd_tell(fd, ptr) {
                const f = fileOf(fd);
                if (!f) {
                    return EBADF;
                }
                self.#view().setBigUint64(ptr, BigInt(f.pos), true);
                return ESUCCESS;
            },
            fd_write(fd, iovs, n, nwritten) {
                const w = self.out[fd];
                if (!w) {
                    return EBADF;
                }
                let total = 0;
                for (const [buf, len] of self.#iovs(iovs, n)) {
                    w.write(self.#bytes(buf, len).slice());
                    total += len;
                }
                self.#view().setUint32(nwritten, total, true);
                return ESUCCESS;
            },
        };
        // any other preview 1 function: not supported here
        return new Proxy(fns, { get: (t, name) => t[name] ?? (() => ENOSYS) });
    }
}
