// NVIDIA's own fused epilogue, for comparison: C = act(A B) by cuBLASLt
// (cublasLtMatmul, fp16 in and out, fp32 compute) with the activation applied
// by the library's epilogue (CUBLASLT_EPILOGUE_GELU or _RELU). Lesson 04 times
// it with and without the epilogue, so what fusing costs in the library stands
// beside what it costs in the lesson's kernels. Host code only. The library's
// workspace (kCublasLtWorkspaceBytes) is the caller's: GemmArgs::workspace.
//
// Row-major C = A B is the column-major C^T = B^T A^T, as for cublasGemmEx in
// the harness: the library's "A" is our B (N x K column-major, leading
// dimension N) and its "B" is our A (K x M, leading dimension K).
#pragma once

#include <cublasLt.h>
#include <cuda_runtime.h>

#include <map>
#include <string>
#include <tuple>

#include "common/check.cuh"
#include "common/gemm.cuh"
#include "schedule/activation.hpp"

namespace wb {

// What the library's heuristic may use, and what a caller must provide.
constexpr size_t kCublasLtWorkspaceBytes = size_t(32) << 20;

namespace cublaslt_detail {

inline void check(cublasStatus_t status, const char* what) {
  if (status != CUBLAS_STATUS_SUCCESS)
    throw CudaError(std::string("cuBLASLt: ") + what + " failed (status " + std::to_string(int(status)) + ")");
}


// One shape and epilogue: the operation, the three layouts and the algorithm
// the library's heuristic picked, built once and reused by every timed run.
struct Plan {
  cublasLtMatmulDesc_t op = nullptr;
  cublasLtMatrixLayout_t a = nullptr, b = nullptr, c = nullptr;
  cublasLtMatmulAlgo_t algo = {};
};

// The heuristic's first choice for an operation and its layouts within the
// workspace a caller provides; `what` names the product for the error when
// there is none.
inline cublasLtMatmulAlgo_t best_algo(cublasLtHandle_t handle, const Plan& p, const std::string& what) {
  cublasLtMatmulPreference_t preference = nullptr;
  check(cublasLtMatmulPreferenceCreate(&preference), "cublasLtMatmulPreferenceCreate");
  const size_t workspace = kCublasLtWorkspaceBytes;
  check(cublasLtMatmulPreferenceSetAttribute(preference, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &workspace,
                                             sizeof workspace),
        "set MAX_WORKSPACE_BYTES");
  cublasLtMatmulHeuristicResult_t best = {};
  int found = 0;
  const cublasStatus_t status =
      cublasLtMatmulAlgoGetHeuristic(handle, p.op, p.a, p.b, p.c, p.c, preference, 1, &best, &found);
  cublasLtMatmulPreferenceDestroy(preference);
  check(status, "cublasLtMatmulAlgoGetHeuristic");
  if (found < 1) throw CudaError("cuBLASLt has no algorithm for " + what);
  return best.algo;
}

struct Library {
  cublasLtHandle_t handle = nullptr;
  std::map<std::tuple<int, int, int, int>, Plan> plans;
};

// The process's handle and plans (never freed: they live as long as the CUDA
// context they belong to).
inline Library& library() {
  static Library lib = [] {
    Library l;
    check(cublasLtCreate(&l.handle), "cublasLtCreate");
    return l;
  }();
  return lib;
}

inline cublasLtEpilogue_t epilogue_for(Activation act) {
  switch (act) {
    case Activation::none: return CUBLASLT_EPILOGUE_DEFAULT;
    case Activation::relu: return CUBLASLT_EPILOGUE_RELU;
    case Activation::gelu: return CUBLASLT_EPILOGUE_GELU;
    default: throw CudaError("cuBLASLt has no epilogue for " + std::string(activation_name(act)));
  }
}

inline const Plan& plan_for(Library& lib, int m, int n, int k, Activation act) {
  const auto key = std::make_tuple(m, n, k, int(act));
  if (auto it = lib.plans.find(key); it != lib.plans.end()) return it->second;
  Plan p;
  check(cublasLtMatmulDescCreate(&p.op, CUBLAS_COMPUTE_32F, CUDA_R_32F), "cublasLtMatmulDescCreate");
  const cublasOperation_t no_transpose = CUBLAS_OP_N;
  check(cublasLtMatmulDescSetAttribute(p.op, CUBLASLT_MATMUL_DESC_TRANSA, &no_transpose, sizeof no_transpose),
        "set TRANSA");
  check(cublasLtMatmulDescSetAttribute(p.op, CUBLASLT_MATMUL_DESC_TRANSB, &no_transpose, sizeof no_transpose),
        "set TRANSB");
  const cublasLtEpilogue_t epilogue = epilogue_for(act);
  check(cublasLtMatmulDescSetAttribute(p.op, CUBLASLT_MATMUL_DESC_EPILOGUE, &epilogue, sizeof epilogue),
        "set EPILOGUE");
  check(cublasLtMatrixLayoutCreate(&p.a, CUDA_R_16F, uint64_t(n), uint64_t(k), int64_t(n)), "layout of B");
  check(cublasLtMatrixLayoutCreate(&p.b, CUDA_R_16F, uint64_t(k), uint64_t(m), int64_t(k)), "layout of A");
  check(cublasLtMatrixLayoutCreate(&p.c, CUDA_R_16F, uint64_t(n), uint64_t(m), int64_t(n)), "layout of C");
  p.algo = best_algo(lib.handle, p,
                     std::to_string(m) + "x" + std::to_string(n) + "x" + std::to_string(k) + " with the " +
                         activation_name(act) + " epilogue");
  return lib.plans.emplace(key, p).first->second;
}

}  // namespace cublaslt_detail

// Enqueues C = act(A B) on `stream`; the first call for a shape builds its plan.
inline void cublaslt_gemm(const GemmArgs& g, Activation act, cudaStream_t stream) {
  using namespace cublaslt_detail;
  Library& lib = library();
  if (g.workspace == nullptr || g.workspace_bytes < kCublasLtWorkspaceBytes)
    throw CudaError("cuBLASLt: the caller must provide a workspace of " + std::to_string(kCublasLtWorkspaceBytes) +
                    " bytes");
  const Plan& p = plan_for(lib, g.m, g.n, g.k, act);
  const float alpha = 1.0f, beta = 0.0f;
  check(cublasLtMatmul(lib.handle, p.op, &alpha, g.b, p.a, g.a, p.b, &beta, g.c, p.c, g.c, p.c, &p.algo,
                       g.workspace, kCublasLtWorkspaceBytes, stream),
        "cublasLtMatmul");
}

}  // namespace wb
