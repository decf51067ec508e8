// What a GEMM launcher gets, and the launch facts every tiled kernel reports.
//
// Conventions for lessons 01-04: C = act(A B) with A (M x K), B (K x N) and
// C (M x N), all row-major fp16; accumulation is fp32; any M, N, K >= 1 (tails
// are masked). The harness builds a GemmArgs from its buffers; the kernels
// know nothing of the harness.
#pragma once

#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include "common/check.cuh"
#include "records/records.hpp"
#include "schedule/tile_order.hpp"
#include "schedule/trace_record.hpp"

namespace wb {

struct GemmShape {
  int m = 0, n = 0, k = 0;
};

// One launch's operands.
struct GemmArgs {
  const __half* a;         // (M, K) row-major, leading dimension K
  const __half* b;         // (K, N) row-major, leading dimension N
  __half* c;               // (M, N) row-major, leading dimension N
  int m, n, k;
  TraceRecord* trace;      // one record per work unit, or nullptr (tracing off)
  void* workspace;         // what the variant asked the harness for (zeroed once), or nullptr
  size_t workspace_bytes;
};

// Occupancy of `kernel` at `threads` and `smem` bytes of dynamic shared memory.
inline int blocks_per_sm(const void* kernel, int threads, int smem_bytes) {
  int blocks = 0;
  CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, kernel, threads, size_t(smem_bytes)));
  return blocks;
}

// Streaming multiprocessors of the current device.
inline int sm_count() {
  int device = 0, sms = 0;
  CUDA_CHECK(cudaGetDevice(&device));
  CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
  return sms;
}

// A KernelConfig for a data-parallel launch of one block per output tile.
inline KernelConfig tile_grid_config(const GemmShape& s, int block_m, int block_n, int block_k, int threads,
                                     const void* kernel, int smem_bytes = 0, int stages = 1) {
  KernelConfig c;
  c.block_m = block_m;
  c.block_n = block_n;
  c.block_k = block_k;
  c.threads = threads;
  c.stages = stages;
  c.tiles_m = ceil_div(s.m, block_m);
  c.tiles_n = ceil_div(s.n, block_n);
  c.grid_blocks = int64_t(c.tiles_m) * c.tiles_n;
  c.work_units = c.grid_blocks;
  c.smem_bytes = smem_bytes;
  c.blocks_per_sm = kernel ? blocks_per_sm(kernel, threads, smem_bytes) : 0;
  return c;
}

}  // namespace wb
