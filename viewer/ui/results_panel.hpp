// Panel 5, results: every lesson variant's TFLOP/s and share of cuBLAS from the
// results files of one GPU, as bars, and a roofline placing each variant by
// arithmetic intensity (flops over the DRAM bytes the variant must move).
#pragma once

#include <string>
#include <vector>

#include "model/workspace.hpp"
#include "ui/draw_util.hpp"

namespace wb::viewer::ui {

class ResultsPanel {
 public:
  void draw(Workspace& ws);

 private:
  void draw_bars(const std::vector<const LoadedResults*>& files);
  void draw_roofline(const std::vector<const LoadedResults*>& files);

  std::string gpu_;  // the GPU whose results are shown ("" : the first one)
};

}  // namespace wb::viewer::ui
