// A problem made to test the harness itself, with variants that are right and
// variants that are wrong on purpose. It uses what lessons 05-08 need and
// lessons 01-04 do not: two outputs of different types, an operand stored
// column-major (a transpose as a layout), int32 indices the problem fills
// itself, its own parameters (a number and a word), a workspace, and a
// `prepare` that zeroes an atomic output inside the timed region.
//
//   C = A B                      A: M x K fp16 row-major, B: K x N fp16 column-major
//   S[j] = scale * sum_i C[i, I[j]]   I: N int32, a permutation of 0..N-1; S: 1 x N fp32
//
// The GPU tests run it: every "wrong_*" variant must be reported FAIL on the
// output it spoils (and only that one), with exit status 1.
#include <cuda_fp16.h>

#include <algorithm>
#include <numeric>
#include <random>

#include "common/check.cuh"
#include "harness/harness.cuh"

namespace {

using namespace wb;

struct Args {
  const __half* a;
  const __half* b;     // column-major: element (k, n) at n * K + k
  const int32_t* index;
  __half* c;
  float* s;
  int m, n, k;
  float scale;
  float* workspace;    // K floats, or nullptr
};

Args bind(const Buffers& b) {
  return Args{static_cast<const __half*>(b.inputs[0]), static_cast<const __half*>(b.inputs[1]),
              static_cast<const int32_t*>(b.inputs[2]), static_cast<__half*>(b.outputs[0]),
              static_cast<float*>(b.outputs[1]),          b.size.m,
              b.size.n,                                   b.size.k,
              float(b.size.params.number("scale")),       static_cast<float*>(b.workspace)};
}

// One thread per element of C; `skip` (>= 0) leaves that element unwritten.
__global__ void gemm_kernel(Args g, int64_t skip) {
  const int64_t e = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (e >= int64_t(g.m) * g.n || e == skip) return;
  const int row = int(e / g.n), col = int(e % g.n);
  float acc = 0;
  for (int kk = 0; kk < g.k; ++kk)
    acc += __half2float(g.a[int64_t(row) * g.k + kk]) * __half2float(g.b[int64_t(col) * g.k + kk]);
  g.c[e] = __float2half(acc);
}

// sum_i A[i, k], into `out` (K floats).
__global__ void column_sums_of_a(Args g, float* out) {
  const int kk = blockIdx.x * blockDim.x + threadIdx.x;
  if (kk >= g.k) return;
  float acc = 0;
  for (int i = 0; i < g.m; ++i) acc += __half2float(g.a[int64_t(i) * g.k + kk]);
  out[kk] = acc;
}

// S[j] = scale * sum_k colsum(A)[k] B[k, I[j]]: the sums of C's gathered
// columns, from the inputs (so a spoiled C does not spoil S). `a_sums`: the
// workspace's column sums of A, or nullptr to compute them here.
__global__ void gathered_sums(Args g, const float* a_sums) {
  const int j = blockIdx.x * blockDim.x + threadIdx.x;
  if (j >= g.n) return;
  const int col = g.index[j];
  float acc = 0;
  for (int kk = 0; kk < g.k; ++kk) {
    float sum_a = 0;
    if (a_sums) {
      sum_a = a_sums[kk];
    } else {
      for (int i = 0; i < g.m; ++i) sum_a += __half2float(g.a[int64_t(i) * g.k + kk]);
    }
    acc += sum_a * __half2float(g.b[int64_t(col) * g.k + kk]);
  }
  g.s[j] = g.scale * acc;
}

// The same sums, one atomicAdd per (row, j): S must start at zero.
__global__ void gathered_sums_atomic(Args g) {
  const int j = blockIdx.x * blockDim.x + threadIdx.x, row = blockIdx.y;
  if (j >= g.n) return;
  const int col = g.index[j];
  float acc = 0;
  for (int kk = 0; kk < g.k; ++kk)
    acc += __half2float(g.a[int64_t(row) * g.k + kk]) * __half2float(g.b[int64_t(col) * g.k + kk]);
  atomicAdd(&g.s[j], g.scale * acc);
}

__global__ void spoil_c(Args g) { g.c[(int64_t(g.m) * g.n) / 2] = __float2half(__half2float(g.c[(int64_t(g.m) * g.n) / 2]) + 1.0f); }
__global__ void spoil_s(Args g) { g.s[g.n / 2] += 1.0f; }

void launch_c(const Args& g, cudaStream_t s, int64_t skip = -1) {
  const int64_t count = int64_t(g.m) * g.n;
  gemm_kernel<<<unsigned((count + 255) / 256), 256, 0, s>>>(g, skip);
  CUDA_CHECK_LAUNCH();
}

void launch_s(const Args& g, cudaStream_t s, const float* a_sums = nullptr) {
  gathered_sums<<<(g.n + 127) / 128, 128, 0, s>>>(g, a_sums);
  CUDA_CHECK_LAUNCH();
}

void launch_s_atomic(const Args& g, cudaStream_t s) {
  gathered_sums_atomic<<<dim3((g.n + 127) / 128, g.m), 128, 0, s>>>(g);
  CUDA_CHECK_LAUNCH();
}

// The reference: cuBLAS for C (B column-major is cuBLAS's B^T, op T), then the sums.
void reference(const Buffers& buffers, cudaStream_t s) {
  const Args g = bind(buffers);
  const float alpha = 1.0f, beta = 0.0f;
  if (cublasGemmEx(buffers.cublas, CUBLAS_OP_T, CUBLAS_OP_N, g.n, g.m, g.k, &alpha, g.b, CUDA_R_16F, g.k, g.a,
                   CUDA_R_16F, g.k, &beta, g.c, CUDA_R_16F, g.n, CUBLAS_COMPUTE_32F,
                   CUBLAS_GEMM_DEFAULT) != CUBLAS_STATUS_SUCCESS)
    throw CudaError("cuBLAS: cublasGemmEx failed");
  launch_s(g, s);
}

Problem selftest_problem() {
  Problem p;
  p.summary = "C = A B, S = scale * column sums of C[:, I]";
  p.params = {
      {.name = "scale", .help = "factor on S", .default_value = "1", .numeric = true, .min = -4, .max = 4},
      {.name = "index_order", .help = "order of I", .default_value = "shuffled", .choices = {"sorted", "shuffled"}},
  };
  p.validate = [](const ProblemSize& s) -> std::string {
    if (int64_t(s.m) * s.n > (int64_t(1) << 26)) return "M x N must be at most 2^26 for the self test";
    return "";
  };
  p.inputs = [](const ProblemSize& s) {
    return std::vector<TensorSpec>{{"A", s.m, s.k},
                                   {"B", s.k, s.n, DType::f16, Layout::col_major},
                                   {"I", 1, s.n, DType::i32, Layout::row_major, true}};
  };
  p.outputs = [](const ProblemSize& s) {
    return std::vector<TensorSpec>{{"C", s.m, s.n}, {"S", 1, s.n, DType::f32}};
  };
  p.fill = [](const ProblemSize& s, std::vector<HostTensor>& in, uint64_t seed) {
    std::vector<int32_t> order(size_t(s.n));
    std::iota(order.begin(), order.end(), 0);
    if (s.params.text("index_order") == "shuffled") std::shuffle(order.begin(), order.end(), std::mt19937_64(seed));
    for (int j = 0; j < s.n; ++j) in[2].set_int(0, j, order[size_t(j)]);
  };
  p.reference = Reference{"cublas_then_sums", "cuBLAS and a sum kernel", "cublasGemmEx (B as op T), then S", reference};
  p.fp64_rows = [](const ProblemSize& s, const std::vector<HostTensor>& in, size_t output,
                   const std::vector<int64_t>& rows) {
    const HostTensor &a = in[0], &b = in[1], &index = in[2];
    std::vector<double> out;
    if (output == 0) {
      for (const int64_t r : rows)
        for (int j = 0; j < s.n; ++j) {
          double acc = 0;
          for (int kk = 0; kk < s.k; ++kk) acc += double(a.at(r, kk)) * double(b.at(kk, j));
          out.push_back(acc);
        }
    } else {
      std::vector<double> sum_a(size_t(s.k), 0.0);
      for (int i = 0; i < s.m; ++i)
        for (int kk = 0; kk < s.k; ++kk) sum_a[size_t(kk)] += a.at(i, kk);
      for (int j = 0; j < s.n; ++j) {
        double acc = 0;
        for (int kk = 0; kk < s.k; ++kk) acc += sum_a[size_t(kk)] * double(b.at(kk, index.int_at(0, j)));
        out.push_back(s.params.number("scale") * acc);
      }
    }
    return out;
  };
  p.flops = [](const ProblemSize& s) { return 2.0 * s.m * double(s.n) * s.k; };
  return p;
}

Variant variant(std::string name, std::string what, std::function<void(const Args&, cudaStream_t)> launch) {
  Variant v;
  v.name = std::move(name);
  v.what = std::move(what);
  v.launch = [launch](const Buffers& b, cudaStream_t s) { launch(bind(b), s); };
  return v;
}

std::vector<Variant> variants() {
  std::vector<Variant> v;
  v.push_back(variant("right", "C and S, each by its own kernel", [](const Args& g, cudaStream_t s) {
    launch_c(g, s);
    launch_s(g, s);
  }));
  Variant ws = variant("right_workspace", "S from column sums of A kept in the workspace",
                       [](const Args& g, cudaStream_t s) {
                         launch_c(g, s);
                         column_sums_of_a<<<(g.k + 127) / 128, 128, 0, s>>>(g, g.workspace);
                         CUDA_CHECK_LAUNCH();
                         launch_s(g, s, g.workspace);
                       });
  ws.workspace_bytes = [](const ProblemSize& s) { return size_t(s.k) * sizeof(float); };
  v.push_back(ws);
  Variant atomic = variant("right_atomic", "S by atomics, zeroed in prepare", [](const Args& g, cudaStream_t s) {
    launch_c(g, s);
    launch_s_atomic(g, s);
  });
  atomic.prepare = [](const Buffers& b, cudaStream_t s) {
    CUDA_CHECK(cudaMemsetAsync(b.outputs[1], 0, size_t(b.size.n) * sizeof(float), s));
  };
  v.push_back(atomic);
  v.push_back(variant("wrong_c", "one element of C off by one", [](const Args& g, cudaStream_t s) {
    launch_c(g, s);
    spoil_c<<<1, 1, 0, s>>>(g);
    launch_s(g, s);
  }));
  v.push_back(variant("wrong_s", "one element of S off by one", [](const Args& g, cudaStream_t s) {
    launch_c(g, s);
    launch_s(g, s);
    spoil_s<<<1, 1, 0, s>>>(g);
  }));
  v.push_back(variant("unwritten_c", "the last element of C never written", [](const Args& g, cudaStream_t s) {
    launch_c(g, s, int64_t(g.m) * g.n - 1);
    launch_s(g, s);
  }));
  v.push_back(variant("unzeroed_atomic", "S by atomics without zeroing it first", [](const Args& g, cudaStream_t s) {
    launch_c(g, s);
    launch_s_atomic(g, s);
  }));
  return v;
}

}  // namespace

int main(int argc, char** argv) {
  Lesson lesson;
  lesson.info = LessonInfo{"harness_selftest", "--", "Harness self-test: two outputs, one of them wrong on purpose",
                           "the harness", "-", "-", "each wrong_* variant FAILs on the output it spoils", "any"};
  lesson.problem = selftest_problem();
  lesson.variants = variants();
  return run_lesson(lesson, argc, argv);
}
