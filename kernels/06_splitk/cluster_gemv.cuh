// Lesson 06, step 7: the weights streamed at the memory's pace by TMA, and the
// splits of a column strip added in the shared memory of a thread-block
// cluster: no workspace, no counters, no second launch, deterministic.
//
// Each block owns a 64-column strip of B and a range of its rows, one block
// per SM. One producer thread asks TMA for a ring of 128 x 64 boxes (16 KiB
// each, 10 or 11 of them) at once and refills a slot as soon as it is free:
// over 170 KiB in flight per SM from the start, and the copy engine rather
// than thousands of load instructions keeps them coming. Eight consumer warps
// run the tensor cores with the roles swapped, as lesson 07 does at M <= 8:
// the weights are the mma's 16-row operand (ldmatrix.trans reads them from the
// box, whose rows are k while the mma's rows are n) and the tokens its 8
// columns, so M = 1 wastes 7 of 8 columns instead of 15 of 16 rows. Warp w
// takes 16 columns and half of every stage's k.
//
// The S blocks that split one strip's K are launched as one cluster. Column c
// of the strip belongs to block c S / 64 (cluster_column_owner). When a warp
// has summed its k, it sends each pair of sums straight into the owner's
// shared memory with st.async, which counts the bytes on the owner's mbarrier;
// the owner waits for all of them, adds them in split order and stores its
// columns of C. No block waits for a fence or a global atomic, and the bits
// are the same every run.
//
// Preconditions: sm_90 (TMA, clusters), M <= 16, N and K multiples of 8 (TMA
// row strides are multiples of 16 bytes). Tails in N and K arrive from TMA
// as zeros. Measured: docs/lessons/06_splitk.md.
#pragma once

#include <cuda_fp16.h>

#include <algorithm>
#include <array>
#include <string>

#include "common/check.cuh"
#include "common/gemm.cuh"
#include "common/mma.cuh"
#include "common/tma.cuh"
#include "common/trace.cuh"
#include "models/wave_model.hpp"
#include "06_splitk/splitk_gemm.cuh"
#include "schedule/split_k.hpp"

