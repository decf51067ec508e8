#include "ui/l2_panel.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>

namespace wb::viewer::ui {

L2Panel::L2Panel() {
  scenario_.gpu = gpu_.gpu;
  // At 8192^3 fp16 the operands (256 MB) are far larger than any L2: the order matters.
  scenario_.grid.m = scenario_.grid.n = scenario_.grid.k = 8192;
  scenario_.order_a = TileOrder::row_major;
  scenario_.order_b = TileOrder::grouped;
}

nlohmann::json L2Panel::layout() const {
  if (!result_) return nlohmann::json::object();
  const L2Scenario& s = result_->scenario;
  return {{"source", follow_.following() ? "trace" : "model"}, {"m", s.grid.m}, {"n", s.grid.n}, {"k", s.grid.k},
          {"block_m", s.grid.block_m}, {"block_n", s.grid.block_n}, {"block_k", s.grid.block_k},
          {"order_a", tile_order_name(s.order_a)}, {"group_m_a", s.group_m_a}, {"order_b", tile_order_name(s.order_b)},
          {"group_m_b", s.group_m_b}, {"gpu", s.gpu.name}, {"sms", s.gpu.sms}, {"l2_bytes", s.gpu.l2_bytes},
          {"blocks_in_flight", s.blocks_in_flight()}, {"max_tiles", s.max_tiles}, {"misses_a", result_->a.misses},
          {"misses_b", result_->b.misses}};
}

void L2Panel::draw(Workspace& ws) {
  if (follow_.update(ws.current(), ws.comparison())) {
    scenario_ = l2_scenario_for(ws.current()->trace, ws.comparison() ? &ws.comparison()->trace : nullptr);
    gpu_.take_trace_gpu(scenario_.gpu);
    first_tiles_only_ = scenario_.max_tiles >= 0;
  }
  ImGui::BeginChild("l2 controls", ImVec2(300, 0), true);
  draw_controls(ws);
  ImGui::EndChild();
  ImGui::SameLine();
  ImGui::BeginChild("l2 results", ImVec2(0, 0), false);
  // The replay runs only when the inputs change (a 4096^3 replay takes a few ms,
  // 8192^3 a second).
  if (!result_ || !(result_->scenario == scenario_)) result_ = compare_l2(scenario_);
  const L2Comparison& c = *result_;
  const L2ModelInput in = scenario_.input_for(scenario_.order_a, scenario_.group_m_a);
  const int64_t total = int64_t(in.tiles_m) * in.tiles_n;
  const int64_t replayed = in.max_tiles >= 0 ? std::min(in.max_tiles, total) : total;
  ImGui::TextWrapped("%d x %d tiles x %d k-steps; A block %s, B block %s; L2 %s (%s); %d blocks in flight; %s tiles replayed",
              in.tiles_m, in.tiles_n, in.k_steps, format_bytes(double(in.a_block_bytes)).c_str(),
              format_bytes(double(in.b_block_bytes)).c_str(), format_bytes(double(in.l2_bytes)).c_str(),
              scenario_.gpu.name.c_str(), in.blocks_in_flight, format_count(replayed).c_str());
  ImGui::Separator();
  if (ImGui::BeginTable("orders", 2, ImGuiTableFlags_BordersInnerV)) {
    ImGui::TableNextColumn();
    const bool traced = follow_.following();
    const bool b_traced = traced && ws.comparison() && setup_from_trace(ws.comparison()->trace).order == scenario_.order_b;
    draw_order_column(traced ? "order A (this trace)" : "order A", c.a, scenario_.order_a, scenario_.group_m_a, kOrderARgb);
    ImGui::TableNextColumn();
    draw_order_column(b_traced ? "order B (the comparison trace)" : "order B", c.b, scenario_.order_b, scenario_.group_m_b,
                      kOrderBRgb);
    ImGui::EndTable();
  }
  if (c.a.misses > 0) {
    const double ratio = double(c.b.misses) / double(c.a.misses);
    ImGui::Text("Order B loads %.2fx the blocks order A loads (%s vs %s).", ratio, format_count(c.b.misses).c_str(),
                format_count(c.a.misses).c_str());
  }
  ImGui::Separator();
  draw_wave_chart(c);
  ImGui::EndChild();
}

void L2Panel::draw_controls(Workspace& ws) {
  follow_control(follow_, ws.current());
  if (follow_.following()) {
    text_dim_wrapped(ws.comparison() ? "order A: this trace's; order B: the comparison trace's (or the other "
                                       "order when both ran the same)"
                                     : "order A: this trace's; order B: the other order, to compare with");
    if (scenario_.max_tiles >= 0) text_dim_wrapped("the whole grid takes too long to replay: its first tiles only");
  }
  ImGui::Separator();
  ImGui::BeginDisabled(follow_.following());
  ImGui::TextUnformatted("GPU");
  GpuChoice trace_gpu;
  if (ws.current()) trace_gpu = gpu_from_trace(ws.current()->trace);
  if (gpu_.draw(ws.current() ? &trace_gpu : nullptr)) {
    scenario_.gpu = gpu_.gpu;
    scenario_.blocks_in_flight_override = 0;
  }
  ImGui::Separator();
  ImGui::TextUnformatted("Problem");
  TileGridSetup& g = scenario_.grid;
  bool changed = false;
  changed |= input_int64("M", &g.m, 1, 1 << 16);
  changed |= input_int64("N", &g.n, 1, 1 << 16);
  changed |= input_int64("K", &g.k, 1, 1 << 16);
  changed |= tile_size_combo("BLOCK_M", &g.block_m);
  changed |= tile_size_combo("BLOCK_N", &g.block_n);
  changed |= tile_size_combo("BLOCK_K", &g.block_k);
  if (changed) g.clamp();
  ImGui::Separator();
  ImGui::TextUnformatted("Orders");
  ImGui::PushID("a");
  order_combo("order A", &scenario_.order_a);
  if (scenario_.order_a == TileOrder::grouped) ImGui::SliderInt("GROUP_M A", &scenario_.group_m_a, 1, 32);
  ImGui::PopID();
  ImGui::PushID("b");
  order_combo("order B", &scenario_.order_b);
  if (scenario_.order_b == TileOrder::grouped) ImGui::SliderInt("GROUP_M B", &scenario_.group_m_b, 1, 32);
  ImGui::PopID();
  ImGui::Separator();
  if (ImGui::Checkbox("first tiles only", &first_tiles_only_))
    scenario_.max_tiles = first_tiles_only_ ? std::max<int64_t>(scenario_.blocks_in_flight(), 1) : -1;
  if (first_tiles_only_) {
    int64_t n = std::max<int64_t>(scenario_.max_tiles, 1);
    if (input_int64("tiles", &n, 1, g.tile_count())) scenario_.max_tiles = n;
  }
  ImGui::EndDisabled();
  if (ImGui::Button("Triton tutorial example")) {
    follow_.set_following(false);
    scenario_ = triton_tutorial_scenario();
    first_tiles_only_ = true;
  }
  ImGui::TextWrapped("9x9 tiles, 9 k-steps, the first 9 tiles in flight, an L2 that keeps everything: "
                     "row-major loads 90 blocks, grouped (GROUP_M 3) 54.");
}

void L2Panel::draw_order_column(const char* title, const L2ModelResult& r, TileOrder order, int group_m, Rgb colour) {
  ImGui::PushStyleColor(ImGuiCol_Text, ImVec4(colour.r / 255.f, colour.g / 255.f, colour.b / 255.f, 1));
  if (order == TileOrder::grouped) ImGui::Text("%s: grouped, GROUP_M %d", title, group_m);
  else ImGui::Text("%s: %s", title, tile_order_name(order));
  ImGui::PopStyleColor();
  ImGui::Text("blocks loaded (misses)  %s", format_count(r.misses).c_str());
  ImGui::Text("  of which A / B        %s / %s", format_count(r.a_misses).c_str(), format_count(r.b_misses).c_str());
  ImGui::Text("L2 hits                 %s", format_count(r.hits).c_str());
  ImGui::Text("hit rate                %.1f %%", 100.0 * r.hit_rate());
  ImGui::Text("DRAM traffic            %s", format_bytes(double(r.dram_bytes)).c_str());
  ImGui::Text("  x compulsory          %.2f", r.compulsory_bytes ? double(r.dram_bytes) / double(r.compulsory_bytes) : 0.0);
}

void L2Panel::draw_wave_chart(const L2Comparison& c) {
  // Title, then the legend on the same line: nothing drawn over the bars.
  ImGui::TextUnformatted("Hit rate per wave (one wave = the blocks in flight; waves left to right)");
  ImDrawList* dl = ImGui::GetWindowDrawList();
  ImGui::SameLine(0, 24);
  const ImVec2 legend = ImGui::GetCursorScreenPos();
  const float line_h = ImGui::GetTextLineHeight();
  dl->AddRectFilled(ImVec2(legend.x, legend.y + 2), ImVec2(legend.x + 12, legend.y + line_h - 2), to_imu32(kOrderARgb));
  dl->AddText(ImVec2(legend.x + 16, legend.y), IM_COL32(230, 230, 230, 255), "order A");
  const float bx = legend.x + 16 + ImGui::CalcTextSize("order A").x + 16;
  dl->AddRectFilled(ImVec2(bx, legend.y + 2), ImVec2(bx + 12, legend.y + line_h - 2), to_imu32(kOrderBRgb));
  dl->AddText(ImVec2(bx + 16, legend.y), IM_COL32(230, 230, 230, 255), "order B");
  ImGui::NewLine();

  const ImVec2 p0 = ImGui::GetCursorScreenPos();
  const ImVec2 avail = ImGui::GetContentRegionAvail();
  const float left = 44, bottom = 22;
  const ImVec2 a(p0.x + left, p0.y + 6), b(p0.x + avail.x - 10, p0.y + std::max(avail.y - bottom, 60.0f));
  dl->AddRectFilled(a, b, kCanvasBackground);
  for (int pct = 0; pct <= 100; pct += 25) {
    const float y = b.y - (b.y - a.y) * float(pct) / 100.0f;
    dl->AddLine(ImVec2(a.x, y), ImVec2(b.x, y), kGridLine);
    char label[8];
    std::snprintf(label, sizeof label, "%d%%", pct);
    dl->AddText(ImVec2(p0.x, y - 7), kTextDim, label);
  }
  const size_t waves = std::max(c.a.waves.size(), c.b.waves.size());
  if (waves > 0) {
    const float slot = (b.x - a.x) / float(waves);
    const float bar = std::max(1.0f, slot * 0.4f);
    for (size_t w = 0; w < waves; ++w) {
      const float x = a.x + slot * float(w) + slot * 0.1f;
      auto draw_bar = [&](const std::vector<L2WaveStats>& ws, float x0, Rgb colour) {
        if (w >= ws.size()) return;
        const float y = b.y - (b.y - a.y) * float(ws[w].hit_rate());
        dl->AddRectFilled(ImVec2(x0, y), ImVec2(x0 + bar, b.y), to_imu32(colour));
      };
      draw_bar(c.a.waves, x, kOrderARgb);
      draw_bar(c.b.waves, x + bar, kOrderBRgb);
    }
    // Wave numbers under the bars, as many as fit without touching.
    const int label_every = std::max(1, int(std::ceil(40.0f / slot)));
    for (size_t w = 0; w < waves; w += size_t(label_every)) {
      char label[24];
      std::snprintf(label, sizeof label, "%zu", w);
      const float tw = ImGui::CalcTextSize(label).x;
      const float x = std::min(a.x + slot * (float(w) + 0.5f) - tw * 0.5f, b.x - tw);
      dl->AddText(ImVec2(x, b.y + 3), kTextDim, label);
    }
  }
  ImGui::Dummy(ImVec2(avail.x, std::max(avail.y, 80.0f)));
}

}  // namespace wb::viewer::ui
