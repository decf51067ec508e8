#!/usr/bin/env python3
"""Fits the polynomial of gelu_poly_half2 (kernels/cuda/activation_half2.cuh).

GELU(x) = x/2 + |x| w(|x|), w(a) = tanh(sqrt(2/pi) (a + 0.044715 a^3)) / 2.
The kernel evaluates w as r(s), s = min(|x|, 4) / 2 - 1, a degree-6 polynomial
by Horner's rule in fp16 (one rounding per step, as HFMA2 does). This script
finds r by linear programming: it minimises the largest error of the output,
weighted by what that error may be (an fp16 spacing of the result, or a small
absolute slack where the result is tiny), with r(1) = 1/2 so that |x| >= 4
gives exactly x/2 + |x|/2. Coefficients are rounded to fp16 one at a time,
highest first, refitting the rest each time. Then it evaluates the form in
emulated fp16 over every finite fp16 input, as tests/activation_gpu_test.cu
does on the GPU.

Needs numpy and scipy.  Run: scripts/fit-gelu-poly.py
"""
import numpy as np
from scipy.optimize import linprog

DEGREE, CLAMP, SLACK = 6, 4.0, 6e-4


def gelu_h(x):  # 0.5 (1 + tanh(u)): GELU(x) = x gelu_h(x)
    return 0.5 * (1 + np.tanh(0.7978845608028654 * (x + 0.044715 * x**3)))


def fp16(v):
    return np.asarray(v, np.float64).astype(np.float16).astype(np.float64)


def ulp(v):  # spacing of fp16 values at |v|
    v = np.abs(v)
    return np.where(v < 2.0**-14, 2.0**-24, 2.0 ** (np.floor(np.log2(np.maximum(v, 1e-30))) - 10))


inputs = np.arange(1 << 16, dtype=np.uint16).view(np.float16)
inputs = inputs[np.isfinite(inputs)].astype(np.float64)


def fit(fixed):
    a = inputs[(inputs >= 0) & (inputs <= CLAMP)]
    s = a / 2 - 1
    # the smaller of the two outputs (x = -a) decides what error is allowed
    weight = np.where(a > 0, 1 / (ulp(a * (1 - gelu_h(a))) + np.minimum(SLACK, a * 2.0**-11)), 0)
    m = np.stack([a * s**i for i in range(DEGREE + 1)], 1) * weight[:, None]
    b = a * (gelu_h(a) - 0.5) * weight
    n = DEGREE + 1
    bounds = [fixed.get(i, (None, None)) for i in range(n)] + [(0, None)]
    bounds = [(v, v) if not isinstance(v, tuple) else v for v in bounds]
    res = linprog(np.r_[np.zeros(n), 1.0],
                  A_ub=np.vstack([np.c_[m, -np.ones(len(b))], np.c_[-m, -np.ones(len(b))]]),
                  b_ub=np.r_[b, -b], A_eq=np.r_[np.ones(n), 0.0][None, :], b_eq=[0.5],
                  bounds=bounds, method="highs")
    return res.x[:n]


def evaluate(x, c):  # the kernel's steps, each rounded to fp16
    x = fp16(x)
    a = np.abs(x)
    s = fp16(np.minimum(a, CLAMP) * 0.5 - 1)
    r = np.full_like(x, c[-1])
    for ci in c[-2::-1]:
        r = fp16(r * s + ci)
    return fp16(r * a + fp16(x * 0.5))


fixed = {}
for i in range(DEGREE, 0, -1):
    fixed[i] = float(fp16(fit(fixed)[i]))
coef = fp16(fit(fixed))
r1 = evaluate(np.array([8.0]), coef)[0]
print("coefficients c0..c%d (exact in fp16):" % DEGREE, ", ".join(repr(float(c)) for c in coef))
print("x = 8 gives", r1, "(must be 8: r(1) rounds to exactly 1/2)")
exact = inputs * gelu_h(inputs)
got = evaluate(inputs, coef)
err = np.abs(got - exact)
ok = np.abs(inputs) < 60000
neg, pos = ok & (inputs < 0), ok & (inputs > 0)
print("max |error| where x < 0: %.2e" % err[neg].max())
for lo, hi in [(0, 0.5), (0.5, 65504)]:
    sel = pos & (inputs > lo) & (inputs <= hi)
    print("max ulps where %g < x <= %g: %.2f" % (lo, hi, (err[sel] / ulp(exact[sel])).max()))
