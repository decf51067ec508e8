// Wave quantization: a grid of work units runs in waves of (SMs x resident
// blocks per SM). A last wave that is only partly full leaves SMs idle; the
// split-K paper (arXiv 2402.00025) cuts K to fill them.
#pragma once

#include <cstdint>

namespace wb {

struct WaveInput {
  int64_t tiles = 1;        // output tiles
  int split_k = 1;          // work units per tile along K
  int sms = 1;              // streaming multiprocessors
  int blocks_per_sm = 1;    // resident blocks per SM (occupancy)
};

struct WaveResult {
  int64_t units = 0;              // tiles x split_k
  int64_t slots = 0;              // sms x blocks_per_sm
  int64_t waves = 0;              // ceil(units / slots)
  int64_t last_wave_units = 0;    // units in the last wave
  double last_wave_utilization = 0;  // last_wave_units / slots
  double efficiency = 0;          // units / (waves x slots)
};

inline WaveResult wave_quantization(const WaveInput& in) {
  WaveResult r;
  r.units = in.tiles * (in.split_k > 0 ? in.split_k : 1);
  r.slots = int64_t(in.sms > 0 ? in.sms : 1) * (in.blocks_per_sm > 0 ? in.blocks_per_sm : 1);
  r.waves = (r.units + r.slots - 1) / r.slots;
  r.last_wave_units = r.units - (r.waves - 1) * r.slots;
  r.last_wave_utilization = r.waves ? double(r.last_wave_units) / double(r.slots) : 0.0;
  r.efficiency = r.waves ? double(r.units) / double(r.waves * r.slots) : 0.0;
  return r;
}

// The split factor the wave model picks: the largest S (at most one k tile
// per split) whose tiles x S units still fit in one wave of `slots` units;
// 1 when the tiles fill a wave on their own. One wave, as full as the tiles
// allow, with every block's k range as long as it can be. `slots` is how many
// units should run at once: SMs x resident blocks for a kernel bound by its
// math; for lesson 06's memory-bound kernels one per SM, whose deep pipeline
// keeps enough bytes in flight on its own (more, shorter units only add
// partial sums to reduce: docs/lessons/06_splitk.md).
// 32 tiles (N = 4096 in 128-wide tiles) on 132 SMs: S = 4, 128 units.
inline int split_k_for_waves(int64_t tiles, int k_tiles, int64_t slots) {
  if (tiles < 1 || slots <= tiles || k_tiles <= 1) return 1;
  const int64_t s = slots / tiles;
  return int(s < k_tiles ? s : k_tiles);
}

// A split capped so that each unit keeps at least `min_slices` k tiles (a unit
// of two or three 64-deep slices issues its loads, waits once and adds a
// partial: lesson 08's skinny products ran faster with fewer, longer units),
// but never below the split that gives each of `sms` SMs a unit
// (ceil(sms / tiles)), nor below 1. Lesson 08 at M = 16, s = 0.9: 9 tiles of
// 64 slices, the wave model's 29 ways capped to 15.
inline int cap_split_for_slices(int split, int64_t tiles, int k_tiles, int64_t sms, int min_slices) {
  if (split <= 1 || tiles < 1 || min_slices < 1) return split < 1 ? 1 : split;
  const int64_t fill = (sms + tiles - 1) / tiles;
  const int64_t by_slices = k_tiles / min_slices;
  const int64_t cap = by_slices > fill ? by_slices : fill;
  return int(cap < split ? (cap < 1 ? 1 : cap) : split);
}

// The fewest blocks of a persistent grid that still take as many waves as
// `slots` blocks would: ceil(units / waves). Each block then gets the same
// number of units, give or take one, and slots - blocks SMs stay idle for the
// whole launch instead of for its last wave (512 tiles on 132 SMs: 4 waves
// either way, and 128 blocks of 4 tiles instead of 116 of 4 and 16 of 3).
inline int64_t even_wave_blocks(int64_t units, int64_t slots) {
  if (units < 1 || slots < 1) return 1;
  const int64_t waves = (units + slots - 1) / slots;
  return (units + waves - 1) / waves;
}

}  // namespace wb
