// Panel 1, tile order: C as a grid of tiles coloured by launch order, the A
// row-blocks and B column-blocks the blocks in flight read beside it, and a
// replay (play, pause, step, speed) of either the modelled order or a trace.
#pragma once

#include <cstdint>
#include <vector>

#include "model/playback.hpp"
#include "model/tile_grid.hpp"
#include "model/workspace.hpp"
#include "ui/draw_util.hpp"

namespace wb::viewer::ui {

class OrderPanel {
 public:
  OrderPanel();
  void draw(Workspace& ws, float frame_seconds);

  // Where the C grid was drawn last frame (the screenshot test checks its colours).
  struct GridPlacement {
    int x = 0, y = 0, cell = 0;
    int tiles_m = 0, tiles_n = 0;
    TileOrder order = TileOrder::row_major;
    int group_m = 1;
    int64_t launched = 0;
  };
  const GridPlacement& placement() const { return placement_; }
  // Puts the modelled replay part-way, so a picture shows done, running and waiting tiles.
  void set_replay_fraction(double fraction);

 private:
  void draw_controls(Workspace& ws);
  void draw_grid(Workspace& ws);
  bool replaying_trace(const Workspace& ws) const { return use_trace_ && ws.current(); }

  TileGridSetup setup_;
  GpuPicker gpu_;
  Playback playback_;
  bool use_trace_ = false;
  GridPlacement placement_;
  // Per tile of the current trace, its first record (for hover); rebuilt when the trace changes.
  const LoadedTrace* indexed_trace_ = nullptr;
  std::vector<int64_t> record_of_tile_;
};

}  // namespace wb::viewer::ui
