#include "model/roofline_points.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "models/roofline.hpp"

namespace wb::viewer {

RooflineData roofline_points(const std::vector<const Results*>& files) {
  RooflineData d;
  for (size_t f = 0; f < files.size(); ++f) {
    const Results& r = *files[f];
    // The problem's bytes: the reference row's (it moves what the problem needs).
    double problem_bytes = 0;
    for (const VariantResult& v : r.variants)
      if (v.reference && !v.skipped && v.bytes > 0 && v.bytes_what.empty()) problem_bytes = v.bytes;
    for (const VariantResult& v : r.variants) {
      if (v.skipped || v.tflops <= 0 || v.flops <= 0) continue;
      double bytes = problem_bytes > 0 ? problem_bytes : (v.bytes_what.empty() ? v.bytes : 0.0);
      // A variant that reads a smaller form of the operands (lesson 07's int4
      // weights against the reference's fp16 ones) must move at least its own
      // count, not the reference's: placed by it.
      const bool by_own = problem_bytes > 0 && !v.bytes_what.empty() && v.bytes > 0 && v.bytes < problem_bytes;
      if (by_own) bytes = v.bytes;
      if (bytes <= 0) {
        ++d.unplaced;
        continue;
      }
      RooflinePoint p;
      p.lesson = r.header.lesson;
      p.variant = v.name;
      p.m = r.header.m;
      p.n = r.header.n;
      p.k = r.header.k;
      p.intensity = arithmetic_intensity(v.flops, bytes);
      p.tflops = v.tflops;
      p.reference = v.reference;
      p.bound = v.bound;
      p.failed = v.checked && !v.passed && !v.reference;
      p.by_own_bytes = by_own;
      if (!v.bytes_what.empty() || (v.bytes > 0 && std::abs(v.bytes - bytes) > 0.5)) {
        p.own_bytes = v.bytes;
        p.own_bytes_what = v.bytes_what;
      }
      p.file = int(f);
      d.points.push_back(std::move(p));
    }
  }
  return d;
}

std::string point_label(const RooflinePoint& p) {
  return p.reference ? "cuBLAS" : p.bound ? p.variant + " (a bound)" : p.variant;
}

std::string bar_label(const VariantResult& v) {
  char label[128];
  if (v.reference)
    std::snprintf(label, sizeof label, "%.1f TFLOP/s (cuBLAS)", v.tflops);
  else
    std::snprintf(label, sizeof label, "%.1f TFLOP/s, %.0f %% of cuBLAS%s%s", v.tflops, 100.0 * v.vs_cublas,
                  v.bound ? " (a bound)" : "", v.checked && !v.passed ? ", FAILED check" : "");
  return label;
}

RooflineRange roofline_range(const RooflineData& data, double peak_tflops, double dram_gbps) {
  RooflineRange r;
  const double ridge = ridge_intensity(peak_tflops, dram_gbps);
  double ai_lo = ridge > 0 ? ridge / 10 : 1.0, ai_hi = ridge > 0 ? ridge * 3 : 1000.0;
  double t_lo = peak_tflops > 0 ? peak_tflops / 1000 : 1.0;
  for (const RooflinePoint& p : data.points) {
    ai_lo = std::min(ai_lo, p.intensity);
    ai_hi = std::max(ai_hi, p.intensity * 1.5);
    t_lo = std::min(t_lo, p.tflops);
  }
  r.x_lo = int(std::floor(std::log10(std::max(ai_lo, 1e-6))));
  r.x_hi = std::max(int(std::ceil(std::log10(std::max(ai_hi, 1e-6)))), r.x_lo + 1);
  r.y_hi = std::log10(std::max(peak_tflops, 1e-9) * 2);
  r.y_lo = std::min(std::floor(std::log10(std::max(t_lo, 1e-9))) - 0.3, r.y_hi - 3);
  return r;
}

}  // namespace wb::viewer
