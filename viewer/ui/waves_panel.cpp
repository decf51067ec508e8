#include "ui/waves_panel.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace wb::viewer::ui {

namespace {

inline constexpr Rgb kFullWaveRgb{80, 160, 230};
inline constexpr Rgb kLastWaveRgb{250, 170, 60};
inline constexpr ImU32 kIdleSlot = IM_COL32(70, 40, 44, 255);

WaveInput wave_input(const TileGridSetup& s, const GpuChoice& g, int split_k) {
  return WaveInput{s.tile_count(), split_k, g.sms, g.blocks_per_sm};
}

}  // namespace

WavesPanel::WavesPanel() {
  // A shape whose last wave is visibly short on 132 SMs: 1024 tiles = 7 waves + 100.
  setup_.m = setup_.n = 4096;
  setup_.block_m = setup_.block_n = 128;
}

nlohmann::json WavesPanel::layout() const {
  const WaveInput in = wave_input(setup_, gpu_.gpu, split_k_);
  const WaveResult r = wave_quantization(in);
  return {{"source", follow_.following() ? "trace" : "model"}, {"m", setup_.m}, {"n", setup_.n},
          {"block_m", setup_.block_m}, {"block_n", setup_.block_n}, {"tiles", in.tiles}, {"split_k", in.split_k},
          {"gpu", gpu_.gpu.name}, {"sms", in.sms}, {"blocks_per_sm", in.blocks_per_sm}, {"waves", r.waves},
          {"efficiency", r.efficiency}};
}

void WavesPanel::draw(Workspace& ws) {
  if (follow_.update(ws.current())) {
    const TraceProblem p = trace_problem(ws.current()->trace);
    setup_ = p.grid;
    setup_.trace_tiles_m = setup_.trace_tiles_n = 0;  // M / BLOCK_M x N / BLOCK_N, as the inputs edit it
    split_k_ = std::clamp(p.split_k, 1, 16);
    gpu_.take_trace_gpu(p.gpu);
  }
  ImGui::BeginChild("wave controls", ImVec2(300, 0), true);
  follow_control(follow_, ws.current());
  ImGui::Separator();
  ImGui::BeginDisabled(follow_.following());
  GpuChoice trace_gpu;
  if (ws.current()) trace_gpu = gpu_from_trace(ws.current()->trace);
  gpu_.draw(ws.current() ? &trace_gpu : nullptr);
  ImGui::Separator();
  bool changed = false;
  changed |= input_int64("M", &setup_.m, 1, 1 << 17);
  changed |= input_int64("N", &setup_.n, 1, 1 << 17);
  changed |= tile_size_combo("BLOCK_M", &setup_.block_m);
  changed |= tile_size_combo("BLOCK_N", &setup_.block_n);
  if (changed) setup_.clamp();
  ImGui::SliderInt("split-K", &split_k_, 1, 16);
  ImGui::EndDisabled();
  if (follow_.following()) draw_trace_note(*ws.current());
  ImGui::EndChild();
  ImGui::SameLine();

  ImGui::BeginChild("wave view", ImVec2(0, 0), false);
  const WaveResult r = wave_quantization(wave_input(setup_, gpu_.gpu, split_k_));
  ImGui::Text("%s tiles x split-K %d = %s work units on %d SMs x %d slots = %s slots",
              format_count(setup_.tile_count()).c_str(), split_k_, format_count(r.units).c_str(), gpu_.gpu.sms,
              gpu_.gpu.blocks_per_sm, format_count(r.slots).c_str());
  ImGui::Text("%lld waves; the last wave runs %s units: %.1f %% of the slots busy", static_cast<long long>(r.waves),
              format_count(r.last_wave_units).c_str(), 100.0 * r.last_wave_utilization);
  ImGui::PushStyleColor(ImGuiCol_Text, r.efficiency > 0.9 ? ImVec4(0.5f, 0.9f, 0.5f, 1) : ImVec4(1, 0.7f, 0.4f, 1));
  ImGui::Text("efficiency = units / (waves x slots) = %.1f %%", 100.0 * r.efficiency);
  ImGui::PopStyleColor();
  ImGui::Separator();
  const float h = ImGui::GetContentRegionAvail().y;
  ImGui::BeginChild("waves", ImVec2(0, h * 0.42f), false);
  draw_waves(r);
  ImGui::EndChild();
  ImGui::BeginChild("last wave", ImVec2(ImGui::GetContentRegionAvail().x * 0.55f, 0), false);
  draw_last_wave_slots(r);
  ImGui::EndChild();
  ImGui::SameLine();
  ImGui::BeginChild("split-k chart", ImVec2(0, 0), false);
  draw_split_k_chart();
  ImGui::EndChild();
  ImGui::EndChild();
}

