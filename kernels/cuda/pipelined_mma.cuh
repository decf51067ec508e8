// Lesson 03's kernel: an Ampere-style tensor-core GEMM with
//   - a 1-D launch: block pid computes tile wb::tile_of(order, pid, ...), the
//     order (row-major, column-major, grouped with GROUP_M) chosen at run time;
//   - a STAGES-deep cp.async pipeline: the copies of the next STAGES-1 k-slices
//     are in flight while the tensor cores work on this one, and they go
//     global -> shared without occupying registers;
//   - XOR-swizzled shared tiles: the 8 rows an ldmatrix phase reads, and the 8
//     chunks a cp.async phase writes, land in 8 different 16-byte bank groups,
//     with no padding;
//   - ldmatrix + mma.sync.m16n8k16 (mma_primitives.cuh), each warp owning a
//     64 x 64 sub-tile of C in registers;
//   - a fused epilogue: the activation is applied to the fp32 accumulator, the
//     fp16 tile is staged through shared memory and written with 16-byte stores.
//
// Two paths, picked per launch:
//   fast    K % 8 == 0, N % 8 == 0 and 16-byte aligned pointers: every 16-byte
//           chunk of a row is either wholly inside the matrix or wholly outside,
//           so tails are cp.async with src-size 0 (zero fill) and masked 16-byte stores.
//   general anything else: the same pipeline, but each chunk is gathered one fp16
//           at a time with synchronous loads (zeros outside) and stored one
//           element at a time. Correct for any M, N, K >= 1; slower.
//
// launch_pipelined_gemm / pipelined_gemm_config are the entry points other lessons
// reuse (lesson 04 falls back to them off Hopper).
#pragma once

#include <cuda_fp16.h>

#include <cstdint>
#include <string>

#include "cuda/common.cuh"
#include "cuda/mma_primitives.cuh"
#include "harness/harness.cuh"
#include "records/records.hpp"
#include "schedule/activation.hpp"
#include "schedule/tile_order.hpp"
#include "schedule/trace_record.hpp"

namespace wb {

template <int BLOCK_M_, int BLOCK_N_, int BLOCK_K_, int WARPS_M_, int WARPS_N_, int STAGES_, int MIN_BLOCKS_PER_SM_ = 1>
struct PipelinedShape {
  static constexpr int BLOCK_M = BLOCK_M_;  // <- output rows per block
  static constexpr int BLOCK_N = BLOCK_N_;  // <- output columns per block
  static constexpr int BLOCK_K = BLOCK_K_;  // <- k depth of one pipeline stage
  static constexpr int WARPS_M = WARPS_M_;  // <- warps down the block tile
  static constexpr int WARPS_N = WARPS_N_;  // <- warps across it
  static constexpr int STAGES = STAGES_;    // <- k-slices resident in shared memory at once
  static constexpr int MIN_BLOCKS_PER_SM = MIN_BLOCKS_PER_SM_;  // <- caps registers so this many blocks fit an SM
  static constexpr int THREADS = WARPS_M * WARPS_N * 32;
  static constexpr int WARP_M = BLOCK_M / WARPS_M;  // the warp tile, (WARP_M, WARP_N)
  static constexpr int WARP_N = BLOCK_N / WARPS_N;
  static constexpr int MMAS_M = WARP_M / 16;        // m16n8k16 tiles per warp tile
  static constexpr int MMAS_N = WARP_N / 8;
  static constexpr int A_STAGE_HALVES = BLOCK_M * BLOCK_K;  // (BLOCK_M, BLOCK_K), swizzled
  static constexpr int B_STAGE_HALVES = BLOCK_K * BLOCK_N;  // (BLOCK_K, BLOCK_N), swizzled
  static constexpr int PIPELINE_BYTES = STAGES * (A_STAGE_HALVES + B_STAGE_HALVES) * 2;
  static constexpr int C_LD = BLOCK_N + 8;  // padded fp16 staging rows: conflict-free fragment writes
  static constexpr int EPILOGUE_BYTES = BLOCK_M * C_LD * 2;
  static constexpr int SMEM_BYTES = PIPELINE_BYTES > EPILOGUE_BYTES ? PIPELINE_BYTES : EPILOGUE_BYTES;
  static constexpr int A_CHUNKS_PER_THREAD = A_STAGE_HALVES / 8 / THREADS;
  static constexpr int B_CHUNKS_PER_THREAD = B_STAGE_HALVES / 8 / THREADS;
  static constexpr int C_CHUNKS_PER_THREAD = BLOCK_M * BLOCK_N / 8 / THREADS;

