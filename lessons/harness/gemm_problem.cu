#include "harness/gemm_problem.cuh"

#include <cublas_v2.h>

#include "common/check.cuh"
#include "harness/catalog.hpp"
#include "harness/fp64.hpp"

namespace wb {

namespace {

void cublas_gemm(const Buffers& b, cudaStream_t) {
  const GemmArgs g = gemm_args(b);
  cublas_gemm_rowmajor(b.cublas, g.a, g.b, g.c, g.m, g.n, g.k);
}

// fp64 rows of A B (before any activation).
std::vector<double> gemm_fp64_rows(const ProblemSize& s, const std::vector<HostTensor>& in, size_t,
                                   const std::vector<int64_t>& rows) {
  return fp64_product_rows(in[0], in[1], s.n, s.k, rows);
}

}  // namespace

// cuBLAS is column-major; a row-major C = A B is the column-major C^T = B^T A^T.
void cublas_gemm_rowmajor(cublasHandle_t h, const __half* a, const __half* b, __half* c, int m, int n, int k) {
  const float alpha = 1.0f, beta = 0.0f;
  const cublasStatus_t st = cublasGemmEx(h, CUBLAS_OP_N, CUBLAS_OP_N, n, m, k, &alpha, b, CUDA_R_16F, n, a, CUDA_R_16F,
                                         k, &beta, c, CUDA_R_16F, n, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
  if (st != CUBLAS_STATUS_SUCCESS) throw CudaError("cuBLAS error " + std::to_string(int(st)) + " in cublasGemmEx");
}

std::vector<double> fp64_product_rows(const HostTensor& a, const HostTensor& b, int64_t n, int64_t k,
                                      const std::vector<int64_t>& rows) {
  std::vector<float> a_rows(rows.size() * size_t(k));  // the sampled rows of A, fp16 values: exact in float
  for (size_t r = 0; r < rows.size(); ++r)
    for (int64_t kk = 0; kk < k; ++kk) a_rows[r * size_t(k) + size_t(kk)] = a.at(rows[r], kk);
  std::vector<double> out(rows.size() * size_t(n), 0.0);
  fp64_accumulate_product(a_rows.data(), host_floats(b).data(), out.data(), int64_t(rows.size()), n, k);
  return out;
}

GemmShape gemm_shape(const ProblemSize& s) { return GemmShape{s.m, s.n, s.k}; }

GemmArgs gemm_args(const Buffers& b) {
  return GemmArgs{static_cast<const __half*>(b.inputs[0]),
                  static_cast<const __half*>(b.inputs[1]),
                  static_cast<__half*>(b.outputs[0]),
                  b.size.m,
                  b.size.n,
                  b.size.k,
                  b.trace,
                  b.workspace,
                  b.workspace_bytes};
}

Problem gemm_problem() {
  Problem p;
  p.summary = "C = act(A B)";
  p.inputs = [](const ProblemSize& s) {
    return std::vector<TensorSpec>{{"A", s.m, s.k}, {"B", s.k, s.n}};
  };
  p.outputs = [](const ProblemSize& s) { return std::vector<TensorSpec>{{"C", s.m, s.n}}; };
  p.reference = Reference{"cublas", "cuBLAS", "cuBLAS cublasGemmEx, fp16 in/out, fp32 compute (the reference)",
                          cublas_gemm};
  p.fp64_rows = gemm_fp64_rows;
  p.flops = [](const ProblemSize& s) { return 2.0 * s.m * double(s.n) * s.k; };
  return p;
}

Lesson gemm_lesson(const std::string& id, const std::vector<GemmVariant>& variants) {
  Lesson lesson;
  lesson.info = catalog_entry(id);
  lesson.problem = gemm_problem();
  for (const GemmVariant& v : variants) lesson.variants.push_back(erase_variant(v, gemm_args, gemm_shape));
  return lesson;
}

}  // namespace wb
