// Lesson 05: what every backward kernel gets.
//
// The layer: forward P = X W, Z = act(P), with X (M x K: tokens by features)
// and W (K x N), all row-major fp16. Given dZ (M x N) and what the forward
// saved (P), the backward computes
//   dP = dZ * act'(P)       elementwise
//   dX = dP W^T             (M x K)  an "NT" product: W is read along its rows
//   dW = X^T dP             (K x N)  a "TN" product: X is read along its columns
//   db = sum over rows of dP (N)     when the layer has a bias
// No transpose is ever materialised: each product reads its operands where they
// are, and the kernels differ in how (through strides, or as a TMA/wgmma layout).
#pragma once

#include <cuda_fp16.h>

#include <cstddef>
#include <cstdint>

#include "records/records.hpp"
#include "schedule/activation.hpp"
#include "schedule/trace_record.hpp"

namespace wb::backward {

struct BackwardShape {
  int m = 0, n = 0, k = 0;
};

struct BackwardArgs {
  const __half* x;   // (M, K)
  const __half* w;   // (K, N)
  const __half* p;   // (M, N): the forward's pre-activation
  const __half* dz;  // (M, N): the incoming gradient
  __half* dx;        // (M, K)
  __half* dw;        // (K, N)
  __half* db;        // (N), or nullptr: no bias
  int m, n, k;
  Activation act;
  __half* dp;            // (M, N) scratch for dP, inside the workspace
  float* db_partials;    // (db_partial_rows(M), N) scratch for db, inside the workspace
  TraceRecord* trace;    // one record per work unit, or nullptr
  const uint32_t* relu_mask = nullptr;  // ReLU only: the saved bitmask (act_grad.cuh) instead of P
};

}  // namespace wb::backward
