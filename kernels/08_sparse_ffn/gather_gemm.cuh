// Lesson 08's gathered product: C = A B where B's columns (the up side) or
// rows (the down side) are the router's active neurons, picked through the
// index list I. Lesson 06's tiles and pipeline (cp.async, swizzled shared
// tiles, ldmatrix, mma.sync), with three ways of bringing B in:
//
//   Gather::columns      up side, weights as the math writes them (W1 is
//                        d_model x d_ff, row-major): a neuron is a column, so a
//                        k row of the tile is 128 values from 128 places, each
//                        a 2-byte load, each a 32-byte sector of DRAM
//   Gather::neuron_rows  up side, weights stored neuron-major (W1ᵀ, d_ff x
//                        d_model): a neuron is one 8 KiB run, its k slice one
//                        128-byte row of the tile (ldmatrix without .trans)
//   Gather::rows         down side: row I[j] of W2 is k row j of B, a run of
//                        d_model values, 256 bytes of it per tile row
//
// The up side's "columns" are g = 0 .. per x count - 1 for count active
// neurons: neuron I[g / per], and for SwiGLU (per = 2) the gate (g even) and
// the up value (g odd) side by side, so that one thread's accumulator pair
// holds both and silu(gate) * up needs no exchange. Columns past the active
// ones read as zeros, and the epilogue writes their zeros into the pad of
// the compact intermediate H.
//
// Epilogue::activate (up side): H[r][j] = act(acc), or silu(gate) * up, fp16.
// Epilogue::store (down side): Y = acc, fp16.
// With splits > 1 each unit writes its fp32 partial to a slot of the
// workspace and the last unit of a tile to arrive (a counter per tile) adds
// the slots in order and runs the epilogue: the same bits every run. With
// `atomic_sum` (step 7; this kernel only, not gather_wgmma.cuh's) each unit
// adds its partial into the tile's one fp32 sum with vector atomics in L2
// instead, and the last one reads that sum alone (a slot's worth, not one
// per split) and zeroes it for the next launch; the order of the additions,
// and so the last bit, can change from run to run.
#pragma once

#include <cuda_fp16.h>

#include <algorithm>
#include <string>
#include <type_traits>

#include "06_splitk/splitk_gemm.cuh"
#include "common/check.cuh"
#include "common/mma.cuh"
#include "common/sync.cuh"
#include "common/trace.cuh"
#include "models/wave_model.hpp"
#include "schedule/activation.hpp"
#include "schedule/split_k.hpp"
#include "schedule/stream_k.hpp"

namespace wb::sparse {

enum class Gather { columns, neuron_rows, rows };
enum class Epilogue { activate, store };

// The tiles: 16 x 128 for M <= 16, 64 x 128 up to 64, 128 x 128 above; 64-deep k slices.
using Tile16 = splitk::Tile16;
using Tile64 = splitk::Tile64;
using Tile128 = PipelinedShape<128, 128, 64, 2, 4, 4>;

struct GatherParams {
  const __half* a;       // M x K, row-major, leading dimension k
  const __half* b;       // the weights, leading dimension ldb
  int ldb;
  const int32_t* idx;    // the active neurons
  int count;             // how many
  int per, mul, add;     // gathered index g -> idx[g / per] * mul + (g % per) * add (up side)
  __half* c;             // M x n (store) or M x ldc (activate: ldc = n / per)
  int ldc;
  int m, n, k;           // the product's extents: n and k padded, the pad reading zeros
  Activation act;
  bool swiglu;
  bool atomic_sum;       // splits > 1: the splits add into one sum a tile with atomics (step 7; this file's kernel)
  int splits;            // k ranges per tile
  float* partials;       // splits > 1: splits x tiles slots (atomic_sum: one a tile, zero between launches)
  uint32_t* counters;    // splits > 1: one per tile, zero between launches
  TraceRecord* trace;
  int trace_first_unit, trace_first_row;  // the second product's records follow the first's
  // A comes from the kernel launched just before, and this one is launched as
  // its programmatic dependent: it may start while that one drains, loads its
  // first slices of B (which do not depend on it), and only then waits for A.
  bool a_from_previous;
};
// Kept within 128 bytes (atomic_sum sits in swiglu's padding). At 136 bytes
// nvcc took the parameter's address in every kernel that uses it and read its
// fields from parameter memory inside the loops: on an H100 the wgmma kernel
// at M = 512 ran 40% slower and the column-gathering one 27% (docs/notes/08_sparse_ffn.md).
static_assert(sizeof(GatherParams) <= 128, "GatherParams: keep the kernels' parameter within 128 bytes");

// Programmatic dependent launch (sm_90): a kernel lets the next one in the
// stream start (launch_dependents), and that one waits, where it must, for
// the first to finish and its writes to be visible (wait).
__device__ __forceinline__ void allow_dependent_launch() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
}
__device__ __forceinline__ void wait_for_previous_grid() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
}

