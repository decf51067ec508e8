#include "models/order_model.hpp"

#include <algorithm>

namespace wb {

L2ModelInput l2_input_for(int64_t m, int64_t n, int64_t k, const KernelConfig& c, int64_t l2_bytes, int sm_count) {
  L2ModelInput in;
  if (!parse_tile_order(c.order.c_str(), &in.order)) in.order = TileOrder::row_major;
  const int64_t bm = std::max(1, c.block_m), bn = std::max(1, c.block_n), bk = std::max(1, c.block_k);
  in.tiles_m = int(ceil_div64(m, bm));
  in.tiles_n = int(ceil_div64(n, bn));
  in.k_steps = int(ceil_div64(k, bk));
  in.a_block_bytes = bm * bk * 2;  // fp16
  in.b_block_bytes = bk * bn * 2;
  in.l2_bytes = l2_bytes;
  in.blocks_in_flight = std::max(1, sm_count * std::max(1, c.blocks_per_sm));
  in.group_m = std::max(1, c.group_m);
  return in;
}

double needed_gbps(double dram_bytes, double flops, double tflops) {
  if (!(flops > 0) || !(tflops > 0)) return 0;
  return dram_bytes / (flops / (tflops * 1e12)) / 1e9;
}

double worst_order_limit_gbps(double tflops, int block_m) { return tflops * 1e12 / std::max(1, block_m) / 1e9; }

std::optional<OrderShape> shape_where_order_pays(const KernelConfig& worst, const KernelConfig& best, double tflops,
                                                 double available_gbps, int64_t l2_bytes, int sm_count, int64_t mk,
                                                 int64_t max_n) {
  if (!(available_gbps > 0) || !(tflops > 0)) return std::nullopt;
  std::optional<OrderShape> found;
  for (int64_t n = 2 * mk; n <= max_n; n *= 2) {
    const double flops = 2.0 * double(mk) * double(n) * double(mk);
    const double w = needed_gbps(double(simulate_l2(l2_input_for(mk, n, mk, worst, l2_bytes, sm_count)).dram_bytes),
                                 flops, tflops);
    if (w < available_gbps || (found && w <= found->worst_gbps)) continue;
    const double b = needed_gbps(double(simulate_l2(l2_input_for(mk, n, mk, best, l2_bytes, sm_count)).dram_bytes),
                                 flops, tflops);
    if (b < available_gbps) found = OrderShape{mk, n, mk, w, b};
  }
  return found;
}

}  // namespace wb
