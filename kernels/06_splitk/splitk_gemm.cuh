// Lesson 06's tiled kernel: small output tiles for skinny products, with the
// K dimension of every tile cut into ranges, and five ways of adding the
// ranges' partial sums. One kernel, a template parameter per way:
//
//   Reduce::none       one unit per tile, stored as fp16: the data-parallel grid
//   Reduce::atomic     each unit adds its partial into C with fp16x2 atomics
//                      (C is zeroed first, inside the timed launch); the order
//                      of the adds varies from run to run, so does the result
//   Reduce::workspace  each unit writes its fp32 partial to its own slice of a
//                      workspace; a second kernel adds the slices in order
//   Reduce::serial     one launch: the units of a tile take turns behind a
//                      per-tile semaphore, each adding its partial into an fp32
//                      running sum; the last one stores fp16
//   Reduce::stream_k   a persistent grid, every block an equal run of the
//                      tiles' k iterations laid end to end (lesson 04's
//                      schedule, schedule/stream_k.hpp, with every tile shared)
//
// The main loop is lesson 03's: a cp.async pipeline of 64-deep k slices into
// swizzled shared tiles, ldmatrix and mma.sync. What changes is the tile,
// 16 x 128 for M <= 16 (at M = 1 fifteen of its rows are zeros: the tensor
// cores are not what limits a product this thin, the weights' bytes are) and
// 64 x 128 above, and the k range: [k_begin, k_end) of the tile's k slices.
#pragma once

#include <cuda_fp16.h>

#include <algorithm>
#include <string>
#include <vector>

#include "03_grouped/pipelined_mma.cuh"
#include "common/check.cuh"
#include "common/gemm.cuh"
#include "common/mma.cuh"
#include "common/sync.cuh"
#include "common/trace.cuh"
#include "models/wave_model.hpp"
#include "schedule/split_k.hpp"
#include "schedule/stream_k.hpp"

