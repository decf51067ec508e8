// wgmma: Hopper's warpgroup matrix multiply-accumulate, and the shared-memory
// layouts it reads.
//
// A warpgroup is 4 consecutive warps (128 threads) starting at a warp index
// divisible by 4. One `wgmma.mma_async` multiplies a 64 x 16 slice of A by a
// 16 x N slice of B (N up to 256) and adds into a 64 x N fp32 accumulator held
// in the warpgroup's registers (N/2 floats per thread). Both operands are read
// straight from shared memory through 64-bit "matrix descriptors", and the
// instruction is asynchronous: issue several, commit them as a group, and wait
// for the group only when the registers or the shared memory are needed again.
//
// Shared-memory layout (the one TMA writes with CU_TENSOR_MAP_SWIZZLE_128B):
// every 128-byte line holds 64 fp16 values, and inside each 8-line (1024-byte)
// atom the 16-byte chunks of line r are XOR-ed with r % 8, so the 8 lines a
// tensor-core read touches land in different banks. For fp16 each operand may
// come in either major, so a transpose is a layout, never a copy:
//   K-major (A of M x K row-major, or B stored N x K row-major): a line is one
//       row of the operand, 64 values of k. Atoms stack along M (or N) 1024
//       bytes apart (the descriptor's stride offset); the k16 slices of a line
//       are 32 bytes apart (advance the start address). desc_k_major.
//   MN-major (B of K x N row-major, or A stored K x M row-major): a line is one
//       k, 64 values of n (or m). Each 64-wide panel is one TMA box of 64 x 64
//       (8 KB), panels `panel_bytes` apart (the descriptor's leading offset);
//       8-line atoms along K 1024 bytes apart (stride offset); a k16 slice
//       starts 16 lines = 2048 bytes further. desc_mn_major.
// The instruction is told which major each operand has (kAMajor, kBMajor).
// Lesson 04 reads A K-major and B N-major: B is row-major K x N in memory.
//
// wgmma and setmaxnreg exist only on sm_90a (the "a" target): compiled for any
// other target the functions below are empty.
#pragma once

#include <cstdint>

#if defined(__CUDA_ARCH__) && defined(__CUDA_ARCH_FEAT_SM90_ALL)
#define WB_WGMMA_DEVICE 1
#else
#define WB_WGMMA_DEVICE 0
#endif

