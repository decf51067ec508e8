// Lesson 03's kernel: an Ampere-style tensor-core GEMM with
//   - a 1-D launch: block pid computes tile wb::tile_of(order, pid, ...), the
//     order (row-major, column-major, grouped with GROUP_M) chosen at run time;
//   - a STAGES-deep cp.async pipeline: the copies of the next k-slices are in
//     flight while the tensor cores work on this one, and they go
//     global -> shared without occupying registers;
//   - XOR-swizzled shared tiles: the 8 rows an ldmatrix phase reads, and the 8
//     chunks a cp.async phase writes, land in 8 different 16-byte bank groups,
//     with no padding;
//   - ldmatrix + mma.sync.m16n8k16 (common/mma.cuh), each warp owning a
//     64 x 64 sub-tile of C in registers, with the fragments of the next k16
//     step loaded while the mma of this one run (two fragment buffers), one
//     barrier per k-slice, and the slice's copies spread between the mma;
//   - a fused epilogue: the fp16 tile is staged through shared memory, and the
//     activation is applied on its way out, 8 values per 16-byte chunk in half2
//     arithmetic (activation_half2.cuh), then written with 16-byte stores.
//
// Two paths, picked per launch:
//   fast    K % 8 == 0, N % 8 == 0 and 16-byte aligned pointers: every 16-byte
//           chunk of a row is either wholly inside the matrix or wholly outside,
//           so tails are cp.async with src-size 0 (zero fill) and masked 16-byte stores.
//   general anything else: the plain pipeline (no fragment overlap: it would
//           cost registers and there is nothing asynchronous to overlap), each
//           chunk gathered one fp16 at a time with synchronous loads (zeros
//           outside) and stored one element at a time. Correct for any
//           M, N, K >= 1; slower.
//
// launch_pipelined_gemm / pipelined_gemm_config are the entry points other lessons
// reuse: lesson 04 falls back to them when K or N is not a multiple of 8 (TMA
// needs row strides of 16-byte multiples).
#pragma once

#include <cuda_fp16.h>

#include <cstdint>
#include <string>

#include "common/activation_half2.cuh"
#include "common/check.cuh"
#include "common/gemm.cuh"
#include "common/mma.cuh"
#include "common/trace.cuh"
#include "records/records.hpp"
#include "schedule/activation.hpp"
#include "schedule/tile_order.hpp"
#include "schedule/trace_record.hpp"

