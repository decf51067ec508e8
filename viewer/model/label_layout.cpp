#include "model/label_layout.hpp"

#include <algorithm>

namespace wb::viewer {

std::vector<std::optional<LabelRect>> place_labels(const std::vector<LabelRequest>& requests, const LabelRect& bounds,
                                                   float marker_radius, float gap) {
  std::vector<LabelRect> taken;
  taken.reserve(requests.size() * 2);
  for (const LabelRequest& r : requests)
    taken.push_back(LabelRect{r.x - marker_radius, r.y - marker_radius, r.x + marker_radius, r.y + marker_radius});
  std::vector<std::optional<LabelRect>> placed(requests.size());
  for (size_t i = 0; i < requests.size(); ++i) {
    const LabelRequest& r = requests[i];
    const float w = r.width, h = r.height, off = marker_radius + gap;
    const LabelRect candidates[] = {
        {r.x + off, r.y - h / 2, r.x + off + w, r.y + h / 2},          // right
        {r.x - off - w, r.y - h / 2, r.x - off, r.y + h / 2},          // left
        {r.x - w / 2, r.y - off - h, r.x + w / 2, r.y - off},          // above
        {r.x - w / 2, r.y + off, r.x + w / 2, r.y + off + h},          // below
    };
    for (const LabelRect& c : candidates) {
      if (!c.inside(bounds)) continue;
      if (std::any_of(taken.begin(), taken.end(), [&](const LabelRect& t) { return c.overlaps(t); })) continue;
      placed[i] = c;
      taken.push_back(c);
      break;
    }
  }
  return placed;
}

}  // namespace wb::viewer
