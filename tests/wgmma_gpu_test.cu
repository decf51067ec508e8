// wgmma with each operand in either major (common/wgmma.cuh), fed by TMA
// (common/tma.cuh): one warpgroup computes a 64 x 128 x 64 product, four
// m64n128k16 steps, for A K-major (M x K row-major) or M-major (stored K x M
// row-major) and B N-major (K x N row-major) or K-major (stored N x K
// row-major). Lesson 04 uses one of the four; a backward pass needs the
// others (dX = dP W^T, dW = X^T dP) without transposed copies.
//
// The values are multiples of 1/8 in [-1, 1], so every product and every sum
// is exact in fp32: the result must equal the host's exactly.
#include <cuda_fp16.h>
#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "common/check.cuh"
#include "common/device_buffer.cuh"
#include "common/tma.cuh"
#include "common/wgmma.cuh"
#include "no_device.hpp"

namespace {

using namespace wb;
using namespace wb::hopper;

constexpr int kM = 64, kN = 128, kK = 64;

struct alignas(1024) Tiles {
  __half a[kM * kK];  // one 64 x 64 box: K-major (lines of k) or M-major (lines of m)
  __half b[kN * kK];  // K-major: 128 lines of k; N-major: two 64 x 64 panels, lines of n
  uint64_t full;
};

template <Major kA, Major kB>
__global__ void __launch_bounds__(kWarpgroupThreads) wgmma_product(const __grid_constant__ CUtensorMap a_map,
                                                                   const __grid_constant__ CUtensorMap b_map,
                                                                   float* c) {
#if WB_WGMMA_DEVICE
  extern __shared__ uint8_t raw[];
  Tiles& s = *reinterpret_cast<Tiles*>((reinterpret_cast<uintptr_t>(raw) + 1023) & ~uintptr_t(1023));
  if (threadIdx.x == 0) {
    mbarrier_init(&s.full, 1);
    fence_barrier_init();
    mbarrier_arrive_expect_bytes(&s.full, uint32_t(sizeof(s.a) + sizeof(s.b)));
    tma_load_2d(s.a, &a_map, 0, 0, &s.full);  // (64, 64) either way
    if constexpr (kB == Major::k) {
      tma_load_2d(s.b, &b_map, 0, 0, &s.full);  // (128 n, 64 k)
    } else {
      for (int p = 0; p < kN / kPanelCols; ++p)  // (64 k, 64 n) per panel
        tma_load_2d(s.b + p * kK * kPanelCols, &b_map, 0, p * kPanelCols, &s.full);
    }
  }
  __syncthreads();
  mbarrier_wait(&s.full, 0);
  float d[kN / 2];
  wgmma_fence();
  for (int kk = 0; kk < kK / kWgmmaK; ++kk) {
    const uint32_t a = smem_u32(s.a), b = smem_u32(s.b);
    const uint64_t desc_a = kA == Major::k ? desc_k_major(a + kk * kWgmmaK * 2) : desc_mn_major(a + kk * 2048, 8192);
    const uint64_t desc_b = kB == Major::k ? desc_k_major(b + kk * kWgmmaK * 2) : desc_mn_major(b + kk * 2048, 8192);
    wgmma_m64k16<kN, kA, kB>(d, desc_a, desc_b, kk > 0);
  }
  wgmma_commit();
  wgmma_wait<0>();
  fence_accumulators(d);
  // The accumulator layout (common/wgmma.cuh): warp w, lane l, slice j.
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  for (int j = 0; j < kN / 8; ++j) {
    const int row = 16 * warp + lane / 4, col = 8 * j + 2 * (lane % 4);
    c[row * kN + col] = d[4 * j];
    c[row * kN + col + 1] = d[4 * j + 1];
    c[(row + 8) * kN + col] = d[4 * j + 2];
    c[(row + 8) * kN + col + 1] = d[4 * j + 3];
  }
#else
  (void)c;
  __trap();
#endif
}

float eighths(std::mt19937& rng) { return float(int(rng() % 17) - 8) / 8.0f; }

template <Major kA, Major kB>
void check_product() {
  std::mt19937 rng(kA == Major::k ? (kB == Major::k ? 1 : 2) : (kB == Major::k ? 3 : 4));
  std::vector<float> a(kM * kK), b(kK * kN);  // logical A (M x K), B (K x N), row-major
  for (float& v : a) v = eighths(rng);
  for (float& v : b) v = eighths(rng);
  // Stored as the majors say: A K-major is A itself; M-major is A^T (K x M). B N-major is B; K-major is B^T.
  std::vector<__half> a_stored(a.size()), b_stored(b.size());
  for (int m = 0; m < kM; ++m)
    for (int k = 0; k < kK; ++k)
      a_stored[kA == Major::k ? m * kK + k : k * kM + m] = __float2half(a[m * kK + k]);
  for (int k = 0; k < kK; ++k)
    for (int n = 0; n < kN; ++n)
      b_stored[kB == Major::mn ? k * kN + n : n * kK + k] = __float2half(b[k * kN + n]);
  DeviceBuffer<__half> a_dev(a_stored.size()), b_dev(b_stored.size());
  DeviceBuffer<float> c_dev(kM * kN);
  CUDA_CHECK(cudaMemcpy(a_dev.get(), a_stored.data(), a_dev.bytes(), cudaMemcpyHostToDevice));
  CUDA_CHECK(cudaMemcpy(b_dev.get(), b_stored.data(), b_dev.bytes(), cudaMemcpyHostToDevice));
  CUDA_CHECK(cudaMemset(c_dev.get(), 0xFF, c_dev.bytes()));
  // A transposed operand is just another row-major matrix to TMA.
  const CUtensorMap a_map = kA == Major::k ? make_tensor_map_2d(a_dev.get(), kM, kK, kM, kK)
                                           : make_tensor_map_2d(a_dev.get(), kK, kM, kK, kM);
  const CUtensorMap b_map = kB == Major::mn ? make_tensor_map_2d(b_dev.get(), kK, kN, kK, kPanelCols)
                                            : make_tensor_map_2d(b_dev.get(), kN, kK, kN, kK);
  const int smem = int(sizeof(Tiles)) + 1024;
  CUDA_CHECK(cudaFuncSetAttribute(wgmma_product<kA, kB>, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
  wgmma_product<kA, kB><<<1, kWarpgroupThreads, smem>>>(a_map, b_map, c_dev.get());
  CUDA_CHECK_LAUNCH();
  std::vector<float> c(kM * kN);
  CUDA_CHECK(cudaMemcpy(c.data(), c_dev.get(), c_dev.bytes(), cudaMemcpyDeviceToHost));
  int wrong = 0;
  for (int m = 0; m < kM; ++m)
    for (int n = 0; n < kN; ++n) {
      float want = 0;
      for (int k = 0; k < kK; ++k) want += a[m * kK + k] * b[k * kN + n];
      if (c[m * kN + n] != want && wrong++ < 5)
        ADD_FAILURE() << "C(" << m << ", " << n << ") = " << c[m * kN + n] << ", want " << want;
    }
  EXPECT_EQ(wrong, 0) << "A " << (kA == Major::k ? "K" : "M") << "-major, B " << (kB == Major::k ? "K" : "N")
                      << "-major";
}

bool hopper_or_skip(std::string* why) {
  if (*why = wb::testing::no_device_reason(); !why->empty()) return false;
  cudaDeviceProp p{};
  CUDA_CHECK(cudaGetDeviceProperties(&p, 0));
  if (p.major != 9 || p.minor != 0) {
    *why = "wgmma needs a Hopper GPU (sm_90a); this one is sm_" + std::to_string(p.major * 10 + p.minor);
    return false;
  }
  return true;
}

TEST(WgmmaMajors, AKMajorBNMajor) {
  std::string why;
  if (!hopper_or_skip(&why)) GTEST_SKIP() << why;
  check_product<Major::k, Major::mn>();
}
TEST(WgmmaMajors, AKMajorBKMajor) {
  std::string why;
  if (!hopper_or_skip(&why)) GTEST_SKIP() << why;
  check_product<Major::k, Major::k>();
}
TEST(WgmmaMajors, AMMajorBNMajor) {
  std::string why;
  if (!hopper_or_skip(&why)) GTEST_SKIP() << why;
  check_product<Major::mn, Major::mn>();
}
TEST(WgmmaMajors, AMMajorBKMajor) {
  std::string why;
  if (!hopper_or_skip(&why)) GTEST_SKIP() << why;
  check_product<Major::mn, Major::k>();
}

}  // namespace
