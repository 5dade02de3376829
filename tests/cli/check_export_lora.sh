#!/bin/sh
# oxillama export-lora writes the files llama-export-lora writes, byte for byte: their sha256 sums
# (golden/lora/README.md, "Merged models") for the llama model with one adapter, with two scaled
# adapters (one f16), for its Q8_0 file (made here by oxillama quantize, which writes llama-quantize's
# file; merged tensors become f16) and for qwen3 with the FILE SCALE form. Exit status checked.
# usage: check_export_lora.sh OXILLAMA GOLDEN_DIR WORK_DIR
set -u
bin=$1 g=$2 work=$3
mkdir -p "$work"
fails=0
check() { # name sha256 args...
    name=$1 want=$2
    shift 2
    rm -f "$work/$name.gguf"
    "$bin" export-lora "$@" -o "$work/$name.gguf" -t 2 >"$work/$name.log" 2>&1
    rc=$?
    got=$(sha256sum "$work/$name.gguf" 2>/dev/null | cut -d' ' -f1)
    if [ "$rc" -eq 0 ] && [ "$got" = "$want" ]; then
        echo "PASS  $name: llama-export-lora's file ($want)"
    else
        echo "FAIL  $name: exit $rc, sha256 $got, want $want"
        tail -2 "$work/$name.log"
        fails=$((fails + 1))
    fi
}
check llama-a 55c48e12b965400e98e9bb9a4b40f4311f17ca0949c62fac535b5f04238f2be0 \
    -m "$g/arch/llama.gguf" --lora "$g/lora/llama.lora-a.gguf"
check llama-ab 7446c20bc5a79c0d8ea9a27089f850c46a9be6bd14cfd34d438ec56e0ed4c4a3 \
    -m "$g/arch/llama.gguf" --lora-scaled "$g/lora/llama.lora-a.gguf:0.5,$g/lora/llama.lora-b.gguf:0.75"
if "$bin" quantize --quiet "$g/arch/llama.gguf" "$work/llama-Q8_0.gguf" Q8_0 2 >/dev/null 2>&1; then
    check llama-q8-a c00ee01204250cef1e7aa9bf8657f5e82c6d7347de9a561dad106208a88a908f \
        -m "$work/llama-Q8_0.gguf" --lora "$g/lora/llama.lora-a.gguf"
else
    echo "FAIL  oxillama quantize Q8_0"
    fails=$((fails + 1))
fi
check qwen3 cedddb472e92e94e268f69f4541834b06fc17c9d6b5ba5819c8e0a1fe68e9cd6 \
    -m "$g/arch/qwen3.gguf" --lora-scaled "$g/lora/qwen3.lora.gguf" 1.5
# an adapter of another architecture: refused, nothing written
rm -f "$work/bad.gguf"
out=$("$bin" export-lora -m "$g/arch/llama.gguf" --lora "$g/lora/qwen3.lora.gguf" -o "$work/bad.gguf" 2>&1)
rc=$?
case $out in
*"general.architecture 'qwen3' is not the base model's 'llama'"*)
    if [ "$rc" -eq 1 ] && [ ! -e "$work/bad.gguf" ]; then echo "PASS  wrong architecture refused"; else
        echo "FAIL  wrong architecture: exit $rc"; fails=$((fails + 1)); fi ;;
*) echo "FAIL  wrong architecture: exit $rc, $out"; fails=$((fails + 1)) ;;
esac
echo "$((5 - fails)) passed, $fails failed"
[ "$fails" -eq 0 ]
