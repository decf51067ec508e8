// Lesson 03 - grouped: a tile order chosen at run time, a fused activation,
// and a cp.async pipeline.
//
// What is new since lesson 02 (128x128 tiles taken in row-major order, mma.sync
// fed from padded shared memory, loads through registers with one slice of
// prefetch): two ideas from the "matmul forward and backward" notebook and the
// Triton tutorial, and one from Ampere. The kernel is
// kernels/03_grouped/pipelined_mma.cuh.
//
// 1. A program-id-to-tile order. Block pid of a 1-D launch computes tile
//    tile_of(order, pid, ...) (schedule/tile_order.hpp): row-major,
//    column-major or grouped (GROUP_M rows of tiles, walked column by column).
//    Blocks with nearby pids run together, so the order decides which rows of
//    A and columns of B the blocks in flight want at once, and so how much of
//    them L2 can serve. Row-major walks a whole row of tiles: the blocks in
//    flight share one row-block of A, but each wants its own column-block of B.
// 2. A fused epilogue. The accumulators are rounded to fp16 and staged in
//    shared memory, and the activation (relu, leaky_relu, gelu, silu) is
//    applied on the way out, 8 values per 16-byte store, in half2 arithmetic
//    (common/activation_half2.cuh). C is written once; `unfused_gelu` writes
//    it, then reads and writes it again in a separate pass.
// 3. A 3-stage cp.async pipeline of 128x256x64 tiles: the copies go global ->
//    shared without registers, so the next k-slices are in flight while the
//    tensor cores work on this one. XOR-swizzled tiles keep ldmatrix and the
//    copies free of bank conflicts without padding, and the fragments of the
//    next k16 step are loaded while this step's mma run.
//
// Why it should be faster, and what the report shows:
// - The pipeline keeps the tensor cores fed: grouped8 against lesson 02's best
//   and against grouped8_plain (the same tiles, fragments loaded right before
//   their mma). It stays near 0.6x cuBLAS: mma.sync is what caps it on Hopper.
// - Fusing saves a round trip of C: grouped8_gelu against unfused_gelu, and
//   each grouped8_<act> against grouped8 (the "fused activations" lines).
// - The order pays only where the DRAM traffic it adds no longer fits under
//   the math. Under the report, the L2 model counts each order's DRAM bytes
//   for this GPU's L2 and SM count, the lesson times a device-to-device copy
//   in the same run, and "does the order matter here?" says whether any
//   order's bytes need more bandwidth than DRAM delivers while the math runs
//   at the measured speed, and at which shape they would on this GPU, if any.
//   At 4096^3 the operands almost fit in L2 and every order reads about the
//   compulsory bytes: the orders run within noise. Where the order pays and
//   where it cannot on an H100 and an H200: docs/lessons/03_grouped.md.
//
// Run:  build/bin/lesson03_grouped                                  (4096^3, every variant)
//       build/bin/lesson03_grouped --m 4096 --n 65536 --k 4096 --variant row_major,column_major,grouped8
//       build/bin/lesson03_grouped --ncu --variant row_major,grouped8 --m 8192 --n 8192 --k 8192
//                                    (the model's DRAM bytes beside Nsight Compute's; needs ncu)
//       build/bin/lesson03_grouped --m 127 --n 257 --k 129          (tails: the general path)
// Measured: docs/lessons/03_grouped.md. The evidence: docs/notes/03_tile_order.md and
// docs/notes/03_pipeline_and_epilogue.md.

#include <algorithm>
#include <iterator>
#include <string>
#include <vector>

#include "03_grouped/activation_pass.cuh"
#include "03_grouped/pipelined_mma.cuh"
#include "harness/gemm_problem.cuh"
#include "harness/report.hpp"

