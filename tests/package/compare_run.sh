#!/bin/sh
# Runs one example build (docs/example.c) or the command line on the bundled model and compares its
# stdout with llama.cpp's greedy text (golden/run/once.prompt + once.expected, 64 tokens); checks the
# exit status. Sourced by the package checks (which set $work, where each run's stderr is kept).
# compare_run LABEL SOURCE_DIR COMMAND...: COMMAND is run with the prompt text as its last argument.
compare_run() {
    label=$1 src=$2
    shift 2
    want=$(cat "$src/golden/run/once.prompt" "$src/golden/run/once.expected"; printf x)
    got=$(set +e; "$@" "$(cat "$src/golden/run/once.prompt")" 2>"$work/$label.stderr"; echo "x$?")
    rc=${got##*x}
    got=${got%x*}x
    if [ "$rc" -ne 0 ]; then
        echo "FAIL  $label: exit status $rc"
        cat "$work/$label.stderr"
        return 1
    fi
    if [ "$got" != "$want" ]; then
        echo "FAIL  $label: not llama.cpp's greedy text"
        echo "  want: $want"
        echo "  got:  $got"
        return 1
    fi
    echo "PASS  $label: $(printf %s "$got" | wc -c) bytes as golden/run/once.*"
}
