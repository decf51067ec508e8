// The Tensor Memory Accelerator (TMA) and the mbarrier that tells its consumer
// when a copy has landed: the host side (a tensor map describing a 2-D fp16
// matrix in global memory) and thin device helpers over CCCL's `cuda::ptx`.
//
// A tensor map is a 128-byte descriptor built on the host. It names a global
// matrix (base, sizes, row stride), the box one copy moves (e.g. 64 x 128
// elements) and how the box is laid out in shared memory (here: the 128-byte
// swizzle that wgmma reads without bank conflicts). One thread then moves a
// whole box with one instruction; elements outside the matrix arrive as zeros,
// which is how the Hopper kernels handle tails in M, N and K for free.
//
// The encoder lives in the driver (libcuda). The runtime hands out its address
// (cudaGetDriverEntryPointByVersion), so nothing here links libcuda directly.
//
// TMA's rules that decide when the Hopper kernels can be used at all:
//   - the global base address is 16-byte aligned (cudaMalloc gives 256);
//   - every row stride is a multiple of 16 bytes: for fp16, K % 8 == 0 for A
//     and N % 8 == 0 for B. Shapes that break this fall back to lesson 03.
#pragma once

#include <cuda.h>  // CUtensorMap and its enums (types only: no libcuda link)
#include <cudaTypedefs.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <string>

#include <cuda/ptx>

#include "common/check.cuh"
#include "common/gemm.cuh"

namespace wb::hopper {

// ------------------------------------------------------------------ host side

// True when TMA can describe a row-major fp16 matrix with `cols` columns:
// its row stride (cols * 2 bytes) must be a multiple of 16 bytes.
inline bool tma_row_stride_ok(int cols) { return (int64_t(cols) * sizeof(__half)) % 16 == 0; }

// The driver's cuTensorMapEncodeTiled, looked up once through the runtime.
inline PFN_cuTensorMapEncodeTiled_v12000 tensor_map_encoder() {
  static PFN_cuTensorMapEncodeTiled_v12000 encode = [] {
    void* fn = nullptr;
    cudaDriverEntryPointQueryResult found = cudaDriverEntryPointSymbolNotFound;
    CUDA_CHECK(cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &fn, 12000, cudaEnableDefault, &found));
    if (fn == nullptr || found != cudaDriverEntryPointSuccess) {
      throw CudaError("the driver has no cuTensorMapEncodeTiled (a CUDA 12+ driver is needed for TMA)");
    }
    return reinterpret_cast<PFN_cuTensorMapEncodeTiled_v12000>(fn);
  }();
  return encode;
}

// A tensor map for a row-major fp16 matrix of `rows` x `cols` (leading dimension
// `cols`), copied in boxes of `box_rows` x `box_cols` into shared memory with the
// 128-byte swizzle. `box_cols` * 2 bytes must be 128 (one swizzle row), so one
// box row fills exactly one 128-byte shared-memory line. `promotion` widens
// each L2 request: 256 bytes suits the square GEMMs, whose neighbouring boxes
// want the other half soon; a kernel that reads every byte once, in boxes one
// 128-byte row wide, is faster without it.
inline CUtensorMap make_tensor_map_2d(const __half* base, int rows, int cols, int box_rows, int box_cols,
                                      CUtensorMapL2promotion promotion = CU_TENSOR_MAP_L2_PROMOTION_L2_256B) {
  if (box_cols * int(sizeof(__half)) != 128) throw CudaError("TMA box rows must be 128 bytes for the 128B swizzle");
  if (box_rows < 1 || box_rows > 256) throw CudaError("TMA box height must be 1..256 rows");
  if (!tma_row_stride_ok(cols)) throw CudaError("TMA needs row strides that are multiples of 16 bytes");
  if (reinterpret_cast<uintptr_t>(base) % 16 != 0) throw CudaError("TMA needs a 16-byte aligned base address");

  CUtensorMap map;
  // Dimension 0 is the contiguous one (columns), dimension 1 the rows.
  const cuuint64_t global_dim[2] = {cuuint64_t(cols), cuuint64_t(rows)};
  const cuuint64_t global_stride_bytes[1] = {cuuint64_t(cols) * sizeof(__half)};  // row pitch
  const cuuint32_t box_dim[2] = {cuuint32_t(box_cols), cuuint32_t(box_rows)};
  const cuuint32_t element_stride[2] = {1, 1};
  const CUresult r = tensor_map_encoder()(&map, CU_TENSOR_MAP_DATA_TYPE_FLOAT16, 2, const_cast<__half*>(base),
                                          global_dim, global_stride_bytes, box_dim, element_stride,
                                          CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B,
                                          promotion,
                                          CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);  // out of bounds: zeros
  if (r != CUDA_SUCCESS) {
    throw CudaError("cuTensorMapEncodeTiled failed with CUresult " + std::to_string(int(r)) + " for a " +
                    std::to_string(rows) + " x " + std::to_string(cols) + " matrix");
  }
  return map;
}

