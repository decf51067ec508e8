// Lesson 04, step 3 (persistent): one block per SM walks the tiles.
//
// A launch of one block per tile pays, per tile, for block start-up, barrier
// set-up and a pipeline that drains empty before the epilogue. Here the grid
// is as large as fits on the GPU at once, and block b computes tiles b,
// b + gridDim.x, b + 2 gridDim.x, ... of the grouped order. Producer and
// consumers walk the same list, so the producer runs ahead into the next tile
// while the consumers store this one: loads overlap the epilogue.
//
// GROUP_M is 16 here, not lesson 03's 8 (kWsGroupM in pipeline.cuh): the 132
// tiles in flight then cover about 16 x 8 tiles of 128 x 256, the least
// operand data a wave of 132 such tiles can read per k step.
#pragma once

#include <algorithm>

#include "04_hopper/step2_warp_specialized.cuh"

namespace wb::hopper {

struct PersistentTiles : OneTilePerBlock {
  static constexpr bool kPersistent = true;

  using OneTilePerBlock::OneTilePerBlock;
  __device__ int unit_step() const { return int(gridDim.x); }

  // Host: as many blocks as fit at once, at most one per tile.
  static int grid(const GemmShape& s, int resident) {
    return std::min(ceil_div(s.m, kWsBlockM) * ceil_div(s.n, kWsBlockN), resident);
  }
};

}  // namespace wb::hopper
