// Lesson 07 - W4A16: int4 weights dequantized inside the product.
//
// The problem: C = A dequant(Bq). A (M x K) holds M = 1 to 128 tokens'
// activations in fp16; the weights are stored GPTQ-style: 4-bit values q,
// eight to a 32-bit word, with an fp16 scale s and zero point z per group of
// G rows of K (--group-size, 128 by default) and per column, and each weight
// is w = (q - z) s (schedule/q4.hpp has the quantizer and the layouts). The
// reference is cuBLAS on the fp16 weights dequant(Bq): what a model that was
// not quantized pays.
//
// What is new: lesson 06 showed that a skinny product's time is its weights'
// bytes over the memory's bandwidth. Int4 weights are a quarter of those
// bytes, so the same product should take close to a quarter of the time, if
// the kernel reads them at the same rate and the unpacking hides under the
// loads:
//   step 1  dequant_cublas  unpack the weights to fp16 (a kernel), then cuBLAS: the
//                           two-step path a reader writes first; it moves more bytes
//                           than cuBLAS alone
//   step 2  paper           the paper's kernel (its Algorithm 1): lesson 06's split-K
//                           tiles with B arriving packed; each slice's words are
//                           unpacked into an fp16 tile in shared memory by a shift, a
//                           mask and an int-to-fp16 conversion per value; fp16
//                           atomics add the partial sums into C
//   step 3  lop3            the same with cheaper unpacking: a nibble OR-ed into the
//                           mantissa of 1024.0 in fp16 is 1024 + q exactly, so one lop3
//                           makes two values, and one half2 subtract and multiply
//                           finish them (kernels/07_w4a16/dequant.cuh)
//   step 4  shuffled        a layout made for the kernel, shuffled once offline: each
//                           lane's 16 bytes per k step are exactly its tensor-core
//                           fragments' values, so they go from shared memory straight
//                           to registers, dequantized there: no fp16 tile, no
//                           ldmatrix.trans, one barrier per slice; up to M = 8 the
//                           weights are the mma's 16 rows and the tokens its 8
//                           columns, so no mma multiplies 15 rows of zeros
//   step 5  serial          step 4, the splits added behind lesson 06's semaphore;
//           in_order        by the tile's last split, in order; cluster (Hopper): a
//           cluster         tile's splits one cluster, adding from each other's shared
//                           memory. All three give the same bits every run
//   step 6  direct          (Hopper) each lane loads its 16 bytes per k step straight
//                           into a ring of registers; a warp owns a 64-column strip and
//                           a range of its k steps, the sums added in shared memory,
//                           then across a cluster
//   step 7  warp_ring       (Hopper) step 6 with each warp's ring in shared memory, one
//                           cp.async group a step, waited for step by step; lanes meet at
//                           __syncwarp; the scales go on the fp32 sums (16 tokens: two mma)
//   step 8  narrow          (M <= 16) strips of 16 columns (the weights as the mma's 16
//                           rows), a block each, its 8 warps splitting K and adding at
//                           one block barrier; a lane's 16 bytes are its fragments for
//                           four k steps, its activations for them one 32-byte run;
//                           beyond 8 tokens, 16 tokens and two strips a block
//
// Why faster: step 1 writes and reads the fp16 weights besides; step 2 reads a
// quarter of the bytes but unpacks into shared memory behind a second
// barrier; step 3 cuts the unpacking's instructions, step 4 the fp16 tile's
// round trip; step 5's cluster cuts the cost of adding the splits (a memset,
// or a workspace behind a fence); step 6 drops the block-wide pipeline, which
// nothing needs when no byte a block copies is read twice (M <= 16); step 7
// lets a warp wait for one step while the next seven are still coming, where
// step 6's loads, sharing one scoreboard, were waited for all at once (and
// scaling sums, not weights, drops 4 of 13 unpacking instructions); step 8's
// strips fill the GPU at N = 4096 unsplit: one block barrier adds (docs/notes).
// What to look for: each variant's % of the copy's bandwidth, counting the
// bytes it must read (int4 weights, scales, zeros, A, C); vs cuBLAS fp16;
// steps 6 and 7 ahead of step 5 at M <= 16 and N = K <= 8192, all level at
// 16384; step 8 ahead at M <= 16 and N = K = 4096, behind from 8192; under
// the report, the quantization error (int4 against the original fp16
// weights) beside the kernels' own (fp64, on the dequantized weights).
//
// Preconditions: K a multiple of the group size (32, 64 or 128), checked
// before any GPU work; any M and N >= 1 (the shuffled layout pads N to 256
// and K to 64 with zero weights). --weights all0 / all15 sets every 4-bit value
// to an extreme. The tiled kernels and narrow need sm_80; cluster, direct
// and warp_ring sm_90.
//
// Run:  build/bin/lesson07_w4a16                                (M = 1, N = K = 4096, G = 128)
//       build/bin/lesson07_w4a16 --m 16 --n 16384 --k 16384
//       build/bin/lesson07_w4a16 --m 1 --n 14336 --k 4096 --group-size 64
//       build/bin/lesson07_w4a16 --m 128 --variant shuffled,in_order
//       build/bin/lesson07_w4a16 --m 16 --variant in_order,direct,warp_ring,narrow
// Measured: docs/lessons/07_w4a16.md.

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "07_w4a16/dequant.cuh"
#include "07_w4a16/direct_gemm.cuh"
#include "07_w4a16/warp_ring_gemm.cuh"
#include "07_w4a16/gptq_gemm.cuh"
#include "07_w4a16/narrow_gemm.cuh"
#include "07_w4a16/shuffled_gemm.cuh"
#include "harness/catalog.hpp"
#include "harness/fp64.hpp"
#include "harness/gemm_problem.cuh"
#include "harness/harness.cuh"
#include "harness/report.hpp"
#include "schedule/q4.hpp"