namespace wb::hopper {

constexpr int kSwizzleBytes = 128;         // one shared-memory line of the 128B swizzle
constexpr int kSwizzleAtomBytes = 1024;    // 8 lines: the unit the swizzle repeats on
constexpr int kPanelCols = 64;             // fp16 values per 128-byte line
constexpr int kWgmmaK = 16;                // k per wgmma instruction (fp16)
constexpr int kWarpgroupThreads = 128;

// ------------------------------------------------------------------ descriptors
// Bits of a wgmma matrix descriptor:
//   [0,14)  start address >> 4        [16,30) leading byte offset >> 4
//   [32,46) stride byte offset >> 4   [62,64) swizzle mode (1 = 128B)
__device__ __forceinline__ uint64_t make_smem_desc(uint32_t smem_addr, uint32_t leading_bytes, uint32_t stride_bytes) {
  uint64_t desc = 0;
  desc |= uint64_t((smem_addr & 0x3FFFF) >> 4);
  desc |= uint64_t((leading_bytes & 0x3FFFF) >> 4) << 16;
  desc |= uint64_t((stride_bytes & 0x3FFFF) >> 4) << 32;
  desc |= uint64_t(1) << 62;  // 128-byte swizzle
  return desc;
}

// Which dimension of an operand is contiguous in shared memory.
enum class Major : int {
  k = 0,   // K-major: the "not transposed" operand of the instruction
  mn = 1,  // M-major A or N-major B: the "transposed" one (fp16 and bf16 only)
};

// A K-major operand, 128B-swizzled; `smem_addr` is the first row of the 64
// rows (of A) or N rows (of B) this wgmma reads, plus 32 bytes per k16 step.
// (The leading offset is unused for swizzled K-major operands; 16 is the
// conventional placeholder.)
__device__ __forceinline__ uint64_t desc_k_major(uint32_t smem_addr) {
  return make_smem_desc(smem_addr, 16, kSwizzleAtomBytes);
}

// An MN-major operand, stored as 64 x 64 panels of `panel_bytes` each;
// `smem_addr` is the first k line of the k16 step (2048 bytes per step).
__device__ __forceinline__ uint64_t desc_mn_major(uint32_t smem_addr, uint32_t panel_bytes) {
  return make_smem_desc(smem_addr, panel_bytes, kSwizzleAtomBytes);
}

// Lesson 04's operands: A K-major, B N-major.
__device__ __forceinline__ uint64_t desc_k_major_a(uint32_t smem_addr) { return desc_k_major(smem_addr); }
__device__ __forceinline__ uint64_t desc_n_major_b(uint32_t smem_addr, uint32_t panel_bytes) {
  return desc_mn_major(smem_addr, panel_bytes);
}

__device__ __forceinline__ uint32_t smem_u32(const void* p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

// --------------------------------------------------------------- ordering ops
// Before the first wgmma that touches accumulators written by ordinary code.
__device__ __forceinline__ void wgmma_fence() {
#if WB_WGMMA_DEVICE
  asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
#endif
}

// Closes the wgmmas issued so far into one group.
__device__ __forceinline__ void wgmma_commit() {
#if WB_WGMMA_DEVICE
  asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
#endif
}

// Waits until at most `kPending` groups are still running.
template <int kPending>
__device__ __forceinline__ void wgmma_wait() {
#if WB_WGMMA_DEVICE
  asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(kPending) : "memory");
#endif
}

// Tells the compiler the accumulators may have changed here (wgmma writes them
// behind its back until the wait), so it neither reads them early nor caches them.
template <int kRegs>
__device__ __forceinline__ void fence_accumulators(float (&d)[kRegs]) {
#pragma unroll
  for (int i = 0; i < kRegs; ++i) asm volatile("" : "+f"(d[i])::"memory");
}

// Warp specialisation: a warpgroup gives registers back (producer) or takes
// them (consumers). Needs a register cap at kernel entry (__launch_bounds__
// with a minimum of 1 block) and every warp of the warpgroup executing it.
template <int kRegs>
__device__ __forceinline__ void warpgroup_release_registers() {
#if WB_WGMMA_DEVICE
  asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" ::"n"(kRegs));
#endif
}

template <int kRegs>
__device__ __forceinline__ void warpgroup_claim_registers() {
#if WB_WGMMA_DEVICE
  asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" ::"n"(kRegs));
#endif
}

// ------------------------------------------------------------------ the MMAs
// Accumulator layout (per warpgroup, 64 x N): warp w owns rows 16w .. 16w+15;
// in every 8-column slice j, lane l holds
//   d[4j+0], d[4j+1] at row 16w + l/4,     columns 8j + 2(l%4) + {0, 1}
//   d[4j+2], d[4j+3] at row 16w + l/4 + 8, the same columns.
// `accumulate` = false overwrites D (the first k step of a tile).

// D (64 x 128, fp32, 64 registers per thread) += A (64 x 16) * B (16 x 128).
template <Major kAMajor = Major::k, Major kBMajor = Major::mn>
__device__ __forceinline__ void wgmma_m64n128k16(float (&d)[64], uint64_t desc_a, uint64_t desc_b, bool accumulate) {
#if WB_WGMMA_DEVICE
  asm volatile(
      "{\n"
      ".reg .pred keep_d;\n"
      "setp.ne.b32 keep_d, %66, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16 "
      "{"
      "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
      "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, "
      "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, "
      "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63"
      "}, "
      "%64, %65, keep_d, 1, 1, %67, %68;\n"  // scale A, scale B, A's major, B's major
      "}\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
        "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
        "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
        "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]),
        "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]),
        "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]),
        "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]),
        "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63])
      : "l"(desc_a), "l"(desc_b), "r"(int32_t(accumulate)), "n"(int(kAMajor)), "n"(int(kBMajor)));
#else
  (void)d; (void)desc_a; (void)desc_b; (void)accumulate;
#endif
}

// D (64 x 256, fp32, 128 registers per thread) += A (64 x 16) * B (16 x 256).
template <Major kAMajor = Major::k, Major kBMajor = Major::mn>
__device__ __forceinline__ void wgmma_m64n256k16(float (&d)[128], uint64_t desc_a, uint64_t desc_b, bool accumulate) {
#if WB_WGMMA_DEVICE
  asm volatile(
      "{\n"
      ".reg .pred keep_d;\n"
      "setp.ne.b32 keep_d, %130, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n256k16.f32.f16.f16 "
      "{"
      "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
      "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, "
      "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, "
      "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, "
      "%64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, "
      "%80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95, "
      "%96, %97, %98, %99, %100, %101, %102, %103, %104, %105, %106, %107, %108, %109, %110, %111, "
      "%112, %113, %114, %115, %116, %117, %118, %119, %120, %121, %122, %123, %124, %125, %126, %127"
      "}, "
      "%128, %129, keep_d, 1, 1, %131, %132;\n"  // scale A, scale B, A's major, B's major
      "}\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
        "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
        "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
        "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]),
        "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]),
        "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]),
        "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]),
        "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63]),
        "+f"(d[64]), "+f"(d[65]), "+f"(d[66]), "+f"(d[67]), "+f"(d[68]), "+f"(d[69]), "+f"(d[70]), "+f"(d[71]),
        "+f"(d[72]), "+f"(d[73]), "+f"(d[74]), "+f"(d[75]), "+f"(d[76]), "+f"(d[77]), "+f"(d[78]), "+f"(d[79]),
        "+f"(d[80]), "+f"(d[81]), "+f"(d[82]), "+f"(d[83]), "+f"(d[84]), "+f"(d[85]), "+f"(d[86]), "+f"(d[87]),
        "+f"(d[88]), "+f"(d[89]), "+f"(d[90]), "+f"(d[91]), "+f"(d[92]), "+f"(d[93]), "+f"(d[94]), "+f"(d[95]),
        "+f"(d[96]), "+f"(d[97]), "+f"(d[98]), "+f"(d[99]), "+f"(d[100]), "+f"(d[101]), "+f"(d[102]), "+f"(d[103]),
        "+f"(d[104]), "+f"(d[105]), "+f"(d[106]), "+f"(d[107]), "+f"(d[108]), "+f"(d[109]), "+f"(d[110]), "+f"(d[111]),
        "+f"(d[112]), "+f"(d[113]), "+f"(d[114]), "+f"(d[115]), "+f"(d[116]), "+f"(d[117]), "+f"(d[118]), "+f"(d[119]),
        "+f"(d[120]), "+f"(d[121]), "+f"(d[122]), "+f"(d[123]), "+f"(d[124]), "+f"(d[125]), "+f"(d[126]), "+f"(d[127])
      : "l"(desc_a), "l"(desc_b), "r"(int32_t(accumulate)), "n"(int(kAMajor)), "n"(int(kBMajor)));
#else
  (void)d; (void)desc_a; (void)desc_b; (void)accumulate;
#endif
}

// D (64 x 256) += A (64 x 16, from REGISTERS) * B (16 x 256, from shared
// memory): the "RS" form. Warp w of the warpgroup gives rows 16w .. 16w+15 of
// A in the layout of an mma.sync m16n8k16 A fragment (what ldmatrix.x4
// returns): a[0] row l/4, k 2(l%4) + {0, 1}; a[1] the row 8 further; a[2]
// and a[3] the same 8 columns further. The instruction reads `a` after it is
// issued, so the registers must stay unchanged until wgmma_wait says the
// group is done; the compiler does not know that, so nothing that writes
// registers should run between the wgmma and its wait (lesson 05's
// fused_k_loop waits right after the stage's wgmmas).
template <Major kBMajor = Major::mn>
__device__ __forceinline__ void wgmma_m64n256k16_rs(float (&d)[128], const uint32_t (&a)[4], uint64_t desc_b,
                                                    bool accumulate) {
#if WB_WGMMA_DEVICE
  asm volatile(
      "{\n"
      ".reg .pred keep_d;\n"
      "setp.ne.b32 keep_d, %133, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n256k16.f32.f16.f16 "
      "{"
      "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
      "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, "
      "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, "
      "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, "
      "%64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, "
      "%80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95, "
      "%96, %97, %98, %99, %100, %101, %102, %103, %104, %105, %106, %107, %108, %109, %110, %111, "
      "%112, %113, %114, %115, %116, %117, %118, %119, %120, %121, %122, %123, %124, %125, %126, %127"
      "}, "
      "{%128, %129, %130, %131}, %132, keep_d, 1, 1, %134;\n"  // scale A, scale B, B's major
      "}\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
        "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
        "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
        "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]),
        "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]),
        "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]),
        "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]),
        "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63]),
        "+f"(d[64]), "+f"(d[65]), "+f"(d[66]), "+f"(d[67]), "+f"(d[68]), "+f"(d[69]), "+f"(d[70]), "+f"(d[71]),
        "+f"(d[72]), "+f"(d[73]), "+f"(d[74]), "+f"(d[75]), "+f"(d[76]), "+f"(d[77]), "+f"(d[78]), "+f"(d[79]),
        "+f"(d[80]), "+f"(d[81]), "+f"(d[82]), "+f"(d[83]), "+f"(d[84]), "+f"(d[85]), "+f"(d[86]), "+f"(d[87]),
        "+f"(d[88]), "+f"(d[89]), "+f"(d[90]), "+f"(d[91]), "+f"(d[92]), "+f"(d[93]), "+f"(d[94]), "+f"(d[95]),
        "+f"(d[96]), "+f"(d[97]), "+f"(d[98]), "+f"(d[99]), "+f"(d[100]), "+f"(d[101]), "+f"(d[102]), "+f"(d[103]),
        "+f"(d[104]), "+f"(d[105]), "+f"(d[106]), "+f"(d[107]), "+f"(d[108]), "+f"(d[109]), "+f"(d[110]), "+f"(d[111]),
        "+f"(d[112]), "+f"(d[113]), "+f"(d[114]), "+f"(d[115]), "+f"(d[116]), "+f"(d[117]), "+f"(d[118]), "+f"(d[119]),
        "+f"(d[120]), "+f"(d[121]), "+f"(d[122]), "+f"(d[123]), "+f"(d[124]), "+f"(d[125]), "+f"(d[126]), "+f"(d[127])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(desc_b), "r"(int32_t(accumulate)), "n"(int(kBMajor)));
#else
  (void)d; (void)a; (void)desc_b; (void)accumulate;
#endif
}

// Dispatch on the tile width.
template <int kN, Major kAMajor = Major::k, Major kBMajor = Major::mn>
__device__ __forceinline__ void wgmma_m64k16(float (&d)[kN / 2], uint64_t desc_a, uint64_t desc_b, bool accumulate) {
  static_assert(kN == 128 || kN == 256, "wgmma tiles here are 64 x 128 or 64 x 256");
  if constexpr (kN == 128) {
    wgmma_m64n128k16<kAMajor, kBMajor>(d, desc_a, desc_b, accumulate);
  } else {
    wgmma_m64n256k16<kAMajor, kBMajor>(d, desc_a, desc_b, accumulate);
  }
}

}  // namespace wb::hopper