// The row (Gather::neuron_rows) or column (Gather::columns) of the weights
// behind gathered index g, or -1 past the active ones.
__device__ __forceinline__ int gathered(const GatherParams& p, int g) {
  if (g >= p.count * p.per) return -1;
  const int neuron = __ldg(p.idx + g / p.per);
  return neuron * p.mul + (g % p.per) * p.add;
}

// ldmatrix addresses of B fragments from an N x K tile (k contiguous), swizzled as A's.
template <class S>
struct NeuronRowLanes {
  uint32_t base;
  int swz;
  __device__ __forceinline__ NeuronRowLanes(int warp, int lane) {
    const int row = (warp % S::WARPS_N) * S::WARP_N + lane % 16;
    swz = (row & 7) ^ (lane / 16);
    base = 2 * uint32_t(row * S::BLOCK_K);
  }
};

// acc += A slice x B slice, B held as (BLOCK_N x BLOCK_K): ldmatrix without
// .trans gives the "col" operand directly (a neuron's row is a column of B).
template <class S>
__device__ __forceinline__ void slice_product_nt(const splitk::FragmentLanes<S>& f, const NeuronRowLanes<S>& g,
                                                 uint32_t a_stage, uint32_t b_stage, splitk::Accumulators<S>& acc) {
#pragma unroll
  for (int kk = 0; kk < S::BLOCK_K; kk += 16) {
    uint32_t af[S::MMAS_M][4], bf[S::MMAS_N][2];
#pragma unroll
    for (int i = 0; i < S::MMAS_M; ++i)
      ldmatrix_x4(af[i], a_stage + f.a_base + 2 * (i * 16 * S::BLOCK_K + ((kk / 8) ^ f.a_swz) * 8));
#pragma unroll
    for (int j = 0; j < S::MMAS_N; j += 2) {
      uint32_t r[4];
      ldmatrix_x4(r, b_stage + g.base + 2 * (j * 8 * S::BLOCK_K + ((kk / 8) ^ g.swz) * 8));
      bf[j][0] = r[0];
      bf[j + 1][0] = r[1];
      bf[j][1] = r[2];
      bf[j + 1][1] = r[3];
    }
#pragma unroll
    for (int i = 0; i < S::MMAS_M; ++i)
#pragma unroll
      for (int j = 0; j < S::MMAS_N; ++j) mma_m16n8k16_f32(acc.v[i][j], af[i], bf[j]);
  }
}

// B's loads for one tile: what each thread copies of every k slice.
template <class S, Gather G>
struct BLoader;

template <class S>
struct BLoader<S, Gather::neuron_rows> {  // (BLOCK_N x 64): 8 chunks a row, the chunk fixed per thread
  static constexpr int N = S::B_CHUNKS_PER_THREAD;
  const __half* row[N];
  int chunk;
  __device__ __forceinline__ BLoader(const GatherParams& p, int n0) {
    chunk = int(threadIdx.x) % 8;
#pragma unroll
    for (int i = 0; i < N; ++i) {
      const int w = gathered(p, n0 + (int(threadIdx.x) + i * S::THREADS) / 8);
      row[i] = w < 0 ? nullptr : p.b + int64_t(w) * p.ldb;
    }
  }
  __device__ __forceinline__ void issue(const GatherParams& p, __half* bs, int k0) {
#pragma unroll
    for (int i = 0; i < N; ++i) {
      const int r = (int(threadIdx.x) + i * S::THREADS) / 8, kc = k0 + chunk * 8;
      const bool inside = row[i] != nullptr && kc < p.k;
      cp_async_16_zero_fill(shared_address(bs + swizzled_offset<S::BLOCK_K>(r, chunk)), inside ? row[i] + kc : p.b,
                            inside ? 16 : 0);
    }
  }
  __device__ __forceinline__ void finish(__half*) {}
};

