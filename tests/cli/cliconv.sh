#!/bin/sh
# Command-line conventions (tests/cli/cliconv_tests.cmake): each case checks the exit status and the
# output of oxillama, prints "PASS <case>" or "FAIL <case>: <why>" and exits 1 on a failure.
# usage: cliconv.sh CASE OXILLAMA_BINARY SOURCE_DIR [PROJECT_VERSION]
set -u
case_=$1 bin=$2 src=$3 version=${4:-}
m=$src/models/stories260K.gguf
work=$(mktemp -d)
pid=""
trap '[ -n "$pid" ] && kill "$pid" 2>/dev/null; rm -rf "$work"' EXIT INT TERM
fails=0
head -c 3000 "$src/README.md" >"$work/text.txt" # a perplexity input of a few chunks
fail() {
    echo "FAIL $case_: $*"
    fails=$((fails + 1))
}
# expect STATUS NAME CMD...: runs CMD with stdout in $work/out, stderr in $work/err; checks the status
expect() {
    want=$1 name=$2
    shift 2
    "$@" >"$work/out" 2>"$work/err"
    rc=$?
    [ "$rc" -eq "$want" ] || fail "$name: exit status $rc, expected $want; stderr: $(head -c 400 "$work/err")"
}
has() { # FILE FIXED-STRING NAME
    grep -qF -- "$2" "$1" || fail "$3: '$2' not in $(basename "$1"): $(head -c 400 "$1")"
}
hasnt() {
    ! grep -qF -- "$2" "$1" || fail "$3: '$2' in $(basename "$1")"
}
same() { # FILE EXPECTED-TEXT NAME
    [ "$(cat "$1")" = "$2" ] || fail "$3: $(basename "$1") is '$(head -c 400 "$1")', expected '$2'"
}

case $case_ in
version)
    commit=$(git -C "$src" rev-parse --short=12 HEAD 2>/dev/null || echo unknown)
    for form in --version version; do
        expect 0 "$form" "$bin" $form
        sed -n 1p "$work/out" >"$work/l1"
        same "$work/l1" "oxillama $version" "$form line 1"
        sed -n 2p "$work/out" >"$work/l2"
        same "$work/l2" "commit: $commit" "$form line 2"
        sed -n 3p "$work/out" | grep -Eq '^compiler: (gcc|clang) [0-9]+\.' || fail "$form: no compiler line: $(cat "$work/out")"
        sed -n 4p "$work/out" | grep -Eq '^isa: [a-z0-9]+$' || fail "$form: isa line: $(cat "$work/out")"
    done
    # the ISA respects OXILLAMA_ISA (scalar runs everywhere)
    expect 0 "OXILLAMA_ISA=scalar" env OXILLAMA_ISA=scalar "$bin" --version
    sed -n 4p "$work/out" >"$work/l4"
    same "$work/l4" "isa: scalar (OXILLAMA_ISA=scalar)" "OXILLAMA_ISA=scalar"
    expect 0 "-v isa" env OXILLAMA_ISA=scalar "$bin" run -m "$m" -p Once -n 1 --temp 0 -v
    has "$work/err" "oxillama: isa scalar;" "run -v under OXILLAMA_ISA=scalar"
    ;;
version-script)
    # the build-time script: the commit of a git checkout, "unknown" elsewhere
    mkdir "$work/nogit"
    expect 0 "script outside git" cmake -DSRC="$work/nogit" -DOUT="$work/h1" -DGIT=git -P "$src/src/cli/version.cmake"
    has "$work/h1" '#define OXL_GIT_COMMIT "unknown"' "outside a git checkout"
    expect 0 "script without git" cmake -DSRC="$src" -DOUT="$work/h2" -DGIT= -P "$src/src/cli/version.cmake"
    has "$work/h2" '#define OXL_GIT_COMMIT "unknown"' "without git"
    if commit=$(git -C "$src" rev-parse --short=12 HEAD 2>/dev/null); then
        expect 0 "script in git" cmake -DSRC="$src" -DOUT="$work/h3" -DGIT=git -P "$src/src/cli/version.cmake"
        has "$work/h3" "#define OXL_GIT_COMMIT \"$commit\"" "in the git checkout"
    fi
    ;;
