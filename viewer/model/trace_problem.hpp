// What the model panels (tile order, L2 reuse, waves) show while a trace is
// loaded: the trace's own problem (shape, tile sizes, order, GROUP_M, split-K)
// on the trace's own GPU (SMs, L2, resident blocks per SM). A panel follows the
// loaded trace by default; a control switches it back to its own model.
// No ImGui here: the panels and the model tests share it.
#pragma once

#include <cstdint>
#include "model/gpu_choice.hpp"
#include "model/l2_compare.hpp"
#include "model/tile_grid.hpp"
#include "models/wave_model.hpp"
#include "records/records.hpp"

namespace wb::viewer {

struct LoadedTrace;

struct TraceProblem {
  TileGridSetup grid;       // shape, tile sizes, order and GROUP_M, the trace's tile grid
  int split_k = 1;
  GpuChoice gpu;            // the trace's GPU and the kernel's occupancy
  bool persistent = false;  // a grid of `grid_blocks` blocks that walks `work_units` units
  int64_t grid_blocks = 0;
  int64_t work_units = 0;
};

TraceProblem trace_problem(const Trace& trace);

// Waves: the trace's tiles x split-K on its SMs x resident blocks.
WaveInput wave_input(const TraceProblem& p);

// A replay costs tiles x k-steps steps of two operand accesses (about 30 ns a
// step): past this many steps (a quarter of a second) the L2 panel replays only
// the first tiles. Lesson 01's 4096^3 grid (65,536 tiles x 4,096 k-steps) would take 8 s.
inline constexpr int64_t kL2ReplayBudget = int64_t(1) << 23;

// L2 reuse for the loaded traces: the current trace's shape, tile sizes and GPU;
// order A is its order, order B the comparison's, or, with no comparison or one
// in the same order, the other of row-major and grouped (GROUP_M 8) so there is
// always something to compare with. A grid too large to replay in a frame
// (kL2ReplayBudget) replays its first tiles.
L2Scenario l2_scenario_for(const Trace& current, const Trace* comparison);

// Whether a panel shows the loaded trace or its own model. Following is on by
// default and comes back on whenever another trace (or comparison) is shown;
// the panel's control turns it off until then.
class TraceFollow {
 public:
  // Call once per frame before drawing. True when the panel must take the
  // trace's problem now (a different trace is shown while following).
  bool update(const LoadedTrace* current, const LoadedTrace* comparison = nullptr);
  // A trace is loaded and the panel shows it.
  bool following() const { return current_ != nullptr && on_; }
  bool trace_loaded() const { return current_ != nullptr; }
  // The control. Turning it on again re-takes the trace's problem at the next update.
  void set_following(bool on);

 private:
  const LoadedTrace* current_ = nullptr;
  const LoadedTrace* comparison_ = nullptr;
  bool on_ = true;
  bool retake_ = false;
};

}  // namespace wb::viewer
