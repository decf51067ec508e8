// Lesson 05 step 6's kernels, instantiated for ptxas: check.sh reads what
// `ptxas -v` reports for them. At lesson 04's 40 registers a thread the pass
// warps spilled (80 bytes a thread for GELU), and ran 7-9% slower for it.
#include "05_backward/layout_gemm.cuh"

void launch_every_step6_kernel(const wb::backward::PassInsideArgs& g, cudaStream_t stream) {
  for (const wb::Activation act : {wb::Activation::relu, wb::Activation::gelu, wb::Activation::silu})
    wb::backward::launch_pass_inside(g, act, nullptr, stream);
}
