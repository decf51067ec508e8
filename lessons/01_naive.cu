// Lesson 01 - naive: one thread per output element.
//
// What is new: everything. C = A B with A (M x K), B (K x N), C (M x N), all
// row-major fp16, accumulated in fp32. A block of 16 x 16 threads computes a
// 16 x 16 tile of C and each thread loops over K for one element.
//
// What to look for: the two variants do the same arithmetic and ask for the same
// bytes; they differ only in which thread computes which element. When the 32
// threads of a warp touch neighbouring addresses ("coalesced"), the memory system
// serves the warp's load or store as one transaction; when they touch 16 different
// rows ("uncoalesced"), it takes 16. Compare the ms and the GB/s column (bytes the
// threads request, A and B once per output element) of the two variants.
// Both are far from cuBLAS: every element of A and B is fetched K times, from
// cache at best, and no tensor core does any of the work. Lesson 02 fixes both.
//
// Run:  build/bin/lesson01_naive                      (4096^3, all variants)
//       build/bin/lesson01_naive --m 1000 --n 1000 --k 1000 --trace t.json
// Measured: docs/lessons/01_naive.md.

#include "01_naive/naive.cuh"
#include "harness/gemm_problem.cuh"

namespace {

using namespace wb;
using naive::ThreadMap;

// Both variants count the bytes their threads ask for: most are served by L1
// and L2, so their GB/s can exceed what DRAM delivers.
constexpr const char* kRequestedBytes =
    "the bytes its threads ask for (a row of A and a column of B per output, C once), mostly served by caches, "
    "so above DRAM bandwidth";

std::vector<GemmVariant> variants() {
  return {
      {.name = "coalesced",
       .what = "thread x -> column: a warp reads and writes neighbouring addresses",
       .min_cc = 75,
       .config = naive::naive_config<ThreadMap::coalesced>,
       .launch = naive::launch_naive<ThreadMap::coalesced>,
       .bytes = naive::naive_requested_bytes,
       .bytes_what = kRequestedBytes},
      {.name = "uncoalesced",
       .what = "thread x -> row: a warp touches 16 rows per load and store",
       .min_cc = 75,
       .config = naive::naive_config<ThreadMap::uncoalesced>,
       .launch = naive::launch_naive<ThreadMap::uncoalesced>,
       .bytes = naive::naive_requested_bytes,
       .bytes_what = kRequestedBytes},
  };
}

}  // namespace

int main(int argc, char** argv) {
  return wb::run_lesson(wb::gemm_lesson("lesson01_naive", variants()), argc, argv);
}