help-per-verb)
    expect 0 "tokenize --help" "$bin" tokenize --help
    for o in --ids --no-bos --parse-special -p -f -m; do has "$work/out" " $o" "tokenize --help"; done
    for o in --temp --top-k --kl-divergence -ngl -cnv --verbose-prompt -ctk; do hasnt "$work/out" " $o" "tokenize --help"; done
    expect 0 "perplexity --help" "$bin" perplexity --help
    for o in --kl-divergence-base --kl-divergence -ctk -fa -ngl -v --log-disable; do has "$work/out" " $o" "perplexity --help"; done
    for o in --ids --temp --seed -cnv -p,; do hasnt "$work/out" " $o" "perplexity --help"; done
    expect 0 "run --help" "$bin" run --help
    for o in --temp --seed -cnv --chat-template -ngl --log-disable; do has "$work/out" " $o" "run --help"; done
    for o in --ids --kl-divergence --parse-special; do hasnt "$work/out" " $o" "run --help"; done
    expect 0 "golden --help" "$bin" golden --help
    for o in --temp --ids -ctk; do hasnt "$work/out" " $o" "golden --help"; done
    expect 0 "serve --help" "$bin" serve --help
    for o in --port -ctk -fa --no-mmap --mlock -nr --chat-template --log-disable -ngl; do has "$work/out" " $o" "serve --help"; done
    # another verb's option is refused by name
    expect 1 "tokenize --temp" "$bin" tokenize -m "$m" -p Once --temp 0
    has "$work/err" "error: --temp is not an option of 'tokenize' (see oxillama tokenize --help)" "tokenize --temp"
    [ -s "$work/out" ] && fail "tokenize --temp printed tokens"
    ;;
stray)
    expect 1 "prompt words" "$bin" run -m "$m" -p Once upon a time -n 2 --temp 0
    same "$work/err" 'error: unexpected argument '"'"'upon'"'"': the prompt has several words; quote it: -p "Once upon a time"' "prompt words"
    [ -s "$work/out" ] && fail "prompt words: generated '$(cat "$work/out")'"
    expect 1 "tokenize words" "$bin" tokenize -m "$m" --prompt Once upon --ids
    has "$work/err" "the prompt has several words; quote it: --prompt \"Once upon\"" "tokenize words"
    expect 1 "stray word" "$bin" perplexity -m "$m" -f "$src/README.md" extra.txt
    has "$work/err" "error: unexpected argument 'extra.txt'" "stray word"
    expect 1 "unknown option" "$bin" run -m "$m" -p Once --bogus 3
    has "$work/err" "error: unknown option '--bogus'" "unknown option"
    expect 1 "bench stray word" "$bin" bench -m "$m" stray
    has "$work/err" "error: unexpected argument 'stray'" "bench stray word"
    expect 1 "serve unknown option" "$bin" serve -m "$m" --bogus
    has "$work/err" "unknown option '--bogus'" "serve unknown option"
    # quoted, the same prompt runs
    expect 0 "quoted prompt" "$bin" run -m "$m" -p "Once upon a time" -n 2 --temp 0
    has "$work/out" "Once upon a time" "quoted prompt"
    ;;
chat-template)
    expect 1 "unknown name" "$bin" run -m "$m" -p Once -n 1 --chat-template nosuch
    has "$work/err" "error: --chat-template: unknown template 'nosuch'; the built-in templates are: chatml, llama2," "unknown name"
    has "$work/err" " llama3," "unknown name"
    expect 1 "serve unknown name" "$bin" serve -m "$m" --chat-template nosuch
    has "$work/err" "unknown template 'nosuch'; the built-in templates are: chatml," "serve unknown name"
    expect 0 "built-in name" "$bin" run -m "$m" -p Once -n 1 --temp 0 --chat-template llama3
    expect 0 "Jinja {{" "$bin" run -m "$m" -p Once -n 1 --temp 0 --chat-template "{{ x }}"
    expect 0 "Jinja {%" "$bin" run -m "$m" -p Once -n 1 --temp 0 --chat-template "{% if 1 %}x{% endif %}"
    ;;
