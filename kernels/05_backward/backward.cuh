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

// What a training step's forward fuses into its product's epilogue (--part
// train): P = X W + b, Z = act(P), and P kept for the backward. ReLU keeps
// nothing more: its derivative is Z's sign (Z > 0 exactly where P > 0), which
// is how the notebook, and PyTorch, take it.
struct ForwardEpilogue {
  Activation act = Activation::none;  // none: a plain product (the backward's)
  const __half* bias = nullptr;       // (N), or nullptr
  __half* pre_act = nullptr;          // (M x N): where P is saved, or nullptr
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
  // --part train: the forward's output Z and bias b; `p` is then where the
  // forward saves P (or Z itself, for ReLU).
  __half* z = nullptr;
  const __half* bias = nullptr;
  // --part chain: the layer is an MLP's first, and the backward starts at the
  // MLP's output: dZ = dY Vᵀ comes first (dY (M, K), V (N, K): the second
  // layer's weights); `dz` is then where that product writes, in the
  // workspace. Step 5 writes dP directly, and with a bias its 16-row column
  // sums to `epi_db_partials`.
  const __half* dy = nullptr;
  const __half* v = nullptr;
  float* epi_db_partials = nullptr;
  // Step 6: the in-launch pass's counters (zeroed once; each launch leaves them zero).
  uint32_t* pass_counters = nullptr;
};

}  // namespace wb::backward
