#!/usr/bin/env python3
"""200 seeded generations under a JSON schema all validate.

usage: check_json_schema_runs.py OXILLAMA MODEL SCHEMA_FILE [N=200]
`oxillama run -jf SCHEMA_FILE` with seeds 1..N at temperature 1.0 (top-k, top-p and min-p off: the
widest sampling) from prompt "Once upon a time"; each run must exit 0 and its continuation must be
JSON that satisfies golden/json_schema/schemas/record.json's rules (checked here by hand: no
validator package is needed). Prints a summary; exit status 1 on any failure.
"""
import json
import re
import subprocess
import sys

binary, model, schema = sys.argv[1:4]
n = int(sys.argv[4]) if len(sys.argv) > 4 else 200
PROMPT = "Once upon a time"
DATE = re.compile(r"^\d{4}-(0[1-9]|1[0-2])-(0[1-9]|[12]\d|3[01])$")


def valid(o):
    if not isinstance(o, dict) or not set(o) <= {"color", "n", "ok", "tags", "when"}:
        return False
    if o.get("color") not in ("red", "green", "blue"):
        return False
    if type(o.get("n")) is not int or not -5 <= o["n"] <= 99:
        return False
    if "ok" in o and type(o["ok"]) is not bool:
        return False
    if "tags" in o and not (isinstance(o["tags"], list) and len(o["tags"]) <= 2 and
                            all(isinstance(t, str) and len(t) <= 6 for t in o["tags"])):
        return False
    return "when" not in o or bool(DATE.match(o["when"]))


bad = 0
for seed in range(1, n + 1):
    r = subprocess.run([binary, "run", "-m", model, "-p", PROMPT, "-n", "400", "--seed", str(seed), "--temp", "1.0",
                        "--top-k", "0", "--top-p", "1", "--min-p", "0", "-jf", schema, "-t", "1"],
                       capture_output=True, timeout=120)
    text = r.stdout.decode("utf-8", errors="replace")
    ok = r.returncode == 0 and text.startswith(PROMPT)
    if ok:
        try:
            ok = valid(json.loads(text[len(PROMPT):]))
        except ValueError:
            ok = False
    if not ok:
        bad += 1
        print("FAIL  seed %d: exit %d, %r" % (seed, r.returncode, text[-200:]))
print("%d of %d generations are schema-valid JSON" % (n - bad, n))
sys.exit(1 if bad else 0)