namespace wb::splitk {

enum class Reduce { none, atomic, workspace, serial, stream_k };

// The tiles: 16 x 128 (4 warps of 16 x 32; 6 stages, 96 KiB of B in flight)
// or 64 x 128 (4 warps of 32 x 64; 4 stages), 64-deep k slices.
using Tile16 = PipelinedShape<16, 128, 64, 1, 4, 6>;
using Tile64 = PipelinedShape<64, 128, 64, 2, 2, 4>;

struct SplitKParams {
  const __half* a;
  const __half* b;
  __half* c;
  int m, n, k;
  int splits;                   // k ranges per tile (every Reduce but stream_k)
  float* partials;              // workspace: splits x M x N; serial: M x N; stream_k: a tile per block
  uint32_t* flags;              // serial: one per tile; stream_k: one per block
  const int* segments_before;   // stream_k, tracing: each block's count of earlier segments
  StreamKPlan plan;             // stream_k
  TraceRecord* trace;
};

template <class S>
struct Accumulators {
  float v[S::MMAS_M][S::MMAS_N][4];
};

// Copies A[m0 : m0 + BLOCK_M, k0 : k0 + BLOCK_K] into a swizzled stage `as`:
// cp.async for 16-byte rows (zeros outside the matrix), else element loads.
template <class S, bool ALIGNED16>
__device__ __forceinline__ void load_a_slice(const __half* a, int m, int k, __half* as, int m0, int k0) {
  constexpr int A_CPR = S::BLOCK_K / 8;  // 16-byte chunks per row
  const int tid = int(threadIdx.x);
#pragma unroll
  for (int i = 0; i < S::A_CHUNKS_PER_THREAD; ++i) {
    const int idx = tid + i * S::THREADS, row = idx / A_CPR, chunk = idx % A_CPR;
    const int gr = m0 + row, gc = k0 + chunk * 8;
    __half* dst = as + swizzled_offset<S::BLOCK_K>(row, chunk);
    const __half* src = a + int64_t(gr) * k + gc;
    if constexpr (ALIGNED16) {
      const bool inside = gr < m && gc < k;  // k % 8 == 0: a chunk is wholly in or out
      cp_async_16_zero_fill(shared_address(dst), inside ? src : a, inside ? 16 : 0);
    } else {
      *reinterpret_cast<uint4*>(dst) = gather_chunk_masked(src, gr < m ? k - gc : 0);
    }
  }
}

// Where each lane's ldmatrix rows start in a stage, as in lesson 03: a
// per-thread swizzle XOR a compile-time chunk.
template <class S>
struct FragmentLanes {
  uint32_t a_base, b_base;  // byte offsets of the lane's row in a stage
  int a_swz, b_swz;
  __device__ __forceinline__ FragmentLanes(int warp, int lane) {
    const int warp_row0 = (warp / S::WARPS_N) * S::WARP_M;
    const int warp_col0 = (warp % S::WARPS_N) * S::WARP_N;
    const int a_row = warp_row0 + lane % 16;
    a_swz = swizzle_bits<S::BLOCK_K>(a_row) ^ (lane / 16);
    a_base = 2 * uint32_t(a_row * S::BLOCK_K);
    const int b_row = lane % 16;
    b_swz = swizzle_bits<S::BLOCK_N>(b_row) ^ (lane / 16) ^ (warp_col0 / 8);
    b_base = 2 * uint32_t(b_row * S::BLOCK_N);
  }
};

// acc += one BLOCK_K slice's product: the swizzled A and B tiles of a stage
// (shared addresses), ldmatrix (B transposed) and mma.sync.
template <class S>
__device__ __forceinline__ void slice_product(const FragmentLanes<S>& f, uint32_t a_stage, uint32_t b_stage,
                                              Accumulators<S>& acc) {
#pragma unroll
  for (int kk = 0; kk < S::BLOCK_K; kk += 16) {
    uint32_t af[S::MMAS_M][4], bf[S::MMAS_N][2];
#pragma unroll
    for (int i = 0; i < S::MMAS_M; ++i)
      ldmatrix_x4(af[i], a_stage + f.a_base + 2 * (i * 16 * S::BLOCK_K + ((kk / 8) ^ f.a_swz) * 8));
#pragma unroll
    for (int j = 0; j < S::MMAS_N; j += 2) {
      uint32_t r[4];
      ldmatrix_x4_trans(r, b_stage + f.b_base + 2 * (kk * S::BLOCK_N + (j ^ f.b_swz) * 8));
      bf[j][0] = r[0];
      bf[j][1] = r[1];
      bf[j + 1][0] = r[2];
      bf[j + 1][1] = r[3];
    }
#pragma unroll
    for (int i = 0; i < S::MMAS_M; ++i)
#pragma unroll
      for (int j = 0; j < S::MMAS_N; ++j) mma_m16n8k16_f32(acc.v[i][j], af[i], bf[j]);
  }
}

// acc = A[m0 : m0 + BLOCK_M, k slices kt_begin .. kt_end) B[.., n0 : n0 + BLOCK_N].
// Lesson 03's plain pipeline: a barrier per slice, the slice STAGES - 1 ahead
// copied while this one is multiplied. Ends with every copy landed and every
// warp past its last read of shared memory, so it can be called again.
template <class S, bool ALIGNED16>
__device__ __forceinline__ void tile_product(const SplitKParams& p, unsigned char* smem, int m0, int n0, int kt_begin,
                                             int kt_end, Accumulators<S>& acc) {
  __half* a_stages = reinterpret_cast<__half*>(smem);
  __half* b_stages = a_stages + S::STAGES * S::A_STAGE_HALVES;
  const int tid = int(threadIdx.x), lane = tid % 32, warp = tid / 32;
  constexpr int B_CPR = S::BLOCK_N / 8;  // 16-byte chunks per row

  auto load_slice = [&](int stage, int kt) {
    const int k0 = kt * S::BLOCK_K;
    __half* as = a_stages + stage * S::A_STAGE_HALVES;
    __half* bs = b_stages + stage * S::B_STAGE_HALVES;
    load_a_slice<S, ALIGNED16>(p.a, p.m, p.k, as, m0, k0);
#pragma unroll
    for (int i = 0; i < S::B_CHUNKS_PER_THREAD; ++i) {
      const int idx = tid + i * S::THREADS, row = idx / B_CPR, chunk = idx % B_CPR;
      const int gr = k0 + row, gc = n0 + chunk * 8;
      __half* dst = bs + swizzled_offset<S::BLOCK_N>(row, chunk);
      const __half* src = p.b + int64_t(gr) * p.n + gc;
      if constexpr (ALIGNED16) {
        const bool inside = gr < p.k && gc < p.n;
        cp_async_16_zero_fill(shared_address(dst), inside ? src : p.b, inside ? 16 : 0);
      } else {
        *reinterpret_cast<uint4*>(dst) = gather_chunk_masked(src, gr < p.k ? p.n - gc : 0);
      }
    }
  };

#pragma unroll
  for (int i = 0; i < S::MMAS_M; ++i)
#pragma unroll
    for (int j = 0; j < S::MMAS_N; ++j)
#pragma unroll
      for (int e = 0; e < 4; ++e) acc.v[i][j][e] = 0.0f;

  const FragmentLanes<S> lanes(warp, lane);
  const uint32_t a_smem = shared_address(a_stages), b_smem = shared_address(b_stages);

  const int count = kt_end - kt_begin;
#pragma unroll
  for (int s = 0; s < S::STAGES - 1; ++s) {
    if (s < count) load_slice(s, kt_begin + s);
    cp_async_commit_group();
  }
  for (int t = 0; t < count; ++t) {
    cp_async_wait_group<S::STAGES - 2>();
    __syncthreads();
    const int refill = t + S::STAGES - 1;
    if (refill < count) load_slice(refill % S::STAGES, kt_begin + refill);
    cp_async_commit_group();
    const int stage = t % S::STAGES;
    slice_product<S>(lanes, a_smem + stage * 2 * S::A_STAGE_HALVES, b_smem + stage * 2 * S::B_STAGE_HALVES, acc);
  }
  cp_async_wait_group<0>();
  __syncthreads();
}

// Calls f(row, col, v0, v1) for each pair of neighbouring accumulators this
// thread holds (C[row][col], C[row][col + 1]), with row and col in the matrix.
template <class S, class F>
__device__ __forceinline__ void for_each_pair(const Accumulators<S>& acc, int m0, int n0, F&& f) {
  const int lane = int(threadIdx.x) % 32, warp = int(threadIdx.x) / 32;
  const int row0 = m0 + (warp / S::WARPS_N) * S::WARP_M + lane / 4;
  const int col0 = n0 + (warp % S::WARPS_N) * S::WARP_N + (lane % 4) * 2;
#pragma unroll
  for (int i = 0; i < S::MMAS_M; ++i)
#pragma unroll
    for (int j = 0; j < S::MMAS_N; ++j) {
      f(row0 + i * 16, col0 + j * 8, acc.v[i][j][0], acc.v[i][j][1]);
      f(row0 + i * 16 + 8, col0 + j * 8, acc.v[i][j][2], acc.v[i][j][3]);
    }
}

// Stores or adds a pair (v0, v1) at C[row][col .. col + 1], inside the matrix only.
__device__ __forceinline__ void store_pair(const SplitKParams& p, int row, int col, float v0, float v1) {
  if (row >= p.m || col >= p.n) return;
  __half* dst = p.c + int64_t(row) * p.n + col;
  if (col + 1 < p.n && p.n % 2 == 0) {
    *reinterpret_cast<__half2*>(dst) = __floats2half2_rn(v0, v1);
  } else {
    dst[0] = __float2half_rn(v0);
    if (col + 1 < p.n) dst[1] = __float2half_rn(v1);
  }
}

__device__ __forceinline__ void atomic_add_pair(const SplitKParams& p, int row, int col, float v0, float v1) {
  if (row >= p.m || col >= p.n) return;
  __half* dst = p.c + int64_t(row) * p.n + col;
  if (col + 1 < p.n && p.n % 2 == 0) {
    atomicAdd(reinterpret_cast<__half2*>(dst), __floats2half2_rn(v0, v1));
  } else {
    atomicAdd(dst, __float2half_rn(v0));
    if (col + 1 < p.n) atomicAdd(dst + 1, __float2half_rn(v1));
  }
}

// The partial of one unit, in the accumulators' own layout: thread t's float4
// number q sits at q * THREADS + t, so the stores and the owner's loads are
// coalesced and the owner's thread t adds exactly what its registers hold.
template <class S>
__device__ __forceinline__ void write_slot(float4* slot, const Accumulators<S>& acc) {
#pragma unroll
  for (int i = 0; i < S::MMAS_M; ++i)
#pragma unroll
    for (int j = 0; j < S::MMAS_N; ++j)
      slot[(i * S::MMAS_N + j) * S::THREADS + threadIdx.x] =
          make_float4(acc.v[i][j][0], acc.v[i][j][1], acc.v[i][j][2], acc.v[i][j][3]);
}

template <class S>
__device__ __forceinline__ void add_slot(const float4* slot, Accumulators<S>& acc) {
#pragma unroll
  for (int i = 0; i < S::MMAS_M; ++i)
#pragma unroll
    for (int j = 0; j < S::MMAS_N; ++j) {
      const float4 v = __ldcg(slot + (i * S::MMAS_N + j) * S::THREADS + threadIdx.x);  // L2: another SM wrote it
      acc.v[i][j][0] += v.x;
      acc.v[i][j][1] += v.y;
      acc.v[i][j][2] += v.z;
      acc.v[i][j][3] += v.w;
    }
}

template <class S>
constexpr int kSlotFloat4s = S::MMAS_M * S::MMAS_N * S::THREADS;

template <class S, Reduce R, bool ALIGNED16>
__global__ void __launch_bounds__(S::THREADS) splitk_gemm_kernel(SplitKParams p) {
  extern __shared__ __align__(128) unsigned char smem[];
  const int tiles_n = ceil_div(p.n, S::BLOCK_N);
  const int k_tiles = ceil_div(p.k, S::BLOCK_K);
  const int tid = int(threadIdx.x);
  Accumulators<S> acc;

  if constexpr (R == Reduce::stream_k) {
    // A persistent block walks its run of k iterations, one unit per tile it touches.
    const int worker = int(blockIdx.x);
    StreamKWalk walk(p.plan, worker, p.trace != nullptr ? p.segments_before[worker] : -1);
    float4* my_slot = reinterpret_cast<float4*>(p.partials) + size_t(worker) * kSlotFloat4s<S>;
    for (WorkUnit u; walk.next(&u);) {
      const uint64_t t0 = trace_start(p.trace);
      const int tm = u.tile / tiles_n, tn = u.tile % tiles_n;
      const int m0 = tm * S::BLOCK_M, n0 = tn * S::BLOCK_N;
      tile_product<S, ALIGNED16>(p, smem, m0, n0, u.k_begin, u.k_end, acc);
      if (!owns_tile(u)) {
        // The end of a tile: its partial goes to this block's slot for the owner.
        write_slot<S>(my_slot, acc);
        __syncthreads();  // every thread's stores come before the release
        if (tid == 0) {
          __threadfence();
          store_release_gpu(p.flags + worker, 1);
        }
      } else {
        // The start of a tile: add the partials of the blocks that hold the rest, in order.
        for (int c = stream_k_next_contributor(p.plan, u.tile, worker); c >= 0;
             c = stream_k_next_contributor(p.plan, u.tile, c)) {
          if (tid == 0) {
            while (load_acquire_gpu(p.flags + c) == 0) __nanosleep(32);
            p.flags[c] = 0;  // read once per launch: lowered for the next one
          }
          __syncthreads();  // the acquire comes before every thread's loads
          add_slot<S>(reinterpret_cast<const float4*>(p.partials) + size_t(c) * kSlotFloat4s<S>, acc);
        }
        for_each_pair<S>(acc, m0, n0, [&](int r, int c, float v0, float v1) { store_pair(p, r, c, v0, v1); });
      }
      if (p.trace != nullptr) {
        __syncthreads();
        if (tid == 0)
          trace_write_record(p.trace, u.index, tm, tn, u.k_begin * S::BLOCK_K, min(u.k_end * S::BLOCK_K, p.k), t0);
      }
    }
  } else {
    const uint64_t t0 = trace_start(p.trace);
    const SplitUnit unit = split_unit(blockIdx.x, ceil_div(p.m, S::BLOCK_M) * tiles_n);
    const int tm = unit.tile / tiles_n, tn = unit.tile % tiles_n;
    const int m0 = tm * S::BLOCK_M, n0 = tn * S::BLOCK_N;
    const int kt_begin = split_k_begin(k_tiles, p.splits, unit.split);
    const int kt_end = split_k_begin(k_tiles, p.splits, unit.split + 1);
    tile_product<S, ALIGNED16>(p, smem, m0, n0, kt_begin, kt_end, acc);

    if constexpr (R == Reduce::none) {
      for_each_pair<S>(acc, m0, n0, [&](int r, int c, float v0, float v1) { store_pair(p, r, c, v0, v1); });
    } else if constexpr (R == Reduce::atomic) {
      for_each_pair<S>(acc, m0, n0, [&](int r, int c, float v0, float v1) { atomic_add_pair(p, r, c, v0, v1); });
    } else if constexpr (R == Reduce::workspace) {
      float* slice = p.partials + size_t(unit.split) * p.m * p.n;
      for_each_pair<S>(acc, m0, n0, [&](int r, int c, float v0, float v1) {
        if (r >= p.m || c >= p.n) return;
        float* dst = slice + int64_t(r) * p.n + c;
        dst[0] = v0;
        if (c + 1 < p.n) dst[1] = v1;
      });
    } else if constexpr (R == Reduce::serial) {
      // Split s waits until the semaphore says s, adds, and passes it on; the
      // last stores fp16 and lowers it for the next launch.
      const bool first = unit.split == 0, last = unit.split == p.splits - 1;
      uint32_t* flag = p.flags + unit.tile;
      if (!first) {
        if (tid == 0)
          while (load_acquire_gpu(flag) != uint32_t(unit.split)) __nanosleep(32);
        __syncthreads();  // the acquire comes before every thread's loads
      }
      for_each_pair<S>(acc, m0, n0, [&](int r, int c, float v0, float v1) {
        if (r >= p.m || c >= p.n) return;
        float* sum = p.partials + int64_t(r) * p.n + c;
        const bool two = c + 1 < p.n;
        if (!first) {
          v0 += __ldcg(sum);
          if (two) v1 += __ldcg(sum + 1);
        }
        if (last) {
          store_pair(p, r, c, v0, v1);
        } else {
          sum[0] = v0;
          if (two) sum[1] = v1;
        }
      });
      if (p.splits > 1) {
        __syncthreads();  // every thread's stores come before the release
        if (tid == 0) {
          __threadfence();
          store_release_gpu(flag, last ? 0u : uint32_t(unit.split + 1));
        }
      }
    }
    trace_end(p.trace, int(blockIdx.x), tm, tn, kt_begin * S::BLOCK_K, min(kt_end * S::BLOCK_K, p.k), t0);
  }
}

// The workspace's slices added in order, one fp16 output each: what makes
// Reduce::workspace deterministic, and what it pays for it (a second launch
// that reads splits x M x N x 4 bytes).
__global__ void reduce_slices_kernel(const float* __restrict__ partials, int splits, int64_t count,
                                     __half* __restrict__ c) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < count; i += int64_t(gridDim.x) * blockDim.x) {
    float sum = 0.0f;
    for (int s = 0; s < splits; ++s) sum += partials[s * count + i];
    c[i] = __float2half_rn(sum);
  }
}

