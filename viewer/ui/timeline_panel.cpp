#include "ui/timeline_panel.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace wb::viewer::ui {

namespace {

inline constexpr float kGutter = 64;  // SM labels
inline constexpr float kAxis = 20;
inline constexpr ImU32 kTailShade = IM_COL32(235, 90, 80, 40);
inline constexpr ImU32 kAxisLine = IM_COL32(60, 64, 72, 255);

// A "nice" tick step (1, 2, 5 x 10^k ns) giving about `target` ticks over the span.
double tick_step(double span_ns, double target) {
  const double raw = span_ns / target;
  const double p = std::pow(10.0, std::floor(std::log10(raw)));
  for (double m : {1.0, 2.0, 5.0, 10.0})
    if (raw <= m * p) return m * p;
  return 10 * p;
}

// A colouring's swatches and labels from (x, y) on one text line; returns the x after them.
float draw_key(ImDrawList* dl, float x, float y, const UnitColours& c) {
  const float h = ImGui::GetTextLineHeight();
  for (size_t i = 0; i < c.labels.size(); ++i) {
    dl->AddRectFilled(ImVec2(x, y + 2), ImVec2(x + 12, y + h - 2), to_imu32(category_rgb(int(i))));
    dl->AddText(ImVec2(x + 16, y), kTextDim, c.labels[i].c_str());
    x += 16 + ImGui::CalcTextSize(c.labels[i].c_str()).x + 14;
  }
  return x;
}

}  // namespace

void TimelinePanel::fit_view(double end_ns) {
  view_.begin_ns = 0;
  view_.end_ns = std::max(end_ns, 1.0);
}

void TimelinePanel::bench_step(int frame) {
  // Zoom from the whole trace down to a few percent of it and back, around 40 %.
  const double phase = 0.5 - 0.5 * std::cos(double(frame) * 0.05);
  const double span = view_end_ns_ * (1.0 - 0.97 * phase);
  const double centre = view_end_ns_ * 0.4;
  view_.begin_ns = std::clamp(centre - span * 0.4, 0.0, std::max(view_end_ns_ - span, 0.0));
  view_.end_ns = view_.begin_ns + span;
}

void TimelinePanel::release_textures() {
  for (CanvasTexture& c : canvases_) c.release();
}

void TimelinePanel::draw(Workspace& ws, float frame_seconds) {
  const LoadedTrace* t = ws.current();
  if (!t) {
    ImGui::TextWrapped("No trace loaded. Open one from the asset list on the left, pass a path on the command "
                       "line, or record one with \"Run on this GPU\".");
    return;
  }
  ws.trace_playback.advance(frame_seconds);
  const LoadedTrace* other = compare_ ? ws.comparison() : nullptr;
  const double end = double(std::max(t->timeline.end_ns(), other ? other->timeline.end_ns() : 0));
  if (t != viewed_) colouring_ = t->first_colouring;
  if (t != viewed_ || other != compared_ || end != view_end_ns_) {
    viewed_ = t;
    compared_ = other;
    view_end_ns_ = end;
    fit_view(end);
  }

  Playback& pb = ws.trace_playback;
  if (ImGui::Button(pb.playing() ? "Pause" : "Play")) pb.toggle();
  ImGui::SameLine();
  if (ImGui::Button("Fit")) fit_view(view_end_ns_);
  ImGui::SameLine();
  if (ws.comparison()) {
    ImGui::Checkbox("compare", &compare_);
    ImGui::SameLine();
  }
  const std::vector<UnitColouring>& choices = t->colourings;
  if (choices.size() > 1) {
    ImGui::SetNextItemWidth(130);
    if (ImGui::BeginCombo("colour", unit_colouring_name(colouring_))) {
      for (UnitColouring c : choices)
        if (ImGui::Selectable(unit_colouring_name(c), c == colouring_)) colouring_ = c;
      ImGui::EndCombo();
    }
    ImGui::SameLine();
  }
  ImGui::TextDisabled("wheel: zoom   drag: pan   click: move the playhead   double-click: fit");
  draw_legend(*t);

  bars_drawn_ = 0;
  layout_ = {{"traces", nlohmann::json::array()}};
  const float h = ImGui::GetContentRegionAvail().y;
  if (other) {
    colours_of(*t, 0);
    colours_of(*other, 1);
    draw_trace(ws, *t, "trace a", std::floor(h * 0.5f) - 2, canvases_[0]);
    draw_trace(ws, *other, "trace b", std::floor(h * 0.5f) - 2, canvases_[1]);
  } else {
    colours_of(*t, 0);
    draw_trace(ws, *t, "trace a", h, canvases_[0]);
  }
}

