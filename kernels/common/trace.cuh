// The per-block trace, device side: what a block (or a work unit of a
// persistent block) computed, on which SM, from when to when. Tracing is a
// kernel argument: a null pointer means off, and the cost is one uniform
// branch per block. Use:
//   const uint64_t t0 = trace_start(trace);
//   ... the block's work ...
//   trace_end(trace, unit, tile_m, tile_n, k_begin, k_end, t0);   // every thread calls it
#pragma once

#include <cstdint>

#include "schedule/trace_record.hpp"

namespace wb {

__device__ __forceinline__ uint64_t global_timer_ns() {
  uint64_t t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

__device__ __forceinline__ uint32_t sm_id() {
  uint32_t id;
  asm volatile("mov.u32 %0, %%smid;" : "=r"(id));
  return id;
}

__device__ __forceinline__ uint64_t trace_start(const TraceRecord* trace) {
  return trace ? global_timer_ns() : 0;
}

// One record, written by the calling thread: for persistent kernels, which
// record each work unit themselves (one block, many units).
__device__ __forceinline__ void trace_write_record(TraceRecord* trace, int unit, int tile_m, int tile_n, int k_begin,
                                                   int k_end, uint64_t start_ns) {
  TraceRecord r;
  r.tile_m = tile_m;
  r.tile_n = tile_n;
  r.k_begin = k_begin;
  r.k_end = k_end;
  r.sm = int32_t(sm_id());
  r.unit = unit;
  r.start_ns = start_ns;
  r.end_ns = global_timer_ns();
  trace[unit] = r;
}

// Every thread of the block must call this (it waits for the whole block).
__device__ __forceinline__ void trace_end(TraceRecord* trace, int unit, int tile_m, int tile_n, int k_begin, int k_end,
                                          uint64_t start_ns) {
  if (trace == nullptr) return;
  __syncthreads();
  if (threadIdx.x == 0 && threadIdx.y == 0 && threadIdx.z == 0)
    trace_write_record(trace, unit, tile_m, tile_n, k_begin, k_end, start_ns);
}

}  // namespace wb
