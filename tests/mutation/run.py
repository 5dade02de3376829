#!/usr/bin/env python3
"""Mutation check: the test suite must fail on each of a set of known bugs.

Copies the source tree (the files git tracks or would track: the working tree, committed or not)
into a work directory (default build-mutation/ in the source tree, kept between runs so builds are
incremental), builds it once, then for each mutation below: applies its edits to the copy (each
`old` text must occur exactly once, else the mutation no longer applies and counts as missed),
rebuilds, runs the checks that should catch it and expects them to fail, then restores the files.
Every check is first run on the unmutated copy and must pass there. A mutation is caught when its
check exits non-zero and its output shows the mutation's expected symptom (`expect`); the check's
last lines are shown.

usage: python3 tests/mutation/run.py [--work DIR] [--only NAME[,NAME...]] [--list]
Closing line: "mutation: N passed, N failed" (passed = caught). Exit status 1 if any was missed.
"""

import argparse
import os
import re
import shutil
import subprocess
import sys

SRC = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

# name, what it breaks, [(file, old, new)], check (a shell command run in the copy's root; $B is
# its build directory, $S the copy), expect (a regex the check's output must match: it failed for
# this mutation's reason, not another)
MUTATIONS = [
    dict(
        name="sampler-temperature-first",
        what="temperature applied before top-p and min-p (llama.cpp applies it after them)",
        edits=[("src/model/sampler.c", '#define OXL_DEFAULT_SAMPLERS "edskypmxt"',
                '#define OXL_DEFAULT_SAMPLERS "edskytpmx"')],
        check="ctest --test-dir $B -R '^(sampling-f32-scalar|unit)$' --output-on-failure",
        expect=r"FAIL  stories260K\.t",
    ),
    dict(
        name="sampler-top-k-plus-one",
        what="top-k keeping one candidate more than asked",
        edits=[("src/model/sampler.c", "    k = k < cur->n ? k : cur->n;\n",
                "    k = k + 1 < cur->n ? k + 1 : cur->n;\n")],
        check="ctest --test-dir $B -R '^sampling-f32-scalar$' --output-on-failure",
        expect=r"FAIL  stories260K\.k[38]\.s",
    ),
    dict(
        name="grammar-first",
        what="the grammar applied before the chain's first draw (llama.cpp draws first and filters "
             "only a rejected token)",
        edits=[("src/model/sampler.c", "    if (!ok) { /* resample with the grammar applied to every candidate */",
                "    ok = false;\n    if (!ok) { /* resample with the grammar applied to every candidate */")],
        check="ctest --test-dir $B -R '^grammar-sampling-scalar$' --output-on-failure",
        expect=r"FAIL  json\.s1",
    ),
    dict(
        name="grammar-partial-utf8-dropped",
        what="a piece's unfinished UTF-8 sequence not carried into the next token's filter",
        edits=[("src/model/grammar.c", "    const bool fresh = g->partial.n_remain <= 0;",
                "    const bool fresh = true;")],
        check="ctest --test-dir $B -R '^grammar-sampling-scalar$' --output-on-failure",
        expect=r"FAIL  japanese\.s1",
    ),
    dict(
        name="logprobs-unnormalised",
        what="the log-sum-exp dropped from the server's logprobs (the greedy token reports 0)",
        edits=[("server/scheduler.c", "float lse = mx + (float)log(sum);", "float lse = mx;")],
        check="ctest --test-dir $B -R '^server$' --output-on-failure",
        expect=r"FAIL  logprobs",
    ),
    dict(
        name="server-embeddings-pooling",
        what="the server pools a model without pooling_type by its last token instead of the mean",
        edits=[("server/scheduler.c", "        p.pooling = OXL_POOLING_MEAN;\n", "        p.pooling = OXL_POOLING_LAST;\n")],
        check="ctest --test-dir $B -R '^server-encoder$' --output-on-failure",
        expect=r"FAIL  embeddings input 0 \(48 ids\): max \|diff\|",
    ),
    dict(
        name="generated-hand-edit",
        what="a hand edit in the committed generated/ tree",
        edits=[("generated/oxl_types.c", "\n", "\n/* edited by hand */\n")],
        check="ctest --test-dir $B -R '^gen-drift$' --output-on-failure",
        expect=r"generated/ differs from the generator's output",
    ),
    dict(
        name="crash-on-q4_K_M",
        what="oxillama crashes (SIGSEGV) on Q4_K_M models, seen by the cross-ISA determinism check",
        edits=[("src/model/model.c",
                "    const oxl_model_params p = params ? *params : oxl_model_default_params();\n",
                "    if (path && strstr(path, \"Q4_K_M\")) {\n        raise(SIGSEGV);\n    }\n"
                "    const oxl_model_params p = params ? *params : oxl_model_default_params();\n"),
               ("src/model/model.c", "#include <errno.h>\n", "#include <errno.h>\n#include <signal.h>\n")],
        check="OXL_DETERMINISM_ONLY=x86/ sh tests/cross/determinism.sh . $B none none none",
        expect=r"FAIL  (stories260K|synth-small)-Q4_K_M x86/\w+\n  exit status [1-9]",
    ),
    dict(
        name="kv-f32-stored-as-f16",
        what="the KV cache stored in f16 when f32 is asked",
        edits=[("src/model/context.c",
                "    return tr != NULL && tr->kv_cache ? (oxl_type)t : OXL_TYPE_COUNT;\n",
                "    return tr != NULL && tr->kv_cache ? (t == OXL_KV_F32 ? OXL_TYPE_F16 : (oxl_type)t) : OXL_TYPE_COUNT;\n")],
        check="ctest --test-dir $B -R '^(golden-logits-scalar|golden-arch-scalar|unit)$' --output-on-failure",
        expect=r"FAIL  logits max\|Δ\|/range \S+ \(bound",
    ),
    dict(
        name="refusal-exits-0",
        what="a CLI refusal (oxillama run failing to load or set up) exits with status 0",
        edits=[("src/cli/run.c", "    oxl_error err = {0};\n    int status = 1;\n",
                "    oxl_error err = {0};\n    int status = 0;\n")],
        check="ctest --test-dir $B -R '^kv-mla-types$' --output-on-failure",
        expect=r"exit status 0, expected refusal",
    ),
    dict(
        name="embedding-scaled",
        what="every embedding output scaled by 1.01",
        edits=[("arch/bert.c",
                "        memcpy(ub->embd, a.x, (size_t)(E * n) * sizeof(float));\n",
                "        for (int64_t q = 0; q < E * n; q++) {\n            ub->embd[q] = a.x[q] * 1.01f;\n        }\n")],
        check="ctest --test-dir $B -R '^(unit|golden-embeddings)$' --output-on-failure",
        expect=r"golden-embeddings \(Failed\)",
    ),
    dict(
        name="kv-iq4_nl-weight-quantizer",
        what="an iq4_nl KV cache written by the weight quantizer's scale search, not set_rows' _ref path",
        edits=[("src/model/model_memory.c",
                "    if (finite && t == OXL_TYPE_IQ4_NL) {\n",
                "    if (finite && t == OXL_TYPE_IQ4_NL && n < 0) {\n")],
        check="ctest --test-dir $B -R '^kv-quant$' --output-on-failure",
        expect=r"head 64, iq4_nl vs llama.cpp iq4_nl: mean KLD 0\.000[1-9]",
    ),
    dict(
        name="kv-f16-at-bf16-precision",
        what="an f16 KV cache that keeps only bf16's 8 significant bits of each key and value",
        edits=[("src/model/model_memory.c",
                "    if (kern->quant[t]) {\n        kern->quant[t](src, dst, n);\n        return;\n    }\n",
                "    if (t == OXL_TYPE_F16) {\n        float *r = malloc((size_t)n * sizeof(float));\n"
                "        for (int64_t i = 0; r && i < n; i++) {\n            uint32_t u;\n"
                "            memcpy(&u, &src[i], 4);\n            u = (u + 0x8000u) & 0xffff0000u;\n"
                "            memcpy(&r[i], &u, 4);\n        }\n"
                "        kern->quant[t](r ? r : src, dst, n);\n        free(r);\n        return;\n    }\n"
                "    if (kern->quant[t]) {\n        kern->quant[t](src, dst, n);\n        return;\n    }\n")],
        check="ctest --test-dir $B -R '^unit$' --output-on-failure",
        expect=r"arch_attention::f16_kv_both_paths_stay_close",
    ),
    dict(
        name="encoder-norm-eps-default",
        what="the encoders' LayerNorm eps 1e-5 (a common default) instead of the file's 1e-12",
        edits=[("arch/bert.c", "    w->norm_eps = o.norm_eps;\n", "    w->norm_eps = 1e-5f;\n")],
        check="ctest --test-dir $B -R '^golden-embeddings$' --output-on-failure",
        expect=r"FAIL  embeddings pooled \(cls\)",
    ),
    dict(
        name="quant-mix-more-bits",
        what="the K-quant mixes' 'more bits' layers shifted by one ((i - n/8) % 3 == 1 instead of == 2)",
        edits=[("src/quantize/quant_mix.c", "(i - n / 8) % 3 == 2;", "(i - n / 8) % 3 == 1;")],
        check="ctest --test-dir $B -R '^quantize-kquant-files$' --output-on-failure",
        expect=r"FAIL  stories260K-Q4_K_M\.gguf: sha256",
    ),
]


