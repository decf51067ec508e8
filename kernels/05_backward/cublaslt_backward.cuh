// Lesson 05's comparison: NVIDIA's cuBLASLt computing the two backward
// products from the same buffers, with the bias gradient fused into dW's
// product by the library's epilogue (CUBLASLT_EPILOGUE_BGRADA: the sums of the
// "A" operand over the product's k, which for dWᵀ = dPᵀ X is the column sums
// of dP). Host code only; the workspace (kCublasLtWorkspaceBytes) is the caller's.
//
// cuBLASLt is column-major: a row-major (r x c) matrix is its (c x r) transpose.
//   dX: dXᵀ (K x M) = W · dPᵀ      "A" = W stored (N x K), transposed; "B" = dP stored (N x M)
//   dW: dWᵀ (N x K) = dPᵀ · X      "A" = dP stored (N x M); "B" = X stored (K x M), transposed
#pragma once

#include <cublasLt.h>

#include <map>
#include <tuple>

#include "05_backward/backward.cuh"
#include "common/cublaslt.cuh"

namespace wb::backward {

enum class LtProduct { dx, dw };

namespace lt_detail {

using cublaslt_detail::check;
using cublaslt_detail::Plan;

inline cublasLtMatrixLayout_t layout(uint64_t rows, uint64_t cols) {
  cublasLtMatrixLayout_t l = nullptr;
  check(cublasLtMatrixLayoutCreate(&l, CUDA_R_16F, rows, cols, int64_t(rows)), "cublasLtMatrixLayoutCreate");
  return l;
}

inline const Plan& plan_for(LtProduct which, int m, int n, int k, bool bias) {
  static std::map<std::tuple<int, int, int, int, bool>, Plan> plans;
  const auto key = std::make_tuple(int(which), m, n, k, bias);
  if (auto it = plans.find(key); it != plans.end()) return it->second;
  Plan p;
  check(cublasLtMatmulDescCreate(&p.op, CUBLAS_COMPUTE_32F, CUDA_R_32F), "cublasLtMatmulDescCreate");
  const cublasOperation_t t = CUBLAS_OP_T, nt = CUBLAS_OP_N;
  const bool dx = which == LtProduct::dx;
  check(cublasLtMatmulDescSetAttribute(p.op, CUBLASLT_MATMUL_DESC_TRANSA, dx ? &t : &nt, sizeof t), "set TRANSA");
  check(cublasLtMatmulDescSetAttribute(p.op, CUBLASLT_MATMUL_DESC_TRANSB, dx ? &nt : &t, sizeof t), "set TRANSB");
  if (!dx && bias) {
    const cublasLtEpilogue_t epilogue = CUBLASLT_EPILOGUE_BGRADA;
    check(cublasLtMatmulDescSetAttribute(p.op, CUBLASLT_MATMUL_DESC_EPILOGUE, &epilogue, sizeof epilogue),
          "set EPILOGUE");
    const cudaDataType_t bias_type = CUDA_R_16F;
    check(cublasLtMatmulDescSetAttribute(p.op, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, &bias_type, sizeof bias_type),
          "set BIAS_DATA_TYPE");
  }
  if (dx) {  // (K x M) = op(W: N x K) op(dP: N x M)
    p.a = layout(uint64_t(n), uint64_t(k));
    p.b = layout(uint64_t(n), uint64_t(m));
    p.c = layout(uint64_t(k), uint64_t(m));
  } else {   // (N x K) = op(dP: N x M) op(X: K x M)
    p.a = layout(uint64_t(n), uint64_t(m));
    p.b = layout(uint64_t(k), uint64_t(m));
    p.c = layout(uint64_t(n), uint64_t(k));
  }
  p.algo = cublaslt_detail::best_algo(cublaslt_detail::library().handle, p,
                                      std::string("the ") + (dx ? "dX" : "dW") + " product at " + std::to_string(m) +
                                          "x" + std::to_string(n) + "x" + std::to_string(k) +
                                          (bias && !dx ? " with the BGRADA epilogue" : ""));
  return plans.emplace(key, p).first->second;
}

}  // namespace lt_detail

// Enqueues one product; dW with a bias also writes db.
inline void cublaslt_transposed_gemm(LtProduct which, const BackwardArgs& a, void* workspace, cudaStream_t stream) {
  using namespace lt_detail;
  const bool bias = a.db != nullptr;
  const Plan& p = plan_for(which, a.m, a.n, a.k, bias);
  if (which == LtProduct::dw && bias) {
    const void* db = a.db;
    check(cublasLtMatmulDescSetAttribute(p.op, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &db, sizeof db),
          "set BIAS_POINTER");
  }
  const float alpha = 1.0f, beta = 0.0f;
  const bool dx = which == LtProduct::dx;
  const void* A = dx ? static_cast<const void*>(a.w) : static_cast<const void*>(a.dp);
  const void* B = dx ? static_cast<const void*>(a.dp) : static_cast<const void*>(a.x);
  void* C = dx ? static_cast<void*>(a.dx) : static_cast<void*>(a.dw);
  check(cublasLtMatmul(cublaslt_detail::library().handle, p.op, &alpha, A, p.a, B, p.b, &beta, C, p.c, C, p.c,
                       &p.algo, workspace, kCublasLtWorkspaceBytes, stream),
        "cublasLtMatmul");
}

}  // namespace wb::backward
