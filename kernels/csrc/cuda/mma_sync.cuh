// mma.sync as the mma.sync kernels issue it (convt_tc.cu, convt_cols.cu, convt_cells.cu, convt_taps.cu,
// convt_strip.cu): c += a x b on one 16 x 8 tile with fp32 accumulators, m16n8k8 for TF32 and m16n8k16 (or m16n8k8)
// for fp16/bf16, the rounding that makes an fp32 a TF32 operand (and 3xTF32's hi/lo split), half-type fragments from
// k-major shared memory, and the base pointer their staging loads are addressed from.
// Included into each .cu's anonymous namespace (convt_tc.cu, convt_wg.cu and convt_wgh.cu through tc_common.cuh);
// the includer has already included cuda_fp16.h, cuda_bf16.h, ATen's Half and BFloat16, and <cstdint>.
#pragma once

__device__ __forceinline__ uint32_t tf32_round(float f) {
  uint32_t r;
  asm("cvt.rna.tf32.f32 %0, %1;" : "=r"(r) : "f"(f));
  return r;
}

// 3xTF32's operand split: hi the TF32 rounding of an fp32 (its bits), lo the TF32 rounding of what hi leaves.
__device__ __forceinline__ void split_tf32(uint32_t v, uint32_t& hi, uint32_t& lo) {
  const float f = __uint_as_float(v);
  hi = tf32_round(f);
  lo = tf32_round(f - __uint_as_float(hi));
}

template <typename T>
struct Mma;
template <>
struct Mma<float> {
  static constexpr int kK = 8;  // channels per mma k-step
  __device__ __forceinline__ static void run(float* c, const uint32_t* a, const uint32_t* b) {
    asm volatile(
        "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
        "{%0,%1,%2,%3};\n"
        : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
  }
};
template <>
struct Mma<at::Half> {
  __device__ __forceinline__ static void run(float* c, const uint32_t* a, const uint32_t* b) {
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
        "{%0,%1,%2,%3};\n"
        : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
  }
};
template <>
struct Mma<at::BFloat16> {
  __device__ __forceinline__ static void run(float* c, const uint32_t* a, const uint32_t* b) {
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
        "{%0,%1,%2,%3};\n"
        : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
  }
};

// k = 8 in every type (the strip kernel's k-step is one tap's 8 input channels, so a group of 8 channels pads
// nothing): TF32 as Mma<float>, fp16/bf16 as m16n8k8 with A in 2 registers (channels 2t, 2t+1 of rows g, g+8) and
// B in 1 (channels 2t, 2t+1 of column g).
template <typename T>
struct MmaK8;
template <>
struct MmaK8<float> {
  static constexpr int kBWords = 2;  // B registers a lane
  __device__ __forceinline__ static void run(float* c, const uint32_t* a, const uint32_t* b) { Mma<float>::run(c, a, b); }
};
template <>
struct MmaK8<at::Half> {
  static constexpr int kBWords = 1;
  __device__ __forceinline__ static void run(float* c, const uint32_t* a, const uint32_t* b) {
    asm volatile(
        "mma.sync.aligned.m16n8k8.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5}, {%6}, {%0,%1,%2,%3};\n"
        : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
        : "r"(a[0]), "r"(a[1]), "r"(b[0]));
  }
};
template <>
struct MmaK8<at::BFloat16> {
  static constexpr int kBWords = 1;
  __device__ __forceinline__ static void run(float* c, const uint32_t* a, const uint32_t* b) {
    asm volatile(
        "mma.sync.aligned.m16n8k8.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5}, {%6}, {%0,%1,%2,%3};\n"
        : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
        : "r"(a[0]), "r"(a[1]), "r"(b[0]));
  }
};

// Rounds an fp32 (its bits) to TF32, half an ulp away from zero, leaving Inf and NaN as they are: the mma reads
// only a TF32 operand's upper 19 bits (CUTLASS's round_half_ulp_truncate), so this is cvt.rna's result in two or
// three integer instructions rather than the five sm_90 spends on cvt.rna.
__device__ __forceinline__ uint32_t tf32_bits(uint32_t v) { return (v & 0x7f800000u) == 0x7f800000u ? v : v + 0x1000u; }
// The same of a float: the Inf/NaN test as one float compare of its magnitude (FSETP), so two instructions.
__device__ __forceinline__ uint32_t tf32_bits_of(float f) {
  return fabsf(f) < INFINITY ? __float_as_uint(f) + 0x1000u : __float_as_uint(f);
}

// Four 8 x 8 b16 matrices, transposed: from k-major rows, thread (g, t) gets the pair (k 2t, 2t + 1) of column g.
__device__ __forceinline__ void ldmatrix_x4_trans(uint32_t (&r)[4], const void* p) {
  const uint32_t a = static_cast<uint32_t>(__cvta_generic_to_shared(p));
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(a));
}

// A pointer the compiler cannot fold back into the kernel parameter it came from, so each load's address is one
// 32-bit offset added to it (IMAD.WIDE) rather than a 64-bit sum rebuilt from the parameter every time.
template <typename P>
__device__ __forceinline__ const P* opaque(const P* p) {
  asm("" : "+l"(p));
  return p;
}
