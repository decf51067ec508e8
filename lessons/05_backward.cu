// Lesson 05 - Backward: the backward pass of a layer Z = act(X W), with the
// transposes as layouts, both products in one launch, and act' fused.
//
// The layer: X (M x K, tokens by features), W (K x N), P = X W, Z = act(P).
// The backward gets dZ and what the forward saved, and computes
//   dP = dZ * act'(P)   dX = dP Wᵀ   dW = Xᵀ dP   db = column sums of dP.
// What must be saved: the "Matmul forward and backward" notebook reads the
// derivative off Z (where(Z > 0, dZ, 0)), which works for ReLU only. GELU and
// SiLU need P (or a recomputation); ReLU needs one bit per element (P > 0).
// This lesson saves P, and for ReLU also the bitmask (relu_mask reads it).
//
// What is new: the two products read an operand along its columns. dX = dP Wᵀ
// reads W row by row as if it were Wᵀ ("NT"); dW = Xᵀ dP reads X column by
// column ("TN"). No transposed copy is ever made:
//   step 1  notebook      the notebook's way: act' as its own pass, then the
//                         forward kernel (lesson 02's mma.sync tiles) on
//                         transposed views: a slice is copied as it lies in
//                         memory, and ldmatrix or ldmatrix.trans hands the
//                         tensor cores rows or columns
//   step 2  tma_layouts   lesson 04's TMA + wgmma kernel with each operand
//                         described in its own major: a TMA box of Xᵀ is a box
//                         of X with its lines along m, and the wgmma descriptor
//                         says so. Two launches, one per product
//   step 3  one_launch    both products in one persistent launch: the tiles of
//                         dX, then those of dW, walked as one list, so the last
//                         wave of dX is filled with dW's first tiles
//   relu_mask             step 3 reading what a ReLU layer need only save:
//                         the act' pass takes a bit per element instead of
//                         P's two bytes (6 bytes an element become 4.125)
//   step 4  fused         no dP pass: each product loads dZ and P where it
//                         would load dP, and forms dP = dZ * act'(P) in the
//                         registers the tensor cores read A from (an "RS"
//                         wgmma). dW is computed as dWᵀ = dPᵀ X so that dP is
//                         A there too, and stored transposed (stmatrix.trans);
//                         db comes from the dWᵀ tiles that already hold dP
//   step 5  dz_epilogue   (--part chain, below) act' where dZ is made: the
//                         product dZ = dY Vᵀ reads P in its epilogue and
//                         stores dP (and db's partials); no dZ, no act' pass
//   step 6  pass_inside   step 3's pass inside the products' launch, in the
//                         producer warpgroup's three idle warps, chunk by
//                         chunk in the order the tiles read dP
//   cublaslt              NVIDIA's cuBLASLt for both products, db fused into
//                         the dW product (CUBLASLT_EPILOGUE_BGRADA); with
//                         --part chain and GELU its DGELU(_BGRAD) epilogue
//   bound  products_only  cublaslt without its act' pass, on a dP made before
//                         timing: the most that fusing act' (and db) can give
//                         while the products run at NVIDIA's speed
// In steps 1-3 db is fused into the act' pass (it reads dP anyway); the
// reference, the cuBLAS sequence a framework runs, sums dP in a pass of its own.
//
// Why it should be faster: step 1 walks a transposed operand with lesson 02's
// synchronous loads; step 2 copies any major with TMA and feeds wgmma at full
// rate; step 3 saves a partly empty wave between the products; step 4 saves
// the dP pass but pays inside the products (A as two tensors, act' recomputed
// by every tile); step 5 applies act' once, in an epilogue; step 6 hides step
// 3's pass in idle warps while the tensor cores multiply.
// What to look for: each row against "cublas" (the sequence) and cublaslt;
// products_only near 1.0x means the products are the whole time, and only
// faster products can gain. --part dx or dw: one product alone, given dP,
// against cuBLAS's GEMM in the same layout (is a transposed operand read at
// full speed?). --part train: the forward first (bias, activation and P's
// save in its epilogue) against a framework's Linear + activation + backward.
// --part chain: dZ = dY Vᵀ first (V: the next layer's N x K weights), step 5
// applying act' in that product's epilogue: does it pay for ReLU, for GELU?
//
// Preconditions: TMA needs K % 8 == 0 and N % 8 == 0 (other shapes run step
// 1's kernel, and the report says so); any M >= 1 (at M = 1 dW is an outer
// product, still computed tile by tile). wgmma needs sm_90a.
//
// Run:  build/bin/lesson05_backward                               (4096^3, relu)
//       build/bin/lesson05_backward --act gelu --m 8192 --n 8192 --k 8192
//       build/bin/lesson05_backward --act silu --m 4096 --k 4096 --n 14336   (Llama-3-8B up projection)
//       build/bin/lesson05_backward --m 127 --n 257 --k 129                  (tails; N % 8 != 0: step 1's kernel)
//       build/bin/lesson05_backward --part dw                                (dW alone vs cuBLAS's TN GEMM)
//       build/bin/lesson05_backward --part train --act gelu                  (forward and backward together)
//       build/bin/lesson05_backward --part chain --act relu                  (from an MLP's output: act' in dZ's epilogue)
// Measured: docs/lessons/05_backward.md.

#include <cublasLt.h>

#include <algorithm>
#include <cmath>

#include "03_grouped/activation_pass.cuh"
#include "05_backward/act_grad.cuh"
#include "05_backward/backward.cuh"
#include "05_backward/cublaslt_backward.cuh"
#include "05_backward/layout_gemm.cuh"
#include "05_backward/strided_gemm.cuh"
#include "common/check.cuh"
#include "common/cublaslt.cuh"
#include "harness/catalog.hpp"
#include "harness/fp64.hpp"
#include "harness/harness.cuh"

