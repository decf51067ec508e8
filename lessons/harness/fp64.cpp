#include "harness/fp64.hpp"

#include <algorithm>
#include <atomic>
#include <thread>

namespace wb {

void on_host_threads(int64_t count, const std::function<void(int64_t)>& task) {
  std::atomic<int64_t> next{0};
  const auto work = [&] {
    for (int64_t i = next++; i < count; i = next++) task(i);
  };
  const int64_t threads = std::min<int64_t>(count, std::max(1u, std::thread::hardware_concurrency()));
  std::vector<std::thread> helpers;
  for (int64_t t = 1; t < threads; ++t) helpers.emplace_back(work);
  work();
  for (std::thread& t : helpers) t.join();
}

namespace {

// A block of the result: kRows rows by kCols columns, its sums kept in a
// buffer of the thread's own (64 KiB, in its cache) while B's rows stream by.
constexpr int64_t kRows = 32, kCols = 256;

}  // namespace

template <class T>
void fp64_accumulate_product(const T* a, const float* b, double* out, int64_t rows, int64_t n, int64_t k) {
  if (rows <= 0 || n <= 0) return;
  const int64_t row_blocks = (rows + kRows - 1) / kRows, col_blocks = (n + kCols - 1) / kCols;
  // Block i: columns i / row_blocks, rows i % row_blocks, so that the threads
  // working at once read the same columns of B.
  on_host_threads(row_blocks * col_blocks, [&](int64_t i) {
    const int64_t r0 = (i % row_blocks) * kRows, j0 = (i / row_blocks) * kCols;
    const int64_t nr = std::min(kRows, rows - r0), nc = std::min(kCols, n - j0);
    std::vector<double> sums(size_t(kRows * kCols));
    for (int64_t r = 0; r < nr; ++r)
      std::copy_n(out + (r0 + r) * n + j0, nc, sums.begin() + r * kCols);
    int64_t kk = 0;
    for (; kk + 4 <= k; kk += 4) {  // four terms a sum at a time, added in their order
      const float* b0 = b + kk * n + j0;
      const float *b1 = b0 + n, *b2 = b1 + n, *b3 = b2 + n;
      for (int64_t r = 0; r < nr; ++r) {
        const T* ar = a + (r0 + r) * k + kk;
        const double a0 = double(ar[0]), a1 = double(ar[1]), a2 = double(ar[2]), a3 = double(ar[3]);
        double* s = sums.data() + r * kCols;
        for (int64_t j = 0; j < nc; ++j) {
          double t = s[j];
          t += a0 * double(b0[j]);
          t += a1 * double(b1[j]);
          t += a2 * double(b2[j]);
          t += a3 * double(b3[j]);
          s[j] = t;
        }
      }
    }
    for (; kk < k; ++kk) {
      const float* brow = b + kk * n + j0;
      for (int64_t r = 0; r < nr; ++r) {
        const double av = double(a[(r0 + r) * k + kk]);
        double* s = sums.data() + r * kCols;
        for (int64_t j = 0; j < nc; ++j) s[j] += av * double(brow[j]);
      }
    }
    for (int64_t r = 0; r < nr; ++r)
      std::copy_n(sums.begin() + r * kCols, nc, out + (r0 + r) * n + j0);
  });
}

template void fp64_accumulate_product<float>(const float*, const float*, double*, int64_t, int64_t, int64_t);
template void fp64_accumulate_product<double>(const double*, const float*, double*, int64_t, int64_t, int64_t);

std::vector<float> host_floats(const HostTensor& t, bool transposed) {
  const int64_t rows = t.spec.rows, cols = t.spec.cols, count = t.spec.count();
  std::vector<float> out(static_cast<size_t>(count));
  constexpr int64_t kChunk = 1 << 16;
  on_host_threads((count + kChunk - 1) / kChunk, [&](int64_t c) {
    const int64_t end = std::min(count, (c + 1) * kChunk);
    for (int64_t i = c * kChunk; i < end; ++i)
      out[size_t(transposed ? (i % cols) * rows + i / cols : i)] = t.value(i);
  });
  return out;
}

}  // namespace wb
