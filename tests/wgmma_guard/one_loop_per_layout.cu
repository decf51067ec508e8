// For the build's wgmma guard test: the same k loop with the branch taken once, outside it (one
// loop per layout, as lesson 05's kernel does now). ptxas keeps the pipeline, and the guard passes.
#include "common/wgmma.cuh"

using namespace wb::hopper;

template <Major kA, Major kB>
__device__ __forceinline__ void k_loop(float (&acc)[128], uint64_t desc_a, uint64_t desc_b, int k_tiles) {
  for (int kt = 0; kt < k_tiles; ++kt) {
    wgmma_fence();
    for (int kk = 0; kk < 4; ++kk) wgmma_m64k16<256, kA, kB>(acc, desc_a + kk, desc_b + kk, kt > 0 || kk > 0);
    wgmma_commit();
    wgmma_wait<1>();
    fence_accumulators(acc);
  }
  wgmma_wait<0>();
  fence_accumulators(acc);
}

__global__ void __launch_bounds__(128, 1)
    one_loop_per_layout(float* out, uint64_t desc_a, uint64_t desc_b, int k_tiles, int product) {
  float acc[128];
  if (product == 0) {
    k_loop<Major::k, Major::k>(acc, desc_a, desc_b, k_tiles);
  } else {
    k_loop<Major::mn, Major::mn>(acc, desc_a, desc_b, k_tiles);
  }
  for (int i = 0; i < 128; ++i) out[i * 128 + threadIdx.x] = acc[i];
}