namespace {

using namespace wb;
using namespace wb::backward;

Activation activation_of(const ProblemSize& s) {
  const std::string& a = s.params.text("act");
  if (a == "relu") return Activation::relu;
  if (a == "gelu") return Activation::gelu;
  return Activation::silu;
}
bool has_bias(const ProblemSize& s) { return s.params.text("bias") == "yes"; }

// --part: the whole backward, or one product alone given dP, to time each
// product's kernel against cuBLAS doing the same-layout GEMM; or (train) a
// training step's forward and backward together.
enum class Part { all, dx, dw, train, chain };
Part part_of(const ProblemSize& s) {
  const std::string& p = s.params.text("part");
  return p == "dx" ? Part::dx : p == "dw" ? Part::dw : p == "train" ? Part::train : p == "chain" ? Part::chain : Part::all;
}
bool is_train(const ProblemSize& s) { return part_of(s) == Part::train; }
bool is_chain(const ProblemSize& s) { return part_of(s) == Part::chain; }
bool whole_backward(const ProblemSize& s) { return part_of(s) == Part::all || is_train(s) || is_chain(s); }

// ------------------------------------------------------------ workspace
// dP (M x N fp16), then db's partial rows (fp32), then (--part train) the P
// the forward saves (M x N fp16), or (--part chain) dZ (M x N fp16) and step
// 5's 16-row partials of db (fp32), then step 6's counters (zeroed once by
// the harness; each launch leaves them zero), then cuBLASLt's workspace. The
// partial rows are as many as step 3's pass (64 rows each) or step 6's (16)
// need.
size_t align256(size_t b) { return (b + 255) / 256 * 256; }
size_t dp_bytes(const ProblemSize& s) { return align256(size_t(s.m) * size_t(s.n) * sizeof(__half)); }
size_t partials_bytes(const ProblemSize& s) {  // step 3's pass's rows of db partials, or step 6's
  return align256(size_t(std::max(db_partial_rows(s.m), pass_partial_rows(s.m))) * size_t(s.n) * sizeof(float));
}
size_t saved_p_bytes(const ProblemSize& s) { return is_train(s) ? dp_bytes(s) : 0; }
size_t chain_dz_bytes(const ProblemSize& s) { return is_chain(s) ? dp_bytes(s) : 0; }
size_t epi_partials_bytes(const ProblemSize& s) {
  return is_chain(s) ? align256(size_t(epilogue_db_partial_rows(s.m)) * size_t(s.n) * sizeof(float)) : 0;
}
size_t pass_counter_bytes(const ProblemSize& s) { return align256(size_t(pass_counter_words(s.m, s.n)) * 4); }
size_t scratch_bytes(const ProblemSize& s) {
  return dp_bytes(s) + partials_bytes(s) + saved_p_bytes(s) + chain_dz_bytes(s) + epi_partials_bytes(s) +
         pass_counter_bytes(s);
}
size_t scratch_and_lt_bytes(const ProblemSize& s) { return scratch_bytes(s) + kCublasLtWorkspaceBytes; }

// With --part dx the inputs are dP and W and the output dX; with --part dw,
// X and dP, and dW. dP then comes in as an input, and no act' is involved.
BackwardArgs part_args(const Buffers& b, Part part) {
  const ProblemSize& s = b.size;
  BackwardArgs a{};
  a.m = s.m;
  a.n = s.n;
  a.k = s.k;
  a.act = Activation::none;
  a.trace = b.trace;
  if (part == Part::dx) {
    a.dp = static_cast<__half*>(const_cast<void*>(b.inputs[0]));
    a.w = static_cast<const __half*>(b.inputs[1]);
    a.dx = static_cast<__half*>(b.outputs[0]);
  } else {
    a.x = static_cast<const __half*>(b.inputs[0]);
    a.dp = static_cast<__half*>(const_cast<void*>(b.inputs[1]));
    a.dw = static_cast<__half*>(b.outputs[0]);
  }
  return a;
}

// --part train: inputs X, W, dZ (and b); outputs Z, dX, dW (and db). P is
// the forward's to write, into the workspace; ReLU's backward reads Z instead.
__half* saved_p(const Buffers& b) {
  return reinterpret_cast<__half*>(static_cast<unsigned char*>(b.workspace) + dp_bytes(b.size) +
                                   partials_bytes(b.size));
}

BackwardArgs backward_args(const Buffers& b) {
  const ProblemSize& s = b.size;
  if (const Part part = part_of(s); !whole_backward(s)) return part_args(b, part);
  if (b.workspace == nullptr || b.workspace_bytes < scratch_bytes(s))
    throw CudaError("lesson 05: the launch needs a workspace for dP and db");
  auto* ws = static_cast<unsigned char*>(b.workspace);
  BackwardArgs a{};
  a.x = static_cast<const __half*>(b.inputs[0]);
  a.w = static_cast<const __half*>(b.inputs[1]);
  if (is_train(s)) {
    a.dz = static_cast<const __half*>(b.inputs[2]);
    a.bias = has_bias(s) ? static_cast<const __half*>(b.inputs[3]) : nullptr;
    a.z = static_cast<__half*>(b.outputs[0]);
    a.dx = static_cast<__half*>(b.outputs[1]);
    a.dw = static_cast<__half*>(b.outputs[2]);
    a.db = has_bias(s) ? static_cast<__half*>(b.outputs[3]) : nullptr;
    a.p = activation_of(s) == Activation::relu ? a.z : saved_p(b);
  } else {
    a.p = static_cast<const __half*>(b.inputs[2]);
    a.dx = static_cast<__half*>(b.outputs[0]);
    a.dw = static_cast<__half*>(b.outputs[1]);
    a.db = has_bias(s) ? static_cast<__half*>(b.outputs[2]) : nullptr;
    if (is_chain(s)) {  // dZ is the first product's to write, into the workspace
      a.dy = static_cast<const __half*>(b.inputs[3]);
      a.v = static_cast<const __half*>(b.inputs[4]);
      unsigned char* after = ws + dp_bytes(s) + partials_bytes(s) + saved_p_bytes(s);
      a.dz = reinterpret_cast<const __half*>(after);
      a.epi_db_partials = reinterpret_cast<float*>(after + chain_dz_bytes(s));
    } else {
      a.dz = static_cast<const __half*>(b.inputs[3]);
    }
  }
  a.m = s.m;
  a.n = s.n;
  a.k = s.k;
  a.act = activation_of(s);
  a.dp = reinterpret_cast<__half*>(ws);
  a.db_partials = reinterpret_cast<float*>(ws + dp_bytes(s));
  a.pass_counters = reinterpret_cast<uint32_t*>(ws + scratch_bytes(s) - pass_counter_bytes(s));
  a.trace = b.trace;
  return a;
}

bool tma_ok(const ProblemSize& s) { return hopper::tma_row_stride_ok(s.n) && hopper::tma_row_stride_ok(s.k); }

std::string fallback_note(const ProblemSize& s) {
  if (tma_ok(s)) return {};
  std::string why;
  if (!hopper::tma_row_stride_ok(s.k)) why += "K = " + std::to_string(s.k);
  if (!hopper::tma_row_stride_ok(s.n)) why += std::string(why.empty() ? "" : ", ") + "N = " + std::to_string(s.n);
  return "runs step 1's kernel: " + why + " is not a multiple of 8, so a row stride is not a multiple of 16 bytes as TMA requires";
}

// The two products as step 1 computes them (and every step's fallback); only
// those whose output is there (--part).
void strided_products(const BackwardArgs& a, cudaStream_t st) {
  // dX (M x K) = dP (M x N) · Wᵀ, W stored (K x N): B transposed.
  if (a.dx)
    launch_strided_gemm<Stored::as_is, Stored::transposed>(StridedGemm{a.dp, a.w, a.dx, a.m, a.k, a.n, a.trace}, st);
  // dW (K x N) = Xᵀ · dP, X stored (M x K): A transposed. Its trace records
  // follow dX's, its tile rows below dX's.
  if (a.dw)
    launch_strided_gemm<Stored::transposed, Stored::as_is>(
        StridedGemm{a.x, a.dp, a.dw, a.k, a.n, a.m, a.trace, a.dx ? strided_gemm_blocks(a.m, a.k) : 0,
                    a.dx ? ceil_div(a.m, kStridedBM) : 0},
        st);
}

ProductArgs dx_product(const BackwardArgs& a) { return ProductArgs{a.dp, a.w, a.dx, a.m, a.k, a.n}; }
ProductArgs dw_product(const BackwardArgs& a) { return ProductArgs{a.x, a.dp, a.dw, a.k, a.n, a.m}; }

GradPass pass_for(const BackwardArgs& a) { return a.db ? GradPass::grad_and_sum : GradPass::grad; }

// Step 4's products: A is dZ (P beside it), and the second one is dWᵀ = dPᵀ X
// (N x K), written transposed into dW, so that dP is A in both.
void fused_products(const BackwardArgs& a, cudaStream_t st) {
  Products ps = {};
  ps.db = a.db;
  const auto go = [&](auto act) {
    constexpr Activation kAct = decltype(act)::value;
    describe_fused_product<LayoutNT>(ps, 0, ProductArgs{a.dz, a.w, a.dx, a.m, a.k, a.n}, a.p);
    describe_fused_product<LayoutTNt>(ps, 1, ProductArgs{a.dz, a.x, a.dw, a.n, a.k, a.m}, a.p);
    launch_layout_gemm<LayoutNT, LayoutTNt, kAct>(ps, a.trace, st);
  };
  switch (a.act) {
    case Activation::relu: go(std::integral_constant<Activation, Activation::relu>{}); break;
    case Activation::gelu: go(std::integral_constant<Activation, Activation::gelu>{}); break;
    default: go(std::integral_constant<Activation, Activation::silu>{}); break;
  }
}

// ------------------------------------------------------------ configs
// The products as the trace stacks them: dX's tile rows, then dW's (or step
// 4's dWᵀ's); with --part, the one product alone.
void stack_products(KernelConfig& c, const ProblemSize& s, bool dw_transposed = false) {
  const Part part = part_of(s);
  c.products.clear();
  int rows = 0;
  const auto add = [&](const char* name, int m, int n, int k) {
    c.products.push_back(ProductGrid{name, m, n, k, ceil_div(m, c.block_m), ceil_div(n, c.block_n), rows});
    rows += c.products.back().tiles_m;
  };
  if (part != Part::dw) add("dX", s.m, s.k, s.n);  // train: the forward is not traced
  if (part != Part::dx) {
    if (dw_transposed) {
      add("dW^T", s.n, s.k, s.m);
    } else {
      add("dW", s.k, s.n, s.m);
    }
  }
  c.tiles_m = rows;
  c.tiles_n = 0;
  c.work_units = 0;
  for (const ProductGrid& g : c.products) {
    c.tiles_n = std::max(c.tiles_n, g.tiles_n);
    c.work_units += int64_t(g.tiles_m) * g.tiles_n;
  }
}

KernelConfig strided_config(const ProblemSize& s) {
  KernelConfig c;
  c.block_m = kStridedBM;
  c.block_n = kStridedBN;
  c.block_k = kStridedBK;
  c.threads = kStridedThreads;
  c.stages = 2;
  stack_products(c, s);
  c.grid_blocks = c.work_units;  // one block per tile
  c.blocks_per_sm = blocks_per_sm(reinterpret_cast<const void*>(&strided_gemm_kernel<Stored::as_is, Stored::transposed>),
                                  kStridedThreads, 0);
  return c;
}

enum class Launches { two, one, fused };

KernelConfig layout_config(const ProblemSize& s, Launches launches) {
  if (!tma_ok(s)) return strided_config(s);
  const bool one_launch = launches != Launches::two, fused = launches == Launches::fused;
  KernelConfig c;
  c.block_m = kBM;
  c.block_n = kBN;
  c.block_k = kBK;
  c.threads = hopper::kWsThreads;
  c.stages = fused ? kFusedStages : kStages;
  c.order = tile_order_name(TileOrder::grouped);
  c.group_m = hopper::kWsGroupM;
  c.persistent = true;
  stack_products(c, s, fused);
  const int64_t first_tiles = int64_t(c.products[0].tiles_m) * c.products[0].tiles_n;
  c.smem_bytes = fused ? layout_gemm_smem_bytes<Activation::relu>() : layout_gemm_smem_bytes();
  const int resident = fused        ? layout_gemm_resident<LayoutNT, LayoutTNt, Activation::relu>()
                       : one_launch ? layout_gemm_resident<LayoutNT, LayoutTN>()
                                    : layout_gemm_resident<LayoutNT, LayoutNT>();
  c.grid_blocks = int(even_wave_blocks(one_launch ? c.work_units : first_tiles, resident));  // two launches: the first's
  c.blocks_per_sm = std::max(1, resident / sm_count());
  return c;
}

// ------------------------------------------------------------ the forward
// --part train: each step's forward runs its own step's kernel, with the bias,
// the activation and P's save fused into its epilogue.
ForwardEpilogue forward_epilogue(const BackwardArgs& a) {
  return ForwardEpilogue{a.act, a.bias, a.p == a.z ? nullptr : const_cast<__half*>(a.p)};
}

// Step 1: the notebook's forward kernel, act (and bias) fused as its Triton kernel fuses ReLU.
void strided_forward(const BackwardArgs& a, cudaStream_t st) {
  launch_strided_gemm<Stored::as_is, Stored::as_is>(
      StridedGemm{a.x, a.w, a.z, a.m, a.n, a.k, nullptr, 0, 0, forward_epilogue(a)}, st);
}

// Steps 2-4: lesson 04's TMA + wgmma kernel with the same epilogue.
void layout_forward(const BackwardArgs& a, cudaStream_t st) {
  if (!tma_ok(ProblemSize{a.m, a.n, a.k, {}})) return strided_forward(a, st);
  launch_layout_forward(a.x, a.w, a.z, a.m, a.n, a.k, forward_epilogue(a), st);
}

// --part chain: the product that makes dZ = dY Vᵀ (M x N, reduction K), an
// NT product as dX's: step 1's kernel, or lesson 04's for steps 2-4.
void strided_upstream(const BackwardArgs& a, cudaStream_t st) {
  launch_strided_gemm<Stored::as_is, Stored::transposed>(
      StridedGemm{a.dy, a.v, const_cast<__half*>(a.dz), a.m, a.n, a.k, nullptr}, st);
}
void layout_upstream(const BackwardArgs& a, cudaStream_t st) {
  if (!tma_ok(ProblemSize{a.m, a.n, a.k, {}})) return strided_upstream(a, st);
  launch_layout_product<LayoutNT>(ProductArgs{a.dy, a.v, const_cast<__half*>(a.dz), a.m, a.n, a.k}, nullptr, st);
}

using Step = std::function<void(const BackwardArgs&, cudaStream_t)>;

// ------------------------------------------------------------ variants
// A step: with --part train, `forward` first; with --part chain, `upstream`
// (dZ) first; then the backward `run`.
Variant backward_variant(const char* name, const char* what, int min_cc, Step run, Step forward = layout_forward,
                         Step upstream = layout_upstream) {
  Variant v;
  v.name = name;
  v.what = what;
  v.min_cc = min_cc;
  v.launch = [run, forward, upstream](const Buffers& b, cudaStream_t st) {
    const BackwardArgs a = backward_args(b);
    if (a.z != nullptr) forward(a, st);
    if (a.dy != nullptr) upstream(a, st);
    run(a, st);
  };
  v.workspace_bytes = scratch_bytes;
  return v;
}

// The act' pass (and db), when the backward runs in full (not with --part).
void act_pass(const BackwardArgs& a, cudaStream_t st) {
  if (a.dz) launch_act_grad(a, pass_for(a), st);
}

// dX's and dW's tiles in one launch, given dP (step 1's kernels where TMA cannot describe the shape).
void one_launch_products(const BackwardArgs& a, cudaStream_t st) {
  if (!tma_ok(ProblemSize{a.m, a.n, a.k, {}})) return strided_products(a, st);
  Products ps = {};
  describe_product<LayoutNT>(ps, 0, dx_product(a));
  describe_product<LayoutTN>(ps, 1, dw_product(a));
  launch_layout_gemm<LayoutNT, LayoutTN>(ps, a.trace, st);
}

// Step 3: the act' pass (and db), then dX's and dW's tiles in one launch.
void act_pass_then_one_launch(const BackwardArgs& a, cudaStream_t st) {
  launch_act_grad(a, pass_for(a), st);
  one_launch_products(a, st);
}

std::string both_products_only(const ProblemSize& s) {
  return whole_backward(s) ? "" : "computes both products in one launch (only with --part all, train or chain)";
}

// ReLU's derivative is its sign: the forward may save a bit per element instead
// of P. The inputs then carry that bitmask beside P (built from P on the host).
bool has_relu_mask(const ProblemSize& s) { return part_of(s) == Part::all && activation_of(s) == Activation::relu; }
constexpr size_t kMaskInput = 4;

// products_only's input: dP = dZ * act'(P) made on the host before timing,
// after the mask where there is one (--part all only). Without the mask it
// takes the mask's index: read inputs[kMaskInput] only where has_relu_mask.
bool has_given_dp(const ProblemSize& s) { return part_of(s) == Part::all; }
size_t given_dp_input(const ProblemSize& s) { return has_relu_mask(s) ? kMaskInput + 1 : kMaskInput; }

std::string relu_only(const ProblemSize& s) {
  if (is_train(s))
    return "a training step's forward writes Z, whose sign is ReLU's derivative: the backward reads Z, not a bitmask";
  if (part_of(s) != Part::all) return "computes both products in one launch, from the saved bitmask (only with --part all)";
  return has_relu_mask(s) ? "" : "GELU and SiLU need P itself: their derivative is not a function of P's sign";
}

// Step 5 (--part chain): dP straight from the product that makes dZ, act' (and
// db's partial sums) in its epilogue; then step 3's one launch.
void chain_epilogue_then_one_launch(const BackwardArgs& a, cudaStream_t st) {
  if (!tma_ok(ProblemSize{a.m, a.n, a.k, {}})) {  // step 1's kernels, as every step's fallback
    strided_upstream(a, st);
    return act_pass_then_one_launch(a, st);
  }
  launch_dgrad_product(a.dy, a.v, a.p, a.dp, a.db ? a.epi_db_partials : nullptr, a.m, a.n, a.k, a.act, st);
  if (a.db) launch_db_reduce(a.epi_db_partials, a.db, epilogue_db_partial_rows(a.m), a.n, st);
  one_launch_products(a, st);
}

std::string chain_only(const ProblemSize& s) {
  return is_chain(s) ? "" : "puts act' in the epilogue of the product that makes dZ (only with --part chain)";
}

// What the backward must move at least: X, W, dZ and what the forward saved (P,
// or ReLU's bitmask) read once; dX, dW and db written once. With --part, the
// product's own operands.
// With --part train, the forward's too: X, W (and b) read, Z written, and P
// written for GELU and SiLU (ReLU's backward reads Z back instead).
double backward_bytes(const ProblemSize& s, bool relu_mask) {
  const double mk = double(s.m) * s.k, kn = double(s.k) * s.n, mn = double(s.m) * s.n;
  if (part_of(s) == Part::dx) return 2.0 * (mn + kn + mk);
  if (part_of(s) == Part::dw) return 2.0 * (mk + mn + kn);
  const double bias = has_bias(s) ? 2.0 * s.n : 0.0;
  const double saved = relu_mask ? 4.0 * double(s.m) * relu_mask_words(s.n) : 2.0 * mn;
  const double backward = 2.0 * (mk + kn + mn) + saved + 2.0 * (mk + kn) + bias;
  if (is_chain(s)) return backward - 2.0 * mn + 2.0 * (mk + kn);  // dY (M x K) and V (N x K) read instead of dZ
  if (!is_train(s)) return backward;
  const double forward = 2.0 * (mk + kn + mn) + (activation_of(s) == Activation::relu ? 0.0 : 2.0 * mn) + bias;
  return forward + backward;
}

// --part train by cuBLASLt: the bias, and the activation where the library has
// it, in the epilogue: RELU(_BIAS) writes Z alone (ReLU's backward reads Z);
// GELU_AUX(_BIAS) writes Z and P (its "aux"; N a multiple of 8); SiLU has no
// epilogue (nor GELU at other N), so P, then the activation as its own pass.
void cublaslt_fused_forward(const BackwardArgs& a, void* lt_ws, cudaStream_t st) {
  const bool bias = a.bias != nullptr;
  switch (a.act) {
    case Activation::relu:
      return cublaslt_forward(bias ? CUBLASLT_EPILOGUE_RELU_BIAS : CUBLASLT_EPILOGUE_RELU, a, a.z, nullptr, lt_ws, st);
    case Activation::gelu:  // its aux (P) needs a leading dimension that is a multiple of 8
      if (a.n % 8 == 0)
        return cublaslt_forward(bias ? CUBLASLT_EPILOGUE_GELU_AUX_BIAS : CUBLASLT_EPILOGUE_GELU_AUX, a, a.z,
                                const_cast<__half*>(a.p), lt_ws, st);
      [[fallthrough]];
    default:
      cublaslt_forward(bias ? CUBLASLT_EPILOGUE_BIAS : CUBLASLT_EPILOGUE_DEFAULT, a, const_cast<__half*>(a.p),
                       nullptr, lt_ws, st);
      launch_activation_pass(a.p, a.z, int64_t(a.m) * a.n, a.act, st);
  }
}

std::vector<Variant> variants() {
  std::vector<Variant> out;
  {
    Variant v = backward_variant(
        "notebook",
        "act' (and db) as its own pass, then the forward's mma.sync kernel on transposed views (ldmatrix.trans)", 80,
        [](const BackwardArgs& a, cudaStream_t st) {
          act_pass(a, st);
          strided_products(a, st);
        },
        strided_forward, strided_upstream);
    v.config = strided_config;
    out.push_back(v);
  }
  {
    Variant v = backward_variant(
        "tma_layouts",
        "act' (and db) pass, then lesson 04's TMA + wgmma kernel for dP·Wᵀ (K-major B) and Xᵀ·dP (M-major A): two launches",
        90, [](const BackwardArgs& a, cudaStream_t st) {
          act_pass(a, st);
          if (!tma_ok(ProblemSize{a.m, a.n, a.k, {}})) return strided_products(a, st);
          Products dx = {}, dw = {};
          if (a.dx) describe_product<LayoutNT>(dx, 0, dx_product(a));
          if (a.dw) describe_product<LayoutTN>(dw, 0, dw_product(a));
          // dW's trace records follow dX's, its tile rows below dX's.
          dw.trace_first_unit = dx.units[0];
          dw.trace_first_row = dx.tiles_m[0];
          if (a.dx) launch_layout_gemm<LayoutNT, LayoutNT>(dx, a.trace, st);
          if (a.dw) launch_layout_gemm<LayoutTN, LayoutTN>(dw, a.trace, st);
        });
    v.config = [](const ProblemSize& s) { return layout_config(s, Launches::two); };
    v.note = fallback_note;
    out.push_back(v);
  }
  {
    Variant v = backward_variant(
        "one_launch", "act' (and db) pass, then dX and dW tiles in one persistent TMA + wgmma launch", 90,
        act_pass_then_one_launch);
    v.config = [](const ProblemSize& s) { return layout_config(s, Launches::one); };
    v.note = fallback_note;
    v.skip = both_products_only;
    out.push_back(v);
  }
  {
    Variant v = backward_variant(
        "relu_mask", "step 3 with what a ReLU layer's forward need only save: act' reads a bit per element, not P",
        90, act_pass_then_one_launch);
    v.launch = [](const Buffers& b, cudaStream_t st) {
      Buffers with_mask = b;
      with_mask.inputs[2] = nullptr;  // P is not read: the bitmask stands in for it
      BackwardArgs a = backward_args(with_mask);
      a.relu_mask = static_cast<const uint32_t*>(b.inputs[kMaskInput]);
      act_pass_then_one_launch(a, st);
    };
    v.config = [](const ProblemSize& s) { return layout_config(s, Launches::one); };
    v.bytes = [](const ProblemSize& s) { return backward_bytes(s, true); };
    v.bytes_what = "P's 2 bytes an element replaced by the bitmask's bit";
    v.note = fallback_note;
    v.skip = relu_only;
    out.push_back(v);
  }
  {
    Variant v = backward_variant(
        "fused", "no dP pass: dZ and P loaded, dP formed in the registers an RS wgmma reads (dW as dWᵀ = dPᵀ X), db from the dWᵀ tiles; one launch", 90,
        [](const BackwardArgs& a, cudaStream_t st) {
          if (!tma_ok(ProblemSize{a.m, a.n, a.k, {}})) {
            launch_act_grad(a, pass_for(a), st);
            return strided_products(a, st);
          }
          fused_products(a, st);
        });
    v.config = [](const ProblemSize& s) { return layout_config(s, Launches::fused); };
    v.note = fallback_note;
    v.skip = both_products_only;
    out.push_back(v);
  }
  {
    Variant v = backward_variant(
        "dz_epilogue",
        "--part chain: act' in the epilogue of the product that makes dZ (dY·Vᵀ): it reads P where its "
        "accumulators lie and writes dP (and db's partial sums), no dZ and no act' pass; then step 3's one launch",
        90, chain_epilogue_then_one_launch, layout_forward, [](const BackwardArgs&, cudaStream_t) {});
    v.config = [](const ProblemSize& s) { return layout_config(s, Launches::one); };
    v.note = fallback_note;
    v.skip = chain_only;
    out.push_back(v);
  }
  {
    Variant v = backward_variant(
        "pass_inside",
        "step 3 with the act' pass (and db) inside the products' launch: the producer warpgroup's three spare warps "
        "form dP a chunk ahead of the tiles that read it",
        90, [](const BackwardArgs& a, cudaStream_t st) {
          if (!tma_ok(ProblemSize{a.m, a.n, a.k, {}})) return act_pass_then_one_launch(a, st);
          PassInsideArgs g{a.x, a.w, a.p, a.dz, a.dp, a.dx, a.dw, a.db, a.db_partials, a.pass_counters, a.m, a.n, a.k};
          launch_pass_inside(g, a.act, a.trace, st);
        });
    v.config = [](const ProblemSize& s) {
      KernelConfig c = layout_config(s, Launches::one);
      if (tma_ok(s)) c.group_m = PassInsideArgs{}.group;  // the pass's order: groups of 8 bands
      return c;
    };
    v.note = fallback_note;
    v.skip = both_products_only;
    out.push_back(v);
  }
  {
    Variant v = backward_variant("cublaslt",
                                 "act' pass, then cuBLASLt for dX and dW, db fused into dW's product (epilogue BGRADA); "
                                 "train: the forward with cuBLASLt's bias and RELU or GELU_AUX epilogue; chain: dZ by "
                                 "cuBLASLt, for GELU with its DGELU(_BGRAD) epilogue writing dP (and db)",
                                 75, [](const BackwardArgs&, cudaStream_t) {});
    v.launch = [](const Buffers& b, cudaStream_t st) {
      BackwardArgs a = backward_args(b);
      void* lt_ws = static_cast<unsigned char*>(b.workspace) + scratch_bytes(b.size);
      if (a.z) cublaslt_fused_forward(a, lt_ws, st);
      if (a.dy && a.act == Activation::gelu && a.n % 8 == 0) {
        // --part chain, GELU: the library's DGELU(_BGRAD) epilogue writes dP (and db) straight from dY Vᵀ
        cublaslt_dgrad(a.db ? CUBLASLT_EPILOGUE_DGELU_BGRAD : CUBLASLT_EPILOGUE_DGELU, a.dy, a.v, a.p, a.dp, a.db,
                       a.m, a.n, a.k, lt_ws, st);
        a.db = nullptr;  // done: dW's product without its BGRADA epilogue
      } else {
        if (a.dy)  // --part chain, ReLU and SiLU: dZ, then the act' pass (no epilogue reads P for them)
          cublaslt_dgrad(CUBLASLT_EPILOGUE_DEFAULT, a.dy, a.v, nullptr, const_cast<__half*>(a.dz), nullptr, a.m,
                         a.n, a.k, lt_ws, st);
        if (a.dz) launch_act_grad(a, GradPass::grad, st);
      }
      if (a.dx) cublaslt_transposed_gemm(LtProduct::dx, a, lt_ws, st);
      if (a.dw) cublaslt_transposed_gemm(LtProduct::dw, a, lt_ws, st);
    };
    v.workspace_bytes = scratch_and_lt_bytes;
    out.push_back(v);
  }
  {
    // A bound, not a step: the cuBLASLt row's products alone, dP made before
    // timing. The sequence's time over this one is the most a fused act' (and
    // db) can give with products no faster than NVIDIA's.
    Variant v = backward_variant("products_only",
                                 "a bound: cuBLASLt's two products (db in dW's epilogue) on a dP made before timing, "
                                 "no act' at all",
                                 75, [](const BackwardArgs&, cudaStream_t) {});
    v.bound = true;
    v.launch = [](const Buffers& b, cudaStream_t st) {
      BackwardArgs a = backward_args(b);
      a.dp = static_cast<__half*>(const_cast<void*>(b.inputs[given_dp_input(b.size)]));
      void* lt_ws = static_cast<unsigned char*>(b.workspace) + scratch_bytes(b.size);
      cublaslt_transposed_gemm(LtProduct::dx, a, lt_ws, st);
      cublaslt_transposed_gemm(LtProduct::dw, a, lt_ws, st);
    };
    v.workspace_bytes = scratch_and_lt_bytes;
    v.bytes = [](const ProblemSize& s) {  // dP and W read, dX written; X and dP read, dW (and db) written
      const double mk = double(s.m) * s.k, kn = double(s.k) * s.n, mn = double(s.m) * s.n;
      return 2.0 * (mn + kn + mk) + 2.0 * (mk + mn + kn) + (has_bias(s) ? 2.0 * s.n : 0.0);
    };
    v.bytes_what = "the two products' operands only: dP is given";
    v.skip = [](const ProblemSize& s) {
      return has_given_dp(s) ? "" : "a bound for the whole backward from a given dP (only with --part all)";
    };
    out.push_back(v);
  }
  return out;
}

// ------------------------------------------------------------ the problem
// The sequence a framework runs: the activation's backward as an elementwise
// kernel, dP.sum(0) as a reduction, and two cublasGemmEx with transposes.
// cuBLAS is column-major: a row-major (r x c) matrix is its (c x r) transpose.
void check_cublas(cublasStatus_t st, const char* what) {
  if (st != CUBLAS_STATUS_SUCCESS) throw CudaError("cuBLAS error " + std::to_string(int(st)) + " in " + what);
}

void cublas_sequence(const Buffers& b, cudaStream_t st) {
  BackwardArgs a = backward_args(b);
  if (a.z) {  // --part train: the forward as a framework's Linear runs it (addmm: cuBLASLt, the bias in its
              // epilogue), then the activation as its own pass; P is kept
    __half* p = saved_p(b);
    cublaslt_forward(a.bias ? CUBLASLT_EPILOGUE_BIAS : CUBLASLT_EPILOGUE_DEFAULT, a, p, nullptr,
                     static_cast<unsigned char*>(b.workspace) + scratch_bytes(b.size), st);
    launch_activation_pass(p, a.z, int64_t(a.m) * a.n, a.act, st);
    a.p = p;
  }
  const float one = 1.0f, zero = 0.0f;
  // --part chain: dZᵀ (N x M) = V · dYᵀ: V stored (K x N) column-major, transposed; dY (K x M).
  if (a.dy)
    check_cublas(cublasGemmEx(b.cublas, CUBLAS_OP_T, CUBLAS_OP_N, a.n, a.m, a.k, &one, a.v, CUDA_R_16F, a.k, a.dy,
                              CUDA_R_16F, a.k, &zero, const_cast<__half*>(a.dz), CUDA_R_16F, a.n, CUBLAS_COMPUTE_32F,
                              CUBLAS_GEMM_DEFAULT),
                 "cublasGemmEx (dZ)");
  if (a.dz) launch_act_grad(a, GradPass::grad, st);
  // dXᵀ (K x M) = W · dPᵀ: W stored (N x K) column-major, transposed.
  if (a.dx)
    check_cublas(cublasGemmEx(b.cublas, CUBLAS_OP_T, CUBLAS_OP_N, a.k, a.m, a.n, &one, a.w, CUDA_R_16F, a.n, a.dp,
                            CUDA_R_16F, a.n, &zero, a.dx, CUDA_R_16F, a.k, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
               "cublasGemmEx (dX)");
  // dWᵀ (N x K) = dPᵀ · X: X stored (K x M) column-major, transposed.
  if (a.dw)
    check_cublas(cublasGemmEx(b.cublas, CUBLAS_OP_N, CUBLAS_OP_T, a.n, a.k, a.m, &one, a.dp, CUDA_R_16F, a.n, a.x,
                            CUDA_R_16F, a.k, &zero, a.dw, CUDA_R_16F, a.n, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
               "cublasGemmEx (dW)");
  if (a.db) launch_act_grad(a, GradPass::sum_only, st);
}

// splitmix64: the host's seeded random numbers. Its state only counts the
// draws, so the generator `draws` further on is one multiply away: the fills
// below hand each host thread its own stretch of one sequence.
struct SplitMix {
  static constexpr uint64_t kGamma = 0x9E3779B97F4A7C15ull;
  uint64_t state;
  SplitMix after(int64_t draws) const { return SplitMix{state + uint64_t(draws) * kGamma}; }
  uint64_t next() {
    uint64_t z = state += kGamma;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  float uniform() { return float(double(next() >> 11) * 0x1.0p-53 * 2.0 - 1.0); }  // in [-1, 1)
};

// For ReLU: P uniform in [-1, 1) (seeded), and the bitmask a forward would
// save beside it: bit c % 32 of word c / 32 of row r is P[r, c] > 0.
void fill_relu_mask(const ProblemSize& s, std::vector<HostTensor>& in, uint64_t seed) {
  HostTensor& p = in[2];
  HostTensor& mask = in[kMaskInput];
  const int words = relu_mask_words(s.n);
  const SplitMix start{seed * SplitMix::kGamma + 0x5EEDull};
  on_host_threads(s.m, [&](int64_t r) {
    SplitMix rng = start.after(r * s.n);
    std::vector<uint32_t> row(size_t(words), 0);
    for (int64_t c = 0; c < s.n; ++c) {
      p.set(r, c, rng.uniform());
      if (p.at(r, c) > 0.0f) row[size_t(c / 32)] |= 1u << (c % 32);
    }
    for (int w = 0; w < words; ++w) mask.set_int(r, w, int32_t(row[size_t(w)]));
  });
}

// --part train with ReLU: ReLU's derivative is P's sign, and a P within the
// fp32 sum's rounding of 0 takes either sign depending on the order of the
// sum (on uniform inputs, about one element in 5 million at K = 8192, each
// moving a row of dW by a whole term). So X, W and b are drawn from the
// multiples of 1/8 in [-1, 1] (seeded): every product is a multiple of 1/64,
// every partial sum is exact in fp32, and P, its sign and its exact zeros
// (derivative 0) are the same in any order, on the GPU and in fp64.
bool exact_inputs(const ProblemSize& s) { return is_train(s) && activation_of(s) == Activation::relu; }

void fill_eighths(const ProblemSize& s, std::vector<HostTensor>& in, uint64_t seed) {
  SplitMix rng{seed * SplitMix::kGamma + 0xE16ull};
  const auto eighths = [&](HostTensor& t) {
    for (int64_t r = 0; r < t.spec.rows; ++r)
      for (int64_t c = 0; c < t.spec.cols; ++c) t.set(r, c, float(int(rng.next() % 17) - 8) / 8.0f);
  };
  eighths(in[0]);
  eighths(in[1]);
  if (has_bias(s)) eighths(in[3]);
}

// --part all: P (unless fill_relu_mask wrote it) and dZ uniform in [-1, 1)
// (seeded), and from them the dP that products_only is given: act' in fp64,
// the product rounded to fp16 (the pass forms it in fp32, so the two can
// differ by an fp16 ulp here and there: nothing to a bound).
void fill_given_dp(const ProblemSize& s, std::vector<HostTensor>& in, uint64_t seed) {
  HostTensor& p = in[2];
  HostTensor& dz = in[3];
  HostTensor& dp = in[given_dp_input(s)];
  const int64_t count = int64_t(s.m) * s.n;
  constexpr int64_t kChunk = 1 << 16;
  const auto uniform = [&](HostTensor& t, uint64_t salt) {
    const SplitMix start{seed * SplitMix::kGamma + salt};
    on_host_threads((count + kChunk - 1) / kChunk, [&](int64_t c) {
      SplitMix rng = start.after(c * kChunk);
      for (int64_t i = c * kChunk; i < std::min(count, (c + 1) * kChunk); ++i) t.set(i / s.n, i % s.n, rng.uniform());
    });
  };
  if (!has_relu_mask(s)) uniform(p, 0x9ull);
  uniform(dz, 0xD2ull);
  const Activation act = activation_of(s);
  on_host_threads((count + kChunk - 1) / kChunk, [&](int64_t c) {
    for (int64_t i = c * kChunk; i < std::min(count, (c + 1) * kChunk); ++i)
      dp.set(i / s.n, i % s.n, float(double(dz.value(i)) * activation_grad<double>(act, double(p.value(i)))));
  });
}

void fill_inputs(const ProblemSize& s, std::vector<HostTensor>& in, uint64_t seed) {
  if (has_relu_mask(s)) fill_relu_mask(s, in, seed);
  if (has_given_dp(s)) fill_given_dp(s, in, seed);
  if (exact_inputs(s)) fill_eighths(s, in, seed);
}

// A whole fp64 product that several outputs' checks read: made on the first
// call of a run (on every host thread) and kept for the calls that follow,
// which pass the same inputs (the same tensors, at the same shape).
template <class T>
struct RunCache {
  const void* inputs = nullptr;
  int m = 0, n = 0, k = 0;
  std::vector<T> values;
  template <class F>
  const std::vector<T>& get(const HostTensor& key, const ProblemSize& s, F&& make) {
    if (inputs != key.data.data() || m != s.m || n != s.n || k != s.k) {
      values = make();
      inputs = key.data.data();
      m = s.m, n = s.n, k = s.k;
    }
    return values;
  }
};

// --part train: P = X W + b in fp64, every row of it (a row of dW sums over
// every row of dP).
const std::vector<double>& train_p_fp64(const ProblemSize& s, const std::vector<HostTensor>& in) {
  static RunCache<double> cache;
  return cache.get(in[0], s, [&] {
    const int64_t m = s.m, n = s.n, k = s.k;
    const std::vector<float> x = host_floats(in[0]), w = host_floats(in[1]);  // fp16 values: exact in float
    std::vector<float> bias(size_t(n), 0.0f);
    if (has_bias(s))
      for (int64_t c = 0; c < n; ++c) bias[size_t(c)] = in[3].value(c);
    std::vector<double> p(size_t(m * n));
    for (int64_t r = 0; r < m; ++r) std::copy(bias.begin(), bias.end(), p.begin() + r * n);
    fp64_accumulate_product(x.data(), w.data(), p.data(), m, n, k);
    return p;
  });
}

// --part chain: dZ = dY Vᵀ in fp64, every element (dW sums over every row of dP).
const std::vector<double>& chain_dz_fp64(const ProblemSize& s, const std::vector<HostTensor>& in) {
  static RunCache<double> cache;
  return cache.get(in[3], s, [&] {
    // V (N x K) read as its transpose, K x N, so that each sum runs over k in order.
    const std::vector<float> dy = host_floats(in[3]), vt = host_floats(in[4], true);  // fp16 values: exact in float
    std::vector<double> dz(size_t(int64_t(s.m) * s.n), 0.0);
    fp64_accumulate_product(dy.data(), vt.data(), dz.data(), s.m, s.n, s.k);
    return dz;
  });
}

// dP's ingredients as the backward sees them: dZ as given (--part all, train)
// or (chain) dY Vᵀ in fp64, and P as given (all, chain) or (train) the fp64 P
// rounded to fp16, as the forward saves it (ReLU: Z = relu(P) has its sign).
// Looked up once, used per element.
struct DpInputs {
  Activation act;
  const HostTensor* dz;             // --part all, train
  const std::vector<double>* dz64;  // --part chain
  const HostTensor* given_p;        // --part all, chain
  const std::vector<double>* p64;   // --part train
  double dp(int64_t i) const {
    const double p = p64 ? half_to_float(float_to_half(float((*p64)[size_t(i)]))) : given_p->value(i);
    return (dz64 ? (*dz64)[size_t(i)] : double(dz->value(i))) * activation_grad<double>(act, p);
  }
};
DpInputs dp_inputs(const ProblemSize& s, const std::vector<HostTensor>& in) {
  if (is_train(s)) return DpInputs{activation_of(s), &in[2], nullptr, nullptr, &train_p_fp64(s, in)};
  if (is_chain(s)) return DpInputs{activation_of(s), nullptr, &chain_dz_fp64(s, in), &in[2], nullptr};
  return DpInputs{activation_of(s), &in[3], nullptr, &in[2], nullptr};
}

// dP in fp64 (as float: its rounding is far below the check's tolerance),
// every element: made once for dW's check and kept for db's.
const std::vector<float>& dp_fp64(const ProblemSize& s, const std::vector<HostTensor>& in) {
  static RunCache<float> cache;
  return cache.get(in[0], s, [&] {
    const DpInputs d = dp_inputs(s, in);
    const int64_t count = int64_t(s.m) * s.n;
    std::vector<float> dp(static_cast<size_t>(count));
    constexpr int64_t kChunk = 1 << 16;
    on_host_threads((count + kChunk - 1) / kChunk, [&](int64_t c) {
      for (int64_t i = c * kChunk; i < std::min(count, (c + 1) * kChunk); ++i) dp[size_t(i)] = float(d.dp(i));
    });
    return dp;
  });
}

// fp64 rows `rows` of dX = dP Wᵀ (dX[r, j] = sum_c dP[r, c] W[j, c]): W (K x N) read as its transpose.
template <class T>
std::vector<double> dx_fp64_rows(const std::vector<T>& dp_rows, size_t rows, const HostTensor& w, int64_t n,
                                 int64_t k) {
  std::vector<double> out(rows * size_t(k), 0.0);
  fp64_accumulate_product(dp_rows.data(), host_floats(w, true).data(), out.data(), int64_t(rows), k, n);
  return out;
}

// fp64 rows `rows` of dW = Xᵀ dP (dW[r, c] = sum_i X[i, r] dP[i, c]); dP (M x N) as floats.
std::vector<double> dw_fp64_rows(const HostTensor& x, const std::vector<float>& dp, const std::vector<int64_t>& rows,
                                 int64_t m, int64_t n) {
  std::vector<float> x_cols(rows.size() * size_t(m));  // X's columns `rows`, each a row here
  for (size_t r = 0; r < rows.size(); ++r)
    for (int64_t i = 0; i < m; ++i) x_cols[r * size_t(m) + size_t(i)] = x.at(i, rows[r]);
  std::vector<double> out(rows.size() * size_t(n), 0.0);
  fp64_accumulate_product(x_cols.data(), dp.data(), out.data(), int64_t(rows.size()), n, m);
  return out;
}

// --part dx: rows of dP Wᵀ, dP given; --part dw: rows of Xᵀ dP.
std::vector<double> part_fp64_rows(const ProblemSize& s, const std::vector<HostTensor>& in, Part part,
                                   const std::vector<int64_t>& rows) {
  const int64_t m = s.m, n = s.n, k = s.k;
  if (part == Part::dx) {
    std::vector<float> dp_rows(rows.size() * size_t(n));
    for (size_t r = 0; r < rows.size(); ++r)
      for (int64_t c = 0; c < n; ++c) dp_rows[r * size_t(n) + size_t(c)] = in[0].at(rows[r], c);
    return dx_fp64_rows(dp_rows, rows.size(), in[1], n, k);
  }
  return dw_fp64_rows(in[0], host_floats(in[1]), rows, m, n);
}

// Outputs: 0 dX (M x K), 1 dW (K x N), 2 db (1 x N); --part train: Z
// (M x N) first, then those.
std::vector<double> backward_fp64_rows(const ProblemSize& s, const std::vector<HostTensor>& in, size_t output,
                                       const std::vector<int64_t>& rows) {
  if (const Part part = part_of(s); !whole_backward(s)) return part_fp64_rows(s, in, part, rows);
  const int64_t m = s.m, n = s.n, k = s.k;
  const HostTensor& x = in[0];
  const HostTensor& w = in[1];
  const Activation act = activation_of(s);
  std::vector<double> out;
  if (is_train(s)) {
    if (output == 0) {  // Z[r, c] = act(P[r, c])
      const std::vector<double>& p = train_p_fp64(s, in);
      for (const int64_t r : rows)
        for (int64_t c = 0; c < n; ++c) out.push_back(apply_activation<double>(act, p[size_t(r * n + c)]));
      return out;
    }
    --output;
  }
  if (output == 0) {  // dX[r, j] = sum_c dP[r, c] W[j, c], dP's rows in fp64
    std::vector<double> dp_rows(rows.size() * size_t(n));
    const DpInputs d = dp_inputs(s, in);
    for (size_t r = 0; r < rows.size(); ++r)
      for (int64_t c = 0; c < n; ++c) dp_rows[r * size_t(n) + size_t(c)] = d.dp(rows[r] * n + c);
    return dx_fp64_rows(dp_rows, rows.size(), w, n, k);
  }
  const std::vector<float>& dp = dp_fp64(s, in);
  if (output == 1) return dw_fp64_rows(x, dp, rows, m, n);  // dW[r, c] = sum_i X[i, r] dP[i, c]
  out.assign(size_t(n), 0.0);
  for (int64_t i = 0; i < m; ++i)  // db[c] = sum_i dP[i, c]
    for (int64_t c = 0; c < n; ++c) out[size_t(c)] += double(dp[size_t(i * n + c)]);
  return out;
}

Problem backward_problem() {
  Problem p;
  p.summary =
      "dP = dZ * act'(P), dX = dP Wᵀ, dW = Xᵀ dP, db = column sums of dP (train: after Z = act(X W + b); "
      "chain: dZ = dY Vᵀ first)";
  p.params = {
      ParamSpec{"act", "the layer's activation: relu, gelu (tanh form) or silu", "relu", {"relu", "gelu", "silu"}},
      ParamSpec{"bias", "whether the layer has a bias, so db is computed: yes or no", "yes", {"yes", "no"}},
      ParamSpec{"part",
                "all: the whole backward; dx or dw: that product alone, given dP, against cuBLAS's same-layout GEMM; "
                "train: the forward (Z = act(X W + b), P saved) and the backward together; chain: the backward from "
                "an MLP's output, dZ = dY Vᵀ first (V: the second layer's N x K weights)",
                "all",
                {"all", "dx", "dw", "train", "chain"}},
  };
  p.inputs = [](const ProblemSize& s) {
    switch (part_of(s)) {
      case Part::dx: return std::vector<TensorSpec>{{"dP", s.m, s.n}, {"W", s.k, s.n}};
      case Part::dw: return std::vector<TensorSpec>{{"X", s.m, s.k}, {"dP", s.m, s.n}};
      case Part::train: {
        std::vector<TensorSpec> in{{"X", s.m, s.k}, {"W", s.k, s.n}, {"dZ", s.m, s.n}};
        if (has_bias(s)) in.push_back(TensorSpec{"b", 1, s.n});
        if (exact_inputs(s))  // multiples of 1/8, written by fill_eighths
          for (const size_t i : {size_t(0), size_t(1), size_t(3)})
            if (i < in.size()) in[i].filled_by_problem = true;
        return in;
      }
      case Part::chain:
        return std::vector<TensorSpec>{{"X", s.m, s.k}, {"W", s.k, s.n}, {"P", s.m, s.n}, {"dY", s.m, s.k}, {"V", s.n, s.k}};
      default: {
        // P, dZ and the dP made from them agree: all written by the fill (for ReLU, P and its
        // bitmask by fill_relu_mask)
        std::vector<TensorSpec> in{{"X", s.m, s.k}, {"W", s.k, s.n}, {"P", s.m, s.n}, {"dZ", s.m, s.n}};
        in[2].filled_by_problem = in[3].filled_by_problem = true;
        if (has_relu_mask(s))
          in.push_back(TensorSpec{"ReLU mask", s.m, relu_mask_words(s.n), DType::i32, wb::Layout::row_major, true});
        in.push_back(TensorSpec{"dP (products_only's)", s.m, s.n, DType::f16, wb::Layout::row_major, true});
        return in;
      }
    }
  };
  p.fill = fill_inputs;
  p.outputs = [](const ProblemSize& s) {
    if (part_of(s) == Part::dx) return std::vector<TensorSpec>{{"dX", s.m, s.k}};
    if (part_of(s) == Part::dw) return std::vector<TensorSpec>{{"dW", s.k, s.n}};
    std::vector<TensorSpec> o{{"dX", s.m, s.k}, {"dW", s.k, s.n}};
    if (is_train(s)) o.insert(o.begin(), TensorSpec{"Z", s.m, s.n});
    if (has_bias(s)) o.push_back(TensorSpec{"db", 1, s.n});
    return o;
  };
  p.reference = Reference{"cublas", "the cuBLAS sequence",
                          "act' pass, two cublasGemmEx with transposes, and a dP.sum(0) pass (a framework's sequence); "
                          "train: first the Linear's addmm (cuBLASLt, bias epilogue) and the activation's own pass; "
                          "chain: first dZ = dY Vᵀ by cublasGemmEx",
                          cublas_sequence, [](const ProblemSize& s) {
                            return is_train(s) ? scratch_and_lt_bytes(s) : scratch_bytes(s);
                          }};
  p.fp64_rows = backward_fp64_rows;
  p.flops = [](const ProblemSize& s) {
    return (is_train(s) || is_chain(s) ? 6.0 : part_of(s) == Part::all ? 4.0 : 2.0) * s.m * double(s.n) * s.k;
  };
  p.bytes = [](const ProblemSize& s) { return backward_bytes(s, false); };  // the bitmask input is relu_mask's alone
  return p;
}

}  // namespace

int main(int argc, char** argv) {
  Lesson lesson;
  lesson.info = catalog_entry("lesson05_backward");
  lesson.problem = backward_problem();
  lesson.variants = variants();
  return run_lesson(lesson, argc, argv);
}
