// For the build's wgmma guard test (tests/CMakeLists.txt, scripts/nvcc-wgmma-guard.sh): a k loop
// that chooses each k16 step's layout with a runtime branch between the wgmmas of a stage, as
// lesson 05's first two-product kernel did. ptxas fences those wgmmas (C7519), and the guard must
// fail the compile. Never linked into anything.
#include "common/wgmma.cuh"

using namespace wb::hopper;

__global__ void __launch_bounds__(128, 1)
    branch_between_wgmmas(float* out, uint64_t desc_a, uint64_t desc_b, int k_tiles, int product) {
  float acc[128];
  for (int kt = 0; kt < k_tiles; ++kt) {
    wgmma_fence();
    for (int kk = 0; kk < 4; ++kk) {
      if (product == 0) {
        wgmma_m64k16<256, Major::k, Major::k>(acc, desc_a + kk, desc_b + kk, kt > 0 || kk > 0);
      } else {
        wgmma_m64k16<256, Major::mn, Major::mn>(acc, desc_a + kk, desc_b + kk, kt > 0 || kk > 0);
      }
    }
    wgmma_commit();
    wgmma_wait<1>();
    fence_accumulators(acc);
  }
  wgmma_wait<0>();
  fence_accumulators(acc);
  for (int i = 0; i < 128; ++i) out[i * 128 + threadIdx.x] = acc[i];
}
