// Panel 2, L2 reuse: two tile orders replayed through the L2 model side by side
// (hits, misses, DRAM bytes, hit rate per wave), on a GPU's L2 and SM count.
#pragma once

#include <optional>

#include "model/l2_compare.hpp"
#include "model/workspace.hpp"
#include "ui/draw_util.hpp"

namespace wb::viewer::ui {

class L2Panel {
 public:
  L2Panel();
  void draw(Workspace& ws);

 private:
  void draw_controls(Workspace& ws);
  void draw_order_column(const char* title, const L2ModelResult& r, TileOrder order, int group_m, Rgb colour);
  void draw_wave_chart(const L2Comparison& c);

  L2Scenario scenario_;
  GpuPicker gpu_;
  bool first_tiles_only_ = false;
  std::optional<L2Comparison> result_;  // replayed for result_->scenario
};

}  // namespace wb::viewer::ui
