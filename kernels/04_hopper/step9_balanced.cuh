// Lesson 04, step 9 (balanced): step 5's kernel on the fewest blocks that take
// as many waves.
//
// Step 3 launches one block per SM. At 4096^3 that is 132 blocks for 512
// tiles: 116 blocks take 4 tiles and 16 take 3, and the launch lasts 4
// tile-times whatever the 16 do. 128 blocks also take 4 tile-times, and each
// gets exactly 4 tiles. In general ceil(tiles / waves) blocks
// (models/wave_model.hpp, even_wave_blocks) cost no extra wave; the SMs left
// over idle for the whole launch instead of for its last wave. The tiles in
// flight are then whole groups of the grouped order, so they read the same
// slices of A and B at the same time, and fewer busy SMs share the power
// budget. Stream-K (step 8) answers the same idle last wave the other way
// round: it gives the idle SMs work, and pays with partial sums.
#pragma once

#include "04_hopper/step3_persistent.cuh"
#include "models/wave_model.hpp"

namespace wb::hopper {

// Blocks of a balanced persistent grid for shape `s`, `resident` fitting at once.
inline int balanced_grid(const GemmShape& s, int resident) {
  const int tiles = ceil_div(s.m, kWsBlockM) * ceil_div(s.n, kWsBlockN);
  return int(even_wave_blocks(tiles, resident));
}

}  // namespace wb::hopper