namespace wb {

template <int BLOCK_M_, int BLOCK_N_, int BLOCK_K_, int WARPS_M_, int WARPS_N_, int STAGES_, int MIN_BLOCKS_PER_SM_ = 1,
          bool OVERLAPPED_ = true>
struct PipelinedShape {
  static constexpr int BLOCK_M = BLOCK_M_;  // <- output rows per block
  static constexpr int BLOCK_N = BLOCK_N_;  // <- output columns per block
  static constexpr int BLOCK_K = BLOCK_K_;  // <- k depth of one pipeline stage
  static constexpr int WARPS_M = WARPS_M_;  // <- warps down the block tile
  static constexpr int WARPS_N = WARPS_N_;  // <- warps across it
  static constexpr int STAGES = STAGES_;    // <- k-slices resident in shared memory at once
  static constexpr int MIN_BLOCKS_PER_SM = MIN_BLOCKS_PER_SM_;  // <- caps registers so this many blocks fit an SM
  static constexpr bool OVERLAPPED = OVERLAPPED_;  // <- next k16 step's fragments in flight during this one's mma
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
  static_assert(WARP_N == 16 || WARP_N == 32 || WARP_N == 64,
                "B fragments are addressed within one 8-chunk swizzle period, by XOR (WARP_N 16, 32 or 64)");
  static_assert(BLOCK_K % 32 == 0, "BLOCK_K must be an even number of 16-deep mma steps (two fragment buffers)");
  static_assert(BLOCK_K == 32 || BLOCK_K % 64 == 0, "the A swizzle handles 64-byte rows or multiples of 128 bytes");
  static_assert(BLOCK_N % 64 == 0, "the B swizzle needs rows of a multiple of 128 bytes (BLOCK_N % 64 == 0)");
  static_assert(A_STAGE_HALVES % (8 * THREADS) == 0, "the A tile's 16-byte chunks must split evenly over the threads");
  static_assert(B_STAGE_HALVES % (8 * THREADS) == 0, "the B tile's 16-byte chunks must split evenly over the threads");
  static_assert((BLOCK_M * BLOCK_N / 8) % THREADS == 0, "the C tile's 16-byte chunks must split evenly over the threads");
  static_assert(STAGES >= 2, "a pipeline needs at least two stages");
  static_assert(SMEM_BYTES <= 227 * 1024, "the shared tiles must fit in one SM's shared memory");
};

// The lesson's configuration: 128 x 256 x 64, 8 warps of 64 x 64, 3 stages
// (144 KiB of shared memory, one block per SM at 255 registers a thread, no
// spills). It measured fastest of its neighbours; a fourth stage changed
// nothing, so the copies are hidden at three (docs/notes/03_pipeline_and_epilogue.md).
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

// The bits swizzled_offset XORs into the chunk index of row `row`.
template <int COLS>
__device__ __forceinline__ int swizzle_bits(int row) {
  if constexpr ((COLS / 8) % 8 == 0) {
    return row & 7;
  } else {
    return (row >> 1) & 3;
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
  // Thread t copies chunks t, t + THREADS, t + 2*THREADS, ... of each tile, so
  // its column chunk is the same for every i and its rows step by a constant:
  // one base pointer per operand, advanced by BLOCK_K each slice. `part` splits
  // a slice's copies over the K_STEPS k16 steps, so they interleave with the mma.
  constexpr int A_CHUNKS_PER_ROW = S::BLOCK_K / 8;
  constexpr int B_CHUNKS_PER_ROW = S::BLOCK_N / 8;
  constexpr int A_ROWS_PER_PASS = S::THREADS / A_CHUNKS_PER_ROW;  // A rows one pass of the threads covers
  constexpr int B_ROWS_PER_PASS = S::THREADS / B_CHUNKS_PER_ROW;
  static_assert(S::THREADS % A_CHUNKS_PER_ROW == 0 && S::THREADS % B_CHUNKS_PER_ROW == 0,
                "each thread's chunk column must stay fixed from pass to pass");
  const int a_row = int(threadIdx.x) / A_CHUNKS_PER_ROW, a_chunk = int(threadIdx.x) % A_CHUNKS_PER_ROW;
  const int b_row = int(threadIdx.x) / B_CHUNKS_PER_ROW, b_chunk = int(threadIdx.x) % B_CHUNKS_PER_ROW;
  const __half* a_src = a + int64_t(m0 + a_row) * k + a_chunk * 8;  // chunk pass 0 of k-slice 0
  const __half* b_src = b + int64_t(b_row) * n + n0 + b_chunk * 8;
  const int64_t a_pass_stride = int64_t(A_ROWS_PER_PASS) * k;
  const int64_t b_pass_stride = int64_t(B_ROWS_PER_PASS) * n;
  // The swizzled shared offsets differ between passes by whole rows (the rows a
  // pass covers are a multiple of the swizzle period), so they are constants.
  const int a_dst0 = swizzled_offset<S::BLOCK_K>(a_row, a_chunk);
  const int b_dst0 = swizzled_offset<S::BLOCK_N>(b_row, b_chunk);
  static_assert(A_ROWS_PER_PASS % 8 == 0 && B_ROWS_PER_PASS % 8 == 0, "passes must step by whole swizzle periods");

  // A slice past the end (k_tile >= k_tiles) copies zeros and reads nothing:
  // the pipeline's refills need no branch.
  auto load_slice_part = [&](int stage, int k_tile, int part, int parts) {
    const int k0 = k_tile * S::BLOCK_K;
    const int k_end = k_tile < k_tiles ? k : 0;  // columns of A / rows of B that exist in this slice
    __half* a_stage = a_stages + stage * S::A_STAGE_HALVES;
    __half* b_stage = b_stages + stage * S::B_STAGE_HALVES;
#pragma unroll
    for (int i = 0; i < S::A_CHUNKS_PER_THREAD; ++i) {
      if (i % parts != part) continue;  // resolved at compile time: the loops are unrolled
      const int gr = m0 + a_row + i * A_ROWS_PER_PASS, gc = k0 + a_chunk * 8;
      const __half* src = a_src + i * a_pass_stride + k0;
      __half* dst = a_stage + a_dst0 + i * A_ROWS_PER_PASS * S::BLOCK_K;
      if constexpr (ALIGNED16) {
        const bool inside = gr < m && gc < k_end;  // k % 8 == 0: a chunk is wholly in or wholly out
        cp_async_16_zero_fill(shared_address(dst), inside ? src : a, inside ? 16 : 0);
      } else {
        *reinterpret_cast<uint4*>(dst) = gather_chunk_masked(src, gr < m ? k_end - gc : 0);
      }
    }
#pragma unroll
    for (int i = 0; i < S::B_CHUNKS_PER_THREAD; ++i) {
      if ((S::A_CHUNKS_PER_THREAD + i) % parts != part) continue;
      const int gr = k0 + b_row + i * B_ROWS_PER_PASS, gc = n0 + b_chunk * 8;
      const __half* src = b_src + i * b_pass_stride + int64_t(k0) * n;
      __half* dst = b_stage + b_dst0 + i * B_ROWS_PER_PASS * S::BLOCK_N;
      if constexpr (ALIGNED16) {
        const bool inside = gr < k_end && gc < n;  // n % 8 == 0
        cp_async_16_zero_fill(shared_address(dst), inside ? src : b, inside ? 16 : 0);
      } else {
        *reinterpret_cast<uint4*>(dst) = gather_chunk_masked(src, gr < k_end ? n - gc : 0);
      }
    }
  };
  auto load_slice = [&](int stage, int k_tile) { load_slice_part(stage, k_tile, 0, 1); };

  float acc[S::MMAS_M][S::MMAS_N][4];  // (WARP_M, WARP_N) in mma C-fragment layout
#pragma unroll
  for (int i = 0; i < S::MMAS_M; ++i)
#pragma unroll
    for (int j = 0; j < S::MMAS_N; ++j)
#pragma unroll
      for (int e = 0; e < 4; ++e) acc[i][j][e] = 0.0f;

  // ---- ldmatrix addresses
  // A: lanes 0-15 address rows 0-15 of a 16x16 tile at chunk kk/8, lanes 16-31
  // the next chunk. B (.trans): lanes 0-15 address k rows kk..kk+15 at one
  // 8-column chunk, lanes 16-31 the next; that yields two n8 "col" operands.
  // Every row these lanes address has the same row % 8 (the swizzle's input)
  // whatever i, j and kk are, so the swizzled chunk is a per-thread constant
  // XOR a compile-time one: per load, one LOP3 and an immediate offset.
  const int a_lane_row = warp_row0 + lane % 16;
  const int a_swz = swizzle_bits<S::BLOCK_K>(a_lane_row) ^ (lane / 16);
  const uint32_t a_lane_base = 2 * uint32_t(a_lane_row * S::BLOCK_K);
  const int b_lane_row = lane % 16;
  const int b_swz = swizzle_bits<S::BLOCK_N>(b_lane_row) ^ (lane / 16) ^ (warp_col0 / 8);
  const uint32_t b_lane_base = 2 * uint32_t(b_lane_row * S::BLOCK_N);

  // Fragments of one k16 step of this warp's tile.
  struct Fragments {
    uint32_t a[S::MMAS_M][4];
    uint32_t b[S::MMAS_N][2];
  };
  auto load_fragments = [&](Fragments& f, uint32_t a_stage_addr, uint32_t b_stage_addr, int kk) {
#pragma unroll
    for (int i = 0; i < S::MMAS_M; ++i) {
      const int chunk = (kk / 8) ^ a_swz;  // kk / 8 is even: adding lane / 16 is an XOR
      ldmatrix_x4(f.a[i], a_stage_addr + a_lane_base + 2 * (i * 16 * S::BLOCK_K + chunk * 8));
    }
#pragma unroll
    for (int j = 0; j < S::MMAS_N; j += 2) {
      const int chunk = j ^ b_swz;  // j < 8 and warp_col0 / 8 a multiple of WARP_N / 8: bits apart
      uint32_t r[4];
      ldmatrix_x4_trans(r, b_stage_addr + b_lane_base + 2 * (kk * S::BLOCK_N + chunk * 8));
      f.b[j][0] = r[0];
      f.b[j][1] = r[1];
      f.b[j + 1][0] = r[2];
      f.b[j + 1][1] = r[3];
    }
  };
  // Serpentine over j: consecutive mma share an A or a B operand.
  auto mma_fragments = [&](const Fragments& f) {
#pragma unroll
    for (int i = 0; i < S::MMAS_M; ++i)
#pragma unroll
      for (int jj = 0; jj < S::MMAS_N; ++jj) {
        const int j = i % 2 ? S::MMAS_N - 1 - jj : jj;
        mma_m16n8k16_f32(acc[i][j], f.a[i], f.b[j]);
      }
  };

  const uint32_t a_smem = shared_address(a_stages), b_smem = shared_address(b_stages);
  constexpr uint32_t A_STAGE_BYTES = 2 * S::A_STAGE_HALVES, B_STAGE_BYTES = 2 * S::B_STAGE_HALVES;
  constexpr int K_STEPS = S::BLOCK_K / 16;

  // The general path's synchronous loads leave nothing to overlap with, and the
  // second fragment buffer would cost it registers: it takes the plain pipeline.
  if constexpr (S::OVERLAPPED && ALIGNED16) {
    // ---- the pipeline, with the fragments of the next k16 step in flight
    // Commit group g holds k-slice g (empty groups past the end keep the count
    // regular). The ldmatrix of step kk+1 is issued before the mma of step kk,
    // so its latency hides behind 32 mma; at the last step of a slice the next
    // slice's first fragments are loaded, after one barrier per slice that
    //   - with cp.async.wait_group STAGES-2, proves slice t+1 has landed
    //     (slice t+2 .. t+STAGES-1 stay in flight), and
    //   - proves every warp has read slice t-1's stage, which the copies of
    //     slice t+STAGES-1 refill during slice t, spread over its k16 steps.
#pragma unroll
    for (int s = 0; s < S::STAGES - 1; ++s) {
      if (s < k_tiles) load_slice(s, s);
      cp_async_commit_group();
    }
    cp_async_wait_group<S::STAGES - 2>();
    __syncthreads();

    Fragments frag[2];
    int read_stage = 0, write_stage = S::STAGES - 1;
    load_fragments(frag[0], a_smem, b_smem, 0);
    for (int t = 0; t < k_tiles; ++t) {
      const int refill = t + S::STAGES - 1;
#pragma unroll
      for (int kk = 0; kk < K_STEPS; ++kk) {
        load_slice_part(write_stage, refill, kk, K_STEPS);
        if (kk == K_STEPS - 1) {
          cp_async_commit_group();
          cp_async_wait_group<S::STAGES - 2>();
          __syncthreads();
          read_stage = read_stage + 1 == S::STAGES ? 0 : read_stage + 1;
          write_stage = write_stage + 1 == S::STAGES ? 0 : write_stage + 1;
        }
        // After the last slice this reads a stale stage into registers nobody uses.
        load_fragments(frag[(kk + 1) % 2], a_smem + read_stage * A_STAGE_BYTES, b_smem + read_stage * B_STAGE_BYTES,
                       ((kk + 1) % K_STEPS) * 16);
        mma_fragments(frag[kk % 2]);
      }
    }
  } else {
    // ---- the plain pipeline (the lesson's first version, kept for comparison)
    // A barrier at the start of every slice; all of the slice's copies issued
    // at once; each k16 step's fragments loaded right before its mma.
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
      const int stage = t % S::STAGES;
#pragma unroll
      for (int kk = 0; kk < S::BLOCK_K; kk += 16) {
        Fragments f;
        load_fragments(f, a_smem + stage * A_STAGE_BYTES, b_smem + stage * B_STAGE_BYTES, kk);
        mma_fragments(f);
      }
    }
  }
  cp_async_wait_group<0>();
  __syncthreads();  // every warp is done with the pipeline's shared memory

  // ---- epilogue: fp32 -> fp16 into the staging tile
  const int group = lane / 4, pair = lane % 4;
#pragma unroll
  for (int i = 0; i < S::MMAS_M; ++i) {
#pragma unroll
    for (int j = 0; j < S::MMAS_N; ++j) {
      const int row = warp_row0 + i * 16 + group;
      const int col = warp_col0 + j * 8 + pair * 2;
      *reinterpret_cast<__half2*>(c_stage + row * S::C_LD + col) = __floats2half2_rn(acc[i][j][0], acc[i][j][1]);
      *reinterpret_cast<__half2*>(c_stage + (row + 8) * S::C_LD + col) = __floats2half2_rn(acc[i][j][2], acc[i][j][3]);
    }
  }
  __syncthreads();

  // ---- staging tile -> activation on fp16 pairs -> C: consecutive threads take
  // consecutive 16-byte chunks of a row
  constexpr int C_CHUNKS_PER_ROW = S::BLOCK_N / 8;
#pragma unroll
  for (int i = 0; i < S::C_CHUNKS_PER_THREAD; ++i) {
    const int index = int(threadIdx.x) + i * S::THREADS;
    const int r = index / C_CHUNKS_PER_ROW, cc = (index % C_CHUNKS_PER_ROW) * 8;
    const int gr = m0 + r, gc = n0 + cc;
    if (gr >= m) continue;
    const uint4 v = activation_x8<ACT>(*reinterpret_cast<const uint4*>(c_stage + r * S::C_LD + cc));
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
