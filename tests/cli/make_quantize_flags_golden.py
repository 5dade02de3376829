#!/usr/bin/env python3
"""Writes golden/quantize/expected-flags.json from llama-quantize's outputs: for each case below,
`llama-quantize ARGS synth-small-f32.gguf OUT FTYPE 2` is run and its output recorded as
golden/quantize/expected.json records one (each tensor's ggml type, shape and data sha256), with the
whole file's sha256 and the metadata keys the case's --override-kv options name (value type id and
value, as tests/gguf_kv.py reads them). golden/quantize/expected-flags.stderr: llama-quantize's
manual-override, per-tensor and size-summary lines on stderr for the "tensor-type" case, without
the C++ function-name prefixes ("llama_tensor_get_type: ", "llama_model_quantize_impl: ").

usage: make_quantize_flags_golden.py LLAMA_QUANTIZE GOLDEN_DIR WORK_DIR
"""
import hashlib
import json
import os
import subprocess
import sys

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from gguf_kv import GGML_TYPES, Gguf  # noqa: E402

# name: (options before the positional arguments, FTYPE)
CASES = {
    # the example of the help: first matching pattern wins (blk.1.attn_v takes q8_0, not q5_0)
    "tensor-type": (["--tensor-type", "attn_v=q8_0", "--tensor-type", r"blk\.1\..*=q5_0"], "Q4_K_M"),
    # a manual tensor skips the mix rules and their layer counters: blk.1.attn_v and blk.1.ffn_down
    # get the mix's choice for layer 0 (q4_K), not for layer 1 (q6_K); patterns are lower-cased
    # (BLK\.0 matches blk.0), type names are case-insensitive, \d and groups are ECMAScript regex
    "tensor-type-counters": (["--tensor-type", r"blk\.0\.attn_v=q8_0", "--tensor-type", r"BLK\.0\.FFN_DOWN=Q5_1",
                              "--tensor-type", r"blk\.\d\.ffn_(up|gate)=q4_1"], "Q4_K_M"),
    # --output-tensor-type wins over a pattern; a pattern wins over the mix for token_embd
    "tensor-type-precedence": (["--tensor-type", "output=q5_0", "--tensor-type", "token_embd=q4_1",
                                "--output-tensor-type", "q8_0"], "Q4_K_M"),
    # --token-embedding-type wins over a pattern
    "tensor-type-token-embd": (["--tensor-type", "embd=q5_0", "--token-embedding-type", "q6_K"], "Q4_K_M"),
    # patterns apply only when the ftype's type is quantized: none for F16
    "tensor-type-f16": (["--tensor-type", "attn_v=q8_0"], "F16"),
    # patterns apply with --pure too
    "tensor-type-pure": (["--pure", "--tensor-type", "ffn_down=q8_0"], "Q4_K_M"),
    # output.weight stays as it is (f32), the mix's other choices unchanged
    "leave-output-tensor": (["--leave-output-tensor"], "Q4_0"),
    # ...even with --output-tensor-type (the tensor is not quantizable at all)
    "leave-output-tensor-type": (["--leave-output-tensor", "--output-tensor-type", "q8_0"], "Q6_K"),
    "override-kv": (["--override-kv", "general.name=str:test"], "Q8_0"),
    # every value type; an existing key is replaced, an int is written as u32 of its absolute value
    "override-kv-types": (["--override-kv", "general.name=str:test", "--override-kv", "llama.context_length=int:-4096",
                           "--override-kv", "test.scale=float:0.25", "--override-kv", "test.flag=bool:true",
                           "--override-kv", "test.off=bool:false"], "Q8_0"),
    # an int override of a hyper-parameter also changes the mix, as llama_model_loader reads it:
    # block_count (n_layer: ffn_down's use_more_bits) and head_count_kv (Q2_K's attn_v by GQA)
    "override-kv-block-count": (["--override-kv", "llama.block_count=int:16"], "Q4_K_M"),
    "override-kv-head-count-kv": (["--override-kv", "llama.attention.head_count_kv=int:1"], "Q2_K"),
    # ...an override of another type does not (it is still written), nor does a second one of the
    # same key (the loader keeps the first; the metadata gets the last)
    "override-kv-hparam-float": (["--override-kv", "llama.attention.head_count_kv=float:1"], "Q2_K"),
    "override-kv-hparam-first": (["--override-kv", "llama.attention.head_count_kv=float:1",
                                  "--override-kv", "llama.attention.head_count_kv=int:1"], "Q2_K"),
}


def override_keys(args):
    return [args[i + 1].split("=", 1)[0] for i, a in enumerate(args) if a == "--override-kv"]


def main():
    llama_quantize, golden, work = sys.argv[1:4]
    os.makedirs(work, exist_ok=True)
    src = os.path.join(golden, "quantize", "synth-small-f32.gguf")
    out = {}
    for name, (args, ftype) in CASES.items():
        path = os.path.join(work, name + ".gguf")
        r = subprocess.run([llama_quantize] + args + [src, path, ftype, "2"], check=True, capture_output=True)
        if name == "tensor-type":
            lines = []
            for line in r.stderr.decode().splitlines():
                for prefix in ("llama_tensor_get_type: ", "llama_model_quantize_impl: "):
                    if line.startswith(prefix):
                        line = line[len(prefix):]
                        break
                else:
                    if not line.startswith("[ "):
                        continue
                lines.append(line + "\n")
            with open(os.path.join(golden, "quantize", "expected-flags.stderr"), "w") as f:
                f.write("".join(lines))
        g = Gguf(path)
        with open(path, "rb") as f:
            file_sha = hashlib.sha256(f.read()).hexdigest()
        out[name] = {
            "args": args,
            "ftype": ftype,
            "file_sha256": file_sha,
            "kv": {k: list(g.kv[k]) for k in override_keys(args)},
            "tensors": {n: [GGML_TYPES[t][0], ne, hashlib.sha256(d).hexdigest()] for n, t, ne, d in g.tensors},
        }
        os.remove(path)
    with open(os.path.join(golden, "quantize", "expected-flags.json"), "w") as f:
        json.dump(out, f, indent=1, sort_keys=True)
        f.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
