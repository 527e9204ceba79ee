// mma.sync as both mma.sync kernels issue it (convt_tc.cu, convt_cols.cu): c += a x b on one 16 x 8 tile with fp32
// accumulators, m16n8k8 for TF32 and m16n8k16 for fp16/bf16, and the rounding that makes an fp32 a TF32 operand
// (and 3xTF32's hi/lo split).
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
