// Lesson 08's gathered product on Hopper's tensor cores, for M > 64, where
// the FFN is bound by its flops and mma.sync (about 0.6x cuBLAS, lesson 03)
// would cap the speed-up. TMA copies boxes of consecutive rows, and a gather
// is not one; but wgmma reads shared memory in the 128-byte swizzle whatever
// wrote it, so here every thread copies 16-byte chunks with cp.async straight
// into that layout (chunk c of line r at (c ^ r % 8) x 16 bytes), a neuron's
// row wherever the index list says, and the warpgroups run wgmma on it:
//   A (X or H)              K-major, 128 rows x 64 k per stage
//   B, Gather::neuron_rows  K-major: 128 neurons' runs x 64 k
//   B, Gather::rows         N-major: 64 rows of W2 x 128 n, as two 64-wide panels
// Tile 128 x 128, two consumer warpgroups (64 x 128 each, wgmma m64n128k16),
// 4 stages of 32 KiB, all 256 threads copying: no producer warp, a barrier
// per slice, the next slices' copies issued while this slice's wgmma run.
// Split-K and the epilogues are gather_gemm.cuh's. sm_90a only: the lesson
// uses it on a Hopper GPU (use_wgmma).
#pragma once

#include <cuda_fp16.h>

#include "08_sparse_ffn/gather_gemm.cuh"
#include "common/tma.cuh"
#include "common/wgmma.cuh"

namespace wb::sparse {

struct WgmmaTile {
  static constexpr int BLOCK_M = 128, BLOCK_N = 128, BLOCK_K = 64, STAGES = 4, THREADS = 256;
  static constexpr int A_STAGE_BYTES = BLOCK_M * BLOCK_K * 2, B_STAGE_BYTES = BLOCK_N * BLOCK_K * 2;
  static constexpr int STAGE_BYTES = A_STAGE_BYTES + B_STAGE_BYTES;
  static constexpr int SMEM_BYTES = STAGES * STAGE_BYTES + 1024 + STAGES * 64 * 4;  // + alignment, + index ring
  static constexpr int ACC = 64;  // fp32 per thread: 64 x 128 per warpgroup
};

// Calls f(row, col, v0, v1) for each pair of neighbouring accumulators of a
// warpgroup's 64 x N tile at (row0, col0), row and col in the matrix (wgmma's
// layout, common/wgmma.cuh).
template <int N, class F>
__device__ __forceinline__ void for_each_wgmma_pair(const float (&d)[N / 2], int row0, int col0, F&& f) {
  const int warp = (int(threadIdx.x) % 128) / 32, lane = int(threadIdx.x) % 32;
  const int row = row0 + 16 * warp + lane / 4;
#pragma unroll
  for (int j = 0; j < N / 8; ++j) {
    const int col = col0 + 8 * j + 2 * (lane % 4);
    f(row, col, d[4 * j], d[4 * j + 1]);
    f(row + 8, col, d[4 * j + 2], d[4 * j + 3]);
  }
}

template <Gather G, Epilogue E>
__global__ void __launch_bounds__(WgmmaTile::THREADS, 1) gathered_wgmma_kernel(GatherParams p) {
  using T = WgmmaTile;
  static_assert(G != Gather::columns, "the column gather stays on mma.sync (steps 2-3)");
  extern __shared__ __align__(128) unsigned char smem_raw[];
  // Stages on 1024-byte boundaries: the swizzle repeats on 1024-byte atoms.
  unsigned char* smem =
      reinterpret_cast<unsigned char*>((reinterpret_cast<uintptr_t>(smem_raw) + 1023) & ~uintptr_t(1023));
  int* ring = reinterpret_cast<int*>(smem + T::STAGES * T::STAGE_BYTES);
  const uint64_t t0 = trace_start(p.trace);
  const int tid = int(threadIdx.x), wg = tid / 128;
  const int tiles_n = ceil_div(p.n, T::BLOCK_N), tiles = ceil_div(p.m, T::BLOCK_M) * tiles_n;
  const int k_tiles = ceil_div(p.k, T::BLOCK_K);
  const SplitUnit unit = split_unit(blockIdx.x, tiles);
  const int tm = unit.tile / tiles_n, tn = unit.tile % tiles_n;
  const int m0 = tm * T::BLOCK_M, n0 = tn * T::BLOCK_N;
  const int kt_begin = split_k_begin(k_tiles, p.splits, unit.split);
  const int kt_end = split_k_begin(k_tiles, p.splits, unit.split + 1);
  const int count = kt_end - kt_begin;

  // Per thread: 4 chunks of A and 4 of B per slice; the chunk column is fixed.
  const int chunk = tid % 8;
  const __half* brow[4] = {nullptr, nullptr, nullptr, nullptr};  // neuron_rows: the 4 neurons' runs
  if constexpr (G == Gather::neuron_rows) {
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      const int w = gathered(p, n0 + tid / 8 + 32 * i);
      brow[i] = w < 0 ? nullptr : p.b + int64_t(w) * p.ldb;
    }
  } else {  // rows: the first STAGES slices' neurons into the ring
    for (int e = tid; e < T::STAGES * 64; e += T::THREADS) {
      const int t = e / 64, gk = (kt_begin + t) * T::BLOCK_K + e % 64;
      ring[e] = kt_begin + t < kt_end && gk < p.count ? __ldg(p.idx + gk) : -1;
    }
    __syncthreads();
  }
  auto load = [&](int stage, int kt) {
    unsigned char* as = smem + stage * T::STAGE_BYTES;
    unsigned char* bs = as + T::A_STAGE_BYTES;
    const int k0 = kt * T::BLOCK_K;
#pragma unroll
    for (int i = 0; i < 4; ++i) {  // A: 128 lines of 64 k
      const int r = tid / 8 + 32 * i, gr = m0 + r, gc = k0 + chunk * 8;
      const bool inside = gr < p.m && gc < p.k;
      cp_async_16_zero_fill(shared_address(as + r * 128 + ((chunk ^ (r & 7)) * 16)),
                            inside ? p.a + int64_t(gr) * p.k + gc : p.a, inside ? 16 : 0);
    }
    if constexpr (G == Gather::neuron_rows) {
#pragma unroll
      for (int i = 0; i < 4; ++i) {  // B: 128 neurons' lines of 64 k
        const int r = tid / 8 + 32 * i, gc = k0 + chunk * 8;
        const bool inside = brow[i] != nullptr && gc < p.k;
        cp_async_16_zero_fill(shared_address(bs + r * 128 + ((chunk ^ (r & 7)) * 16)), inside ? brow[i] + gc : p.b,
                              inside ? 16 : 0);
      }
    } else {
      const int* slot = ring + ((kt - kt_begin) % T::STAGES) * 64;
#pragma unroll
      for (int i = 0; i < 4; ++i) {  // B: 64 lines (rows of W2) of 128 n, as two panels of 64
        const int e = tid + T::THREADS * i, r = e / 16, c = e % 16, panel = c / 8, pc = c % 8;
        const int w = slot[r], nc = n0 + c * 8;
        const bool inside = w >= 0 && nc < p.n;
        cp_async_16_zero_fill(shared_address(bs + panel * 8192 + r * 128 + ((pc ^ (r & 7)) * 16)),
                              inside ? p.b + int64_t(w) * p.ldb + nc : p.b, inside ? 16 : 0);
      }
    }
  };

