// Lesson 08 - Sparse FFN: a router's active neurons turned into real speed.
//
// The problem: a transformer's feed-forward block, Y = act(X W1) W2, where a
// router has kept only some of the d_ff intermediate neurons (the index list
// I, shared by the batch, as in the gather-and-scatter post):
//   Y = act(X W1[:, I]) W2[I, :]          X: M tokens x d_model
// and for Llama's SwiGLU form, Y = (silu(X Wg[:, I]) * (X Wu[:, I])) W2[I, :].
// --model gpt2 | llama2-7b | llama2-7b-swiglu sets d_model and d_ff;
// --sparsity s leaves out that fraction of the neurons (I drawn at random,
// seeded, unsorted), --indices FILE gives I instead. The reference is what a
// model without a router pays: the dense FFN on cuBLAS (two cublasGemmEx and
// an activation pass between them). The check is against the same path with
// the router's mask applied in the activation pass, and fp64.
//
// What is new: the work falls with the sparsity, but only if the kernels read
// only the active neurons' weights, and read them as fast as dense ones:
//   step 1  masked_dense  the dense path with zeros where neurons are off: the
//                         same time as dense, which is the point: a mask saves
//                         nothing
//   step 2  fused         the post's kernel in one launch: a block gathers 128
//                         active columns of W1, applies the activation on chip,
//                         multiplies by the same neurons' rows of W2 and adds
//                         into every column of Y with atomics (fp32, rounded to
//                         fp16 by a second kernel)
//   step 3  gathered      two products, no atomics: H = act(X W1[:, I]) into a
//                         compact M x |I| buffer, then Y = H W2[I, :]
//   step 4  neuron_major  step 3 with W1 stored neuron-major (W1ᵀ, an offline
//                         relayout done once per model): each neuron's weights
//                         one 8 KiB run instead of a column of 2-byte pieces
//           fused_neuron_major  step 2 on the same layout
//   step 5  split_k       step 4, with lesson 06's split-K where a product's
//                         tiles are too few to fill the GPU (the last split
//                         adds the others in order: the same bits every run);
//                         above M = 64 on Hopper a large product runs on lesson
//                         04's warp-specialised Stream-K kernel, A by TMA and B
//                         gathered by its producer with cp.async
//                         (gather_streamk.cuh)
//   step 6  compacted     what a framework does: index_select the active
//                         weights into compact matrices, then the dense cuBLAS
//                         FFN; the copy moves every active weight twice more
//   step 7  split_k_atomic  step 5 with the splits of a tile added by fp32
//                         atomics in L2 into one sum, which the last split
//                         reads alone: no slot per split to read back, but
//                         the last bit can change from run to run (the
//                         mma.sync kernel's splits: M <= 64 on Hopper; above
//                         that it runs step 5's kernels as they are)
//   bound   compact_cublas  step 6 without its copy (the weights compacted
//                         before timing): not a way to run a router's FFN, but
//                         what cuBLAS makes of the smaller products
// SwiGLU's gate and up are one pass in every kernel: a neuron's gate and up
// columns sit side by side in the tile, so one thread holds both. In steps
// 3-5 and 7 (M <= 64) the down product is the up product's programmatic dependent
// launch: it starts while the up product drains and copies its first W2 rows,
// which do not need H, before it waits for H.
//
// Why faster: a skinny FFN (M = 16) reads its weights once and is bound by
// their bytes; a wide one (M = 512) by its flops. Both fall by 1 - s, if the
// gathers cost nothing. A column of row-major W1 costs a 32-byte sector per
// 2-byte value, so step 3 reads nearly all of W1 until s is high; a W2 row
// and a neuron-major W1 row are runs, read nearly at a contiguous read's
// rate. Copying them first (step 6) costs their bytes twice: it pays only
// where the products, not the bytes, take the time.
// What to look for: each variant's ratio to the dense FFN beside the ideal
// 1/(1 - s) (the lines under the report), its % of the copy bandwidth
// counting the active weights only, and the floor line: how long a kernel
// that only reads the active weights takes here. Where the FFN is bound by
// its bytes (M = 16), that floor, not the ideal, is the most any variant can
// reach; where it is bound by its flops (M = 512), compact_cublas is.
//
// Preconditions: M >= 1, any sparsity in [0, 1] (at 1 nothing is active: Y is
// zero and no kernel reads the weights). --indices: whole numbers in
// [0, d_ff), none repeated, checked before any GPU work. --n and --k are set
// by --model. The kernels need sm_80.
//
// Run:  build/bin/lesson08_sparse_ffn                           (Llama-2-7B, M = 16, s = 0.75)
//       build/bin/lesson08_sparse_ffn --m 512 --sparsity 0.9
//       build/bin/lesson08_sparse_ffn --model llama2-7b-swiglu --m 16 --sparsity 0.5
//       build/bin/lesson08_sparse_ffn --model gpt2 --m 2048 --sparsity 0.75
// Measured: docs/lessons/08_sparse_ffn.md.

#include <cmath>
#include <cstdio>
#include <cstring>
#include <map>

#include "08_sparse_ffn/fused_ffn.cuh"
#include "08_sparse_ffn/gather_gemm.cuh"
#include "08_sparse_ffn/gather_streamk.cuh"
#include "08_sparse_ffn/gather_wgmma.cuh"
#include "08_sparse_ffn/one_launch.cuh"
#include "harness/catalog.hpp"
#include "harness/fp64.hpp"
#include "harness/gemm_problem.cuh"
#include "harness/harness.cuh"
#include "harness/report.hpp"
#include "schedule/sparse_ffn.hpp"

