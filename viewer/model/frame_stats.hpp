// Frame-time statistics for --bench-frames.
#pragma once

#include <string>
#include <vector>

namespace wb::viewer {

struct FrameStats {
  double min_ms = 0, median_ms = 0, p95_ms = 0, max_ms = 0;
  int frames = 0;
};

FrameStats frame_stats(std::vector<double> frame_ms);
std::string format_frame_stats(const FrameStats& s);

}  // namespace wb::viewer
