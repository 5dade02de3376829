#!/bin/sh
# ctest `unit`: runs the Criterion binary and shows what it does not say by itself: every skipped
# test, counted by reason (Criterion's closing line counts only the tests that ran). Kernel cells of
# ISAs this CPU lacks are skipped by design; a shared fixture that is absent is skipped outside CI
# and fails under OXILLAMA_REQUIRE_SHARED (tests/unit/vocab_test_util.h). On failure the whole log, less
# the lines of passing tests, is printed.
# usage: run_unit.sh OXL_TESTS [CRITERION_ARG...]
bin=$1
shift
log=$(mktemp)
trap 'rm -f "$log"' EXIT INT TERM
"$bin" --verbose "$@" >"$log" 2>&1
rc=$?
if [ "$rc" -ne 0 ]; then
    grep -v -e '^\[RUN \]' -e '^\[PASS\]' "$log"
fi
skips=$(grep -c '^\[SKIP\]' "$log")
echo "unit: $skips tests skipped, by reason:"
grep '^\[SKIP\]' "$log" | sed -e 's/^\[SKIP\] [^ ]*: //' -e 's|^/.*/\([^/]*\) is absent|\1 is absent|' |
    sed -e 's/^[^ ]*\.gguf is absent/a shared fixture is absent/' | sort | uniq -c
grep '^\[SKIP\]' "$log" | grep -v 'this CPU has no' | sed 's/^/  /'
grep 'Synthesis' "$log" | tail -1
exit "$rc"