const UnitColours& TimelinePanel::colours_of(const LoadedTrace& t, int which) {
  // The comparison takes trace a's colouring where it has it, else its own default.
  UnitColouring by = colouring_;
  if (which == 1) {
    const std::vector<UnitColouring>& own = t.colourings;
    if (std::find(own.begin(), own.end(), by) == own.end()) by = t.first_colouring;
  }
  if (coloured_for_[which] != &t || coloured_by_[which] != by) {
    coloured_for_[which] = &t;
    coloured_by_[which] = by;
    colours_[which] = unit_colours(t.trace, by, view_.colour_buckets);
  }
  return colours_[which];
}

// What the colours mean: the launch-order ramp (or the k slices' or products'
// swatches), the tail, merged bars, the playhead.
void TimelinePanel::draw_legend(const LoadedTrace& t) {
  ImDrawList* dl = ImGui::GetWindowDrawList();
  const ImVec2 p = ImGui::GetCursorScreenPos();
  const float h = ImGui::GetTextLineHeight();
  float x = p.x;
  auto text = [&](const char* t) {
    dl->AddText(ImVec2(x, p.y), kTextDim, t);
    x += ImGui::CalcTextSize(t).x + 18;
  };
  if (colouring_ == UnitColouring::launch_order) {
    text("block colour = launch order: first");
    for (int s = 0; s < 40; ++s)
      dl->AddRectFilled(ImVec2(x - 12 + 2.5f * float(s), p.y + 2), ImVec2(x - 12 + 2.5f * float(s + 1) + 0.5f, p.y + h - 2),
                        to_imu32(launch_order_rgb(s, 40)));
    x += 100 - 12 + 6;
    text("last");
  } else {
    const UnitColours& c = colours_of(t, 0);
    text(("block colour = " + c.title + ":").c_str());
    x = draw_key(dl, x - 14, p.y, c) + 4;
  }
  dl->AddRectFilled(ImVec2(x, p.y + 2), ImVec2(x + 12, p.y + h - 2), darker(launch_order_rgb(20, 40), 0.7f));
  x += 16;
  text("several blocks in one pixel (zoom in)");
  dl->AddRectFilled(ImVec2(x, p.y + 2), ImVec2(x + 12, p.y + h - 2), blend_over(kTailShade, kWindowBackground));
  dl->AddRect(ImVec2(x, p.y + 2), ImVec2(x + 12, p.y + h - 2), kAxisLine);
  x += 16;
  text("tail: SMs idle for good");
  dl->AddLine(ImVec2(x + 5, p.y), ImVec2(x + 5, p.y + h), kPlayhead, 2.0f);
  x += 14;
  text("playhead (shared with Tile order)");
  ImGui::Dummy(ImVec2(x - p.x, h));
  // A comparison coloured another way (its own k ranges) gets its own key, on a line of its own.
  if (compared_) {
    const UnitColours& b = colours_of(*compared_, 1);
    if (b.by != UnitColouring::launch_order && (b.by != colouring_ || b.labels != colours_of(t, 0).labels)) {
      const ImVec2 q = ImGui::GetCursorScreenPos();
      const std::string title = "trace b's colour = " + b.title + ":";
      dl->AddText(q, kTextDim, title.c_str());
      const float end = draw_key(dl, q.x + ImGui::CalcTextSize(title.c_str()).x + 14, q.y, b);
      ImGui::Dummy(ImVec2(end - q.x, h));
    }
  }
}

