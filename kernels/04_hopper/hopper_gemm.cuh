// Lesson 04's steps in one table: for each step and fused activation, the
// kernel's launch facts (tile sizes, grid, occupancy, trace units), its launch
// and the workspace it needs, built from the same template instantiation so
// the three cannot disagree. Shapes TMA cannot describe (K or N not a multiple
// of 8) run lesson 03's kernel instead.
//
//   step 1  tma_wgmma          step1_tma_wgmma.cuh
//   step 2  warp_specialized   step2_warp_specialized.cuh  (the kernel of steps 2-5, 7, 9)
//   step 3  persistent         step3_persistent.cuh        (a schedule)
//   step 4  persistent_cluster step4_cluster.cuh           (a schedule)
//   step 5  tma_store          step5_tma_store.cuh         (an epilogue)
//   step 6  pingpong           step6_pingpong.cuh
//   step 7  *_gelu, *_relu     step7_fused_activation.cuh  (what the epilogue applies)
//   step 8  streamk            step8_streamk.cuh
//   step 9  balanced           step9_balanced.cuh          (a grid)
#pragma once

#include <functional>

#include "03_grouped/pipelined_mma.cuh"  // lesson 03: the fallback for shapes TMA cannot describe
#include "04_hopper/step1_tma_wgmma.cuh"
#include "04_hopper/step2_warp_specialized.cuh"
#include "04_hopper/step3_persistent.cuh"
#include "04_hopper/step4_cluster.cuh"
#include "04_hopper/step5_tma_store.cuh"
#include "04_hopper/step6_pingpong.cuh"
#include "04_hopper/step8_streamk.cuh"
#include "04_hopper/step9_balanced.cuh"

namespace wb::hopper {

enum class HopperStep {
  tma_wgmma,                     // step 1
  warp_specialized,              // step 2
  persistent,                    // step 3
  persistent_cluster,            // step 4: step 3 + clusters with B multicast
  persistent_tma_store,          // step 5: step 3 + the TMA-store epilogue
  persistent_cluster_tma_store,  // step 5 + step 4's clusters
  pingpong,                      // step 6: step 5 with ping-pong consumers, 128 x 128 tiles
  streamk,                       // step 8: step 5 with a Stream-K last wave
  balanced,                      // step 9: step 5 on the fewest blocks that take as many waves
};

// One step with one fused activation.
struct HopperKernel {
  std::function<KernelConfig(const GemmShape&)> config;
  std::function<void(const GemmArgs&, cudaStream_t)> launch;
  std::function<size_t(const GemmShape&)> workspace_bytes;  // bytes the harness provides; empty: none
};

namespace detail {

// Steps 1 and 2 are taught without an activation.
inline void require_no_activation(Activation act, const char* step) {
  if (act != Activation::none)
    throw CudaError(std::string("lesson 04's ") + step + " step has no fused activation");
}

// A step of the warp-specialised kernel: its schedule, its epilogue (a
// template of the activation) and its grid (the schedule's, or step 9's).
template <class Schedule, template <Activation> class Epilogue, bool kActivations>
HopperKernel warp_specialized_step(Activation act, bool balanced) {
  if constexpr (!kActivations) require_no_activation(act, "warp_specialized");
  const auto grid = [balanced](const GemmShape& s) {
    const int resident = resident_units<Schedule, Epilogue<Activation::none>>();
    return balanced ? balanced_grid(s, resident) : Schedule::grid(s, resident);
  };
  HopperKernel h;
  h.config = [grid](const GemmShape& s) {
    return warp_specialized_config<Schedule, Epilogue<Activation::none>>(s, grid(s));
  };
  h.launch = [grid, act](const GemmArgs& g, cudaStream_t stream) {
    const int blocks = grid(GemmShape{g.m, g.n, g.k});
    if constexpr (kActivations) {
      with_activation(act, [&](auto a) { launch_warp_specialized<Schedule, Epilogue<a.value>>(g, stream, blocks); });
    } else {
      launch_warp_specialized<Schedule, Epilogue<Activation::none>>(g, stream, blocks);
    }
  };
  return h;
}

inline HopperKernel tma_wgmma_step(Activation act) {
  require_no_activation(act, "tma_wgmma");
  return HopperKernel{tma_wgmma_config, launch_tma_wgmma, {}};
}

template <class Shape>
HopperKernel pingpong_step(Activation act) {
  HopperKernel h;
  h.config = pingpong_config<Shape>;
  h.launch = [act](const GemmArgs& g, cudaStream_t stream) { launch_pingpong_with_activation<Shape>(g, act, stream); };
  return h;
}

inline HopperKernel streamk_step(Activation act) {
  HopperKernel h;
  h.config = streamk_config;
  h.launch = [act](const GemmArgs& g, cudaStream_t stream) {
    with_activation(act, [&](auto a) { launch_streamk<a.value>(g, stream); });
  };
  h.workspace_bytes = [](const GemmShape& s) { return streamk_workspace_bytes(s); };
  return h;
}

// Shapes TMA cannot describe go to lesson 03's kernel (hopper_fallback_note says why).
inline HopperKernel with_lesson03_fallback(HopperKernel h, Activation act) {
  HopperKernel out;
  out.config = [h](const GemmShape& s) {
    return tma_shape_ok(s) ? h.config(s) : pipelined_gemm_config(s, TileOrder::grouped, kGroupM);
  };
  out.launch = [h, act](const GemmArgs& g, cudaStream_t stream) {
    if (tma_shape_ok(GemmShape{g.m, g.n, g.k})) {
      h.launch(g, stream);
    } else {
      launch_pipelined_gemm(g, TileOrder::grouped, kGroupM, act, stream);
    }
  };
  if (h.workspace_bytes)
    out.workspace_bytes = [h](const GemmShape& s) { return tma_shape_ok(s) ? h.workspace_bytes(s) : size_t(0); };
  return out;
}

}  // namespace detail

// The dispatch, written once.
inline HopperKernel hopper_kernel(HopperStep step, Activation act) {
  using namespace detail;
  HopperKernel h;
  switch (step) {
    case HopperStep::tma_wgmma: h = tma_wgmma_step(act); break;
    case HopperStep::warp_specialized:
      h = warp_specialized_step<OneTilePerBlock, DirectStore, false>(act, false);
      break;
    case HopperStep::persistent: h = warp_specialized_step<PersistentTiles, DirectStore, true>(act, false); break;
    case HopperStep::persistent_cluster: h = warp_specialized_step<ClusterPairs, DirectStore, true>(act, false); break;
    case HopperStep::persistent_tma_store:
      h = warp_specialized_step<PersistentTiles, TmaStoreEpilogue, true>(act, false);
      break;
    case HopperStep::persistent_cluster_tma_store:
      h = warp_specialized_step<ClusterPairs, TmaStoreClusterEpilogue, true>(act, false);
      break;
    case HopperStep::pingpong: h = pingpong_step<PingpongSquare>(act); break;
    case HopperStep::streamk: h = streamk_step(act); break;
    case HopperStep::balanced: h = warp_specialized_step<PersistentTiles, TmaStoreEpilogue, true>(act, true); break;
  }
  return with_lesson03_fallback(std::move(h), act);
}

}  // namespace wb::hopper