// A launch configuration with a 1-D cluster of `cluster` blocks along x. Not
// copyable: the configuration points at the attribute it holds.
struct ClusterLaunch {
  cudaLaunchConfig_t config = {};
  cudaLaunchAttribute attr[1] = {};
  ClusterLaunch(dim3 grid, int threads, size_t smem_bytes, cudaStream_t stream, int cluster) {
    attr[0].id = cudaLaunchAttributeClusterDimension;
    attr[0].val.clusterDim.x = unsigned(cluster);
    attr[0].val.clusterDim.y = 1;
    attr[0].val.clusterDim.z = 1;
    config.gridDim = grid;
    config.blockDim = dim3(unsigned(threads), 1, 1);
    config.dynamicSmemBytes = smem_bytes;
    config.stream = stream;
    config.attrs = attr;
    config.numAttrs = 1;
  }
  ClusterLaunch(const ClusterLaunch&) = delete;
  ClusterLaunch& operator=(const ClusterLaunch&) = delete;
};

// How many clusters of `cluster` blocks of this kernel can run at once. The
// GPCs decide, not only the SM count: a cluster's blocks share one GPC, and
// an H100's GPCs do not all have the same number of SMs, so clusters of 4 or
// 8 blocks of one SM each fill fewer than SMs / cluster slots.
inline int max_active_clusters(const void* kernel, int cluster, int threads, int smem_bytes) {
  const ClusterLaunch launch(dim3(unsigned(cluster * sm_count()), 1, 1), threads, size_t(smem_bytes), nullptr, cluster);
  int clusters = 0;
  CUDA_CHECK(cudaOccupancyMaxActiveClusters(&clusters, kernel, &launch.config));
  return clusters;
}

// ---------------------------------------------------------------- device side
// Everything below is Hopper-only; on older targets the bodies compile to
// nothing (the harness never launches a Hopper kernel there).
#if defined(__CUDA_ARCH__) && (__CUDA_ARCH__ >= 900)
#define WB_HOPPER_DEVICE 1
#else
#define WB_HOPPER_DEVICE 0
#endif

// One mbarrier per pipeline slot and direction lives in shared memory.
// "full": the producer announces the bytes it expects, TMA counts them down, and
//         the phase completes when the stage has landed.
// "empty": each consumer warp arrives once it no longer reads the stage.
__device__ __forceinline__ void mbarrier_init(uint64_t* bar, uint32_t arrivals) {
#if WB_HOPPER_DEVICE
  cuda::ptx::mbarrier_init(bar, arrivals);
#endif
}

// Makes the initialised barriers visible to the async proxy (TMA) before use.
__device__ __forceinline__ void fence_barrier_init() {
#if WB_HOPPER_DEVICE
  cuda::ptx::fence_mbarrier_init(cuda::ptx::sem_release, cuda::ptx::scope_cluster);
#endif
}

// Blocks until the phase with parity `phase` of `bar` has completed.
__device__ __forceinline__ void mbarrier_wait(uint64_t* bar, uint32_t phase) {
#if WB_HOPPER_DEVICE
  while (!cuda::ptx::mbarrier_try_wait_parity(bar, phase)) {
  }
#endif
}