// What the recording did beside the model: a persistent grid's size, and the
// measured tail (the time after the first SM ran out of work for good).
void WavesPanel::draw_trace_note(const LoadedTrace& lt) {
  ImGui::Separator();
  ImGui::TextUnformatted("The recording");
  const KernelConfig& k = lt.trace.kernel;
  char line[200];
  if (k.persistent) {
    std::snprintf(line, sizeof line,
                  "a persistent grid: %s blocks walk %s work units (the model counts tiles x split-K as if each "
                  "were a block)",
                  format_count(k.grid_blocks).c_str(), format_count(k.work_units).c_str());
  } else {
    std::snprintf(line, sizeof line, "%s blocks, one per work unit", format_count(k.grid_blocks).c_str());
  }
  text_dim_wrapped(line);
  const double end = double(lt.timeline.end_ns());
  const double tail = end - double(lt.timeline.tail_begin_ns());
  std::snprintf(line, sizeof line, "measured tail: %s of %s (%.0f %%) with SMs idle for good",
                format_ns(tail).c_str(), format_ns(end).c_str(), end > 0 ? 100.0 * tail / end : 0.0);
  text_dim_wrapped(line);
}

// One column per wave, filled to the share of its slots that have work.
void WavesPanel::draw_waves(const WaveResult& r) {
  ImGui::TextUnformatted("Waves: busy slots per wave");
  ImDrawList* dl = ImGui::GetWindowDrawList();
  const ImVec2 p0 = ImGui::GetCursorScreenPos();
  const ImVec2 avail = ImGui::GetContentRegionAvail();
  const ImVec2 a(p0.x + 4, p0.y + 4), b(p0.x + avail.x - 8, p0.y + avail.y - 20);
  dl->AddRectFilled(a, b, kCanvasBackground);
  const int64_t shown = std::min<int64_t>(r.waves, 256);
  const float slot_w = (b.x - a.x) / float(std::max<int64_t>(shown, 1));
  for (int64_t w = 0; w < shown; ++w) {
    const bool last = w == r.waves - 1;
    const int64_t units = last ? r.last_wave_units : r.slots;
    const float x0 = a.x + slot_w * float(w) + std::min(3.0f, slot_w * 0.1f), x1 = a.x + slot_w * float(w + 1) - std::min(3.0f, slot_w * 0.1f);
    const float y_fill = b.y - (b.y - a.y - 4) * float(units) / float(r.slots);
    dl->AddRectFilled(ImVec2(x0, a.y + 4), ImVec2(x1, b.y), kIdleSlot);
    dl->AddRectFilled(ImVec2(x0, y_fill), ImVec2(x1, b.y), to_imu32(last ? kLastWaveRgb : kFullWaveRgb));
    char label[32];
    std::snprintf(label, sizeof label, "%lld", static_cast<long long>(w + 1));
    centred_text(dl, ImVec2(x0, b.y), ImVec2(x1, b.y + 18), kTextDim, label);
    if (last && r.waves > 0) {
      std::snprintf(label, sizeof label, "%.0f%%", 100.0 * r.last_wave_utilization);
      centred_text(dl, ImVec2(x0, y_fill - 18), ImVec2(x1, y_fill), IM_COL32(255, 255, 255, 255), label);
    }
  }
  if (r.waves > shown) dl->AddText(ImVec2(b.x - 160, a.y + 6), kTextDim, "(first 256 waves shown)");
  ImGui::Dummy(avail);
}

