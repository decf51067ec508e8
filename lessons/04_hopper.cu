// Lesson 04: Hopper. TMA, an mbarrier pipeline, wgmma, warp specialisation, a
// persistent grid, clusters, a TMA-store epilogue, ping-pong consumers, a
// Stream-K last wave and a balanced grid: the steps that take a CUDA C++ GEMM to
// cuBLAS on H100/H200, and past it.
//
// Lesson 03 ended with cp.async stages, mma.sync fed by ldmatrix, the grouped
// tile order and a fused epilogue. On Hopper that kernel leaves most of the chip
// idle: every thread computes addresses and issues its own 16-byte copies, and
// mma.sync works on 16 x 8 tiles per warp, out of registers that ldmatrix has to
// fill first. Hopper adds two engines that take that work off the threads:
//
// Step 1  tma_wgmma: TMA + mbarrier pipeline + wgmma (one warpgroup, 128 x 128).
//   TMA (the Tensor Memory Accelerator) copies a whole box (128 x 64 of A, 64 x 64
//   of B) with ONE instruction from one thread, described by a tensor map built
//   on the host. It writes the box in the 128-byte swizzled layout that the
//   tensor cores read without bank conflicts, fills the parts outside the matrix
//   with zeros (tails for free), and counts the bytes it delivered on an mbarrier
//   in shared memory; a thread that waits on the barrier's phase knows the stage
//   has landed. wgmma is the warpgroup (4 warps) MMA: one instruction computes
//   64 x 128 x 16, reading A and B straight from shared memory through 64-bit
//   descriptors, and runs asynchronously. B is K x N row-major, i.e. N-major:
//   wgmma reads it transposed (a flag), so nothing is transposed in memory.
//   The pipeline is still in order: the warpgroup waits for its wgmmas, syncs,
//   refills the slot, waits for the next stage.
//
// Step 2  warp_specialized: producer + 2 consumer warpgroups (128 x 256 x 64, 4 stages).
//   Split the roles. Warpgroup 0 only issues TMA copies (one thread suffices);
//   warpgroups 1 and 2 only issue wgmmas, 64 x 256 each. The roles talk through
//   two barriers per slot: "full" (TMA -> consumers) and "empty" (consumers ->
//   producer), so copies and math never wait for each other in lock-step. The
//   producer needs almost no registers and the consumers need many (a 64 x 256
//   fp32 accumulator is 128 registers per thread): setmaxnreg moves them from one
//   warpgroup to the others (40 and 232 per thread). Each consumer keeps one
//   wgmma group in flight while it waits for the next stage.
//
// Step 3  persistent: one block per SM walks the tiles in the grouped order.
//   A launch of one block per tile pays, per tile, for block start-up, barrier
//   set-up and a pipeline that drains empty before the epilogue. A persistent
//   block takes tiles pid = blockIdx.x, + gridDim.x, ... (wb::tile_of, the same
//   grouped order as lesson 03); its producer runs ahead into the next tile while
//   the consumers store this one, so loads overlap the epilogue. GROUP_M is 16
//   here, not lesson 03's 8: the 132 tiles in flight then cover about 16 x 8
//   tiles of 128 x 256, and 16 x 128 rows of A plus 8 x 256 columns of B is the
//   least operand data a wave of 132 such tiles can read per k step.
//
// Step 4  persistent_cluster: pairs of blocks share B through TMA multicast.
//   Each 128 x 256 tile reads a 128 x 64 slice of A and a 64 x 256 slice of B per
//   stage: 48 KB from L2 for 4 MFLOP. Two blocks launched as a thread-block
//   cluster take vertically adjacent tiles (same columns, so the same B): each
//   copies half of the B panels and TMA multicasts them into BOTH blocks' shared
//   memory, so a block reads 32 KB per stage instead of 48. The price is
//   coordination: a slot is refilled only when the consumers of both blocks
//   have released it (they arrive on each other's "empty" barriers; a plain
//   arrive, since a cluster-scope release would be a memory fence per k tile),
//   and the pair walks the grouped order as one work unit.
//   Measured on H100: about the same speed as step 3. With 128 x 256 tiles L2
//   already serves what the tensor cores consume; the lever is elsewhere.
//
// Step 5  tma_store: the epilogue through shared memory and TMA stores.
//   Until now each consumer thread wrote its accumulator straight to global
//   memory, fp16 pairs of 4 bytes, 8 rows x 16 bytes per warp instruction: 128
//   store instructions per thread per tile, during which no wgmma is issued.
//   Now each consumer warpgroup writes 64 x 128 of its result into a 16 KB
//   shared-memory buffer (in the 128B-swizzled layout, with stmatrix: one warp
//   instruction stores four 8 x 8 fp16 matrices straight from the accumulator
//   layout, conflict-free), fences it for the async proxy, and one thread hands
//   the two 64 x 64 boxes to TMA; then the second half. The copy engine writes whole
//   lines, clips the tails itself, and drains while the consumers are already
//   multiplying the next tile. 4 stages (192 KB) + the 32 KB buffer still fit.
//   This is the step that reaches cuBLAS. `tma_store_cluster` adds step 4's
//   clusters on top, to show that they still do not pay here.
//
// Step 6  pingpong: the two consumers take turns instead of sharing each tile.
//   In step 5 both consumers finish a tile together and then both run the
//   epilogue, so the tensor cores idle for the epilogue's length once per tile.
//   Here each consumer owns whole 128 x 128 tiles (two m64n128k16 wgmmas per
//   k16 step; 128 accumulator registers, as before) and the block's tiles
//   alternate between them. Two named barriers order the mainloops: consumer 1
//   starts issuing tile i+1's wgmmas only once consumer 0 has issued all of
//   tile i's, and so on, so the tensor cores serve one mainloop at a time while
//   the other consumer converts, stages and TMA-stores its finished tile (the
//   CUTLASS "ping-pong" schedule). One ring of stages serves both: the producer
//   loads the tiles in order and each consumer skips the other's stages. Stages
//   shrink to 32 KB, so 6 fit.
//   Measured on H100: about 96% of cuBLAS at 4096^3, 94-95% at 8192^3 and as
//   fast as step 5 only at 2048^3 (and faster than step 5 on small shapes,
//   where 128 x 128 tiles give more blocks work). Yet it takes FEWER cycles:
//   Nsight Compute on one launch at 4096^3 counts 280k cycles against step
//   9's 286k (279k against 285k with the clocks locked at base). What it
//   loses is clock: 1.51 GHz during the launch against 1.59 GHz. The smaller
//   tiles do more work per multiply-add (40.1M instructions against 28.2M;
//   per 1M multiply-adds a 128 x 128 tile loads 32 KB of A and B into shared
//   memory where a 128 x 256 one loads 24, and two m64n128 wgmmas read 12 KB
//   of operands where one m64n256 reads 10), which points at power: the
//   board lowers the clock to stay under its cap. Nor does it hide a fused
//   GELU (pingpong_gelu): with the clocks locked and the tanh form on every
//   pair, 1,330 more cycles per 2048^3 launch against 1,150 for step 9,
//   where nothing overlaps the epilogue (see "What fusing GELU costs"
//   below). Here step 5 stays the kernel to use, and step 7 builds on it.
//   (A second way to hide the epilogue, not kept: step 5's tiles with the
//   last k step split into two column halves, each half stored under the
//   other's wgmmas and the right half under the next tile's first k step. On
//   H100 it ran within 1% of step 5 at 2048-8192^3, and its fused GELU no
//   longer fit the registers beside two accumulators.)
//
// Step 7  tma_store_gelu, tma_store_relu: step 5's kernel (the fastest) with the
//   activation fused into the epilogue (a template parameter, so `none` costs
//   nothing). Compare with `tma_store`: the fused epilogue should cost < 2%.
//   In step 5 the tensor cores wait while the consumers run the epilogue, so
//   every instruction there counts (the whole epilogue, stores included, costs
//   about 3% at 4096^3: measured by keeping the results but not storing them).
//   GELU's tanh runs on the special-function unit, 16 ops per SM per clock
//   against 128 fp32 multiply-adds: one tanh.approx.f32 per output cost about
//   3% on H100, and with tanh.approx.f16x2 on pairs but the rest in fp32,
//   about 2%. Rounding the pair to fp16 first (as the store does anyway) and
//   evaluating GELU in half2 arithmetic, 5 half2 ops and one tanh.approx.f16x2
//   per pair: about 1% at 4096^3 and 8192^3, but 2-2.5% at 2048^3 (1-3% run to
//   run): the cost comes once per tile, and a tile at K = 2048 holds half the
//   multiply-adds of one at 4096. What is left waits on the special-function
//   unit: the two MUFU.TANH.F16 that the SASS shows for one tanh.approx.f16x2
//   (one per half: that unit still does one op per output) take 16 of its
//   cycles per warp instruction, while the 5 half2 ops take 10 of the FMA
//   pipe's. So half the pairs take a GELU with no tanh at all, a polynomial
//   on the FMA pipe (gelu_poly_half2): a fifth fewer extra cycles at 2048^3
//   and a quarter fewer at 4096^3 than the tanh form on every pair ("What
//   fusing GELU costs", below).
//   Timed at 2048^3 on H100 (45 shuffled rounds of one launch): 0.5-2.0%
//   with a quarter of the pairs on the polynomial against 1.2-2.5% with none
//   (five runs of each alternating), and 0.9-1.5% with half against 1.1-2.4%
//   with a quarter (four runs of each). One launch there takes 28 us and
//   single launches scatter by a few percent, so that few launches put the
//   figure anywhere in 0-2.8% from run to run; with 45 rounds of 20 launches
//   (900 each, as the GPU check now runs), fifteen runs gave 1.1-1.7%
//   (README). So GELU costs about 1.4% at 2048^3 (554-897 of 44,300 cycles
//   with the clocks locked), 1% at 4096^3 and 0.6% at 8192^3. The tanh form is
//   within 1.5 fp16 ulps of the exact GELU, or within 1.2e-3 where x < 0 and
//   the result is tiny (1 + tanh cancels); the polynomial within 7.3e-4 there
//   and 3 ulps for small x > 0 (tests/activation_gpu_test.cu checks both on
//   every fp16 input). The GEMM is checked against fp64 like every variant.
//
// Step 8  streamk: Stream-K for a last wave that is mostly empty.
//   A persistent grid of 132 blocks takes 128 x 256 tiles 132 at a time. At
//   3072 x 3072 there are 288 tiles: two full waves and a third of 24 tiles,
//   during which 108 SMs idle: the launch takes 3 tile-times for 2.18 of work.
//   Stream-K (schedule/stream_k.hpp) lays the 24 leftover tiles' k tiles end
//   to end (24 x 64 at K = 4096) and gives each block an equal run of them,
//   11.6 k tiles: the last wave takes 0.18 of a tile-time on every SM instead
//   of a whole one on 24. A tile split between blocks is summed: the block that
//   computed its end writes an fp32 partial (64 KB per consumer, coalesced, in
//   the accumulator's own layout) and raises a flag; the block that computed
//   its start waits for the flags, adds the partials and stores the tile.
//   Measured on H100 at 3072 x 3072 x 4096: 0.133 ms -> 0.119 ms, 11-12%
//   faster than step 5 (78% -> 88% of cuBLAS, which picks other tiles here);
//   at 2304 x 4608 x 4096 (last wave 45% full) 1-2% faster.
//   When not to: at 4096^3 the last wave is 88% full (512 tiles), and sharing
//   it measured 8-14% SLOWER than leaving 16 SMs idle, and still 6-9% slower
//   with the partial sums left out (wrong results, timing only). So the fix-up
//   is not the cost; the blocks are: sharing puts every block at a different k
//   at the same moment, so the blocks in flight no longer read the same k
//   slices of A and B, and L2 serves fewer of their loads. The plan therefore
//   shares a last wave only when it is at most half full; otherwise streamk
//   runs step 5's schedule (about 1% slower than step 5 itself at 4096^3: the
//   same work in a larger kernel). The line under the report says which.
//   Nsight Compute on one launch at 4096^3, sharing forced (H100): DRAM reads
//   148 -> 195 MB, L2 hit rate 75.6% -> 73.1%, SM active cycles +9.5%.
//
// Step 9  balanced: the fewest blocks that take as many waves.
//   Step 3 launches one block per SM. At 4096^3 that is 132 blocks for 512
//   tiles: 116 blocks take 4 tiles and 16 take 3, and the launch lasts 4
//   tile-times whatever the 16 do. 128 blocks also take 4 tile-times, and each
//   gets exactly 4 tiles. In general ceil(tiles / waves) blocks
//   (models/wave_model.hpp, even_wave_blocks) cost no extra wave; the SMs left
//   over idle for the whole launch instead of for its last wave. Two things
//   then get better, both measured with Nsight Compute on one launch (H100).
//   The tiles in flight are whole groups of the grouped order (128 = 16 tile
//   rows x 8 columns), so they read the same slices of A and B at the same time
//   (4096^3: DRAM reads 148 -> 132 MB, L2 hit rate 75.7% -> 78.0%). And fewer
//   busy SMs share the power budget, so they clock higher (3072 x 3072 x 4096,
//   96 blocks of 3 tiles: 1.61 -> 1.67 GHz, DRAM reads 97 -> 90 MB, 134.8 ->
//   128.4 us). Against step 5 in the GPU check (9 rounds, % of cuBLAS): 4096^3
//   100.1 -> 100.6, 8192^3 102.5 -> 102.5 (+0.4 to +0.6 in two other checks),
//   3072 x 3072 x 4096 77.4 -> 82.3, 2304 x 4608 x 4096 94.7 -> 99.6; at 2048^3
//   nothing changes (128 tiles, one block each either way). Stream-K (step 8)
//   answers the same idle last wave the other way round: it gives the idle SMs
//   work, and pays with partial sums and blocks at scattered k. It still wins
//   where the last wave is nearly empty (3072^2, 18% full: 88.1), but at
//   2304 x 4608 (45% full) balanced beats it (Stream-K 97.1). A sweep over
//   M x 3072 x 4096 (H100, 9 rounds, % of cuBLAS) puts the crossover near half
//   full, where step 8 stops sharing:
//     last wave       18%   27%   36%   45%   55%
//     tma_store      77.6  84.9  85.1  89.4  100.5
//     streamk        87.7  93.7  90.5  92.8   98.8  (55%: kept whole, 132 blocks)
//     balanced       81.7  88.5  88.2  92.5  103.2
//   The line under the report shows how the tiles fall on the blocks, and how
//   they would fall on one block per SM.
//
// Where the time goes (tma_store at 4096^3, Nsight Compute, H100): the tensor
// pipe is busy 90% of the launch's cycles and 96% of the cycles an SM is
// active; SMs are active 94% of the launch (the last wave is 88% full, and the
// grid ramps up and down); L2 runs at 55% of its throughput, DRAM at 29%. The
// kernel is bound by the tensor cores, and they run below the 1.98 GHz
// maximum clock: 1.54 GHz on average during that launch; in a sustained run
// both it and cuBLAS hold the board at its 700 W power cap, at 1.33-1.46 GHz
// (nvidia-smi). Tried and not kept, each within run-to-run noise on H100 at
// 2048-8192^3: L2 eviction hints (evict_first on C's TMA stores, evict_last
// on A and B's loads); TMA multicast (step 4, tma_store_cluster), which cuts
// L2 reads by a third where L2 is not the limit.
//
// What fusing GELU costs, counted (Nsight Compute, clocks locked at base, H100,
// 2048^3, one tile per block). With the tanh form on every pair: 1,110-1,330
// more cycles per launch on a kernel of about 44,000, 2.5-3%; at 4096^3 about
// 1,300 per tile. Per pair of outputs GELU adds 8 warp instructions (3 HMUL2,
// 2 HFMA2, the two MUFU.TANH.F16 of tanh.approx.f16x2, a PRMT), 1,024 issue
// slots per warp scheduler per tile, but issue is not what it waits on. A
// loop of nothing but one kind of instruction (4 warps per scheduler) takes,
// per warp instruction per scheduler: tanh.approx.f16x2 16 cycles (16 results
// per SM per clock, as for tanh.approx.f32 and ex2.approx.f16x2 and .bf16x2:
// there is no faster special function), HFMA2 2 (half rate on the FMA pipe),
// HMNMX2 1, FFMA about 1. Mixed, FFMA shares the FMA pipe with HFMA2 (8 of
// each: 29 cycles, against 16 + 10 apart), so fp32 arithmetic is no way
// round it; HMNMX2 and the tanh run beside HFMA2 for nothing. (In a kernel with no wgmma, ptxas issues about half
// of the HFMA2 to the MMA pipe instead, as HFMA2.MMA; with one wgmma anywhere
// in the kernel, none: so says the SASS of probe kernels that differ only in
// that. setmaxnreg, launch bounds and register pressure change nothing.) Per
// tile that is 2,048 cycles of the special-function unit per scheduler
// against 1,280 of the FMA pipe, part of it hidden under the stores. Taking
// pieces out of the epilogue agrees (extra cycles per 2048^3 launch, wrong
// results, timing only): the tanh alone, 3 instructions per pair, 860-1,050;
// GELU with its tanh replaced by a min, 6 instructions and no special
// function, 380-600.
// Hence the split in step 7: gelu_poly_half2 computes max(x, 0) - t r(s),
// t = min(|x|, 4), r a degree-6 polynomial in s = t/2 - 1
// (scripts/fit-gelu-poly.py fits it), 8 FMA-pipe ops, a min and a max, 16
// cycles of the FMA pipe per warp instruction and none of the
// special-function unit. By these counts about a quarter of the pairs on it
// would even out the two pipes at about 12 cycles instead of 16; measured
// the same way, half did best at 2048^3 (the sweeps are beside
// kGeluPolySlicesOf8 in kernels/cuda/hopper_gemm.cuh). Its first form,
// x/2 + |x| (1/2 - r), took one more multiply: at half the pairs 758 extra
// cycles at 2048^3 against 1,016 for a quarter, and against the tanh form on
// every pair, in one run, 1,129 -> 923 at 2048^3 and 5,409 -> 4,044 at
// 4096^3; the present form, in two runs against the first, 841 -> 554 and
// 997 -> 897 at 2048^3. On every pair the first form cost 1,700 at 2048^3,
// its FMA pipe then the limit.
// Nor does the cost hide under the tensor cores: storing the left half of the
// tile while the right half's last two k tiles of wgmmas run (the SASS showed
// the overlap) made it 1,540 cycles (again later, with the split: one, two or
// three k tiles deferred, 1,310-1,490 against 1,070 in the same run, and
// `balanced` itself no faster), and ping-pong consumers (step 6), where
// one consumer's epilogue runs during the other's mainloop, lose as many
// cycles to GELU as step 9 (1,330 against 1,150 per 2048^3 launch, 5,250
// against 5,170 at 4096^3, tanh form; as much again with GELU in fp32). The
// epilogue issued beside the other consumer's wgmmas seems to slow them by
// about what it would have cost alone. Two more ways round it, measured the
// same way and not kept (extra cycles per tile at 2048^3 / 4096^3; the tanh
// form 1,250 / 1,270 in that run):
// - The polynomial in fp32 instead: h(x) = 1/2 + x q(x^2), 9 fp32 ops per
//   output, 21 instructions per pair. For every output 2,640 / 2,040; for
//   half the pairs 2,430 / 1,770; for a quarter 1,210 / 1,370.
// - Staggered consumers: consumer 1 starts its first tile 1-3 k tiles after
//   consumer 0, so that consumer 0's epilogue could run under consumer 1's
//   last wgmmas. 1,150-1,230 against 1,330 in the same run, and no gain in
//   the timed runs, probably because with 4 stages the slots consumer 1 still
//   holds are slots the producer cannot refill for consumer 0, so the lead
//   does not last.
//
// cublaslt, cublaslt_gelu: not steps, NVIDIA's library for comparison.
//   cublasLtMatmul with its own fused GELU epilogue (CUBLASLT_EPILOGUE_GELU;
//   kernels/cuda/cublaslt_gemm.cuh), timed in the same run. Its GELU executes
//   the same 131,072 special-function instructions at 2048^3 and costs 3,420
//   cycles at locked clocks (44,090 -> 47,510), three to four times the lesson's; in
//   timed runs 4-6% at 2048^3 and 2-3% at 4096^3 and 8192^3.
//
// Preconditions: TMA needs 16-byte row strides (K % 8 == 0 and N % 8 == 0 for
// fp16). Other shapes run lesson 03's kernel instead; the report's note says so.
// The Hopper kernels need sm_90a (wgmma, setmaxnreg): on other GPUs the
// variants are skipped and the recorded H100/H200 results are shown.
//
// Run:   lesson04_hopper                                 (4096^3, every variant and cuBLAS)
//        lesson04_hopper --m 8192 --n 8192 --k 8192
//        lesson04_hopper --m 3072 --n 3072 --k 4096 --variant tma_store,streamk,balanced   (a last wave 18% full)
//        lesson04_hopper --m 127 --n 257 --k 136         (tails; N % 8 != 0: lesson 03 fallback)
// Look:  each step's TFLOP/s and % of cuBLAS; tma_store against pingpong, and each against its _gelu;
//        streamk against tma_store where the waves line under the report says the last wave is shared;
//        balanced against tma_store, and its grid line; balanced_gelu against cublaslt_gelu.

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
    return wb::hopper::tma_shape_ok(s) ? wb::stream_k_model_line(s.k, c) : std::string("lesson 03's kernel (no waves model)");
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
      hopper_variant("pingpong_gelu", "pingpong + GELU (tanh) fused into the epilogue", HopperStep::pingpong,
                     Activation::gelu),
      hopper_variant("tma_store_gelu", "tma_store + GELU (tanh) fused into the epilogue",
                     HopperStep::persistent_tma_store, Activation::gelu),
      hopper_variant("tma_store_relu", "tma_store + ReLU fused into the epilogue", HopperStep::persistent_tma_store,
                     Activation::relu),
      streamk_variant("streamk",
                      "tma_store, but a last wave at most half full is shared along K by every block (Stream-K)",
                      Activation::none),
      streamk_variant("streamk_gelu", "streamk + GELU (tanh) fused into the epilogue", Activation::gelu),
      streamk_variant("streamk_relu", "streamk + ReLU fused into the epilogue", Activation::relu),
      balanced_variant("balanced",
                       "tma_store on the fewest blocks that take as many waves: every block gets the same number "
                       "of tiles",
                       Activation::none),
      balanced_variant("balanced_gelu", "balanced + GELU (tanh) fused into the epilogue", Activation::gelu),
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
