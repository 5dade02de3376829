"""GGUF metadata encoding for the test scripts that write small GGUF files (tests/fuzz/make_corpus.py,
tests/server/make_toolcall_model.py): value type ids, tensor type ids and key/value records, little
endian, as ggml's docs/gguf.md lays them out."""
import struct

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
