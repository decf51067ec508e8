// Lesson 04 - Hopper: TMA, an mbarrier pipeline, wgmma, warp specialisation, a
// persistent grid, clusters, a TMA-store epilogue, ping-pong consumers, a
// Stream-K last wave and a balanced grid: the steps that take a CUDA C++ GEMM
// to cuBLAS on an H100 or H200.
//
// What is new since lesson 03 (cp.async stages, mma.sync fed by ldmatrix, the
// grouped order, a fused epilogue: about 0.6x cuBLAS on Hopper): there every
// thread computes addresses and issues its own 16-byte copies, and mma.sync
// multiplies 16 x 8 tiles per warp out of registers that ldmatrix fills first.
// Hopper adds two engines that take that work off the threads. TMA copies a
// whole box of a matrix with one instruction, described by a tensor map built
// on the host, and counts the bytes it delivered on an mbarrier. wgmma is the
// warpgroup (4 warps) MMA: 64 x N x 16 per instruction, reading A and B
// straight from shared memory, asynchronously. Each step is a file in
// kernels/04_hopper/; hopper_gemm.cuh is their table.
//
//   step 1  tma_wgmma           TMA boxes into a 4-stage mbarrier ring, wgmma 64x128x16, one
//                               warpgroup, in order: a slot is refilled only after its wgmmas finish
//   step 2  warp_specialized    a producer warpgroup (one thread issues the copies) and two consumer
//                               warpgroups (wgmma 64x256 each), talking through "full" and "empty"
//                               barriers; setmaxnreg gives the producer's registers to the consumers
//   step 3  persistent          one block per SM walks the tiles in the grouped order (GROUP_M 16)
//   step 4  persistent_cluster  pairs of blocks on vertically adjacent tiles share B through TMA multicast
//   step 5  tma_store           the epilogue staged in shared memory (stmatrix) and written by TMA
//   step 6  pingpong            each consumer owns whole 128x128 tiles; the two take turns
//   step 7  *_gelu, *_relu      the activation fused into the epilogue; half of GELU's pairs take a
//                               polynomial on the FMA pipe instead of a tanh
//   step 8  streamk             a last wave at most half full is shared along K by every block
//   step 9  balanced            step 5 on ceil(tiles / waves) blocks: the same waves, even blocks
//   cublaslt, cublaslt_gelu     NVIDIA's cuBLASLt, with its own fused GELU, for comparison
//
// Why each should be faster, and what to compare in the report (% cuBLAS):
// - step 1 vs lesson 03: no address arithmetic or copies on the threads, and
//   wgmma runs at Hopper's full tensor rate; but in order, the tensor cores
//   wait while a slot is refilled.
// - step 2 vs step 1: copies and math stop waiting for each other.
// - step 3 vs step 2: no block start-up per tile, and the producer loads the
//   next tile while the consumers store this one.
// - step 4 vs step 3: a third less L2 traffic per tile. Expect little: with
//   128 x 256 tiles L2 already serves what the tensor cores consume.
// - step 5 vs step 3: a thread's 128 store instructions per tile leave the
//   path of the wgmmas, and the copy engine drains C during the next tile.
//   This is the step that should reach cuBLAS.
// - step 6 vs step 5: one consumer's epilogue hides under the other's
//   wgmmas, but 128 x 128 tiles load more bytes per multiply-add.
// - step 7 vs step 5: the "fused activations" lines under the report; the
//   target is under 2%, and cuBLASLt's own GELU is the comparison.
// - step 8 vs step 5 where the last wave is mostly empty: the "waves:" line
//   says how full it is and whether Stream-K shares it.
// - step 9 vs step 5: the "grid:" line shows how the tiles fall on its blocks
//   and on one block per SM; idle SMs for the whole launch instead of its end.
//
// Preconditions: TMA needs 16-byte row strides (K % 8 == 0 and N % 8 == 0);
// other shapes run lesson 03's kernel (the report's note says so). wgmma and
// setmaxnreg need sm_90a: on other GPUs the variants are skipped.
//
// Run:  build/bin/lesson04_hopper                                    (4096^3, every variant)
//       build/bin/lesson04_hopper --m 8192 --n 8192 --k 8192
//       build/bin/lesson04_hopper --m 3072 --n 3072 --k 4096 --variant tma_store,streamk,balanced
//                                                                    (a last wave 18% full)
//       build/bin/lesson04_hopper --m 2048 --n 2048 --k 2048 --rounds 45 --reps 900 \
//           --variant balanced,balanced_gelu,cublaslt,cublaslt_gelu    (what fusing GELU costs)
//       build/bin/lesson04_hopper --m 127 --n 257 --k 136             (tails; N % 8 != 0: lesson 03's kernel)
// Measured: docs/lessons/04_hopper.md. The evidence behind each step:
// docs/notes/04_hopper_steps.md and docs/notes/04_gelu_epilogue.md.

#include "04_hopper/hopper_gemm.cuh"
#include "common/cublaslt.cuh"
#include "harness/gemm_problem.cuh"
#include "harness/report.hpp"

