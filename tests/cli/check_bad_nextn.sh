#!/bin/sh
# glm4moe with nextn_predict_layers patched from 1 to block_count (4): `oxillama run` must refuse it
# with exit status 1 and a message naming the key and both values; the unpatched file runs (0).
#   check_bad_nextn.sh OXILLAMA GLM4MOE_GGUF WORK_DIR
set -u
bin=$1 src=$2 dir=$3
rm -rf "$dir" && mkdir -p "$dir" || exit 1
bad=$dir/glm4moe-nextn4.gguf
# the key: u64 length, name, u32 type (4 = u32), u32 value 1 -> 4
python3 - "$src" "$bad" <<'PY' || exit 1
import struct, sys
data = bytearray(open(sys.argv[1], "rb").read())
key = b"glm4moe.nextn_predict_layers"
rec = struct.pack("<Q", len(key)) + key + struct.pack("<II", 4, 1)
at = data.find(rec)
assert at >= 0 and data.find(rec, at + 1) < 0, "key record not found exactly once"
data[at + len(rec) - 4:at + len(rec)] = struct.pack("<I", 4)
open(sys.argv[2], "wb").write(data)
PY
"$bin" run -m "$src" -p x -n 1 >"$dir/good.txt" 2>&1
good=$?
"$bin" run -m "$bad" -p x -n 1 >"$dir/bad.txt" 2>&1
status=$?
want="glm4moe.nextn_predict_layers = 4 must be below block_count = 4"
if [ "$good" -ne 0 ] || [ "$status" -ne 1 ] || ! grep -qF "$want" "$dir/bad.txt"; then
    echo "FAIL: unpatched status $good (want 0), patched status $status (want 1), output:"
    cat "$dir/bad.txt"
    exit 1
fi
echo "ok: $(grep -F "$want" "$dir/bad.txt")"
