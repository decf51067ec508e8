// Epilogue activations on fp16 pairs, for kernels that have already rounded
// their fp32 accumulators to fp16 (as the store must anyway): one half2
// instruction works on two outputs. GELU and SiLU take one tanh.approx.f16x2
// (sm_75+) per pair; on H100 that compiles to two special-function ops
// (MUFU.TANH.F16, one per half, SASS), as many as fp32 would take, so the
// saving is in the arithmetic around the tanh, not in the tanh itself.
// Accuracy, over every fp16 input against the fp64 formula (measured on H100
// by tests/activation_gpu_test.cu): within 1.5 fp16 ulps of the exact result,
// except where x < 0 and the result is small. There 1 + tanh(u) cancels, with
// tanh(u) near -1 where fp16 is spaced 2^-11 (and MUFU.TANH.F16 can be two
// spacings off), so only absolute accuracy is left: GELU within 1.2e-3 and
// SiLU within 3.9e-3 of the exact value. The fp32 forms (epilogue_activation
// below, apply_activation) stay within 6.4e-5 there.
//
//   gelu  0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))    5 half2 ops + 1 tanh
//   silu  x sigmoid(x) = h + h tanh(h), h = x / 2            2 half2 ops + 1 tanh
//         (sigmoid(x) = (1 + tanh(x / 2)) / 2: no exp, no divide, no overflow)
//   relu  max(x, 0);  leaky_relu  max(x, 0.01 x)
#pragma once

#include <cuda_fp16.h>

#include <cstdint>

#include "schedule/activation.hpp"