// The last wave as SMs x resident slots: which slots have work, which idle.
void WavesPanel::draw_last_wave_slots(const WaveResult& r) {
  ImGui::Text("Last wave: %d SMs x %d slots", gpu_.gpu.sms, gpu_.gpu.blocks_per_sm);
  ImDrawList* dl = ImGui::GetWindowDrawList();
  const ImVec2 p0 = ImGui::GetCursorScreenPos();
  const ImVec2 avail = ImGui::GetContentRegionAvail();
  const int sms = std::max(gpu_.gpu.sms, 1), slots = std::max(gpu_.gpu.blocks_per_sm, 1);
  // SMs laid out in rows of up to 22, like a die shot's SM array.
  const int per_row = std::min(sms, 22);
  const int rows = (sms + per_row - 1) / per_row;
  const float cell_w = std::floor((avail.x - 8) / float(per_row));
  const float cell_h = std::min(cell_w, std::floor((avail.y - 28) / float(rows)));
  // The scheduler fills slot 0 of every SM first, then slot 1, ...
  for (int sm = 0; sm < sms; ++sm) {
    const float x = p0.x + 4 + cell_w * float(sm % per_row), y = p0.y + 4 + cell_h * float(sm / per_row);
    for (int s = 0; s < slots; ++s) {
      const int64_t slot_index = int64_t(s) * sms + sm;
      const float sy0 = y + (cell_h - 3) * float(s) / float(slots), sy1 = y + (cell_h - 3) * float(s + 1) / float(slots);
      dl->AddRectFilled(ImVec2(x, sy0), ImVec2(x + cell_w - 3, sy1 - (slots > 1 ? 1.0f : 0.0f)),
                        slot_index < r.last_wave_units ? to_imu32(kLastWaveRgb) : kIdleSlot);
    }
  }
  const float ly = p0.y + 8 + cell_h * float(rows);
  dl->AddRectFilled(ImVec2(p0.x + 4, ly), ImVec2(p0.x + 16, ly + 12), to_imu32(kLastWaveRgb));
  dl->AddText(ImVec2(p0.x + 20, ly - 1), kTextDim, "busy");
  dl->AddRectFilled(ImVec2(p0.x + 70, ly), ImVec2(p0.x + 82, ly + 12), kIdleSlot);
  dl->AddText(ImVec2(p0.x + 86, ly - 1), kTextDim, "idle while the last wave runs");
  ImGui::Dummy(avail);
}

// Efficiency for split-K 1..16 on this shape: where cutting K fills the last wave.
void WavesPanel::draw_split_k_chart() {
  ImGui::TextUnformatted("Efficiency by split-K");
  ImDrawList* dl = ImGui::GetWindowDrawList();
  const ImVec2 p0 = ImGui::GetCursorScreenPos();
  const ImVec2 avail = ImGui::GetContentRegionAvail();
  const ImVec2 a(p0.x + 36, p0.y + 4), b(p0.x + avail.x - 6, p0.y + avail.y - 20);
  dl->AddRectFilled(a, b, kCanvasBackground);
  for (int pct = 0; pct <= 100; pct += 50) {
    const float y = b.y - (b.y - a.y) * float(pct) / 100.0f;
    dl->AddLine(ImVec2(a.x, y), ImVec2(b.x, y), kGridLine);
    char label[8];
    std::snprintf(label, sizeof label, "%d%%", pct);
    dl->AddText(ImVec2(p0.x, y - 7), kTextDim, label);
  }
  const float w = (b.x - a.x) / 16.0f;
  for (int s = 1; s <= 16; ++s) {
    const WaveResult r = wave_quantization(wave_input(setup_, gpu_.gpu, s));
    const float x0 = a.x + w * float(s - 1) + 2, x1 = x0 + w - 4;
    const float y = b.y - (b.y - a.y) * float(r.efficiency);
    dl->AddRectFilled(ImVec2(x0, y), ImVec2(x1, b.y), s == split_k_ ? to_imu32(kLastWaveRgb) : to_imu32(kFullWaveRgb, 160));
    char label[8];
    std::snprintf(label, sizeof label, "%d", s);
    const float tw = ImGui::CalcTextSize(label).x;
    dl->AddText(ImVec2((x0 + x1 - tw) * 0.5f, b.y + 2), kTextDim, label);
  }
  ImGui::Dummy(avail);
}

}  // namespace wb::viewer::ui
