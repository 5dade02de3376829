#!/bin/sh
# The CLI's log flags reach the library's logger (oxl_log_set_level): with --mlock refused (no
# locked-memory allowance, no CAP_IPC_LOCK) `oxillama run --mlock` writes the library's warning on
# stderr, and with --log-disable it does not; both runs exit 0 and print the same text.
# usage: check_log_level.sh OXILLAMA MODEL   (exit 77: cannot drop CAP_IPC_LOCK here, skipped)
set -u
bin=$1 model=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
nolock=
if [ "$(id -u)" = 0 ]; then
    command -v setpriv >/dev/null || { echo "SKIP  no setpriv to drop CAP_IPC_LOCK"; exit 77; }
    nolock="setpriv --bounding-set=-ipc_lock"
fi
run() {
    $nolock sh -c 'ulimit -l 0 && exec "$@"' sh "$bin" run -m "$model" --mlock -p "Once upon a time" -n 8 --temp 0 -t 1 "$@"
}
status=0
run >"$work/out1" 2>"$work/err1"
rc1=$?
run --log-disable >"$work/out2" 2>"$work/err2"
rc2=$?
[ $rc1 -eq 0 ] && [ $rc2 -eq 0 ] || { echo "FAIL  exit status $rc1 (default), $rc2 (--log-disable)"; status=1; }
cmp -s "$work/out1" "$work/out2" && [ -s "$work/out1" ] || { echo "FAIL  the generated text differs or is empty"; status=1; }
grep -q "^warning: $model: cannot lock [0-9]* bytes in RAM (--mlock)" "$work/err1" ||
    { echo "FAIL  no --mlock warning by default:"; cat "$work/err1"; status=1; }
grep -q "cannot lock" "$work/err2" && { echo "FAIL  --log-disable let the warning through:"; cat "$work/err2"; status=1; }
[ $status -eq 0 ] && echo "PASS  --mlock warning by default, none with --log-disable"
exit $status
