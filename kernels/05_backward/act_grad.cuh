// Lesson 05, step 1's first half: dP = dZ * act'(P) as its own elementwise
// pass, the way a framework runs the backward of an activation, and the bias
// gradient db = column sums of dP.
//
// The pass reads dZ and P and writes dP: 6 bytes per element of memory traffic
// around the GEMMs, which is what fusing act' into them saves. For ReLU the
// forward need only save a bit per element (P > 0): 4.125 bytes.
//
// db without atomics, so it is the same bit for bit on every run: each block
// covers 256 columns x 64 rows and writes its column sums to a row of partials
// (db_partial_rows(M) x N fp32); a second small kernel adds the rows in order.
#pragma once

#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <string>
#include <type_traits>

#include "05_backward/backward.cuh"
#include "common/check.cuh"

namespace wb::backward {

constexpr int kGradCols = 256;            // columns per block: 32 threads x 8
constexpr int kGradRows = 64;             // <- rows per block (and per row of db partials)
constexpr int kGradRowLanes = 8;          // threads down a column
constexpr int kGradThreads = 32 * kGradRowLanes;

inline int db_partial_rows(int m) { return (m + kGradRows - 1) / kGradRows; }

// 8 consecutive halves of a row, from column `col`; zeros past `cols`.
__device__ __forceinline__ void load8(const __half* p, int cols_left, bool vector_ok, __half (&out)[8]) {
  if (vector_ok && cols_left >= 8) {
    *reinterpret_cast<uint4*>(out) = *reinterpret_cast<const uint4*>(p);
  } else {
#pragma unroll
    for (int j = 0; j < 8; ++j) out[j] = j < cols_left ? p[j] : __float2half(0.0f);
  }
}

// What a launch of the pass does.
enum class GradPass {
  grad,          // dP = dZ * act'(P)
  grad_and_sum,  // ... and the column sums of dP (db fused into the pass)
  sum_only,      // the column sums of an existing dP (a framework's dP.sum(0))
};

// ReLU's saved bitmask: bit c % 32 of word c / 32 of a row is 1 where P[r, c] > 0
// (its derivative; 0 at exactly 0, as in PyTorch): relu_mask_words(N) words a row.
__host__ __device__ inline int relu_mask_words(int n) { return (n + 31) / 32; }

// `mask` null: act'(P) from P; otherwise (ReLU only) from the bitmask, a bit
// instead of two bytes per element.
template <Activation ACT, GradPass kPass>
__global__ void __launch_bounds__(kGradThreads)
    act_grad_kernel(const __half* __restrict__ dz, const __half* __restrict__ p, __half* __restrict__ dp,
                    float* __restrict__ db_partials, int m, int n, const uint32_t* __restrict__ mask = nullptr) {
  const int col = int(blockIdx.x) * kGradCols + 8 * (threadIdx.x % 32);
  const int lane_row = int(threadIdx.x) / 32;
  const int row_end = min(m, int(blockIdx.y + 1) * kGradRows);
  const bool vector_ok = n % 8 == 0;  // rows start on 16 bytes (cudaMalloc'd bases)
  const int cols_left = n - col;
  constexpr bool kBias = kPass != GradPass::grad;
  float sums[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  if (cols_left > 0) {
    for (int row = int(blockIdx.y) * kGradRows + lane_row; row < row_end; row += kGradRowLanes) {
      const int64_t at = int64_t(row) * n + col;
      __half out[8];
      if constexpr (kPass == GradPass::sum_only) {
        load8(dp + at, cols_left, vector_ok, out);
#pragma unroll
        for (int j = 0; j < 8; ++j) sums[j] += __half2float(out[j]);
        continue;
      } else {
        __half g[8], x[8];
        load8(dz + at, cols_left, vector_ok, g);
        if (mask != nullptr) {  // 8 bits of one word: col is a multiple of 8
          const uint32_t bits = mask[int64_t(row) * relu_mask_words(n) + col / 32] >> (col % 32);
#pragma unroll
          for (int j = 0; j < 8; ++j) {
            out[j] = (bits >> j) & 1u ? g[j] : __float2half(0.0f);
            if constexpr (kBias) sums[j] += __half2float(out[j]);
          }
        } else {
          load8(p + at, cols_left, vector_ok, x);
#pragma unroll
          for (int j = 0; j < 8; ++j) {
            out[j] = __float2half_rn(__half2float(g[j]) * activation_grad(ACT, __half2float(x[j])));
            if constexpr (kBias) sums[j] += __half2float(out[j]);  // db adds what the GEMMs read
          }
        }
      }
      if (vector_ok && cols_left >= 8) {
        *reinterpret_cast<uint4*>(dp + at) = *reinterpret_cast<const uint4*>(out);
      } else {
        for (int j = 0; j < 8 && j < cols_left; ++j) dp[at + j] = out[j];
      }
    }
  }
  if constexpr (kBias) {
    __shared__ float lanes[kGradRowLanes][kGradCols];
#pragma unroll
    for (int j = 0; j < 8; ++j) lanes[lane_row][8 * (threadIdx.x % 32) + j] = sums[j];
    __syncthreads();
    const int c = int(blockIdx.x) * kGradCols + int(threadIdx.x);
    if (c < n) {
      float s = 0;
#pragma unroll
      for (int r = 0; r < kGradRowLanes; ++r) s += lanes[r][threadIdx.x];
      db_partials[int64_t(blockIdx.y) * n + c] = s;
    }
  }
}

// db[c] = sum of the partial rows, in order.
__global__ void db_reduce_kernel(const float* __restrict__ partials, __half* __restrict__ db, int rows, int n) {
  const int c = int(blockIdx.x * blockDim.x + threadIdx.x);
  if (c >= n) return;
  float s = 0;
  for (int r = 0; r < rows; ++r) s += partials[int64_t(r) * n + c];
  db[c] = __float2half_rn(s);
}

// db = the sums of `rows` partial rows (n floats each), in order.
inline void launch_db_reduce(const float* partials, __half* db, int rows, int n, cudaStream_t stream) {
  db_reduce_kernel<<<unsigned((n + 255) / 256), 256, 0, stream>>>(partials, db, rows, n);
  CUDA_CHECK_LAUNCH();
}

// dP = dZ * act'(P) into a.dp, and (pass != grad) db: two launches, the
// pass and the sum of its partial rows.
inline void launch_act_grad(const BackwardArgs& a, GradPass pass, cudaStream_t stream) {
  const dim3 grid(unsigned((a.n + kGradCols - 1) / kGradCols), unsigned(db_partial_rows(a.m)));
  const bool with_db = pass != GradPass::grad;
  auto go = [&](auto act) {
    constexpr Activation kAct = decltype(act)::value;
    switch (pass) {
      case GradPass::grad:
        act_grad_kernel<kAct, GradPass::grad>
            <<<grid, kGradThreads, 0, stream>>>(a.dz, a.p, a.dp, nullptr, a.m, a.n, a.relu_mask);
        break;
      case GradPass::grad_and_sum:
        act_grad_kernel<kAct, GradPass::grad_and_sum>
            <<<grid, kGradThreads, 0, stream>>>(a.dz, a.p, a.dp, a.db_partials, a.m, a.n, a.relu_mask);
        break;
      case GradPass::sum_only:
        act_grad_kernel<Activation::none, GradPass::sum_only>
            <<<grid, kGradThreads, 0, stream>>>(nullptr, nullptr, a.dp, a.db_partials, a.m, a.n);
        break;
    }
  };
  if (a.relu_mask && a.act != Activation::relu) throw CudaError("lesson 05: only ReLU's derivative is a bitmask");
  switch (a.act) {
    case Activation::relu: go(std::integral_constant<Activation, Activation::relu>{}); break;
    case Activation::gelu: go(std::integral_constant<Activation, Activation::gelu>{}); break;
    case Activation::silu: go(std::integral_constant<Activation, Activation::silu>{}); break;
    default: throw CudaError(std::string("lesson 05 has no derivative for ") + activation_name(a.act));
  }
  CUDA_CHECK_LAUNCH();
  if (with_db) launch_db_reduce(a.db_partials, a.db, db_partial_rows(a.m), a.n, stream);
}

}  // namespace wb::backward