// The neurons of a slice go through shared memory: a thread's 16-byte chunks
// lie in rows whose indices other threads loaded. Slice t's 64 indices are
// loaded into a register during slice t - STAGES + 1's product (one
// iteration ahead of their use) and stored after it; the prologue loads the
// first STAGES slices' at once. So an index's latency is never paid in line
// before a copy.
template <class S>
struct BLoader<S, Gather::rows> {  // (64 x BLOCK_N): row j of the slice is W2[I[k0 + j]]
  static constexpr int N = S::B_CHUNKS_PER_THREAD, CPR = S::BLOCK_N / 8;
  int chunk, n0, kt_first, pending;
  int* ring;  // STAGES x 64 indices, in shared memory past the pipeline
  __device__ __forceinline__ BLoader(const GatherParams&, int n0_, int* ring_)
      : chunk(int(threadIdx.x) % CPR), n0(n0_), kt_first(0), pending(-1), ring(ring_) {}
  __device__ __forceinline__ static int neuron(const GatherParams& p, int gk) {
    return gk < p.count ? __ldg(p.idx + gk) : -1;
  }
  // Before the prologue: the indices of slices kt .. kt + STAGES - 1, then a barrier.
  __device__ __forceinline__ void start(const GatherParams& p, int kt, int kt_end) {
    kt_first = kt;
    for (int e = int(threadIdx.x); e < S::STAGES * 64; e += S::THREADS) {
      const int t = e / 64;
      ring[e] = kt + t < kt_end ? neuron(p, (kt + t) * S::BLOCK_K + e % 64) : -1;
    }
    __syncthreads();
  }
  __device__ __forceinline__ void issue(const GatherParams& p, __half* bs, int k0) {
    const int* slot = ring + ((k0 / S::BLOCK_K - kt_first) % S::STAGES) * 64;
#pragma unroll
    for (int i = 0; i < N; ++i) {
      const int r = (int(threadIdx.x) + i * S::THREADS) / CPR, nc = n0 + chunk * 8;
      const int w = slot[r];
      const bool inside = w >= 0 && nc < p.n;
      cp_async_16_zero_fill(shared_address(bs + swizzled_offset<S::BLOCK_N>(r, chunk)),
                            inside ? p.b + int64_t(w) * p.ldb + nc : p.b, inside ? 16 : 0);
    }
  }
  // During the loop, after issuing slice kt: fetch slice kt + 1's indices (into the
  // slot of slice kt + 1 - STAGES, long since issued), stored by finish().
  __device__ __forceinline__ void fetch_next(const GatherParams& p, int kt_next, int kt_end) {
    pending = (threadIdx.x < 64 && kt_next < kt_end) ? neuron(p, kt_next * S::BLOCK_K + int(threadIdx.x)) : -1;
  }
  __device__ __forceinline__ void store_next(int kt_next, int kt_end) {
    if (threadIdx.x < 64 && kt_next < kt_end) ring[((kt_next - kt_first) % S::STAGES) * 64 + threadIdx.x] = pending;
  }
};

template <class S>
struct BLoader<S, Gather::columns> {  // (64 x BLOCK_N): 8 columns from 8 places per chunk, 2-byte loads
  static constexpr int N = S::B_CHUNKS_PER_THREAD, CPR = S::BLOCK_N / 8;
  int chunk, col[8];
  uint4 held[N];  // loaded during the slice before, stored to shared memory after its product
  __device__ __forceinline__ BLoader(const GatherParams& p, int n0) {
    chunk = int(threadIdx.x) % CPR;
#pragma unroll
    for (int e = 0; e < 8; ++e) col[e] = gathered(p, n0 + chunk * 8 + e);
  }
  __device__ __forceinline__ void issue(const GatherParams& p, __half*, int k0) {
#pragma unroll
    for (int i = 0; i < N; ++i) {
      const int gk = k0 + (int(threadIdx.x) + i * S::THREADS) / CPR;
      union {
        uint4 v;
        unsigned short h[8];
      } u;
      const unsigned short* rowp = reinterpret_cast<const unsigned short*>(p.b) + int64_t(gk) * p.ldb;
#pragma unroll
      for (int e = 0; e < 8; ++e) u.h[e] = (gk < p.k && col[e] >= 0) ? __ldg(rowp + col[e]) : 0;
      held[i] = u.v;
    }
  }
  __device__ __forceinline__ void finish(__half* bs) {
#pragma unroll
    for (int i = 0; i < N; ++i) {
      const int r = (int(threadIdx.x) + i * S::THREADS) / CPR;
      *reinterpret_cast<uint4*>(bs + swizzled_offset<S::BLOCK_N>(r, chunk)) = held[i];
    }
  }
};

