#include "ui/order_panel.hpp"

#include <algorithm>
#include <cmath>
#include <string>

#include "model/unit_colours.hpp"

namespace wb::viewer::ui {

OrderPanel::OrderPanel() {
  setup_.order = TileOrder::grouped;
  setup_.group_m = 8;
  playback_.set_length(modelled_replay_length(setup_, gpu_.gpu.sms * gpu_.gpu.blocks_per_sm));
}

void OrderPanel::set_replay_fraction(double fraction) {
  playback_.set_length(modelled_replay_length(setup_, gpu_.gpu.sms * gpu_.gpu.blocks_per_sm));
  playback_.set_position(std::floor(fraction * playback_.length()));
}

void OrderPanel::take_trace(const LoadedTrace& trace) {
  const TraceProblem p = trace_problem(trace.trace);
  setup_ = p.grid;
  setup_.trace_tiles_m = setup_.trace_tiles_n = 0;  // the model derives its grid from M, N and the tile sizes
  setup_.clamp();
  gpu_.take_trace_gpu(p.gpu);
  const double fraction = playback_.fraction();
  playback_.set_length(modelled_replay_length(setup_, gpu_.gpu.sms * gpu_.gpu.blocks_per_sm));
  playback_.set_position(fraction * playback_.length());
}

nlohmann::json OrderPanel::layout() const {
  nlohmann::json j = shown_;
  j["grid"] = {{"x", placement_.x}, {"y", placement_.y}, {"cell", placement_.cell}, {"tiles_m", placement_.tiles_m},
               {"tiles_n", placement_.tiles_n}, {"launched", placement_.launched}};
  return j;
}

void OrderPanel::draw(Workspace& ws, float frame_seconds) {
  if (follow_.update(ws.current())) take_trace(*ws.current());
  if (replaying_trace(ws)) ws.trace_playback.advance(frame_seconds);
  else playback_.advance(frame_seconds);

  ImGui::BeginChild("order controls", ImVec2(300, 0), true);
  draw_controls(ws);
  ImGui::EndChild();
  ImGui::SameLine();
  ImGui::BeginChild("order grid", ImVec2(0, 0), false, ImGuiWindowFlags_NoScrollbar | ImGuiWindowFlags_NoScrollWithMouse);
  draw_grid(ws);
  ImGui::EndChild();
}

void OrderPanel::draw_controls(Workspace& ws) {
  const bool traced = replaying_trace(ws);
  Playback& pb = traced ? ws.trace_playback : playback_;

  ImGui::TextUnformatted("Replay");
  if (ImGui::Button(pb.playing() ? "Pause" : "Play") || key_pressed(ImGuiKey_Space)) pb.toggle();
  ImGui::SameLine();
  const double back = traced ? double(ws.current()->timeline.prev_start_before(uint64_t(pb.position()))) - pb.position() : -1.0;
  const double forward = traced ? double(ws.current()->timeline.next_start_after(uint64_t(pb.position()))) - pb.position() : 1.0;
  if (ImGui::ArrowButton("step back", ImGuiDir_Left) || key_pressed(ImGuiKey_LeftArrow)) pb.step(back);
  ImGui::SameLine();
  if (ImGui::ArrowButton("step forward", ImGuiDir_Right) || key_pressed(ImGuiKey_RightArrow)) pb.step(forward);
  ImGui::SameLine();
  if (ImGui::Button("Rewind")) pb.rewind();
  float speed = float(pb.speed());
  if (ImGui::SliderFloat("speed", &speed, 0.1f, 10.0f, "%.1fx", ImGuiSliderFlags_Logarithmic)) pb.set_speed(speed);
  float fraction = float(pb.fraction());
  if (ImGui::SliderFloat("position", &fraction, 0.0f, 1.0f, "%.3f")) pb.set_position(fraction * pb.length());

  ImGui::Separator();
  const bool was_following = follow_.following();
  follow_control(follow_, ws.current());
  if (was_following && !follow_.following()) take_trace(*ws.current());  // the model starts from the trace's problem
  if (traced) {
    ImGui::Text("t = %s of %s", format_ns(pb.position()).c_str(), format_ns(pb.length()).c_str());
    text_dim_wrapped("the recorded order and times; the timeline's playhead moves with this");
    return;
  }

  ImGui::Separator();
  ImGui::TextUnformatted("Problem");
  bool changed = false;
  changed |= input_int64("M", &setup_.m, 1, 1 << 17);
  changed |= input_int64("N", &setup_.n, 1, 1 << 17);
  changed |= input_int64("K", &setup_.k, 1, 1 << 17);
  changed |= tile_size_combo("BLOCK_M", &setup_.block_m);
  changed |= tile_size_combo("BLOCK_N", &setup_.block_n);
  changed |= tile_size_combo("BLOCK_K", &setup_.block_k);
  changed |= order_combo("order", &setup_.order);
  if (setup_.order == TileOrder::grouped) changed |= ImGui::SliderInt("GROUP_M", &setup_.group_m, 1, 32);
  ImGui::Separator();
  GpuChoice trace_gpu;
  if (ws.current()) trace_gpu = gpu_from_trace(ws.current()->trace);
  changed |= gpu_.draw(ws.current() ? &trace_gpu : nullptr);
  if (changed) {
    setup_.clamp();
    const double fraction_before = playback_.fraction();
    playback_.set_length(modelled_replay_length(setup_, gpu_.gpu.sms * gpu_.gpu.blocks_per_sm));
    playback_.set_position(fraction_before * playback_.length());
  }
  ImGui::Text("%d x %d tiles, %d k-steps", setup_.tiles_m(), setup_.tiles_n(), setup_.k_steps());
  ImGui::Text("%s blocks in flight", format_count(int64_t(gpu_.gpu.sms) * gpu_.gpu.blocks_per_sm).c_str());
}

void OrderPanel::draw_grid(Workspace& ws) {
  const bool traced = replaying_trace(ws);
  const LoadedTrace* trace = traced ? ws.current() : nullptr;
  const TileGridSetup setup = trace ? setup_from_trace(trace->trace) : setup_;
  const int tm = setup.tiles_m(), tn = setup.tiles_n();
  const int in_flight = gpu_.gpu.sms * gpu_.gpu.blocks_per_sm;
  const double position = trace ? ws.trace_playback.position() : playback_.position();
  const std::vector<TileState> states =
      trace ? traced_tile_states(trace->trace, uint64_t(position)) : modelled_tile_states(setup, position, in_flight);
  const OperandUse use = operand_use(setup, states);

  // Launch order per tile: the modelled pid, or the unit that ran it in the trace.
  std::vector<int64_t> order_of_tile;
  int64_t order_count = setup.tile_count();
  if (trace) {
    if (indexed_trace_ != trace) {
      indexed_trace_ = trace;
      record_of_tile_.assign(size_t(setup.tile_count()), -1);
      const auto& recs = trace->trace.records;
      for (size_t i = 0; i < recs.size(); ++i) {
        int64_t& slot = record_of_tile_[size_t(recs[i].tile_m) * size_t(tn) + size_t(recs[i].tile_n)];
        if (slot < 0 || recs[size_t(slot)].unit > recs[i].unit) slot = int64_t(i);
      }
    }
    order_of_tile.resize(record_of_tile_.size(), 0);
    order_count = std::max<int64_t>(int64_t(trace->trace.records.size()), 1);
    for (size_t i = 0; i < record_of_tile_.size(); ++i)
      order_of_tile[i] = record_of_tile_[i] >= 0 ? trace->trace.records[size_t(record_of_tile_[i])].unit : 0;
  } else {
    order_of_tile = setup.pid_of_tiles();
  }

  // Layout: a strip of B column-blocks above C, A row-blocks to its left, a legend below.
  ImDrawList* dl = ImGui::GetWindowDrawList();
  const ImVec2 origin = ImGui::GetCursorScreenPos();
  const ImVec2 avail = ImGui::GetContentRegionAvail();
  // A trace of stacked products names each band of rows on the right; one that
  // gathered (lesson 08) gets a strip of the positions it gathered from below.
  const std::vector<ProductGrid> no_products;
  const std::vector<ProductGrid>& products = trace ? trace->trace.kernel.products : no_products;
  const bool gathers = trace && !trace->trace.kernel.gathered.index.empty();
  const float strip = 14.0f, gap = 8.0f, label_h = ImGui::GetTextLineHeightWithSpacing();
  float names_w = 0;
  for (const ProductGrid& p : products) names_w = std::max(names_w, ImGui::CalcTextSize(p.name.c_str()).x + 12);
  const float legend_h = 3 * label_h + 12 + (gathers ? 2 * label_h + 26 : 0);
  const float grid_w = avail.x - strip - gap - 70 - names_w, grid_h = avail.y - strip - gap - label_h - legend_h;
  const int cell = std::max(1, int(std::floor(std::min(grid_w / float(tn), grid_h / float(tm)))));
  const ImVec2 c0(std::floor(origin.x + 70 + strip + gap), std::floor(origin.y + label_h + strip + gap));
  const ImVec2 c1(c0.x + float(cell * tn), c0.y + float(cell * tm));

  const Rgb hi = kOperandHighlightRgb;
  dl->AddText(ImVec2(c0.x, origin.y), kTextDim, "B column-blocks read by the blocks in flight");
  for (int j = 0; j < tn; ++j) {
    const ImVec2 a(c0.x + float(j * cell), c0.y - gap - strip), b(a.x + float(cell), c0.y - gap);
    dl->AddRectFilled(ImVec2(a.x + (cell > 3), a.y), b, use.b_columns[size_t(j)] ? to_imu32(hi) : kGridLine);
  }
  dl->AddText(ImVec2(origin.x, c0.y), kTextDim, "A row-");
  dl->AddText(ImVec2(origin.x, c0.y + label_h), kTextDim, "blocks");
  for (int i = 0; i < tm; ++i) {
    const ImVec2 a(c0.x - gap - strip, c0.y + float(i * cell)), b(c0.x - gap, a.y + float(cell));
    dl->AddRectFilled(ImVec2(a.x, a.y + (cell > 3)), b, use.a_rows[size_t(i)] ? to_imu32(hi) : kGridLine);
  }

  const float inset = cell > 3 ? 1.0f : 0.0f;
  const bool labels = cell >= 28;
  char text[32];
  for (int i = 0; i < tm; ++i) {
    for (int j = 0; j < tn; ++j) {
      const size_t t = size_t(i) * size_t(tn) + size_t(j);
      const ImVec2 a(c0.x + float(j * cell) + inset, c0.y + float(i * cell) + inset);
      const ImVec2 b(c0.x + float((j + 1) * cell), c0.y + float((i + 1) * cell));
      const Rgb launch = launch_order_rgb(order_of_tile[t], order_count);
      switch (states[t]) {
        case TileState::pending: dl->AddRectFilled(a, b, to_imu32(kPendingTileRgb)); break;
        case TileState::done: dl->AddRectFilled(a, b, to_imu32(launch)); break;
        case TileState::in_flight:
          dl->AddRectFilled(a, b, to_imu32(launch));
          if (cell >= 6) dl->AddRect(a, b, to_imu32(hi), 0.0f, 0, cell >= 16 ? 2.0f : 1.0f);
          break;
      }
      if (labels) {
        std::snprintf(text, sizeof text, "%lld", static_cast<long long>(order_of_tile[t]));
        centred_text(dl, a, b, states[t] == TileState::pending ? kTextDim : IM_COL32(0, 0, 0, 200), text);
      }
    }
  }

  // Products: a line between bands, each named beside its first row.
  for (const ProductGrid& p : products) {
    const float y = c0.y + float(p.first_row * cell);
    if (p.first_row > 0) dl->AddLine(ImVec2(c0.x - gap - strip, y), ImVec2(c1.x + 4, y), IM_COL32(230, 230, 230, 200), 2.0f);
    dl->AddText(ImVec2(c1.x + 8, y), IM_COL32(230, 230, 230, 255), p.name.c_str());
  }

  // Legend: the ramp, and the state colours.
  const float ly = c1.y + 10;
  const float ramp_w = std::min(240.0f, std::max(c1.x - c0.x, 120.0f));
  for (int s = 0; s < 48; ++s) {
    const float x0 = c0.x + ramp_w * float(s) / 48, x1 = c0.x + ramp_w * float(s + 1) / 48;
    dl->AddRectFilled(ImVec2(x0, ly), ImVec2(x1 + 0.5f, ly + 12), to_imu32(launch_order_rgb(s, 48)));
  }
  dl->AddText(ImVec2(c0.x, ly + 14), kTextDim, trace ? "launch order (trace units), first to last" : "launch order (program id), first to last");
  const float lx = c0.x + ramp_w + 20;
  dl->AddRectFilled(ImVec2(lx, ly), ImVec2(lx + 12, ly + 12), to_imu32(kPendingTileRgb));
  dl->AddText(ImVec2(lx + 16, ly - 1), kTextDim, "not launched");
  dl->AddRect(ImVec2(lx + 120, ly), ImVec2(lx + 132, ly + 12), to_imu32(hi), 0.0f, 0, 2.0f);
  dl->AddText(ImVec2(lx + 136, ly - 1), kTextDim, "in flight");
  char summary[160];
  char order_text[48];
  if (setup.order == TileOrder::grouped) std::snprintf(order_text, sizeof order_text, "grouped, GROUP_M %d", setup.group_m);
  else std::snprintf(order_text, sizeof order_text, "%s", tile_order_name(setup.order));
  std::snprintf(summary, sizeof summary, "%s: %d A row-blocks + %d B column-blocks in use", order_text, use.a_count,
                use.b_count);
  dl->AddText(ImVec2(c0.x, ly + 14 + label_h), IM_COL32(230, 230, 230, 255), summary);

  shown_ = {{"source", trace ? "trace" : "model"}, {"m", setup.m}, {"n", setup.n}, {"k", setup.k},
            {"block_m", setup.block_m}, {"block_n", setup.block_n}, {"block_k", setup.block_k},
            {"order", tile_order_name(setup.order)}, {"group_m", setup.group_m}, {"gpu", gpu_.gpu.name},
            {"sms", gpu_.gpu.sms}, {"blocks_per_sm", gpu_.gpu.blocks_per_sm}};
  placement_ = GridPlacement{int(c0.x), int(c0.y), cell, tm, tn, setup.order, setup.group_m,
                             int64_t(std::count_if(states.begin(), states.end(),
                                                   [](TileState t) { return t != TileState::pending; }))};

  // Hover: which program computes this tile, and from a trace where and when it ran.
  ImGui::SetCursorScreenPos(c0);
  ImGui::InvisibleButton("C tiles", ImVec2(std::max(c1.x - c0.x, 1.0f), std::max(c1.y - c0.y, 1.0f)));
  std::vector<size_t> hovered_records;
  if (ImGui::IsItemHovered()) {
    const ImVec2 mouse = ImGui::GetIO().MousePos;
    const int j = std::clamp(int((mouse.x - c0.x) / float(cell)), 0, tn - 1);
    const int i = std::clamp(int((mouse.y - c0.y) / float(cell)), 0, tm - 1);
    const size_t t = size_t(i) * size_t(tn) + size_t(j);
    ImGui::BeginTooltip();
    if (trace && record_of_tile_[t] >= 0) {
      const Trace& tr = trace->trace;
      const TraceRecord& r = tr.records[size_t(record_of_tile_[t])];
      ImGui::Text("%s   unit %lld", tile_label(tr, r).c_str(), static_cast<long long>(order_of_tile[t]));
      ImGui::Text("SM %d, start %s, end %s (%s)", r.sm, format_ns(double(r.start_ns)).c_str(),
                  format_ns(double(r.end_ns)).c_str(), format_ns(double(r.end_ns - r.start_ns)).c_str());
      const ProductGrid* product = product_of_row(tr.kernel, r.tile_m);
      if (r.k_end - r.k_begin < (product ? product->k : setup.k))
        ImGui::Text("k %d .. %d (split-K or Stream-K: more units for this tile)", r.k_begin, r.k_end);
      for (size_t u = 0; u < tr.records.size(); ++u)
        if (tr.records[u].tile_m == i && tr.records[u].tile_n == j) hovered_records.push_back(u);
      if (const std::string g = gathered_text(tr, r); !g.empty()) {
        ImGui::PushTextWrapPos(ImGui::GetFontSize() * 30);
        ImGui::TextWrapped("gathered %s%s", g.c_str(), hovered_records.size() > 1 ? " (its first unit)" : "");
        ImGui::PopTextWrapPos();
      }
    } else if (trace) {
      ImGui::Text("tile (%d, %d): no unit (a stacked product narrower than the grid)", i, j);
    } else {
      ImGui::Text("tile (%d, %d)   program id %lld", i, j, static_cast<long long>(order_of_tile[t]));
      ImGui::Text("reads A row-block %d, B column-block %d", i, j);
    }
    ImGui::EndTooltip();
  }
  if (gathers) draw_gather_strip(*trace, position, hovered_records, ImVec2(c0.x, ly + 14 + 2 * label_h + 6),
                                 std::max(c1.x - c0.x + names_w, 240.0f));
}

// Which of the gathered-from positions (lesson 08: the d_ff neurons) the units in
// flight use, and the hovered tile's, on a strip in the positions' own order.
void OrderPanel::draw_gather_strip(const LoadedTrace& trace, double position, const std::vector<size_t>& hovered,
                                   ImVec2 at, float width) {
  const Trace& tr = trace.trace;
  const GatheredIndex& g = tr.kernel.gathered;
  ImDrawList* dl = ImGui::GetWindowDrawList();
  char line[200];
  std::snprintf(line, sizeof line, "the %lld %s (%zu listed) the units in flight gathered", static_cast<long long>(g.of),
                g.what.c_str(), g.index.size());
  dl->AddText(at, kTextDim, line);
  const float y0 = at.y + ImGui::GetTextLineHeightWithSpacing(), h = 16;
  std::vector<size_t> in_flight;
  for (size_t i = 0; i < tr.records.size(); ++i)
    if (double(tr.records[i].start_ns) <= position && position < double(tr.records[i].end_ns)) in_flight.push_back(i);
  const int cells = std::max(1, int(width));
  const std::vector<GatherState> strip = gather_strip(tr, in_flight, hovered, cells);
  for (int x = 0; x < cells; ++x) {
    const GatherState s = strip[size_t(x)];
    if (s == GatherState::not_listed) continue;
    const Rgb c = s == GatherState::hovered ? kHoveredRgb : s == GatherState::in_flight ? kOperandHighlightRgb : kListedRgb;
    dl->AddRectFilled(ImVec2(at.x + float(x), y0), ImVec2(at.x + float(x + 1), y0 + h), to_imu32(c));
  }
  dl->AddRect(ImVec2(at.x - 1, y0 - 1), ImVec2(at.x + float(cells) + 1, y0 + h + 1), kGridLine);
  float x = at.x;
  const float ty = y0 + h + 4;
  const auto key = [&](Rgb c, const char* text) {
    dl->AddRectFilled(ImVec2(x, ty + 2), ImVec2(x + 12, ty + 14), to_imu32(c));
    dl->AddText(ImVec2(x + 16, ty), kTextDim, text);
    x += 16 + ImGui::CalcTextSize(text).x + 16;
  };
  key(kListedRgb, "listed (active)");
  key(kOperandHighlightRgb, "gathered by a unit in flight");
  key(kHoveredRgb, "by the hovered tile");
}

}  // namespace wb::viewer::ui
