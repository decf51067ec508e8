// Lesson 06, step 6: a kernel for M <= 8 that reads every weight byte once,
// as fast as the memory delivers it. No tensor cores: at M <= 8 a thread's
// 8 x M multiply-adds per 16 bytes of B keep the FMA pipes well under their
// peak, and the 16 x 8 x 16 tensor-core tile would be half empty or worse.
//
// A block of 8 warps takes 256 columns of B (each lane one 16-byte chunk of a
// row: a warp reads 512 contiguous bytes) and a range of K: warp w takes rows
// in groups of 4, groups w, w + 8, w + 16, ..., four groups in flight (two at
// M > 4), so each thread has up to sixteen 16-byte loads outstanding. The
// blocks of one split run together and read whole rows of B between them. The
// weights are loaded with the streaming hint (ld.global.cs: evict first, they are read once); A, which
// every block reads, stays cached. The warps' sums meet in shared memory and
// are added in a fixed order. Across blocks, the K ranges of a column block
// are added by whichever block finishes LAST: each writes its fp32 partial to
// the workspace and counts itself in with an atomic; the one that sees the
// count complete adds all the partials, in split order, and stores fp16. One
// launch, no waiting on another block, and deterministic.
#pragma once

#include <cuda_fp16.h>

#include <algorithm>
#include <string>

#include "common/check.cuh"
#include "common/gemm.cuh"
#include "common/trace.cuh"
#include "models/wave_model.hpp"
#include "schedule/split_k.hpp"

