#!/bin/sh
# ctest format: every C file of src/, arch/, server/, include/, tests/, bench/, cmake/ and python/ is as
# clang-format (14, Debian 12's) writes it with the repository's .clang-format; generated/ is the
# generator's output and is not checked. Prints each file that differs (clang-format's
# diagnostics) and the count. Fix with: clang-format -i FILE. Installed npm packages (node_modules,
# e.g. tests/server's) are not the project's and are not checked.
# usage: check_format.sh SOURCE_DIR
set -u
cd "$1" || exit 1
cf=$(command -v clang-format || command -v clang-format-14)
if [ -z "$cf" ]; then
    echo "format: clang-format is not installed (apt-get install clang-format)"
    exit 1
fi
files=$(find src arch server include tests bench cmake python -name node_modules -prune -o -name '*.[ch]' -print | sort)
n=0 bad=0
for f in $files; do
    n=$((n + 1))
    if ! "$cf" --style=file --dry-run -Werror "$f" >/dev/null 2>&1; then
        echo "not formatted: $f"
        "$cf" --style=file "$f" | diff -u "$f" - | head -20
        bad=$((bad + 1))
    fi
done
echo "format: $n files checked, $bad not formatted"
[ "$bad" -eq 0 ] && [ "$n" -gt 0 ]
