// Lesson 08's one-launch FFN, the post's kernel in CUDA: a block takes BM
// tokens and 128 up-side columns (128 active neurons, or 64 with SwiGLU's
// gate and up), computes their up product over all of d_model, applies the
// activation on chip, keeps the result in shared memory as the A operand of
// the down product, and walks d_model in 128-wide chunks: each chunk is
// H_tile (BM x neurons) times those neurons' rows of W2, added into an fp32
// copy of Y with atomics, since every block adds into every column of Y.
// A second kernel rounds that fp32 Y to fp16. Zeroing the fp32 Y is part of
// the variant's time (its `prepare`).
//
// Also here: the dense passes of the cuBLAS paths (the activation between the
// two cublasGemmEx, with or without the router's mask), and step 6's copy of
// the active neurons' weights into compact matrices.
#pragma once

#include <cuda_fp16.h>

#include "08_sparse_ffn/gather_gemm.cuh"

namespace wb::sparse {

struct FusedDown {
  const __half* w2;  // d_ff x d_model, row-major: a neuron's row is a run
  int d_model;
  float* y;          // M x d_model, fp32, zero before the launch
};

constexpr int kFusedDownStages = 3;

template <class S>
constexpr int fused_smem_bytes() {
  constexpr int h = S::BLOCK_M * S::BLOCK_N * 2, b = kFusedDownStages * S::B_STAGE_HALVES * 2;
  constexpr int rows = S::BLOCK_N * 4;  // the block's neurons
  return (S::SMEM_BYTES > h + b ? S::SMEM_BYTES : h + b) + rows;
}

__device__ __forceinline__ void atomic_add_pair_f32(float* dst, float v0, float v1) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  atomicAdd(reinterpret_cast<float2*>(dst), make_float2(v0, v1));  // one vector reduction
#else
  atomicAdd(dst, v0);
  atomicAdd(dst + 1, v1);
#endif
}

template <class S, Gather G>
__global__ void __launch_bounds__(S::THREADS) fused_ffn_kernel(GatherParams up, FusedDown down) {
  extern __shared__ __align__(128) unsigned char smem[];
  const uint64_t t0 = trace_start(up.trace);
  const int tiles_n = ceil_div(up.n, S::BLOCK_N);
  const int tm = int(blockIdx.x) % ceil_div(up.m, S::BLOCK_M), tn = int(blockIdx.x) / ceil_div(up.m, S::BLOCK_M);
  (void)tiles_n;
  const int m0 = tm * S::BLOCK_M, n0 = tn * S::BLOCK_N;
  splitk::Accumulators<S> acc;
  gathered_tile<S, G>(up, smem, m0, n0, 0, ceil_div(up.k, S::BLOCK_K), acc);

  // The activated tile, as the down product's A: (BM x NH) in 64-deep swizzled slices.
  constexpr int PER_MAX = 2;
  const int per = up.per, nh = S::BLOCK_N / per, slices = nh / 64;
  (void)PER_MAX;
  __half* h = reinterpret_cast<__half*>(smem);
  __half* b_stages = h + S::BLOCK_M * S::BLOCK_N;
  auto h_at = [&](int r, int col) {
    return h + (col / 64) * S::A_STAGE_HALVES + swizzled_offset<S::BLOCK_K>(r, (col % 64) / 8) + col % 8;
  };
  splitk::for_each_pair<S>(acc, 0, 0, [&](int r, int c, float v0, float v1) {
    if (up.swiglu) {
      *h_at(r, c / 2) = __float2half_rn(apply_activation(Activation::silu, v0) * v1);
    } else {
      *reinterpret_cast<__half2*>(h_at(r, c)) =
          __floats2half2_rn(apply_activation(up.act, v0), apply_activation(up.act, v1));
    }
  });
  __syncthreads();

  // Down: for each 128-wide chunk of d_model, (BM x NH) x W2[neurons, chunk], added into Y.
  const int lane = int(threadIdx.x) % 32, warp = int(threadIdx.x) / 32;
  const splitk::FragmentLanes<S> lanes(warp, lane);
  const uint32_t h_smem = shared_address(h), b_smem = shared_address(b_stages);
  const int chunks = ceil_div(down.d_model, S::BLOCK_N), steps = chunks * slices;
  // The block's neurons, once: row j of every down slice is W2[neurons[q * 64 + j]].
  int* neurons = reinterpret_cast<int*>(smem + fused_smem_bytes<S>() - S::BLOCK_N * 4);
  const int neuron0 = n0 / per;  // the block's first neuron in the active list
  for (int j = int(threadIdx.x); j < nh; j += S::THREADS)
    neurons[j] = neuron0 + j < up.count ? __ldg(up.idx + neuron0 + j) : -1;
  __syncthreads();
  constexpr int CPR = S::BLOCK_N / 8;
  auto issue = [&](int t) {
    const int q = t % slices, chunk = int(threadIdx.x) % CPR, nc = (t / slices) * S::BLOCK_N + chunk * 8;
    __half* bs = b_stages + (t % kFusedDownStages) * S::B_STAGE_HALVES;
#pragma unroll
    for (int i = 0; i < S::B_CHUNKS_PER_THREAD; ++i) {
      const int r = (int(threadIdx.x) + i * S::THREADS) / CPR, w = neurons[q * 64 + r];
      const bool inside = w >= 0 && nc < down.d_model;
      cp_async_16_zero_fill(shared_address(bs + swizzled_offset<S::BLOCK_N>(r, chunk)),
                            inside ? down.w2 + int64_t(w) * down.d_model + nc : down.w2, inside ? 16 : 0);
    }
  };
#pragma unroll
  for (int s = 0; s < kFusedDownStages - 1; ++s) {
    if (s < steps) issue(s);
    cp_async_commit_group();
  }
#pragma unroll
  for (int i = 0; i < S::MMAS_M; ++i)
#pragma unroll
    for (int j = 0; j < S::MMAS_N; ++j)
#pragma unroll
      for (int e = 0; e < 4; ++e) acc.v[i][j][e] = 0.0f;
  for (int t = 0; t < steps; ++t) {
    cp_async_wait_group<kFusedDownStages - 2>();
    __syncthreads();
    if (t + kFusedDownStages - 1 < steps) issue(t + kFusedDownStages - 1);
    cp_async_commit_group();
    const int q = t % slices;
    splitk::slice_product<S>(lanes, h_smem + q * 2 * S::A_STAGE_HALVES,
                             b_smem + (t % kFusedDownStages) * 2 * S::B_STAGE_HALVES, acc);
    if (q == slices - 1) {
      const int c0 = (t / slices) * S::BLOCK_N;
      splitk::for_each_pair<S>(acc, m0, c0, [&](int r, int c, float v0, float v1) {
        if (r < up.m && c < down.d_model) atomic_add_pair_f32(down.y + int64_t(r) * down.d_model + c, v0, v1);
      });
#pragma unroll
      for (int i = 0; i < S::MMAS_M; ++i)
#pragma unroll
        for (int j = 0; j < S::MMAS_N; ++j)
#pragma unroll
          for (int e = 0; e < 4; ++e) acc.v[i][j][e] = 0.0f;
    }
  }
  cp_async_wait_group<0>();
  trace_end(up.trace, int(blockIdx.x), tm, tn, 0, up.k, t0);
}

