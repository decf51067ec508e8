// Panel 5, results: every lesson variant's TFLOP/s and share of cuBLAS from the
// results files of one GPU, as bars, and a roofline placing each variant by
// arithmetic intensity against the bytes the problem moves at least
// (model/roofline_points.hpp), labelled where labels fit, named on hover.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "model/workspace.hpp"
#include "ui/draw_util.hpp"

namespace wb::viewer::ui {

class ResultsPanel {
 public:
  void draw(Workspace& ws);
  // What the roofline drew last frame: its plot rectangle, each point and its label.
  const nlohmann::json& layout() const { return layout_; }

 private:
  void draw_bars(const std::vector<const LoadedResults*>& files);
  void draw_roofline(const std::vector<const LoadedResults*>& files);

  std::string gpu_;
  nlohmann::json layout_;  // the GPU whose results are shown ("" : the first one)
};

}  // namespace wb::viewer::ui
