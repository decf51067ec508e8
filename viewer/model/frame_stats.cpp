#include "model/frame_stats.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace wb::viewer {

FrameStats frame_stats(std::vector<double> frame_ms) {
  FrameStats s;
  s.frames = int(frame_ms.size());
  if (frame_ms.empty()) return s;
  std::sort(frame_ms.begin(), frame_ms.end());
  auto at = [&](double q) { return frame_ms[size_t(std::lround(q * double(frame_ms.size() - 1)))]; };
  s.min_ms = frame_ms.front();
  s.median_ms = at(0.5);
  s.p95_ms = at(0.95);
  s.max_ms = frame_ms.back();
  return s;
}

std::string format_frame_stats(const FrameStats& s) {
  char buf[160];
  std::snprintf(buf, sizeof buf, "%d frames: min %.2f ms, median %.2f ms, p95 %.2f ms, max %.2f ms", s.frames, s.min_ms,
                s.median_ms, s.p95_ms, s.max_ms);
  return buf;
}

}  // namespace wb::viewer
