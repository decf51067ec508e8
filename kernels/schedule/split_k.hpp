// Split-K: the K dimension of every output tile cut into `splits` ranges, one
// work unit each, so that a grid with too few tiles to fill the GPU gets
// tiles x splits units instead. The partial sums of a tile's units are added
// afterwards (atomics, a reduce pass, or in turn behind a semaphore).
//
// Header-only, __host__ __device__: kernels, launchers, traces and the CPU
// tests use the same functions.
#pragma once

#include <cstdint>

#include "schedule/tile_order.hpp"

namespace wb {

// Split s of `splits` takes k tiles [split_k_begin(s), split_k_begin(s + 1)):
// the k tiles spread as evenly as they go (sizes differ by at most one), no
// range empty while splits <= k_tiles.
WB_HD int split_k_begin(int k_tiles, int splits, int s) { return int(int64_t(k_tiles) * s / splits); }

// Split s of `splits` taking every splits-th k tile instead (s, s + splits,
// ...) takes ceil((k_tiles - s) / splits) of them. As a share of the tile's
// k work in split order, it is [interleaved_share_begin(s),
// interleaved_share_begin(s + 1)): the first k_tiles % splits splits hold one
// tile more. (A trace records this share: its k ranges must lie end to end.)
WB_HD int interleaved_share_begin(int k_tiles, int splits, int s) {
  const int rem = k_tiles % splits;
  return s * (k_tiles / splits) + (s < rem ? s : rem);
}

// A requested split factor made one the kernel can run: at least 1, at most
// one k tile per split.
WB_HD int clamp_split_k(int requested, int k_tiles) {
  if (requested < 1) return 1;
  return requested < k_tiles ? requested : (k_tiles > 0 ? k_tiles : 1);
}

// Work unit u of a split-K grid of `tiles` tiles: consecutive units are the
// tiles of one split, so the blocks running at a moment read the same rows of
// B across all its columns (long runs of memory, not a piece of many rows),
// and every block of split s is launched before any of split s + 1 (a block
// that waits for the split before it waits for a block already running).
struct SplitUnit {
  int tile = 0;   // tile_m * tiles_n + tile_n
  int split = 0;  // 0 .. splits - 1
};
WB_HD SplitUnit split_unit(int64_t unit, int tiles) { return SplitUnit{int(unit % tiles), int(unit / tiles)}; }

}  // namespace wb