  float d[T::ACC];
#pragma unroll
  for (int i = 0; i < T::ACC; ++i) d[i] = 0.0f;
#pragma unroll
  for (int s = 0; s < T::STAGES - 1; ++s) {
    if (s < count) load(s, kt_begin + s);
    cp_async_commit_group();
  }
  int pending = -1;
  for (int t = 0; t < count; ++t) {
    cp_async_wait_group<T::STAGES - 2>();
    hopper::fence_proxy_async_shared();  // this thread's copies, seen by the tensor cores' reads
    __syncthreads();
    const int stage = t % T::STAGES;
    const uint32_t as = shared_address(smem + stage * T::STAGE_BYTES) + 64 * 128 * wg;
    const uint32_t bs = shared_address(smem + stage * T::STAGE_BYTES + T::A_STAGE_BYTES);
    hopper::wgmma_fence();
#pragma unroll
    for (int kk = 0; kk < T::BLOCK_K / 16; ++kk) {
      const uint64_t da = hopper::desc_k_major(as + 32 * kk);
      if constexpr (G == Gather::neuron_rows)
        hopper::wgmma_m64n128k16<hopper::Major::k, hopper::Major::k>(d, da, hopper::desc_k_major(bs + 32 * kk), true);
      else
        hopper::wgmma_m64n128k16<hopper::Major::k, hopper::Major::mn>(d, da, hopper::desc_mn_major(bs + 2048 * kk, 8192),
                                                                      true);
    }
    hopper::wgmma_commit();
    // While they run: the slice STAGES - 1 ahead, into the stage of slice t - 1 (every
    // warpgroup waited for its wgmma before this slice's barrier).
    const int refill = t + T::STAGES - 1;
    if (refill < count) load(refill % T::STAGES, kt_begin + refill);
    cp_async_commit_group();
    if constexpr (G == Gather::rows) {  // slice refill + 1's neurons, to the slot of slice t (issued long ago)
      const int next = kt_begin + refill + 1;
      pending = tid < 64 && next < kt_end && next * T::BLOCK_K + tid < p.count ? __ldg(p.idx + next * T::BLOCK_K + tid)
                                                                              : -1;
    }
    hopper::wgmma_wait<0>();
    hopper::fence_accumulators(d);
    if constexpr (G == Gather::rows)
      if (tid < 64 && kt_begin + refill + 1 < kt_end) ring[((refill + 1) % T::STAGES) * 64 + tid] = pending;
  }
  cp_async_wait_group<0>();
  __syncthreads();

