#include "model/tile_grid.hpp"

#include <algorithm>
#include <cmath>

namespace wb::viewer {

int TileGridSetup::tiles_m() const {
  if (trace_tiles_m > 0) return trace_tiles_m;
  return int(ceil_div64(std::max<int64_t>(m, 1), std::max(block_m, 1)));
}
int TileGridSetup::tiles_n() const {
  if (trace_tiles_n > 0) return trace_tiles_n;
  return int(ceil_div64(std::max<int64_t>(n, 1), std::max(block_n, 1)));
}
int TileGridSetup::k_steps() const { return int(ceil_div64(std::max<int64_t>(k, 1), std::max(block_k, 1))); }

void TileGridSetup::clamp() {
  // Beyond 65,536 tiles a grid cell is smaller than a pixel and the L2 replay
  // takes seconds; the lessons' shapes stay well inside this.
  m = std::clamp<int64_t>(m, 1, 1 << 17);
  n = std::clamp<int64_t>(n, 1, 1 << 17);
  k = std::clamp<int64_t>(k, 1, 1 << 17);
  block_m = std::clamp(block_m, 1, 1024);
  block_n = std::clamp(block_n, 1, 1024);
  block_k = std::clamp(block_k, 1, 1024);
  group_m = std::max(group_m, 1);
  while (tile_count() > 65536) {
    block_m *= 2;
    block_n *= 2;
  }
}

std::vector<int64_t> TileGridSetup::pid_of_tiles() const {
  std::vector<int64_t> pid_of(size_t(tile_count()), -1);
  for (int64_t pid = 0; pid < tile_count(); ++pid) {
    const TileCoord t = tile_of_pid(pid);
    pid_of[size_t(int64_t(t.m) * tiles_n() + t.n)] = pid;
  }
  return pid_of;
}

TileGridSetup setup_from_trace(const Trace& trace) {
  TileGridSetup s;
  s.m = trace.header.m;
  s.n = trace.header.n;
  s.k = trace.header.k;
  const KernelConfig& c = trace.kernel;
  s.block_m = c.block_m > 0 ? c.block_m : int(ceil_div64(s.m, c.tiles_m));
  s.block_n = c.block_n > 0 ? c.block_n : int(ceil_div64(s.n, c.tiles_n));
  s.block_k = c.block_k > 0 ? c.block_k : 32;
  if (!parse_tile_order(c.order.c_str(), &s.order)) s.order = TileOrder::row_major;
  s.group_m = std::max(c.group_m, 1);
  s.trace_tiles_m = c.tiles_m;
  s.trace_tiles_n = c.tiles_n;
  return s;
}

double modelled_replay_length(const TileGridSetup& setup, int blocks_in_flight) {
  return double(setup.tile_count() + std::max(blocks_in_flight, 1));
}

std::vector<TileState> modelled_tile_states(const TileGridSetup& setup, double position, int blocks_in_flight) {
  const int64_t tiles = setup.tile_count();
  std::vector<TileState> states(size_t(tiles), TileState::pending);
  const int64_t steps = int64_t(std::floor(std::max(position, 0.0)));
  const int64_t launched = std::min(steps, tiles);
  const int64_t done = std::clamp<int64_t>(steps - std::max(blocks_in_flight, 1), 0, tiles);
  for (int64_t pid = 0; pid < launched; ++pid) {
    const TileCoord t = setup.tile_of_pid(pid);
    states[size_t(int64_t(t.m) * setup.tiles_n() + t.n)] = pid < done ? TileState::done : TileState::in_flight;
  }
  return states;
}

std::vector<TileState> traced_tile_states(const Trace& trace, uint64_t t_ns) {
  const int tiles_m = trace.kernel.tiles_m, tiles_n = trace.kernel.tiles_n;
  std::vector<TileState> states(size_t(tiles_m) * size_t(tiles_n), TileState::pending);
  std::vector<int> ended(states.size(), 0), units(states.size(), 0);
  for (const TraceRecord& r : trace.records) {
    const size_t i = size_t(r.tile_m) * size_t(tiles_n) + size_t(r.tile_n);
    ++units[i];
    if (r.start_ns <= t_ns && t_ns < r.end_ns) states[i] = TileState::in_flight;
    else if (r.end_ns <= t_ns) ++ended[i];
  }
  for (size_t i = 0; i < states.size(); ++i) {
    if (states[i] == TileState::in_flight || units[i] == 0) continue;
    if (ended[i] == units[i]) states[i] = TileState::done;
    else if (ended[i] > 0) states[i] = TileState::in_flight;  // split-K: some units done, more to come
  }
  return states;
}

OperandUse operand_use(const TileGridSetup& setup, const std::vector<TileState>& states) {
  OperandUse use;
  const int tm = setup.tiles_m(), tn = setup.tiles_n();
  use.a_rows.assign(size_t(tm), 0);
  use.b_columns.assign(size_t(tn), 0);
  for (int i = 0; i < tm; ++i)
    for (int j = 0; j < tn; ++j)
      if (states[size_t(i) * size_t(tn) + size_t(j)] == TileState::in_flight) {
        use.a_rows[size_t(i)] = 1;
        use.b_columns[size_t(j)] = 1;
      }
  for (uint8_t a : use.a_rows) use.a_count += a;
  for (uint8_t b : use.b_columns) use.b_count += b;
  return use;
}

}  // namespace wb::viewer