// Shared memory past the pipeline: the rows loader's ring of indices.
template <class S>
constexpr int kRingBytes = S::STAGES * 64 * 4;
template <class S>
constexpr int gathered_smem_bytes() {
  return S::SMEM_BYTES + kRingBytes<S>;
}

template <class S, Gather G>
__device__ __forceinline__ BLoader<S, G> make_loader(const GatherParams& p, int n0, unsigned char* smem) {
  if constexpr (G == Gather::rows)
    return BLoader<S, G>(p, n0, reinterpret_cast<int*>(smem + S::SMEM_BYTES));
  else
    return BLoader<S, G>(p, n0);
}

// acc = A[m0 .., k slices kt_begin, kt_begin + kt_step, .. < kt_end) B[.., n0 ..]:
// lesson 06's pipeline, B through the loader. The column loader's values are
// stored to shared memory after the product of the slice before (their loads
// in flight meanwhile). Ends with every copy landed and every warp past shared
// memory. The rows loader's ring of indices takes consecutive slices only.
template <class S, Gather G>
__device__ __forceinline__ void gathered_tile(const GatherParams& p, unsigned char* smem, int m0, int n0,
                                              int kt_begin, int kt_end, splitk::Accumulators<S>& acc,
                                              int kt_step = 1) {
  __half* a_stages = reinterpret_cast<__half*>(smem);
  __half* b_stages = a_stages + S::STAGES * S::A_STAGE_HALVES;
  const int lane = int(threadIdx.x) % 32, warp = int(threadIdx.x) / 32;
  BLoader<S, G> loader = make_loader<S, G>(p, n0, smem);
  if constexpr (G == Gather::rows) loader.start(p, kt_begin, kt_end);
  auto load_a = [&](int stage, int kt) {
    splitk::load_a_slice<S, true>(p.a, p.m, p.k, a_stages + stage * S::A_STAGE_HALVES, m0, kt * S::BLOCK_K);
  };
  auto load = [&](int stage, int kt) {
    load_a(stage, kt);
    loader.issue(p, b_stages + stage * S::B_STAGE_HALVES, kt * S::BLOCK_K);
  };
#pragma unroll
  for (int i = 0; i < S::MMAS_M; ++i)
#pragma unroll
    for (int j = 0; j < S::MMAS_N; ++j)
#pragma unroll
      for (int e = 0; e < 4; ++e) acc.v[i][j][e] = 0.0f;

  const splitk::FragmentLanes<S> lanes(warp, lane);
  const NeuronRowLanes<S> rows(warp, lane);
  const uint32_t a_smem = shared_address(a_stages), b_smem = shared_address(b_stages);
  if constexpr (G == Gather::rows) kt_step = 1;  // its ring of indices holds consecutive slices (callers pass 1)
  const int count = (kt_end - kt_begin + kt_step - 1) / kt_step;
  if (G != Gather::columns && p.a_from_previous) {
    // B's first slices before A exists: they join the first group, which the
    // first slice waits for anyway. (The column loader stores what it loaded
    // itself, slice by slice: it keeps the plain prologue.)
#pragma unroll
    for (int s = 0; s < S::STAGES - 1; ++s)
      if (s < count) loader.issue(p, b_stages + s * S::B_STAGE_HALVES, (kt_begin + s * kt_step) * S::BLOCK_K);
    wait_for_previous_grid();
#pragma unroll
    for (int s = 0; s < S::STAGES - 1; ++s) {
      if (s < count) load_a(s, kt_begin + s * kt_step);
      cp_async_commit_group();
    }
  } else {
    if (p.a_from_previous) wait_for_previous_grid();
#pragma unroll
    for (int s = 0; s < S::STAGES - 1; ++s) {
      if (s < count) {
        load(s, kt_begin + s * kt_step);
        if constexpr (G == Gather::columns) loader.finish(b_stages + s * S::B_STAGE_HALVES);
      }
      cp_async_commit_group();
    }
  }
  for (int t = 0; t < count; ++t) {
    cp_async_wait_group<S::STAGES - 2>();
    __syncthreads();
    const int refill = t + S::STAGES - 1;
    if (refill < count) load(refill % S::STAGES, kt_begin + refill * kt_step);
    cp_async_commit_group();
    // Slice refill + 1's indices, to a slot whose slice was issued STAGES - 1 slices ago
    // (its last readers passed this iteration's barrier).
    if constexpr (G == Gather::rows) loader.fetch_next(p, kt_begin + refill + 1, kt_end);
    const int stage = t % S::STAGES;
    const uint32_t as = a_smem + stage * 2 * S::A_STAGE_HALVES, bs = b_smem + stage * 2 * S::B_STAGE_HALVES;
    if constexpr (G == Gather::neuron_rows)
      slice_product_nt<S>(lanes, rows, as, bs, acc);
    else
      splitk::slice_product<S>(lanes, as, bs, acc);
    // The refilled stage was last read in slice t - 1, which every warp finished before this slice's barrier.
    if constexpr (G == Gather::columns)
      if (refill < count) loader.finish(b_stages + (refill % S::STAGES) * S::B_STAGE_HALVES);
    if constexpr (G == Gather::rows) loader.store_next(kt_begin + refill + 1, kt_end);
  }
  cp_async_wait_group<0>();
  __syncthreads();
}

