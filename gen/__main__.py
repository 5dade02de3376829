"""python3 -m gen --out DIR    write every generated file into DIR (only files whose text changed)
python3 -m gen --matrix     print the (format x op x ISA) coverage table with named fallbacks
"""

import argparse
import sys

from . import render, spec


def main(argv):
    ap = argparse.ArgumentParser(prog="python3 -m gen", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", help="output directory (the repository's generated/)")
    ap.add_argument("--matrix", action="store_true", help="print the kernel coverage matrix")
    args = ap.parse_args(argv)
    if not args.out and not args.matrix:
        ap.error("nothing to do: give --out DIR and/or --matrix")
    try:
        gen = render.Generator()
        if args.out:
            changed = gen.write_all(args.out)
            for path in changed:
                print(f"gen: wrote {path}")
        if args.matrix:
            print(gen.matrix())
    except spec.SpecError as e:
        print(f"gen: {e}", file=sys.stderr)
        return 1
    return 0


sys.exit(main(sys.argv[1:]))