namespace {

using namespace wb;
using namespace wb::w4a16;

// Inputs, in order.
enum Input { kA, kBq, kScales, kZeros, kShuffled, kShuffledScales, kNarrow, kNarrowScales, kW };

int group_size(const ProblemSize& s) { return int(s.params.integer("group_size")); }
int requested_split(const ProblemSize& s) { return int(s.params.integer("split_k")); }
int64_t groups(const ProblemSize& s) { return s.k / group_size(s); }

W4Args w4_args(const Buffers& b) {
  const ProblemSize& s = b.size;
  W4Args a{};
  a.a = static_cast<const __half*>(b.inputs[kA]);
  a.bq = static_cast<const uint32_t*>(b.inputs[kBq]);
  a.scales = static_cast<const __half*>(b.inputs[kScales]);
  a.zeros = static_cast<const __half*>(b.inputs[kZeros]);
  a.bs = static_cast<const uint32_t*>(b.inputs[kShuffled]);
  a.sz = static_cast<const __half*>(b.inputs[kShuffledScales]);
  a.bn = static_cast<const uint32_t*>(b.inputs[kNarrow]);
  a.szn = static_cast<const __half*>(b.inputs[kNarrowScales]);
  a.c = static_cast<__half*>(b.outputs[0]);
  a.m = s.m;
  a.n = s.n;
  a.k = s.k;
  a.group_size = group_size(s);
  a.trace = b.trace;
  a.workspace = b.workspace;
  a.workspace_bytes = b.workspace_bytes;
  return a;
}

// The bytes a W4A16 kernel must move: int4 weights, scales, zeros, A in, C out.
double int4_bytes(const ProblemSize& s) {
  return double(s.k) * s.n / 2 + 2.0 * double(groups(s)) * s.n * 2 + 2.0 * s.m * double(s.k) + 2.0 * s.m * double(s.n);
}

// ------------------------------------------------------------------ weights
// The original weights W0, uniform in [-1, 1), from a counter-based hash, so
// that the check can recompute them for the quantization error.
float original_weight(uint64_t seed, int64_t k, int64_t n, int64_t cols) {
  uint64_t z = seed * 0x9E3779B97F4A7C15ull + uint64_t(k * cols + n) + 0x632BE59BD9B4E019ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  z ^= z >> 31;
  return float(int64_t(z >> 40) - (int64_t(1) << 23)) / float(1 << 23);
}

float round_half(float x) { return half_to_float(float_to_half(x)); }

// What the fill measured of the quantization, and the check of row 0 of C.
struct QuantStats {
  uint64_t seed = 0;         // the fill's: W0 depends on it
  bool random = true;        // --weights random (else the values are set to an extreme)
  double weights_rel = NAN;  // ||W - W0|| / ||W0||
  double output_rel = NAN;   // ||A (W - W0)|| / ||A W0|| on the first sampled row
};
QuantStats g_quant;

// Quantizes W0 group by group and writes every layout: the GPTQ words, the
// scales and zeros, the shuffled and narrow words and scales, and W = dequant(Bq)
// in fp16.
void fill_weights(const ProblemSize& s, std::vector<HostTensor>& in, uint64_t seed) {
  const int64_t n = s.n, k = s.k, g = group_size(s);
  const int64_t kp = q4::padded_k(k), np = q4::padded_n(n);
  const std::string mode = s.params.text("weights");
  auto* bq = reinterpret_cast<uint32_t*>(in[kBq].data.data());
  auto* scales = reinterpret_cast<uint16_t*>(in[kScales].data.data());
  auto* zeros = reinterpret_cast<uint16_t*>(in[kZeros].data.data());
  auto* bs = reinterpret_cast<uint32_t*>(in[kShuffled].data.data());
  auto* sz = reinterpret_cast<uint16_t*>(in[kShuffledScales].data.data());
  auto* bn = reinterpret_cast<uint32_t*>(in[kNarrow].data.data());
  auto* szn = reinterpret_cast<uint16_t*>(in[kNarrowScales].data.data());
  const int64_t padded_groups = q4::shuffled_groups(k, int(g));
  auto* w = reinterpret_cast<uint16_t*>(in[kW].data.data());
  // Blocks of columns on every host thread. A block is whole strips of every
  // layout (64 columns: the shuffled layout's strip, four of the narrow one's),
  // so no packed word holds values of two blocks. Each block keeps its own
  // sums of the error, added in block order.
  constexpr int64_t kBlock = q4::kStripColumns;
  static_assert(kBlock % q4::kNarrowColumns == 0, "a block is whole narrow strips");
  const int64_t blocks = (n + kBlock - 1) / kBlock;
  std::vector<double> diff2s(size_t(blocks), 0.0), ref2s(size_t(blocks), 0.0);
  on_host_threads(blocks, [&](int64_t blk) {
    const int64_t c0 = blk * kBlock, c1 = std::min(n, c0 + kBlock);
    std::vector<float> column(static_cast<size_t>(g));
    std::vector<q4::GroupQuant> quant(static_cast<size_t>(c1 - c0));
    double diff2 = 0, ref2 = 0;
    for (int64_t grp = 0; grp < k / g; ++grp) {
      for (int64_t c = c0; c < c1; ++c) {
        for (int64_t r = 0; r < g; ++r) column[size_t(r)] = original_weight(seed, grp * g + r, c, n);
        const q4::GroupQuant q = q4::quantize_group(column.data(), int(g), 1, round_half);
        quant[size_t(c - c0)] = q;
        scales[grp * n + c] = float_to_half(q.scale);
        zeros[grp * n + c] = float_to_half(q.zero);
        sz[q4::shuffled_scale_index(grp, c, np, false)] = float_to_half(q.scale);
        sz[q4::shuffled_scale_index(grp, c, np, true)] = float_to_half(q.zero);
        szn[q4::narrow_scale_index(grp, c, padded_groups, false)] = float_to_half(q.scale);
        szn[q4::narrow_scale_index(grp, c, padded_groups, true)] = float_to_half(q.zero);
      }
      for (int64_t r = grp * g; r < (grp + 1) * g; ++r)
        for (int64_t c = c0; c < c1; ++c) {
          const q4::GroupQuant q = quant[size_t(c - c0)];
          const float w0 = original_weight(seed, r, c, n);
          const uint32_t v = mode == "all0" ? 0u : mode == "all15" ? 15u : q4::quantize_value(w0, q);
          const int64_t word = q4::gptq_word(r, c, n);
          bq[word] = q4::set_nibble(bq[word], q4::gptq_nibble(r), v);
          const q4::Position p = q4::shuffled_position(r, c, kp);
          bs[p.word] = q4::set_nibble(bs[p.word], p.nibble, v);
          const q4::Position pn = q4::narrow_position(r, c, kp);
          bn[pn.word] = q4::set_nibble(bn[pn.word], pn.nibble, v);
          const uint16_t h = float_to_half(q4::dequant_exact(v, q.zero, q.scale));
          w[r * n + c] = h;
          const double d = double(half_to_float(h)) - double(w0);
          diff2 += d * d;
          ref2 += double(w0) * double(w0);
        }
    }
    diff2s[size_t(blk)] = diff2;
    ref2s[size_t(blk)] = ref2;
  });
  double diff2 = 0, ref2 = 0;
  for (int64_t blk = 0; blk < blocks; ++blk) diff2 += diff2s[size_t(blk)], ref2 += ref2s[size_t(blk)];
  g_quant = QuantStats{};
  g_quant.seed = seed;
  g_quant.random = mode == "random";
  g_quant.weights_rel = ref2 > 0 ? std::sqrt(diff2 / ref2) : 0.0;
}

// fp64 rows of A W, W the dequantized weights; and, for the first row, the
// error that quantizing made (A W against A W0).
std::vector<double> w4_fp64_rows(const ProblemSize& s, const std::vector<HostTensor>& in, size_t,
                                 const std::vector<int64_t>& rows) {
  std::vector<double> out = fp64_product_rows(in[kA], in[kW], s.n, s.k, rows);
  if (!rows.empty() && g_quant.random) {
    std::vector<double> ideal(static_cast<size_t>(s.n), 0.0);
    const uint64_t seed = g_quant.seed;
    constexpr int64_t kCols = 256;  // blocks of columns on every host thread, each sum over k in order
    on_host_threads((s.n + kCols - 1) / kCols, [&](int64_t b) {
      const int64_t j0 = b * kCols, j1 = std::min<int64_t>(s.n, j0 + kCols);
      for (int64_t kk = 0; kk < s.k; ++kk) {
        const double av = in[kA].at(rows[0], kk);
        for (int64_t j = j0; j < j1; ++j) ideal[size_t(j)] += av * double(original_weight(seed, kk, j, s.n));
      }
    });
    double diff2 = 0, ref2 = 0;
    for (int64_t j = 0; j < s.n; ++j) {
      const double d = out[size_t(j)] - ideal[size_t(j)];
      diff2 += d * d;
      ref2 += ideal[size_t(j)] * ideal[size_t(j)];
    }
    g_quant.output_rel = ref2 > 0 ? std::sqrt(diff2 / ref2) : 0.0;
  }
  return out;
}

Problem w4a16_problem() {
  Problem p;
  p.summary = "C = A dequant(Bq), Bq int4 with an fp16 scale and zero point per group of K rows and column";
  p.dtype = "fp16 activations, int4 weights (fp16 scales and zeros), fp32 accumulate, fp16 out";
  p.params = {
      ParamSpec{"group_size", "rows of K that share a scale and a zero point: 32, 64 or 128", "128",
                {"32", "64", "128"}, true, true, 32, 128},
      ParamSpec{"split_k", "k ranges per output tile for the split-K variants; 0: the wave model chooses", "0", {},
                true, true, 0, 65536},
      ParamSpec{"weights",
                "the 4-bit values: random (quantized from random fp16 weights), all0 or all15 (every value at an extreme)",
                "random",
                {"random", "all0", "all15"}},
  };
  p.validate = [](const ProblemSize& s) -> std::string {
    const int g = group_size(s);
    if (s.k % g != 0)
      return "K = " + std::to_string(s.k) + " is not a multiple of the group size " + std::to_string(g) +
             " (--group-size): every group of K rows has its own scale";
    return "";
  };
  p.inputs = [](const ProblemSize& s) {
    const int64_t g = groups(s), kp = q4::padded_k(s.k), np = q4::padded_n(s.n);
    return std::vector<TensorSpec>{
        {"A", s.m, s.k},
        {"Bq", s.k / 8, s.n, DType::u4x8, Layout::row_major, true},
        {"scales", g, s.n, DType::f16, Layout::row_major, true},
        {"zeros", g, s.n, DType::f16, Layout::row_major, true},
        {"Bq_shuffled", kp / 8, np, DType::u4x8, Layout::row_major, true},
        {"sz_shuffled", q4::shuffled_groups(s.k, group_size(s)), np * 2, DType::f16, Layout::row_major, true},
        {"Bq_narrow", kp / 8, q4::narrow_padded_n(s.n), DType::u4x8, Layout::row_major, true},
        {"sz_narrow", q4::shuffled_groups(s.k, group_size(s)), q4::narrow_padded_n(s.n) * 2, DType::f16,
         Layout::row_major, true},
        {"W", s.k, s.n, DType::f16, Layout::row_major, true},  // dequant(Bq): the reference's weights
    };
  };
  p.outputs = [](const ProblemSize& s) { return std::vector<TensorSpec>{{"C", s.m, s.n}}; };
  p.fill = fill_weights;
  p.reference = Reference{"cublas", "cuBLAS fp16", "cuBLAS cublasGemmEx on the fp16 weights dequant(Bq) (the reference)",
                          [](const Buffers& b, cudaStream_t) {
                            cublas_gemm_rowmajor(b.cublas, static_cast<const __half*>(b.inputs[kA]),
                                                 static_cast<const __half*>(b.inputs[kW]),
                                                 static_cast<__half*>(b.outputs[0]), b.size.m, b.size.n, b.size.k);
                          }};
  p.fp64_rows = w4_fp64_rows;
  p.flops = [](const ProblemSize& s) { return 2.0 * s.m * double(s.n) * s.k; };
  // The reference's bytes: fp16 weights, A and C. Each variant counts its own (int4_bytes).
  p.bytes = [](const ProblemSize& s) {
    return 2.0 * double(s.k) * s.n + 2.0 * s.m * double(s.k) + 2.0 * s.m * double(s.n);
  };
  return p;
}

// ------------------------------------------------------------------ variants

Variant base_variant(const char* name, const char* what) {
  Variant v;
  v.name = name;
  v.what = what;
  v.bytes = int4_bytes;
  v.bytes_what = "int4 weights, scales, zeros, A and C";
  return v;
}

void zero_c(const Buffers& b, cudaStream_t st) {  // the atomics add into C: part of what they cost
  CUDA_CHECK(cudaMemsetAsync(b.outputs[0], 0, size_t(b.size.m) * size_t(b.size.n) * sizeof(__half), st));
}

Variant dequant_cublas() {
  Variant v = base_variant("dequant_cublas", "unpack the weights to fp16 (a kernel), then cuBLAS on them");
  v.min_cc = 75;
  v.workspace_bytes = [](const ProblemSize& s) { return size_t(s.k) * size_t(s.n) * sizeof(__half); };
  v.launch = [](const Buffers& b, cudaStream_t st) {
    const W4Args a = w4_args(b);
    auto* w = static_cast<__half*>(b.workspace);
    launch_dequant_gptq(a.bq, a.scales, a.zeros, w, a.k, a.n, a.group_size, st);
    cublas_gemm_rowmajor(b.cublas, a.a, w, a.c, a.m, a.n, a.k);
  };
  return v;
}

template <Dequant D>
Variant gptq(const char* name, const char* what) {
  Variant v = base_variant(name, what);
  v.min_cc = 80;  // cp.async, mma.sync
  v.config = [](const ProblemSize& s) { return splitk::kernel_config(plan_gptq(s.m, s.n, s.k, requested_split(s)), false); };
  v.prepare = zero_c;
  v.launch = [](const Buffers& b, cudaStream_t st) { launch_gptq_splitk<D>(w4_args(b), requested_split(b.size), st); };
  v.note = [](const ProblemSize& s) {
    const splitk::SplitKPlanned q = plan_gptq(s.m, s.n, s.k, requested_split(s));
    return split_clamp_note(q.wanted, q.splits, q.k_tiles);
  };
  v.model = [](const ProblemSize&, const KernelConfig& c, const GpuInfo& gpu) { return split_wave_line(c, gpu, 1); };
  return v;
}

template <Combine R>
Variant shuffled(const char* name, const char* what) {
  Variant v = base_variant(name, what);
  v.min_cc = R == Combine::cluster ? 90 : 80;  // clusters and distributed shared memory
  v.config = [](const ProblemSize& s) { return splitk::kernel_config(plan_shuffled<R>(s.m, s.n, s.k, requested_split(s)), false); };
  if (R == Combine::atomic) v.prepare = zero_c;
  if (R != Combine::atomic)
    v.workspace_bytes = [](const ProblemSize& s) {
      return shuffled_workspace_bytes<R>(s.m, s.n, s.k, requested_split(s));
    };
  v.launch = [](const Buffers& b, cudaStream_t st) { launch_shuffled<R>(w4_args(b), requested_split(b.size), st); };
  v.note = [](const ProblemSize& s) {
    const splitk::SplitKPlanned q = plan_shuffled<R>(s.m, s.n, s.k, requested_split(s));
    if (R == Combine::cluster && q.wanted > q.splits && q.splits == kShuffledMaxClusterSplit &&
        q.wanted <= q.k_tiles)
      return "split " + std::to_string(q.wanted) + " clamped to " + std::to_string(q.splits) + " (at most " +
             std::to_string(kShuffledMaxClusterSplit) + " blocks a cluster)";
    return split_clamp_note(q.wanted, q.splits, q.k_tiles);
  };
  v.model = [](const ProblemSize&, const KernelConfig& c, const GpuInfo& gpu) {
    return split_wave_line(c, gpu, kShuffledUnitsPerSm);
  };
  return v;
}

// Steps 6 and 7: a strip per block, its k split over the warps and a cluster.
template <splitk::SplitKPlanned (*Plan)(int, int, int, int, int), void (*Launch)(const W4Args&, int, cudaStream_t)>
Variant strip_variant(const char* name, const char* what) {
  Variant v = base_variant(name, what);
  v.min_cc = 90;  // clusters and distributed shared memory
  v.config = [](const ProblemSize& s) {
    return splitk::kernel_config(Plan(s.m, s.n, s.k, group_size(s), requested_split(s)), false);
  };
  v.launch = [](const Buffers& b, cudaStream_t st) { Launch(w4_args(b), requested_split(b.size), st); };
  v.note = [](const ProblemSize& s) {
    const splitk::SplitKPlanned q = Plan(s.m, s.n, s.k, group_size(s), requested_split(s));
    if (q.wanted > q.splits && q.splits == kDirectMaxSplit && q.wanted <= q.k_tiles)
      return "split " + std::to_string(q.wanted) + " clamped to " + std::to_string(q.splits) + " (at most " +
             std::to_string(kDirectMaxSplit) + " blocks a cluster)";
    return split_clamp_note(q.wanted, q.splits, q.k_tiles);
  };
  v.model = [](const ProblemSize&, const KernelConfig& c, const GpuInfo& gpu) {
    return split_wave_line(c, gpu, c.blocks_per_sm);
  };
  return v;
}

// Step 8: a block per 16-column strip, its warps splitting K; no split to choose.
Variant narrow() {
  Variant v = base_variant("narrow", "strips of 16 columns, a block each, its warps splitting K and adding at one "
                                     "block barrier; the tokens the mma's 8 columns, beyond 8 two strips and 16 tokens a "
                                     "block (made for M <= 16)");
  v.min_cc = 80;  // mma.sync
  v.config = [](const ProblemSize& s) {
    return splitk::kernel_config(plan_narrow(s.m, s.n, s.k, group_size(s), requested_split(s)), false);
  };
  v.launch = [](const Buffers& b, cudaStream_t st) { launch_narrow(w4_args(b), requested_split(b.size), st); };
  v.note = [](const ProblemSize& s) -> std::string {
    std::string note;
    if (requested_split(s) > 0) note = "--split-k does not apply: the block's warps split K";
    if (s.m > 2 * kNarrowTokens) {
      if (!note.empty()) note += "; ";
      note += "M > 16: each 16 tokens read the weights again";
    }
    return note;
  };
  v.model = [](const ProblemSize&, const KernelConfig& c, const GpuInfo& gpu) {
    return split_wave_line(c, gpu, c.blocks_per_sm);
  };
  return v;
}

std::vector<Variant> variants() {
  return {
      dequant_cublas(),
      gptq<Dequant::convert>("paper", "the paper's kernel: split-K tiles, unpacked by conversion into shared memory, "
                                      "fp16 atomics"),
      gptq<Dequant::magic>("lop3", "the same, unpacked two values at a time with lop3 and 1024.0 (no conversions)"),
      shuffled<Combine::atomic>("shuffled", "weights shuffled offline: 16 bytes per lane are its fragments, "
                                            "dequantized in registers; fp16 atomics"),
      shuffled<Combine::serial>("serial", "the shuffled kernel, a tile's splits adding in turn behind a semaphore"),
      shuffled<Combine::last_block>("in_order", "the shuffled kernel, the last split of a tile adding the slices "
                                                "in order"),
      shuffled<Combine::cluster>("cluster", "the shuffled kernel, a tile's splits one cluster, adding each other's "
                                            "tiles from shared memory in order"),
      strip_variant<plan_direct, launch_direct>("direct", "the weights loaded straight into registers, steps ahead, "
                                                          "no shared-memory pipeline; a strip's k split over warps "
                                                          "and a cluster, added in order"),
      strip_variant<plan_ring, launch_ring>("warp_ring", "each warp its own ring of steps in shared memory, filled "
                                                         "with cp.async and waited for step by step by the "
                                                         "hardware's group count; no block barrier in the loop"),
      narrow(),
  };
}

// Under the report: the bandwidth lines, and the two errors side by side.
std::string conclusion(const RunSummary& run) {
  std::string out = copy_bandwidth_lines(run.results);
  if (g_quant.random && std::isfinite(g_quant.weights_rel)) {
    // Row 0 of C is compared only where the fp64 check ran (not with --no-check).
    char row0[64] = "";
    if (std::isfinite(g_quant.output_rel)) std::snprintf(row0, sizeof row0, ", row 0 of C %.2e", g_quant.output_rel);
    char buf[400];
    std::snprintf(buf, sizeof buf,
                  "quantization error (int4 against the original fp16 weights, group size %lld): weights %.2e%s "
                  "(relative RMS); the kernels' own error is the fp64 figure above, taken on the dequantized "
                  "weights\n",
                  static_cast<long long>(run.size.params.integer("group_size")), g_quant.weights_rel, row0);
    out += buf;
  }
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  Lesson lesson;
  lesson.info = catalog_entry("lesson07_w4a16");
  lesson.problem = w4a16_problem();
  lesson.variants = variants();
  lesson.copy_bytes = int4_bytes;
  lesson.read_floor = true;
  lesson.repeat_check = true;
  lesson.default_m = 1;
  lesson.conclusion = conclusion;
  return run_lesson(lesson, argc, argv);
}
