#include "harness/verify.hpp"

#include <cstdio>
#include <random>
#include <set>

namespace wb {

std::vector<int64_t> sample_rows(int64_t rows, uint64_t seed, int count) {
  std::set<int64_t> picked{0, rows - 1};
  std::mt19937_64 rng(seed);
  while (int64_t(picked.size()) < std::min<int64_t>(rows, count)) picked.insert(int64_t(rng() % uint64_t(rows)));
  return std::vector<int64_t>(picked.begin(), picked.end());
}

OutputVerdict check_output(const HostTensor& got, const HostTensor& reference, Activation act,
                           const std::vector<int64_t>& rows, const std::vector<double>& fp64, double tolerance) {
  const TensorSpec& s = got.spec;
  OutputVerdict v;
  OutputCheck& check = v.check;
  check.name = s.name;
  const Comparison vs_reference = compare_elements(
      s.count(), [&](int64_t i) { return got.value(i); },
      [&](int64_t i) { return double(apply_activation(act, reference.value(i))); });
  const int64_t cols = s.cols;
  const Comparison vs_fp64 = compare_elements(
      int64_t(rows.size()) * cols,
      [&](int64_t i) { return got.at(rows[size_t(i / cols)], i % cols); },
      [&](int64_t i) { return apply_activation(act, fp64[size_t(i)]); });
  check.rel_err = vs_reference.rel_err;
  check.rel_err_fp64 = vs_fp64.rel_err;
  check.max_abs_err = vs_fp64.max_abs_err;
  check.mismatches = vs_reference.mismatches + vs_fp64.mismatches;
  check.passed = check.mismatches == 0 && vs_reference.rel_err <= tolerance && vs_fp64.rel_err <= tolerance;
  v.vs_reference = vs_reference;
  v.vs_fp64 = vs_fp64;
  v.compared = s.count();
  v.sampled = int64_t(rows.size()) * cols;
  return v;
}

std::string describe_failure(const OutputVerdict& v, const std::string& reference_name) {
  char buf[512];
  std::snprintf(buf, sizeof buf,
                "%s: %lld of %lld elements differ from %s, %lld of %lld sampled fp64 elements; rel. err %.3e (%s), "
                "%.3e (fp64)",
                v.check.name.c_str(), (long long)v.vs_reference.mismatches, (long long)v.compared,
                reference_name.c_str(), (long long)v.vs_fp64.mismatches, (long long)v.sampled,
                v.vs_reference.rel_err, reference_name.c_str(), v.vs_fp64.rel_err);
  return buf;
}

}  // namespace wb