  const auto finish = [&] {
    for_each_wgmma_pair<T::BLOCK_N>(d, m0 + 64 * wg, n0,
                                    [&](int r, int c, float v0, float v1) { finish_pair<E>(p, r, c, v0, v1); });
  };
  if (p.splits == 1) {
    finish();
  } else {
    float4* slots = reinterpret_cast<float4*>(p.partials);
    constexpr int SLOT = T::ACC / 4 * T::THREADS;
    float4* mine = slots + (size_t(unit.split) * tiles + unit.tile) * SLOT;
#pragma unroll
    for (int i = 0; i < T::ACC / 4; ++i)
      mine[i * T::THREADS + tid] = make_float4(d[4 * i], d[4 * i + 1], d[4 * i + 2], d[4 * i + 3]);
    if (last_split_of_tile(p.counters + unit.tile, p.splits)) {
#pragma unroll
      for (int i = 0; i < T::ACC; ++i) d[i] = 0.0f;
      for (int s = 0; s < p.splits; ++s) {
        const float4* slot = slots + (size_t(s) * tiles + unit.tile) * SLOT;
#pragma unroll
        for (int i = 0; i < T::ACC / 4; ++i) {
          const float4 v = __ldcg(slot + i * T::THREADS + tid);
          d[4 * i] += v.x;
          d[4 * i + 1] += v.y;
          d[4 * i + 2] += v.z;
          d[4 * i + 3] += v.w;
        }
      }
      finish();
    }
  }
  trace_end(p.trace, p.trace_first_unit + int(blockIdx.x), p.trace_first_row + tm, tn, kt_begin * T::BLOCK_K,
            min(kt_end * T::BLOCK_K, p.k), t0);
}

template <Gather G, Epilogue E>
const void* wgmma_kernel_ready() {
  static const void* k = [] {
    const void* f = reinterpret_cast<const void*>(gathered_wgmma_kernel<G, E>);
    CUDA_CHECK(cudaFuncSetAttribute(f, cudaFuncAttributeMaxDynamicSharedMemorySize, WgmmaTile::SMEM_BYTES));
    return f;
  }();
  return k;
}

// M > 64 on a Hopper GPU (compute capability 9.0: the sm_90a code runs there only).
inline bool use_wgmma(int m) {
  static const bool hopper = [] {
    int device = 0, major = 0, minor = 0;
    CUDA_CHECK(cudaGetDevice(&device));
    CUDA_CHECK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device));
    CUDA_CHECK(cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, device));
    return major == 9 && minor == 0;
  }();
  return m > 64 && hopper;
}

template <Gather G, Epilogue E>
GatherPlan plan_wgmma(int m, int n, int k, bool split) {
  using T = WgmmaTile;
  GatherPlan q;
  q.block_m = T::BLOCK_M;
  q.block_n = T::BLOCK_N;
  q.threads = T::THREADS;
  q.smem = T::SMEM_BYTES;
  q.stages = T::STAGES;
  q.tiles_m = ceil_div(m, T::BLOCK_M);
  q.tiles_n = ceil_div(n, T::BLOCK_N);
  q.k_tiles = ceil_div(k, T::BLOCK_K);
  static const int sms = sm_count();
  q.blocks_per_sm = 1;
  const int64_t tiles = int64_t(q.tiles_m) * q.tiles_n;
  // Split only a product that leaves most SMs idle, and keep every split 8 slices deep at least.
  if (split && tiles < sms)
    q.splits = clamp_split_k(split_k_for_waves(tiles, q.k_tiles, sms), std::max(1, q.k_tiles / 8));
  q.grid = tiles * q.splits;
  q.units = q.grid;
  return q;
}

template <Gather G, Epilogue E>
void launch_wgmma(GatherParams p, const GatherPlan& q, void* workspace, cudaStream_t stream) {
  if (q.grid == 0) return;
  bind_split_workspace(p, q, workspace);
  void* args[] = {&p};
  CUDA_CHECK(cudaLaunchKernel(wgmma_kernel_ready<G, E>(), dim3(unsigned(q.grid)), dim3(WgmmaTile::THREADS), args,
                              size_t(WgmmaTile::SMEM_BYTES), stream));
  CUDA_CHECK_LAUNCH();
}

}  // namespace wb::sparse
