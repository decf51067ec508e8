#!/usr/bin/env python3
"""Draws a lesson's recorded time against M as an SVG: one line per variant
and the reference, one panel per N x K, from assets/results/<gpu>/<lesson>-MxNxK.json
(the M sweeps of the GPU check). Standard library only.

    scripts/plot-time-vs-m.py nvidia-h100-80gb-hbm3 lesson07_w4a16 4096x4096,8192x8192 out.svg
"""
import glob
import json
import math
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
COLOURS = ["#1b9e77", "#d95f02", "#7570b3", "#e7298a", "#66a61e", "#e6ab02", "#a6761d", "#666666", "#1f78b4", "#111111", "#b15928"]


def sweep(gpu, lesson, nk):
    """{variant: [(m, microseconds)]} for the files of shape M x nk, group size 128 only."""
    lines, date = {}, ""
    for path in glob.glob(os.path.join(ROOT, "assets", "results", gpu, f"{lesson}-*x{nk}.json")):
        if not re.fullmatch(rf"{re.escape(lesson)}-\d+x{nk}\.json", os.path.basename(path)):
            continue
        with open(path) as f:
            r = json.load(f)
        date = max(date, r["date"][:10])
        for v in r["variants"]:
            if not v["skipped"]:
                lines.setdefault(v["name"], []).append((r["shape"]["m"], v["median_ms"] * 1000))
    for pts in lines.values():
        pts.sort()
    return lines, date


def panel(x0, y0, w, h, title, lines, order):
    out = [f'<text x="{x0 + w / 2}" y="{y0 - 12}" text-anchor="middle" font-weight="bold">{title}</text>']
    ms = sorted({m for pts in lines.values() for m, _ in pts})
    tmax = max(t for pts in lines.values() for _, t in pts) * 1.08
    lx = lambda m: x0 + w * (math.log2(m) - math.log2(ms[0])) / (math.log2(ms[-1]) - math.log2(ms[0]))
    ly = lambda t: y0 + h - h * t / tmax
    out.append(f'<rect x="{x0}" y="{y0}" width="{w}" height="{h}" fill="none" stroke="#999"/>')
    step = 10 ** math.floor(math.log10(tmax / 4))
    step *= 5 if tmax / step > 20 else (2 if tmax / step > 8 else 1)
    t = 0.0
    while t <= tmax:
        out.append(f'<line x1="{x0}" x2="{x0 + w}" y1="{ly(t):.1f}" y2="{ly(t):.1f}" stroke="#eee"/>')
        out.append(f'<text x="{x0 - 6}" y="{ly(t) + 4:.1f}" text-anchor="end">{t:g}</text>')
        t += step
    for m in ms:
        out.append(f'<text x="{lx(m):.1f}" y="{y0 + h + 16}" text-anchor="middle">{m}</text>')
    out.append(f'<text x="{x0 + w / 2}" y="{y0 + h + 34}" text-anchor="middle">M (tokens)</text>')
    out.append(f'<text x="{x0 - 40}" y="{y0 + h / 2}" text-anchor="middle" '
               f'transform="rotate(-90 {x0 - 40} {y0 + h / 2})">time (µs)</text>')
    for i, name in enumerate(order):
        if name not in lines:
            continue
        c = COLOURS[i % len(COLOURS)]
        pts = " ".join(f"{lx(m):.1f},{ly(t):.1f}" for m, t in lines[name])
        dash = ' stroke-dasharray="6 3"' if name == "cublas" else ""
        out.append(f'<polyline points="{pts}" fill="none" stroke="{c}" stroke-width="2"{dash}/>')
        for m, t in lines[name]:
            out.append(f'<circle cx="{lx(m):.1f}" cy="{ly(t):.1f}" r="2.5" fill="{c}"/>')
    return out


def main():
    if len(sys.argv) != 5:
        raise SystemExit(__doc__.strip().splitlines()[-1].strip())
    gpu, lesson, shapes, out_path = sys.argv[1:]
    panels = []
    for nk in shapes.split(","):
        lines, date = sweep(gpu, lesson, nk)
        if not lines:
            raise SystemExit(f"no results for {lesson} at M x {nk} in assets/results/{gpu}")
        panels.append((nk, lines, date))
    order = []
    for _, lines, _ in panels:
        for name in lines:
            if name not in order and name != "cublas":
                order.append(name)
    order.append("cublas")
    w, h, pad = 420, 300, 70
    width = pad + len(panels) * (w + pad)
    per_row = max(1, (width - pad) // 135)  # the legend wraps to more rows when it would not fit
    height = h + 150 + 20 * ((len(order) - 1) // per_row)
    svg = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
           f'font-family="sans-serif" font-size="12">', f'<rect width="{width}" height="{height}" fill="white"/>']
    for i, (nk, lines, date) in enumerate(panels):
        n, k = nk.split("x")
        svg += panel(pad + i * (w + pad), 40, w, h, f"N = {n}, K = {k}", lines, order)
    gpu_name = gpu.replace("-", " ").upper().replace("NVIDIA ", "NVIDIA ")
    y = h + 100
    for i, name in enumerate(order):
        c = COLOURS[i % len(COLOURS)]
        x = pad + (i % per_row) * 135
        if i and i % per_row == 0:
            y += 20
        dash = ' stroke-dasharray="6 3"' if name == "cublas" else ""
        svg.append(f'<line x1="{x}" x2="{x + 24}" y1="{y}" y2="{y}" stroke="{c}" stroke-width="2"{dash}/>')
        svg.append(f'<text x="{x + 30}" y="{y + 4}">{"cuBLAS fp16" if name == "cublas" else name}</text>')
    svg.append(f'<text x="{pad}" y="{y + 30}" fill="#555">{lesson}, {gpu_name}, {panels[0][2]}: median time of '
               f'each variant, M on a log scale (assets/results/{gpu})</text>')
    svg.append("</svg>")
    with open(out_path, "w") as f:
        f.write("\n".join(svg) + "\n")


if __name__ == "__main__":
    main()