// ---------------------------------------------------------------- host side

template <class S, Reduce R, bool ALIGNED16>
const void* kernel_ready() {
  static const bool configured = [] {
    CUDA_CHECK(cudaFuncSetAttribute(splitk_gemm_kernel<S, R, ALIGNED16>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                    S::SMEM_BYTES));
    return true;
  }();
  (void)configured;
  return reinterpret_cast<const void*>(&splitk_gemm_kernel<S, R, ALIGNED16>);
}

// What one launch of the tiled kernel is: tile, split, grid. `requested` is
// --split-k (0: the wave model's choice).
struct SplitKPlanned {
  int block_m = 16, block_n = 128, block_k = 64, threads = 128, smem = 0, stages = 4;
  int tiles_m = 0, tiles_n = 0, k_tiles = 0;
  int blocks_per_sm = 0;   // resident at once (occupancy)
  int slots = 0;           // units the wave model fits in one wave: one per SM
  int splits = 1;          // k ranges per tile (1 for none and stream_k)
  int wanted = 1;          // the split asked for or modelled, before clamping to k_tiles
  int64_t grid = 0;        // blocks launched
  int64_t units = 0;       // work units (trace records)
  StreamKPlan plan;        // stream_k
};

template <class S, Reduce R>
SplitKPlanned plan_for(const GemmShape& s, int requested) {
  SplitKPlanned q;
  q.block_m = S::BLOCK_M;
  q.block_n = S::BLOCK_N;
  q.block_k = S::BLOCK_K;
  q.threads = S::THREADS;
  q.smem = S::SMEM_BYTES;
  q.stages = S::STAGES;
  q.tiles_m = ceil_div(s.m, S::BLOCK_M);
  q.tiles_n = ceil_div(s.n, S::BLOCK_N);
  q.k_tiles = ceil_div(s.k, S::BLOCK_K);
  static const int resident = std::max(1, blocks_per_sm(kernel_ready<S, R, true>(), S::THREADS, S::SMEM_BYTES));
  static const int sms = sm_count();  // once per process: launchers call this for every launch
  q.blocks_per_sm = resident;
  q.slots = sms;  // one unit per SM (models/wave_model.hpp: split_k_for_waves)
  const int64_t tiles = int64_t(q.tiles_m) * q.tiles_n;
  if (R == Reduce::stream_k) {
    q.grid = q.slots;  // persistent: every block resident, so owners may wait for the others
    q.plan = stream_k_plan_all(int(tiles), q.k_tiles, q.slots);
    q.units = stream_k_units(q.plan);
  } else {
    if (R != Reduce::none) {
      q.wanted = requested > 0 ? requested : split_k_for_waves(tiles, q.k_tiles, q.slots);
      q.splits = clamp_split_k(q.wanted, q.k_tiles);
    }
    q.grid = tiles * q.splits;
    q.units = q.grid;
  }
  return q;
}

