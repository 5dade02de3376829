#!/bin/sh
# ctest quantize-kquant-files: `oxillama quantize` writes, byte for byte, the file llama-quantize writes
# for each line of golden/quantize/llama-quantize.sha256 (the K-quant mixes of stories260K, whose 5
# layers exercise the per-layer rules, synth-small Q4_K_M and gpt-oss MXFP4_MOE): exit status 0 and the same sha256.
# usage: check_quantize_files.sh OXILLAMA_BINARY SOURCE_DIR WORK_DIR
set -u
bin=$1 src=$2 work=$3
mkdir -p "$work"
passed=0 failed=0
while read -r want name; do
    case $want in '#'* | '') continue ;; esac
    ftype=${name##*-}
    ftype=${ftype%.gguf}
    case $name in
    stories260K-*) in=$src/models/stories260K.gguf ;;
    synth-small-*) in=$src/golden/quantize/synth-small-f32.gguf ;;
    gpt-oss-*) in=$src/golden/arch/gpt-oss.gguf ;;
    *)
        echo "FAIL  $name: no source model for this name"
        failed=$((failed + 1))
        continue
        ;;
    esac
    rm -f "$work/$name"
    "$bin" quantize "$in" "$work/$name" "$ftype" 2 >"$work/$name.log" 2>&1
    rc=$?
    got=$(sha256sum "$work/$name" 2>/dev/null | cut -d' ' -f1)
    if [ "$rc" -ne 0 ]; then
        echo "FAIL  $name: oxillama quantize exited $rc: $(tail -1 "$work/$name.log")"
        failed=$((failed + 1))
    elif [ "$got" != "$want" ]; then
        echo "FAIL  $name: sha256 $got, llama-quantize's $want"
        failed=$((failed + 1))
    else
        echo "PASS  $name = llama-quantize's file ($want)"
        passed=$((passed + 1))
    fi
done <"$src/golden/quantize/llama-quantize.sha256"
echo "quantize files: $passed passed, $failed failed"
[ "$failed" -eq 0 ] && [ "$passed" -gt 0 ]