template <class S, Gather G>
const void* fused_kernel_ready() {
  static const void* k = [] {
    const void* f = reinterpret_cast<const void*>(fused_ffn_kernel<S, G>);
    CUDA_CHECK(cudaFuncSetAttribute(f, cudaFuncAttributeMaxDynamicSharedMemorySize, fused_smem_bytes<S>()));
    return f;
  }();
  return k;
}

// Y (fp16) = the fp32 sums.
__global__ void round_to_half_kernel(const float* __restrict__ y, __half* __restrict__ out, int64_t pairs) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < pairs; i += int64_t(gridDim.x) * blockDim.x) {
    const float2 v = reinterpret_cast<const float2*>(y)[i];
    reinterpret_cast<__half2*>(out)[i] = __floats2half2_rn(v.x, v.y);
  }
}

// Blocks of the fused launch: tiles of (BM tokens x 128 up-side columns), tokens fastest,
// so the blocks running together share their neurons' weights through L2.
inline GatherPlan plan_fused(int m, int up_columns) {
  return with_tile(m <= 16 ? m : 64, [&](auto s) {
    using S = decltype(s);
    GatherPlan q;
    q.block_m = S::BLOCK_M;
    q.block_n = S::BLOCK_N;
    q.threads = S::THREADS;
    q.smem = fused_smem_bytes<S>();
    q.stages = S::STAGES;
    q.tiles_m = ceil_div(m, S::BLOCK_M);
    q.tiles_n = ceil_div(up_columns, S::BLOCK_N);
    q.grid = int64_t(q.tiles_m) * q.tiles_n;
    return q;
  });
}

// `up` as for the up product (its n: the active columns, any count); y zeroed before.
template <Gather G>
void launch_fused(const GatherParams& up, const FusedDown& down, __half* out, cudaStream_t stream) {
  const GatherPlan q = plan_fused(up.m, up.n);
  if (q.grid > 0) {
    GatherParams u = up;
    FusedDown d = down;
    void* args[] = {&u, &d};
    with_tile(up.m <= 16 ? up.m : 64, [&](auto s) {
      using S = decltype(s);
      CUDA_CHECK(cudaLaunchKernel(fused_kernel_ready<S, G>(), dim3(unsigned(q.grid)), dim3(S::THREADS), args,
                                  size_t(fused_smem_bytes<S>()), stream));
      return 0;
    });
    CUDA_CHECK_LAUNCH();
  }
  const int64_t pairs = int64_t(up.m) * down.d_model / 2;
  round_to_half_kernel<<<unsigned(std::min<int64_t>(std::max<int64_t>(ceil_div(pairs, int64_t(256)), 1), 1024)), 256, 0,
                         stream>>>(down.y, out, pairs);
  CUDA_CHECK_LAUNCH();
}