template <Reduce R>
SplitKPlanned plan_splitk(const GemmShape& s, int requested) {
  return s.m <= 16 ? plan_for<Tile16, R>(s, requested) : plan_for<Tile64, R>(s, requested);
}

// Bytes of the harness's workspace a variant needs (zeroed once; every launch
// leaves the flags down again).
template <Reduce R>
size_t splitk_workspace_bytes(const GemmShape& s, int requested) {
  const SplitKPlanned q = plan_splitk<R>(s, requested);
  const size_t mn = size_t(s.m) * size_t(s.n);
  switch (R) {
    case Reduce::workspace: return q.splits * mn * sizeof(float);
    case Reduce::serial: return mn * sizeof(float) + size_t(q.tiles_m) * q.tiles_n * sizeof(uint32_t);
    case Reduce::stream_k:
      return size_t(q.grid) * (size_t(q.block_m) * q.block_n * sizeof(float) + sizeof(uint32_t) + sizeof(int));
    default: return 0;
  }
}

// What the harness records of a plan (tile, split, grid); lesson 07's split-K
// kernels plan with the same struct.
inline KernelConfig kernel_config(const SplitKPlanned& q, bool persistent) {
  KernelConfig c;
  c.block_m = q.block_m;
  c.block_n = q.block_n;
  c.block_k = q.block_k;
  c.threads = q.threads;
  c.stages = q.stages;
  c.split_k = q.splits;
  c.tiles_m = q.tiles_m;
  c.tiles_n = q.tiles_n;
  c.grid_blocks = q.grid;
  c.work_units = q.units;
  c.blocks_per_sm = q.blocks_per_sm;
  c.smem_bytes = q.smem;
  c.persistent = persistent;
  return c;
}