// One arrival (a consumer releasing a stage).
__device__ __forceinline__ void mbarrier_arrive(uint64_t* bar) {
#if WB_HOPPER_DEVICE
  (void)cuda::ptx::mbarrier_arrive(bar);
#endif
}

// The producer's arrival: "expect `bytes` more from TMA in this phase".
__device__ __forceinline__ void mbarrier_arrive_expect_bytes(uint64_t* bar, uint32_t bytes) {
#if WB_HOPPER_DEVICE
  (void)cuda::ptx::mbarrier_arrive_expect_tx(cuda::ptx::sem_release, cuda::ptx::scope_cta, cuda::ptx::space_shared,
                                             bar, bytes);
#endif
}

// One TMA copy of a box whose top-left element is (row, col) of the matrix,
// into `smem_dst` (1024-byte aligned for the 128B swizzle); completion is
// counted on `bar`. Out-of-bounds parts of the box arrive as zeros.
__device__ __forceinline__ void tma_load_2d(void* smem_dst, const CUtensorMap* map, int row, int col, uint64_t* bar) {
#if WB_HOPPER_DEVICE
  const int32_t coords[2] = {col, row};  // innermost (contiguous) dimension first
  cuda::ptx::cp_async_bulk_tensor(cuda::ptx::space_shared, cuda::ptx::space_global, smem_dst, map, coords, bar);
#endif
}

// ------------------------------------------------------------------ clusters
// A thread-block cluster is a group of blocks scheduled together on one GPC
// that can read, write and arrive on each other's shared memory. The Hopper
// kernels pair the blocks of two vertically adjacent tiles: both need the same
// B tile, so each loads half of it and TMA "multicasts" the half into both.
#if defined(__CUDA_ARCH__) && defined(__CUDA_ARCH_FEAT_SM90_ALL)
#define WB_TMA_MULTICAST_DEVICE 1
#else
#define WB_TMA_MULTICAST_DEVICE 0
#endif

// This block's rank within its cluster.
__device__ __forceinline__ uint32_t cluster_cta_rank() {
#if WB_HOPPER_DEVICE
  return cuda::ptx::get_sreg_cluster_ctarank();
#else
  return 0;
#endif
}

// The cluster barrier in two halves, for a block that has work to do between
// "the others may now touch my shared memory" and "I need theirs ready".
__device__ __forceinline__ void cluster_arrive() {
#if WB_HOPPER_DEVICE
  cuda::ptx::barrier_cluster_arrive(cuda::ptx::sem_release);
#endif
}
// The arrival alone, without its release: no fence. Enough where what the
// others must see was published by a fence of its own (fence_barrier_init).
// A release arrival is a GPU-wide fence (MEMBAR.ALL.GPU), which under a full
// memory system costs microseconds.
__device__ __forceinline__ void cluster_arrive_relaxed() {
#if WB_HOPPER_DEVICE
  cuda::ptx::barrier_cluster_arrive(cuda::ptx::sem_relaxed);
#endif
}
__device__ __forceinline__ void cluster_wait() {
#if WB_HOPPER_DEVICE
  cuda::ptx::barrier_cluster_wait();
#endif
}

// Every thread of every block in the cluster arrives, then waits for all.
__device__ __forceinline__ void cluster_sync() {
  cluster_arrive();
  cluster_wait();
}

// `local`'s counterpart in the shared memory of cluster block `cta_rank`
// (which may be this block), as a generic pointer: plain loads through it
// read that block's shared memory (distributed shared memory). The other
// block must have written it before a cluster barrier, and must not exit
// before the reads are done (a second barrier).
template <class T>
__device__ __forceinline__ const T* cluster_peer(const T* local, uint32_t cta_rank) {
#if WB_HOPPER_DEVICE
  uint64_t remote;
  asm volatile("mapa.u64 %0, %1, %2;\n" : "=l"(remote) : "l"(local), "r"(cta_rank));
  return reinterpret_cast<const T*>(remote);
#else
  (void)cta_rank;
  return local;
#endif
}

