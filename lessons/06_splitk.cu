// Lesson 06 - Split-K: skinny products at the memory limit.
//
// The problem: C = A B with few rows, as in inference: A (M x K) holds M = 1
// to 64 tokens' activations, B (K x N) the layer's weights, N and K in the
// thousands. The work is tiny (2 M N K flops) and the bytes are not: every
// weight is read once and used M times, so the time is B's bytes over the
// memory's bandwidth, and the question is how close a kernel gets to it.
//
// What is new: lesson 04's kernel cuts C into 128 x 256 tiles. At M = 1 and
// N = 4096 that is 16 tiles for 132 SMs: 116 SMs idle, and 16 cannot pull
// the weights from memory at the rate 132 can. Smaller tiles help little (32
// tiles of 16 x 128). Split-K cuts the other dimension: each tile's K is
// split into S ranges, one block each, and the S partial sums are added
// afterwards. The wave model picks S: the largest whose tiles x S blocks fit
// in one wave of one block per SM (models/wave_model.hpp): a memory-bound
// block with a deep pipeline keeps enough bytes in flight on its own, and
// fewer, longer units leave fewer partial sums to add. Then how to add:
//   step 1  data_parallel   lesson 04's tma_store kernel: one tile per block, no split
//           small_tiles     16 x 128 tiles (64 x 128 for M > 16), mma.sync, no split
//   step 2  atomic          split-K, each block adds its partial into C with fp16x2
//                           atomics, as the paper's kernel does; C is zeroed first,
//                           inside the timed launch. The adds land in a different order
//                           each run, and so may the result's last bits
//   step 3  workspace       split-K into an fp32 workspace, one slice per split, then a
//                           reduce kernel adds the slices in order: deterministic, two launches
//   step 4  serial          split-K in one launch, deterministic: a tile's blocks add in
//                           turn behind a per-tile semaphore, into an fp32 running sum
//   step 5  streamk         a persistent grid: the tiles' k iterations laid end to end and
//                           split evenly over every resident block (lesson 04's schedule)
//   step 6  streaming       for M <= 8, no tensor cores: each warp streams 512-byte rows of
//                           B with 16-byte evict-first loads; the last block of a column
//                           adds the partials in order
//   step 7  cluster         for M <= 16 on Hopper: one thread keeps a ring of 16 KiB TMA boxes
//                           of B in flight (over 170 KiB per SM from the start), the mma's roles
//                           swapped (the weights its 16 rows, the tokens its 8 columns), and
//                           a strip's splits, launched as one cluster, send their sums into
//                           the owning block's shared memory (st.async): one launch, no
//                           workspace, deterministic
//
// Why faster: split-K puts every SM to work on the weights, so the memory
// system has enough loads in flight to run at its rate. How the partials are
// added decides what is paid for that: atomics cost a memset and contended
// adds, the workspace a second pass over S x M x N floats, the semaphore a
// wait in line, Stream-K nothing of those but a fix-up between neighbours,
// the cluster a hand-over between the shared memories of neighbouring SMs.
// What to look for: under the report, each variant's % of the copy bandwidth
// measured in the same run; the floor, a kernel that only reads the weights,
// timed the same way: the most any variant can gain on cuBLAS; and "model
// predictions" with the split, the waves and how full the last one is. The
// atomic variant's outputs may differ between two runs ("run twice" line);
// the others never do.
//
// Preconditions: any M, N, K >= 1 (N and K not multiples of 8 take 2-byte
// loads in the tiled kernels; the streaming and cluster kernels need them).
// --split-k S forces S (clamped to one k tile per split, and to 8 for the
// cluster kernel; the note says so); 0 lets the wave model choose. The tiled
// kernels need sm_80, data_parallel and cluster sm_90.
//
// Run:  build/bin/lesson06_splitk                                    (M = 1, N = K = 4096)
//       build/bin/lesson06_splitk --m 16 --n 16384 --k 16384
//       build/bin/lesson06_splitk --m 1 --n 14336 --k 4096          (Llama-3-8B up projection)
//       build/bin/lesson06_splitk --m 16 --split-k 4 --variant atomic,serial
// Measured: docs/lessons/06_splitk.md.

