// One record of the per-block trace: what a block (or one work unit of a
// persistent block) computed, where and when it ran.
//
// Kernels write these into a device buffer when tracing is on (a null pointer
// means off); the host writes them to trace JSON; the viewer replays them.
#pragma once

#include <cstdint>

namespace wb {

struct TraceRecord {
  int32_t tile_m;    // output tile row
  int32_t tile_n;    // output tile column
  int32_t k_begin;   // first k (element index) this unit reduced over
  int32_t k_end;     // one past the last k
  int32_t sm;        // %smid of the SM that ran it
  int32_t unit;      // program id / work-unit index (the launch order)
  uint64_t start_ns; // %globaltimer when the unit started (ns; 32 ns steps on Hopper)
  uint64_t end_ns;   // %globaltimer when the unit finished
};
static_assert(sizeof(TraceRecord) == 40, "TraceRecord is written by the device; keep it packed");

}  // namespace wb