gpu-flags)
    expect 0 "plain" "$bin" run -m "$m" -p "Once upon a time" -n 8 --temp 0
    cp "$work/out" "$work/plain"
    # -ngl and the device run the layers on a Vulkan device where there is one (tests/cli/vulkan.sh),
    # else on the CPU after one line: the same greedy text either way
    expect 0 "gpu flags" "$bin" run -m "$m" -p "Once upon a time" -n 8 --temp 0 -ngl 99 --n-gpu-layers 99 --gpu-layers 1 \
        -sm layer --split-mode none -ts 1,1 --tensor-split 3,1 -mg 0 --main-gpu 0 --device 0
    cmp -s "$work/out" "$work/plain" || fail "gpu flags changed the output: '$(cat "$work/out")'"
    n=$(grep -c "ignored: one Vulkan device is used (no multi-GPU split)" "$work/err")
    [ "$n" -eq 4 ] || fail "gpu flags: $n notices, expected 4: $(cat "$work/err")"
    has "$work/err" "oxillama: --tensor-split 3,1 ignored" "--tensor-split notice"
    grep -qE "^offloading 1 of 5 repeating layers to Vulkan device 0|^-ngl 1: .*: running on the CPU$" "$work/err" ||
        fail "gpu flags: neither the offload line nor the CPU line: $(cat "$work/err")"
    expect 0 "perplexity -sm" "$bin" perplexity -m "$m" -f "$work/text.txt" -c 128 -ngl 0 -sm row --log-disable
    has "$work/out" "Final estimate: PPL = " "perplexity -sm"
    same "$work/err" "oxillama: -sm row ignored: one Vulkan device is used (no multi-GPU split)" "perplexity -sm stderr"
    expect 0 "bench -sm" "$bin" bench -m "$m" -p 8 -n 0 -r 1 -o csv -ngl 0 -sm row
    has "$work/err" "oxillama: -sm row ignored" "bench -sm"
    has "$work/out" "build_commit," "bench -sm"
    expect 1 "-ngl without value" "$bin" run -m "$m" -p Once -ngl
    has "$work/err" "error: -ngl needs a value" "-ngl without value"
    expect 1 "-ngl lots" "$bin" run -m "$m" -p Once -ngl lots
    has "$work/err" "error: --n-gpu-layers: invalid value 'lots' (a number of layers, or all)" "-ngl lots"
    expect 1 "--device gpu" "$bin" run -m "$m" -p Once --device gpu
    has "$work/err" "error: --device: invalid value 'gpu' (a device index, VulkanN or none: --list-devices)" \
        "--device gpu"
    expect 0 "--list-devices" "$bin" run --list-devices
    has "$work/out" "Available devices:" "--list-devices"
    ;;
