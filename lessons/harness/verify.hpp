// How the harness decides that an output is right. Host only, so the CPU
// tests can show that a wrong, unwritten (NaN-poisoned) or inexact output
// fails.
//
// Every element is compared with the reference's output (a library call,
// the same arithmetic in another order), and the sampled rows with an fp64
// computation from the inputs:
//   elementwise  |out - ref| <= 1e-2 |ref| + 1e-2 rms(ref); NaN never passes
//   overall      ||out - ref|| / ||ref|| <= the problem's tolerance (5e-3 by default)
// fp16 output is within one ulp (~1e-3 |ref|) of the truth, so a correct
// kernel is far inside both; a single wrong or unwritten element is outside.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "harness/tensor.hpp"
#include "records/records.hpp"
#include "schedule/activation.hpp"

namespace wb {

struct Comparison {
  double rel_err = 0;      // ||out - ref|| / ||ref||
  double max_abs_err = 0;
  int64_t mismatches = 0;  // elements outside the elementwise bound, or not finite
};

// out(i) and ref(i) for i in [0, count).
template <class Out, class Ref>
Comparison compare_elements(int64_t count, Out out, Ref ref) {
  double diff2 = 0, ref2 = 0;
  for (int64_t i = 0; i < count; ++i) ref2 += double(ref(i)) * double(ref(i));
  const double rms = std::sqrt(ref2 / double(count > 0 ? count : 1));
  Comparison c;
  for (int64_t i = 0; i < count; ++i) {
    const double r = ref(i), o = out(i);
    const double d = std::fabs(o - r);
    if (!std::isfinite(o) || !(d <= 1e-2 * std::fabs(r) + 1e-2 * rms)) ++c.mismatches;
    if (std::isfinite(d)) {
      diff2 += d * d;
      c.max_abs_err = std::max(c.max_abs_err, d);
    } else {
      c.max_abs_err = INFINITY;
      diff2 = INFINITY;
    }
  }
  c.rel_err = ref2 > 0 ? std::sqrt(diff2 / ref2) : std::sqrt(diff2);
  return c;
}

// The rows the fp64 check samples: the first, the last and random others
// (seeded), `count` in all, sorted.
std::vector<int64_t> sample_rows(int64_t rows, uint64_t seed, int count = 16);

struct OutputVerdict {
  OutputCheck check;                 // what the results file keeps
  Comparison vs_reference, vs_fp64;
  int64_t compared = 0, sampled = 0;  // elements compared with the reference, with fp64
};

// One output of a variant. `act` is the activation the variant fuses into its
// epilogue: the reference's values and the fp64 rows are taken before it, so
// it is applied to them here. `fp64` holds rows.size() x cols values.
OutputVerdict check_output(const HostTensor& got, const HostTensor& reference, Activation act,
                           const std::vector<int64_t>& rows, const std::vector<double>& fp64, double tolerance);

// "C: 3 of 16777216 elements differ from cublas, 0 of 65536 sampled fp64
// elements; rel. err 1.2e-02 (cublas), 3.0e-04 (fp64)"
std::string describe_failure(const OutputVerdict& v, const std::string& reference_name);

}  // namespace wb
