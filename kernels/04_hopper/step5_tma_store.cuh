// Lesson 04, step 5 (tma_store): the epilogue through shared memory and TMA
// stores.
//
// Until now each consumer thread wrote its accumulator straight to global
// memory, fp16 pairs of 4 bytes, 8 rows x 16 bytes per warp instruction: 128
// store instructions per thread per tile, during which no wgmma is issued.
// Here each consumer warpgroup writes 64 x 128 of its result into a 16 KB
// shared-memory buffer in the 128B-swizzled layout, with stmatrix (one warp
// instruction stores four 8 x 8 fp16 matrices straight from the accumulator
// layout, conflict-free), fences it for the async proxy, and one thread hands
// the two 64 x 64 boxes to TMA; then the second half, whose activation and
// rounding run while TMA still reads the first (kPackAhead; the cluster and
// ping-pong kernels keep more state live and would spill those 32 extra
// registers, so they convert while they write). The copy engine writes whole
// 128-byte lines, clips rows and columns past M and N itself, and drains
// while the consumers are already multiplying the next tile.
// Swizzle: 16-byte chunk q of line r of a box sits at chunk q ^ (r % 8), so
// the 8 rows of a matrix fall in 8 different chunks and no bank is hit twice.
#pragma once

#include <cstdint>

#include "04_hopper/pipeline.cuh"
#include "04_hopper/step7_fused_activation.cuh"

namespace wb::hopper {

// The staging buffer for the output tile: each consumer warpgroup owns 64 rows
// x 128 columns (two 64 x 64 TMA boxes, 128B-swizzled, 16 KB) and stores its
// 64 x 256 accumulator through it in two halves. 4 stages (192 KB) + 32 KB
// still fit the 227 KB a block may have.
constexpr int kStoreCols = 128;        // <- columns staged at a time per consumer
constexpr int kStagingElems = kConsumers * 64 * kStoreCols;

// Before a block that issued TMA stores exits: its shared memory must stay
// valid until TMA has READ it. The writes to global memory need not have
// landed (the end of the kernel makes them visible), so the block leaves as
// soon as the copy engine holds the data.
__device__ __forceinline__ void tma_store_exit_wait() { tma_store_wait_read<0>(); }

// Stores 64 x 128 of one warpgroup's accumulator at (row0, col0) of C through
// its staging buffer: stmatrix into the swizzled boxes, a fence for the async
// proxy, then one thread issues the two TMA stores.
template <Activation kAct, bool kPackAhead>
__device__ __forceinline__ void store_64x128_via_smem(const float (&d)[64], __half* staging, const CUtensorMap* c_map,
                                                      int row0, int col0, int barrier_id) {
  constexpr int kBoxBytes = 64 * kSwizzleBytes;  // one (64, 64) fp16 box
  constexpr int kSlices = kStoreCols / 8;        // 8-column slices
  const int lane = threadIdx.x % 32;
  const int warp = (threadIdx.x % kWarpgroupThreads) / 32;
  const bool leader = threadIdx.x % kWarpgroupThreads == 0;
  const uint32_t base = smem_u32(staging);
  // Slice j's fp16 pair in rows `row` (upper = 0) and `row + 8`, activation applied.
  auto pack = [&](int j, int upper) { return epilogue_pair<kAct>(d[4 * j + 2 * upper], d[4 * j + 2 * upper + 1], j); };
  uint32_t packed[kSlices][2];
#pragma unroll
  for (int j = 0; j < kSlices; ++j) {
    if constexpr (kPackAhead) packed[j][0] = pack(j, 0), packed[j][1] = pack(j, 1);
  }
  if (leader) tma_store_wait_read<0>();  // the previous half has left the buffer
  warpgroup_barrier(barrier_id);
  // One stmatrix per two slices: matrices (j, rows 0-7), (j, rows 8-15),
  // (j+1, rows 0-7), (j+1, rows 8-15) of the warp's 16 rows; lane l gives the
  // address of row l % 8 of matrix l / 8 (the swizzle is in the address).
  const int lane_row = 16 * warp + 8 * ((lane / 8) % 2) + lane % 8;  // lane_row % 8 == lane % 8
#pragma unroll
  for (int j = 0; j < kSlices; j += 2) {
    const int slice = j + lane / 16;
    const uint32_t addr = base + lane_row * kSwizzleBytes + (slice / 8) * kBoxBytes + ((slice % 8) ^ (lane % 8)) * 16;
    if constexpr (kPackAhead) {
      stmatrix_x4(addr, packed[j][0], packed[j][1], packed[j + 1][0], packed[j + 1][1]);
    } else {
      stmatrix_x4(addr, pack(j, 0), pack(j, 1), pack(j + 1, 0), pack(j + 1, 1));
    }
  }
  fence_proxy_async_shared();
  warpgroup_barrier(barrier_id);
  if (leader) {
#pragma unroll
    for (int box = 0; box < kStoreCols / kPanelCols; ++box)
      tma_store_2d(c_map, reinterpret_cast<uint8_t*>(staging) + box * kBoxBytes, row0, col0 + box * kPanelCols);
    tma_store_commit();
  }
}

// A 64 x 256 accumulator is two 64 x 128 halves: slices j = 0..15 are d[0..63],
// slices 16..31 are d[64..127] (see the layout in common/wgmma.cuh).
template <Activation kAct, bool kPackAhead>
__device__ __forceinline__ void store_tile_via_smem(const float (&d)[kWsBlockN / 2], __half* staging,
                                                    const CUtensorMap* c_map, int row0, int col0, int barrier_id) {
#pragma unroll
  for (int half = 0; half < kWsBlockN / kStoreCols; ++half)
    store_64x128_via_smem<kAct, kPackAhead>(*reinterpret_cast<const float(*)[64]>(d + 64 * half), staging, c_map,
                                            row0, col0 + half * kStoreCols, barrier_id);
}

// Step 5's epilogue policy for the warp-specialised kernel (step 2).
template <Activation kAct, bool kPackAhead>
struct TmaStore {
  static constexpr int kStagingElems = kConsumers * 64 * kStoreCols;

  __half* staging;  // this consumer's 64 x 128 of the buffer
  int consumer;
  template <class Smem>
  __device__ TmaStore(Smem& s, int consumer_) : staging(s.c + consumer_ * 64 * kStoreCols), consumer(consumer_) {}

  __device__ void store(const float (&acc)[kWsBlockN / 2], __half*, const CUtensorMap* c_map, int, int, int row0,
                        int col0, bool inside) {
    if (inside)  // the same for the whole warpgroup (its named barrier)
      store_tile_via_smem<kAct, kPackAhead>(acc, staging, c_map, row0, col0, 1 + consumer);
  }
  __device__ void finish() {
    if (threadIdx.x % kWarpgroupThreads == 0) tma_store_exit_wait();  // smem stays valid until TMA has read it
  }
};

// The epilogues as templates of the activation alone: with the converting
// half ahead (one block per cluster), and without (clusters of two).
template <Activation kAct>
using TmaStoreEpilogue = TmaStore<kAct, true>;
template <Activation kAct>
using TmaStoreClusterEpilogue = TmaStore<kAct, false>;

}  // namespace wb::hopper
