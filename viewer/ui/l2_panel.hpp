// Panel 2, L2 reuse: two tile orders replayed through the L2 model side by side
// (hits, misses, DRAM bytes, hit rate per wave), on a GPU's L2 and SM count.
// While a trace is loaded: its shape, tiles and GPU, its order as order A and
// the comparison trace's (or the contrasting order) as order B.
#pragma once

#include <optional>

#include <nlohmann/json.hpp>

#include "model/l2_compare.hpp"
#include "model/workspace.hpp"
#include "ui/draw_util.hpp"

namespace wb::viewer::ui {

class L2Panel {
 public:
  L2Panel();
  void draw(Workspace& ws);
  // What the panel showed last frame (for --layout): the scenario, its source and the misses.
  nlohmann::json layout() const;

 private:
  void draw_controls(Workspace& ws);
  void draw_order_column(const char* title, const L2ModelResult& r, TileOrder order, int group_m, Rgb colour);
  void draw_wave_chart(const L2Comparison& c);

  L2Scenario scenario_;
  GpuPicker gpu_;
  TraceFollow follow_;  // on: the loaded trace's problem, its order against the comparison's
  bool first_tiles_only_ = false;
  std::optional<L2Comparison> result_;  // replayed for result_->scenario
};

}  // namespace wb::viewer::ui
