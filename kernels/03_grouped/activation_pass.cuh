// An activation applied as its own pass over C, in place: what a GEMM without a
// fused epilogue leaves to a second kernel. It reads and writes all of C once
// more (4 bytes per element in fp16), which is the traffic a fused epilogue saves.
// Out of place (dst != src) it keeps the pre-activation as well, as a training
// forward must (lesson 05).
//
// 16-byte vectorised: each thread handles 8 halves per step of a grid-stride
// loop; the activation is computed in fp32, as the fused epilogue does (the fused
// one starts from the fp32 accumulator, this one from the fp16 value stored in C,
// so the two can differ by one fp16 rounding).
#pragma once

#include <cuda_fp16.h>

#include <cstdint>

#include "common/check.cuh"
#include "common/trace.cuh"
#include "schedule/activation.hpp"

namespace wb {

template <Activation ACT>
__global__ void activation_pass_kernel(const __half* src, __half* dst, int64_t count, bool vectorised) {
  const int64_t stride = int64_t(gridDim.x) * blockDim.x;
  const int64_t first = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  int64_t scalar_from = 0;
  if (vectorised) {
    const int64_t chunks = count / 8;
    const uint4* from = reinterpret_cast<const uint4*>(src);
    uint4* to = reinterpret_cast<uint4*>(dst);
    for (int64_t i = first; i < chunks; i += stride) {
      uint4 v = from[i];
      __half2* h = reinterpret_cast<__half2*>(&v);
#pragma unroll
      for (int j = 0; j < 4; ++j) {
        const float2 f = __half22float2(h[j]);
        h[j] = __floats2half2_rn(apply_activation<float>(ACT, f.x), apply_activation<float>(ACT, f.y));
      }
      to[i] = v;
    }
    scalar_from = chunks * 8;
  }
  // The tail past the last whole chunk (or everything, when not 16-byte aligned).
  for (int64_t i = scalar_from + first; i < count; i += stride)
    dst[i] = __float2half_rn(apply_activation<float>(ACT, __half2float(src[i])));
}

// dst = act(src) over `count` elements; src == dst: in place.
inline void launch_activation_pass(const __half* src, __half* dst, int64_t count, Activation act,
                                   cudaStream_t stream) {
  if (count <= 0 || act == Activation::none) return;
  constexpr int kThreads = 256;
  const bool vectorised = reinterpret_cast<uintptr_t>(src) % 16 == 0 && reinterpret_cast<uintptr_t>(dst) % 16 == 0;
  const int64_t work_items = vectorised ? (count + 7) / 8 : count;
  // Enough blocks to fill any current GPU several times over; the grid-stride loop does the rest.
  const int blocks = int(work_items / kThreads + 1 < 8192 ? work_items / kThreads + 1 : 8192);
  switch (act) {
    case Activation::relu:
      activation_pass_kernel<Activation::relu><<<blocks, kThreads, 0, stream>>>(src, dst, count, vectorised);
      break;
    case Activation::leaky_relu:
      activation_pass_kernel<Activation::leaky_relu><<<blocks, kThreads, 0, stream>>>(src, dst, count, vectorised);
      break;
    case Activation::gelu:
      activation_pass_kernel<Activation::gelu><<<blocks, kThreads, 0, stream>>>(src, dst, count, vectorised);
      break;
    case Activation::silu:
      activation_pass_kernel<Activation::silu><<<blocks, kThreads, 0, stream>>>(src, dst, count, vectorised);
      break;
    case Activation::none: break;
  }
  CUDA_CHECK_LAUNCH();
}

inline void launch_activation_pass(__half* data, int64_t count, Activation act, cudaStream_t stream) {
  launch_activation_pass(data, data, count, act, stream);
}

}  // namespace wb