namespace {

using wb::Activation;
using wb::GemmArgs;
using wb::GemmShape;
using wb::GemmVariant;
using wb::hopper::HopperStep;

GemmVariant hopper_variant(const char* name, const char* what, HopperStep step, Activation act) {
  GemmVariant v;
  v.name = name;
  v.what = what;
  v.min_cc = 90;  // TMA, mbarrier tx-counts, wgmma, setmaxnreg (sm_90a)
  v.activation = act;
  const wb::hopper::HopperKernel kernel = wb::hopper::hopper_kernel(step, act);
  v.config = kernel.config;
  v.launch = kernel.launch;
  v.workspace_bytes = kernel.workspace_bytes;
  v.note = wb::hopper::hopper_fallback_note;
  return v;
}

// Step 8, with the wave model's line under the report: how full the last wave
// is, and whether Stream-K shares it.
GemmVariant streamk_variant(const char* name, const char* what, Activation act) {
  GemmVariant v = hopper_variant(name, what, HopperStep::streamk, act);
  v.model = [](const GemmShape& s, const wb::KernelConfig& c, const wb::GpuInfo&) {
    return wb::hopper::tma_shape_ok(s) ? wb::stream_k_model_line(s.k, c)
                                       : std::string("lesson 03's kernel (no waves model)");
  };
  return v;
}

// Step 9, with the grid's line under the report: how the tiles fall on its
// blocks, and how they would fall on one block per SM.
GemmVariant balanced_variant(const char* name, const char* what, Activation act) {
  GemmVariant v = hopper_variant(name, what, HopperStep::balanced, act);
  v.model = [](const GemmShape& s, const wb::KernelConfig& c, const wb::GpuInfo& gpu) {
    return wb::hopper::tma_shape_ok(s) ? wb::balanced_grid_model_line(c, gpu)
                                       : std::string("lesson 03's kernel (no grid model)");
  };
  return v;
}

// NVIDIA's library with its own fused epilogue: what fusing costs there, in
// the same run. No tiles, no trace.
GemmVariant cublaslt_variant(const char* name, const char* what, Activation act) {
  GemmVariant v;
  v.name = name;
  v.what = what;
  v.activation = act;
  v.launch = [act](const GemmArgs& g, cudaStream_t stream) { wb::cublaslt_gemm(g, act, stream); };
  v.workspace_bytes = [](const GemmShape&) { return wb::kCublasLtWorkspaceBytes; };
  return v;
}

std::vector<GemmVariant> variants() {
  return {
      hopper_variant("tma_wgmma", "TMA boxes into a 4-stage mbarrier pipeline, wgmma 64x128x16, one warpgroup",
                     HopperStep::tma_wgmma, Activation::none),
      hopper_variant("warp_specialized",
                     "+ producer warpgroup (TMA) and 2 consumer warpgroups (wgmma 64x256), setmaxnreg, 128x256 tiles",
                     HopperStep::warp_specialized, Activation::none),
      hopper_variant("persistent", "+ one block per SM walking the grouped tile order; loads overlap the epilogue",
                     HopperStep::persistent, Activation::none),
      hopper_variant("persistent_cluster",
                     "+ clusters of 2 blocks on vertically adjacent tiles; each B tile is TMA-multicast to both",
                     HopperStep::persistent_cluster, Activation::none),
      hopper_variant("tma_store",
                     "persistent + epilogue staged in shared memory, written by TMA stores that overlap the next tile",
                     HopperStep::persistent_tma_store, Activation::none),
      hopper_variant("tma_store_cluster", "tma_store + step 4's clusters and B multicast",
                     HopperStep::persistent_cluster_tma_store, Activation::none),
      hopper_variant("pingpong",
                     "tma_store, but each consumer owns whole 128x128 tiles and they take turns: one's epilogue runs "
                     "during the other's wgmmas",
                     HopperStep::pingpong, Activation::none),
      hopper_variant("pingpong_gelu", "pingpong + GELU fused into the epilogue (half the pairs tanh, half a polynomial)", HopperStep::pingpong,
                     Activation::gelu),
      hopper_variant("tma_store_gelu", "tma_store + GELU fused into the epilogue (half the pairs tanh, half a polynomial)",
                     HopperStep::persistent_tma_store, Activation::gelu),
      hopper_variant("tma_store_relu", "tma_store + ReLU fused into the epilogue", HopperStep::persistent_tma_store,
                     Activation::relu),
      streamk_variant("streamk",
                      "tma_store, but a last wave at most half full is shared along K by every block (Stream-K)",
                      Activation::none),
      streamk_variant("streamk_gelu", "streamk + GELU fused into the epilogue (half the pairs tanh, half a polynomial)", Activation::gelu),
      streamk_variant("streamk_relu", "streamk + ReLU fused into the epilogue", Activation::relu),
      balanced_variant("balanced",
                       "tma_store on the fewest blocks that take as many waves: every block gets the same number "
                       "of tiles",
                       Activation::none),
      balanced_variant("balanced_gelu", "balanced + GELU fused into the epilogue (half the pairs tanh, half a polynomial)", Activation::gelu),
      balanced_variant("balanced_relu", "balanced + ReLU fused into the epilogue", Activation::relu),
      cublaslt_variant("cublaslt", "NVIDIA's cuBLASLt (cublasLtMatmul, its heuristic's choice), no epilogue",
                       Activation::none),
      cublaslt_variant("cublaslt_gelu", "cuBLASLt with its own fused GELU epilogue (CUBLASLT_EPILOGUE_GELU)",
                       Activation::gelu),
  };
}

}  // namespace

int main(int argc, char** argv) {
  return wb::run_lesson(wb::gemm_lesson("lesson04_hopper", variants()), argc, argv);
}