// The epilogue of one pair of neighbouring accumulators (C[r][c], C[r][c + 1]).
template <Epilogue E>
__device__ __forceinline__ void finish_pair(const GatherParams& p, int r, int c, float v0, float v1) {
  if (r >= p.m || c >= p.n) return;
  if constexpr (E == Epilogue::store) {
    *reinterpret_cast<__half2*>(p.c + int64_t(r) * p.ldc + c) = __floats2half2_rn(v0, v1);
  } else if (p.swiglu) {
    p.c[int64_t(r) * p.ldc + c / 2] = __float2half_rn(apply_activation(Activation::silu, v0) * v1);
  } else {
    *reinterpret_cast<__half2*>(p.c + int64_t(r) * p.ldc + c) =
        __floats2half2_rn(apply_activation(p.act, v0), apply_activation(p.act, v1));
  }
}

// finish_pair with the activation (and SwiGLU) known at compile time.
template <Epilogue E, Activation A, bool SWIGLU>
__device__ __forceinline__ void finish_pair_as(const GatherParams& p, int r, int c, float v0, float v1) {
  if (r >= p.m || c >= p.n) return;
  if constexpr (E == Epilogue::store) {
    *reinterpret_cast<__half2*>(p.c + int64_t(r) * p.ldc + c) = __floats2half2_rn(v0, v1);
  } else if constexpr (SWIGLU) {
    p.c[int64_t(r) * p.ldc + c / 2] = __float2half_rn(apply_activation(Activation::silu, v0) * v1);
  } else {
    *reinterpret_cast<__half2*>(p.c + int64_t(r) * p.ldc + c) =
        __floats2half2_rn(apply_activation(A, v0), apply_activation(A, v1));
  }
}

// Calls f(act, swiglu) with p's epilogue as compile-time constants
// (std::integral_constant): the store epilogue has neither.
template <Epilogue E, class F>
__device__ __forceinline__ void with_epilogue_activation(const GatherParams& p, F&& f) {
  using A = Activation;
  using std::integral_constant;
  if constexpr (E == Epilogue::store) {
    f(integral_constant<A, A::none>{}, integral_constant<bool, false>{});
  } else if (p.swiglu) {
    f(integral_constant<A, A::silu>{}, integral_constant<bool, true>{});
  } else {
    switch (p.act) {
      case A::none: f(integral_constant<A, A::none>{}, integral_constant<bool, false>{}); break;
      case A::relu: f(integral_constant<A, A::relu>{}, integral_constant<bool, false>{}); break;
      case A::leaky_relu: f(integral_constant<A, A::leaky_relu>{}, integral_constant<bool, false>{}); break;
      case A::gelu: f(integral_constant<A, A::gelu>{}, integral_constant<bool, false>{}); break;
      case A::silu: f(integral_constant<A, A::silu>{}, integral_constant<bool, false>{}); break;
    }
  }
}

