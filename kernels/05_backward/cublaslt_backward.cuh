// Lesson 05's comparison: NVIDIA's cuBLASLt computing the two backward
// products from the same buffers, with the bias gradient fused into dW's
// product by the library's epilogue (CUBLASLT_EPILOGUE_BGRADA: the sums of the
// "A" operand over the product's k, which for dWᵀ = dPᵀ X is the column sums
// of dP). Host code only; the workspace (kCublasLtWorkspaceBytes) is the caller's.
//
// cuBLASLt is column-major: a row-major (r x c) matrix is its (c x r) transpose.
//   dX: dXᵀ (K x M) = W · dPᵀ      "A" = W stored (N x K), transposed; "B" = dP stored (N x M)
//   dW: dWᵀ (N x K) = dPᵀ · X      "A" = dP stored (N x M); "B" = X stored (K x M), transposed
// And a training step's forward (--part train), Zᵀ (N x M) = W · Xᵀ, with the
// bias and, where the library has it, the activation in its epilogue; and
// (--part chain) the product that makes dZ, dZᵀ (N x M) = V · dYᵀ, with the
// library's DGELU(_BGRAD) epilogue reading P as its auxiliary input.
#pragma once

#include <cublasLt.h>

#include <map>
#include <string>
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

namespace lt_detail {

inline const Plan& forward_plan(cublasLtEpilogue_t epilogue, int m, int n, int k) {
  static std::map<std::tuple<int, int, int, int>, Plan> plans;
  const auto key = std::make_tuple(int(epilogue), m, n, k);
  if (auto it = plans.find(key); it != plans.end()) return it->second;
  Plan p;
  check(cublasLtMatmulDescCreate(&p.op, CUBLAS_COMPUTE_32F, CUDA_R_32F), "cublasLtMatmulDescCreate");
  check(cublasLtMatmulDescSetAttribute(p.op, CUBLASLT_MATMUL_DESC_EPILOGUE, &epilogue, sizeof epilogue),
        "set EPILOGUE");
  const cudaDataType_t half_type = CUDA_R_16F;
  check(cublasLtMatmulDescSetAttribute(p.op, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, &half_type, sizeof half_type),
        "set BIAS_DATA_TYPE");
  if (epilogue == CUBLASLT_EPILOGUE_GELU_AUX || epilogue == CUBLASLT_EPILOGUE_GELU_AUX_BIAS) {
    const int64_t ld = n;
    check(cublasLtMatmulDescSetAttribute(p.op, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_LD, &ld, sizeof ld), "set AUX_LD");
    check(cublasLtMatmulDescSetAttribute(p.op, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_DATA_TYPE, &half_type,
                                         sizeof half_type),
          "set AUX_DATA_TYPE");
  }
  p.a = layout(uint64_t(n), uint64_t(k));  // W
  p.b = layout(uint64_t(k), uint64_t(m));  // X
  p.c = layout(uint64_t(n), uint64_t(m));  // Z (or P)
  p.algo = cublaslt_detail::best_algo(cublaslt_detail::library().handle, p,
                                      "the forward at " + std::to_string(m) + "x" + std::to_string(n) + "x" +
                                          std::to_string(k) + " with epilogue " + std::to_string(int(epilogue)));
  return plans.emplace(key, p).first->second;
}

}  // namespace lt_detail

// A training step's forward by cuBLASLt: `out` = epilogue(X W [+ b]), and for
// the GELU_AUX epilogues P (before the activation) into `aux`.
inline void cublaslt_forward(cublasLtEpilogue_t epilogue, const BackwardArgs& a, __half* out, __half* aux,
                             void* workspace, cudaStream_t stream) {
  using namespace lt_detail;
  const Plan& p = forward_plan(epilogue, a.m, a.n, a.k);
  if (a.bias != nullptr) {
    const void* bias = a.bias;
    check(cublasLtMatmulDescSetAttribute(p.op, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias, sizeof bias),
          "set BIAS_POINTER");
  }
  if (aux != nullptr) {
    void* at = aux;
    check(cublasLtMatmulDescSetAttribute(p.op, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER, &at, sizeof at),
          "set AUX_POINTER");
  }
  const float alpha = 1.0f, beta = 0.0f;
  check(cublasLtMatmul(cublaslt_detail::library().handle, p.op, &alpha, a.w, p.a, a.x, p.b, &beta, out, p.c, out,
                       p.c, &p.algo, workspace, kCublasLtWorkspaceBytes, stream),
        "cublasLtMatmul (forward)");
}

