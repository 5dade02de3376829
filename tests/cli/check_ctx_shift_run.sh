#!/bin/sh
# oxillama run with a full context (stories260K, -c 32, greedy, prompt golden/run/once.prompt:
# BOS + 4 tokens), against llama-completion's arithmetic (tools/completion/completion.cpp):
#  - without --context-shift, generation stops when n_past + 1 >= n_ctx: 26 tokens decoded after the
#    prompt's 5, the 27th sampled and printed; the text is a prefix of llama.cpp's greedy text
#    (golden/run/once.expected); exit status 0;
#  - with --context-shift, -n 64 goes past n_ctx: shifts at the 27th, 42nd and 57th decode (n_past 31
#    -> 31 - 15 with n_keep 1 = BOS, n_discard = (31 - 1) / 2), 64 tokens, exit status 0, and the
#    text up to the first shift is the text of the run without it.
# usage: check_ctx_shift_run.sh OXILLAMA MODEL PROMPT_FILE EXPECTED_FILE
set -u
bin=$1 model=$2 prompt_file=$3 expected=$4
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT INT TERM
prompt=$(cat "$prompt_file")
fail() {
    echo "FAIL  $*"
    exit 1
}
"$bin" run -m "$model" -p "$prompt" -c 32 -n 64 --temp 0 -t 2 >"$work/plain" 2>"$work/plain.err" || fail "run without shift: status $?"
"$bin" run -m "$model" -p "$prompt" -c 32 -n 64 --temp 0 -t 2 --context-shift -v >"$work/shift" 2>"$work/shift.err" ||
    fail "run with --context-shift: status $?"
grep -q "generated 27 tokens" "$work/plain.err" || fail "without shift: not 27 tokens: $(cat "$work/plain.err")"
grep -q "context full and context shift is disabled => stopping" "$work/plain.err" || fail "no stop message"
grep -q "generated 64 tokens" "$work/shift.err" || fail "with shift: not 64 tokens: $(cat "$work/shift.err")"
n=$(grep -c "context full, swapping: n_past = 31, n_left = 30, n_ctx = 32, n_keep = 1, n_discard = 15" "$work/shift.err")
[ "$n" = 3 ] || fail "with shift: $n shifts of n_discard 15, want 3: $(cat "$work/shift.err")"
grep -q "3 context shifts" "$work/shift.err" || fail "no shift count"
python3 - "$work/plain" "$work/shift" "$expected" "$prompt" <<'PY' || exit 1
import sys
plain, shift, want = (open(p, "rb").read().decode("utf-8") for p in sys.argv[1:4])
prompt = sys.argv[4]
if not plain.startswith(prompt) or not want.startswith(plain[len(prompt):]) or len(plain) <= len(prompt) + 40:
    print("FAIL  the text without shift is not a prefix of llama.cpp's greedy text:\n  %r" % plain)
    sys.exit(1)
if not shift.startswith(plain) or len(shift) <= len(plain) + 40:
    print("FAIL  the shifted run does not continue the plain run's text:\n  plain %r\n  shift %r" % (plain, shift))
    sys.exit(1)
print("PASS  run: stop at n_ctx - 1 without shift (27 tokens, llama.cpp's prefix); 64 tokens and 3 shifts with it")
PY