// The activation between the dense cuBLAS products: out (M x d_ff) from the up
// product's output full (M x per d_ff; SwiGLU: gate columns, then up columns),
// times the router's mask when one is given (0 or 1 per neuron).
__global__ void dense_activation_kernel(const __half* __restrict__ full, const __half* __restrict__ mask,
                                        __half* __restrict__ out, int m, int d_ff, Activation act, bool swiglu) {
  const int64_t pairs = int64_t(m) * d_ff / 2;
  const int per = swiglu ? 2 : 1;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < pairs; i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t r = (2 * i) / d_ff;
    const int c = int((2 * i) % d_ff);
    const __half* row = full + r * int64_t(per) * d_ff;
    const float2 g = __half22float2(*reinterpret_cast<const __half2*>(row + c));
    float v0, v1;
    if (swiglu) {
      const float2 u = __half22float2(*reinterpret_cast<const __half2*>(row + d_ff + c));
      v0 = apply_activation(Activation::silu, g.x) * u.x;
      v1 = apply_activation(Activation::silu, g.y) * u.y;
    } else {
      v0 = apply_activation(act, g.x);
      v1 = apply_activation(act, g.y);
    }
    if (mask != nullptr) {
      const float2 k = __half22float2(*reinterpret_cast<const __half2*>(mask + c));
      v0 *= k.x;
      v1 *= k.y;
    }
    reinterpret_cast<__half2*>(out)[i] = __floats2half2_rn(v0, v1);
  }
}

inline void launch_dense_activation(const __half* full, const __half* mask, __half* out, int m, int d_ff,
                                    Activation act, bool swiglu, cudaStream_t stream) {
  const int64_t pairs = int64_t(m) * d_ff / 2;
  dense_activation_kernel<<<unsigned(std::min<int64_t>(std::max<int64_t>(ceil_div(pairs, int64_t(256)), 1), 4096)), 256,
                            0, stream>>>(full, mask, out, m, d_ff, act, swiglu);
  CUDA_CHECK_LAUNCH();
}

// Step 6's copy: the active neurons' weights into compact matrices, one block
// a row. Out of neuron-major W1 (a neuron's gate row, then its up row, d_model
// each) into w1c, `ld` rows for each of the `per` kinds (SwiGLU: every gate
// row, then every up row, so the up product's output has the gate columns,
// then the up columns, as the activation pass wants them); out of W2 into w2c.
// Rows from `count` to `ld` (padding, at most 7) are written as zeros, so the
// padded columns of the products are 0.
__global__ void __launch_bounds__(256) compact_neurons_kernel(const __half* __restrict__ w1n,
                                                               const __half* __restrict__ w2,
                                                               const int32_t* __restrict__ idx, __half* __restrict__ w1c,
                                                               __half* __restrict__ w2c, int count, int ld, int per,
                                                               int d_model) {
  const int row = blockIdx.x;  // [0, per * ld): a row of w1c; [per * ld, (per + 1) * ld): a row of w2c
  const int which = row / ld, p = row % ld;
  const bool w2_row = which == per;
  __half* dst = w2_row ? w2c + size_t(p) * d_model : w1c + size_t(row) * d_model;
  const int words = d_model / 8;  // 16-byte words (d_model is a multiple of 8)
  uint4* out = reinterpret_cast<uint4*>(dst);
  if (p >= count) {
    for (int i = threadIdx.x; i < words; i += blockDim.x) out[i] = make_uint4(0, 0, 0, 0);
    return;
  }
  const int64_t neuron = idx[p];
  const __half* src = w2_row ? w2 + neuron * d_model : w1n + (neuron * per + which) * d_model;
  const uint4* in = reinterpret_cast<const uint4*>(src);
  for (int i = threadIdx.x; i < words; i += blockDim.x) out[i] = __ldcs(in + i);
}

inline void launch_compact_neurons(const __half* w1n, const __half* w2, const int32_t* idx, __half* w1c, __half* w2c,
                                   int count, int ld, int per, int d_model, cudaStream_t stream) {
  compact_neurons_kernel<<<unsigned(ld * (per + 1)), 256, 0, stream>>>(w1n, w2, idx, w1c, w2c, count, ld, per, d_model);
  CUDA_CHECK_LAUNCH();
}

}  // namespace wb::sparse
