#include "model/l2_compare.hpp"

#include <algorithm>

namespace wb::viewer {

int L2Scenario::blocks_in_flight() const {
  if (blocks_in_flight_override > 0) return blocks_in_flight_override;
  return std::max(gpu.sms, 1) * std::max(gpu.blocks_per_sm, 1);
}

L2ModelInput L2Scenario::input_for(TileOrder order, int group_m) const {
  L2ModelInput in;
  in.tiles_m = grid.tiles_m();
  in.tiles_n = grid.tiles_n();
  in.k_steps = grid.k_steps();
  in.a_block_bytes = int64_t(grid.block_m) * grid.block_k * element_bytes;
  in.b_block_bytes = int64_t(grid.block_k) * grid.block_n * element_bytes;
  in.l2_bytes = gpu.l2_bytes;
  in.blocks_in_flight = blocks_in_flight();
  in.order = order;
  in.group_m = std::max(group_m, 1);
  in.max_tiles = max_tiles;
  return in;
}

bool L2Scenario::operator==(const L2Scenario& o) const {
  return grid.m == o.grid.m && grid.n == o.grid.n && grid.k == o.grid.k && grid.block_m == o.grid.block_m &&
         grid.block_n == o.grid.block_n && grid.block_k == o.grid.block_k && element_bytes == o.element_bytes &&
         gpu.sms == o.gpu.sms && gpu.l2_bytes == o.gpu.l2_bytes && gpu.blocks_per_sm == o.gpu.blocks_per_sm &&
         order_a == o.order_a && group_m_a == o.group_m_a && order_b == o.order_b && group_m_b == o.group_m_b &&
         max_tiles == o.max_tiles && blocks_in_flight_override == o.blocks_in_flight_override;
}

L2Scenario triton_tutorial_scenario() {
  L2Scenario s;
  s.grid.m = s.grid.n = s.grid.k = 9 * 64;
  s.grid.block_m = s.grid.block_n = s.grid.block_k = 64;
  s.gpu.name = "Triton tutorial (L2 holds everything)";
  s.gpu.l2_bytes = 1LL << 30;
  s.order_a = TileOrder::row_major;
  s.order_b = TileOrder::grouped;
  s.group_m_b = 3;
  s.max_tiles = 9;
  s.blocks_in_flight_override = 9;
  return s;
}

L2Comparison compare_l2(const L2Scenario& scenario) {
  L2Comparison c;
  c.scenario = scenario;
  c.a = simulate_l2(scenario.input_for(scenario.order_a, scenario.group_m_a));
  c.b = simulate_l2(scenario.input_for(scenario.order_b, scenario.group_m_b));
  return c;
}

}  // namespace wb::viewer