// The sum of the float pair at `mine`'s offset over cluster blocks 0 ..
// blocks - 1, added in that order (the same bits every run); every block's
// pair is read before any is added, so the remote reads (hundreds of cycles
// each) are in flight together. MAX_BLOCKS bounds `blocks`.
template <int MAX_BLOCKS>
__device__ __forceinline__ float2 cluster_sum_in_order(const float2* mine, int blocks) {
  float2 v[MAX_BLOCKS];
#pragma unroll
  for (int r = 0; r < MAX_BLOCKS; ++r)
    if (r < blocks) v[r] = *cluster_peer(mine, uint32_t(r));
  float2 sum = make_float2(0.0f, 0.0f);
#pragma unroll
  for (int r = 0; r < MAX_BLOCKS; ++r)
    if (r < blocks) {
      sum.x += v[r].x;
      sum.y += v[r].y;
    }
  return sum;
}

// One arrival on the barrier at the same shared-memory offset as `bar` in the
// cluster's block `cta_rank` (which may be this block). The arrival keeps the
// default CTA-scope release: a cluster-scope release is a fence that waits for
// all of the thread's earlier memory operations, once per k tile, and the
// consumer has only finished wgmma reads to publish (already complete).
__device__ __forceinline__ void mbarrier_arrive_cluster(uint64_t* bar, uint32_t cta_rank) {
#if WB_HOPPER_DEVICE
  const uint32_t local = static_cast<uint32_t>(__cvta_generic_to_shared(bar));
  asm volatile(
      "{\n"
      ".reg .b32 remote;\n"
      "mapa.shared::cluster.u32 remote, %0, %1;\n"
      "mbarrier.arrive.shared::cluster.b64 _, [remote];\n"
      "}\n" ::"r"(local),
      "r"(cta_rank)
      : "memory");
#endif
}

// Stores v0, v1 at `local`'s offset in the shared memory of cluster block
// `cta_rank` (which may be this block) and counts their 8 bytes on that
// block's mbarrier at `bar`'s offset (st.async ... complete_tx). Nothing waits
// here: the receiver waits on its barrier until every byte it expects is in.
__device__ __forceinline__ void store_async_cluster(float* local, uint32_t cta_rank, float v0, float v1,
                                                    uint64_t* bar) {
#if WB_HOPPER_DEVICE
  const uint32_t address = static_cast<uint32_t>(__cvta_generic_to_shared(local));
  const uint32_t barrier = static_cast<uint32_t>(__cvta_generic_to_shared(bar));
  asm volatile(
      "{\n"
      ".reg .b32 remote, remote_bar;\n"
      "mapa.shared::cluster.u32 remote, %0, %1;\n"
      "mapa.shared::cluster.u32 remote_bar, %2, %1;\n"
      "st.async.shared::cluster.mbarrier::complete_tx::bytes.v2.f32 [remote], {%3, %4}, [remote_bar];\n"
      "}\n" ::"r"(address),
      "r"(cta_rank), "r"(barrier), "f"(v0), "f"(v1)
      : "memory");
#else
  (void)local;
  (void)cta_rank;
  (void)v0;
  (void)v1;
  (void)bar;
#endif
}

// Like tma_load_2d, but the box lands at the same offset in the shared memory
// of every block in `cta_mask` (bit i = cluster rank i), and each of those
// blocks' barrier at `bar`'s offset counts the bytes.
__device__ __forceinline__ void tma_load_2d_multicast(void* smem_dst, const CUtensorMap* map, int row, int col,
                                                      uint64_t* bar, uint16_t cta_mask) {
#if WB_TMA_MULTICAST_DEVICE
  const int32_t coords[2] = {col, row};
  cuda::ptx::cp_async_bulk_tensor(cuda::ptx::space_cluster, cuda::ptx::space_global, smem_dst, map, coords, bar,
                                  cta_mask);
#endif
}