// After every thread has written its split's slot (or added it into the
// tile's sum): counts the split in, and says (to every thread) whether it was
// the tile's last; the last one lowers the counter for the next launch. One
// acquire-release atomic does the ordering: the release puts the block's
// writes (every thread's, through the barrier before it) ahead of its count,
// and the acquire puts the other splits' writes ahead of the last one's reads.
// Before, a __threadfence() on each side of a plain atomicAdd did the same; on
// an H100 the one atomic took 3-4% off Llama-2-7B at M = 16, s = 0.9 and 12%
// off `split_k_atomic` at M = 64 (docs/notes/08_sparse_ffn.md).
__device__ __forceinline__ bool last_split_of_tile(uint32_t* counter, int splits) {
  __shared__ uint32_t last;
  __syncthreads();  // every thread's stores come before the count
  if (threadIdx.x == 0) {
    const uint32_t before = atomic_add_acq_rel_gpu(counter, 1);
    last = before == uint32_t(splits - 1) ? 1u : 0u;
    if (last) *counter = 0;  // lowered for the next launch
  }
  __syncthreads();
  return last != 0u;
}

// Four floats added into global memory with atomics: one 16-byte vector
// atomic on sm_90, four elsewhere.
__device__ __forceinline__ void atomic_add4(float4* at, float x, float y, float z, float w) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  atomicAdd(at, make_float4(x, y, z, w));
#else
  atomicAdd(&at->x, x);
  atomicAdd(&at->y, y);
  atomicAdd(&at->z, z);
  atomicAdd(&at->w, w);
#endif
}

// Adds a split's partial into the tile's sum (laid out as a slot) with atomics.
template <class S>
__device__ __forceinline__ void atomic_add_slot(float4* sum, const splitk::Accumulators<S>& acc) {
#pragma unroll
  for (int i = 0; i < S::MMAS_M; ++i)
#pragma unroll
    for (int j = 0; j < S::MMAS_N; ++j)
      atomic_add4(sum + (i * S::MMAS_N + j) * S::THREADS + threadIdx.x, acc.v[i][j][0], acc.v[i][j][1],
                  acc.v[i][j][2], acc.v[i][j][3]);
}

// The last split: the tile's sum into `acc`, and zeros in its place for the next launch.
template <class S>
__device__ __forceinline__ void take_slot(float4* sum, splitk::Accumulators<S>& acc) {
#pragma unroll
  for (int i = 0; i < S::MMAS_M; ++i)
#pragma unroll
    for (int j = 0; j < S::MMAS_N; ++j) {
      float4* at = sum + (i * S::MMAS_N + j) * S::THREADS + threadIdx.x;
      const float4 v = __ldcg(at);  // L2: the atomics were done there
      acc.v[i][j][0] = v.x;
      acc.v[i][j][1] = v.y;
      acc.v[i][j][2] = v.z;
      acc.v[i][j][3] = v.w;
      __stcg(at, make_float4(0.f, 0.f, 0.f, 0.f));
    }
}