namespace {

using namespace wb;
using namespace wb::sparse;

// Inputs, in order.
enum Input { kX, kW1, kW2, kI, kMask, kW1n, kW1c, kW2c };

const ffn::Model& model_of(const Params& p) { return *ffn::find_model(p.text("model")); }
const ffn::Model& model_of(const ProblemSize& s) { return model_of(s.params); }
int per_of(const ProblemSize& s) { return ffn::up_columns_per_neuron(model_of(s)); }
// The compact weights' neuron count, padded to cuBLAS's 16-byte alignment (and
// even, for the activation pass's pairs) with zero columns and rows.
int compact8(int active) { return (active + 7) / 8 * 8; }

// The active list of this size (read from --indices, or its length from --sparsity).
// A file is read once per process (launches ask for the count every time).
const std::vector<int32_t>& listed_active(const ProblemSize& s, std::string* why = nullptr) {
  struct Read {
    std::vector<int32_t> idx;
    std::string why;
  };
  static std::map<std::pair<std::string, int>, Read> cache;
  static const Read none;
  const std::string path = s.params.text("indices");
  if (path.empty()) return none.idx;
  const auto key = std::make_pair(path, model_of(s).d_ff);
  auto it = cache.find(key);
  if (it == cache.end()) {
    Read r;
    r.why = ffn::active_list(path, key.second, 0.0, 0, r.idx);
    it = cache.emplace(key, std::move(r)).first;
  }
  if (why) *why = it->second.why;
  return it->second.idx;
}
int active_of(const ProblemSize& s) {
  if (!s.params.text("indices").empty()) return int(listed_active(s).size());
  return ffn::active_count(model_of(s).d_ff, s.params.number("sparsity"));
}

// The device's view of a run.
struct Ffn {
  const __half *x, *w1, *w2, *mask, *w1n, *w1c, *w2c;
  const int32_t* idx;
  __half* y;
  int m, d_model, d_ff, count, per, ld;
  Activation act;
  bool swiglu;
};

Ffn ffn_of(const Buffers& b) {
  const ProblemSize& s = b.size;
  const ffn::Model& md = model_of(s);
  Ffn f{};
  f.x = static_cast<const __half*>(b.inputs[kX]);
  f.w1 = static_cast<const __half*>(b.inputs[kW1]);
  f.w2 = static_cast<const __half*>(b.inputs[kW2]);
  f.mask = static_cast<const __half*>(b.inputs[kMask]);
  f.w1n = static_cast<const __half*>(b.inputs[kW1n]);
  f.w1c = static_cast<const __half*>(b.inputs[kW1c]);
  f.w2c = static_cast<const __half*>(b.inputs[kW2c]);
  f.idx = static_cast<const int32_t*>(b.inputs[kI]);
  f.y = static_cast<__half*>(b.outputs[0]);
  f.m = s.m;
  f.d_model = md.d_model;
  f.d_ff = md.d_ff;
  f.count = active_of(s);
  f.per = ffn::up_columns_per_neuron(md);
  f.ld = ffn::compact_ld(f.count);
  f.act = md.act;
  f.swiglu = md.swiglu;
  return f;
}

// ------------------------------------------------------------------ the fill
// Weights uniform in [-a, a) with a = 2 / sqrt(fan-in), as a trained layer's
// scale: the activations see inputs of order 1, and Y stays far from fp16's range.
uint64_t mix(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}
float weight(uint64_t salt, uint64_t i, float a) {
  const uint64_t r = mix(salt + i * 0x9E3779B97F4A7C15ull);
  return a * (float(r >> 40) * (2.0f / 16777216.0f) - 1.0f);
}

void fill_ffn(const ProblemSize& s, std::vector<HostTensor>& in, uint64_t seed) {
  const ffn::Model& md = model_of(s);
  const int64_t dm = md.d_model, dff = md.d_ff, per = ffn::up_columns_per_neuron(md), cols = per * dff;
  auto* w1 = reinterpret_cast<uint16_t*>(in[kW1].data.data());
  auto* w1n = reinterpret_cast<uint16_t*>(in[kW1n].data.data());
  auto* w2 = reinterpret_cast<uint16_t*>(in[kW2].data.data());
  const float a1 = 2.0f / std::sqrt(float(dm)), a2 = 2.0f / std::sqrt(float(dff));
  const uint64_t salt1 = mix(seed * 31 + 1), salt2 = mix(seed * 31 + 2);
  // Tiles of 64 x 64 weights on every host thread: a tile's lines of W1 and of
  // neuron-major W1 are each written by one thread.
  constexpr int64_t kTile = 64;
  const int64_t k_tiles = (dm + kTile - 1) / kTile, j_tiles = (cols + kTile - 1) / kTile;
  on_host_threads(k_tiles * j_tiles, [&](int64_t t) {
    const int64_t k0 = t / j_tiles * kTile, j0 = t % j_tiles * kTile;
    for (int64_t j = j0; j < std::min(cols, j0 + kTile); ++j) {
      const int64_t neuron = j % dff, which = j / dff;  // SwiGLU: gate columns, then up columns
      uint16_t* row = w1n + (neuron * per + which) * dm;  // neuron-major: a neuron's gate row, then its up row
      for (int64_t k = k0; k < std::min(dm, k0 + kTile); ++k) {
        const uint16_t h = float_to_half(weight(salt1, uint64_t(k * cols + j), a1));
        w1[k * cols + j] = h;
        row[k] = h;
      }
    }
  });
  on_host_threads(dff, [&](int64_t r) {
    for (int64_t i = r * dm; i < (r + 1) * dm; ++i) w2[i] = float_to_half(weight(salt2, uint64_t(i), a2));
  });

  std::vector<int32_t> idx = listed_active(s);
  if (s.params.text("indices").empty()) idx = ffn::draw_active(int(dff), active_of(s), seed);
  auto* out = reinterpret_cast<int32_t*>(in[kI].data.data());
  out[0] = 0;  // the one slot of an empty list, never read
  for (size_t p = 0; p < idx.size(); ++p) out[p] = idx[p];
  auto* mask = reinterpret_cast<uint16_t*>(in[kMask].data.data());
  for (int64_t i = 0; i < dff; ++i) mask[i] = float_to_half(0.0f);
  for (const int32_t i : idx) mask[i] = float_to_half(1.0f);

  // The bound's compact weights, laid out as step 6's copy kernel lays them out
  // (compact_neurons_kernel): the active neurons' rows of neuron-major W1 (SwiGLU:
  // every gate row, then every up row) and of W2, zero rows past the list.
  const int64_t count = int64_t(idx.size()), ld = compact8(int(count));
  auto* w1c = reinterpret_cast<uint16_t*>(in[kW1c].data.data());
  auto* w2c = reinterpret_cast<uint16_t*>(in[kW2c].data.data());
  std::fill(w1c, w1c + in[kW1c].data.size() / 2, uint16_t(0));
  std::fill(w2c, w2c + in[kW2c].data.size() / 2, uint16_t(0));
  for (int64_t p = 0; p < count; ++p) {
    const int64_t neuron = idx[size_t(p)];
    for (int64_t which = 0; which < per; ++which)
      std::memcpy(w1c + (which * ld + p) * dm, w1n + (neuron * per + which) * dm, size_t(dm) * 2);
    std::memcpy(w2c + p * dm, w2 + neuron * dm, size_t(dm) * 2);
  }
}

// fp64 rows of Y: only the active neurons, straight from the definition. The
// active columns of W1 (SwiGLU: the gate's, then the up's) and the active rows
// of W2 are gathered once, and both products run on the harness's fp64
// product (every sum in the definition's order: over k, then over the list's
// neurons).
std::vector<double> ffn_fp64_rows(const ProblemSize& s, const std::vector<HostTensor>& in, size_t,
                                  const std::vector<int64_t>& rows) {
  const ffn::Model& md = model_of(s);
  const int64_t dm = md.d_model, dff = md.d_ff, cols = int64_t(ffn::up_columns_per_neuron(md)) * dff;
  const int64_t count = active_of(s), per = ffn::up_columns_per_neuron(md), nr = int64_t(rows.size());
  const HostTensor &w1 = in[kW1], &w2 = in[kW2];
  std::vector<int64_t> idx(static_cast<size_t>(count));
  for (int64_t p = 0; p < count; ++p) idx[size_t(p)] = in[kI].int_value(p);
  std::vector<float> xs(size_t(nr * dm));  // the sampled rows of X
  for (int64_t r = 0; r < nr; ++r)
    for (int64_t k = 0; k < dm; ++k) xs[size_t(r * dm + k)] = in[kX].at(rows[size_t(r)], k);

  // Up: the gathered columns of W1 (dm x per * count: the gate's, then the up's).
  const int64_t up_cols = per * count;
  std::vector<float> w1a(size_t(dm * up_cols));
  on_host_threads(dm, [&](int64_t k) {
    for (int64_t w = 0; w < per; ++w)
      for (int64_t p = 0; p < count; ++p)
        w1a[size_t(k * up_cols + w * count + p)] = w1.value(k * cols + w * dff + idx[size_t(p)]);
  });
  std::vector<double> up(size_t(nr * up_cols), 0.0);
  fp64_accumulate_product(xs.data(), w1a.data(), up.data(), nr, up_cols, dm);

  // The intermediate, a row per sampled row: act(gate), or silu(gate) * up.
  std::vector<double> h(size_t(nr * count));
  for (int64_t r = 0; r < nr; ++r)
    for (int64_t p = 0; p < count; ++p) {
      const double g = up[size_t(r * up_cols + p)];
      h[size_t(r * count + p)] = md.swiglu ? apply_activation(Activation::silu, g) * up[size_t(r * up_cols + count + p)]
                                           : apply_activation(md.act, g);
    }

  // Down: the gathered rows of W2 (count x dm).
  std::vector<float> w2a(size_t(count * dm));
  on_host_threads(count, [&](int64_t p) {
    for (int64_t c = 0; c < dm; ++c) w2a[size_t(p * dm + c)] = w2.value(idx[size_t(p)] * dm + c);
  });
  std::vector<double> out(size_t(nr * dm), 0.0);
  fp64_accumulate_product(h.data(), w2a.data(), out.data(), nr, dm, count);
  return out;
}

// ------------------------------------------------------------------ the dense paths
// Workspace: the up product's output (M x per d_ff) and the activated one (M x d_ff).
size_t dense_workspace(const ProblemSize& s) {
  const ffn::Model& md = model_of(s);
  return size_t(s.m) * size_t(md.d_ff) * size_t(ffn::up_columns_per_neuron(md) + 1) * sizeof(__half);
}

void dense_ffn(const Buffers& b, bool masked, cudaStream_t st) {
  const Ffn f = ffn_of(b);
  auto* full = static_cast<__half*>(b.workspace);
  __half* act = full + size_t(f.m) * size_t(f.per) * f.d_ff;
  cublas_gemm_rowmajor(b.cublas, f.x, f.w1, full, f.m, f.per * f.d_ff, f.d_model);
  launch_dense_activation(full, masked ? f.mask : nullptr, act, f.m, f.d_ff, f.act, f.swiglu, st);
  cublas_gemm_rowmajor(b.cublas, act, f.w2, f.y, f.m, f.d_model, f.d_ff);
}

// Work and bytes: dense (the reference and step 1) and active (the others).
double ffn_flops(const ProblemSize& s, int neurons) {
  const ffn::Model& md = model_of(s);
  return 2.0 * s.m * double(md.d_model) * neurons * (ffn::up_columns_per_neuron(md) + 1);
}
double ffn_bytes(const ProblemSize& s, int neurons) {
  const ffn::Model& md = model_of(s);
  const double weights = 2.0 * double(md.d_model) * neurons * (ffn::up_columns_per_neuron(md) + 1);
  return weights + 2.0 * 2.0 * s.m * double(md.d_model);  // + X in, Y out
}

Problem ffn_problem() {
  Problem p;
  p.summary = "Y = act(X W1[:, I]) W2[I, :], I the router's active neurons (SwiGLU: silu(X Wg[:, I]) * X Wu[:, I])";
  p.dtype = "fp16 in, fp32 accumulate, fp16 intermediate and out";
  p.params = {
      ParamSpec{"model", "gpt2 (768 x 3072, GELU), llama2-7b (4096 x 11008, SiLU) or llama2-7b-swiglu", "llama2-7b",
                {"gpt2", "llama2-7b", "llama2-7b-swiglu"}},
      ParamSpec{"sparsity", "fraction of the d_ff neurons left out (I drawn at random, seeded)", "0.75", {}, true,
                false, 0, 1},
      ParamSpec{"indices", "a file of active neuron indices (whole numbers, any order) instead of --sparsity", ""},
  };
  p.sizes_from_params = [](const Params& params, int& n, int& k) {
    n = model_of(params).d_model;
    k = model_of(params).d_ff;
  };
  p.sizes_from_params_why = "--n and --k are set by --model here (N = d_model, K = d_ff)";
  p.validate = [](const ProblemSize& s) -> std::string {
    std::string why;
    listed_active(s, &why);
    return why;
  };
  p.shape_extras = [](const ProblemSize& s) {
    std::map<std::string, ShapeParam> extra;
    const auto number = [](double v) { return ShapeParam{std::to_string(int64_t(v)), true, v}; };
    extra["d_model"] = number(model_of(s).d_model);
    extra["d_ff"] = number(model_of(s).d_ff);
    extra["active"] = number(active_of(s));
    return extra;
  };
  // A trace names the neurons behind H's columns (and Y's reduction): I, read back.
  p.trace_extras = [](const ProblemSize& s, const Buffers& b, KernelConfig& c) {
    const int count = active_of(s);
    if (count == 0 || c.products.empty()) return;
    c.gathered.what = "neurons";
    c.gathered.of = model_of(s).d_ff;
    c.gathered.index.resize(size_t(count));
    CUDA_CHECK(cudaMemcpy(c.gathered.index.data(), b.inputs[kI], size_t(count) * sizeof(int32_t),
                          cudaMemcpyDeviceToHost));
  };
  p.inputs = [](const ProblemSize& s) {
    const ffn::Model& md = model_of(s);
    const int64_t per = ffn::up_columns_per_neuron(md);
    return std::vector<TensorSpec>{
        {"X", s.m, md.d_model},
        {"W1", md.d_model, per * md.d_ff, DType::f16, Layout::row_major, true},
        {"W2", md.d_ff, md.d_model, DType::f16, Layout::row_major, true},
        {"I", 1, std::max(1, active_of(s)), DType::i32, Layout::row_major, true},
        {"mask", 1, md.d_ff, DType::f16, Layout::row_major, true},
        {"W1_neuron_major", per * md.d_ff, md.d_model, DType::f16, Layout::row_major, true},
        {"W1_compact", per * std::max(8, compact8(active_of(s))), md.d_model, DType::f16, Layout::row_major, true},
        {"W2_compact", std::max(8, compact8(active_of(s))), md.d_model, DType::f16, Layout::row_major, true},
    };
  };
  p.outputs = [](const ProblemSize& s) { return std::vector<TensorSpec>{{"Y", s.m, model_of(s).d_model}}; };
  p.fill = fill_ffn;
  p.reference = Reference{"cublas", "dense cuBLAS FFN",
                          "the dense FFN on cuBLAS: X W1, the activation pass, then W2 (every neuron; the reference)",
                          [](const Buffers& b, cudaStream_t st) { dense_ffn(b, false, st); }, dense_workspace};
  p.check_reference = Reference{"masked_cublas", "masked cuBLAS FFN",
                                "the dense cuBLAS path with the router's mask applied in the activation pass",
                                [](const Buffers& b, cudaStream_t st) { dense_ffn(b, true, st); }, dense_workspace};
  p.fp64_rows = ffn_fp64_rows;
  p.flops = [](const ProblemSize& s) { return ffn_flops(s, model_of(s).d_ff); };
  p.bytes = [](const ProblemSize& s) { return ffn_bytes(s, model_of(s).d_ff); };
  return p;
}

// ------------------------------------------------------------------ variants

Variant sparse_variant(const char* name, const char* what) {
  Variant v;
  v.name = name;
  v.what = what;
  v.min_cc = 80;  // cp.async, mma.sync
  v.flops = [](const ProblemSize& s) { return ffn_flops(s, active_of(s)); };
  v.bytes = [](const ProblemSize& s) { return ffn_bytes(s, active_of(s)); };
  v.bytes_what = "the active neurons' weights, X and Y";
  return v;
}

Variant masked_dense() {
  Variant v;
  v.name = "masked_dense";
  v.what = "the dense cuBLAS path, the mask applied in the activation pass: every neuron computed";
  v.workspace_bytes = dense_workspace;
  v.launch = [](const Buffers& b, cudaStream_t st) { dense_ffn(b, true, st); };
  return v;
}

// The dense cuBLAS FFN over compact weights (steps 6 and the bound): w1c holds
// per * ld rows of d_model (the active neurons' rows of neuron-major W1, gate
// rows then up rows), w2c ld rows of W2, zeros past the list; `work` the up
// product's output (M x per * ld) and the activated one (M x ld).
size_t compact_ffn_workspace(const ProblemSize& s) {
  return size_t(s.m) * size_t(compact8(active_of(s))) * size_t(per_of(s) + 1) * sizeof(__half);
}
void compact_ffn(const Buffers& b, const Ffn& f, const __half* w1c, const __half* w2c, __half* work, cudaStream_t st) {
  const int ld = compact8(f.count);
  __half* act = work + size_t(f.m) * f.per * ld;
  // work = X w1cᵀ (row-major; for column-major cuBLAS: workᵀ = w1c Xᵀ, w1c read transposed)
  const float one = 1.0f, zero = 0.0f;
  const cublasStatus_t e = cublasGemmEx(b.cublas, CUBLAS_OP_T, CUBLAS_OP_N, f.per * ld, f.m, f.d_model, &one, w1c,
                                        CUDA_R_16F, f.d_model, f.x, CUDA_R_16F, f.d_model, &zero, work, CUDA_R_16F,
                                        f.per * ld, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
  if (e != CUBLAS_STATUS_SUCCESS) throw CudaError("cuBLAS error " + std::to_string(int(e)) + " in cublasGemmEx");
  launch_dense_activation(work, nullptr, act, f.m, ld, f.act, f.swiglu, st);
  cublas_gemm_rowmajor(b.cublas, act, w2c, f.y, f.m, f.d_model, ld);
}
// Nothing active: Y is zero, no weight is read.
bool zero_if_none_active(const Ffn& f, cudaStream_t st) {
  if (f.count > 0) return false;
  CUDA_CHECK(cudaMemsetAsync(f.y, 0, size_t(f.m) * size_t(f.d_model) * sizeof(__half), st));
  return true;
}

// Step 6: what a framework does with index_select and two GEMMs. One kernel
// copies the active neurons' weights into compact matrices (neuron-major W1's
// rows, W2's rows: runs of d_model values), then the dense cuBLAS FFN runs over
// them. The copy reads and writes every active weight once more than the
// products do: it pays where the products, not the bytes, take the time.
Variant compacted() {
  Variant v = sparse_variant("compacted", "copy the active neurons' weights into compact matrices, then the dense "
                                          "cuBLAS FFN over them (index_select and two GEMMs)");
  const auto weights = [](const ProblemSize& s) {
    return size_t(compact8(active_of(s))) * size_t(per_of(s) + 1) * size_t(model_of(s).d_model) * sizeof(__half);
  };
  v.workspace_bytes = [weights](const ProblemSize& s) { return weights(s) + compact_ffn_workspace(s); };
  v.launch = [](const Buffers& b, cudaStream_t st) {
    const Ffn f = ffn_of(b);
    if (zero_if_none_active(f, st)) return;
    const int ld = compact8(f.count);
    auto* w1c = static_cast<__half*>(b.workspace);
    __half* w2c = w1c + size_t(f.per) * ld * f.d_model;
    launch_compact_neurons(f.w1n, f.w2, f.idx, w1c, w2c, f.count, ld, f.per, f.d_model, st);
    compact_ffn(b, f, w1c, w2c, w2c + size_t(ld) * f.d_model, st);
  };
  return v;
}

// A bound, not a step: step 6 without its copy, on the same compact weights
// made once on the host. A router picks I per batch, so a real model would pay
// that copy every time; left out, it shows what cuBLAS's own kernels make of
// the smaller products, the most a gathering kernel can hope for where the FFN
// is bound by its flops (M = 512), as the read floor is where it is bound by
// its bytes (M = 16).
Variant compact_cublas() {
  Variant v = sparse_variant("compact_cublas",
                             "a bound: step 6 without its copy (W1[:, I] and W2[I, :] compacted before timing)");
  v.bound = true;
  v.workspace_bytes = compact_ffn_workspace;
  v.launch = [](const Buffers& b, cudaStream_t st) {
    const Ffn f = ffn_of(b);
    if (zero_if_none_active(f, st)) return;
    compact_ffn(b, f, f.w1c, f.w2c, static_cast<__half*>(b.workspace), st);
  };
  return v;
}

// The two products of steps 3-5, as planned for this size.
struct TwoProducts {
  GatherParams up, down;
  GatherPlan up_plan, down_plan;
  bool up_wgmma = false, down_wgmma = false;  // M > 64 on Hopper: the wgmma kernel (not for column gathers)
};

// `atomic_sum` (step 7): the mma.sync kernel's splits add into one fp32 sum a
// tile with atomics instead of slots added in order (gather_gemm.cuh); the
// wgmma and Stream-K kernels keep their slots.
template <Gather G>
TwoProducts two_products(const ProblemSize& s, bool split, bool atomic_sum = false) {
  const ffn::Model& md = model_of(s);
  const int count = active_of(s), per = ffn::up_columns_per_neuron(md), ld = ffn::compact_ld(count);
  TwoProducts t{};
  t.up.count = t.down.count = count;
  t.up.per = per;
  t.up.mul = G == Gather::neuron_rows ? per : 1;
  t.up.add = G == Gather::neuron_rows ? 1 : md.d_ff;
  t.up.ldb = G == Gather::neuron_rows ? md.d_model : per * md.d_ff;
  t.up.m = s.m;
  t.up.n = per * ld;
  t.up.k = md.d_model;
  t.up.ldc = ld;
  t.up.act = md.act;
  t.up.swiglu = md.swiglu;
  t.down.per = 1;
  t.down.mul = 1;
  t.down.ldb = md.d_model;
  t.down.m = s.m;
  t.down.n = md.d_model;
  t.down.k = ld;
  t.down.ldc = md.d_model;
  t.down_wgmma = use_wgmma(s.m);
  t.up_wgmma = t.down_wgmma && G != Gather::columns;
  // With the wgmma kernels, step 5 (split) runs a product with work enough on the
  // warp-specialised Stream-K kernel, a smaller one on step 4's kernel split along K.
  if constexpr (G != Gather::columns) {
    if (t.up_wgmma)
      t.up_plan = split && streamk_pays(s.m, t.up.n, t.up.k)
                      ? plan_streamk<G, Epilogue::activate>(s.m, t.up.n, t.up.k)
                      : plan_wgmma<G, Epilogue::activate>(s.m, t.up.n, t.up.k, split);
    else
      t.up_plan = plan_gathered<G, Epilogue::activate>(s.m, t.up.n, t.up.k, split);
  } else {
    t.up_plan = plan_gathered<G, Epilogue::activate>(s.m, t.up.n, t.up.k, split);
  }
  if (t.down_wgmma)
    t.down_plan = split && streamk_pays(s.m, t.down.n, t.down.k)
                      ? plan_streamk<Gather::rows, Epilogue::store>(s.m, t.down.n, t.down.k)
                      : plan_wgmma<Gather::rows, Epilogue::store>(s.m, t.down.n, t.down.k, split);
  else
    t.down_plan = plan_gathered<Gather::rows, Epilogue::store>(s.m, t.down.n, t.down.k, split);
  t.up.atomic_sum = t.up_plan.atomic_sum = atomic_sum && !t.up_wgmma;
  t.down.atomic_sum = t.down_plan.atomic_sum = atomic_sum && !t.down_wgmma;
  return t;
}

// Workspace: H (M x ld), then the up product's split slots, then the down product's.
template <Gather G>
size_t two_products_workspace(const ProblemSize& s, bool split, bool atomic_sum) {
  const TwoProducts t = two_products<G>(s, split, atomic_sum);
  const size_t h = (size_t(s.m) * size_t(t.up.ldc) * sizeof(__half) + 255) / 256 * 256;
  const size_t u = (gathered_workspace_bytes(t.up_plan) + 255) / 256 * 256;
  return h + u + gathered_workspace_bytes(t.down_plan);
}

// A plan's tiles, block and grid, as a trace's kernel config has them (one
// record per block).
KernelConfig config_of(const GatherPlan& q) {
  KernelConfig c;
  c.block_m = q.block_m;
  c.block_n = q.block_n;
  c.block_k = 64;
  c.threads = q.threads;
  c.stages = q.stages;
  c.tiles_m = q.tiles_m;
  c.tiles_n = q.tiles_n;
  c.grid_blocks = q.grid;
  c.work_units = q.units > 0 ? q.units : q.grid;
  c.blocks_per_sm = q.blocks_per_sm;
  c.smem_bytes = q.smem;
  return c;
}

KernelConfig two_products_config(const TwoProducts& t) {
  const GatherPlan& u = t.up_plan;
  const GatherPlan& d = t.down_plan;
  if (t.up.count == 0) {  // nothing active: one launch writes Y's zeros, reading nothing; no trace
    KernelConfig c = config_of(d);
    c.work_units = 0;
    return c;
  }
  KernelConfig c = config_of(u);
  c.split_k = std::max(u.splits, d.splits);
  c.tiles_m = u.tiles_m + d.tiles_m;
  c.tiles_n = std::max(u.tiles_n, d.tiles_n);
  c.grid_blocks = u.grid + d.grid;
  c.work_units = u.units + d.units;
  // H's columns run over the active neurons (per columns each), Y's reduction too.
  c.products = {ProductGrid{"H (up)", t.up.m, t.up.n, t.up.k, u.tiles_m, u.tiles_n, 0, "n", t.up.per},
                ProductGrid{"Y (down)", t.down.m, t.down.n, t.down.k, d.tiles_m, d.tiles_n, u.tiles_m, "k", 1}};
  return c;
}

template <Gather G>
Variant two_pass(const char* name, const char* what, bool split, bool atomic_sum = false) {
  Variant v = sparse_variant(name, what);
  v.config = [split, atomic_sum](const ProblemSize& s) {
    return two_products_config(two_products<G>(s, split, atomic_sum));
  };
  v.workspace_bytes = [split, atomic_sum](const ProblemSize& s) {
    return two_products_workspace<G>(s, split, atomic_sum);
  };
  v.launch = [split, atomic_sum](const Buffers& b, cudaStream_t st) {
    const Ffn f = ffn_of(b);
    TwoProducts t = two_products<G>(b.size, split, atomic_sum);
    auto* ws = static_cast<unsigned char*>(b.workspace);
    auto* h = reinterpret_cast<__half*>(ws);
    unsigned char* up_ws = ws + (size_t(f.m) * size_t(f.ld) * sizeof(__half) + 255) / 256 * 256;
    unsigned char* down_ws = up_ws + (gathered_workspace_bytes(t.up_plan) + 255) / 256 * 256;
    t.up.a = f.x;
    t.up.b = G == Gather::neuron_rows ? f.w1n : f.w1;
    t.up.idx = f.idx;
    t.up.c = h;
    t.up.trace = b.trace;
    t.down.a = h;
    t.down.b = f.w2;
    t.down.idx = f.idx;
    t.down.c = f.y;
    t.down.trace = b.trace;
    t.down.trace_first_unit = int(t.up_plan.units);
    t.down.trace_first_row = t.up_plan.tiles_m;
    // The down product may start while the up product drains: its W2 rows do not depend on H.
    t.down.a_from_previous = !t.down_wgmma && t.up_plan.grid > 0;
    if constexpr (G != Gather::columns) {
      if (t.up_plan.streamk)
        launch_streamk<G, Epilogue::activate>(t.up, t.up_plan, up_ws, st);
      else if (t.up_wgmma)
        launch_wgmma<G, Epilogue::activate>(t.up, t.up_plan, up_ws, st);
      else
        launch_gathered<G, Epilogue::activate>(t.up, t.up_plan, up_ws, st);
    } else {
      launch_gathered<G, Epilogue::activate>(t.up, t.up_plan, up_ws, st);
    }
    if (t.down_plan.streamk)
      launch_streamk<Gather::rows, Epilogue::store>(t.down, t.down_plan, down_ws, st);
    else if (t.down_wgmma)
      launch_wgmma<Gather::rows, Epilogue::store>(t.down, t.down_plan, down_ws, st);
    else
      launch_gathered<Gather::rows, Epilogue::store>(t.down, t.down_plan, down_ws, st);
  };
  v.model = [split](const ProblemSize& s, const KernelConfig&, const GpuInfo& gpu) {
    const TwoProducts t = two_products<G>(s, split);
    char buf[300];
    const auto line = [&](const GatherPlan& q) {
      const int64_t tiles = int64_t(q.tiles_m) * q.tiles_n, slots = int64_t(gpu.sm_count) * q.blocks_per_sm;
      char b2[140];
      if (q.streamk)
        std::snprintf(b2, sizeof b2, "%lld tiles of %dx%d, Stream-K: %lld blocks, %d tile%s shared along k",
                      static_cast<long long>(tiles), q.block_m, q.block_n, static_cast<long long>(q.grid),
                      q.stream_k.sk_tiles, q.stream_k.sk_tiles == 1 ? "" : "s");
      else
        std::snprintf(b2, sizeof b2, "%lld tiles of %dx%d x %d split%s = %lld blocks for %lld slots",
                      static_cast<long long>(tiles), q.block_m, q.block_n, q.splits, q.splits == 1 ? "" : "s",
                      static_cast<long long>(q.grid), static_cast<long long>(slots));
      return std::string(b2);
    };
    std::snprintf(buf, sizeof buf, "up: %s; down: %s", line(t.up_plan).c_str(), line(t.down_plan).c_str());
    return std::string(buf);
  };
  return v;
}

template <Gather G>
Variant fused(const char* name, const char* what) {
  Variant v = sparse_variant(name, what);
  const auto columns = [](const ProblemSize& s) { return per_of(s) * active_of(s); };
  v.config = [columns](const ProblemSize& s) {
    const GatherPlan q = plan_fused(s.m, columns(s));
    KernelConfig c = config_of(q);
    if (q.grid == 0) {  // nothing active: only the rounding kernel runs; no trace
      c.tiles_m = ceil_div(s.m, c.block_m);
      c.tiles_n = ceil_div(model_of(s).d_model, c.block_n);
      return c;
    }
    // One grid: the up side's tiles (H's columns), each going on to add into all of Y.
    c.products = {ProductGrid{"H columns (then Y)", s.m, columns(s), model_of(s).d_model, q.tiles_m, q.tiles_n, 0,
                              "n", per_of(s)}};
    return c;
  };
  v.workspace_bytes = [](const ProblemSize& s) { return size_t(s.m) * size_t(model_of(s).d_model) * sizeof(float); };
  v.prepare = [](const Buffers& b, cudaStream_t st) {  // the atomics add into a zeroed fp32 Y: part of the cost
    CUDA_CHECK(cudaMemsetAsync(b.workspace, 0, b.workspace_bytes, st));
  };
  v.launch = [](const Buffers& b, cudaStream_t st) {
    const Ffn f = ffn_of(b);
    GatherParams up{};
    up.a = f.x;
    up.b = G == Gather::neuron_rows ? f.w1n : f.w1;
    up.ldb = G == Gather::neuron_rows ? f.d_model : f.per * f.d_ff;
    up.idx = f.idx;
    up.count = f.count;
    up.per = f.per;
    up.mul = G == Gather::neuron_rows ? f.per : 1;
    up.add = G == Gather::neuron_rows ? 1 : f.d_ff;
    up.m = f.m;
    up.n = f.per * f.count;
    up.k = f.d_model;
    up.act = f.act;
    up.swiglu = f.swiglu;
    up.splits = 1;
    up.trace = b.trace;
    launch_fused<G>(up, FusedDown{f.w2, f.d_model, static_cast<float*>(b.workspace)}, f.y, st);
  };
  v.model = [columns](const ProblemSize& s, const KernelConfig& c, const GpuInfo& gpu) {
    char buf[200];
    std::snprintf(buf, sizeof buf, "%lld blocks (%d up-side columns each) for %d SMs; each adds into all %d columns of Y",
                  static_cast<long long>(c.grid_blocks), c.block_n, gpu.sm_count, model_of(s).d_model);
    (void)columns;
    return std::string(buf);
  };
  return v;
}

// Step 8 (M <= 16): both products in one launch of clusters, one grid-wide
// wait between them (one_launch.cuh).
OneLaunchPlan one_launch_plan(const ProblemSize& s) {
  return plan_one_launch(s.m, model_of(s).d_model, active_of(s), per_of(s));
}
Variant one_launch() {
  Variant v = sparse_variant("one_launch", "M <= 16: both products in one launch, clusters of 4 adding their partial "
                                           "sums on chip, one grid-wide wait for H");
  v.min_cc = 90;  // clusters, bulk copies
  v.skip = [](const ProblemSize& s) { return active_of(s) == 0 ? std::string() : one_launch_plan(s).why_not; };
  v.workspace_bytes = [](const ProblemSize& s) { return one_launch_workspace_bytes(active_of(s)); };
  v.launch = [](const Buffers& b, cudaStream_t st) {
    const Ffn f = ffn_of(b);
    if (zero_if_none_active(f, st)) return;
    const OneLaunchPlan q = one_launch_plan(b.size);
    OneLaunchParams p = q.p;
    p.x = f.x;
    p.w1n = f.w1n;
    p.w2 = f.w2;
    p.idx = f.idx;
    p.y = f.y;
    p.act = f.act;
    p.swiglu = f.swiglu;
    launch_one_launch(p, q, b.workspace, st);
  };
  v.model = [](const ProblemSize& s, const KernelConfig&, const GpuInfo&) {
    const OneLaunchPlan q = one_launch_plan(s);
    char buf[300];
    std::snprintf(buf, sizeof buf,
                  "%d clusters of 4 blocks: up %d neurons a cluster (d_model split 4 ways), down %d blocks of %d "
                  "columns of Y (the neurons split 4 ways); %d stages of %u KiB",
                  q.clusters, q.p.nu, q.p.col_blocks, q.p.wd, q.p.slots, q.p.slot_bytes / 1024);
    return std::string(buf);
  };
  return v;
}

std::vector<Variant> variants() {
  return {
      masked_dense(),
      fused<Gather::columns>("fused", "the post's kernel: gather W1's columns, act on chip, W2's rows added into Y "
                                      "with fp32 atomics"),
      two_pass<Gather::columns>("gathered", "two products: H = act(X W1[:, I]) compact, then H W2[I, :]; no atomics",
                                false),
      two_pass<Gather::neuron_rows>("neuron_major", "the two products, W1 stored neuron-major: a neuron is one run",
                                    false),
      fused<Gather::neuron_rows>("fused_neuron_major", "the post's kernel on neuron-major W1"),
      two_pass<Gather::neuron_rows>("split_k", "neuron_major with split-K where a product has too few tiles "
                                               "(in order: the same bits every run)",
                                    true),
      compacted(),
      two_pass<Gather::neuron_rows>("split_k_atomic", "split_k with a tile's splits added into one sum by fp32 "
                                                      "atomics (M <= 64 on Hopper): the last bit can change",
                                    true, true),
      one_launch(),
      compact_cublas(),
  };
}

// Under the report: each variant's speed-up beside the ideal 1 / (1 - s).
std::string conclusion(const RunSummary& run) {
  std::string out = copy_bandwidth_lines(run.results);
  const int count = active_of(run.size);
  const int d_ff = model_of(run.size).d_ff;
  const double active = double(count) / d_ff;
  char buf[300];
  if (count == 0) {
    std::snprintf(buf, sizeof buf, "nothing active (s = 1): Y is zero; the sparse variants read no weights\n");
    return out + buf;
  }
  std::snprintf(buf, sizeof buf, "ideal speed-up 1 / (1 - s) = %.2fx (%d of %d neurons active)\n", 1.0 / active, count,
                d_ff);
  out += buf;
  for (const VariantResult& v : run.results.variants) {
    if (v.reference || v.skipped || v.vs_cublas <= 0) continue;
    std::snprintf(buf, sizeof buf, "  %-20s %5.2fx the dense FFN, %3.0f%% of the ideal%s\n", v.name.c_str(),
                  v.vs_cublas, 100.0 * v.vs_cublas * active,
                  v.bound ? " (a bound: cuBLAS on weights compacted beforehand)" : "");
    out += buf;
  }
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  Lesson lesson;
  lesson.info = catalog_entry("lesson08_sparse_ffn");
  lesson.problem = ffn_problem();
  lesson.variants = variants();
  lesson.copy_bytes = [](const ProblemSize& s) {  // the active weights
    return ffn_bytes(s, active_of(s)) - 4.0 * s.m * double(model_of(s).d_model);
  };
  lesson.read_floor = true;
  lesson.repeat_check = true;
  lesson.default_m = 16;
  lesson.conclusion = conclusion;
  return run_lesson(lesson, argc, argv);
}
