#!/bin/sh
# The scale-out recipe of docs/deploy.md, run: three `oxillama serve` replicas behind HAProxy on
# loopback with docs/deploy/haproxy.cfg as it is, a bounded load through the OpenAI Node client,
# one replica stopped with SIGTERM mid-run and restarted (deploy.mjs checks and prints the numbers).
# Exits 77 (skipped) without haproxy or node; installs the client (npm ci in tests/server) if needed.
# usage: run.sh OXILLAMA_BINARY MODEL GOLDEN_RUN_DIR
set -u
bin=$1
model=$2
golden=$3
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
for tool in haproxy node; do
    if ! command -v $tool >/dev/null 2>&1; then
        echo "SKIP  $tool is not installed (build.sh installs it)"
        exit 77
    fi
done
if [ ! -d "$root/tests/server/node_modules/openai" ]; then
    (cd "$root/tests/server" && npm ci --no-audit --no-fund >/dev/null 2>&1) || {
        echo "FAIL  npm ci in tests/server: cannot install the OpenAI client"
        exit 1
    }
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
timeout 120 node "$here/deploy.mjs" "$bin" "$model" "$root/docs/deploy/haproxy.cfg" "$golden" "$work"
status=$?
if [ $status -ne 0 ]; then
    for f in "$work"/*.log; do
        echo "--- $(basename "$f") (last lines)"
        tail -n 15 "$f"
    done
fi
exit $status