template <class S, Gather G, Epilogue E>
__global__ void __launch_bounds__(S::THREADS) gathered_gemm_kernel(GatherParams p) {
  extern __shared__ __align__(128) unsigned char smem[];
  const uint64_t t0 = trace_start(p.trace);
  allow_dependent_launch();  // a product launched after this one may start (it waits for our writes itself)
  const int tiles_n = ceil_div(p.n, S::BLOCK_N), tiles = ceil_div(p.m, S::BLOCK_M) * tiles_n;
  const int k_tiles = ceil_div(p.k, S::BLOCK_K);
  const SplitUnit unit = split_unit(blockIdx.x, tiles);
  const int tm = unit.tile / tiles_n, tn = unit.tile % tiles_n;
  const int m0 = tm * S::BLOCK_M, n0 = tn * S::BLOCK_N;
  // At M <= 16 the up product's splits take every splits-th slice (split, split + splits,
  // ...), not a run of them: the units of a tile, running together, then read neighbouring
  // 128-byte pieces of the same neurons' rows, which DRAM serves faster than pieces of rows
  // apart (docs/notes/08_sparse_ffn.md; with 64-row tiles it measured 2-5% slower, so they
  // keep runs). The down product's rows loader walks a run.
  constexpr bool kInterleaved = G == Gather::neuron_rows && S::BLOCK_M == 16;
  const int kt_step = kInterleaved ? p.splits : 1;
  const int kt_begin = kInterleaved ? unit.split : split_k_begin(k_tiles, p.splits, unit.split);
  const int kt_end = kInterleaved ? k_tiles : split_k_begin(k_tiles, p.splits, unit.split + 1);
  splitk::Accumulators<S> acc;
  gathered_tile<S, G>(p, smem, m0, n0, kt_begin, kt_end, acc, kt_step);

  // The epilogue runs once the tile's sum is here: at once without a split,
  // in the last split otherwise.
  bool finish = true;
  if (p.splits > 1) {
    if (p.atomic_sum) {
      float4* sum = reinterpret_cast<float4*>(p.partials) + size_t(unit.tile) * splitk::kSlotFloat4s<S>;
      atomic_add_slot<S>(sum, acc);
      finish = last_split_of_tile(p.counters + unit.tile, p.splits);
      if (finish) take_slot<S>(sum, acc);
    } else {
      float4* slots = reinterpret_cast<float4*>(p.partials);
      constexpr int SLOT = splitk::kSlotFloat4s<S>;
      splitk::write_slot<S>(slots + (size_t(unit.split) * tiles + unit.tile) * SLOT, acc);
      finish = last_split_of_tile(p.counters + unit.tile, p.splits);
      if (finish) {
        acc = splitk::Accumulators<S>{};
        for (int s = 0; s < p.splits; ++s) splitk::add_slot<S>(slots + (size_t(s) * tiles + unit.tile) * SLOT, acc);
      }
    }
  }
  if (finish)
    splitk::for_each_pair<S>(acc, m0, n0, [&](int r, int c, float v0, float v1) { finish_pair<E>(p, r, c, v0, v1); });
  // An interleaved unit's record holds its share of the tile's k slices in split order (its
  // slices are every splits-th one, which a record's single range cannot say).
  const int rec_begin = kInterleaved ? interleaved_share_begin(k_tiles, p.splits, unit.split) : kt_begin;
  const int rec_end = kInterleaved ? interleaved_share_begin(k_tiles, p.splits, unit.split + 1) : kt_end;
  trace_end(p.trace, p.trace_first_unit + int(blockIdx.x), p.trace_first_row + tm, tn, rec_begin * S::BLOCK_K,
            min(rec_end * S::BLOCK_K, p.k), t0);
}

template <class S, Gather G, Epilogue E>
const void* gathered_kernel_ready() {
  static const void* k = [] {
    const void* f = reinterpret_cast<const void*>(gathered_gemm_kernel<S, G, E>);
    CUDA_CHECK(cudaFuncSetAttribute(f, cudaFuncAttributeMaxDynamicSharedMemorySize, gathered_smem_bytes<S>()));
    return f;
  }();
  return k;
}

// M <= 16 (16 x 128 tiles): the fewest slices a unit of split-K takes, where
// the GPU's SMs are busy anyway. On an H100 at Llama-2-7B sizes, the wave
// model's units of 2-5 slices ran 3-7% slower than units of 6 or more
// (docs/notes/08_sparse_ffn.md).
constexpr int kMinSlicesPerUnit = 6;

// The plan of one gathered product: tile, split (1, or the wave model's when
// `split` is on: tiles x S units for SMs x resident blocks), grid.
struct GatherPlan {
  int block_m = 0, block_n = 0, threads = 0, smem = 0, stages = 0;
  int tiles_m = 0, tiles_n = 0, k_tiles = 0, blocks_per_sm = 0, splits = 1;
  int64_t grid = 0;
  int64_t units = 0;               // work units (trace records): a block each, or Stream-K's segments
  bool streamk = false;            // gather_streamk.cuh's kernel: the grid walks `stream_k`
  StreamKPlan stream_k;            // over columns of tiles, one worker per group of group_rows blocks
  int group_rows = 1;
  size_t streamk_workspace = 0;    // its partials and flags (lesson 04's layout)
  bool atomic_sum = false;         // splits > 1, this file's kernel: one fp32 sum a tile, not a slot a split
};

