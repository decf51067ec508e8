// Lesson 03 - grouped: tile order, fused activation, cp.async pipeline.
//
// What is new since lesson 02 (128x128 tiles taken in row-major order, mma.sync
// fed from padded shared memory, loads through registers with one slice of
// prefetch): two ideas from the "matmul forward and backward" notebook and the
// Triton tutorial, and one from Ampere.
//
// 1. A program-id-to-tile order chosen at run time. Block pid of the 1-D launch
//    computes tile wb::tile_of(order, pid, ...); the order is a kernel argument,
//    so one kernel serves row-major, column-major and grouped. Blocks with
//    nearby pids run together, so the order decides which rows of A and columns of B the blocks
//    in flight want at once. Row-major walks a whole row of tiles: every block in
//    flight shares one row-block of A but wants a different column-block of B.
//    Grouped (GROUP_M rows of tiles, column by column) keeps GROUP_M row-blocks
//    of A and a few column-blocks of B hot, so L2 serves more of the loads.
//
// 2. A fused epilogue. The accumulator tile is rounded to fp16 and staged in
//    shared memory (for 16-byte stores), and the activation (relu, leaky_relu,
//    gelu, silu) is applied on its way out, 8 values per 16-byte chunk in half2
//    arithmetic (activation_half2.cuh: GELU and SiLU are one tanh.approx.f16x2
//    per pair of outputs). C is written once. `unfused_gelu` runs the GEMM with
//    no activation and then a separate pass over C (elementwise.cuh), which
//    reads and writes C once more; its byte count includes that round trip.
//
// 3. A multi-stage cp.async pipeline that keeps the tensor cores fed.
//    cp.async copies global -> shared without registers, so the next k-slices
//    are in flight while the tensor cores work on this one (3 stages of
//    128x256x64: 144 KiB, one block of 8 warps per SM, each warp a 64x64 tile
//    of C in 128 fp32 registers). An XOR swizzle keeps ldmatrix and the copies
//    conflict-free without padding; C goes out through shared memory as
//    16-byte stores. What makes it fast is overlap inside the block:
//    - the ldmatrix of k16 step kk+1 is issued before the 32 mma of step kk,
//      into a second set of fragment registers, so its latency hides behind them;
//    - one barrier per 64 of k, placed before the last k16 step of a slice: it
//      proves the next slice landed (cp.async.wait_group STAGES-2 keeps the
//      slice after it in flight) and that the stage to refill is no longer read;
//      the next slice's first fragments are then loaded before the last mma;
//    - a slice's copies are spread over its k16 steps, between the mma.
//    The plain pipeline (variant grouped8_plain: fragments loaded right before
//    their mma, all copies at the start of the slice, the barrier there too)
//    ran at 50.6% of cuBLAS on an H100; this one at 59.0%, same run.
//
// Measured on an H100 80GB HBM3 (cuBLAS 13.1 at 735 TFLOP/s), 4096^3, fp16 in,
// fp32 accumulate: grouped8 0.313 ms, 439 TFLOP/s, 59.0% of cuBLAS. That is
// near what mma.sync allows on Hopper. The notebook's grouped Triton kernel
// reaches ~0.74x cuBLAS at 4096^3 on an H200 because Triton emits Hopper's
// wgmma there (asynchronous, operands straight from shared memory, a warpgroup
// per instruction), not mma.sync: lesson 04 builds that kernel.
//
// The order, honestly. An H100 has 50 MiB of L2. The report prints, under the
// times, the L2 model's DRAM bytes and hit rate for each order (this GPU's L2
// size and SM count, blocks per SM from the occupancy API). Measured on the
// H100 above:
//   4096^3: A and B are 64 MB; the model predicts the compulsory 67 MB for
//     every order (1.41x for grouped16) and all six orders ran within 0.3%.
//   16384 x 16384 x 4096: the model predicts 8.5 GB from DRAM for row-major,
//     2.3 GB for grouped8, 0.77 GB for grouped32, yet all orders ran within
//     2% (5.18-5.29 ms): 8.5 GB in 5.2 ms is 1.6 TB/s, half of what HBM3
//     delivers, so the re-reads hide under the math. The model counts bytes,
//     not time: the order matters only where those bytes take longer than the math.
//   4096 x 65536 x 4096 (very wide N: each row-block of A is re-read for 256
//     tile columns): row-major is predicted 17.3 GB (30x the compulsory
//     0.57 GB), column-major and grouped32 0.57 GB, grouped8 2.2 GB. Measured:
//     row-major 6.06 ms (48% of cuBLAS, 2.85 TB/s of DRAM traffic by the
//     model: bandwidth-bound), column-major 5.19 ms, grouped8 5.30 ms. Here the
//     order is worth 14-17%. Grouped16/32, with fewer predicted bytes than
//     grouped8, ran 2% slower than it: once the traffic fits under the math,
//     fewer bytes buy nothing.
//   See it:  build/bin/lesson03_grouped --m 4096 --n 65536 --k 4096 \
//                --variant row_major,column_major,grouped8,grouped32
//
// Fusing, honestly. Measured on an H100 at 4096^3, as % of cuBLAS in the same
// run (three runs): relu and leaky_relu cost nothing measurable over grouped8;
// gelu and silu 0-4%; unfused_gelu's separate pass 6-11% (C read and written
// once more, 64 MB). Applied to the fp32 accumulators before staging instead
// (two special-function ops per pair instead of one, and the math inside the
// 255-register main kernel), gelu and silu cost 11-12%, as much as the
// unfused pass. Both costs grow with M*N while the GEMM's grows with M*N*K,
// so they weigh more at short K: try --k 256.
//
// Model against measurement: --ncu runs each variant once more under Nsight
// Compute and prints the DRAM bytes it read and its L2 hit rate under the
// model's line (it needs ncu, and permission to read the GPU's counters).
//
// Run:  build/bin/lesson03_grouped                                (4096^3)
//       build/bin/lesson03_grouped --m 4096 --n 65536 --k 4096    (where the order matters)
//       build/bin/lesson03_grouped --ncu --variant row_major,grouped8 --m 8192 --n 8192 --k 8192
//       build/bin/lesson03_grouped --m 127 --n 257 --k 129        (tails: the general path)

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

// The default (128x256x64, 3 stages, fragments of the next k16 step in flight)
// against its neighbours, measured on an H100 at 4096^3 (% of cuBLAS):
// 128x256x64, 4 stages: 192 KiB, one more k-slice in flight: the same (58.9%
//   vs 59.0%), so the copies are already hidden at 3 stages;
// 128x256x32, 4 stages: 96 KiB, a barrier every 32 of k instead of 64: 54.3%;
// 128x128x32, 8 warps of 64x32, 4 stages, <= 128 registers, two blocks per SM,
//   plain pipeline (a second fragment buffer does not fit 128 registers):
//   43.6%: a 64x32 warp tile reads more shared memory per mma;
// the default's tiles with the plain pipeline (fragments loaded right before
//   their mma, every copy of a slice issued at once, the barrier at the start
//   of the slice): 50.6%. That is what overlapping the fragments buys.
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
