// The fused epilogues' activation math, on the GPU, against the fp64 formula
// over every finite fp16 input. The GEMM checks cannot see this: with inputs
// uniform in [-1, 1] a GEMM's outputs spread over about +-sqrt(K)/2, so most
// of them sit where GELU and SiLU are nearly x or 0, and the tolerance there
// scales with the output's RMS. Here every input, the bend included, has to
// land within a stated number of fp16 spacings (ulp) of the exact value, plus
// a stated absolute slack where the form cancels (below).
//
// Four forms, as the kernels use them:
//   half2     activation_half2 on a pair already rounded to fp16 (lesson 03's
//             epilogue; lesson 04's GELU on the other half)
//   poly      gelu_poly_half2, GELU by a polynomial on the FMA pipe (lesson
//             04's GELU on half the pairs)
//   epilogue  epilogue_activation on the fp32 value (lesson 04's other fused
//             activations), rounded to fp16 like the store
//   pass      apply_activation<float> (the separate elementwise pass that
//             lesson 03 compares fusing against), rounded to fp16
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "common/activation_half2.cuh"
#include "no_device.hpp"

namespace {

using wb::Activation;

enum class Form { half2, poly, epilogue, pass };

const char* form_name(Form f) {
  return f == Form::half2 ? "half2" : f == Form::poly ? "poly" : f == Form::epilogue ? "epilogue" : "pass";
}

template <Activation A>
__global__ void evaluate(Form form, const __half2* in, __half2* out, int pairs) {
  const int i = int(blockIdx.x * blockDim.x + threadIdx.x);
  if (i >= pairs) return;
  const __half2 x = in[i];
  const float lo = __low2float(x), hi = __high2float(x);
  if (form == Form::half2) {
    out[i] = wb::activation_half2<A>(x);
  } else if (form == Form::poly) {
    if constexpr (A == Activation::gelu) out[i] = wb::gelu_poly_half2(x);
  } else if (form == Form::epilogue) {
    out[i] = __floats2half2_rn(wb::epilogue_activation<A>(lo), wb::epilogue_activation<A>(hi));
  } else {
    out[i] = __floats2half2_rn(wb::apply_activation<float>(A, lo), wb::apply_activation<float>(A, hi));
  }
}

template <Activation A>
void launch(Form form, const __half2* in, __half2* out, int pairs) {
  evaluate<A><<<(pairs + 255) / 256, 256>>>(form, in, out, pairs);
}

using wb::testing::no_device_reason;

float half_bits_to_float(uint16_t b) {
  __half h;
  std::memcpy(&h, &b, sizeof h);
  return __half2float(h);
}

// Spacing of fp16 values at magnitude |v| (subnormal spacing below 2^-14).
double fp16_ulp(double v) {
  const double a = std::fabs(v);
  if (a < std::ldexp(1.0, -14)) return std::ldexp(1.0, -24);
  return std::ldexp(1.0, std::ilogb(a) - 10);
}

struct Bound {
  Activation act;
  Form form;
  double ulps;   // allowed error in fp16 spacings of the exact result ...
  double slack;  // ... plus this much absolute error
};

// GELU and SiLU in tanh form lose their small results to cancellation: for
// x < 0 they compute h (1 + tanh(u)) with tanh(u) near -1, so whatever error
// tanh carries there becomes absolute error of the result, many ulps of a
// tiny result. In half2 that is the fp16 spacing below 1 (2^-11) and more:
// on H100, MUFU.TANH.F16 returns up to two spacings off near -1, and GELU
// ends up within 1.2e-3 of the exact value, SiLU (h up to about 6 before
// tanh rounds to -1) within 3.9e-3. The epilogue's tanh.approx.f32 leaves
// 6.4e-5; the separate pass's full-precision fp32 tanh 6.1e-5. The slack
// below is those, with some margin; the ulp bounds hold everywhere else.
// GELU's polynomial form (no tanh) computes max(x, 0) - |x| r(|x|): nothing
// cancels for x < 0, but r is a polynomial in fp16, within 7.3e-4 there;
// for small x > 0 its Horner steps leave up to 3 ulps, inside the same slack.
const Bound kBounds[] = {
    {Activation::relu, Form::half2, 0.0, 0.0},
    {Activation::relu, Form::epilogue, 0.0, 0.0},
    {Activation::relu, Form::pass, 0.0, 0.0},
    {Activation::leaky_relu, Form::half2, 1.0, 0.0},
    {Activation::leaky_relu, Form::epilogue, 0.51, 0.0},
    {Activation::leaky_relu, Form::pass, 0.51, 0.0},
    {Activation::gelu, Form::half2, 1.5, 1.5e-3},
    {Activation::gelu, Form::poly, 1.5, 1e-3},
    {Activation::gelu, Form::epilogue, 1.5, 1e-4},
    {Activation::gelu, Form::pass, 0.51, 1e-6},
    {Activation::silu, Form::half2, 1.5, 5e-3},
    {Activation::silu, Form::epilogue, 1.0, 1e-6},
    {Activation::silu, Form::pass, 0.51, 0.0},
};

// What the outputs for every fp16 input (out[i] for the input with bits i)
// look like against the exact values, and how many break the bound.
struct Checked {
  double max_err = 0, max_err_x = 0, max_ulps = 0, max_err_negative = 0;  // the last over x < 0
  int violations = 0;
  double first_x = 0, first_got = 0, first_exact = 0;
};

Checked check(const std::vector<uint16_t>& out, const Bound& b) {
  Checked c;
  for (int i = 0; i < int(out.size()); ++i) {
    const double x = half_bits_to_float(uint16_t(i));
    if (std::isnan(x) && (b.act == Activation::gelu || b.act == Activation::silu)) {
      // A NaN accumulator (NaN in the inputs) must not come out as a number.
      const double y = half_bits_to_float(out[i]);
      if (!std::isnan(y) && c.violations++ == 0) c.first_x = x, c.first_got = y, c.first_exact = x;
      continue;
    }
    if (!std::isfinite(x)) continue;
    const double exact = wb::apply_activation<double>(b.act, x);
    const double y = half_bits_to_float(out[i]);
    const double err = std::isfinite(y) ? std::fabs(y - exact) : INFINITY;
    if (err > c.max_err) c.max_err = err, c.max_err_x = x;
    if (x < 0) c.max_err_negative = std::max(c.max_err_negative, err);
    if (std::fabs(exact) >= std::ldexp(1.0, -14)) c.max_ulps = std::max(c.max_ulps, err / fp16_ulp(exact));
    // An exact result past fp16's range (x near 65504, where GELU and SiLU are
    // x) may round to infinity; everything else must be finite and in bounds.
    const bool overflow_ok = std::fabs(exact) >= 65520.0 && std::isinf(y);
    if (!overflow_ok && !(err <= b.ulps * fp16_ulp(exact) + b.slack)) {
      if (c.violations++ == 0) c.first_x = x, c.first_got = y, c.first_exact = exact;
    }
  }
  return c;
}

uint16_t to_half_bits(double v) {
  const __half h = __double2half(v);
  uint16_t b;
  std::memcpy(&b, &h, sizeof b);
  return b;
}

// Host outputs for every fp16 input, from a function of x.
template <class F>
std::vector<uint16_t> host_outputs(F f) {
  std::vector<uint16_t> out(1 << 16);
  for (int i = 0; i < (1 << 16); ++i) out[i] = to_half_bits(f(double(half_bits_to_float(uint16_t(i)))));
  return out;
}

TEST(ActivationGpu, EveryFp16InputWithinBounds) {
  const std::string why = no_device_reason();
  if (!why.empty()) GTEST_SKIP() << why;

  constexpr int kValues = 1 << 16, kPairs = kValues / 2;
  std::vector<uint16_t> bits(kValues);
  for (int i = 0; i < kValues; ++i) bits[i] = uint16_t(i);
  __half2 *in = nullptr, *out = nullptr;
  ASSERT_EQ(cudaMalloc(&in, kValues * sizeof(__half)), cudaSuccess);
  ASSERT_EQ(cudaMalloc(&out, kValues * sizeof(__half)), cudaSuccess);
  ASSERT_EQ(cudaMemcpy(in, bits.data(), kValues * sizeof(__half), cudaMemcpyHostToDevice), cudaSuccess);

  std::printf("activation  form      max |err|  at x        x < 0 only  max ulps (|exact| >= 2^-14)  bound\n");
  for (const Bound& b : kBounds) {
    switch (b.act) {
      case Activation::relu: launch<Activation::relu>(b.form, in, out, kPairs); break;
      case Activation::leaky_relu: launch<Activation::leaky_relu>(b.form, in, out, kPairs); break;
      case Activation::gelu: launch<Activation::gelu>(b.form, in, out, kPairs); break;
      case Activation::silu: launch<Activation::silu>(b.form, in, out, kPairs); break;
      default: FAIL() << "no kernel for this activation";
    }
    ASSERT_EQ(cudaGetLastError(), cudaSuccess);
    std::vector<uint16_t> got(kValues);
    ASSERT_EQ(cudaMemcpy(got.data(), out, kValues * sizeof(__half), cudaMemcpyDeviceToHost), cudaSuccess);
    const Checked c = check(got, b);
    std::printf("%-11s %-9s %9.2e  %-10.5g  %9.2e   %8.2f                     %.2f ulp + %.1e\n",
                wb::activation_name(b.act), form_name(b.form), c.max_err, c.max_err_x, c.max_err_negative, c.max_ulps,
                b.ulps, b.slack);
    EXPECT_EQ(c.violations, 0) << wb::activation_name(b.act) << " (" << form_name(b.form) << "): " << c.violations
                               << " inputs out of bounds; first x = " << c.first_x << ": got " << c.first_got
                               << ", exact " << c.first_exact;
  }
  cudaFree(in);
  cudaFree(out);
}

// Lesson 05's fused backward forms dZ * act'(P) in half2 for every tile that
// reads an element. Over every finite fp16 P (dZ = 1), the derivative must be
// within a few fp16 spacings of the exact one, in the tails too, where it is
// tiny: a layer's real pre-activations reach |P| of 10 and more. act' is a
// sum of two terms (GELU: s + 2 x s (1 - s) u'; SiLU: s + x s (1 - s)), each
// of which the half2 form gets to a few fp16 spacings; where act' crosses
// zero they cancel, so the bound is a few spacings of the result plus a few
// of the terms' size, plus 2^-16 for the far tails where exp(-|v|) is an fp16
// subnormal. A form built on 1 + tanh, off by 1e-3 wherever that cancels, fails it.
// Step 5's epilogue forms GELU's and SiLU's act' in fp32 instead
// (activation_grad_f32) and rounds once: within one spacing of the result,
// plus a quarter of one of the terms' where they cancel.
template <Activation A, bool kF32>
__global__ void evaluate_grad(const uint32_t* in, uint32_t* out, int pairs) {
  const int i = int(blockIdx.x * blockDim.x + threadIdx.x);
  if (i >= pairs) return;
  if constexpr (kF32) {
    const float2 x = __half22float2(*reinterpret_cast<const __half2*>(&in[i]));
    const __half2 g = __floats2half2_rn(wb::activation_grad_f32<A>(x.x), wb::activation_grad_f32<A>(x.y));
    out[i] = *reinterpret_cast<const uint32_t*>(&g);
  } else {
    const __half2 one = __float2half2_rn(1.0f);
    out[i] = wb::times_activation_grad_half2<A>(*reinterpret_cast<const uint32_t*>(&one), in[i]);
  }
}

TEST(ActivationGpu, FusedDerivativeWithinBoundsForEveryFp16Input) {
  const std::string why = no_device_reason();
  if (!why.empty()) GTEST_SKIP() << why;
  constexpr int kValues = 1 << 16, kPairs = kValues / 2;
  std::vector<uint16_t> bits(kValues);
  for (int i = 0; i < kValues; ++i) bits[i] = uint16_t(i);
  uint32_t *in = nullptr, *out = nullptr;
  ASSERT_EQ(cudaMalloc(&in, kValues * sizeof(__half)), cudaSuccess);
  ASSERT_EQ(cudaMalloc(&out, kValues * sizeof(__half)), cudaSuccess);
  ASSERT_EQ(cudaMemcpy(in, bits.data(), kValues * sizeof(__half), cudaMemcpyHostToDevice), cudaSuccess);
  // |first term| + |second term| of act'(x), in fp64.
  const auto terms = [](Activation act, double x) {
    if (act == Activation::gelu) {
      const double c = 0.7978845608028654, a = 0.044715;
      const double s = 1.0 / (1.0 + std::exp(-2.0 * c * (x + a * x * x * x)));
      return s + std::fabs(2.0 * x * s * (1.0 - s) * c * (1.0 + 3.0 * a * x * x));
    }
    const double s = 1.0 / (1.0 + std::exp(-x));
    return s + std::fabs(x * s * (1.0 - s));
  };
  struct GradBound {
    Activation act;
    bool f32;                // activation_grad_f32 instead of the half2 form
    double ulps, term_ulps;  // spacings of the result, and of |first term| + |second term|
  };
  for (const GradBound b : {GradBound{Activation::relu, false, 0.0, 0.0}, GradBound{Activation::gelu, false, 6.0, 4.0},
                            GradBound{Activation::silu, false, 6.0, 4.0}, GradBound{Activation::gelu, true, 1.0, 0.25},
                            GradBound{Activation::silu, true, 1.0, 0.25}}) {
    if (b.act == Activation::relu) evaluate_grad<Activation::relu, false><<<kPairs / 256, 256>>>(in, out, kPairs);
    if (b.act == Activation::gelu && !b.f32) evaluate_grad<Activation::gelu, false><<<kPairs / 256, 256>>>(in, out, kPairs);
    if (b.act == Activation::silu && !b.f32) evaluate_grad<Activation::silu, false><<<kPairs / 256, 256>>>(in, out, kPairs);
    if (b.act == Activation::gelu && b.f32) evaluate_grad<Activation::gelu, true><<<kPairs / 256, 256>>>(in, out, kPairs);
    if (b.act == Activation::silu && b.f32) evaluate_grad<Activation::silu, true><<<kPairs / 256, 256>>>(in, out, kPairs);
    ASSERT_EQ(cudaGetLastError(), cudaSuccess);
    std::vector<uint16_t> got(kValues);
    ASSERT_EQ(cudaMemcpy(got.data(), out, kValues * sizeof(__half), cudaMemcpyDeviceToHost), cudaSuccess);
    int violations = 0;
    double first_x = 0, first_got = 0, first_exact = 0, max_ulps = 0, max_err = 0, max_err_x = 0;
    for (int i = 0; i < kValues; ++i) {
      const double x = half_bits_to_float(uint16_t(i)), y = half_bits_to_float(got[size_t(i)]);
      if (std::isnan(x) && b.f32 && !std::isnan(y) && violations++ == 0) first_x = x, first_got = y, first_exact = x;
      if (!std::isfinite(x)) continue;  // the fp32 form keeps a NaN P NaN (above)
      const double exact = wb::activation_grad<double>(b.act, x);
      const double err = std::isfinite(y) ? std::fabs(y - exact) : INFINITY;
      if (err > max_err) max_err = err, max_err_x = x;
      if (std::fabs(exact) >= std::ldexp(1.0, -14)) max_ulps = std::max(max_ulps, err / fp16_ulp(exact));
      const double slack = b.act == Activation::relu ? 0.0 : b.term_ulps * fp16_ulp(terms(b.act, x)) + std::ldexp(1.0, -16);
      if (!(err <= b.ulps * fp16_ulp(exact) + slack) && violations++ == 0) first_x = x, first_got = y, first_exact = exact;
    }
    std::printf("act' of %-5s %-5s max |err| %.2e (at x = %g), max %.1f ulps of the result\n", wb::activation_name(b.act),
                b.f32 ? "fp32" : "half2", max_err, max_err_x, max_ulps);
    EXPECT_EQ(violations, 0) << wb::activation_name(b.act) << (b.f32 ? " (fp32)" : " (half2)") << ": " << violations << " inputs out of bounds; first x = "
                             << first_x << ": got " << first_got << ", exact " << first_exact;
  }
  cudaFree(in);
  cudaFree(out);
}

// The check on its own (no GPU): exact values rounded to fp16 pass every
// bound, the other common GELU, x sigmoid(1.702 x), fails the tanh form's, and so
// does a GELU that turns NaN into a number.
TEST(ActivationCheck, AcceptsRoundedExactRejectsAnotherGelu) {
  for (const Bound& b : kBounds) {
    const Checked c = check(host_outputs([&](double x) { return wb::apply_activation<double>(b.act, x); }), b);
    EXPECT_EQ(c.violations, 0) << wb::activation_name(b.act) << " (" << form_name(b.form) << "), first x = " << c.first_x;
  }
  const Bound* gelu_half2 = nullptr;
  for (const Bound& b : kBounds)
    if (b.act == Activation::gelu && b.form == Form::half2) gelu_half2 = &b;
  ASSERT_NE(gelu_half2, nullptr);
  const Checked c = check(host_outputs([](double x) { return x / (1 + std::exp(-1.702 * x)); }), *gelu_half2);
  EXPECT_GT(c.violations, 1000);
  EXPECT_GT(c.max_err, 1e-2);
  // A form that turns NaN into a number (as max(x, 0) alone does) fails on
  // each of fp16's 2,046 NaNs.
  const Checked swallows = check(
      host_outputs([](double x) { return std::isnan(x) ? 0.0 : wb::apply_activation<double>(Activation::gelu, x); }),
      *gelu_half2);
  EXPECT_EQ(swallows.violations, 2046);
}

}  // namespace