#include <cstdio>

#include "04_hopper/hopper_gemm.cuh"
#include "06_splitk/cluster_gemv.cuh"
#include "06_splitk/splitk_gemm.cuh"
#include "06_splitk/streaming_gemv.cuh"
#include "harness/catalog.hpp"
#include "harness/gemm_problem.cuh"
#include "harness/harness.cuh"
#include "harness/report.hpp"
#include "models/wave_model.hpp"

namespace {

using namespace wb;
using splitk::Reduce;

int requested_split(const ProblemSize& s) { return int(s.params.integer("split_k")); }

Variant data_parallel() {
  const hopper::HopperKernel kernel = hopper::hopper_kernel(hopper::HopperStep::persistent_tma_store, Activation::none);
  Variant v;
  v.name = "data_parallel";
  v.what = "lesson 04's tma_store kernel: 128 x 256 tiles, one per block, no split";
  v.min_cc = 90;
  v.config = [f = kernel.config](const ProblemSize& s) { return f(gemm_shape(s)); };
  v.launch = [f = kernel.launch](const Buffers& b, cudaStream_t st) { f(gemm_args(b), st); };
  if (kernel.workspace_bytes)
    v.workspace_bytes = [f = kernel.workspace_bytes](const ProblemSize& s) { return f(gemm_shape(s)); };
  v.note = [](const ProblemSize& s) { return hopper::hopper_fallback_note(gemm_shape(s)); };
  v.model = [](const ProblemSize& s, const KernelConfig& c, const GpuInfo& gpu) {
    const int64_t tiles = int64_t(c.tiles_m) * c.tiles_n;
    char buf[160];
    std::snprintf(buf, sizeof buf, "%lld tiles for %d SMs: %lld SMs idle for the whole launch",
                  static_cast<long long>(tiles), gpu.sm_count,
                  static_cast<long long>(tiles < gpu.sm_count ? gpu.sm_count - tiles : 0));
    (void)s;
    return std::string(buf);
  };
  return v;
}

template <Reduce R>
Variant tiled(const char* name, const char* what) {
  Variant v;
  v.name = name;
  v.what = what;
  v.min_cc = 80;  // cp.async, mma.sync
  v.config = [](const ProblemSize& s) { return splitk::splitk_config<R>(gemm_shape(s), requested_split(s)); };
  v.launch = [](const Buffers& b, cudaStream_t st) { splitk::launch_splitk<R>(gemm_args(b), requested_split(b.size), st); };
  if (R == Reduce::atomic)  // the adds need a zeroed C: part of what the variant costs
    v.prepare = [](const Buffers& b, cudaStream_t st) {
      CUDA_CHECK(cudaMemsetAsync(b.outputs[0], 0, size_t(b.size.m) * size_t(b.size.n) * sizeof(__half), st));
    };
  if (R == Reduce::workspace || R == Reduce::serial || R == Reduce::stream_k)
    v.workspace_bytes = [](const ProblemSize& s) {
      return splitk::splitk_workspace_bytes<R>(gemm_shape(s), requested_split(s));
    };
  v.note = [](const ProblemSize& s) {
    const GemmShape g = gemm_shape(s);
    std::string note;
    if (R != Reduce::none && R != Reduce::stream_k) {
      const splitk::SplitKPlanned q = splitk::plan_splitk<R>(g, requested_split(s));
      note = split_clamp_note(q.wanted, q.splits, q.k_tiles);
    }
    if (g.n % 8 != 0 || g.k % 8 != 0)
      note += std::string(note.empty() ? "" : "; ") + "N or K not a multiple of 8: operands loaded 2 bytes at a time";
    return note;
  };
  v.model = [](const ProblemSize& s, const KernelConfig& c, const GpuInfo& gpu) {
    if (R != Reduce::stream_k) return split_wave_line(c, gpu, 1);
    const int64_t tiles = int64_t(c.tiles_m) * c.tiles_n;
    const int k_tiles = ceil_div(s.k, c.block_k);
    char buf[200];
    std::snprintf(buf, sizeof buf, "%lld blocks (one per SM), each %.1f of the %lld tiles x %d k tiles",
                  static_cast<long long>(c.grid_blocks),
                  double(tiles) * k_tiles / double(c.grid_blocks), static_cast<long long>(tiles), k_tiles);
    return std::string(buf);
  };
  return v;
}

Variant streaming() {
  Variant v;
  v.name = "streaming";
  v.what = "M <= 8: no tensor cores, 16-byte evict-first loads of B, the last block adds the splits in order";
  v.min_cc = 75;
  v.skip = [](const ProblemSize& s) { return splitk::streaming_skip_reason(gemm_shape(s)); };
  v.config = [](const ProblemSize& s) { return splitk::streaming_config(gemm_shape(s), requested_split(s)); };
  v.launch = [](const Buffers& b, cudaStream_t st) {
    splitk::launch_streaming(gemm_args(b), requested_split(b.size), st);
  };
  v.workspace_bytes = [](const ProblemSize& s) {
    return splitk::streaming_workspace_bytes(gemm_shape(s), requested_split(s));
  };
  v.note = [](const ProblemSize& s) {
    const splitk::StreamingPlanned q = splitk::plan_streaming(gemm_shape(s), requested_split(s));
    return split_clamp_note(q.wanted, q.splits, q.k_steps);
  };
  v.model = [](const ProblemSize&, const KernelConfig& c, const GpuInfo& gpu) {
    return split_wave_line(c, gpu, splitk::kStreamBlocksPerSm);
  };
  return v;
}

Variant cluster() {
  Variant v;
  v.name = "cluster";
  v.what = "M <= 16: a TMA ring of B per SM, the mma's roles swapped, a strip's splits added in its cluster's shared memory";
  v.min_cc = 90;
  v.skip = [](const ProblemSize& s) { return splitk::cluster_skip_reason(gemm_shape(s)); };
  v.config = [](const ProblemSize& s) { return splitk::cluster_config(gemm_shape(s), requested_split(s)); };
  v.launch = [](const Buffers& b, cudaStream_t st) { splitk::launch_cluster(gemm_args(b), requested_split(b.size), st); };
  v.note = [](const ProblemSize& s) { return splitk::cluster_split_note(gemm_shape(s), requested_split(s)); };
  v.model = [](const ProblemSize&, const KernelConfig& c, const GpuInfo& gpu) { return split_wave_line(c, gpu, 1); };
  return v;
}

std::vector<Variant> variants() {
  return {
      data_parallel(),
      tiled<Reduce::none>("small_tiles", "16 x 128 tiles (64 x 128 for M > 16), cp.async + mma.sync, no split"),
      tiled<Reduce::atomic>("atomic", "split-K, partials added into C with fp16x2 atomics (C zeroed in the launch)"),
      tiled<Reduce::workspace>("workspace", "split-K into an fp32 workspace, then a kernel adds the slices in order"),
      tiled<Reduce::serial>("serial", "split-K in one launch: a tile's blocks add in turn behind a semaphore"),
      tiled<Reduce::stream_k>("streamk", "every resident block an equal run of the tiles' k iterations (Stream-K)"),
      streaming(),
      cluster(),
  };
}

}  // namespace

int main(int argc, char** argv) {
  Lesson lesson = gemm_lesson("lesson06_splitk", {});
  lesson.problem.summary = "C = A B, A skinny (M tokens), B the weights";
  lesson.problem.params = {ParamSpec{"split_k",
                                     "k ranges per output tile for the split-K variants; 0: the wave model chooses",
                                     "0",
                                     {},
                                     true,
                                     true,
                                     0,
                                     65536}};
  lesson.variants = variants();
  lesson.copy_bytes = [](const ProblemSize& s) { return double(s.k) * double(s.n) * 2.0; };  // the weights
  lesson.read_floor = true;
  lesson.repeat_check = true;
  lesson.default_m = 1;
  lesson.conclusion = [](const RunSummary& run) { return copy_bandwidth_lines(run.results); };
  return run_lesson(lesson, argc, argv);
}
