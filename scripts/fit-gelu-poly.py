#!/usr/bin/env python3
"""Fits the polynomial of gelu_poly_half2 (kernels/common/activation_half2.cuh).

GELU(x) = x h(x), h(x) = (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))) / 2, and
h(-a) = 1 - h(a), so with a = |x| and g(a) = 1 - h(a):
    GELU(x) = max(x, 0) - a g(a).
Nothing cancels for x < 0 (the result is -a g(a) itself), and for x > 0 only
a bit. The kernel evaluates
    t = min(|x|, 4),  s = t/2 - 1  (in [-1, 1], where the Horner steps in fp16
    do not cancel badly),  r = a degree-6 polynomial in s by Horner's rule,
    GELU = max(x, 0) - r t,
every step rounded to fp16 as HFMA2 does: one min and one max (ALU pipe),
eight ops on the FMA pipe. r(1) is exactly 0 in those steps, so |x| >= 4
gives max(x, 0): x itself or 0 (the exact GELU is within 1.3e-4 of those).

The fit is linear programming: minimise the largest error, weighted by what
that error may be at each input (1.5 fp16 spacings of the result plus a
small absolute slack, larger where x < 0; the test allows 1e-3), with r(1) = 0.
Coefficients are rounded to fp16 one at a time, highest first, refitting the
rest each time; the constant term is then whatever makes the fp16 Horner steps
end at exactly 0 for s = 1. Then it evaluates the form in emulated fp16 over
every finite fp16 input, as tests/activation_gpu_test.cu does on the GPU.

Needs numpy and scipy.  Run: scripts/fit-gelu-poly.py
"""
import numpy as np
from scipy.optimize import linprog

DEGREE, CLAMP, SHIFT = 6, 4.0, -1.0  # s = min(|x|, CLAMP) / 2 + SHIFT, from -1 to exactly 1
ULPS, SLACK_NEGATIVE, SLACK_POSITIVE = 1.5, 5e-4, 2e-4


def gelu_h(x):  # 0.5 (1 + tanh(u)): GELU(x) = x gelu_h(x)
    return 0.5 * (1 + np.tanh(0.7978845608028654 * (x + 0.044715 * x**3)))


def fp16(v):
    return np.asarray(v, np.float64).astype(np.float16).astype(np.float64)


def ulp(v):  # spacing of fp16 values at |v|
    v = np.abs(v)
    return np.where(v < 2.0**-14, 2.0**-24, 2.0 ** (np.floor(np.log2(np.maximum(v, 1e-30))) - 10))


inputs = np.arange(1 << 16, dtype=np.uint16).view(np.float16)
inputs = inputs[np.isfinite(inputs)].astype(np.float64)
assert CLAMP / 2 + SHIFT == 1.0


def fit(fixed):
    t = inputs[(inputs > 0) & (inputs <= CLAMP)]
    s = fp16(t * 0.5 + SHIFT)
    # the result for x = -t and for x = +t both carry the error t (r - g)
    allowed = np.minimum(ULPS * ulp(t * gelu_h(-t)) + SLACK_NEGATIVE, ULPS * ulp(t * gelu_h(t)) + SLACK_POSITIVE)
    m = np.stack([t * s**i for i in range(DEGREE + 1)], 1) / allowed[:, None]
    b = t * (1 - gelu_h(t)) / allowed
    n = DEGREE + 1
    bounds = [(fixed[i], fixed[i]) if i in fixed else (None, None) for i in range(n)] + [(0, None)]
    res = linprog(np.r_[np.zeros(n), 1.0],
                  A_ub=np.vstack([np.c_[m, -np.ones(len(b))], np.c_[-m, -np.ones(len(b))]]),
                  b_ub=np.r_[b, -b], A_eq=np.r_[np.ones(n), 0.0][None, :], b_eq=[0.0],
                  bounds=bounds, method="highs")
    return res.x[:n]


def evaluate(x, c):  # the kernel's steps, each rounded to fp16
    x = fp16(x)
    t = np.minimum(np.abs(x), CLAMP)
    s = fp16(t * 0.5 + SHIFT)
    r = np.full_like(x, c[-1])
    for ci in c[-2::-1]:
        r = fp16(r * s + ci)
    return fp16(-r * t + np.maximum(x, 0))


fixed = {}
for i in range(DEGREE, 0, -1):
    fixed[i] = float(fp16(fit(fixed)[i]))
partial = fixed[DEGREE]  # Horner at s = 1 down to c1; c0 cancels it exactly
for i in range(DEGREE - 1, 0, -1):
    partial = float(fp16(partial + fixed[i]))
coef = np.array([-partial] + [fixed[i] for i in range(1, DEGREE + 1)])
print("coefficients c0..c%d (exact in fp16):" % DEGREE, ", ".join(repr(float(c)) for c in coef))
print("x = -8, 8 give", evaluate(np.array([-8.0, 8.0]), coef), "(must be 0 and 8: r(1) is exactly 0)")
exact = inputs * gelu_h(inputs)
got = evaluate(inputs, coef)
err = np.abs(got - exact)
ok = np.abs(inputs) < 60000
neg, pos = ok & (inputs < 0), ok & (inputs > 0)
print("max |error| where x < 0: %.2e" % err[neg].max())
for lo, hi in [(0, 0.5), (0.5, 65504)]:
    sel = pos & (inputs > lo) & (inputs <= hi)
    print("max ulps where %g < x <= %g: %.2f (largest error %.2e)" % (lo, hi, (err[sel] / ulp(exact[sel])).max(),
                                                                     err[sel].max()))
bad = ok & ~(err <= ULPS * ulp(exact) + 1e-3)
print("inputs outside the test's bound (1.5 ulps + 1e-3):", int(bad.sum()))