  // Preconditions
  static_assert(BLOCK_M % WARPS_M == 0 && BLOCK_N % WARPS_N == 0, "warps must tile the block tile evenly");
  static_assert(WARP_M % 16 == 0, "a warp tile's height must be a whole number of 16-row mma tiles");
  static_assert(WARP_N % 16 == 0, "a warp tile's width must be a whole number of 16-column ldmatrix.x4.trans loads");
  static_assert(WARP_N <= 64, "B fragments are addressed within one 8-chunk swizzle period (WARP_N <= 64)");
  static_assert(BLOCK_K % 16 == 0, "BLOCK_K must be a whole number of 16-deep mma steps");
  static_assert(BLOCK_K == 32 || BLOCK_K % 64 == 0, "the A swizzle handles 64-byte rows or multiples of 128 bytes");
  static_assert(BLOCK_N % 64 == 0, "the B swizzle needs rows of a multiple of 128 bytes (BLOCK_N % 64 == 0)");
  static_assert(A_STAGE_HALVES % (8 * THREADS) == 0, "the A tile's 16-byte chunks must split evenly over the threads");
  static_assert(B_STAGE_HALVES % (8 * THREADS) == 0, "the B tile's 16-byte chunks must split evenly over the threads");
  static_assert((BLOCK_M * BLOCK_N / 8) % THREADS == 0, "the C tile's 16-byte chunks must split evenly over the threads");
  static_assert(STAGES >= 2, "a pipeline needs at least two stages");
  static_assert(SMEM_BYTES <= 227 * 1024, "the shared tiles must fit in one SM's shared memory");
};

// The lesson's configuration: 128 x 256 x 64, 8 warps of 64 x 64, 3 stages
// (144 KiB of shared memory, one block per SM at about 240 registers a thread).
// Measured on an H100 at 4096^3, it beat 128x256x32 with 4 stages by 17% (half
// the barriers per unit of k) and 128x128x32 with two blocks per SM by 14%.
using DefaultPipelinedShape = PipelinedShape<128, 256, 64, 2, 4, 3>;

// Offset (in halves) of 16-byte chunk `chunk` of row `row` in a swizzled
// (rows, COLS) fp16 tile. The chunk index is XORed with bits of the row so that
// eight consecutive rows at the same logical chunk fall in eight distinct
// 16-byte bank groups (a 128-byte bank window holds 8 chunks):
//   rows of >= 128 bytes: chunk ^ (row % 8)
//   rows of 64 bytes (two rows per window): chunk ^ ((row / 2) % 4)
template <int COLS>
__device__ __forceinline__ int swizzled_offset(int row, int chunk) {
  constexpr int CHUNKS_PER_ROW = COLS / 8;
  static_assert(CHUNKS_PER_ROW % 8 == 0 || CHUNKS_PER_ROW == 4, "swizzle defined for 64-byte or 128n-byte rows");
  if constexpr (CHUNKS_PER_ROW % 8 == 0) {
    return row * COLS + ((chunk ^ (row & 7)) * 8);
  } else {
    return row * COLS + ((chunk ^ ((row >> 1) & 3)) * 8);
  }
}

// 8 halves at p of which the first `valid` exist; zeros for the rest.
__device__ __forceinline__ uint4 gather_chunk_masked(const __half* p, int valid) {
  union {
    uint4 v;
    __half h[8];
  } out;
#pragma unroll
  for (int j = 0; j < 8; ++j) out.h[j] = j < valid ? p[j] : __float2half(0.0f);
  return out.v;
}

template <class S, Activation ACT, bool ALIGNED16>
__global__ void __launch_bounds__(S::THREADS, S::MIN_BLOCKS_PER_SM)
    pipelined_gemm_kernel(const __half* __restrict__ a, const __half* __restrict__ b, __half* __restrict__ c, int m,
                          int n, int k, TileOrder order, int group_m, TraceRecord* trace) {
  extern __shared__ __align__(128) unsigned char smem[];
  __half* a_stages = reinterpret_cast<__half*>(smem);                               // STAGES x (BLOCK_M, BLOCK_K)
  __half* b_stages = a_stages + S::STAGES * S::A_STAGE_HALVES;                       // STAGES x (BLOCK_K, BLOCK_N)
  __half* c_stage = reinterpret_cast<__half*>(smem);  // (BLOCK_M, C_LD), reuses the pipeline's space at the end

  const uint64_t t0 = trace_start(trace);
  const int pid = blockIdx.x;
  const int tiles_m = ceil_div(m, S::BLOCK_M);
  const int tiles_n = ceil_div(n, S::BLOCK_N);
  const TileCoord tile = tile_of(order, pid, tiles_m, tiles_n, group_m);
  const int m0 = tile.m * S::BLOCK_M;
  const int n0 = tile.n * S::BLOCK_N;
  const int lane = threadIdx.x % 32;
  const int warp = threadIdx.x / 32;
  const int warp_row0 = (warp / S::WARPS_N) * S::WARP_M;  // the warp tile's origin inside the block tile
  const int warp_col0 = (warp % S::WARPS_N) * S::WARP_N;
  const int k_tiles = ceil_div(k, S::BLOCK_K);

  // ---- global -> shared, one k-slice into one stage
  // Each thread copies the same chunk positions every slice: chunk index
  // threadIdx.x + i * THREADS, row = index / chunks-per-row.
  auto load_slice = [&](int stage, int k_tile) {
    const int k0 = k_tile * S::BLOCK_K;
    __half* a_stage = a_stages + stage * S::A_STAGE_HALVES;
    __half* b_stage = b_stages + stage * S::B_STAGE_HALVES;
    constexpr int A_CHUNKS_PER_ROW = S::BLOCK_K / 8;
    constexpr int B_CHUNKS_PER_ROW = S::BLOCK_N / 8;
#pragma unroll
    for (int i = 0; i < S::A_CHUNKS_PER_THREAD; ++i) {
      const int index = int(threadIdx.x) + i * S::THREADS;
      const int r = index / A_CHUNKS_PER_ROW, ch = index % A_CHUNKS_PER_ROW;
      const int gr = m0 + r, gc = k0 + ch * 8;
      __half* dst = a_stage + swizzled_offset<S::BLOCK_K>(r, ch);
      const __half* src = a + int64_t(gr) * k + gc;
      if constexpr (ALIGNED16) {
        const bool inside = gr < m && gc < k;  // k % 8 == 0: a chunk is wholly in or wholly out
        cp_async_16_zero_fill(shared_address(dst), inside ? src : a, inside ? 16 : 0);
      } else {
        *reinterpret_cast<uint4*>(dst) = gather_chunk_masked(src, gr < m ? k - gc : 0);
      }
    }
#pragma unroll
    for (int i = 0; i < S::B_CHUNKS_PER_THREAD; ++i) {
      const int index = int(threadIdx.x) + i * S::THREADS;
      const int r = index / B_CHUNKS_PER_ROW, ch = index % B_CHUNKS_PER_ROW;
      const int gr = k0 + r, gc = n0 + ch * 8;
      __half* dst = b_stage + swizzled_offset<S::BLOCK_N>(r, ch);
      const __half* src = b + int64_t(gr) * n + gc;
      if constexpr (ALIGNED16) {
        const bool inside = gr < k && gc < n;  // n % 8 == 0
        cp_async_16_zero_fill(shared_address(dst), inside ? src : b, inside ? 16 : 0);
      } else {
        *reinterpret_cast<uint4*>(dst) = gather_chunk_masked(src, gr < k ? n - gc : 0);
      }
    }
  };

  float acc[S::MMAS_M][S::MMAS_N][4];  // (WARP_M, WARP_N) in mma C-fragment layout
#pragma unroll
  for (int i = 0; i < S::MMAS_M; ++i)
#pragma unroll
    for (int j = 0; j < S::MMAS_N; ++j)
#pragma unroll
      for (int e = 0; e < 4; ++e) acc[i][j][e] = 0.0f;

  // ---- acc += A slice * B slice for this warp's tile
  auto multiply_slice = [&](int stage) {
    const uint32_t a_base = shared_address(a_stages + stage * S::A_STAGE_HALVES);
    const uint32_t b_base = shared_address(b_stages + stage * S::B_STAGE_HALVES);
#pragma unroll
    for (int kk = 0; kk < S::BLOCK_K; kk += 16) {
      uint32_t a_frag[S::MMAS_M][4];
      uint32_t b_frag[S::MMAS_N][2];
      // A: lanes 0-15 address rows 0-15 at chunk kk/8, lanes 16-31 the next chunk.
#pragma unroll
      for (int i = 0; i < S::MMAS_M; ++i) {
        const int row = warp_row0 + i * 16 + (lane % 16);
        const int chunk = kk / 8 + lane / 16;
        ldmatrix_x4(a_frag[i], a_base + 2 * swizzled_offset<S::BLOCK_K>(row, chunk));
      }
      // B: lanes 0-15 address k rows kk..kk+15 at one 8-column chunk, lanes 16-31
      // the next chunk; .trans yields the "col" operand for two n8 tiles.
#pragma unroll
      for (int j = 0; j < S::MMAS_N; j += 2) {
        const int row = kk + (lane % 16);
        const int chunk = (warp_col0 + j * 8) / 8 + lane / 16;
        uint32_t r[4];
        ldmatrix_x4_trans(r, b_base + 2 * swizzled_offset<S::BLOCK_N>(row, chunk));
        b_frag[j][0] = r[0];
        b_frag[j][1] = r[1];
        b_frag[j + 1][0] = r[2];
        b_frag[j + 1][1] = r[3];
      }
#pragma unroll
      for (int i = 0; i < S::MMAS_M; ++i)
#pragma unroll
        for (int j = 0; j < S::MMAS_N; ++j) mma_m16n8k16_f32(acc[i][j], a_frag[i], b_frag[j]);
    }
  };

  // ---- the pipeline
  // Commit group g holds k-slice g (empty groups past the end keep the count
  // regular). Before multiplying slice t we wait until at most STAGES-2 groups are
  // pending, i.e. slices 0..t have landed; the barrier then makes every thread's
  // copies visible and proves slice t-1's stage is no longer being read, so it
  // can be refilled with slice t + STAGES - 1.
#pragma unroll
  for (int s = 0; s < S::STAGES - 1; ++s) {
    if (s < k_tiles) load_slice(s, s);
    cp_async_commit_group();
  }
  for (int t = 0; t < k_tiles; ++t) {
    cp_async_wait_group<S::STAGES - 2>();
    __syncthreads();
    const int refill = t + S::STAGES - 1;
    if (refill < k_tiles) load_slice(refill % S::STAGES, refill);
    cp_async_commit_group();
    multiply_slice(t % S::STAGES);
  }
  cp_async_wait_group<0>();
  __syncthreads();  // every warp is done with the pipeline's shared memory

  // ---- epilogue: activation on fp32, fp16 into the staging tile
  const int group = lane / 4, pair = lane % 4;
#pragma unroll
  for (int i = 0; i < S::MMAS_M; ++i) {
#pragma unroll
    for (int j = 0; j < S::MMAS_N; ++j) {
      const int row = warp_row0 + i * 16 + group;
      const int col = warp_col0 + j * 8 + pair * 2;
      const __half2 top = __floats2half2_rn(apply_activation<float>(ACT, acc[i][j][0]),
                                            apply_activation<float>(ACT, acc[i][j][1]));
      const __half2 bottom = __floats2half2_rn(apply_activation<float>(ACT, acc[i][j][2]),
                                               apply_activation<float>(ACT, acc[i][j][3]));
      *reinterpret_cast<__half2*>(c_stage + row * S::C_LD + col) = top;
      *reinterpret_cast<__half2*>(c_stage + (row + 8) * S::C_LD + col) = bottom;
    }
  }
  __syncthreads();

  // ---- staging tile -> C: consecutive threads take consecutive 16-byte chunks of a row
  constexpr int C_CHUNKS_PER_ROW = S::BLOCK_N / 8;
#pragma unroll
  for (int i = 0; i < S::C_CHUNKS_PER_THREAD; ++i) {
    const int index = int(threadIdx.x) + i * S::THREADS;
    const int r = index / C_CHUNKS_PER_ROW, cc = (index % C_CHUNKS_PER_ROW) * 8;
    const int gr = m0 + r, gc = n0 + cc;
    const uint4 v = *reinterpret_cast<const uint4*>(c_stage + r * S::C_LD + cc);
    if (gr >= m) continue;
    __half* dst = c + int64_t(gr) * n + gc;
    if constexpr (ALIGNED16) {
      if (gc < n) *reinterpret_cast<uint4*>(dst) = v;  // n % 8 == 0: wholly in or out
    } else {
      const __half* h = reinterpret_cast<const __half*>(&v);
#pragma unroll
      for (int j = 0; j < 8; ++j)
        if (gc + j < n) dst[j] = h[j];
    }
  }

  trace_end(trace, pid, tile.m, tile.n, 0, k, t0);
}

// ---------------------------------------------------------------- launchers

// True when the 16-byte cp.async path applies to these operands.
inline bool pipelined_gemm_fast_path(const GemmArgs& args) {
  const auto aligned = [](const void* p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; };
  return args.k % 8 == 0 && args.n % 8 == 0 && aligned(args.a) && aligned(args.b) && aligned(args.c);
}

// The kernel instance for a shape, activation and path, with its shared-memory
// limit raised once (above 48 KiB needs an opt-in per kernel).
template <class S, Activation ACT, bool ALIGNED16>
const void* pipelined_gemm_kernel_ready() {
  static const bool configured = [] {
    CUDA_CHECK(cudaFuncSetAttribute(pipelined_gemm_kernel<S, ACT, ALIGNED16>,
                                    cudaFuncAttributeMaxDynamicSharedMemorySize, S::SMEM_BYTES));
    return true;
  }();
  (void)configured;
  return reinterpret_cast<const void*>(&pipelined_gemm_kernel<S, ACT, ALIGNED16>);
}

template <class S, Activation ACT, bool ALIGNED16>
void launch_pipelined_gemm_instance(const GemmArgs& args, TileOrder order, int group_m, cudaStream_t stream) {
  pipelined_gemm_kernel_ready<S, ACT, ALIGNED16>();
  const int64_t blocks = int64_t(ceil_div(args.m, S::BLOCK_M)) * ceil_div(args.n, S::BLOCK_N);
  pipelined_gemm_kernel<S, ACT, ALIGNED16><<<dim3(unsigned(blocks)), S::THREADS, S::SMEM_BYTES, stream>>>(
      args.a, args.b, args.c, args.m, args.n, args.k, order, group_m, args.trace);
  CUDA_CHECK_LAUNCH();
}

template <class S, Activation ACT>
void launch_pipelined_gemm_path(const GemmArgs& args, TileOrder order, int group_m, cudaStream_t stream) {
  if (pipelined_gemm_fast_path(args)) {
    launch_pipelined_gemm_instance<S, ACT, true>(args, order, group_m, stream);
  } else {
    launch_pipelined_gemm_instance<S, ACT, false>(args, order, group_m, stream);
  }
}

// Any tile shape S; the activation is a template argument of the kernel, so the
// epilogue compiles to exactly one activation with no branch.
template <class S>
void launch_pipelined_gemm_shaped(const GemmArgs& args, TileOrder order, int group_m, Activation act,
                                  cudaStream_t stream) {
  group_m = group_m < 1 ? 1 : group_m;
  switch (act) {
    case Activation::none: launch_pipelined_gemm_path<S, Activation::none>(args, order, group_m, stream); break;
    case Activation::relu: launch_pipelined_gemm_path<S, Activation::relu>(args, order, group_m, stream); break;
    case Activation::leaky_relu:
      launch_pipelined_gemm_path<S, Activation::leaky_relu>(args, order, group_m, stream);
      break;
    case Activation::gelu: launch_pipelined_gemm_path<S, Activation::gelu>(args, order, group_m, stream); break;
    case Activation::silu: launch_pipelined_gemm_path<S, Activation::silu>(args, order, group_m, stream); break;
  }
}

template <class S>
KernelConfig pipelined_gemm_config_shaped(const GemmShape& s, TileOrder order, int group_m) {
  KernelConfig config = tile_grid_config(s, S::BLOCK_M, S::BLOCK_N, S::BLOCK_K, S::THREADS,
                                         pipelined_gemm_kernel_ready<S, Activation::none, true>(), S::SMEM_BYTES,
                                         S::STAGES);
  config.order = tile_order_name(order);
  config.group_m = order == TileOrder::grouped ? (group_m < 1 ? 1 : group_m) : 1;
  return config;
}

// C = act(A * B) with the lesson's tile configuration.
inline void launch_pipelined_gemm(const GemmArgs& args, TileOrder order, int group_m, Activation act,
                                  cudaStream_t stream) {
  launch_pipelined_gemm_shaped<DefaultPipelinedShape>(args, order, group_m, act, stream);
}

inline KernelConfig pipelined_gemm_config(const GemmShape& s, TileOrder order, int group_m) {
  return pipelined_gemm_config_shaped<DefaultPipelinedShape>(s, order, group_m);
}

}  // namespace wb