namespace wb::splitk {

constexpr int kClusterMaxM = 16;
constexpr int kClusterCols = 64;     // a block's strip of N: one 128-byte TMA box row
constexpr int kClusterStageK = 128;  // k rows per stage: a 128 x 64 box of B, 16 KiB
// Consumer warps: warp w owns columns 16 (w % 4) .. +15 of the strip and the
// k16 steps 4 (w / 4) .. +3 of every stage.
constexpr int kClusterConsumers = 8;
constexpr int kClusterThreads = (kClusterConsumers + 1) * 32;  // + one producer warp
constexpr int kClusterMaxSplit = 8;  // blocks a cluster may portably hold
constexpr int kClusterSmemBudget = 227 * 1024;  // an sm_90 block's shared memory at most: one block per SM

// Shared memory of one stage: B's box, then A's two 64-deep boxes of 8 T
// token rows (T = 1 for M <= 8, 2 for M <= 16; rows past M arrive as zeros).
template <int T>
struct ClusterStage {
  static constexpr int kBBytes = kClusterStageK * kClusterCols * 2;
  static constexpr int kABoxRows = 8 * T;
  static constexpr int kABoxBytes = kABoxRows * 128;
  static constexpr int kBytes = kBBytes + 2 * kABoxBytes;  // a multiple of 1024: every box stays aligned
  // The inbox where the cluster's blocks put their sums of this block's
  // columns: [split][k half][column][token], at most 64 / S + 1 columns.
  static constexpr int kInboxRow = kClusterCols + kClusterMaxSplit;  // S splits x (64 / S + 1) columns at most
  static constexpr int kInboxBytes = 2 * kABoxRows * kInboxRow * 4;
  // Ring slots: as many as fit (11 of 18 KiB at M <= 8, 10 of 20 KiB at M <= 16).
  static constexpr int kStages = (kClusterSmemBudget - 1024 - kInboxBytes - 256) / kBytes;
  static constexpr int kSmem = 1024 + kStages * kBytes + kInboxBytes + (2 * kStages + 1) * 8;
};

// Column `col` of a strip split `splits` ways belongs to the block of rank
// owner: columns [64 r / S, 64 (r + 1) / S) are block r's to add and store.
__host__ __device__ __forceinline__ int cluster_column_begin(int rank, int splits) {
  return kClusterCols * rank / splits;
}
__host__ __device__ __forceinline__ int cluster_column_owner(int col, int splits) {
  return (col * splits + splits - 1) / kClusterCols;
}

template <int T>
__global__ void __launch_bounds__(kClusterThreads, 1)
    cluster_gemv_kernel(const __grid_constant__ CUtensorMap a_map, const __grid_constant__ CUtensorMap b_map,
                        __half* __restrict__ c, int m, int n, int k, int splits, TraceRecord* trace) {
  using Stage = ClusterStage<T>;
  extern __shared__ unsigned char smem_raw[];
  // The 128-byte swizzle repeats every 1024 bytes: each box starts on such a boundary.
  unsigned char* smem = reinterpret_cast<unsigned char*>((reinterpret_cast<uintptr_t>(smem_raw) + 1023) & ~uintptr_t(1023));
  float* inbox = reinterpret_cast<float*>(smem + Stage::kStages * Stage::kBytes);
  uint64_t* full = reinterpret_cast<uint64_t*>(smem + Stage::kStages * Stage::kBytes + Stage::kInboxBytes);
  uint64_t* empty = full + Stage::kStages;
  uint64_t* inbox_full = empty + Stage::kStages;  // the sums of this block's columns have all landed

  const uint64_t t0 = trace_start(trace);
  const int warp = int(threadIdx.x) / 32, lane = int(threadIdx.x) % 32;
  const int split = int(hopper::cluster_cta_rank());  // the cluster is the strip's `splits` blocks
  const int strip = int(blockIdx.x) / splits;
  const int k_stages = ceil_div(k, kClusterStageK);
  const int s_begin = split_k_begin(k_stages, splits, split), s_end = split_k_begin(k_stages, splits, split + 1);
  const int stages = s_end - s_begin;
  // Inbox rows are as wide as the widest share of the columns.
  const int row = cluster_column_begin(1, splits) + 1;

  if (threadIdx.x == 0) {
    for (int s = 0; s < Stage::kStages; ++s) {
      hopper::mbarrier_init(&full[s], 1);
      hopper::mbarrier_init(&empty[s], kClusterConsumers);
    }
    hopper::mbarrier_init(inbox_full, 1);
    hopper::fence_barrier_init();
  }
  __syncthreads();
  hopper::cluster_arrive_relaxed();  // this block's inbox may be written from now on (published by the fence above)

  if (warp == kClusterConsumers) {
    // Producer: the first kStages boxes go out at once, the rest as slots free up.
    if (lane == 0) {
      hopper::tma_prefetch_descriptor(&a_map);
      hopper::tma_prefetch_descriptor(&b_map);
      for (int i = 0; i < stages; ++i) {
        const int slot = i % Stage::kStages;
        if (i >= Stage::kStages) hopper::mbarrier_wait(&empty[slot], ((i / Stage::kStages) & 1) ^ 1);
        unsigned char* st = smem + slot * Stage::kBytes;
        const int k0 = (s_begin + i) * kClusterStageK;
        hopper::mbarrier_arrive_expect_bytes(&full[slot], Stage::kBytes);
        hopper::tma_load_2d(st, &b_map, k0, strip * kClusterCols, &full[slot]);                 // (128 k, 64 n)
        hopper::tma_load_2d(st + Stage::kBBytes, &a_map, 0, k0, &full[slot]);                  // (8 T tokens, 64 k)
        hopper::tma_load_2d(st + Stage::kBBytes + Stage::kABoxBytes, &a_map, 0, k0 + 64, &full[slot]);
      }
    }
    __syncwarp();
    hopper::cluster_wait();
  } else {
    const int group = warp % 4, half = warp / 4;  // columns 16 group .. +15, k16 steps 4 half .. +3
    // ldmatrix.trans of B: lanes 8 j .. 8 j + 7 give the rows of matrix j, which
    // is (k 0-7 | 8-15) x (n 0-7 | 8-15) of the warp's 16 x 16: the mma's a[j].
    const int j = lane / 8, r = lane % 8;
    const int b_chunk = 2 * group + (j % 2);
    const uint32_t b_lane = uint32_t(((j / 2) * 8 + r) * 128 + ((b_chunk ^ r) << 4));
    // ldmatrix of A: matrix j is tokens (j / 2) * 8 + 0..7 by k 0-7 | 8-15 of the step.
    const int token_row = (j / 2) * 8 + r;
    float acc[2][T][4];
#pragma unroll
    for (int h = 0; h < 2; ++h)
#pragma unroll
      for (int t = 0; t < T; ++t)
#pragma unroll
        for (int e = 0; e < 4; ++e) acc[h][t][e] = 0.0f;

    for (int i = 0; i < stages; ++i) {
      const int slot = i % Stage::kStages;
      hopper::mbarrier_wait(&full[slot], (i / Stage::kStages) & 1);
      const uint32_t st = shared_address(smem + slot * Stage::kBytes);
#pragma unroll
      for (int step = 0; step < kClusterStageK / 32; ++step) {
        const int ks = half * (kClusterStageK / 32) + step;
        uint32_t w[4];
        ldmatrix_x4_trans(w, st + b_lane + uint32_t(ks * 16 * 128));
        const int chunk = (ks % 4) * 2 + (j % 2);
        const uint32_t a_addr = st + uint32_t(Stage::kBBytes + (ks / 4) * Stage::kABoxBytes + token_row * 128 +
                                              ((chunk ^ (token_row & 7)) << 4));
        if constexpr (T == 1) {
          uint32_t tok[2];
          ldmatrix_x2(tok, a_addr);
          mma_m16n8k16_f32(acc[step & 1][0], w, tok);
        } else {
          uint32_t tok[4];
          ldmatrix_x4(tok, a_addr);
          const uint32_t t0r[2] = {tok[0], tok[1]}, t1r[2] = {tok[2], tok[3]};
          mma_m16n8k16_f32(acc[step & 1][0], w, t0r);
          mma_m16n8k16_f32(acc[step & 1][1], w, t1r);
        }
      }
      __syncwarp();
      if (lane == 0) hopper::mbarrier_arrive(&empty[slot]);
    }

    // Each pair of sums goes straight to the inbox of the block that owns its
    // column: d[0], d[1] are column g of the warp's 16, tokens 2 p and 2 p + 1;
    // d[2], d[3] the same tokens of column g + 8.
    hopper::cluster_wait();  // every block of the cluster is running, its inbox barrier set up
    const int g = lane / 4, p = lane % 4;
#pragma unroll
    for (int t = 0; t < T; ++t)
#pragma unroll
      for (int e = 0; e < 2; ++e) {
        const int tok = t * 8 + 2 * p, col = 16 * group + g + 8 * e;
        const int owner = cluster_column_owner(col, splits);
        const int at = ((split * 2 + half) * row + col - cluster_column_begin(owner, splits)) * Stage::kABoxRows + tok;
        hopper::store_async_cluster(inbox + at, uint32_t(owner), acc[0][t][2 * e] + acc[1][t][2 * e],
                            acc[0][t][2 * e + 1] + acc[1][t][2 * e + 1], inbox_full);
      }
  }

  // This block's columns: every split's two sums of each, added in split order.
  const int c_begin = cluster_column_begin(split, splits), width = cluster_column_begin(split + 1, splits) - c_begin;
  if (threadIdx.x == 0)
    hopper::mbarrier_arrive_expect_bytes(inbox_full, uint32_t(2 * splits * width * Stage::kABoxRows * 4));
  hopper::mbarrier_wait(inbox_full, 0);
  for (int e = int(threadIdx.x); e < m * width; e += kClusterThreads) {
    const int tok = e / width, col = e % width;
    const int gcol = strip * kClusterCols + c_begin + col;
    float sum = 0.0f;
    for (int q = 0; q < 2 * splits; ++q) sum += inbox[(q * row + col) * Stage::kABoxRows + tok];
    if (gcol < n) c[int64_t(tok) * n + gcol] = __float2half_rn(sum);
  }
  trace_end(trace, int(blockIdx.x), 0, strip, s_begin * kClusterStageK, min(k, s_end * kClusterStageK), t0);
}

// ---------------------------------------------------------------- host side

// Why the kernel cannot take this shape ("" when it can).
inline std::string cluster_skip_reason(const GemmShape& s) {
  if (s.m > kClusterMaxM) return "made for M <= " + std::to_string(kClusterMaxM) + " (M is " + std::to_string(s.m) + ")";
  if (s.n % 8 != 0 || s.k % 8 != 0) return "needs N and K multiples of 8 (TMA row strides of 16 bytes)";
  return "";
}

template <int T>
const void* cluster_kernel_ready() {
  static const bool configured = [] {
    CUDA_CHECK(cudaFuncSetAttribute(cluster_gemv_kernel<T>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                    ClusterStage<T>::kSmem));
    CUDA_CHECK(cudaFuncSetAttribute(cluster_gemv_kernel<T>, cudaFuncAttributeNonPortableClusterSizeAllowed, 0));
    return true;
  }();
  (void)configured;
  return reinterpret_cast<const void*>(&cluster_gemv_kernel<T>);
}

// Calls f(std::integral_constant<int, T>) with T = token tiles of 8 for M.
template <class F>
void with_token_tiles(int m, F&& f) {
  if (m <= 8)
    f(std::integral_constant<int, 1>());
  else if (m <= 16)
    f(std::integral_constant<int, 2>());
  else
    throw CudaError("the cluster kernel takes M from 1 to 16, not " + std::to_string(m));
}

// How many clusters of `split` blocks fit at once, asked of the driver once per split.
template <int T>
int cluster_max_active(int split) {
  static const std::array<int, kClusterMaxSplit + 1> fit = [] {
    std::array<int, kClusterMaxSplit + 1> f{};
    for (int s = 1; s <= kClusterMaxSplit; ++s)
      f[size_t(s)] = hopper::max_active_clusters(cluster_kernel_ready<T>(), s, kClusterThreads, ClusterStage<T>::kSmem);
    return f;
  }();
  return fit[size_t(split)];
}

// The strips, the split and the ring of a launch (blocks_per_sm is left to
// cluster_config: it asks the driver). The wave model's split is lowered
// until every strip's cluster runs at once: an H100's GPCs do not all have
// the same number of SMs, so fewer clusters of 4 or 8 whole-SM blocks fit
// than SMs / 4 or / 8, and the rest would wait for a second wave.
inline SplitKPlanned plan_cluster(const GemmShape& s, int requested) {
  SplitKPlanned q;
  q.block_m = kClusterMaxM;
  q.block_n = kClusterCols;
  q.block_k = kClusterStageK;
  q.threads = kClusterThreads;
  q.tiles_m = 1;
  q.tiles_n = ceil_div(s.n, kClusterCols);
  q.k_tiles = std::max(1, ceil_div(s.k, kClusterStageK));
  static const int sms = sm_count();
  q.slots = sms;  // one block per SM: its ring takes most of the shared memory
  const int most = std::min(kClusterMaxSplit, q.k_tiles);
  q.wanted = requested > 0 ? requested : split_k_for_waves(q.tiles_n, most, q.slots);
  q.splits = std::clamp(q.wanted, 1, most);
  with_token_tiles(std::max(1, std::min(s.m, kClusterMaxM)), [&](auto tc) {
    constexpr int T = decltype(tc)::value;
    q.smem = ClusterStage<T>::kSmem;
    q.stages = ClusterStage<T>::kStages;
    if (requested <= 0) {
      while (q.splits > 1 && cluster_max_active<T>(q.splits) < q.tiles_n) --q.splits;
      q.wanted = q.splits;  // the model's own choice: nothing was clamped
    }
  });
  q.grid = q.units = int64_t(q.tiles_n) * q.splits;
  return q;
}

inline KernelConfig cluster_config(const GemmShape& s, int requested) {
  SplitKPlanned q = plan_cluster(s, requested);
  with_token_tiles(std::max(1, std::min(s.m, kClusterMaxM)), [&](auto tc) {
    q.blocks_per_sm = blocks_per_sm(cluster_kernel_ready<decltype(tc)::value>(), kClusterThreads, q.smem);
  });
  return kernel_config(q, false);
}

// "" or why the split differs from the one asked for.
inline std::string cluster_split_note(const GemmShape& s, int requested) {
  const SplitKPlanned q = plan_cluster(s, requested);
  if (q.wanted <= q.splits) return "";
  return "split " + std::to_string(q.wanted) + " clamped to " + std::to_string(q.splits) + " (at most " +
         std::to_string(kClusterMaxSplit) + " blocks a cluster and one 128-deep stage a split; K has " +
         std::to_string(q.k_tiles) + ")";
}

inline void launch_cluster(const GemmArgs& g, int requested, cudaStream_t stream) {
  const GemmShape s{g.m, g.n, g.k};
  const std::string why = cluster_skip_reason(s);
  if (!why.empty()) throw CudaError("cluster kernel: " + why);
  const SplitKPlanned q = plan_cluster(s, requested);
  with_token_tiles(g.m, [&](auto tc) {
    constexpr int T = decltype(tc)::value;
    const CUtensorMap a_map = hopper::make_tensor_map_2d(g.a, g.m, g.k, 8 * T, 64);
    // B is read once, 128 bytes of a row at a time: no 256-byte L2 requests.
    const CUtensorMap b_map = hopper::make_tensor_map_2d(g.b, g.k, g.n, kClusterStageK, kClusterCols,
                                                         CU_TENSOR_MAP_L2_PROMOTION_NONE);
    const hopper::ClusterLaunch launch(dim3(unsigned(q.grid), 1, 1), kClusterThreads, ClusterStage<T>::kSmem, stream,
                                       q.splits);
    cluster_kernel_ready<T>();
    CUDA_CHECK(cudaLaunchKernelEx(&launch.config, cluster_gemv_kernel<T>, a_map, b_map, g.c, g.m, g.n, g.k, q.splits,
                                  g.trace));
  });
  CUDA_CHECK_LAUNCH();
}

}  // namespace wb::splitk
