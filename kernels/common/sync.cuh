// Flags between blocks of one grid: a release store that publishes what the
// block wrote before it, and an acquire load that sees it. Used where one
// block waits for another's partial sums (Stream-K, serial split-K); the
// waiting is safe only when the block it waits for is sure to run (it is
// resident, or it was launched earlier and never waits itself).
#pragma once

#include <cstdint>

namespace wb {

__device__ __forceinline__ void store_release_gpu(uint32_t* flag, uint32_t value) {
#if defined(__CUDA_ARCH__)
  asm volatile("st.release.gpu.global.u32 [%0], %1;" ::"l"(flag), "r"(value) : "memory");
#endif
}

__device__ __forceinline__ uint32_t load_acquire_gpu(const uint32_t* flag) {
  uint32_t value = 0;
#if defined(__CUDA_ARCH__)
  asm volatile("ld.acquire.gpu.global.u32 %0, [%1];" : "=r"(value) : "l"(flag) : "memory");
#endif
  return value;
}

// Counters between blocks: a relaxed add that hands out work, a release add
// that publishes what the thread (and what it has seen) wrote before it, and
// an acquire-release add that does both (the last of several blocks to count
// in sees every other block's writes).
__device__ __forceinline__ uint32_t atomic_add_relaxed_gpu(uint32_t* counter, uint32_t value) {
  uint32_t before = 0;
#if defined(__CUDA_ARCH__)
  asm volatile("atom.relaxed.gpu.global.add.u32 %0, [%1], %2;" : "=r"(before) : "l"(counter), "r"(value) : "memory");
#endif
  return before;
}

__device__ __forceinline__ void add_release_gpu(uint32_t* counter, uint32_t value) {
#if defined(__CUDA_ARCH__)
  asm volatile("red.release.gpu.global.add.u32 [%0], %1;" ::"l"(counter), "r"(value) : "memory");
#endif
}

__device__ __forceinline__ uint32_t atomic_add_acq_rel_gpu(uint32_t* counter, uint32_t value) {
  uint32_t before = 0;
#if defined(__CUDA_ARCH__)
  asm volatile("atom.acq_rel.gpu.global.add.u32 %0, [%1], %2;" : "=r"(before) : "l"(counter), "r"(value) : "memory");
#endif
  return before;
}

}  // namespace wb