void TimelinePanel::draw_trace(Workspace& ws, const LoadedTrace& lt, const char* id, float height,
                               CanvasTexture& bars_canvas) {
  const TimelineModel& tl = lt.timeline;
  const Trace& trace = lt.trace;
  const double duration = double(tl.end_ns());
  char line[256];
  std::snprintf(line, sizeof line, "%s   %s blocks, %s, tail %s (%.0f %%)", lt.label.c_str(),
                format_count(int64_t(tl.records().size())).c_str(), format_ns(duration).c_str(),
                format_ns(duration - double(tl.tail_begin_ns())).c_str(),
                duration > 0 ? 100.0 * (duration - double(tl.tail_begin_ns())) / duration : 0.0);
  ImGui::TextUnformatted(line);
  ImDrawList* dl = ImGui::GetWindowDrawList();
  const ImVec2 p0 = ImGui::GetCursorScreenPos();
  const float width = ImGui::GetContentRegionAvail().x;
  const float body_h = std::max(height - ImGui::GetTextLineHeightWithSpacing() - kAxis - 4, 20.0f);
  const ImVec2 area0(p0.x + kGutter, p0.y + kAxis), area1(p0.x + width, p0.y + kAxis + body_h);
  const float area_w = area1.x - area0.x;
  view_.width_px = area_w;

  ImGui::InvisibleButton(id, ImVec2(width, kAxis + body_h));
  const bool hovered = ImGui::IsItemHovered();
  const ImGuiIO& io = ImGui::GetIO();
  const double ns_per_px = (view_.end_ns - view_.begin_ns) / double(area_w);
  if (hovered && io.MouseWheel != 0) {
    const double anchor = view_.begin_ns + double(io.MousePos.x - area0.x) * ns_per_px;
    zoom_view(view_, anchor, std::pow(0.8, double(io.MouseWheel)), view_end_ns_);
  }
  if (ImGui::IsItemActive() && ImGui::IsMouseDragging(ImGuiMouseButton_Left, 2.0f)) {
    pan_view(view_, -double(io.MouseDelta.x) * ns_per_px, view_end_ns_);
  } else if (hovered && ImGui::IsMouseReleased(ImGuiMouseButton_Left) && io.MousePos.x >= area0.x &&
             std::abs(io.MouseDragMaxDistanceSqr[0]) < 4.0f) {
    ws.trace_playback.set_position(view_.begin_ns + double(io.MousePos.x - area0.x) * ns_per_px);
  }
  if (hovered && ImGui::IsMouseDoubleClicked(ImGuiMouseButton_Left)) fit_view(view_end_ns_);

  const double px_per_ns = double(area_w) / (view_.end_ns - view_.begin_ns);
  auto x_of = [&](double t) { return area0.x + float((t - view_.begin_ns) * px_per_ns); };

  dl->PushClipRect(p0, ImVec2(area1.x, area1.y), true);
  // The bars area is one opaque picture drawn as a single textured quad (its
  // background, the tail, the grid lines and the bars): the renderer shades
  // each pixel once, however many bars there are.
  const ImVec2 canvas0(std::floor(area0.x), std::floor(area0.y));
  auto canvas_rect = [&](float x0, float y0, float x1, float y1, ImU32 colour) {
    bars_canvas.fill_rect(x0 - canvas0.x, y0 - canvas0.y, x1 - canvas0.x, y1 - canvas0.y, colour);
  };
  bars_canvas.begin(int(std::ceil(area1.x) - canvas0.x), int(std::ceil(area1.y) - canvas0.y), kWindowBackground);
  // Tail: from the first SM running out of work to the end.
  canvas_rect(x_of(double(tl.tail_begin_ns())), area0.y, x_of(duration), area1.y,
              blend_over(kTailShade, kWindowBackground));
  // Time axis: a tick in the axis band, its grid line in the picture, on one whole pixel.
  nlohmann::json time_labels = nlohmann::json::array(), sm_labels = nlohmann::json::array();
  const double step = tick_step(view_.end_ns - view_.begin_ns, std::max(2.0, double(area_w) / 110.0));
  for (double t = std::ceil(view_.begin_ns / step) * step; t <= view_.end_ns; t += step) {
    const float x = std::floor(x_of(t) + 0.5f);
    dl->AddRectFilled(ImVec2(x, area0.y - 4), ImVec2(x + 1, area0.y), kAxisLine);
    canvas_rect(x, area0.y, x + 1, area1.y, kAxisLine);
    const std::string tick = format_ns(t);
    const float tw = ImGui::CalcTextSize(tick.c_str()).x;
    if (x + 3 + tw <= area1.x) {  // a label that would run off the right edge is left out
      dl->AddText(ImVec2(x + 3, p0.y + 2), kTextDim, tick.c_str());
      time_labels.push_back({x + 3, p0.y + 2, x + 3 + tw, p0.y + 2 + ImGui::GetTextLineHeight()});
    }
  }

  // Rows: one per SM; its resident slots are lanes inside the row, or share the
  // row when a lane would be thinner than a pixel.
  const int sms = tl.sm_count(), slots = tl.slots_per_sm();
  const float row_h = body_h / float(sms);
  const bool lanes_visible = row_h / float(slots) >= 1.5f;
  const float clip_top = std::max(area0.y, dl->GetClipRectMin().y), clip_bottom = std::min(area1.y, dl->GetClipRectMax().y);
  const int first_sm = std::clamp(int((clip_top - area0.y) / row_h), 0, sms);
  const int last_sm = std::clamp(int(std::ceil((clip_bottom - area0.y) / row_h)), 0, sms);
  view_.rows_per_sm = !lanes_visible;
  const UnitColours& colours = colours_of(lt, &canvases_[1] == &bars_canvas ? 1 : 0);
  view_.colour_keys = &colours.key;
  bars_.clear();
  build_timeline_bars(tl, view_, first_sm * slots, last_sm * slots, bars_);
  bars_drawn_ += bars_.size();
  const TimelineBar* hovered_bar = nullptr;
  for (const TimelineBar& bar : bars_) {
    const int sm = bar.lane / slots, slot = bar.lane % slots;
    float y0 = area0.y + row_h * float(sm), y1 = y0 + row_h;
    if (lanes_visible) {
      y0 = area0.y + row_h * float(sm) + row_h * float(slot) / float(slots);
      y1 = y0 + row_h / float(slots);
    }
    if (y1 - y0 >= 3) y1 -= 1;  // a hairline between rows when there is room
    const Rgb c = unit_rgb(colours, trace, bar.first_record);
    const ImVec2 b0(area0.x + bar.x0, y0), b1(area0.x + bar.x1, y1);
    // Merged bars are darker, except in SM rows where merging is the rule.
    canvas_rect(b0.x, b0.y, b1.x, b1.y, bar.count > 1 && lanes_visible ? darker(c, 0.7f) : to_imu32(c));
    if (hovered && io.MousePos.x >= b0.x && io.MousePos.x < b1.x && io.MousePos.y >= y0 && io.MousePos.y < y1)
      hovered_bar = &bar;
  }
  view_.colour_keys = nullptr;
  bars_canvas.draw(dl, canvas0);
  // Playhead.
  const float xp = x_of(ws.trace_playback.position());
  dl->AddLine(ImVec2(xp, area0.y - 6), ImVec2(xp, area1.y), kPlayhead, 2.0f);
  dl->PopClipRect();

  // SM labels in the gutter, as many as fit.
  const int label_every = std::max(1, int(std::ceil(ImGui::GetTextLineHeight() / row_h)));
  const int nice_every = label_every <= 1 ? 1 : label_every <= 2 ? 2 : label_every <= 5 ? 5 : label_every <= 10 ? 10 : 20;
  const float text_h = ImGui::GetTextLineHeight();
  for (int sm = 0; sm < sms; sm += nice_every) {
    std::snprintf(line, sizeof line, "SM %d", sm);
    const float y = area0.y + row_h * float(sm) + (row_h - text_h) * 0.5f * (row_h > text_h);
    if (y + text_h > area1.y) break;  // the rows below the last label that fits are unlabelled
    dl->AddText(ImVec2(p0.x + 4, y), kTextDim, line);
    sm_labels.push_back({p0.x + 4, y, p0.x + 4 + ImGui::CalcTextSize(line).x, y + text_h});
  }
  layout_["traces"].push_back({{"label", lt.label}, {"area", {area0.x, area0.y, area1.x, area1.y}},
                               {"time_labels", std::move(time_labels)}, {"sm_labels", std::move(sm_labels)}});
  std::snprintf(line, sizeof line, "%d busy", tl.busy_sms_at(uint64_t(std::max(ws.trace_playback.position(), 0.0))));
  dl->AddText(ImVec2(p0.x + 4, p0.y + 2), IM_COL32(230, 230, 230, 255), line);

  if (hovered_bar) {
    const TraceRecord& r = tl.records()[hovered_bar->first_record];
    ImGui::BeginTooltip();
    if (hovered_bar->count > 1) {
      ImGui::Text("%u blocks merged here (each narrower than a pixel): zoom in", hovered_bar->count);
      ImGui::Text("first: unit %d, %s", r.unit, tile_label(trace, r).c_str());
    } else {
      ImGui::Text("unit (program id) %d: %s", r.unit, tile_label(trace, r).c_str());
      ImGui::Text("SM %d, slot %d", r.sm, hovered_bar->lane % slots);
      ImGui::Text("start %s, end %s, %s", format_ns(double(r.start_ns)).c_str(), format_ns(double(r.end_ns)).c_str(),
                  format_ns(double(r.end_ns - r.start_ns)).c_str());
      const ProductGrid* product = product_of_row(trace.kernel, r.tile_m);
      const int64_t k = product ? product->k : trace.header.k;
      if (r.k_end - r.k_begin < k) ImGui::Text("k %d .. %d of %lld", r.k_begin, r.k_end, static_cast<long long>(k));
      if (const std::string g = gathered_text(trace, r); !g.empty()) {
        ImGui::PushTextWrapPos(ImGui::GetFontSize() * 30);
        ImGui::TextWrapped("gathered %s", g.c_str());
        ImGui::PopTextWrapPos();
      }
    }
    ImGui::EndTooltip();
  }
}

}  // namespace wb::viewer::ui
