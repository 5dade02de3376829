"""GGUF metadata encoding for the test scripts that write small GGUF files (tests/fuzz/make_corpus.py,
tests/server/make_toolcall_model.py): value type ids, tensor type ids and key/value records, little
endian, as ggml's docs/gguf.md lays them out."""
import os
import struct
import sys

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from gen import spec as _spec  # noqa: E402

# gguf_type (value types)
U8, I8, U16, I16, U32, I32, F32, BOOL, STR, ARR, U64, I64, F64 = range(13)
# ggml_type of the tensors these scripts write
T_F32, T_F16, T_Q8_0 = 0, 1, 8


def gstr(s):
    """A GGUF string: u64 length, then the bytes (str is UTF-8 encoded)."""
    b = s.encode() if isinstance(s, str) else s
    return struct.pack("<Q", len(b)) + b


def kv(key, vtype, payload):
    return gstr(key) + struct.pack("<I", vtype) + payload


def kv_u32(key, v):
    return kv(key, U32, struct.pack("<I", v))


def kv_f32(key, v):
    return kv(key, F32, struct.pack("<f", v))


def kv_str(key, v):
    return kv(key, STR, gstr(v))


def kv_arr(key, etype, items):
    """An array of strings or of U8, I32, U32 or F32 values."""
    if etype == STR:
        body = b"".join(gstr(s) for s in items)
    else:
        fmt = {U8: "B", I32: "i", U32: "I", F32: "f"}[etype]
        body = b"".join(struct.pack("<" + fmt, x) for x in items)
    return kv(key, ARR, struct.pack("<IQ", etype, len(items)) + body)


# struct formats of the scalar value types
SCALAR_FMT = {U8: "B", I8: "b", U16: "H", I16: "h", U32: "I", I32: "i", F32: "f", BOOL: "?", U64: "Q", I64: "q",
              F64: "d"}
# ggml type id -> (name, elements per block, bytes per block), from the spec (gen/spec.py).
GGML_TYPES = {f.id: (f.name.upper(), f.blck, f.size) for f in _spec.FORMATS}


class Gguf:
    """A GGUF v3 file read whole: kv {key: (value type, value)}, kv_offset {key: byte offset of the
    value}, meta {key: value}, tensors [(name, ggml type id, ne list, data bytes)] in file order
    (data empty when read without tensors) and tensor {name: (ne, type, data)}."""

    def __init__(self, path, with_tensors=True):
        with open(path, "rb") as f:
            buf = f.read()
        if buf[:4] != b"GGUF" or struct.unpack_from("<I", buf, 4)[0] != 3:
            raise ValueError("%s: not a GGUF v3 file" % path)
        self.off = 8
        self.buf = buf
        n_tensors, n_kv = self._take("Q"), self._take("Q")
        self.kv, self.kv_offset = {}, {}
        for _ in range(n_kv):
            key = self._string()
            t = self._take("I")
            self.kv_offset[key] = self.off
            self.kv[key] = (t, self._value(t))
        self.meta = {k: v for k, (_, v) in self.kv.items()}
        infos = []
        for _ in range(n_tensors):
            name = self._string()
            ne = [self._take("Q") for _ in range(self._take("I"))]
            infos.append((name, self._take("I"), ne, self._take("Q")))
        align = self.meta.get("general.alignment", 32)
        data = (self.off + align - 1) // align * align
        self.tensors = []
        for name, t, ne, o in infos:
            size = 0
            if with_tensors:
                _, blck, bytes_per_block = GGML_TYPES[t]
                n = 1
                for d in ne:
                    n *= d
                size = n // blck * bytes_per_block
            self.tensors.append((name, t, ne, buf[data + o:data + o + size]))
        self.tensor = {name: (ne, t, d) for name, t, ne, d in self.tensors}
        del self.buf

    def _take(self, fmt):
        (v,) = struct.unpack_from("<" + fmt, self.buf, self.off)
        self.off += struct.calcsize("<" + fmt)
        return v

    def _string(self):
        n = self._take("Q")
        self.off += n
        return self.buf[self.off - n:self.off].decode("utf-8", "surrogateescape")

    def _value(self, t):
        if t == STR:
            return self._string()
        if t == ARR:
            et, n = self._take("I"), self._take("Q")
            return [self._value(et) for _ in range(n)]
        return self._take(SCALAR_FMT[t])