template <Reduce R>
KernelConfig splitk_config(const GemmShape& s, int requested) {
  return kernel_config(plan_splitk<R>(s, requested), R == Reduce::stream_k);
}

template <class S, Reduce R>
void launch_with(const GemmArgs& g, const SplitKPlanned& q, cudaStream_t stream) {
  SplitKParams p{g.a, g.b, g.c, g.m, g.n, g.k, q.splits, nullptr, nullptr, nullptr, q.plan, g.trace};
  const size_t need = splitk_workspace_bytes<R>(GemmShape{g.m, g.n, g.k}, q.wanted);
  if (need > 0 && (g.workspace == nullptr || g.workspace_bytes < need))
    throw CudaError("split-K needs a workspace of " + std::to_string(need) + " bytes; it got " +
                    std::to_string(g.workspace ? g.workspace_bytes : 0));
  const size_t mn = size_t(g.m) * size_t(g.n);
  if (R == Reduce::workspace || R == Reduce::serial) {
    p.partials = static_cast<float*>(g.workspace);
    p.flags = reinterpret_cast<uint32_t*>(p.partials + mn);  // serial: after the running sum
  } else if (R == Reduce::stream_k) {
    p.partials = static_cast<float*>(g.workspace);
    p.flags = reinterpret_cast<uint32_t*>(p.partials + size_t(q.grid) * q.block_m * q.block_n);
    int* before = reinterpret_cast<int*>(p.flags + q.grid);
    p.segments_before = before;
    if (g.trace != nullptr) {
      // Trace records are numbered in launch order: each block's count of
      // earlier segments, a loop with 64-bit divisions, done here.
      std::vector<int> counts(size_t(q.grid), 0);
      for (int w = 0; w < int(q.grid); ++w) counts[size_t(w)] = stream_k_segments_before(q.plan, w);
      CUDA_CHECK(cudaMemcpyAsync(before, counts.data(), counts.size() * sizeof(int), cudaMemcpyHostToDevice, stream));
    }
  }
  // Lesson 03's test: 16-byte rows and pointers take cp.async, others element loads.
  const void* kernel = pipelined_gemm_fast_path(g) ? kernel_ready<S, R, true>() : kernel_ready<S, R, false>();
  void* args[] = {&p};
  CUDA_CHECK(cudaLaunchKernel(kernel, dim3(unsigned(q.grid)), dim3(S::THREADS), args, size_t(S::SMEM_BYTES), stream));
  CUDA_CHECK_LAUNCH();
  if (R == Reduce::workspace) {
    const int64_t count = int64_t(mn);
    const int threads = 256;
    const int blocks = int(std::min<int64_t>(ceil_div(count, int64_t(threads)), int64_t(sm_count()) * 8));
    reduce_slices_kernel<<<blocks, threads, 0, stream>>>(p.partials, q.splits, count, g.c);
    CUDA_CHECK_LAUNCH();
  }
}

template <Reduce R>
void launch_splitk(const GemmArgs& g, int requested, cudaStream_t stream) {
  const GemmShape s{g.m, g.n, g.k};
  const SplitKPlanned q = plan_splitk<R>(s, requested);
  if (g.m <= 16)
    launch_with<Tile16, R>(g, q, stream);
  else
    launch_with<Tile64, R>(g, q, stream);
}

}  // namespace wb::splitk