def tracked_files(src):
    out = subprocess.run(["git", "-C", src, "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
                         check=True, capture_output=True).stdout
    return [f for f in out.decode().split("\0") if f and os.path.isfile(os.path.join(src, f))]


def sync_tree(src, dst):
    """Copies src's files into dst, writing only files whose bytes differ (so ninja rebuilds only
    what changed) and removing files of dst that src no longer has (outside build/ and what git
    ignores)."""
    files = tracked_files(src)
    keep = set(files)
    for f in files:
        a, b = os.path.join(src, f), os.path.join(dst, f)
        with open(a, "rb") as fa:
            data = fa.read()
        if os.path.exists(b):
            with open(b, "rb") as fb:
                if fb.read() == data:
                    continue
        os.makedirs(os.path.dirname(b), exist_ok=True)
        with open(b, "wb") as fb:
            fb.write(data)
        shutil.copymode(a, b)
    stale = []
    for root, dirs, names in os.walk(dst):
        rel = os.path.relpath(root, dst)
        if rel == "build" or rel.startswith("build" + os.sep):
            dirs[:] = []
            continue
        stale += [r for r in (os.path.normpath(os.path.join(rel, n)) for n in names) if r not in keep]
    # what the source ignores (tests/server/node_modules that the server test installs, caches) stays
    ignored = subprocess.run(["git", "-C", src, "check-ignore", "--no-index", "--stdin", "-z"],
                             input="\0".join(stale).encode(), capture_output=True).stdout.decode().split("\0")
    for r in set(stale) - set(ignored):
        os.remove(os.path.join(dst, r))


def run(cmd, cwd, env=None, show=40):
    p = subprocess.run(cmd, cwd=cwd, shell=True, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    text = p.stdout.decode(errors="replace")
    return p.returncode, text if show is None else "\n".join(text.splitlines()[-show:])


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--work", default=os.path.join(SRC, "build-mutation"))
    ap.add_argument("--only", default="")
    ap.add_argument("--list", action="store_true")
    a = ap.parse_args()
    chosen = [m for m in MUTATIONS if not a.only or m["name"] in a.only.split(",")]
    if a.list:
        for m in MUTATIONS:
            print(f"{m['name']:28} {m['what']}")
        return 0
    tree = os.path.join(a.work, "tree")
    build = os.path.join(tree, "build")
    os.makedirs(tree, exist_ok=True)
    sync_tree(SRC, tree)
    # the shared reference set beside the source tree is beside the copy too (its tests need it, and
    # CI's OXILLAMA_REQUIRE_SHARED makes them fail without it)
    shared, link = os.path.join(os.path.dirname(SRC), "shared"), os.path.join(a.work, "shared")
    if os.path.isdir(shared) and not os.path.lexists(link):
        os.symlink(shared, link)
    launcher = "-DCMAKE_C_COMPILER_LAUNCHER=ccache" if shutil.which("ccache") else ""
    env = dict(os.environ, B=build, S=tree)
    env.pop("OXILLAMA_ISA", None)
    rc, out = run(f"cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release {launcher} >/dev/null && "
                  "ninja -C build -j2", tree, env)
    if rc != 0:
        print(out)
        print("mutation: the unmutated copy does not build")
        return 1
    # every check must pass on the unmutated copy first: a check failing already would make its
    # mutant look caught
    clean = {}
    for m in chosen:
        if m["check"] not in clean:
            rc, out = run(m["check"], tree, env)
            clean[m["check"]] = rc == 0
            if rc != 0:
                print(out)
                print(f"   the check of {m['name']} fails on the unmutated copy: {m['check']}")
    caught = missed = 0
    for m in chosen:
        print(f"== {m['name']}: {m['what']}", flush=True)
        saved = {}
        ok = bool(m["edits"]) and clean[m["check"]]
        if not m["edits"]:
            print("   no edit defined for this mutation")
        elif not ok:
            print("   not tried: its check fails without the mutation")
        for f, old, new in m["edits"] if ok else []:
            path = os.path.join(tree, f)
            with open(path, encoding="utf-8") as fh:
                text = fh.read()
            saved.setdefault(path, text)
            n = text.count(old)
            if n != 1 and not (f.startswith("generated/") and n >= 1):
                print(f"   does not apply: {f} has {n} copies of the text to change")
                ok = False
                break
            with open(path, "w", encoding="utf-8") as fh:
                fh.write(text.replace(old, new, 1))
        if ok:
            rc, out = run("ninja -C build -j2", tree, env, show=15)
            if rc != 0:
                print(out)
                print("   the mutant does not build")
                ok = False
        if ok:
            rc, out = run(m["check"], tree, env, show=None)  # the whole output for expect
            reason = re.search(m["expect"], out) is not None
            ok = rc != 0 and reason
            print("\n".join("   | " + line for line in out.splitlines()[-12:]))
            if rc != 0 and not reason:
                print(f"   the check failed, but not as expected (no match for {m['expect']!r})")
        for path, text in saved.items():
            with open(path, "w", encoding="utf-8") as fh:
                fh.write(text)
        if ok:
            caught += 1
            print(f"CAUGHT  {m['name']}", flush=True)
        else:
            missed += 1
            print(f"MISSED  {m['name']}", flush=True)
    run("ninja -C build -j2", tree, env)  # leave the copy built from the unmutated files
    print(f"mutation: {caught} passed, {missed} failed")
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())
