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
// 2. A fused epilogue. The activation (relu, leaky_relu, gelu, silu) is applied
//    to the fp32 accumulator before the fp16 store, while the tile is still in
//    registers: C is written once, and the activation costs a few instructions.
//    `unfused_gelu` runs the GEMM with no activation and then a separate pass
//    over C (elementwise.cuh), which reads and writes C once more; its byte count
//    includes that round trip.
//
// 3. A multi-stage cp.async pipeline with swizzled shared memory. cp.async
//    copies global -> shared without registers, so STAGES-1 k-slices can be in
//    flight while the tensor cores work on the current one; an XOR swizzle keeps
//    ldmatrix conflict-free without padding; the C tile goes out through shared
//    memory as 16-byte stores. Tiles are 128x256x64, 8 warps of 64x64, 3 stages.
//
// An honest note on the order. An H100/H200 has 50-60 MB of L2; at 4096^3 A and B
// are 64 MB together, close to L2's size, so most re-reads hit L2 whatever the
// order: on an H100 all orders came within 1% of each other there. Blocks that
// run together also move through K together, so L2 only has to hold the band of
// A and B they are reading now; the order decides how many distinct row-blocks
// of A and column-blocks of B that band spans (what the L2 model counts), and
// that shows in time only when the kernel waits on memory. This mma.sync
// kernel, at about half of cuBLAS, mostly waits on its own math: at 8192^3 on
// the same H100 with 128x256x32 tiles, row-major was even ~6% ahead of grouped. Try large or long-K
// shapes (--m 8192 --n 8192 --k 16384) and lesson 04, whose wgmma kernel is
// fast enough for the order to matter. Triton's version of this kernel reaches
// cuBLAS on Hopper because it emits wgmma there; mma.sync tops out near 60-65%
// of wgmma's rate.
//
// What to look for: row_major vs column_major vs grouped, next to the L2
// model's prediction. The fused activations against grouped8: relu and
// leaky_relu cost nothing measurable; gelu and silu a few percent, since their
// tanh, exp and divide run while the tensor cores wait. unfused_gelu pays a
// read and a write of C instead: small next to a 4096-deep GEMM, large when K
// is short (try --k 256). grouped8_bk32, grouped8_4stages and grouped8_128x128
// show the tile-shape trade-offs around the default.
//
// Run:  build/bin/lesson03_grouped                                (4096^3)
//       build/bin/lesson03_grouped --m 8192 --n 8192 --k 8192     (operands 4x the L2)
//       build/bin/lesson03_grouped --m 127 --n 257 --k 129        (tails: the general path)

#include <string>

#include "cuda/elementwise.cuh"
#include "cuda/pipelined_mma.cuh"
#include "harness/harness.cuh"

namespace {

using wb::Activation;
using wb::GemmArgs;
using wb::GemmShape;
using wb::TileOrder;
using wb::Variant;

// Other tile shapes, for comparison with the default 128x256x64 (3 stages):
// 128x256x32, 8 warps of 64x64, 4 stages: 96 KiB, twice the barriers per unit of k;
// 128x256x64, 4 stages: 192 KiB, one more k-slice in flight;
// 128x128x32, 8 warps of 64x32, 4 stages: 64 KiB and <= 128 registers, two blocks per SM.
using Pipelined128x256x32 = wb::PipelinedShape<128, 256, 32, 2, 4, 4>;
using Pipelined128x256x64Deep = wb::PipelinedShape<128, 256, 64, 2, 4, 4>;
using Pipelined128x128 = wb::PipelinedShape<128, 128, 32, 2, 4, 4, 2>;

std::string order_note(TileOrder order, int group_m) {
  std::string note = std::string("order ") + wb::tile_order_name(order);
  if (order == TileOrder::grouped) note += ", GROUP_M " + std::to_string(group_m);
  return note;
}

Variant pipelined_variant(std::string name, std::string what, TileOrder order, int group_m, Activation act) {
  Variant v;
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

// grouped8, no activation, with tile shape S instead of the default.
template <class S>
Variant other_tile_variant(std::string name, std::string what) {
  Variant v = pipelined_variant(std::move(name), std::move(what), TileOrder::grouped, 8, Activation::none);
  v.config = [](const GemmShape& s) { return wb::pipelined_gemm_config_shaped<S>(s, TileOrder::grouped, 8); };
  v.launch = [](const GemmArgs& g, cudaStream_t stream) {
    wb::launch_pipelined_gemm_path<S, Activation::none>(g, TileOrder::grouped, 8, stream);
  };
  return v;
}

std::vector<Variant> variants() {
  std::vector<Variant> v;
  v.push_back(pipelined_variant("row_major", "1-D launch, row-major tile order", TileOrder::row_major, 1,
                                Activation::none));
  v.push_back(pipelined_variant("column_major", "1-D launch, column-major tile order", TileOrder::column_major, 1,
                                Activation::none));
  v.push_back(pipelined_variant("grouped4", "grouped tile order, GROUP_M 4", TileOrder::grouped, 4, Activation::none));
  v.push_back(pipelined_variant("grouped8", "grouped tile order, GROUP_M 8 (Triton's default)", TileOrder::grouped, 8,
                                Activation::none));
  v.push_back(
      pipelined_variant("grouped16", "grouped tile order, GROUP_M 16", TileOrder::grouped, 16, Activation::none));
  v.push_back(pipelined_variant("grouped8_relu", "grouped8, relu fused into the epilogue", TileOrder::grouped, 8,
                                Activation::relu));
  v.push_back(pipelined_variant("grouped8_leaky_relu", "grouped8, leaky_relu fused into the epilogue",
                                TileOrder::grouped, 8, Activation::leaky_relu));
  v.push_back(pipelined_variant("grouped8_gelu", "grouped8, gelu (tanh form) fused into the epilogue",
                                TileOrder::grouped, 8, Activation::gelu));
  v.push_back(pipelined_variant("grouped8_silu", "grouped8, silu fused into the epilogue", TileOrder::grouped, 8,
                                Activation::silu));

  // The same GEMM without the fused epilogue, then gelu as a second pass over C.
  Variant unfused = pipelined_variant("unfused_gelu", "grouped8 GEMM, then gelu as a separate pass over C",
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
  v.push_back(other_tile_variant<Pipelined128x128>("grouped8_128x128", "grouped8 with 128x128x32 tiles, 2 blocks per SM"));
  return v;
}

}  // namespace

int main(int argc, char** argv) { return wb::run_lesson("lesson03_grouped", variants(), argc, argv); }