template <class S, Gather G, Epilogue E>
GatherPlan plan_with(int m, int n, int k, bool split) {
  GatherPlan q;
  q.block_m = S::BLOCK_M;
  q.block_n = S::BLOCK_N;
  q.threads = S::THREADS;
  q.smem = gathered_smem_bytes<S>();
  q.stages = S::STAGES;
  q.tiles_m = ceil_div(m, S::BLOCK_M);
  q.tiles_n = ceil_div(n, S::BLOCK_N);
  q.k_tiles = ceil_div(k, S::BLOCK_K);
  static const int resident =
      std::max(1, blocks_per_sm(gathered_kernel_ready<S, G, E>(), S::THREADS, gathered_smem_bytes<S>()));
  static const int sms = sm_count();
  q.blocks_per_sm = resident;
  const int64_t tiles = int64_t(q.tiles_m) * q.tiles_n;
  if (split) q.splits = clamp_split_k(split_k_for_waves(tiles, q.k_tiles, int64_t(sms) * resident), q.k_tiles);
  // M <= 16: units of at least kMinSlicesPerUnit slices, unless that leaves SMs without one.
  if (split && S::BLOCK_M == 16) q.splits = cap_split_for_slices(q.splits, tiles, q.k_tiles, sms, kMinSlicesPerUnit);
  q.grid = tiles * q.splits;
  q.units = q.grid;
  return q;
}

// The tile for M rows (see the shapes above), as a call f(S{}).
template <class F>
auto with_tile(int m, F&& f) {
  if (m <= 16) return f(Tile16{});
  if (m <= 64) return f(Tile64{});
  return f(Tile128{});
}

template <Gather G, Epilogue E>
GatherPlan plan_gathered(int m, int n, int k, bool split) {
  return with_tile(m, [&](auto s) { return plan_with<decltype(s), G, E>(m, n, k, split); });
}

// Workspace of a product when it splits: each split's fp32 slot of every
// tile (with `atomic_sum`, one slot a tile: the tile's sum), then one counter
// per tile. Nothing when it does not.
inline size_t gathered_slots_bytes(const GatherPlan& q) {
  const size_t slots = q.atomic_sum ? 1 : size_t(q.splits);
  return slots * size_t(q.tiles_m) * q.tiles_n * size_t(q.block_m) * q.block_n * sizeof(float);
}
inline size_t gathered_workspace_bytes(const GatherPlan& q) {
  if (q.streamk) return q.streamk_workspace;
  if (q.splits == 1) return 0;
  return gathered_slots_bytes(q) + size_t(q.tiles_m) * q.tiles_n * sizeof(uint32_t);
}

// Sets `p.splits`, and `p.partials` and `p.counters` inside `workspace` (of
// gathered_workspace_bytes(q)), for either kernel.
inline void bind_split_workspace(GatherParams& p, const GatherPlan& q, void* workspace) {
  p.splits = q.splits;
  if (q.splits == 1) return;
  p.partials = static_cast<float*>(workspace);
  p.counters = reinterpret_cast<uint32_t*>(static_cast<unsigned char*>(workspace) + gathered_slots_bytes(q));
}

template <Gather G, Epilogue E>
void launch_gathered(GatherParams p, const GatherPlan& q, void* workspace, cudaStream_t stream) {
  if (q.grid == 0) return;
  bind_split_workspace(p, q, workspace);
  with_tile(p.m, [&](auto s) {
    using S = decltype(s);
    cudaLaunchConfig_t config = {};
    cudaLaunchAttribute attr[1];
    attr[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
    attr[0].val.programmaticStreamSerializationAllowed = 1;
    config.gridDim = dim3(unsigned(q.grid));
    config.blockDim = dim3(S::THREADS);
    config.dynamicSmemBytes = size_t(gathered_smem_bytes<S>());
    config.stream = stream;
    config.attrs = attr;
    config.numAttrs = p.a_from_previous ? 1 : 0;
    void* args[] = {&p};
    CUDA_CHECK(cudaLaunchKernelExC(&config, gathered_kernel_ready<S, G, E>(), args));
    return 0;
  });
  CUDA_CHECK_LAUNCH();
}

}  // namespace wb::sparse
