#!/usr/bin/env python3
"""Draws lesson 08's recorded speed-up over the dense cuBLAS FFN against the
sparsity as an SVG: one line per variant, the ideal 1 / (1 - s) and the bound
compact_cublas (cuBLAS on weights compacted before timing), one panel
per model and M, from assets/results/<gpu>/lesson08_sparse_ffn-<model>-m<M>-s<s>.json
(the GPU check's stage sparse_ffn). Standard library only. Also prints the
table the lesson's page shows.

    scripts/plot-speedup-vs-sparsity.py nvidia-h100-80gb-hbm3 out.svg
"""
import glob
import json
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
COLOURS = ["#1b9e77", "#d95f02", "#7570b3", "#e7298a", "#66a61e", "#e6ab02", "#a6761d", "#666666"]
PANELS = [("llama2-7b", 16), ("llama2-7b", 512), ("llama2-7b-swiglu", 16), ("llama2-7b-swiglu", 512)]


def runs(gpu):
    """{(model, m): {s: results}}."""
    out = {}
    for path in glob.glob(os.path.join(ROOT, "assets", "results", gpu, "lesson08_sparse_ffn-*.json")):
        match = re.fullmatch(r"lesson08_sparse_ffn-(.+)-m(\d+)-s([0-9.]+)\.json", os.path.basename(path))
        if not match:
            continue
        with open(path) as f:
            out.setdefault((match[1], int(match[2])), {})[float(match[3])] = json.load(f)
    return out


BOUND = "compact_cublas"  # not a variant: cuBLAS on weights compacted before timing


def speedups(by_s, name, top):
    out = []
    for s in sorted(by_s):
        v = next((v for v in by_s[s]["variants"] if v["name"] == name and not v["skipped"]), None)
        if v:
            out.append((s, min(v["vs_cublas"], top)))
    return out


def panel(x0, y0, w, h, title, by_s, order):
    top = 10.0  # the ideal at s = 0.9
    sx = lambda s: x0 + 50 + s / 0.9 * (w - 70)
    sy = lambda v: y0 + h - 30 - v / top * (h - 60)
    svg = [f'<text x="{x0 + w / 2}" y="{y0 + 16}" text-anchor="middle" font-weight="bold">{title}</text>']
    for v in range(0, 11, 2):
        svg.append(f'<line x1="{sx(0)}" y1="{sy(v)}" x2="{sx(0.9)}" y2="{sy(v)}" stroke="#ddd"/>')
        svg.append(f'<text x="{sx(0) - 6}" y="{sy(v) + 4}" text-anchor="end" font-size="11">{v}x</text>')
    for s in sorted(by_s):
        svg.append(f'<text x="{sx(s)}" y="{y0 + h - 12}" text-anchor="middle" font-size="11">{s:g}</text>')
    ideal = " ".join(f"{sx(s)},{sy(1 / (1 - s))}" for s in sorted(by_s))
    svg.append(f'<polyline points="{ideal}" fill="none" stroke="#000" stroke-dasharray="4 3"/>')
    bound = " ".join(f"{sx(s)},{sy(v)}" for s, v in speedups(by_s, BOUND, top))
    if bound:
        svg.append(f'<polyline points="{bound}" fill="none" stroke="#000" stroke-dasharray="1 3" stroke-width="2"/>')
    for i, name in enumerate(order):
        pts = " ".join(f"{sx(s)},{sy(v)}" for s, v in speedups(by_s, name, top))
        colour = COLOURS[i % len(COLOURS)]
        svg.append(f'<polyline points="{pts}" fill="none" stroke="{colour}" stroke-width="2"/>')
    return svg


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    gpu, out = sys.argv[1:]
    data = runs(gpu)
    order = ["masked_dense", "fused", "gathered", "neuron_major", "fused_neuron_major", "split_k", "compacted",
             "split_k_atomic"]
    w, h = 420, 260
    # The legend, wrapped into as many rows as the width needs.
    names = order + ["ideal 1/(1-s)", "compact_cublas (a bound)"]
    rows, x = [[]], 10
    for i, name in enumerate(names):
        width = 30 + 7 * len(name)
        if x + width > 2 * w and rows[-1]:
            rows.append([])
            x = 10
        rows[-1].append((i, name, x))
        x += width
    svg = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{2 * w}" height="{2 * h + 20 + 20 * len(rows)}" '
           f'font-family="sans-serif" font-size="12"><rect width="100%" height="100%" fill="white"/>']
    for p, key in enumerate(PANELS):
        if key in data:
            svg += panel((p % 2) * w, (p // 2) * h, w, h, f"{key[0]}, M = {key[1]}: speed-up vs sparsity",
                         data[key], order)
    for r, row in enumerate(rows):
        y = 2 * h + 20 + 20 * r
        for i, name, x in row:
            colour = "#000" if i >= len(order) else COLOURS[i % len(COLOURS)]
            dash = ' stroke-dasharray="4 3"' if i == len(order) else ' stroke-dasharray="1 3"' if i > len(order) else ""
            svg.append(f'<line x1="{x}" y1="{y}" x2="{x + 20}" y2="{y}" stroke="{colour}" '
                       f'stroke-width="2"{dash}/><text x="{x + 24}" y="{y + 4}">{name}</text>')
    svg.append("</svg>")
    with open(out, "w") as f:
        f.write("\n".join(svg) + "\n")
    # The table: the dense FFN's time, the most a variant can reach (the dense time over
    # the read floor: a kernel that only reads the active weights), the bound compact_cublas
    # (cuBLAS on weights compacted before timing; "-" in runs made before it existed), then each
    # variant's ratio.
    keys = sorted(data, key=lambda k: (k[0] != "gpt2", k[0], k[1]))
    print("| model | M | s | ideal | dense cuBLAS µs | floor | compact cuBLAS | " + " | ".join(order) + " |")
    print("|" + "---|" * (7 + len(order)))
    for key in keys:
        for s in sorted(data[key]):
            r = data[key][s]
            ref = next(v for v in r["variants"] if v["reference"])
            cells = []
            for name in [BOUND] + order:
                v = next((v for v in r["variants"] if v["name"] == name), None)
                cells.append("-" if v is None or v["skipped"] else f"{v['vs_cublas']:.2f}x")
            ideal = "-" if s >= 1 else f"{1 / (1 - s):.1f}x"
            floor_ms = r.get("read_floor_ms", 0)
            floor = f"{ref['median_ms'] / floor_ms:.1f}x" if floor_ms > 0 else "-"
            print(f"| {key[0]} | {key[1]} | {s:g} | {ideal} | {ref['median_ms'] * 1000:.1f} | {floor} | " +
                  " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