namespace {

using wb::Activation;
using wb::GemmArgs;
using wb::GemmShape;
using wb::TileOrder;
using wb::GemmVariant;

// The default tile shape (128x256x64, 3 stages; kernels/03_grouped/pipelined_mma.cuh)
// against its neighbours: one stage more, half the depth per stage, 128x128
// tiles with two blocks per SM, and the plain pipeline (docs/notes/03_pipeline_and_epilogue.md).
using Pipelined128x256x32 = wb::PipelinedShape<128, 256, 32, 2, 4, 4>;
using Pipelined128x256x64Deep = wb::PipelinedShape<128, 256, 64, 2, 4, 4>;
using Pipelined128x128 = wb::PipelinedShape<128, 128, 32, 2, 4, 4, 2, false>;  // plain: no registers to spare
using PipelinedPlain = wb::PipelinedShape<128, 256, 64, 2, 4, 3, 1, false>;

std::string order_note(TileOrder order, int group_m) {
  std::string note = std::string("order ") + wb::tile_order_name(order);
  if (order == TileOrder::grouped) note += ", GROUP_M " + std::to_string(group_m);
  return note;
}

GemmVariant pipelined_variant(std::string name, std::string what, TileOrder order, int group_m, Activation act) {
  GemmVariant v;
  v.name = std::move(name);
  v.what = std::move(what);
  v.min_cc = 80;  // cp.async, mma.sync.m16n8k16
  v.activation = act;
  v.config = [order, group_m](const GemmShape& s) { return wb::pipelined_gemm_config(s, order, group_m); };
  v.launch = [order, group_m, act](const GemmArgs& g, cudaStream_t stream) {
    wb::launch_pipelined_gemm(g, order, group_m, act, stream);
  };
  v.note = [order, group_m](const GemmShape& s) {
    std::string note = order_note(order, group_m);
    if (s.k % 8 != 0 || s.n % 8 != 0) note += "; K or N not a multiple of 8: general (synchronous, scalar) path";
    return note;
  };
  return v;
}

// An order variant: the GEMM with no activation, and the L2 model's prediction
// for its order, tile sizes and blocks per SM printed under the report.
GemmVariant order_variant(std::string name, std::string what, TileOrder order, int group_m) {
  GemmVariant v = pipelined_variant(std::move(name), std::move(what), order, group_m, Activation::none);
  v.model = [](const GemmShape& s, const wb::KernelConfig& c, const wb::GpuInfo& g) {
    return wb::l2_model_line(s.m, s.n, s.k, c, g);
  };
  return v;
}

// grouped8, no activation, with tile shape S instead of the default.
template <class S>
GemmVariant other_tile_variant(std::string name, std::string what) {
  GemmVariant v = pipelined_variant(std::move(name), std::move(what), TileOrder::grouped, 8, Activation::none);
  v.config = [](const GemmShape& s) { return wb::pipelined_gemm_config_shaped<S>(s, TileOrder::grouped, 8); };
  v.launch = [](const GemmArgs& g, cudaStream_t stream) {
    wb::launch_pipelined_gemm_path<S, Activation::none>(g, TileOrder::grouped, 8, stream);
  };
  return v;
}

// The order variants: the same kernel, no activation, one order each.
struct OrderChoice {
  const char* name;
  const char* what;
  TileOrder order;
  int group_m;
};
constexpr OrderChoice kOrders[] = {
    {"row_major", "1-D launch, row-major tile order", TileOrder::row_major, 1},
    {"column_major", "1-D launch, column-major tile order", TileOrder::column_major, 1},
    {"grouped4", "grouped tile order, GROUP_M 4", TileOrder::grouped, 4},
    {"grouped8", "grouped tile order, GROUP_M 8 (Triton's default)", TileOrder::grouped, 8},
    {"grouped16", "grouped tile order, GROUP_M 16", TileOrder::grouped, 16},
    {"grouped32", "grouped tile order, GROUP_M 32", TileOrder::grouped, 32},
};

// After the report: does the order matter at this shape on this GPU, and where would it?
std::string order_conclusion(const wb::RunSummary& run) {
  std::vector<wb::OrderRun> orders;
  for (const wb::VariantResult& v : run.results.variants) {
    const auto config = run.configs.find(v.name);
    const bool is_order = std::any_of(std::begin(kOrders), std::end(kOrders),
                                      [&](const OrderChoice& o) { return v.name == o.name; });
    if (is_order && !v.skipped && config != run.configs.end()) orders.push_back({v.name, config->second, v.tflops});
  }
  return wb::order_verdict(run.size.m, run.size.n, run.size.k, orders, run.results.header.gpu,
                           run.results.copy_gbps, "lesson03_grouped");
}

std::vector<GemmVariant> variants() {
  std::vector<GemmVariant> v;
  for (const OrderChoice& o : kOrders) v.push_back(order_variant(o.name, o.what, o.order, o.group_m));
  v.push_back(pipelined_variant("grouped8_relu", "grouped8, relu fused into the epilogue", TileOrder::grouped, 8,
                                Activation::relu));
  v.push_back(pipelined_variant("grouped8_leaky_relu", "grouped8, leaky_relu fused into the epilogue",
                                TileOrder::grouped, 8, Activation::leaky_relu));
  v.push_back(pipelined_variant("grouped8_gelu", "grouped8, gelu (tanh form) fused into the epilogue",
                                TileOrder::grouped, 8, Activation::gelu));
  v.push_back(pipelined_variant("grouped8_silu", "grouped8, silu fused into the epilogue", TileOrder::grouped, 8,
                                Activation::silu));

  // The same GEMM without the fused epilogue, then gelu as a second pass over C.
  GemmVariant unfused = pipelined_variant("unfused_gelu", "grouped8 GEMM, then gelu as a separate pass over C",
                                      TileOrder::grouped, 8, Activation::gelu);
  unfused.launch = [](const GemmArgs& g, cudaStream_t stream) {
    wb::launch_pipelined_gemm(g, TileOrder::grouped, 8, Activation::none, stream);
    wb::launch_activation_pass(g.c, int64_t(g.m) * g.n, Activation::gelu, stream);
  };
  unfused.bytes = [](const GemmShape& s) {
    const double a = double(s.m) * s.k, b = double(s.k) * s.n, c = double(s.m) * s.n;
    return 2.0 * (a + b + c) + 2.0 * 2.0 * c;  // + C read and written again by the activation pass
  };
  unfused.bytes_what = "also C read and written again by the activation pass";
  v.push_back(unfused);

  // The default tile shape against its neighbours.
  v.push_back(other_tile_variant<Pipelined128x256x32>("grouped8_bk32", "grouped8 with 128x256x32 tiles, 4 stages"));
  v.push_back(other_tile_variant<Pipelined128x256x64Deep>("grouped8_4stages", "grouped8 with 4 stages of 128x256x64"));
  v.push_back(other_tile_variant<Pipelined128x128>("grouped8_128x128",
                                                    "grouped8 with 128x128x32 tiles, 2 blocks per SM, plain pipeline"));
  v.push_back(other_tile_variant<PipelinedPlain>(
      "grouped8_plain", "grouped8, plain pipeline: fragments loaded right before their mma, one burst of copies"));
  return v;
}

}  // namespace

int main(int argc, char** argv) {
  wb::Lesson lesson = wb::gemm_lesson("lesson03_grouped", variants());
  lesson.copy_bytes = [](const wb::ProblemSize&) { return double(size_t(1) << 30); };  // what DRAM delivers here
  lesson.conclusion = order_conclusion;
  return wb::run_lesson(lesson, argc, argv);
}
