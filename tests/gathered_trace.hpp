// A small gathered launch for tests (lesson 08's shape): 5 listed neurons of 20;
// the up product's 16 columns run over them two at a time (SwiGLU's gate and
// up), padded to 16 columns; the down product reduces over them (k, padded to
// 8) in two k halves. 8 x 16 tiles; the header and GPU come from `base`.
#pragma once

#include "records/records.hpp"

namespace wb::test_traces {

inline Trace gathered_trace_from(Trace t) {
  t.header.m = 16;
  t.header.n = 24;
  t.header.k = 20;
  KernelConfig& c = t.kernel;
  c.block_m = 16;
  c.block_n = 8;
  c.products = {ProductGrid{"H (up)", 16, 16, 24, 1, 2, 0, "n", 2}, ProductGrid{"Y (down)", 16, 24, 8, 1, 3, 1, "k", 1}};
  c.gathered = GatheredIndex{"neurons", 20, {17, 3, 9, 0, 12}};
  c.tiles_m = 2;
  c.tiles_n = 3;
  c.work_units = c.grid_blocks = 8;
  t.records.clear();
  int unit = 0;
  for (int j = 0; j < 2; ++j, ++unit) t.records.push_back(TraceRecord{0, j, 0, 24, 0, unit, 100, 150});
  for (int j = 0; j < 3; ++j)
    for (int h = 0; h < 2; ++h, ++unit) t.records.push_back(TraceRecord{1, j, 4 * h, 4 * h + 4, 1, unit, 150, 200});
  return t;
}

}  // namespace wb::test_traces