namespace wb::splitk {

constexpr int kStreamMaxM = 8;
constexpr int kStreamWarps = 8;
constexpr int kStreamThreads = kStreamWarps * 32;
constexpr int kStreamCols = 256;  // 32 lanes x 8 columns
constexpr int kStreamGroup = 4;   // k rows a warp takes at once: one 8-byte load per row of A
// Groups in flight per warp: 4 (sixteen 16-byte loads per thread) up to M = 4;
// at M = 8 the registers for A and the accumulators leave room for 2.
template <int M>
constexpr int stream_unroll() {
  return M <= 4 ? 4 : 2;
}
constexpr int kStreamRowsPerStep = kStreamWarps * kStreamGroup;  // 32: the split's unit of K
// Units the wave model gives each SM: two, so that one block's sums and
// reduction overlap the other's loads.
constexpr int kStreamBlocksPerSm = 2;

template <int M>
constexpr int streaming_smem_bytes() {
  return kStreamWarps * M * kStreamCols * int(sizeof(float));
}

template <int M>
__global__ void __launch_bounds__(kStreamThreads)
    streaming_gemv_kernel(const __half* __restrict__ a, const __half* __restrict__ b, __half* __restrict__ c, int n,
                          int k, int splits, float* __restrict__ partials, unsigned* __restrict__ counters,
                          TraceRecord* trace) {
  extern __shared__ float sums[];  // [warp][M][256]
  __shared__ bool last_block;
  const uint64_t t0 = trace_start(trace);
  const int tid = int(threadIdx.x), lane = tid % 32, warp = tid / 32;
  // Blocks of one split are launched together: the blocks running at a moment
  // read whole rows of B between them, not 512-byte pieces of many rows.
  const int col_blocks = int(gridDim.x) / splits;
  const int col_block = int(blockIdx.x) % col_blocks, split = int(blockIdx.x) / col_blocks;
  constexpr int kStreamUnroll = stream_unroll<M>();
  const int col = col_block * kStreamCols + lane * 8;
  const bool col_inside = col < n;  // n % 8 == 0: a chunk is wholly in or out
  const int groups = k / kStreamGroup;
  const int g_begin = split_k_begin(groups, splits, split), g_end = split_k_begin(groups, splits, split + 1);

  float acc[M][8];
#pragma unroll
  for (int m = 0; m < M; ++m)
#pragma unroll
    for (int j = 0; j < 8; ++j) acc[m][j] = 0.0f;

  for (int g0 = g_begin + warp; g0 < g_end; g0 += kStreamWarps * kStreamUnroll) {
    uint4 bv[kStreamUnroll][kStreamGroup];
    uint2 av[kStreamUnroll][M];
#pragma unroll
    for (int u = 0; u < kStreamUnroll; ++u) {
      const int g = g0 + u * kStreamWarps;
      const bool inside = g < g_end && col_inside;
#pragma unroll
      for (int r = 0; r < kStreamGroup; ++r)
        bv[u][r] = inside ? __ldcs(reinterpret_cast<const uint4*>(b + int64_t(g * kStreamGroup + r) * n + col))
                          : make_uint4(0, 0, 0, 0);
#pragma unroll
      for (int m = 0; m < M; ++m)
        av[u][m] = inside ? __ldg(reinterpret_cast<const uint2*>(a + int64_t(m) * k + g * kStreamGroup))
                          : make_uint2(0, 0);
    }
#pragma unroll
    for (int u = 0; u < kStreamUnroll; ++u)
#pragma unroll
      for (int r = 0; r < kStreamGroup; ++r) {
        const __half2* bh = reinterpret_cast<const __half2*>(&bv[u][r]);
        float bf[8];
#pragma unroll
        for (int j = 0; j < 4; ++j) {
          const float2 f = __half22float2(bh[j]);
          bf[2 * j] = f.x;
          bf[2 * j + 1] = f.y;
        }
#pragma unroll
        for (int m = 0; m < M; ++m) {
          const float am = __half2float(reinterpret_cast<const __half*>(&av[u][m])[r]);
#pragma unroll
          for (int j = 0; j < 8; ++j) acc[m][j] = fmaf(am, bf[j], acc[m][j]);
        }
      }
  }

  // The warps' sums, added in warp order: thread t then owns column t of the block.
#pragma unroll
  for (int m = 0; m < M; ++m) {
    float4* dst = reinterpret_cast<float4*>(sums + (warp * M + m) * kStreamCols + lane * 8);
    dst[0] = make_float4(acc[m][0], acc[m][1], acc[m][2], acc[m][3]);
    dst[1] = make_float4(acc[m][4], acc[m][5], acc[m][6], acc[m][7]);
  }
  __syncthreads();
  const int out_col = col_block * kStreamCols + tid;
  float out[M];
#pragma unroll
  for (int m = 0; m < M; ++m) {
    out[m] = 0.0f;
#pragma unroll
    for (int w = 0; w < kStreamWarps; ++w) out[m] += sums[(w * M + m) * kStreamCols + tid];
  }

  if (splits == 1) {
    if (out_col < n)
#pragma unroll
      for (int m = 0; m < M; ++m) c[int64_t(m) * n + out_col] = __float2half_rn(out[m]);
  } else {
    // partials: [split][M][N]
    if (out_col < n)
#pragma unroll
      for (int m = 0; m < M; ++m) partials[(int64_t(split) * M + m) * n + out_col] = out[m];
    __threadfence();  // this thread's partials are visible before the count says so
    __syncthreads();
    if (tid == 0) last_block = atomicAdd(counters + col_block, 1u) == unsigned(splits - 1);
    __syncthreads();
    if (last_block) {
      __threadfence();
      if (out_col < n)
#pragma unroll
        for (int m = 0; m < M; ++m) {
          float sum = 0.0f;
          for (int s = 0; s < splits; ++s) sum += __ldcg(partials + (int64_t(s) * M + m) * n + out_col);
          c[int64_t(m) * n + out_col] = __float2half_rn(sum);
        }
      if (tid == 0) counters[col_block] = 0;  // down again for the next launch
    }
  }
  trace_end(trace, int(blockIdx.x), 0, col_block, g_begin * kStreamGroup, g_end * kStreamGroup, t0);
}

// ---------------------------------------------------------------- host side

// Why the kernel cannot take this shape ("" when it can).
inline std::string streaming_skip_reason(const GemmShape& s) {
  if (s.m > kStreamMaxM) return "made for M <= " + std::to_string(kStreamMaxM) + " (M is " + std::to_string(s.m) + ")";
  if (s.n % 8 != 0 || s.k % 8 != 0) return "needs N and K multiples of 8 (16-byte loads of B, 8-byte loads of A)";
  return "";
}

struct StreamingPlanned {
  int col_blocks = 0, k_steps = 0, blocks_per_sm = 0, slots = 0;
  int wanted = 1, splits = 1;
  int smem = 0;
  int64_t grid = 0;
};

template <int M>
const void* streaming_kernel_ready() {
  static const bool configured = [] {
    CUDA_CHECK(cudaFuncSetAttribute(streaming_gemv_kernel<M>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                    streaming_smem_bytes<M>()));
    return true;
  }();
  (void)configured;
  return reinterpret_cast<const void*>(&streaming_gemv_kernel<M>);
}

template <int M>
int streaming_blocks_per_sm() {
  static const int resident =
      std::max(1, blocks_per_sm(streaming_kernel_ready<M>(), kStreamThreads, streaming_smem_bytes<M>()));
  return resident;
}

// Calls f(std::integral_constant<int, M>) for the run's M (1..8).
template <class F>
void with_m(int m, F&& f) {
  switch (m) {
    case 1: f(std::integral_constant<int, 1>()); break;
    case 2: f(std::integral_constant<int, 2>()); break;
    case 3: f(std::integral_constant<int, 3>()); break;
    case 4: f(std::integral_constant<int, 4>()); break;
    case 5: f(std::integral_constant<int, 5>()); break;
    case 6: f(std::integral_constant<int, 6>()); break;
    case 7: f(std::integral_constant<int, 7>()); break;
    case 8: f(std::integral_constant<int, 8>()); break;
    default: throw CudaError("the streaming kernel takes M from 1 to 8, not " + std::to_string(m));
  }
}

inline StreamingPlanned plan_streaming(const GemmShape& s, int requested) {
  StreamingPlanned q;
  q.col_blocks = ceil_div(s.n, kStreamCols);
  q.k_steps = std::max(1, s.k / kStreamRowsPerStep);  // every warp gets at least one group of 4 rows
  with_m(s.m, [&](auto mc) {
    q.blocks_per_sm = streaming_blocks_per_sm<decltype(mc)::value>();
    q.smem = streaming_smem_bytes<decltype(mc)::value>();
  });
  static const int sms = sm_count();
  q.slots = sms * std::min(q.blocks_per_sm, kStreamBlocksPerSm);
  q.wanted = requested > 0 ? requested : split_k_for_waves(q.col_blocks, q.k_steps, q.slots);
  q.splits = clamp_split_k(q.wanted, q.k_steps);
  q.grid = int64_t(q.col_blocks) * q.splits;
  return q;
}

// The partials (splits x M x N fp32) and a counter per column block.
inline size_t streaming_workspace_bytes(const GemmShape& s, int requested) {
  if (!streaming_skip_reason(s).empty()) return 0;
  const StreamingPlanned q = plan_streaming(s, requested);
  if (q.splits == 1) return 0;
  return size_t(q.splits) * s.m * s.n * sizeof(float) + size_t(q.col_blocks) * sizeof(unsigned);
}

inline KernelConfig streaming_config(const GemmShape& s, int requested) {
  const StreamingPlanned q = plan_streaming(s, requested);
  KernelConfig c;
  c.block_m = kStreamMaxM;
  c.block_n = kStreamCols;
  c.block_k = kStreamRowsPerStep;
  c.threads = kStreamThreads;
  c.split_k = q.splits;
  c.tiles_m = 1;
  c.tiles_n = q.col_blocks;
  c.grid_blocks = q.grid;
  c.work_units = q.grid;
  c.blocks_per_sm = q.blocks_per_sm;
  c.smem_bytes = q.smem;
  return c;
}

inline void launch_streaming(const GemmArgs& g, int requested, cudaStream_t stream) {
  const GemmShape s{g.m, g.n, g.k};
  const std::string why = streaming_skip_reason(s);
  if (!why.empty()) throw CudaError("streaming kernel: " + why);
  const StreamingPlanned q = plan_streaming(s, requested);
  float* partials = nullptr;
  unsigned* counters = nullptr;
  if (q.splits > 1) {
    const size_t need = streaming_workspace_bytes(s, requested);
    if (g.workspace == nullptr || g.workspace_bytes < need)
      throw CudaError("the streaming kernel needs a workspace of " + std::to_string(need) + " bytes");
    partials = static_cast<float*>(g.workspace);
    counters = reinterpret_cast<unsigned*>(partials + size_t(q.splits) * g.m * g.n);
  }
  with_m(g.m, [&](auto mc) {
    constexpr int M = decltype(mc)::value;
    streaming_kernel_ready<M>();
    streaming_gemv_kernel<M><<<unsigned(q.grid), kStreamThreads, streaming_smem_bytes<M>(), stream>>>(
        g.a, g.b, g.c, g.n, g.k, q.splits, partials, counters, g.trace);
  });
  CUDA_CHECK_LAUNCH();
}

}  // namespace wb::splitk
