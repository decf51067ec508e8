#include "model/trace_problem.hpp"

#include <algorithm>

namespace wb::viewer {

TraceProblem trace_problem(const Trace& trace) {
  TraceProblem p;
  p.grid = setup_from_trace(trace);
  p.split_k = std::max(trace.kernel.split_k, 1);
  p.gpu = gpu_from_trace(trace);
  p.persistent = trace.kernel.persistent;
  p.grid_blocks = trace.kernel.grid_blocks;
  p.work_units = trace.kernel.work_units;
  return p;
}

WaveInput wave_input(const TraceProblem& p) {
  return WaveInput{p.grid.tile_count(), p.split_k, p.gpu.sms, p.gpu.blocks_per_sm};
}

namespace {

// The order to set against `order` when nothing else is loaded.
TileOrder contrasting_order(TileOrder order) {
  return order == TileOrder::grouped ? TileOrder::row_major : TileOrder::grouped;
}

}  // namespace

L2Scenario l2_scenario_for(const Trace& current, const Trace* comparison) {
  const TraceProblem p = trace_problem(current);
  L2Scenario s;
  s.grid = p.grid;
  s.gpu = p.gpu;
  s.order_a = p.grid.order;
  s.group_m_a = p.grid.group_m;
  s.order_b = contrasting_order(s.order_a);
  s.group_m_b = 8;
  if (comparison) {
    const TileGridSetup other = setup_from_trace(*comparison);
    if (other.order != s.order_a || (other.order == TileOrder::grouped && other.group_m != s.group_m_a)) {
      s.order_b = other.order;
      s.group_m_b = other.group_m;
    }
  }
  const int64_t work = s.grid.tile_count() * std::max(s.grid.k_steps(), 1);
  if (work > kL2ReplayBudget)
    s.max_tiles = std::max<int64_t>(kL2ReplayBudget / std::max(s.grid.k_steps(), 1), s.blocks_in_flight());
  return s;
}

bool TraceFollow::update(const LoadedTrace* current, const LoadedTrace* comparison) {
  if (current != current_ || comparison != comparison_) {
    current_ = current;
    comparison_ = comparison;
    on_ = true;
    retake_ = current != nullptr;
  }
  const bool take = retake_ && following();
  retake_ = false;
  return take;
}

void TraceFollow::set_following(bool on) {
  if (on && !on_) retake_ = true;
  on_ = on;
}

}  // namespace wb::viewer
