// Program-id-to-tile orders: which output tile a block (or a persistent worker's
// work unit) computes.
//
// One source of truth: kernels call these on the device, the L2 model, the viewer
// and the tests call them on the host. Header-only and free of CUDA headers, so a
// build without CUDA uses it too.
//
// The output C (M x N) is cut into tiles_m x tiles_n tiles of BLOCK_M x BLOCK_N.
// A 1-D launch numbers its blocks pid = 0 .. tiles_m*tiles_n - 1; the order says
// which tile each pid takes. Blocks with nearby pids run at the same time, so the
// order decides which rows of A and columns of B are wanted by the blocks in
// flight, and therefore how much of them L2 can serve.
#pragma once

#include <cstdint>

#if defined(__CUDACC__)
#define WB_HD __host__ __device__ __forceinline__
#else
#define WB_HD inline
#endif

namespace wb {

enum class TileOrder : int {
  row_major = 0,     // pid walks along a row of tiles, then the next row
  column_major = 1,  // pid walks down a column of tiles, then the next column
  grouped = 2,       // GROUP_M rows of tiles at a time, column by column inside the group
};

constexpr int kTileOrderCount = 3;

struct TileCoord {
  int m;  // tile row    (0 .. tiles_m-1)
  int n;  // tile column (0 .. tiles_n-1)
};

WB_HD constexpr int ceil_div(int a, int b) { return (a + b - 1) / b; }
WB_HD constexpr int64_t ceil_div64(int64_t a, int64_t b) { return (a + b - 1) / b; }
WB_HD constexpr int min_int(int a, int b) { return a < b ? a : b; }

WB_HD TileCoord row_major_tile(int pid, int tiles_m, int tiles_n) {
  (void)tiles_m;
  return TileCoord{pid / tiles_n, pid % tiles_n};
}

WB_HD TileCoord column_major_tile(int pid, int tiles_m, int tiles_n) {
  (void)tiles_n;
  return TileCoord{pid % tiles_m, pid / tiles_m};
}

// The Triton matmul tutorial's grouped order, as written there today:
//   num_pid_in_group = GROUP_M * num_pid_n
//   group_id         = pid // num_pid_in_group
//   first_pid_m      = group_id * GROUP_M
//   group_size_m     = min(num_pid_m - first_pid_m, GROUP_M)   # the last group may be short
//   pid_m = first_pid_m + ((pid % num_pid_in_group) % group_size_m)
//   pid_n = (pid % num_pid_in_group) // group_size_m
// Consecutive pids go down a column of GROUP_M tiles before moving right, so the
// blocks in flight share GROUP_M row-blocks of A and a few column-blocks of B.
WB_HD TileCoord grouped_tile(int pid, int tiles_m, int tiles_n, int group_m) {
  const int pids_in_group = group_m * tiles_n;
  const int group_id = pid / pids_in_group;
  const int first_m = group_id * group_m;
  const int group_size_m = min_int(tiles_m - first_m, group_m);
  const int in_group = pid % pids_in_group;
  return TileCoord{first_m + in_group % group_size_m, in_group / group_size_m};
}

WB_HD TileCoord tile_of(TileOrder order, int pid, int tiles_m, int tiles_n, int group_m) {
  switch (order) {
    case TileOrder::column_major: return column_major_tile(pid, tiles_m, tiles_n);
    case TileOrder::grouped: return grouped_tile(pid, tiles_m, tiles_n, group_m);
    case TileOrder::row_major:
    default: return row_major_tile(pid, tiles_m, tiles_n);
  }
}

// Cluster pairs (lesson 04, step 4): work unit u of a grid of pairs is the
// grouped order over ceil(tiles_m / 2) rows of units, and the two blocks of a
// cluster take its two vertically adjacent tiles (rows 2 row(u) and
// 2 row(u) + 1). When tiles_m is odd, the units of the last row of units have
// no second tile.
WB_HD TileCoord cluster_pair_tile(int unit, int rank, int tiles_m, int tiles_n, int group_units_m) {
  TileCoord t = grouped_tile(unit, ceil_div(tiles_m, 2), tiles_n, group_units_m);
  t.m = t.m * 2 + rank;
  return t;
}

// Where tile `rank` of pair unit `unit` stands among the tiles in launch order
// (unit 0 rank 0, unit 0 rank 1, unit 1 rank 0, ...), counting only tiles
// inside the matrix. The units without a second tile all lie in the last group
// of the grouped order (`rows_in_last_group` rows of units), one in every
// `rows_in_last_group` units of it, at row offset rows_in_last_group - 1. The
// result numbers the real tiles 0 .. tiles_m * tiles_n - 1, one trace record each.
WB_HD int cluster_tile_position(int unit, int rank, int tiles_m, int tiles_n, int group_units_m) {
  const int position = 2 * unit + rank;
  if (tiles_m % 2 == 0) return position;
  const int units_m = (tiles_m + 1) / 2;
  const int last_group_first_row = ((units_m - 1) / group_units_m) * group_units_m;
  const int last_group_start = last_group_first_row * tiles_n;
  const int rows_in_last_group = units_m - last_group_first_row;
  return unit <= last_group_start ? position : position - (unit - last_group_start) / rows_in_last_group;
}

// Names used on the command line, in results and traces, and in the viewer.
inline const char* tile_order_name(TileOrder order) {
  switch (order) {
    case TileOrder::row_major: return "row_major";
    case TileOrder::column_major: return "column_major";
    case TileOrder::grouped: return "grouped";
  }
  return "unknown";
}

// Returns false when `name` is not an order's name.
inline bool parse_tile_order(const char* name, TileOrder* out) {
  for (int i = 0; i < kTileOrderCount; ++i) {
    const auto order = static_cast<TileOrder>(i);
    const char* a = tile_order_name(order);
    const char* b = name;
    while (*a && *a == *b) { ++a; ++b; }
    if (*a == 0 && *b == 0) { *out = order; return true; }
  }
  return false;
}

}  // namespace wb
