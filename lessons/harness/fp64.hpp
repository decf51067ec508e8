// The host's side of the fp64 check: products in double, on every host thread.
//
// A lesson's fp64 reference is the plain triple loop, each sum in double and
// in the order of k. The loop as written reads all of B once per row of the
// result; here the rows go together in blocks, B's columns in blocks too, and
// the blocks are shared out over the host's threads, while every sum keeps
// its order. So the result is the plain loop's to the bit, only sooner.
// Host only (no CUDA).
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "harness/tensor.hpp"

namespace wb {

// Calls task(i) for i = 0 .. count - 1, shared out over every host thread
// (the calling thread included). The tasks must not depend on each other.
void on_host_threads(int64_t count, const std::function<void(int64_t)>& task);

// out (rows x n) += A B, every value as the plain loop gives it:
//   for r, for kk = 0 .. k - 1, for j: out[r][j] += double(A[r][kk]) * double(B[kk][j])
// A (rows x k) and B (k x n) row-major; out row-major, holding the sums'
// starting values (zeros, or a bias). A is float or double.
template <class T>
void fp64_accumulate_product(const T* a, const float* b, double* out, int64_t rows, int64_t n, int64_t k);

// An fp16 (or f32) tensor's values as floats, in storage order; with
// `transposed`, a row-major (r x c) tensor as its (c x r) transpose.
std::vector<float> host_floats(const HostTensor& t, bool transposed = false);

}  // namespace wb
