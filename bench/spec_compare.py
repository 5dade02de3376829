#!/usr/bin/env python3
"""Speculative decoding against plain decoding with `oxillama run`, side by side on one file.

Each round runs plain greedy decoding and then every configuration once (alternated, so a change
of the machine's load hits all of them alike), reads the generation speed (t/s of the line
"generated N tokens in T ms (X t/s)") and llama.cpp's summary lines (n_drafted, n_accept) from
stderr and the process's CPU time (user + system, the operating system's accounting of the
finished child: on a machine shared with other work it measures the work done, which wall time
does not), and checks the exit status and that the text equals the plain run's. Prints one
markdown row per configuration: the median t/s over the rounds, the median of the per-round
ratios to plain, the median CPU seconds of the whole process (loading included: subtract a run
with -n 1 for generation alone), the acceptance (n_accept / n_drafted) and whether every text was
identical.

usage: spec_compare.py --oxillama BIN -m MODEL -p PROMPT [-n 64] [--rounds 5] [--threads 2]
                       [--extra 'ARGS'] --config 'LABEL=ARGS' [--config ...]
e.g.   spec_compare.py --oxillama build/oxillama -m target.gguf -p "..." \\
           --config 'draft k=4=-md draft.gguf --draft-p-min 0 --draft-max 4'
(LABEL ends at the first '=' followed by '-': the rest are oxillama run's options)
"""
import argparse
import re
import resource
import shlex
import statistics
import subprocess
import sys


def run(a, extra):
    cmd = [a.oxillama, "run", "-m", a.model, "-p", a.prompt, "-n", str(a.n), "--temp", "0", "-t", str(a.threads),
           "-c", str(a.ctx)] + shlex.split(a.extra) + extra
    r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=1800)
    r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime)
    err = p.stderr.decode("utf-8", "replace")
    if p.returncode != 0:
        sys.exit("error: exit %d: %s\n%s" % (p.returncode, " ".join(cmd), err[-2000:]))
    m = re.search(r"generated (\d+) tokens in ([0-9.]+) ms \(([0-9.]+) t/s\)", err)
    d = re.search(r"n_drafted = (\d+)", err)
    acc = re.search(r"n_accept  = (\d+)", err)
    if not m:
        sys.exit("error: no speed line from: " + " ".join(cmd))
    return (p.stdout, float(m.group(3)), int(d.group(1)) if d else 0, int(acc.group(1)) if acc else 0, cpu)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--oxillama", required=True)
    ap.add_argument("-m", dest="model", required=True)
    ap.add_argument("-p", dest="prompt", required=True)
    ap.add_argument("-n", type=int, default=64)
    ap.add_argument("-c", dest="ctx", type=int, default=512)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--extra", default="")
    ap.add_argument("--config", action="append", default=[])
    a = ap.parse_args()
    configs = []
    for c in a.config:
        k = c.find("=-")
        if k < 0:
            sys.exit("error: --config %s: expected LABEL=ARGS" % c)
        configs.append((c[:k], shlex.split(c[k + 1:])))
    speeds = {label: [] for label, _ in [("plain", None)] + configs}
    cpus = {label: [] for label, _ in [("plain", None)] + configs}
    ratios = {label: [] for label, _ in configs}
    counts = {label: [0, 0] for label, _ in configs}
    same = {label: True for label, _ in configs}
    for r in range(a.rounds):
        text, ts, _, _, cpu = run(a, [])
        speeds["plain"].append(ts)
        cpus["plain"].append(cpu)
        line = ["round %d: plain %.2f t/s %.2f s" % (r + 1, ts, cpu)]
        for label, extra in configs:
            out, s, d, acc, cpu = run(a, extra)
            speeds[label].append(s)
            cpus[label].append(cpu)
            ratios[label].append(s / ts)
            counts[label][0] += d
            counts[label][1] += acc
            same[label] = same[label] and out == text
            line.append("%s %.2f t/s %.2f s (%d/%d)" % (label, s, cpu, acc, d))
        print("; ".join(line), file=sys.stderr, flush=True)
    print("| configuration | t/s per round | median t/s | median ratio to plain | median CPU s | drafted | accepted "
          "| accept | same text |")
    print("| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | --- |")
    print("| plain | %s | %.2f | | %.2f | | | | |" % (", ".join("%.2f" % s for s in speeds["plain"]),
                                                 statistics.median(speeds["plain"]), statistics.median(cpus["plain"])))
    for label, _ in configs:
        d, acc = counts[label]
        print("| %s | %s | %.2f | %.2f | %.2f | %d | %d | %s | %s |" %
              (label, ", ".join("%.2f" % s for s in speeds[label]), statistics.median(speeds[label]),
               statistics.median(ratios[label]), statistics.median(cpus[label]), d, acc, "%.1f %%" % (100.0 * acc / d) if d else "-",
               "yes" if same[label] else "NO"))


if __name__ == "__main__":
    main()
