// Tensor-core building blocks as inline PTX: the three instructions every
// Ampere-style GEMM is made of, and nothing else.
//
//   ldmatrix  shared -> registers, in exactly the layout mma.sync wants
//   mma.sync  one warp computes a 16x8 tile of D = A(16x16) * B(16x8) + C, fp32 accumulate
//   cp.async  global -> shared without passing through registers, so the copy of
//             the next tiles overlaps the math on the current one
//
// Fragment layouts (PTX ISA, "Matrix fragments for mma.m16n8k16"), with
// lane = threadIdx.x % 32, group = lane / 4, pair = lane % 4:
//   A (16x16, row-major) a[0..3]: rows {group, group+8} x cols {2*pair, 2*pair+1} (+8 for a[2], a[3])
//   B (16x8,  "col")     b[0..1]: rows {2*pair, 2*pair+1} (+8 for b[1]) x col group
//   C/D (16x8, fp32)     d[0..3]: d[0], d[1] at row group, cols 2*pair, 2*pair+1;
//                                 d[2], d[3] at row group+8, same cols
//
// mma.sync.m16n8k16 and cp.async need sm_80; ldmatrix needs sm_75. On older
// targets the wrappers trap: the variants that use them declare min_cc 80, so
// the harness never launches them there.
#pragma once

#include <cuda_fp16.h>

#include <cstdint>

namespace wb {

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
#define WB_HAS_MMA_SYNC_SM80 1
#else
#define WB_HAS_MMA_SYNC_SM80 0
#endif

// A generic pointer into shared memory as the 32-bit address PTX's .shared wants.
__device__ __forceinline__ uint32_t shared_address(const void* ptr) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(ptr));
}

// ---------------------------------------------------------------- ldmatrix
// Loads four 8x8 fp16 matrices. Lanes 8*i .. 8*i+7 give the addresses of the
// eight 16-byte rows of matrix i; every lane receives one 32-bit register
// (two halves) of each matrix: lane l holds row l/4, columns 2*(l%4), 2*(l%4)+1.
__device__ __forceinline__ void ldmatrix_x4(uint32_t (&regs)[4], uint32_t smem_row_address) {
#if WB_HAS_MMA_SYNC_SM80
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(regs[0]), "=r"(regs[1]), "=r"(regs[2]), "=r"(regs[3])
               : "r"(smem_row_address));
#else
  (void)smem_row_address;
  regs[0] = regs[1] = regs[2] = regs[3] = 0;
  __trap();
#endif
}

// Two 8x8 matrices (lanes 0-15 give the row addresses): the 16 x 8 "col"
// operand of one mma from a tile stored with its 8 columns as rows.
__device__ __forceinline__ void ldmatrix_x2(uint32_t (&regs)[2], uint32_t smem_row_address) {
#if WB_HAS_MMA_SYNC_SM80
  asm volatile("ldmatrix.sync.aligned.m8n8.x2.shared.b16 {%0, %1}, [%2];\n"
               : "=r"(regs[0]), "=r"(regs[1])
               : "r"(smem_row_address));
#else
  (void)smem_row_address;
  regs[0] = regs[1] = 0;
  __trap();
#endif
}

// The same, transposed on the way: lane l receives column l/4, rows 2*(l%4) and
// 2*(l%4)+1 of each stored matrix. Loading a row-major K x N tile of B with
// .trans yields the "col" operand mma.sync needs, with no transpose in memory.
__device__ __forceinline__ void ldmatrix_x4_trans(uint32_t (&regs)[4], uint32_t smem_row_address) {
#if WB_HAS_MMA_SYNC_SM80
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(regs[0]), "=r"(regs[1]), "=r"(regs[2]), "=r"(regs[3])
               : "r"(smem_row_address));
#else
  (void)smem_row_address;
  regs[0] = regs[1] = regs[2] = regs[3] = 0;
  __trap();
#endif
}

// ---------------------------------------------------------------- mma.sync
// d += a * b for one 16x8x16 tile: fp16 inputs, fp32 accumulator (in place).
__device__ __forceinline__ void mma_m16n8k16_f32(float (&d)[4], const uint32_t (&a)[4], const uint32_t (&b)[2]) {
#if WB_HAS_MMA_SYNC_SM80
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 "
      "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
#else
  (void)d; (void)a; (void)b;
  __trap();
#endif
}

// ---------------------------------------------------------------- cp.async
// Copies 16 bytes global -> shared, bypassing L1 (.cg), or through it (.ca,
// kThroughL1: for data other blocks on the SM read too). Only the first
// `src_bytes` (0..16) are read; the rest of the 16 shared bytes are zero-filled.
// That is how a tile hanging over the matrix edge is padded with zeros: pass 0
// for a chunk that lies wholly outside (the source address must still be a valid
// one; it is not read). Both addresses must be 16-byte aligned.
template <bool kThroughL1 = false>
__device__ __forceinline__ void cp_async_16_zero_fill(uint32_t smem_address, const void* gmem, int src_bytes) {
#if WB_HAS_MMA_SYNC_SM80
  if constexpr (kThroughL1)
    asm volatile("cp.async.ca.shared.global [%0], [%1], 16, %2;\n" ::"r"(smem_address), "l"(gmem), "r"(src_bytes)
                 : "memory");
  else
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(smem_address), "l"(gmem), "r"(src_bytes)
                 : "memory");
#else
  (void)smem_address; (void)gmem; (void)src_bytes;
  __trap();
#endif
}

// Closes the group of cp.async issued by this thread since the last commit.
__device__ __forceinline__ void cp_async_commit_group() {
#if WB_HAS_MMA_SYNC_SM80
  asm volatile("cp.async.commit_group;\n" ::: "memory");
#endif
}

// Waits until at most `kPending` of this thread's committed groups are still in
// flight. Other threads' copies are visible only after a __syncthreads().
template <int kPending>
__device__ __forceinline__ void cp_async_wait_group() {
#if WB_HAS_MMA_SYNC_SM80
  asm volatile("cp.async.wait_group %0;\n" ::"n"(kPending) : "memory");
#endif
}

}  // namespace wb
