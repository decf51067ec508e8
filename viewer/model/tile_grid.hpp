// The problem the tile-order panel shows: C (M x N) cut into BLOCK_M x BLOCK_N
// tiles, K walked in BLOCK_K steps, tiles handed to program ids by an order.
// All index math goes through schedule/tile_order.hpp, the kernels' own.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "records/records.hpp"
#include "schedule/tile_order.hpp"

namespace wb::viewer {

struct TileGridSetup {
  int64_t m = 4096, n = 4096, k = 4096;
  int block_m = 128, block_n = 128, block_k = 64;
  TileOrder order = TileOrder::row_major;
  int group_m = 8;
  // A trace's own tile grid, when it is not M/BLOCK_M x N/BLOCK_N (0: derive it).
  int trace_tiles_m = 0, trace_tiles_n = 0;

  int tiles_m() const;
  int tiles_n() const;
  int k_steps() const;
  int64_t tile_count() const { return int64_t(tiles_m()) * tiles_n(); }
  TileCoord tile_of_pid(int64_t pid) const { return tile_of(order, int(pid), tiles_m(), tiles_n(), group_m); }
  // Program id per tile, indexed tile_m * tiles_n + tile_n.
  std::vector<int64_t> pid_of_tiles() const;
  // Sizes are clamped to what a panel can draw and the models accept.
  void clamp();
};

// The setup a trace ran with (its shape, tile sizes and order). An order name
// the schedule header does not know (e.g. a persistent kernel's own) keeps row-major.
TileGridSetup setup_from_trace(const Trace& trace);

enum class TileState : uint8_t { pending, in_flight, done };

// Modelled replay: `position` counts launches; the last `blocks_in_flight`
// launched tiles are running, older ones are done. Positions past the last tile
// drain the final wave (the length of a replay is tiles + blocks_in_flight).
std::vector<TileState> modelled_tile_states(const TileGridSetup& setup, double position, int blocks_in_flight);
double modelled_replay_length(const TileGridSetup& setup, int blocks_in_flight);

// Traced replay at time t (ns since the trace's first start): a tile is running
// while any of its work units runs, done once all have ended.
std::vector<TileState> traced_tile_states(const Trace& trace, uint64_t t_ns);

// Which A row-blocks and B column-blocks the running tiles read (the rows of A
// and columns of B that L2 must hold for this set of blocks).
struct OperandUse {
  std::vector<uint8_t> a_rows;     // per tile row: read by a block in flight
  std::vector<uint8_t> b_columns;  // per tile column
  int a_count = 0, b_count = 0;
};
OperandUse operand_use(const TileGridSetup& setup, const std::vector<TileState>& states);

}  // namespace wb::viewer
