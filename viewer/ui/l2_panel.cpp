#include "ui/l2_panel.hpp"

#include <algorithm>
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

void L2Panel::draw(Workspace& ws) {
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
  ImGui::Text("%d x %d tiles x %d k-steps; A block %s, B block %s; L2 %s (%s); %d blocks in flight; %s tiles replayed",
              in.tiles_m, in.tiles_n, in.k_steps, format_bytes(double(in.a_block_bytes)).c_str(),
              format_bytes(double(in.b_block_bytes)).c_str(), format_bytes(double(in.l2_bytes)).c_str(),
              scenario_.gpu.name.c_str(), in.blocks_in_flight, format_count(replayed).c_str());
  ImGui::Separator();
  if (ImGui::BeginTable("orders", 2, ImGuiTableFlags_BordersInnerV)) {
    ImGui::TableNextColumn();
    draw_order_column("order A", c.a, scenario_.order_a, scenario_.group_m_a, kOrderARgb);
    ImGui::TableNextColumn();
    draw_order_column("order B", c.b, scenario_.order_b, scenario_.group_m_b, kOrderBRgb);
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
  if (ImGui::Button("Triton tutorial example")) {
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
  ImGui::TextUnformatted("Hit rate per wave (one wave = the blocks in flight)");
  ImDrawList* dl = ImGui::GetWindowDrawList();
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
    const int label_every = std::max(1, int(40.0f / slot));
    for (size_t w = 0; w < waves; w += size_t(label_every)) {
      char label[24];
      std::snprintf(label, sizeof label, "%zu", w);
      dl->AddText(ImVec2(a.x + slot * (float(w) + 0.3f), b.y + 3), kTextDim, label);
    }
  }
  dl->AddText(ImVec2(b.x - 60, a.y + 4), kTextDim, "by wave");
  dl->AddRectFilled(ImVec2(a.x + 8, a.y + 6), ImVec2(a.x + 20, a.y + 18), to_imu32(kOrderARgb));
  dl->AddText(ImVec2(a.x + 24, a.y + 5), IM_COL32(230, 230, 230, 255), "order A");
  dl->AddRectFilled(ImVec2(a.x + 90, a.y + 6), ImVec2(a.x + 102, a.y + 18), to_imu32(kOrderBRgb));
  dl->AddText(ImVec2(a.x + 106, a.y + 5), IM_COL32(230, 230, 230, 255), "order B");
  ImGui::Dummy(ImVec2(avail.x, std::max(avail.y, 80.0f)));
}

}  // namespace wb::viewer::ui
