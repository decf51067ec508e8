#!/usr/bin/env python3
"""Draws lesson 06's recorded bandwidth against the matrix size as an SVG: the
% of a device-to-device copy's bandwidth (measured in the same run) that each
variant and cuBLAS reach at N = K = 4096, 8192 and 16384, one panel for M = 1
and one for M = 16, from assets/results/<gpu>/lesson06_splitk-<M>x<N>x<K>.json
(the GPU check's stage splitk), with the floor where the run measured it (a
kernel that only reads the weights, dashed). Standard library only. Also prints
the table the lesson's page shows (every target shape, each variant against
cuBLAS, and the floor: its time and cuBLAS's time over it, the most any
variant could reach).

    scripts/plot-bandwidth-vs-n.py nvidia-h100-80gb-hbm3 out.svg
"""
import json
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
COLOURS = ["#1b9e77", "#d95f02", "#7570b3", "#e7298a", "#66a61e", "#e6ab02", "#a6761d", "#666666"]
SQUARES = [4096, 8192, 16384]
TABLE_SHAPES = [(n, n) for n in SQUARES] + [(6144, 4096), (14336, 4096), (4096, 14336)]


def load(gpu, m, n, k):
    path = os.path.join(ROOT, "assets", "results", gpu, f"lesson06_splitk-{m}x{n}x{k}.json")
    if not os.path.exists(path):
        return None
    with open(path) as f:
        return json.load(f)


def pct_copy(r, v):
    return 100.0 * v["gbps"] / r["copy_gbps"] if r.get("copy_gbps") else 0.0


def floor_pct_copy(r):
    """The read floor's bandwidth (the weights' bytes over its time) as a % of the copy's."""
    if not r.get("read_floor_ms") or not r.get("copy_gbps"):
        return None
    weights = r["shape"]["n"] * r["shape"]["k"] * 2.0
    return 100.0 * weights / (r["read_floor_ms"] * 1e-3) / 1e9 / r["copy_gbps"]


def ran(r):
    return [v for v in r["variants"] if not v["skipped"]]


def panel(x0, y0, w, h, title, runs, order):
    top = 110.0
    xs = {n: x0 + 60 + i * (w - 90) / (len(SQUARES) - 1) for i, n in enumerate(SQUARES)}
    sy = lambda p: y0 + h - 30 - min(p, top) / top * (h - 60)
    svg = [f'<text x="{x0 + w / 2}" y="{y0 + 16}" text-anchor="middle" font-weight="bold">{title}</text>']
    for p in range(0, 101, 20):
        svg.append(f'<line x1="{xs[SQUARES[0]]}" y1="{sy(p)}" x2="{xs[SQUARES[-1]]}" y2="{sy(p)}" stroke="#ddd"/>')
        svg.append(f'<text x="{xs[SQUARES[0]] - 6}" y="{sy(p) + 4}" text-anchor="end" font-size="11">{p}%</text>')
    for n in SQUARES:
        svg.append(f'<text x="{xs[n]}" y="{y0 + h - 12}" text-anchor="middle" font-size="11">{n}</text>')
    for i, name in enumerate(order + ["cublas"]):
        pts = []
        for n in SQUARES:
            r = runs.get(n)
            v = next((v for v in ran(r) if v["name"] == name), None) if r else None
            if v:
                pts.append(f"{xs[n]},{sy(pct_copy(r, v))}")
        colour = "#000" if name == "cublas" else COLOURS[i % len(COLOURS)]
        width = 3 if name == "cublas" else 2
        svg.append(f'<polyline points="{" ".join(pts)}" fill="none" stroke="{colour}" stroke-width="{width}"/>')
    floor = [(n, floor_pct_copy(runs[n])) for n in SQUARES if n in runs and floor_pct_copy(runs[n])]
    if floor:
        pts = " ".join(f"{xs[n]},{sy(p)}" for n, p in floor)
        svg.append(f'<polyline points="{pts}" fill="none" stroke="#888" stroke-width="2" stroke-dasharray="6,4"/>')
    return svg


def table(gpu):
    rows = []
    order = None
    for m in (1, 16):
        for n, k in TABLE_SHAPES:
            r = load(gpu, m, n, k)
            if not r:
                continue
            if order is None:
                order = [v["name"] for v in r["variants"] if not v["reference"]]
            ref = next(v for v in r["variants"] if v["reference"])
            by = {v["name"]: v for v in ran(r) if not v["reference"]}
            best = max(by.values(), key=lambda v: v["vs_cublas"])
            cells = []
            for name in order:
                v = by.get(name)
                text = "-" if v is None else f"{v['vs_cublas']:.2f}"
                cells.append(f"**{text}**" if v is best else text)
            fl = r.get("read_floor_ms")
            floor = f"{fl * 1e3:.1f} | {ref['median_ms'] / fl:.2f}" if fl else "- | -"
            rows.append(f"| {m} | {n} | {k} | {ref['median_ms'] * 1e3:.1f} | {pct_copy(r, ref):.0f} | "
                        + " | ".join(cells) + f" | {pct_copy(r, best):.0f} | {floor} |")
    if order is None:
        return ""
    head = ("| M | N | K | cuBLAS µs | cuBLAS % copy | " + " | ".join(order)
            + " | best % copy | floor µs | cuBLAS / floor |")
    rule = "|" + "---|" * (8 + len(order))
    return "\n".join([head, rule] + rows)


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    gpu, out = sys.argv[1:]
    runs = {m: {n: load(gpu, m, n, n) for n in SQUARES if load(gpu, m, n, n)} for m in (1, 16)}
    if not any(runs.values()):
        sys.exit(f"no lesson06_splitk-<M>x<N>x<K>.json results for {gpu}")
    first = next(r for by_n in runs.values() for r in by_n.values())
    order = [v["name"] for v in first["variants"] if not v["reference"]]
    w, h = 420, 280
    svg = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{2 * w}" height="{h + 58}" '
           'font-family="DejaVu Sans, sans-serif" font-size="12">',
           f'<rect width="{2 * w}" height="{h + 58}" fill="#fff"/>']
    for i, m in enumerate((1, 16)):
        svg += panel(i * w, 0, w, h, f"M = {m}: % of the copy's bandwidth against N = K", runs[m], order)
    x, y = 10, h + 20
    for i, name in enumerate(order + ["cublas", "floor"]):
        if x + 30 + 7 * len(name) > 2 * w:  # the key wraps onto a second line
            x, y = 10, y + 18
        colour = {"cublas": "#000", "floor": "#888"}.get(name, COLOURS[i % len(COLOURS)])
        dash = ' stroke-dasharray="6,4"' if name == "floor" else ""
        svg.append(f'<line x1="{x}" y1="{y}" x2="{x + 18}" y2="{y}" stroke="{colour}" stroke-width="3"{dash}/>')
        svg.append(f'<text x="{x + 22}" y="{y + 4}">{name}</text>')
        x += 30 + 7 * len(name)
    svg.append("</svg>")
    with open(out, "w") as f:
        f.write("\n".join(svg) + "\n")
    print(table(gpu))


if __name__ == "__main__":
    main()
