// Two tile orders replayed through the L2 model on one GPU and shape: what the
// L2 panel shows side by side. The replay runs only when an input changes.
#pragma once

#include "model/gpu_choice.hpp"
#include "model/tile_grid.hpp"
#include "models/l2_model.hpp"

namespace wb::viewer {

struct L2Scenario {
  TileGridSetup grid;              // shape and tile sizes (its order is ignored)
  int element_bytes = 2;           // fp16 operands
  GpuChoice gpu;
  TileOrder order_a = TileOrder::row_major;
  int group_m_a = 8;
  TileOrder order_b = TileOrder::grouped;
  int group_m_b = 8;
  int64_t max_tiles = -1;          // replay only the first tiles (-1: all)
  int blocks_in_flight_override = 0;  // 0: SMs x blocks per SM

  int blocks_in_flight() const;
  L2ModelInput input_for(TileOrder order, int group_m) const;
  bool operator==(const L2Scenario&) const;
};

// The Triton tutorial's example: a 9x9 tile grid with 9 k-steps, the first 9
// tiles in flight, an L2 that holds everything: row-major loads 90 blocks,
// grouped with GROUP_M 3 loads 54.
L2Scenario triton_tutorial_scenario();

struct L2Comparison {
  L2Scenario scenario;
  L2ModelResult a, b;
};

L2Comparison compare_l2(const L2Scenario& scenario);

}  // namespace wb::viewer
