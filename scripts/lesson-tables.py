#!/usr/bin/env python3
"""Renders recorded results (assets/results/<gpu>/*.json) as Markdown tables
inside the docs, so the numbers in docs/lessons/ are always those of a named
file, GPU and date.

In a Markdown file, a block

    <!-- results: nvidia-h100-80gb-hbm3/lesson01_naive.json -->
    ...anything...
    <!-- end results -->

is replaced by the table of that file. Optional words after the file name:
`variants=a,b,c` (only these, in this order) and `what` (add each variant's
description).

    scripts/lesson-tables.py docs/lessons/*.md      rewrite the blocks in place
    scripts/lesson-tables.py --check docs/lessons/*.md   exit 1 if any block is stale
"""
import json
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RESULTS = os.path.join(ROOT, "assets", "results")
BLOCK = re.compile(r"(<!-- results: (\S+)((?: [^>]*?)?) -->\n)(.*?)(<!-- end results -->)", re.S)


def shape_text(shape):
    extra = "".join(f", {k} {v}" for k, v in sorted(shape.items()) if k not in ("m", "n", "k"))
    return f"{shape['m']} x {shape['n']} x {shape['k']}{extra}"


def table(relpath, options):
    path = os.path.join(RESULTS, relpath)
    if not os.path.isfile(path):
        raise SystemExit(f"lesson-tables: a block names {relpath}, which is not in assets/results")
    with open(path) as f:
        try:
            r = json.load(f)
        except json.JSONDecodeError as e:
            raise SystemExit(f"lesson-tables: {relpath} is not JSON ({e})")
    variants = [v for v in r["variants"] if not v["skipped"]]
    wanted = None
    with_what = False
    for opt in options.split():
        if opt.startswith("variants="):
            wanted = opt[len("variants="):].split(",")
        elif opt == "what":
            with_what = True
    reference = r.get("reference", "cublas")
    label = {"cublas": "cuBLAS"}.get(reference, reference)
    if wanted is not None:
        by_name = {v["name"]: v for v in variants}
        missing = [w for w in wanted if w not in by_name]
        if missing:
            raise SystemExit(f"{relpath}: no variant {', '.join(missing)}")
        variants = [by_name[w] for w in wanted]
        variants += [v for v in r["variants"] if v.get("reference") and v["name"] not in wanted]
    gpu = r["gpu"]["name"]
    date = r["date"][:10]
    rounds = r["timing"]["rounds"]
    lines = [
        f"Recorded on an {gpu}, {date} (commit {r['commit'][:7]}), shape {shape_text(r['shape'])}, "
        f"{r['dtype']}; `% {label}` is the median over {rounds} interleaved rounds against {label} "
        f"in the same run ([{os.path.basename(relpath)}](../../assets/results/{relpath})).",
        "",
    ]
    head = "| variant |" + (" what |" if with_what else "") + " ms | TFLOP/s | % " + label + " | check |"
    lines.append(head)
    lines.append("|" + "---|" * (head.count("|") - 1))
    for v in variants:
        check = "reference" if v.get("reference") else ("pass" if v["passed"] else "FAIL") if v["checked"] else "-"
        if v.get("bound") and not v.get("reference"):
            check += " (a bound)"
        what = f" {v['what']} |" if with_what else ""
        lines.append(f"| {v['name']} |{what} {v['median_ms']:.4g} | {v['tflops']:.1f} | "
                     f"{100 * v['vs_cublas']:.1f} | {check} |")
    return "\n".join(lines) + "\n"


def main(argv):
    if "-h" in argv or "--help" in argv:
        print(__doc__.strip())
        return 0
    check = "--check" in argv
    files = [a for a in argv if a != "--check"]
    for a in files:
        if a.startswith("-"):
            print(f"lesson-tables: unknown option '{a}' (--check, --help)", file=sys.stderr)
            return 2
        if not os.path.isfile(a):
            print(f"lesson-tables: no such file: {a}", file=sys.stderr)
            return 2
    if not files:
        print("lesson-tables: give the Markdown files to render (see --help)", file=sys.stderr)
        return 2
    stale = False
    for path in files:
        with open(path) as f:
            text = f.read()
        new = BLOCK.sub(lambda m: m.group(1) + table(m.group(2), m.group(3)) + m.group(5), text)
        if new != text:
            stale = True
            if not check:
                with open(path, "w") as f:
                    f.write(new)
                print(f"updated {path}")
    if check and stale:
        print("stale results tables: run scripts/lesson-tables.py on them")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
