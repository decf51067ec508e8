// Panel 3, waves: tiles x split-K work units filling SMs x resident slots in
// waves; the last wave's utilisation and the efficiency tiles / (waves x slots).
#pragma once

#include "model/tile_grid.hpp"
#include "model/workspace.hpp"
#include "models/wave_model.hpp"
#include "ui/draw_util.hpp"

namespace wb::viewer::ui {

class WavesPanel {
 public:
  WavesPanel();
  void draw(Workspace& ws);

 private:
  void draw_waves(const WaveResult& r);
  void draw_last_wave_slots(const WaveResult& r);
  void draw_split_k_chart();

  TileGridSetup setup_;
  GpuPicker gpu_;
  int split_k_ = 1;
};

}  // namespace wb::viewer::ui
