// Labels beside points on a chart, none overlapping, none leaving the plot:
// each label tries the right of its point, then the left, above and below; a
// label with no free place is left out (the chart names it on hover). Labels are
// placed in the order given, so put the ones that matter most first.
#pragma once

#include <optional>
#include <vector>

namespace wb::viewer {

struct LabelRect {
  float x0 = 0, y0 = 0, x1 = 0, y1 = 0;
  bool overlaps(const LabelRect& o) const { return x0 < o.x1 && o.x0 < x1 && y0 < o.y1 && o.y0 < y1; }
  bool inside(const LabelRect& o) const { return x0 >= o.x0 && y0 >= o.y0 && x1 <= o.x1 && y1 <= o.y1; }
};

struct LabelRequest {
  float x = 0, y = 0;           // the point
  float width = 0, height = 0;  // the text's size
};

// Per request, where its text goes, or nothing. A label also keeps clear of
// every point's marker (a square of `marker_radius` around each point).
std::vector<std::optional<LabelRect>> place_labels(const std::vector<LabelRequest>& requests, const LabelRect& bounds,
                                                   float marker_radius, float gap = 3.0f);

}  // namespace wb::viewer