// ------------------------------------------------------------ TMA stores
// The reverse direction: one thread copies a box from shared memory to global
// memory. Parts of the box outside the matrix are not written, so tails need
// no masks. Stores are tracked in "bulk groups" of the issuing thread, not on
// an mbarrier: commit closes a group, wait_group_read<N> returns once at most N
// groups still READ shared memory (the buffer may be rewritten), wait_group<N>
// once at most N are still WRITING global memory.

// Shared memory written by ordinary stores is visible to TMA (the async proxy)
// only after this fence in each writing thread, followed by a barrier.
__device__ __forceinline__ void fence_proxy_async_shared() {
#if WB_HOPPER_DEVICE
  asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
#endif
}

// The same between global memory written by ordinary stores (this thread's,
// or another block's it has acquired) and the TMA loads that follow.
__device__ __forceinline__ void fence_proxy_async_global() {
#if WB_HOPPER_DEVICE
  asm volatile("fence.proxy.async.global;\n" ::: "memory");
#endif
}

// Four 8 x 8 fp16 matrices from registers to shared memory in one warp
// instruction (sm_90). Register i of lane l holds two neighbouring values of
// matrix i, row l / 4, columns 2 (l % 4) and +1: the layout of an mma or wgmma
// accumulator pair. Lanes 8i .. 8i+7 give the shared addresses of matrix i's
// 8 rows (16 bytes each), so any row order or swizzle can be written.
__device__ __forceinline__ void stmatrix_x4(uint32_t smem_addr, uint32_t r0, uint32_t r1, uint32_t r2, uint32_t r3) {
#if WB_HOPPER_DEVICE
  asm volatile("stmatrix.sync.aligned.m8n8.x4.shared.b16 [%0], {%1, %2, %3, %4};\n" ::"r"(smem_addr), "r"(r0),
               "r"(r1), "r"(r2), "r"(r3)
               : "memory");
#endif
}

// The same, each matrix stored transposed: register i of lane l then lands in
// row 2 (l % 4) (and the next row) at column l / 4 of matrix i, so lanes
// 8i .. 8i+7 give the addresses of the rows of matrix i's TRANSPOSE: an
// accumulator tile written as its transpose, no shuffles needed.
__device__ __forceinline__ void stmatrix_x4_trans(uint32_t smem_addr, uint32_t r0, uint32_t r1, uint32_t r2,
                                                  uint32_t r3) {
#if WB_HOPPER_DEVICE
  asm volatile("stmatrix.sync.aligned.m8n8.x4.trans.shared.b16 [%0], {%1, %2, %3, %4};\n" ::"r"(smem_addr), "r"(r0),
               "r"(r1), "r"(r2), "r"(r3)
               : "memory");
#endif
}

// Copies the box at `smem_src` (laid out as the map's swizzle says) to the box
// whose top-left element is (row, col) of the matrix.
__device__ __forceinline__ void tma_store_2d(const CUtensorMap* map, const void* smem_src, int row, int col) {
#if WB_HOPPER_DEVICE
  const uint32_t src = static_cast<uint32_t>(__cvta_generic_to_shared(smem_src));
  asm volatile("cp.async.bulk.tensor.2d.global.shared::cta.bulk_group [%0, {%1, %2}], [%3];\n" ::"l"(
                   reinterpret_cast<uint64_t>(map)),
               "r"(col), "r"(row), "r"(src)
               : "memory");
#endif
}

__device__ __forceinline__ void tma_store_commit() {
#if WB_HOPPER_DEVICE
  asm volatile("cp.async.bulk.commit_group;\n" ::: "memory");
#endif
}

template <int kPending>
__device__ __forceinline__ void tma_store_wait_read() {
#if WB_HOPPER_DEVICE
  asm volatile("cp.async.bulk.wait_group.read %0;\n" ::"n"(kPending) : "memory");
#endif
}

// Hints the tensor map into the cache before its first use.
__device__ __forceinline__ void tma_prefetch_descriptor(const CUtensorMap* map) {
#if WB_HOPPER_DEVICE
  asm volatile("prefetch.tensormap [%0];" ::"l"(reinterpret_cast<uint64_t>(map)) : "memory");
#endif
}

}  // namespace wb::hopper
