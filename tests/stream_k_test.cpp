// Exhaustive tests of the Stream-K schedule over small grids: every k tile of
// every output tile is computed exactly once; each worker does an equal share
// (within one k tile) of the shared tiles; a worker's only segment it does not
// own is its first (one workspace slot each); the owner's contributor list is
// exactly the other segments of its tile; trace indices are dense and unique.
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "harness/report.hpp"
#include "schedule/stream_k.hpp"

namespace {

using namespace wb;

struct Walked {
  std::vector<std::vector<WorkUnit>> by_worker;
};

Walked walk_all(const StreamKPlan& p, bool numbered) {
  Walked w;
  w.by_worker.resize(size_t(p.workers));
  for (int worker = 0; worker < p.workers; ++worker) {
    StreamKWalk walk = numbered ? StreamKWalk(p, worker, stream_k_segments_before(p, worker)) : StreamKWalk(p, worker);
    for (WorkUnit u; walk.next(&u);) w.by_worker[size_t(worker)].push_back(u);
  }
  return w;
}

// all_shared: lesson 06's plan, every tile shared; otherwise lesson 04's, the last wave's.
void check_plan(int tiles, int k_iters, int workers, bool all_shared = false) {
  const StreamKPlan p =
      all_shared ? stream_k_plan_all(tiles, k_iters, workers) : stream_k_plan(tiles, k_iters, workers);
  const std::string where = "tiles " + std::to_string(tiles) + " k_iters " + std::to_string(k_iters) + " workers " +
                            std::to_string(workers) + (all_shared ? " (all shared)" : "");
  ASSERT_GE(p.sk_tiles, 0) << where;
  if (all_shared) {
    ASSERT_EQ(p.sk_tiles, tiles) << where;
  } else {
    ASSERT_LT(p.sk_tiles, workers) << where;
    const bool share = tiles > workers && k_iters >= 2 && 2 * (tiles % workers) <= workers;
    ASSERT_EQ(p.sk_tiles, share ? tiles % workers : 0) << where;
    if (share) ASSERT_EQ(p.first_shared() % workers, 0) << where << ": whole tiles come in full waves";
  }

  const Walked w = walk_all(p, true);
  std::vector<int> covered(size_t(tiles) * k_iters, 0);
  std::set<int> indices;
  // tile -> (worker, segment) of the segments that do not start at k = 0
  std::map<int, std::set<int>> partial_writers;
  std::map<int, int> owner_of;
  int64_t units = 0;
  for (int worker = 0; worker < workers; ++worker) {
    int64_t shared_iters = 0;
    bool in_shared_run = false;
    const auto& list = w.by_worker[size_t(worker)];
    for (size_t i = 0; i < list.size(); ++i) {
      const WorkUnit& u = list[i];
      ++units;
      ASSERT_GE(u.tile, 0) << where;
      ASSERT_LT(u.tile, tiles) << where;
      ASSERT_LT(u.k_begin, u.k_end) << where << ": empty unit";
      ASSERT_GE(u.k_begin, 0) << where;
      ASSERT_LE(u.k_end, k_iters) << where;
      for (int k = u.k_begin; k < u.k_end; ++k) covered[size_t(u.tile) * k_iters + k]++;
      ASSERT_TRUE(indices.insert(u.index).second) << where << ": index " << u.index << " twice";
      if (u.tile >= p.first_shared()) {
        shared_iters += u.k_end - u.k_begin;
        if (!owns_tile(u)) {
          ASSERT_FALSE(in_shared_run) << where << ": worker " << worker << " has a segment it does not own after its first";
          ASSERT_TRUE(partial_writers[u.tile].insert(worker).second) << where;
        } else {
          ASSERT_EQ(owner_of.count(u.tile), 0u) << where << ": two owners of tile " << u.tile;
          owner_of[u.tile] = worker;
        }
        in_shared_run = true;
      } else {
        ASSERT_FALSE(in_shared_run) << where << ": a whole tile after the shared run";
        ASSERT_TRUE(whole_tile(p, u)) << where << ": a data-parallel tile split";
        ASSERT_EQ(u.tile % workers, worker) << where;
        ASSERT_EQ(u.index, u.tile) << where << ": whole tile t is unit t";
      }
    }
    // Equal shares: within one k tile of the mean.
    const double mean = double(p.sk_tiles) * k_iters / workers;
    ASSERT_LE(std::abs(double(shared_iters) - mean), 1.0) << where << ": worker " << worker;
  }
  for (size_t i = 0; i < covered.size(); ++i) ASSERT_EQ(covered[i], 1) << where << ": k tile " << i;
  ASSERT_EQ(units, stream_k_units(p)) << where;
  ASSERT_EQ(int64_t(indices.size()), units) << where;
  ASSERT_EQ(*indices.begin(), 0) << where;
  ASSERT_EQ(*indices.rbegin(), units - 1) << where;
  // Each shared tile has one owner, and its contributors are exactly the other segments.
  for (int t = p.first_shared(); t < tiles; ++t) {
    ASSERT_EQ(owner_of.count(t), 1u) << where << ": tile " << t << " has no owner";
    std::set<int> contributors;
    for (int c = stream_k_next_contributor(p, t, owner_of[t]); c >= 0; c = stream_k_next_contributor(p, t, c))
      contributors.insert(c);
    ASSERT_EQ(contributors, partial_writers[t]) << where << ": tile " << t;
  }
}

TEST(StreamK, EveryKTileOnceAndContributorsMatchUpTo40Tiles) {
  for (int workers = 1; workers <= 20; ++workers)
    for (int tiles = 1; tiles <= 40; ++tiles)
      for (int k_iters = 1; k_iters <= 9; ++k_iters) check_plan(tiles, k_iters, workers);
}

TEST(StreamK, EveryTileSharedUpTo40Tiles) {
  for (int workers = 1; workers <= 20; ++workers)
    for (int tiles = 1; tiles <= 40; ++tiles)
      for (int k_iters = 1; k_iters <= 9; ++k_iters) check_plan(tiles, k_iters, workers, true);
}

TEST(StreamK, SkinnyShapesOnAnH100AllShared) {
  // Lesson 06: 16 x 128 tiles, 64-wide k tiles, 3 workers per SM on 132 SMs.
  check_plan(32, 64, 396, true);    // N = K = 4096: about 12 workers per tile
  check_plan(128, 256, 396, true);  // N = K = 16384
  check_plan(112, 64, 396, true);   // N = 14336, K = 4096
  check_plan(1, 3, 396, true);      // more workers than k tiles: most get nothing
}

TEST(StreamK, ShapesOnAnH100) {
  // 128 x 256 tiles, 64-wide k tiles, 132 workers.
  check_plan(512, 64, 132);    // 4096^3: last wave 116/132 full, not shared
  check_plan(2048, 128, 132);  // 8192^3: 68/132, not shared
  check_plan(128, 32, 132);    // 2048^3: one partial wave, nothing to share
  check_plan(288, 64, 132);    // 3072 x 3072 x 4096: 24 tiles shared
  check_plan(306, 16, 132);    // 2300 x 4300 x 1000 (the GPU tests' shape): 42 tiles shared
  check_plan(306, 2, 132);     // short K: shares under one k tile, some workers have none
  EXPECT_EQ(stream_k_plan(512, 64, 132).sk_tiles, 0);
  const StreamKPlan p = stream_k_plan(288, 64, 132);
  EXPECT_EQ(p.sk_tiles, 24);
  EXPECT_EQ(p.first_shared(), 264);
  EXPECT_EQ(stream_k_begin(p, 132), 24 * 64);
  EXPECT_EQ(stream_k_plan(306, 16, 132).sk_tiles, 42);
}

TEST(StreamK, SharesOnlyALastWaveAtMostHalfFull) {
  EXPECT_EQ(stream_k_plan(264, 64, 132).sk_tiles, 0);  // no remainder
  EXPECT_EQ(stream_k_plan(100, 64, 132).sk_tiles, 0);  // one partial wave
  EXPECT_EQ(stream_k_plan(300, 1, 132).sk_tiles, 0);   // one k tile cannot be shared
  EXPECT_EQ(stream_k_plan(264 + 66, 64, 132).sk_tiles, 66);
  EXPECT_EQ(stream_k_plan(264 + 67, 64, 132).sk_tiles, 0);
  const StreamKPlan p = stream_k_plan(300, 1, 132);
  EXPECT_EQ(stream_k_units(p), 300);
}

TEST(StreamK, ModelLineSaysWhatTheReportClaims) {
  KernelConfig c;
  c.block_m = 128;
  c.block_n = 256;
  c.block_k = 64;
  c.grid_blocks = 132;
  c.tiles_m = 24;  // 3072 x 3072
  c.tiles_n = 12;
  EXPECT_EQ(stream_k_model_line(4096, c),
            "waves: 288 tiles on 132 blocks = 2.18 -> 3 waves of whole tiles, last 18% full; "
            "Stream-K shares its 24 tiles: 11.6 k tiles per block");
  c.tiles_m = 32;  // 4096 x 4096
  c.tiles_n = 16;
  EXPECT_EQ(stream_k_model_line(4096, c),
            "waves: 512 tiles on 132 blocks = 3.88 -> 4 waves of whole tiles, last 88% full; "
            "kept whole (shared only when at most half full)");
}

// Step 9 answers the same waves the other way: fewer blocks, each as busy.
TEST(BalancedGrid, ModelLineSaysWhereTheTilesGo) {
  KernelConfig c;
  c.blocks_per_sm = 1;
  GpuInfo gpu;
  gpu.sm_count = 132;
  c.work_units = 512;  // 4096^3
  c.grid_blocks = 128;
  EXPECT_EQ(balanced_grid_model_line(c, gpu),
            "grid: 512 tiles on 128 blocks, 128 blocks of 4 tiles; one block per SM (132): 116 blocks of 4 tiles, "
            "16 of 3, 4 waves either way");
  c.work_units = 800;  // 5120^3
  c.grid_blocks = 115;
  EXPECT_EQ(balanced_grid_model_line(c, gpu),
            "grid: 800 tiles on 115 blocks, 110 blocks of 7 tiles, 5 of 6; one block per SM (132): 8 blocks of 7 "
            "tiles, 124 of 6, 7 waves either way");
  c.work_units = 128;  // 2048^3: one tile each
  c.grid_blocks = 128;
  EXPECT_EQ(balanced_grid_model_line(c, gpu),
            "grid: 128 tiles on 128 blocks, 128 blocks of 1 tile (one block per SM already takes them evenly)");
}

}  // namespace
