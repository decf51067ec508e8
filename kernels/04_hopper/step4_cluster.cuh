// Lesson 04, step 4 (persistent_cluster): pairs of blocks share B through TMA
// multicast.
//
// Each 128 x 256 tile reads a 128 x 64 slice of A and a 64 x 256 slice of B per
// stage: 48 KB from L2 for 4 MFLOP. Two blocks launched as a thread-block
// cluster take vertically adjacent tiles (same columns, so the same B): each
// copies half of the B panels and TMA multicasts them into BOTH blocks' shared
// memory, so a block reads 32 KB per stage instead of 48. The price is
// coordination: a slot is refilled only when the consumers of both blocks have
// released it (they arrive on each other's "empty" barriers; a plain arrive,
// since a cluster-scope release would be a memory fence per k tile), and the
// pair walks the grouped order as one work unit (schedule/tile_order.hpp,
// cluster_pair_tile).
#pragma once

#include <algorithm>

#include "04_hopper/step3_persistent.cuh"

namespace wb::hopper {

struct ClusterPairs {
  static constexpr int kCluster = 2;
  static constexpr bool kPersistent = true;
  static constexpr int kGroupUnits = kWsGroupM / kCluster;  // rows of pair units per group
  static_assert((kWsBlockN / kPanelCols) % kCluster == 0,
                "each block of a cluster multicasts the same number of panels");

  int tiles_m, tiles_n, units_m, rank;
  __device__ ClusterPairs(int tiles_m_, int tiles_n_)
      : tiles_m(tiles_m_), tiles_n(tiles_n_), units_m(ceil_div(tiles_m_, kCluster)), rank(int(cluster_cta_rank())) {}

  __device__ int first_unit() const { return int(blockIdx.x) / kCluster; }
  __device__ int num_units() const { return units_m * tiles_n; }
  __device__ int unit_step() const { return int(gridDim.x) / kCluster; }
  // This block's tile of the pair (may lie past M when tiles_m is odd: its
  // loads are all zeros, and it stores nothing).
  __device__ TileCoord tile(int unit) const {
    TileCoord t = grouped_tile(unit, units_m, tiles_n, kGroupUnits);  // cluster_pair_tile, units_m kept
    t.m = t.m * kCluster + rank;
    return t;
  }
  __device__ bool inside(TileCoord t) const { return t.m < tiles_m; }
  __device__ int trace_unit(int unit) const {
    return cluster_tile_position(unit, rank, tiles_m, tiles_n, kGroupUnits);
  }

  // A: this block's own rows. B: panels rank*P .. rank*P+P-1, into both blocks;
  // the peer sends the other half, so the barrier still expects a whole stage.
  template <class Smem>
  __device__ void load(Smem& s, int slot, const CUtensorMap* a_map, const CUtensorMap* b_map, TileCoord t,
                       int kt) const {
    constexpr int kPanelsPerBlock = kWsBlockN / kPanelCols / kCluster;
    mbarrier_arrive_expect_bytes(&s.full[slot], Smem::kStageBytes);
    tma_load_2d(s.a[slot], a_map, t.m * kWsBlockM, kt * kBlockK, &s.full[slot]);
#pragma unroll
    for (int i = 0; i < kPanelsPerBlock; ++i) {
      const int p = rank * kPanelsPerBlock + i;
      tma_load_2d_multicast(s.b[slot] + p * Smem::kBPanelElems, b_map, kt * kBlockK, t.n * kWsBlockN + p * kPanelCols,
                            &s.full[slot], uint16_t((1u << kCluster) - 1));
    }
  }
  // The slot is refilled in both blocks at once: release it in both.
  template <class Smem>
  __device__ void release(Smem& s, int slot) const {
#pragma unroll
    for (int cta = 0; cta < kCluster; ++cta) mbarrier_arrive_cluster(&s.empty[slot], uint32_t(cta));
  }
  __device__ static void sync_blocks() { cluster_sync(); }    // the peer's barriers exist before anything arrives
  __device__ static void finish_blocks() { cluster_sync(); }  // no block leaves while its peer may still arrive

  // Host: as many pairs as fit at once, at most one per unit.
  static int grid(const GemmShape& s, int resident_pairs) {
    const int units = ceil_div(ceil_div(s.m, kWsBlockM), kCluster) * ceil_div(s.n, kWsBlockN);
    return kCluster * std::min(units, resident_pairs);
  }
  // Clusters that fit at once: the GPCs decide, not only the SM count.
  static int resident(const void* kernel, int smem_bytes) {
    return std::max(1, max_active_clusters(kernel, kCluster, kWsThreads, smem_bytes));
  }
};

}  // namespace wb::hopper
