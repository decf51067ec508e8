// The problem of lessons 01-04: C = act(A B), A (M x K), B (K x N) and C
// (M x N) row-major fp16, fp32 accumulation, any M, N, K >= 1. The reference
// is cuBLAS's cublasGemmEx (fp16 in and out, fp32 compute); a variant that
// fuses an activation into its epilogue declares it, and the check applies it
// to cuBLAS's output and to the fp64 rows.
//
// Variants are written against the kernels' own types (GemmArgs, GemmShape),
// so a kernel's launcher and config plug in directly:
//   {.name = "coalesced", .what = "...", .min_cc = 75,
//    .config = naive::naive_config<ThreadMap::coalesced>,
//    .launch = naive::launch_naive<ThreadMap::coalesced>}
#pragma once

#include <string>
#include <vector>

#include "common/gemm.cuh"
#include "harness/harness.cuh"

namespace wb {

using GemmVariant = TypedVariant<GemmArgs, GemmShape>;

Problem gemm_problem();

// C = A B, row-major fp16, by cublasGemmEx with fp32 compute: the reference of
// the lessons whose product this is.
void cublas_gemm_rowmajor(cublasHandle_t h, const __half* a, const __half* b, __half* c, int m, int n, int k);

// fp64 rows `rows` of A B, A (.. x K) and B (K x N) fp16 row-major.
std::vector<double> fp64_product_rows(const HostTensor& a, const HostTensor& b, int64_t n, int64_t k,
                                      const std::vector<int64_t>& rows);
GemmShape gemm_shape(const ProblemSize& s);
GemmArgs gemm_args(const Buffers& b);

// The lesson `id` of the catalog, on the GEMM problem, with these variants.
Lesson gemm_lesson(const std::string& id, const std::vector<GemmVariant>& variants);

}  // namespace wb
