// The results panel's roofline: where each variant of each results file sits.
//
// The x axis is arithmetic intensity against the bytes the *problem* must move
// between DRAM and the chip at least (every input read once, every output
// written once: the reference row's bytes). A kernel can only move more than
// that, so its real intensity is lower and its point can never sit above the
// roof. A variant that counts its bytes differently (lesson 01 counts the bytes
// its threads request, mostly served by caches) is placed by the same problem
// bytes; its own count is kept for the hover. The exception is a variant whose
// own count is smaller: it reads a smaller form of the operands than the
// reference does (lesson 07's int4 weights, the reference's fp16 ones), must
// move at least that, and is placed by it.
#pragma once

#include <string>
#include <vector>

#include "records/records.hpp"

namespace wb::viewer {

struct RooflinePoint {
  std::string lesson, variant;
  int64_t m = 0, n = 0, k = 0;
  double intensity = 0;     // flop / problem byte (or / own byte: by_own_bytes)
  bool by_own_bytes = false;  // placed by its own, smaller byte count
  double tflops = 0;
  bool reference = false;   // the reference (cuBLAS) row
  bool bound = false;       // a bound, not a variant (lesson 08's cuBLAS on compacted weights)
  bool failed = false;      // checked and wrong
  double own_bytes = 0;     // the bytes the variant reports, when they count something else
  std::string own_bytes_what;
  int file = 0;             // index of the results file it came from
};

struct RooflineData {
  std::vector<RooflinePoint> points;
  int unplaced = 0;  // variants with no bytes to place them by (skipped ones are not counted)
};

RooflineData roofline_points(const std::vector<const Results*>& files);

// How the results panel names a row: a point's label ("cuBLAS" for the
// reference, "NAME (a bound)" for a bound) and a bar's text.
std::string point_label(const RooflinePoint& p);
std::string bar_label(const VariantResult& v);

// Decades shown: [x_lo, x_hi] in log10 flop/byte and [y_lo, y_hi] in log10
// TFLOP/s, holding every point, the ridge and the peak.
struct RooflineRange {
  int x_lo = -1, x_hi = 4;
  double y_lo = -1, y_hi = 3;
};
RooflineRange roofline_range(const RooflineData& data, double peak_tflops, double dram_gbps);

}  // namespace wb::viewer
