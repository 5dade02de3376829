#!/bin/sh
# Writes golden/sampling/grammar/<case>.expected from llama-completion for every case of
# golden/sampling/grammar.tsv (golden/sampling/README.md, "Grammars"): the generated text with the
# case's --grammar-file, without llama-completion's closing "\n\n" (and " [end of text]\n"). A run
# counts only when its standard error ends with the `graphs reused` line (the asynchronous logger can
# cut the text short otherwise); it is repeated until it does.
# usage: make_grammar_golden.sh LLAMA_COMPLETION MODELS_DIR GRAMMARS_DIR GOLDEN_SAMPLING_DIR [TSV, default grammar.tsv] [OPTION, default --grammar-file; -jf for JSON schemas]
set -eu
bin=$1
models=$2
grammars=$3
dir=$4
opt=${6:---grammar-file}
tab=$(printf '\t')
mkdir -p "$dir/grammar"
tmp=$(mktemp -d)
set -f
while IFS="$tab" read -r name model grammar seed temp n flags prompt; do
    case $name in '' | '#'*) continue ;; esac
    tries=0
    while :; do
        # shellcheck disable=SC2086
        "$bin" -m "$models/$model" -p "$prompt" -n "$n" --seed "$seed" --temp "$temp" $flags \
            "$opt" "$grammars/$grammar" -no-cnv --no-display-prompt -t 1 </dev/null >"$tmp/out" 2>"$tmp/err" || true
        if tail -n 1 "$tmp/err" | grep -q 'graphs reused'; then break; fi
        tries=$((tries + 1))
        [ "$tries" -lt 10 ] || { echo "no complete run for $name" >&2; exit 1; }
    done
    python3 - "$tmp/out" "$dir/grammar/$name.expected" <<'PY'
import sys
b = open(sys.argv[1], 'rb').read()
assert b.endswith(b'\n\n'), b[-20:]
b = b[:-2]
if b.endswith(b' [end of text]\n'):
    b = b[:-len(b' [end of text]\n')]
open(sys.argv[2], 'wb').write(b)
PY
    echo "$name: $(wc -c <"$dir/grammar/$name.expected") bytes"
done <"$dir/${5:-grammar.tsv}"
rm -rf "$tmp"