namespace lt_detail {

// dZᵀ (N x M) = op(V: N2 x N, transposed) op(dY: N2 x M), V stored (N x N2)
// and dY (M x N2) row-major; `epilogue` DEFAULT, DGELU or DGELU_BGRAD.
inline const Plan& dgrad_plan(cublasLtEpilogue_t epilogue, int m, int n, int n2) {
  static std::map<std::tuple<int, int, int, int>, Plan> plans;
  const auto key = std::make_tuple(int(epilogue), m, n, n2);
  if (auto it = plans.find(key); it != plans.end()) return it->second;
  Plan p;
  check(cublasLtMatmulDescCreate(&p.op, CUBLAS_COMPUTE_32F, CUDA_R_32F), "cublasLtMatmulDescCreate");
  const cublasOperation_t t = CUBLAS_OP_T;
  check(cublasLtMatmulDescSetAttribute(p.op, CUBLASLT_MATMUL_DESC_TRANSA, &t, sizeof t), "set TRANSA");
  check(cublasLtMatmulDescSetAttribute(p.op, CUBLASLT_MATMUL_DESC_EPILOGUE, &epilogue, sizeof epilogue),
        "set EPILOGUE");
  if (epilogue != CUBLASLT_EPILOGUE_DEFAULT) {
    const cudaDataType_t half_type = CUDA_R_16F;
    const int64_t ld = n;
    check(cublasLtMatmulDescSetAttribute(p.op, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_LD, &ld, sizeof ld), "set AUX_LD");
    check(cublasLtMatmulDescSetAttribute(p.op, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_DATA_TYPE, &half_type,
                                         sizeof half_type),
          "set AUX_DATA_TYPE");
    check(cublasLtMatmulDescSetAttribute(p.op, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, &half_type, sizeof half_type),
          "set BIAS_DATA_TYPE");
  }
  p.a = layout(uint64_t(n2), uint64_t(n));  // V
  p.b = layout(uint64_t(n2), uint64_t(m));  // dY
  p.c = layout(uint64_t(n), uint64_t(m));   // dZ or dP
  p.algo = cublaslt_detail::best_algo(cublaslt_detail::library().handle, p,
                                      "the dZ product at " + std::to_string(m) + "x" + std::to_string(n) + "x" +
                                          std::to_string(n2) + " with epilogue " + std::to_string(int(epilogue)));
  return plans.emplace(key, p).first->second;
}

}  // namespace lt_detail

// --part chain by cuBLASLt: out = dY Vᵀ, and with DGELU(_BGRAD) out = dP
// (P read as the epilogue's auxiliary input) and db (BGRAD) into `db`.
inline void cublaslt_dgrad(cublasLtEpilogue_t epilogue, const __half* dy, const __half* v, const __half* p,
                           __half* out, __half* db, int m, int n, int n2, void* workspace, cudaStream_t stream) {
  using namespace lt_detail;
  const Plan& plan = dgrad_plan(epilogue, m, n, n2);
  if (epilogue != CUBLASLT_EPILOGUE_DEFAULT) {
    const void* aux = p;
    check(cublasLtMatmulDescSetAttribute(plan.op, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER, &aux, sizeof aux),
          "set AUX_POINTER");
  }
  if (epilogue == CUBLASLT_EPILOGUE_DGELU_BGRAD) {
    const void* bias = db;
    check(cublasLtMatmulDescSetAttribute(plan.op, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias, sizeof bias),
          "set BIAS_POINTER");
  }
  const float alpha = 1.0f, beta = 0.0f;
  check(cublasLtMatmul(cublaslt_detail::library().handle, plan.op, &alpha, v, plan.a, dy, plan.b, &beta, out, plan.c,
                       out, plan.c, &plan.algo, workspace, kCublasLtWorkspaceBytes, stream),
        "cublasLtMatmul (dZ)");
}

}  // namespace wb::backward