namespace wb {

__device__ __forceinline__ __half2 tanh_half2(__half2 x) {
  uint32_t t = 0;
#if defined(__CUDA_ARCH__)
  asm("tanh.approx.f16x2 %0, %1;" : "=r"(t) : "r"(*reinterpret_cast<const uint32_t*>(&x)));
#endif
  return *reinterpret_cast<const __half2*>(&t);
}

template <Activation ACT>
__device__ __forceinline__ __half2 activation_half2(__half2 x) {
  if constexpr (ACT == Activation::relu) {
    return __hmax2(x, __float2half2_rn(0.0f));
  } else if constexpr (ACT == Activation::leaky_relu) {
    return __hmax2(x, __hmul2(x, __float2half2_rn(kLeakyReluSlope)));
  } else if constexpr (ACT == Activation::gelu) {
    const __half2 c0 = __float2half2_rn(0.7978845608028654f);  // sqrt(2/pi)
    const __half2 c1 = __float2half2_rn(0.7978845608028654f * 0.044715f);
    const __half2 u = __hmul2(x, __hfma2(c1, __hmul2(x, x), c0));
    const __half2 h = __hmul2(x, __float2half2_rn(0.5f));
    return __hfma2(h, tanh_half2(u), h);
  } else if constexpr (ACT == Activation::silu) {
    const __half2 h = __hmul2(x, __float2half2_rn(0.5f));
    return __hfma2(h, tanh_half2(h), h);
  } else {
    return x;
  }
}

// GELU on a pair without the special-function unit, for lesson 04's epilogue,
// which gives a share of its pairs to this form (kGeluPolySlicesOf8 in
// kernels/04_hopper/step7_fused_activation.cuh). tanh.approx.f16x2 is two special-function ops per pair at
// 16 results per SM per clock, 16 cycles of that unit per warp instruction per
// scheduler, while its 5 half2 ops keep the FMA pipe (2 cycles per HFMA2 there)
// busy for 10: the special-function unit is the bottleneck, and the FMA pipe
// has room for a form that uses no tanh at all.
//   GELU(x) = x h(x) with h(-x) = 1 - h(x), so GELU(x) = max(x, 0) - |x| g(|x|),
//   g(a) = 1 - h(a) = (1 - tanh(u(a))) / 2, from 1/2 at a = 0 towards 0.
// g is a polynomial r of degree 6 in s = min(|x|, 4) / 2 - 1 (s in [-1, 1],
// where the Horner steps in fp16 do not cancel badly), fitted minimax with
// every fp16 input's rounding taken into account (scripts/fit-gelu-poly.py),
// with r(1) exactly 0 so that x >= 4 gives x and x <= -4 gives 0 (the exact
// GELU is within 1.3e-4 of those there). 8 FMA-pipe ops, a min and a max (the
// min takes |x| as its operand); the form x/2 + |x| (1/2 - g(|x|)) took one
// more multiply, and cancelled where x < 0. Accuracy over every fp16 input
// (tests/activation_gpu_test.cu): within 7.3e-4 where x < 0 (the tanh form:
// 1.2e-3), within 1.5 fp16 ulps where x >= 0.5 and 3 below (the tanh form:
// 1.5).
__device__ __forceinline__ __half2 gelu_poly_half2(__half2 x) {
  constexpr float c[7] = {0.02264404296875f,  -0.10919189453125f, 0.2205810546875f,   -0.2108154296875f,
                          0.046600341796875f, 0.0701904296875f,   -0.039947509765625f};  // exact in fp16
  const __half2 t = __hmin2(__habs2(x), __float2half2_rn(4.0f));
  const __half2 s = __hfma2(t, __float2half2_rn(0.5f), __float2half2_rn(-1.0f));
  __half2 r = __float2half2_rn(c[6]);
#pragma unroll
  for (int i = 5; i >= 0; --i) r = __hfma2(r, s, __float2half2_rn(c[i]));
  return __hfma2(__hneg2(r), t, __hmax2_nan(x, __float2half2_rn(0.0f)));  // NaN stays NaN
}

// A fused epilogue's activation on one fp32 value (lesson 04's epilogue rounds
// GELU's pairs to fp16 first and uses activation_half2 instead). GELU uses the
// hardware tanh (tanh.approx.f32: one special-function op, relative error
// about 2^-11, about the fp16 rounding of the output) instead of the
// exp-and-divide form of apply_activation (two), so fusing it stays cheap
// while the tensor cores wait for the epilogue.
template <Activation kAct>
__device__ __forceinline__ float epilogue_activation(float x) {
#if defined(__CUDA_ARCH__)
  if constexpr (kAct == Activation::gelu) {
    // u = sqrt(2/pi) (x + 0.044715 x^3)
    const float u = x * fmaf(0.7978845608028654f * 0.044715f, x * x, 0.7978845608028654f);
    float t;
    asm("tanh.approx.f32 %0, %1;" : "=f"(t) : "f"(u));
    const float h = 0.5f * x;
    return fmaf(h, t, h);  // 0.5 x (1 + tanh(u))
  } else {
    return apply_activation(kAct, x);
  }
#else
  return x;
#endif
}

// The same on a packed pair (two fp16 in one 32-bit register).
template <Activation ACT>
__device__ __forceinline__ uint32_t activation_half2_bits(uint32_t bits) {
  const __half2 y = activation_half2<ACT>(*reinterpret_cast<const __half2*>(&bits));
  return *reinterpret_cast<const uint32_t*>(&y);
}

// GELU's polynomial form on a packed pair.
__device__ __forceinline__ uint32_t gelu_poly_half2_bits(uint32_t bits) {
  const __half2 y = gelu_poly_half2(*reinterpret_cast<const __half2*>(&bits));
  return *reinterpret_cast<const uint32_t*>(&y);
}

// sigma(v) and 1 - sigma(v) = sigma(-v) of a pair, each to a few fp16 ulps
// relative, however small: sigma(|v|) = (1 + tanh(|v| / 2)) / 2 lies in
// [0.5, 1], where nothing cancels, and sigma(-|v|) = exp(-|v|) sigma(|v|);
// which is which follows v's sign. Neither is ever formed as 1 + t or 1 - s,
// whose cancellation in fp16 leaves about 1e-3 absolute: more than the whole
// derivative in the tails. Per pair: one tanh.approx.f16x2 and h2exp, which
// CUDA 13 computes as two fp32 ex2 (with conversions); a reciprocal has no
// f16x2 form either. Below about 6e-5, exp(-|v|) is an fp16 subnormal and
// keeps fewer bits.
__device__ __forceinline__ void sigmoid_pair_half2(__half2 v, __half2& s, __half2& one_minus_s) {
  const __half2 half = __float2half2_rn(0.5f);
  const __half2 a = __habs2(v);
  const __half2 up = __hfma2(tanh_half2(__hmul2(a, half)), half, half);  // sigma(|v|)
  const __half2 down = __hmul2(h2exp(__hneg2(a)), up);                   // sigma(-|v|)
  const uint32_t ge = __hge2_mask(v, __float2half2_rn(0.0f));  // 0xffff per half where v >= 0
  const uint32_t ub = *reinterpret_cast<const uint32_t*>(&up), db = *reinterpret_cast<const uint32_t*>(&down);
  const uint32_t sb = (ub & ge) | (db & ~ge), tb = (db & ge) | (ub & ~ge);
  s = *reinterpret_cast<const __half2*>(&sb);
  one_minus_s = *reinterpret_cast<const __half2*>(&tb);
}

// dZ * act'(x) on packed pairs, for lesson 05's fused backward, which forms
// dP in the registers that feed the tensor cores and so recomputes act' for
// every tile that reads an element: half2 keeps that off the critical path.
//   relu  dZ where x > 0, else 0: a compare mask and an AND, exact
//   gelu  s + 2 x s (1 - s) u',  s = sigma(2 u), u = sqrt(2/pi) (x + 0.044715 x^3),
//         u' = sqrt(2/pi) (1 + 3 0.044715 x^2): the tanh form's derivative,
//         as 0.5 (1 + tanh(u)) = sigma(2 u); x clamped to [-8, 8] first (act'
//         is 0 and 1 beyond, to fp16's precision, and x^3 stays finite)
//   silu  s + x s (1 - s),  s = sigma(x)
// Accuracy: a few fp16 ulps relative to the derivative, in the tails too
// (sigmoid_pair_half2), except where it crosses zero (GELU near -0.75, SiLU
// near -1.28): there its two terms cancel, and the error is a few ulps of the
// terms instead. A tanh-based form (1 + t, 1 - t^2) was off by about 1e-3
// absolute in the tails, which a layer's real pre-activations (|P| up to 10
// and more) turned into errors past the check's bound.
template <Activation ACT>
__device__ __forceinline__ uint32_t times_activation_grad_half2(uint32_t dz_bits, uint32_t x_bits) {
  const __half2 x = *reinterpret_cast<const __half2*>(&x_bits);
  const __half2 dz = *reinterpret_cast<const __half2*>(&dz_bits);
  __half2 g;
  if constexpr (ACT == Activation::relu) {
    return dz_bits & __hgt2_mask(x, __float2half2_rn(0.0f));
  } else if constexpr (ACT == Activation::gelu) {
    const __half2 c0 = __float2half2_rn(0.7978845608028654f);  // sqrt(2/pi)
    const __half2 c1 = __float2half2_rn(0.7978845608028654f * 0.044715f);
    const __half2 c3 = __float2half2_rn(3.0f * 0.7978845608028654f * 0.044715f);
    const __half2 xc = __hmax2_nan(__hmin2_nan(x, __float2half2_rn(8.0f)), __float2half2_rn(-8.0f));
    const __half2 x2 = __hmul2(xc, xc);
    const __half2 u = __hmul2(xc, __hfma2(c1, x2, c0));
    __half2 s, t;
    sigmoid_pair_half2(__hadd2(u, u), s, t);
    const __half2 two_x_du = __hmul2(__hadd2(xc, xc), __hfma2(c3, x2, c0));  // 2 x u'
    g = __hfma2(__hmul2(s, t), two_x_du, s);
  } else if constexpr (ACT == Activation::silu) {
    __half2 s, t;
    sigmoid_pair_half2(x, s, t);
    g = __hfma2(__hmul2(x, s), t, s);
  } else {
    return dz_bits;
  }
  const __half2 dp = __hmul2(dz, g);
  return *reinterpret_cast<const uint32_t*>(&dp);
}

// act'(x) in fp32, for lesson 05's step 5, whose epilogue holds dZ in fp32
// accumulators already: the same sigmoid form as above, with sigma(v) =
// 1 / (1 + e), e = exp(-v), and 1 - sigma(v) = e sigma(v), so nothing cancels.
// Two special-function ops per value (ex2.approx, rcp.approx), as the half2
// form takes, but about half its other instructions: h2exp's range handling
// and the conversions around it go. Both errors are near 2^-22 relative, far
// below fp16's rounding of dP. x is clamped first (NaN stays NaN), so that e
// stays finite: GELU to [-8, 8] as above, SiLU to [-30, 30] (act' is 0 and 1
// beyond, to fp32's precision, and v stays below 128).
//   gelu  s + s (1 - s) 2 x u',  s = sigma(2 u)
//   silu  s + s (1 - s) x,       s = sigma(x)
template <Activation ACT>
__device__ __forceinline__ float activation_grad_f32(float x) {
#if defined(__CUDA_ARCH__)
  static_assert(ACT == Activation::gelu || ACT == Activation::silu, "the sigmoid-form derivatives only");
  constexpr float kLog2e = 1.4426950408889634f;
  constexpr float c0 = 0.7978845608028654f, c1 = c0 * 0.044715f;  // u = x (c0 + c1 x^2)
  const float bound = ACT == Activation::gelu ? 8.0f : 30.0f;
  float xc;
#if __CUDA_ARCH__ >= 800
  asm("max.NaN.f32 %0, %1, %2;" : "=f"(xc) : "f"(x), "f"(-bound));
  asm("min.NaN.f32 %0, %1, %2;" : "=f"(xc) : "f"(xc), "f"(bound));
#else  // no .NaN modifier before sm_80: fminf and fmaxf return the number, so keep the NaN by hand
  xc = x != x ? x : fminf(fmaxf(x, -bound), bound);
#endif
  float v, d;  // v = -log2(e) times sigma's argument; d multiplies s (1 - s)
  if constexpr (ACT == Activation::gelu) {
    const float x2 = xc * xc;
    v = xc * fmaf(-2.0f * kLog2e * c1, x2, -2.0f * kLog2e * c0);
    d = xc * fmaf(6.0f * c1, x2, 2.0f * c0);  // 2 x u'
  } else {
    v = -kLog2e * xc;
    d = xc;
  }
  float e, s;
  asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(e) : "f"(v));
  asm("rcp.approx.ftz.f32 %0, %1;" : "=f"(s) : "f"(1.0f + e));
  return fmaf((e * s) * s, d, s);
#else
  (void)x;
  return 0.0f;
#endif
}

// Eight fp16 values (one 16-byte chunk).
template <Activation ACT>
__device__ __forceinline__ uint4 activation_x8(uint4 v) {
  v.x = activation_half2_bits<ACT>(v.x);
  v.y = activation_half2_bits<ACT>(v.y);
  v.z = activation_half2_bits<ACT>(v.z);
  v.w = activation_half2_bits<ACT>(v.w);
  return v;
}

}  // namespace wb
