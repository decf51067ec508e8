// The sidebar: the asset list (click to open), a path to open, which trace is
// shown and which it is compared with, "Run on this GPU", and the errors bad
// files produced.
#pragma once

#include <future>
#include <optional>
#include <string>
#include <vector>

#include "model/run_on_gpu.hpp"
#include "model/workspace.hpp"
#include "ui/draw_util.hpp"

namespace wb::viewer::ui {

class FilesPanel {
 public:
  explicit FilesPanel(std::string bin_dir);
  void draw(Workspace& ws);

 private:
  void draw_assets(Workspace& ws);
  void draw_traces(Workspace& ws);
  void draw_run_on_gpu(Workspace& ws);
  void draw_errors(Workspace& ws);

  char path_[1024] = {};
  GpuRunRequest request_;
  std::vector<std::string> lessons_;  // lesson binaries next to the viewer
  char variant_[64] = "coalesced";
  std::future<std::optional<Trace>> run_;  // a lesson running in the background
  std::string run_error_;
};

}  // namespace wb::viewer::ui
