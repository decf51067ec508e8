#include "harness/catalog.hpp"

#include <stdexcept>

namespace wb {

const std::vector<LessonInfo>& lesson_catalog() {
  static const std::vector<LessonInfo> lessons = {
      {"lesson01_naive", "01", "Naive: one thread per output element", "Triton matmul tutorial",
       "Each thread computes one element of C with a loop over K. Two variants differ only in how "
       "threads map to C: consecutive threads take consecutive columns (coalesced) or consecutive rows.",
       "A warp's 32 loads are served as one transaction when the threads touch neighbouring addresses. "
       "With the row mapping every thread of a warp reads a different row of A and writes a different "
       "row of C, so each warp instruction becomes up to 32 separate transactions.",
       "Compare GB/s and ms of 'coalesced' and 'uncoalesced'; both are far below cuBLAS, because every "
       "element of A and B is fetched K times from cache or memory and no tensor core is used.",
       "Turing (sm_75)"},
      {"lesson02_blocked", "02", "Blocked: shared-memory tiles, then tensor cores", "\"Better matmul\" notebook",
       "A block computes a BLOCK_M x BLOCK_N tile of C, stepping through K in BLOCK_K slices staged in "
       "shared memory (the notebook's 16x16x32 first). Then the tile grows and each warp feeds tensor cores "
       "(mma.sync) from registers, each thread holding many accumulators (register blocking).",
       "A tile reuses every loaded element of A BLOCK_N times and of B BLOCK_M times, so traffic to memory "
       "falls by the tile size; tensor cores do a 16x8x16 product per instruction instead of one FMA.",
       "The 16x16x32 variant against the tensor-core variants and cuBLAS, in the same run.",
       "Turing (sm_75)"},
      {"lesson03_grouped", "03", "Grouped order, fused epilogue, async-copy pipeline",
       "\"Matmul forward and backward\" notebook, Triton tutorial",
       "A 1-D launch whose program id is mapped to a tile by a chosen order (row-major, column-major, "
       "grouped with GROUP_M); an activation fused into the epilogue; a multi-stage cp.async pipeline "
       "that loads the next K slices while the tensor cores work on this one.",
       "Blocks running together share rows of A and columns of B when grouped, so L2 serves more of their "
       "loads; the pipeline hides memory latency; fusing the activation saves a round trip of C.",
       "Row-major vs grouped against the L2 model's prediction (--ncu measures it); fused vs unfused activation.",
       "Ampere (sm_80)"},
      {"lesson04_hopper", "04", "Hopper: TMA, mbarrier pipeline, wgmma, warp specialisation, persistent grid",
       "H100 GEMM worklogs",
       "The Tensor Memory Accelerator copies tiles into shared memory on its own, signalling an mbarrier; "
       "warpgroup MMA (wgmma) reads operands straight from shared memory; a producer warpgroup loads while "
       "consumer warpgroups compute; a persistent grid walks the tiles in grouped order; the epilogue stages C "
       "in shared memory and stores it with TMA while the next tile starts; ping-pong consumers take turns "
       "so one's epilogue overlaps the other's math; Stream-K shares a mostly empty last wave along K; a "
       "balanced grid gives every block the same number of tiles.",
       "Address generation and copies leave the SM's threads, wgmma runs at Hopper's full tensor rate "
       "(mma.sync does not), the persistent grid overlaps one tile's epilogue with the next tile's loads, "
       "Stream-K keeps every SM busy to the end, and the balanced grid keeps the tiles in flight a whole "
       "group of the grouped order while the idle SMs leave power to the busy ones.",
       "Each step against cuBLAS, as the median of interleaved rounds; tma_store against the fused "
       "_gelu and _relu variants for what the epilogue costs; streamk and balanced against tma_store on a "
       "shape whose last wave is nearly empty (--m 3072 --n 3072 --k 4096).", "Hopper (sm_90a)"},
  };
  return lessons;
}

const LessonInfo* find_lesson(const std::string& id) {
  for (const LessonInfo& l : lesson_catalog())
    if (l.id == id) return &l;
  return nullptr;
}

const LessonInfo& catalog_entry(const std::string& id) {
  if (const LessonInfo* l = find_lesson(id)) return *l;
  throw std::out_of_range(id + ": not in the lesson catalogue");
}

std::string lesson_explanation(const LessonInfo& l) {
  std::string s;
  s += "Lesson " + l.number + " - " + l.title + "  (" + l.id + ")\n";
  s += "  idea from: " + l.idea_from + "; runs on " + l.oldest_gpu + " and newer\n";
  s += "  new here:  " + l.new_here + "\n";
  s += "  faster:    " + l.why_faster + "\n";
  s += "  look for:  " + l.check + "\n";
  return s;
}

}  // namespace wb
