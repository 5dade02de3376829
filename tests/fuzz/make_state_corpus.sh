#!/bin/sh
# Writes the seeds of fuzz_state into tests/fuzz/corpus/state/: real state files of `oxillama run
# --prompt-cache`, each behind a mode byte 0 (loaded as it is) and 1 (its checksums rewritten by the
# harness): stories260K with the harness's f16 cache after prompts of 1, 4 and 9 tokens, the same
# model with an f32 cache (refused: type_k), and mamba (refused: architecture). The files are
# deterministic: rerunning rewrites the same bytes.
# usage: tests/fuzz/make_state_corpus.sh [OXILLAMA_BINARY, default build/oxillama]
set -eu
cd "$(dirname "$0")/../.."
bin=${1:-build/oxillama}
out=tests/fuzz/corpus/state
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$out"
seed() { # seed NAME MODEL PROMPT ARGS...
    name=$1 model=$2 prompt=$3
    shift 3
    "$bin" run --log-disable -t 1 -c 64 -n 0 -m "$model" -p "$prompt" --prompt-cache "$tmp/$name" "$@" >/dev/null
    printf '\000' | cat - "$tmp/$name" >"$out/$name-raw.bin"
    printf '\001' | cat - "$tmp/$name" >"$out/$name-fix.bin"
}
seed stories-f16-1 models/stories260K.gguf "" -ctk f16 -ctv f16
seed stories-f16-4 models/stories260K.gguf "Once upon a" -ctk f16 -ctv f16
seed stories-f16-9 models/stories260K.gguf "Once upon a time there was a" -ctk f16 -ctv f16
seed stories-f32-4 models/stories260K.gguf "Once upon a" -ctk f32 -ctv f32
seed mamba-4 golden/arch/mamba.gguf "Once upon a"
ls -l "$out"