log)
    expect 0 "plain" "$bin" run -m "$m" -p "Once upon a time" -n 8 --temp 0
    cp "$work/out" "$work/plain"
    has "$work/err" "loaded in" "default log"
    expect 0 "--log-disable" "$bin" run -m "$m" -p "Once upon a time" -n 8 --temp 0 --log-disable
    [ -s "$work/err" ] && fail "--log-disable: stderr '$(cat "$work/err")'"
    cmp -s "$work/out" "$work/plain" || fail "--log-disable changed the output"
    for v in -v --verbose --log-verbose; do
        expect 0 "$v" "$bin" run -m "$m" -p "Once upon a time" -n 8 --temp 0 -ctk bf16 -ctv f32 -fa on -nr --no-mmap -t 1 $v
        has "$work/err" "oxillama: model $m" "$v"
        has "$work/err" "; threads 1 (0: physical cores); batch 512; cache K bf16, V f32; flash attention on; repacking off; model read" "$v"
        has "$work/err" "loaded in" "$v"
        cmp -s "$work/out" "$work/plain" || fail "$v changed the output"
    done
    expect 0 "perplexity -v" "$bin" perplexity -m "$m" -f "$work/text.txt" -c 128 -v
    has "$work/err" "flash attention auto; repacking on; model mapped" "perplexity -v"
    expect 0 "bench --log-disable" "$bin" bench -m "$m" -p 8 -n 0 -r 1 -o csv --log-disable
    [ -s "$work/err" ] && fail "bench --log-disable: stderr '$(cat "$work/err")'"
    has "$work/out" "build_commit," "bench --log-disable"
    expect 0 "bench -v" env OXILLAMA_ISA=scalar "$bin" bench -m "$m" -p 8 -n 0 -r 1 -o csv -v
    has "$work/err" "bench: isa scalar; llama 0.29M params" "bench -v"
    has "$work/err" "loaded in" "bench -v"
    # errors are still printed under --log-disable
    expect 1 "--log-disable error" "$bin" run -m "$work/missing.gguf" -p Once --log-disable
    has "$work/err" "missing.gguf" "--log-disable error"
    ;;
serve-options)
    # the cache and flash-attention options reach the server's context: a quantized V cache without
    # flash attention is the library's error, as in run (a server that starts instead is stopped
    # after 30 s: timeout's status 124)
    expect 1 "serve -ctv q8_0 -fa off" timeout 30 "$bin" serve -m "$m" --port 0 -ctv q8_0 -fa off --log-disable
    same "$work/err" "oxillama serve: context: V cache type q8_0 needs flash attention (-fa on), as in llama.cpp" "serve -ctv q8_0 -fa off"
    expect 1 "run -ctv q8_0 -fa off" "$bin" run -m "$m" -p Once -ctv q8_0 -fa off
    has "$work/err" "context: V cache type q8_0 needs flash attention (-fa on), as in llama.cpp" "run -ctv q8_0 -fa off"
    # a template that renders "Once upon a time": the prompt is its 5 tokens (BOS + 4, golden/models/stories260K.once.gguf)
    "$bin" serve -m "$m" --port 0 -ctk bf16 -ctv f32 -fa off -nr --no-mmap -ngl 99 -t 1 -b 64 -v \
        --chat-template "{{ 'Once upon a time' }}" 2>"$work/log" &
    pid=$!
    port=""
    for _ in $(seq 1 300); do
        port=$(sed -n 's|.*listening on http://127\.0\.0\.1:\([0-9]*\).*|\1|p' "$work/log")
        [ -n "$port" ] && grep -q "loaded in" "$work/log" && break
        kill -0 "$pid" 2>/dev/null || break
        port=""
        sleep 0.1
    done
    if [ -z "$port" ]; then
        fail "server did not start: $(cat "$work/log")"
    else
        grep -qE "^offloading 5 of 5 repeating layers|^-ngl 99: .*: running on the CPU$" "$work/log" ||
            fail "serve -ngl: neither the offload line nor the CPU line: $(head -c 600 "$work/log")"
        has "$work/log" "; threads 1 (0: physical cores); batch 64; cache K bf16, V f32; flash attention off; repacking off; model read" "serve -v"
        status=$(curl -s -o "$work/body" -w '%{http_code}' "http://127.0.0.1:$port/v1/chat/completions" \
            -H 'Content-Type: application/json' \
            -d '{"messages":[{"role":"user","content":"Hello there, how are you today?"}],"max_tokens":1,"temperature":0}')
        [ "$status" = 200 ] || fail "chat completion: status $status: $(head -c 300 "$work/body")"
        grep -q '"prompt_tokens":5[,}]' "$work/body" || fail "chat completion: prompt_tokens not 5: $(head -c 400 "$work/body")"
        kill "$pid"
        wait "$pid"
        rc=$?
        pid=""
        [ "$rc" -eq 0 ] || fail "serve exited with $rc after SIGTERM"
    fi
    ;;
