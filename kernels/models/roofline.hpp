// Roofline: the rate a kernel can reach is the smaller of the arithmetic peak
// and (bytes it must move per flop) x memory bandwidth.
#pragma once

#include <algorithm>

namespace wb {

// flop per byte of DRAM traffic
inline double arithmetic_intensity(double flops, double bytes) { return bytes > 0 ? flops / bytes : 0.0; }

// attainable TFLOP/s at this intensity
inline double roofline_tflops(double peak_tflops, double dram_gbps, double intensity) {
  return std::min(peak_tflops, dram_gbps * intensity / 1000.0);
}

// intensity where the two roofs meet
inline double ridge_intensity(double peak_tflops, double dram_gbps) {
  return dram_gbps > 0 ? peak_tflops * 1000.0 / dram_gbps : 0.0;
}

}  // namespace wb
