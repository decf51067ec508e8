// Activations a GEMM epilogue can apply to the fp32 accumulator before the
// fp16 store. The same functions serve the kernels, the CPU reference and the
// tests, so a fused epilogue is checked against exactly what it claims to compute.
#pragma once

#include <cmath>

#if defined(__CUDACC__)
#define WB_ACT_HD __host__ __device__ __forceinline__
#else
#define WB_ACT_HD inline
#endif

namespace wb {

enum class Activation : int { none = 0, relu = 1, leaky_relu = 2, gelu = 3, silu = 4 };
constexpr int kActivationCount = 5;
constexpr float kLeakyReluSlope = 0.01f;

#if defined(__CUDA_ARCH__)
// On the device, fp32 epilogues use the fast exponential and division: their
// error (a few ulp of fp32) is far below the fp16 rounding of the output, and the
// IEEE versions cost a GEMM epilogue several percent.
__device__ __forceinline__ float fast_tanh(float x) {
  // tanh(x) = 1 - 2 / (exp(2x) + 1); saturates cleanly for large |x|.
  return 1.0f - __fdividef(2.0f, __expf(2.0f * x) + 1.0f);
}

__device__ __forceinline__ float apply_activation(Activation act, float x) {
  switch (act) {
    case Activation::relu: return x > 0.0f ? x : 0.0f;
    case Activation::leaky_relu: return x > 0.0f ? x : kLeakyReluSlope * x;
    case Activation::gelu: return 0.5f * x * (1.0f + fast_tanh(0.7978845608028654f * (x + 0.044715f * x * x * x)));
    case Activation::silu: return __fdividef(x, 1.0f + __expf(-x));
    case Activation::none:
    default: return x;
  }
}

// The derivative, for a backward pass: act'(x), fp32 on the device.
// ReLU's derivative at exactly 0 is 0 (as in PyTorch).
__device__ __forceinline__ float activation_grad(Activation act, float x) {
  switch (act) {
    case Activation::relu: return x > 0.0f ? 1.0f : 0.0f;
    case Activation::leaky_relu: return x > 0.0f ? 1.0f : kLeakyReluSlope;
    case Activation::gelu: {
      const float c = 0.7978845608028654f, a = 0.044715f;
      const float t = fast_tanh(c * (x + a * x * x * x));
      return 0.5f * (1.0f + t) + 0.5f * x * (1.0f - t * t) * c * (1.0f + 3.0f * a * x * x);
    }
    case Activation::silu: {
      const float s = __fdividef(1.0f, 1.0f + __expf(-x));
      return s * (1.0f + x * (1.0f - s));
    }
    case Activation::none:
    default: return 1.0f;
  }
}
#endif

template <class T>
WB_ACT_HD T apply_activation(Activation act, T x) {
  switch (act) {
    case Activation::relu: return x > T(0) ? x : T(0);
    case Activation::leaky_relu: return x > T(0) ? x : T(kLeakyReluSlope) * x;
    case Activation::gelu: {
      // tanh form: 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))
      const T c = T(0.7978845608028654);
      return T(0.5) * x * (T(1) + tanh(c * (x + T(0.044715) * x * x * x)));
    }
    case Activation::silu: return x / (T(1) + exp(-x));
    case Activation::none:
    default: return x;
  }
}

// act'(x): the derivative of apply_activation, for the backward pass's fp64
// reference. GELU's is the derivative of its tanh form:
//   0.5 (1 + t) + 0.5 x (1 - t^2) sqrt(2/pi) (1 + 3 0.044715 x^2),  t = tanh(...)
template <class T>
WB_ACT_HD T activation_grad(Activation act, T x) {
  switch (act) {
    case Activation::relu: return x > T(0) ? T(1) : T(0);
    case Activation::leaky_relu: return x > T(0) ? T(1) : T(kLeakyReluSlope);
    case Activation::gelu: {
      const T c = T(0.7978845608028654), a = T(0.044715);
      const T t = tanh(c * (x + a * x * x * x));
      return T(0.5) * (T(1) + t) + T(0.5) * x * (T(1) - t * t) * c * (T(1) + T(3) * a * x * x);
    }
    case Activation::silu: {
      const T s = T(1) / (T(1) + exp(-x));
      return s * (T(1) + x * (T(1) - s));
    }
    case Activation::none:
    default: return T(1);
  }
}

inline const char* activation_name(Activation act) {
  switch (act) {
    case Activation::none: return "none";
    case Activation::relu: return "relu";
    case Activation::leaky_relu: return "leaky_relu";
    case Activation::gelu: return "gelu";
    case Activation::silu: return "silu";
  }
  return "unknown";
}

}  // namespace wb