manpage)
    man=$src/docs/oxillama.1
    if command -v groff >/dev/null; then # the page parses without a warning
        expect 0 "groff" groff -man -ww -z "$man"
        [ -s "$work/err" ] && fail "groff warnings: $(head -c 400 "$work/err")"
    fi
    sed 's/\\-/-/g; s/\\f[BIRP]//g; s/\\e/\\/g' "$man" >"$work/man.txt"
    # an option is documented where a font macro line names it (an entry's tag, a synopsis), not
    # merely mentioned in running text
    grep -E '^\.(B|BR|BI|RB|IR) ' "$work/man.txt" >"$work/man-entries.txt"
    expect 0 "oxillama --help" "$bin" --help
    verbs=$(sed -n 's/^  \([a-z]*\)  .*/\1/p' "$work/out")
    [ "$(echo $verbs | wc -w)" -ge 9 ] || fail "verbs from --help: '$verbs'"
    n=0
    for v in $verbs; do
        grep -qE "^\.B $v\$" "$work/man.txt" || fail "verb $v has no entry in docs/oxillama.1"
        "$bin" "$v" --help >"$work/help" 2>&1
        for o in $(grep -oE '(^|[][ ,|(])--?[a-z][a-z0-9-]*' "$work/help" | sed 's/^[][ ,|(]//' | sort -u); do
            n=$((n + 1))
            grep -qE -- "(^|[^a-z0-9-])$o([^a-z0-9-]|\$)" "$work/man-entries.txt" || fail "$v option $o is not in docs/oxillama.1"
        done
    done
    [ "$n" -ge 100 ] || fail "only $n options read from the --help texts"
    for o in --version --log-verbose --n-prompt --n-gen --repetitions --ubatch-size --output --mmap; do
        grep -qE -- "(^|[^a-z0-9-])$o([^a-z0-9-]|\$)" "$work/man-entries.txt" || fail "option $o is not in docs/oxillama.1"
    done
    echo "checked $n options of $(echo $verbs | wc -w) commands"
    ;;
completion)
    comp=$src/docs/oxillama.bash-completion
    # complete_at WORDS...: the completions of the last word
    cat >"$work/c.sh" <<'SH'
source "$1" || exit 3
shift
complete -p oxillama || exit 4
COMP_WORDS=("$@")
COMP_CWORD=$((${#COMP_WORDS[@]} - 1))
_oxillama || exit 5
echo "[${COMPREPLY[*]}]"
SH
    expect 0 "verb" bash "$work/c.sh" "$comp" "$bin" ru
    same "$work/out" "complete -F _oxillama oxillama
[run]" "verb"
    expect 0 "option" bash "$work/c.sh" "$comp" "$bin" tokenize --i
    sed -n 2p "$work/out" >"$work/o"
    same "$work/o" "[--ids]" "tokenize --i"
    expect 0 "run option" bash "$work/c.sh" "$comp" "$bin" run --log-d
    sed -n 2p "$work/out" >"$work/o"
    same "$work/o" "[--log-disable]" "run --log-d"
    expect 0 "cache type" bash "$work/c.sh" "$comp" "$bin" run -ctk q8
    sed -n 2p "$work/out" >"$work/o"
    same "$work/o" "[q8_0]" "-ctk q8"
    expect 0 "chat template" bash "$work/c.sh" "$comp" "$bin" serve --chat-template chat
    sed -n 2p "$work/out" >"$work/o"
    same "$work/o" "[chatml chatglm3 chatglm4]" "--chat-template chat"
    ;;
*)
    fail "unknown case"
    ;;
esac
[ "$fails" -eq 0 ] || exit 1
echo "PASS $case_"
