// Panel 3, waves: tiles x split-K work units filling SMs x resident slots in
// waves; the last wave's utilisation and the efficiency tiles / (waves x slots).
// While a trace is loaded: its tile grid, split-K, SMs and resident blocks, and
// beside the model what the recording measured (its tail).
#pragma once

#include <nlohmann/json.hpp>

#include "model/tile_grid.hpp"
#include "model/workspace.hpp"
#include "models/wave_model.hpp"
#include "ui/draw_util.hpp"

namespace wb::viewer::ui {

class WavesPanel {
 public:
  WavesPanel();
  void draw(Workspace& ws);
  // What the panel showed last frame (for --layout): the wave input, its source and result.
  nlohmann::json layout() const;

 private:
  void draw_trace_note(const LoadedTrace& trace);
  void draw_waves(const WaveResult& r);
  void draw_last_wave_slots(const WaveResult& r);
  void draw_split_k_chart();

  TileGridSetup setup_;
  GpuPicker gpu_;
  int split_k_ = 1;
  TraceFollow follow_;  // on: the loaded trace's tiles, split-K and GPU
};

}  // namespace wb::viewer::ui
