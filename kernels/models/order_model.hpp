// Does the tile order matter here? The L2 model counts the DRAM bytes each
// order makes a kernel read; the kernel's own speed says how long the math
// takes; the traffic needs (bytes / that time) of DRAM bandwidth. Where that is
// more than the memory delivers, the order decides the time, and a better one
// pays. Where every order's traffic fits under the math, the order does not
// matter, however many bytes the model counts.
//
// Row-major is the worst order: it reads all of B once per row of tiles, which
// tends to 1 / BLOCK_M bytes per flop on very wide matrices. So a GPU whose
// DRAM delivers more than (the kernel's flop rate) / BLOCK_M never makes the
// order matter for that kernel, at any shape. Host only.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "models/l2_model.hpp"
#include "records/records.hpp"

namespace wb {

// The L2 model's input for a kernel with the tile sizes, order, GROUP_M and
// blocks per SM of `kernel`, on shape (m, n, k) and a GPU with `l2_bytes` of
// L2 and `sm_count` SMs. fp16 operands.
L2ModelInput l2_input_for(int64_t m, int64_t n, int64_t k, const KernelConfig& kernel, int64_t l2_bytes,
                          int sm_count);

// The bandwidth (GB/s) that moving `dram_bytes` needs while `flops` are done at `tflops`.
double needed_gbps(double dram_bytes, double flops, double tflops);

// The GB/s row-major's traffic tends to on very wide matrices: tflops / BLOCK_M.
double worst_order_limit_gbps(double tflops, int block_m);

struct OrderShape {
  int64_t m = 0, n = 0, k = 0;
  double worst_gbps = 0;  // the worst order's need at this shape
  double best_gbps = 0;   // the best order's
};

// Of the shapes M = K = `mk`, N = 2 mk, 4 mk, ... up to `max_n`, the one where
// `worst`'s traffic needs the most bandwidth, if that is at least
// `available_gbps` while `best`'s is less: where the order should pay for a
// kernel computing at `tflops` (the narrowest such shape on a tie). None when
// no N up to max_n gets there, as on a GPU whose DRAM delivers more than
// worst_order_limit_gbps.
std::optional<OrderShape> shape_where_order_pays(const KernelConfig& worst, const KernelConfig& best, double tflops,
                                                 double available_gbps, int64_t l2_bytes, int sm_count,
                                                 int64_t mk = 4096, int64_t max_n = 131072);

}  // namespace wb
