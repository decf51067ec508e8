// Lesson 04, step 7 (tma_store_gelu, tma_store_relu, ...): the activation
// fused into step 5's epilogue. The activation is a template parameter, so
// `none` costs nothing; with one, every output pair passes through
// epilogue_pair on its way from the accumulators to the staging buffer.
//
// In step 5 the tensor cores wait while the consumers run the epilogue, so
// every instruction there counts. ReLU is one max per pair. GELU rounds the
// pair to fp16 first (as the store does anyway) and works in half2: its tanh
// form is 5 half2 ops and one tanh.approx.f16x2, which is still two
// special-function ops per pair (one per half), and that unit is what it
// waits on. So half the pairs take a GELU with no tanh at all: a polynomial on
// the FMA pipe (gelu_poly_half2, common/activation_half2.cuh), and the two
// pipes share the work. How the share was chosen, and what each form costs in
// cycles and in timed runs: docs/notes/04_gelu_epilogue.md.
#pragma once

#include <cstdint>

#include "04_hopper/pipeline.cuh"
#include "common/activation_half2.cuh"

namespace wb::hopper {

__device__ __forceinline__ uint32_t pack_half2(float lo, float hi) {
  const __half2 h = __floats2half2_rn(lo, hi);
  return *reinterpret_cast<const uint32_t*>(&h);
}

// Two neighbouring outputs, activation applied, as one fp16 pair. GELU runs on
// the pair in half2 (common/activation_half2.cuh: within 1.5 fp16 ulps, or
// 1.2e-3 where x < 0 and the result is tiny); the others in fp32.
template <Activation kAct>
__device__ __forceinline__ uint32_t pack_activation(float lo, float hi) {
  if constexpr (kAct == Activation::gelu) return activation_half2_bits<kAct>(pack_half2(lo, hi));
  return pack_half2(epilogue_activation<kAct>(lo), epilogue_activation<kAct>(hi));
}

// GELU's pairs are shared between its two forms: the tanh form keeps the
// special-function unit busy (16 cycles per warp instruction per scheduler),
// the polynomial the FMA pipe (16 as well, but nothing of the other unit).
// Counting pipe cycles says a quarter of the pairs on the polynomial would
// even out the two; launches measured half as best at 2048^3, where GELU costs
// the most: the slices j % 8 < 4 of each 64 x 128 half, 8 of its 16
// eight-column slices.
constexpr int kGeluPolySlicesOf8 = 4;

// The fp16 pair of 8-column slice `slice` of a 64 x 128 half, activation applied.
template <Activation kAct>
__device__ __forceinline__ uint32_t epilogue_pair(float lo, float hi, int slice) {
  if constexpr (kAct == Activation::gelu) {
    if (slice % 8 < kGeluPolySlicesOf8) return gelu_poly_half2_bits(pack_half2(lo, hi));
  }
  return pack_activation<kAct>(lo, hi);
}

}  // namespace wb::hopper
